//! The InfiniBand Global Route Header (IBTA vol. 1 §8.3: 40 bytes, laid out
//! like an IPv6 header) and how a packet carrying one travels on the fabric.
//!
//! | bytes  | field                                                  |
//! |--------|--------------------------------------------------------|
//! | 0..4   | IPVer (4 bits, 6), TClass (8), FlowLabel (20)          |
//! | 4..6   | PayLen: bytes after the GRH (BTH through ICRC)         |
//! | 6      | NxtHdr: 0x1B (IBA transport)                           |
//! | 7      | HopLmt                                                 |
//! | 8..24  | SGID                                                   |
//! | 24..40 | DGID                                                   |
//!
//! **Fabric framing.** A fabric datagram without a GRH is BTH through ICRC,
//! as it always was. A raw GRH cannot simply lead the datagram: its first
//! byte (0x6X) is also a UD BTH opcode (0x64, 0x65). A datagram with a GRH
//! therefore starts with a 4-byte envelope, `[MARK, ENVELOPE_VERSION, 0, 0]`,
//! then the GRH, then BTH through ICRC. `MARK` (0xFE) lies in the BTH
//! opcode range IBTA leaves to manufacturers (0xC0-0xFF), which no vrnic
//! packet uses and the packet parser refuses; the envelope keeps the
//! datagram a multiple of 4 bytes.
//!
//! **ICRC and capture.** The ICRC of a GRH packet is RoCEv2's over IPv6
//! (the IPv6 header is the GRH's analog): eight 0xFF bytes for the LRH, the
//! IPv6 header built from the GRH (next header UDP) with TClass, FlowLabel
//! and HopLmt set to ones, the UDP header with its checksum set to ones,
//! then BTH (byte 4 set to ones) onward. The pcap frame of such a packet is
//! that Ethernet/IPv6/UDP/BTH packet, which tshark decodes as RoCEv2.

use super::codec::{rd16, rd32, wr16, wr32, Error, Result};
use super::ip::{flow_source_port, ROCEV2_PORT};

pub mod field {
    use core::ops::Range;
    pub const VER_TCLASS_FLOW: Range<usize> = 0..4;
    pub const PAYLEN: Range<usize> = 4..6;
    pub const NXTHDR: usize = 6;
    pub const HOPLMT: usize = 7;
    pub const SGID: Range<usize> = 8..24;
    pub const DGID: Range<usize> = 24..40;
    pub const HEADER_LEN: usize = 40;
}

/// IPVer of a GRH.
pub const IP_VERSION: u8 = 6;
/// NxtHdr of a GRH followed by the IBA transport headers (BTH).
pub const NXTHDR_IBA: u8 = 0x1B;
/// First byte of the fabric envelope of a packet with a GRH.
pub const MARK: u8 = 0xFE;
/// Second byte of the envelope: this layout.
pub const ENVELOPE_VERSION: u8 = 1;
/// Bytes of the envelope before the GRH.
pub const ENVELOPE_LEN: usize = 4;
/// Bytes of an IPv6 header plus a UDP header (the RoCEv2 analog of a GRH).
pub const IPV6_UDP_LEN: usize = 48;
const IPV6_NXT_UDP: u8 = 17;

fixed_view!("GRH");

impl<T: AsRef<[u8]>> Packet<T> {
    fn w0(&self) -> u32 {
        rd32(self.buffer.as_ref(), 0)
    }
    pub fn version(&self) -> u8 {
        (self.w0() >> 28) as u8
    }
    pub fn traffic_class(&self) -> u8 {
        (self.w0() >> 20) as u8
    }
    pub fn flow_label(&self) -> u32 {
        self.w0() & 0xf_ffff
    }
    pub fn payload_len(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::PAYLEN.start)
    }
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXTHDR]
    }
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOPLMT]
    }
    pub fn sgid(&self) -> [u8; 16] {
        let mut g = [0; 16];
        g.copy_from_slice(&self.buffer.as_ref()[field::SGID]);
        g
    }
    pub fn dgid(&self) -> [u8; 16] {
        let mut g = [0; 16];
        g.copy_from_slice(&self.buffer.as_ref()[field::DGID]);
        g
    }
}

