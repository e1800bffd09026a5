//! Every send opcode value through the firmware's doorbell path, on the
//! engine path (RC between two devices) and the local datagram path (QP1),
//! plus the flags and sizes of a control segment: a WQE the device does not
//! execute completes with an error CQE (REQ_ERR, LOCAL_QP_OP_ERR, its
//! wqe_counter and opcode), the QP moves to ERR and the next WQE flushes.

use crate::datapath::cqe::{op, syndrome};
use crate::datapath::wqe::{opcode, CTRL_CQ_UPDATE};
use crate::ifc;
use crate::test_support::{
    connect, ctrl_seg, data_seg, pair_of, pump, rc_pair, side_at, transition_in, Bench, Side, DATA, QP_BUF, QP_DBR,
};
use vrnic_engine::QpState;

const SQ: u64 = QP_BUF + 16 * 16;

/// The opcode values a test goes through: all 256, or under Miri (where a
/// device pair costs seconds) two executed ones and a refused one.
fn opcodes() -> Vec<u8> {
    if cfg!(miri) {
        vec![opcode::NOP, opcode::SEND, 0xff]
    } else {
        (0..=255).collect()
    }
}

/// The fields of a CQE the tests check.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    opcode: u8,
    syndrome: u8,
    vendor: u8,
    wqe_opcode: u8,
    qpn: u32,
    wqe_counter: u16,
}

fn cqe_at(t: &Bench, cq_buf: u64, slot: u64) -> Option<Seen> {
    let e = t.mem.get(cq_buf + slot * 64, 64);
    if e[0x3f] == 0xf1 {
        return None;
    }
    let sdq = u32::from_be_bytes(e[0x38..0x3c].try_into().unwrap());
    let opcode = e[0x3f] >> 4;
    // Only an error CQE has syndromes there; a good one holds its timestamp in those bytes.
    let err = matches!(opcode, op::REQ_ERR | op::RESP_ERR);
    Some(Seen {
        opcode,
        syndrome: if err { e[0x37] } else { 0 },
        vendor: if err { e[0x36] } else { 0 },
        wqe_opcode: (sdq >> 24) as u8,
        qpn: sdq & 0xff_ffff,
        wqe_counter: u16::from_be_bytes([e[0x3c], e[0x3d]]),
    })
}

/// CQEs 0..n of `q`'s CQ as (opcode, syndrome, wqe_opcode, wqe_counter); each must be there.
fn first_cqes(q: &Side, n: u64) -> Vec<(u8, u8, u8, u16)> {
    (0..n)
        .map(|k| cqe_at(&q.t, q.cq_buf, k).map(|c| (c.opcode, c.syndrome, c.wqe_opcode, c.wqe_counter)).unwrap())
        .collect()
}

fn raddr(addr: u64, rkey: u32) -> [u8; 16] {
    let mut r = [0u8; 16];
    r[0..8].copy_from_slice(&addr.to_be_bytes());
    r[8..12].copy_from_slice(&rkey.to_be_bytes());
    r
}

/// Writes at SQ slot `idx` of side `a` a WQE with opcode `op` and the
/// segments that opcode takes on RC (or, for an opcode the device does not
/// know, a remote address and a data segment).
fn put_rc_wqe(a: &Side, b_key: u32, idx: u16, op_: u8, fm_ce_se: u8) {
    put_rc_wqe_inv(a, b_key, b_key, idx, op_, fm_ce_se)
}

