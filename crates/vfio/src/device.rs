//! What the vfio-user server serves: the device's regions and reset
//! ([`VfioDevice`]) and how a region is described and accessed.

use std::os::fd::BorrowedFd;

use thiserror::Error;

use super::protocol::SparseArea;

/// How a region can be mapped by the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmapDesc {
    /// Offset of the region's first byte in the device's region fd.
    pub file_offset: u64,
    /// Region-relative areas that are mappable; the rest traps.
    pub areas: Vec<SparseArea>,
}

/// One vfio region as GET_REGION_INFO reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegionDesc {
    pub size: u64,
    pub readable: bool,
    pub writable: bool,
    pub mmap: Option<MmapDesc>,
}

/// A failed region access.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum AccessError {
    #[error("region {0} does not exist")]
    NoRegion(u32),
    #[error("access {offset:#x}+{count} outside region {region}")]
    OutOfRange { region: u32, offset: u64, count: usize },
    #[error("access width {0} not supported here")]
    Width(usize),
}

impl AccessError {
    pub fn errno(&self) -> i32 {
        libc::EINVAL
    }
}

/// The device behind the socket: regions and reset. Interrupts and DMA are
/// shared objects the device holds itself (see [`Server::new`]).
pub trait VfioDevice: Send {
    /// Regions 0..9 (BAR0-5, ROM, config, VGA); size 0 means absent.
    fn region(&self, index: u32) -> RegionDesc;
    /// The fd whose ranges mappable regions are served from.
    fn region_fd(&self) -> Option<BorrowedFd<'_>>;
    fn region_read(&mut self, index: u32, offset: u64, data: &mut [u8]) -> Result<(), AccessError>;
    fn region_write(&mut self, index: u32, offset: u64, data: &[u8]) -> Result<(), AccessError>;
    /// DEVICE_RESET (and FLR): drop all device state.
    fn reset(&mut self);
    /// The client went away: drop all guest-related state.
    fn disconnect(&mut self) {
        self.reset();
    }
}
