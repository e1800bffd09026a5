//! The RC/UC/UD transports on top of the object model: requester (PSNs,
//! segmentation, window, READ/atomic limits, fences, retransmission on ACK
//! timeout, RNR back-off, go-back-N), responder (PSN checks, duplicates,
//! receive consumption, RDMA WRITE/READ/atomics with key checks, atomic
//! replay, coalesced ACKs, NAKs), errors and flushes, and timers kept in one
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
mod demux;
mod execute;
mod requester;
mod responder;
mod timers;
mod ud;
mod xfer;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::objects::{Access, Cq, QpState, QpType};
use super::table::Table;
use super::verbs::*;
use super::{Engine, EngineError, GuestMemory, Kind, MemFault};
use crate::wire::bth::Opcode;
use crate::wire::clock::{Clock, MonotonicClock};
use crate::wire::fabric::{Dest, Endpoint, PacketHandler, PacketSink, RxMeta};

use crate::wire::{grh, psn};

pub use demux::{consumes_recv, pkey_matches, PKEY_TABLE};
pub use responder::RespStep;
pub use timers::{ack_timeout_ns, RNR_TIMER_US};
pub use ud::GRH_LEN;
pub use xfer::XferError;

/// Unacknowledged PSNs a requester may have in flight.
pub const WINDOW_PSNS: u32 = 128;
/// The congestion window never shrinks below this: enough packets behind
/// a lost one for the responder to see the gap and NAK it.
pub const MIN_CWND: u32 = 16;
/// The requester asks for an ACK at least this often.
pub const ACK_EVERY: u32 = 64;
/// Atomic results kept for duplicate atomics: one per atomic a requester
/// may have outstanding (`max_dest_rd_atomic` is at most 2^7).
pub const ATOMIC_REPLAY: usize = 128;
/// Largest message (2^31 bytes).
pub const MAX_MSG: u64 = 1 << 31;


/// Per-QP counters (and, summed, per engine).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QpCounters {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Packets sent again (go-back-N, timeouts, RNR).
    pub retransmissions: u64,
    pub timeouts: u64,
    /// Duplicate requests seen by the responder.
    pub duplicates: u64,
    pub out_of_sequence: u64,
    pub nak_seq_sent: u64,
    pub nak_seq_received: u64,
    pub nak_inv_req_sent: u64,
    pub nak_access_sent: u64,
    pub nak_op_sent: u64,
    pub nak_error_received: u64,
    pub rnr_nak_sent: u64,
    pub rnr_nak_received: u64,
    pub cnp_sent: u64,
    pub cnp_received: u64,
    pub ecn_marked: u64,
    /// UD packets dropped: wrong Q_Key.
    pub qkey_violations: u64,
    /// UD/UC messages dropped for want of a receive WQE.
    pub no_recv_drops: u64,
}

/// Packets the engine could not hand to any QP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EngineDrops {
    pub malformed: u64,
    pub no_qp: u64,
    pub bad_state: u64,
    pub bad_transport: u64,
    /// BTH P_Key not matching the QP's partition (IBTA 10.9.3).
    pub bad_pkey: u64,
}


#[derive(Debug, Clone)]
pub(crate) struct SqEntry {
    wr: SendWr,
    len: u32,
    first_psn: u32,
    /// PSNs the message uses (read responses for READ).
    npkts: u32,
    /// READ responses received so far.
    resp_pkts: u32,
    /// A local error found at post or gather time, reported in order.
    err: Option<WcStatus>,
}

impl SqEntry {
    /// The entry's last PSN (a NOP, which takes none, reads as the one before its first).
    fn last_psn(&self) -> u32 {
        psn::sub(psn::add(self.first_psn, self.npkts), 1)
    }
    fn covers(&self, p: u32) -> bool {
        psn::diff(p, self.first_psn) >= 0 && psn::diff(p, self.last_psn()) <= 0
    }
}

#[derive(Debug, Clone)]
struct RecvInProgress {
    wr: RecvWr,
    from_srq: bool,
    off: u32,
    capacity: u64,
}

#[derive(Debug, Clone, Copy)]
struct WriteInProgress {
    va: u64,
    rkey: u32,
    len: u32,
    off: u32,
}

/// A QP's transport state.
#[derive(Debug, Clone, Default)]
pub struct QpRt {
    // Requester.
    sq: VecDeque<SqEntry>,
    /// The entry being sent and its next packet.
    cur: usize,
    cur_pkt: u32,
    /// PSN of the next posted message.
    next_psn: u32,
    /// Oldest PSN not yet acknowledged.
    unacked: u32,
    /// One past the highest PSN ever sent.
    max_sent: u32,
    retry_left: u8,
    rnr_left: u8,
    rnr_wait: bool,
    deadline: Option<u64>,
    queued_at: Option<u64>,
    /// Go-back already requested for this PSN (read response gaps).
    goback_psn: Option<u32>,
    /// Congestion window in PSNs (≤ WINDOW_PSNS): halved on every go-back
    /// (sequence NAK, timeout), grown by the PSNs each ACK covers, so heavy
    /// loss does not turn go-back-N into resending whole windows.
    cwnd: u32,
    // Responder.
    rq: VecDeque<RecvWr>,
    epsn: u32,
    msn: u32,
    nak_seq_sent: bool,
    rnr_nak_sent: bool,
    recv: Option<RecvInProgress>,
    write: Option<WriteInProgress>,
    uc_dropping: bool,
    replay: VecDeque<(u32, u64)>,
    ack_pending: bool,
    comm_est: bool,
    pub counters: QpCounters,
}

