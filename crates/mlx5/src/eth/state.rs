//! The Ethernet port's state: one field per concern, each defined in the
//! file that owns it.

use std::sync::Arc;

use super::flow_table::Steering;
use super::port_regs::PortRegs;
use super::qos::QosRegs;
use super::queue_state::EthQueues;
use super::rx_dispatch::RxDispatch;
use super::tx_state::EthTx;
use super::vport_state::Vport;
use vrnic_fabric::ether::{FrameSink, PausePolicy};

/// Everything the Ethernet personality keeps beyond the shared domains.
#[derive(Default)]
pub struct EthPort {
    /// NIC vport context, admin/oper state, MAC, MTU, counters.
    pub(in crate::eth) vport: Vport,
    /// PAOS, PMTU, PFCC settings.
    pub(in crate::eth) regs: PortRegs,
    /// Trust state, DSCP → priority, priority → TC, ETS (the QoS registers).
    pub(in crate::eth) qos: QosRegs,
    /// Transport domains, TISes, Q counters, SQ/RQ contexts.
    pub(in crate::eth) queues: EthQueues,
    /// NIC RX flow tables.
    pub(in crate::eth) steering: Steering,
    /// TIRs and RQTs.
    pub(in crate::eth) dispatch: RxDispatch,
    /// Transmit counters and the MTU transmit checks against.
    pub(in crate::eth) tx: EthTx,
    /// Where transmitted frames go (none: dropped and counted).
    pub(in crate::eth) link: Option<Arc<dyn FrameSink>>,
}

impl EthPort {
    /// A port with MAC `mac` whose frames go to `link`, at power-on state.
    pub fn new(mac: [u8; 6], link: Option<Arc<dyn FrameSink>>) -> EthPort {
        let mut p = EthPort { vport: Vport::new(mac), link, ..Default::default() };
        p.reset();
        p
    }

    /// FLR / device reset: every object gone, settings back to power-on
    /// (the link and the port identity stay).
    /// Sets the NIC vport's `disable_mc_local_lb` (tests of the shared receive path).
    #[cfg(test)]
    pub fn set_mc_local_lb_disabled(&mut self, v: bool) {
        self.vport.disable_mc_local_lb = v;
    }

    /// NIC vport `disable_mc_local_lb`: multicast this port sends does not loop back to it.
    pub fn mc_local_lb_disabled(&self) -> bool {
        self.vport.disable_mc_local_lb
    }

    pub fn reset(&mut self) {
        self.vport.reset();
        self.regs = PortRegs::default();
        self.qos = QosRegs::default();
        // Power-on: what the port is now is what the driver will first read (no event owed).
        self.vport.announced_up = self.vport.cable && self.regs.admin_up();
        self.queues = EthQueues::default();
        self.steering = Steering::default();
        self.dispatch = RxDispatch::default();
        self.tx = EthTx::default();
        self.apply_pause_policy();
        self.apply_prio_map();
    }

    /// Hands PFCC's policy (`pfcrx`, `pprx`: the pause gate; `pfctx`: PFC
    /// transmit, with the port's MAC as the PFC frames' source) to the link.
    pub fn apply_pause_policy(&self) {
        if let Some(l) = &self.link {
            l.set_pause_policy(PausePolicy {
                pfc_rx: self.regs.pfc_rx,
                pause_rx: self.regs.pause_rx,
                pause_tx: self.regs.pause_tx,
                pfc_tx: self.regs.pfc_tx,
                smac: self.vport.mac,
            });
        }
    }

    /// Hands the trust state and the DSCP → priority map (QPTS, QPDPM) to
    /// the link, which classifies every frame's priority by them.
    pub fn apply_prio_map(&self) {
        if let Some(l) = &self.link {
            l.set_prio_map(self.qos.prio_map());
        }
    }
}

impl std::fmt::Debug for EthPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthPort").finish_non_exhaustive()
    }
}
