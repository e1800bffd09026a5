//! UD (and GSI/SMI) receive: Q_Key check, the GRH area, one message per packet.

use super::super::instance::Engine;
use super::super::objects::{Access, QpType};
use super::super::verbs::*;
use super::rq::take_recv;
use super::state::deliver;
use super::xfer::{sgl_capacity, sgl_xfer, Xfer};
use crate::fabric::RxMeta;
use crate::wire::deth;
use crate::wire::packet::RocePacket;
use crate::wire::roce::{self, NetHdr};

/// The GRH area at the start of a UD receive buffer.
pub const GRH_LEN: u32 = 40;

impl Engine {
    pub(super) fn ud_receive(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) {
        let Engine { qps, srqs, cqs, mkeys, rt, .. } = self;
        let Some(qp) = qps.get_mut(qpn) else { return };
        let Some(d) = p.headers.deth else { return };
        let want = if qp.qp_type == QpType::Gsi { deth::GSI_QKEY } else { qp.attrs.qkey };
        if d.qkey != want {
            count!(rt, qp, qkey_violations);
            return;
        }
        let Some((wr, _)) = take_recv(qp, srqs, &*rt.io.completions) else {
            count!(rt, qp, no_recv_drops);
            return;
        };
        let total = GRH_LEN as u64 + p.payload.len() as u64;
        let mut c = Completion::new(wr.wr_id, qpn, WcOpcode::Recv, WcStatus::Success);
        let cq = qp.recv_cq;
        if total > sgl_capacity(&wr.sgl) {
            c.status = WcStatus::LocLenErr;
            self.qp_fatal(qpn, Some((cq, c)));
            return;
        }
        // GRH area: the packet's GRH as it travelled, if it had one (on an
        // InfiniBand port a packet without one leaves the area untouched); on
        // RoCE the IP header in `union rdma_network_hdr`'s layout.
        let mem = &*rt.io.mem;
        let placed = match meta.grh {
            Some(g) => {
                let area = match meta.net {
                    NetHdr::Ib => g.to_bytes(),
                    n => roce::grh_area(n, &g),
                };
                sgl_xfer(mkeys, mem, qp.pd, &wr.sgl, 0, Xfer::Write(&area), Access::LOCAL_WRITE)
            }
            None => Ok(()),
        }
        .and_then(|()| {
            sgl_xfer(mkeys, mem, qp.pd, &wr.sgl, GRH_LEN as u64, Xfer::Write(p.payload), Access::LOCAL_WRITE)
        });
        if let Err(err) = placed {
            c.status = err.local_status();
            self.qp_fatal(qpn, Some((cq, c)));
            return;
        }
        c.byte_len = total as u32;
        c.src_qp = d.src_qp;
        c.slid = meta.src.lid;
        c.grh = meta.grh.is_some();
        c.imm = p.headers.immdt.map(|i| u32::from_be_bytes(i.imm));
        c.solicited = p.headers.bth.solicited;
        c.net = meta.net;
        c.vlan = meta.vlan;
        deliver(cqs, &*rt.io.completions, cq, c);
    }
}
