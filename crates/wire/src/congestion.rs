//! Congestion notification on the wire: the ECN codepoint of a RoCEv2
//! packet's IP header (IPv4 ToS / IPv6 traffic class, low two bits, RFC 3168)
//! and the Congestion Notification Packet (BTH opcode 0x81) a notification
//! point sends back.
//!
//! The ICRC masks the whole ToS / traffic class byte (see [`super::roce`]), so
//! a switch that marks CE does not break the ICRC; marking an IPv4 packet
//! only rewrites its header checksum.

use super::bth::{self, Opcode};
use super::codec::{rd16, wr16, Error, Result};
use super::ext::cnp;
use super::icrc;
use super::ip::ipv4;
use super::packet;
use super::roce::{FrameRepr, NetHdr, Parsed};

/// The ECN field (RFC 3168 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// 00: the sender does not support ECN (a congested queue drops instead).
    NotEct,
    /// 01: ECN-capable transport (1).
    Ect1,
    /// 10: ECN-capable transport (0): what RoCEv2 data packets carry.
    Ect0,
    /// 11: congestion experienced.
    Ce,
}

impl Ecn {
    /// The codepoint in the low two bits of a ToS / traffic class byte.
    pub fn from_tos(tos: u8) -> Ecn {
        match tos & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
    /// `tos` with its ECN bits replaced (the DSCP stays).
    pub fn apply(self, tos: u8) -> u8 {
        (tos & !0b11) | self.bits()
    }
    /// ECT(0), ECT(1) or CE: a marking queue may set CE instead of dropping.
    pub fn is_capable(self) -> bool {
        self != Ecn::NotEct
    }
}

/// The DSCP (upper six bits) of a ToS / traffic class byte.
pub fn dscp_of(tos: u8) -> u8 {
    tos >> 2
}

/// Offset in the frame of the network header of a parsed RoCEv2 frame.
fn l3_of(p: &Parsed) -> Option<usize> {
    match p.repr.net {
        NetHdr::RoceV2Ipv4 => p.roce.start.checked_sub(20 + 8),
        NetHdr::RoceV2Ipv6 => p.roce.start.checked_sub(40 + 8),
        NetHdr::Ib | NetHdr::RoceV1 => None,
    }
}

/// The ECN field of a parsed RoCEv2 frame (`None` for RoCEv1: no IP header).
pub fn frame_ecn(p: &Parsed) -> Option<Ecn> {
    match p.repr.net {
        NetHdr::RoceV2Ipv4 | NetHdr::RoceV2Ipv6 => Some(Ecn::from_tos(p.repr.grh.traffic_class)),
        NetHdr::Ib | NetHdr::RoceV1 => None,
    }
}

/// Writes `ecn` into the IP header of the parsed RoCEv2 frame `frame` (an
/// IPv4 header checksum is recomputed) and into `p`. Errors: RoCEv1 (no ECN
/// field) or a frame shorter than `p` says.
pub fn set_frame_ecn(frame: &mut [u8], p: &mut Parsed, ecn: Ecn) -> Result<()> {
    let l3 = l3_of(p).ok_or(Error::Malformed("no ECN field"))?;
    match p.repr.net {
        NetHdr::RoceV2Ipv4 => {
            let ip = frame.get_mut(l3..l3 + 20).ok_or(Error::Truncated("IPv4"))?;
            ip[1] = ecn.apply(ip[1]);
            wr16(ip, 10, 0);
            let c = ipv4::checksum(ip);
            wr16(ip, 10, c);
            p.repr.grh.traffic_class = ip[1];
        }
        _ => {
            let ip = frame.get_mut(l3..l3 + 40).ok_or(Error::Truncated("IPv6"))?;
            // Traffic class = bits 4..12 of the first word; ECN = its low 2 bits (byte 1, bits 5:4).
            let w = rd16(ip, 0);
            let w = (w & !0x0030) | ((ecn.bits() as u16) << 4);
            wr16(ip, 0, w);
            p.repr.grh.traffic_class = ecn.apply(p.repr.grh.traffic_class);
        }
    }
    Ok(())
}

/// What a congested queue does to a frame: an ECN-capable RoCEv2 packet is
/// marked CE (`Ok(true)`), a Not-ECT one is left alone (`Ok(false)`: the
/// queue drops it instead).
pub fn mark_ce(frame: &mut [u8], p: &mut Parsed) -> Result<bool> {
    match frame_ecn(p) {
        Some(e) if e.is_capable() => set_frame_ecn(frame, p, Ecn::Ce).map(|_| true),
        _ => Ok(false),
    }
}

/// Bytes of a CNP from the BTH through the ICRC.
pub const CNP_LEN: usize = bth::field::HEADER_LEN + 16 + icrc::LEN;

/// A Congestion Notification Packet as a ConnectX sends it (the
/// `rdma-anchors.md` vector 1 capture): opcode 0x81, flags byte 0, BECN set,
/// FECN clear, AckReq 0, PSN 0, 16 reserved zero bytes, then the ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CnpRepr {
    /// The QP to throttle: the congested flow's source QP (RC: the
    /// responder's remote QPN; UD: the DETH source QP).
    pub dest_qp: u32,
    pub pkey: u16,
    pub becn: bool,
}

