//! The event domain's commands: CREATE/DESTROY/QUERY_EQ.

pub mod eq;

use crate::cmd::dispatch::{command, Command};
use crate::cmd::req::CmdErr;
use crate::core::Core;
use crate::firmware::Firmware;
use crate::hca::state::Hca;

/// What the EQ commands borrow: the core (its EQs) and the HCA (the UAR an EQ names).
pub struct EventsCx<'a> {
    pub core: &'a mut Core,
    pub hca: &'a Hca,
}

impl Firmware {
    /// The context the EQ commands run on.
    pub(crate) fn events_cx(&mut self) -> Result<EventsCx<'_>, CmdErr> {
        Ok(EventsCx { core: &mut self.core, hca: &self.hca })
    }
}

/// The event domain's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_CREATE_EQ, Enabled, events_cx => eq::create_eq),
    command!(MLX5_CMD_OP_DESTROY_EQ, Enabled, events_cx => eq::destroy_eq),
    command!(MLX5_CMD_OP_QUERY_EQ, Enabled, events_cx => eq::query_eq),
];
