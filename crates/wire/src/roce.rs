//! RoCE frames on an Ethernet link: the L2/L3/L4 headers in front of a BTH
//! packet (RoCEv2 over IPv4 or IPv6, RoCEv1's GRH), their ICRC, and the
//! 40-byte GRH area a UD receive gets (`union rdma_network_hdr`).
//!
//! Frame layout (what rdma_rxe sends and accepts, IBTA Annex A17):
//! Ethernet [802.1Q] | IPv4 (DF, proto 17, TTL = hop limit, ToS = traffic
//! class) or IPv6 (traffic class, flow label, next header 17, hop limit) |
//! UDP (source port per flow, destination 4791, checksum 0) | BTH … payload
//! pad | ICRC. RoCEv1: Ethertype 0x8915, GRH (NxtHdr 0x1B), BTH … ICRC.

use crate::codec::{rd16, wr16, Error, Result};
use crate::ip::ipv4;
use crate::{bth, grh, icrc};

/// The network header a packet arrived with: an InfiniBand GRH (or none),
/// or one of the RoCE formats (the CQE's `roce_packet_type`, the layout of
/// a UD receive's 40-byte GRH area).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum NetHdr {
    #[default]
    Ib,
    /// RoCEv1: Ethertype 0x8915, a GRH.
    RoceV1,
    /// RoCEv2 over IPv6.
    RoceV2Ipv6,
    /// RoCEv2 over IPv4.
    RoceV2Ipv4,
}

/// RoCEv2's UDP destination port.
pub const ROCE_V2_PORT: u16 = 4791;
/// RoCEv1's Ethertype.
pub const ETHERTYPE_ROCE_V1: u16 = 0x8915;

/// Everything a RoCE frame's headers carry besides the BTH packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameRepr {
    pub dmac: [u8; 6],
    pub smac: [u8; 6],
    /// 802.1Q TCI (PCP, DEI, VID) of a tagged frame.
    pub vlan: Option<u16>,
    /// RoceV1, RoceV2Ipv4 or RoceV2Ipv6 (`Ib` is refused).
    pub net: NetHdr,
    /// The addresses as GIDs (IPv4 v4-mapped), ToS/traffic class, flow
    /// label (IPv6, v1), TTL/hop limit: a GRH's fields. `payload_len` (BTH
    /// through ICRC) and `next_header` are derived when emitting, filled in
    /// when parsing.
    pub grh: grh::Repr,
    /// RoCEv2: the UDP source port.
    pub udp_sport: u16,
}

/// Bytes of an Ethernet header without tags.
const ETH_LEN: usize = 14;
const TPID_CTAG: u16 = 0x8100;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const PROTO_UDP: u8 = 17;
const IPV4_DF: u16 = 0x4000;
/// The shortest BTH..ICRC a RoCE frame may carry: a BTH and the ICRC.
const MIN_ROCE: usize = bth::field::HEADER_LEN + icrc::LEN;

/// Bytes of the network headers (IP + UDP, or the GRH) of `net`.
fn net_len(net: NetHdr) -> usize {
    match net {
        NetHdr::Ib => 0,
        NetHdr::RoceV1 => grh::field::HEADER_LEN,
        NetHdr::RoceV2Ipv6 => IPV6_LEN + UDP_LEN,
        NetHdr::RoceV2Ipv4 => IPV4_LEN + UDP_LEN,
    }
}

/// Bytes of the headers [`emit`] writes in front of the BTH.
pub fn header_len(r: &FrameRepr) -> usize {
    ETH_LEN + if r.vlan.is_some() { 4 } else { 0 } + net_len(r.net)
}

/// The GID `g` as an IPv4 address (its last four bytes).
fn v4_of(g: &[u8; 16]) -> [u8; 4] {
    [g[12], g[13], g[14], g[15]]
}

/// An IPv4 address as a v4-mapped GID (`::ffff:a.b.c.d`).
pub fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&a);
    g
}

/// Writes the IPv4 header of a RoCEv2 packet of `roce_len` bytes (BTH
/// through ICRC) with a valid header checksum into `b[..20]`.
fn emit_ipv4(g: &grh::Repr, roce_len: usize, b: &mut [u8]) {
    b[0] = 0x45;
    b[1] = g.traffic_class;
    wr16(b, 2, (IPV4_LEN + UDP_LEN + roce_len) as u16);
    wr16(b, 4, 0);
    wr16(b, 6, IPV4_DF);
    b[8] = g.hop_limit;
    b[9] = PROTO_UDP;
    wr16(b, 10, 0);
    b[12..16].copy_from_slice(&v4_of(&g.sgid));
    b[16..20].copy_from_slice(&v4_of(&g.dgid));
    let c = ipv4::checksum(&b[..IPV4_LEN]);
    wr16(b, 10, c);
}

