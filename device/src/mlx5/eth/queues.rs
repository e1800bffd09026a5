//! Transport domains, TISes, Q counters, SQ and RQ objects (owner: eth-cmd).

use crate::mlx5::cmd::dispatch::Command;
use crate::mlx5::firmware::Firmware;

/// Queue objects of the Ethernet port.
#[derive(Debug, Default)]
pub struct EthQueues {}

/// The queue commands.
pub static COMMANDS: &[Command<Firmware>] = &[];
