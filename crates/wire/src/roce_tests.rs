//! Tests of the RoCE frame codec: round trips of every format, the
//! anchors' ICRC vectors, frames built byte by byte as rxe sends them,
//! refusals, a fuzz pass and tshark's decoding.

use super::*;
use crate::bth::{self, Opcode};
use crate::packet::{self, Headers};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const GID6_A: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0xff, 0xfe, 0xa0, 0xb0, 0xc1];
const GID6_B: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02];

/// A SEND_ONLY (RC) to QP 0x11 carrying `payload`, ICRC slot zero.
fn bth_pkt(payload: &[u8]) -> Vec<u8> {
    let h = Headers::new(bth::Repr { opcode: Opcode(0x04), dest_qp: 0x11, psn: 5, ..Default::default() });
    let mut v = Vec::new();
    packet::emit(&h, payload, &mut v).unwrap();
    v
}

fn repr(net: NetHdr, vlan: Option<u16>) -> FrameRepr {
    let (sgid, dgid) = match net {
        NetHdr::RoceV2Ipv4 => (v4_mapped([10, 0, 0, 1]), v4_mapped([10, 0, 0, 2])),
        _ => (GID6_A, GID6_B),
    };
    FrameRepr {
        dmac: MAC_B,
        smac: MAC_A,
        vlan,
        net,
        grh: grh::Repr {
            traffic_class: 0x62,
            flow_label: if net == NetHdr::RoceV2Ipv4 { 0 } else { 0x12345 },
            hop_limit: 17,
            sgid,
            dgid,
            ..Default::default()
        },
        udp_sport: if net == NetHdr::RoceV1 { 0 } else { 0xc123 },
    }
}

fn frame_of(r: &FrameRepr, roce: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    emit(r, roce, &mut f).unwrap();
    f
}

const NETS: [NetHdr; 3] = [NetHdr::RoceV2Ipv4, NetHdr::RoceV2Ipv6, NetHdr::RoceV1];

#[test]
fn roundtrip_every_format_with_and_without_vlan() {
    let roce = bth_pkt(b"round trip!");
    for net in NETS {
        for vlan in [None, Some(0xa005)] {
            let r = repr(net, vlan);
            let f = frame_of(&r, &roce);
            assert_eq!(f.len(), header_len(&r) + roce.len(), "{net:?} {vlan:?}");
            let p = parse(&f).unwrap().unwrap();
            let want = FrameRepr { grh: grh::Repr { payload_len: roce.len() as u16, next_header: 0x1b, ..r.grh }, ..r };
            assert_eq!(p.repr, want, "{net:?} {vlan:?}");
            assert_eq!(p.roce, header_len(&r)..f.len());
            assert_eq!(&f[p.roce.start..f.len() - 4], &roce[..roce.len() - 4]);
            verify_icrc(&f, &p).unwrap();
            // Ethernet padding after the packet is not part of it.
            let mut padded = f.clone();
            padded.extend_from_slice(&[0; 30]);
            let pp = parse(&padded).unwrap().unwrap();
            assert_eq!((pp.repr, pp.roce.clone()), (p.repr, p.roce.clone()));
            verify_icrc(&padded, &pp).unwrap();
        }
    }
}

