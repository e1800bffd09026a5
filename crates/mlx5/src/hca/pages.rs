//! QUERY_PAGES / MANAGE_PAGES: the emulated device asks for no host
//! memory; pages the driver gives anyway are kept and returned on request.

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::hca::HcaCx;
use crate::ifc;

pub fn query_pages(_cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    if !(1..=3).contains(&r.op_mod) {
        return Err(fail!(status::BAD_PARAM, QUERY_PAGES_BAD_PARAM));
    }
    let mut o = out(ifc::query_pages_out::SIZE);
    ifc::query_pages_out::function_id.set(&mut o, r.get(ifc::query_pages_in::function_id));
    // The emulated device needs no host memory.
    ifc::query_pages_out::num_pages.set(&mut o, 0);
    Ok(o)
}

/// Upper bound on pages the driver may hand over.
const MAX_PAGES: usize = 1 << 16;

pub fn manage_pages(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::manage_pages_in::input_num_entries) as usize;
    match r.op_mod {
        // ALLOCATION_FAIL: the driver could not give pages; nothing to do.
        0 => Ok(out(ifc::manage_pages_out::SIZE)),
        // ALLOCATION_SUCCESS: keep the pages (we never touch them).
        1 => {
            if cx.hca.pages.len() + n > MAX_PAGES {
                return Err(fail!(status::LIM, MANAGE_PAGES_LIM));
            }
            let pas = r.pas(ifc::manage_pages_in::pas, n)?;
            cx.hca.pages.extend(pas);
            Ok(out(ifc::manage_pages_out::SIZE))
        }
        // HCA_RETURN_PAGES: give back up to n pages.
        2 => {
            let room = r.outlen.saturating_sub(ifc::manage_pages_out::SIZE) / 8;
            let k = n.min(cx.hca.pages.len()).min(room);
            let mut o = out(ifc::manage_pages_out::SIZE + k * 8);
            ifc::manage_pages_out::output_num_entries.set(&mut o, k as u64);
            for i in 0..k {
                let p = cx.hca.pages.pop().unwrap_or(0);
                ifc::manage_pages_out::pas.elem(i as u32).set(&mut o, p);
            }
            Ok(o)
        }
        _ => Err(fail!(status::BAD_PARAM, MANAGE_PAGES_BAD_PARAM)),
    }
}
