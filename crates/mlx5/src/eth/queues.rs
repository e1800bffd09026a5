//! Transport domains, TISes, Q counters, SQ and RQ objects (owner: eth-cmd).
//!
//! An SQ or an RQ is an engine QP of type `RawPacket` (SQNs, RQNs and QPNs share one number space: a
//! send doorbell carries only the number) with an `rdma::QpCtx` describing its work queue, plus the
//! Ethernet extras kept here ([`EthSq`], [`EthRq`]). SQ/RQ state RST/RDY/ERR is the engine QP's
//! Reset/Rts/Err. The data path finds them with [`EthQueues::sq`] / [`EthQueues::rq`] and the
//! work queue in the engine's QP entry. Commands run under the firmware lock with the data path drained, so
//! once DESTROY_SQ/RQ returns no DMA touches the queue's buffers again.

pub use super::queue_state::{EthQueues, EthRq, EthSq, QCounter, Tis, MAX_Q_COUNTERS, MAX_TDS, MAX_TISES};
use super::EthCx;
use crate::cmd::dispatch::{command, Command};
use crate::cmd::req::{eng, fail, out, CmdErr, CmdResult, Req};
use crate::cmd::status;
use crate::cmd::syndrome;
use crate::core::MlxEngine;
use crate::devx::umem::{Placing, QueueBuf};
use crate::fields::Field;
use crate::firmware::Firmware;
use crate::ifc::{
    self, create_rq_in, create_sq_in, modify_rq_in, modify_sq_in, query_rq_out, query_sq_out, rqc, sqc, wq,
};
use crate::ifc::{MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_RQ_COUNTER_SET_ID, MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_VSD};
use crate::ifc::{MLX5_SQC_STATE_ERR, MLX5_SQC_STATE_RDY, MLX5_SQC_STATE_RST};
use crate::queue_buf::{page_offset_bytes, pages_for};
use crate::rdma::state::QpCtx;
use crate::roce::qcounters;
use vrnic_engine::{QpCreate, QpState, QpType};

// What the SQ and RQ code shares: an SQ's layouts are read for both (`sqc`/`rqc` states, contexts,
// wqs and page lists at the same places).
const _: () = {
    assert!(MLX5_SQC_STATE_RST == ifc::MLX5_RQC_STATE_RST);
    assert!(MLX5_SQC_STATE_RDY == ifc::MLX5_RQC_STATE_RDY);
    assert!(MLX5_SQC_STATE_ERR == ifc::MLX5_RQC_STATE_ERR);
    assert!(create_sq_in::ctx.bit_off == create_rq_in::ctx.bit_off);
    assert!(create_sq_in::ctx::wq.bit_off == create_rq_in::ctx::wq.bit_off);
    assert!(create_sq_in::ctx::wq::pas.bit_off == create_rq_in::ctx::wq::pas.bit_off);
    assert!(create_sq_in::SIZE == create_rq_in::SIZE);
    assert!(query_sq_out::sq_context.bit_off == query_rq_out::rq_context.bit_off);
    assert!(query_sq_out::SIZE == query_rq_out::SIZE);
};

fn state_of(s: u64) -> Option<QpState> {
    match s as u32 {
        MLX5_SQC_STATE_RST => Some(QpState::Reset),
        MLX5_SQC_STATE_RDY => Some(QpState::Rts),
        MLX5_SQC_STATE_ERR => Some(QpState::Err),
        _ => None,
    }
}

// ---- transport domains, TISes, Q counters ----

pub fn alloc_transport_domain(cx: &mut EthCx<'_>, _r: &Req<'_>) -> CmdResult {
    let td = cx.eth.queues.tds.alloc_lowest_with(|_| ()).ok_or(fail!(status::LIM, ALLOC_TRANSPORT_DOMAIN_LIM))?;
    let mut o = out(16);
    ifc::alloc_transport_domain_out::transport_domain.set(&mut o, td as u64);
    Ok(o)
}

