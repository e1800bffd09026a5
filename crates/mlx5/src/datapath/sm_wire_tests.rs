//! SM roles between three firmwares (LIDs 1, 2, 3) over the in-process
//! fabric (`sm_wire.rs`): SMInfo polls answered by the servers themselves;
//! the master (1) stops answering, LID 2 takes over within the 3 missed
//! polls (its SA built without the dead port), every live port's
//! MasterSMLID follows and its guest gets PORT_CHANGE CLIENT_REREG; the
//! old master returns and takes its role back.

use std::sync::{Arc, Mutex};

use crate::datapath::FwHandler;
use crate::test_support::*;
use vrnic_fabric::{Endpoint, InProcNet, PacketHandler, RxMeta};
use vrnic_subnet::sm_role::{SmRoles, SmTiming};
use vrnic_subnet::PortRecord;
use vrnic_wire::smp_sminfo::SmState;

const S: u64 = 1_000_000_000;
const EQ_BUF: u64 = 0x100000;

/// A server that no longer exists: its packets go nowhere.
struct Dead;
impl PacketHandler for Dead {
    fn receive(&self, _: &RxMeta, _: &[u8]) {}
}

struct Server {
    mem: Arc<FlatMem>,
    fw: Arc<Mutex<Firmware>>,
    h: FwHandler,
}

impl Server {
    fn fw(&self) -> std::sync::MutexGuard<'_, Firmware> {
        self.fw.lock().unwrap()
    }

    /// The `n`th event of the port-change EQ: (type, sub_type).
    fn eqe(&self, n: u64) -> (u8, u8) {
        let e = self.mem.get(EQ_BUF + 64 * n, 64);
        (e[1], e[3])
    }
}

fn ip(i: usize) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::new(127, 0, 0, i as u8 + 1)
}

fn servers() -> (Arc<InProcNet>, Vec<Server>) {
    let eps: Vec<_> = (0..3).map(|i| Endpoint::v4(i as u16 + 1, ip(i))).collect();
    let net = InProcNet::new(
        &eps,
        &[Default::default(), Default::default(), Default::default()],
        Arc::new(vrnic_sys::clock::MonotonicClock::default()),
    );
    let ports: Vec<_> = (1..=3u16).map(|l| PortRecord::new(l, 0x100 + l as u64, 0x200 + l as u64)).collect();
    let mut out = Vec::new();
    for (i, lid) in (1..=3u16).enumerate() {
        let mut t = Bench::new();
        t.fw.ib.port.lid = lid;
        t.fw.core.engine.attach(vrnic_engine::transport::Io {
            mem: t.mem.clone(),
            packets: net.sink(i),
            completions: t.fw.core.pending.clone(),
            local: eps[i],
            ..Default::default()
        });
        let uar = t.up();
        t.eq(uar, 0, 1 << ifc::MLX5_EVENT_TYPE_PORT_CHANGE, EQ_BUF);
        let roles = SmRoles::new(lid, 0x100 + lid as u64, 0, &[1, 2, 3], SmTiming::default());
        t.fw.ib.port.sm_lid = roles.master();
        t.fw.ib.sm = Some(Box::new(roles));
        t.fw.ib.sm_ports = ports.clone();
        if lid == 1 {
            let sa = t.fw.sm_build_sa();
            t.fw.ib.sa = Some(Box::new(sa));
        }
        let dummy = FirmwareBuilder::new(
            t.mem.clone(),
            Arc::new(Interrupts::new(64)),
            PortConfig::new(0, 0, 0, 0),
            Limits::default(),
        )
        .build()
        .unwrap();
        let fw = Arc::new(Mutex::new(std::mem::replace(&mut t.fw, dummy)));
        out.push(Server { mem: t.mem.clone(), h: FwHandler(fw.clone()), fw });
    }
    (net, out)
}

/// One step at `now`: every live server's timers, then the fabric until quiet.
fn step(net: &InProcNet, s: &[Server], live: [bool; 3], now: u64) {
    for (x, _) in s.iter().zip(live).filter(|(_, l)| *l) {
        x.h.poll(now);
    }
    let dead = Dead;
    let hs: Vec<&dyn PacketHandler> =
        s.iter().zip(live).map(|(x, l)| if l { &x.h as &dyn PacketHandler } else { &dead }).collect();
    net.pump(&hs, 10_000);
}

