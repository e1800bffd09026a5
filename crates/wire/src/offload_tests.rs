//! Checksum offloads, LSO and Toeplitz against known vectors (RFC 1071, a
//! textbook IPv4 header, smoltcp's TCP segment, the Microsoft RSS
//! verification suite) and against each other (every LSO segment must parse
//! and pass `rx_checksum`).

use super::*;
use crate::codec::{rd16, rd32, wr16};
use crate::ether::{parse, TPID_CTAG, TPID_STAG};
use crate::ether_build::{build_tcp_ipv4, build_tcp_ipv6, build_udp_ipv4, build_udp_ipv6, push_vlan, TcpFields};

const DMAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const SMAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];
const A4: [u8; 4] = [192, 168, 1, 1];
const B4: [u8; 4] = [192, 168, 1, 2];

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}
fn v4(s: &str) -> [u8; 4] {
    s.parse::<std::net::Ipv4Addr>().unwrap().octets()
}

fn eth(ethertype: u16) -> Vec<u8> {
    let mut f = [DMAC, SMAC].concat();
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

/// Checks the frame's checksums the way a receiver does.
fn rx(f: &[u8]) -> RxChecksum {
    rx_checksum(f, &parse(f).unwrap())
}

#[test]
fn rfc1071_example() {
    // RFC 1071 §3: 0001 f203 f4f5 f6f7 sums to 2ddf0, folded ddf2.
    let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    assert_eq!(ones_sum(&data, 0), 0x2ddf0);
    assert_eq!(fold(ones_sum(&data, 0)), 0xddf2);
    // Byte-order independence (§2B): the swapped sum is the swapped result.
    let swapped: Vec<u8> = data.chunks(2).flat_map(|w| [w[1], w[0]]).collect();
    assert_eq!(fold(ones_sum(&swapped, 0)), 0xf2dd);
    // Pieces of even length chain; an odd last byte is padded with zero.
    assert_eq!(ones_sum(&data[4..], ones_sum(&data[..4], 0)), 0x2ddf0);
    assert_eq!(ones_sum(&[0x12], 0), 0x1200);
    assert_eq!(fold(0x1_fffe), 0xffff);
    assert_eq!(fold(0xffff_ffff), 0xffff);
    // No overflow however long: 1 MiB of 0xff (4 KiB under Miri) sums to negative zero.
    let n = if cfg!(miri) { 1 << 12 } else { 1 << 20 };
    assert_eq!(fold(ones_sum(&vec![0xff; n], 0xffff_ffff)), 0xffff);
}

/// The IPv4 header of the Wikipedia "IPv4 header checksum" example: checksum 0xb861.
const IPV4_HDR: [u8; 20] = [
    0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00,
    0xc7,
];

#[test]
fn ipv4_header_checksum_known_value() {
    assert_eq!(fold(ones_sum(&IPV4_HDR, 0)), 0xffff);
    let mut f = eth(0x0800);
    f.extend_from_slice(&IPV4_HDR);
    f.resize(14 + 0x73, 0);
    assert!(rx(&f).l3_ok);
    wr16(&mut f, 24, 0xdead);
    assert!(!rx(&f).l3_ok);
    fill_checksums(&mut f, true, false).unwrap();
    assert_eq!(rd16(&f, 24), 0xb861);
    assert!(rx(&f).l3_ok);
}

/// smoltcp's `wire::tcp` test segment, 192.168.1.1 → 192.168.1.2: checksum 0x01b6.
const TCP_SEG: [u8; 28] = [
    0xbf, 0x00, 0x00, 0x50, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x60, 0x35, 0x01, 0x23, 0x01, 0xb6, 0x02,
    0x01, 0x03, 0x03, 0x0c, 0x01, 0xaa, 0x00, 0x00, 0xff,
];

fn tcp_known_frame() -> Vec<u8> {
    let mut f = eth(0x0800);
    f.extend_from_slice(&[0x45, 0, 0, 48, 0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&A4);
    f.extend_from_slice(&B4);
    f.extend_from_slice(&TCP_SEG);
    f
}

#[test]
fn tcp_checksum_known_value() {
    let mut f = tcp_known_frame();
    let r = rx(&f);
    assert!(r.l4_ok && !r.l3_ok, "{r:?}");
    // Whatever the field held (zero, garbage, the pseudo-header sum Linux leaves there).
    for junk in [0, 0xffff, 0x1234] {
        wr16(&mut f, 50, junk);
        assert!(!rx(&f).l4_ok || junk == 0x01b6);
        fill_checksums(&mut f, true, true).unwrap();
        assert_eq!(rd16(&f, 50), 0x01b6);
        let r = rx(&f);
        assert!(r.l3_ok && r.l4_ok);
    }
    // Ethernet padding after the IP packet changes nothing.
    let mut padded = f.clone();
    padded.resize(80, 0x77);
    wr16(&mut padded, 50, 0);
    fill_checksums(&mut padded, true, true).unwrap();
    assert_eq!(padded[..f.len()], f[..]);
    assert_eq!(rx(&padded), rx(&f));
}

#[test]
fn tcp_checksum_over_ipv6_and_vlans() {
    let t = TcpFields { seq: 7, ack: 9, ..TcpFields::new(1, 2, TCP_ACK) };
    let f = build_tcp_ipv6(DMAC, SMAC, v6("2001:db8::1"), v6("2001:db8::2"), t, &[9; 33]);
    let tagged = push_vlan(&push_vlan(&f, TPID_CTAG, 3), TPID_STAG, 4);
    for g in [&f, &tagged] {
        let r = rx(g);
        assert!(r.l3_ok && r.l4_ok);
    }
    let mut bad = tagged.clone();
    let n = bad.len();
    bad[n - 1] ^= 1;
    assert!(!rx(&bad).l4_ok);
    fill_checksums(&mut bad, false, true).unwrap();
    assert!(rx(&bad).l4_ok);
    // L3 on IPv6 has no header checksum: nothing changes.
    let mut same = tagged.clone();
    fill_checksums(&mut same, true, false).unwrap();
    assert_eq!(same, tagged);
}

#[test]
fn udp_checksum_zero_is_sent_as_ffff() {
    for ipv6 in [false, true] {
        let build = |p: &[u8]| {
            if ipv6 {
                build_udp_ipv6(DMAC, SMAC, v6("fd00::1"), v6("fd00::2"), 5000, 6000, p)
            } else {
                build_udp_ipv4(DMAC, SMAC, A4, B4, 5000, 6000, p)
            }
        };
        let f = build(&[0, 0]);
        let csum_at = f.len() - 4;
        let c = rd16(&f, csum_at);
        // A payload word equal to the checksum makes the sum 0xffff: the checksum computes to 0.
        let mut g = build(&c.to_be_bytes());
        assert_eq!(rd16(&g, csum_at), 0xffff);
        assert!(rx(&g).l4_ok);
        wr16(&mut g, csum_at, 0);
        // Zero means "no checksum" over IPv4 only.
        assert_eq!(rx(&g).l4_ok, !ipv6);
        fill_checksums(&mut g, false, true).unwrap();
        assert_eq!(rd16(&g, csum_at), 0xffff);
    }
}

#[test]
fn fill_checksums_errors() {
    let mut arp = eth(0x0806);
    arp.resize(60, 0);
    assert_eq!(fill_checksums(&mut arp, true, true), Err(OffloadError::NotIp));
    assert_eq!(fill_checksums(&mut arp, false, false), Ok(()));
    assert_eq!(fill_checksums(&mut [0; 10], true, false), Err(OffloadError::NotIp));
    // IPv4 whose total length overruns the frame.
    let mut f = tcp_known_frame();
    wr16(&mut f, 16, 200);
    let before = f.clone();
    assert_eq!(fill_checksums(&mut f, true, true), Err(OffloadError::Malformed));
    assert_eq!(f, before);
    // ICMP: L3 fine, no L4 to offload; nothing written.
    let mut f = tcp_known_frame();
    f[23] = 1;
    let before = f.clone();
    assert_eq!(fill_checksums(&mut f, true, true), Err(OffloadError::NotL4));
    assert_eq!(f, before);
    fill_checksums(&mut f, true, false).unwrap();
    assert!(rx(&f).l3_ok);
    // TCP whose header does not fit the packet.
    let mut f = tcp_known_frame();
    f[46] = 0x90;
    assert_eq!(fill_checksums(&mut f, false, true), Err(OffloadError::Malformed));
    // Fragments have no per-frame L4 checksum.
    let mut f = tcp_known_frame();
    wr16(&mut f, 20, 0x2000);
    assert_eq!(fill_checksums(&mut f, false, true), Err(OffloadError::NotL4));
    assert!(!rx(&f).l4_ok);
}

#[test]
fn rx_sum_is_the_mlx5_cqe_check_sum() {
    let f = build_tcp_ipv4(DMAC, SMAC, A4, B4, TcpFields::new(1, 2, TCP_ACK), &[0x5a; 101]);
    let i = parse(&f).unwrap();
    let r = rx_checksum(&f, &i);
    assert_eq!(r.sum, fold(ones_sum(&f[14..], 0)));
    // What the stack does with CHECKSUM_COMPLETE: the valid IP header adds
    // negative zero, so sum + pseudo-header folds to 0xffff.
    let L3::Ipv4 { src, dst, .. } = i.l3 else { panic!() };
    let pseudo = ones_sum(&src, 0) + ones_sum(&dst, 0) + 6 + (f.len() - 34) as u32;
    assert_eq!(fold(u32::from(r.sum) + pseudo), 0xffff);
    // Tags are outside the sum, padding is excluded.
    let mut g = push_vlan(&f, TPID_CTAG, 9);
    g.resize(g.len() + 17, 0xee);
    assert_eq!(rx(&g), r);
    // Non-IP: the rest of the frame, nothing verified.
    let mut arp = eth(0x0806);
    arp.extend_from_slice(&[1, 2, 3]);
    assert_eq!(rx(&arp), RxChecksum { sum: 0x0102 + 0x0300, l3_ok: false, l4_ok: false });
    // An `info` that does not belong to the frame: no panic, nothing verified.
    let short = &f[..30];
    let r = rx_checksum(short, &i);
    assert!(!r.l3_ok && !r.l4_ok);
    assert_eq!(rx_checksum(&[], &i), RxChecksum { sum: 0, l3_ok: false, l4_ok: false });
    let hostile = ether::FrameInfo { l3_offset: usize::MAX - 3, l4_offset: usize::MAX - 1, ..i };
    assert_eq!(rx_checksum(&f, &hostile), RxChecksum { sum: 0, l3_ok: false, l4_ok: false });
}

/// A TCP/IPv4 super-frame: headers (54 bytes) + `payload`.
fn tso4(payload: &[u8], flags: u8) -> Vec<u8> {
    let t = TcpFields { seq: 0xffff_ff00, ack: 77, ..TcpFields::new(33000, 5201, flags) };
    let mut f = build_tcp_ipv4(DMAC, SMAC, A4, B4, t, payload);
    wr16(&mut f, 18, 0x1234); // IPv4 ID
    wr16(&mut f, 24, 0); // the driver leaves checksums stale
    wr16(&mut f, 50, 0xabcd);
    f
}

#[test]
fn tcp_lso_three_segments() {
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    let flags = TCP_CWR | TCP_ACK | TCP_PSH | TCP_FIN;
    let f = tso4(&payload, flags);
    let segs = segment(&f, 54, 1000).unwrap();
    assert_eq!(segs.len(), 3);
    let mut joined = Vec::new();
    for (n, s) in segs.iter().enumerate() {
        assert_eq!(s.len(), 54 + 1000);
        let i = parse(s).unwrap();
        let L3::Ipv4 { total_len, .. } = i.l3 else { panic!("{i:?}") };
        assert_eq!(total_len, 20 + 20 + 1000);
        assert_eq!(rd16(s, 18), 0x1234 + n as u16, "IPv4 ID + i");
        assert_eq!(rd32(s, 38), 0xffff_ff00u32.wrapping_add(1000 * n as u32), "seq");
        assert_eq!(rd32(s, 42), 77, "ack");
        let L4::Tcp { flags: sf, .. } = i.l4 else { panic!() };
        let want = match n {
            0 => TCP_CWR | TCP_ACK,
            1 => TCP_ACK,
            _ => TCP_ACK | TCP_PSH | TCP_FIN,
        };
        assert_eq!(sf, want, "flags of segment {n}");
        let r = rx_checksum(s, &i);
        assert!(r.l3_ok && r.l4_ok, "segment {n}: {r:?}");
        assert_eq!(s[..14], f[..14]);
        joined.extend_from_slice(&s[54..]);
    }
    assert_eq!(joined, payload);
}

#[test]
fn tcp_lso_short_last_and_single() {
    let payload = vec![1u8; 2500];
    let segs = segment(&tso4(&payload, TCP_ACK | TCP_PSH), 54, 1000).unwrap();
    let lens: Vec<usize> = segs.iter().map(|s| s.len() - 54).collect();
    assert_eq!(lens, [1000, 1000, 500]);
    assert_eq!(rd16(&segs[2], 16), 20 + 20 + 500);
    assert!(segs.iter().all(|s| rx(s).l4_ok && rx(s).l3_ok));
    // mss ≥ payload: one frame, flags untouched.
    for mss in [2500, 9000, u16::MAX] {
        let f = tso4(&payload, TCP_CWR | TCP_PSH | TCP_FIN | TCP_ACK);
        let segs = segment(&f, 54, mss).unwrap();
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0][47], TCP_CWR | TCP_PSH | TCP_FIN | TCP_ACK);
        assert_eq!(segs[0][54..], payload[..]);
        assert!(rx(&segs[0]).l4_ok);
    }
    // No payload: the headers once, fixed up.
    let segs = segment(&tso4(&[], TCP_ACK), 54, 100).unwrap();
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].len(), 54);
    assert!(rx(&segs[0]).l3_ok && rx(&segs[0]).l4_ok);
}

