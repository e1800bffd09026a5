//! The initialization segment at BAR0 offset 0 (`struct mlx5_init_seg`,
//! include/linux/mlx5/device.h). All registers are big-endian dwords.

/// `fw_rev`.
pub const FW_REV: u64 = 0x000;
/// `cmdif_rev_fw_sub`.
pub const CMDIF_REV_FW_SUB: u64 = 0x004;
/// `cmdq_addr_h`.
pub const CMDQ_ADDR_H: u64 = 0x010;
/// `cmdq_addr_l_sz`.
pub const CMDQ_ADDR_L_SZ: u64 = 0x014;
/// `cmd_dbell`.
pub const CMD_DBELL: u64 = 0x018;
/// `initializing`.
pub const INITIALIZING: u64 = 0x1fc;
/// `health` buffer (`struct health_buffer`, 0x40 bytes).
pub const HEALTH: u64 = 0x200;
/// `health.fw_ver`.
pub const HEALTH_FW_VER: u64 = 0x230;
/// `health.hw_id`.
pub const HEALTH_HW_ID: u64 = 0x234;
/// `cmd_exec_to` / `cmd_q_init_to`.
pub const CMD_EXEC_TO: u64 = 0xff8;
pub const CMD_Q_INIT_TO: u64 = 0xffc;
/// `internal_timer_h` / `internal_timer_l`.
pub const INTERNAL_TIMER_H: u64 = 0x1000;
pub const INTERNAL_TIMER_L: u64 = 0x1004;
/// `health_counter`.
pub const HEALTH_COUNTER: u64 = 0x1010;

/// `MLX5_CMD_IF_REV` the Linux driver requires.
pub const CMD_IF_REV: u32 = 5;

/// `nic_interface` values (`MLX5_INITIAL_SEG_NIC_INTERFACE_*`).
pub const NIC_IFC_FULL_DRIVER: u8 = 0;
pub const NIC_IFC_DISABLED: u8 = 1;
pub const NIC_IFC_SW_RESET: u8 = 7;

/// Command queue geometry the device reports: 32 entries of 64 bytes.
pub const LOG_CMDQ_SIZE: u32 = 5;
pub const LOG_CMDQ_STRIDE: u32 = 6;

/// Firmware version `major.minor.subminor`, e.g. 16.35.2000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FwVersion {
    pub major: u16,
    pub minor: u16,
    pub subminor: u16,
}

impl Default for FwVersion {
    fn default() -> Self {
        FwVersion { major: 16, minor: 35, subminor: 2000 }
    }
}

impl std::str::FromStr for FwVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let p: Vec<&str> = s.split('.').collect();
        if p.len() != 3 {
            return Err(format!("firmware version {s:?} is not major.minor.subminor"));
        }
        let n = |x: &str| x.parse::<u16>().map_err(|_| format!("bad number {x:?} in firmware version"));
        Ok(FwVersion { major: n(p[0])?, minor: n(p[1])?, subminor: n(p[2])? })
    }
}

impl std::fmt::Display for FwVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.subminor)
    }
}

/// What a register write asks of the rest of the firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitSegEvent {
    /// `cmd_dbell` rung with this slot bitmask.
    CommandDoorbell(u32),
    /// The driver changed `nic_interface` (enable, fast teardown, SW reset).
    NicInterface(u8),
}

/// Register state of the initialization segment.
pub struct InitSegment {
    fw: FwVersion,
    hw_id: u32,
    cmdq_addr_h: u32,
    cmdq_addr_l: u32,
    nic_interface: u8,
    health_counter: u32,
}

impl InitSegment {
    pub fn new(fw: FwVersion, hw_id: u32) -> InitSegment {
        InitSegment { fw, hw_id, cmdq_addr_h: 0, cmdq_addr_l: 0, nic_interface: NIC_IFC_DISABLED, health_counter: 0 }
    }

    /// Power-on / FLR state. The health counter and timer keep running.
    pub fn reset(&mut self) {
        self.cmdq_addr_h = 0;
        self.cmdq_addr_l = 0;
        self.nic_interface = NIC_IFC_DISABLED;
    }

