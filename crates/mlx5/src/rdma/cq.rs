//! CQ commands: CREATE/DESTROY/QUERY/MODIFY_CQ. The engine keeps the CQ's
//! counters; this layer keeps its mlx5 context (buffer, doorbell record).

use crate::cmd::req::{eng, fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::cmd::syndrome;
use crate::datapath::{CqCtx, CQ_ARM_UNSET};
use crate::devx::umem::{Placing, QueueBuf};
use crate::ifc::{self, rdma_core};
use crate::queue_buf::{page_offset_bytes, pages_for};
use crate::rdma::RdmaCx;

pub fn create_cq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::create_cq_in::cq_context as c;
    r.need(ifc::create_cq_in::SIZE)?;
    let cqe_size = match c::cqe_sz.get(r.input) {
        0 => 64,
        1 | 2 => 128,
        _ => return Err(fail!(status::BAD_PARAM, CREATE_CQ_BAD_PARAM)),
    };
    if c::cqe_comp_en.get(r.input) != 0 || c::cc.get(r.input) != 0 || c::apu_cq.get(r.input) != 0 {
        // CQE compression, collapsed and APU CQs are not offered.
        return Err(fail!(status::BAD_PARAM, CREATE_CQ_BAD_PARAM_2));
    }
    let log_size = c::log_cq_size.get(r.input) as u8;
    let log_page_size = c::log_page_size.get(r.input) as u8;
    if log_page_size > 18 {
        return Err(fail!(status::BAD_PARAM, CREATE_CQ_BAD_PARAM_3));
    }
    let page_offset = page_offset_bytes(c::page_offset.get(r.input), log_page_size);
    let eqn = c::c_eqn_or_apu_element.get(r.input) as u32;
    let uar = c::uar_page.get(r.input) as u32;
    if !cx.hca.uar_allocated(uar) {
        return Err(fail!(status::BAD_RES, CREATE_CQ_BAD_RES));
    }
    if log_size > cx.core.engine.limits().log_max_cq_size {
        return Err(fail!(status::BAD_PARAM, CREATE_CQ_BAD_PARAM_4));
    }
    let bytes = (cqe_size as u64) << log_size;
    // The buffer and the doorbell record: in the mailbox, or (DevX) in the process's umems; the
    // device writes both (the CQEs, the record's arm word at create).
    let mut place = Placing::new(cx.umems, r.uid, syndrome::CREATE_CQ_UMEM, syndrome::CREATE_CQ_UMEM_RANGE);
    let in_umem = r.get(ifc::create_cq_in::cq_umem_valid) != 0;
    let at = (r.get(rdma_core::create_cq_in::cq_umem_id) as u32, r.get(rdma_core::create_cq_in::cq_umem_offset));
    let QueueBuf { pas, log_page_size, page_offset } = place.queue(in_umem, at, bytes, true, || {
        let pas = r.pas(ifc::create_cq_in::pas, pages_for(bytes, log_page_size, page_offset))?;
        Ok(QueueBuf { pas, log_page_size, page_offset })
    })?;
    let (in_umem, id) = (c::dbr_umem_valid.get(r.input) != 0, r.get(rdma_core::create_cq_in::dbr_umem_id));
    let dbr_addr = place.dbr(in_umem, id as u32, c::dbr_addr.get(r.input), true)?;
    let umems = place.held;
    let cqc = r.sub(ifc::create_cq_in::cq_context)?;
    if !cx.core.eqs.contains(eqn) {
        return Err(fail!(status::BAD_RES, CREATE_CQ_ENGINE));
    }
    let ctx = CqCtx {
        cqc,
        pas,
        cqe_size,
        log_page_size,
        page_offset,
        dbr_addr,
        eqn,
        uar,
        arming: Default::default(),
        uid: r.uid,
        umems,
    };
    let cqn = eng!(cx.core.engine.create_cq_with(log_size, ctx), CREATE_CQ_ENGINE)?;
    if let Some(cq) = cx.core.engine.cq_mut(cqn) {
        cq.period = c::cq_period.get(r.input) as u16;
        cq.max_count = c::cq_max_count.get(r.input) as u16;
    }
    // Mark the arm doorbell record "never armed" (the driver zeroed it, and
    // its first arm word, sn 0 / next / ci 0, is 0 too): the poll-mode scan
    // finds a first arm whose UAR store another CQ's arm overwrote.
    if cx.core.mem.write(dbr_addr.wrapping_add(4), &CQ_ARM_UNSET.to_be_bytes()).is_err() {
        tracing::debug!(cqn, dbr_addr, "CQ doorbell record outside guest memory");
    }
    cx.core.pending.cq_dbr(cqn, Some(dbr_addr));
    let mut o = out(ifc::create_cq_out::SIZE);
    ifc::create_cq_out::cqn.set(&mut o, cqn as u64);
    Ok(o)
}

