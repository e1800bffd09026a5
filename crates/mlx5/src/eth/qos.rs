//! The QoS port registers of an Ethernet port (owner: this file; the state is [`QosRegs`] in
//! `EthPort::qos`): what mlx5e's dcbnl ops read and write (`mlx5-ethernet-roce.md` §1.6, §5.5, §5.6).
//!
//! Handlers: `qos_access.rs`.
//!
//! - QCAM (0x4019): which QoS registers exist — QPTS, QETCR, QTCT, QPDPM (read-only).
//! - QPTS (0x4002): trust state, PCP (power-on) or DSCP (`dcb app add … dscp-prio` switches it).
//! - QPDPM (0x4013): the DSCP → priority table; a write updates the entries whose `e` bit is set.
//! - QTCT (0x400a): priority → traffic class, one priority per access.
//! - QETCR (0x4005): per-TC group, bandwidth share and rate limit; a write merges only the parts
//!   whose valid bit (`g`, `b`, `r`) is set, a read returns the whole state.
//!
//! The trust state and the DSCP map go to the link (`EthPort::apply_prio_map`), which classifies
//! every frame's priority by them (`fabric/ether/classify.rs`: PFC, per-priority counters, RoCE's
//! per-priority congestion-control enables). The emulated link has one queue, so ETS is stored and
//! read back only (a RoCE QP's DSCP and PCP come from its address path, `fabric/roce`).

use crate::ifc;
use vrnic_fabric::ether::PrioMap;

/// QPTS `trust_state` values.
pub const TRUST_PCP: u8 = 1;
pub const TRUST_DSCP: u8 = 2;

/// Priorities and traffic classes (`max_tc` = 8).
pub const NUM_PRIO: usize = 8;
/// DSCP codepoints.
pub const NUM_DSCP: usize = 64;
/// The highest ETS group number (`MLX5E_VENDOR_TC_GROUP_NUM`).
pub(super) const MAX_GROUP: u8 = 7;

/// The QoS registers an `access_reg_cap_mask` bit is set for in QCAM (bit n = register 0x4000 + n).
pub const QCAM_REGISTERS: &[u32] = &[ifc::MLX5_REG_QPTS, ifc::MLX5_REG_QETCR, ifc::MLX5_REG_QTCT, ifc::MLX5_REG_QPDPM];

/// One traffic class's ETS settings (QETCR `tc_configuration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcConfig {
    pub group: u8,
    pub bw_allocation: u8,
    pub max_bw_units: u8,
    pub max_bw_value: u8,
}

/// The stored QoS settings of the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosRegs {
    pub trust: u8,
    pub dscp2prio: [u8; NUM_DSCP],
    pub prio2tc: [u8; NUM_PRIO],
    pub tc: [TcConfig; NUM_PRIO],
    /// QETCR `global_configuration` rate limit (units, value).
    pub global_max_bw: (u8, u8),
}

impl Default for QosRegs {
    fn default() -> QosRegs {
        // Power-on: PCP trust; DSCP d → priority d >> 3 (the commonly documented firmware default);
        // priority → TC as mlx5e programs it at probe ({0→1, 1→0, i→i}); every TC in the vendor
        // group with the whole bandwidth, no rate limit.
        QosRegs {
            trust: TRUST_PCP,
            dscp2prio: std::array::from_fn(|d| (d >> 3) as u8),
            prio2tc: std::array::from_fn(|p| [1, 0, 2, 3, 4, 5, 6, 7][p]),
            tc: [TcConfig { group: MAX_GROUP, bw_allocation: 100, max_bw_units: 0, max_bw_value: 0 }; NUM_PRIO],
            global_max_bw: (0, 0),
        }
    }
}

impl QosRegs {
    /// The priority of a received IP frame with this DSCP under the current trust (`None`: PCP trust,
    /// the VLAN tag decides).
    pub fn dscp_prio(&self, dscp: u8) -> Option<u8> {
        (self.trust == TRUST_DSCP).then(|| self.dscp2prio[(dscp & 63) as usize])
    }

    /// What the link classifies frames by.
    pub fn prio_map(&self) -> PrioMap {
        PrioMap { trust_dscp: self.trust == TRUST_DSCP, dscp2prio: self.dscp2prio }
    }
}
