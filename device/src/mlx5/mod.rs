//! The ConnectX (mlx5) personality: what the Linux `mlx5_core`/`mlx5_ib`
//! drivers and rdma-core's libmlx5 see in BAR0.
//!
//! So far: the initialization segment ([`init_seg`]) and the UAR doorbell
//! pages ([`uar`]). The command interface, capabilities and WQE/CQE codecs
//! arrive with the firmware and data-path work; until then a rung command
//! doorbell is counted and logged, and the driver's first command times out.

pub mod cmd;
pub mod init_seg;
pub mod mad;
pub mod uar;

pub use init_seg::{FwVersion, InitSegEvent, InitSegment};
pub use uar::{Doorbell, DoorbellSink, DoorbellStats, UarPoller};
