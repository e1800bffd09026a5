//! Shared receive queues: CREATE/DESTROY/QUERY_SRQ and ARM_RQ (the limit
//! watermark), ISSI 0's commands for basic and XRC SRQs; [`new_srq`] is the
//! creation every SRQ command family shares (ISSI 1's in `srq_issi1.rs`).

use super::state::{SrqCtx, SrqKind};
use crate::cmd::req::{fail, out, CmdErr, CmdResult, Req};
use crate::cmd::status;
use crate::fields::Array;
use crate::ifc;
use crate::queue_buf::{page_offset_bytes, pages_for};
use crate::rdma::RdmaCx;
use vrnic_engine::SrqCreate;

/// An SRQ as a creating command describes it.
pub(super) struct NewSrq {
    pub kind: SrqKind,
    pub log_size: u8,
    /// Bytes per WQE.
    pub stride: usize,
    pub log_page_size: u8,
    /// The `page_offset` field (64-byte quanta of a 4 KiB page, scaled).
    pub page_offset: u64,
    pub pd: u32,
    pub cqn: u32,
    pub xrcd: u32,
    pub lwm: u16,
    pub dbr_addr: u64,
    /// Where the command's `pas[]` starts.
    pub pas: Array,
    /// The context as created (kept for the query command).
    pub ctx: Vec<u8>,
    pub user_index: Option<u32>,
}

/// Creates the engine's SRQ and its mlx5 context; `bad_param` and `engine`
/// are the creating command's syndromes.
pub(super) fn new_srq(
    cx: &mut RdmaCx<'_>,
    r: &Req<'_>,
    s: NewSrq,
    bad_param: CmdErr,
    engine: u32,
) -> Result<u32, CmdErr> {
    if s.log_page_size > 18 {
        return Err(bad_param);
    }
    let page_offset = page_offset_bytes(s.page_offset, s.log_page_size);
    let npages = pages_for((s.stride as u64) << s.log_size, s.log_page_size, page_offset);
    let pas = r.pas(s.pas, npages)?;
    let ctx = SrqCtx {
        kind: s.kind,
        srqc: s.ctx,
        user_index: s.user_index,
        pas,
        stride: s.stride,
        dbr_addr: s.dbr_addr,
        log_page_size: s.log_page_size,
        page_offset,
        head: 0,
        posted: 0,
    };
    let srqn = cx
        .core
        .engine
        .create_srq_with(
            SrqCreate {
                pd: s.pd,
                log_size: s.log_size,
                cqn: (s.cqn != 0).then_some(s.cqn),
                xrcd: (s.xrcd != 0).then_some(s.xrcd),
                uid: r.uid,
            },
            ctx,
        )
        .map_err(|e| crate::cmd::req::engine_failure(e, engine))?;
    if let Some(srq) = cx.core.engine.srq_mut(srqn) {
        srq.limit = s.lwm;
    }
    Ok(srqn)
}

/// Destroys SRQ `n` if a command of its own family asks.
pub(super) fn destroy(cx: &mut RdmaCx<'_>, n: u32, kind: SrqKind, bad_res: CmdErr, engine: u32) -> Result<(), CmdErr> {
    if cx.core.engine.srq(n).map(|e| &e.ext).is_none_or(|c| c.kind != kind) {
        return Err(bad_res);
    }
    cx.core.engine.destroy_srq(n).map_err(|e| crate::cmd::req::engine_failure(e, engine))?;
    Ok(())
}

pub fn create_srq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::create_srq_in::srq_context_entry as s;
    r.need(ifc::create_srq_in::SIZE)?;
    let new = NewSrq {
        kind: SrqKind::Srq,
        log_size: s::log_srq_size.get(r.input) as u8,
        stride: 16usize << s::log_rq_stride.get(r.input),
        log_page_size: s::log_page_size.get(r.input) as u8,
        page_offset: s::page_offset.get(r.input),
        pd: s::pd.get(r.input) as u32,
        cqn: s::cqn.get(r.input) as u32,
        xrcd: s::xrcd.get(r.input) as u32,
        lwm: s::lwm.get(r.input) as u16,
        dbr_addr: s::dbr_addr.get(r.input),
        pas: ifc::create_srq_in::pas,
        ctx: r.sub(ifc::create_srq_in::srq_context_entry)?,
        // `srqc` has no user index: an XRC SRQ created here has none to report.
        user_index: None,
    };
    let srqn =
        new_srq(cx, r, new, fail!(status::BAD_PARAM, CREATE_SRQ_BAD_PARAM), crate::cmd::syndrome::CREATE_SRQ_ENGINE)?;
    let mut o = out(ifc::create_srq_out::SIZE);
    ifc::create_srq_out::srqn.set(&mut o, srqn as u64);
    Ok(o)
}

pub fn destroy_srq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::destroy_srq_in::srqn) as u32;
    destroy(
        cx,
        n,
        SrqKind::Srq,
        fail!(status::BAD_RES, DESTROY_SRQ_BAD_RES),
        crate::cmd::syndrome::DESTROY_SRQ_ENGINE,
    )?;
    Ok(out(ifc::destroy_srq_out::SIZE))
}

pub fn query_srq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_srq_out::srq_context_entry as s;
    let n = r.get(ifc::query_srq_in::srqn) as u32;
    let ctx = cx
        .core
        .engine
        .srq(n)
        .map(|e| &e.ext)
        .filter(|c| c.kind == SrqKind::Srq)
        .ok_or(fail!(status::BAD_RES, QUERY_SRQ_BAD_RES))?;
    let srq = cx.core.engine.srq(n).ok_or(fail!(status::BAD_RES, QUERY_SRQ_BAD_RES_2))?;
    let mut o = out(ifc::query_srq_out::SIZE);
    let range = ifc::query_srq_out::srq_context_entry.byte_range().ok_or(fail!(status::INT_ERR, QUERY_SRQ_INT_ERR))?;
    o.get_mut(range)
        .filter(|d| d.len() == ctx.srqc.len())
        .ok_or(fail!(status::INT_ERR, QUERY_SRQ_INT_ERR))?
        .copy_from_slice(&ctx.srqc);
    s::lwm.set(&mut o, srq.limit as u64);
    Ok(o)
}

pub fn arm_rq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    // op_mod 1 = MLX5_ARM_RQ_IN_OP_MOD_SRQ: set the limit watermark.
    if r.op_mod != 1 {
        return Err(fail!(status::BAD_PARAM, ARM_RQ_BAD_PARAM));
    }
    let n = r.get(ifc::arm_rq_in::srq_number) as u32;
    if cx.core.engine.srq(n).map(|e| &e.ext).is_none_or(|c| c.kind != SrqKind::Srq) {
        return Err(fail!(status::BAD_RES, ARM_RQ_BAD_RES));
    }
    set_limit(
        cx,
        n,
        r.get(ifc::arm_rq_in::lwm) as u16,
        fail!(status::BAD_RES, ARM_RQ_BAD_RES),
        fail!(status::BAD_PARAM, ARM_RQ_BAD_PARAM_2),
    )
}

/// Arms SRQ `n`'s limit event at `lwm` WQEs (below its size).
pub(super) fn set_limit(cx: &mut RdmaCx<'_>, n: u32, lwm: u16, bad_res: CmdErr, bad_param: CmdErr) -> CmdResult {
    let srq = cx.core.engine.srq_mut(n).ok_or(bad_res)?;
    if lwm as u32 >= 1u32 << srq.log_size {
        return Err(bad_param);
    }
    srq.limit = lwm;
    Ok(out(16))
}