pub fn dealloc_transport_domain(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    let td = r.get(ifc::dealloc_transport_domain_in::transport_domain) as u32;
    if cx.eth.queues.tises.iter().any(|(_, t)| t.transport_domain == td) {
        return Err(fail!(status::BAD_RES_STATE, DEALLOC_TRANSPORT_DOMAIN_BUSY));
    }
    cx.eth.queues.tds.remove(td).ok_or(fail!(status::BAD_RES, DEALLOC_TRANSPORT_DOMAIN_BAD_RES))?;
    Ok(out(16))
}

pub fn create_tis(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(ifc::create_tis_in::SIZE)?;
    let td = r.get(ifc::create_tis_in::ctx::transport_domain) as u32;
    if !cx.eth.queues.tds.contains(td) {
        return Err(fail!(status::BAD_RES, CREATE_TIS_BAD_TD));
    }
    let tis = Tis { prio: r.get(ifc::create_tis_in::ctx::prio) as u8, transport_domain: td };
    let n = cx.eth.queues.tises.alloc_lowest_with(|_| tis).ok_or(fail!(status::LIM, CREATE_TIS_LIM))?;
    let mut o = out(16);
    ifc::create_tis_out::tisn.set(&mut o, n as u64);
    Ok(o)
}

pub fn destroy_tis(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::destroy_tis_in::tisn) as u32;
    if cx.eth.queues.sqs.values().any(|s| s.tisn == n) {
        return Err(fail!(status::BAD_RES_STATE, DESTROY_TIS_BUSY));
    }
    cx.eth.queues.tises.remove(n).ok_or(fail!(status::BAD_RES, DESTROY_TIS_BAD_RES))?;
    Ok(out(16))
}

pub fn alloc_q_counter(cx: &mut EthCx<'_>, _r: &Req<'_>) -> CmdResult {
    let id = cx.eth.queues.q_counters.alloc_lowest_with(|_| QCounter::default());
    let id = id.ok_or(fail!(status::LIM, ALLOC_Q_COUNTER_LIM))?;
    let mut o = out(ifc::alloc_q_counter_out::SIZE);
    ifc::alloc_q_counter_out::counter_set_id.set(&mut o, id as u64);
    cx.roce.q_sets().forget(id as u8);
    Ok(o)
}

pub fn dealloc_q_counter(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    let id = r.get(ifc::dealloc_q_counter_in::counter_set_id) as u32;
    if cx.eth.queues.rqs.values().any(|q| q.counter_set_id as u32 == id) {
        return Err(fail!(status::BAD_RES_STATE, DEALLOC_Q_COUNTER_BUSY));
    }
    cx.eth.queues.q_counters.remove(id).ok_or(fail!(status::BAD_RES, DEALLOC_Q_COUNTER_BAD_RES))?;
    Ok(out(16))
}

pub fn query_q_counter(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_q_counter_in as i;
    if r.get(i::other_vport) != 0 || r.get(i::aggregate) != 0 {
        return Err(fail!(status::BAD_PARAM, QUERY_Q_COUNTER_BAD_PARAM));
    }
    let id = r.get(i::counter_set_id) as u32;
    let clear = r.get(i::clear) != 0;
    cx.eth.queues.q_counters.get(id).ok_or(fail!(status::BAD_RES, QUERY_Q_COUNTER_BAD_RES))?;
    // The RDMA QPs' counts of this set (RoCE), then the Ethernet RQs' out_of_buffer on top.
    let rdma = cx.roce.q_sets().query(&cx.core.engine, id as u8, clear);
    let c = cx.eth.queues.q_counters.get_mut(id).ok_or(fail!(status::BAD_RES, QUERY_Q_COUNTER_BAD_RES))?;
    let mut o = out(ifc::query_q_counter_out::SIZE);
    for ((f, _), v) in qcounters::FIELDS.iter().zip(rdma) {
        f.set(&mut o, v.min(u32::MAX as u64));
    }
    let oob = ifc::query_q_counter_out::out_of_buffer;
    let total = (oob.get(&o) + c.out_of_buffer as u64).min(u32::MAX as u64);
    oob.set(&mut o, total);
    if clear {
        *c = QCounter::default();
    }
    Ok(o)
}