/// Writes the IPv6 header of a RoCEv2 packet of `roce_len` bytes into `b[..40]`.
fn emit_ipv6(g: &grh::Repr, roce_len: usize, b: &mut [u8]) {
    let h = grh::Repr { payload_len: (UDP_LEN + roce_len) as u16, next_header: PROTO_UDP, ..*g };
    b[..IPV6_LEN].copy_from_slice(&h.to_bytes());
}

/// Writes `r`'s headers followed by `roce` (BTH through the 4-byte ICRC
/// slot) into `out` (cleared first), and fills the ICRC with the RoCE
/// masking rules (IPv4: ToS, TTL, checksum; IPv6: traffic class, flow
/// label, hop limit; UDP checksum; BTH byte 4). The IPv4 header checksum is
/// computed; the UDP checksum is 0.
pub fn emit(r: &FrameRepr, roce: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    if roce.len() < MIN_ROCE {
        return Err(Error::Truncated("RoCE packet"));
    }
    let max = match r.net {
        NetHdr::Ib => return Err(Error::Malformed("RoCE network header")),
        NetHdr::RoceV1 => u16::MAX as usize,
        NetHdr::RoceV2Ipv6 => u16::MAX as usize - UDP_LEN,
        NetHdr::RoceV2Ipv4 => u16::MAX as usize - UDP_LEN - IPV4_LEN,
    };
    if roce.len() > max {
        return Err(Error::Malformed("RoCE packet length"));
    }
    let hl = header_len(r);
    out.resize(hl, 0);
    out[0..6].copy_from_slice(&r.dmac);
    out[6..12].copy_from_slice(&r.smac);
    let mut at = 12;
    if let Some(tci) = r.vlan {
        wr16(out, at, TPID_CTAG);
        wr16(out, at + 2, tci);
        at += 4;
    }
    let l3 = at + 2;
    match r.net {
        NetHdr::RoceV2Ipv4 => {
            wr16(out, at, ETHERTYPE_IPV4);
            emit_ipv4(&r.grh, roce.len(), &mut out[l3..]);
        }
        NetHdr::RoceV2Ipv6 => {
            wr16(out, at, ETHERTYPE_IPV6);
            emit_ipv6(&r.grh, roce.len(), &mut out[l3..]);
        }
        _ => {
            wr16(out, at, ETHERTYPE_ROCE_V1);
            let g = grh::Repr { payload_len: roce.len() as u16, next_header: grh::NXTHDR_IBA, ..r.grh };
            out[l3..l3 + IPV6_LEN].copy_from_slice(&g.to_bytes());
        }
    }
    if r.net != NetHdr::RoceV1 {
        let u = hl - UDP_LEN;
        wr16(out, u, r.udp_sport);
        wr16(out, u + 2, ROCE_V2_PORT);
        wr16(out, u + 4, (UDP_LEN + roce.len()) as u16);
        wr16(out, u + 6, 0);
    }
    out.extend_from_slice(roce);
    let n = out.len() - icrc::LEN;
    let c = icrc_of(r.net, &out[l3..hl], &out[hl..n]);
    out[n..].copy_from_slice(&c.to_le_bytes());
    Ok(())
}

/// The ICRC of `roce` (BTH through pad, no ICRC) behind the network
/// headers `hdr` of format `net` as they are on the wire: the variant
/// fields are masked here.
fn icrc_of(net: NetHdr, hdr: &[u8], roce: &[u8]) -> u32 {
    let mut m = [0u8; IPV6_LEN + UDP_LEN];
    let m = &mut m[..hdr.len().min(IPV6_LEN + UDP_LEN)];
    m.copy_from_slice(&hdr[..m.len()]);
    match net {
        NetHdr::RoceV2Ipv4 if m.len() == IPV4_LEN + UDP_LEN => {
            m[1] = 0xff; // ToS
            m[8] = 0xff; // TTL
            m[10..12].fill(0xff); // header checksum
            m[26..28].fill(0xff); // UDP checksum
        }
        NetHdr::RoceV2Ipv6 | NetHdr::RoceV1 if m.len() >= IPV6_LEN => {
            m[0] |= 0x0f; // traffic class (IPVer stays)
            m[1..4].fill(0xff); // traffic class, flow label
            m[7] = 0xff; // hop limit
            if m.len() == IPV6_LEN + UDP_LEN {
                m[46..48].fill(0xff); // UDP checksum
            }
        }
        _ => {}
    }
    icrc::compute_over(m, roce)
}

