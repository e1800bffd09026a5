//! The SRQ commands of ISSI 1 (what mlx5_ib's `srq_cmd.c` sends once SET_ISSI
//! 1 succeeded): basic SRQs as RMPs (CREATE/MODIFY/QUERY/DESTROY_RMP, the
//! limit watermark through MODIFY_RMP), XRC SRQs with CREATE/DESTROY/QUERY/
//! ARM_XRC_SRQ. An XRC SRQ's context is an `srqc` with a user index: the
//! CQE of each receive it completes names it (libmlx5 finds the SRQ by it).

use super::srq::{destroy, new_srq, set_limit, NewSrq};
use super::state::SrqKind;
use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::cmd::syndrome as syn;
use crate::ifc;
use crate::rdma::RdmaCx;

/// `rmpc.state` / `modify_rmp_in.rmp_state` RDY, the only state an RMP has here.
const RMP_RDY: u64 = 1;

pub fn create_rmp(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::create_rmp_in::ctx::wq as w;
    r.need(ifc::create_rmp_in::SIZE)?;
    let bad = fail!(status::BAD_PARAM, CREATE_RMP_BAD_PARAM);
    // A linked-list WQ (wq_type 0, WQEs chained by next_wqe_index, as an SRQ's) in state RDY;
    // log_wq_stride counts bytes.
    let log_stride = w::log_wq_stride.get(r.input);
    if ifc::create_rmp_in::ctx::state.get(r.input) != RMP_RDY || w::wq_type.get(r.input) != 0 || log_stride < 4 {
        return Err(bad);
    }
    let new = NewSrq {
        kind: SrqKind::Rmp,
        log_size: w::log_wq_sz.get(r.input) as u8,
        stride: 1usize << log_stride,
        log_page_size: w::log_wq_pg_sz.get(r.input) as u8,
        page_offset: w::page_offset.get(r.input),
        pd: w::pd.get(r.input) as u32,
        cqn: 0,
        xrcd: 0,
        lwm: w::lwm.get(r.input) as u16,
        dbr_addr: w::dbr_addr.get(r.input),
        pas: w::pas,
        ctx: r.sub(ifc::create_rmp_in::ctx)?,
        user_index: None,
    };
    let n = new_srq(cx, r, new, bad, syn::CREATE_RMP_ENGINE)?;
    let mut o = out(ifc::create_rmp_out::SIZE);
    ifc::create_rmp_out::rmpn.set(&mut o, n as u64);
    Ok(o)
}

pub fn destroy_rmp(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::destroy_rmp_in::rmpn) as u32;
    destroy(cx, n, SrqKind::Rmp, fail!(status::BAD_RES, DESTROY_RMP_BAD_RES), syn::DESTROY_RMP_ENGINE)?;
    Ok(out(ifc::destroy_rmp_out::SIZE))
}

/// MODIFY_RMP: RDY to RDY, changing at most the limit watermark (mlx5_ib's arm_rmp_cmd).
pub fn modify_rmp(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::modify_rmp_in as m;
    r.need(m::SIZE)?;
    let n = r.get(m::rmpn) as u32;
    if cx.core.engine.srq(n).map(|e| &e.ext).is_none_or(|c| c.kind != SrqKind::Rmp) {
        return Err(fail!(status::BAD_RES, MODIFY_RMP_BAD_RES));
    }
    let only_lwm = r.get(m::bitmask) & !1 == 0;
    if r.get(m::rmp_state) != RMP_RDY || r.get(m::ctx::state) != RMP_RDY || !only_lwm {
        return Err(fail!(status::BAD_PARAM, MODIFY_RMP_BAD_PARAM));
    }
    if r.get(m::bitmask::lwm) == 1 {
        let lwm = r.get(m::ctx::wq::lwm) as u16;
        set_limit(
            cx,
            n,
            lwm,
            fail!(status::BAD_RES, MODIFY_RMP_BAD_RES_2),
            fail!(status::BAD_PARAM, MODIFY_RMP_BAD_PARAM_2),
        )?;
    }
    Ok(out(ifc::modify_rmp_out::SIZE))
}

pub fn query_rmp(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_rmp_out::rmp_context as c;
    let n = r.get(ifc::query_rmp_in::rmpn) as u32;
    let bad = fail!(status::BAD_RES, QUERY_RMP_BAD_RES);
    let ctx = cx.core.engine.srq(n).map(|e| &e.ext).filter(|x| x.kind == SrqKind::Rmp).ok_or(bad)?;
    let srq = cx.core.engine.srq(n).ok_or(bad)?;
    let mut o = out(ifc::query_rmp_out::SIZE);
    let range = ifc::query_rmp_out::rmp_context.byte_range().ok_or(fail!(status::INT_ERR, QUERY_RMP_INT_ERR))?;
    let dst =
        o.get_mut(range).filter(|d| d.len() == ctx.srqc.len()).ok_or(fail!(status::INT_ERR, QUERY_RMP_INT_ERR))?;
    dst.copy_from_slice(&ctx.srqc);
    c::state.set(&mut o, RMP_RDY);
    c::wq::lwm.set(&mut o, srq.limit as u64);
    Ok(o)
}

