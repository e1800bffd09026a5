//! UD (and GSI/SMI) receive: Q_Key check, the GRH area, one message per
//! packet; and the send of one datagram for a queue the engine does not run
//! (QP0/QP1 on InfiniBand: `send_datagram`).

use super::super::instance::Engine;
use super::super::objects::{Access, QpType};
use super::super::verbs::*;
use super::rq::take_recv;
use super::state::{av_dest, deliver, Runtime};
use super::xfer::{sgl_capacity, sgl_xfer, Xfer};
use crate::personality::Personality;
use vrnic_packet::RxMeta;
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::deth;
use vrnic_wire::immdt;
use vrnic_wire::packet::{self, Headers, RocePacket};
use vrnic_wire::roce::{self, NetHdr};

/// The largest datagram payload [`Engine::send_datagram`] sends (a 4096-byte MTU).
pub const MAX_DATAGRAM: usize = 4096;

impl<P: Personality> Engine<P> {
    /// Sends one datagram on the same path a UD QP's sends take (address
    /// vector → `Dest`, GRH when the AV is global, the port's `PacketSink`).
    /// An AV whose `sgid_index` names no GID, or a datagram larger than a
    /// packet can carry, is not sent: `LocQpOpErr` / `LocLenErr`.
    pub fn send_datagram(&mut self, d: &OutDatagram<'_>) -> Result<(), WcStatus> {
        if d.payload.len() > MAX_DATAGRAM {
            return Err(WcStatus::LocLenErr);
        }
        let Runtime { io, buf, totals, .. } = &mut self.rt;
        let dest = av_dest(d.av, &*io.packets).ok_or(WcStatus::LocQpOpErr)?;
        let code = if d.imm.is_some() { Opcode::SEND_ONLY_IMM } else { Opcode::SEND_ONLY };
        let mut h = Headers::new(bth::Repr {
            opcode: Opcode::new(Opcode::UD, code),
            solicited: d.solicited,
            pkey: d.pkey,
            dest_qp: d.dest_qp,
            ..Default::default()
        });
        h.deth = Some(deth::Repr { qkey: d.qkey, src_qp: d.src_qp });
        h.immdt = d.imm.map(|i| immdt::Repr { imm: i.to_be_bytes() });
        packet::emit(&h, d.payload, buf).map_err(|_| WcStatus::LocQpOpErr)?;
        io.packets.send(&dest, buf);
        totals.tx_packets += 1;
        totals.tx_bytes += buf.len() as u64;
        Ok(())
    }

    pub(super) fn ud_receive(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) {
        let Engine { qps, srqs, cqs, mkeys, rt, .. } = self;
        let Some(qp) = qps.obj_mut(qpn) else { return };
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
        let total = vrnic_wire::grh::field::HEADER_LEN as u64 + p.payload.len() as u64;
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
            sgl_xfer(
                mkeys,
                mem,
                qp.pd,
                &wr.sgl,
                vrnic_wire::grh::field::HEADER_LEN as u64,
                Xfer::Write(p.payload),
                Access::LOCAL_WRITE,
            )
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
