//! [`PauseGate`]: the Ethernet port's flow control (owner: eth-link). Every
//! frame the device transmits — mlx5e SQs and RoCE alike — passes it
//! ([`FrameSink`](super::FrameSink) of the link), and every MAC control frame
//! the link receives ends here.
//!
//! - A frame's priority is the link's classification (`classify.rs`: the
//!   VLAN PCP, or under DSCP trust the DSCP's mapped priority).
//! - A received 802.1Qbb PFC frame stops each priority whose class-enable bit
//!   is set and whose PFC receive policy is on (PFCC `pfcrx`) for its quanta
//!   (512 bit times each at [`PORT_SPEED_BPS`], or `[eth] pause_speed_mbps`);
//!   quanta 0 resumes it. An
//!   802.3x PAUSE frame stops all eight when global pause is on (PFCC
//!   `pprx`). A new frame replaces a priority's timer.
//! - A peer that has ended a pause with quanta 0 (XON) is taken at its
//!   word: its pauses last until its XON, or at least [`XON_PEER_HOLD_NS`]
//!   (a vrnic peer's refresh may come late on a loaded host).
//! - Frames of a paused priority wait in its queue (at most
//!   [`QUEUE_FRAMES`]; an overflow is a counted drop) and leave in order when
//!   the pause ends; other priorities keep going.
//! - MAC control frames are consumed here (never delivered to the port);
//!   malformed ones and unknown opcodes are counted drops.
//!
//! Time is the link's clock, passed in (`now`); the link's worker wakes at
//! [`next_due`](PauseGate::next_due) to [`release`](PauseGate::release).
//! Counters: [`EtherCounters::prio`](super::EtherCounters) (PPCNT's
//! per-priority group).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::classify::Classifier;
use super::counters::EtherCounters;
use crate::counters::bump;
use vrnic_wire::pfc::{self, quanta_ns, Repr, PRIORITIES};

/// The port's speed (PTYS reports 100GBASE-CR4): what a pause quantum is measured in.
pub const PORT_SPEED_BPS: u64 = 100_000_000_000;
/// How long a pause lasts at least once the peer has ended a pause with
/// quanta 0 (XON): such a peer (a vrnic port, a ConnectX) says when its
/// buffer has room, and refreshes a pause every half of it while it has
/// none. A vrnic peer refreshes from its link's thread, which on a loaded
/// host can wait for a CPU longer than a pause lasts at 100 Gb/s (0xffff
/// quanta: 336 us); the frames sent when the timer ran out were then lost in
/// its full buffer (`-q 1024` over RoCE). The XON still ends it at once.
pub const XON_PEER_HOLD_NS: u64 = 20_000_000;
/// Frames one paused priority holds before it drops (at most 8 x 256 frames of up to 9 KiB: 18 MiB that a
/// peer pausing every priority can make the port hold).
pub const QUEUE_FRAMES: usize = 256;

/// One priority's pause.
#[derive(Debug, Default)]
struct Prio {
    /// Paused until this time (meaningful while `paused`).
    until: u64,
    /// When the current pause began.
    since: u64,
    paused: bool,
    queue: VecDeque<Vec<u8>>,
}

/// The port's flow-control policy (PFCC): which priorities honour PFC,
/// whether PAUSE is honoured, which priorities are lossless on receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PausePolicy {
    /// PFCC `pfcrx`: bit i = priority i honours PFC frames.
    pub pfc_rx: u8,
    /// PFCC `pprx`: 802.3x PAUSE frames stop every priority.
    pub pause_rx: bool,
    /// PFCC `pptx`: the port sends PAUSE when its receive buffer fills (`rx_buffer.rs`).
    pub pause_tx: bool,
    /// PFCC `pfctx`: bit i = priority i sends PFC frames instead of dropping (`pfc_tx.rs`).
    pub pfc_tx: u8,
    /// The source address of the PFC frames the port sends (its MAC).
    pub smac: [u8; 6],
}

impl PausePolicy {
    fn bits(self) -> u16 {
        self.pfc_rx as u16 | (self.pause_rx as u16) << 8
    }
    fn from_bits(b: u16) -> PausePolicy {
        PausePolicy { pfc_rx: b as u8, pause_rx: b & 0x100 != 0, ..PausePolicy::default() }
    }
}

