//! Transport domains, TISes, Q counters, SQs and RQs through the real command transport.

use crate::cmd::status;
use crate::fields::Field;
use crate::ifc::{self, create_sq_in, modify_rq_in, modify_sq_in, rqc, sqc, wq};
use crate::test_support::{cmd, Bench};
use vrnic_engine::{QpState, QpType};

const SQ_BUF: u64 = 0x200000;
const RQ_BUF: u64 = 0x240000;
const DBR: u64 = 0x280000;
const CQ_BUF: u64 = 0x300000;

/// The new object's number: `create_{sq,rq}_out.{sqn,rqn}`, `create_tis_out.tisn` and
/// `alloc_transport_domain_out.transport_domain` are the same 24 bits.
fn obj(o: &[u8]) -> u32 {
    ifc::create_sq_out::sqn.get(o) as u32
}

struct Port {
    t: Bench,
    pd: u32,
    td: u32,
    tis: u32,
    cqn: u32,
    uar: u32,
}

fn port() -> Port {
    let mut t = Bench::eth();
    let uar = t.up();
    let eqn = t.eq(uar, 0, 0, 0x100000);
    let cqn = t.cq(uar, eqn, CQ_BUF);
    let pd = t.pd();
    let td = obj(&t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN, 0, 16), 16));
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_TIS, 0, ifc::create_tis_in::SIZE);
    ifc::create_tis_in::ctx::prio.set(&mut i, 3 << 1);
    ifc::create_tis_in::ctx::transport_domain.set(&mut i, td as u64);
    let tis = obj(&t.ok(&i, 16));
    Port { t, pd, td, tis, cqn, uar }
}

/// A `wq` field of CREATE/MODIFY_{SQ,RQ}_in (the SQ's and the RQ's at the same place).
fn wqf(f: Field) -> Field {
    create_sq_in::ctx::wq.inner(f)
}

/// An `sqc`/`rqc` field of CREATE/MODIFY_{SQ,RQ}_in and QUERY_{SQ,RQ}_out (all at the same place).
fn ctxf(f: Field) -> Field {
    create_sq_in::ctx.inner(f)
}

/// A CREATE_SQ / CREATE_RQ input as mlx5e builds it: cyclic wq of 2^`log_sz` entries in one page.
fn create_q(p: &Port, send: bool, log_sz: u64) -> Vec<u8> {
    let op = if send { ifc::MLX5_CMD_OP_CREATE_SQ } else { ifc::MLX5_CMD_OP_CREATE_RQ };
    let mut i = cmd(op, 0, create_sq_in::SIZE + 8);
    wqf(wq::wq_type).set(&mut i, ifc::MLX5_WQ_TYPE_CYCLIC as u64);
    wqf(wq::pd).set(&mut i, p.pd as u64);
    wqf(wq::uar_page).set(&mut i, p.uar as u64);
    wqf(wq::dbr_addr).set(&mut i, DBR);
    wqf(wq::log_wq_sz).set(&mut i, log_sz);
    wqf(wq::log_wq_stride).set(&mut i, if send { 6 } else { 4 });
    if send {
        ctxf(sqc::cqn).set(&mut i, p.cqn as u64);
        ctxf(sqc::tis_lst_sz).set(&mut i, 1);
        ctxf(sqc::tis_num_0).set(&mut i, p.tis as u64);
        ctxf(sqc::user_index).set(&mut i, 0x55);
    } else {
        ctxf(rqc::cqn).set(&mut i, p.cqn as u64);
        ctxf(rqc::vsd).set(&mut i, 1);
    }
    let at = create_sq_in::ctx::wq::pas.byte_off();
    i[at..at + 8].copy_from_slice(&(if send { SQ_BUF } else { RQ_BUF }).to_be_bytes());
    i
}

fn modify_q(send: bool, n: u32, cur: u64, next: u64) -> Vec<u8> {
    let op = if send { ifc::MLX5_CMD_OP_MODIFY_SQ } else { ifc::MLX5_CMD_OP_MODIFY_RQ };
    let mut i = cmd(op, 0, modify_sq_in::SIZE);
    if send {
        modify_sq_in::sq_state.set(&mut i, cur);
        modify_sq_in::sqn.set(&mut i, n as u64);
    } else {
        modify_rq_in::rq_state.set(&mut i, cur);
        modify_rq_in::rqn.set(&mut i, n as u64);
    }
    ctxf(if send { sqc::state } else { rqc::state }).set(&mut i, next);
    i
}

fn query_state(t: &mut Bench, send: bool, n: u32) -> u64 {
    let op = if send { ifc::MLX5_CMD_OP_QUERY_SQ } else { ifc::MLX5_CMD_OP_QUERY_RQ };
    let mut i = cmd(op, 0, 16);
    if send { ifc::query_sq_in::sqn } else { ifc::query_rq_in::rqn }.set(&mut i, n as u64);
    let o = t.ok(&i, ifc::query_sq_out::SIZE);
    ctxf(if send { sqc::state } else { rqc::state }).get(&o)
}