pub fn destroy_cq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let cqn = r.get(ifc::destroy_cq_in::cqn) as u32;
    eng!(cx.core.engine.destroy_cq(cqn), DESTROY_CQ_ENGINE)?;
    cx.core.pending.cq_dbr(cqn, None);
    Ok(out(ifc::destroy_cq_out::SIZE))
}

pub fn query_cq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_cq_out::cq_context as c;
    let cqn = r.get(ifc::query_cq_in::cqn) as u32;
    cx.core.refresh_cq(cqn);
    let ctx = cx.core.engine.cq(cqn).map(|e| &e.ext).ok_or(fail!(status::BAD_RES, QUERY_CQ_BAD_RES))?;
    let cq = cx.core.engine.cq(cqn).ok_or(fail!(status::BAD_RES, QUERY_CQ_BAD_RES_2))?;
    let mut o = out(ifc::query_cq_out::SIZE);
    let range = ifc::query_cq_out::cq_context.byte_range().ok_or(fail!(status::INT_ERR, QUERY_CQ_INT_ERR))?;
    o[range].copy_from_slice(&ctx.cqc);
    c::consumer_counter.set(&mut o, (cq.consumer & 0x00ff_ffff) as u64);
    c::producer_counter.set(&mut o, (cq.producer & 0x00ff_ffff) as u64);
    c::cq_period.set(&mut o, cq.period as u64);
    c::cq_max_count.set(&mut o, cq.max_count as u64);
    c::status.set(&mut o, if cq.overrun { 0x9 } else { 0 });
    Ok(o)
}

/// `modify_field_select` bits of MODIFY_CQ (`MLX5_CQ_MODIFY_*`).
const MODIFY_PERIOD: u64 = 1 << 0;
const MODIFY_COUNT: u64 = 1 << 1;

pub fn modify_cq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::modify_cq_in::cq_context as c;
    r.need(ifc::modify_cq_in::SIZE)?;
    let cqn = r.get(ifc::modify_cq_in::cqn) as u32;
    let select = r.get(ifc::modify_cq_in::modify_field_select_resize_field_select);
    match r.op_mod {
        // MLX5_CQ_OPMOD_MODIFY: moderation.
        0 => {
            let cq = cx.core.engine.cq_mut(cqn).ok_or(fail!(status::BAD_RES, MODIFY_CQ_BAD_RES))?;
            if select & MODIFY_PERIOD != 0 {
                cq.period = c::cq_period.get(r.input) as u16;
            }
            if select & MODIFY_COUNT != 0 {
                cq.max_count = c::cq_max_count.get(r.input) as u16;
            }
            cx.core.stats.cq_moder_changes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // MLX5_CQ_OPMOD_RESIZE: new size and buffer.
        1 => return crate::datapath::cq_resize::resize_cq(cx, r, cqn),
        _ => return Err(fail!(status::BAD_PARAM, MODIFY_CQ_BAD_PARAM)),
    }
    Ok(out(ifc::modify_cq_out::SIZE))
}
