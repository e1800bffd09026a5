//! Memory keys: CREATE/DESTROY/QUERY_MKEY (PA, MTT, KLM, KSM and MEMIC translations).

use super::state::MkeyCtx;
use crate::cmd::req::{eng, fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::datapath::umr::{indirect_capacity, parse_klms, parse_ksms, MAX_INDIRECT_ENTRIES};
use crate::ifc;
use crate::rdma::RdmaCx;
use vrnic_engine::{Access, Mkey, Translation};

/// `access_mode` (`MLX5_MKC_ACCESS_MODE_*`).
const ACCESS_MODE_PA: u64 = 0;
const ACCESS_MODE_MTT: u64 = 1;
/// Indirect: entries of any length (`struct mlx5_klm`), or of one size (`struct mlx5_ksm`, `log_page_size`).
const ACCESS_MODE_KLMS: u64 = 2;
const ACCESS_MODE_KSM: u64 = 3;
/// `MLX5_MKC_ACCESS_MODE_MEMIC`: start_addr is a BAR0 offset in the MEMIC window.
const ACCESS_MODE_MEMIC: u64 = 5;

pub fn create_mkey(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    r.need(ifc::create_mkey_in::SIZE)?;
    if r.get(ifc::create_mkey_in::pg_access) != 0 {
        // On-demand paging is not offered (cap pg = 0).
        return Err(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM));
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
                return Err(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_2));
            }
            if free {
                // A free (UMR-only) key has no translation yet.
                Translation::Mtt { page_shift: log_page, pages: Vec::new() }
            } else {
                let ps = 1u64 << log_page;
                let end = start.checked_add(length).ok_or(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_3))?;
                let first = start & !(ps - 1);
                let npages = usize::try_from((end - first).div_ceil(ps))
                    .map_err(|_| fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_4))?;
                let supplied = r.get(ifc::create_mkey_in::translations_octword_actual_size) as usize * 2;
                if supplied < npages {
                    return Err(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_5));
                }
                let pages = r.pas(ifc::create_mkey_in::klm_pas_mtt, npages)?;
                Translation::Mtt { page_shift: log_page, pages }
            }
        }
        ACCESS_MODE_KLMS | ACCESS_MODE_KSM => {
            // One octoword per entry; a free key gets its entries by UMR, another one from the mailbox.
            let room = m::translations_octword_size.get(r.input);
            if room > MAX_INDIRECT_ENTRIES {
                return Err(fail!(status::BAD_PARAM, CREATE_MKEY_INDIRECT_SIZE));
            }
            let n = if free { 0 } else { r.get(ifc::create_mkey_in::translations_octword_actual_size) };
            if n > indirect_capacity(room) {
                return Err(fail!(status::BAD_PARAM, CREATE_MKEY_INDIRECT_SIZE));
            }
            // The entries as the UMR path reads them (struct mlx5_klm / mlx5_ksm, big-endian).
            let words = r.entries(ifc::create_mkey_in::klm_pas_mtt, n as usize * 2)?;
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
            if mode == ACCESS_MODE_KLMS {
                Translation::Klm { entries: parse_klms(&bytes) }
            } else {
                let shift = m::log_page_size.get(r.input) as u8;
                if !(12..=30).contains(&shift) {
                    return Err(fail!(status::BAD_PARAM, CREATE_MKEY_KSM_SIZE));
                }
                Translation::Ksm { entry_shift: shift, entries: parse_ksms(&bytes) }
            }
        }
        ACCESS_MODE_MEMIC => {
            let (off, size) = cx.hca.memic().ok_or(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_6))?;
            let end = start.checked_add(length).ok_or(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_7))?;
            if whole_space || start < off || end > off + size {
                return Err(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_8));
            }
            // Only allocated device memory can be registered.
            let inside = cx.rdma.memic_allocs.range(..=start).next_back().is_some_and(|(&a, &n)| end <= a + n);
            if !inside {
                return Err(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_9));
            }
            // Device-memory keys are zero based (libibverbs requires
            // IBV_ACCESS_ZERO_BASED): remote addresses run from 0 to len.
            Translation::DeviceMemory { base: start - off }
        }
        _ => return Err(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_10)),
    };
    if !whole_space && start.checked_add(length).is_none() {
        return Err(fail!(status::BAD_PARAM, CREATE_MKEY_BAD_PARAM_11));
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
    let ctx = MkeyCtx { mkc: r.sub(ifc::create_mkey_in::memory_key_mkey_entry)? };
    let index = eng!(cx.core.engine.create_mkey_with(mkey, ctx), CREATE_MKEY_ENGINE)?;
    let mut o = out(ifc::create_mkey_out::SIZE);
    ifc::create_mkey_out::mkey_index.set(&mut o, index as u64);
    Ok(o)
}

pub fn destroy_mkey(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let index = r.get(ifc::destroy_mkey_in::mkey_index) as u32;
    eng!(cx.core.engine.destroy_mkey(index), DESTROY_MKEY_ENGINE)?;
    Ok(out(ifc::destroy_mkey_out::SIZE))
}

pub fn query_mkey(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let index = r.get(ifc::query_mkey_in::mkey_index) as u32;
    let mkc = cx.core.engine.mkey(index).map(|e| &e.ext).ok_or(fail!(status::BAD_RES, QUERY_MKEY_BAD_RES))?;
    let mut o = out(ifc::query_mkey_out::SIZE);
    let range =
        ifc::query_mkey_out::memory_key_mkey_entry.byte_range().ok_or(fail!(status::INT_ERR, QUERY_MKEY_INT_ERR))?;
    o[range].copy_from_slice(&mkc.mkc);
    Ok(o)
}
