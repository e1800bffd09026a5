//! NIC RX flow tables, groups, entries and their evaluation (owner: eth-rx).

use crate::mlx5::cmd::dispatch::Command;
use crate::mlx5::firmware::Firmware;

/// The flow tables the driver programs.
#[derive(Debug, Default)]
pub struct Steering {}

/// The flow-table commands.
pub static COMMANDS: &[Command<Firmware>] = &[];
