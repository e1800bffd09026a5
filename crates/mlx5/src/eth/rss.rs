//! Receive-side scaling (owner: eth-rx): the hash an indirect TIR computes
//! over a frame's selected fields and the `rss_hash_type` the CQE reports.
//!
//! Input in Microsoft RSS order: source IP, destination IP, source port,
//! destination port (each only when selected and present in the frame).
//! A symmetric TIR first orders the two endpoints ((IP, port) pairs, the
//! smaller first), so both directions of a flow hash alike; for the
//! direction whose source is the smaller endpoint the hash equals the plain one.

use vrnic_wire::ether::{FrameInfo, L3, L4};
use vrnic_wire::offload::toeplitz;

/// `rx_hash_fn` values.
pub const FN_NONE: u8 = 0;
pub const FN_XOR8: u8 = 1;
pub const FN_TOEPLITZ: u8 = 2;

/// `selected_fields` bits (`MLX5_HASH_FIELD_SEL_*`).
pub const SRC_IP: u32 = 1 << 0;
pub const DST_IP: u32 = 1 << 1;
pub const L4_SPORT: u32 = 1 << 2;
pub const L4_DPORT: u32 = 1 << 3;
/// IPsec SPI (AH/ESP TIRs): selected by the driver; frames carry no SPI the
/// parser reads, so such TIRs hash on their IP fields only.
pub const IPSEC_SPI: u32 = 1 << 4;
pub const FIELDS_SUPPORTED: u32 = SRC_IP | DST_IP | L4_SPORT | L4_DPORT | IPSEC_SPI;

/// CQE `rss_hash_type` bits.
pub mod hash_type {
    pub const IPV4: u8 = 1 << 2;
    pub const IPV6: u8 = 2 << 2;
    pub const TCP: u8 = 1 << 6;
    pub const UDP: u8 = 2 << 6;
}

/// A TIR's hash settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxHash {
    pub func: u8,
    pub symmetric: bool,
    pub key: [u8; 40],
    /// `l3_prot_type`: the fields are IPv6 (else IPv4).
    pub l3_ipv6: bool,
    /// `l4_prot_type`: the ports are UDP (else TCP).
    pub l4_udp: bool,
    pub fields: u32,
}

/// The bytes hashed for a frame and the `rss_hash_type` they make
/// (empty: the frame has none of the selected fields).
pub fn hash_input(h: &RxHash, info: &FrameInfo) -> (Vec<u8>, u8) {
    let (src, dst, ip_type): (&[u8], &[u8], u8) = match (&info.l3, h.l3_ipv6) {
        (L3::Ipv4 { src, dst, .. }, false) => (src, dst, hash_type::IPV4),
        (L3::Ipv6 { src, dst, .. }, true) => (src, dst, hash_type::IPV6),
        _ => return (Vec::new(), 0),
    };
    let ports = match (info.l4, h.l4_udp) {
        (L4::Tcp { sport, dport, .. }, false) => Some((sport, dport, hash_type::TCP)),
        (L4::Udp { sport, dport, .. }, true) => Some((sport, dport, hash_type::UDP)),
        _ => None,
    };
    let (sport, dport, l4_type) = ports.unwrap_or((0, 0, 0));
    let mut a = (src, sport);
    let mut b = (dst, dport);
    if h.symmetric && a > b {
        std::mem::swap(&mut a, &mut b);
    }
    let mut v = Vec::with_capacity(36);
    let mut ty = 0;
    if h.fields & SRC_IP != 0 {
        v.extend_from_slice(a.0);
        ty = ip_type;
    }
    if h.fields & DST_IP != 0 {
        v.extend_from_slice(b.0);
        ty = ip_type;
    }
    if ports.is_some() && h.fields & (L4_SPORT | L4_DPORT) != 0 {
        if h.fields & L4_SPORT != 0 {
            v.extend_from_slice(&a.1.to_be_bytes());
        }
        if h.fields & L4_DPORT != 0 {
            v.extend_from_slice(&b.1.to_be_bytes());
        }
        ty |= l4_type;
    }
    (v, ty)
}

/// The hash of a frame and its `rss_hash_type` (0, 0 when nothing is hashed).
pub fn hash(h: &RxHash, info: &FrameInfo) -> (u32, u8) {
    if h.func == FN_NONE {
        return (0, 0);
    }
    let (input, ty) = hash_input(h, info);
    if input.is_empty() {
        return (0, 0);
    }
    let v = match h.func {
        FN_XOR8 => !input.iter().fold(0u8, |x, b| x ^ b) as u32,
        _ => toeplitz(&h.key, &input),
    };
    (v, ty)
}