/// The hardware's power-on policy: global pause on both ways, no PFC (as PFCC reads at power-on).
pub const DEFAULT_POLICY: PausePolicy =
    PausePolicy { pfc_rx: 0, pause_rx: true, pause_tx: true, pfc_tx: 0, smac: [0; 6] };

/// See the module documentation.
pub struct PauseGate {
    policy: AtomicU16,
    speed_bps: u64,
    prios: Mutex<[Prio; PRIORITIES]>,
    counters: Arc<EtherCounters>,
    classes: Arc<Classifier>,
    /// A pause ended since the last [`release`](PauseGate::release).
    ended: AtomicBool,
    /// When the link's worker last began a receive pass that emptied the
    /// medium ([`medium_drained`](PauseGate::medium_drained)); `u64::MAX`: not
    /// tracked (a gate without a worker, in tests).
    drained_at: AtomicU64,
    /// The peer has sent a pause of quanta 0 (XON): its pauses last at
    /// least [`XON_PEER_HOLD_NS`] unless it ends them.
    peer_sends_xon: AtomicBool,
}

impl PauseGate {
    pub fn new(counters: Arc<EtherCounters>, speed_bps: u64, classes: Arc<Classifier>) -> PauseGate {
        PauseGate {
            policy: AtomicU16::new(DEFAULT_POLICY.bits()),
            speed_bps,
            prios: Mutex::new(Default::default()),
            counters,
            classes,
            ended: AtomicBool::new(false),
            drained_at: AtomicU64::new(u64::MAX),
            peer_sends_xon: AtomicBool::new(false),
        }
    }

    /// The receive part of the policy (`pause_tx`, `pfc_tx`, `smac` read 0:
    /// `RxBuffer` and `RxHold` keep them).
    pub fn policy(&self) -> PausePolicy {
        PausePolicy::from_bits(self.policy.load(Ordering::Relaxed))
    }