/// [`put_rc_wqe`]; a SEND_INVAL asks the peer to invalidate `inv_key`.
fn put_rc_wqe_inv(a: &Side, b_key: u32, inv_key: u32, idx: u16, op_: u8, fm_ce_se: u8) {
    let slot = SQ + (idx as u64 % 16) * 64;
    let (ds, segs): (u8, Vec<[u8; 16]>) = match op_ {
        opcode::NOP => (1, vec![]),
        opcode::SEND | opcode::SEND_IMM | opcode::SEND_INVAL => (2, vec![data_seg(8, a.key, DATA)]),
        opcode::ATOMIC_CS | opcode::ATOMIC_FA => {
            let mut at = [0u8; 16];
            at[0..8].copy_from_slice(&1u64.to_be_bytes());
            (4, vec![raddr(DATA + 0x3000, b_key), at, data_seg(8, a.key, DATA + 0x100)])
        }
        _ => (3, vec![raddr(DATA + 0x3000, b_key), data_seg(8, a.key, DATA + 0x100)]),
    };
    let mut c = ctrl_seg(op_, idx, a.qpn, ds);
    c[11] = fm_ce_se;
    if op_ == opcode::SEND_INVAL {
        // The key the peer is to invalidate: one of its own.
        c[12..16].copy_from_slice(&inv_key.to_be_bytes());
    }
    a.t.mem.put(slot, &c);
    for (k, s) in segs.iter().enumerate() {
        a.t.mem.put(slot + 16 * (k as u64 + 1), s);
    }
}

fn ring(s: &mut Side, producer: u32) {
    s.t.mem.put(QP_DBR + 4, &producer.to_be_bytes());
    let q = s.qpn;
    s.t.fw.send_doorbell(q);
}

/// Every opcode value 0..=255 as the first WQE of a fresh RC QP, a signaled
/// RDMA WRITE behind it: the nine RC operations complete (both WQEs), every
/// other value gets REQ_ERR / LOCAL_QP_OP_ERR for WQE 0, the WRITE flushes,
/// the QP is in ERR and nothing reached the peer.
#[test]
fn every_opcode_on_rc() {
    use opcode::*;
    let executed = [NOP, SEND_INVAL, RDMA_WRITE, RDMA_WRITE_IMM, SEND, SEND_IMM, RDMA_READ, ATOMIC_CS, ATOMIC_FA];
    for op_ in opcodes() {
        let (net, mut a, mut b) = rc_pair(QP_BUF);
        // Two receives on B for whatever consumes one.
        b.t.mem.put(QP_BUF, &data_seg(256, b.key, DATA + 0x1000));
        b.t.mem.put(QP_BUF + 16, &data_seg(256, b.key, DATA + 0x1000));
        b.t.mem.put(QP_DBR, &2u32.to_be_bytes());
        // A second key on B for SEND_INVAL to invalidate (the WRITE uses the first).
        let pd = b.t.fw.core.engine.qp(b.qpn).unwrap().pd;
        let inv_key = b.t.mkey(pd, &[ifc::create_mkey_in::memory_key_mkey_entry::rw], 0x44);
        put_rc_wqe_inv(&a, b.key, inv_key, 0, op_, CTRL_CQ_UPDATE);
        put_rc_wqe(&a, b.key, 1, RDMA_WRITE, CTRL_CQ_UPDATE);
        ring(&mut a, 2);
        pump(&net, &mut a, &mut b);
        let qa = a.qpn;
        let (c0, c1) = (cqe_at(&a.t, a.cq_buf, 0), cqe_at(&a.t, a.cq_buf, 1));
        let state = a.t.fw.core.engine.qp(qa).unwrap().state;
        if executed.contains(&op_) {
            let ok = |n: u16, o: u8| {
                Some(Seen { opcode: op::REQ, syndrome: 0, vendor: 0, wqe_opcode: o, qpn: qa, wqe_counter: n })
            };
            assert_eq!((c0, c1, state), (ok(0, op_), ok(1, RDMA_WRITE), QpState::Rts), "opcode {op_:#04x} executed");
        } else {
            let err = |n: u16, o: u8, s: u8| {
                Some(Seen { opcode: op::REQ_ERR, syndrome: s, vendor: 0x79, wqe_opcode: o, qpn: qa, wqe_counter: n })
            };
            assert_eq!(c0, err(0, op_, syndrome::LOCAL_QP_OP_ERR), "opcode {op_:#04x}: error CQE");
            assert_eq!(c1, err(1, RDMA_WRITE, syndrome::WR_FLUSH_ERR), "opcode {op_:#04x}: the next WQE flushes");
            assert_eq!(state, QpState::Err, "opcode {op_:#04x}: QP to ERR");
            assert_eq!(b.t.fw.core.engine.qp(b.qpn).unwrap().state, QpState::Rts, "the peer is untouched");
            assert_eq!(b.t.mem.get(DATA + 0x3000, 8), vec![0; 8], "opcode {op_:#04x}: nothing written on the peer");
        }
        assert_eq!(cqe_at(&a.t, a.cq_buf, 2), None, "opcode {op_:#04x}: two CQEs");
    }
}

