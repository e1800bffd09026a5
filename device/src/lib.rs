//! vrnic: an emulated ConnectX (mlx5) RDMA NIC served to QEMU over vfio-user.
//!
//! Data flows one way: guest MMIO/doorbell → [`vfio`]/[`pci`] → [`mlx5`]
//! decodes → [`engine`] acts → [`wire`] sends → peer engine → mlx5 writes
//! CQEs/EQEs and raises MSI-X. See docs/architecture.md.

#![deny(unsafe_op_in_unsafe_fn)]
// Unsafe code lives in `sys` (every syscall and raw-memory edge) and `vfio`
// (the vfio-user socket's SCM_RIGHTS receive and the guest-memory mappings
// over vm-memory). Everywhere else it is refused.
#![deny(unsafe_code)]

pub mod config;
pub mod control;
pub mod device;
pub mod engine;
pub mod fabric;
pub mod host;
pub mod mlx5;
pub mod pci;
pub mod privs;
pub mod seccomp;
pub mod subnet;
#[allow(unsafe_code)]
pub mod sys;
#[allow(unsafe_code)]
pub mod vfio;
pub mod wire;

pub use config::{Config, DoorbellMode};
pub use device::Vrnic;
