//! The datagram path of the firmware: send queues of UD-class QPs (QP0, QP1
//! and UD) are drained on their doorbell, MADs and datagrams addressed to
//! this port are delivered to the target QP's receive queue, and every WQE
//! completes (success, error, or flush) with the CQE hardware writes.
//! Connected QPs (RC/UC) go through the engine's transports.
//!
//! Without a fabric peer, a datagram to another LID leaves the port and is
//! gone (it completes successfully, as on a wire with nobody listening):
//! MAD senders never stall.

use std::sync::atomic::Ordering;

use tracing::{debug, warn};

use super::cqe::{self, op, syndrome, Cqe};
use super::be32_at;
use crate::mlx5::firmware::{buf_addr, Firmware, QpCtx};
use super::sq_ops;
use crate::engine::verbs::WrOpcode;
use super::wqe::{self, opcode, CtrlSeg, Payload, WQEBB};
use crate::engine::{Access, QpState, QpTransition, QpType};

/// Bytes of the GRH area at the head of every UD receive buffer.
pub const GRH_LEN: usize = 40;
/// IBTA GSI Q_Key.
pub const GSI_QKEY: u32 = 0x8001_0000;
/// Permissive LID.
pub const PERMISSIVE_LID: u16 = 0xffff;

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
}

/// What a QP's doorbell record announces at the head of its send queue.
pub(crate) enum SqHead {
    /// Nothing new, or the WQE at the consumer index is not (yet) the one the
    /// doorbell announced: stop at the doorbell.
    Empty,
    /// The WQE at consumer index `ci` lies outside guest memory.
    Unreadable { ci: u16 },
    /// A WQE at consumer index `ci` with this control segment; `first` is
    /// its first WQEBB as read (all of a one-WQEBB WQE).
    Ready { ci: u16, ctrl: CtrlSeg, first: Vec<u8> },
}

