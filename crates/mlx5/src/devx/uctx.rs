//! User contexts: CREATE_UCTX and DESTROY_UCTX (mlx5_ib `mlx5_ib_devx_create`/`_destroy`).
//!
//! CREATE_UCTX has no header uid (its DW0 low half is reserved) and returns the new uid;
//! DESTROY_UCTX names the uid in its body. Uids run from 1 to the number of contexts the device
//! offers: never 0 (the kernel) nor 0xffff (`MLX5_SHARED_RESOURCE_UID`).

use super::state::{Uctx, UCTX_CAP};
use super::DevxCx;
use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ifc;

pub fn create_uctx(cx: &mut DevxCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(ifc::create_uctx_in::SIZE)?;
    let cap = r.get(ifc::create_uctx_in::uctx::cap) as u32;
    if cap & !UCTX_CAP != 0 {
        return Err(fail!(status::BAD_PARAM, CREATE_UCTX_BAD_CAP));
    }
    let uid = cx.uctxs.alloc(Uctx { cap }).ok_or(fail!(status::LIM, CREATE_UCTX_LIM))?;
    let mut o = out(ifc::create_uctx_out::SIZE);
    ifc::create_uctx_out::uid.set(&mut o, uid as u64);
    Ok(o)
}

pub fn destroy_uctx(cx: &mut DevxCx<'_>, r: &Req<'_>) -> CmdResult {
    let uid = r.get(ifc::destroy_uctx_in::uid) as u16;
    if !cx.uctxs.contains(uid) {
        return Err(fail!(status::BAD_PARAM, DESTROY_UCTX_BAD_UID));
    }
    // The kernel destroys a process's objects before its context (also after kill -9).
    if cx.owners.count(uid) + cx.umems.owned_by(uid) != 0 {
        return Err(fail!(status::BAD_RES_STATE, DESTROY_UCTX_BUSY));
    }
    cx.uctxs.remove(uid);
    Ok(out(ifc::destroy_uctx_out::SIZE))
}
