//! `ether::parse` and the `ether_build` helpers: header walk, tags, bounds,
//! and robustness on random and truncated input.

use super::*;
use crate::codec::wr16;
use crate::ether_build::{build_tcp_ipv4, build_udp_ipv4, build_udp_ipv6, push_vlan, TcpFields};
use crate::offload::{fill_checksums, rx_checksum, segment, TCP_ACK, TCP_PSH};

const DMAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const SMAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];
const A4: [u8; 4] = [10, 0, 0, 1];
const B4: [u8; 4] = [10, 0, 0, 2];

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

fn tcp4(payload: &[u8]) -> Vec<u8> {
    build_tcp_ipv4(DMAC, SMAC, A4, B4, TcpFields::new(40000, 80, TCP_ACK | TCP_PSH), payload)
}

#[test]
fn untagged_ipv4_tcp() {
    let f = tcp4(b"hello");
    let i = parse(&f).unwrap();
    assert_eq!((i.dmac, i.smac), (DMAC, SMAC));
    assert_eq!(i.vlans, [None, None]);
    assert_eq!((i.ethertype, i.l3_offset, i.l4_offset), (ETHERTYPE_IPV4, 14, 34));
    assert_eq!(
        i.l3,
        L3::Ipv4 { src: A4, dst: B4, header_len: 20, total_len: 45, protocol: 6, tos: 0, ttl: 64, frag: false }
    );
    assert_eq!(i.l4, L4::Tcp { sport: 40000, dport: 80, flags: TCP_ACK | TCP_PSH, header_len: 20 });
    assert_eq!((i.l3_end(), i.l3_header_len(), i.l4_header_len()), (Some(59), 20, 20));
}

#[test]
fn ipv6_udp() {
    let (s, d) = (v6("fe80::1"), v6("ff02::1:2"));
    let mut f = build_udp_ipv6(DMAC, SMAC, s, d, 546, 547, &[7; 10]);
    f[14] = 0x6a; // traffic class 0xa5, flow label 0x5xxxx
    f[15] = 0x55;
    let i = parse(&f).unwrap();
    assert_eq!((i.ethertype, i.l3_offset, i.l4_offset), (ETHERTYPE_IPV6, 14, 54));
    assert_eq!(i.l3, L3::Ipv6 { src: s, dst: d, payload_len: 18, next_header: 17, tclass: 0xa5, hop_limit: 64 });
    assert_eq!(i.l4, L4::Udp { sport: 546, dport: 547, len: 18 });
    assert_eq!(i.l3_end(), Some(f.len()));
}

#[test]
fn two_vlan_tags_in_either_order() {
    let base = build_udp_ipv4(DMAC, SMAC, A4, B4, 1, 2, b"x");
    for (outer, inner) in [(TPID_STAG, TPID_CTAG), (TPID_CTAG, TPID_STAG), (TPID_CTAG, TPID_CTAG)] {
        let f = push_vlan(&push_vlan(&base, inner, 0x0123), outer, 0xe456);
        let i = parse(&f).unwrap();
        assert_eq!(i.vlans, [Some(VlanTag { tpid: outer, tci: 0xe456 }), Some(VlanTag { tpid: inner, tci: 0x0123 })]);
        assert_eq!((i.ethertype, i.l3_offset, i.l4_offset), (ETHERTYPE_IPV4, 22, 42));
        assert_eq!(i.l4, L4::Udp { sport: 1, dport: 2, len: 9 });
    }
    let one = parse(&push_vlan(&base, TPID_CTAG, 5)).unwrap();
    assert_eq!((one.vlans, one.l3_offset), ([Some(VlanTag { tpid: TPID_CTAG, tci: 5 }), None], 18));
}

#[test]
fn third_tag_is_not_walked() {
    let base = build_udp_ipv4(DMAC, SMAC, A4, B4, 1, 2, b"x");
    let f = push_vlan(&push_vlan(&push_vlan(&base, TPID_CTAG, 1), TPID_CTAG, 2), TPID_STAG, 3);
    let i = parse(&f).unwrap();
    assert_eq!((i.ethertype, i.l3_offset, i.l3, i.l4), (TPID_CTAG, 22, L3::None, L4::None));
}