impl QpRt {
    /// Send WRs posted and not yet completed.
    pub fn sq_outstanding(&self) -> usize {
        self.sq.len()
    }
    /// Receive WRs posted and not yet consumed.
    pub fn rq_posted(&self) -> usize {
        self.rq.len()
    }
}

/// What the engine talks to.
#[derive(Clone)]
pub struct Io {
    pub mem: Arc<dyn GuestMemory>,
    pub packets: Arc<dyn PacketSink>,
    pub completions: Arc<dyn CompletionSink>,
    pub clock: Arc<dyn Clock>,
    /// This port's fabric endpoint (LID and fabric address).
    pub local: Endpoint,
}

/// Guest memory that has nothing mapped.
pub struct NoMemory;

impl GuestMemory for NoMemory {
    fn read(&self, addr: u64, _: &mut [u8]) -> Result<(), MemFault> {
        Err(MemFault { addr })
    }
    fn write(&self, addr: u64, _: &[u8]) -> Result<(), MemFault> {
        Err(MemFault { addr })
    }
    fn compare_and_swap_u64(&self, addr: u64, _: u64, _: u64) -> Result<u64, MemFault> {
        Err(MemFault { addr })
    }
    fn fetch_add_u64(&self, addr: u64, _: u64) -> Result<u64, MemFault> {
        Err(MemFault { addr })
    }
}

impl Default for Io {
    fn default() -> Io {
        Io {
            mem: Arc::new(NoMemory),
            packets: Arc::new(NullSink),
            completions: Arc::new(NullSink),
            clock: Arc::new(MonotonicClock::default()),
            local: Endpoint::v4(1, std::net::Ipv4Addr::LOCALHOST),
        }
    }
}

/// The engine's transport runtime: I/O, timers, scratch and counters.
#[derive(Default)]
pub struct Runtime {
    pub io: Io,
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    ack_queue: Vec<u32>,
    buf: Vec<u8>,
    pub totals: QpCounters,
    pub drops: EngineDrops,
    /// Called when a timer earlier than any queued one is armed.
    pub waker: Option<Arc<dyn Fn() + Send + Sync>>,
    /// The responder steps the last request packet went through.
    #[cfg(test)]
    pub(crate) resp_trace: Vec<RespStep>,
}

impl Runtime {
    /// Device reset: timers, queued ACKs and counters go; the I/O stays.
    pub fn reset(&mut self) {
        self.timers.clear();
        self.ack_queue.clear();
        self.totals = QpCounters::default();
        self.drops = EngineDrops::default();
    }
}

/// Puts a completion on CQ `cqn`: overrun detection, then arming.
fn deliver(cqs: &mut Table<Cq>, sink: &dyn CompletionSink, cqn: Option<u32>, c: Completion) {
    let Some(cqn) = cqn else { return };
    let Some(cq) = cqs.get_mut(cqn) else { return };
    if !cq.has_room() {
        if let Some(c) = sink.consumer(cqn, cq.producer) {
            cq.consumer = c;
        }
    }
    if !cq.has_room() {
        if !cq.overrun {
            cq.overrun = true;
            sink.event(Event::CqError { cqn });
        }
        return;
    }
    sink.complete(cqn, cq.producer, &c);
    cq.producer = cq.producer.wrapping_add(1);
    if cq.on_cqe(c.solicited || c.status != WcStatus::Success) {
        sink.event(Event::Completion { cqn, eqn: cq.eqn });
    }
}

fn transport_bits(t: QpType) -> Option<u8> {
    match t {
        QpType::Rc => Some(Opcode::RC),
        QpType::Uc => Some(Opcode::UC),
        QpType::Ud | QpType::Gsi | QpType::Smi => Some(Opcode::UD),
        _ => None,
    }
}

fn wire_qpn(qpn: u32, t: QpType) -> u32 {
    match t {
        QpType::Smi => 0,
        QpType::Gsi => 1,
        _ => qpn,
    }
}

/// Where a packet on address vector `av` goes: its DLID, and when the AV
/// is global a GRH with the port's GID at `sgid_index` as SGID. None: the
/// port has no GID at that index.
fn av_dest(av: &super::AddressVector, sink: &dyn PacketSink) -> Option<Dest> {
    if !av.grh {
        return Some(Dest { lid: av.dlid, grh: None });
    }
    let sgid = sink.gid(av.sgid_index)?;
    let g = grh::Repr {
        traffic_class: av.traffic_class,
        flow_label: av.flow_label & 0xf_ffff,
        payload_len: 0,
        next_header: grh::NXTHDR_IBA,
        hop_limit: av.hop_limit,
        sgid,
        dgid: av.dgid,
    };
    Some(Dest { lid: av.dlid, grh: Some(g) })
}

