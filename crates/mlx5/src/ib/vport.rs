//! IB vport queries: QUERY_HCA_VPORT_CONTEXT, QUERY_VPORT_STATE.

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ib::IbCx;
use crate::ifc;

pub fn query_hca_vport_context(cx: &mut IbCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_hca_vport_context_out::hca_vport_context as c;
    if r.get(ifc::query_hca_vport_context_in::other_vport) != 0
        || r.get(ifc::query_hca_vport_context_in::vport_number) != 0
    {
        return Err(fail!(status::BAD_PARAM, QUERY_HCA_VPORT_CONTEXT_BAD_PARAM));
    }
    let pn = r.get(ifc::query_hca_vport_context_in::port_num);
    if pn > 1 {
        return Err(fail!(status::BAD_PARAM, QUERY_HCA_VPORT_CONTEXT_BAD_PARAM_2));
    }
    let p = &cx.cfg;
    let mut o = out(ifc::query_hca_vport_context_out::SIZE);
    c::has_smi.set(&mut o, 1);
    c::grh_required.set(&mut o, 0);
    c::port_physical_state.set(&mut o, p.phys_state as u64);
    c::port_state.set(&mut o, p.port_state as u64);
    c::vport_state.set(&mut o, p.port_state as u64);
    c::system_image_guid.set(&mut o, p.sys_image_guid);
    c::port_guid.set(&mut o, p.port_guid);
    c::node_guid.set(&mut o, p.node_guid);
    c::cap_mask1.set(&mut o, p.cap_mask as u64);
    c::lid.set(&mut o, p.lid as u64);
    c::sm_lid.set(&mut o, p.sm_lid as u64);
    c::sm_sl.set(&mut o, (p.sm_sl & 0xf) as u64);
    c::subnet_timeout.set(&mut o, 18);
    Ok(o)
}

pub fn query_vport_state(cx: &mut IbCx<'_>, r: &Req<'_>) -> CmdResult {
    r.own_vport(ifc::query_vport_state_in::other_vport, fail!(status::BAD_PARAM, QUERY_VPORT_STATE_BAD_PARAM))?;
    let up = if cx.cfg.port_state == 4 { 1 } else { 0 };
    let mut o = out(ifc::query_vport_state_out::SIZE);
    ifc::query_vport_state_out::admin_state.set(&mut o, 1);
    ifc::query_vport_state_out::state.set(&mut o, up);
    Ok(o)
}