#[test]
#[cfg_attr(miri, ignore = "segments a 70 KB super-frame: minutes under Miri")]
fn tcp_lso_ipv6_big_tcp_with_vlan() {
    let payload: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
    let mut f = build_tcp_ipv6(DMAC, SMAC, v6("2001:db8::a"), v6("2001:db8::b"), TcpFields::new(1, 2, TCP_ACK), &[]);
    f.extend_from_slice(&payload);
    wr16(&mut f, 18, 0); // BIG TCP: payload_len 0
    let f = push_vlan(&f, TPID_CTAG, 100);
    let segs = segment(&f, 18 + 40 + 20, 8948).unwrap();
    assert_eq!(segs.len(), 70_000usize.div_ceil(8948));
    let mut joined = Vec::new();
    for (n, s) in segs.iter().enumerate() {
        let i = parse(s).unwrap();
        let L3::Ipv6 { payload_len, .. } = i.l3 else { panic!() };
        assert_eq!(usize::from(payload_len), 20 + s.len() - 78);
        assert_eq!(rd32(s, 18 + 40 + 4), 8948 * n as u32);
        assert!(rx_checksum(s, &i).l4_ok, "segment {n}");
        assert_eq!(i.vlans[0].map(|v| v.tci), Some(100));
        joined.extend_from_slice(&s[78..]);
    }
    assert_eq!(joined, payload);
}

