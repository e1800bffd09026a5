//! The device's regions as the vfio-user server sees them: BAR0 (init
//! segment and UAR pages), BAR2 (MSI-X), BAR4 (device memory) and the
//! configuration space, and reset.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;

use tracing::{info, warn};

use super::{lock, Vrnic};
use crate::config::DoorbellMode;
use vrnic_mlx5::uar::{Doorbell, UAR_PAGE};
use vrnic_mlx5::InitSegEvent;
use vrnic_pci::*;
use vrnic_vfio::uapi::VFIO_PCI_CONFIG_REGION_INDEX;
use vrnic_vfio::{AccessError, MmapDesc, RegionDesc, SparseArea, VfioDevice};

impl Vrnic {
    fn bar0_read(&mut self, off: u64, data: &mut [u8]) {
        let (lo, hi) = split_at(off, data.len(), INIT_SEG_REGION);
        if lo > 0 {
            self.init.read(off, &mut data[..lo]);
        }
        if hi > 0 {
            self.mem.read((off + lo as u64) as usize, &mut data[lo..]);
        }
    }

    fn bar0_write(&mut self, off: u64, data: &[u8]) {
        let (lo, _) = split_at(off, data.len(), INIT_SEG_REGION);
        if lo > 0 {
            for ev in self.init.write(off, &data[..lo]) {
                match ev {
                    InitSegEvent::CommandDoorbell(mask) => {
                        self.stats.cmd_doorbells.fetch_add(1, Ordering::Relaxed);
                        if self.init.nic_interface() != vrnic_mlx5::init_seg::NIC_IFC_FULL_DRIVER {
                            warn!(
                                mask = format_args!("{mask:#x}"),
                                "command doorbell while the command interface is disabled: ignored"
                            );
                            continue;
                        }
                        let cmdq = self.init.cmdq_addr();
                        lock(&self.fw).doorbell(cmdq, mask);
                    }
                    InitSegEvent::NicInterface(n) => {
                        info!(nic_interface = n, "nic_interface changed");
                        if n == vrnic_mlx5::init_seg::NIC_IFC_DISABLED {
                            self.nic_interface_disabled();
                        }
                    }
                }
            }
        }
        let rest = &data[lo..];
        if rest.is_empty() {
            return;
        }
        let at = off + lo as u64;
        self.mem.write(at as usize, rest);
        if at >= self.bars.memic_offset() {
            // On-device memory (MEMIC window), not a doorbell page.
            return;
        }
        let uar = at / UAR_PAGE;
        if let Some(db) = Doorbell::decode(uar, at % UAR_PAGE, rest) {
            self.sink.doorbell(db);
        } else {
            self.doorbells.ignored.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn bar2_read(&self, off: u64, data: &mut [u8]) {
        for (i, b) in data.iter_mut().enumerate() {
            let a = off + i as u64;
            *b = if a < self.msix_table.len() as u64 {
                self.msix_table[a as usize]
            } else if a >= MSIX_PBA_OFFSET && a < MSIX_PBA_OFFSET + (MSIX_VECTORS as u64).div_ceil(8) {
                let base = ((a - MSIX_PBA_OFFSET) * 8) as u16;
                (0..8).fold(0u8, |acc, bit| acc | ((self.irqs.pending(base + bit) as u8) << bit))
            } else {
                0
            };
        }
    }

    fn bar2_write(&mut self, off: u64, data: &[u8]) {
        for (i, &b) in data.iter().enumerate() {
            let a = (off + i as u64) as usize;
            if a < self.msix_table.len() {
                self.msix_table[a] = b;
            }
        }
    }
}

/// Splits an access at `off` of `len` bytes into the parts below and above `boundary`.
fn split_at(off: u64, len: usize, boundary: u64) -> (usize, usize) {
    if off >= boundary {
        (0, len)
    } else {
        let lo = ((boundary - off) as usize).min(len);
        (lo, len - lo)
    }
}

impl VfioDevice for Vrnic {
    fn region(&self, index: u32) -> RegionDesc {
        let poll = self.mode == DoorbellMode::Poll;
        let rw = |size| RegionDesc { size, readable: true, writable: true, mmap: None };
        match index {
            0 => RegionDesc {
                mmap: poll.then(|| MmapDesc {
                    file_offset: 0,
                    areas: vec![SparseArea { offset: MAPPABLE_START, size: self.bars.bar0 - MAPPABLE_START }],
                }),
                ..rw(self.bars.bar0)
            },
            2 => rw(self.bars.bar2),
            4 => RegionDesc {
                mmap: poll.then(|| MmapDesc {
                    file_offset: self.bars.memic_offset(),
                    areas: vec![SparseArea { offset: 0, size: self.bars.bar4 }],
                }),
                ..rw(self.bars.bar4)
            },
            VFIO_PCI_CONFIG_REGION_INDEX => rw(CONFIG_SPACE_SIZE as u64),
            _ => RegionDesc::default(),
        }
    }

    fn region_fd(&self) -> Option<BorrowedFd<'_>> {
        (self.mode == DoorbellMode::Poll).then(|| self.mem_fd.as_fd())
    }

    fn region_read(&mut self, index: u32, offset: u64, data: &mut [u8]) -> Result<(), AccessError> {
        let size = self.region(index).size;
        if offset.checked_add(data.len() as u64).is_none_or(|e| e > size) {
            return Err(AccessError::OutOfRange { region: index, offset, count: data.len() });
        }
        match index {
            0 => {
                self.stats.bar_reads.fetch_add(1, Ordering::Relaxed);
                self.bar0_read(offset, data)
            }
            2 => self.bar2_read(offset, data),
            4 => {
                self.stats.bar_reads.fetch_add(1, Ordering::Relaxed);
                self.mem.read((self.bars.memic_offset() + offset) as usize, data);
            }
            VFIO_PCI_CONFIG_REGION_INDEX => {
                self.stats.config_reads.fetch_add(1, Ordering::Relaxed);
                self.cfg.read(offset as usize, data);
            }
            _ => return Err(AccessError::NoRegion(index)),
        }
        Ok(())
    }

    fn region_write(&mut self, index: u32, offset: u64, data: &[u8]) -> Result<(), AccessError> {
        let size = self.region(index).size;
        if offset.checked_add(data.len() as u64).is_none_or(|e| e > size) {
            return Err(AccessError::OutOfRange { region: index, offset, count: data.len() });
        }
        match index {
            0 => {
                self.stats.bar_writes.fetch_add(1, Ordering::Relaxed);
                self.bar0_write(offset, data)
            }
            2 => self.bar2_write(offset, data),
            4 => {
                self.stats.bar_writes.fetch_add(1, Ordering::Relaxed);
                self.mem.write((self.bars.memic_offset() + offset) as usize, data);
            }
            VFIO_PCI_CONFIG_REGION_INDEX => {
                self.stats.config_writes.fetch_add(1, Ordering::Relaxed);
                if self.cfg.write(offset as usize, data) == Some(ConfigEvent::FunctionLevelReset) {
                    info!("function level reset");
                    self.stats.flrs.fetch_add(1, Ordering::Relaxed);
                    self.irqs.reset();
                    self.reset_state();
                }
            }
            _ => return Err(AccessError::NoRegion(index)),
        }
        Ok(())
    }

    fn reset(&mut self) {
        self.stats.resets.fetch_add(1, Ordering::Relaxed);
        self.reset_state();
    }

    fn disconnect(&mut self) {
        self.reset();
        debug_assert!(self.dma.is_empty());
    }
}
