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
use crate::cmd::req::{fail, CmdErr};
use crate::cmd::status;
use crate::core::Core;
use crate::firmware::Firmware;
use crate::port::Port;
use port::IbPort;
use port::{FwPortCounters, PortConfig};

/// What the InfiniBand port's commands borrow: the port (its identity and
/// state, which the SMA reports and an SM's SubnSet writes; PerfMgt's
/// counters) and the core (the port events a SubnSet raises).
pub struct IbCx<'a> {
    pub core: &'a mut Core,
    pub cfg: &'a mut PortConfig,
    pub counters: &'a FwPortCounters,
    pub ib: &'a mut IbPort,
}

impl Firmware {
    /// The context the InfiniBand port's commands and registers run on.
    pub(crate) fn ib_cx(&mut self) -> Result<IbCx<'_>, CmdErr> {
        let Port::Ib(ib) = &mut self.port else { return Err(fail!(status::INT_ERR, DISPATCH_WRONG_LINK_LAYER)) };
        Ok(IbCx { core: &mut self.core, cfg: &mut self.cfg, counters: &self.counters, ib })
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
