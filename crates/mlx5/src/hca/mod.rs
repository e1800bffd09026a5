//! The HCA domain: lifecycle (ENABLE/DISABLE/INIT/TEARDOWN_HCA, ISSI),
//! boot pages, capabilities, registers and UAR allocation: what every link
//! layer's function needs before its first queue.

pub mod access_reg;
pub mod caps;
pub mod lifecycle;
pub mod pages;
pub mod state;
pub mod uar_alloc;

use crate::cmd::dispatch::{command, Command};
use crate::cmd::req::CmdErr;
use crate::core::Core;
use crate::firmware::Firmware;
use crate::ib::port::PortConfig;
use state::Hca;

/// What the HCA commands borrow: the function's own state ([`Hca`]), the
/// core (SET_HCA_CAP selects the atomic reply mode the completions use) and
/// the port's identity (QUERY_ADAPTER's vendor).
pub struct HcaCx<'a> {
    pub core: &'a mut Core,
    pub hca: &'a mut Hca,
    pub cfg: &'a PortConfig,
}

impl Firmware {
    /// The context the HCA commands run on (split borrows of the firmware).
    pub(crate) fn hca_cx(&mut self) -> Result<HcaCx<'_>, CmdErr> {
        Ok(HcaCx { core: &mut self.core, hca: &mut self.hca, cfg: &self.cfg })
    }
}

/// The HCA domain's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_ENABLE_HCA, Boot, hca_cx => lifecycle::enable_hca),
    command!(MLX5_CMD_OP_DISABLE_HCA, Boot, hca_cx => lifecycle::disable_hca),
    command!(MLX5_CMD_OP_QUERY_ISSI, Boot, hca_cx => lifecycle::query_issi),
    command!(MLX5_CMD_OP_SET_ISSI, Boot, hca_cx => lifecycle::set_issi),
    command!(MLX5_CMD_OP_QUERY_PAGES, Boot, hca_cx => pages::query_pages),
    command!(MLX5_CMD_OP_MANAGE_PAGES, Enabled, hca_cx => pages::manage_pages),
    command!(MLX5_CMD_OP_QUERY_HCA_CAP, Enabled, hca_cx => caps::query::query_hca_cap),
    command!(MLX5_CMD_OP_SET_HCA_CAP, Enabled, hca_cx => caps::query::set_hca_cap),
    command!(MLX5_CMD_OP_INIT_HCA, Enabled, hca_cx => lifecycle::init_hca),
    command!(MLX5_CMD_OP_TEARDOWN_HCA, Enabled, hca_cx => lifecycle::teardown_hca),
    command!(MLX5_CMD_OP_SET_DRIVER_VERSION, Enabled, hca_cx => lifecycle::set_driver_version),
    command!(MLX5_CMD_OP_QUERY_ADAPTER, Enabled, hca_cx => lifecycle::query_adapter),
    command!(MLX5_CMD_OP_NOP, Enabled, hca_cx => lifecycle::nop),
    command!(MLX5_CMD_OP_ALLOC_UAR, Enabled, hca_cx => uar_alloc::alloc_uar),
    command!(MLX5_CMD_OP_DEALLOC_UAR, Enabled, hca_cx => uar_alloc::dealloc_uar),
    command!(MLX5_CMD_OP_ACCESS_REG, Enabled, access_reg::access_reg),
];

#[cfg(test)]
mod cmd_tests;