#[test]
fn emitted_headers_are_what_rxe_sends() {
    let roce = bth_pkt(b"hdr");
    let f = frame_of(&repr(NetHdr::RoceV2Ipv4, Some(0x2007)), &roce);
    assert_eq!(&f[..12], &[2, 0, 0, 0, 0, 0x0b, 2, 0, 0, 0, 0, 0x0a]);
    assert_eq!(&f[12..18], &[0x81, 0x00, 0x20, 0x07, 0x08, 0x00]);
    let ip = &f[18..38];
    let total = (28 + roce.len()) as u16;
    assert_eq!(&ip[..10], &[0x45, 0x62, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 17, 17]);
    assert_eq!(&ip[12..20], &[10, 0, 0, 1, 10, 0, 0, 2]);
    assert_eq!(ipv4::checksum(ip), 0, "header checksum valid");
    let ulen = (8 + roce.len()) as u16;
    assert_eq!(&f[38..46], &[0xc1, 0x23, 0x12, 0xb7, (ulen >> 8) as u8, ulen as u8, 0, 0]);
    assert_eq!(f[46], 0x04, "BTH follows");

    let f = frame_of(&repr(NetHdr::RoceV2Ipv6, None), &roce);
    assert_eq!(&f[12..14], &[0x86, 0xdd]);
    assert_eq!(&f[14..22], &[0x66, 0x21, 0x23, 0x45, 0, ulen as u8, 17, 17]);
    assert_eq!((&f[22..38], &f[38..54]), (&GID6_A[..], &GID6_B[..]));
    assert_eq!(&f[54..62], &[0xc1, 0x23, 0x12, 0xb7, 0, ulen as u8, 0, 0]);

    let f = frame_of(&repr(NetHdr::RoceV1, None), &roce);
    assert_eq!(&f[12..14], &[0x89, 0x15]);
    assert_eq!(&f[14..22], &[0x66, 0x21, 0x23, 0x45, 0, roce.len() as u8, 0x1b, 17]);
    assert_eq!(f[54], 0x04, "BTH follows the GRH");
}

#[test]
fn emit_refuses_what_it_cannot_frame() {
    let mut out = vec![1, 2, 3];
    assert_eq!(emit(&repr(NetHdr::Ib, None), &bth_pkt(b"x"), &mut out), Err(Error::Malformed("RoCE network header")));
    assert!(out.is_empty());
    assert_eq!(emit(&repr(NetHdr::RoceV2Ipv4, None), &[0; 15], &mut out), Err(Error::Truncated("RoCE packet")));
    let big = vec![0u8; 65536 - 28];
    assert!(emit(&repr(NetHdr::RoceV2Ipv4, None), &big, &mut out).is_err());
    assert!(emit(&repr(NetHdr::RoceV2Ipv4, None), &big[..65535 - 28], &mut out).is_ok());
    assert!(emit(&repr(NetHdr::RoceV2Ipv6, None), &vec![0u8; 65536 - 8], &mut out).is_err());
    assert!(emit(&repr(NetHdr::RoceV1, None), &vec![0u8; 65536], &mut out).is_err());
}

/// Vector 1 of the anchors doc: a ConnectX-4 Lx CNP.
#[test]
fn anchor_vector1_cnp_parses_and_verifies() {
    let f = hex("e41d2dab2bc27cfe90643b32080045c2003c718c400040119161 0a0011010a001201 000012b700280000
         8100ffff40000118 00000000 00000000000000000000000000000000 82fd002a");
    let p = parse(&f).unwrap().unwrap();
    assert_eq!(p.repr.net, NetHdr::RoceV2Ipv4);
    assert_eq!((p.repr.grh.sgid, p.repr.grh.dgid), (v4_mapped([10, 0, 17, 1]), v4_mapped([10, 0, 18, 1])));
    assert_eq!((p.repr.grh.traffic_class, p.repr.grh.hop_limit, p.repr.udp_sport), (0xc2, 64, 0));
    assert_eq!(p.roce, 42..74);
    assert_eq!(p.repr.grh.payload_len, 32);
    verify_icrc(&f, &p).unwrap();
    // ToS/ECN and TTL (checksum fixed up), BECN, VLAN: variant.
    let mut g = f.clone();
    g[15] = 0x03;
    g[22] = 1;
    g[24..26].fill(0);
    let c = ipv4::checksum(&g[14..34]);
    g[24..26].copy_from_slice(&c.to_be_bytes());
    g[42 + 4] = 0;
    let mut tagged = g[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0, 0, 9]);
    tagged.extend_from_slice(&g[12..]);
    let p = parse(&tagged).unwrap().unwrap();
    assert_eq!(p.repr.vlan, Some(9));
    verify_icrc(&tagged, &p).unwrap();
    // DestQP and a reserved byte: invariant.
    for at in [49, 60, 33] {
        let mut g = f.clone();
        g[at] ^= 1;
        g[24..26].fill(0); // keep the IPv4 checksum valid (dst address changed)
        let c = ipv4::checksum(&g[14..34]);
        g[24..26].copy_from_slice(&c.to_be_bytes());
        let p = parse(&g).unwrap().unwrap();
        assert_eq!(verify_icrc(&g, &p), Err(Error::Icrc), "byte {at}");
    }
}

