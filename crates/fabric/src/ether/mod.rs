//! The Ethernet port's links (owner: eth-link): whole Ethernet frames (no
//! FCS) between the device and a medium. The mlx5 Ethernet data path sends
//! through a [`FrameSink`] and a link's worker hands received frames to a
//! [`FrameHandler`].
//!
//! Every medium is a [`Link`](crate::Link) with a single route (the
//! segment it is on) plus what a worker waits on ([`Medium`]): `udp.rs`
//! (QEMU's dgram framing, point-to-point or a multicast hub), `tap.rs` (a
//! TAP interface), or none. [`EtherLink`] (`link.rs`) puts the fabric's
//! middleware around it the same way a RoCE port does — on the way out
//! faults, then capture and counters; on the way in size checks, capture,
//! faults — and runs the receiving thread. Configuration: `config.rs`
//! (`[eth]`, `--eth`); counters: `counters.rs`; a frame's priority:
//! `classify.rs` (PCP or DSCP trust); PAUSE/PFC: `pfc.rs` (the gate every
//! transmitted frame passes, which received MAC control frames drive) and
//! `pfc_tx.rs` (received frames of a lossless priority wait there for a
//! receive buffer while the port sends PFC frames), `rx_buffer.rs` (802.3x PAUSE while
//! the medium's receive buffer fills); line rate: `shaper.rs`
//! (a token bucket after the gate, `[eth] link_rate_mbps`).

mod classify;
mod config;
mod counters;
mod frame;
mod link;
mod pfc;
mod pfc_tx;
mod rx_buffer;
mod shaper;
mod tap;
mod udp;

#[cfg(test)]
#[path = "ether_tests.rs"]
mod tests;

pub use classify::{Classifier, PrioMap, NUM_DSCP};
pub use config::{Backend, EtherConfig};
pub use counters::{EtherCounters, PrioCounters, PrioSnapshot};
pub use frame::{FrameHandler, FrameSink, Offer, HEADER_LEN, MAX_FRAME, MIN_FRAME};
pub use link::EtherLink;
pub use pfc::{PauseGate, PausePolicy, DEFAULT_POLICY, PORT_SPEED_BPS, QUEUE_FRAMES, XON_PEER_HOLD_NS};
pub use pfc_tx::{RxHold, DEFAULT_TX_QUANTA, HOLD_FRAMES, RETRY_NS};
pub use rx_buffer::{Fill, RxBuffer, XOFF_DIVISOR, XON_DIVISOR};
pub use shaper::Shaper;
