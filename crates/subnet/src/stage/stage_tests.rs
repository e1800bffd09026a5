//! The IB stage between CAs and an in-process fabric: each server's stage
//! sits in front of its port of an [`InProcNet`], a model CA behind it
//! (records what reaches it; its SMA answers PortInfo as a kernel's ib_mad
//! and the firmware's SMA do). The switch's directed routes and answers,
//! the SA and SMInfo on the SM's port, the SM roles' failover with the
//! MasterSMLID update of each CA, the built-in SM off, hostile input.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::mad::{self, MadPacket};
use super::*;
use crate::port::PortRecord;
use crate::sm_role::SmTiming;
use crate::test_support::{request, TID};
use vrnic_fabric::{Endpoint, InProcNet};
use vrnic_packet::{PacketHandler, PacketSink, RxMeta};
use vrnic_wire::mad::{METHOD_GET, METHOD_GET_RESP, METHOD_SET, MGMT_CLASS_SUBN_ADM};
use vrnic_wire::sa::{ATTR_NODE_RECORD, DATA_OFFSET};
use vrnic_wire::smp::{ATTR_NODE_INFO, ATTR_PORT_INFO, PERMISSIVE_LID};
use vrnic_wire::smp_portinfo::{self as pi, field as pif};
use vrnic_wire::smp_sminfo::{self, SmState, ATTR_SM_INFO};
use vrnic_wire::{sa_node, smp};

const S: u64 = 1_000_000_000;

/// A MAD a CA received: source LID, destination QP, the MAD.
type Got = (u16, u32, Vec<u8>);

/// The CA behind a stage.
struct Ca {
    stage: OnceLock<Weak<IbStage>>,
    got: Mutex<Vec<Got>>,
    /// Its SMA's PortInfo (LID, MasterSMLID), and the ClientReregisters it saw.
    pi: Mutex<[u8; 64]>,
    rereg: AtomicU64,
    alive: std::sync::atomic::AtomicBool,
}

impl Ca {
    fn send(&self, to: u16, src_qp: u32, dest_qp: u32, m: &[u8]) {
        let Some(stage) = self.stage.get().and_then(|w| w.upgrade()) else { return };
        let mut buf = Vec::new();
        assert!(mad::build(src_qp, dest_qp, m, &mut buf));
        stage.send(&Dest { lid: to, ..Dest::default() }, &mut buf);
    }

    fn got(&self) -> Vec<Got> {
        std::mem::take(&mut *self.got.lock().unwrap())
    }

    fn sm_lid(&self) -> u16 {
        pi::get(&self.pi.lock().unwrap(), pif::MASTER_SM_LID) as u16
    }
}

impl PacketHandler for Ca {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        if !self.alive.load(Relaxed) {
            return;
        }
        let Some(m) = mad::parse(pkt) else { return };
        let h = vrnic_wire::mad::Packet::new_unchecked(m.mad);
        // The kernel's ib_mad + the firmware's SMA: a LID-routed PortInfo Get/Set is answered.
        if m.dest_qp == 0 && h.mgmt_class() == 0x01 && h.attr_id() == ATTR_PORT_INFO && h.method() <= METHOD_SET {
            let mut a = m.mad.to_vec();
            {
                let mut img = self.pi.lock().unwrap();
                if h.method() == METHOD_SET {
                    let mut req = [0u8; 64];
                    req.copy_from_slice(&m.mad[64..128]);
                    if pi::client_rereg(&req) {
                        self.rereg.fetch_add(1, Relaxed);
                    }
                    pi::merge_set(&mut img, &req);
                }
                a[64..128].copy_from_slice(&img[..]);
            }
            a[3] = METHOD_GET_RESP;
            self.send(meta.src.lid, 0, m.src_qp, &a);
            return;
        }
        self.got.lock().unwrap().push((meta.src.lid, m.dest_qp, m.mad.to_vec()));
    }
}

struct Server {
    stage: Arc<IbStage>,
    ca: Arc<Ca>,
}

fn ep(i: usize) -> Endpoint {
    Endpoint::v4(i as u16 + 1, std::net::Ipv4Addr::new(127, 0, 0, i as u8 + 1))
}

