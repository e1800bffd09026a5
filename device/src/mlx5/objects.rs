//! Object commands: PD, XRCD, MKEY, CQ, SRQ. The objects live in the engine;
//! this layer decodes the mlx5 contexts and keeps the mlx5-only parts.

use super::cmd::status;
use super::firmware::{eng, fail, out, page_offset_bytes, pages_for, CmdResult, Firmware, Req, SrqCtx};
use super::datapath::CqCtx;
use super::ifc;
use crate::engine::{Access, Mkey, Translation};

pub fn alloc_pd(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let pd = eng!(fw.engine.alloc_pd(r.uid))?;
    let mut o = out(ifc::alloc_pd_out::SIZE);
    ifc::alloc_pd_out::pd.set(&mut o, pd as u64);
    Ok(o)
}

pub fn dealloc_pd(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    eng!(fw.engine.dealloc_pd(r.get(ifc::dealloc_pd_in::pd) as u32))?;
    Ok(out(ifc::dealloc_pd_out::SIZE))
}

pub fn alloc_xrcd(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let x = eng!(fw.engine.alloc_xrcd(r.uid))?;
    let mut o = out(ifc::alloc_xrcd_out::SIZE);
    ifc::alloc_xrcd_out::xrcd.set(&mut o, x as u64);
    Ok(o)
}

pub fn dealloc_xrcd(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    eng!(fw.engine.dealloc_xrcd(r.get(ifc::dealloc_xrcd_in::xrcd) as u32))?;
    Ok(out(ifc::dealloc_xrcd_out::SIZE))
}

/// `access_mode`: PA and MTT are implemented; KLM/KSM are not.
const ACCESS_MODE_PA: u64 = 0;
const ACCESS_MODE_MTT: u64 = 1;
/// `MLX5_MKC_ACCESS_MODE_MEMIC`: start_addr is a BAR0 offset in the MEMIC window.
const ACCESS_MODE_MEMIC: u64 = 5;

pub fn create_mkey(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    r.need(ifc::create_mkey_in::SIZE)?;
    if r.get(ifc::create_mkey_in::pg_access) != 0 {
        // On-demand paging is not offered (cap pg = 0).
        return Err(fail!(status::BAD_PARAM));
    }
    let mode = (m::access_mode_4_2.get(r.input) << 2) | m::access_mode_1_0.get(r.input);
    let mut access = Access::LOCAL_READ;
    if m::lw.get_bool(r.input) {
        access = access | Access::LOCAL_WRITE;
    }
    if m::rr.get_bool(r.input) {
        access = access | Access::REMOTE_READ;
    }
    if m::rw.get_bool(r.input) {
        access = access | Access::REMOTE_WRITE;
    }
    if m::a.get_bool(r.input) {
        access = access | Access::REMOTE_ATOMIC;
    }
    let free = m::free.get_bool(r.input);
    let start = m::start_addr.get(r.input);
    let length = m::len.get(r.input);
    let whole_space = m::length64.get_bool(r.input);
    let pd = m::pd.get(r.input) as u32;
    let translation = match mode {
        ACCESS_MODE_PA => Translation::Physical,
        ACCESS_MODE_MTT => {
            let log_page = m::log_page_size.get(r.input) as u8;
            if !(12..=30).contains(&log_page) {
                return Err(fail!(status::BAD_PARAM));
            }
            if free {
                // A free (UMR-only) key has no translation yet.
                Translation::Mtt { page_shift: log_page, pages: Vec::new() }
            } else {
                let ps = 1u64 << log_page;
                let end = start.checked_add(length).ok_or(fail!(status::BAD_PARAM))?;
                let first = start & !(ps - 1);
                let npages = usize::try_from((end - first).div_ceil(ps)).map_err(|_| fail!(status::BAD_PARAM))?;
                let supplied = r.get(ifc::create_mkey_in::translations_octword_actual_size) as usize * 2;
                if supplied < npages {
                    return Err(fail!(status::BAD_PARAM));
                }
                let pages = r.pas(ifc::create_mkey_in::klm_pas_mtt, npages)?;
                Translation::Mtt { page_shift: log_page, pages }
            }
        }
        ACCESS_MODE_MEMIC => {
            let (off, size) = fw.memic.ok_or(fail!(status::BAD_PARAM))?;
            let end = start.checked_add(length).ok_or(fail!(status::BAD_PARAM))?;
            if whole_space || start < off || end > off + size {
                return Err(fail!(status::BAD_PARAM));
            }
            // Only allocated device memory can be registered.
            let inside = fw.memic_allocs.range(..=start).next_back().is_some_and(|(&a, &n)| end <= a + n);
            if !inside {
                return Err(fail!(status::BAD_PARAM));
            }
            // Device-memory keys are zero based (libibverbs requires
            // IBV_ACCESS_ZERO_BASED): remote addresses run from 0 to len.
            Translation::DeviceMemory { base: start - off }
        }
        _ => return Err(fail!(status::BAD_PARAM)),
    };
    if !whole_space && start.checked_add(length).is_none() {
        return Err(fail!(status::BAD_PARAM));
    }
    let zero_based = matches!(translation, Translation::DeviceMemory { .. });
    let mkey = Mkey {
        variant: m::mkey_7_0.get(r.input) as u8,
        pd,
        access,
        start: if zero_based { 0 } else { start },
        length,
        whole_space,
        translation,
        free,
        uid: r.uid,
    };
    let index = eng!(fw.engine.create_mkey(mkey))?;
    fw.mkcs.insert(index, r.sub(ifc::create_mkey_in::memory_key_mkey_entry)?);
    let mut o = out(ifc::create_mkey_out::SIZE);
    ifc::create_mkey_out::mkey_index.set(&mut o, index as u64);
    Ok(o)
}