/// Vector 2 of the anchors doc, as a frame: UC SEND_ONLY, IPv4 id 1144.
#[test]
fn anchor_vector2_uc_send_only_frame() {
    let mut f =
        hex("020000000001 020000000002 0800 4501 0040 0478 4000 4011 b4d5 c0a80007 c0a80007 c000 12b7 002c 0000");
    f.extend_from_slice(&[0x24, 0x60, 0xff, 0xff, 0, 0, 0, 211, 0, 0xcf, 0x17, 0x10]);
    f.extend_from_slice(b"F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P\x00\x00");
    f.extend_from_slice(&[0x78, 0xf3, 0x53, 0xf3]);
    assert_eq!(13571856u32 & 0xff_ffff, 0xcf1710);
    let p = parse(&f).unwrap().unwrap();
    assert_eq!((p.repr.udp_sport, p.roce.clone()), (49152, 42..78));
    verify_icrc(&f, &p).unwrap();
    let mut bad = f.clone();
    bad[18] = 0; // IPv4 identification is covered
    bad[19] = 0;
    bad[24..26].fill(0);
    let c = ipv4::checksum(&bad[14..34]);
    bad[24..26].copy_from_slice(&c.to_be_bytes());
    let p = parse(&bad).unwrap().unwrap();
    assert_eq!(verify_icrc(&bad, &p), Err(Error::Icrc));
}

/// crc32 (zlib) over eight 0xff bytes and `masked`: the ICRC computed
/// without `wire::icrc`.
fn crc32_independent(masked: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xff; 8]);
    h.update(masked);
    h.finalize()
}

/// Frames built byte by byte as rxe sends them (rxe_net.c: IPv4 id from a
/// counter, DF; IPv6 flow label 0), their ICRC computed independently over
/// the masked bytes, verify; and what emit builds for the same fields
/// carries the same ICRC.
#[test]
fn hand_built_rxe_frames_verify() {
    let roce = bth_pkt(b"from rxe");
    let body = &roce[..roce.len() - 4];
    // IPv4: 192.168.1.10 -> 192.168.1.20, ToS 0x02 (ECT0), TTL 64, sport 0xd00d.
    let mut f = Vec::new();
    f.extend_from_slice(&MAC_B);
    f.extend_from_slice(&MAC_A);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = 20 + 8 + roce.len();
    f.extend_from_slice(&[0x45, 0x02, (total >> 8) as u8, total as u8, 0x00, 0x00, 0x40, 0x00, 64, 17, 0, 0]);
    f.extend_from_slice(&[192, 168, 1, 10, 192, 168, 1, 20]);
    let c = ipv4::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let ulen = 8 + roce.len();
    f.extend_from_slice(&[0xd0, 0x0d, 0x12, 0xb7, (ulen >> 8) as u8, ulen as u8, 0, 0]);
    f.extend_from_slice(body);
    let mut masked = f[14..].to_vec();
    masked[1] = 0xff;
    masked[8] = 0xff;
    masked[10] = 0xff;
    masked[11] = 0xff;
    masked[26] = 0xff;
    masked[27] = 0xff;
    masked[28 + 4] = 0xff;
    let crc = crc32_independent(&masked);
    f.extend_from_slice(&crc.to_le_bytes());
    let p = parse(&f).unwrap().unwrap();
    verify_icrc(&f, &p).unwrap();
    let r = FrameRepr { grh: grh::Repr { traffic_class: 0x02, hop_limit: 64, ..p.repr.grh }, ..p.repr };
    assert_eq!(frame_of(&r, &roce), f, "emit builds the same frame");

    // IPv6: GID6_A -> GID6_B, traffic class 0x02, flow label 0, hop limit 255.
    let mut f = Vec::new();
    f.extend_from_slice(&MAC_B);
    f.extend_from_slice(&MAC_A);
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0x20, 0x00, 0x00, 0, ulen as u8, 17, 255]);
    f.extend_from_slice(&GID6_A);
    f.extend_from_slice(&GID6_B);
    f.extend_from_slice(&[0xd0, 0x0d, 0x12, 0xb7, 0, ulen as u8, 0, 0]);
    f.extend_from_slice(body);
    let mut masked = f[14..].to_vec();
    masked[0] = 0x6f;
    masked[1..4].fill(0xff);
    masked[7] = 0xff;
    masked[46] = 0xff;
    masked[47] = 0xff;
    masked[48 + 4] = 0xff;
    f.extend_from_slice(&crc32_independent(&masked).to_le_bytes());
    let p = parse(&f).unwrap().unwrap();
    assert_eq!(p.repr.grh.flow_label, 0);
    verify_icrc(&f, &p).unwrap();
    assert_eq!(frame_of(&p.repr, &roce), f);
    // The RoCEv2/IPv6 ICRC of wire::grh (same masking) agrees when the
    // UDP source port is the one grh.rs derives.
    let mut g = f.clone();
    let sp = crate::ip::flow_source_port(0x11);
    g[54..56].copy_from_slice(&sp.to_be_bytes());
    let p = parse(&g).unwrap().unwrap();
    let n = g.len() - 4;
    let c = icrc_of(p.repr.net, &g[14..62], &g[62..n]);
    assert_eq!(c, grh::icrc(&p.repr.grh, &g[62..n]));
}

