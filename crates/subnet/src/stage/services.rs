//! What the stage runs under its lock: the modeled switch (this server's
//! copy), and the built-in SM's services: the SA on the SM's port, SMInfo
//! answers, the SM role machine and its polls, and keeping this CA's
//! PortInfo.MasterSMLID in line with the roles the way an SM does, with a
//! SubnGet/SubnSet(PortInfo) to the CA's SMA. MADs in, [`Out`]s out; the
//! stage sends them after the lock is released.

use tracing::{debug, info, warn};

use super::config::{SmMode, StageConfig, StageCounters};
use super::mad::MadPacket;
use crate::db::Subnet;
use crate::port::PortRecord;
use crate::sa::{Sa, SaConfig};
use crate::sm_info::SmInfoAgent;
use crate::sm_role::{SmChange, SmRoles, SmStats};
use crate::source::MadSource;
use crate::switch::{Switch, SwitchConfig, SwitchStart};
use vrnic_wire::mad::{
    self, METHOD_GET, METHOD_GET_RESP, METHOD_SET, MGMT_CLASS_SUBN_ADM, MGMT_CLASS_SUBN_DIRECTED_ROUTE,
    MGMT_CLASS_SUBN_LID_ROUTED,
};
use vrnic_wire::smp::{self, ATTR_PORT_INFO, PERMISSIVE_LID, SMP_LEN};
use vrnic_wire::smp_portinfo::{self as pi, field as pif};
use vrnic_wire::smp_sminfo::{self, SmState, SMP_CLASS_VERSION};

/// How often the SA's RMPP timer runs.
pub const SA_TICK_NS: u64 = 1_000_000_000;
/// How long an unanswered update of the CA's PortInfo waits before it is retried.
pub const PORT_UPDATE_RETRY_NS: u64 = 1_000_000_000;

/// One MAD the stage sends: from its special QP `src_qp` to QP `dest_qp` of
/// the port at LID `to` (this CA's own LID: into its receive queue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    pub to: u16,
    pub src_qp: u32,
    pub dest_qp: u32,
    pub mad: Vec<u8>,
}

/// Where the update of this CA's MasterSMLID stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Nothing sent yet (or the last try failed): send the Get now.
    Start,
    /// SubnGet(PortInfo) sent, TID.
    Get(u64),
    /// SubnSet(PortInfo) sent, TID.
    Set(u64),
}

/// The SM's update of this CA's PortInfo after the master changed:
/// MasterSMLID = `target`, ClientReregister (IBTA 14.4.11: a new master asks
/// every port to reregister; the CA raises CLIENT_REREG).
#[derive(Debug, Clone, Copy)]
struct PortUpdate {
    target: u16,
    step: Step,
    sent_ns: u64,
}

/// The SM's state as `stats` shows it (`subnet.sm`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SmView {
    pub state: SmState,
    pub master_lid: u16,
    pub priority: u8,
    pub period_ms: u64,
    pub max_misses: u32,
    #[serde(flatten)]
    pub stats: SmStats,
    /// SMInfo SMPs this server's SM answered (polls of other servers,
    /// `sminfo` from any guest).
    pub answered: u64,
    pub peers: Vec<crate::sm_role::PeerSm>,
}

pub(super) struct Services {
    /// This CA's fabric LID and the switch port it is cabled to.
    pub(super) lid: u16,
    in_port: Option<u8>,
    pub(super) switch: Switch,
    /// The SA, on the port that is the master SM.
    pub(super) sa: Option<Sa>,
    sa_next_tick: u64,
    /// A static SM's SMInfo (this port is the configured SM LID, no roles).
    agent: Option<SmInfoAgent>,
    /// The SM roles; `None` without them.
    pub(super) roles: Option<SmRoles>,
    /// The ports a new master's SA database starts from (this one and the
    /// configured peers; the dead ones are left out).
    sm_ports: Vec<PortRecord>,
    /// The SM LID this CA port starts with.
    pub(super) sm_lid: u16,
    update: Option<PortUpdate>,
    pub(super) link_up: bool,
    /// The time of the last poll: the clock of what receive starts.
    now: u64,
    next_tid: u64,
    pub(super) c: StageCounters,
}

/// The SubnAdm database of a master: `ports` (LID 0 and duplicates left out).
fn build_sa(own: u16, ports: impl IntoIterator<Item = PortRecord>) -> Sa {
    let mut subnet = Subnet::new(own);
    for p in ports {
        let l = p.lid;
        if let Err(e) = subnet.add_port(p) {
            warn!(lid = l, "not in the SA's database: {e}");
        }
    }
    Sa::new(subnet, SaConfig::default())
}

