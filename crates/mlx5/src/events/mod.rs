//! The event domain's commands: CREATE/DESTROY/QUERY_EQ.

pub mod eq;

use crate::cmd::dispatch::{command, Command};
use crate::firmware::Firmware;

/// The event domain's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_CREATE_EQ, Enabled, eq::create_eq),
    command!(MLX5_CMD_OP_DESTROY_EQ, Enabled, eq::destroy_eq),
    command!(MLX5_CMD_OP_QUERY_EQ, Enabled, eq::query_eq),
];