#[test]
fn icrc_masks_variant_fields_only() {
    let roce = bth_pkt(b"variant");
    for net in NETS {
        let r = repr(net, None);
        let f = frame_of(&r, &roce);
        let moved = FrameRepr {
            dmac: [9; 6],
            vlan: Some(3),
            grh: grh::Repr { traffic_class: 0x03, hop_limit: 1, ..r.grh },
            ..r
        };
        let mut g = frame_of(&moved, &roce);
        let p = parse(&g).unwrap().unwrap();
        // The ICRC emitted for `r` is valid in the rewritten frame.
        let n = g.len() - 4;
        g[n..].copy_from_slice(&f[f.len() - 4..]);
        verify_icrc(&g, &p).unwrap();
        if net != NetHdr::RoceV2Ipv4 {
            let h = header_len(&moved);
            g[h - net_len(net) + 3] ^= 0x0f; // flow label
            verify_icrc(&g, &p).unwrap();
        }
        // Source address, UDP sport (v2), payload: covered.
        let mut sgid = r.grh.sgid;
        sgid[15] ^= 1;
        let other = frame_of(&FrameRepr { grh: grh::Repr { sgid, ..r.grh }, ..r }, &roce);
        assert_ne!(other[other.len() - 4..], f[f.len() - 4..], "{net:?}");
        if net != NetHdr::RoceV1 {
            let other = frame_of(&FrameRepr { udp_sport: 0xc124, ..r }, &roce);
            assert_ne!(other[other.len() - 4..], f[f.len() - 4..], "{net:?}");
        }
        let mut bad = f.clone();
        let at = bad.len() - 6;
        bad[at] ^= 0x80;
        let p = parse(&bad).unwrap().unwrap();
        assert_eq!(verify_icrc(&bad, &p), Err(Error::Icrc), "{net:?}");
    }
    // v1 and v2/IPv6 ICRCs of the same addresses differ (UDP header covered).
    let a = frame_of(&repr(NetHdr::RoceV1, None), &roce);
    let b = frame_of(&repr(NetHdr::RoceV2Ipv6, None), &roce);
    assert_ne!(a[a.len() - 4..], b[b.len() - 4..]);
}

