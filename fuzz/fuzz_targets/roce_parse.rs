//! Every RoCEv2 parser: IPv4/UDP, BTH, each extension header, the whole
//! packet and the ICRC check, over the same arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use vrnic::wire::ip::{ipv4, udp, PseudoHeader};
use vrnic::wire::*;

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
    each!(data, reth, aeth, deth, immdt, ieth, atomic_eth, atomic_ack_eth, cnp);
});