/// Servers of LIDs 1..=n on an in-process fabric, every stage with `sm`.
fn servers(n: usize, sm: SmMode) -> (Arc<InProcNet>, Vec<Server>) {
    let eps: Vec<Endpoint> = (0..n).map(ep).collect();
    let faults = vec![Default::default(); n];
    let net = InProcNet::new(&eps, &faults, Arc::new(vrnic_sys::clock::MonotonicClock::default()));
    let lids: Vec<u16> = (1..=n as u16).collect();
    let out = (0..n)
        .map(|i| {
            let lid = i as u16 + 1;
            let cfg = StageConfig {
                own: PortRecord::derived(lid),
                peers: lids.iter().copied().filter(|&l| l != lid).collect(),
                switch_lid: None,
                sm,
            };
            let stage = Arc::new(IbStage::new(cfg));
            stage.connect(net.sink(i));
            let mut img = [0u8; 64];
            pi::put(&mut img, pif::LID, lid as u64);
            pi::put(&mut img, pif::MASTER_SM_LID, stage.sm_lid() as u64);
            let ca = Arc::new(Ca {
                stage: OnceLock::new(),
                got: Mutex::default(),
                pi: Mutex::new(img),
                rereg: AtomicU64::new(0),
                alive: true.into(),
            });
            let _ = ca.stage.set(Arc::downgrade(&stage));
            stage.attach(ca.clone());
            Server { stage, ca }
        })
        .collect();
    (net, out)
}

fn pump(net: &InProcNet, s: &[Server]) {
    let hs: Vec<&dyn PacketHandler> = s.iter().map(|x| &*x.stage as &dyn PacketHandler).collect();
    net.pump(&hs, 100_000);
}