/// A parsed RoCE frame: its headers and where BTH..ICRC lies in the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub repr: FrameRepr,
    /// BTH through ICRC (IPv4 total length / IPv6 payload length bound it,
    /// not the frame: Ethernet padding is excluded).
    pub roce: core::ops::Range<usize>,
}

/// Parses a frame as RoCE: `Ok(None)` when it is not RoCE (another
/// Ethertype, IP protocol or UDP port; an IPv4 fragment), `Err` when it is
/// RoCE but malformed (bad lengths, IPv4 header checksum, BTH shorter than
/// 12 + 4 bytes).
///
/// A frame too short to show its IP protocol and UDP destination port is
/// not recognised as RoCE (the NIC path sees it); one 802.1Q tag is walked
/// (a second tag: not RoCE).
pub fn parse(frame: &[u8]) -> Result<Option<Parsed>> {
    if frame.len() < ETH_LEN {
        return Ok(None);
    }
    let mut repr = FrameRepr::default();
    repr.dmac.copy_from_slice(&frame[0..6]);
    repr.smac.copy_from_slice(&frame[6..12]);
    let mut ethertype = rd16(frame, 12);
    let mut l3 = ETH_LEN;
    if ethertype == TPID_CTAG {
        if frame.len() < ETH_LEN + 4 {
            return Ok(None);
        }
        repr.vlan = Some(rd16(frame, 14));
        ethertype = rd16(frame, 16);
        l3 += 4;
    }
    let ip = &frame[l3..];
    let roce = match ethertype {
        ETHERTYPE_IPV4 => match parse_ipv4(ip, &mut repr)? {
            Some(r) => r,
            None => return Ok(None),
        },
        ETHERTYPE_IPV6 => match parse_ipv6(ip, &mut repr)? {
            Some(r) => r,
            None => return Ok(None),
        },
        ETHERTYPE_ROCE_V1 => parse_v1(ip, &mut repr)?,
        _ => return Ok(None),
    };
    Ok(Some(Parsed { repr, roce: l3 + roce.start..l3 + roce.end }))
}

/// The UDP header at `u` in `ip` (whose L3 packet ends at `end`): `None`
/// when its destination port is not RoCEv2's, else BTH..ICRC (relative to
/// `ip`) after the length checks.
fn udp_roce(ip: &[u8], u: usize, end: usize, r: &mut FrameRepr) -> Result<Option<core::ops::Range<usize>>> {
    if rd16(ip, u + 2) != ROCE_V2_PORT {
        return Ok(None);
    }
    r.udp_sport = rd16(ip, u);
    let ulen = rd16(ip, u + 4) as usize;
    if u + ulen != end {
        return Err(Error::Malformed("RoCE UDP length"));
    }
    if ulen < UDP_LEN + MIN_ROCE {
        return Err(Error::Truncated("RoCE packet"));
    }
    Ok(Some(u + UDP_LEN..end))
}

fn parse_ipv4(ip: &[u8], r: &mut FrameRepr) -> Result<Option<core::ops::Range<usize>>> {
    if ip.len() < IPV4_LEN || ip[0] >> 4 != 4 || ip[9] != PROTO_UDP || rd16(ip, 6) & 0x3fff != 0 {
        return Ok(None);
    }
    let ihl = (ip[0] & 0xf) as usize * 4;
    if ihl < IPV4_LEN || ip.len() < ihl + UDP_LEN || rd16(ip, ihl + 2) != ROCE_V2_PORT {
        return Ok(None);
    }
    if ihl != IPV4_LEN {
        return Err(Error::Malformed("RoCE IPv4 options"));
    }
    if ipv4::checksum(&ip[..IPV4_LEN]) != 0 {
        return Err(Error::Malformed("IPv4 checksum"));
    }
    let total = rd16(ip, 2) as usize;
    if total < IPV4_LEN + UDP_LEN || total > ip.len() {
        return Err(Error::Malformed("IPv4 total length"));
    }
    let Some(roce) = udp_roce(ip, IPV4_LEN, total, r)? else { return Ok(None) };
    r.net = NetHdr::RoceV2Ipv4;
    r.grh = grh::Repr {
        traffic_class: ip[1],
        flow_label: 0,
        payload_len: roce.len() as u16,
        next_header: grh::NXTHDR_IBA,
        hop_limit: ip[8],
        sgid: v4_mapped([ip[12], ip[13], ip[14], ip[15]]),
        dgid: v4_mapped([ip[16], ip[17], ip[18], ip[19]]),
    };
    Ok(Some(roce))
}

