//! What the Ethernet links and the device share: the frame traits, the
//! frame size limits, and the medium a link wraps.

use std::os::fd::RawFd;

use super::classify::PrioMap;
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
    /// The trust state and DSCP → priority map (QPTS, QPDPM) the link
    /// classifies frames by (`classify.rs`). A sink without one ignores it.
    fn set_prio_map(&self, _map: PrioMap) {}
    /// The 802.1p priority of a frame with VLAN PCP `pcp` (`None`: untagged)
    /// and DSCP `dscp` (`None`: not IP), as the link classifies it: what
    /// RoCE's per-priority congestion-control enables go by. Without a
    /// classifier: the PCP (0 untagged).
    fn priority(&self, pcp: Option<u8>, _dscp: Option<u8>) -> u8 {
        pcp.unwrap_or(0) & 7
    }
    /// The counters of 802.1p priority `prio` (PPCNT's per-priority group);
    /// none for a sink that keeps none.
    fn prio_counters(&self, _prio: usize) -> Option<PrioSnapshot> {
        None
    }
    /// Whether a frame of 802.1p priority `prio` would leave now rather than
    /// wait in the pause gate (`pfc.rs`): a RoCE sender that hears no waits
    /// in line until [`FrameHandler::tx_ready`]. A sink without flow control
    /// always takes it.
    fn ready(&self, _prio: u8) -> bool {
        true
    }
}

/// What became of a frame offered to a [`FrameHandler`] on a lossless
/// priority (`pfc_tx.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Delivered, or dropped for a reason of its own (counted there).
    Taken,
    /// The receive queue it would land in has no buffer: not taken, not
    /// counted; the link holds it and offers it again.
    NoBuffer,
}

/// Who takes received frames (the mlx5 Ethernet RX path).
pub trait FrameHandler: Send + Sync {
    fn receive_frame(&self, frame: &[u8]);
    /// A frame of a priority whose PFC transmit is on: like
    /// [`receive_frame`](Self::receive_frame), except that a frame whose
    /// receive queue has no buffer is left to the link
    /// ([`Offer::NoBuffer`]) instead of dropped.
    fn offer_frame(&self, frame: &[u8]) -> Offer {
        self.receive_frame(frame);
        Offer::Taken
    }
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
    /// A pause the link's senders waited for ([`FrameSink::ready`] said no)
    /// ended: RoCE requesters held for it resume.
    fn tx_ready(&self) {}
}

/// What a link's worker needs of a medium beyond [`Link`]: the fd to wait
/// on (none: nothing ever arrives) and whether it has carrier.
pub(crate) trait Medium: crate::Link + Send + Sync {
    fn fd(&self) -> Option<RawFd>;
    fn carrier(&self) -> bool;
    /// The receive buffer's memory, where the medium has one to read
    /// (`rx_buffer.rs`).
    fn backlog(&self) -> Option<vrnic_sys::net::SocketMemory> {
        None
    }
}