#[test]
fn not_roce_is_none() {
    let roce = bth_pkt(b"x");
    let v4 = frame_of(&repr(NetHdr::RoceV2Ipv4, None), &roce);
    let v6 = frame_of(&repr(NetHdr::RoceV2Ipv6, None), &roce);
    let mut cases: Vec<(&str, Vec<u8>)> = vec![("empty", vec![]), ("13 bytes", v4[..13].to_vec())];
    let mut arp = v4.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    cases.push(("arp", arp));
    let mut port = v4.clone();
    port[37] = 0xb8;
    cases.push(("udp 4792", port));
    let mut tcp = v4.clone();
    tcp[23] = 6;
    cases.push(("tcp", tcp));
    let mut frag = v4.clone();
    frag[20] = 0x20; // MF
    cases.push(("fragment", frag));
    let mut off = v4.clone();
    off[21] = 1; // offset
    cases.push(("fragment offset", off));
    let mut ver = v4.clone();
    ver[14] = 0x65;
    cases.push(("ip version 6 in an IPv4 frame", ver));
    cases.push(("ipv4 cut before UDP ports", v4[..14 + 20 + 3].to_vec()));
    let mut nh = v6.clone();
    nh[20] = 6;
    cases.push(("ipv6 tcp", nh));
    cases.push(("ipv6 cut before UDP ports", v6[..14 + 40 + 3].to_vec()));
    let mut qinq = v4[..12].to_vec();
    qinq.extend_from_slice(&[0x81, 0, 0, 1, 0x81, 0, 0, 2]);
    qinq.extend_from_slice(&v4[12..]);
    cases.push(("two tags", qinq));
    cases.push(("tag cut", [&v4[..12], &[0x81, 0, 0][..]].concat()));
    for (name, f) in cases {
        assert_eq!(parse(&f), Ok(None), "{name}");
    }
}

#[test]
fn malformed_roce_is_refused() {
    let roce = bth_pkt(b"x");
    let v4 = frame_of(&repr(NetHdr::RoceV2Ipv4, None), &roce);
    let v6 = frame_of(&repr(NetHdr::RoceV2Ipv6, None), &roce);
    let v1 = frame_of(&repr(NetHdr::RoceV1, None), &roce);
    let fix = |mut f: Vec<u8>| {
        f[24..26].fill(0);
        let c = ipv4::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    };
    let mut cases: Vec<(&str, Vec<u8>, Error)> = Vec::new();
    let mut c = v4.clone();
    c[24] ^= 1;
    cases.push(("checksum", c, Error::Malformed("IPv4 checksum")));
    let mut c = [&v4[..34], &[1, 1, 1, 1][..], &v4[34..]].concat();
    c[14] = 0x46;
    c[17] += 4;
    cases.push(("options", fix(c), Error::Malformed("RoCE IPv4 options")));
    let mut c = v4.clone();
    c[17] += 4;
    cases.push(("total > frame", fix(c), Error::Malformed("IPv4 total length")));
    let mut c = v4.clone();
    c[16] = 0;
    c[17] = 20;
    cases.push(("total < 28", fix(c), Error::Malformed("IPv4 total length")));
    let mut c = v4.clone();
    c[39] -= 4;
    cases.push(("udp length", c, Error::Malformed("RoCE UDP length")));
    let mut c = v4.clone();
    let short = (20 + 8 + 12) as u8;
    c[17] = short;
    c[39] = short - 20;
    cases.push(("bth + icrc < 16", fix(c), Error::Truncated("RoCE packet")));
    cases.push(("cut frame", v4[..v4.len() - 1].to_vec(), Error::Malformed("IPv4 total length")));
    let mut c = v6.clone();
    c[19] += 4;
    cases.push(("ipv6 payload > frame", c, Error::Malformed("IPv6 payload length")));
    let mut c = v6.clone();
    c[59] += 4;
    cases.push(("ipv6 udp length", c, Error::Malformed("RoCE UDP length")));
    cases.push(("v1 cut in the GRH", v1[..14 + 39].to_vec(), Error::Truncated("RoCEv1 GRH")));
    let mut c = v1.clone();
    c[14] = 0x46;
    cases.push(("v1 IPVer", c, Error::Malformed("GRH IPVer")));
    let mut c = v1.clone();
    c[20] = 17;
    cases.push(("v1 NxtHdr", c, Error::Malformed("GRH NxtHdr")));
    let mut c = v1.clone();
    c[19] += 1;
    cases.push(("v1 PayLen", c, Error::Malformed("GRH PayLen")));
    let mut c = v1[..14 + 40 + 15].to_vec();
    c[18] = 0;
    c[19] = 15;
    cases.push(("v1 short packet", c, Error::Truncated("RoCE packet")));
    for (name, f, e) in cases {
        assert_eq!(parse(&f), Err(e), "{name}");
    }
}

