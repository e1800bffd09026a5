//! Ethernet frames (owner: eth-wire): the header walk the Ethernet port's
//! steering, RSS and checksum offloads share. A view over a whole frame
//! (no FCS), smoltcp style; nothing here panics on input bytes.
//!
//! API contract (the mlx5 Ethernet TX/RX paths are written against it):

use super::codec::{rd16, Error, Result};

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
pub fn parse(frame: &[u8]) -> Result<FrameInfo> {
    walk(frame, Lengths::FromHeaders)
}

/// Where the end of the L3 packet is taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lengths {
    /// IPv4 `total_len` / IPv6 `payload_len`, bounds-checked against the frame (receive, checksum offload).
    FromHeaders,
    /// The end of the buffer, whatever the length fields say (LSO super-frame headers, whose length fields
    /// the segmentation rewrites; BIG TCP sends 0 there).
    FromFrame,
}

const ETH_HLEN: usize = 14;
const IPV4_MIN_HLEN: usize = 20;
const IPV6_HLEN: usize = 40;
const TCP_MIN_HLEN: usize = 20;
const UDP_HLEN: usize = 8;

pub fn walk(frame: &[u8], lengths: Lengths) -> Result<FrameInfo> {
    if frame.len() < ETH_HLEN {
        return Err(Error::Truncated("ethernet"));
    }
    let mut info = FrameInfo {
        dmac: frame[0..6].try_into().unwrap_or_default(),
        smac: frame[6..12].try_into().unwrap_or_default(),
        vlans: [None; 2],
        ethertype: rd16(frame, 12),
        l3_offset: ETH_HLEN,
        l3: L3::None,
        l4_offset: 0,
        l4: L4::None,
    };
    for slot in info.vlans.iter_mut() {
        let off = info.l3_offset;
        if !matches!(info.ethertype, TPID_CTAG | TPID_STAG) || frame.len() < off + 4 {
            break;
        }
        *slot = Some(VlanTag { tpid: info.ethertype, tci: rd16(frame, off) });
        info.ethertype = rd16(frame, off + 2);
        info.l3_offset = off + 4;
    }
    let l3 = &frame[info.l3_offset..];
    let parsed = match info.ethertype {
        ETHERTYPE_IPV4 => ipv4(l3, lengths),
        ETHERTYPE_IPV6 => ipv6(l3, lengths),
        _ => None,
    };
    let Some(Ip { hdr: l3_hdr, hlen, end: l3_end, protocol, first_fragment }) = parsed else {
        return Ok(info);
    };
    info.l3 = l3_hdr;
    if !first_fragment {
        return Ok(info);
    }
    // The L4 header must lie within the L3 packet.
    let l4 = &l3[hlen..l3_end];
    let l4_hdr = match protocol {
        IPPROTO_TCP if l4.len() >= TCP_MIN_HLEN => {
            let header_len = usize::from(l4[12] >> 4) * 4;
            if header_len < TCP_MIN_HLEN || header_len > l4.len() {
                return Ok(info);
            }
            L4::Tcp { sport: rd16(l4, 0), dport: rd16(l4, 2), flags: l4[13], header_len }
        }
        IPPROTO_UDP if l4.len() >= UDP_HLEN => {
            let len = rd16(l4, 4);
            let len_ok = usize::from(len) >= UDP_HLEN && usize::from(len) <= l4.len();
            if lengths == Lengths::FromHeaders && !len_ok {
                return Ok(info);
            }
            L4::Udp { sport: rd16(l4, 0), dport: rd16(l4, 2), len }
        }
        _ => return Ok(info),
    };
    info.l4_offset = info.l3_offset + hlen;
    info.l4 = l4_hdr;
    Ok(info)
}

/// A walked IP header.
struct Ip {
    hdr: L3,
    /// Header length.
    hlen: usize,
    /// The end of the L3 packet within the L3 bytes.
    end: usize,
    /// IPv4 protocol / IPv6 next header.
    protocol: u8,
    /// IPv6, or IPv4 with fragment offset 0: the L4 header is here.
    first_fragment: bool,
}

/// An IPv4 header at the start of `l3`.
fn ipv4(l3: &[u8], lengths: Lengths) -> Option<Ip> {
    if l3.len() < IPV4_MIN_HLEN || l3[0] >> 4 != 4 {
        return None;
    }
    let header_len = usize::from(l3[0] & 0xf) * 4;
    let total_len = rd16(l3, 2);
    if header_len < IPV4_MIN_HLEN || header_len > l3.len() {
        return None;
    }
    let end = match lengths {
        Lengths::FromHeaders => {
            let t = usize::from(total_len);
            if t < header_len || t > l3.len() {
                return None;
            }
            t
        }
        Lengths::FromFrame => l3.len(),
    };
    let frag_field = rd16(l3, 6);
    let more_fragments = frag_field & 0x2000 != 0;
    let offset = frag_field & 0x1fff;
    let hdr = L3::Ipv4 {
        src: l3[12..16].try_into().ok()?,
        dst: l3[16..20].try_into().ok()?,
        header_len,
        total_len,
        protocol: l3[9],
        tos: l3[1],
        ttl: l3[8],
        frag: more_fragments || offset != 0,
    };
    Some(Ip { hdr, hlen: header_len, end, protocol: l3[9], first_fragment: offset == 0 })
}

/// An IPv6 fixed header at the start of `l3`.
fn ipv6(l3: &[u8], lengths: Lengths) -> Option<Ip> {
    if l3.len() < IPV6_HLEN || l3[0] >> 4 != 6 {
        return None;
    }
    let payload_len = rd16(l3, 4);
    let end = match lengths {
        Lengths::FromHeaders => {
            let e = IPV6_HLEN + usize::from(payload_len);
            if e > l3.len() {
                return None;
            }
            e
        }
        Lengths::FromFrame => l3.len(),
    };
    let hdr = L3::Ipv6 {
        src: l3[8..24].try_into().ok()?,
        dst: l3[24..40].try_into().ok()?,
        payload_len,
        next_header: l3[6],
        tclass: ((rd16(l3, 0) >> 4) & 0xff) as u8,
        hop_limit: l3[7],
    };
    Some(Ip { hdr, hlen: IPV6_HLEN, end, protocol: l3[6], first_fragment: true })
}

impl FrameInfo {
    /// The end of the L3 packet (offset into the frame) per the IP header's
    /// length field; `None` without an L3 header.
    pub fn l3_end(&self) -> Option<usize> {
        match self.l3 {
            L3::Ipv4 { total_len, .. } => Some(self.l3_offset.saturating_add(usize::from(total_len))),
            L3::Ipv6 { payload_len, .. } => Some(self.l3_offset.saturating_add(IPV6_HLEN + usize::from(payload_len))),
            L3::None => None,
        }
    }

    /// The L3 header's length (IPv4 IHL * 4, IPv6 40); 0 without an L3 header.
    pub fn l3_header_len(&self) -> usize {
        match self.l3 {
            L3::Ipv4 { header_len, .. } => header_len,
            L3::Ipv6 { .. } => IPV6_HLEN,
            L3::None => 0,
        }
    }

    /// The L4 header's length (TCP data offset * 4, UDP 8); 0 without an L4 header.
    pub fn l4_header_len(&self) -> usize {
        match self.l4 {
            L4::Tcp { header_len, .. } => header_len,
            L4::Udp { .. } => UDP_HLEN,
            L4::None => 0,
        }
    }
}

#[cfg(test)]
#[path = "ether_tests.rs"]
mod tests;
