//! Building Ethernet frames with correct checksums (owner: eth-wire): for
//! tests of the Ethernet data path, steering and the fabric, and anything
//! that must originate a frame. IPv4 headers have no options (ID 0, DF,
//! TTL 64), IPv6 headers no extension headers (hop limit 64); VLAN tags are
//! added with [`push_vlan`].
//!
//! The payload must fit in one IP packet (IPv4: 65 535 − 20 − L4 header
//! bytes; IPv6: 65 535 − L4 header bytes): the builders panic otherwise, as
//! their callers are tests and senders of frames they sized themselves.

use super::codec::wr16;
use super::ether::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, IPPROTO_TCP, IPPROTO_UDP};
use super::offload::fill_checksums;

/// The TCP header fields a builder takes (no options: data offset 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpFields {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    /// `offload::TCP_*` bits.
    pub flags: u8,
    pub window: u16,
}

impl TcpFields {
    /// Ports and flags; sequence and acknowledgement 0, window 65535.
    pub fn new(sport: u16, dport: u16, flags: u8) -> TcpFields {
        TcpFields { sport, dport, seq: 0, ack: 0, flags, window: 0xffff }
    }
}

/// Ethernet + IPv4 + UDP with `payload`; IPv4 and UDP checksums set.
pub fn build_udp_ipv4(
    dmac: [u8; 6],
    smac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let l4 = udp_header(sport, dport, payload.len());
    finish(l2(dmac, smac, ETHERTYPE_IPV4), ipv4_header(src, dst, IPPROTO_UDP, 8 + payload.len()), &l4, payload)
}

/// Ethernet + IPv6 + UDP with `payload`; UDP checksum set.
pub fn build_udp_ipv6(
    dmac: [u8; 6],
    smac: [u8; 6],
    src: [u8; 16],
    dst: [u8; 16],
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let l4 = udp_header(sport, dport, payload.len());
    finish(l2(dmac, smac, ETHERTYPE_IPV6), ipv6_header(src, dst, IPPROTO_UDP, 8 + payload.len()), &l4, payload)
}

/// Ethernet + IPv4 + TCP with `payload`; IPv4 and TCP checksums set.
pub fn build_tcp_ipv4(
    dmac: [u8; 6],
    smac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    tcp: TcpFields,
    payload: &[u8],
) -> Vec<u8> {
    let l4 = tcp_header(&tcp);
    finish(l2(dmac, smac, ETHERTYPE_IPV4), ipv4_header(src, dst, IPPROTO_TCP, 20 + payload.len()), &l4, payload)
}

/// Ethernet + IPv6 + TCP with `payload`; TCP checksum set.
pub fn build_tcp_ipv6(
    dmac: [u8; 6],
    smac: [u8; 6],
    src: [u8; 16],
    dst: [u8; 16],
    tcp: TcpFields,
    payload: &[u8],
) -> Vec<u8> {
    let l4 = tcp_header(&tcp);
    finish(l2(dmac, smac, ETHERTYPE_IPV6), ipv6_header(src, dst, IPPROTO_TCP, 20 + payload.len()), &l4, payload)
}

/// `frame` with a VLAN tag (`tpid` 0x8100 or 0x88a8, `tci`) inserted after
/// the MAC addresses, i.e. as the new outermost tag. A frame shorter than the
/// two MAC addresses comes back unchanged.
pub fn push_vlan(frame: &[u8], tpid: u16, tci: u16) -> Vec<u8> {
    if frame.len() < 12 {
        return frame.to_vec();
    }
    let mut f = Vec::with_capacity(frame.len() + 4);
    f.extend_from_slice(&frame[..12]);
    f.extend_from_slice(&tpid.to_be_bytes());
    f.extend_from_slice(&tci.to_be_bytes());
    f.extend_from_slice(&frame[12..]);
    f
}

fn l2(dmac: [u8; 6], smac: [u8; 6], ethertype: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(128);
    f.extend_from_slice(&dmac);
    f.extend_from_slice(&smac);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

fn len16(len: usize) -> u16 {
    u16::try_from(len).expect("payload too long for one IP packet")
}

fn ipv4_header(src: [u8; 4], dst: [u8; 4], protocol: u8, l4_len: usize) -> Vec<u8> {
    let mut h = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, protocol, 0, 0];
    wr16(&mut h, 2, len16(20 + l4_len));
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h
}

fn ipv6_header(src: [u8; 16], dst: [u8; 16], next_header: u8, l4_len: usize) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0, 0, 0, next_header, 64];
    wr16(&mut h, 4, len16(l4_len));
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h
}

fn udp_header(sport: u16, dport: u16, payload_len: usize) -> [u8; 8] {
    let mut h = [0; 8];
    wr16(&mut h, 0, sport);
    wr16(&mut h, 2, dport);
    wr16(&mut h, 4, len16(8 + payload_len));
    h
}

fn tcp_header(t: &TcpFields) -> [u8; 20] {
    let mut h = [0; 20];
    wr16(&mut h, 0, t.sport);
    wr16(&mut h, 2, t.dport);
    h[4..8].copy_from_slice(&t.seq.to_be_bytes());
    h[8..12].copy_from_slice(&t.ack.to_be_bytes());
    h[12] = 5 << 4;
    h[13] = t.flags;
    wr16(&mut h, 14, t.window);
    h
}

fn finish(mut frame: Vec<u8>, l3: Vec<u8>, l4: &[u8], payload: &[u8]) -> Vec<u8> {
    frame.extend_from_slice(&l3);
    frame.extend_from_slice(l4);
    frame.extend_from_slice(payload);
    fill_checksums(&mut frame, true, true).expect("a frame built here has IP and L4 headers");
    frame
}
