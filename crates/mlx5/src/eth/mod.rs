//! The Ethernet link layer's domain: what the mlx5e netdev asks of the
//! device. `LinkLayer::Eth` supplies these commands (with the shared
//! `hca/`, `events/` and `rdma/` domains); no handler elsewhere asks which
//! link layer it serves.
//!
//! - [`state`]: the port's state ([`state::EthPort`]), one sub-state per file below.
//! - [`vport`]: NIC vport context, vport state and counters, carrier (PAOS) and port events.
//! - [`regs`]: the port registers of an Ethernet port (PAOS, PMTU, PTYS, PPCNT, PFCC, NODE_DESC);
//!   [`qos`]: the QoS registers (QCAM, QPTS, QPDPM, QTCT, QETCR) behind mlx5e's dcbnl ops.
//! - [`queues`]: transport domains, TISes, Q counters, SQ and RQ objects. An SQ or RQ is an
//!   engine QP of type `RawPacket` (one number space with QPs) with its `rdma::QpCtx`.
//! - [`steering`]: NIC RX flow tables, groups and entries, and their evaluation.
//! - [`match_image`]: a frame's `fte_match_param` image and the masked compare.
//! - [`tir`]: TIRs and RQTs: from a steering destination to an RQ; [`rss`]: the hash.
//! - [`rx`]: a frame from the link to an RQ's WQE and its CQE.
//! - [`tx`]: an SQ's WQEs to frames on the link (checksum, LSO) and their CQEs;
//!   [`eth_seg`]: the Ethernet send WQE's eth segment and data segments; [`tx_state`]: TX counters;
//!   [`loopback`]: which sent frames the port's own RQs receive.

pub mod eth_seg;
pub mod flow_table;
pub mod loopback;
#[cfg(all(test, not(miri)))]
mod loopback_tests;
pub mod match_image;
pub mod port_regs;
pub mod qos;
pub mod qos_access;
pub mod queue_state;
pub mod queues;
pub mod regs;
pub mod rss;
pub mod rx;
pub mod rx_counters;
pub mod rx_dispatch;
pub mod state;
pub mod steering;
pub mod tir;
pub mod tx;
pub mod tx_state;
#[cfg(all(test, not(miri)))]
mod tx_tests;
pub mod vport;
pub mod vport_state;

// The Ethernet command and data-path tests are safe Rust over the GuestMemory that Miri already
// checks elsewhere; under the interpreter they take tens of minutes, so ci/miri leaves them out.
#[cfg(all(test, not(miri)))]
mod cmd_tests;
#[cfg(all(test, not(miri)))]
mod qos_tests;
#[cfg(all(test, not(miri)))]
mod queue_tests;
#[cfg(all(test, not(miri)))]
mod rx_tests;
#[cfg(all(test, not(miri)))]
mod steering_tests;
#[cfg(all(test, not(miri)))]
mod test_support;

use crate::cmd::dispatch::Command;
use crate::cmd::req::{fail, CmdErr};
use crate::cmd::status;
use crate::core::Core;
use crate::devx::umem::Umems;
use crate::firmware::Firmware;
use crate::hca::state::Hca;
use crate::ib::port::PortConfig;
use crate::port::Port;
use crate::roce::state::RoceState;
use state::EthPort;

/// What the Ethernet port's commands and registers borrow: the core (the
/// engine's raw-packet queues, port events), the HCA (capability pages), the
/// port's identity, the Ethernet state, and the RoCE state beside it (the Q
/// counter sets' RDMA half).
pub struct EthCx<'a> {
    pub core: &'a mut Core,
    pub hca: &'a Hca,
    pub cfg: &'a PortConfig,
    pub eth: &'a mut EthPort,
    pub roce: &'a mut RoceState,
    /// The DevX umems a process's queues may lie in.
    pub umems: &'a Umems,
}

impl Firmware {
    /// The context the Ethernet port's commands and registers run on.
    pub(crate) fn eth_cx(&mut self) -> Result<EthCx<'_>, CmdErr> {
        let Port::Eth { eth, roce } = &mut self.port else {
            return Err(fail!(status::INT_ERR, DISPATCH_WRONG_LINK_LAYER));
        };
        Ok(EthCx { core: &mut self.core, hca: &self.hca, cfg: &self.cfg, eth, roce, umems: &self.umems })
    }
}

/// The Ethernet link layer's command tables, one per file.
pub static COMMAND_TABLES: &[&[Command<Firmware>]] =
    &[vport::COMMANDS, queues::COMMANDS, steering::COMMANDS, tir::COMMANDS];
