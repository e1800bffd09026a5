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
use crate::firmware::Firmware;
use crate::ifc;

/// The IB link layer's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_MAD_IFC, Enabled, mad_ifc::mad_ifc),
    command!(MLX5_CMD_OP_QUERY_VPORT_STATE, Enabled, vport::query_vport_state),
    command!(MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT, Enabled, vport::query_hca_vport_context),
];

impl Firmware {
    /// PORT_CHANGE with `sub_type` (1 DOWN, 4 ACTIVE, 5 INITIALIZED, 6 LID,
    /// 8 GUID, 9 CLIENT_REREG) for port 1, to every EQ that asked for it.
    pub(crate) fn port_event(&mut self, sub_type: u8) {
        let mut data = [0u8; 28];
        ifc::port_state_change_event::port_num.set(&mut data, 1);
        for eqn in self.eqs_for(ifc::MLX5_EVENT_TYPE_PORT_CHANGE) {
            self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, sub_type, &data);
        }
    }
}
