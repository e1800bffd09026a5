//! The RoCE domain of an Ethernet port: the GID table the driver programs
//! from the netdev's addresses (SET_ROCE_ADDRESS, read back with
//! QUERY_ROCE_ADDRESS, [`address`]) into the table the RoCE port frames and
//! accepts by ([`state`]: the shared `fabric::roce::RoceGids`), and the
//! PMA behind MAD_IFC that ib_core's port `counters/` read ([`pma`]), the RDMA
//! half of the Q counter sets (`hw_counters/`, [`qcounters`]), multicast
//! frames for attached groups ([`mcast`]), the congestion-control commands
//! over the port's `CcControl` ([`cong`]). Selected by
//! `LinkLayer::Eth`; the capability pages are `hca/caps/roce.rs`.

pub mod address;
pub mod cong;
pub mod mcast;
pub mod pma;
pub mod qcounters;
pub mod state;

use crate::cmd::dispatch::{command, Command};
use crate::cmd::req::{fail, CmdErr};
use crate::cmd::status;
use crate::firmware::Firmware;
use crate::ib::port::PortConfig;
use crate::port::Port;
use state::RoceState;

/// What the RoCE commands borrow: the RoCE state (GID table, congestion
/// control, PerfMgt baseline) and the port's identity (PerfMgt answers).
pub struct RoceCx<'a> {
    pub roce: &'a mut RoceState,
    pub cfg: &'a PortConfig,
}

impl Firmware {
    /// The context the RoCE commands run on.
    pub(crate) fn roce_cx(&mut self) -> Result<RoceCx<'_>, CmdErr> {
        let Port::Eth { roce, .. } = &mut self.port else {
            return Err(fail!(status::INT_ERR, DISPATCH_WRONG_LINK_LAYER));
        };
        Ok(RoceCx { roce, cfg: &self.cfg })
    }
}

/// The RoCE domain's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_QUERY_ROCE_ADDRESS, Enabled, roce_cx => address::query_roce_address),
    command!(MLX5_CMD_OP_SET_ROCE_ADDRESS, Enabled, roce_cx => address::set_roce_address),
    command!(MLX5_CMD_OP_MAD_IFC, Enabled, roce_cx => pma::mad_ifc),
    command!(MLX5_CMD_OP_QUERY_CONG_STATUS, Enabled, roce_cx => cong::query_cong_status),
    command!(MLX5_CMD_OP_MODIFY_CONG_STATUS, Enabled, roce_cx => cong::modify_cong_status),
    command!(MLX5_CMD_OP_QUERY_CONG_PARAMS, Enabled, roce_cx => cong::query_cong_params),
    command!(MLX5_CMD_OP_MODIFY_CONG_PARAMS, Enabled, roce_cx => cong::modify_cong_params),
    command!(MLX5_CMD_OP_QUERY_CONG_STATISTICS, Enabled, roce_cx => cong::query_cong_statistics),
];

#[cfg(all(test, not(miri)))]
mod cmd_tests;
#[cfg(all(test, not(miri)))]
mod cong_tests;