fn parse_ipv6(ip: &[u8], r: &mut FrameRepr) -> Result<Option<core::ops::Range<usize>>> {
    if ip.len() < IPV6_LEN + UDP_LEN || ip[0] >> 4 != 6 || ip[6] != PROTO_UDP {
        return Ok(None);
    }
    if rd16(ip, IPV6_LEN + 2) != ROCE_V2_PORT {
        return Ok(None);
    }
    let end = IPV6_LEN + rd16(ip, 4) as usize;
    if end > ip.len() {
        return Err(Error::Malformed("IPv6 payload length"));
    }
    let Some(roce) = udp_roce(ip, IPV6_LEN, end, r)? else { return Ok(None) };
    let g = grh::Repr::parse(&grh::Packet::new_unchecked(&ip[..IPV6_LEN]))?;
    r.net = NetHdr::RoceV2Ipv6;
    r.grh = grh::Repr { payload_len: roce.len() as u16, next_header: grh::NXTHDR_IBA, ..g };
    Ok(Some(roce))
}

fn parse_v1(ip: &[u8], r: &mut FrameRepr) -> Result<core::ops::Range<usize>> {
    if ip.len() < IPV6_LEN {
        return Err(Error::Truncated("RoCEv1 GRH"));
    }
    let g = grh::Repr::parse(&grh::Packet::new_unchecked(&ip[..IPV6_LEN]))?;
    if g.next_header != grh::NXTHDR_IBA {
        return Err(Error::Malformed("GRH NxtHdr"));
    }
    let end = IPV6_LEN + g.payload_len as usize;
    if end > ip.len() {
        return Err(Error::Malformed("GRH PayLen"));
    }
    if (g.payload_len as usize) < MIN_ROCE {
        return Err(Error::Truncated("RoCE packet"));
    }
    r.net = NetHdr::RoceV1;
    r.grh = g;
    Ok(IPV6_LEN..end)
}

/// Checks the ICRC of a parsed frame.
pub fn verify_icrc(frame: &[u8], p: &Parsed) -> Result<()> {
    let hl = net_len(p.repr.net);
    let (start, end) = (p.roce.start, p.roce.end);
    if hl == 0 || start < hl || end > frame.len() || end < start + MIN_ROCE {
        return Err(Error::Truncated("ICRC"));
    }
    let n = end - icrc::LEN;
    let want = u32::from_le_bytes([frame[n], frame[n + 1], frame[n + 2], frame[n + 3]]);
    if icrc_of(p.repr.net, &frame[start - hl..start], &frame[start..n]) == want {
        Ok(())
    } else {
        Err(Error::Icrc)
    }
}

/// The 40 bytes a UD receive buffer's GRH area gets for a packet that came
/// with network header `net` and GRH fields `g` (`g.payload_len`: BTH
/// through ICRC, as in a GRH): IB/RoCEv1: the GRH; RoCEv2/IPv6: the IPv6 header; RoCEv2/IPv4: 20
/// zero bytes, then the IPv4 header (with a valid header checksum: ib_core
/// checks it to tell the two RoCEv2 formats apart).
pub fn grh_area(net: NetHdr, g: &grh::Repr) -> [u8; 40] {
    let mut b = [0u8; 40];
    let roce_len = (g.payload_len as usize).min(u16::MAX as usize - UDP_LEN - IPV4_LEN);
    match net {
        NetHdr::Ib | NetHdr::RoceV1 => b = g.to_bytes(),
        NetHdr::RoceV2Ipv6 => emit_ipv6(g, (g.payload_len as usize).min(u16::MAX as usize - UDP_LEN), &mut b),
        NetHdr::RoceV2Ipv4 => emit_ipv4(g, roce_len, &mut b[20..]),
    }
    b
}

/// The UDP source port RoCEv2 uses for a flow label (`rdma_flow_label_to_udp_sport`).
pub fn flow_label_to_udp_sport(fl: u32) -> u16 {
    (((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000) as u16
}

#[cfg(test)]
#[path = "roce_tests.rs"]
mod tests;
