//! Register offsets, capability layout and the BAR map of the PCIe
//! function (see the table in `pci/mod.rs`).

pub const CONFIG_SPACE_SIZE: usize = 4096;

pub const PCI_VENDOR_ID: usize = 0x00;
pub const PCI_DEVICE_ID: usize = 0x02;
pub const PCI_COMMAND: usize = 0x04;
pub const PCI_STATUS: usize = 0x06;
pub const PCI_REVISION_ID: usize = 0x08;
pub const PCI_CLASS_PROG: usize = 0x09;
pub const PCI_CLASS_DEVICE: usize = 0x0a;
pub const PCI_CACHE_LINE_SIZE: usize = 0x0c;
pub const PCI_HEADER_TYPE: usize = 0x0e;
pub const PCI_BASE_ADDRESS_0: usize = 0x10;
pub const PCI_SUBSYSTEM_VENDOR_ID: usize = 0x2c;
pub const PCI_SUBSYSTEM_ID: usize = 0x2e;
pub const PCI_ROM_ADDRESS: usize = 0x30;
pub const PCI_CAPABILITY_LIST: usize = 0x34;
pub const PCI_INTERRUPT_LINE: usize = 0x3c;
pub const PCI_INTERRUPT_PIN: usize = 0x3d;

pub const PCI_STATUS_CAP_LIST: u16 = 0x10;
pub const PCI_BAR_MEM64_PREFETCH: u32 = 0x4 | 0x8;

pub const PCI_CAP_ID_PM: u8 = 0x01;
pub const PCI_CAP_ID_VNDR: u8 = 0x09;
pub const PCI_CAP_ID_EXP: u8 = 0x10;
pub const PCI_CAP_ID_MSIX: u8 = 0x11;
pub const PCI_EXP_DEVCAP_FLR: u32 = 1 << 28;

/// Capability offsets, as on a real ConnectX-5.
pub const CAP_PM: usize = 0x40;
pub const CAP_PCIE: usize = 0x60;
pub const CAP_MSIX: usize = 0x9c;
pub const CAP_VNDR: usize = 0xc0;
pub const CAP_VNDR_LEN: u8 = 0x18;

/// MSI-X geometry.
pub const MSIX_VECTORS: u32 = 64;
pub const MSIX_BAR: u32 = 2;
pub const MSIX_TABLE_OFFSET: u64 = 0;
pub const MSIX_PBA_OFFSET: u64 = 0x1000;

/// Bytes of BAR0 that hold the initialization segment and stay trapped in
/// every doorbell mode (init segment 0x0-0x200f, clock page, spare).
pub const INIT_SEG_REGION: u64 = 0x4000;
/// First UAR page index (UAR index i lives at BAR0 + i * 4 KiB).
pub const FIRST_UAR_PAGE: u64 = INIT_SEG_REGION / UAR_PAGE_SIZE;
/// UAR pages that stay trapped in poll mode: the two lowest, which the
/// kernel's own ALLOC_UARs get at load (mlx5_core's EQ/command UAR and
/// mlx5_ib's fast-path bfreg page; UARs are numbered lowest-free). Several EQs
/// share one doorbell slot on the core's page, so each of their stores must
/// arrive on its own, as a trapped write does. User contexts' UARs come after
/// and are mapped: in poll mode a trapped write is a full round trip.
pub const TRAPPED_UARS: u64 = 2;
/// Start of the mappable part of BAR0 in poll mode.
pub const MAPPABLE_START: u64 = INIT_SEG_REGION + TRAPPED_UARS * UAR_PAGE_SIZE;
pub const UAR_PAGE_SIZE: u64 = 4096;

/// Sizes of the three 64-bit BARs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarLayout {
    pub bar0: u64,
    pub bar2: u64,
    pub bar4: u64,
}

impl Default for BarLayout {
    fn default() -> Self {
        BarLayout { bar0: 32 << 20, bar2: 16 << 10, bar4: 1 << 20 }
    }
}

impl BarLayout {
    /// Sizes of BAR pairs 0/1, 2/3, 4/5.
    pub fn sizes(&self) -> [u64; 3] {
        [self.bar0, self.bar2, self.bar4]
    }

    /// Size of vfio region `index` (0-5; odd ones are the upper halves).
    pub fn region_size(&self, index: u32) -> u64 {
        match index {
            0 => self.bar0,
            2 => self.bar2,
            4 => self.bar4,
            _ => 0,
        }
    }

    /// BAR0 offset of the on-device memory window (MEMIC): the last
    /// `bar4` bytes of BAR0, the same memory BAR4 exposes.
    pub fn memic_offset(&self) -> u64 {
        self.bar0 - self.bar4
    }

    /// Every BAR size must be a power of two of at least 4 KiB, BAR0 must
    /// hold the init segment and at least one UAR page, BAR2 the MSI-X table and PBA.
    pub fn validate(&self) -> Result<(), String> {
        for (n, s) in [("bar0", self.bar0), ("bar2", self.bar2), ("bar4", self.bar4)] {
            if !s.is_power_of_two() || !(4096..=(1 << 40)).contains(&s) {
                return Err(format!("{n} size {s:#x} must be a power of two between 4 KiB and 1 TiB"));
            }
        }
        if self.bar0 < MAPPABLE_START + UAR_PAGE_SIZE {
            return Err("bar0 must hold the init segment and a UAR page".into());
        }
        if self.bar4 > self.bar0 / 2 {
            return Err("device memory (bar4) may be at most half of bar0: it is also BAR0's MEMIC window".into());
        }
        if self.bar2 < MSIX_PBA_OFFSET + 4096 {
            return Err("bar2 must hold the MSI-X table and PBA".into());
        }
        Ok(())
    }
}
