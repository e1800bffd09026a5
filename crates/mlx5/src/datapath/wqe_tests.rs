//! Tests of the WQE segment codecs ([`super`]).

use super::*;

fn ctrl(op: u8, idx: u16, qpn: u32, ds: u8, ce: u8) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&(((idx as u32) << 8) | op as u32).to_be_bytes());
    b[4..8].copy_from_slice(&((qpn << 8) | ds as u32).to_be_bytes());
    b[11] = ce;
    b
}

#[test]
fn ctrl_fields() {
    let c = CtrlSeg::parse(&ctrl(opcode::SEND, 0x1234, 0x456, 7, CTRL_CQ_UPDATE | CTRL_SOLICITED));
    assert_eq!((c.opcode, c.wqe_index, c.qpn, c.ds), (opcode::SEND, 0x1234, 0x456, 7));
    assert_eq!(c.wqebbs(), 2);
    assert!(c.signaled() && c.solicited());
}

/// An XRC initiator's RDMA WRITE as libmlx5 builds it: ctrl, `mlx5_wqe_xrc_seg`
/// (XRC SRQ number in its first word; the top byte is not part of it), raddr, data.
#[test]
fn xrc_segment_follows_the_ctrl_segment() {
    let mut w = vec![0u8; 64];
    w[..16].copy_from_slice(&ctrl(opcode::RDMA_WRITE, 1, 0x102, 4, CTRL_CQ_UPDATE));
    w[16..20].copy_from_slice(&0xff00_0042u32.to_be_bytes());
    w[32..40].copy_from_slice(&0x2000u64.to_be_bytes());
    w[40..44].copy_from_slice(&0x77u32.to_be_bytes());
    w[48..52].copy_from_slice(&8u32.to_be_bytes());
    w[52..56].copy_from_slice(&0x5a00u32.to_be_bytes());
    w[56..64].copy_from_slice(&0x1000u64.to_be_bytes());
    let s = parse_send_xrc(&w).unwrap();
    assert_eq!(s.xrc_srqn, Some(0x42));
    assert_eq!(s.raddr, Some(RaddrSeg { raddr: 0x2000, rkey: 0x77 }));
    assert_eq!(s.payload, Payload::gather(vec![Sge { length: 8, lkey: 0x5a00, addr: 0x1000 }]));
    // The same bytes as an RC WQE read the XRC segment as the remote address: not the same WQE.
    assert_ne!(parse_send(&w, false).unwrap().raddr, s.raddr);
    // ds 1: no room for the XRC segment.
    w[7] = 1;
    assert!(parse_send_xrc(&w).is_err());
}

#[test]
fn ud_send_with_gather_and_inline() {
    let mut w = vec![0u8; 128];
    w[..16].copy_from_slice(&ctrl(opcode::SEND, 3, 0x101, 5, CTRL_CQ_UPDATE));
    let av = &mut w[16..64];
    av[0..4].copy_from_slice(&0x8001_0000u32.to_be_bytes());
    av[8..12].copy_from_slice(&1u32.to_be_bytes());
    av[0x0c] = 0x03;
    av[0x0e..0x10].copy_from_slice(&7u16.to_be_bytes());
    w[64..68].copy_from_slice(&256u32.to_be_bytes());
    w[68..72].copy_from_slice(&0x5a00u32.to_be_bytes());
    w[72..80].copy_from_slice(&0x1000u64.to_be_bytes());
    let s = parse_ud_send(&w).unwrap();
    assert_eq!(
        (s.av.qkey, s.av.dqpn, s.av.sl, s.av.rlid, s.av.use_qp_qkey),
        (0x8001_0000, 1, 3, 7, true),
        "bit 31: the QP's Q_Key"
    );
    assert_eq!(s.payload, Payload::gather(vec![Sge { addr: 0x1000, length: 256, lkey: 0x5a00 }]));
    // Inline.
    w[64..68].copy_from_slice(&(INLINE_SEG | 5).to_be_bytes());
    w[68..73].copy_from_slice(b"hello");
    assert_eq!(parse_ud_send(&w).unwrap().payload, Payload::inline(b"hello".to_vec()));
    w[64..68].copy_from_slice(&(INLINE_SEG | 500).to_be_bytes());
    assert_eq!(parse_ud_send(&w), Err(WqeError::InlineTooLong));
    // ds past the buffer / too small for the datagram segment.
    w[4..8].copy_from_slice(&((0x101u32 << 8) | 12).to_be_bytes());
    assert_eq!(parse_ud_send(&w), Err(WqeError::BadDs(12)));
    w[4..8].copy_from_slice(&((0x101u32 << 8) | 2).to_be_bytes());
    assert_eq!(parse_ud_send(&w), Err(WqeError::BadDs(2)));
}

