//! Datagrams the firmware carries itself: QP0/QP1 sends on an InfiniBand
//! port. Every one leaves the port (`mad_wire.rs`): to another LID over the
//! fabric, to this port's own LID through the fabric port's loopback, into
//! the modeled switch (a directed-route SMP past hop 0, the permissive LID,
//! the switch's LID: the IB stage in front of the fabric port takes those).
//! Only DLID 0, which is no port's, stays in the port. Without a route it
//! is counted by the fabric and gone (it completes successfully, as on a
//! wire with nobody listening): MAD senders never stall. A port that is not
//! ACTIVE sends SMPs only (INIT and ARMED: IBTA 7.2), a DOWN one nothing.

use std::sync::atomic::Ordering;

use tracing::{debug, warn};

use crate::datapath::cqe::{op, syndrome, Cqe};
use crate::datapath::dbr::be32_at;
use crate::datapath::fw_sq::drain_fw_sq;
use crate::datapath::sq;
use crate::datapath::sq_ops;
use crate::datapath::wqe::{self, opcode, CtrlSeg, Payload, Piece};
use crate::firmware::Firmware;
use vrnic_engine::verbs::WrOpcode;
use vrnic_engine::{Access, QpState, QpType};

/// Bytes of the GRH area at the head of every UD receive buffer.
pub const GRH_LEN: usize = 40;
/// IBTA GSI Q_Key.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// The P_Key of every QP1 receive on the IB port: the P_Key table's only
/// entry (the default full-membership 0xffff).
const GSI_PKEY: u32 = 0xffff;

/// A datagram on its way to a receive queue.
#[derive(Debug, Clone)]
pub struct Datagram {
    pub src_qpn: u32,
    pub slid: u16,
    pub sl: u8,
    pub qkey: u32,
    pub solicited: bool,
    pub imm: Option<u32>,
    pub data: Vec<u8>,
    /// The GRH it travelled with (written into the receive buffer's GRH
    /// area, the CQE's GRH flag set); `None` leaves the area zero.
    pub grh: Option<[u8; GRH_LEN]>,
    /// It came from the fabric, whose port counters already count it (the
    /// firmware's PortCounters count only what it delivers locally).
    pub on_wire: bool,
}

impl Firmware {
    pub(crate) fn drain_ud_sq(&mut self, qpn: u32) {
        drain_fw_sq(self, qpn, |fw, qpn, w, ctrl| {
            let Some(qp) = fw.core.engine.qp(qpn) else { return Err(syndrome::LOCAL_QP_OP_ERR) };
            let (qp_type, pd) = (qp.qp_type, qp.pd);
            fw.execute_ud_wqe(qpn, qp_type, pd, w, ctrl)
        });
    }

    /// Executes one UD-class send WQE.
    fn execute_ud_wqe(&mut self, qpn: u32, qp_type: QpType, pd: u32, w: &[u8], ctrl: &CtrlSeg) -> Result<(), u8> {
        let op = sq_ops::classify(qp_type, ctrl).map_err(|e| {
            warn!(qpn, opcode = ctrl.opcode, wqe = ctrl.wqe_index, "send WQE not executed: {e}");
            e.syndrome()
        })?;
        match op {
            WrOpcode::Nop => Ok(()),
            WrOpcode::Send | WrOpcode::SendImm => {
                let s = wqe::parse_ud_send(w).map_err(|_| syndrome::LOCAL_QP_OP_ERR)?;
                let max = if matches!(qp_type, QpType::Smi | QpType::Gsi) { 256 } else { 4096 };
                if s.payload.len() > max {
                    return Err(syndrome::LOCAL_LENGTH_ERR);
                }
                let data = self.gather(&s.payload, pd)?;
                let src_qpn = match qp_type {
                    QpType::Smi => 0,
                    QpType::Gsi => 1,
                    _ => qpn,
                };
                let own_qkey = self.core.engine.qp(qpn).map(|q| q.attrs.qkey).unwrap_or(0);
                let dg = Datagram {
                    src_qpn,
                    slid: self.cfg.lid,
                    sl: s.av.sl,
                    qkey: if s.av.use_qp_qkey { own_qkey } else { s.av.qkey },
                    solicited: ctrl.solicited(),
                    imm: (ctrl.opcode == opcode::SEND_IMM).then_some(ctrl.imm),
                    data,
                    grh: None,
                    on_wire: false,
                };
                // INIT and ARMED ports send SMPs only; a DOWN one nothing.
                let state = self.cfg.port_state;
                if state == 1 || (state != 4 && src_qpn != 0) {
                    return Ok(());
                }
                // LID 0 is no port's: it never leaves this one.
                if s.av.rlid != 0 {
                    return self.send_mad(&sq::ud_av(&s.av), s.av.dqpn, &dg);
                }
                let words = (dg.data.len() as u64).div_ceil(4);
                self.counters.xmit_pkts.fetch_add(1, Ordering::Relaxed);
                self.counters.xmit_data_words.fetch_add(words, Ordering::Relaxed);
                self.deliver_local(s.av.dqpn, dg);
                Ok(())
            }
            // classify() refuses every other operation on these QP types.
            _ => Err(syndrome::LOCAL_QP_OP_ERR),
        }
    }

