//! TIRs and RQTs: from a steering destination to an RQ (owner: eth-rx).

use crate::mlx5::cmd::dispatch::Command;
use crate::mlx5::firmware::Firmware;

/// TIRs and RQTs.
#[derive(Debug, Default)]
pub struct RxDispatch {}

/// The TIR and RQT commands.
pub static COMMANDS: &[Command<Firmware>] = &[];