pub fn create_xrc_srq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    // The context is an `srqc` plus `user_index`, at the same place as CREATE_SRQ's.
    use ifc::create_srq_in::srq_context_entry as s;
    use ifc::create_xrc_srq_in::xrc_srq_context_entry as x;
    r.need(ifc::create_xrc_srq_in::SIZE)?;
    let bad = fail!(status::BAD_PARAM, CREATE_XRC_SRQ_BAD_PARAM);
    let xrcd = x::xrcd.get(r.input) as u32;
    if xrcd == 0 {
        return Err(bad);
    }
    let new = NewSrq {
        kind: SrqKind::XrcSrq,
        log_size: x::log_xrc_srq_size.get(r.input) as u8,
        stride: 16usize << x::log_rq_stride.get(r.input),
        log_page_size: x::log_page_size.get(r.input) as u8,
        page_offset: x::page_offset.get(r.input),
        pd: x::pd.get(r.input) as u32,
        cqn: x::cqn.get(r.input) as u32,
        xrcd,
        lwm: x::lwm.get(r.input) as u16,
        dbr_addr: s::dbr_addr.get(r.input),
        pas: ifc::create_xrc_srq_in::pas,
        ctx: r.sub(ifc::create_xrc_srq_in::xrc_srq_context_entry)?,
        user_index: Some(x::user_index.get(r.input) as u32),
    };
    let n = new_srq(cx, r, new, bad, syn::CREATE_XRC_SRQ_ENGINE)?;
    let mut o = out(ifc::create_xrc_srq_out::SIZE);
    ifc::create_xrc_srq_out::xrc_srqn.set(&mut o, n as u64);
    Ok(o)
}

pub fn destroy_xrc_srq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::destroy_xrc_srq_in::xrc_srqn) as u32;
    destroy(cx, n, SrqKind::XrcSrq, fail!(status::BAD_RES, DESTROY_XRC_SRQ_BAD_RES), syn::DESTROY_XRC_SRQ_ENGINE)?;
    Ok(out(ifc::destroy_xrc_srq_out::SIZE))
}

pub fn query_xrc_srq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_xrc_srq_out::xrc_srq_context_entry as c;
    let n = r.get(ifc::query_xrc_srq_in::xrc_srqn) as u32;
    let bad = fail!(status::BAD_RES, QUERY_XRC_SRQ_BAD_RES);
    let ctx = cx.core.engine.srq(n).map(|e| &e.ext).filter(|x| x.kind == SrqKind::XrcSrq).ok_or(bad)?;
    let srq = cx.core.engine.srq(n).ok_or(bad)?;
    let mut o = out(ifc::query_xrc_srq_out::SIZE);
    let range = ifc::query_xrc_srq_out::xrc_srq_context_entry
        .byte_range()
        .ok_or(fail!(status::INT_ERR, QUERY_XRC_SRQ_INT_ERR))?;
    let dst =
        o.get_mut(range).filter(|d| d.len() == ctx.srqc.len()).ok_or(fail!(status::INT_ERR, QUERY_XRC_SRQ_INT_ERR))?;
    dst.copy_from_slice(&ctx.srqc);
    // state 0: GOOD.
    c::state.set(&mut o, 0);
    c::lwm.set(&mut o, srq.limit as u64);
    Ok(o)
}

pub fn arm_xrc_srq(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    // op_mod 1 = MLX5_ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ.
    if r.op_mod != 1 {
        return Err(fail!(status::BAD_PARAM, ARM_XRC_SRQ_BAD_PARAM));
    }
    let n = r.get(ifc::arm_xrc_srq_in::xrc_srqn) as u32;
    let bad_res = fail!(status::BAD_RES, ARM_XRC_SRQ_BAD_RES);
    if cx.core.engine.srq(n).map(|e| &e.ext).is_none_or(|c| c.kind != SrqKind::XrcSrq) {
        return Err(bad_res);
    }
    let lwm = r.get(ifc::arm_xrc_srq_in::lwm) as u16;
    set_limit(cx, n, lwm, bad_res, fail!(status::BAD_PARAM, ARM_XRC_SRQ_BAD_PARAM_2))
}