/// A GRH's fields. `payload_len` is what follows it (BTH through ICRC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Repr {
    pub traffic_class: u8,
    /// 20 bits.
    pub flow_label: u32,
    pub payload_len: u16,
    pub next_header: u8,
    pub hop_limit: u8,
    pub sgid: [u8; 16],
    pub dgid: [u8; 16],
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    /// Parses a GRH; refuses an IPVer other than 6.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        if p.version() != IP_VERSION {
            return Err(Error::Malformed("GRH IPVer"));
        }
        Ok(Repr {
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
            payload_len: p.payload_len(),
            next_header: p.next_header(),
            hop_limit: p.hop_limit(),
            sgid: p.sgid(),
            dgid: p.dgid(),
        })
    }

    /// Writes the 40 bytes at the start of `p`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        let w0 = (IP_VERSION as u32) << 28 | (self.traffic_class as u32) << 20 | (self.flow_label & 0xf_ffff);
        wr32(b, field::VER_TCLASS_FLOW.start, w0);
        wr16(b, field::PAYLEN.start, self.payload_len);
        b[field::NXTHDR] = self.next_header;
        b[field::HOPLMT] = self.hop_limit;
        b[field::SGID].copy_from_slice(&self.sgid);
        b[field::DGID].copy_from_slice(&self.dgid);
    }

    /// The 40 bytes.
    pub fn to_bytes(&self) -> [u8; field::HEADER_LEN] {
        let mut b = [0u8; field::HEADER_LEN];
        self.emit(&mut Packet::new_unchecked(&mut b[..]));
        b
    }

    /// The GRH of a response to a packet that carried this one (IBTA: SGID
    /// and DGID swapped, the same class and flow).
    pub fn reply(&self) -> Repr {
        Repr { sgid: self.dgid, dgid: self.sgid, ..*self }
    }

    /// The IPv6 + UDP headers (48 bytes) of the RoCEv2 packet this GRH
    /// stands for, around `roce_len` bytes (BTH through ICRC) to `dest_qp`:
    /// the ICRC's pseudo-header and the pcap frame's network headers.
    pub fn ipv6_udp(&self, dest_qp: u32, roce_len: usize) -> [u8; IPV6_UDP_LEN] {
        let udp_len = (8 + roce_len).min(u16::MAX as usize) as u16;
        let h = Repr { payload_len: udp_len, next_header: IPV6_NXT_UDP, ..*self }.to_bytes();
        let mut b = [0u8; IPV6_UDP_LEN];
        b[..40].copy_from_slice(&h);
        wr16(&mut b, 40, flow_source_port(dest_qp));
        wr16(&mut b, 42, ROCEV2_PORT);
        wr16(&mut b, 44, udp_len);
        b
    }
}

/// The ICRC of `roce` (BTH through pad) in a packet with GRH `g`.
pub fn icrc(g: &Repr, roce: &[u8]) -> u32 {
    let dqp = super::bth::Packet::new_checked(roce).map(|b| b.dest_qp()).unwrap_or(0);
    let mut h = g.ipv6_udp(dqp, roce.len() + super::icrc::LEN);
    // Variant fields: TClass and FlowLabel (IPVer stays), HopLmt, UDP checksum.
    h[0] = (IP_VERSION << 4) | 0xf;
    h[1..4].fill(0xff);
    h[7] = 0xff;
    h[46] = 0xff;
    h[47] = 0xff;
    super::icrc::compute_over(&h, roce)
}

/// Writes the ICRC into the last four bytes of `pkt` (BTH through ICRC).
pub fn fill_icrc(g: &Repr, pkt: &mut [u8]) {
    if pkt.len() < super::icrc::LEN {
        return;
    }
    let n = pkt.len() - super::icrc::LEN;
    let c = icrc(g, &pkt[..n]);
    pkt[n..].copy_from_slice(&c.to_le_bytes());
}