/// A QP1 (local datagram path) with a send CQ at 0x120000, SQ after 16
/// receive slots of 16 bytes at 0x200000, doorbell record at 0x280000.
fn gsi() -> (Bench, u32, u32, u64) {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::new();
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    let lkey = t.mkey(pd, &[m::lr, m::lw], 0x11);
    let cqn = t.cq(uar, eqn, 0x120000);
    let qpn = t.qp_with(8, pd, uar, cqn, QP_BUF, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, QP_DBR));
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::q_key.set(&mut i, 0x8001_0000);
    q::mtu.set(&mut i, 1);
    t.ok(&i, 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn), 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, qpn), 16);
    (t, qpn, lkey, 0x120000)
}

/// A 2-WQEBB UD-shaped WQE (ctrl, address vector to QP1 at LID 3, one data segment).
fn put_ud_wqe(t: &Bench, qpn: u32, lkey: u32, idx: u16, op_: u8) {
    let mut w = [0u8; 128];
    w[..16].copy_from_slice(&ctrl_seg(op_, idx, qpn, 5));
    w[16..20].copy_from_slice(&0x8001_0000u32.to_be_bytes());
    w[24..28].copy_from_slice(&1u32.to_be_bytes());
    w[16 + 0x0e..16 + 0x10].copy_from_slice(&3u16.to_be_bytes());
    w[64..80].copy_from_slice(&data_seg(64, lkey, DATA));
    let slot = SQ + (idx as u64 % 16) * 64;
    t.mem.put(slot, &w);
}

/// Every opcode value on QP1: NOP, SEND and SEND_IMM execute; every other
/// value is an error CQE, ERR, and the SEND behind it flushes.
#[test]
#[cfg_attr(miri, ignore = "a device per opcode; under Miri the RC loop and sq_ops cover these paths")]
fn every_opcode_on_gsi() {
    for op_ in opcodes() {
        let (mut t, qpn, lkey, cq) = gsi();
        put_ud_wqe(&t, qpn, lkey, 0, op_);
        put_ud_wqe(&t, qpn, lkey, 2, opcode::SEND);
        t.mem.put(QP_DBR + 4, &4u32.to_be_bytes());
        t.fw.send_doorbell(qpn);
        let state = t.fw.core.engine.qp(qpn).unwrap().state;
        let (c0, c1) = (cqe_at(&t, cq, 0), cqe_at(&t, cq, 1));
        if matches!(op_, opcode::NOP | opcode::SEND | opcode::SEND_IMM) {
            let ok = |n: u16, o: u8| {
                Some(Seen { opcode: op::REQ, syndrome: 0, vendor: 0, wqe_opcode: o, qpn, wqe_counter: n })
            };
            assert_eq!((c0, c1, state), (ok(0, op_), ok(2, opcode::SEND), QpState::Rts), "opcode {op_:#04x} executed");
        } else {
            let err = |n: u16, o: u8, s: u8| {
                Some(Seen { opcode: op::REQ_ERR, syndrome: s, vendor: 0x79, wqe_opcode: o, qpn, wqe_counter: n })
            };
            assert_eq!(c0, err(0, op_, syndrome::LOCAL_QP_OP_ERR), "opcode {op_:#04x}: error CQE");
            assert_eq!(c1, err(2, opcode::SEND, syndrome::WR_FLUSH_ERR), "opcode {op_:#04x}: the next WQE flushes");
            assert_eq!(state, QpState::Err, "opcode {op_:#04x}");
        }
        assert_eq!(cqe_at(&t, cq, 2), None);
    }
}

