//! The connected and datagram data path of user and kernel QPs (RC, UC,
//! UD): send WQEs become engine work requests on the send doorbell, receive
//! WQEs (which have no doorbell, only a doorbell record) are pulled into the
//! engine when a packet arrives for the QP, and the engine's completions and
//! events come back here to be written as CQEs and EQEs.
//!
//! The engine calls its completion sink while the firmware holds it, so the
//! sink ([`QueueSink`]) only queues; [`Firmware::drain`] writes them out
//! after every engine call.

pub mod cq_resize;
pub mod cqe;
pub mod fw_sq;
pub mod sq_ops;
pub mod umr;
pub mod wqe;

use std::sync::{Arc, Mutex};

use tracing::{debug, warn};

use cqe::{op, syndrome, Cqe};
use crate::mlx5::firmware::{buf_addr, Firmware};
use crate::mlx5::ifc;
use fw_sq::SqHead;

use wqe::{CtrlSeg, Payload};
use crate::engine::verbs::{Completion, CompletionSink, Event, RecvWr, SendWr, Sge, UdDest, WcOpcode, WcStatus, WrOpcode};
use crate::engine::{AddressVector, QpState, QpType};
use crate::wire::fabric::{PacketHandler, RxMeta};

/// What the engine reported, waiting to be written.
#[derive(Debug, Clone, Copy)]
pub enum Pending {
    Complete { cqn: u32, index: u32, c: Completion },
    Event(Event),
}

/// The engine's completion sink: a queue the firmware drains. It also
/// knows each CQ's doorbell record, to read the driver's consumer index
/// when the engine finds a CQ full by its last known count (reading it for
/// every packet and doorbell instead cost ~13% of the data path).
pub struct QueueSink {
    q: Mutex<Vec<Pending>>,
    mem: Arc<dyn crate::engine::GuestMemory>,
    cq_dbrs: Mutex<std::collections::HashMap<u32, u64>>,
}

impl QueueSink {
    pub fn new(mem: Arc<dyn crate::engine::GuestMemory>) -> QueueSink {
        QueueSink { q: Mutex::new(Vec::new()), mem, cq_dbrs: Mutex::new(Default::default()) }
    }

