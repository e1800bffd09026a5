//! SM roles on the fabric: the SMInfo SMPs between vrnic servers. Every
//! server is an SM (master or standby, `subnet::sm_role`); each polls the
//! others with LID-routed SMInfo Gets from QP0 to QP0 (IBTA 14.4.1: a
//! standby polls the master), and answers theirs at the receive side of QP0
//! before the guest's queue, as the SM software on a real fabric would
//! (mlx5_ib never passes SMInfo to the firmware's SMA). When the master
//! changes, this server builds or drops its SA, sets PortInfo.MasterSMLID,
//! and raises the port event a new master's ClientReregister raises on a
//! ConnectX (PORT_CHANGE, sub_type CLIENT_REREG): mlx5_ib turns it into
//! IB_EVENT_CLIENT_REREGISTER, on which ib_sa re-reads the SM LID
//! (`update_sm_ah`) and the multicast clients join their groups again at
//! the new SA, whose database starts empty of members. docs/ib-fabric.md.

use std::sync::atomic::Ordering;

use tracing::{info, warn};

use super::datagram::Datagram;
use crate::firmware::Firmware;
use crate::ifc;
use vrnic_subnet::sm_role::{SmChange, SmStats};
use vrnic_subnet::{Sa, SaConfig, Subnet};
use vrnic_wire::mad::{self, METHOD_GET, METHOD_GET_RESP, METHOD_SET};
use vrnic_wire::smp_sminfo::{self, SMP_CLASS_VERSION};

/// The SM's state as `stats` shows it (`firmware.sm`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SmView {
    pub state: smp_sminfo::SmState,
    pub master_lid: u16,
    pub priority: u8,
    pub period_ms: u64,
    pub max_misses: u32,
    #[serde(flatten)]
    pub stats: SmStats,
    /// SMInfo SMPs this port's SM answered (polls of other servers, `sminfo`
    /// from any guest): the port counter `sm_info_answered`.
    pub answered: u64,
    pub peers: Vec<vrnic_subnet::sm_role::PeerSm>,
}

impl Firmware {
    /// Whether a datagram for special QP `dqpn` from `slid` is an SMInfo SMP
    /// for this server's SM: a request, or the answer to one of its polls
    /// (an answer to the guest's own `sminfo` is the guest's).
    pub(super) fn sm_claims(&self, dqpn: u32, slid: u16, data: &[u8]) -> bool {
        let Some(sm) = self.ib.sm.as_ref() else { return false };
        match smp_sminfo::parse_smp(data) {
            Some((hdr, _)) if dqpn == 0 => hdr.method != METHOD_GET_RESP || sm.awaits(slid, hdr.tid),
            _ => false,
        }
    }

    /// One SMInfo SMP from the fabric: a Get (or Set: no control packet is
    /// acted on) is answered with this SM's SMInfo; a GetResp goes to the
    /// role machine as the answer to a poll.
    pub(super) fn sm_receive(&mut self, dg: &Datagram) {
        let Some((hdr, info)) = smp_sminfo::parse_smp(&dg.data) else { return };
        let Some(sm) = self.ib.sm.as_mut() else { return };
        match hdr.method {
            METHOD_GET | METHOD_SET => {
                let status = if hdr.class_version != SMP_CLASS_VERSION { mad::STATUS_BAD_VERSION } else { 0 };
                let mut out = smp_sminfo::smp(METHOD_GET_RESP, hdr.tid, hdr.attr_mod, Some(&sm.info()));
                let mut p = mad::Packet::new_unchecked(&mut out[..]);
                p.set_status(status);
                self.ib.counters.sm_info_answered.fetch_add(1, Ordering::Relaxed);
                self.sm_send(dg.slid, dg.src_qpn, out);
            }
            METHOD_GET_RESP => match info {
                Some(i) if hdr.status == 0 => {
                    let ch = sm.answer(dg.slid, hdr.tid, &i);
                    self.sm_apply(ch);
                }
                // A failed or unreadable answer: counted, the poll stays outstanding.
                _ => self.sm_drop(),
            },
            // Traps, reports and unknown methods: not an SM's to answer here.
            _ => self.sm_drop(),
        }
    }

    fn sm_drop(&self) {
        self.ib.counters.mad_wire_drops.fetch_add(1, Ordering::Relaxed);
    }