/// A NOP takes no PSN and completes in order: behind an RDMA WRITE not yet
/// acknowledged it waits, then completes between it and the next WRITE,
/// which the peer accepts (no PSN gap). An unsignaled NOP writes no CQE.
#[test]
fn nop_completes_in_order_without_a_psn() {
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    let qa = a.qpn;
    a.t.mem.put(DATA + 0x100, &[7u8; 8]);
    put_rc_wqe(&a, b.key, 0, opcode::RDMA_WRITE, CTRL_CQ_UPDATE);
    put_rc_wqe(&a, b.key, 1, opcode::NOP, CTRL_CQ_UPDATE);
    put_rc_wqe(&a, b.key, 2, opcode::NOP, 0);
    put_rc_wqe(&a, b.key, 3, opcode::RDMA_WRITE, CTRL_CQ_UPDATE);
    ring(&mut a, 4);
    assert_eq!(cqe_at(&a.t, a.cq_buf, 0), None, "nothing before the WRITE is acknowledged");
    pump(&net, &mut a, &mut b);
    let counters: Vec<(u8, u8, u16)> =
        (0..3).map(|k| cqe_at(&a.t, a.cq_buf, k).map(|c| (c.opcode, c.wqe_opcode, c.wqe_counter)).unwrap()).collect();
    assert_eq!(
        counters,
        vec![(op::REQ, opcode::RDMA_WRITE, 0), (op::REQ, opcode::NOP, 1), (op::REQ, opcode::RDMA_WRITE, 3)]
    );
    assert_eq!(cqe_at(&a.t, a.cq_buf, 3), None, "the unsignaled NOP wrote none");
    assert_eq!(a.t.fw.core.engine.qp(qa).unwrap().state, QpState::Rts);
    assert_eq!(b.t.mem.get(DATA + 0x3000, 8), vec![7; 8]);
}

/// Flags and sizes: a reserved fence mode, a nonzero opmod, ds 0 and a ds
/// too small for the opcode's segments are each refused like an unknown
/// opcode; an unsignaled refused WQE still completes (errors always do)
/// and raises the completion event of an armed CQ. After RESET->RTS the QP
/// sends again.
#[test]
fn bad_flags_and_ds_and_recovery() {
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    let (qa, qb) = (a.qpn, b.qpn);
    type Edit = Box<dyn Fn(&mut [u8; 16])>;
    let cases: [(&str, Edit); 4] = [
        ("fence mode 7", Box::new(|c| c[11] = (7 << 5) | CTRL_CQ_UPDATE)),
        ("opmod 1", Box::new(|c| c[0] = 1)),
        ("ds 0", Box::new(|c| c[7] &= !0x3f)),
        ("ds 2 for an atomic", Box::new(|c| c[7] = (c[7] & !0x3f) | 2)),
    ];
    let mut cq_slot = 0u64;
    for (name, edit) in cases.iter() {
        let op_ = if name.contains("atomic") { opcode::ATOMIC_FA } else { opcode::RDMA_WRITE };
        put_rc_wqe(&a, b.key, 0, op_, 0); // unsignaled
        let mut c: [u8; 16] = a.t.mem.get(SQ, 16).try_into().unwrap();
        edit(&mut c);
        a.t.mem.put(SQ, &c);
        let eqe_before = a.t.mem.get(0x100000 + 63, 1)[0];
        let eqes = |a: &Side| a.t.fw.core.stats.eqes.load(std::sync::atomic::Ordering::Relaxed);
        let n = eqes(&a);
        a.t.fw.cq_arm(a.cqn, 0, true, cq_slot as u32);
        assert_eq!(eqes(&a), n, "{name}: nothing unreported before the arm");
        ring(&mut a, 1);
        pump(&net, &mut a, &mut b);
        let e = cqe_at(&a.t, a.cq_buf, cq_slot).unwrap_or_else(|| panic!("{name}: a CQE"));
        assert_eq!(
            (e.opcode, e.syndrome, e.wqe_counter, e.wqe_opcode),
            (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR, 0, op_),
            "{name}"
        );
        assert_eq!(a.t.fw.core.engine.qp(qa).unwrap().state, QpState::Err, "{name}");
        let eqe = a.t.mem.get(0x100000 + cq_slot * 64, 64);
        assert_ne!(eqe[63], eqe_before, "{name}: an EQE for the solicited-armed CQ");
        assert_eq!(eqe[1], ifc::MLX5_EVENT_TYPE_COMP as u8, "{name}");
        cq_slot += 1;
        // Recovery: RESET, INIT, RTR, RTS (the driver's sequence) and a good WRITE.
        a.t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, qa), 16);
        a.t.mem.put(QP_DBR + 4, &0u32.to_be_bytes());
        connect(&mut a, qb, 2);
        put_rc_wqe(&a, b.key, 0, opcode::RDMA_WRITE, CTRL_CQ_UPDATE);
        ring(&mut a, 1);
        pump(&net, &mut a, &mut b);
        let e = cqe_at(&a.t, a.cq_buf, cq_slot).unwrap_or_else(|| panic!("{name}: WRITE after recovery"));
        assert_eq!((e.opcode, e.wqe_counter), (op::REQ, 0), "{name}: recovered");
        cq_slot += 1;
        // B's QP saw a new PSN space from a reset A: move B through RESET too.
        b.t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, qb), 16);
        connect(&mut b, qa, 1);
        a.t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, qa), 16);
        connect(&mut a, qb, 2);
    }
}

