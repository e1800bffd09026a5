//! A whole RoCEv2 UDP payload: BTH, the extension headers its opcode implies,
//! payload, pad (0–3 bytes to a 4-byte boundary) and the ICRC.

use core::ops::Range;

use super::bth::{self, Layout, Opcode};
use super::codec::{Error, Result};
use super::ext::{aeth, atomic_ack_eth, atomic_eth, cnp, deth, ieth, immdt, reth, xrceth};
use super::icrc;

/// The headers of one packet. Which extension headers are present is fixed
/// by the opcode; [`Headers::check`] enforces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headers {
    pub bth: bth::Repr,
    pub deth: Option<deth::Repr>,
    pub xrceth: Option<xrceth::Repr>,
    pub reth: Option<reth::Repr>,
    pub atomic_eth: Option<atomic_eth::Repr>,
    pub aeth: Option<aeth::Repr>,
    pub atomic_ack_eth: Option<atomic_ack_eth::Repr>,
    pub immdt: Option<immdt::Repr>,
    pub ieth: Option<ieth::Repr>,
}

impl Headers {
    /// A BTH with no extension headers yet.
    pub fn new(bth: bth::Repr) -> Headers {
        Headers {
            bth,
            deth: None,
            xrceth: None,
            reth: None,
            atomic_eth: None,
            aeth: None,
            atomic_ack_eth: None,
            immdt: None,
            ieth: None,
        }
    }

    /// The opcode's layout, if the present headers are exactly the ones it implies.
    pub fn check(&self) -> Result<Layout> {
        let l = self.bth.opcode.layout().ok_or(Error::Opcode(self.bth.opcode.0))?;
        let ok = l.deth == self.deth.is_some()
            && l.xrceth == self.xrceth.is_some()
            && l.reth == self.reth.is_some()
            && l.atomic_eth == self.atomic_eth.is_some()
            && l.aeth == self.aeth.is_some()
            && l.atomic_ack_eth == self.atomic_ack_eth.is_some()
            && l.immdt == self.immdt.is_some()
            && l.ieth == self.ieth.is_some();
        if ok {
            Ok(l)
        } else {
            Err(Error::Malformed("headers do not match opcode"))
        }
    }

    /// BTH plus extension headers, in bytes.
    pub fn header_len(&self) -> usize {
        bth::Repr::LEN + self.bth.opcode.layout().map(|l| l.ext_len()).unwrap_or(0)
    }

    /// Bytes of the whole packet (headers, payload, pad, ICRC).
    pub fn packet_len(&self, payload_len: usize) -> usize {
        self.header_len() + payload_len + pad_for(payload_len) + icrc::LEN
    }
}

/// Pad bytes after a payload of `n` bytes.
pub fn pad_for(n: usize) -> usize {
    (4 - (n & 3)) & 3
}

/// A parsed packet borrowing its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocePacket<'a> {
    pub headers: Headers,
    pub payload: &'a [u8],
    /// The ICRC trailer as it travelled (LSB first); checked by [`icrc::verify`].
    pub icrc: [u8; 4],
}

