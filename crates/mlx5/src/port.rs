//! The function's one port: an InfiniBand port, or an Ethernet port with
//! its RoCE state. What both have (the identity the SMA, the capabilities
//! and the vport queries report, and the firmware's own packet counters)
//! is the firmware's; what only one link layer has is in its variant, so a
//! handler reaches the other link layer's state only by not compiling.

use super::eth::state::EthPort;
use super::ib::port::IbPort;
use super::link_layer::LinkLayer;
use super::roce::state::RoceState;

// One per device: boxing the larger variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Port {
    /// InfiniBand: PerfMgt over the fabric port's counters; QP0/QP1 are
    /// the firmware's (the SMA, MADs as datagrams).
    Ib(IbPort),
    /// Ethernet: the mlx5e netdev's vport, queues and steering, and RoCE on
    /// it (QP1 runs through the engine onto the wire).
    Eth { eth: EthPort, roce: RoceState },
}

impl Port {
    pub fn link_layer(&self) -> LinkLayer {
        match self {
            Port::Ib(_) => LinkLayer::Ib,
            Port::Eth { .. } => LinkLayer::Eth,
        }
    }

    /// QP1 (GSI) traffic runs through the engine as RoCE UD packets
    /// between hosts (CM MADs; RoCE has no SMI and no SA), not as MADs
    /// the firmware answers locally (InfiniBand's SMA/PMA).
    pub fn gsi_on_wire(&self) -> bool {
        matches!(self, Port::Eth { .. })
    }

    pub fn ib(&self) -> Option<&IbPort> {
        match self {
            Port::Ib(ib) => Some(ib),
            Port::Eth { .. } => None,
        }
    }

    pub fn eth(&self) -> Option<&EthPort> {
        match self {
            Port::Eth { eth, .. } => Some(eth),
            Port::Ib(_) => None,
        }
    }

    pub fn eth_mut(&mut self) -> Option<&mut EthPort> {
        match self {
            Port::Eth { eth, .. } => Some(eth),
            Port::Ib(_) => None,
        }
    }

    pub fn roce(&self) -> Option<&RoceState> {
        match self {
            Port::Eth { roce, .. } => Some(roce),
            Port::Ib(_) => None,
        }
    }

    pub fn roce_mut(&mut self) -> Option<&mut RoceState> {
        match self {
            Port::Eth { roce, .. } => Some(roce),
            Port::Ib(_) => None,
        }
    }

    /// The Ethernet port's state (tests of an Ethernet bench).
    #[cfg(test)]
    pub fn eth_test(&mut self) -> &mut EthPort {
        self.eth_mut().expect("an Ethernet port")
    }

    /// The RoCE state (tests of an Ethernet bench).
    #[cfg(test)]
    pub fn roce_test(&mut self) -> &mut RoceState {
        self.roce_mut().expect("an Ethernet port")
    }

    /// The InfiniBand port's state (tests of an InfiniBand bench).
    #[cfg(test)]
    pub fn ib_test(&mut self) -> &mut IbPort {
        match self {
            Port::Ib(ib) => ib,
            Port::Eth { .. } => panic!("an InfiniBand port"),
        }
    }

    /// FLR / device reset.
    pub fn reset(&mut self) {
        if let Port::Eth { eth, roce } = self {
            eth.reset();
            roce.reset();
        }
    }
}