/// A LID-routed PortInfo SMP (attribute modifier: port 1).
fn port_info_smp(method: u8, tid: u64, data: Option<&[u8; 64]>) -> Vec<u8> {
    let mut m = vec![0u8; SMP_LEN];
    let hdr = mad::Repr {
        base_version: mad::BASE_VERSION,
        mgmt_class: MGMT_CLASS_SUBN_LID_ROUTED,
        class_version: 1,
        method,
        tid,
        attr_id: ATTR_PORT_INFO,
        attr_mod: 1,
        ..mad::Repr::default()
    };
    hdr.emit(&mut mad::Packet::new_unchecked(&mut m[..]));
    if let Some(d) = data {
        m[smp::field::DATA].copy_from_slice(d);
    }
    m
}

impl Services {
    pub(super) fn new(cfg: &StageConfig) -> Services {
        let own = &cfg.own;
        let peers: Vec<u16> = cfg.peers.iter().copied().filter(|&l| l != 0 && l != own.lid).collect();
        let mut sm_ports = vec![own.clone()];
        sm_ports.extend(peers.iter().map(|&l| PortRecord::derived(l)));
        let (mut sa, mut agent, mut roles, mut sm_lid) = (None, None, None, 0);
        let mode = match cfg.sm {
            SmMode::Roles { .. } if peers.is_empty() || own.lid == 0 => {
                let lowest = peers.iter().copied().chain([own.lid]).filter(|&l| l != 0).min().unwrap_or(0);
                SmMode::Static { sm_lid: lowest }
            }
            m => m,
        };
        match mode {
            SmMode::Off => {}
            SmMode::Static { sm_lid: l } => {
                sm_lid = l;
                if own.lid != 0 && own.lid == l {
                    sa = Some(build_sa(l, sm_ports.clone()));
                    agent = Some(SmInfoAgent::new(own.port_guid, 0));
                }
            }
            SmMode::Roles { priority, timing } => {
                let r = SmRoles::new(own.lid, own.port_guid, priority, &peers, timing);
                sm_lid = r.master();
                if sm_lid == own.lid {
                    sa = Some(build_sa(own.lid, sm_ports.clone()));
                }
                roles = Some(r);
            }
        }
        let start = if matches!(mode, SmMode::Off) { SwitchStart::PowerOn } else { SwitchStart::Configured };
        let switch = Switch::new(
            peers.iter().copied().chain([own.lid]),
            sm_lid,
            SwitchConfig { lid: cfg.switch_lid, node_guid: None, start },
        );
        Services {
            lid: own.lid,
            in_port: switch.port_of(own.lid),
            switch,
            sa,
            sa_next_tick: 0,
            agent,
            roles,
            sm_ports,
            sm_lid,
            update: None,
            link_up: true,
            now: 0,
            next_tid: 1,
            c: StageCounters::default(),
        }
    }

    fn tid(&mut self) -> u64 {
        let t = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        // Kept apart from the TIDs the roles use for their polls.
        0x5354_0000_0000_0000 | t
    }

    /// A QP0 packet this CA sends to `dlid`: the switch's when it enters the
    /// switch (a directed-route SMP past hop 0, or an SMP to the switch's
    /// LID or the permissive LID: the port at the other end of the link).
    pub(super) fn take_sent(&mut self, dlid: u16, m: &MadPacket, out: &mut Vec<Out>) -> bool {
        let Some(in_port) = self.in_port.filter(|_| m.dest_qp == 0 && m.src_qp == 0) else { return false };
        match m.class() {
            MGMT_CLASS_SUBN_DIRECTED_ROUTE if m.mad[smp::field::HOP_CNT] > 0 => {
                match self.switch.dr_step(m.mad, in_port) {
                    Ok(o) => {
                        self.c.dr_smp_routed += 1;
                        match self.switch.lid_at(o.port) {
                            Some(to) => out.push(Out { to, src_qp: 0, dest_qp: 0, mad: o.mad }),
                            None => self.c.dr_smp_drops += 1,
                        }
                    }
                    Err(e) => {
                        debug!(lid = self.lid, "directed-route SMP dropped at the modeled switch: {e}");
                        self.c.dr_smp_drops += 1;
                    }
                }
                true
            }
            MGMT_CLASS_SUBN_LID_ROUTED => {
                let p0 = self.switch.port0_lid();
                if dlid != self.switch.lid() && dlid != PERMISSIVE_LID && (p0 == 0 || dlid != p0) {
                    return false;
                }
                let answer = self.switch.answer(m.mad, in_port);
                self.c.switch_smp_answered += 1;
                out.push(Out { to: self.lid, src_qp: 0, dest_qp: 0, mad: answer });
                true
            }
            _ => false,
        }
    }

