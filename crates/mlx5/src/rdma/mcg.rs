//! Multicast groups: ATTACH_TO_MCG / DETACH_FROM_MCG (UD QPs).

use super::qp::ST_UD;
use crate::cmd::req::CmdErr;
use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ifc;
use crate::rdma::RdmaCx;

fn mcg(r: &Req<'_>) -> Result<(u32, [u8; 16]), CmdErr> {
    let qpn = r.get(ifc::attach_to_mcg_in::qpn) as u32;
    let g = ifc::attach_to_mcg_in::multicast_gid.bytes(r.input).ok_or(fail!(status::BAD_INP_LEN, MCG_BAD_INP_LEN))?;
    let mut gid = [0u8; 16];
    gid.copy_from_slice(&g[..16]);
    Ok((qpn, gid))
}

/// Multicast groups a QP may join.
const MAX_MCAST_PER_QP: usize = 64;

pub fn attach_to_mcg(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let (qpn, gid) = mcg(r)?;
    let ctx = cx.core.engine.qp_mut(qpn).map(|e| &mut e.ext).ok_or(fail!(status::BAD_RES, ATTACH_TO_MCG_BAD_RES))?;
    if !matches!(ctx.st, ST_UD) {
        return Err(fail!(status::BAD_PARAM, ATTACH_TO_MCG_BAD_PARAM));
    }
    if ctx.mcast.len() >= MAX_MCAST_PER_QP && !ctx.mcast.contains(&gid) {
        return Err(fail!(status::LIM, ATTACH_TO_MCG_LIM));
    }
    ctx.mcast.insert(gid);
    Ok(out(ifc::attach_to_mcg_out::SIZE))
}

pub fn detach_from_mcg(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let (qpn, gid) = mcg(r)?;
    let ctx = cx.core.engine.qp_mut(qpn).map(|e| &mut e.ext).ok_or(fail!(status::BAD_RES, DETACH_FROM_MCG_BAD_RES))?;
    if !ctx.mcast.remove(&gid) {
        return Err(fail!(status::BAD_PARAM, DETACH_FROM_MCG_BAD_PARAM));
    }
    Ok(out(ifc::detach_from_mcg_out::SIZE))
}