    fn take(&self) -> Vec<Pending> {
        std::mem::take(&mut *self.q.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// CQ `cqn` keeps its consumer index at `dbr_addr` (None: forget it).
    pub fn cq_dbr(&self, cqn: u32, dbr_addr: Option<u64>) {
        let mut m = self.cq_dbrs.lock().unwrap_or_else(|e| e.into_inner());
        match dbr_addr {
            Some(a) => m.insert(cqn, a),
            None => m.remove(&cqn),
        };
    }

    pub fn forget_cqs(&self) {
        self.cq_dbrs.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl CompletionSink for QueueSink {
    fn complete(&self, cqn: u32, index: u32, c: &Completion) {
        self.q.lock().unwrap_or_else(|e| e.into_inner()).push(Pending::Complete { cqn, index, c: *c });
    }
    fn event(&self, ev: Event) {
        self.q.lock().unwrap_or_else(|e| e.into_inner()).push(Pending::Event(ev));
    }
    fn consumer(&self, cqn: u32, producer: u32) -> Option<u32> {
        let a = *self.cq_dbrs.lock().unwrap_or_else(|e| e.into_inner()).get(&cqn)?;
        be32_at(&*self.mem, a).map(|ci| crate::engine::cq_arm::expand_ci(producer, ci))
    }
}

/// QP types whose traffic runs through the engine (QP0/QP1 stay local).
pub fn engine_qp(t: QpType) -> bool {
    matches!(t, QpType::Rc | QpType::Uc | QpType::Ud)
}

/// `wr_id` layout of send WRs: WQE opcode and the WQE's index.
fn send_wr_id(c: &CtrlSeg) -> u64 {
    ((c.opcode as u64) << 32) | c.wqe_index as u64
}

/// A work request that completes, in order, with LOCAL_QP_OP_ERR (a WQE
/// that cannot be fetched or decoded); the engine moves the QP to ERR.
fn local_qp_op_err(wr_id: u64) -> SendWr {
    let mut wr = SendWr::new(wr_id, WrOpcode::Send, Vec::new());
    wr.local_error = Some(WcStatus::LocQpOpErr);
    wr.signaled = true;
    wr
}

fn status_syndrome(s: WcStatus) -> u8 {
    match s {
        WcStatus::Success => 0,
        WcStatus::LocLenErr => syndrome::LOCAL_LENGTH_ERR,
        WcStatus::LocQpOpErr => syndrome::LOCAL_QP_OP_ERR,
        WcStatus::LocProtErr => syndrome::LOCAL_PROT_ERR,
        WcStatus::WrFlushErr => syndrome::WR_FLUSH_ERR,
        WcStatus::RemInvReqErr => syndrome::REMOTE_INVAL_REQ_ERR,
        WcStatus::RemAccessErr => syndrome::REMOTE_ACCESS_ERR,
        WcStatus::RemOpErr => syndrome::REMOTE_OP_ERR,
        WcStatus::RetryExcErr => syndrome::TRANSPORT_RETRY_EXC_ERR,
        WcStatus::RnrRetryExcErr => syndrome::RNR_RETRY_EXC_ERR,
    }
}

pub(crate) fn be32_at(mem: &dyn crate::engine::GuestMemory, a: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    mem.read(a, &mut b).ok()?;
    Some(u32::from_be_bytes(b))
}

impl Firmware {
    /// Writes everything the engine reported since the last drain.
    pub fn drain(&mut self) {
        for _ in 0..64 {
            let items = self.pending.take();
            if items.is_empty() {
                return;
            }
            for p in items {
                match p {
                    Pending::Complete { cqn, index, c } => self.write_completion(cqn, index, &c),
                    Pending::Event(ev) => self.engine_event(ev),
                }
            }
        }
    }

    /// Encodes an engine completion as the CQE libmlx5 / mlx5_ib expect.
    fn write_completion(&mut self, cqn: u32, index: u32, c: &Completion) {
        let Some(ctx) = self.cqs.get(&cqn) else { return };
        let Some(cq) = self.engine.cqs.get(cqn) else { return };
        let user_index = self.qps.get(&c.qpn).map(|q| q.user_index).unwrap_or(0);
        let mut e = Cqe { qpn: c.qpn, user_index, byte_cnt: c.byte_len, solicited: c.solicited, ..Default::default() };
        let recv = c.opcode.is_recv();
        if recv {
            e.wqe_counter = c.wr_id as u16;
            e.src_qpn = c.src_qp;
            e.slid = c.slid;
            e.grh = c.grh;
            e.opcode = match (c.opcode, c.imm, c.invalidated_rkey) {
                (WcOpcode::RecvRdmaWithImm, _, _) => op::RESP_WR_IMM,
                (_, Some(_), _) => op::RESP_SEND_IMM,
                (_, _, Some(_)) => op::RESP_SEND_INV,
                _ => op::RESP_SEND,
            };
            e.imm_inval_pkey = c.imm.or(c.invalidated_rkey).unwrap_or(0);
        } else {
            e.wqe_counter = c.wr_id as u16;
            e.wqe_opcode = (c.wr_id >> 32) as u8;
            e.opcode = op::REQ;
            if !matches!(c.opcode, WcOpcode::RdmaRead | WcOpcode::CompSwap | WcOpcode::FetchAdd) {
                e.byte_cnt = 0;
            }
        }
        if c.status != WcStatus::Success {
            e.opcode = if recv { op::RESP_ERR } else { op::REQ_ERR };
            e.syndrome = status_syndrome(c.status);
            e.vendor_syndrome = 0x79;
        }
        e.timestamp = crate::mlx5::clock::now();
        let entries = cq.entries();
        let slot = (index & (entries - 1)) as u64;
        let owner = ((index >> cq.log_size) & 1) as u8;
        match buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, slot * ctx.cqe_size as u64) {
            Some(a) => {
                if !cqe::write(&*self.mem, a, ctx.cqe_size, &e, owner) {
                    warn!(cqn, "CQE write outside guest memory");
                }
            }
            None => warn!(cqn, "CQE address outside the CQ's pages"),
        }
    }

    fn engine_event(&mut self, ev: Event) {
        let async_eqs = |fw: &Firmware, ty: u32| -> Vec<u32> {
            fw.eqs.iter().filter(|(_, e)| e.event_bitmask[0] & (1u64 << ty) != 0).map(|(n, _)| *n).collect()
        };
        let qp_event = |fw: &mut Firmware, ty: u32, n: u32, srq: bool| {
            let mut data = [0u8; 28];
            ifc::qp_events::r#type.set(&mut data, srq as u64);
            ifc::qp_events::qpn_rqn_sqn.set(&mut data, n as u64);
            for eqn in async_eqs(fw, ty) {
                fw.post_eqe(eqn, ty as u8, 0, &data);
            }
        };
        match ev {
            Event::Completion { cqn, eqn } => {
                let mut data = [0u8; 28];
                ifc::comp_event::cq_number.set(&mut data, cqn as u64);
                self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_COMP as u8, 0, &data);
            }
            Event::CqError { cqn } => {
                warn!(cqn, "CQ overrun");
                let mut data = [0u8; 28];
                ifc::cq_error::cqn.set(&mut data, cqn as u64);
                ifc::cq_error::syndrome.set(&mut data, 1);
                for eqn in async_eqs(self, ifc::MLX5_EVENT_TYPE_CQ_ERROR) {
                    self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_CQ_ERROR as u8, 0, &data);
                }
            }
            Event::SrqLimit { srqn } => qp_event(self, ifc::MLX5_EVENT_TYPE_SRQ_RQ_LIMIT, srqn, true),
            Event::LastWqeReached { qpn } => qp_event(self, ifc::MLX5_EVENT_TYPE_SRQ_LAST_WQE, qpn, false),
            Event::CommEstablished { qpn } => qp_event(self, ifc::MLX5_EVENT_TYPE_COMM_EST, qpn, false),
            Event::QpFatal { qpn } => debug!(qpn, "QP entered ERR after an error completion"),
        }
    }

    /// Refreshes the consumer index of `cqn` from its doorbell record.
    pub fn refresh_cq(&mut self, cqn: u32) {
        let Some(cq) = self.engine.cqs.get_mut(cqn) else { return };
        if let Some(c) = self.pending.consumer(cqn, cq.producer) {
            cq.consumer = c;
        }
    }

    /// Hands the QP's new send WQEs (up to the doorbell record) to the engine.
    pub fn engine_send_doorbell(&mut self, qpn: u32) {
        self.sync_sq(qpn);
        self.drain();
    }

    fn sync_sq(&mut self, qpn: u32) {
        let Some(qp) = self.engine.qps.get(qpn) else { return };
        let (ud, state, qp_type) = (qp.qp_type == QpType::Ud, qp.state, qp.qp_type);
        if matches!(state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return;
        }
        // The doorbell record is read once: a WQE posted after this read
        // comes with a doorbell of its own, which syncs again.
        let Some(pc) = self.qps.get(&qpn).and_then(|ctx| Self::sq_producer(&*self.mem, ctx)) else { return };
        for _ in 0..=(1u32 << 16) {
            let Some(ctx) = self.qps.get(&qpn) else { return };
            if ctx.sq_entries == 0 {
                return;
            }
            let (ci, ctrl, first) = match self.sq_head_upto(qpn, ctx, pc) {
                SqHead::Empty => return,
                // A WQE fetch that faults is a local QP operation error, as
                // on hardware: an error CQE for that slot and the QP to ERR.
                SqHead::Unreadable { ci } => {
                    let wr = local_qp_op_err(ci as u64);
                    if let Some(ctx) = self.qps.get_mut(&qpn) {
                        ctx.sq_ci = ci.wrapping_add(1);
                    }
                    if let Err(e) = self.engine.post_send(qpn, wr) {
                        warn!(qpn, "post_send: {e}");
                    }
                    return;
                }
                SqHead::Ready { ci, ctrl, first } => (ci, ctrl, first),
            };
            let nbb = ctrl.wqebbs();
            let w = (nbb <= wqe::MAX_WQEBBS && ctrl.ds > 0).then(|| self.sq_wqe(ctx, ci, nbb, first)).flatten();
            let wr = match w {
                Some(w) => self.decode_send(qpn, qp_type, &w, &ctrl, ud),
                None => {
                    warn!(qpn, opcode = ctrl.opcode, wqe = ctrl.wqe_index, ds = ctrl.ds, "send WQE of a bad size or unreadable");
                    local_qp_op_err(send_wr_id(&ctrl))
                }
            };
            if let Some(ctx) = self.qps.get_mut(&qpn) {
                ctx.sq_ci = ci.wrapping_add(nbb as u16);
            }
            if let Err(e) = self.engine.post_send(qpn, wr) {
                warn!(qpn, "post_send: {e}");
            }
        }
    }

    /// A send WQE as an engine work request. A WQE the device does not
    /// execute (opcode, opmod, fence mode: [`sq_ops::classify`]) or cannot
    /// decode becomes a WR that fails in order with LOCAL_QP_OP_ERR.
    fn decode_send(&self, qpn: u32, qp_type: QpType, w: &[u8], ctrl: &CtrlSeg, ud: bool) -> SendWr {
        let bad = || local_qp_op_err(send_wr_id(ctrl));
        let op = match sq_ops::classify(qp_type, ctrl) {
            Ok(WrOpcode::Nop) => {
                let mut wr = SendWr::new(send_wr_id(ctrl), WrOpcode::Nop, Vec::new());
                wr.signaled = ctrl.signaled();
                return wr;
            }
            Ok(op) => op,
            Err(e) => {
                warn!(qpn, opcode = ctrl.opcode, wqe = ctrl.wqe_index, "send WQE not executed: {e}");
                return bad();
            }
        };
        let Ok(s) = wqe::parse_send(w, ud) else {
            warn!(qpn, opcode = ctrl.opcode, wqe = ctrl.wqe_index, ds = ctrl.ds, "malformed send WQE");
            return bad();
        };
        let (sgl, inline) = match s.payload {
            Payload::Gather(v) => (v.iter().map(|g| Sge { addr: g.addr, length: g.len, lkey: g.lkey }).collect(), None),
            Payload::Inline(d) => (Vec::new(), Some(d)),
        };
        let mut wr = SendWr::new(send_wr_id(ctrl), op, sgl);
        wr.inline = inline;
        wr.signaled = ctrl.signaled();
        wr.solicited = ctrl.solicited();
        wr.fence = ctrl.fm_ce_se & 0xe0 != 0;
        match op {
            WrOpcode::SendImm | WrOpcode::WriteImm => wr.imm = ctrl.imm,
            WrOpcode::SendInv => wr.invalidate_rkey = ctrl.imm,
            _ => {}
        }
        if let Some(r) = s.raddr {
            wr.remote_addr = r.raddr;
            wr.rkey = r.rkey;
        }
        if let Some(a) = s.atomic {
            wr.swap_add = a.swap_add;
            wr.compare = a.compare;
        }
        if let Some(av) = s.av {
            wr.ud = Some(UdDest {
                av: AddressVector {
                    dlid: av.rlid,
                    sl: av.sl,
                    src_path_bits: av.src_path_bits,
                    static_rate: av.stat_rate,
                    grh: av.grh,
                    sgid_index: av.sgid_index,
                    hop_limit: av.hop_limit,
                    traffic_class: av.tclass,
                    flow_label: av.flow_label,
                    dgid: av.rgid,
                    port: 1,
                },
                remote_qpn: av.dqpn,
                remote_qkey: av.qkey,
            });
        }
        wr
    }

    /// Pulls newly posted receive WQEs of a QP (or its SRQ) into the engine.
    pub fn sync_recv(&mut self, qpn: u32) {
        let Some(qp) = self.engine.qps.get(qpn) else { return };
        if qp.state == QpState::Reset {
            return;
        }
        if let Some(srqn) = qp.srq {
            self.sync_srq(srqn);
            return;
        }
        for _ in 0..=(1u32 << 16) {
            let Some(ctx) = self.qps.get(&qpn) else { return };
            if ctx.rq_entries == 0 {
                return;
            }
            let Some(pc) = be32_at(&*self.mem, ctx.dbr_addr) else { return };
            let idx = ctx.rq_ci;
            if idx == pc as u16 {
                return;
            }
            let off = ((idx as u32 & (ctx.rq_entries - 1)) as u64) * ctx.rq_stride as u64;
            let mut w = vec![0u8; ctx.rq_stride];
            let ok = buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off).is_some_and(|a| self.mem.read(a, &mut w).is_ok());
            if !ok {
                warn!(qpn, "RQ outside guest memory");
                return;
            }
            if let Some(ctx) = self.qps.get_mut(&qpn) {
                ctx.rq_ci = idx.wrapping_add(1);
            }
            let sgl = wqe::parse_recv(&w).iter().map(|g| Sge { addr: g.addr, length: g.len, lkey: g.lkey }).collect();
            if let Err(e) = self.engine.post_recv(qpn, RecvWr { wr_id: idx as u64, sgl }) {
                warn!(qpn, "post_recv: {e}");
                return;
            }
        }
    }