/// A WQE the doorbell announced whose control segment names another index
/// (here slot 1 says 5) is not skipped and does not stall the SQ: it
/// completes with LOCAL_QP_OP_ERR for its slot, the QP moves to ERR and the
/// WQE behind it flushes.
#[test]
fn a_wqe_with_the_wrong_index_completes_in_error() {
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    put_rc_wqe(&a, b.key, 0, opcode::RDMA_WRITE, CTRL_CQ_UPDATE);
    put_rc_wqe(&a, b.key, 1, opcode::RDMA_WRITE, CTRL_CQ_UPDATE);
    let mut c: [u8; 16] = a.t.mem.get(SQ + 64, 16).try_into().unwrap();
    c[1..3].copy_from_slice(&5u16.to_be_bytes());
    a.t.mem.put(SQ + 64, &c);
    put_rc_wqe(&a, b.key, 2, opcode::RDMA_WRITE, CTRL_CQ_UPDATE);
    ring(&mut a, 3);
    pump(&net, &mut a, &mut b);
    let seen = first_cqes(&a, 3);
    assert_eq!(
        seen,
        vec![
            (op::REQ, 0, opcode::RDMA_WRITE, 0),
            (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR, opcode::RDMA_WRITE, 1),
            (op::REQ_ERR, syndrome::WR_FLUSH_ERR, opcode::RDMA_WRITE, 2),
        ]
    );
    assert_eq!(a.t.fw.core.engine.qp(a.qpn).unwrap().state, QpState::Err);
}

/// A NOP behind a refused WQE flushes like any other WQE (its own opcode,
/// its own wqe_counter); so does a NOP posted to a QP already in ERR.
#[test]
fn nop_behind_an_error_flushes() {
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    put_rc_wqe(&a, b.key, 0, 0x07, 0);
    put_rc_wqe(&a, b.key, 1, opcode::NOP, CTRL_CQ_UPDATE);
    ring(&mut a, 2);
    pump(&net, &mut a, &mut b);
    put_rc_wqe(&a, b.key, 2, opcode::NOP, 0);
    ring(&mut a, 3);
    let seen = first_cqes(&a, 3);
    assert_eq!(
        seen,
        vec![
            (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR, 0x07, 0),
            (op::REQ_ERR, syndrome::WR_FLUSH_ERR, opcode::NOP, 1),
            (op::REQ_ERR, syndrome::WR_FLUSH_ERR, opcode::NOP, 2),
        ]
    );
    assert_eq!(cqe_at(&a.t, a.cq_buf, 3), None);
}

