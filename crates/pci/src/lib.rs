//! The PCIe function: configuration space, capabilities and the BAR map.
//!
//! BAR map (see docs/bar-map.md):
//!
//! | BAR   | size (default) | content |
//! |-------|----------------|---------|
//! | 0/1   | 32 MiB         | init segment (pages 0-3, trapped), UAR pages from page 4 |
//! | 2/3   | 16 KiB         | MSI-X table at 0x0, PBA at 0x1000 (QEMU emulates both) |
//! | 4/5   | 1 MiB          | on-device memory (also BAR0's last 1 MiB: the MEMIC window) |

#![forbid(unsafe_code)]

pub mod config_space;
pub mod layout;

pub use config_space::{ConfigEvent, ConfigSpace, PciIdentity};
pub use layout::*;
