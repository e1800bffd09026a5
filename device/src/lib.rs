//! vrnic: an emulated ConnectX (mlx5) RDMA NIC served to QEMU over vfio-user.
//!
//! Data flows one way: guest MMIO/doorbell → [`vfio`]/[`pci`] → [`mlx5`]
//! decodes → [`engine`] acts → [`wire`] sends → peer engine → mlx5 writes
//! CQEs/EQEs and raises MSI-X. See docs/architecture.md.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod config;
pub mod control;
pub mod device;
pub mod engine;
pub mod host;
pub mod mlx5;
pub mod pci;
pub mod privs;
pub mod seccomp;
pub mod util;
pub mod vfio;
pub mod wire;

pub use config::{Config, DoorbellMode};
pub use device::Vrnic;
