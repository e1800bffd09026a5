//! The RC/UC/UD/XRC transports on top of the object model (XRC: RC with an XRC SRQ
//! named per request, `xrc.rs`): requester (PSNs,
//! segmentation, window, READ/atomic limits, fences, retransmission on ACK
//! timeout, RNR back-off, go-back-N), responder (PSN checks, duplicates,
//! receive consumption, RDMA WRITE/READ/atomics with key checks, atomic
//! replay, coalesced ACKs, NAKs), errors and flushes, RoCE congestion
//! control (ECN → CNP → a paced, DCQCN-limited requester), and timers kept in one
//! heap per engine (a QP costs memory, not a thread or a wake-up).
//!
//! Guest memory is reached only through [`GuestMemory`], by key and bounds
//! checked; any failed check becomes an error completion or a NAK.

/// Counts an event for the QP and for the engine.
macro_rules! count {
    ($rt:expr, $qp:expr, $f:ident) => {{
        $qp.rt.counters.$f += 1;
        $rt.totals.$f += 1;
    }};
    ($rt:expr, $qp:expr, $f:ident, $n:expr) => {{
        $qp.rt.counters.$f += $n;
        $rt.totals.$f += $n;
    }};
}

mod ack;
mod completer;
mod congestion;
mod demux;
mod execute;
mod gather;
mod requester;
mod resp_step;
mod responder;
mod rq;
pub(super) mod state;
mod timers;
mod ud;
mod xfer;
mod xrc;

use std::sync::{Arc, Mutex};

use super::instance::Engine;
use super::objects::{Access, QpState, QpType};
use super::types::{EngineError, Kind};
use super::verbs::*;
use crate::personality::Personality;
use state::{deliver, SqEntry};
use vrnic_packet::{PacketHandler, RxMeta};
use vrnic_wire::psn;

pub use demux::{consumes_recv, pkey_matches, PKEY_TABLE};
pub use resp_step::RespStep;
pub use state::{
    EngineDrops, Io, NoMemory, QpCounters, QpRt, Runtime, ACK_EVERY, ATOMIC_REPLAY, LINK_QUANTUM, MAX_MSG, MIN_CWND,
    RX_HELD_MAX_NS, WINDOW_PSNS,
};
pub use timers::{ack_timeout_ns, RNR_TIMER_US};
pub use ud::MAX_DATAGRAM;
pub use xfer::XferError;

impl<P: Personality> Engine<P> {
    /// Connects the engine to guest memory, the network and the completion sink.
    pub fn attach(&mut self, io: Io) {
        self.rt.io = io;
    }

    /// Sum of every QP's counters since the engine started.
    pub fn counters(&self) -> QpCounters {
        self.rt.totals
    }

    /// A QP's counters.
    pub fn qp_counters(&self, qpn: u32) -> Option<QpCounters> {
        self.qps.obj(qpn).map(|q| q.rt.counters)
    }