#[test]
fn udp_gso_ipv4_and_ipv6() {
    let payload: Vec<u8> = (0..3500u32).map(|i| (i * 13) as u8).collect();
    let frames = [
        (build_udp_ipv4(DMAC, SMAC, A4, B4, 7, 8, &payload), 42),
        (build_udp_ipv6(DMAC, SMAC, v6("fd00::1"), v6("fd00::2"), 7, 8, &payload), 62),
    ];
    for (f, hl) in frames {
        let segs = segment(&f, hl, 1200).unwrap();
        assert_eq!(segs.len(), 3);
        let mut joined = Vec::new();
        for s in &segs {
            let i = parse(s).unwrap();
            let L4::Udp { len, .. } = i.l4 else { panic!("{i:?}") };
            assert_eq!(usize::from(len), 8 + s.len() - hl);
            let r = rx_checksum(s, &i);
            assert!(r.l3_ok && r.l4_ok);
            assert_ne!(rd16(s, hl - 2), 0);
            joined.extend_from_slice(&s[hl..]);
        }
        assert_eq!(joined, payload);
        assert_eq!(segs.iter().map(|s| s.len() - hl).collect::<Vec<_>>(), [1200, 1200, 1100]);
    }
}

#[test]
fn lso_ip_id_wraps() {
    let mut f = tso4(&[0; 30], TCP_ACK);
    wr16(&mut f, 18, 0xffff);
    let segs = segment(&f, 54, 10).unwrap();
    assert_eq!(segs.iter().map(|s| rd16(s, 18)).collect::<Vec<_>>(), [0xffff, 0, 1]);
}

