//! On-device memory (MEMIC): ALLOC/DEALLOC_MEMIC inside the BAR window.

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ifc;
use crate::rdma::RdmaCx;

/// ALLOC_MEMIC: a block of on-device memory inside the driver's range.
pub fn alloc_memic(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::alloc_memic_in as a;
    let (off, size) = cx.hca.memic().ok_or(fail!(status::BAD_OP, ALLOC_MEMIC_BAD_OP))?;
    let range_start = r.get(a::range_start_addr);
    let range_size = r.get(a::range_size);
    let len = r.get(a::memic_size);
    let align = 64u64 << r.get(a::log_memic_addr_alignment).min(20);
    let range_end = range_start.checked_add(range_size).ok_or(fail!(status::BAD_PARAM, ALLOC_MEMIC_BAD_PARAM))?;
    if len == 0 || len % 64 != 0 || len > range_size || range_start < off || range_end > off + size {
        return Err(fail!(status::BAD_PARAM, ALLOC_MEMIC_BAD_PARAM_2));
    }
    // First fit inside the range, aligned, clear of every allocation.
    let mut at = range_start.next_multiple_of(align);
    while at + len <= range_end {
        match cx.rdma.memic_allocs.iter().find(|(&s, &n)| at < s + n && s < at + len) {
            None => {
                cx.rdma.memic_allocs.insert(at, len);
                let mut o = out(ifc::alloc_memic_out::SIZE);
                ifc::alloc_memic_out::memic_start_addr.set(&mut o, at);
                return Ok(o);
            }
            Some((&s, &n)) => at = (s + n).next_multiple_of(align),
        }
    }
    // Busy: the driver tries the next range (-EAGAIN).
    Err(fail!(status::NO_RES, ALLOC_MEMIC_NO_RES))
}

/// DEALLOC_MEMIC: frees a block (the bytes are cleared).
pub fn dealloc_memic(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::dealloc_memic_in as d;
    let at = r.get(d::memic_start_addr);
    let len = r.get(d::memic_size);
    match cx.rdma.memic_allocs.get(&at) {
        Some(&n) if n == len => {
            cx.rdma.memic_allocs.remove(&at);
            if let Some((off, _)) = cx.hca.memic() {
                let zero = vec![0u8; len as usize];
                let _ = cx.core.mem.write(vrnic_engine::DEVICE_MEMORY | (at - off), &zero);
            }
            Ok(out(ifc::dealloc_memic_out::SIZE))
        }
        _ => Err(fail!(status::BAD_PARAM, DEALLOC_MEMIC_BAD_PARAM)),
    }
}