/// A fabricated `Parsed` never makes verify_icrc read outside the frame.
#[test]
fn verify_icrc_checks_ranges() {
    let f = frame_of(&repr(NetHdr::RoceV2Ipv4, None), &bth_pkt(b"x"));
    let mut p = parse(&f).unwrap().unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    let ranges = [0..f.len(), 10..f.len(), 42..f.len() + 1, 42..50, 50..42];
    for r in ranges {
        p.roce = r.clone();
        assert!(verify_icrc(&f, &p).is_err(), "{r:?}");
    }
    p.repr.net = NetHdr::Ib;
    p.roce = 42..f.len();
    assert_eq!(verify_icrc(&f, &p), Err(Error::Truncated("ICRC")));
}

/// Random bytes, truncations and single-byte damage of valid frames: parse
/// and verify_icrc never panic, and what parses lies inside the frame.
#[test]
fn fuzz_never_panics() {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    let mut valid = Vec::new();
    for net in NETS {
        for vlan in [None, Some(7)] {
            valid.push(frame_of(&repr(net, vlan), &bth_pkt(b"fuzzing payload")));
        }
    }
    let mut parsed = 0;
    let mut check = |f: &[u8]| {
        if let Ok(Some(p)) = parse(f) {
            parsed += 1;
            assert!(p.roce.start <= p.roce.end && p.roce.end <= f.len());
            assert!(p.roce.len() >= 16);
            let _ = verify_icrc(f, &p);
            // What parses re-emits (ICRC recomputed) and parses the same.
            let mut out = Vec::new();
            emit(&p.repr, &f[p.roce.clone()], &mut out).expect("a parsed frame re-emits");
            let q = parse(&out).expect("re-emitted frame parses").expect("as RoCE");
            assert_eq!(q.repr, p.repr);
            verify_icrc(&out, &q).expect("re-emitted ICRC");
        }
    };
    let iters = if cfg!(miri) { 50 } else { 20_000 };
    for i in 0..iters {
        let base = &valid[i % valid.len()];
        let mut f = match i % 3 {
            0 => base[..next() as usize % (base.len() + 1)].to_vec(),
            1 => {
                let mut f = base.clone();
                for _ in 0..1 + next() % 3 {
                    let at = next() as usize % f.len();
                    f[at] = next() as u8;
                }
                f
            }
            _ => (0..next() % 120).map(|_| next() as u8).collect(),
        };
        if i % 3 == 2 && f.len() >= 14 {
            // Random bytes behind a plausible Ethertype.
            let t: [[u8; 2]; 3] = [[0x08, 0], [0x86, 0xdd], [0x89, 0x15]];
            f[12..14].copy_from_slice(&t[next() as usize % 3]);
        }
        check(&f);
    }
    assert!(parsed >= iters / 10, "only {parsed} of {iters} parsed: the fuzz misses the valid paths");
}