#[test]
fn lso_errors() {
    let f = tso4(&[0; 100], TCP_ACK);
    assert_eq!(segment(&f, 54, 0), Err(OffloadError::BadMss));
    for hl in [0, 14, 34, 53, 55, 200] {
        assert!(segment(&f, hl, 10).is_err(), "header_len {hl}");
    }
    assert_eq!(segment(&f, 55, 10), Err(OffloadError::Malformed));
    assert_eq!(segment(&f, 200, 10), Err(OffloadError::Malformed));
    let mut arp = eth(0x0806);
    arp.resize(60, 0);
    assert_eq!(segment(&arp, 42, 10), Err(OffloadError::NotIp));
    let mut icmp = f.clone();
    icmp[23] = 1;
    assert_eq!(segment(&icmp, 54, 10), Err(OffloadError::NotL4));
    let mut frag = f.clone();
    wr16(&mut frag, 20, 0x2000);
    assert_eq!(segment(&frag, 54, 10), Err(OffloadError::Malformed));
}

#[test]
#[cfg_attr(miri, ignore = "segments a 70 KB super-frame: minutes under Miri")]
fn lso_super_frame_limits() {
    // A segment whose IPv4 total length would not fit 16 bits.
    let mut big = tso4(&[], TCP_ACK);
    big.resize(54 + 70_000, 0);
    assert_eq!(segment(&big, 54, u16::MAX), Err(OffloadError::BadMss));
    assert_eq!(segment(&big, 54, 65_495).map(|s| s.len()), Ok(2));
    // More segments than GSO allows.
    assert_eq!(segment(&big, 54, 1), Err(OffloadError::BadMss));
}

