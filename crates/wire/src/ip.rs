//! The IPv4 and UDP headers a RoCEv2 packet travels in: what the ICRC covers
//! (with TOS, TTL and checksums masked) and what the pcap frames carry.
//! vrnic sends BTH-onward as a UDP payload through the host's socket; these
//! headers are the canonical ones both ends agree on (see [`super::icrc`]).

use std::net::Ipv4Addr;

use super::codec::{rd16, wr16, Error, Result};

/// The IANA port of RoCEv2.
pub const ROCEV2_PORT: u16 = 4791;

/// UDP source port of a RoCE flow, rxe style: `0xC000 | hash(dest QP)`.
pub fn flow_source_port(dest_qp: u32) -> u16 {
    0xc000 | ((dest_qp ^ (dest_qp >> 14)) & 0x3fff) as u16
}

pub mod ipv4 {
    use super::*;

    pub mod field {
        use core::ops::Range;
        pub const VER_IHL: usize = 0;
        pub const TOS: usize = 1;
        pub const TOTAL_LEN: Range<usize> = 2..4;
        pub const IDENT: Range<usize> = 4..6;
        pub const FLAGS_FRAG: Range<usize> = 6..8;
        pub const TTL: usize = 8;
        pub const PROTOCOL: usize = 9;
        pub const CHECKSUM: Range<usize> = 10..12;
        pub const SRC: Range<usize> = 12..16;
        pub const DST: Range<usize> = 16..20;
        pub const HEADER_LEN: usize = 20;
    }

    pub const PROTO_UDP: u8 = 17;
    pub const FLAG_DF: u16 = 0x4000;
    /// ECN codepoints (low two bits of TOS).
    pub const ECN_ECT0: u8 = 0b10;
    pub const ECN_CE: u8 = 0b11;

    #[derive(Debug, Clone)]
    pub struct Packet<T: AsRef<[u8]>> {
        buffer: T,
    }

    impl<T: AsRef<[u8]>> Packet<T> {
        pub const fn new_unchecked(buffer: T) -> Packet<T> {
            Packet { buffer }
        }
        pub fn new_checked(buffer: T) -> Result<Packet<T>> {
            let p = Packet::new_unchecked(buffer);
            let b = p.buffer.as_ref();
            if b.len() < field::HEADER_LEN {
                return Err(Error::Truncated("IPv4"));
            }
            if b[field::VER_IHL] != 0x45 {
                return Err(Error::Malformed("IPv4 version/IHL"));
            }
            let total = rd16(b, field::TOTAL_LEN.start) as usize;
            if total < field::HEADER_LEN || total > b.len() {
                return Err(Error::Truncated("IPv4 total length"));
            }
            Ok(p)
        }
        pub fn tos(&self) -> u8 {
            self.buffer.as_ref()[field::TOS]
        }
        pub fn total_len(&self) -> u16 {
            rd16(self.buffer.as_ref(), field::TOTAL_LEN.start)
        }
        pub fn ident(&self) -> u16 {
            rd16(self.buffer.as_ref(), field::IDENT.start)
        }
        pub fn ttl(&self) -> u8 {
            self.buffer.as_ref()[field::TTL]
        }
        pub fn protocol(&self) -> u8 {
            self.buffer.as_ref()[field::PROTOCOL]
        }
        pub fn checksum(&self) -> u16 {
            rd16(self.buffer.as_ref(), field::CHECKSUM.start)
        }
        pub fn src(&self) -> Ipv4Addr {
            let b = self.buffer.as_ref();
            Ipv4Addr::new(b[12], b[13], b[14], b[15])
        }
        pub fn dst(&self) -> Ipv4Addr {
            let b = self.buffer.as_ref();
            Ipv4Addr::new(b[16], b[17], b[18], b[19])
        }
        /// Bytes after the header, up to the total length.
        pub fn payload(&self) -> &[u8] {
            let end = (self.total_len() as usize).min(self.buffer.as_ref().len());
            &self.buffer.as_ref()[field::HEADER_LEN..end]
        }
        pub fn verify_checksum(&self) -> bool {
            checksum(&self.buffer.as_ref()[..field::HEADER_LEN]) == 0
        }
    }

