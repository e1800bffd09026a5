//! XRC packets from known bytes (IBTA 9.2, 9.3.6, table 38): the XRC opcodes
//! (transport 101b), the XRCETH after the BTH of every request and before
//! RETH / AtomicETH / ImmDt, none on responses and ACKs.

use super::bth::Opcode;
use super::packet::{emit, Headers, RocePacket};
use super::{aeth, reth, xrceth};

fn parse(b: &[u8]) -> RocePacket<'_> {
    RocePacket::parse(b).expect("parses")
}

#[test]
fn xrc_send_only_imm() {
    // BTH: XRC SEND_ONLY_IMM (0xa5), SE, P_Key 0xffff, dest QP 0x000123, A, PSN 0x00abcd;
    // XRCETH: reserved byte, XRC SRQ 0x000042; ImmDt; 4 payload bytes; ICRC slot.
    let b = [
        0xa5, 0x80, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x80, 0x00, 0xab, 0xcd, // BTH
        0xee, 0x00, 0x00, 0x42, // XRCETH (reserved byte ignored)
        0x12, 0x34, 0x56, 0x78, // ImmDt
        b'p', b'i', b'n', b'g', // payload
        0, 0, 0, 0, // ICRC
    ];
    let p = parse(&b);
    let h = p.headers;
    assert_eq!(h.bth.opcode, Opcode::new(Opcode::XRC, Opcode::SEND_ONLY_IMM));
    assert_eq!(h.bth.opcode.name(), "SEND_ONLY_IMM");
    assert!(h.bth.opcode.is_request() && h.bth.opcode.consumes_recv() && h.bth.opcode.is_reliable());
    assert_eq!((h.bth.dest_qp, h.bth.psn, h.bth.solicited, h.bth.ack_req), (0x123, 0xabcd, true, true));
    assert_eq!(h.xrceth, Some(xrceth::Repr { xrc_srq: 0x42 }));
    assert_eq!(h.immdt.map(|i| i.imm), Some([0x12, 0x34, 0x56, 0x78]));
    assert_eq!(p.payload, b"ping");
    // Emitted again: the same bytes, the reserved byte zero.
    let mut out = Vec::new();
    emit(&h, p.payload, &mut out).unwrap();
    let mut want = b.to_vec();
    want[12] = 0;
    assert_eq!(out, want);
}

#[test]
fn xrc_write_first_carries_xrceth_then_reth() {
    let h = Headers {
        xrceth: Some(xrceth::Repr { xrc_srq: 0x00ab_cdef }),
        reth: Some(reth::Repr { va: 0x1122_3344_5566_7788, rkey: 0x99aa_bbcc, dma_len: 8192 }),
        ..Headers::new(super::bth::Repr {
            opcode: Opcode::new(Opcode::XRC, Opcode::WRITE_FIRST),
            dest_qp: 7,
            ..Default::default()
        })
    };
    let mut out = Vec::new();
    emit(&h, &[0u8; 256], &mut out).unwrap();
    assert_eq!(out[0], 0xa6);
    assert_eq!(&out[12..16], &[0x00, 0xab, 0xcd, 0xef], "XRCETH right after the BTH");
    assert_eq!(&out[16..24], &0x1122_3344_5566_7788u64.to_be_bytes(), "then the RETH");
    assert_eq!(out.len(), 12 + 4 + 16 + 256 + 4);
    assert_eq!(parse(&out).headers, h);
}

#[test]
fn xrc_responses_have_no_xrceth_and_requests_need_one() {
    // XRC ACKNOWLEDGE (0xb1): BTH + AETH only.
    let b = [0xb1, 0, 0xff, 0xff, 0, 0, 0, 9, 0, 0, 0, 5, 0x1f, 0, 0, 3, 0, 0, 0, 0];
    let p = parse(&b);
    assert_eq!(p.headers.xrceth, None);
    assert_eq!(p.headers.aeth.map(|a| (a.syndrome, a.msn)), Some((aeth::Syndrome::Ack { credits: 0x1f }, 3)));
    assert!(!p.headers.bth.opcode.is_request() && p.headers.bth.opcode.is_reliable());
    // XRC READ_RESPONSE_ONLY carries AETH and payload, no XRCETH; XRC FETCH_ADD an XRCETH then the AtomicETH.
    let l = Opcode(0xb0).layout().unwrap();
    assert!(l.aeth && l.payload && !l.xrceth);
    let l = Opcode(0xb4).layout().unwrap();
    assert!(l.xrceth && l.atomic_eth && l.ext_len() == 4 + 28);
    // A request without the XRCETH is refused on emit; reserved XRC opcodes on parse.
    let no_x = Headers::new(super::bth::Repr { opcode: Opcode(0xa4), ..Default::default() });
    assert!(emit(&no_x, &[], &mut Vec::new()).is_err());
    assert!(Opcode(0xb5).layout().is_none());
    // Truncated in the XRCETH: refused, never a panic.
    let b = [0xa4, 0, 0xff, 0xff, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0];
    assert!(RocePacket::parse(&b).is_err());
}