/// The Microsoft RSS verification suite ("Verifying the RSS Hash Calculation").
const RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

#[test]
fn toeplitz_microsoft_ipv4() {
    // (source, destination, source port, destination port, IP only, IP + TCP)
    let table = [
        ("66.9.149.187", "161.142.100.80", 2794u16, 1766u16, 0x323e8fc2u32, 0x51ccc178u32),
        ("199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea),
        ("24.19.198.95", "12.22.207.184", 12898, 38024, 0xd2d0a5de, 0x5c2b394a),
        ("38.27.205.30", "209.142.163.6", 48228, 2217, 0x82989176, 0xafc7327f),
        ("153.39.163.191", "202.188.127.2", 44251, 1303, 0x5d1809c5, 0x10e828a2),
    ];
    for (s, d, sp, dp, ip, tcp) in table {
        let mut input = [v4(s), v4(d)].concat();
        assert_eq!(toeplitz(&RSS_KEY, &input), ip, "{s} → {d}");
        input.extend_from_slice(&sp.to_be_bytes());
        input.extend_from_slice(&dp.to_be_bytes());
        assert_eq!(toeplitz(&RSS_KEY, &input), tcp, "{s}:{sp} → {d}:{dp}");
    }
}

#[test]
fn toeplitz_microsoft_ipv6() {
    let table = [
        ("3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794u16, 1766u16, 0x2cc18cd5u32, 0x40207d3du32),
        ("3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 14230, 4739, 0x0f0c461c, 0xdde51bbf),
        ("3ffe:1900:4545:3:200:f8ff:fe21:67cf", "fe80::200:f8ff:fe21:67cf", 44251, 38024, 0x4b61e985, 0x02d1feef),
    ];
    for (s, d, sp, dp, ip, tcp) in table {
        let mut input = [v6(s), v6(d)].concat();
        assert_eq!(toeplitz(&RSS_KEY, &input), ip, "{s} → {d}");
        input.extend_from_slice(&sp.to_be_bytes());
        input.extend_from_slice(&dp.to_be_bytes());
        assert_eq!(toeplitz(&RSS_KEY, &input), tcp, "{s}:{sp} → {d}:{dp}");
    }
}

#[test]
fn toeplitz_edges() {
    assert_eq!(toeplitz(&RSS_KEY, &[]), 0);
    assert_eq!(toeplitz(&RSS_KEY, &[0x80]), 0x6d5a56da);
    // Past the key's 320 bits the window shifts in zeros; nothing panics.
    let long = [0xffu8; 64];
    let _ = toeplitz(&RSS_KEY, &long);
    assert_eq!(toeplitz(&[0; 40], &long), 0);
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Vector 1 of /work/shared/rdma-anchors.md: a RoCEv2 CNP captured from a
/// ConnectX-4 Lx (IPv4 checksum by the hardware, UDP checksum 0).
#[test]
fn connectx4_captured_frame() {
    let f = hex("e41d2dab2bc27cfe90643b32080045c2003c718c400040119161 0a0011010a001201 000012b700280000
         8100ffff40000118 00000000 00000000000000000000000000000000 82fd002a");
    let i = parse(&f).unwrap();
    assert_eq!(i.dmac, [0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2]);
    assert_eq!(i.smac, [0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32]);
    assert_eq!(
        i.l3,
        L3::Ipv4 {
            src: [10, 0, 17, 1],
            dst: [10, 0, 18, 1],
            header_len: 20,
            total_len: 60,
            protocol: 17,
            tos: 0xc2,
            ttl: 64,
            frag: false
        }
    );
    assert_eq!(i.l4, L4::Udp { sport: 0, dport: 4791, len: 40 });
    let r = rx_checksum(&f, &i);
    assert!(r.l3_ok && r.l4_ok);
    assert_eq!(r.sum, fold(ones_sum(&f[14..], 0)));
    // Our IPv4 header checksum is the hardware's.
    let mut g = f.clone();
    wr16(&mut g, 24, 0);
    fill_checksums(&mut g, true, false).unwrap();
    assert_eq!(g, f);
    // Asking for the UDP checksum fills one that verifies.
    fill_checksums(&mut g, true, true).unwrap();
    assert_ne!(rd16(&g, 40), 0);
    assert!(rx(&g).l4_ok);
    g[60] ^= 0x10;
    assert!(!rx(&g).l4_ok);
}