#[test]
fn rdma_and_atomic_segments() {
    let mut w = vec![0u8; 64];
    w[..16].copy_from_slice(&ctrl(opcode::ATOMIC_FA, 9, 0x200, 4, CTRL_CQ_UPDATE));
    w[16..24].copy_from_slice(&0xdead_0000u64.to_be_bytes());
    w[24..28].copy_from_slice(&0x1234u32.to_be_bytes());
    w[32..40].copy_from_slice(&5u64.to_be_bytes());
    w[48..52].copy_from_slice(&8u32.to_be_bytes());
    w[52..56].copy_from_slice(&0x77u32.to_be_bytes());
    w[56..64].copy_from_slice(&0x9000u64.to_be_bytes());
    let s = parse_send(&w, false).unwrap();
    assert_eq!(s.raddr, Some(RaddrSeg { raddr: 0xdead_0000, rkey: 0x1234 }));
    assert_eq!(s.atomic, Some(AtomicSeg { swap_add: 5, compare: 0 }));
    assert_eq!(s.payload, Payload::gather(vec![Sge { addr: 0x9000, length: 8, lkey: 0x77 }]));
    // An atomic whose ds leaves no room for its segments.
    w[4..8].copy_from_slice(&((0x200u32 << 8) | 2).to_be_bytes());
    assert_eq!(parse_send(&w, false), Err(WqeError::Truncated));
    w[4..8].copy_from_slice(&(0x200u32 << 8).to_be_bytes());
    assert_eq!(parse_send(&w, false), Err(WqeError::BadDs(0)));
    assert!(parse_send(&w[..8], false).is_err());
}

/// Fuzz finding (wqe_decode): a WQE shorter than its control segment
/// panicked on the slice instead of being refused.
#[test]
fn short_wqe_is_an_error_not_a_panic() {
    for n in 0..16 {
        assert_eq!(parse_ud_send(&vec![0xff; n]), Err(WqeError::Truncated));
        assert_eq!(parse_send(&vec![0xff; n], true), Err(WqeError::Truncated));
    }
}

#[test]
fn recv_list_terminator() {
    let mut b = vec![0u8; 64];
    b[0..4].copy_from_slice(&296u32.to_be_bytes());
    b[4..8].copy_from_slice(&0x77u32.to_be_bytes());
    b[20..24].copy_from_slice(&INVALID_LKEY.to_be_bytes());
    b[32..36].copy_from_slice(&999u32.to_be_bytes());
    assert_eq!(parse_recv(&b), vec![Sge { addr: 0, length: 296, lkey: 0x77 }]);
}

/// `mlx5_wqe_data_seg` bytes.
fn dseg(len: u32, lkey: u32, addr: u64) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[0..4].copy_from_slice(&len.to_be_bytes());
    d[4..8].copy_from_slice(&lkey.to_be_bytes());
    d[8..16].copy_from_slice(&addr.to_be_bytes());
    d
}