/// [`av_dest`] for a response (ACK, read response, atomic ACK) on the
/// responder QP's own path: with no GID at its `sgid_index` it goes without
/// a GRH, still routed by the DLID (the request could not have been sent).
fn resp_dest(av: &super::AddressVector, sink: &dyn PacketSink) -> Dest {
    av_dest(av, sink).unwrap_or(Dest { lid: av.dlid, grh: None })
}


impl Engine {
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
        self.qps.get(qpn).map(|q| q.rt.counters)
    }

    /// Called by modify_qp after a successful transition.
    pub(crate) fn on_transition(&mut self, qpn: u32, to: QpState, from: QpState) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        match to {
            QpState::Reset => qp.rt = QpRt::default(),
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
        let qp = self.qps.get_mut(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
        match qp.state {
            QpState::Reset | QpState::Init | QpState::Rtr => return Err(EngineError::BadParam("post send to a QP not yet in RTS")),
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
            _ if op == WrOpcode::Nop => matches!(qp.qp_type, QpType::Rc | QpType::Uc | QpType::Ud | QpType::Gsi | QpType::Smi),
            QpType::Rc => true,
            QpType::Uc => matches!(op, WrOpcode::Send | WrOpcode::SendImm | WrOpcode::Write | WrOpcode::WriteImm),
            QpType::Ud | QpType::Gsi | QpType::Smi => matches!(op, WrOpcode::Send | WrOpcode::SendImm) && wr.ud.is_some(),
            _ => false,
        };
        let ud = matches!(qp.qp_type, QpType::Ud | QpType::Gsi | QpType::Smi);
        let mut err = wr.local_error;
        if err.is_some() {
        } else if !valid_op {
            err = Some(WcStatus::LocQpOpErr);
        } else if len > MAX_MSG || (ud && len > mtu) || (op.is_atomic() && len != 8) {
            err = Some(WcStatus::LocLenErr);
        } else if wr.inline.is_none() {
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
        let qp = self.qps.get_mut(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
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
        let srq = self.srqs.get_mut(srqn).ok_or(EngineError::NoSuch(Kind::Srq, srqn))?;
        if srq.wqes.len() >= (1usize << srq.log_size) {
            return Err(EngineError::BadParam("SRQ full"));
        }
        srq.wqes.push_back(wr);
        Ok(())
    }

    /// Arms the SRQ limit event (0 disarms).
    pub fn arm_srq(&mut self, srqn: u32, limit: u16) -> Result<(), EngineError> {
        let srq = self.srqs.get_mut(srqn).ok_or(EngineError::NoSuch(Kind::Srq, srqn))?;
        srq.limit = limit;
        Ok(())
    }

    /// The driver's CQ consumer index (full 32-bit count).
    pub fn cq_consumed(&mut self, cqn: u32, consumer: u32) {
        if let Some(cq) = self.cqs.get_mut(cqn) {
            cq.consumer = consumer;
        }
    }

    /// Arms a CQ for its next (solicited) completion.
    /// Returns true when CQEs the driver has neither consumed (`ci`, 24
    /// bits) nor had reported by an event are waiting: raise the event now.
    pub fn arm_cq(&mut self, cqn: u32, solicited: bool, sn: u8, ci: u32) -> bool {
        self.cqs.get_mut(cqn).is_some_and(|cq| cq.request_notify(solicited, sn, ci))
    }


    /// The one fatal-error path: the error completion `err` (if any) goes
    /// to its CQ, the QP enters ERR (flushing every outstanding WR) and the
    /// QP's fatal event is reported.
    pub(super) fn qp_fatal(&mut self, qpn: u32, err: Option<(Option<u32>, Completion)>) {
        if let Some((cq, c)) = err {
            deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
        }
        if let Some(qp) = self.qps.get_mut(qpn) {
            qp.state = QpState::Err;
        }
        self.rt.io.completions.event(Event::QpFatal { qpn });
        self.enter_error(qpn);
    }

    /// ERR: flush every outstanding WR, one completion each.
    fn enter_error(&mut self, qpn: u32) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        qp.state = QpState::Err;
        let rt = &mut qp.rt;
        let mut flushed = Vec::new();
        for e in rt.sq.drain(..) {
            flushed.push((qp.send_cq, Completion::new(e.wr.wr_id, qpn, WcOpcode::of(e.wr.opcode), WcStatus::WrFlushErr)));
        }
        rt.cur = 0;
        rt.cur_pkt = 0;
        rt.deadline = None;
        rt.queued_at = None;
        rt.rnr_wait = false;
        rt.write = None;
        if let Some(r) = rt.recv.take() {
            if r.from_srq {
                flushed.push((qp.recv_cq, Completion::new(r.wr.wr_id, qpn, WcOpcode::Recv, WcStatus::WrFlushErr)));
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
}