// ---- SQ and RQ ----

/// What CREATE_SQ and CREATE_RQ share: the wq, its buffer and the engine QP.
struct WorkQueue {
    qpn: u32,
    ctx: Vec<u8>,
}

/// Parses the `wq` of a CREATE_SQ/CREATE_RQ and creates the `RawPacket` engine QP with its
/// `rdma::QpCtx`. `send`: an SQ (64-byte WQEBBs, send CQ) or an RQ (`stride` from the wq, receive CQ).
fn create_wq(cx: &mut EthCx<'_>, r: &Req<'_>, send: bool, cqn: u32) -> Result<WorkQueue, CmdErr> {
    r.need(create_sq_in::SIZE)?;
    let ctx = r.input[create_sq_in::ctx.byte_off()..create_sq_in::ctx.byte_end()].to_vec();
    let w = |f: Field| r.get(create_sq_in::ctx::wq.inner(f));
    if w(wq::wq_type) != ifc::MLX5_WQ_TYPE_CYCLIC as u64 {
        return Err(fail!(status::BAD_PARAM, ETH_WQ_BAD_TYPE));
    }
    let log_wq_sz = w(wq::log_wq_sz) as u8;
    let log_stride = w(wq::log_wq_stride) as u32;
    let log_page_size = w(wq::log_wq_pg_sz) as u8;
    let stride_ok = if send { log_stride == 6 } else { (4..=11).contains(&log_stride) };
    if !stride_ok || log_wq_sz > cx.core.engine.limits().log_max_qp_size || log_page_size > 18 {
        return Err(fail!(status::BAD_PARAM, ETH_WQ_BAD_SIZE));
    }
    let entries = 1u32 << log_wq_sz;
    let stride = 1usize << log_stride;
    let bytes = entries as u64 * stride as u64;
    // The buffer: a page list, or a range of one of the process's umems (DevX).
    let mut place = Placing::new(cx.umems, r.uid, syndrome::ETH_WQ_UMEM, syndrome::ETH_WQ_UMEM_RANGE);
    let at = (w(wq::wq_umem_id) as u32, w(wq::wq_umem_offset));
    let QueueBuf { pas, log_page_size, page_offset } =
        place.queue(w(wq::wq_umem_valid) != 0, at, bytes, false, || {
            let page_offset = page_offset_bytes(w(wq::page_offset), log_page_size);
            let pas = r.pas(create_sq_in::ctx::wq::pas, pages_for(bytes, log_page_size, page_offset))?;
            Ok(QueueBuf { pas, log_page_size, page_offset })
        })?;
    // The doorbell record: a guest address, or an offset in a umem.
    let in_umem = w(wq::dbr_umem_valid) != 0;
    let dbr_addr = place.dbr(in_umem, w(wq::dbr_umem_id) as u32, w(wq::dbr_addr), false)?;
    let umems = place.held;
    let pd = w(wq::pd) as u32;
    let create = QpCreate {
        qp_type: QpType::RawPacket,
        pd,
        send_cq: send.then_some(cqn),
        recv_cq: (!send).then_some(cqn),
        srq: None,
        xrcd: None,
        log_sq_size: if send { log_wq_sz } else { 0 },
        log_rq_size: if send { 0 } else { log_wq_sz },
        sq_sig_all: false,
        uid: r.uid,
    };
    let user_index = if send { sqc::user_index.get(&ctx) } else { rqc::user_index.get(&ctx) } as u32;
    let qp_ctx = QpCtx {
        created: ctx.clone(),
        qpc: ctx.clone(),
        pas,
        st: ST_RAW,
        uar: w(wq::uar_page) as u32,
        user_index,
        dbr_addr,
        log_page_size,
        page_offset,
        rq_stride: if send { 0 } else { stride },
        rq_entries: if send { 0 } else { entries },
        sq_entries: if send { entries } else { 0 },
        mcast: Default::default(),
        sq_ci: 0,
        rq_ci: 0,
        rq_flush_until: 0,
        umems,
    };
    let qpn = eng!(cx.core.engine.create_qp_with(create, qp_ctx), ETH_WQ_ENGINE)?;
    Ok(WorkQueue { qpn, ctx })
}

