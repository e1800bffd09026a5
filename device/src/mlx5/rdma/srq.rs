//! Shared receive queues: CREATE/DESTROY/QUERY_SRQ and ARM_RQ (the limit watermark).

use super::state::SrqCtx;
use crate::mlx5::cmd::req::{eng, fail, out, CmdResult, Req};
use crate::mlx5::cmd::status;
use crate::mlx5::firmware::Firmware;
use crate::mlx5::ifc;
use crate::mlx5::queue_buf::{page_offset_bytes, pages_for};

pub fn create_srq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::create_srq_in::srq_context_entry as s;
    r.need(ifc::create_srq_in::SIZE)?;
    let log_size = s::log_srq_size.get(r.input) as u8;
    let stride = 16usize << s::log_rq_stride.get(r.input);
    let log_page_size = s::log_page_size.get(r.input) as u8;
    if log_page_size > 18 {
        return Err(fail!(status::BAD_PARAM, CREATE_SRQ_BAD_PARAM));
    }
    // srqc.page_offset counts 64-byte units of a 4 KiB page... scaled like the others.
    let page_offset = page_offset_bytes(s::page_offset.get(r.input), log_page_size);
    let pd = s::pd.get(r.input) as u32;
    let xrcd = s::xrcd.get(r.input) as u32;
    let cqn = s::cqn.get(r.input) as u32;
    let npages = pages_for((stride as u64) << log_size, log_page_size, page_offset);
    let pas = r.pas(ifc::create_srq_in::pas, npages)?;
    let dbr_addr = s::dbr_addr.get(r.input);
    let srqc = r.sub(ifc::create_srq_in::srq_context_entry)?;
    let srqn = eng!(
        fw.engine.create_srq(pd, log_size, (cqn != 0).then_some(cqn), (xrcd != 0).then_some(xrcd), r.uid),
        CREATE_SRQ_ENGINE
    )?;
    if let Some(srq) = fw.engine.srqs.get_mut(srqn) {
        srq.limit = s::lwm.get(r.input) as u16;
    }
    fw.rdma.srqs.insert(srqn, SrqCtx { srqc, pas, stride, dbr_addr, log_page_size, page_offset, head: 0, posted: 0 });
    let mut o = out(ifc::create_srq_out::SIZE);
    ifc::create_srq_out::srqn.set(&mut o, srqn as u64);
    Ok(o)
}

pub fn destroy_srq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::destroy_srq_in::srqn) as u32;
    eng!(fw.engine.destroy_srq(n), DESTROY_SRQ_ENGINE)?;
    fw.rdma.srqs.remove(&n);
    Ok(out(ifc::destroy_srq_out::SIZE))
}

pub fn query_srq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::query_srq_out::srq_context_entry as s;
    let n = r.get(ifc::query_srq_in::srqn) as u32;
    let ctx = fw.rdma.srqs.get(&n).ok_or(fail!(status::BAD_RES, QUERY_SRQ_BAD_RES))?;
    let srq = fw.engine.srqs.get(n).ok_or(fail!(status::BAD_RES, QUERY_SRQ_BAD_RES_2))?;
    let mut o = out(ifc::query_srq_out::SIZE);
    let range = ifc::query_srq_out::srq_context_entry.byte_range().ok_or(fail!(status::INT_ERR, QUERY_SRQ_INT_ERR))?;
    o[range].copy_from_slice(&ctx.srqc);
    s::lwm.set(&mut o, srq.limit as u64);
    Ok(o)
}

pub fn arm_rq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    // op_mod 1 = MLX5_ARM_RQ_IN_OP_MOD_SRQ: set the limit watermark.
    if r.op_mod != 1 {
        return Err(fail!(status::BAD_PARAM, ARM_RQ_BAD_PARAM));
    }
    let n = r.get(ifc::arm_rq_in::srq_number) as u32;
    let srq = fw.engine.srqs.get_mut(n).ok_or(fail!(status::BAD_RES, ARM_RQ_BAD_RES))?;
    let lwm = r.get(ifc::arm_rq_in::lwm) as u16;
    if lwm as u32 >= 1u32 << srq.log_size {
        return Err(fail!(status::BAD_PARAM, ARM_RQ_BAD_PARAM_2));
    }
    srq.limit = lwm;
    Ok(out(ifc::arm_rq_out::SIZE))
}
