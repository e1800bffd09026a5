//! A QP's transport state, the engine's runtime (I/O, timers, counters)
//! and the helpers every role shares: completion delivery, packet
//! destinations, transport bits. A leaf: it imports none of its siblings.

use crate::personality::Slot;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use serde::Serialize;

use super::super::objects::{Cq, QpType};
use super::super::table::Table;
use super::super::types::{GuestMemory, MemFault};
use super::super::verbs::AddressVector;
use super::super::verbs::*;
use vrnic_cc::{CcConfig, Limiter, Np};
use vrnic_packet::{Dest, Endpoint, EthDest, PacketSink};
use vrnic_sys::clock::{Clock, MonotonicClock};
use vrnic_wire::bth::Opcode;
use vrnic_wire::{grh, psn};

/// Unacknowledged PSNs a requester may have in flight.
pub const WINDOW_PSNS: u32 = 128;
/// The congestion window never shrinks below this: enough packets behind
/// a lost one for the responder to see the gap and NAK it.
pub const MIN_CWND: u32 = 16;
/// Packets a QP sends, once the link lets waiting QPs go on, before the
/// next waiting QP has its turn (round robin across the QPs a link held).
pub const LINK_QUANTUM: u32 = 16;
/// Packets the port must have received since a READ/atomic's ACK timer was
/// armed for its timeout to count as waiting in line, not as a loss.
pub const RX_BUSY_PACKETS: u64 = 16;
/// How long such timeouts are excused without progress: past it a loss
/// behind a busy inbound link is retried as any other.
pub const RX_HELD_MAX_NS: u64 = 4_000_000_000;
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
    /// XRC target: requests naming no XRC SRQ of the target's XRC domain (NAKed, invalid request).
    pub xrc_bad_srq: u64,
    /// Times the requester stopped because the link held it (link-level
    /// flow control: no credit toward the peer).
    pub link_waits: u64,
    /// ACK timeouts that found the QP waiting for the link: restarted, no
    /// retry spent (`timers.rs`).
    pub link_held_timeouts: u64,
    /// ACK timeouts of a READ/atomic while the port kept receiving (its
    /// responses wait in line behind other QPs' at the responder): restarted,
    /// no retry spent, for at most [`RX_HELD_MAX_NS`] (`timers.rs`).
    pub rx_held_timeouts: u64,
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
    pub(super) wr: SendWr,
    pub(super) len: u32,
    pub(super) first_psn: u32,
    /// PSNs the message uses (read responses for READ).
    pub(super) npkts: u32,
    /// READ responses received so far.
    pub(super) resp_pkts: u32,
    /// A local error found at post or gather time, reported in order.
    pub(super) err: Option<WcStatus>,
}

impl SqEntry {
    /// The entry's last PSN (a NOP, which takes none, reads as the one before its first).
    pub(super) fn last_psn(&self) -> u32 {
        psn::sub(psn::add(self.first_psn, self.npkts), 1)
    }
    pub(super) fn covers(&self, p: u32) -> bool {
        psn::diff(p, self.first_psn) >= 0 && psn::diff(p, self.last_psn()) <= 0
    }
}

