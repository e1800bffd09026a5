//! The link layer selects the command domains: the shared ones (HCA,
//! events, RDMA objects, DevX user contexts) plus its own (`ib/` for InfiniBand, `eth/` and
//! `roce/` for Ethernet), and the data path's choices it implies (where QP1
//! traffic goes). Handlers never branch on the link layer.

use super::cmd::dispatch::{Command, CommandTable, DuplicateOpcode};
use super::firmware::Firmware;
use super::hca::access_reg::{Register, IB_REGISTERS};
pub use super::link_layer::LinkLayer;
use super::{devx, eth, events, hca, ib, rdma, roce};

impl LinkLayer {
    /// The command tables of this link layer's domains.
    pub fn command_tables(self) -> Vec<&'static [Command<Firmware>]> {
        let shared = [hca::COMMANDS, events::COMMANDS, rdma::COMMANDS, devx::COMMANDS];
        let own: Vec<&'static [Command<Firmware>]> = match self {
            LinkLayer::Ib => vec![ib::COMMANDS],
            LinkLayer::Eth => eth::COMMAND_TABLES.iter().copied().chain([roce::COMMANDS]).collect(),
        };
        shared.into_iter().chain(own).collect()
    }

    /// QP1 (GSI) traffic runs through the engine as RoCE UD packets between
    /// hosts (CM MADs; RoCE has no SMI and no SA) rather than as MADs the
    /// firmware answers locally (InfiniBand's SMA/PMA/SA emulation).
    pub fn gsi_on_wire(self) -> bool {
        match self {
            LinkLayer::Ib => false,
            LinkLayer::Eth => true,
        }
    }

    /// The registers ACCESS_REG reaches on a port of this link layer.
    pub fn registers(self) -> &'static [Register] {
        match self {
            LinkLayer::Ib => IB_REGISTERS,
            LinkLayer::Eth => eth::regs::REGISTERS,
        }
    }

    /// The dispatch table of a function with this link layer.
    pub fn commands(self) -> Result<CommandTable<Firmware>, DuplicateOpcode> {
        CommandTable::new(&self.command_tables())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::dispatch::Phase;

    #[test]
    fn ib_table_has_unique_opcodes_and_names() {
        let t = LinkLayer::Ib.commands().expect("no opcode in two domains");
        let rows: usize = LinkLayer::Ib.command_tables().iter().map(|t| t.len()).sum();
        assert_eq!(t.iter().count(), rows);
        let mut names: Vec<&str> = t.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), rows, "one name per opcode");
        assert_eq!(t.name(0x104), "ENABLE_HCA");
        assert_eq!(t.name(0x50d), "MAD_IFC");
        assert_eq!(t.name(0xffff), "UNKNOWN");
    }

    #[test]
    fn eth_table_has_the_roce_commands_and_ib_does_not() {
        let t = LinkLayer::Eth.commands().expect("no opcode in two domains");
        assert_eq!(t.name(0x761), "SET_ROCE_ADDRESS");
        assert_eq!(t.name(0x760), "QUERY_ROCE_ADDRESS");
        let ib = LinkLayer::Ib.commands().expect("table");
        assert_eq!(ib.name(0x761), "UNKNOWN");
        assert!(LinkLayer::Eth.gsi_on_wire() && !LinkLayer::Ib.gsi_on_wire());
    }

    #[test]
    fn only_the_bring_up_commands_run_before_enable_hca() {
        let t = LinkLayer::Ib.commands().expect("table");
        let mut boot: Vec<&str> = t.iter().filter(|c| c.phase == Phase::Boot).map(|c| c.name()).collect();
        boot.sort();
        assert_eq!(boot, ["DISABLE_HCA", "ENABLE_HCA", "QUERY_ISSI", "QUERY_PAGES", "SET_ISSI"]);
    }
}