    /// The Internet checksum (one's complement sum) of `b`.
    pub fn checksum(b: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for c in b.chunks(2) {
            let w = if c.len() == 2 { u16::from_be_bytes([c[0], c[1]]) } else { u16::from_be_bytes([c[0], 0]) };
            s += w as u32;
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    /// An IPv4 header without options.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Repr {
        pub src: Ipv4Addr,
        pub dst: Ipv4Addr,
        pub tos: u8,
        pub ident: u16,
        pub dont_frag: bool,
        pub ttl: u8,
        pub protocol: u8,
        /// Bytes after the IPv4 header.
        pub payload_len: usize,
    }

    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        /// Parses a header; rejects fragments and a wrong checksum.
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            let b = p.buffer.as_ref();
            let ff = rd16(b, field::FLAGS_FRAG.start);
            if ff & 0xbfff != 0 {
                return Err(Error::Malformed("IPv4 fragment"));
            }
            if !p.verify_checksum() {
                return Err(Error::Malformed("IPv4 checksum"));
            }
            Ok(Repr {
                src: p.src(),
                dst: p.dst(),
                tos: p.tos(),
                ident: p.ident(),
                dont_frag: ff & FLAG_DF != 0,
                ttl: p.ttl(),
                protocol: p.protocol(),
                payload_len: p.total_len() as usize - field::HEADER_LEN,
            })
        }
        /// Writes the header with a correct checksum (20 bytes).
        pub fn emit(&self, b: &mut [u8]) {
            b[field::VER_IHL] = 0x45;
            b[field::TOS] = self.tos;
            wr16(b, field::TOTAL_LEN.start, (self.payload_len + field::HEADER_LEN) as u16);
            wr16(b, field::IDENT.start, self.ident);
            wr16(b, field::FLAGS_FRAG.start, if self.dont_frag { FLAG_DF } else { 0 });
            b[field::TTL] = self.ttl;
            b[field::PROTOCOL] = self.protocol;
            wr16(b, field::CHECKSUM.start, 0);
            b[field::SRC].copy_from_slice(&self.src.octets());
            b[field::DST].copy_from_slice(&self.dst.octets());
            let c = checksum(&b[..field::HEADER_LEN]);
            wr16(b, field::CHECKSUM.start, c);
        }
    }
}

pub mod udp {
    use super::*;

    pub mod field {
        use core::ops::Range;
        pub const SRC_PORT: Range<usize> = 0..2;
        pub const DST_PORT: Range<usize> = 2..4;
        pub const LENGTH: Range<usize> = 4..6;
        pub const CHECKSUM: Range<usize> = 6..8;
        pub const HEADER_LEN: usize = 8;
    }

    #[derive(Debug, Clone)]
    pub struct Packet<T: AsRef<[u8]>> {
        buffer: T,
    }

    impl<T: AsRef<[u8]>> Packet<T> {
        pub const fn new_unchecked(buffer: T) -> Packet<T> {
            Packet { buffer }
        }
        pub fn new_checked(buffer: T) -> Result<Packet<T>> {
            let p = Packet::new_unchecked(buffer);
            let b = p.buffer.as_ref();
            if b.len() < field::HEADER_LEN {
                return Err(Error::Truncated("UDP"));
            }
            let l = rd16(b, field::LENGTH.start) as usize;
            if l < field::HEADER_LEN || l > b.len() {
                return Err(Error::Truncated("UDP length"));
            }
            Ok(p)
        }
        pub fn src_port(&self) -> u16 {
            rd16(self.buffer.as_ref(), field::SRC_PORT.start)
        }
        pub fn dst_port(&self) -> u16 {
            rd16(self.buffer.as_ref(), field::DST_PORT.start)
        }
        pub fn len(&self) -> u16 {
            rd16(self.buffer.as_ref(), field::LENGTH.start)
        }
        pub fn is_empty(&self) -> bool {
            self.len() as usize == field::HEADER_LEN
        }
        pub fn checksum(&self) -> u16 {
            rd16(self.buffer.as_ref(), field::CHECKSUM.start)
        }
        pub fn payload(&self) -> &[u8] {
            &self.buffer.as_ref()[field::HEADER_LEN..self.len() as usize]
        }
    }

    /// A UDP header; RoCEv2 sends checksum 0 (the ICRC protects the payload).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Repr {
        pub src_port: u16,
        pub dst_port: u16,
        pub payload_len: usize,
    }

    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            Ok(Repr {
                src_port: p.src_port(),
                dst_port: p.dst_port(),
                payload_len: p.len() as usize - field::HEADER_LEN,
            })
        }
        pub fn emit(&self, b: &mut [u8]) {
            wr16(b, field::SRC_PORT.start, self.src_port);
            wr16(b, field::DST_PORT.start, self.dst_port);
            wr16(b, field::LENGTH.start, (self.payload_len + field::HEADER_LEN) as u16);
            wr16(b, field::CHECKSUM.start, 0);
        }
    }
}