/// Every opcode value on a UC QP (engine path): NOP, SEND(_IMM) and RDMA
/// WRITE(_IMM) execute, every other value is refused like on RC.
#[test]
#[cfg_attr(miri, ignore = "a device per opcode; under Miri the RC loop and sq_ops cover these paths")]
fn every_opcode_on_uc() {
    use opcode::*;
    let executed = [NOP, RDMA_WRITE, RDMA_WRITE_IMM, SEND, SEND_IMM];
    for op_ in opcodes() {
        let (net, mut a, mut b) = pair_of(QP_BUF, 1);
        b.t.mem.put(QP_BUF, &data_seg(256, b.key, DATA + 0x1000));
        b.t.mem.put(QP_DBR, &1u32.to_be_bytes());
        put_rc_wqe(&a, b.key, 0, op_, CTRL_CQ_UPDATE);
        put_rc_wqe(&a, b.key, 1, RDMA_WRITE, CTRL_CQ_UPDATE);
        ring(&mut a, 2);
        pump(&net, &mut a, &mut b);
        let qa = a.qpn;
        let (c0, c1) = (cqe_at(&a.t, a.cq_buf, 0), cqe_at(&a.t, a.cq_buf, 1));
        let state = a.t.fw.core.engine.qp(qa).unwrap().state;
        if executed.contains(&op_) {
            let ok = |n: u16, o: u8| {
                Some(Seen { opcode: op::REQ, syndrome: 0, vendor: 0, wqe_opcode: o, qpn: qa, wqe_counter: n })
            };
            assert_eq!((c0, c1, state), (ok(0, op_), ok(1, RDMA_WRITE), QpState::Rts), "UC opcode {op_:#04x} executed");
        } else {
            let err = |n: u16, o: u8, s: u8| {
                Some(Seen { opcode: op::REQ_ERR, syndrome: s, vendor: 0x79, wqe_opcode: o, qpn: qa, wqe_counter: n })
            };
            assert_eq!(
                (c0, c1, state),
                (err(0, op_, syndrome::LOCAL_QP_OP_ERR), err(1, RDMA_WRITE, syndrome::WR_FLUSH_ERR), QpState::Err),
                "UC opcode {op_:#04x}"
            );
        }
    }
}

/// A UD QP (engine path) at LID 1 on an in-process network with LID 2.
fn ud_side() -> (std::sync::Arc<vrnic_fabric::InProcNet>, Side) {
    use ifc::rst2init_qp_in::qpc as q;
    let net = crate::test_support::two_port_net();
    let mut s = side_at(1, &net, 0, QP_BUF, 2);
    let qpn = s.qpn;
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::q_key.set(&mut i, 0x1234);
    q::primary_address_path::vhca_port_num.set(&mut i, 1);
    s.t.ok(&i, 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn);
    q::mtu.set(&mut i, 3);
    s.t.ok(&i, 16);
    s.t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, qpn), 16);
    (net, s)
}