    /// A QP0/QP1 packet from the fabric (or looped back from this CA) from
    /// `slid`: the built-in SM's when it is a SubnAdm MAD for its SA, an
    /// SMInfo SMP for its SM, or the CA's answer to its PortInfo update.
    pub(super) fn take_received(&mut self, slid: u16, m: &MadPacket, out: &mut Vec<Out>) -> bool {
        if !self.link_up {
            // The port's link is down: nothing reaches the SM on it (the CA drops it too).
            return false;
        }
        match m.dest_qp {
            1 => self.sa_claim(slid, m, out),
            _ => self.sm_claim(slid, m, out) || self.update_claim(slid, m, out),
        }
    }

    fn sa_claim(&mut self, slid: u16, m: &MadPacket, out: &mut Vec<Out>) -> bool {
        let Some(sa) = self.sa.as_mut() else { return false };
        // Requests (and RMPP ACKs, which carry the request's method): the SA's own
        // answers to this CA come through here too, and are the CA's.
        if m.class() != MGMT_CLASS_SUBN_ADM || m.mad[3] & mad::METHOD_RESP != 0 || !m.gsi_keys_ok() {
            return false;
        }
        let src = MadSource { lid: slid, qpn: m.src_qp };
        for mad in sa.handle(m.mad, src) {
            out.push(Out { to: slid, src_qp: 1, dest_qp: m.src_qp, mad });
        }
        true
    }

    fn sm_claim(&mut self, slid: u16, m: &MadPacket, out: &mut Vec<Out>) -> bool {
        let Some((hdr, info)) = smp_sminfo::parse_smp(m.mad) else { return false };
        if let Some(roles) = self.roles.as_mut() {
            match hdr.method {
                METHOD_GET | METHOD_SET => {
                    // No control packet is acted on: a Set is answered with the SMInfo unchanged.
                    let status = if hdr.class_version != SMP_CLASS_VERSION { mad::STATUS_BAD_VERSION } else { 0 };
                    let mut a = smp_sminfo::smp(METHOD_GET_RESP, hdr.tid, hdr.attr_mod, Some(&roles.info()));
                    mad::Packet::new_unchecked(&mut a[..]).set_status(status);
                    self.c.sm_info_answered += 1;
                    out.push(Out { to: slid, src_qp: 0, dest_qp: m.src_qp, mad: a });
                }
                // An answer to no poll of this SM is the guest's (its own `sminfo` asked).
                METHOD_GET_RESP if !roles.awaits(slid, hdr.tid) => return false,
                METHOD_GET_RESP => match info {
                    Some(i) if hdr.status == 0 => {
                        let ch = roles.answer(slid, hdr.tid, &i);
                        self.apply(ch, out);
                    }
                    // A failed or unreadable answer: counted, the poll stays outstanding.
                    _ => self.c.sm_info_drops += 1,
                },
                // Traps, reports and unknown methods: not an SM's to answer here.
                _ => self.c.sm_info_drops += 1,
            }
            return true;
        }
        let Some(agent) = self.agent.as_mut() else { return false };
        let Some(a) = agent.handle(m.mad) else { return false };
        self.c.sm_info_answered += 1;
        out.push(Out { to: slid, src_qp: 0, dest_qp: m.src_qp, mad: a });
        true
    }

    /// The CA's GetResp to the SM's PortInfo update (from this port, TID
    /// of the step in flight).
    fn update_claim(&mut self, slid: u16, m: &MadPacket, out: &mut Vec<Out>) -> bool {
        let Some(u) = self.update else { return false };
        let h = mad::Packet::new_unchecked(m.mad);
        if slid != self.lid || h.mgmt_class() != MGMT_CLASS_SUBN_LID_ROUTED || h.method() != METHOD_GET_RESP {
            return false;
        }
        let tid = h.tid();
        let ok = h.status() == 0 && h.attr_id() == ATTR_PORT_INFO;
        let mut data = [0u8; 64];
        data.copy_from_slice(&m.mad[smp::field::DATA]);
        match u.step {
            Step::Get(t) if t == tid && ok => {
                pi::put(&mut data, pif::MASTER_SM_LID, u.target as u64);
                data[pif::SUBNET_TIMEOUT] |= pi::CLIENT_REREG;
                // PortState and PortPhysicalState: no change.
                data[pif::STATE_INFO1] &= 0xf0;
                data[pif::STATE_INFO2] &= 0x0f;
                let t = self.tid();
                self.update = Some(PortUpdate { step: Step::Set(t), sent_ns: self.now, ..u });
                out.push(Out { to: self.lid, src_qp: 0, dest_qp: 0, mad: port_info_smp(METHOD_SET, t, Some(&data)) });
            }
            Step::Set(t) if t == tid && ok && pi::get(&data, pif::MASTER_SM_LID) == u.target as u64 => {
                self.update = None;
                self.c.port_updates += 1;
                info!(lid = self.lid, master = u.target, "this port's MasterSMLID is {}", u.target);
            }
            Step::Get(t) | Step::Set(t) if t == tid => {
                // Refused: tried again after the retry time.
                self.c.port_update_errors += 1;
                self.update = Some(PortUpdate { step: Step::Start, sent_ns: self.now, ..u });
            }
            _ => return false,
        }
        true
    }