#[test]
fn sq_lifecycle_is_a_raw_packet_qp() {
    let mut p = port();
    let i = create_q(&p, true, 6);
    let sqn = obj(&p.t.ok(&i, 16));
    let qp = p.t.fw.core.engine.qp(sqn).expect("an engine QP");
    assert_eq!((qp.qp_type, qp.state, qp.send_cq, qp.recv_cq), (QpType::RawPacket, QpState::Reset, Some(p.cqn), None));
    let ctx = p.t.fw.core.engine.qp(sqn).map(|e| &e.ext).expect("its work queue");
    assert_eq!((ctx.sq_entries, ctx.rq_entries, ctx.dbr_addr, ctx.user_index), (64, 0, DBR, 0x55));
    assert_eq!(ctx.pas, vec![SQ_BUF]);
    let sq = p.t.fw.port.eth_test().queues.sq(sqn).unwrap();
    assert_eq!((sq.cqn, sq.tisn, sq.state), (p.cqn, p.tis, 0));
    // SQNs come from the QP number space: a second SQ is a different number.
    let sqn2 = obj(&p.t.ok(&create_q(&p, true, 4), 16));
    assert_ne!(sqn, sqn2);
    // RST -> RDY: engine RTS; the current state must be named right.
    assert_eq!(p.t.fails(&modify_q(true, sqn, 1, 1), 16).0, status::BAD_RES_STATE);
    p.t.ok(&modify_q(true, sqn, 0, 1), 16);
    assert_eq!(p.t.fw.core.engine.qp(sqn).unwrap().state, QpState::Rts);
    assert_eq!(query_state(&mut p.t, true, sqn), 1);
    // RDY -> ERR (what the error reporters read back), ERR -> RST -> RDY (recovery).
    p.t.ok(&modify_q(true, sqn, 1, 3), 16);
    assert_eq!((query_state(&mut p.t, true, sqn), p.t.fw.core.engine.qp(sqn).unwrap().state), (3, QpState::Err));
    assert_eq!(p.t.fails(&modify_q(true, sqn, 3, 1), 16).0, status::BAD_RES_STATE, "ERR -> RDY skips RST");
    p.t.ok(&modify_q(true, sqn, 3, 0), 16);
    p.t.ok(&modify_q(true, sqn, 0, 1), 16);
    assert_eq!(p.t.fails(&modify_q(true, sqn, 1, 2), 16).0, status::BAD_PARAM, "no state 2");
    // The TIS is in use while the SQ lives.
    let mut d = cmd(ifc::MLX5_CMD_OP_DESTROY_TIS, 0, 16);
    ifc::destroy_tis_in::tisn.set(&mut d, p.tis as u64);
    assert_eq!(p.t.fails(&d, 16).0, status::BAD_RES_STATE);
    // DESTROY_SQ without a prior ERR: everything gone.
    for n in [sqn, sqn2] {
        let mut i = cmd(ifc::MLX5_CMD_OP_DESTROY_SQ, 0, 16);
        ifc::destroy_sq_in::sqn.set(&mut i, n as u64);
        p.t.ok(&i, 16);
        assert!(p.t.fw.core.engine.qp(n).is_none());
        assert!(p.t.fw.port.eth_test().queues.sq(n).is_none());
        assert_eq!(p.t.fails(&i, 16).0, status::BAD_RES, "twice");
    }
    p.t.ok(&d, 16);
    let mut i = cmd(ifc::MLX5_CMD_OP_DEALLOC_TRANSPORT_DOMAIN, 0, 16);
    ifc::dealloc_transport_domain_in::transport_domain.set(&mut i, p.td as u64);
    p.t.ok(&i, 16);
}

#[test]
fn sq_and_rq_creation_checks() {
    let mut p = port();
    // A CQ, PD or TIS that does not exist; a striding (non-cyclic) wq; a WQEBB that is not 64 bytes.
    let mut i = create_q(&p, true, 6);
    ctxf(sqc::cqn).set(&mut i, 0x77);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_RES, "cqn");
    let mut i = create_q(&p, true, 6);
    wqf(wq::pd).set(&mut i, 0x99);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_RES, "pd");
    let mut i = create_q(&p, true, 6);
    ctxf(sqc::tis_num_0).set(&mut i, 0x42);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_RES, "tis");
    let mut i = create_q(&p, false, 6);
    wqf(wq::wq_type).set(&mut i, 2);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_PARAM, "wq_type");
    let mut i = create_q(&p, false, 6);
    ctxf(rqc::mem_rq_type).set(&mut i, 1);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_PARAM, "mem_rq_type");
    let mut i = create_q(&p, true, 6);
    wqf(wq::log_wq_stride).set(&mut i, 5);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_PARAM, "SQ stride");
    let mut i = create_q(&p, true, 31);
    wqf(wq::log_wq_sz).set(&mut i, 31);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_PARAM, "size");
    // A page list shorter than the queue needs: 2^12 64-byte WQEBBs need 64 pages.
    let i = create_q(&p, true, 12);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_INP_LEN, "pas");
    let mut i = create_q(&p, false, 6);
    ctxf(rqc::counter_set_id).set(&mut i, 5);
    assert_eq!(p.t.fails(&i, 16).0, status::BAD_RES, "no such Q counter");
    // Nothing was left behind by the refusals.
    assert_eq!(p.t.fw.core.engine.counts().qps, 0);
    assert!(p.t.fw.port.eth_test().queues.sqs.is_empty() && p.t.fw.port.eth_test().queues.rqs.is_empty());
}