    /// SRQ: WQEs form a list through `next_wqe_index`; the doorbell record counts posted WQEs.
    pub fn sync_srq(&mut self, srqn: u32) {
        for _ in 0..=(1u32 << 16) {
            let Some(ctx) = self.srqs.get(&srqn) else { return };
            let Some(srq) = self.engine.srqs.get(srqn) else { return };
            let entries = 1u32 << srq.log_size;
            let Some(pc) = be32_at(&*self.mem, ctx.dbr_addr) else { return };
            if ctx.posted == pc as u16 {
                return;
            }
            let idx = ctx.head;
            let mut w = vec![0u8; ctx.stride];
            let off = ((idx as u32 & (entries - 1)) as u64) * ctx.stride as u64;
            let ok = buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off).is_some_and(|a| self.mem.read(a, &mut w).is_ok());
            if !ok || ctx.stride < 16 {
                warn!(srqn, "SRQ outside guest memory");
                return;
            }
            let next = u16::from_be_bytes([w[2], w[3]]);
            let sgl = wqe::parse_recv(&w[16..]).iter().map(|g| Sge { addr: g.addr, length: g.len, lkey: g.lkey }).collect();
            if let Some(ctx) = self.srqs.get_mut(&srqn) {
                ctx.head = next;
                ctx.posted = ctx.posted.wrapping_add(1);
            }
            if let Err(e) = self.engine.post_srq_recv(srqn, RecvWr { wr_id: idx as u64, sgl }) {
                warn!(srqn, "post_srq_recv: {e}");
                return;
            }
        }
    }

    /// After a QP entered ERR: queued work was flushed by the engine; WQEs
    /// still only in guest memory are handed over now and flush in order.
    pub fn engine_flush(&mut self, qpn: u32) {
        self.sync_sq(qpn);
        self.sync_recv(qpn);
        self.drain();
    }
}

