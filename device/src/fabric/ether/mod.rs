//! The Ethernet port's links (owner: eth-link): whole Ethernet frames (no
//! FCS) between the device and a medium. The mlx5 Ethernet data path sends
//! through a [`FrameSink`] and a link's worker hands received frames to a
//! [`FrameHandler`].
//!
//! Every medium is a [`Link`](crate::fabric::Link) with a single route (the
//! segment it is on) plus what a worker waits on ([`Medium`]): `udp.rs`
//! (QEMU's dgram framing, point-to-point or a multicast hub), `tap.rs` (a
//! TAP interface), or none. [`EtherLink`] (`link.rs`) puts the fabric's
//! middleware around it the same way a RoCE port does — on the way out
//! faults, then capture and counters; on the way in size checks, capture,
//! faults — and runs the receiving thread. Configuration: `config.rs`
//! (`[eth]`, `--eth`); counters: `counters.rs`.

mod config;
mod counters;
mod link;
mod tap;
mod udp;

#[cfg(test)]
mod tests;

pub use config::{Backend, EtherConfig};
pub use counters::EtherCounters;
pub use link::EtherLink;

use std::os::fd::RawFd;

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
}

/// Who takes received frames (the mlx5 Ethernet RX path).
pub trait FrameHandler: Send + Sync {
    fn receive_frame(&self, frame: &[u8]);
}

/// What a link's worker needs of a medium beyond [`Link`]: the fd to wait
/// on (none: nothing ever arrives) and whether it has carrier.
pub(crate) trait Medium: crate::fabric::Link + Send + Sync {
    fn fd(&self) -> Option<RawFd>;
    fn carrier(&self) -> bool;
}