#[test]
fn grh_area_of_each_format() {
    let g = grh::Repr {
        traffic_class: 0x0a,
        flow_label: 0x54321,
        payload_len: 100,
        next_header: 0x1b,
        hop_limit: 9,
        sgid: v4_mapped([10, 1, 2, 3]),
        dgid: v4_mapped([10, 1, 2, 4]),
    };
    assert_eq!(grh_area(NetHdr::Ib, &g), g.to_bytes());
    assert_eq!(grh_area(NetHdr::RoceV1, &g), g.to_bytes());
    let a = grh_area(NetHdr::RoceV2Ipv4, &g);
    assert_eq!(a[..20], [0; 20]);
    assert_eq!(&a[20..30], &[0x45, 0x0a, 0, 128, 0, 0, 0x40, 0, 9, 17]);
    assert_eq!(&a[32..40], &[10, 1, 2, 3, 10, 1, 2, 4]);
    assert_eq!(ipv4::checksum(&a[20..]), 0);
    let g6 = grh::Repr { sgid: GID6_A, dgid: GID6_B, ..g };
    let a = grh_area(NetHdr::RoceV2Ipv6, &g6);
    assert_eq!(&a[..8], &[0x60, 0xa5, 0x43, 0x21, 0, 108, 17, 9]);
    assert_eq!((&a[8..24], &a[24..40]), (&GID6_A[..], &GID6_B[..]));
    // What a received frame's GRH reads back as: the frame's IP header.
    let roce = bth_pkt(b"ud");
    for (net, at) in [(NetHdr::RoceV2Ipv4, 20), (NetHdr::RoceV2Ipv6, 0)] {
        let f = frame_of(&repr(net, None), &roce);
        let p = parse(&f).unwrap().unwrap();
        let len = 40 - at;
        assert_eq!(&grh_area(net, &p.repr.grh)[at..], &f[14..14 + len], "{net:?}");
    }
    // A payload length too big for IPv4 is clamped, not wrapped.
    let a = grh_area(NetHdr::RoceV2Ipv4, &grh::Repr { payload_len: u16::MAX, ..g });
    assert_eq!(&a[22..24], &[0xff, 0xff]);
}

#[test]
fn udp_sport_from_flow_label() {
    assert_eq!(flow_label_to_udp_sport(0), 0xc000);
    assert_eq!(flow_label_to_udp_sport(0xfffff), 0xc000 | (0x3fff ^ 0x3f));
    assert_eq!(flow_label_to_udp_sport(0x4001), 0xc000);
}

/// tshark decodes every format as InfiniBand (BTH opcode, destination QP,
/// PSN) without malformed-packet or expert errors. Skipped without tshark.
#[test]
#[cfg_attr(miri, ignore = "runs tshark (a subprocess)")]
fn frames_decode_in_tshark() {
    let roce = bth_pkt(b"tshark");
    let mut pcap = Vec::new();
    pcap.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    pcap.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    pcap.extend_from_slice(&65535u32.to_le_bytes());
    pcap.extend_from_slice(&1u32.to_le_bytes());
    let mut n = 0;
    for net in NETS {
        for vlan in [None, Some(0x6005)] {
            let f = frame_of(&repr(net, vlan), &roce);
            pcap.extend_from_slice(&[n, 0, 0, 0, 0, 0, 0, 0]);
            pcap.extend_from_slice(&(f.len() as u32).to_le_bytes());
            pcap.extend_from_slice(&(f.len() as u32).to_le_bytes());
            pcap.extend_from_slice(&f);
            n += 1;
        }
    }
    let file = std::env::temp_dir().join(format!("vrnic-roce-{}.pcap", std::process::id()));
    std::fs::write(&file, &pcap).unwrap();
    let run = |args: &[&str]| std::process::Command::new("tshark").arg("-r").arg(&file).args(args).output();
    let fields =
        ["-T", "fields", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn"];
    match run(&fields) {
        Err(_) => eprintln!("tshark not installed: RoCE frame decoding not checked"),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines, vec!["4\t0x000011\t5"; 6], "{text}\n{}", String::from_utf8_lossy(&out.stderr));
            // RPC-over-RDMA's heuristic would take the test payload for
            // its own; RoCEv2 over IPv6 sends UDP checksum 0, as rxe does.
            let out = run(&[
                "--disable-protocol",
                "rpcordma",
                "-o",
                "udp.ignore_ipv6_zero_checksum:TRUE",
                "-Y",
                "_ws.malformed || _ws.expert.severity >= \"warning\"",
            ])
            .unwrap();
            let bad = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && bad.trim().is_empty(), "malformed/expert: {bad}");
        }
    }
    if std::env::var_os("VRNIC_KEEP_PCAP").is_none() {
        let _ = std::fs::remove_file(&file);
    }
}