    /// An SMP from this server's QP0 to `lid`'s QP `qpn` (no route: counted by the fabric).
    fn sm_send(&mut self, lid: u16, qpn: u32, mad: Vec<u8>) {
        self.qp0_send(self.ib.port.lid, lid, qpn, mad);
    }

    /// An SMP from QP0 to `lid`'s QP0, as a test's hostile or diagnostic peer sends it.
    #[cfg(test)]
    pub(crate) fn sm_send_for_test(&mut self, lid: u16, mad: Vec<u8>) {
        self.sm_send(lid, 0, mad);
    }

    /// Sends the polls that are due at `now_ns` and acts on what they
    /// decided; returns when the next are due (`None` without SM roles).
    pub fn sm_poll(&mut self, now_ns: u64) -> Option<u64> {
        let sm = self.ib.sm.as_mut()?;
        let (polls, ch) = sm.poll(now_ns);
        let next = sm.next_due();
        for (lid, tid) in polls {
            self.sm_send(lid, 0, smp_sminfo::smp(METHOD_GET, tid, 0, None));
        }
        self.sm_apply(ch);
        Some(next)
    }

    /// Keeps the SA and PortInfo in line with a change of the SM roles.
    fn sm_apply(&mut self, ch: SmChange) {
        let own = self.ib.port.lid;
        if let Some(sa) = self.ib.sa.as_mut() {
            for l in &ch.lost {
                sa.subnet.remove_port(*l);
            }
            for l in &ch.back {
                if let Some(p) = self.ib.sm_ports.iter().find(|p| p.lid == *l) {
                    if let Err(e) = sa.subnet.add_port(p.clone()) {
                        warn!(lid = l, "back on the fabric, not in the SA's database: {e}");
                    }
                }
            }
        }
        let Some((old, new)) = ch.master else { return };
        if new == own {
            self.ib.sa = Some(Box::new(self.sm_build_sa()));
            info!(old, lid = own, "master SM {old} lost: this server is the master SM and runs the SA");
        } else {
            if self.ib.sa.take().is_some() {
                info!(lid = own, master = new, "SM {new} is master: this server is a standby, its SA is dropped");
            } else {
                info!(lid = own, old, master = new, "the master SM moved from LID {old} to {new}");
            }
        }
        self.ib.port.sm_lid = new;
        self.sm_port_event();
    }

    /// A new master's SA: this port and the configured peers still alive.
    pub(crate) fn sm_build_sa(&self) -> Sa {
        let own = self.ib.port.lid;
        let mut subnet = Subnet::new(own);
        let alive = |l: u16| self.ib.sm.as_ref().is_some_and(|s| s.alive(l));
        for p in self.ib.sm_ports.iter().filter(|p| alive(p.lid)) {
            if let Err(e) = subnet.add_port(p.clone()) {
                warn!(lid = p.lid, "not in the new SA's database: {e}");
            }
        }
        Sa::new(subnet, SaConfig::default())
    }

    /// PORT_CHANGE, sub_type CLIENT_REREG, to every EQ that asked for it.
    fn sm_port_event(&mut self) {
        let mut data = [0u8; 28];
        ifc::port_state_change_event::port_num.set(&mut data, 1);
        let sub = ifc::MLX5_PORT_CHANGE_SUBTYPE_CLIENT_REREG as u8;
        for eqn in self.core.eqs_for(ifc::MLX5_EVENT_TYPE_PORT_CHANGE) {
            self.core.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, sub, &data);
        }
    }

    /// The SM role machine, where the port has one.
    pub fn sm_mut(&mut self) -> Option<&mut vrnic_subnet::sm_role::SmRoles> {
        self.ib.sm.as_deref_mut()
    }

    /// The SM's state and counters, where the port has SM roles.
    pub fn sm_view(&self) -> Option<SmView> {
        let sm = self.ib.sm.as_ref()?;
        let t = sm.timing();
        let info = sm.info();
        Some(SmView {
            state: info.sm_state,
            master_lid: sm.master(),
            priority: info.priority,
            period_ms: t.period_ns / 1_000_000,
            max_misses: t.max_misses,
            stats: sm.stats(),
            answered: self.ib.counters.sm_info_answered.load(Ordering::Relaxed),
            peers: sm.peers().copied().collect(),
        })
    }
}