impl CnpRepr {
    /// The CNP a ConnectX sends to `dest_qp` (P_Key 0xFFFF, BECN).
    pub fn to_qp(dest_qp: u32) -> CnpRepr {
        CnpRepr { dest_qp: dest_qp & 0xff_ffff, pkey: 0xffff, becn: true }
    }

    /// Parses BTH through ICRC (the ICRC is checked by the frame layer).
    /// Errors: another opcode, a length other than 32, nonzero reserved bytes.
    pub fn parse(roce: &[u8]) -> Result<CnpRepr> {
        if roce.len() < CNP_LEN {
            return Err(Error::Truncated("CNP"));
        }
        if roce.len() != CNP_LEN {
            return Err(Error::Malformed("CNP length"));
        }
        let b = bth::Repr::parse(&bth::Packet::new_checked(roce)?)?;
        if b.opcode != Opcode::CNP {
            return Err(Error::Malformed("not a CNP"));
        }
        cnp::Repr::parse(&cnp::Packet::new_checked(&roce[bth::field::HEADER_LEN..CNP_LEN - icrc::LEN])?)?;
        Ok(CnpRepr { dest_qp: b.dest_qp, pkey: b.pkey, becn: b.becn })
    }

    /// Writes BTH, the reserved bytes and a zero ICRC slot (32 bytes) into
    /// `out` (cleared first); the frame layer ([`super::roce::emit`]) fills the ICRC.
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<()> {
        let mut h = packet::cnp_headers(self.dest_qp);
        h.bth.pkey = self.pkey;
        h.bth.becn = self.becn;
        packet::emit(&h, &[], out)
    }

    /// The frame headers of the CNP answering the data frame `data` (the
    /// congested packet): addresses swapped, DSCP `cnp_dscp` with ECT(0) as
    /// a ConnectX sends it (ToS 0xC2 for DSCP 48), TTL 64, UDP source port
    /// 0, and when the data frame was tagged the same VID with PCP
    /// `cnp_prio`.
    pub fn reply_frame(data: &FrameRepr, cnp_dscp: u8, cnp_prio: u8) -> FrameRepr {
        let mut f = *data;
        f.dmac = data.smac;
        f.smac = data.dmac;
        f.vlan = data.vlan.map(|tci| (tci & 0x0fff) | ((cnp_prio as u16 & 7) << 13));
        f.grh.sgid = data.grh.dgid;
        f.grh.dgid = data.grh.sgid;
        f.grh.traffic_class = Ecn::Ect0.apply((cnp_dscp & 0x3f) << 2);
        f.grh.flow_label = 0;
        f.grh.hop_limit = 64;
        f.udp_sport = 0;
        f
    }
}

#[cfg(test)]
#[path = "congestion_tests.rs"]
mod tests;
