//! PCI configuration space as a register array with per-byte writable and
//! write-1-to-clear masks (the cloud-hypervisor model), plus the hardware
//! behaviours a mask cannot express: BAR sizing and Function Level Reset.

use super::layout::*;

/// Identity of the function (all configurable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PciIdentity {
    pub vendor_id: u16,
    pub device_id: u16,
    pub subsystem_vendor_id: u16,
    pub subsystem_id: u16,
    pub revision: u8,
    pub class_code: u32,
}

impl Default for PciIdentity {
    fn default() -> Self {
        PciIdentity {
            vendor_id: 0x15b3,
            device_id: 0x1017,
            subsystem_vendor_id: 0x15b3,
            subsystem_id: 0x0008,
            revision: 0,
            class_code: 0x020700,
        }
    }
}

/// What a config write asked the device to do beyond storing bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigEvent {
    None,
    /// Initiate Function Level Reset was written (PCIe DevCtl bit 15).
    FunctionLevelReset,
}

/// The 4 KiB PCIe configuration space.
pub struct ConfigSpace {
    regs: [u8; CONFIG_SPACE_SIZE],
    wmask: [u8; CONFIG_SPACE_SIZE],
    w1c: [u8; CONFIG_SPACE_SIZE],
    identity: PciIdentity,
    bars: BarLayout,
}

impl ConfigSpace {
    pub fn new(identity: PciIdentity, bars: BarLayout) -> ConfigSpace {
        let mut c = ConfigSpace {
            regs: [0; CONFIG_SPACE_SIZE],
            wmask: [0; CONFIG_SPACE_SIZE],
            w1c: [0; CONFIG_SPACE_SIZE],
            identity,
            bars,
        };
        c.reset();
        c
    }

    pub fn identity(&self) -> PciIdentity {
        self.identity
    }

    fn set8(&mut self, off: usize, v: u8, wmask: u8) {
        self.regs[off] = v;
        self.wmask[off] = wmask;
    }
    fn set16(&mut self, off: usize, v: u16, wmask: u16) {
        for (i, (b, m)) in v.to_le_bytes().into_iter().zip(wmask.to_le_bytes()).enumerate() {
            self.set8(off + i, b, m);
        }
    }
    fn set32(&mut self, off: usize, v: u32, wmask: u32) {
        for (i, (b, m)) in v.to_le_bytes().into_iter().zip(wmask.to_le_bytes()).enumerate() {
            self.set8(off + i, b, m);
        }
    }
    fn w1c16(&mut self, off: usize, m: u16) {
        self.w1c[off..off + 2].copy_from_slice(&m.to_le_bytes());
    }