    /// Sends the update's Get when it is due.
    fn update_kick(&mut self, out: &mut Vec<Out>) {
        let Some(u) = self.update else { return };
        let fresh = u.step == Step::Start && u.sent_ns == 0;
        if !fresh && self.now < u.sent_ns.saturating_add(PORT_UPDATE_RETRY_NS) {
            return;
        }
        let t = self.tid();
        self.update = Some(PortUpdate { step: Step::Get(t), sent_ns: self.now.max(1), ..u });
        out.push(Out { to: self.lid, src_qp: 0, dest_qp: 0, mad: port_info_smp(METHOD_GET, t, None) });
    }

    /// Keeps the SA and this port's MasterSMLID in line with a change of the SM roles.
    fn apply(&mut self, ch: SmChange, out: &mut Vec<Out>) {
        if let Some(sa) = self.sa.as_mut() {
            for l in &ch.lost {
                sa.subnet.remove_port(*l);
            }
            for l in &ch.back {
                if let Some(p) = self.sm_ports.iter().find(|p| p.lid == *l) {
                    if let Err(e) = sa.subnet.add_port(p.clone()) {
                        warn!(lid = l, "back on the fabric, not in the SA's database: {e}");
                    }
                }
            }
        }
        let Some((old, new)) = ch.master else { return };
        let own = self.lid;
        if new == own {
            let alive = |l: u16| self.roles.as_ref().is_some_and(|s| s.alive(l));
            let ports: Vec<PortRecord> = self.sm_ports.iter().filter(|p| alive(p.lid)).cloned().collect();
            self.sa = Some(build_sa(own, ports));
            info!(old, lid = own, "master SM {old} lost: this server is the master SM and runs the SA");
        } else if self.sa.take().is_some() {
            info!(lid = own, master = new, "SM {new} is master: this server is a standby, its SA is dropped");
        } else {
            info!(lid = own, old, master = new, "the master SM moved from LID {old} to {new}");
        }
        self.update = Some(PortUpdate { target: new, step: Step::Start, sent_ns: 0 });
        self.update_kick(out);
    }

    /// The timers due at `now`: the SA's RMPP resends, the SM roles' polls,
    /// a PortInfo update's retry. Returns when they are next due.
    pub(super) fn poll(&mut self, now: u64, out: &mut Vec<Out>) -> Option<u64> {
        self.now = now;
        let mut next = None;
        if let Some(sa) = self.sa.as_mut() {
            if now >= self.sa_next_tick {
                self.sa_next_tick = now.saturating_add(SA_TICK_NS);
                for (to, mad) in sa.tick() {
                    out.push(Out { to: to.lid, src_qp: 1, dest_qp: to.qpn, mad });
                }
            }
            next = Some(self.sa_next_tick);
        }
        if let Some(roles) = self.roles.as_mut() {
            let (polls, ch) = roles.poll(now);
            let due = roles.next_due();
            if self.link_up {
                for (lid, tid) in polls {
                    out.push(Out { to: lid, src_qp: 0, dest_qp: 0, mad: smp_sminfo::smp(METHOD_GET, tid, 0, None) });
                }
            }
            self.apply(ch, out);
            next = next.map_or(Some(due), |n: u64| Some(n.min(due)));
        }
        self.update_kick(out);
        if let Some(u) = self.update {
            let due = u.sent_ns.saturating_add(PORT_UPDATE_RETRY_NS);
            next = next.map_or(Some(due), |n: u64| Some(n.min(due)));
        }
        if !self.link_up {
            // Nothing leaves a port whose link is down.
            out.clear();
        }
        next
    }

    pub(super) fn sm_view(&self) -> Option<SmView> {
        let sm = self.roles.as_ref()?;
        let t = sm.timing();
        let info = sm.info();
        Some(SmView {
            state: info.sm_state,
            master_lid: sm.master(),
            priority: info.priority,
            period_ms: t.period_ns / 1_000_000,
            max_misses: t.max_misses,
            stats: sm.stats(),
            answered: self.c.sm_info_answered,
            peers: sm.peers().copied().collect(),
        })
    }
}