    pub fn fw_version(&self) -> FwVersion {
        self.fw
    }

    /// The command queue's guest address as last programmed.
    pub fn cmdq_addr(&self) -> u64 {
        ((self.cmdq_addr_h as u64) << 32) | self.cmdq_addr_l as u64
    }

    pub fn nic_interface(&self) -> u8 {
        self.nic_interface
    }

    fn fw_rev(&self) -> u32 {
        ((self.fw.minor as u32) << 16) | self.fw.major as u32
    }

    fn timer(&self) -> u64 {
        // Free-running at `device_frequency_khz`; the driver reads h, l, h
        // and retries when h moved.
        super::clock::now()
    }

    /// Value of the dword at `off` (4-byte aligned). Reading `health_counter`
    /// advances it, so two polls never see the same value.
    pub fn read_dword(&mut self, off: u64) -> u32 {
        match off {
            FW_REV => self.fw_rev(),
            CMDIF_REV_FW_SUB => (CMD_IF_REV << 16) | self.fw.subminor as u32,
            CMDQ_ADDR_H => self.cmdq_addr_h,
            CMDQ_ADDR_L_SZ => {
                self.cmdq_addr_l | ((self.nic_interface as u32) << 8) | (LOG_CMDQ_SIZE << 4) | LOG_CMDQ_STRIDE
            }
            INITIALIZING => 0,
            HEALTH_FW_VER => self.fw_rev(),
            HEALTH_HW_ID => self.hw_id,
            CMD_EXEC_TO | CMD_Q_INIT_TO => 0,
            INTERNAL_TIMER_H => (self.timer() >> 32) as u32,
            INTERNAL_TIMER_L => self.timer() as u32,
            HEALTH_COUNTER => {
                self.health_counter = self.health_counter.wrapping_add(1).max(1);
                self.health_counter
            }
            _ => 0,
        }
    }

    /// Writes the dword at `off`; reserved and read-only registers ignore writes.
    pub fn write_dword(&mut self, off: u64, v: u32) -> Option<InitSegEvent> {
        match off {
            CMDQ_ADDR_H => {
                self.cmdq_addr_h = v;
                None
            }
            CMDQ_ADDR_L_SZ => {
                self.cmdq_addr_l = v & 0xffff_f000;
                let nic = ((v >> 8) & 0x7) as u8;
                let changed = nic != self.nic_interface;
                self.nic_interface = nic;
                changed.then_some(InitSegEvent::NicInterface(nic))
            }
            CMD_DBELL => (v != 0).then_some(InitSegEvent::CommandDoorbell(v)),
            _ => None,
        }
    }

    /// Byte-granular read of `[off, off+buf.len())` built from the big-endian dwords.
    pub fn read(&mut self, off: u64, buf: &mut [u8]) {
        let end = off + buf.len() as u64;
        let mut dw = off & !3;
        while dw < end {
            let bytes = self.read_dword(dw).to_be_bytes();
            for (i, b) in bytes.iter().enumerate() {
                let a = dw + i as u64;
                if a >= off && a < end {
                    buf[(a - off) as usize] = *b;
                }
            }
            dw += 4;
        }
    }

    /// Byte-granular write; partial dwords merge with the current value.
    pub fn write(&mut self, off: u64, data: &[u8]) -> Vec<InitSegEvent> {
        let end = off + data.len() as u64;
        let mut events = Vec::new();
        let mut dw = off & !3;
        while dw < end {
            let full = dw >= off && dw + 4 <= end;
            let mut bytes = if full { [0u8; 4] } else { self.peek(dw).to_be_bytes() };
            for (i, b) in bytes.iter_mut().enumerate() {
                let a = dw + i as u64;
                if a >= off && a < end {
                    *b = data[(a - off) as usize];
                }
            }
            if let Some(e) = self.write_dword(dw, u32::from_be_bytes(bytes)) {
                events.push(e);
            }
            dw += 4;
        }
        events
    }