    /// Reads a send's local data, inline segments and data segments (through
    /// their lkeys) in WQE order.
    fn gather(&self, p: &Payload, pd: u32) -> Result<Vec<u8>, u8> {
        let mut out = Vec::with_capacity(p.len() as usize);
        for piece in &p.0 {
            let sge = match piece {
                Piece::Inline(d) => {
                    out.extend_from_slice(d);
                    continue;
                }
                Piece::Sge(sge) if sge.length == 0 => continue,
                Piece::Sge(sge) => sge,
            };
            let chunks = (self.core.engine)
                .translate_key(sge.lkey, sge.addr, sge.length as u64, pd, Access::LOCAL_READ)
                .map_err(|_| syndrome::LOCAL_PROT_ERR)?;
            for (pa, n) in chunks {
                let start = out.len();
                out.resize(start + n as usize, 0);
                self.core.mem.read(pa, &mut out[start..]).map_err(|_| syndrome::LOCAL_PROT_ERR)?;
            }
        }
        Ok(out)
    }

    /// Delivers a datagram addressed to this port: QPN 0/1 are the special QPs.
    pub(super) fn deliver_local(&mut self, dqpn: u32, dg: Datagram) {
        let target = match dqpn {
            0 => self.core.engine.qps().find(|(_, q)| q.qp_type == QpType::Smi).map(|(n, _)| n),
            1 => self.core.engine.qps().find(|(_, q)| q.qp_type == QpType::Gsi).map(|(n, _)| n),
            n => self.core.engine.qp(n).filter(|q| q.qp_type == QpType::Ud).map(|_| n),
        };
        match target {
            Some(t) => self.receive_ud(t, dg),
            None => debug!(dqpn, "datagram for no QP dropped"),
        }
    }

    /// Places a datagram into QP `qpn`'s receive queue (UD semantics: no
    /// receive posted or a Q_Key mismatch drops it).
    fn receive_ud(&mut self, qpn: u32, dg: Datagram) {
        let Some(qp) = self.core.engine.qp(qpn) else { return };
        let (state, qp_type, recv_cq, pd, qkey) = (qp.state, qp.qp_type, qp.recv_cq, qp.pd, qp.attrs.qkey);
        if !matches!(state, QpState::Rtr | QpState::Rts) {
            return;
        }
        if qp_type != QpType::Smi && dg.qkey != qkey {
            debug!(qpn, "Q_Key mismatch: datagram dropped");
            return;
        }
        let Some(ctx) = self.core.engine.qp(qpn).map(|e| &e.ext) else { return };
        let Some(pc) = be32_at(&*self.core.mem, ctx.dbr_addr) else { return };
        let ci = ctx.rq_ci;
        if ci == pc as u16 {
            debug!(qpn, "no receive posted: datagram dropped");
            self.counters.rcv_errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Some(a) = Self::rq_addr(ctx, ci) else { return };
        let mut w = vec![0u8; ctx.rq_stride];
        if self.core.mem.read(a, &mut w).is_err() {
            self.core.qp_error(qpn, ci, 0, syndrome::LOCAL_QP_OP_ERR, false);
            return;
        }
        let user_index = ctx.user_index;
        let sges = wqe::parse_recv(&w);
        let mut msg = vec![0u8; GRH_LEN];
        if let Some(g) = &dg.grh {
            msg.copy_from_slice(g);
        }
        msg.extend_from_slice(&dg.data);
        // Scatter.
        let mut done = 0usize;
        for sge in &sges {
            if done == msg.len() {
                break;
            }
            let n = (sge.length as usize).min(msg.len() - done);
            let Ok(chunks) = self.core.engine.translate_key(sge.lkey, sge.addr, n as u64, pd, Access::LOCAL_WRITE)
            else {
                self.core.qp_error(qpn, ci, 0, syndrome::LOCAL_PROT_ERR, false);
                return;
            };
            for (pa, len) in chunks {
                if self.core.mem.write(pa, &msg[done..done + len as usize]).is_err() {
                    self.core.qp_error(qpn, ci, 0, syndrome::LOCAL_PROT_ERR, false);
                    return;
                }
                done += len as usize;
            }
        }
        if done < msg.len() {
            self.core.qp_error(qpn, ci, 0, syndrome::LOCAL_LENGTH_ERR, false);
            return;
        }
        if let Some(ctx) = self.core.engine.qp_mut(qpn).map(|e| &mut e.ext) {
            ctx.rq_ci = ci.wrapping_add(1);
        }
        if !dg.on_wire {
            self.counters.rcv_pkts.fetch_add(1, Ordering::Relaxed);
            self.counters.rcv_data_words.fetch_add((dg.data.len() as u64).div_ceil(4), Ordering::Relaxed);
        }
        if let Some(cqn) = recv_cq {
            let c = Cqe {
                opcode: if dg.imm.is_some() { op::RESP_SEND_IMM } else { op::RESP_SEND },
                qpn,
                wqe_counter: ci,
                byte_cnt: msg.len() as u32,
                user_index,
                // QP1 (IB): the packet's P_Key, which mlx5_ib looks up in the table for the
                // completion's pkey_index (ib_cm reports it as the BTH P_Key, rdma_cm compares it with the
                // path's); the table's only entry, which a QP1 packet must match to get here
                imm_inval_pkey: if qp_type == QpType::Gsi { GSI_PKEY } else { dg.imm.unwrap_or(0) },
                src_qpn: dg.src_qpn,
                sl: dg.sl,
                slid: dg.slid,
                grh: dg.grh.is_some(),
                solicited: dg.solicited,
                ..Default::default()
            };
            self.core.post_cqe(cqn, &c, dg.solicited);
        }
    }
}
