//! The ConnectX (mlx5) personality: what the Linux `mlx5_core`/`mlx5_ib`
//! drivers and rdma-core's libmlx5 see in BAR0.
//!
//! - [`init_seg`]: the initialization segment; [`uar`]: the doorbell pages.
//! - [`cmd`]: the command core (transport, requests, dispatch, syndromes).
//! - Command domains, each owning its state: [`hca`] (lifecycle, pages,
//!   capabilities, registers, UARs), [`events`] (EQ commands), [`rdma`]
//!   (objects shared by every link layer) and [`ib`] (the InfiniBand port:
//!   MAD_IFC, SMA/PMA, vport queries), [`eth`] and [`roce`] (the Ethernet
//!   port and its RoCE GID table). [`link`] picks the domains of a link
//!   layer; [`builder`] assembles the [`firmware::Firmware`] that holds them.
//! - The data path: [`datapath`] (send-doorbell router, RQ/SRQ pull, the one
//!   CQE writer and CQ arming, EQs, RX, UMR, WQE/CQE codecs).
//! - [`ifc`]: the `mlx5_ifc.h` layouts as generated field accessors (from
//!   `tools/mlx5/ifcgen.py`, with the [`fields`] runtime).

#![forbid(unsafe_code)]

pub use vrnic_mlx5_ifc as ifc;
pub use vrnic_mlx5_ifc::fields;

pub mod builder;
pub mod clock;
pub mod cmd;
pub mod core;
pub mod datapath;
pub mod devx;
pub mod eth;
pub mod events;
pub mod firmware;
pub mod hca;
pub mod ib;
pub mod init_seg;
pub mod link;
pub mod link_layer;
pub mod port;
pub mod queue_buf;
pub mod rdma;
pub mod roce;
pub mod uar;

pub use init_seg::{FwVersion, InitSegEvent, InitSegment};
pub use uar::{Doorbell, DoorbellSink, DoorbellStats, Kick};

#[cfg(test)]
mod test_support;
