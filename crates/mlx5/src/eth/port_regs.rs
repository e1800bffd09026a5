//! The Ethernet port registers' state: PAOS, PMTU, PFCC settings (a leaf: the firmware holds it;
//! ACCESS_REG's handlers are in [`super::regs`]).

/// The largest frame the port takes (PMTU `max_mtu`): an MTU of 9000 plus the 22 bytes mlx5e adds
/// (Ethernet header 14, one VLAN tag 4, FCS 4) — the MTU range is 68..9000.
pub const MAX_MTU: u16 = 9000 + 22;

/// PMTU `admin_mtu`/`oper_mtu` at power-on: the default MTU 1500 + 22.
pub const DEFAULT_MTU: u16 = 1500 + 22;

/// PAOS admin/oper status values.
pub const STATUS_UP: u8 = 1;

pub const STATUS_DOWN: u8 = 2;

/// The stored port-register settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRegs {
    /// PAOS admin_status (1 up, 2 down).
    pub admin_status: u8,
    /// PMTU admin_mtu (the operational MTU follows it).
    pub admin_mtu: u16,
    /// PFCC global pause (`pptx`/`pprx`) and the PFC enable bitmaps.
    pub pause_tx: bool,
    pub pause_rx: bool,
    pub pfc_tx: u8,
    pub pfc_rx: u8,
}

impl Default for PortRegs {
    fn default() -> PortRegs {
        // Hardware default: admin up, pause on in both directions, no PFC.
        PortRegs {
            admin_status: STATUS_UP,
            admin_mtu: DEFAULT_MTU,
            pause_tx: true,
            pause_rx: true,
            pfc_tx: 0,
            pfc_rx: 0,
        }
    }
}

impl PortRegs {
    /// PAOS admin up.
    pub fn admin_up(&self) -> bool {
        self.admin_status == STATUS_UP
    }
}
