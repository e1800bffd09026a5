//! Every RoCEv2 parser: IPv4/UDP, BTH, each extension header, the whole
//! packet and the ICRC check, and the RoCE port's Ethernet frame parser
//! (`wire::roce`), and the IB port's QP0/QP1 packet check
//! (`mlx5::ib::mad_wire`), over the same arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use vrnic_wire::ip::{ipv4, udp, PseudoHeader};
use vrnic_wire::*;

macro_rules! each {
    ($data:expr, $($m:ident),*) => {
        $( if let Ok(p) = $m::Packet::new_checked($data) { let _ = $m::Repr::parse(&p); let _ = p.payload(); } )*
    };
}

fuzz_target!(|data: &[u8]| {
    // The datagram as it arrives: IPv4 + UDP + RoCE.
    if let Ok(p) = ipv4::Packet::new_checked(data) {
        let _ = (ipv4::Repr::parse(&p), p.verify_checksum());
        if let Ok(u) = udp::Packet::new_checked(p.payload()) {
            let _ = udp::Repr::parse(&u);
        }
    }
    if let Ok((ph, roce)) = PseudoHeader::parse(data) {
        let _ = icrc::verify(&ph, roce);
        let _ = RocePacket::parse(roce);
    }
    // BTH onwards.
    if let Ok(b) = bth::Packet::new_checked(data) {
        if let Ok(r) = bth::Repr::parse(&b) {
            let _ = (r.opcode.layout(), r.opcode.name());
        }
        let _ = b.payload();
    }
    if let Ok(p) = RocePacket::parse(data) {
        // What parses re-emits (reserved bits zeroed) and parses the same.
        let mut out = Vec::new();
        packet::emit(&p.headers, p.payload, &mut out).expect("a parsed packet re-emits");
        let q = RocePacket::parse(&out).expect("re-emitted packet parses");
        assert_eq!((q.headers, q.payload), (p.headers, p.payload), "round trip");
    }
    // The bytes as an Ethernet frame (RoCEv2 over IPv4/IPv6, RoCEv1).
    if let Ok(Some(p)) = roce::parse(data) {
        assert!(p.roce.end <= data.len() && p.roce.len() >= 16, "BTH..ICRC inside the frame");
        let _ = roce::verify_icrc(data, &p);
        // What parses re-emits (ICRC recomputed) and parses the same.
        let mut out = Vec::new();
        roce::emit(&p.repr, &data[p.roce.clone()], &mut out).expect("a parsed frame re-emits");
        let q = roce::parse(&out).expect("re-emitted frame parses").expect("as RoCE");
        assert_eq!(q.repr, p.repr, "round trip");
        roce::verify_icrc(&out, &q).expect("re-emitted ICRC");
    }
    let _ =
        roce::grh_area(roce::NetHdr::RoceV2Ipv4, &grh::Repr { payload_len: data.len() as u16, ..Default::default() });
    each!(data, reth, aeth, deth, immdt, ieth, atomic_eth, atomic_ack_eth, cnp);
    // BTH onwards as a QP0/QP1 packet from the IB fabric: a MAD or a refusal.
    let meta = vrnic_fabric::RxMeta::ib(vrnic_fabric::Endpoint::v4(2, std::net::Ipv4Addr::LOCALHOST), false);
    if let Ok((qpn, dg)) = vrnic_mlx5::ib::mad_wire::parse_mad_packet(&meta, data) {
        assert!(qpn <= 1 && dg.data.len() == 256, "only 256-byte MADs to QP0/QP1");
    }
});
