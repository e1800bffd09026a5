//! RoCE frames on an Ethernet link: the L2/L3/L4 headers in front of a BTH
//! packet (RoCEv2 over IPv4 or IPv6, RoCEv1's GRH), their ICRC, and the
//! 40-byte GRH area a UD receive gets (`union rdma_network_hdr`).
//!
//! Frame layout (what rdma_rxe sends and accepts, IBTA Annex A17):
//! Ethernet [802.1Q] | IPv4 (DF, proto 17, TTL = hop limit, ToS = traffic
//! class) or IPv6 (traffic class, flow label, next header 17, hop limit) |
//! UDP (source port per flow, destination 4791, checksum 0) | BTH … payload
//! pad | ICRC. RoCEv1: Ethertype 0x8915, GRH (NxtHdr 0x1B), BTH … ICRC.

use crate::wire::codec::Result;
use crate::wire::grh;

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

/// Bytes of the headers [`emit`] writes in front of the BTH.
pub fn header_len(r: &FrameRepr) -> usize {
    let _ = r;
    todo!("wire/roce: header_len")
}

/// Writes `r`'s headers followed by `roce` (BTH through the 4-byte ICRC
/// slot) into `out` (cleared first), and fills the ICRC with the RoCE
/// masking rules (IPv4: ToS, TTL, checksum; IPv6: traffic class, flow
/// label, hop limit; UDP checksum; BTH byte 4). The IPv4 header checksum is
/// computed; the UDP checksum is 0.
pub fn emit(r: &FrameRepr, roce: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let _ = (r, roce, out);
    todo!("wire/roce: emit")
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
pub fn parse(frame: &[u8]) -> Result<Option<Parsed>> {
    let _ = frame;
    todo!("wire/roce: parse")
}

/// Checks the ICRC of a parsed frame.
pub fn verify_icrc(frame: &[u8], p: &Parsed) -> Result<()> {
    let _ = (frame, p);
    todo!("wire/roce: verify_icrc")
}

/// The 40 bytes a UD receive buffer's GRH area gets for a packet that came
/// with network header `net` and GRH fields `g` (`g.payload_len`: BTH
/// through ICRC, as in a GRH): IB/RoCEv1: the GRH; RoCEv2/IPv6: the IPv6 header; RoCEv2/IPv4: 20
/// zero bytes, then the IPv4 header (with a valid header checksum: ib_core
/// checks it to tell the two RoCEv2 formats apart).
pub fn grh_area(net: NetHdr, g: &grh::Repr) -> [u8; 40] {
    let _ = (net, g);
    todo!("wire/roce: grh_area")
}

/// The UDP source port RoCEv2 uses for a flow label (`rdma_flow_label_to_udp_sport`).
pub fn flow_label_to_udp_sport(fl: u32) -> u16 {
    (((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000) as u16
}
