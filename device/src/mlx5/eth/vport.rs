//! NIC vport context, vport state, carrier and port events (owner: eth-cmd).

use crate::mlx5::cmd::dispatch::Command;
use crate::mlx5::firmware::Firmware;

/// The NIC vport of the Ethernet port.
#[derive(Debug, Default)]
pub struct Vport {}

impl Vport {
    /// FLR / device reset.
    pub fn reset(&mut self) {}
}

/// The vport commands.
pub static COMMANDS: &[Command<Firmware>] = &[];