#[test]
fn standby_takes_over_when_the_master_stops_answering() {
    let (net, s) = servers();
    for k in 0..2 {
        step(&net, &s, [true; 3], k * S);
    }
    for x in &s {
        let v = x.fw().sm_view().unwrap();
        assert_eq!(v.master_lid, 1);
        assert_eq!((v.stats.polls, v.stats.answers, v.stats.misses), (4, 4, 0), "every poll answered");
        assert_eq!(v.answered, 4, "the servers answered each other's polls");
        assert_eq!(x.eqe(0).0, 0, "no event while the master is alive");
    }
    assert_eq!(s[0].fw().sm_view().unwrap().state, SmState::Master);
    assert_eq!(s[1].fw().sm_view().unwrap().state, SmState::Standby);
    // LID 1 dies between the polls of 1 s and 2 s.
    let mut took = None;
    for k in 2..8 {
        step(&net, &s, [false, true, true], k * S);
        if took.is_none() && s[1].fw().sm_view().unwrap().state == SmState::Master {
            took = Some(k);
        }
    }
    // polls at 2, 3, 4 s unanswered: dead when the one at 5 s is due, 3-4 s after the last answer.
    assert_eq!(took, Some(5));
    for x in &s[1..] {
        let fw = x.fw();
        assert_eq!(fw.ib.port.sm_lid, 2, "MasterSMLID follows");
        assert_eq!(
            x.eqe(0),
            (ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, ifc::MLX5_PORT_CHANGE_SUBTYPE_CLIENT_REREG as u8)
        );
        assert_eq!(x.eqe(1).0, 0, "one event");
    }
    let (v2, v3) = (s[1].fw().sm_view().unwrap(), s[2].fw().sm_view().unwrap());
    assert_eq!((v2.stats.takeovers, v3.stats.takeovers), (1, 0));
    assert_eq!((v2.stats.peers_lost, v3.stats.master_changes), (1, 1));
    assert!(s[2].fw().ib.sa.is_none());
    {
        let fw = s[1].fw();
        let sa = fw.ib.sa.as_ref().expect("the new master runs the SA");
        let lids: Vec<u16> = sa.subnet.ports().map(|p| p.lid).collect();
        assert_eq!(lids, vec![2, 3], "the dead port is not in the new SA's database");
        assert_eq!(sa.subnet.sm_lid, 2);
    }
    // LID 1 comes back: lowest LID, equal priority: it is master again everywhere.
    for k in 8..11 {
        step(&net, &s, [true; 3], k * S);
    }
    for x in &s {
        assert_eq!(x.fw().ib.port.sm_lid, 1);
        assert_eq!(x.fw().sm_view().unwrap().master_lid, 1);
    }
    assert!(s[1].fw().ib.sa.is_none(), "the standby dropped its SA");
    assert_eq!(s[2].eqe(1).1, ifc::MLX5_PORT_CHANGE_SUBTYPE_CLIENT_REREG as u8);
    assert_eq!(s[0].eqe(0).0, 0, "the old master never saw itself lose the role");
}

#[test]
fn sminfo_get_from_a_guest_is_answered_by_the_server() {
    let (net, s) = servers();
    // An SMInfo Get as infiniband-diags' sminfo sends it, from LID 2's QP0: the master server
    // answers (not its guest); the answer matches no poll of LID 2's server, so it is its guest's
    // (the sminfo that asked), not the role machine's.
    {
        let mut fw = s[1].fw();
        let mad = vrnic_wire::smp_sminfo::smp(vrnic_wire::mad::METHOD_GET, 0x77, 0, None);
        fw.sm_send_for_test(1, mad);
    }
    net.pump(&[&s[0].h, &s[1].h, &s[2].h], 100);
    assert_eq!(s[0].fw().sm_view().unwrap().answered, 1);
    assert_eq!(s[0].fw().sm_view().unwrap().stats.polls, 0, "no poll sent yet");
    assert_eq!(s[1].fw().sm_view().unwrap().stats.stale_answers, 0, "not taken as a poll's answer");
}

#[test]
fn bad_sminfo_answers_are_counted_not_acted_on() {
    let (net, s) = servers();
    step(&net, &s, [true; 3], 0);
    let before = s[1].fw().ib.counters.mad_wire_drops.load(std::sync::atomic::Ordering::Relaxed);
    {
        let mut fw = s[0].fw();
        let mut m = vrnic_wire::smp_sminfo::smp(vrnic_wire::mad::METHOD_GET_RESP, 1, 0, None);
        m[84] = 0x0f; // SMState 15
        fw.sm_send_for_test(2, m);
        let info =
            vrnic_wire::smp_sminfo::Repr { guid: 9, sm_key: 0, act_count: 0, priority: 15, sm_state: SmState::Master };
        fw.sm_send_for_test(2, vrnic_wire::smp_sminfo::smp(vrnic_wire::mad::METHOD_GET_RESP, 0xdead, 0, Some(&info)));
    }
    net.pump(&[&s[0].h, &s[1].h, &s[2].h], 100);
    let v = s[1].fw().sm_view().unwrap();
    assert_eq!(v.master_lid, 1, "an unsolicited priority-15 MASTER changes nothing");
    // answers to no outstanding poll are the guest's (its own sminfo's), not the role machine's
    assert_eq!(v.stats.stale_answers, 0);
    assert_eq!(s[1].fw().ib.counters.mad_wire_drops.load(std::sync::atomic::Ordering::Relaxed), before);
}