pub fn destroy_mkey(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let index = r.get(ifc::destroy_mkey_in::mkey_index) as u32;
    eng!(fw.engine.destroy_mkey(index))?;
    fw.mkcs.remove(&index);
    Ok(out(ifc::destroy_mkey_out::SIZE))
}

pub fn query_mkey(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let index = r.get(ifc::query_mkey_in::mkey_index) as u32;
    let mkc = fw.mkcs.get(&index).ok_or(fail!(status::BAD_RES))?;
    let mut o = out(ifc::query_mkey_out::SIZE);
    let range = ifc::query_mkey_out::memory_key_mkey_entry.byte_range().ok_or(fail!(status::INT_ERR))?;
    o[range].copy_from_slice(mkc);
    Ok(o)
}

pub fn create_cq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::create_cq_in::cq_context as c;
    r.need(ifc::create_cq_in::SIZE)?;
    let cqe_size = match c::cqe_sz.get(r.input) {
        0 => 64,
        1 | 2 => 128,
        _ => return Err(fail!(status::BAD_PARAM)),
    };
    if c::cqe_comp_en.get(r.input) != 0 || c::cc.get(r.input) != 0 || c::apu_cq.get(r.input) != 0 {
        // CQE compression, collapsed and APU CQs are not offered.
        return Err(fail!(status::BAD_PARAM));
    }
    let log_size = c::log_cq_size.get(r.input) as u8;
    let log_page_size = c::log_page_size.get(r.input) as u8;
    if log_page_size > 18 {
        return Err(fail!(status::BAD_PARAM));
    }
    let page_offset = page_offset_bytes(c::page_offset.get(r.input), log_page_size);
    let eqn = c::c_eqn_or_apu_element.get(r.input) as u32;
    let uar = c::uar_page.get(r.input) as u32;
    if !fw.engine.uars.contains(uar) {
        return Err(fail!(status::BAD_RES));
    }
    if log_size > fw.engine.limits.log_max_cq_size {
        return Err(fail!(status::BAD_PARAM));
    }
    let npages = pages_for((cqe_size as u64) << log_size, log_page_size, page_offset);
    let pas = r.pas(ifc::create_cq_in::pas, npages)?;
    let dbr_addr = c::dbr_addr.get(r.input);
    let cqc = r.sub(ifc::create_cq_in::cq_context)?;
    let cqn = eng!(fw.engine.create_cq(log_size, eqn, uar))?;
    if let Some(cq) = fw.engine.cqs.get_mut(cqn) {
        cq.period = c::cq_period.get(r.input) as u16;
        cq.max_count = c::cq_max_count.get(r.input) as u16;
    }
    // Mark the arm doorbell record "never armed" (the driver zeroed it, and
    // its first arm word, sn 0 / next / ci 0, is 0 too): the poll-mode scan
    // finds a first arm whose UAR store another CQ's arm overwrote.
    if fw.mem.write(dbr_addr.wrapping_add(4), &super::datapath::CQ_ARM_UNSET.to_be_bytes()).is_err() {
        tracing::debug!(cqn, dbr_addr, "CQ doorbell record outside guest memory");
    }
    fw.cqs.insert(cqn, CqCtx { cqc, pas, cqe_size, log_page_size, page_offset, dbr_addr, arming: Default::default() });
    fw.pending.cq_dbr(cqn, Some(dbr_addr));
    let mut o = out(ifc::create_cq_out::SIZE);
    ifc::create_cq_out::cqn.set(&mut o, cqn as u64);
    Ok(o)
}