    /// Current value of a writable register without read side effects.
    fn peek(&self, off: u64) -> u32 {
        match off {
            CMDQ_ADDR_H => self.cmdq_addr_h,
            CMDQ_ADDR_L_SZ => self.cmdq_addr_l | ((self.nic_interface as u32) << 8),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_registers() {
        let mut s = InitSegment::new(FwVersion::default(), 0x1017);
        assert_eq!(s.read_dword(FW_REV), 0x0023_0010);
        assert_eq!(s.read_dword(CMDIF_REV_FW_SUB), 0x0005_07d0);
        assert_eq!(s.read_dword(INITIALIZING), 0);
        assert_ne!(s.read_dword(HEALTH_FW_VER), 0xffff_ffff);
        assert_eq!(s.read_dword(CMD_Q_INIT_TO), 0);
        let mut b = [0u8; 4];
        s.read(0, &mut b);
        assert_eq!(b, [0x00, 0x23, 0x00, 0x10], "big-endian on the bus");
    }

    #[test]
    fn cmdq_address_and_nic_interface() {
        let mut s = InitSegment::new(FwVersion::default(), 0);
        assert_eq!((s.read_dword(CMDQ_ADDR_L_SZ) >> 8) & 7, NIC_IFC_DISABLED as u32);
        assert_eq!(s.read_dword(CMDQ_ADDR_L_SZ) & 0xff, 0x56);
        assert_eq!(s.write(CMDQ_ADDR_H, &0x1u32.to_be_bytes()), vec![]);
        assert_eq!(s.write(CMDQ_ADDR_L_SZ, &0x1234_5000u32.to_be_bytes()), vec![InitSegEvent::NicInterface(0)]);
        assert_eq!(s.cmdq_addr(), 0x1_1234_5000);
        assert_eq!(s.read_dword(CMDQ_ADDR_L_SZ), 0x1234_5056);
        assert_eq!(s.write(CMD_DBELL, &1u32.to_be_bytes()), vec![InitSegEvent::CommandDoorbell(1)]);
        s.reset();
        assert_eq!(s.cmdq_addr(), 0);
        assert_eq!(s.nic_interface(), NIC_IFC_DISABLED);
    }

    #[test]
    fn health_counter_moves() {
        let mut s = InitSegment::new(FwVersion::default(), 0);
        let a = s.read_dword(HEALTH_COUNTER);
        let b = s.read_dword(HEALTH_COUNTER);
        assert_ne!(a, b);
        assert_ne!(a, 0);
    }

    /// The internal timer reads as the device clock: big-endian h then l,
    /// never backwards, advancing at `device_frequency_khz`.
    #[test]
    fn internal_timer_is_the_device_clock() {
        let mut s = InitSegment::new(FwVersion::default(), 0);
        let read = |s: &mut InitSegment| {
            let mut b = [0u8; 8];
            s.read(INTERNAL_TIMER_H, &mut b);
            u64::from_be_bytes(b)
        };
        let before = super::super::clock::now();
        let t0 = read(&mut s);
        let mut last = t0;
        for _ in 0..1000 {
            let t = read(&mut s);
            assert!(t >= last, "timer went backwards: {last} -> {t}");
            last = t;
        }
        assert!(t0 >= before && t0 <= super::super::clock::now());
        std::thread::sleep(std::time::Duration::from_millis(10));
        let t1 = ((s.read_dword(INTERNAL_TIMER_H) as u64) << 32) | s.read_dword(INTERNAL_TIMER_L) as u64;
        assert!(t1 - t0 >= 10 * super::super::clock::DEVICE_FREQUENCY_KHZ as u64, "10 ms of ticks: {}", t1 - t0);
        s.reset();
        assert!(read(&mut s) >= t1, "reset does not restart the timer");
    }

    #[test]
    fn fw_version_parse() {
        assert_eq!("16.35.2000".parse::<FwVersion>(), Ok(FwVersion::default()));
        assert!("16.35".parse::<FwVersion>().is_err());
        assert!("16.x.1".parse::<FwVersion>().is_err());
        assert!("70000.1.1".parse::<FwVersion>().is_err());
    }
}
