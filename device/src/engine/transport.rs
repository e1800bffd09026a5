//! The RC/UC/UD transports on top of the object model: requester (PSNs,
//! segmentation, window, READ/atomic limits, fences, retransmission on ACK
//! timeout, RNR back-off, go-back-N), responder (PSN checks, duplicates,
//! receive consumption, RDMA WRITE/READ/atomics with key checks, atomic
//! replay, coalesced ACKs, NAKs), errors and flushes, and timers kept in one
//! heap per engine (a QP costs memory, not a thread or a wake-up).
//!
//! Guest memory is reached only through [`GuestMemory`], by key and bounds
//! checked; any failed check becomes an error completion or a NAK.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::objects::{Access, Cq, Mkey, QpState, QpType};
use super::table::Table;
use super::verbs::*;
use super::{Engine, EngineError, GuestMemory, Kind, MemFault};
use crate::wire::aeth::{self, NakCode, Syndrome};
use crate::wire::bth::{self, Opcode};
use crate::wire::clock::{Clock, MonotonicClock};
use crate::wire::fabric::{Dest, Endpoint, PacketHandler, PacketSink, RxMeta};
use crate::wire::packet::{self, Headers, RocePacket};
use crate::wire::{atomic_ack_eth, atomic_eth, deth, grh, ieth, immdt, psn, reth};

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
/// The GRH area at the start of a UD receive buffer.
pub const GRH_LEN: u32 = 40;
/// Largest message (2^31 bytes).
pub const MAX_MSG: u64 = 1 << 31;

/// RNR NAK timer code → µs (IBTA table 45).
pub const RNR_TIMER_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10_240, 15_360,
    20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
];

/// Local ACK timeout: 4.096 µs × 2^timeout; 0 = never.
pub fn ack_timeout_ns(timeout: u8) -> Option<u64> {
    (timeout != 0).then(|| 4096u64 << timeout.min(31))
}

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

/// The port's P_Key table: the single default partition, full membership
/// (what the SMA's P_KeyTable reports).
pub const PKEY_TABLE: [u16; 1] = [0xffff];

/// Whether a received packet (starting at its BTH) may take a receive WQE,
/// so the owner of the receive queue should hand over newly posted ones first.
pub fn consumes_recv(pkt: &[u8]) -> bool {
    pkt.first().is_some_and(|&op| crate::wire::bth::Opcode(op).consumes_recv())
}