/// Checks the ICRC trailer of `pkt` (BTH through ICRC) under GRH `g`.
pub fn verify_icrc(g: &Repr, pkt: &[u8]) -> Result<()> {
    if pkt.len() < super::icrc::LEN + super::bth::field::HEADER_LEN {
        return Err(Error::Truncated("ICRC"));
    }
    let n = pkt.len() - super::icrc::LEN;
    if icrc(g, &pkt[..n]).to_le_bytes() == pkt[n..] {
        Ok(())
    } else {
        Err(Error::Icrc)
    }
}

/// Frames `roce` (BTH through ICRC) behind the envelope and GRH `g` (its
/// PayLen set to `roce.len()`, NxtHdr to IBA) into `out`.
pub fn frame(g: &Repr, roce: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[MARK, ENVELOPE_VERSION, 0, 0]);
    let h = Repr { payload_len: roce.len().min(u16::MAX as usize) as u16, next_header: NXTHDR_IBA, ..*g };
    out.extend_from_slice(&h.to_bytes());
    out.extend_from_slice(roce);
}

/// Splits a fabric datagram into its GRH (if it has the envelope) and the
/// packet from BTH on. Refuses a bad envelope, a truncated or malformed GRH,
/// a NxtHdr other than IBA and a PayLen that disagrees with the datagram.
pub fn unframe(datagram: &[u8]) -> Result<(Option<Repr>, &[u8])> {
    if datagram.first() != Some(&MARK) {
        return Ok((None, datagram));
    }
    if datagram.len() < ENVELOPE_LEN + field::HEADER_LEN {
        return Err(Error::Truncated("GRH"));
    }
    if datagram[1] != ENVELOPE_VERSION || datagram[2] != 0 || datagram[3] != 0 {
        return Err(Error::Malformed("GRH envelope"));
    }
    let g = Repr::parse(&Packet::new_checked(&datagram[ENVELOPE_LEN..])?)?;
    let rest = &datagram[ENVELOPE_LEN + field::HEADER_LEN..];
    if g.next_header != NXTHDR_IBA {
        return Err(Error::Malformed("GRH NxtHdr"));
    }
    if g.payload_len as usize != rest.len() {
        return Err(Error::Malformed("GRH PayLen"));
    }
    Ok((Some(g), rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bth::{self, Opcode};
    use crate::packet::{self, Headers, RocePacket};

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    const GID0: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xa0, 0xb0, 0xc1];

    /// A GRH as IBTA lays it out: IPVer 6, TClass 0xa5, FlowLabel 0x12345,
    /// PayLen 0x20, NxtHdr 0x1B, HopLmt 0xff, SGID, DGID.
    #[test]
    fn parses_and_emits_ibta_layout() {
        let b = hex("6a5 12345 0020 1b ff
             fe800000000000000002c90300a0b0c1
             fe800000000000000002c90300a0b0c2");
        assert_eq!(b.len(), 40);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.version(), p.traffic_class(), p.flow_label(), p.payload_len(), p.next_header(), p.hop_limit()),
            (6, 0xa5, 0x12345, 0x20, 0x1b, 0xff)
        );
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.sgid, GID0);
        assert_eq!(r.dgid[15], 0xc2);
        assert_eq!(&r.to_bytes()[..], &b[..]);
        let back = r.reply();
        assert_eq!((back.sgid, back.dgid[15], back.flow_label), (r.dgid, 0xc1, 0x12345));
        // Short buffers and IPv4 are refused.
        assert_eq!(Packet::new_checked(&b[..39]).unwrap_err(), Error::Truncated("GRH"));
        let mut v4 = b.clone();
        v4[0] = 0x45;
        assert_eq!(Repr::parse(&Packet::new_unchecked(&v4[..])).unwrap_err(), Error::Malformed("GRH IPVer"));
    }

    fn pkt() -> Vec<u8> {
        let h = Headers::new(bth::Repr { opcode: Opcode(0x04), dest_qp: 0x11, psn: 5, ..Default::default() });
        let mut v = Vec::new();
        packet::emit(&h, b"grh!", &mut v).unwrap();
        v
    }

    #[test]
    fn framing_roundtrips_and_refuses_bad_envelopes() {
        let g = Repr { traffic_class: 3, flow_label: 7, hop_limit: 64, sgid: GID0, dgid: GID0, ..Default::default() };
        let roce = pkt();
        let mut d = Vec::new();
        frame(&g, &roce, &mut d);
        assert_eq!(d.len(), 44 + roce.len());
        assert_eq!(d.len() % 4, 0);
        assert_eq!(&d[..4], &[0xfe, 1, 0, 0]);
        assert_eq!(d[4] >> 4, 6);
        let (back, rest) = unframe(&d).unwrap();
        assert_eq!(back, Some(Repr { payload_len: roce.len() as u16, next_header: 0x1b, ..g }));
        assert_eq!(rest, &roce[..]);
        // Without the envelope the datagram is BTH onward, untouched, even a
        // UD opcode whose first byte looks like IPVer 6.
        let mut ud = roce.clone();
        ud[0] = 0x64;
        assert_eq!(unframe(&ud).unwrap(), (None, &ud[..]));
        // The packet parser refuses the envelope (TVer 1, opcode 0xFE).
        assert!(RocePacket::parse(&d).is_err());
        // Every truncation, and every damaged envelope field, is refused.
        for n in 1..d.len() {
            assert!(unframe(&d[..n]).is_err(), "len {n}");
        }
        for (at, v, e) in [
            (1, 2, "GRH envelope"),
            (3, 1, "GRH envelope"),
            (4, 0x46, "GRH IPVer"),
            (10, 0x11, "GRH NxtHdr"),
            (9, 0, "GRH PayLen"),
        ] {
            let mut bad = d.clone();
            bad[at] = v;
            assert_eq!(unframe(&bad).unwrap_err(), Error::Malformed(e), "byte {at}");
        }
    }

    #[test]
    fn icrc_covers_invariant_fields_only() {
        let g = Repr { traffic_class: 3, flow_label: 7, hop_limit: 64, sgid: GID0, dgid: GID0, ..Default::default() };
        let mut p = pkt();
        fill_icrc(&g, &mut p);
        verify_icrc(&g, &p).unwrap();
        // TClass, FlowLabel and HopLmt may change on the way.
        verify_icrc(&Repr { traffic_class: 9, flow_label: 0xfffff, hop_limit: 1, ..g }, &p).unwrap();
        // SGID, DGID and the packet may not.
        let mut other = g;
        other.dgid[15] ^= 1;
        assert_eq!(verify_icrc(&other, &p), Err(Error::Icrc));
        let mut bad = p.clone();
        bad[13] ^= 1;
        assert_eq!(verify_icrc(&g, &bad), Err(Error::Icrc));
        // And it differs from the IPv4 form of the same packet.
        let ph = crate::ip::PseudoHeader::canonical(
            std::net::Ipv4Addr::LOCALHOST,
            std::net::Ipv4Addr::LOCALHOST,
            0x11,
            p.len(),
        );
        assert!(crate::icrc::verify(&ph, &p).is_err());
    }

    /// The 48-byte IPv6/UDP header of a RoCEv2-over-IPv6 packet.
    #[test]
    fn ipv6_udp_header() {
        let g = Repr {
            traffic_class: 0x10,
            flow_label: 0xabcde,
            hop_limit: 255,
            sgid: GID0,
            dgid: GID0,
            ..Default::default()
        };
        let h = g.ipv6_udp(0x11, 36);
        assert_eq!(&h[..8], &[0x61, 0x0a, 0xbc, 0xde, 0, 44, 17, 255]);
        assert_eq!(&h[8..24], &GID0);
        assert_eq!(
            &h[40..48],
            &[(flow_source_port(0x11) >> 8) as u8, flow_source_port(0x11) as u8, 0x12, 0xb7, 0, 44, 0, 0]
        );
    }
}