#[derive(Debug, Clone)]
pub(super) struct RecvInProgress {
    pub(super) wr: RecvWr,
    pub(super) from_srq: bool,
    /// XRC target: the XRC SRQ the WQE came from (its CQ and PD apply).
    pub(super) xrc_srq: Option<u32>,
    pub(super) off: u32,
    pub(super) capacity: u64,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct WriteInProgress {
    pub(super) va: u64,
    pub(super) rkey: u32,
    pub(super) len: u32,
    pub(super) off: u32,
}

/// A QP's transport state.
#[derive(Debug, Clone, Default)]
pub struct QpRt {
    // Requester.
    pub(super) sq: VecDeque<SqEntry>,
    /// The entry being sent and its next packet.
    pub(super) cur: usize,
    pub(super) cur_pkt: u32,
    /// PSN of the next posted message.
    pub(super) next_psn: u32,
    /// Oldest PSN not yet acknowledged.
    pub(super) unacked: u32,
    /// One past the highest PSN ever sent.
    pub(super) max_sent: u32,
    pub(super) retry_left: u8,
    pub(super) rnr_left: u8,
    pub(super) rnr_wait: bool,
    pub(super) deadline: Option<u64>,
    pub(super) queued_at: Option<u64>,
    /// Go-back already requested for this PSN (read response gaps).
    pub(super) goback_psn: Option<u32>,
    /// Congestion window in PSNs (≤ WINDOW_PSNS): halved on every go-back
    /// (sequence NAK, timeout), grown by the PSNs each ACK covers, so heavy
    /// loss does not turn go-back-N into resending whole windows.
    pub(super) cwnd: u32,
    /// In the engine's link-wait list: the link toward the QP's next packet
    /// held it ([`PacketSink::ready`] was false); `Engine::tx_ready` resumes it.
    pub(super) link_wait: bool,
    /// The engine's received packets when the ACK timer was last armed.
    pub(super) rx_mark: u64,
    /// When the first timeout excused for a busy inbound link fired (since
    /// the last progress).
    pub(super) rx_held_since: Option<u64>,
    // Responder.
    pub(super) rq: VecDeque<RecvWr>,
    pub(super) epsn: u32,
    pub(super) msn: u32,
    pub(super) nak_seq_sent: bool,
    pub(super) rnr_nak_sent: bool,
    pub(super) recv: Option<RecvInProgress>,
    pub(super) write: Option<WriteInProgress>,
    pub(super) uc_dropping: bool,
    pub(super) replay: VecDeque<(u32, u64)>,
    pub(super) ack_pending: bool,
    pub(super) comm_est: bool,
    /// RoCE congestion control: the send-rate limiter, from the QP's first
    /// CNP until its rate is back at line rate (`None`: unlimited).
    pub(super) limiter: Option<Box<Limiter>>,
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
    pub(super) timers: BinaryHeap<Reverse<(u64, u32)>>,
    pub(super) ack_queue: Vec<u32>,
    /// QPs held by link-level flow control, in the order they stopped: the
    /// first to stop is the first to go on (no QP starves behind others).
    pub(super) link_waiters: VecDeque<u32>,
    /// While `tx_ready` resumes a QP: the packets it may still send before
    /// it goes to the back of the line (`None`: no limit).
    pub(super) quantum: Option<u32>,
    /// The QP `tx_ready` resumed used up its quantum (not the link's credit).
    pub(super) quantum_spent: bool,
    pub(super) buf: Vec<u8>,
    pub totals: QpCounters,
    pub drops: EngineDrops,
    /// The ECN notification point (when each QP last sent a CNP).
    pub(super) np: Np,
    /// The port's congestion-control settings as last read, with their
    /// generation (re-read only when it changes).
    pub(super) cc_seen: Option<(u64, CcConfig)>,
    /// Called when a timer earlier than any queued one is armed.
    pub waker: Option<Arc<dyn Fn() + Send + Sync>>,
    /// The responder steps the last request packet went through.
    #[cfg(test)]
    pub(crate) resp_trace: Vec<super::resp_step::RespStep>,
}

impl Runtime {
    /// Device reset: timers, queued ACKs and counters go; the I/O stays.
    pub fn reset(&mut self) {
        self.timers.clear();
        self.ack_queue.clear();
        self.link_waiters.clear();
        self.totals = QpCounters::default();
        self.drops = EngineDrops::default();
        self.np = Np::default();
        self.cc_seen = None;
    }

    /// QP `qpn` is gone: the notification point forgets it.
    pub fn forget_qp(&mut self, qpn: u32) {
        self.np.forget(qpn);
    }

    /// The port's congestion-control settings (`None`: the port has none).
    pub(super) fn cc_config(&mut self) -> Option<CcConfig> {
        let cc = self.io.packets.cc()?;
        let g = cc.generation();
        match self.cc_seen {
            Some((seen, c)) if seen == g => Some(c),
            _ => {
                let c = cc.config();
                self.cc_seen = Some((g, c));
                Some(c)
            }
        }
    }
}

/// Puts a completion on CQ `cqn` after overrun detection; the sink writes it
/// (and runs the CQ's arming).
pub(super) fn deliver(
    cqs: &mut Table<Slot<Cq, impl Sized>>,
    sink: &dyn CompletionSink,
    cqn: Option<u32>,
    c: Completion,
) {
    let Some(cqn) = cqn else { return };
    let Some(cq) = cqs.obj_mut(cqn) else { return };
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

pub(super) fn transport_bits(t: QpType) -> Option<u8> {
    match t {
        QpType::Rc => Some(Opcode::RC),
        QpType::Uc => Some(Opcode::UC),
        QpType::Ud | QpType::Gsi | QpType::Smi => Some(Opcode::UD),
        QpType::XrcInitiator | QpType::XrcTarget => Some(Opcode::XRC),
        _ => None,
    }
}

pub(super) fn wire_qpn(qpn: u32, t: QpType) -> u32 {
    match t {
        QpType::Smi => 0,
        QpType::Gsi => 1,
        _ => qpn,
    }
}

/// Where a packet on address vector `av` goes: its DLID, and when the AV
/// is global (on RoCE every AV is: [`PacketSink::all_global`]) a GRH with
/// the port's GID at `sgid_index` as SGID; the RoCE fields ride along in
/// `eth`. None: the port has no GID at that index.
pub(super) fn av_dest(av: &AddressVector, sink: &dyn PacketSink) -> Option<Dest> {
    let eth = EthDest { sgid_index: av.sgid_index, dmac: av.dmac, udp_sport: av.udp_sport, pcp: av.pcp };
    if !av.grh && !sink.all_global() {
        return Some(Dest { lid: av.dlid, grh: None, eth });
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
    Some(Dest { lid: av.dlid, grh: Some(g), eth })
}

/// [`av_dest`] for a response (ACK, read response, atomic ACK) on the
/// responder QP's own path: with no GID at its `sgid_index` it goes without
/// a GRH, still routed by the DLID (the request could not have been sent).
pub(super) fn resp_dest(av: &AddressVector, sink: &dyn PacketSink) -> Dest {
    av_dest(av, sink).unwrap_or(Dest { lid: av.dlid, ..Default::default() })
}