/// `QpCtx.st` of an Ethernet SQ/RQ (`MLX5_QP_ST_RAW_ETHERTYPE`; no QP command accepts it).
pub const ST_RAW: u8 = 0x6;

fn check_cq(cx: &EthCx<'_>, cqn: u32) -> Result<(), CmdErr> {
    if cx.core.engine.cq(cqn).is_none() {
        return Err(fail!(status::BAD_RES, ETH_WQ_BAD_CQ));
    }
    Ok(())
}

pub fn create_sq(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(create_sq_in::SIZE)?;
    let c = &r.input[create_sq_in::ctx.byte_off()..create_sq_in::ctx::wq.byte_off()];
    let cqn = sqc::cqn.get(c) as u32;
    let tisn = sqc::tis_num_0.get(c) as u32;
    check_cq(cx, cqn)?;
    if sqc::state.get(c) != MLX5_SQC_STATE_RST as u64 || sqc::tis_lst_sz.get(c) > 1 {
        return Err(fail!(status::BAD_PARAM, CREATE_SQ_BAD_PARAM));
    }
    if tisn != 0 && !cx.eth.queues.tises.contains(tisn) {
        return Err(fail!(status::BAD_RES, CREATE_SQ_BAD_TIS));
    }
    let min_wqe_inline_mode = sqc::min_wqe_inline_mode.get(c) as u8;
    let q = create_wq(cx, r, true, cqn)?;
    cx.eth.queues.sqs.insert(q.qpn, EthSq { cqn, tisn, state: 0, min_wqe_inline_mode, ctx: q.ctx });
    let mut o = out(16);
    ifc::create_sq_out::sqn.set(&mut o, q.qpn as u64);
    Ok(o)
}

pub fn create_rq(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(create_rq_in::SIZE)?;
    let c = &r.input[create_rq_in::ctx.byte_off()..create_rq_in::ctx::wq.byte_off()];
    let cqn = rqc::cqn.get(c) as u32;
    check_cq(cx, cqn)?;
    if rqc::mem_rq_type.get(c) != ifc::MLX5_RQC_MEM_RQ_TYPE_MEMORY_RQ_INLINE as u64
        || rqc::state.get(c) != ifc::MLX5_RQC_STATE_RST as u64
    {
        return Err(fail!(status::BAD_PARAM, CREATE_RQ_BAD_PARAM));
    }
    let counter_set_id = rqc::counter_set_id.get(c) as u8;
    if counter_set_id != 0 && !cx.eth.queues.q_counters.contains(counter_set_id as u32) {
        return Err(fail!(status::BAD_RES, CREATE_RQ_BAD_COUNTER));
    }
    let vsd = rqc::vsd.get(c) != 0;
    let q = create_wq(cx, r, false, cqn)?;
    cx.eth.queues.rqs.insert(q.qpn, EthRq { cqn, vsd, counter_set_id, state: 0, ctx: q.ctx });
    let mut o = out(16);
    ifc::create_rq_out::rqn.set(&mut o, q.qpn as u64);
    Ok(o)
}

