//! CQ resize: MODIFY_CQ with op_mod `MLX5_CQ_OPMOD_RESIZE`, as mlx5_ib
//! issues it for `ibv_resize_cq` (user CQs, the driver's `resize_user`) and
//! `ib_resize_cq` (kernel CQs, `resize_kernel`).
//!
//! What ConnectX hardware does, and what both drivers rely on: the command
//! writes one `MLX5_CQE_RESIZE_CQ` CQE into the OLD buffer at the producer
//! index (owner bit of the old size) and counts it as a produced CQE; every
//! later CQE goes to the NEW buffer at its continuing index, with the owner
//! bit of the new size. The CQEs not yet polled stay where they are: the
//! driver (libmlx5 `mlx5_cq_resize_copy_cqes`, the kernel's
//! `copy_resize_cqes`, or the kernel's poll loop meeting the resize CQE)
//! copies each old CQE `i` to new slot `i + 1` up to the resize CQE, then
//! steps its consumer index over it, so the application sees every
//! unpolled completion, in order, and the hardware's next CQE right after.

use tracing::debug;

use super::cqe::{op, Cqe};
use super::ctx::CqeWriteError;
use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ifc;
use crate::queue_buf::{page_offset_bytes, pages_for};
use crate::rdma::RdmaCx;

/// `resize_field_select` bits (`MLX5_MODIFY_CQ_MASK_*`).
pub const MASK_LOG_SIZE: u64 = 1 << 0;
pub const MASK_PG_OFFSET: u64 = 1 << 1;
pub const MASK_PG_SIZE: u64 = 1 << 2;

/// MODIFY_CQ, op_mod RESIZE. The CQE size cannot change (the context's
/// `cqe_sz` is not looked at: mlx5_ib sends the current one).
///
/// Refused: no LOG_SIZE select bit, unknown select bits, a size above
/// `log_max_cq_sz`, a page size above 1 GiB, or a new size that cannot hold
/// the CQEs not yet polled plus the resize CQE (BAD_PARAM); a CQ in overrun,
/// or one so full that the old buffer has no slot for the resize CQE
/// (BAD_RES_STATE); an unknown CQ (BAD_RES).
pub fn resize_cq(cx: &mut RdmaCx<'_>, r: &Req<'_>, cqn: u32) -> CmdResult {
    use ifc::modify_cq_in::cq_context as c;
    let select = r.get(ifc::modify_cq_in::modify_field_select_resize_field_select);
    if select & MASK_LOG_SIZE == 0 || select & !(MASK_LOG_SIZE | MASK_PG_OFFSET | MASK_PG_SIZE) != 0 {
        return Err(fail!(status::BAD_PARAM, RESIZE_CQ_BAD_PARAM));
    }
    if r.get(ifc::modify_cq_in::cq_umem_valid) != 0 {
        // A DevX resize into a umem: not executed.
        return Err(fail!(status::BAD_PARAM, RESIZE_CQ_UMEM));
    }
    let ctx = cx.core.engine.cq(cqn).map(|e| &e.ext).ok_or(fail!(status::BAD_RES, RESIZE_CQ_BAD_RES))?;
    let cqe_size = ctx.cqe_size;
    let log_size = c::log_cq_size.get(r.input) as u8;
    let log_page_size =
        if select & MASK_PG_SIZE != 0 { c::log_page_size.get(r.input) as u8 } else { ctx.log_page_size };
    if log_size > cx.core.engine.limits().log_max_cq_size || log_page_size > 18 {
        return Err(fail!(status::BAD_PARAM, RESIZE_CQ_BAD_PARAM_2));
    }
    let page_offset = if select & MASK_PG_OFFSET != 0 {
        page_offset_bytes(c::page_offset.get(r.input), log_page_size)
    } else {
        ctx.page_offset
    };
    let npages = pages_for((cqe_size as u64) << log_size, log_page_size, page_offset);
    let pas = r.pas(ifc::modify_cq_in::pas, npages)?;

    // Ordering, not delivery: every completion the engine reported must go
    // out with the old geometry before the resize, so this drain cannot wait
    // for the one that ends every command; the driver's consumer index is
    // then read fresh.
    cx.core.drain();
    cx.core.refresh_cq(cqn);
    let cq = cx.core.engine.cq(cqn).ok_or(fail!(status::BAD_RES, RESIZE_CQ_BAD_RES_2))?;
    if cq.overrun {
        return Err(fail!(status::BAD_RES_STATE, RESIZE_CQ_BAD_RES_STATE));
    }
    let outstanding = cq.producer.wrapping_sub(cq.consumer);
    if outstanding >= cq.entries() {
        // No free slot in the old buffer for the resize CQE.
        return Err(fail!(status::BAD_RES_STATE, RESIZE_CQ_BAD_RES_STATE_2));
    }
    if outstanding as u64 + 1 > 1u64 << log_size {
        return Err(fail!(status::BAD_PARAM, RESIZE_CQ_BAD_PARAM_3));
    }
    let index = cq.producer;
    let old_log = cq.log_size;

    // The resize CQE, in the old buffer with the old owner bit.
    let old = cx.core.engine.cq(cqn).map(|e| &e.ext).ok_or(fail!(status::BAD_RES, RESIZE_CQ_BAD_RES_3))?;
    let e = Cqe { opcode: op::RESIZE_CQ, ..Default::default() };
    match old.write_cqe(&*cx.core.mem, index, old_log, &e) {
        Ok(()) => {}
        Err(CqeWriteError::OutsidePages) => return Err(fail!(status::INT_ERR, RESIZE_CQ_INT_ERR)),
        Err(CqeWriteError::OutsideMemory) => return Err(fail!(status::BAD_RES_STATE, RESIZE_CQ_BAD_RES_STATE_3)),
    }

    let cq = cx.core.engine.cq_mut(cqn).ok_or(fail!(status::BAD_RES, RESIZE_CQ_BAD_RES_4))?;
    cq.producer = index.wrapping_add(1);
    cq.log_size = log_size;
    let ctx = cx.core.engine.cq_mut(cqn).map(|e| &mut e.ext).ok_or(fail!(status::BAD_RES, RESIZE_CQ_BAD_RES_5))?;
    ctx.pas = pas;
    ctx.log_page_size = log_page_size;
    ctx.page_offset = page_offset;
    ifc::cqc::log_cq_size.set(&mut ctx.cqc, log_size as u64);
    ifc::cqc::log_page_size.set(&mut ctx.cqc, log_page_size as u64);
    if select & MASK_PG_OFFSET != 0 {
        ifc::cqc::page_offset.set(&mut ctx.cqc, c::page_offset.get(r.input));
    }
    debug!(cqn, outstanding, from = old_log, to = log_size, "CQ resized");
    Ok(out(ifc::modify_cq_out::SIZE))
}
