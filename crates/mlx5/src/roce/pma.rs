//! MAD_IFC on a RoCE port: the PMA only. ib_core reads the port's
//! `counters/` (ClassPortInfo at registration, PortCounters(Ext) on every
//! read) through mlx5_ib's `process_mad`, which hands PerfMgt MADs to the
//! firmware while `vport_counters` is 0. RoCE has no SMA (no QP0, no SMPs):
//! any other class is refused. The counters are the RoCE port's packets
//! (`fabric::roce::RoceCounters`), since the last PortCounters clear.

use std::sync::atomic::Ordering::Relaxed;

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ib::mad;
use crate::ib::port::FwPortCounters;
use crate::ifc;
use crate::roce::RoceCx;

/// The RoCE port's totals in PortCounters order: data words out/in,
/// packets out/in, receive errors, transmit discards.
fn totals(cx: &RoceCx<'_>) -> [u64; 6] {
    match cx.roce.counters.as_deref() {
        Some(c) => [
            c.tx_bytes.load(Relaxed) / 4,
            c.rx_bytes.load(Relaxed) / 4,
            c.tx_packets.load(Relaxed),
            c.rx_packets.load(Relaxed),
            c.rx_icrc_errors.load(Relaxed) + c.rx_malformed.load(Relaxed),
            c.tx_errors.load(Relaxed) + c.tx_no_gid.load(Relaxed),
        ],
        None => [0; 6],
    }
}

pub fn mad_ifc(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::mad_ifc_in::port) != 1 {
        return Err(fail!(status::BAD_PARAM, ROCE_MAD_IFC_BAD_PORT));
    }
    let mad_in = ifc::mad_ifc_in::mad.bytes(r.input).ok_or(fail!(status::BAD_INP_LEN, ROCE_MAD_IFC_BAD_INP_LEN))?;
    let req: [u8; mad::MAD_SIZE] =
        mad_in.try_into().map_err(|_| fail!(status::BAD_INP_LEN, ROCE_MAD_IFC_BAD_INP_LEN))?;
    if req[1] != mad::MGMT_CLASS_PERF_MGMT {
        return Err(fail!(status::BAD_PARAM, ROCE_MAD_IFC_NOT_PMA));
    }
    let now = totals(cx);
    let view = FwPortCounters::pma_view(&now, &cx.roce.pma_base);
    let reply = mad::process(&req, 1, cx.cfg, &view);
    let is_clear = req[3] == mad::METHOD_SET && req[66..68] != [0, 0];
    if is_clear && reply.status == 0 {
        cx.roce.pma_base = now;
    }
    let mut o = out(ifc::mad_ifc_out::SIZE);
    let range =
        ifc::mad_ifc_out::response_mad_packet.byte_range().ok_or(fail!(status::INT_ERR, ROCE_MAD_IFC_BAD_INP_LEN))?;
    o[range].copy_from_slice(&reply.mad);
    Ok(o)
}
