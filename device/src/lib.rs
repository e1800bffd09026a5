//! vrnic: an emulated ConnectX (mlx5) RDMA NIC served to QEMU over vfio-user.
//!
//! Data flows one way: guest MMIO/doorbell → [`vfio`]/[`pci`] → [`mlx5`]
//! decodes → [`engine`] acts → [`wire`] sends → peer engine → mlx5 writes
//! CQEs/EQEs and raises MSI-X. See docs/architecture.md.

#![deny(unsafe_op_in_unsafe_fn)]
// Unsafe code lives in `sys` (every syscall and raw-memory edge); `vfio`
// (guest memory and the socket's SCM_RIGHTS, moving to the rust-vmm crates)
// and `util` (the eventfd helpers, moving to vmm-sys-util) still have their
// own. Everywhere else it is refused.
#![deny(unsafe_code)]

pub mod config;
pub mod control;
pub mod device;
pub mod engine;
pub mod fabric;
pub mod mlx5;
pub mod pci;
pub mod privs;
pub mod qos;
pub mod seccomp;
#[allow(unsafe_code)]
pub mod sys;
#[allow(unsafe_code)]
pub mod util;
#[allow(unsafe_code)]
pub mod vfio;
pub mod wire;

pub use config::{Config, DoorbellMode};
pub use device::Vrnic;
