//! The ConnectX (mlx5) personality: what the Linux `mlx5_core`/`mlx5_ib`
//! drivers and rdma-core's libmlx5 see in BAR0.
//!
//! So far: the initialization segment ([`init_seg`]), the UAR doorbell
//! pages ([`uar`]), the `mlx5_ifc.h` layouts as generated field accessors
//! ([`ifc`], from `tools/mlx5/ifcgen.py`, with the [`fields`] runtime) and the
//! capability pages ([`caps`]). The command interface and WQE/CQE codecs
//! arrive with the firmware and data-path work; until then a rung command
//! doorbell is counted and logged, and the driver's first command times out.

pub mod caps;
pub mod clock;
pub mod cmd;
pub mod datapath;
pub mod firmware;
pub mod hca;
pub mod objects;
pub mod qp;
pub mod fields;
pub mod ifc;
pub mod init_seg;
pub mod mad;
pub mod uar;

pub use init_seg::{FwVersion, InitSegEvent, InitSegment};
pub use uar::{Doorbell, DoorbellSink, DoorbellStats, PollerStats, UarPoller};

#[cfg(test)]
mod fw_tests;
#[cfg(test)]
mod opcode_tests;