/// `mlx5_wqe_inline_seg` bytes: the count with `MLX5_INLINE_SEG`, the data,
/// zero padding to 16 bytes (as `set_data_inl_seg` / `uct_ib_mlx5_inline_copy`).
fn iseg(data: &[u8]) -> Vec<u8> {
    let mut v = (INLINE_SEG | data.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(data);
    v.resize((4 + data.len()).next_multiple_of(DS), 0);
    v
}

/// UCX ud_mlx5's CREQ resend (`uct_ud_mlx5_ep_send_ctl` with an iov): ctrl,
/// AV, an inline segment with the 12-byte neth, a data segment with the rest
/// of the CREQ; ds 6. Every segment counts, in order.
#[test]
fn ucx_ud_resend_inline_header_then_data_segment() {
    let neth = [0xff, 0xff, 0xff, 0x22, 0, 0, 0, 1, 0, 0, 0, 0];
    let mut w = ctrl(opcode::SEND, 7, 0x101, 6, CTRL_CQ_UPDATE).to_vec();
    let mut av = [0u8; 48];
    av[0..4].copy_from_slice(&0x1ee7_a330u32.to_be_bytes());
    av[8..12].copy_from_slice(&0x8000_0123u32.to_be_bytes());
    av[0x0e..0x10].copy_from_slice(&2u16.to_be_bytes());
    w.extend_from_slice(&av);
    let inl = iseg(&neth);
    assert_eq!(&inl[..4], &[0x80, 0, 0, 0x0c], "byte_count 0x8000000C");
    w.extend_from_slice(&inl);
    w.extend_from_slice(&dseg(58, 0x5a00, 0x7000_1000));
    assert_eq!(w.len(), 96);
    w.resize(128, 0xee); // the rest of the second WQEBB: not part of the WQE
    let s = parse_ud_send(&w).unwrap();
    assert_eq!((s.av.dqpn, s.av.rlid), (0x123, 2));
    assert_eq!(
        s.payload,
        Payload(vec![Piece::Inline(neth.to_vec()), Piece::Sge(Sge { length: 58, lkey: 0x5a00, addr: 0x7000_1000 })])
    );
    assert_eq!(s.payload.len(), 70, "12 inline bytes, then 58 through the key");
    // The same WQE with ds 5 ends after the inline segment: the data segment is not read.
    w[7] = 5;
    assert_eq!(parse_ud_send(&w).unwrap().payload, Payload::inline(neth.to_vec()));
}

/// rc_mlx5 am_zcopy: ctrl, an inline segment with the rc and AM headers
/// (17 bytes: 4 + 17 padded to 32), then two data segments; ds 5.
#[test]
fn rc_am_zcopy_inline_headers_then_two_data_segments() {
    let hdr: Vec<u8> = (1..=17).collect();
    let mut w = ctrl(opcode::SEND, 1, 0x200, 5, CTRL_CQ_UPDATE).to_vec();
    w.extend_from_slice(&iseg(&hdr));
    w.extend_from_slice(&dseg(4096, 0x11, 0x10_0000));
    w.extend_from_slice(&dseg(100, 0x22, 0x20_0000));
    let s = parse_send(&w, false).unwrap();
    assert_eq!(
        s.payload,
        Payload(vec![
            Piece::Inline(hdr),
            Piece::Sge(Sge { length: 4096, lkey: 0x11, addr: 0x10_0000 }),
            Piece::Sge(Sge { length: 100, lkey: 0x22, addr: 0x20_0000 }),
        ])
    );
    assert_eq!(s.payload.len(), 17 + 4096 + 100);
}

/// The PRM allows any order: a data segment, inline bytes, another data
/// segment, and an empty inline segment (one DS unit).
#[test]
fn inline_after_gather_keeps_wqe_order() {
    let mut w = ctrl(opcode::SEND, 2, 0x200, 7, 0).to_vec();
    w.extend_from_slice(&dseg(8, 0x11, 0x1000));
    w.extend_from_slice(&iseg(&[9; 28])); // 4 + 28 = 32: exactly two DS
    w.extend_from_slice(&dseg(16, 0x22, 0x2000));
    w.extend_from_slice(&iseg(&[]));
    w.extend_from_slice(&iseg(b"end"));
    assert_eq!(w.len(), 7 * 16, "ctrl + 6 DS");
    w.extend_from_slice(&dseg(1, 2, 3)); // past ds: not part of the WQE
    let s = parse_send(&w, false).unwrap();
    assert_eq!(
        s.payload,
        Payload(vec![
            Piece::Sge(Sge { length: 8, lkey: 0x11, addr: 0x1000 }),
            Piece::Inline(vec![9; 28]),
            Piece::Sge(Sge { length: 16, lkey: 0x22, addr: 0x2000 }),
            Piece::Inline(vec![]),
            Piece::Inline(b"end".to_vec()),
        ])
    );
}

/// Untrusted counts: an inline segment after a data segment whose count runs
/// past the WQE's ds is refused, not read from the bytes beyond it; the
/// largest count that fits is taken.
#[test]
fn inline_count_is_bounded_by_the_wqe() {
    let mut w = ctrl(opcode::SEND, 3, 0x200, 4, 0).to_vec();
    w.extend_from_slice(&dseg(8, 0x11, 0x1000));
    w.extend_from_slice(&iseg(&[7; 28]));
    w.resize(256, 0x55);
    assert_eq!(parse_send(&w, false).unwrap().payload.len(), 8 + 28);
    for n in [29, 1000, 0x7fff_ffff] {
        w[32..36].copy_from_slice(&(INLINE_SEG | n).to_be_bytes());
        assert_eq!(parse_send(&w, false), Err(WqeError::InlineTooLong), "count {n}");
    }
    // A payload that is not whole DS units (the fuzz target feeds any bytes).
    assert_eq!(parse_payload(&[0u8; 20]), Err(WqeError::Truncated));
    assert_eq!(parse_payload(&[0x80, 0, 0, 0x0c]), Err(WqeError::Truncated));
    assert_eq!(parse_payload(&[]), Ok(Payload::default()));
}
