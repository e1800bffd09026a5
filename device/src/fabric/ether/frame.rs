//! What the Ethernet links and the device share: the frame traits, the
//! frame size limits, and the medium a link wraps.

use std::os::fd::RawFd;

use super::counters::PrioSnapshot;
use super::pfc::PausePolicy;

/// Bytes of an Ethernet header (destination, source, EtherType).
pub const HEADER_LEN: usize = 14;
/// The shortest frame on the wire without its FCS; shorter ones are
/// accepted and counted (`rx_undersize`).
pub const MIN_FRAME: usize = 60;
/// The longest frame accepted or sent: the port's largest MTU (9000) with
/// its header and two VLAN tags.
pub const MAX_FRAME: usize = 9000 + HEADER_LEN + 8;

/// Where the device's transmitted frames go. Never blocks: a frame the link
/// cannot send is counted and lost.
pub trait FrameSink: Send + Sync {
    fn send_frame(&self, frame: &[u8]);
    /// Whether the medium is there (the port's physical link): `udp` and
    /// `tap` links are always up, a port without a medium is down. The
    /// vport/PAOS code reports the port's operational state from it (with
    /// its own administrative state on top).
    fn carrier(&self) -> bool {
        true
    }
    /// The port's pause receive policy (PFCC `pfcrx`/`pprx`, `pfc.rs`). A
    /// sink without flow control ignores it.
    fn set_pause_policy(&self, _policy: PausePolicy) {}
    /// The counters of 802.1p priority `prio` (PPCNT's per-priority group);
    /// none for a sink that keeps none.
    fn prio_counters(&self, _prio: usize) -> Option<PrioSnapshot> {
        None
    }
}

/// Who takes received frames (the mlx5 Ethernet RX path).
pub trait FrameHandler: Send + Sync {
    fn receive_frame(&self, frame: &[u8]);
    /// End of a burst of receives (coalesced ACKs of the RoCE engine go
    /// out now).
    fn flush(&self) {}
    /// Runs on every pass of the link's worker: work queued for it (RoCE
    /// loopback) and timers due at `now_ns`; returns the next deadline. Both
    /// are on the link's clock (`EtherLink::clock`); the worker waits at most
    /// until the deadline, and `EtherLink::waker` ends a wait early (work
    /// queued from another thread, a timer armed sooner).
    fn poll(&self, _now_ns: u64) -> Option<u64> {
        None
    }
}

/// What a link's worker needs of a medium beyond [`Link`]: the fd to wait
/// on (none: nothing ever arrives) and whether it has carrier.
pub(crate) trait Medium: crate::fabric::Link + Send + Sync {
    fn fd(&self) -> Option<RawFd>;
    fn carrier(&self) -> bool;
}