    /// Power-on / FLR state.
    pub fn reset(&mut self) {
        self.regs = [0; CONFIG_SPACE_SIZE];
        self.wmask = [0; CONFIG_SPACE_SIZE];
        self.w1c = [0; CONFIG_SPACE_SIZE];
        let id = self.identity;
        self.set16(PCI_VENDOR_ID, id.vendor_id, 0);
        self.set16(PCI_DEVICE_ID, id.device_id, 0);
        // Memory space, bus master, parity, SERR, INTx disable.
        self.set16(PCI_COMMAND, 0, 0x0546);
        self.set16(PCI_STATUS, PCI_STATUS_CAP_LIST, 0);
        self.w1c16(PCI_STATUS, 0xf900);
        self.set8(PCI_REVISION_ID, id.revision, 0);
        self.set8(PCI_CLASS_PROG, (id.class_code & 0xff) as u8, 0);
        self.set16(PCI_CLASS_DEVICE, (id.class_code >> 8) as u16, 0);
        self.set8(PCI_CACHE_LINE_SIZE, 0, 0xff);
        self.set8(PCI_HEADER_TYPE, 0, 0);
        for (i, size) in self.bars.sizes().into_iter().enumerate() {
            let off = PCI_BASE_ADDRESS_0 + 8 * i;
            if size == 0 {
                continue;
            }
            // 64-bit prefetchable memory BAR: low dword flags 0b1100.
            let mask = !(size - 1);
            self.set32(off, PCI_BAR_MEM64_PREFETCH, (mask as u32) & 0xffff_fff0);
            self.set32(off + 4, 0, (mask >> 32) as u32);
        }
        self.set16(PCI_SUBSYSTEM_VENDOR_ID, id.subsystem_vendor_id, 0);
        self.set16(PCI_SUBSYSTEM_ID, id.subsystem_id, 0);
        self.set8(PCI_CAPABILITY_LIST, CAP_PM as u8, 0);
        self.set8(PCI_INTERRUPT_LINE, 0, 0xff);
        self.set8(PCI_INTERRUPT_PIN, 0, 0); // MSI-X only, like mlx5 uses it

        // Power management v3.
        self.set8(CAP_PM, PCI_CAP_ID_PM, 0);
        self.set8(CAP_PM + 1, CAP_PCIE as u8, 0);
        self.set16(CAP_PM + 2, 0x0003, 0); // PMC: version 3
        self.set16(CAP_PM + 4, 0x0008, 0x0003); // PMCSR: NoSoftReset, PowerState RW

        // PCI Express v2 endpoint.
        let e = CAP_PCIE;
        self.set8(e, PCI_CAP_ID_EXP, 0);
        self.set8(e + 1, CAP_MSIX as u8, 0);
        self.set16(e + 2, 0x0002, 0); // version 2, endpoint
                                      // DevCap: MPS 512, ext tag, role-based error, FLR.
        self.set32(e + 4, PCI_EXP_DEVCAP_FLR | (1 << 15) | (1 << 5) | 0x2, 0);
        // DevCtl: everything but Initiate FLR (bit 15) is plain RW.
        self.set16(e + 8, 0x2810, 0x7fff);
        self.set16(e + 10, 0, 0); // DevSta
        self.w1c16(e + 10, 0x000f);
        // LinkCap: 16 GT/s, x16.
        self.set32(e + 12, 0x4 | (16 << 4), 0);
        self.set16(e + 16, 0, 0x0fc3); // LinkCtl
        self.set16(e + 18, 0x4 | (16 << 4), 0); // LinkSta: 16 GT/s x16
                                                // DevCap2: completion timeout ranges A-D, timeout disable.
        self.set32(e + 0x24, 0x1f, 0);
        self.set16(e + 0x28, 0, 0x041f); // DevCtl2
        self.set32(e + 0x2c, 0x1e, 0); // LinkCap2: 2.5-16 GT/s
        self.set16(e + 0x30, 0x4, 0x0f7f); // LinkCtl2: target 16 GT/s

        // MSI-X: table and PBA in BAR2.
        let m = CAP_MSIX;
        self.set8(m, PCI_CAP_ID_MSIX, 0);
        self.set8(m + 1, CAP_VNDR as u8, 0);
        self.set16(m + 2, (MSIX_VECTORS - 1) as u16, 0xc000); // enable, function mask
        self.set32(m + 4, MSIX_TABLE_OFFSET as u32 | MSIX_BAR, 0);
        self.set32(m + 8, MSIX_PBA_OFFSET as u32 | MSIX_BAR, 0);

        // Vendor-specific capability: present, every register reads 0.
        self.set8(CAP_VNDR, PCI_CAP_ID_VNDR, 0);
        self.set8(CAP_VNDR + 1, 0, 0);
        self.set8(CAP_VNDR + 2, CAP_VNDR_LEN, 0);
    }

    /// Reads `data.len()` bytes at `off`; false if out of range.
    pub fn read(&self, off: usize, data: &mut [u8]) -> bool {
        match off.checked_add(data.len()) {
            Some(end) if end <= CONFIG_SPACE_SIZE => {
                data.copy_from_slice(&self.regs[off..end]);
                true
            }
            _ => false,
        }
    }

    /// Writes through the masks; returns the side effect, or None if out of range.
    pub fn write(&mut self, off: usize, data: &[u8]) -> Option<ConfigEvent> {
        let end = off.checked_add(data.len()).filter(|&e| e <= CONFIG_SPACE_SIZE)?;
        let mut event = ConfigEvent::None;
        for (i, &v) in data.iter().enumerate() {
            let o = off + i;
            if o == CAP_PCIE + 9 && v & 0x80 != 0 {
                event = ConfigEvent::FunctionLevelReset;
            }
            let w = self.wmask[o];
            let c = self.w1c[o];
            self.regs[o] = ((self.regs[o] & !w) | (v & w)) & !(v & c);
        }
        debug_assert!(end <= CONFIG_SPACE_SIZE);
        Some(event)
    }

    pub fn read_u32(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        self.read(off, &mut b);
        u32::from_le_bytes(b)
    }

    pub fn read_u16(&self, off: usize) -> u16 {
        let mut b = [0u8; 2];
        self.read(off, &mut b);
        u16::from_le_bytes(b)
    }

    /// The guest-assigned address of 64-bit BAR `bar` (0, 2 or 4).
    pub fn bar_address(&self, bar: usize) -> u64 {
        let off = PCI_BASE_ADDRESS_0 + 4 * bar;
        let lo = self.read_u32(off) as u64 & !0xf;
        let hi = self.read_u32(off + 4) as u64;
        (hi << 32) | lo
    }

