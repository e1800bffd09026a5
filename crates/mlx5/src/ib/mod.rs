//! The InfiniBand link layer's domain: the port ([`port`]), the firmware's
//! SMA/PMA behind MAD_IFC ([`mad`], [`mad_ifc`]) and the IB vport queries
//! ([`vport`]). `LinkLayer::Ib` supplies these commands; no handler elsewhere
//! asks which link layer it serves.
//!
//! The IB-only data path sits here too, as Ethernet's own rx/tx sit in
//! `eth/`: QP0/QP1 executed as datagrams (`datagram.rs`: the special QPs'
//! send queues, their receive queues) and their MADs on the fabric
//! ([`mad_wire`]). The subnet's services (the modeled switch, the SA, the
//! SM) are not the CA's: they are the IB stage's, on the fabric side
//! (`vrnic_subnet::stage`).

mod datagram;
pub mod mad;
pub mod mad_ifc;
pub mod mad_wire;
pub mod port;
pub mod vport;

pub use datagram::{Datagram, GRH_LEN, GSI_QKEY};

use crate::cmd::dispatch::{command, Command};
use crate::core::Core;
use crate::firmware::Firmware;
use port::IbPort;

/// What the InfiniBand port's commands borrow: the port (its identity,
/// SMA/PMA state) and the core (the port events an SM's SubnSet raises).
pub struct IbCx<'a> {
    pub core: &'a mut Core,
    pub ib: &'a mut IbPort,
}

impl Firmware {
    /// The context the InfiniBand port's commands and registers run on.
    pub(crate) fn ib_cx(&mut self) -> IbCx<'_> {
        IbCx { core: &mut self.core, ib: &mut self.ib }
    }
}

/// The IB link layer's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_MAD_IFC, Enabled, ib_cx => mad_ifc::mad_ifc),
    command!(MLX5_CMD_OP_QUERY_VPORT_STATE, Enabled, ib_cx => vport::query_vport_state),
    command!(MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT, Enabled, ib_cx => vport::query_hca_vport_context),
];

#[cfg(test)]
mod mad_wire_tests;
#[cfg(test)]
mod sma_tests;
