//! The vfio-user transport: protocol codecs, the socket event loop, DMA
//! mappings of guest memory and interrupt eventfds.
//!
//! The server is generic over [`VfioDevice`]: it knows regions, offsets and
//! bytes, never what a register means.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod device;
pub mod dma;
pub mod irq;
pub mod protocol;
pub mod server;
pub mod socket;
pub mod uapi;

pub use device::{AccessError, MmapDesc, RegionDesc, VfioDevice};
pub use dma::{DmaError, DmaSpace};
pub use irq::{Interrupts, Raised};
pub use protocol::SparseArea;
pub use server::{Server, ServerOptions, ServerStats};