/// MODIFY_SQ/RQ's state change: `cur` must be the queue's state; RDY→ERR flushes the queue's
/// outstanding WQEs, →RST rewinds its consumer counters.
fn change_state(cx: &mut EthCx<'_>, qpn: u32, cur: u8, next: u64) -> Result<u8, CmdErr> {
    let target = state_of(next).ok_or(fail!(status::BAD_PARAM, ETH_MODIFY_Q_BAD_STATE))?;
    let (from, to) = (cur as u32, next as u32);
    let legal = matches!((from, to), (MLX5_SQC_STATE_RST, MLX5_SQC_STATE_RDY | MLX5_SQC_STATE_RST))
        || matches!(
            (from, to),
            (MLX5_SQC_STATE_RDY, _) | (MLX5_SQC_STATE_ERR, MLX5_SQC_STATE_RST | MLX5_SQC_STATE_ERR)
        );
    if !legal {
        return Err(fail!(status::BAD_RES_STATE, ETH_MODIFY_Q_BAD_TRANSITION));
    }
    eng!(cx.core.engine.set_raw_state(qpn, target), ETH_MODIFY_Q_ENGINE)?;
    match target {
        QpState::Err if cur as u32 != MLX5_SQC_STATE_ERR => cx.core.entered_err.push(qpn),
        QpState::Reset => {
            if let Some(ctx) = cx.core.engine.qp_mut(qpn).map(|e| &mut e.ext) {
                ctx.sq_ci = 0;
                ctx.rq_ci = 0;
            }
        }
        _ => {}
    }
    Ok(next as u8)
}

pub fn modify_sq(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(modify_sq_in::ctx::wq.byte_off())?;
    let sqn = r.get(modify_sq_in::sqn) as u32;
    let sq = cx.eth.queues.sq(sqn).ok_or(fail!(status::BAD_RES, MODIFY_SQ_BAD_RES))?;
    let cur = sq.state;
    if r.get(modify_sq_in::sq_state) != cur as u64 {
        return Err(fail!(status::BAD_RES_STATE, MODIFY_SQ_BAD_CUR_STATE));
    }
    if r.get(modify_sq_in::modify_bitmask) != 0 {
        // Rate limit and hairpin are not offered: nothing of an SQ but its state is modifiable.
        return Err(fail!(status::BAD_PARAM, MODIFY_SQ_BAD_BITMASK));
    }
    let next = sqc::state.get(&r.input[modify_sq_in::ctx.byte_off()..modify_sq_in::ctx::wq.byte_off()]);
    let s = change_state(cx, sqn, cur, next)?;
    if let Some(sq) = cx.eth.queues.sqs.get_mut(&sqn) {
        sq.state = s;
    }
    Ok(out(16))
}

pub fn modify_rq(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(modify_rq_in::ctx::wq.byte_off())?;
    let rqn = r.get(modify_rq_in::rqn) as u32;
    let rq = cx.eth.queues.rq(rqn).ok_or(fail!(status::BAD_RES, MODIFY_RQ_BAD_RES))?;
    let cur = rq.state;
    if r.get(modify_rq_in::rq_state) != cur as u64 {
        return Err(fail!(status::BAD_RES_STATE, MODIFY_RQ_BAD_CUR_STATE));
    }
    let c = &r.input[modify_rq_in::ctx.byte_off()..modify_rq_in::ctx::wq.byte_off()];
    let mask = r.get(modify_rq_in::modify_bitmask);
    if mask & !(MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_VSD | MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_RQ_COUNTER_SET_ID) as u64 != 0 {
        return Err(fail!(status::BAD_PARAM, MODIFY_RQ_BAD_BITMASK));
    }
    let counter = rqc::counter_set_id.get(c) as u8;
    if mask & MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_RQ_COUNTER_SET_ID as u64 != 0
        && counter != 0
        && !cx.eth.queues.q_counters.contains(counter as u32)
    {
        return Err(fail!(status::BAD_RES, MODIFY_RQ_BAD_COUNTER));
    }
    let vsd = rqc::vsd.get(c) != 0;
    let s = change_state(cx, rqn, cur, rqc::state.get(c))?;
    if let Some(rq) = cx.eth.queues.rqs.get_mut(&rqn) {
        rq.state = s;
        if mask & MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_VSD as u64 != 0 {
            rq.vsd = vsd;
        }
        if mask & MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_RQ_COUNTER_SET_ID as u64 != 0 {
            rq.counter_set_id = counter;
        }
    }
    Ok(out(16))
}

/// True when `rqn` is an Ethernet RQ (a RawPacket engine QP with a receive queue).
pub(crate) fn is_eth_rq(engine: &MlxEngine, rqn: u32) -> bool {
    engine.qp(rqn).is_some_and(|q| q.qp_type == QpType::RawPacket && q.ext.rq_entries != 0)
}