pub fn destroy_cq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let cqn = r.get(ifc::destroy_cq_in::cqn) as u32;
    eng!(fw.engine.destroy_cq(cqn))?;
    fw.cqs.remove(&cqn);
    fw.pending.cq_dbr(cqn, None);
    Ok(out(ifc::destroy_cq_out::SIZE))
}

pub fn query_cq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::query_cq_out::cq_context as c;
    let cqn = r.get(ifc::query_cq_in::cqn) as u32;
    fw.refresh_cq(cqn);
    let ctx = fw.cqs.get(&cqn).ok_or(fail!(status::BAD_RES))?;
    let cq = fw.engine.cqs.get(cqn).ok_or(fail!(status::BAD_RES))?;
    let mut o = out(ifc::query_cq_out::SIZE);
    let range = ifc::query_cq_out::cq_context.byte_range().ok_or(fail!(status::INT_ERR))?;
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

pub fn modify_cq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::modify_cq_in::cq_context as c;
    r.need(ifc::modify_cq_in::SIZE)?;
    let cqn = r.get(ifc::modify_cq_in::cqn) as u32;
    let select = r.get(ifc::modify_cq_in::modify_field_select_resize_field_select);
    match r.op_mod {
        // MLX5_CQ_OPMOD_MODIFY: moderation.
        0 => {
            let cq = fw.engine.cqs.get_mut(cqn).ok_or(fail!(status::BAD_RES))?;
            if select & MODIFY_PERIOD != 0 {
                cq.period = c::cq_period.get(r.input) as u16;
            }
            if select & MODIFY_COUNT != 0 {
                cq.max_count = c::cq_max_count.get(r.input) as u16;
            }
        }
        // MLX5_CQ_OPMOD_RESIZE: new size and buffer.
        1 => return super::datapath::cq_resize::resize_cq(fw, r, cqn),
        _ => return Err(fail!(status::BAD_PARAM)),
    }
    Ok(out(ifc::modify_cq_out::SIZE))
}

pub fn create_srq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::create_srq_in::srq_context_entry as s;
    r.need(ifc::create_srq_in::SIZE)?;
    let log_size = s::log_srq_size.get(r.input) as u8;
    let stride = 16usize << s::log_rq_stride.get(r.input);
    let log_page_size = s::log_page_size.get(r.input) as u8;
    if log_page_size > 18 {
        return Err(fail!(status::BAD_PARAM));
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
    let srqn = eng!(fw.engine.create_srq(pd, log_size, (cqn != 0).then_some(cqn), (xrcd != 0).then_some(xrcd), r.uid))?;
    if let Some(srq) = fw.engine.srqs.get_mut(srqn) {
        srq.limit = s::lwm.get(r.input) as u16;
    }
    fw.srqs.insert(srqn, SrqCtx { srqc, pas, stride, dbr_addr, log_page_size, page_offset, head: 0, posted: 0 });
    let mut o = out(ifc::create_srq_out::SIZE);
    ifc::create_srq_out::srqn.set(&mut o, srqn as u64);
    Ok(o)
}

