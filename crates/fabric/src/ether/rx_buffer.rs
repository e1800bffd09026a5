//! [`RxBuffer`]: the port's receive buffer filling, and the 802.3x PAUSE it
//! sends then (owner: eth-link). A ConnectX port whose received frames
//! arrive faster than it moves them to the host fills its receive buffer;
//! with global pause on (PFCC `pptx`, on at power-on) it sends PAUSE frames
//! before the buffer overflows, and the peer's transmitter stops instead of
//! the frames being lost.
//!
//! vrnic's receive buffer is the medium's socket (a `udp` link's receive
//! queue, read with `SO_MEMINFO`; a TAP or no medium has none to watch):
//!
//! - after a receive burst that did not empty the socket, the worker reads
//!   how full it is; at [`XOFF_DIVISOR`]⁻¹ of the buffer the port sends PAUSE
//!   with the quanta of `[eth] pfc_tx_quanta` (0xffff), and again every half
//!   pause time while it stays above [`XON_DIVISOR`]⁻¹ — looked at as each
//!   frame arrives, so a long burst does not let the peer's timer run out;
//! - once the socket is below that, or empty, it sends PAUSE with quanta 0
//!   (XON).
//!
//! The peer's [pause gate](super::PauseGate) holds its frames and tells its
//! RoCE senders to wait ([`FrameSink::ready`](super::FrameSink::ready));
//! the room above the XOFF mark is the headroom for what is in flight. A
//! real MAC takes a PAUSE the moment it arrives; a vrnic port's worker may
//! be waiting for a CPU with the PAUSE unread in its socket, so the gate
//! lets a pause end only after the worker has emptied the medium past its
//! end, and RoCE senders wait while the worker is more than 1 ms behind
//! (`link.rs`, `MAC_LAG_NS`). A
//! PAUSE reaches a QEMU NIC as an ordinary frame (its guest drops it), as it
//! would from a switch.
//!
//! Counters: priority 0's `tx_pause`, `tx_pause_transition`,
//! `tx_pause_duration` (where mlx5e reads global pause), and the socket's own
//! drop count, `rx_socket_drops` (what overflowed anyway). With PFC instead
//! (`pfctx`), frames of a lossless priority wait for a receive WQE
//! (`pfc_tx.rs`); the socket's fill is not split by priority and sends no
//! PFC.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::counters::EtherCounters;
use super::pfc_tx::{Asking, SourceMac};
use crate::counters::bump;
use vrnic_sys::net::SocketMemory;
use vrnic_wire::pfc::{quanta_ns, Repr};

/// PAUSE when the socket holds a sixteenth of its buffer: the rest is the
/// headroom for what the peer sends before it hears the PAUSE.
pub const XOFF_DIVISOR: u32 = 16;
/// XON when it holds less than a sixty-fourth.
pub const XON_DIVISOR: u32 = 64;

/// How full the medium is after a receive burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// The burst emptied it (or nothing was readable).
    Empty,
    /// Frames wait; the socket's memory.
    Level(SocketMemory),
    /// Frames may wait; the medium cannot say how many.
    Unknown,
}

/// See the module documentation.
pub struct RxBuffer {
    counters: Arc<EtherCounters>,
    quanta: u16,
    /// Time between two XOFFs of one pause (half its length, at least 1 ns).
    refresh_ns: u64,
    /// PFCC `pptx`.
    pause_tx: AtomicBool,
    smac: SourceMac,
    /// Only the link's worker (and tests) touch it.
    state: Mutex<Asking>,
    /// `state.paused`, read without the lock on every frame.
    pausing: AtomicBool,
}

impl RxBuffer {
    /// `quanta` per PAUSE frame, timed at `speed_bps` (the pause gate's speed).
    pub fn new(counters: Arc<EtherCounters>, quanta: u16, speed_bps: u64) -> RxBuffer {
        RxBuffer {
            counters,
            quanta,
            refresh_ns: (quanta_ns(quanta, speed_bps) / 2).max(1),
            pause_tx: AtomicBool::new(super::pfc::DEFAULT_POLICY.pause_tx),
            smac: SourceMac::default(),
            state: Mutex::new(Asking::default()),
            pausing: AtomicBool::new(false),
        }
    }

    /// PFCC `pptx` and the port's MAC. Turning it off ends a pause (XON) on
    /// the worker's next pass.
    pub fn set_policy(&self, pause_tx: bool, smac: [u8; 6]) {
        self.smac.set(smac);
        self.pause_tx.store(pause_tx, Ordering::Relaxed);
    }

    fn pause_frame(&self, quanta: u16, out: &mut dyn FnMut(&[u8])) {
        bump(&self.counters.prio[0].tx_pause, 1);
        out(&Repr::Pause { quanta }.to_frame(self.smac.get()));
    }

    /// The worker's pass after a receive burst: XOFF, a refresh or XON as
    /// `fill` says; PAUSE frames go to `out`. Returns whether the port is
    /// asking its peer to pause.
    pub fn update(&self, fill: Fill, now: u64, out: &mut dyn FnMut(&[u8])) -> bool {
        if let Fill::Level(m) = fill {
            self.counters.rx_socket_drops.store(m.drops as u64, Ordering::Relaxed);
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let on = self.pause_tx.load(Ordering::Relaxed);
        let (xoff, xon) = match fill {
            _ if !on => (false, true),
            Fill::Empty => (false, true),
            Fill::Unknown => (false, false),
            Fill::Level(m) => (m.rmem_alloc >= m.rcvbuf / XOFF_DIVISOR, m.rmem_alloc < m.rcvbuf / XON_DIVISOR),
        };
        let p = &self.counters.prio[0];
        if s.paused && xon {
            s.xon(now, p, || self.pause_frame(0, out));
        } else if (xoff && !s.paused) || (s.paused && !xon && s.next_refresh <= now) {
            s.xoff(now, self.refresh_ns, p, || self.pause_frame(self.quanta, out));
        }
        self.pausing.store(s.paused, Ordering::Relaxed);
        s.paused
    }

    /// A frame arrived while the worker drains the medium: a pause that is
    /// on is sent again when half of it has run.
    pub fn refresh(&self, now: u64, out: &mut dyn FnMut(&[u8])) {
        if !self.pausing.load(Ordering::Relaxed) {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.paused && s.next_refresh <= now && self.pause_tx.load(Ordering::Relaxed) {
            s.xoff(now, self.refresh_ns, &self.counters.prio[0], || self.pause_frame(self.quanta, out));
        }
    }

    /// Whether the port is asking its peer to pause.
    pub fn paused(&self) -> bool {
        self.pausing.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
#[path = "rx_buffer_tests.rs"]
mod tests;