/// Removes the engine QP and its contexts. The command runs with the data path drained and holds
/// the firmware: after it no doorbell, frame or flush reaches the queue.
fn destroy_wq(cx: &mut EthCx<'_>, qpn: u32) -> Result<(), CmdErr> {
    eng!(cx.core.engine.destroy_qp(qpn), ETH_DESTROY_Q_ENGINE)?;
    Ok(())
}

pub fn destroy_sq(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    let sqn = r.get(ifc::destroy_sq_in::sqn) as u32;
    if cx.eth.queues.sq(sqn).is_none() {
        return Err(fail!(status::BAD_RES, DESTROY_SQ_BAD_RES));
    }
    destroy_wq(cx, sqn)?;
    cx.eth.queues.sqs.remove(&sqn);
    cx.eth.tx.remove_sq(sqn);
    Ok(out(16))
}

pub fn destroy_rq(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    let rqn = r.get(ifc::destroy_rq_in::rqn) as u32;
    if cx.eth.queues.rq(rqn).is_none() {
        return Err(fail!(status::BAD_RES, DESTROY_RQ_BAD_RES));
    }
    destroy_wq(cx, rqn)?;
    cx.eth.queues.rqs.remove(&rqn);
    Ok(out(16))
}

fn query_out(ctx: &[u8], state_field: Field, state: u8) -> Vec<u8> {
    let mut o = out(query_sq_out::SIZE);
    o[query_sq_out::sq_context.byte_off()..query_sq_out::sq_context.byte_end()].copy_from_slice(ctx);
    query_sq_out::sq_context.inner(state_field).set(&mut o, state as u64);
    o
}

pub fn query_sq(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    let sq = cx.eth.queues.sq(r.get(ifc::query_sq_in::sqn) as u32).ok_or(fail!(status::BAD_RES, QUERY_SQ_BAD_RES))?;
    Ok(query_out(&sq.ctx, sqc::state, sq.state))
}

pub fn query_rq(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    let rq = cx.eth.queues.rq(r.get(ifc::query_rq_in::rqn) as u32).ok_or(fail!(status::BAD_RES, QUERY_RQ_BAD_RES))?;
    Ok(query_out(&rq.ctx, rqc::state, rq.state))
}

/// The queue commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN, Enabled, eth_cx => alloc_transport_domain),
    command!(MLX5_CMD_OP_DEALLOC_TRANSPORT_DOMAIN, Enabled, eth_cx => dealloc_transport_domain),
    command!(MLX5_CMD_OP_CREATE_TIS, Enabled, eth_cx => create_tis),
    command!(MLX5_CMD_OP_DESTROY_TIS, Enabled, eth_cx => destroy_tis),
    command!(MLX5_CMD_OP_ALLOC_Q_COUNTER, Enabled, eth_cx => alloc_q_counter),
    command!(MLX5_CMD_OP_DEALLOC_Q_COUNTER, Enabled, eth_cx => dealloc_q_counter),
    command!(MLX5_CMD_OP_QUERY_Q_COUNTER, Enabled, eth_cx => query_q_counter),
    command!(MLX5_CMD_OP_CREATE_SQ, Enabled, eth_cx => create_sq),
    command!(MLX5_CMD_OP_MODIFY_SQ, Enabled, eth_cx => modify_sq),
    command!(MLX5_CMD_OP_DESTROY_SQ, Enabled, eth_cx => destroy_sq),
    command!(MLX5_CMD_OP_QUERY_SQ, Enabled, eth_cx => query_sq),
    command!(MLX5_CMD_OP_CREATE_RQ, Enabled, eth_cx => create_rq),
    command!(MLX5_CMD_OP_MODIFY_RQ, Enabled, eth_cx => modify_rq),
    command!(MLX5_CMD_OP_DESTROY_RQ, Enabled, eth_cx => destroy_rq),
    command!(MLX5_CMD_OP_QUERY_RQ, Enabled, eth_cx => query_rq),
];