/// The IPv4 + UDP headers of a RoCEv2 packet between two endpoints: the
/// "pseudo-header" the ICRC covers and the pcap frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PseudoHeader {
    pub ip: ipv4::Repr,
    pub udp: udp::Repr,
}

impl PseudoHeader {
    pub const LEN: usize = ipv4::field::HEADER_LEN + udp::field::HEADER_LEN;

    /// The canonical header vrnic uses for a RoCE payload of `roce_len` bytes
    /// (BTH through ICRC): identification 0, DF, TTL 64, ECT(0), UDP source
    /// port from the destination QP, destination port 4791.
    pub fn canonical(src: Ipv4Addr, dst: Ipv4Addr, dest_qp: u32, roce_len: usize) -> PseudoHeader {
        PseudoHeader {
            ip: ipv4::Repr {
                src,
                dst,
                tos: ipv4::ECN_ECT0,
                ident: 0,
                dont_frag: true,
                ttl: 64,
                protocol: ipv4::PROTO_UDP,
                payload_len: udp::field::HEADER_LEN + roce_len,
            },
            udp: udp::Repr { src_port: flow_source_port(dest_qp), dst_port: ROCEV2_PORT, payload_len: roce_len },
        }
    }

    /// The 28 header bytes with a valid IPv4 checksum.
    pub fn emit(&self, b: &mut [u8; Self::LEN]) {
        self.ip.emit(&mut b[..20]);
        self.udp.emit(&mut b[20..]);
    }

    /// Parses IPv4 + UDP at the start of `b`, returning the headers and the UDP payload.
    pub fn parse(b: &[u8]) -> Result<(PseudoHeader, &[u8])> {
        let ip = ipv4::Packet::new_checked(b)?;
        let ipr = ipv4::Repr::parse(&ip)?;
        if ipr.protocol != ipv4::PROTO_UDP {
            return Err(Error::Malformed("IPv4 protocol is not UDP"));
        }
        let u = udp::Packet::new_checked(ip.payload())?;
        if u.len() as usize != ip.payload().len() {
            return Err(Error::Malformed("UDP length"));
        }
        let ur = udp::Repr::parse(&u)?;
        let payload = &b[PseudoHeader::LEN..PseudoHeader::LEN + ur.payload_len];
        Ok((PseudoHeader { ip: ipr, udp: ur }, payload))
    }
}

/// The IPv4 header of the anchors doc's vector 2 (192.168.0.7 to itself,
/// TOS 1, id 1144, DF, TTL 64, 44 payload bytes), for tests.
#[cfg(test)]
pub(crate) fn anchor_vector2_ipv4() -> ipv4::Repr {
    ipv4::Repr {
        src: Ipv4Addr::new(192, 168, 0, 7),
        dst: Ipv4Addr::new(192, 168, 0, 7),
        tos: 1,
        ident: 1144,
        dont_frag: true,
        ttl: 64,
        protocol: 17,
        payload_len: 44,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_vector_2_headers() {
        // IPv4 192.168.0.7 → itself, TOS 1, id 1144, DF, TTL 64, total 64, checksum 0xb4d5.
        let ip = anchor_vector2_ipv4();
        let mut b = [0u8; 20];
        ip.emit(&mut b);
        let p = ipv4::Packet::new_unchecked(&b[..]);
        assert_eq!(p.checksum(), 0xb4d5);
        assert!(p.verify_checksum());
    }

    #[test]
    fn parse_rejects_bad_headers() {
        let h = PseudoHeader::canonical(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 5, 16);
        let mut b = vec![0u8; 28 + 16];
        let mut hb = [0u8; 28];
        h.emit(&mut hb);
        b[..28].copy_from_slice(&hb);
        let (back, payload) = PseudoHeader::parse(&b).unwrap();
        assert_eq!(back, h);
        assert_eq!(payload.len(), 16);
        assert_eq!(PseudoHeader::parse(&b[..27]).unwrap_err(), Error::Truncated("IPv4 total length"));
        assert_eq!(PseudoHeader::parse(&b[..10]).unwrap_err(), Error::Truncated("IPv4"));
        let mut bad = b.clone();
        bad[10] ^= 1;
        assert_eq!(PseudoHeader::parse(&bad).unwrap_err(), Error::Malformed("IPv4 checksum"));
        let mut bad = b.clone();
        bad[0] = 0x46;
        assert_eq!(PseudoHeader::parse(&bad).unwrap_err(), Error::Malformed("IPv4 version/IHL"));
        let mut bad = b.clone();
        bad[25] = 0x30; // UDP length 48 > 44 available
        assert_eq!(PseudoHeader::parse(&bad).unwrap_err(), Error::Truncated("UDP length"));
    }
}
