//! MAD_IFC: the firmware's SMA and PMA ([`super::mad`]) answer the
//! driver's MADs; PerfMgt reads the port's real totals; what an SM's
//! SubnSet(PortInfo) changed reaches the driver as PORT_CHANGE events.

use super::mad;
use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ib::IbCx;
use crate::ifc;

pub fn mad_ifc(cx: &mut IbCx<'_>, r: &Req<'_>) -> CmdResult {
    let port = r.get(ifc::mad_ifc_in::port) as u8;
    if port != 1 {
        return Err(fail!(status::BAD_PARAM, MAD_IFC_BAD_PARAM));
    }
    let mad_in = ifc::mad_ifc_in::mad.bytes(r.input).ok_or(fail!(status::BAD_INP_LEN, MAD_IFC_BAD_INP_LEN))?;
    let req: [u8; mad::MAD_SIZE] = mad_in.try_into().map_err(|_| fail!(status::BAD_INP_LEN, MAD_IFC_BAD_INP_LEN_2))?;
    // PerfMgt answers from the port's real totals (fabric + local MADs).
    let now = cx.ib.totals(cx.counters);
    let view = super::port::FwPortCounters::pma_view(&now, &cx.ib.pma_base);
    let reply = mad::process_set(&req, port, cx.cfg, &view);
    for &sub in &reply.events {
        cx.core.port_event(sub);
    }
    let is_clear = req[1] == mad::MGMT_CLASS_PERF_MGMT && req[3] == mad::METHOD_SET && req[66..68] != [0, 0];
    if is_clear && reply.status == 0 {
        cx.ib.pma_base = now;
    }
    let mut o = out(ifc::mad_ifc_out::SIZE);
    let range = ifc::mad_ifc_out::response_mad_packet.byte_range().ok_or(fail!(status::INT_ERR, MAD_IFC_INT_ERR))?;
    o[range].copy_from_slice(&reply.mad);
    Ok(o)
}