    /// A new receive policy (PFCC write, reset): every current pause ends now
    /// (its frames leave at the next [`release`](Self::release)).
    pub fn set_policy(&self, p: PausePolicy, now: u64) {
        self.policy.store(p.bits(), Ordering::Relaxed);
        let mut prios = self.lock();
        for (i, s) in prios.iter_mut().enumerate() {
            if s.paused {
                self.end(i, s, now);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, [Prio; PRIORITIES]> {
        // A panic elsewhere while holding it leaves plain data: go on with it.
        self.prios.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The link's worker began a receive pass at `at` that emptied the
    /// medium: every MAC control frame that arrived before `at` has been
    /// taken. From the first call on, a pause ends only once that is so for
    /// its end time (see [`settle`](Self::settle)).
    pub fn medium_drained(&self, at: u64) {
        let _ = self.drained_at.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |d| match d {
            u64::MAX => Some(at),
            d => Some(d.max(at)),
        });
    }

    /// Whether the worker's last pass that emptied the medium began more
    /// than `lag_ns` before `now` (never, while not tracked): a PAUSE may
    /// wait in the socket unread.
    pub fn lagging(&self, now: u64, lag_ns: u64) -> bool {
        let d = self.drained_at.load(Ordering::SeqCst);
        d != u64::MAX && d.saturating_add(lag_ns) < now
    }

    /// Whether a pause until `until` is over at `now`: its time has come and
    /// the worker has read what the medium held by then (a refresh the peer
    /// sent before the timer ran out, which a real MAC takes at once, may
    /// still wait in the socket while the worker waits for a CPU).
    fn over(&self, until: u64, now: u64) -> bool {
        let d = self.drained_at.load(Ordering::SeqCst);
        until <= now && (d == u64::MAX || d >= until)
    }

    /// Ends the pause of priority `i` if it is over at `now`.
    fn settle(&self, i: usize, s: &mut Prio, now: u64) {
        if s.paused && self.over(s.until, now) {
            self.end(i, s, s.until);
        }
    }

    /// Ends the pause of priority `i` as of `at` (counted since it began).
    fn end(&self, i: usize, s: &mut Prio, at: u64) {
        s.paused = false;
        self.ended.store(true, Ordering::SeqCst);
        bump(&self.counters.prio[i].rx_pause_duration_ns, at.saturating_sub(s.since));
    }

    fn sent(&self, i: usize, frame: &[u8], out: &mut dyn FnMut(&[u8])) {
        let c = &self.counters.prio[i];
        bump(&c.tx_frames, 1);
        bump(&c.tx_octets, frame.len() as u64);
        out(frame);
    }

    /// A frame the device transmits: to `out` now (after the frames its
    /// priority queued, in order), or queued while its priority is paused.
    pub fn transmit(&self, frame: &[u8], now: u64, out: &mut dyn FnMut(&[u8])) {
        let i = self.classes.frame_priority(frame);
        let mut prios = self.lock();
        let s = &mut prios[i];
        self.settle(i, s, now);
        if s.paused {
            if s.queue.len() >= QUEUE_FRAMES {
                bump(&self.counters.prio[i].tx_pause_dropped, 1);
            } else {
                s.queue.push_back(frame.to_vec());
            }
            return;
        }
        while let Some(q) = s.queue.pop_front() {
            self.sent(i, &q, out);
        }
        self.sent(i, frame, out);
    }

    /// Sends what the priorities whose pause is over at `now` queued.
    /// Returns whether a pause ended since the last call (senders that
    /// waited for it may go on).
    pub fn release(&self, now: u64, out: &mut dyn FnMut(&[u8])) -> bool {
        let mut prios = self.lock();
        for (i, s) in prios.iter_mut().enumerate() {
            self.settle(i, s, now);
            if !s.paused {
                while let Some(q) = s.queue.pop_front() {
                    self.sent(i, &q, out);
                }
            }
        }
        drop(prios);
        self.ended.swap(false, Ordering::SeqCst)
    }

    /// When the next pause ends (the link's worker wakes then), if any.
    pub fn next_due(&self) -> Option<u64> {
        self.lock().iter().filter(|s| s.paused).map(|s| s.until).min()
    }

    /// Whether priority `prio` is paused at `now`.
    pub fn is_paused(&self, prio: usize, now: u64) -> bool {
        self.lock().get(prio).is_some_and(|s| s.paused && !self.over(s.until, now))
    }

    /// A frame the link received: a MAC control frame is taken here (true:
    /// not for the port); any other frame is counted under its priority
    /// (false: deliver it).
    pub fn receive(&self, frame: &[u8], now: u64) -> bool {
        let Some(pdu) = pfc::mac_control_pdu(frame) else {
            let c = &self.counters.prio[self.classes.frame_priority(frame)];
            bump(&c.rx_frames, 1);
            bump(&c.rx_octets, frame.len() as u64);
            return false;
        };
        let repr = match Repr::parse(&pfc::Packet::new_unchecked(pdu)) {
            Ok(r) => r,
            Err(_) => {
                bump(&self.counters.rx_mac_control_malformed, 1);
                return true;
            }
        };
        let policy = self.policy();
        let (enable, quanta, count_at) = match repr {
            Repr::Pfc { enable, quanta } => (enable & policy.pfc_rx, quanta, None),
            // mlx5e reads global pause from priority 0's counters.
            Repr::Pause { quanta } if policy.pause_rx => (0xff, [quanta; PRIORITIES], Some(0)),
            Repr::Pause { .. } => (0, [0; PRIORITIES], None),
        };
        if enable == 0 {
            bump(&self.counters.rx_pause_ignored, 1);
            return true;
        }
        if (0..PRIORITIES).any(|i| enable & (1 << i) != 0 && quanta[i] == 0) {
            self.peer_sends_xon.store(true, Ordering::Relaxed);
        }
        let hold = if self.peer_sends_xon.load(Ordering::Relaxed) { XON_PEER_HOLD_NS } else { 0 };
        let mut prios = self.lock();
        for (i, s) in prios.iter_mut().enumerate() {
            if enable & (1 << i) == 0 {
                continue;
            }
            let c = &self.counters.prio[count_at.unwrap_or(i)];
            if count_at.is_none() || i == 0 {
                bump(&c.rx_pause, 1);
            }
            self.settle(i, s, now);
            let t = quanta_ns(quanta[i], self.speed_bps);
            let until = now + if t == 0 { 0 } else { t.max(hold) };
            if !s.paused && until > now {
                s.paused = true;
                s.since = now;
                if count_at.is_none() || i == 0 {
                    bump(&c.rx_pause_transition, 1);
                }
            }
            s.until = until;
            self.settle(i, s, now);
        }
        true
    }
}

#[cfg(test)]
#[path = "pfc_tests.rs"]
mod tests;
