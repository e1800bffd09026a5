//! Tests of ECN marking and the CNP codec, against the ConnectX-4 Lx CNP of
//! `rdma-anchors.md` (vector 1) and frames built with the RoCE frame codec.

use super::*;
use crate::grh;
use crate::roce::{self, v4_mapped};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Vector 1: a CNP captured from a ConnectX-4 Lx (74 bytes, ToS 0xC2).
fn vector1() -> Vec<u8> {
    hex("e41d2dab2bc27cfe90643b32080045c2003c718c400040119161 0a0011010a001201 000012b700280000
         8100ffff40000118 00000000 00000000000000000000000000000000 82fd002a")
}

fn data_repr(net: NetHdr, tos: u8, vlan: Option<u16>) -> FrameRepr {
    let (sgid, dgid) = match net {
        NetHdr::RoceV2Ipv4 => (v4_mapped([10, 0, 0, 1]), v4_mapped([10, 0, 0, 2])),
        _ => (
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 0xff, 0xfe, 0, 0, 1],
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        ),
    };
    FrameRepr {
        dmac: [2, 0, 0, 0, 0, 0xb],
        smac: [2, 0, 0, 0, 0, 0xa],
        vlan,
        net,
        grh: grh::Repr {
            traffic_class: tos,
            flow_label: 0x12345 * (net != NetHdr::RoceV2Ipv4) as u32,
            hop_limit: 64,
            sgid,
            dgid,
            ..Default::default()
        },
        udp_sport: 0xc011,
    }
}

/// A RoCE data frame (RC SEND_ONLY, 64 bytes of payload) with a valid ICRC.
fn data_frame(r: &FrameRepr) -> Vec<u8> {
    let h = packet::Headers::new(bth::Repr { opcode: Opcode(0x04), dest_qp: 0x11, psn: 5, ..Default::default() });
    let mut pkt = Vec::new();
    packet::emit(&h, &[0x5a; 64], &mut pkt).unwrap();
    let mut f = Vec::new();
    roce::emit(r, &pkt, &mut f).unwrap();
    f
}

#[test]
fn ecn_codepoints_rfc3168() {
    assert_eq!(Ecn::from_tos(0x00), Ecn::NotEct);
    assert_eq!(Ecn::from_tos(0x01), Ecn::Ect1);
    assert_eq!(Ecn::from_tos(0x02), Ecn::Ect0);
    assert_eq!(Ecn::from_tos(0x03), Ecn::Ce);
    // The ConnectX CNP's ToS 0xC2: DSCP 48, ECT(0).
    assert_eq!((dscp_of(0xc2), Ecn::from_tos(0xc2)), (48, Ecn::Ect0));
    // perftest --tclass=104 (DSCP 26) stays DSCP 26 when marked.
    assert_eq!(Ecn::Ce.apply(104), 0x6b);
    assert_eq!(dscp_of(Ecn::Ce.apply(104)), 26);
    assert!(!Ecn::NotEct.is_capable() && Ecn::Ect1.is_capable() && Ecn::Ce.is_capable());
}

/// CE-marking the real ConnectX CNP (which leaves ECT(0)) keeps its ICRC
/// valid, keeps the IPv4 header checksum valid, and changes one ToS bit.
#[test]
fn ce_mark_keeps_icrc_on_the_connectx_vector() {
    let orig = vector1();
    let mut f = orig.clone();
    let mut p = roce::parse(&f).unwrap().unwrap();
    roce::verify_icrc(&f, &p).unwrap();
    assert_eq!(frame_ecn(&p), Some(Ecn::Ect0));
    assert!(mark_ce(&mut f, &mut p).unwrap());
    assert_eq!(f[15], 0xc3);
    assert_eq!(&f[f.len() - 4..], &orig[orig.len() - 4..], "ICRC bytes untouched");
    let p2 = roce::parse(&f).unwrap().unwrap(); // IPv4 checksum checked here
    assert_eq!(p2, p);
    assert_eq!(frame_ecn(&p2), Some(Ecn::Ce));
    roce::verify_icrc(&f, &p2).unwrap();
    // Only ToS and the header checksum changed.
    let diff: Vec<usize> = (0..f.len()).filter(|&i| f[i] != orig[i]).collect();
    assert_eq!(diff, vec![15, 25], "ToS +1, checksum 0x9161 -> 0x9160");
    // Unmasked damage is still caught.
    f[14 + 12] ^= 1; // source address
    assert_eq!(roce::verify_icrc(&f, &p2), Err(Error::Icrc));
}

