//! Protection domains and XRC domains: ALLOC/DEALLOC_PD, ALLOC/DEALLOC_XRCD.

use crate::cmd::req::{eng, out, CmdResult, Req};
use crate::ifc;
use crate::rdma::RdmaCx;

pub fn alloc_pd(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let pd = eng!(cx.core.engine.alloc_pd(r.uid), ALLOC_PD_ENGINE)?;
    let mut o = out(ifc::alloc_pd_out::SIZE);
    ifc::alloc_pd_out::pd.set(&mut o, pd as u64);
    Ok(o)
}

pub fn dealloc_pd(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    eng!(cx.core.engine.dealloc_pd(r.get(ifc::dealloc_pd_in::pd) as u32), DEALLOC_PD_ENGINE)?;
    Ok(out(ifc::dealloc_pd_out::SIZE))
}

pub fn alloc_xrcd(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let x = eng!(cx.core.engine.alloc_xrcd(r.uid), ALLOC_XRCD_ENGINE)?;
    let mut o = out(ifc::alloc_xrcd_out::SIZE);
    ifc::alloc_xrcd_out::xrcd.set(&mut o, x as u64);
    Ok(o)
}

pub fn dealloc_xrcd(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    eng!(cx.core.engine.dealloc_xrcd(r.get(ifc::dealloc_xrcd_in::xrcd) as u32), DEALLOC_XRCD_ENGINE)?;
    Ok(out(ifc::dealloc_xrcd_out::SIZE))
}