    /// Called by modify_qp after a successful transition.
    pub(crate) fn on_transition(&mut self, qpn: u32, to: QpState, from: QpState) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        match to {
            QpState::Reset => {
                qp.rt = QpRt::default();
                self.rt.np.forget(qpn);
            }
            QpState::Init if from == QpState::Reset => qp.rt = QpRt::default(),
            QpState::Rtr if from == QpState::Init => {
                qp.rt.epsn = qp.attrs.rq_psn;
            }
            QpState::Rts if from == QpState::Rtr => {
                let p = qp.attrs.sq_psn;
                qp.rt.next_psn = p;
                qp.rt.unacked = p;
                qp.rt.max_sent = p;
                qp.rt.retry_left = qp.attrs.retry_cnt;
                qp.rt.rnr_left = qp.attrs.rnr_retry;
                qp.rt.cwnd = WINDOW_PSNS;
            }
            QpState::Rts => self.progress(qpn),
            QpState::Err if from != QpState::Err => self.enter_error(qpn),
            _ => {}
        }
    }

    /// Posts a send WR. Posting to a QP in RESET, INIT or RTR is refused;
    /// in ERR the WR completes at once with WR_FLUSH_ERR.
    pub fn post_send(&mut self, qpn: u32, wr: SendWr) -> Result<(), EngineError> {
        let qp = self.qps.obj_mut(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
        match qp.state {
            QpState::Reset | QpState::Init | QpState::Rtr => {
                return Err(EngineError::BadParam("post send to a QP not yet in RTS"))
            }
            QpState::Err => {
                let c = Completion::new(wr.wr_id, qpn, WcOpcode::of(wr.opcode), WcStatus::WrFlushErr);
                let cq = qp.send_cq;
                deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
                return Ok(());
            }
            _ => {}
        }
        if qp.rt.sq.len() >= (1usize << qp.log_sq_size) {
            return Err(EngineError::BadParam("send queue full"));
        }
        let len = wr.length();
        let mtu = qp.attrs.path_mtu.0 as u64;
        let op = wr.opcode;
        let valid_op = match qp.qp_type {
            _ if op == WrOpcode::Nop => {
                matches!(
                    qp.qp_type,
                    QpType::Rc | QpType::XrcInitiator | QpType::Uc | QpType::Ud | QpType::Gsi | QpType::Smi
                )
            }
            QpType::Rc | QpType::XrcInitiator => true,
            QpType::Uc => matches!(op, WrOpcode::Send | WrOpcode::SendImm | WrOpcode::Write | WrOpcode::WriteImm),
            QpType::Ud | QpType::Gsi | QpType::Smi => {
                matches!(op, WrOpcode::Send | WrOpcode::SendImm) && wr.ud.is_some()
            }
            _ => false,
        };
        let ud = matches!(qp.qp_type, QpType::Ud | QpType::Gsi | QpType::Smi);
        let mut err = wr.local_error;
        if err.is_some() {
        } else if !valid_op {
            err = Some(WcStatus::LocQpOpErr);
        } else if len > MAX_MSG || (ud && len > mtu) || (op.is_atomic() && len != 8) {
            err = Some(WcStatus::LocLenErr);
        } else if op.is_read_or_atomic() && wr.inline.is_some() {
            // Inline data has nowhere to receive a response.
            err = Some(WcStatus::LocQpOpErr);
        } else {
            let need = if op.is_read_or_atomic() { Access::LOCAL_WRITE } else { Access::LOCAL_READ };
            err = xfer::check_sgl(&self.mkeys, qp.pd, &wr.sgl, need).err().map(XferError::local_status);
        }
        // A NOP takes no PSN; an entry that fails locally never goes out
        // either, but the QP is in ERR by the time it reaches the wire.
        let npkts = if op == WrOpcode::Nop && err.is_none() {
            0
        } else if op.is_atomic() {
            1
        } else {
            (len.div_ceil(mtu)).max(1) as u32
        };
        let first_psn = qp.rt.next_psn;
        qp.rt.next_psn = psn::add(first_psn, npkts);
        qp.rt.sq.push_back(SqEntry { wr, len: len as u32, first_psn, npkts, resp_pkts: 0, err });
        self.progress(qpn);
        Ok(())
    }

    /// Posts a receive WR to a QP without SRQ. In ERR it is flushed at once.
    pub fn post_recv(&mut self, qpn: u32, wr: RecvWr) -> Result<(), EngineError> {
        let qp = self.qps.obj_mut(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
        if qp.srq.is_some() {
            return Err(EngineError::BadParam("QP receives from an SRQ"));
        }
        match qp.state {
            QpState::Reset => Err(EngineError::BadParam("post recv to a QP in RESET")),
            QpState::Err => {
                let c = Completion::new(wr.wr_id, qpn, WcOpcode::Recv, WcStatus::WrFlushErr);
                let cq = qp.recv_cq;
                deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
                Ok(())
            }
            _ if qp.rt.rq.len() >= (1usize << qp.log_rq_size) => Err(EngineError::BadParam("receive queue full")),
            _ => {
                qp.rt.rq.push_back(wr);
                Ok(())
            }
        }
    }

    /// Posts a receive WR to an SRQ.
    pub fn post_srq_recv(&mut self, srqn: u32, wr: RecvWr) -> Result<(), EngineError> {
        let srq = self.srqs.obj_mut(srqn).ok_or(EngineError::NoSuch(Kind::Srq, srqn))?;
        if srq.wqes.len() >= (1usize << srq.log_size) {
            return Err(EngineError::BadParam("SRQ full"));
        }
        srq.wqes.push_back(wr);
        Ok(())
    }

    /// Arms the SRQ limit event (0 disarms).
    pub fn arm_srq(&mut self, srqn: u32, limit: u16) -> Result<(), EngineError> {
        let srq = self.srqs.obj_mut(srqn).ok_or(EngineError::NoSuch(Kind::Srq, srqn))?;
        srq.limit = limit;
        Ok(())
    }

    /// The driver's CQ consumer index (full 32-bit count).
    pub fn cq_consumed(&mut self, cqn: u32, consumer: u32) {
        if let Some(cq) = self.cqs.obj_mut(cqn) {
            cq.consumer = consumer;
        }
    }

    /// The one fatal-error path: the error completion `err` (if any) goes
    /// to its CQ, the QP enters ERR (flushing every outstanding WR) and the
    /// QP's fatal event is reported.
    pub(super) fn qp_fatal(&mut self, qpn: u32, err: Option<(Option<u32>, Completion)>) {
        if let Some((cq, c)) = err {
            deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
        }
        if let Some(qp) = self.qps.obj_mut(qpn) {
            qp.state = QpState::Err;
        }
        self.rt.io.completions.event(Event::QpFatal { qpn });
        self.enter_error(qpn);
    }

    /// ERR: flush every outstanding WR, one completion each.
    fn enter_error(&mut self, qpn: u32) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        qp.state = QpState::Err;
        let rt = &mut qp.rt;
        let mut flushed = Vec::new();
        for e in rt.sq.drain(..) {
            flushed
                .push((qp.send_cq, Completion::new(e.wr.wr_id, qpn, WcOpcode::of(e.wr.opcode), WcStatus::WrFlushErr)));
        }
        rt.cur = 0;
        rt.cur_pkt = 0;
        rt.deadline = None;
        rt.queued_at = None;
        rt.rnr_wait = false;
        rt.link_wait = false;
        rt.write = None;
        if let Some(r) = rt.recv.take() {
            if r.from_srq {
                // An XRC target's WQE came from (and completes on the CQ of) the XRC SRQ its message named.
                let cq = match r.xrc_srq {
                    Some(s) => self.srqs.obj(s).and_then(|s| s.cqn),
                    None => qp.recv_cq,
                };
                let c = Completion::new(r.wr.wr_id, qpn, WcOpcode::Recv, WcStatus::WrFlushErr);
                flushed.push((cq, Completion { srqn: r.xrc_srq, ..c }));
            } else {
                rt.rq.push_front(r.wr);
            }
        }
        for w in rt.rq.drain(..) {
            flushed.push((qp.recv_cq, Completion::new(w.wr_id, qpn, WcOpcode::Recv, WcStatus::WrFlushErr)));
        }
        let srq = qp.srq.is_some();
        for (cq, c) in flushed {
            deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
        }
        if srq {
            self.rt.io.completions.event(Event::LastWqeReached { qpn });
        }
    }
}

/// An engine shared between threads: the packet handler a fabric drives.
#[derive(Clone)]
pub struct SharedEngine(pub Arc<Mutex<Engine>>);

impl SharedEngine {
    pub fn new(e: Engine) -> SharedEngine {
        SharedEngine(Arc::new(Mutex::new(e)))
    }
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Engine> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl PacketHandler for SharedEngine {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        self.lock().receive(meta, pkt);
    }
    fn flush(&self) {
        self.lock().flush_acks();
    }
    fn poll(&self, _now_ns: u64) -> Option<u64> {
        self.lock().poll_timers()
    }
    fn tx_ready(&self) {
        self.lock().tx_ready();
    }
}