#[test]
fn ce_mark_every_rocev2_format_keeps_icrc() {
    for net in [NetHdr::RoceV2Ipv4, NetHdr::RoceV2Ipv6] {
        for vlan in [None, Some(0x6005)] {
            let r = data_repr(net, 0x6a, vlan); // DSCP 26, ECT(0)
            let mut f = data_frame(&r);
            let mut p = roce::parse(&f).unwrap().unwrap();
            assert!(mark_ce(&mut f, &mut p).unwrap());
            let p2 = roce::parse(&f).unwrap().unwrap();
            assert_eq!(p2.repr.grh.traffic_class, 0x6b, "{net:?}");
            assert_eq!(p2.repr.grh.flow_label, r.grh.flow_label, "{net:?}: flow label untouched");
            roce::verify_icrc(&f, &p2).unwrap();
            // Marking twice is idempotent.
            let mut p3 = p2.clone();
            assert!(mark_ce(&mut f, &mut p3).unwrap());
            roce::verify_icrc(&f, &roce::parse(&f).unwrap().unwrap()).unwrap();
        }
    }
}

#[test]
fn not_ect_and_rocev1_are_not_marked() {
    let mut f = data_frame(&data_repr(NetHdr::RoceV2Ipv4, 0x68, None));
    let mut p = roce::parse(&f).unwrap().unwrap();
    let before = f.clone();
    assert!(!mark_ce(&mut f, &mut p).unwrap());
    assert_eq!(f, before);
    let mut f = data_frame(&data_repr(NetHdr::RoceV1, 0x6a, None));
    let mut p = roce::parse(&f).unwrap().unwrap();
    assert_eq!(frame_ecn(&p), None);
    assert!(!mark_ce(&mut f, &mut p).unwrap());
    assert_eq!(set_frame_ecn(&mut f, &mut p, Ecn::Ce), Err(Error::Malformed("no ECN field")));
    // A Parsed that claims more than the buffer holds is refused, not a panic.
    let mut f = data_frame(&data_repr(NetHdr::RoceV2Ipv4, 0x6a, None));
    let mut p = roce::parse(&f).unwrap().unwrap();
    p.roce = 1000..1100;
    assert!(set_frame_ecn(&mut f[..40], &mut p, Ecn::Ce).is_err());
}

#[test]
fn cnp_parses_the_connectx_vector_and_emits_it_back() {
    let f = vector1();
    let p = roce::parse(&f).unwrap().unwrap();
    let c = CnpRepr::parse(&f[p.roce.clone()]).unwrap();
    assert_eq!(c, CnpRepr { dest_qp: 0x118, pkey: 0xffff, becn: true });
    assert_eq!(c, CnpRepr::to_qp(0x118));
    let mut out = Vec::new();
    c.emit(&mut out).unwrap();
    assert_eq!(out.len(), CNP_LEN);
    assert_eq!(&out[..28], &f[p.roce.start..p.roce.end - 4], "BTH + reserved bytes as a ConnectX sends them");
    // The full frame the device sends: ICRC filled, DSCP 48 ECT(0), UDP sport 0.
    let data = data_repr(NetHdr::RoceV2Ipv4, 0x6b, None);
    let reply = CnpRepr::reply_frame(&data, 48, 6);
    let mut frame = Vec::new();
    roce::emit(&reply, &out, &mut frame).unwrap();
    assert_eq!(frame.len(), 74);
    let back = roce::parse(&frame).unwrap().unwrap();
    roce::verify_icrc(&frame, &back).unwrap();
    assert_eq!(back.repr.grh.traffic_class, 0xc2);
    assert_eq!(back.repr.udp_sport, 0);
    assert_eq!((back.repr.dmac, back.repr.smac), (data.smac, data.dmac));
    assert_eq!((back.repr.grh.sgid, back.repr.grh.dgid), (data.grh.dgid, data.grh.sgid));
    assert_eq!(CnpRepr::parse(&frame[back.roce.clone()]).unwrap(), c);
}

#[test]
fn cnp_reply_keeps_the_vid_and_sets_the_cnp_priority() {
    let data = data_repr(NetHdr::RoceV2Ipv6, 0x6b, Some(0x0064)); // PCP 0, VID 100
    let r = CnpRepr::reply_frame(&data, 48, 6);
    assert_eq!(r.vlan, Some(0xc064));
    assert_eq!((r.grh.flow_label, r.grh.hop_limit), (0, 64));
}

#[test]
fn cnp_parse_refuses_malformed() {
    let f = vector1();
    let roce = &f[42..];
    assert_eq!(CnpRepr::parse(&roce[..31]), Err(Error::Truncated("CNP")));
    let mut long = roce.to_vec();
    long.extend_from_slice(&[0; 4]);
    assert_eq!(CnpRepr::parse(&long), Err(Error::Malformed("CNP length")));
    let mut op = roce.to_vec();
    op[0] = 0x04;
    assert_eq!(CnpRepr::parse(&op), Err(Error::Malformed("not a CNP")));
    let mut rsv = roce.to_vec();
    rsv[20] = 1;
    assert_eq!(CnpRepr::parse(&rsv), Err(Error::Malformed("CNP reserved")));
    // No panic on any truncation or single-byte damage.
    for n in 0..roce.len() {
        let _ = CnpRepr::parse(&roce[..n]);
        let mut d = roce.to_vec();
        d[n] ^= 0xff;
        let _ = CnpRepr::parse(&d);
    }
}