/// The fabric's packet handler: the firmware (which owns the engine).
pub struct FwHandler(pub Arc<Mutex<Firmware>>);

impl FwHandler {
    fn fw(&self) -> std::sync::MutexGuard<'_, Firmware> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl PacketHandler for FwHandler {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        if pkt.len() < 12 {
            return;
        }
        let dqpn = u32::from_be_bytes([0, pkt[5], pkt[6], pkt[7]]);
        let mut fw = self.fw();
        let target = match dqpn {
            // QP0/QP1 traffic between hosts is not carried yet.
            0 | 1 => None,
            n => fw.engine.qps.get(n).filter(|q| engine_qp(q.qp_type)).map(|_| n),
        };
        // Only a packet that may take a receive WQE needs the RQ's new ones
        // (ACKs, read and atomic traffic do not: skip the doorbell record read).
        if let Some(q) = target.filter(|_| crate::engine::consumes_recv(pkt)) {
            fw.sync_recv(q);
        }
        fw.engine.receive(meta, pkt);
        fw.drain();
    }

    fn flush(&self) {
        let mut fw = self.fw();
        fw.engine.flush_acks();
        fw.drain();
    }

    /// Runs on every pass of the fabric worker: only the timers (a CQ's
    /// consumer index is read when the CQ looks full, see QueueSink).
    fn poll(&self, _now_ns: u64) -> Option<u64> {
        let mut fw = self.fw();
        let next = fw.engine.poll_timers();
        fw.drain();
        next
    }
}