impl Firmware {
    fn sq_addr(ctx: &QpCtx, idx: u16) -> Option<u64> {
        if ctx.sq_entries == 0 {
            return None;
        }
        let off = ctx.rq_entries as u64 * ctx.rq_stride as u64 + ((idx as u32 & (ctx.sq_entries - 1)) as u64) * WQEBB as u64;
        buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off)
    }

    fn rq_addr(ctx: &QpCtx, idx: u16) -> Option<u64> {
        if ctx.rq_entries == 0 {
            return None;
        }
        let off = ((idx as u32 & (ctx.rq_entries - 1)) as u64) * ctx.rq_stride as u64;
        buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off)
    }

    /// The next send WQE of QP `qpn`, as its doorbell record announces it.
    pub(crate) fn sq_head(&self, qpn: u32, ctx: &QpCtx) -> SqHead {
        match Self::sq_producer(&*self.mem, ctx) {
            Some(pc) => self.sq_head_upto(qpn, ctx, pc),
            None => SqHead::Empty,
        }
    }

    /// The send doorbell record's producer counter (the second big-endian word).
    pub(crate) fn sq_producer(mem: &dyn crate::engine::GuestMemory, ctx: &QpCtx) -> Option<u16> {
        be32_at(mem, ctx.dbr_addr + 4).map(|pc| pc as u16)
    }

    /// The next send WQE of QP `qpn` if it is before producer counter `pc`.
    pub(crate) fn sq_head_upto(&self, qpn: u32, ctx: &QpCtx, pc: u16) -> SqHead {
        let ci = ctx.sq_ci;
        if ci == pc {
            return SqHead::Empty;
        }
        let Some(first) = self.read_sq(ctx, ci, 1) else {
            warn!(qpn, "SQ outside guest memory");
            return SqHead::Unreadable { ci };
        };
        let ctrl = CtrlSeg::parse(first[..16].try_into().expect("16 bytes"));
        if ctrl.wqe_index != ci {
            debug!(qpn, expected = ci, got = ctrl.wqe_index, "WQE index mismatch: stop at the doorbell");
            return SqHead::Empty;
        }
        SqHead::Ready { ci, ctrl, first }
    }

    /// The whole WQE at the SQ head: `first` if it is one WQEBB, else all
    /// `nbb` read again (a copy taken at one time, parsed as such).
    pub(crate) fn sq_wqe(&self, ctx: &QpCtx, ci: u16, nbb: usize, first: Vec<u8>) -> Option<Vec<u8>> {
        if nbb == 1 {
            Some(first)
        } else {
            self.read_sq(ctx, ci, nbb)
        }
    }

    /// Copies `nbb` WQEBBs starting at SQ index `idx` (wrapping at the end of the SQ).
    pub(crate) fn read_sq(&self, ctx: &QpCtx, idx: u16, nbb: usize) -> Option<Vec<u8>> {
        let mut w = vec![0u8; nbb * WQEBB];
        for i in 0..nbb {
            let a = Self::sq_addr(ctx, idx.wrapping_add(i as u16))?;
            self.mem.read(a, &mut w[i * WQEBB..(i + 1) * WQEBB]).ok()?;
        }
        Some(w)
    }

    /// Writes a CQE to CQ `cqn` and raises a completion event if armed for it.
    pub fn post_cqe(&mut self, cqn: u32, c: &Cqe, solicited: bool) -> bool {
        if self.engine.cqs.get(cqn).is_some_and(|cq| !cq.has_room()) {
            // Full by the last known count: the driver may have consumed
            // since (its index is in the CQ doorbell record).
            self.refresh_cq(cqn);
        }
        let Some(ctx) = self.cqs.get(&cqn) else { return false };
        let Some(cq) = self.engine.cqs.get_mut(cqn) else { return false };
        if !cq.has_room() {
            cq.overrun = true;
            warn!(cqn, "CQ overrun: completion dropped");
            return false;
        }
        let entries = cq.entries();
        let slot = (cq.producer & (entries - 1)) as u64;
        let owner = ((cq.producer >> cq.log_size) & 1) as u8;
        let Some(addr) = buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, slot * ctx.cqe_size as u64) else {
            warn!(cqn, "CQE address outside the CQ's pages");
            return false;
        };
        let c = &Cqe { timestamp: crate::mlx5::clock::now(), ..*c };
        if !cqe::write(&*self.mem, addr, ctx.cqe_size, c, owner) {
            warn!(cqn, addr, "CQE write outside guest memory");
            return false;
        }
        cq.producer = cq.producer.wrapping_add(1);
        let error = matches!(c.opcode, op::REQ_ERR | op::RESP_ERR);
        self.cq_event(cqn, solicited || error);
        true
    }

    /// A send doorbell for `qpn`.
    pub fn send_doorbell(&mut self, qpn: u32) {
        let Some(qp) = self.engine.qps.get(qpn) else {
            debug!(qpn, "send doorbell for a nonexistent QP ignored");
            return;
        };
        match qp.qp_type {
            QpType::Smi | QpType::Gsi => self.drain_ud_sq(qpn),
            QpType::RegUmr => self.drain_umr_sq(qpn),
            t if super::engine_qp(t) => self.engine_send_doorbell(qpn),
            _ => self.no_send_path(qpn),
        }
    }

    /// A send doorbell on a QP type the device accepts at CREATE_QP but does
    /// not execute sends for (XRC initiator, ...): through the same SQ loop
    /// as the firmware's own QPs, the WQE at the head completes with
    /// LOCAL_QP_OP_ERR and the QP moves to ERR (the rest flush), as for any
    /// WQE the device does not execute.
    fn no_send_path(&mut self, qpn: u32) {
        if self.qps.get(&qpn).is_some_and(|ctx| ctx.sq_entries == 0) {
            debug!(qpn, "send doorbell on a QP without a send queue ignored");
            return;
        }
        self.drain_fw_sq(qpn, |fw, qpn, _, ctrl| {
            let qp_type = fw.engine.qps.get(qpn).map(|q| q.qp_type);
            warn!(qpn, ?qp_type, opcode = ctrl.opcode, "send WQE on a QP without a send path");
            Err(syndrome::LOCAL_QP_OP_ERR)
        });
    }

    fn drain_ud_sq(&mut self, qpn: u32) {
        self.drain_fw_sq(qpn, |fw, qpn, w, ctrl| {
            let Some(qp) = fw.engine.qps.get(qpn) else { return Err(syndrome::LOCAL_QP_OP_ERR) };
            let (qp_type, pd) = (qp.qp_type, qp.pd);
            fw.execute_ud_wqe(qpn, qp_type, pd, w, ctrl)
        });
    }

    /// The send queue of a QP the firmware executes itself (QP0/QP1, the
    /// REG_UMR QP): every WQE up to the doorbell record, in order, through
    /// `exec`. A signaled WQE that executed gets a REQ CQE; one that did
    /// not (or could not be fetched) gets an error CQE with `exec`'s
    /// syndrome and the QP goes to ERR; an ERR QP flushes.
    pub(super) fn drain_fw_sq(&mut self, qpn: u32, exec: impl Fn(&mut Firmware, u32, &[u8], &CtrlSeg) -> Result<(), u8>) {
        // Bounded: at most one pass over the SQ per doorbell.
        for _ in 0..=(1u32 << 16) {
            let Some(qp) = self.engine.qps.get(qpn) else { return };
            let (state, send_cq) = (qp.state, qp.send_cq);
            let Some(ctx) = self.qps.get(&qpn) else { return };
            if state == QpState::Err {
                self.flush_qp(qpn);
                return;
            }
            if state != QpState::Rts {
                return;
            }
            let (ci, ctrl, first) = match self.sq_head(qpn, ctx) {
                SqHead::Empty => return,
                SqHead::Unreadable { ci } => {
                    self.qp_error(qpn, ci, 0, syndrome::LOCAL_QP_OP_ERR, true);
                    return;
                }
                SqHead::Ready { ci, ctrl, first } => (ci, ctrl, first),
            };
            let nbb = ctrl.wqebbs();
            let result = if nbb > wqe::MAX_WQEBBS || ctrl.ds == 0 {
                Err(syndrome::LOCAL_QP_OP_ERR)
            } else {
                match self.sq_wqe(ctx, ci, nbb, first) {
                    None => Err(syndrome::LOCAL_QP_OP_ERR),
                    Some(w) => exec(self, qpn, &w, &ctrl),
                }
            };
            if let Some(ctx) = self.qps.get_mut(&qpn) {
                ctx.sq_ci = ci.wrapping_add(nbb as u16);
            }
            match result {
                Ok(()) => {
                    if let (true, Some(cqn)) = (ctrl.signaled(), send_cq) {
                        let user_index = self.qps.get(&qpn).map(|c| c.user_index).unwrap_or(0);
                        let c = Cqe { opcode: op::REQ, wqe_opcode: ctrl.opcode, qpn, wqe_counter: ctrl.wqe_index, user_index, ..Default::default() };
                        self.post_cqe(cqn, &c, false);
                    }
                }
                Err(s) => {
                    self.qp_error(qpn, ctrl.wqe_index, ctrl.opcode, s, true);
                    return;
                }
            }
        }
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
                let own_qkey = self.engine.qps.get(qpn).map(|q| q.attrs.qkey).unwrap_or(0);
                let dg = Datagram {
                    src_qpn,
                    slid: self.port.lid,
                    sl: s.av.sl,
                    qkey: if s.av.use_qp_qkey { own_qkey } else { s.av.qkey },
                    solicited: ctrl.solicited(),
                    imm: (ctrl.opcode == opcode::SEND_IMM).then_some(ctrl.imm),
                    data,
                };
                let words = (dg.data.len() as u64).div_ceil(4);
                self.counters.xmit_pkts.fetch_add(1, Ordering::Relaxed);
                self.counters.xmit_data_words.fetch_add(words, Ordering::Relaxed);
                let to_self = s.av.rlid == self.port.lid || s.av.rlid == PERMISSIVE_LID || qp_type == QpType::Smi;
                if to_self && self.port.port_state == 4 {
                    self.deliver_local(s.av.dqpn, dg);
                }
                Ok(())
            }
            // classify() refuses every other operation on these QP types.
            _ => Err(syndrome::LOCAL_QP_OP_ERR),
        }
    }

    /// Reads a send's local data through its lkeys.
    pub fn gather(&self, p: &Payload, pd: u32) -> Result<Vec<u8>, u8> {
        match p {
            Payload::Inline(d) => Ok(d.clone()),
            Payload::Gather(sges) => {
                let mut out = Vec::new();
                for sge in sges {
                    if sge.len == 0 {
                        continue;
                    }
                    let key = self.engine.lookup_key(sge.lkey).ok_or(syndrome::LOCAL_PROT_ERR)?;
                    let chunks = key.translate(sge.addr, sge.len as u64, pd, Access::LOCAL_READ).map_err(|_| syndrome::LOCAL_PROT_ERR)?;
                    for (pa, n) in chunks {
                        let start = out.len();
                        out.resize(start + n as usize, 0);
                        self.mem.read(pa, &mut out[start..]).map_err(|_| syndrome::LOCAL_PROT_ERR)?;
                    }
                }
                Ok(out)
            }
        }
    }

    /// Delivers a datagram addressed to this port: QPN 0/1 are the special QPs.
    pub fn deliver_local(&mut self, dqpn: u32, dg: Datagram) {
        let target = match dqpn {
            0 => self.engine.qps.iter().find(|(_, q)| q.qp_type == QpType::Smi).map(|(n, _)| n),
            1 => self.engine.qps.iter().find(|(_, q)| q.qp_type == QpType::Gsi).map(|(n, _)| n),
            n => self.engine.qps.get(n).filter(|q| q.qp_type == QpType::Ud).map(|_| n),
        };
        match target {
            Some(t) => self.receive_ud(t, dg),
            None => debug!(dqpn, "datagram for no QP dropped"),
        }
    }

    /// Places a datagram into QP `qpn`'s receive queue (UD semantics: no
    /// receive posted or a Q_Key mismatch drops it).
    pub fn receive_ud(&mut self, qpn: u32, dg: Datagram) {
        let Some(qp) = self.engine.qps.get(qpn) else { return };
        let (state, qp_type, recv_cq, pd, qkey) = (qp.state, qp.qp_type, qp.recv_cq, qp.pd, qp.attrs.qkey);
        if !matches!(state, QpState::Rtr | QpState::Rts) {
            return;
        }
        if qp_type != QpType::Smi && dg.qkey != qkey {
            debug!(qpn, "Q_Key mismatch: datagram dropped");
            return;
        }
        let Some(ctx) = self.qps.get(&qpn) else { return };
        let Some(pc) = be32_at(&*self.mem, ctx.dbr_addr) else { return };
        let ci = ctx.rq_ci;
        if ci == pc as u16 {
            debug!(qpn, "no receive posted: datagram dropped");
            self.counters.rcv_errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Some(a) = Self::rq_addr(ctx, ci) else { return };
        let mut w = vec![0u8; ctx.rq_stride];
        if self.mem.read(a, &mut w).is_err() {
            self.qp_error(qpn, ci, 0, syndrome::LOCAL_QP_OP_ERR, false);
            return;
        }
        let user_index = ctx.user_index;
        let sges = wqe::parse_recv(&w);
        let mut msg = vec![0u8; GRH_LEN];
        msg.extend_from_slice(&dg.data);
        // Scatter.
        let mut done = 0usize;
        for sge in &sges {
            if done == msg.len() {
                break;
            }
            let n = (sge.len as usize).min(msg.len() - done);
            let Some(key) = self.engine.lookup_key(sge.lkey) else {
                self.qp_error(qpn, ci, 0, syndrome::LOCAL_PROT_ERR, false);
                return;
            };
            let Ok(chunks) = key.translate(sge.addr, n as u64, pd, Access::LOCAL_WRITE) else {
                self.qp_error(qpn, ci, 0, syndrome::LOCAL_PROT_ERR, false);
                return;
            };
            for (pa, len) in chunks {
                if self.mem.write(pa, &msg[done..done + len as usize]).is_err() {
                    self.qp_error(qpn, ci, 0, syndrome::LOCAL_PROT_ERR, false);
                    return;
                }
                done += len as usize;
            }
        }
        if done < msg.len() {
            self.qp_error(qpn, ci, 0, syndrome::LOCAL_LENGTH_ERR, false);
            return;
        }
        if let Some(ctx) = self.qps.get_mut(&qpn) {
            ctx.rq_ci = ci.wrapping_add(1);
        }
        self.counters.rcv_pkts.fetch_add(1, Ordering::Relaxed);
        self.counters.rcv_data_words.fetch_add((dg.data.len() as u64).div_ceil(4), Ordering::Relaxed);
        if let Some(cqn) = recv_cq {
            let c = Cqe {
                opcode: if dg.imm.is_some() { op::RESP_SEND_IMM } else { op::RESP_SEND },
                qpn,
                wqe_counter: ci,
                byte_cnt: msg.len() as u32,
                user_index,
                imm_inval_pkey: dg.imm.unwrap_or(0),
                src_qpn: dg.src_qpn,
                sl: dg.sl,
                slid: dg.slid,
                solicited: dg.solicited,
                ..Default::default()
            };
            self.post_cqe(cqn, &c, dg.solicited);
        }
    }

    /// The first error of a QP: an error CQE for the failing WQE, the QP
    /// moves to ERR, every other outstanding WQE is flushed.
    pub fn qp_error(&mut self, qpn: u32, wqe_counter: u16, wqe_opcode: u8, syn: u8, send: bool) {
        let Some(qp) = self.engine.qps.get(qpn) else { return };
        let cq = if send { qp.send_cq } else { qp.recv_cq };
        let user_index = self.qps.get(&qpn).map(|c| c.user_index).unwrap_or(0);
        warn!(qpn, syndrome = syn, send, "work request failed: QP to error");
        if let Some(cqn) = cq {
            let c = Cqe {
                opcode: if send { op::REQ_ERR } else { op::RESP_ERR },
                wqe_opcode,
                qpn,
                wqe_counter,
                user_index,
                syndrome: syn,
                vendor_syndrome: 0x79,
                ..Default::default()
            };
            self.post_cqe(cqn, &c, true);
        }
        if let Some(ctx) = self.qps.get_mut(&qpn) {
            if !send {
                ctx.rq_ci = ctx.rq_ci.wrapping_add(1);
            }
        }
        let _ = self.engine.modify_qp(qpn, QpTransition::ToErr, &Default::default());
        self.flush_qp(qpn);
    }

    /// Completes every outstanding WQE of an ERR QP with WR_FLUSH_ERR, one each.
    pub fn flush_qp(&mut self, qpn: u32) {
        let Some(qp) = self.engine.qps.get(qpn) else { return };
        if qp.state != QpState::Err {
            return;
        }
        let (send_cq, recv_cq, has_srq) = (qp.send_cq, qp.recv_cq, qp.srq.is_some());
        let Some(ctx) = self.qps.get(&qpn).cloned() else { return };
        let mut c = Cqe { qpn, user_index: ctx.user_index, syndrome: syndrome::WR_FLUSH_ERR, vendor_syndrome: 0x79, ..Default::default() };
        // Send queue.
        if ctx.sq_entries > 0 {
            if let Some(pc) = be32_at(&*self.mem, ctx.dbr_addr + 4) {
                let mut ci = ctx.sq_ci;
                let mut n = 0;
                while ci != pc as u16 && n <= ctx.sq_entries {
                    let Some(first) = self.read_sq(&ctx, ci, 1) else { break };
                    let ctrl = CtrlSeg::parse(first[..16].try_into().expect("16 bytes"));
                    if ctrl.wqe_index != ci {
                        break;
                    }
                    c.opcode = op::REQ_ERR;
                    c.wqe_opcode = ctrl.opcode;
                    c.wqe_counter = ci;
                    if let Some(cqn) = send_cq {
                        self.post_cqe(cqn, &c, false);
                    }
                    ci = ci.wrapping_add(ctrl.wqebbs() as u16);
                    n += 1;
                }
                if let Some(x) = self.qps.get_mut(&qpn) {
                    x.sq_ci = ci;
                }
            }
        }
        // Receive queue (an SRQ's WQEs belong to the SRQ, not the QP).
        if ctx.rq_entries > 0 && !has_srq {
            if let Some(pc) = be32_at(&*self.mem, ctx.dbr_addr) {
                let mut ci = ctx.rq_ci;
                let mut n = 0;
                while ci != pc as u16 && n <= ctx.rq_entries {
                    c.opcode = op::RESP_ERR;
                    c.wqe_opcode = 0;
                    c.wqe_counter = ci;
                    if let Some(cqn) = recv_cq {
                        self.post_cqe(cqn, &c, false);
                    }
                    ci = ci.wrapping_add(1);
                    n += 1;
                }
                if let Some(x) = self.qps.get_mut(&qpn) {
                    x.rq_ci = ci;
                }
            }
        }
    }
}
