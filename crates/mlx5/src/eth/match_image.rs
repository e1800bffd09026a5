//! The match image of a received frame (`struct fte_match_param`, 512
//! bytes) and the masked compare of a flow-table entry against it
//! (owner: eth-rx). The image is built from the frame as it arrived, before
//! VLAN stripping.

use vrnic_wire::ether::{FrameInfo, L3, L4, TPID_CTAG, TPID_STAG};

/// Bytes of `fte_match_param`.
pub const PARAM_LEN: usize = 0x200;
/// Bytes of one criteria section (`fte_match_set_lyr_2_4`, `fte_match_set_misc`, ...).
const SECTION_LEN: usize = 0x40;

/// `match_criteria_enable` bits and the sections they select.
pub mod criteria {
    /// `outer_headers` (`fte_match_set_lyr_2_4` at 0x000).
    pub const OUTER: u8 = 1 << 0;
    /// `misc_parameters` (`fte_match_set_misc` at 0x040).
    pub const MISC: u8 = 1 << 1;
}

/// Sections the image fills: outer headers from the frame; misc all zero
/// (source vport 0, no tunnel keys, no second-tag fields). Any other enabled
/// section with a non-zero mask cannot match.
const KNOWN_SECTIONS: u8 = criteria::OUTER | criteria::MISC;

/// A frame's `fte_match_param` image.
#[derive(Clone, PartialEq, Eq)]
pub struct MatchImage(pub [u8; PARAM_LEN]);

impl std::fmt::Debug for MatchImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MatchImage").field(&&self.0[..SECTION_LEN]).finish()
    }
}

impl MatchImage {
    /// The image of a parsed frame (`fte_match_set_lyr_2_4` offsets).
    pub fn of(info: &FrameInfo) -> MatchImage {
        let mut b = [0u8; PARAM_LEN];
        let o = &mut b[..SECTION_LEN];
        o[0x00..0x06].copy_from_slice(&info.smac);
        o[0x06..0x08].copy_from_slice(&info.ethertype.to_be_bytes());
        o[0x08..0x0e].copy_from_slice(&info.dmac);
        if let Some(tag) = info.vlans[0] {
            // first_prio[3] first_cfi[1] first_vid[12]: the TCI as it is.
            o[0x0e..0x10].copy_from_slice(&tag.tci.to_be_bytes());
            match tag.tpid {
                TPID_CTAG => o[0x12] |= 0x80,
                TPID_STAG => o[0x12] |= 0x40,
                _ => {}
            }
        }
        let (tos, frag) = match info.l3 {
            L3::None => (None, false),
            L3::Ipv4 { src, dst, protocol, tos, ttl, frag, .. } => {
                o[0x10] = protocol;
                o[0x12] |= 4 << 1;
                o[0x1b] = ttl;
                o[0x2c..0x30].copy_from_slice(&src);
                o[0x3c..0x40].copy_from_slice(&dst);
                (Some(tos), frag)
            }
            L3::Ipv6 { src, dst, next_header, tclass, hop_limit, .. } => {
                o[0x10] = next_header;
                o[0x12] |= 6 << 1;
                o[0x1b] = hop_limit;
                o[0x20..0x30].copy_from_slice(&src);
                o[0x30..0x40].copy_from_slice(&dst);
                (Some(tclass), false)
            }
        };
        if let Some(tos) = tos {
            // ip_dscp[6] ip_ecn[2].
            o[0x11] = tos;
        }
        if frag {
            o[0x12] |= 0x20;
        }
        match info.l4 {
            L4::None => {}
            L4::Tcp { sport, dport, flags, .. } => {
                // tcp_flags[9]: the low 8 flag bits in byte 0x13.
                o[0x13] = flags;
                o[0x14..0x16].copy_from_slice(&sport.to_be_bytes());
                o[0x16..0x18].copy_from_slice(&dport.to_be_bytes());
            }
            L4::Udp { sport, dport, .. } => {
                o[0x1c..0x1e].copy_from_slice(&sport.to_be_bytes());
                o[0x1e..0x20].copy_from_slice(&dport.to_be_bytes());
            }
        }
        MatchImage(b)
    }

    /// True when `(image XOR value) AND mask` is zero in every section that
    /// `enable` selects; a selected section the image does not know matches
    /// only with an all-zero mask.
    pub fn matches(&self, enable: u8, mask: &[u8; PARAM_LEN], value: &[u8; PARAM_LEN]) -> bool {
        (0..8).filter(|s| enable & (1 << s) != 0).all(|s| {
            let r = s * SECTION_LEN..(s + 1) * SECTION_LEN;
            if KNOWN_SECTIONS & (1 << s) == 0 {
                return mask[r].iter().all(|&m| m == 0);
            }
            self.0[r.clone()].iter().zip(&mask[r.clone()]).zip(&value[r]).all(|((i, m), v)| (i ^ v) & m == 0)
        })
    }
}