/// A directed-route SubnGet as the sending CA's kernel posts it (hop pointer 1).
fn dr_get(attr: u16, path: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    (m[0], m[1], m[2], m[3]) = (1, 0x81, 1, METHOD_GET);
    m[8..16].copy_from_slice(&0x77u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    (m[6], m[7]) = (1, (path.len() - 1) as u8);
    m[32..36].fill(0xff);
    m[128..128 + path.len()].copy_from_slice(path);
    m
}

fn lr_get(attr: u16) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    (m[0], m[1], m[2], m[3]) = (1, 0x01, 1, METHOD_GET);
    m[8..16].copy_from_slice(&0x99u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m
}

fn node_record_get(lid: u16) -> Vec<u8> {
    let mut rec = [0u8; 108];
    rec[..2].copy_from_slice(&lid.to_be_bytes());
    request(METHOD_GET, ATTR_NODE_RECORD, sa_node::mask::LID, &rec)
}

fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

#[test]
fn directed_routes_through_the_switch_copies() {
    let (net, s) = servers(2, SmMode::Static { sm_lid: 1 });
    // One hop from LID 1's CA: the switch answers, back into the CA through the port's loopback.
    s[0].ca.send(PERMISSIVE_LID, 0, 0, &dr_get(ATTR_NODE_INFO, &[0, 1]));
    assert!(s[0].ca.got().is_empty(), "nothing before the fabric delivers");
    pump(&net, &s);
    let got = s[0].ca.got();
    assert_eq!(got.len(), 1);
    let (slid, qp, m) = &got[0];
    assert_eq!((*slid, *qp, m[3], m[4] & 0x80, m[6]), (1, 0, 0x81, 0x80, 1), "GetResp, D, hop pointer 1");
    assert_eq!((m[64 + 2], m[64 + 3], m[64 + 36]), (2, 2, 1), "a 2-port switch, entered on port 1");
    // Two hops: to the CA at switch port 2 (LID 2), whose kernel answers through its switch copy.
    s[0].ca.send(PERMISSIVE_LID, 0, 0, &dr_get(ATTR_NODE_INFO, &[0, 1, 2]));
    pump(&net, &s);
    let got = s[1].ca.got();
    let (slid, _, m) = &got[0];
    assert_eq!((*slid, m[3], m[6], m[7], m[192 + 1]), (1, 0x01, 2, 2, 1), "at LID 2 with hop pointer 2");
    let mut resp = m.clone();
    (resp[3], resp[4], resp[192 + 2], resp[64]) = (0x81, 0x80, 2, 0xab);
    s[1].ca.send(*slid, 0, 0, &resp);
    pump(&net, &s);
    let back = s[0].ca.got();
    assert_eq!((back[0].2[3], back[0].2[6], back[0].2[64]), (0x81, 1, 0xab), "at the requester, hop pointer 1");
    let (v1, v2) = (s[0].stage.view(), s[1].stage.view());
    assert_eq!((v1.counters.dr_smp_routed, v2.counters.dr_smp_routed), (2, 1));
    // LID-routed to the switch's LID (3), and to the permissive LID (the port across the link).
    for dlid in [3, PERMISSIVE_LID] {
        s[1].ca.send(dlid, 0, 0, &lr_get(ATTR_NODE_INFO));
        pump(&net, &s);
        let got = s[1].ca.got();
        assert_eq!((got[0].2[3], got[0].2[64 + 2], got[0].2[64 + 36]), (0x81, 2, 2), "the switch, entered on port 2");
    }
    assert_eq!(s[1].stage.view().counters.switch_smp_answered, 2);
    // QP1 and other LIDs pass by: a PerfMgt Get to LID 2 reaches its CA.
    let mut pm = lr_get(0x12);
    pm[1] = 0x04;
    s[0].ca.send(2, 1, 1, &pm);
    pump(&net, &s);
    assert_eq!(s[1].ca.got()[0].2[1], 0x04);
}

#[test]
fn hostile_directed_routes_are_counted_drops() {
    let no_port = dr_get(ATTR_NODE_INFO, &[0, 1, 9]);
    let mut too_far = no_port.clone();
    too_far[7] = 64;
    let mut no_ptr = dr_get(ATTR_NODE_INFO, &[0, 1, 2]);
    no_ptr[6] = 0;
    for bad in [no_port, too_far, no_ptr] {
        let (net, s) = servers(2, SmMode::Static { sm_lid: 1 });
        s[0].ca.send(PERMISSIVE_LID, 0, 0, &bad);
        pump(&net, &s);
        let v = s[0].stage.view();
        assert_eq!((v.counters.dr_smp_drops, v.counters.mads_sent), (1, 0));
        assert_eq!(net.port(0).counters.tx_packets.load(Relaxed), 0, "nothing left the port");
        assert!(s[0].ca.got().is_empty() && s[1].ca.got().is_empty());
    }
}

#[test]
fn the_sa_answers_on_the_sm_port_only() {
    let (net, s) = servers(3, SmMode::Static { sm_lid: 1 });
    assert!(s[0].stage.view().sa.is_some() && s[1].stage.view().sa.is_none());
    // From LID 2 over the fabric, and from LID 1's own CA through the loopback.
    for (i, asked) in [(1usize, 2u16), (0, 1)] {
        s[i].ca.send(1, 1, 1, &node_record_get(asked));
        pump(&net, &s);
        let got = s[i].ca.got();
        let m = &got[0].2;
        assert_eq!((got[0].0, got[0].1, m[1], m[3]), (1, 1, MGMT_CLASS_SUBN_ADM, METHOD_GET_RESP));
        assert_eq!((rd16(m, 4), u64::from_be_bytes(m[8..16].try_into().unwrap())), (0, TID));
        assert_eq!(rd16(m, DATA_OFFSET), asked, "the record");
    }
    assert!(s[0].ca.got().is_empty(), "the SA's own CA saw no request");
    assert_eq!(s[0].stage.view().sa.unwrap().requests, 2);
    // A bad class version gets an error status; a QP1 MAD with the wrong Q_Key is not the SA's.
    let mut m = node_record_get(2);
    m[2] = 9;
    s[2].ca.send(1, 1, 1, &m);
    pump(&net, &s);
    assert_ne!(rd16(&s[2].ca.got()[0].2, 4), 0);
    let mut buf = Vec::new();
    assert!(mad::build(0, 1, &node_record_get(2), &mut buf), "from QP0: Q_Key 0");
    s[2].stage.send(&Dest { lid: 1, ..Dest::default() }, &mut buf);
    pump(&net, &s);
    assert_eq!(s[0].ca.got().len(), 1, "handed to the CA, which drops it");
    // SubnAdm MADs to a port without the SA reach its CA.
    s[2].ca.send(2, 1, 1, &node_record_get(2));
    pump(&net, &s);
    assert_eq!(s[1].ca.got()[0].2, node_record_get(2));
}

#[test]
fn sminfo_is_the_sm_ports() {
    let (net, s) = servers(2, SmMode::Static { sm_lid: 1 });
    for i in [1usize, 0] {
        s[i].ca.send(1, 0, 0, &smp_sminfo::smp(METHOD_GET, 0x55, 0, None));
        pump(&net, &s);
        let got = s[i].ca.got();
        let (hdr, info) = smp_sminfo::parse_smp(&got[0].2).unwrap();
        let info = info.unwrap();
        assert_eq!((hdr.method, hdr.status, got[0].0), (METHOD_GET_RESP, 0, 1));
        assert_eq!((info.guid, info.sm_state), (PortRecord::derived(1).port_guid, SmState::Master));
    }
    assert_eq!(s[0].stage.view().counters.sm_info_answered, 2);
    // LID 2 runs no SM: an SMInfo to it is its CA's (an SM in its guest would answer).
    s[0].ca.send(2, 0, 0, &smp_sminfo::smp(METHOD_GET, 0x56, 0, None));
    pump(&net, &s);
    assert_eq!(s[1].ca.got().len(), 1);
}

#[test]
fn without_the_built_in_sm_everything_but_the_switch_reaches_the_guest() {
    let (net, s) = servers(3, SmMode::Off);
    let v = s[0].stage.view();
    assert_eq!((v.sm_lid, v.sa.is_none(), v.sm.is_none()), (0, true, true));
    assert_eq!((v.switch.lid, v.switch.port0_lid, v.switch.port_states.clone()), (4, 0, vec![4, 2, 2, 2]));
    s[1].ca.send(1, 1, 1, &node_record_get(2));
    s[1].ca.send(1, 0, 0, &smp_sminfo::smp(METHOD_GET, 0x57, 0, None));
    pump(&net, &s);
    assert_eq!(s[0].ca.got().len(), 2, "the guest's SM (OpenSM) answers these");
    // The switch still routes: an SM sweeping from LID 1 reaches LID 3.
    s[0].ca.send(PERMISSIVE_LID, 0, 0, &dr_get(ATTR_NODE_INFO, &[0, 1, 3]));
    pump(&net, &s);
    assert_eq!(s[2].ca.got()[0].2[6], 2);
    // ... and configures it: port 0's LID.
    let mut set = dr_get(ATTR_PORT_INFO, &[0, 1]);
    set[3] = METHOD_SET;
    set[64 + 16..64 + 18].copy_from_slice(&4u16.to_be_bytes());
    set[64 + 33] = 0x02;
    s[0].ca.send(PERMISSIVE_LID, 0, 0, &set);
    pump(&net, &s);
    assert_eq!(rd16(&s[0].ca.got()[0].2, 64 + 16), 4);
    assert_eq!((s[0].stage.view().switch.port0_lid, s[0].stage.view().switch.sets), (4, 1));
    assert_eq!(s[1].stage.view().switch.port0_lid, 0, "another server's copy holds its own state");
}

/// One step at `now`: every live server's timers, then the fabric until quiet.
fn step(net: &InProcNet, s: &[Server], live: &[bool], now: u64) {
    for (x, _) in s.iter().zip(live).filter(|(_, l)| **l) {
        x.stage.poll(now);
    }
    let dead = Dead;
    let hs: Vec<&dyn PacketHandler> =
        s.iter().zip(live).map(|(x, l)| if *l { &*x.stage as &dyn PacketHandler } else { &dead }).collect();
    net.pump(&hs, 100_000);
}

/// A server that no longer exists: its packets go nowhere.
struct Dead;
impl PacketHandler for Dead {
    fn receive(&self, _: &RxMeta, _: &[u8]) {}
}

#[test]
fn a_standby_takes_over_and_sets_every_live_port_s_master_sm_lid() {
    let roles = SmMode::Roles { priority: 0, timing: SmTiming::default() };
    let (net, s) = servers(3, roles);
    for k in 0..2 {
        step(&net, &s, &[true; 3], k * S);
    }
    for x in &s {
        let v = x.stage.view().sm.unwrap();
        assert_eq!(v.master_lid, 1);
        assert_eq!((v.stats.polls, v.stats.answers, v.stats.misses), (4, 4, 0), "every poll answered");
        assert_eq!(v.answered, 4, "the servers answered each other's polls");
        assert_eq!((x.ca.sm_lid(), x.ca.rereg.load(Relaxed)), (1, 0), "nothing set while the master lives");
        assert!(x.ca.got().is_empty(), "the guests saw none of it");
    }
    // LID 1 dies between the polls of 1 s and 2 s.
    let live = [false, true, true];
    let mut took = None;
    for k in 2..8 {
        step(&net, &s, &live, k * S);
        if took.is_none() && s[1].stage.view().sm.unwrap().state == SmState::Master {
            took = Some(k);
        }
    }
    assert_eq!(took, Some(5), "polls at 2, 3, 4 s unanswered: dead when the one at 5 s is due");
    for x in &s[1..] {
        assert_eq!(x.ca.sm_lid(), 2, "MasterSMLID set by SubnSet(PortInfo)");
        assert_eq!(x.ca.rereg.load(Relaxed), 1, "with ClientReregister");
        assert_eq!(x.stage.view().counters.port_updates, 1);
    }
    let (v2, v3) = (s[1].stage.view(), s[2].stage.view());
    assert_eq!((v2.sm.as_ref().unwrap().stats.takeovers, v3.sm.as_ref().unwrap().stats.takeovers), (1, 0));
    assert!(v3.sa.is_none());
    let lids = s[1].stage.with_sa(|sa| sa.subnet.ports().map(|p| p.lid).collect::<Vec<_>>()).unwrap();
    assert_eq!(lids, vec![2, 3], "the dead port is not in the new SA's database");
    // The new SA answers LID 3.
    s[2].ca.send(2, 1, 1, &node_record_get(3));
    step(&net, &s, &live, 8 * S);
    assert_eq!(rd16(&s[2].ca.got()[0].2, DATA_OFFSET), 3);
    // LID 1 comes back: lowest LID, equal priority: master again everywhere.
    for k in 9..12 {
        step(&net, &s, &[true; 3], k * S);
    }
    for x in &s[1..] {
        assert_eq!((x.ca.sm_lid(), x.stage.view().sm.unwrap().master_lid), (1, 1));
        assert_eq!(x.ca.rereg.load(Relaxed), 2);
    }
    assert!(s[1].stage.view().sa.is_none(), "the standby dropped its SA");
    assert_eq!(s[0].ca.rereg.load(Relaxed), 0, "the old master never saw itself lose the role");
}

#[test]
fn a_port_update_the_ca_does_not_answer_is_retried() {
    let roles = SmMode::Roles { priority: 0, timing: SmTiming::default() };
    let (net, s) = servers(2, roles);
    step(&net, &s, &[true; 2], 0);
    s[1].ca.alive.store(false, Relaxed);
    let live = [false, true];
    for k in 1..6 {
        step(&net, &s, &live, k * S);
    }
    assert_eq!(s[1].stage.view().sm.unwrap().state, SmState::Master);
    assert_eq!(s[1].ca.sm_lid(), 1, "its guest is not up: nothing taken yet");
    s[1].ca.alive.store(true, Relaxed);
    step(&net, &s, &live, 6 * S + PORT_UPDATE_RETRY_NS);
    assert_eq!(s[1].ca.sm_lid(), 2, "retried and taken");
}

#[test]
fn a_port_whose_link_is_down_hears_nothing_and_sends_nothing() {
    let roles = SmMode::Roles { priority: 0, timing: SmTiming::default() };
    let (net, s) = servers(2, roles);
    step(&net, &s, &[true; 2], 0);
    s[0].stage.set_link(false);
    for k in 1..6 {
        step(&net, &s, &[true; 2], k * S);
    }
    // LID 1's SM answers no poll: LID 2 takes over; LID 1 sees LID 2 dead too and stays master.
    assert_eq!(s[1].stage.view().sm.unwrap().state, SmState::Master);
    assert_eq!(s[0].stage.view().sm.unwrap().stats.answers, 1, "only the answer before the link went down");
    assert!(!s[0].stage.view().link_up);
}

#[test]
fn random_packets_never_panic() {
    let roles = SmMode::Roles { priority: 0, timing: SmTiming::default() };
    let (net, s) = servers(2, roles);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let bases =
        [dr_get(ATTR_NODE_INFO, &[0, 1, 2]), lr_get(ATTR_SM_INFO), node_record_get(2), lr_get(smp::ATTR_SWITCH_INFO)];
    let meta = RxMeta::ib(ep(1), false);
    for i in 0..if cfg!(miri) { 200 } else { 20_000 } {
        let mut m = bases[i % bases.len()].clone();
        for _ in 0..(next() % 6) {
            let at = (next() % 256) as usize;
            m[at] = next() as u8;
        }
        let mut buf = Vec::new();
        assert!(mad::build((next() % 2) as u32, (next() % 2) as u32, &m, &mut buf));
        if i % 7 == 0 {
            let at = (next() as usize) % buf.len();
            buf[at] = next() as u8;
        }
        let len = if i % 50 == 0 { (next() as usize) % (buf.len() + 1) } else { buf.len() };
        let dest = Dest { lid: [1, 2, 3, PERMISSIVE_LID, 0][(next() % 5) as usize], ..Dest::default() };
        s[0].stage.send(&dest, &mut buf[..len]);
        s[1].stage.receive(&meta, &buf[..len]);
        if i % 500 == 0 {
            step(&net, &s, &[true; 2], i as u64 * S / 100);
        }
    }
    pump(&net, &s);
}

#[test]
fn parse_takes_whole_mads_only() {
    let mut buf = Vec::new();
    assert!(mad::build(1, 1, &[0u8; 256], &mut buf));
    let MadPacket { dest_qp, src_qp, .. } = mad::parse(&buf).unwrap();
    assert_eq!((dest_qp, src_qp), (1, 1));
    assert!(mad::parse(&buf[..buf.len() - 4]).is_none());
}