    /// Whether the guest enabled memory decoding.
    pub fn memory_enabled(&self) -> bool {
        self.read_u16(PCI_COMMAND) & 0x2 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cs() -> ConfigSpace {
        ConfigSpace::new(PciIdentity::default(), BarLayout::default())
    }

    #[test]
    fn identity_and_class() {
        let c = cs();
        assert_eq!(c.read_u16(PCI_VENDOR_ID), 0x15b3);
        assert_eq!(c.read_u16(PCI_DEVICE_ID), 0x1017);
        assert_eq!(c.read_u32(PCI_REVISION_ID) >> 8, 0x020700);
        assert_eq!(c.read_u16(PCI_STATUS) & PCI_STATUS_CAP_LIST, PCI_STATUS_CAP_LIST);
    }

    #[test]
    fn bar_sizing_like_hardware() {
        let mut c = cs();
        for (bar, size) in [(0usize, 32u64 << 20), (2, 16 << 10), (4, 1 << 20)] {
            let off = PCI_BASE_ADDRESS_0 + 4 * bar;
            assert_eq!(c.read_u32(off) & 0xf, 0xc, "64-bit prefetchable memory");
            c.write(off, &[0xff; 4]).unwrap();
            c.write(off + 4, &[0xff; 4]).unwrap();
            let lo = c.read_u32(off) as u64;
            let hi = c.read_u32(off + 4) as u64;
            let got = !(((hi << 32) | lo) & !0xf) + 1;
            assert_eq!(got, size, "bar {bar}");
            c.write(off, &0xfe00_0000u32.to_le_bytes()).unwrap();
            c.write(off + 4, &0x1u32.to_le_bytes()).unwrap();
            let addr = c.bar_address(bar);
            assert_eq!(addr, 0x1_fe00_0000 & !(size - 1));
        }
        // ROM BAR absent: sizing reads 0.
        c.write(PCI_ROM_ADDRESS, &[0xff; 4]).unwrap();
        assert_eq!(c.read_u32(PCI_ROM_ADDRESS), 0);
    }

    #[test]
    fn read_only_and_w1c() {
        let mut c = cs();
        c.write(PCI_VENDOR_ID, &[0, 0, 0, 0]).unwrap();
        assert_eq!(c.read_u16(PCI_VENDOR_ID), 0x15b3);
        c.write(PCI_COMMAND, &[0x06, 0x00]).unwrap();
        assert!(c.memory_enabled());
        // Status error bits are W1C: set one by hand, then clear it.
        c.regs[PCI_STATUS + 1] |= 0x20;
        c.write(PCI_STATUS, &[0x00, 0x20]).unwrap();
        assert_eq!(c.read_u16(PCI_STATUS), PCI_STATUS_CAP_LIST);
        assert!(c.write(CONFIG_SPACE_SIZE - 1, &[0, 0]).is_none());
        assert!(c.write(usize::MAX, &[0]).is_none());
    }

    #[test]
    fn capability_chain() {
        let c = cs();
        let mut ids = Vec::new();
        let mut p = c.regs[PCI_CAPABILITY_LIST] as usize;
        while p != 0 {
            ids.push((p, c.regs[p]));
            p = c.regs[p + 1] as usize;
        }
        assert_eq!(
            ids,
            vec![(0x40, PCI_CAP_ID_PM), (0x60, PCI_CAP_ID_EXP), (0x9c, PCI_CAP_ID_MSIX), (0xc0, PCI_CAP_ID_VNDR)]
        );
        assert_eq!(c.read_u16(CAP_PM + 2) & 7, 3, "PM version 3");
        assert_eq!(c.read_u16(CAP_PCIE + 2) & 0xf, 2, "PCIe cap v2");
        assert_ne!(c.read_u32(CAP_PCIE + 4) & PCI_EXP_DEVCAP_FLR, 0);
        assert_eq!(c.read_u16(CAP_PCIE + 18), 0x104, "16 GT/s x16");
        assert_eq!((c.read_u16(CAP_MSIX + 2) & 0x7ff) + 1, 64);
        assert_eq!(c.read_u32(CAP_MSIX + 4), 2);
        assert_eq!(c.read_u32(CAP_MSIX + 8), 0x1000 | 2);
        // The VSC is inert: all its registers read 0 and ignore writes.
        assert!((CAP_VNDR + 4..CAP_VNDR + CAP_VNDR_LEN as usize).all(|o| c.regs[o] == 0 && c.wmask[o] == 0));
    }

    #[test]
    fn msix_enable_and_flr() {
        let mut c = cs();
        c.write(CAP_MSIX + 2, &[0x3f, 0x80]).unwrap();
        assert_eq!(c.read_u16(CAP_MSIX + 2), 0x803f, "enable is writable, size is not");
        assert_eq!(c.write(CAP_PCIE + 8, &[0x00, 0x80]), Some(ConfigEvent::FunctionLevelReset));
        assert_eq!(c.read_u16(CAP_PCIE + 8) & 0x8000, 0, "Initiate FLR reads 0");
    }
}