/// IBTA 10.9.3 P_Key match: same partition number (low 15 bits, not the
/// invalid 0), and at least one side a full member.
pub fn pkey_matches(mine: u16, theirs: u16) -> bool {
    mine & 0x7fff == theirs & 0x7fff && mine & 0x7fff != 0 && (mine | theirs) & 0x8000 != 0
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
    /// Write atomic results big-endian (mlx5 default) rather than in host order.
    pub atomic_reply_be: bool,
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

enum Xfer<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

/// Moves bytes between `data` and the SGL at byte offset `off`, each SGE
/// through its key (PD `pd`, rights `need`).
fn sgl_xfer(mkeys: &Table<Mkey>, mem: &dyn GuestMemory, pd: u32, sgl: &[Sge], mut off: u64, mut data: Xfer, need: Access) -> Result<(), ()> {
    let total = match &data {
        Xfer::Read(b) => b.len(),
        Xfer::Write(b) => b.len(),
    };
    let mut done = 0usize;
    for s in sgl {
        if done == total {
            break;
        }
        if off >= s.length as u64 {
            off -= s.length as u64;
            continue;
        }
        let n = ((s.length as u64 - off) as usize).min(total - done);
        let key = lookup_key(mkeys, s.lkey).ok_or(())?;
        let chunks = key.translate(s.addr.checked_add(off).ok_or(())?, n as u64, pd, need).map_err(|_| ())?;
        let mut at = done;
        for (pa, l) in chunks {
            let l = l as usize;
            match &mut data {
                Xfer::Read(b) => mem.read(pa, &mut b[at..at + l]).map_err(|_| ())?,
                Xfer::Write(b) => mem.write(pa, &b[at..at + l]).map_err(|_| ())?,
            }
            at += l;
        }
        done += n;
        off = 0;
    }
    if done == total {
        Ok(())
    } else {
        Err(())
    }
}

fn lookup_key(mkeys: &Table<Mkey>, key: u32) -> Option<&Mkey> {
    mkeys.get(key >> 8).filter(|m| m.variant == key as u8)
}

/// Moves bytes at remote address `va` through `rkey`.
fn key_xfer(mkeys: &Table<Mkey>, mem: &dyn GuestMemory, pd: u32, rkey: u32, va: u64, mut data: Xfer, need: Access) -> Result<(), NakCode> {
    let len = match &data {
        Xfer::Read(b) => b.len(),
        Xfer::Write(b) => b.len(),
    };
    let key = lookup_key(mkeys, rkey).ok_or(NakCode::RemoteAccessError)?;
    let chunks = key.translate(va, len as u64, pd, need).map_err(|_| NakCode::RemoteAccessError)?;
    let mut at = 0;
    for (pa, l) in chunks {
        let l = l as usize;
        match &mut data {
            Xfer::Read(b) => mem.read(pa, &mut b[at..at + l]).map_err(|_| NakCode::RemoteOperationalError)?,
            Xfer::Write(b) => mem.write(pa, &b[at..at + l]).map_err(|_| NakCode::RemoteOperationalError)?,
        }
        at += l;
    }
    Ok(())
}

fn sgl_capacity(sgl: &[Sge]) -> u64 {
    sgl.iter().map(|s| s.length as u64).sum()
}

/// Puts a completion on CQ `cqn` after overrun detection; the sink writes it
/// (and runs the CQ's arming).
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

/// Builds and sends a packet without payload (ACK, NAK, atomic ACK),
/// counting it for the QP and the engine.
fn send_header_only(rt: &mut Runtime, qc: &mut QpCounters, h: &Headers, dest: &Dest) {
    qc.tx_packets += 1;
    rt.totals.tx_packets += 1;
    if packet::build(h, 0, &mut rt.buf).is_ok() {
        rt.io.packets.send(dest, &mut rt.buf);
        rt.totals.tx_bytes += rt.buf.len() as u64;
        qc.tx_bytes += rt.buf.len() as u64;
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

fn nak_status(c: NakCode) -> WcStatus {
    match c {
        NakCode::InvalidRequest | NakCode::InvalidRdRequest | NakCode::PsnSequenceError => WcStatus::RemInvReqErr,
        NakCode::RemoteAccessError => WcStatus::RemAccessErr,
        NakCode::RemoteOperationalError => WcStatus::RemOpErr,
    }
}

/// Outcome of an in-sequence request at the responder.
enum Resp {
    /// Done; the PSN advances by `psns`.
    Ok { psns: u32 },
    /// No receive WQE.
    Rnr,
    /// Error: NAK (RC) and, if given, a receive completion with that status.
    Nak(NakCode, Option<WcStatus>),
    /// UC: drop the message silently.
    Drop,
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
            for s in &wr.sgl {
                let ok = lookup_key(&self.mkeys, s.lkey).is_some_and(|k| k.translate(s.addr, s.length as u64, qp.pd, need).is_ok());
                if !ok {
                    err = Some(WcStatus::LocProtErr);
                    break;
                }
            }
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

    // ----------------------------------------------------------------- timers

    fn arm_timer(&mut self, qpn: u32, at: u64) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        qp.rt.deadline = Some(at);
        if qp.rt.queued_at.is_none_or(|q| q > at) {
            qp.rt.queued_at = Some(at);
            let earliest = self.rt.timers.peek().map(|r| r.0 .0);
            self.rt.timers.push(Reverse((at, qpn)));
            if earliest.is_none_or(|e| at < e) {
                if let Some(w) = &self.rt.waker {
                    w();
                }
            }
        }
    }

    fn arm_ack_timer(&mut self, qpn: u32, restart: bool) {
        let Some(qp) = self.qps.get(qpn) else { return };
        if qp.qp_type != QpType::Rc || qp.rt.rnr_wait {
            return;
        }
        let outstanding = psn::lt(qp.rt.unacked, qp.rt.max_sent);
        match ack_timeout_ns(qp.attrs.timeout) {
            Some(t) if outstanding => {
                if restart || qp.rt.deadline.is_none() {
                    let at = self.rt.io.clock.now_ns() + t;
                    self.arm_timer(qpn, at);
                }
            }
            _ => {
                if let Some(qp) = self.qps.get_mut(qpn) {
                    qp.rt.deadline = None;
                }
            }
        }
    }

    /// Runs the timers due now; returns the next deadline (clock ns).
    pub fn poll_timers(&mut self) -> Option<u64> {
        let now = self.rt.io.clock.now_ns();
        while let Some(&Reverse((at, qpn))) = self.rt.timers.peek() {
            // Entries superseded by an earlier one, or of a QP gone or
            // quiescent, are dropped whenever they reach the top.
            let live = self.qps.get(qpn).is_some_and(|q| q.rt.queued_at == Some(at));
            if !live {
                self.rt.timers.pop();
                continue;
            }
            if at > now {
                break;
            }
            self.rt.timers.pop();
            let Some(qp) = self.qps.get_mut(qpn) else { continue };
            qp.rt.queued_at = None;
            match qp.rt.deadline {
                None => {}
                Some(d) if d > now => {
                    qp.rt.queued_at = Some(d);
                    self.rt.timers.push(Reverse((d, qpn)));
                }
                Some(_) => {
                    qp.rt.deadline = None;
                    self.on_timer(qpn);
                }
            }
        }
        self.rt.timers.peek().map(|r| r.0 .0)
    }

    fn on_timer(&mut self, qpn: u32) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            return;
        }
        if qp.rt.rnr_wait {
            qp.rt.rnr_wait = false;
            self.progress(qpn);
            return;
        }
        if !psn::lt(qp.rt.unacked, qp.rt.max_sent) {
            return;
        }
        count!(self.rt, qp, timeouts);
        if qp.rt.retry_left == 0 {
            self.fail_front(qpn, WcStatus::RetryExcErr);
            return;
        }
        qp.rt.retry_left -= 1;
        qp.rt.cwnd = (qp.rt.cwnd / 2).max(MIN_CWND);
        let p = qp.rt.unacked;
        qp.rt.goback_psn = None;
        self.seek(qpn, p);
        self.progress(qpn);
        self.arm_ack_timer(qpn, true);
    }

    // -------------------------------------------------------------- requester

    /// Points the send cursor at PSN `p`.
    fn seek(&mut self, qpn: u32, p: u32) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let rt = &mut qp.rt;
        // A NOP (no PSN of its own) at `p` is where sending resumes.
        match rt.sq.iter().position(|e| e.covers(p) || (e.npkts == 0 && e.first_psn == p)) {
            Some(i) => {
                rt.cur = i;
                let e = &rt.sq[i];
                rt.cur_pkt = if e.wr.opcode.is_read_or_atomic() { 0 } else { psn::diff(p, e.first_psn) as u32 };
            }
            None => {
                // Past every entry (or before the first): resend from the front.
                let front_after = rt.sq.front().is_some_and(|e| psn::lt(p, e.first_psn));
                rt.cur = if front_after { 0 } else { rt.sq.len() };
                rt.cur_pkt = 0;
            }
        }
    }

    /// Sends whatever the window, limits and fences allow.
    fn progress(&mut self, qpn: u32) {
        loop {
            let Some(qp) = self.qps.get_mut(qpn) else { return };
            if qp.state != QpState::Rts || qp.rt.rnr_wait {
                return;
            }
            let rt = &qp.rt;
            let Some(e) = rt.sq.get(rt.cur) else { return };
            if let Some(st) = e.err {
                if rt.cur == 0 {
                    self.fail_front(qpn, st);
                }
                return;
            }
            if e.wr.opcode == WrOpcode::Nop {
                // Completes in order: once every earlier WR has completed.
                if rt.cur != 0 {
                    return;
                }
                self.complete_front(qpn, WcStatus::Success, None);
                continue;
            }
            if qp.qp_type == QpType::Rc {
                let p = if e.wr.opcode.is_read_or_atomic() { psn::add(e.first_psn, e.resp_pkts) } else { psn::add(e.first_psn, rt.cur_pkt) };
                if psn::diff(p, rt.unacked) >= rt.cwnd.clamp(MIN_CWND, WINDOW_PSNS) as i32 {
                    return;
                }
                if rt.cur_pkt == 0 {
                    let earlier_rd = rt.sq.iter().take(rt.cur).filter(|x| x.wr.opcode.is_read_or_atomic()).count();
                    if e.wr.fence && earlier_rd > 0 {
                        return;
                    }
                    if e.wr.opcode.is_read_or_atomic() && earlier_rd >= qp.attrs.max_rd_atomic.max(1) as usize {
                        return;
                    }
                }
            }
            if !self.send_one(qpn) {
                return;
            }
        }
    }

    /// Sends the packet at the cursor and advances it. False if nothing was sent.
    fn send_one(&mut self, qpn: u32) -> bool {
        let Some(qp) = self.qps.get_mut(qpn) else { return false };
        let Some(tb) = transport_bits(qp.qp_type) else { return false };
        let mtu = qp.attrs.path_mtu.0 as u32;
        let pd = qp.pd;
        let qp_type = qp.qp_type;
        let my_qpn = wire_qpn(qpn, qp_type);
        let cur = qp.rt.cur;
        let cur_pkt = qp.rt.cur_pkt;
        let e = &qp.rt.sq[cur];
        let op = e.wr.opcode;
        let (dest, dqpn) = match &e.wr.ud {
            Some(u) if tb == Opcode::UD => (av_dest(&u.av, &*self.rt.io.packets), u.remote_qpn),
            _ => (av_dest(&qp.attrs.av, &*self.rt.io.packets), qp.attrs.dest_qpn),
        };
        let Some(dest) = dest else {
            // A global AV whose sgid_index names no GID: not sent.
            qp.rt.sq[cur].err = Some(WcStatus::LocQpOpErr);
            if cur == 0 {
                self.fail_front(qpn, WcStatus::LocQpOpErr);
            }
            return false;
        };
        let mut bth = bth::Repr { dest_qp: dqpn, ..Default::default() };
        let mut h;
        // (payload offset in the message, payload length)
        let (off, plen);
        let last_pkt;
        let psn_sent;
        let psn_end; // one past the PSNs this packet accounts for
        if op.is_read_or_atomic() {
            psn_sent = psn::add(e.first_psn, e.resp_pkts);
            bth.psn = psn_sent;
            bth.ack_req = true;
            if op == WrOpcode::Read {
                let done = e.resp_pkts as u64 * mtu as u64;
                bth.opcode = Opcode::new(tb, Opcode::READ_REQUEST);
                h = Headers::new(bth);
                h.reth = Some(reth::Repr {
                    va: e.wr.remote_addr.wrapping_add(done),
                    rkey: e.wr.rkey,
                    dma_len: (e.len as u64).saturating_sub(done) as u32,
                });
            } else {
                bth.opcode = Opcode::new(tb, if op == WrOpcode::CmpSwap { Opcode::CMP_SWAP } else { Opcode::FETCH_ADD });
                h = Headers::new(bth);
                h.atomic_eth = Some(atomic_eth::Repr { va: e.wr.remote_addr, rkey: e.wr.rkey, swap_add: e.wr.swap_add, compare: e.wr.compare });
            }
            off = 0;
            plen = 0;
            last_pkt = true;
            psn_end = psn::add(e.first_psn, e.npkts);
        } else {
            let n = e.npkts;
            let i = cur_pkt;
            let first = i == 0;
            let last = i + 1 == n;
            let is_send = matches!(op, WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv);
            let code = match (is_send, n == 1, first, last) {
                (true, true, _, _) => match op {
                    WrOpcode::SendImm => Opcode::SEND_ONLY_IMM,
                    WrOpcode::SendInv => Opcode::SEND_ONLY_INV,
                    _ => Opcode::SEND_ONLY,
                },
                (true, false, true, _) => Opcode::SEND_FIRST,
                (true, false, _, true) => match op {
                    WrOpcode::SendImm => Opcode::SEND_LAST_IMM,
                    WrOpcode::SendInv => Opcode::SEND_LAST_INV,
                    _ => Opcode::SEND_LAST,
                },
                (true, false, false, false) => Opcode::SEND_MIDDLE,
                (false, true, _, _) => if op == WrOpcode::WriteImm { Opcode::WRITE_ONLY_IMM } else { Opcode::WRITE_ONLY },
                (false, false, true, _) => Opcode::WRITE_FIRST,
                (false, false, _, true) => if op == WrOpcode::WriteImm { Opcode::WRITE_LAST_IMM } else { Opcode::WRITE_LAST },
                (false, false, false, false) => Opcode::WRITE_MIDDLE,
            };
            psn_sent = psn::add(e.first_psn, i);
            bth.psn = psn_sent;
            bth.opcode = Opcode::new(tb, code);
            bth.solicited = last && e.wr.solicited;
            bth.ack_req = tb == Opcode::RC && (last || (i + 1) % ACK_EVERY == 0);
            h = Headers::new(bth);
            if !is_send && first {
                h.reth = Some(reth::Repr { va: e.wr.remote_addr, rkey: e.wr.rkey, dma_len: e.len });
            }
            if last && matches!(op, WrOpcode::SendImm | WrOpcode::WriteImm) {
                h.immdt = Some(immdt::Repr { imm: e.wr.imm.to_be_bytes() });
            }
            if last && op == WrOpcode::SendInv {
                h.ieth = Some(ieth::Repr { rkey: e.wr.invalidate_rkey });
            }
            if tb == Opcode::UD {
                let u = e.wr.ud.unwrap_or_default();
                let qkey = if u.remote_qkey & 0x8000_0000 != 0 { qp.attrs.qkey } else { u.remote_qkey };
                h.deth = Some(deth::Repr { qkey, src_qp: my_qpn });
            }
            off = i * mtu;
            plen = (e.len - off).min(mtu);
            last_pkt = last;
            psn_end = psn::add(psn_sent, 1);
        }
        let Runtime { io, buf, totals, .. } = &mut self.rt;
        let range = match packet::build(&h, plen as usize, buf) {
            Ok(r) => r,
            Err(_) => return false,
        };
        let gathered = match &e.wr.inline {
            Some(d) => {
                buf[range.clone()].copy_from_slice(&d[off as usize..(off + plen) as usize]);
                Ok(())
            }
            None => sgl_xfer(&self.mkeys, &*io.mem, pd, &e.wr.sgl, off as u64, Xfer::Read(&mut buf[range]), Access::LOCAL_READ),
        };
        if gathered.is_err() {
            qp.rt.sq[cur].err = Some(WcStatus::LocProtErr);
            if cur == 0 {
                self.fail_front(qpn, WcStatus::LocProtErr);
            }
            return false;
        }
        io.packets.send(&dest, buf);
        qp.rt.counters.tx_packets += 1;
        qp.rt.counters.tx_bytes += buf.len() as u64;
        totals.tx_packets += 1;
        totals.tx_bytes += buf.len() as u64;
        let rt = &mut qp.rt;
        if tb == Opcode::RC {
            if psn::lt(psn_sent, rt.max_sent) {
                rt.counters.retransmissions += 1;
                totals.retransmissions += 1;
            }
            if psn::lt(rt.max_sent, psn_end) {
                rt.max_sent = psn_end;
            }
        }
        if last_pkt {
            rt.cur += 1;
            rt.cur_pkt = 0;
        } else {
            rt.cur_pkt += 1;
        }
        if tb == Opcode::RC {
            self.arm_ack_timer(qpn, false);
        } else if last_pkt {
            // UC/UD: complete once the last packet is out.
            self.complete_front(qpn, WcStatus::Success, None);
        }
        true
    }

    /// Completes the oldest send WR (signaled, or any error) and removes it.
    fn complete_front(&mut self, qpn: u32, status: WcStatus, extra: Option<u32>) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let Some(e) = qp.rt.sq.pop_front() else { return };
        if qp.rt.cur == 0 {
            // The cursor was inside the completed entry: it moves to the next one's start.
            qp.rt.cur_pkt = 0;
        } else {
            qp.rt.cur -= 1;
        }
        if status == WcStatus::Success && !(e.wr.signaled || qp.sq_sig_all) {
            return;
        }
        let mut c = Completion::new(e.wr.wr_id, qpn, WcOpcode::of(e.wr.opcode), status);
        c.byte_len = if status == WcStatus::Success { extra.unwrap_or(e.len) } else { 0 };
        c.src_qp = qp.attrs.dest_qpn;
        let cq = qp.send_cq;
        deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
    }

    /// The oldest send WR fails with `status`; the QP enters ERR.
    fn fail_front(&mut self, qpn: u32, status: WcStatus) {
        self.complete_front(qpn, status, None);
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

    /// ACK (explicit or implied) of every PSN up to and including `p`.
    fn ack_upto(&mut self, qpn: u32, p: u32) {
        loop {
            let Some(qp) = self.qps.get_mut(qpn) else { return };
            let Some(e) = qp.rt.sq.front() else { break };
            if qp.rt.cur == 0 && qp.rt.cur_pkt == 0 && !e.wr.opcode.is_read_or_atomic() {
                break; // not sent yet
            }
            if !psn::le(e.last_psn(), p) {
                break;
            }
            if e.wr.opcode.is_read_or_atomic() {
                // Responses lost (a later PSN is acknowledged): read again.
                let again = psn::add(e.first_psn, e.resp_pkts);
                if qp.rt.goback_psn != Some(again) {
                    qp.rt.goback_psn = Some(again);
                    self.seek(qpn, again);
                }
                break;
            }
            self.complete_front(qpn, WcStatus::Success, None);
        }
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let mut na = psn::add(p, 1);
        if let Some(e) = qp.rt.sq.front() {
            if e.wr.opcode.is_read_or_atomic() {
                let r = psn::add(e.first_psn, e.resp_pkts);
                if psn::lt(r, na) {
                    na = r;
                }
            }
        }
        if psn::lt(qp.rt.unacked, na) {
            let newly = psn::diff(na, qp.rt.unacked) as u32;
            qp.rt.cwnd = (qp.rt.cwnd + newly).min(WINDOW_PSNS);
            qp.rt.unacked = na;
            qp.rt.retry_left = qp.attrs.retry_cnt;
            qp.rt.rnr_left = qp.attrs.rnr_retry;
            // The cursor never points before what is acknowledged.
            let rt = &qp.rt;
            let behind = match rt.sq.get(rt.cur) {
                Some(c) if !c.wr.opcode.is_read_or_atomic() => psn::lt(psn::add(c.first_psn, rt.cur_pkt), na),
                _ => false,
            };
            if behind {
                self.seek(qpn, na);
            }
            self.arm_ack_timer(qpn, true);
        }
    }

    /// A packet of the requester's responses (ACK/NAK, read response, atomic ACK).
    fn requester_rx(&mut self, qpn: u32, p: &RocePacket) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        if qp.qp_type != QpType::Rc || !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            count_drop(&mut self.rt.drops.bad_state);
            return;
        }
        let h = &p.headers;
        let ps = h.bth.psn;
        // Responses must be for PSNs in flight.
        if psn::lt(ps, qp.rt.unacked) || !psn::lt(ps, qp.rt.max_sent) {
            count!(self.rt, qp, duplicates);
            return;
        }
        let op = h.bth.opcode.op();
        if h.bth.opcode.is_read_response() {
            self.rx_read_response(qpn, p);
        } else if op == Opcode::ATOMIC_ACKNOWLEDGE {
            self.rx_atomic_ack(qpn, p);
        } else if let Some(a) = h.aeth {
            match a.syndrome {
                Syndrome::Ack { .. } => self.ack_upto(qpn, ps),
                Syndrome::RnrNak { timer } => {
                    self.ack_upto(qpn, psn::sub(ps, 1));
                    let Some(qp) = self.qps.get_mut(qpn) else { return };
                    count!(self.rt, qp, rnr_nak_received);
                    if qp.attrs.rnr_retry != 7 {
                        if qp.rt.rnr_left == 0 {
                            self.fail_front(qpn, WcStatus::RnrRetryExcErr);
                            return;
                        }
                        qp.rt.rnr_left -= 1;
                    }
                    qp.rt.rnr_wait = true;
                    self.seek(qpn, ps);
                    let at = self.rt.io.clock.now_ns() + RNR_TIMER_US[(timer & 31) as usize] * 1000;
                    self.arm_timer(qpn, at);
                    return;
                }
                Syndrome::Nak(NakCode::PsnSequenceError) => {
                    self.ack_upto(qpn, psn::sub(ps, 1));
                    let Some(qp) = self.qps.get_mut(qpn) else { return };
                    count!(self.rt, qp, nak_seq_received);
                    qp.rt.cwnd = (qp.rt.cwnd / 2).max(MIN_CWND);
                    self.seek(qpn, ps);
                }
                Syndrome::Nak(code) => {
                    self.ack_upto(qpn, psn::sub(ps, 1));
                    let Some(qp) = self.qps.get_mut(qpn) else { return };
                    count!(self.rt, qp, nak_error_received);
                    self.fail_front(qpn, nak_status(code));
                    return;
                }
            }
        }
        self.progress(qpn);
    }

    /// Completes send/write WRs before entry `idx` (implicitly acknowledged by
    /// a response to it). False if a READ/atomic before it is still open.
    fn complete_before(&mut self, qpn: u32, target_first: u32) -> bool {
        loop {
            let Some(qp) = self.qps.get_mut(qpn) else { return false };
            let Some(e) = qp.rt.sq.front() else { return false };
            if e.first_psn == target_first {
                return true;
            }
            if e.wr.opcode.is_read_or_atomic() || !psn::lt(e.last_psn(), target_first) {
                return false;
            }
            self.complete_front(qpn, WcStatus::Success, None);
        }
    }

    fn rx_read_response(&mut self, qpn: u32, p: &RocePacket) {
        let ps = p.headers.bth.psn;
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let Some(first) = qp.rt.sq.iter().find(|e| e.covers(ps)).map(|e| e.first_psn) else { return };
        if !self.complete_before(qpn, first) {
            return;
        }
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let mtu = qp.attrs.path_mtu.0 as u32;
        let pd = qp.pd;
        let e = &qp.rt.sq[0];
        if e.wr.opcode != WrOpcode::Read {
            return;
        }
        let expected = psn::add(e.first_psn, e.resp_pkts);
        if ps != expected {
            if psn::lt(expected, ps) && qp.rt.goback_psn != Some(expected) {
                // A response went missing: ask again from it.
                qp.rt.goback_psn = Some(expected);
                count!(self.rt, qp, out_of_sequence);
                self.seek(qpn, expected);
            }
            return;
        }
        let op = p.headers.bth.opcode.op();
        let off = e.resp_pkts * mtu;
        let remaining = e.len - off.min(e.len);
        let last = op == Opcode::READ_RESPONSE_LAST || op == Opcode::READ_RESPONSE_ONLY;
        // A READ re-issued from the middle is a new request whose responses
        // start with FIRST again; responses to the older request may still
        // arrive. Either carries the same bytes for the same PSN, so only the
        // lengths are checked.
        let len_ok = if last { p.payload.len() as u32 == remaining } else { p.payload.len() as u32 == mtu && remaining > mtu };
        if !len_ok {
            return; // malformed response: ignore, the timer recovers
        }
        if sgl_xfer(&self.mkeys, &*self.rt.io.mem, pd, &e.wr.sgl, off as u64, Xfer::Write(p.payload), Access::LOCAL_WRITE).is_err() {
            self.fail_front(qpn, WcStatus::LocProtErr);
            return;
        }
        qp.rt.sq[0].resp_pkts += 1;
        qp.rt.goback_psn = None;
        if last {
            let len = qp.rt.sq[0].len;
            let lp = qp.rt.sq[0].last_psn();
            self.complete_front(qpn, WcStatus::Success, Some(len));
            self.ack_upto(qpn, lp);
        } else {
            self.ack_upto(qpn, psn::sub(ps, 0));
            if let Some(qp) = self.qps.get_mut(qpn) {
                qp.rt.unacked = psn::add(ps, 1);
            }
        }
    }

    fn rx_atomic_ack(&mut self, qpn: u32, p: &RocePacket) {
        let ps = p.headers.bth.psn;
        let Some(orig) = p.headers.atomic_ack_eth.map(|a| a.orig) else { return };
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let Some(first) = qp.rt.sq.iter().find(|e| e.covers(ps)).map(|e| e.first_psn) else { return };
        if first != ps || !self.complete_before(qpn, first) {
            return;
        }
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let e = &qp.rt.sq[0];
        if !e.wr.opcode.is_atomic() {
            return;
        }
        let bytes = if self.rt.atomic_reply_be { orig.to_be_bytes() } else { orig.to_le_bytes() };
        if sgl_xfer(&self.mkeys, &*self.rt.io.mem, qp.pd, &e.wr.sgl, 0, Xfer::Write(&bytes), Access::LOCAL_WRITE).is_err() {
            self.fail_front(qpn, WcStatus::LocProtErr);
            return;
        }
        self.complete_front(qpn, WcStatus::Success, Some(8));
        self.ack_upto(qpn, ps);
    }

    // -------------------------------------------------------------- responder

    /// Sends an ACKNOWLEDGE with `syndrome` for PSN `p` on QP `qpn`.
    fn send_ack(&mut self, qpn: u32, syndrome: Syndrome, p: u32) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let mut h = Headers::new(bth::Repr { opcode: Opcode::new(Opcode::RC, Opcode::ACKNOWLEDGE), dest_qp: qp.attrs.dest_qpn, psn: p, ..Default::default() });
        h.aeth = Some(aeth::Repr { syndrome, msn: qp.rt.msn & psn::PSN_MASK });
        let dest = resp_dest(&qp.attrs.av, &*self.rt.io.packets);
        match syndrome {
            Syndrome::Nak(NakCode::PsnSequenceError) => count!(self.rt, qp, nak_seq_sent),
            Syndrome::Nak(NakCode::RemoteAccessError) => count!(self.rt, qp, nak_access_sent),
            Syndrome::Nak(NakCode::RemoteOperationalError) => count!(self.rt, qp, nak_op_sent),
            Syndrome::Nak(_) => count!(self.rt, qp, nak_inv_req_sent),
            Syndrome::RnrNak { .. } => count!(self.rt, qp, rnr_nak_sent),
            Syndrome::Ack { .. } => {}
        }
        send_header_only(&mut self.rt, &mut qp.rt.counters, &h, &dest);
    }

    /// Sends the coalesced ACKs (end of a receive burst).
    pub fn flush_acks(&mut self) {
        let q = std::mem::take(&mut self.rt.ack_queue);
        for qpn in &q {
            let Some(qp) = self.qps.get_mut(*qpn) else { continue };
            if !qp.rt.ack_pending || qp.qp_type != QpType::Rc {
                continue;
            }
            qp.rt.ack_pending = false;
            let p = psn::sub(qp.rt.epsn, 1);
            self.send_ack(*qpn, Syndrome::Ack { credits: aeth::CREDITS_UNLIMITED }, p);
        }
        let mut q = q;
        q.clear();
        if self.rt.ack_queue.is_empty() {
            self.rt.ack_queue = q;
        }
    }

    fn want_ack(&mut self, qpn: u32) {
        if let Some(qp) = self.qps.get_mut(qpn) {
            if !qp.rt.ack_pending {
                qp.rt.ack_pending = true;
                self.rt.ack_queue.push(qpn);
            }
        }
    }

    /// Handles one received packet (BTH through ICRC, ICRC already checked).
    pub fn receive(&mut self, meta: &RxMeta, bytes: &[u8]) {
        let Ok(p) = RocePacket::parse(bytes) else {
            count_drop(&mut self.rt.drops.malformed);
            return;
        };
        let h = p.headers;
        let dq = h.bth.dest_qp;
        let qpn = match dq {
            1 => self.qps.iter().find(|(_, q)| q.qp_type == QpType::Gsi).map(|(n, _)| n),
            0 => self.qps.iter().find(|(_, q)| q.qp_type == QpType::Smi).map(|(n, _)| n),
            n => self.qps.contains(n).then_some(n),
        };
        let Some(qpn) = qpn else {
            count_drop(&mut self.rt.drops.no_qp);
            return;
        };
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        count!(self.rt, qp, rx_packets);
        count!(self.rt, qp, rx_bytes, bytes.len() as u64);
        if h.bth.opcode == Opcode::CNP {
            count!(self.rt, qp, cnp_received);
            return;
        }
        if transport_bits(qp.qp_type) != Some(h.bth.opcode.0 & 0xe0) {
            count_drop(&mut self.rt.drops.bad_transport);
            return;
        }
        if !matches!(qp.state, QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe) {
            count_drop(&mut self.rt.drops.bad_state);
            return;
        }
        let pkey_ok = match qp.qp_type {
            QpType::Smi => true,
            QpType::Gsi => PKEY_TABLE.iter().any(|&k| pkey_matches(k, h.bth.pkey)),
            _ => PKEY_TABLE.get(usize::from(qp.attrs.pkey_index)).is_some_and(|&k| pkey_matches(k, h.bth.pkey)),
        };
        if !pkey_ok {
            count_drop(&mut self.rt.drops.bad_pkey);
            return;
        }
        if h.bth.fecn {
            // Congestion experienced: notify the sender's QP.
            count!(self.rt, qp, ecn_marked);
            count!(self.rt, qp, cnp_sent);
            let src_qp = match h.deth {
                Some(d) => d.src_qp,
                None => qp.attrs.dest_qpn,
            };
            let dest = Dest { lid: meta.src.lid, grh: meta.grh.map(|g| g.reply()) };
            let Runtime { io, buf, .. } = &mut self.rt;
            if packet::build(&packet::cnp_headers(src_qp), 0, buf).is_ok() {
                io.packets.send(&dest, buf);
            }
        }
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        if h.bth.opcode.is_request() {
            if qp.state == QpState::Rtr && !qp.rt.comm_est {
                qp.rt.comm_est = true;
                self.rt.io.completions.event(Event::CommEstablished { qpn });
            }
            let Some(qp) = self.qps.get(qpn) else { return };
            match qp.qp_type {
                QpType::Ud | QpType::Gsi | QpType::Smi => self.ud_receive(qpn, meta, &p),
                _ => self.responder(qpn, meta, &p),
            }
        } else {
            self.requester_rx(qpn, &p);
        }
    }

    /// Takes a receive WQE from the QP's RQ or SRQ.
    fn take_recv(&mut self, qpn: u32) -> Option<(RecvWr, bool)> {
        let qp = self.qps.get_mut(qpn)?;
        match qp.srq {
            None => qp.rt.rq.pop_front().map(|w| (w, false)),
            Some(s) => {
                let srq = self.srqs.get_mut(s)?;
                let w = srq.wqes.pop_front()?;
                if srq.limit > 0 && srq.wqes.len() < srq.limit as usize {
                    srq.limit = 0;
                    self.rt.io.completions.event(Event::SrqLimit { srqn: s });
                }
                Some((w, true))
            }
        }
    }

    fn has_recv(&self, qpn: u32) -> bool {
        let Some(qp) = self.qps.get(qpn) else { return false };
        match qp.srq {
            None => !qp.rt.rq.is_empty(),
            Some(s) => self.srqs.get(s).is_some_and(|q| !q.wqes.is_empty()),
        }
    }

    fn ud_receive(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let Some(d) = p.headers.deth else { return };
        let want = if qp.qp_type == QpType::Gsi { deth::GSI_QKEY } else { qp.attrs.qkey };
        if d.qkey != want {
            count!(self.rt, qp, qkey_violations);
            return;
        }
        let Some((wr, _)) = self.take_recv(qpn) else {
            let Some(qp) = self.qps.get_mut(qpn) else { return };
            count!(self.rt, qp, no_recv_drops);
            return;
        };
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let total = GRH_LEN as u64 + p.payload.len() as u64;
        let mut c = Completion::new(wr.wr_id, qpn, WcOpcode::Recv, WcStatus::Success);
        if total > sgl_capacity(&wr.sgl) {
            c.status = WcStatus::LocLenErr;
            let cq = qp.recv_cq;
            deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
            self.rt.io.completions.event(Event::QpFatal { qpn });
            self.enter_error(qpn);
            return;
        }
        // GRH area: the packet's GRH as it travelled, if it had one (on an
        // InfiniBand port a packet without one leaves the area untouched).
        let mem = &*self.rt.io.mem;
        let ok = meta.grh.is_none_or(|g| sgl_xfer(&self.mkeys, mem, qp.pd, &wr.sgl, 0, Xfer::Write(&g.to_bytes()), Access::LOCAL_WRITE).is_ok())
            && sgl_xfer(&self.mkeys, mem, qp.pd, &wr.sgl, GRH_LEN as u64, Xfer::Write(p.payload), Access::LOCAL_WRITE).is_ok();
        if !ok {
            c.status = WcStatus::LocProtErr;
            let cq = qp.recv_cq;
            deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
            self.rt.io.completions.event(Event::QpFatal { qpn });
            self.enter_error(qpn);
            return;
        }
        c.byte_len = total as u32;
        c.src_qp = d.src_qp;
        c.slid = meta.src.lid;
        c.grh = meta.grh.is_some();
        c.imm = p.headers.immdt.map(|i| u32::from_be_bytes(i.imm));
        c.solicited = p.headers.bth.solicited;
        let cq = qp.recv_cq;
        deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
    }

    /// RC/UC request packets.
    fn responder(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let h = &p.headers;
        let ps = h.bth.psn;
        let op = h.bth.opcode;
        let rc = qp.qp_type == QpType::Rc;
        let d = psn::diff(ps, qp.rt.epsn);
        if rc {
            if d < 0 {
                count!(self.rt, qp, duplicates);
                self.duplicate(qpn, p);
                return;
            }
            if d > 0 {
                count!(self.rt, qp, out_of_sequence);
                if !qp.rt.nak_seq_sent && !qp.rt.rnr_nak_sent {
                    qp.rt.nak_seq_sent = true;
                    let e = qp.rt.epsn;
                    self.send_ack(qpn, Syndrome::Nak(NakCode::PsnSequenceError), e);
                }
                return;
            }
            qp.rt.nak_seq_sent = false;
            qp.rt.rnr_nak_sent = false;
        } else {
            if d != 0 {
                count!(self.rt, qp, out_of_sequence);
                // A packet went missing: the message in progress is dropped whole.
                if let Some(r) = qp.rt.recv.take() {
                    self.untake(qpn, r);
                }
                let Some(qp) = self.qps.get_mut(qpn) else { return };
                qp.rt.write = None;
                qp.rt.uc_dropping = !op.is_first();
            }
            let Some(qp) = self.qps.get_mut(qpn) else { return };
            qp.rt.epsn = ps;
            if qp.rt.uc_dropping && !op.is_first() {
                qp.rt.epsn = psn::add(ps, 1);
                return;
            }
            qp.rt.uc_dropping = false;
        }
        let r = if op.is_send() {
            self.resp_send(qpn, meta, p)
        } else if op.is_write() {
            self.resp_write(qpn, meta, p)
        } else if op.op() == Opcode::READ_REQUEST {
            let Some(rh) = h.reth else { return };
            self.resp_read(qpn, ps, rh)
        } else if op.is_atomic() {
            self.resp_atomic(qpn, p)
        } else {
            Resp::Nak(NakCode::InvalidRequest, None)
        };
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        match r {
            Resp::Ok { psns } => {
                qp.rt.epsn = psn::add(ps, psns);
                if rc && h.bth.ack_req && (op.is_send() || op.is_write()) {
                    self.want_ack(qpn);
                }
            }
            Resp::Rnr if rc => {
                qp.rt.rnr_nak_sent = true;
                let t = qp.attrs.min_rnr_timer;
                self.send_ack(qpn, Syndrome::RnrNak { timer: t }, ps);
            }
            Resp::Rnr | Resp::Drop => {
                count!(self.rt, qp, no_recv_drops);
                qp.rt.uc_dropping = true;
                qp.rt.epsn = psn::add(ps, 1);
                qp.rt.write = None;
            }
            Resp::Nak(code, recv_status) => {
                if !rc && recv_status.is_none() {
                    qp.rt.uc_dropping = true;
                    qp.rt.epsn = psn::add(ps, 1);
                    qp.rt.write = None;
                    return;
                }
                if rc {
                    self.send_ack(qpn, Syndrome::Nak(code), ps);
                }
                // The responder QP goes to ERR, with a receive completion
                // for the WQE the failed message used.
                let Some(qp) = self.qps.get_mut(qpn) else { return };
                if let Some(st) = recv_status {
                    if let Some(rp) = qp.rt.recv.take() {
                        let mut c = Completion::new(rp.wr.wr_id, qpn, WcOpcode::Recv, st);
                        c.src_qp = qp.attrs.dest_qpn;
                        let cq = qp.recv_cq;
                        deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
                    }
                }
                self.rt.io.completions.event(Event::QpFatal { qpn });
                self.enter_error(qpn);
            }
        }
    }

    /// Puts a taken receive WQE back (UC message abandoned).
    fn untake(&mut self, qpn: u32, r: RecvInProgress) {
        if r.from_srq {
            let Some(s) = self.qps.get(qpn).and_then(|q| q.srq) else { return };
            if let Some(srq) = self.srqs.get_mut(s) {
                srq.wqes.push_front(r.wr);
            }
        } else if let Some(qp) = self.qps.get_mut(qpn) {
            qp.rt.rq.push_front(r.wr);
        }
    }

    fn resp_send(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) -> Resp {
        let h = &p.headers;
        let op = h.bth.opcode;
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        let mtu = qp.attrs.path_mtu.0 as usize;
        if op.is_first() {
            if qp.rt.recv.is_some() || qp.rt.write.is_some() {
                return Resp::Nak(NakCode::InvalidRequest, None);
            }
            let Some((wr, from_srq)) = self.take_recv(qpn) else { return Resp::Rnr };
            let capacity = sgl_capacity(&wr.sgl);
            let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
            qp.rt.recv = Some(RecvInProgress { wr, from_srq, off: 0, capacity });
        } else if qp.rt.recv.is_none() {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        if !op.is_last() && p.payload.len() != mtu {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        let pd = qp.pd;
        let Some(r) = qp.rt.recv.as_mut() else { return Resp::Drop };
        if r.off as u64 + p.payload.len() as u64 > r.capacity {
            return Resp::Nak(NakCode::InvalidRequest, Some(WcStatus::LocLenErr));
        }
        if sgl_xfer(&self.mkeys, &*self.rt.io.mem, pd, &r.wr.sgl, r.off as u64, Xfer::Write(p.payload), Access::LOCAL_WRITE).is_err() {
            return Resp::Nak(NakCode::RemoteOperationalError, Some(WcStatus::LocProtErr));
        }
        r.off += p.payload.len() as u32;
        if op.is_last() {
            let mut inv = None;
            if let Some(ie) = h.ieth {
                let ok = self.mkeys.get_mut(ie.rkey >> 8).filter(|m| m.variant == ie.rkey as u8 && m.pd == pd).map(|m| m.free = true);
                if ok.is_none() {
                    return Resp::Nak(NakCode::InvalidRequest, Some(WcStatus::RemInvReqErr));
                }
                inv = Some(ie.rkey);
            }
            let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
            let Some(r) = qp.rt.recv.take() else { return Resp::Drop };
            qp.rt.msn = qp.rt.msn.wrapping_add(1);
            self.complete_recv(qpn, meta, h, Completion::new(r.wr.wr_id, qpn, WcOpcode::Recv, WcStatus::Success), r.off, inv);
        }
        Resp::Ok { psns: 1 }
    }

    /// Fills in a connected QP's receive completion `c` (length, immediate,
    /// invalidated key, the peer QP and LID, solicited) from the last packet's
    /// headers and delivers it to the QP's receive CQ.
    fn complete_recv(&mut self, qpn: u32, meta: &RxMeta, h: &Headers, mut c: Completion, byte_len: u32, inv: Option<u32>) {
        let Some(qp) = self.qps.get(qpn) else { return };
        c.byte_len = byte_len;
        c.imm = h.immdt.map(|i| u32::from_be_bytes(i.imm));
        c.invalidated_rkey = inv;
        c.src_qp = qp.attrs.dest_qpn;
        c.slid = meta.src.lid;
        c.solicited = h.bth.solicited;
        let cq = qp.recv_cq;
        deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
    }

    fn resp_write(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) -> Resp {
        let h = &p.headers;
        let op = h.bth.opcode;
        let with_imm = h.immdt.is_some();
        // A WRITE with immediate needs a receive WQE: check before touching anything.
        if with_imm && !self.has_recv(qpn) {
            return Resp::Rnr;
        }
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        let mtu = qp.attrs.path_mtu.0 as usize;
        let pd = qp.pd;
        if op.is_first() {
            if qp.rt.recv.is_some() || qp.rt.write.is_some() {
                return Resp::Nak(NakCode::InvalidRequest, None);
            }
            let Some(rh) = h.reth else { return Resp::Nak(NakCode::InvalidRequest, None) };
            if rh.dma_len > 0 {
                let ok = qp.attrs.access.contains(Access::REMOTE_WRITE)
                    && lookup_key(&self.mkeys, rh.rkey).is_some_and(|k| k.translate(rh.va, rh.dma_len as u64, pd, Access::REMOTE_WRITE).is_ok());
                if !ok {
                    return Resp::Nak(NakCode::RemoteAccessError, None);
                }
            }
            qp.rt.write = Some(WriteInProgress { va: rh.va, rkey: rh.rkey, len: rh.dma_len, off: 0 });
        }
        let Some(w) = qp.rt.write else { return Resp::Nak(NakCode::InvalidRequest, None) };
        if (!op.is_last() && p.payload.len() != mtu) || w.off as u64 + p.payload.len() as u64 > w.len as u64 {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        if !p.payload.is_empty() {
            if let Err(code) = key_xfer(&self.mkeys, &*self.rt.io.mem, pd, w.rkey, w.va.wrapping_add(w.off as u64), Xfer::Write(p.payload), Access::REMOTE_WRITE) {
                return Resp::Nak(code, None);
            }
        }
        let off = w.off + p.payload.len() as u32;
        if let Some(w) = qp.rt.write.as_mut() {
            w.off = off;
        }
        if op.is_last() {
            if off != w.len {
                return Resp::Nak(NakCode::InvalidRequest, None);
            }
            qp.rt.write = None;
            qp.rt.msn = qp.rt.msn.wrapping_add(1);
            if with_imm {
                let Some((wr, _)) = self.take_recv(qpn) else { return Resp::Rnr };
                self.complete_recv(qpn, meta, h, Completion::new(wr.wr_id, qpn, WcOpcode::RecvRdmaWithImm, WcStatus::Success), w.len, None);
            }
        }
        Resp::Ok { psns: 1 }
    }

    /// Answers an RDMA READ request (fresh or duplicate) from PSN `ps`.
    fn resp_read(&mut self, qpn: u32, ps: u32, rh: reth::Repr) -> Resp {
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        let pd = qp.pd;
        let mtu = qp.attrs.path_mtu.0 as u32;
        if rh.dma_len as u64 > MAX_MSG {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        if rh.dma_len > 0 {
            let ok = qp.attrs.access.contains(Access::REMOTE_READ)
                && lookup_key(&self.mkeys, rh.rkey).is_some_and(|k| k.translate(rh.va, rh.dma_len as u64, pd, Access::REMOTE_READ).is_ok());
            if !ok {
                return Resp::Nak(NakCode::RemoteAccessError, None);
            }
        }
        let n = rh.dma_len.div_ceil(mtu).max(1);
        let msn = qp.rt.msn.wrapping_add(1);
        let dest = resp_dest(&qp.attrs.av, &*self.rt.io.packets);
        let dqpn = qp.attrs.dest_qpn;
        for i in 0..n {
            let off = i * mtu;
            let plen = (rh.dma_len - off.min(rh.dma_len)).min(mtu);
            let code = match (n == 1, i == 0, i + 1 == n) {
                (true, _, _) => Opcode::READ_RESPONSE_ONLY,
                (false, true, _) => Opcode::READ_RESPONSE_FIRST,
                (false, _, true) => Opcode::READ_RESPONSE_LAST,
                _ => Opcode::READ_RESPONSE_MIDDLE,
            };
            let mut h = Headers::new(bth::Repr { opcode: Opcode::new(Opcode::RC, code), dest_qp: dqpn, psn: psn::add(ps, i), ..Default::default() });
            if code != Opcode::READ_RESPONSE_MIDDLE {
                h.aeth = Some(aeth::Repr { syndrome: Syndrome::Ack { credits: aeth::CREDITS_UNLIMITED }, msn: msn & psn::PSN_MASK });
            }
            let Runtime { io, buf, totals, .. } = &mut self.rt;
            let Ok(range) = packet::build(&h, plen as usize, buf) else { return Resp::Drop };
            if plen > 0 {
                if let Err(code) = key_xfer(&self.mkeys, &*io.mem, pd, rh.rkey, rh.va.wrapping_add(off as u64), Xfer::Read(&mut buf[range]), Access::REMOTE_READ) {
                    return Resp::Nak(code, None);
                }
            }
            io.packets.send(&dest, buf);
            totals.tx_packets += 1;
            totals.tx_bytes += buf.len() as u64;
            qp.rt.counters.tx_packets += 1;
            qp.rt.counters.tx_bytes += buf.len() as u64;
        }
        if psn::diff(ps, qp.rt.epsn) >= 0 {
            qp.rt.msn = msn;
        }
        Resp::Ok { psns: n }
    }

    fn resp_atomic(&mut self, qpn: u32, p: &RocePacket) -> Resp {
        let Some(a) = p.headers.atomic_eth else { return Resp::Nak(NakCode::InvalidRequest, None) };
        let ps = p.headers.bth.psn;
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        if a.va % 8 != 0 {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        if !qp.attrs.access.contains(Access::REMOTE_ATOMIC) {
            return Resp::Nak(NakCode::RemoteAccessError, None);
        }
        let Some(key) = lookup_key(&self.mkeys, a.rkey) else { return Resp::Nak(NakCode::RemoteAccessError, None) };
        let Ok(chunks) = key.translate(a.va, 8, qp.pd, Access::REMOTE_ATOMIC) else { return Resp::Nak(NakCode::RemoteAccessError, None) };
        let Some(&(pa, 8)) = chunks.first() else { return Resp::Nak(NakCode::InvalidRequest, None) };
        let mem = &*self.rt.io.mem;
        let r = if p.headers.bth.opcode.op() == Opcode::CMP_SWAP { mem.compare_and_swap_u64(pa, a.compare, a.swap_add) } else { mem.fetch_add_u64(pa, a.swap_add) };
        let Ok(orig) = r else { return Resp::Nak(NakCode::RemoteOperationalError, None) };
        qp.rt.msn = qp.rt.msn.wrapping_add(1);
        if qp.rt.replay.len() >= ATOMIC_REPLAY {
            qp.rt.replay.pop_front();
        }
        qp.rt.replay.push_back((ps, orig));
        self.send_atomic_ack(qpn, ps, orig);
        Resp::Ok { psns: 1 }
    }

    fn send_atomic_ack(&mut self, qpn: u32, ps: u32, orig: u64) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let mut h = Headers::new(bth::Repr { opcode: Opcode::new(Opcode::RC, Opcode::ATOMIC_ACKNOWLEDGE), dest_qp: qp.attrs.dest_qpn, psn: ps, ..Default::default() });
        h.aeth = Some(aeth::Repr { syndrome: Syndrome::Ack { credits: aeth::CREDITS_UNLIMITED }, msn: qp.rt.msn & psn::PSN_MASK });
        h.atomic_ack_eth = Some(atomic_ack_eth::Repr { orig });
        let dest = resp_dest(&qp.attrs.av, &*self.rt.io.packets);
        send_header_only(&mut self.rt, &mut qp.rt.counters, &h, &dest);
    }

    /// An RC request with a PSN already seen.
    fn duplicate(&mut self, qpn: u32, p: &RocePacket) {
        let h = &p.headers;
        let op = h.bth.opcode;
        if op.op() == Opcode::READ_REQUEST {
            if let Some(rh) = h.reth {
                // Read again (memory may have changed: so does hardware).
                let _ = self.resp_read(qpn, h.bth.psn, rh);
            }
        } else if op.is_atomic() {
            let Some(qp) = self.qps.get(qpn) else { return };
            if let Some(&(_, orig)) = qp.rt.replay.iter().find(|(ps, _)| *ps == h.bth.psn) {
                self.send_atomic_ack(qpn, h.bth.psn, orig);
            }
        } else {
            self.want_ack(qpn);
        }
    }
}

fn count_drop(c: &mut u64) {
    *c += 1;
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