pub fn destroy_srq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::destroy_srq_in::srqn) as u32;
    eng!(fw.engine.destroy_srq(n))?;
    fw.srqs.remove(&n);
    Ok(out(ifc::destroy_srq_out::SIZE))
}

pub fn query_srq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::query_srq_out::srq_context_entry as s;
    let n = r.get(ifc::query_srq_in::srqn) as u32;
    let ctx = fw.srqs.get(&n).ok_or(fail!(status::BAD_RES))?;
    let srq = fw.engine.srqs.get(n).ok_or(fail!(status::BAD_RES))?;
    let mut o = out(ifc::query_srq_out::SIZE);
    let range = ifc::query_srq_out::srq_context_entry.byte_range().ok_or(fail!(status::INT_ERR))?;
    o[range].copy_from_slice(&ctx.srqc);
    s::lwm.set(&mut o, srq.limit as u64);
    Ok(o)
}

pub fn arm_rq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    // op_mod 1 = MLX5_ARM_RQ_IN_OP_MOD_SRQ: set the limit watermark.
    if r.op_mod != 1 {
        return Err(fail!(status::BAD_PARAM));
    }
    let n = r.get(ifc::arm_rq_in::srq_number) as u32;
    let srq = fw.engine.srqs.get_mut(n).ok_or(fail!(status::BAD_RES))?;
    let lwm = r.get(ifc::arm_rq_in::lwm) as u16;
    if lwm as u32 >= 1u32 << srq.log_size {
        return Err(fail!(status::BAD_PARAM));
    }
    srq.limit = lwm;
    Ok(out(ifc::arm_rq_out::SIZE))
}

/// ALLOC_MEMIC: a block of on-device memory inside the driver's range.
pub fn alloc_memic(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::alloc_memic_in as a;
    let (off, size) = fw.memic.ok_or(fail!(status::BAD_OP))?;
    let range_start = r.get(a::range_start_addr);
    let range_size = r.get(a::range_size);
    let len = r.get(a::memic_size);
    let align = 64u64 << r.get(a::log_memic_addr_alignment).min(20);
    let range_end = range_start.checked_add(range_size).ok_or(fail!(status::BAD_PARAM))?;
    if len == 0 || len % 64 != 0 || len > range_size || range_start < off || range_end > off + size {
        return Err(fail!(status::BAD_PARAM));
    }
    // First fit inside the range, aligned, clear of every allocation.
    let mut at = range_start.next_multiple_of(align);
    while at + len <= range_end {
        match fw.memic_allocs.iter().find(|(&s, &n)| at < s + n && s < at + len) {
            None => {
                fw.memic_allocs.insert(at, len);
                let mut o = out(ifc::alloc_memic_out::SIZE);
                ifc::alloc_memic_out::memic_start_addr.set(&mut o, at);
                return Ok(o);
            }
            Some((&s, &n)) => at = (s + n).next_multiple_of(align),
        }
    }
    // Busy: the driver tries the next range (-EAGAIN).
    Err(fail!(status::NO_RES))
}

/// DEALLOC_MEMIC: frees a block (the bytes are cleared).
pub fn dealloc_memic(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::dealloc_memic_in as d;
    let at = r.get(d::memic_start_addr);
    let len = r.get(d::memic_size);
    match fw.memic_allocs.get(&at) {
        Some(&n) if n == len => {
            fw.memic_allocs.remove(&at);
            if let Some((off, _)) = fw.memic {
                let zero = vec![0u8; len as usize];
                let _ = fw.mem.write(crate::engine::DEVICE_MEMORY | (at - off), &zero);
            }
            Ok(out(ifc::dealloc_memic_out::SIZE))
        }
        _ => Err(fail!(status::BAD_PARAM)),
    }
}
