//! ALLOC_UAR / DEALLOC_UAR: doorbell pages, announced to the UAR watcher
//! (poll mode) before the command completes.

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::hca::HcaCx;
use crate::ifc;

pub fn alloc_uar(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    // The lowest free page: the driver's own (first) UARs land on the
    // pages the device keeps trapped in poll mode.
    let uid = r.uid;
    let n = cx.hca.uars.alloc_lowest_with(|_| uid).ok_or(fail!(status::LIM, ALLOC_UAR_ENGINE))?;
    if let Some(h) = &cx.hca.on_uar {
        h(n, true);
    }
    let mut o = out(ifc::alloc_uar_out::SIZE);
    ifc::alloc_uar_out::uar.set(&mut o, n as u64);
    Ok(o)
}

pub fn dealloc_uar(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::dealloc_uar_in::uar) as u32;
    cx.hca.uars.remove(n).ok_or(fail!(status::BAD_RES, DEALLOC_UAR_ENGINE))?;
    if let Some(h) = &cx.hca.on_uar {
        h(n, false);
    }
    Ok(out(ifc::dealloc_uar_out::SIZE))
}