#[test]
fn short_frames() {
    assert_eq!(parse(&[0; 13]), Err(Error::Truncated("ethernet")));
    let i = parse(&[0; 14]).unwrap();
    assert_eq!((i.ethertype, i.l3, i.l4), (0, L3::None, L4::None));
    // A tag cut short stays the EtherType.
    let mut f = vec![0u8; 16];
    wr16(&mut f, 12, TPID_CTAG);
    let i = parse(&f).unwrap();
    assert_eq!((i.ethertype, i.vlans, i.l3_offset, i.l3), (TPID_CTAG, [None, None], 14, L3::None));
}

#[test]
fn arp_has_no_l3() {
    let mut f = vec![0u8; 42];
    wr16(&mut f, 12, ETHERTYPE_ARP);
    let i = parse(&f).unwrap();
    assert_eq!((i.ethertype, i.l3, i.l4), (ETHERTYPE_ARP, L3::None, L4::None));
}

#[test]
fn ipv4_options_move_l4() {
    let mut f = tcp4(b"opt");
    // Insert 4 option bytes (NOPs) and fix IHL and total length.
    f.splice(34..34, [1, 1, 1, 1]);
    f[14] = 0x46;
    wr16(&mut f, 16, 20 + 4 + 20 + 3);
    let i = parse(&f).unwrap();
    assert!(matches!(i.l3, L3::Ipv4 { header_len: 24, .. }));
    assert_eq!(i.l4_offset, 38);
    assert!(matches!(i.l4, L4::Tcp { sport: 40000, dport: 80, .. }));
}

#[test]
fn fragments() {
    let mut f = build_udp_ipv4(DMAC, SMAC, A4, B4, 1, 2, &[0; 32]);
    wr16(&mut f, 20, 0x2000); // MF, offset 0: the first fragment carries the L4 header
    let i = parse(&f).unwrap();
    assert!(matches!(i.l3, L3::Ipv4 { frag: true, .. }));
    assert!(matches!(i.l4, L4::Udp { .. }));
    wr16(&mut f, 20, 0x0004); // last fragment, offset 32
    let i = parse(&f).unwrap();
    assert!(matches!(i.l3, L3::Ipv4 { frag: true, .. }));
    assert_eq!(i.l4, L4::None);
    wr16(&mut f, 20, 0x4000); // DF only: not a fragment
    assert!(matches!(parse(&f).unwrap().l3, L3::Ipv4 { frag: false, .. }));
}

#[test]
fn inconsistent_l3_reads_as_none() {
    let good = tcp4(&[0; 8]); // IPv4 total length 48
    let cases: [(&str, usize, u16); 5] = [
        ("IHL 4", 14, 0x4400),
        ("IHL 15 beyond the frame", 14, 0x4f00),
        ("version 6 under EtherType IPv4", 14, 0x6500),
        ("total_len beyond the frame", 16, 49),
        ("total_len below IHL", 16, 19),
    ];
    for (what, at, v) in cases {
        let mut f = good.clone();
        wr16(&mut f, at, v);
        let i = parse(&f).unwrap();
        assert_eq!((i.ethertype, i.l3, i.l4), (ETHERTYPE_IPV4, L3::None, L4::None), "{what}");
    }
    let mut f = good.clone();
    wr16(&mut f, 16, 20 + 19); // TCP header cut by total_len
    let i = parse(&f).unwrap();
    assert!(matches!(i.l3, L3::Ipv4 { total_len: 39, .. }));
    assert_eq!(i.l4, L4::None);
    let mut v6f = build_udp_ipv6(DMAC, SMAC, v6("::1"), v6("::2"), 1, 2, b"abc");
    wr16(&mut v6f, 18, 12); // payload_len beyond the frame
    assert_eq!(parse(&v6f).unwrap().l3, L3::None);
    v6f[14] = 0x40; // version 4 under EtherType IPv6
    wr16(&mut v6f, 18, 11);
    assert_eq!(parse(&v6f).unwrap().l3, L3::None);
}