/// Every opcode value on a UD QP (engine path): NOP, SEND and SEND_IMM (to
/// a QP at LID 2) execute; every other value is an error CQE, ERR, and the
/// SEND behind it flushes.
#[test]
#[cfg_attr(miri, ignore = "a device per opcode; under Miri the RC loop and sq_ops cover these paths")]
fn every_opcode_on_ud() {
    for op_ in opcodes() {
        let (_net, mut s) = ud_side();
        let qpn = s.qpn;
        for (idx, o) in [(0u16, op_), (2, opcode::SEND)] {
            let mut w = [0u8; 128];
            w[..16].copy_from_slice(&ctrl_seg(o, idx, qpn, 5));
            w[16..20].copy_from_slice(&0x1234u32.to_be_bytes());
            w[24..28].copy_from_slice(&0x42u32.to_be_bytes());
            w[16 + 0x0e..16 + 0x10].copy_from_slice(&2u16.to_be_bytes());
            w[64..80].copy_from_slice(&data_seg(64, s.key, DATA));
            s.t.mem.put(SQ + idx as u64 * 64, &w);
        }
        ring(&mut s, 4);
        let state = s.t.fw.core.engine.qp(qpn).unwrap().state;
        let (c0, c1) = (cqe_at(&s.t, s.cq_buf, 0), cqe_at(&s.t, s.cq_buf, 1));
        if matches!(op_, opcode::NOP | opcode::SEND | opcode::SEND_IMM) {
            let ok = |n: u16, o: u8| {
                Some(Seen { opcode: op::REQ, syndrome: 0, vendor: 0, wqe_opcode: o, qpn, wqe_counter: n })
            };
            assert_eq!(
                (c0, c1, state),
                (ok(0, op_), ok(2, opcode::SEND), QpState::Rts),
                "UD opcode {op_:#04x} executed"
            );
        } else {
            let err = |n: u16, o: u8, s: u8| {
                Some(Seen { opcode: op::REQ_ERR, syndrome: s, vendor: 0x79, wqe_opcode: o, qpn, wqe_counter: n })
            };
            assert_eq!(
                (c0, c1, state),
                (err(0, op_, syndrome::LOCAL_QP_OP_ERR), err(2, opcode::SEND, syndrome::WR_FLUSH_ERR), QpState::Err),
                "UD opcode {op_:#04x}"
            );
        }
        assert_eq!(cqe_at(&s.t, s.cq_buf, 2), None);
    }
}

/// The responder's ACK leaves no later than the receive CQE: a guest that
/// sees the CQE may destroy its QP at once (ibv_rc_pingpong after its last
/// receive), and an ACK still coalescing then is never sent (the peer's
/// SEND ends in RETRY_EXC_ERR). B's handler gets A's SEND without the end of
/// the burst (no flush): the CQE is written and the ACK is already queued.
#[test]
fn the_ack_of_a_send_leaves_before_its_receive_cqe() {
    use crate::datapath::FwHandler;
    use crate::test_support::{restore_fw, shared_fw};
    use vrnic_fabric::{PacketHandler, RxMeta};

    /// A handler whose bursts never end.
    struct NoFlush(FwHandler);
    impl PacketHandler for NoFlush {
        fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
            self.0.receive(meta, pkt)
        }
        fn flush(&self) {}
    }

    let (net, mut a, mut b) = rc_pair(QP_BUF);
    b.t.mem.put(QP_BUF, &data_seg(256, b.key, DATA + 0x1000));
    b.t.mem.put(QP_DBR, &1u32.to_be_bytes());
    a.t.mem.put(DATA, &[9u8; 8]);
    put_rc_wqe(&a, b.key, 0, opcode::SEND, CTRL_CQ_UPDATE);
    ring(&mut a, 1);
    assert_eq!(net.pending(), 1, "A's SEND is on the wire");
    let fb = shared_fw(&mut b.t);
    let hb = NoFlush(FwHandler(fb.clone()));
    struct Nobody;
    impl PacketHandler for Nobody {
        fn receive(&self, _: &RxMeta, _: &[u8]) {}
    }
    assert_eq!(net.pump(&[&Nobody, &hb], 1), 1);
    drop(hb);
    restore_fw(&mut b.t, fb);
    let c = cqe_at(&b.t, b.cq_buf, 0).expect("B's receive CQE");
    assert_eq!((c.opcode, c.qpn), (op::RESP_SEND, b.qpn));
    assert_eq!(b.t.mem.get(DATA + 0x1000, 8), vec![9; 8]);
    assert_eq!(net.pending(), 1, "B's ACK is queued to A by the time its CQE is visible");
}