#[test]
fn rq_lifecycle_vsd_and_q_counters() {
    let mut p = port();
    // mlx5e's two Q counters: non-zero ids.
    let a = ifc::alloc_q_counter_out::counter_set_id.get(&p.t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_Q_COUNTER, 0, 16), 16));
    let b = ifc::alloc_q_counter_out::counter_set_id.get(&p.t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_Q_COUNTER, 0, 16), 16));
    assert!(a != 0 && b != 0 && a != b, "{a} {b}");
    // The drop RQ as mlx5e_build_drop_rq_param makes it: log_wq_sz 0, no PD, counting into the second
    // counter.
    let mut i = create_q(&p, false, 0);
    ctxf(rqc::counter_set_id).set(&mut i, b);
    wqf(wq::pd).set(&mut i, 0);
    let rqn = obj(&p.t.ok(&i, 16));
    let ctx = p.t.fw.core.engine.qp(rqn).map(|e| &e.ext).unwrap();
    assert_eq!((ctx.rq_entries, ctx.rq_stride, ctx.sq_entries), (1, 16, 0));
    let rq = p.t.fw.port.eth_test().queues.rq(rqn).unwrap().clone();
    assert_eq!((rq.cqn, rq.vsd, rq.counter_set_id, rq.state), (p.cqn, true, b as u8, 0));
    assert_eq!(p.t.fw.core.engine.qp(rqn).unwrap().recv_cq, Some(p.cqn));
    p.t.ok(&modify_q(false, rqn, 0, 1), 16);
    assert_eq!(query_state(&mut p.t, false, rqn), 1);
    // MODIFY_RQ RDY -> RDY with the VSD bit (ethtool rxvlan): only the selected field changes.
    let mut m = modify_q(false, rqn, 1, 1);
    modify_rq_in::modify_bitmask.set(&mut m, ifc::MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_VSD as u64);
    ctxf(rqc::counter_set_id).set(&mut m, a);
    p.t.ok(&m, 16);
    let rq = p.t.fw.port.eth_test().queues.rq(rqn).unwrap();
    assert_eq!((rq.vsd, rq.counter_set_id), (false, b as u8));
    modify_rq_in::modify_bitmask.set(&mut m, ifc::MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_SCATTER_FCS as u64);
    assert_eq!(p.t.fails(&m, 16).0, status::BAD_PARAM, "scatter FCS is not offered");
    // The data path's out-of-buffer count reads back through QUERY_Q_COUNTER, then clears.
    p.t.fw.port.eth_test().queues.q_counter_out_of_buffer(b as u8);
    p.t.fw.port.eth_test().queues.q_counter_out_of_buffer(b as u8);
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_Q_COUNTER, 0, ifc::query_q_counter_in::SIZE);
    ifc::query_q_counter_in::counter_set_id.set(&mut q, b);
    ifc::query_q_counter_in::clear.set(&mut q, 1);
    let o = p.t.ok(&q, ifc::query_q_counter_out::SIZE);
    assert_eq!(&o[0x30..0x34], &2u32.to_be_bytes(), "out_of_buffer at 0x30");
    let o = p.t.ok(&q, ifc::query_q_counter_out::SIZE);
    assert_eq!(ifc::query_q_counter_out::out_of_buffer.get(&o), 0);
    // A counter an RQ counts into cannot go; after DESTROY_RQ it can.
    let mut d = cmd(ifc::MLX5_CMD_OP_DEALLOC_Q_COUNTER, 0, 16);
    ifc::dealloc_q_counter_in::counter_set_id.set(&mut d, b);
    assert_eq!(p.t.fails(&d, 16).0, status::BAD_RES_STATE);
    let mut i = cmd(ifc::MLX5_CMD_OP_DESTROY_RQ, 0, 16);
    ifc::destroy_rq_in::rqn.set(&mut i, rqn as u64);
    p.t.ok(&i, 16);
    p.t.ok(&d, 16);
    assert_eq!(p.t.fails(&d, 16).0, status::BAD_RES);
    ifc::query_q_counter_in::counter_set_id.set(&mut q, 0);
    assert_eq!(p.t.fails(&q, 16).0, status::BAD_RES, "id 0 is never a counter");
    // Q counters run out at max_qp_cnt.
    let mut n = 1;
    while p.t.run_raw(&cmd(ifc::MLX5_CMD_OP_ALLOC_Q_COUNTER, 0, 16), 16).0 == 0 {
        n += 1;
    }
    assert_eq!(n, crate::eth::queues::MAX_Q_COUNTERS);
}