#[test]
fn inconsistent_l4_reads_as_none() {
    let good = tcp4(&[0; 8]);
    let mut f = good.clone();
    f[46] = 0x40; // data offset 4
    assert_eq!(parse(&f).unwrap().l4, L4::None);
    f[46] = 0x80; // data offset 8 = 32 bytes > 28 in the packet
    assert_eq!(parse(&f).unwrap().l4, L4::None);
    f[46] = 0x70; // 28 bytes: exactly the packet
    assert!(matches!(parse(&f).unwrap().l4, L4::Tcp { header_len: 28, .. }));

    let u = build_udp_ipv4(DMAC, SMAC, A4, B4, 1, 2, &[0; 4]);
    for len in [7u16, 13] {
        let mut f = u.clone();
        wr16(&mut f, 38, len);
        assert_eq!(parse(&f).unwrap().l4, L4::None, "udp len {len}");
    }
    let mut f = u.clone();
    wr16(&mut f, 38, 10); // shorter than the IP payload: still a UDP header
    assert!(matches!(parse(&f).unwrap().l4, L4::Udp { len: 10, .. }));
}

#[test]
fn padding_is_not_l3() {
    // A 20-byte IPv4 packet with protocol TCP padded to 60 bytes: the padding
    // must not be read as a TCP header.
    let mut f = tcp4(&[]);
    wr16(&mut f, 16, 20);
    f.resize(60, 0x55);
    let i = parse(&f).unwrap();
    assert!(matches!(i.l3, L3::Ipv4 { total_len: 20, .. }));
    assert_eq!(i.l4, L4::None);
}

#[test]
fn push_vlan_on_a_runt_is_a_copy() {
    assert_eq!(push_vlan(&[1, 2, 3], TPID_CTAG, 1), vec![1, 2, 3]);
}

/// Small deterministic LCG (no dependencies).
pub(super) struct Lcg(u64);
impl Lcg {
    pub(super) fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
}

/// Everything a received or transmitted frame goes through.
fn exercise(f: &[u8]) {
    if let Ok(i) = parse(f) {
        let _ = rx_checksum(f, &i);
        let end = i.l4_offset + i.l4_header_len();
        if i.l4 != L4::None {
            let _ = segment(f, end, 7);
        }
    }
    let mut m = f.to_vec();
    let _ = fill_checksums(&mut m, true, true);
    for hl in [0, 14, 34, 54, 58, f.len(), f.len() + 1] {
        let _ = segment(f, hl, 100);
    }
}

#[test]
fn random_and_truncated_input_never_panics() {
    let mut rng = Lcg(0x5eed);
    let samples = [
        tcp4(&[0xab; 100]),
        push_vlan(
            &push_vlan(&build_udp_ipv6(DMAC, SMAC, v6("::1"), v6("::2"), 1, 2, &[1; 40]), TPID_CTAG, 1),
            TPID_STAG,
            2,
        ),
        build_udp_ipv4(DMAC, SMAC, A4, B4, 1, 2, &[3; 30]),
    ];
    for s in &samples {
        for n in 0..=s.len() {
            exercise(&s[..n]);
        }
        for _ in 0..ROUNDS {
            let mut f = s.clone();
            for _ in 0..1 + rng.next() % 4 {
                let at = rng.next() as usize % f.len();
                f[at] = rng.next() as u8;
            }
            let cut = rng.next() as usize % (f.len() + 1);
            exercise(&f[..cut.max(f.len() / 2)]);
        }
    }
    for _ in 0..ROUNDS {
        let len = rng.next() as usize % 128;
        let mut f: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if f.len() >= 14 && rng.next() % 2 == 0 {
            // Steer random bytes into the IP parsers.
            let t = [ETHERTYPE_IPV4, ETHERTYPE_IPV6, TPID_CTAG][rng.next() as usize % 3];
            wr16(&mut f, 12, t);
            if f.len() > 14 {
                f[14] = if t == ETHERTYPE_IPV6 { 0x60 } else { 0x45 };
            }
        }
        exercise(&f);
    }
}

/// Random inputs per sample of the robustness test (fewer under Miri, which interprets every step).
const ROUNDS: usize = if cfg!(miri) { 100 } else { 3000 };
