//! The Subnet Administrator on the SM's port. On a ConnectX fabric with
//! OpenSM the SA is software on the SM node; here it is vrnic's: the server
//! whose LID is the SM LID holds a [`vrnic_subnet::Sa`] (`IbPort::sa`). A
//! QP1 MAD of class SubnAdm (0x03) addressed to this port, from the fabric
//! (`receive_mad`) or from this port's own guest (a send to its own LID),
//! goes to `Sa::handle` instead of the guest's QP1; each answer goes back to
//! the requester (its LID, its QP, Q_Key 0x80010000) as QP1's datagrams go:
//! over the fabric (`send_mad`) or into the own guest's receive queue.
//! `Sa::tick` (RMPP resends) runs about once a second on the fabric
//! worker's poll. docs/ib-fabric.md.

use std::sync::atomic::Ordering;

use super::datagram::{Datagram, GSI_QKEY};
use crate::firmware::Firmware;
use vrnic_engine::AddressVector;
use vrnic_subnet::MadSource;
use vrnic_wire::mad::MGMT_CLASS_SUBN_ADM;

/// How often the SA's RMPP timer runs.
pub const SA_TICK_NS: u64 = 1_000_000_000;

impl Firmware {
    /// Whether a datagram for special QP `dqpn` of this port is the SA's: a
    /// QP1 MAD of class SubnAdm on the port that runs the SA.
    pub(super) fn sa_claims(&self, dqpn: u32, data: &[u8]) -> bool {
        self.ib.sa.is_some() && dqpn == 1 && data.get(1) == Some(&MGMT_CLASS_SUBN_ADM)
    }

    /// Hands one SubnAdm MAD to the SA and sends its answers to the requester.
    pub(super) fn sa_answer(&mut self, dg: &Datagram) {
        let src = MadSource { lid: dg.slid, qpn: dg.src_qpn };
        let Some(sa) = self.ib.sa.as_mut() else { return };
        let out = sa.handle(&dg.data, src);
        for mad in out {
            self.sa_send(src, mad);
        }
    }

    /// One MAD from this port's QP1 to `to`: locally delivered when `to` is
    /// this port, else over the fabric (no route: counted by the fabric).
    fn sa_send(&mut self, to: MadSource, mad: Vec<u8>) {
        let own = self.ib.port.lid;
        let dg = Datagram {
            src_qpn: 1,
            slid: own,
            sl: 0,
            qkey: GSI_QKEY,
            solicited: false,
            imm: None,
            data: mad,
            grh: None,
            on_wire: false,
        };
        if to.lid == own {
            let words = (dg.data.len() as u64).div_ceil(4);
            self.ib.counters.xmit_pkts.fetch_add(1, Ordering::Relaxed);
            self.ib.counters.xmit_data_words.fetch_add(words, Ordering::Relaxed);
            self.deliver_local(to.qpn, dg);
        } else {
            let av = AddressVector { dlid: to.lid, port: 1, ..AddressVector::default() };
            // A failed send is the fabric's to count; the requester retries.
            let _ = self.send_mad(&av, to.qpn, &dg);
        }
    }

    /// Runs the SA's RMPP timer when it is due at `now_ns` (sending what it
    /// resends); returns when it is next due, `None` without an SA.
    pub fn sa_poll(&mut self, now_ns: u64) -> Option<u64> {
        self.ib.sa.as_ref()?;
        if now_ns >= self.ib.sa_next_tick_ns {
            self.ib.sa_next_tick_ns = now_ns + SA_TICK_NS;
            let out = self.ib.sa.as_mut().map(|s| s.tick()).unwrap_or_default();
            for (to, mad) in out {
                self.sa_send(to, mad);
            }
        }
        Some(self.ib.sa_next_tick_ns)
    }

    /// The SA's counters, on the port that runs it.
    pub fn sa_stats(&self) -> Option<vrnic_subnet::sa::SaStats> {
        self.ib.sa.as_ref().map(|s| s.stats())
    }

    /// The SA, on the port that runs it.
    pub fn sa_mut(&mut self) -> Option<&mut vrnic_subnet::Sa> {
        self.ib.sa.as_deref_mut()
    }
}
