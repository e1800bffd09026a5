//! QP0 beyond this port's SMA: the modeled switch and the SM's SMInfo.
//!
//! A directed-route SMP past hop 0 (HopCount ≥ 1) that this port's guest
//! sends on QP0 leaves the CA port into the modeled switch (this server's
//! copy, `IbPort::switch`), which advances it as a switch does
//! ([`vrnic_subnet::switch::Switch::dr_step`]): out switch port k it goes
//! to the CA at port k, over the fabric as a QP0 MAD to that CA's server
//! (delivered to its guest's QP0 as a real CA receives a DR SMP: its kernel's
//! `smi_handle_dr_smp_recv` checks the hop fields, MAD_IFC's SMA answers,
//! and the GetResp goes back through its own switch copy along ReturnPath);
//! or the switch's SMA answers it and it returns out the port it came in
//! on. An SMP LID-routed to the switch's LID is answered by the switch's
//! SMA. A DR SMP the switch hands to this server's own CA carries the
//! permissive SLID (0xffff), as on a wire; one from the fabric carries the
//! sending server's LID (the fabric has no LRH), which the receiving kernel
//! only uses to address its answer, which this module claims again.
//!
//! mlx5_ib does not pass SMInfo to MAD_IFC, so the port that runs the SM
//! answers SMInfo Gets itself (`IbPort::sm_info`), from its own guest or
//! from the fabric, as `sa_wire.rs` answers SubnAdm MADs. docs/ib-fabric.md.

use std::sync::atomic::Ordering;

use tracing::debug;

use super::datagram::{Datagram, PERMISSIVE_LID};
use crate::firmware::Firmware;
use vrnic_engine::AddressVector;
use vrnic_subnet::sm_info::is_sm_info;
use vrnic_wire::mad::{MGMT_CLASS_SUBN_DIRECTED_ROUTE, MGMT_CLASS_SUBN_LID_ROUTED};
use vrnic_wire::smp;

impl Firmware {
    /// Whether a send from QP0 to QP0 (DLID `rlid`) is the switch's: a
    /// directed-route SMP with HopCount ≥ 1, or an SMP to the switch's LID.
    pub(super) fn switch_claims(&self, src_qpn: u32, dqpn: u32, rlid: u16, data: &[u8]) -> bool {
        let Some(sw) = self.ib.switch.as_deref() else { return false };
        if src_qpn != 0 || dqpn != 0 || sw.port_of(self.ib.port.lid).is_none() {
            return false;
        }
        match data.get(1) {
            Some(&MGMT_CLASS_SUBN_DIRECTED_ROUTE) => data.get(smp::field::HOP_CNT).is_some_and(|&c| c > 0),
            Some(&MGMT_CLASS_SUBN_LID_ROUTED) => rlid == sw.lid(),
            _ => false,
        }
    }

    /// Hands a claimed QP0 send ([`Self::switch_claims`]) to the switch,
    /// entering on this CA's switch port.
    pub(super) fn switch_receive(&mut self, dg: &Datagram) {
        let Some(sw) = self.ib.switch.as_deref() else { return };
        let Some(in_port) = sw.port_of(self.ib.port.lid) else { return };
        let c = &self.ib.counters;
        if dg.data.get(1) == Some(&MGMT_CLASS_SUBN_LID_ROUTED) {
            let answer = sw.answer(&dg.data, in_port);
            let from = sw.lid();
            c.switch_smp_answered.fetch_add(1, Ordering::Relaxed);
            self.qp0_send(from, self.ib.port.lid, 0, answer);
            return;
        }
        match sw.dr_step(&dg.data, in_port) {
            Ok(out) => {
                c.dr_smp_routed.fetch_add(1, Ordering::Relaxed);
                match sw.lid_at(out.port) {
                    Some(lid) => self.qp0_send(PERMISSIVE_LID, lid, 0, out.mad),
                    None => {
                        c.dr_smp_drops.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Err(e) => {
                debug!(lid = self.ib.port.lid, "directed-route SMP dropped at the modeled switch: {e}");
                c.dr_smp_drops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether a datagram for special QP `dqpn` of this port is an SMInfo
    /// request the SM (on this port) answers.
    pub(super) fn sm_info_claims(&self, dqpn: u32, data: &[u8]) -> bool {
        self.ib.sm_info.is_some() && dqpn == 0 && is_sm_info(data)
    }

    /// Answers one SMInfo request back to its sender's QP.
    pub(super) fn sm_info_answer(&mut self, dg: &Datagram) {
        let Some(sm) = self.ib.sm_info.as_mut() else { return };
        let Some(answer) = sm.handle(&dg.data) else { return };
        self.ib.counters.sm_info_answered.fetch_add(1, Ordering::Relaxed);
        let own = self.ib.port.lid;
        let to = if dg.slid == PERMISSIVE_LID { own } else { dg.slid };
        self.qp0_send(own, to, dg.src_qpn, answer);
    }

    /// One SMP from the fabric side of QP0 to QP `dqpn` of the port at
    /// `to`: into this port's receive queue (with source LID `slid`) when
    /// `to` is this port, else over the fabric (no route: the fabric counts
    /// it; the requester times out).
    pub(super) fn qp0_send(&mut self, slid: u16, to: u16, dqpn: u32, mad: Vec<u8>) {
        let dg = Datagram {
            src_qpn: 0,
            slid,
            sl: 0,
            qkey: 0,
            solicited: false,
            imm: None,
            data: mad,
            grh: None,
            on_wire: false,
        };
        if to == self.ib.port.lid {
            // A MAD that stays in this port is counted once each way, as
            // the local MADs of `datagram.rs` are.
            let words = (dg.data.len() as u64).div_ceil(4);
            self.ib.counters.xmit_pkts.fetch_add(1, Ordering::Relaxed);
            self.ib.counters.xmit_data_words.fetch_add(words, Ordering::Relaxed);
            self.deliver_local(dqpn, dg);
        } else {
            let av = AddressVector { dlid: to, port: 1, ..AddressVector::default() };
            let _ = self.send_mad(&av, dqpn, &dg);
        }
    }

    /// This server's modeled switch.
    pub fn switch(&self) -> Option<&vrnic_subnet::switch::Switch> {
        self.ib.switch.as_deref()
    }
}
