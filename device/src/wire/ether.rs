//! Ethernet frames (owner: eth-wire): the header walk the Ethernet port's
//! steering, RSS and checksum offloads share. A view over a whole frame
//! (no FCS), smoltcp style; nothing here panics on input bytes.
//!
//! API contract (the mlx5 Ethernet TX/RX paths are written against it):

use super::codec::Result;

/// TPIDs of 802.1Q (C-tag) and 802.1ad (S-tag).
pub const TPID_CTAG: u16 = 0x8100;
pub const TPID_STAG: u16 = 0x88a8;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;

/// One VLAN tag as found in the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    pub tpid: u16,
    pub tci: u16,
}

/// The layer-3 header of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L3 {
    None,
    /// `header_len` = IHL * 4; `total_len` from the header; `frag` = MF set or offset != 0.
    Ipv4 {
        src: [u8; 4],
        dst: [u8; 4],
        header_len: usize,
        total_len: u16,
        protocol: u8,
        tos: u8,
        ttl: u8,
        frag: bool,
    },
    /// No extension headers are walked: `next_header` is the first one.
    Ipv6 {
        src: [u8; 16],
        dst: [u8; 16],
        payload_len: u16,
        next_header: u8,
        tclass: u8,
        hop_limit: u8,
    },
}

/// The layer-4 header of a frame (first fragment only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    None,
    Tcp { sport: u16, dport: u16, flags: u8, header_len: usize },
    Udp { sport: u16, dport: u16, len: u16 },
}

/// Where a frame's headers are and what they say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    pub dmac: [u8; 6],
    pub smac: [u8; 6],
    /// Up to two tags, outermost first.
    pub vlans: [Option<VlanTag>; 2],
    /// The EtherType after all VLAN tags.
    pub ethertype: u16,
    /// Offset of the L3 header (after the tags).
    pub l3_offset: usize,
    pub l3: L3,
    /// Offset of the L4 header, when `l4` is not `None`.
    pub l4_offset: usize,
    pub l4: L4,
}

/// Walks the headers of a frame. Errors only for a frame shorter than an
/// Ethernet header; inconsistent L3/L4 headers read as `L3::None`/`L4::None`.
pub fn parse(_frame: &[u8]) -> Result<FrameInfo> {
    todo!("eth-wire")
}
