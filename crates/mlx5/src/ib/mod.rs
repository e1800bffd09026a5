//! The InfiniBand link layer's domain: the port ([`port`]), the firmware's
//! SMA/PMA behind MAD_IFC ([`mad`], [`mad_ifc`]) and the IB vport queries
//! ([`vport`]). `LinkLayer::Ib` supplies these commands; no handler elsewhere
//! asks which link layer it serves.

pub mod mad;
pub mod mad_ifc;
pub mod port;
pub mod vport;

use crate::cmd::dispatch::{command, Command};
use crate::firmware::Firmware;
use port::IbPort;

/// What the InfiniBand port's commands borrow: the port (its identity, SMA/PMA state).
pub struct IbCx<'a> {
    pub ib: &'a mut IbPort,
}

impl Firmware {
    /// The context the InfiniBand port's commands and registers run on.
    pub(crate) fn ib_cx(&mut self) -> IbCx<'_> {
        IbCx { ib: &mut self.ib }
    }
}

/// The IB link layer's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_MAD_IFC, Enabled, ib_cx => mad_ifc::mad_ifc),
    command!(MLX5_CMD_OP_QUERY_VPORT_STATE, Enabled, ib_cx => vport::query_vport_state),
    command!(MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT, Enabled, ib_cx => vport::query_hca_vport_context),
];
