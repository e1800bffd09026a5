//! vrnic: an emulated ConnectX (mlx5) RDMA NIC served to QEMU over vfio-user.
//! This crate is the composition root: it assembles one PCI function from
//! the layer crates ([`device`]), reads the configuration ([`config`]) and
//! answers the control socket ([`control`]).
//!
//! Data flows one way: guest MMIO/doorbell → `vrnic_vfio`/`vrnic_pci` →
//! `vrnic_mlx5` decodes → `vrnic_engine` acts → `vrnic_fabric` sends over a
//! link → peer engine → mlx5 writes CQEs/EQEs and raises MSI-X. See
//! docs/architecture.md.

#![forbid(unsafe_code)]

pub mod config;
pub mod control;
pub mod device;
pub mod uar_poller;

pub use config::{Config, DoorbellMode};
pub use device::Vrnic;