impl<'a> RocePacket<'a> {
    /// Parses BTH through ICRC. Rejects unknown opcodes, short buffers, a
    /// length not a multiple of 4, a pad count larger than the payload, a
    /// payload on an opcode that carries none, and non-zero TVer.
    pub fn parse(buf: &'a [u8]) -> Result<RocePacket<'a>> {
        let b = bth::Packet::new_checked(buf)?;
        let bth = bth::Repr::parse(&b)?;
        let layout = bth.opcode.layout().ok_or(Error::Opcode(bth.opcode.0))?;
        let hdr_len = bth::Repr::LEN + layout.ext_len();
        if buf.len() < hdr_len + icrc::LEN {
            return Err(Error::Truncated("extension headers"));
        }
        if buf.len() % 4 != 0 {
            return Err(Error::Malformed("length not a multiple of 4"));
        }
        let mut h = Headers::new(bth);
        let mut at = bth::Repr::LEN;
        macro_rules! take {
            ($flag:expr, $m:ident, $slot:ident) => {
                if $flag {
                    h.$slot = Some($m::Repr::parse(&$m::Packet::new_checked(&buf[at..])?)?);
                    at += $m::Repr::LEN;
                }
            };
        }
        take!(layout.deth, deth, deth);
        take!(layout.xrceth, xrceth, xrceth);
        take!(layout.reth, reth, reth);
        take!(layout.atomic_eth, atomic_eth, atomic_eth);
        take!(layout.aeth, aeth, aeth);
        take!(layout.atomic_ack_eth, atomic_ack_eth, atomic_ack_eth);
        take!(layout.immdt, immdt, immdt);
        take!(layout.ieth, ieth, ieth);
        if layout.cnp {
            cnp::Repr::parse(&cnp::Packet::new_checked(&buf[at..])?)?;
            at += cnp::Repr::LEN;
        }
        debug_assert_eq!(at, hdr_len);
        let body = buf.len() - hdr_len - icrc::LEN;
        let pad = bth.pad_count as usize;
        if pad > body {
            return Err(Error::Malformed("pad count exceeds payload"));
        }
        let payload_len = body - pad;
        if !layout.payload && body != 0 {
            return Err(Error::Malformed("payload on an opcode without one"));
        }
        let n = buf.len() - icrc::LEN;
        Ok(RocePacket {
            headers: h,
            payload: &buf[hdr_len..hdr_len + payload_len],
            icrc: [buf[n], buf[n + 1], buf[n + 2], buf[n + 3]],
        })
    }
}

/// Lays out a packet in `out` (resized to the packet length): headers with
/// the pad count set, zero pad and a zero ICRC slot. Returns the payload
/// range for the caller to fill (e.g. straight from guest memory); the
/// fabric fills the ICRC.
pub fn build(h: &Headers, payload_len: usize, out: &mut Vec<u8>) -> Result<Range<usize>> {
    let layout = h.check()?;
    if !layout.payload && payload_len != 0 {
        return Err(Error::Malformed("payload on an opcode without one"));
    }
    let total = h.packet_len(payload_len);
    out.clear();
    out.resize(total, 0);
    let mut bth = h.bth;
    bth.pad_count = pad_for(payload_len) as u8;
    bth.emit(&mut bth::Packet::new_unchecked(&mut out[..]));
    let mut at = bth::Repr::LEN;
    macro_rules! put {
        ($m:ident, $slot:ident) => {
            if let Some(r) = &h.$slot {
                r.emit(&mut $m::Packet::new_unchecked(&mut out[at..]));
                at += $m::Repr::LEN;
            }
        };
    }
    put!(deth, deth);
    put!(xrceth, xrceth);
    put!(reth, reth);
    put!(atomic_eth, atomic_eth);
    put!(aeth, aeth);
    put!(atomic_ack_eth, atomic_ack_eth);
    put!(immdt, immdt);
    put!(ieth, ieth);
    if layout.cnp {
        at += cnp::Repr::LEN; // already zero
    }
    Ok(at..at + payload_len)
}

/// [`build`] and copy `payload` in.
pub fn emit(h: &Headers, payload: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let r = build(h, payload.len(), out)?;
    out[r].copy_from_slice(payload);
    Ok(())
}

/// A CNP to `dest_qp` (BECN set, PSN 0, P_Key 0xffff).
pub fn cnp_headers(dest_qp: u32) -> Headers {
    Headers::new(bth::Repr { opcode: Opcode::CNP, becn: true, mig_req: false, dest_qp, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::aeth::{NakCode, Syndrome};
    use crate::ip::PseudoHeader;
    use std::net::Ipv4Addr;

    fn bth(op: u8, psn: u32) -> bth::Repr {
        bth::Repr { opcode: Opcode(op), dest_qp: 0x12, psn, ..Default::default() }
    }

    #[test]
    fn roundtrip_every_layout() {
        let cases: Vec<(Headers, Vec<u8>)> = vec![
            (
                Headers {
                    reth: Some(reth::Repr { va: 1, rkey: 2, dma_len: 5 }),
                    immdt: Some(immdt::Repr { imm: [9, 8, 7, 6] }),
                    ..Headers::new(bth(0x0b, 7))
                },
                b"hello".to_vec(),
            ),
            (
                Headers { reth: Some(reth::Repr { va: 0x1000, rkey: 3, dma_len: 8192 }), ..Headers::new(bth(0x0c, 1)) },
                vec![],
            ),
            (
                Headers {
                    aeth: Some(aeth::Repr { syndrome: Syndrome::Ack { credits: 0x1f }, msn: 4 }),
                    ..Headers::new(bth(0x10, 9))
                },
                vec![1, 2, 3],
            ),
            (
                Headers {
                    aeth: Some(aeth::Repr { syndrome: Syndrome::Nak(NakCode::RemoteAccessError), msn: 4 }),
                    ..Headers::new(bth(0x11, 9))
                },
                vec![],
            ),
            (
                Headers {
                    aeth: Some(aeth::Repr { syndrome: Syndrome::Ack { credits: 0 }, msn: 1 }),
                    atomic_ack_eth: Some(atomic_ack_eth::Repr { orig: 77 }),
                    ..Headers::new(bth(0x12, 3))
                },
                vec![],
            ),
            (
                Headers {
                    atomic_eth: Some(atomic_eth::Repr { va: 8, rkey: 1, swap_add: 2, compare: 3 }),
                    ..Headers::new(bth(0x13, 3))
                },
                vec![],
            ),
            (Headers { ieth: Some(ieth::Repr { rkey: 0x55 }), ..Headers::new(bth(0x17, 3)) }, vec![0; 4]),
            (
                Headers {
                    deth: Some(deth::Repr { qkey: 0x11, src_qp: 1 }),
                    immdt: Some(immdt::Repr { imm: [1, 1, 1, 1] }),
                    ..Headers::new(bth(0x65, 3))
                },
                vec![0xab; 33],
            ),
            (Headers::new(bth(0x21, 3)), vec![0xcd; 256]),
            (cnp_headers(0x118), vec![]),
        ];
        for (h, payload) in cases {
            let mut out = Vec::new();
            emit(&h, &payload, &mut out).unwrap();
            assert_eq!(out.len() % 4, 0);
            assert_eq!(out.len(), h.packet_len(payload.len()));
            let p = RocePacket::parse(&out).unwrap();
            let mut want = h;
            want.bth.pad_count = pad_for(payload.len()) as u8;
            assert_eq!(p.headers, want);
            assert_eq!(p.payload, &payload[..]);
        }
    }

    #[test]
    fn rejects_inconsistent_packets() {
        let h = Headers { reth: Some(reth::Repr::default()), ..Headers::new(bth(0x0a, 0)) };
        let mut out = Vec::new();
        emit(&h, &[1, 2, 3, 4, 5, 6], &mut out).unwrap();
        let ph = PseudoHeader::canonical(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 0x12, out.len());
        icrc::fill(&ph, &mut out);
        // Every truncation is refused, never a panic: by the parser, or (when
        // the cut happens to leave a consistent layout) by the ICRC.
        for n in 0..out.len() {
            let ph = PseudoHeader::canonical(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 0x12, n);
            assert!(RocePacket::parse(&out[..n]).is_err() || icrc::verify(&ph, &out[..n]).is_err(), "len {n}");
        }
        // A length that is not a multiple of 4 cannot be payload + pad.
        let mut bad = out.clone();
        bad.push(0);
        assert_eq!(RocePacket::parse(&bad).unwrap_err(), Error::Malformed("length not a multiple of 4"));
        // A different pad count is self-consistent (the length is a multiple
        // of 4), so only the ICRC catches it.
        let mut bad = out.clone();
        bad[1] ^= 0x30;
        assert_eq!(RocePacket::parse(&bad).unwrap().payload.len(), 7);
        assert_eq!(icrc::verify(&ph, &bad), Err(Error::Icrc));
        // Unknown opcode.
        let mut bad = out.clone();
        bad[0] = 0x15;
        assert_eq!(RocePacket::parse(&bad).unwrap_err(), Error::Opcode(0x15));
        // READ_REQUEST carrying a payload.
        let r = Headers { reth: Some(reth::Repr::default()), ..Headers::new(bth(0x0c, 0)) };
        let mut bad = Vec::new();
        emit(&r, &[], &mut bad).unwrap();
        bad.splice(28..28, [0u8; 4]);
        assert_eq!(RocePacket::parse(&bad).unwrap_err(), Error::Malformed("payload on an opcode without one"));
        // Headers not matching the opcode are refused on emit.
        assert!(emit(&Headers::new(bth(0x0a, 0)), &[], &mut out).is_err());
        assert!(emit(&r, &[1], &mut out).is_err());
        // Pad larger than the body.
        let mut tiny = Vec::new();
        emit(&Headers::new(bth(0x04, 0)), &[], &mut tiny).unwrap();
        tiny[1] |= 0x30;
        assert_eq!(RocePacket::parse(&tiny).unwrap_err(), Error::Malformed("pad count exceeds payload"));
    }

    /// The CNP we build is byte-identical to vector 1's ConnectX-4 CNP.
    #[test]
    fn cnp_matches_connectx() {
        let mut out = Vec::new();
        emit(&cnp_headers(0x118), &[], &mut out).unwrap();
        let mut ph =
            PseudoHeader::canonical(Ipv4Addr::new(10, 0, 17, 1), Ipv4Addr::new(10, 0, 18, 1), 0x118, out.len());
        ph.ip.tos = 0xc2;
        ph.ip.ident = 0x718c;
        ph.udp.src_port = 0;
        icrc::fill(&ph, &mut out);
        let mut want = vec![0x81, 0, 0xff, 0xff, 0x40, 0, 0x01, 0x18];
        want.extend_from_slice(&[0; 20]);
        want.extend_from_slice(&[0x82, 0xfd, 0x00, 0x2a]);
        assert_eq!(out, want);
    }
}
