//! The Ethernet port's state: one field per concern, each defined in the
//! file that owns it.

use std::sync::Arc;

use super::queues::EthQueues;
use super::steering::Steering;
use super::tir::RxDispatch;
use super::tx_state::EthTx;
use super::vport::Vport;
use crate::fabric::ether::FrameSink;

/// Everything the Ethernet personality keeps beyond the shared domains.
#[derive(Default)]
pub struct EthPort {
    /// NIC vport context, admin/oper state, MAC, MTU, counters.
    pub vport: Vport,
    /// Transport domains, TISes, Q counters, SQ/RQ contexts.
    pub queues: EthQueues,
    /// NIC RX flow tables.
    pub steering: Steering,
    /// TIRs and RQTs.
    pub dispatch: RxDispatch,
    /// Transmit counters and the MTU transmit checks against.
    pub tx: EthTx,
    /// Where transmitted frames go (none: dropped and counted).
    pub link: Option<Arc<dyn FrameSink>>,
}

impl EthPort {
    /// FLR / device reset: every object gone, settings back to power-on
    /// (the link and the port identity stay).
    pub fn reset(&mut self) {
        self.vport.reset();
        self.queues = EthQueues::default();
        self.steering = Steering::default();
        self.dispatch = RxDispatch::default();
        self.tx = EthTx::default();
    }
}

impl std::fmt::Debug for EthPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthPort").finish_non_exhaustive()
    }
}
