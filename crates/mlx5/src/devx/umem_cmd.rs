//! CREATE_UMEM and DESTROY_UMEM (mlx5_ib devx.c `devx_umem_reg_cmd_alloc`, `devx_umem_cleanup`):
//! the umem table and its rules are in [`super::umem`].

use super::uid;
use super::umem::{Umem, MAX_LOG_PAGE_SIZE, MAX_MTT_ENTRIES, MTT_READ};
use super::DevxCx;
use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ifc;

pub fn create_umem(cx: &mut DevxCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::create_umem_in::umem as u;
    r.need(ifc::create_umem_in::SIZE)?;
    // A umem is a process's: the device offers no `umem_uid_0`.
    if uid::is_kernel(r.uid) {
        return Err(fail!(status::BAD_PARAM, CREATE_UMEM_KERNEL_UID));
    }
    let log_page_size = u::log_page_size.get(r.input) as u8;
    let page_offset = u::page_offset.get(r.input);
    let n = u::num_of_mtt.get(r.input);
    if log_page_size > MAX_LOG_PAGE_SIZE || page_offset >= 1u64 << (12 + log_page_size as u32) || n == 0 {
        return Err(fail!(status::BAD_PARAM, CREATE_UMEM_BAD_PARAM));
    }
    if n > MAX_MTT_ENTRIES {
        return Err(fail!(status::LIM, CREATE_UMEM_LIM));
    }
    let mtt = r.entries(ifc::create_umem_in::umem::mtt, n as usize)?;
    let align = (1u64 << (12 + log_page_size as u32)) - 1;
    if mtt.iter().any(|e| (e & !0xfff) & align != 0 || e & MTT_READ == 0) {
        // Pages not aligned to their size, or not readable: nothing mlx5_ib builds.
        return Err(fail!(status::BAD_PARAM, CREATE_UMEM_BAD_MTT));
    }
    let umem = Umem { uid: r.uid, mtt, log_page_size, page_offset };
    let id = cx.umems.alloc(umem).ok_or(fail!(status::LIM, CREATE_UMEM_LIM_2))?;
    let mut o = out(ifc::create_umem_out::SIZE);
    ifc::create_umem_out::umem_id.set(&mut o, id as u64);
    Ok(o)
}

pub fn destroy_umem(cx: &mut DevxCx<'_>, r: &Req<'_>) -> CmdResult {
    let id = r.get(ifc::destroy_umem_in::umem_id) as u32;
    // The uid gate refused another process's umem; the kernel may name any.
    if cx.umems.get(id).is_none() {
        return Err(fail!(status::BAD_RES, DESTROY_UMEM_BAD_RES));
    }
    if cx.owners.umem_users(id) != 0 {
        return Err(fail!(status::BAD_RES_STATE, DESTROY_UMEM_BUSY));
    }
    cx.umems.remove(id);
    Ok(out(ifc::destroy_umem_out::SIZE))
}
