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
use crate::firmware::Firmware;

/// The HCA domain's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_ENABLE_HCA, Boot, lifecycle::enable_hca),
    command!(MLX5_CMD_OP_DISABLE_HCA, Boot, lifecycle::disable_hca),
    command!(MLX5_CMD_OP_QUERY_ISSI, Boot, lifecycle::query_issi),
    command!(MLX5_CMD_OP_SET_ISSI, Boot, lifecycle::set_issi),
    command!(MLX5_CMD_OP_QUERY_PAGES, Boot, pages::query_pages),
    command!(MLX5_CMD_OP_MANAGE_PAGES, Enabled, pages::manage_pages),
    command!(MLX5_CMD_OP_QUERY_HCA_CAP, Enabled, caps::query::query_hca_cap),
    command!(MLX5_CMD_OP_SET_HCA_CAP, Enabled, caps::query::set_hca_cap),
    command!(MLX5_CMD_OP_INIT_HCA, Enabled, lifecycle::init_hca),
    command!(MLX5_CMD_OP_TEARDOWN_HCA, Enabled, lifecycle::teardown_hca),
    command!(MLX5_CMD_OP_SET_DRIVER_VERSION, Enabled, lifecycle::set_driver_version),
    command!(MLX5_CMD_OP_QUERY_ADAPTER, Enabled, lifecycle::query_adapter),
    command!(MLX5_CMD_OP_NOP, Enabled, lifecycle::nop),
    command!(MLX5_CMD_OP_ALLOC_UAR, Enabled, uar_alloc::alloc_uar),
    command!(MLX5_CMD_OP_DEALLOC_UAR, Enabled, uar_alloc::dealloc_uar),
    command!(MLX5_CMD_OP_ACCESS_REG, Enabled, access_reg::access_reg),
];
