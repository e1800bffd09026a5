//! QUERY_HCA_CAP / SET_HCA_CAP over the capability pages ([`super::image`]).

use super::image::{CAP_AREA, CAP_ATOMIC, CAP_DEV_MEM, CAP_GENERAL};
use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::fields::Field;
use crate::hca::HcaCx;
use crate::ifc;
use crate::ifc::cmd_hca_cap;

pub fn query_hca_cap(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::query_hca_cap_in::other_function) != 0 {
        return Err(fail!(status::BAD_PARAM, QUERY_HCA_CAP_BAD_PARAM));
    }
    let cap_type = r.op_mod >> 1;
    let current = r.op_mod & 1 == 1;
    let table = if current { &cx.hca.caps_cur } else { &cx.hca.caps_max };
    let page = table.get(&cap_type).ok_or(fail!(status::BAD_PARAM, QUERY_HCA_CAP_BAD_PARAM_2))?;
    let mut o = out(ifc::query_hca_cap_out::SIZE);
    let range = ifc::query_hca_cap_out::capability.byte_range().ok_or(fail!(status::INT_ERR, QUERY_HCA_CAP_INT_ERR))?;
    o[range].copy_from_slice(&page[..CAP_AREA]);
    Ok(o)
}

/// Fields of `cmd_hca_cap` the driver may set (SET_HCA_CAP); everything
/// else it writes back is ignored, as firmware does.
const SETTABLE_GENERAL: &[Field] = &[
    cmd_hca_cap::pkey_table_size,
    cmd_hca_cap::log_max_qp,
    cmd_hca_cap::cmdif_checksum,
    cmd_hca_cap::log_uar_page_sz,
    cmd_hca_cap::uar_4k,
    cmd_hca_cap::cache_line_128byte,
    cmd_hca_cap::num_vhca_ports,
    cmd_hca_cap::release_all_pages,
    cmd_hca_cap::mkey_by_name,
];

pub fn set_hca_cap(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    let cap_type = r.op_mod >> 1;
    if r.op_mod & 1 != 0 || r.get(ifc::set_hca_cap_in::other_function) != 0 {
        return Err(fail!(status::BAD_PARAM, SET_HCA_CAP_BAD_PARAM));
    }
    let new = r.sub(ifc::set_hca_cap_in::capability)?;
    let max = cx.hca.caps_max.get(&cap_type).ok_or(fail!(status::BAD_PARAM, SET_HCA_CAP_BAD_PARAM_2))?.clone();
    let cur = cx.hca.caps_cur.get_mut(&cap_type).ok_or(fail!(status::BAD_PARAM, SET_HCA_CAP_BAD_PARAM_3))?;
    if cap_type == CAP_GENERAL {
        for &f in SETTABLE_GENERAL {
            let v = f.get(&new);
            let m = f.get(&max);
            // Feature bits can only be set where MAX has them; sizes only up to MAX.
            let ok = if f == cmd_hca_cap::log_max_qp {
                v <= m
            } else if f.bits == 1 {
                v == 0 || m != 0
            } else {
                true
            };
            if !ok {
                return Err(fail!(status::BAD_PARAM, SET_HCA_CAP_BAD_PARAM_4));
            }
            f.set(cur, v);
        }
        // The QP table is as large as the driver asked (mlx5_core's profiles set log_max_qp).
        cx.core.engine.set_qp_limit(1usize << cmd_hca_cap::log_max_qp.get(cur).min(31));
        if cmd_hca_cap::uar_4k.get(cur) != 0 || cmd_hca_cap::log_uar_page_sz.get(cur) != 0 {
            // Only 4 KiB UAR pages exist here.
            return Err(fail!(status::BAD_PARAM, SET_HCA_CAP_BAD_PARAM_5));
        }
    } else if cap_type == CAP_ATOMIC {
        use ifc::atomic_caps as a;
        let mode = a::atomic_req_8B_endianness_mode.get(&new);
        if mode > 1 || (mode == 1 && a::supported_atomic_req_8B_endianness_mode_1.get(&max) == 0) {
            return Err(fail!(status::BAD_PARAM, SET_HCA_CAP_BAD_PARAM_6));
        }
        a::atomic_req_8B_endianness_mode.set(cur, mode);
        cx.core.pending.set_atomic_reply_be(mode == 0);
    } else if cap_type == CAP_DEV_MEM {
        // Nothing on the DEV_MEM page is settable.
    } else {
        return Err(fail!(status::BAD_PARAM, SET_HCA_CAP_BAD_PARAM_7));
    }
    Ok(out(ifc::set_hca_cap_out::SIZE))
}
