//! EQ commands: CREATE/DESTROY/QUERY_EQ. The event queues' data path
//! (EQE writes, EQ doorbells, interrupts) is the firmware's event side.

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::datapath::EqCtx;
use crate::events::EventsCx;
use crate::ifc;
use crate::queue_buf::{page_offset_bytes, pages_for};

pub fn create_eq(cx: &mut EventsCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::create_eq_in::eq_context_entry as e;
    r.need(ifc::create_eq_in::SIZE)?;
    let log_size = e::log_eq_size.get(r.input) as u8;
    let uar = e::uar_page.get(r.input) as u32;
    let vector = e::intr.get(r.input) as u32;
    let log_page_size = e::log_page_size.get(r.input) as u8;
    if log_page_size > 18 {
        return Err(fail!(status::BAD_PARAM, CREATE_EQ_BAD_PARAM));
    }
    let page_offset = page_offset_bytes(e::page_offset.get(r.input), log_page_size);
    if vector >= vrnic_pci::MSIX_VECTORS {
        return Err(fail!(status::BAD_PARAM, CREATE_EQ_BAD_PARAM_2));
    }
    if !cx.hca.uar_allocated(uar) {
        return Err(fail!(status::BAD_RES, CREATE_EQ_BAD_RES));
    }
    if log_size > cx.core.engine.limits().log_max_eq_size {
        return Err(fail!(status::BAD_PARAM, CREATE_EQ_BAD_PARAM_3));
    }
    let npages = pages_for(64u64 << log_size, log_page_size, page_offset);
    let pas = r.pas(ifc::create_eq_in::pas, npages)?;
    let mut event_bitmask = [0u64; 4];
    for (i, w) in event_bitmask.iter_mut().enumerate() {
        *w = ifc::create_eq_in::event_bitmask.elem(i as u32).get(r.input);
    }
    let eqc = r.sub(ifc::create_eq_in::eq_context_entry)?;
    let ctx = EqCtx {
        eqc,
        pas,
        log_size,
        log_page_size,
        page_offset,
        event_bitmask,
        vector: vector as u16,
        armed: false,
        consumer: 0,
        producer: 0,
    };
    let eqn = cx.core.eqs.alloc_with(|_| ctx).ok_or(fail!(status::LIM, CREATE_EQ_ENGINE))?;
    let mut o = out(ifc::create_eq_out::SIZE);
    ifc::create_eq_out::eq_number.set(&mut o, eqn as u64);
    Ok(o)
}

pub fn destroy_eq(cx: &mut EventsCx<'_>, r: &Req<'_>) -> CmdResult {
    let eqn = r.get(ifc::destroy_eq_in::eq_number) as u32;
    if !cx.core.eqs.contains(eqn) {
        return Err(fail!(status::BAD_RES, DESTROY_EQ_ENGINE));
    }
    // Busy while a CQ reports to it.
    if cx.core.engine.cqs().any(|(_, c)| c.ext.eqn == eqn) {
        return Err(fail!(status::BAD_RES_STATE, DESTROY_EQ_ENGINE));
    }
    cx.core.eqs.remove(eqn);
    Ok(out(ifc::destroy_eq_out::SIZE))
}

pub fn query_eq(cx: &mut EventsCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_eq_out::eq_context_entry as e;
    let eqn = r.get(ifc::query_eq_in::eq_number) as u32;
    let ctx = cx.core.eqs.get(eqn).ok_or(fail!(status::BAD_RES, QUERY_EQ_BAD_RES))?;
    let mut o = out(ifc::query_eq_out::SIZE);
    let range = ifc::query_eq_out::eq_context_entry.byte_range().ok_or(fail!(status::INT_ERR, QUERY_EQ_INT_ERR))?;
    o[range].copy_from_slice(&ctx.eqc);
    e::consumer_counter.set(&mut o, (ctx.consumer & 0x00ff_ffff) as u64);
    e::producer_counter.set(&mut o, (ctx.producer & 0x00ff_ffff) as u64);
    Ok(o)
}
