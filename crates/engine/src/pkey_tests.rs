//! P_Key checks (IBTA 10.9.3).

use super::test_support::*;
use super::*;

/// IBTA 10.9.3: a request whose BTH P_Key does not match the QP's partition
/// is dropped before anything else happens: no memory written, no ACK, the
/// drop counted. A matching one (limited member against our full-member
/// default partition) lands.
#[test]
fn pkey_mismatch_never_writes_memory() {
    use vrnic_wire::{bth, packet, reth};
    let p = Pair::new(1 << 16, &[]);
    let (_qa, qb) = p.qps(QpType::Rc, 1024);
    let write = |pkey: u16, psn: u32, payload: &[u8]| {
        let mut h = packet::Headers::new(bth::Repr {
            opcode: bth::Opcode::new(bth::Opcode::RC, bth::Opcode::WRITE_ONLY),
            dest_qp: qb,
            psn,
            pkey,
            ack_req: true,
            ..Default::default()
        });
        h.reth = Some(reth::Repr { va: BASE + 256, rkey: p.b.key, dma_len: payload.len() as u32 });
        let mut out = Vec::new();
        packet::emit(&h, payload, &mut out).unwrap();
        p.b.eng.lock().receive(&vrnic_fabric::RxMeta::ib(endpoint(1), false), &out);
    };
    for (i, bad) in [0x8001u16, 0x0000, 0x8000, 0x7ffe].into_iter().enumerate() {
        write(bad, 0xfffff0, b"must not land");
        assert_eq!(p.b.mem.get(BASE + 256, 13), vec![0; 13], "P_Key {bad:#06x} wrote memory");
        assert_eq!(p.b.eng.lock().rt.drops.bad_pkey, i as u64 + 1);
    }
    assert_eq!(p.net.pending(), 0, "a dropped request is not answered");
    write(0x7fff, 0xfffff0, b"limited ok!!!");
    assert_eq!(p.b.mem.get(BASE + 256, 13), b"limited ok!!!".to_vec());
    assert_eq!(p.b.eng.lock().rt.drops.bad_pkey, 4);
}

#[test]
fn pkey_match_rules() {
    use super::transport::pkey_matches;
    assert!(pkey_matches(0xffff, 0xffff));
    assert!(pkey_matches(0xffff, 0x7fff));
    assert!(pkey_matches(0x7fff, 0xffff));
    assert!(!pkey_matches(0x7fff, 0x7fff), "two limited members do not talk");
    assert!(!pkey_matches(0xffff, 0x8001));
    assert!(!pkey_matches(0x8000, 0x8000), "partition 0 is invalid");
}
