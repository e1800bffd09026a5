//! RoCE congestion control end to end: two engines behind two RoCE ports
//! (`fabric/roce`) joined by an in-process Ethernet wire with a manual
//! clock. ECT(0) on transmit, CE → one CNP per QP per interval to the right
//! QP, CNP → DCQCN cut and a paced requester, the counters.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::test_support::*;
use super::*;
use vrnic_cc::{CcConfig, CcControl, CongStatistics, RpParams};
use vrnic_fabric::ether::{EtherCounters, FrameSink};
use vrnic_fabric::fault::{Injector, Shape};
use vrnic_fabric::roce::{GidEntry, RoceGids, RocePort, RoceVersion};
use vrnic_fabric::{NetHdr, PacketHandler, PacketSink, RxMeta};
use vrnic_wire::bth::Opcode;
use vrnic_wire::congestion::{self, CnpRepr, Ecn};
use vrnic_wire::roce;

/// Every frame put on the wire: (time, from port, bytes).
type Log = Mutex<Vec<(u64, usize, Vec<u8>)>>;

#[derive(Default)]
struct Wire {
    queue: Mutex<VecDeque<(usize, Vec<u8>)>>,
    log: Log,
}

struct End {
    wire: Arc<Wire>,
    from: usize,
    clock: Arc<ManualClock>,
}

impl FrameSink for End {
    fn send_frame(&self, frame: &[u8]) {
        self.wire.log.lock().unwrap().push((self.clock.now_ns(), self.from, frame.to_vec()));
        self.wire.queue.lock().unwrap().push_back((1 - self.from, frame.to_vec()));
    }
}

fn entry(i: usize) -> GidEntry {
    GidEntry {
        gid: roce::v4_mapped([10, 0, 0, i as u8 + 1]),
        mac: [2, 0, 0, 0, 0, i as u8 + 1],
        vlan: None,
        version: RoceVersion::V2,
        ipv4: true,
    }
}

/// Two nodes, each behind a RoCE port; `rx[i]` impairs what port i receives.
struct RocePair {
    clock: Arc<ManualClock>,
    wire: Arc<Wire>,
    ports: [Arc<RocePort>; 2],
    nodes: [Node; 2],
    rx: [Mutex<Option<Injector>>; 2],
    tally: EtherCounters,
}

impl RocePair {
    fn new() -> RocePair {
        let clock = Arc::new(ManualClock::default());
        let wire = Arc::new(Wire::default());
        let port = |i: usize| {
            let gids = Arc::new(RoceGids::new(4));
            gids.set(0, Some(entry(i))).unwrap();
            let end = Arc::new(End { wire: wire.clone(), from: i, clock: clock.clone() });
            Arc::new(RocePort::new(gids, end, Arc::new(|| {})))
        };
        let ports = [port(0), port(1)];
        let node = |i: usize| Node::new(i as u16 + 1, 1 << 20, ports[i].clone() as Arc<dyn PacketSink>, clock.clone());
        let nodes = [node(0), node(1)];
        RocePair { clock, wire, ports, nodes, rx: Default::default(), tally: EtherCounters::default() }
    }

    fn cc(&self, i: usize) -> &Arc<CcControl> {
        self.ports[i].cc()
    }

    /// Port `i` marks every `n`th ECN-capable RoCEv2 frame it receives CE.
    fn ce_every(&self, i: usize, n: u64) {
        let rates = FaultRates { ce_every: n, ..Default::default() };
        *self.rx[i].lock().unwrap() = Some(Injector::with_shape(Shape::Ethernet, rates, 1));
    }

    /// Connected QPs of type `t` (RC/UC: to each other).
    fn qps(&self, t: QpType, mtu: u16) -> (u32, u32) {
        let qa = self.nodes[0].create_qp(t, None);
        let qb = self.nodes[1].create_qp(t, None);
        let av = |i: usize| AddressVector {
            grh: true,
            dgid: entry(i).gid,
            dmac: entry(i).mac,
            hop_limit: 64,
            ..Default::default()
        };
        if t == QpType::Ud {
            self.nodes[0].connect(qa, QpAttrUpdate { path_mtu: Some(Mtu(mtu)), ..Default::default() });
            self.nodes[1].connect(qb, QpAttrUpdate::default());
        } else {
            self.nodes[0].connect(qa, QpAttrUpdate { av: Some(av(1)), ..conn(2, qb, mtu) });
            self.nodes[1].connect(qb, QpAttrUpdate { av: Some(av(0)), ..conn(1, qa, mtu) });
        }
        (qa, qb)
    }

    fn ud_dest(&self, qb: u32) -> UdDest {
        let av =
            AddressVector { grh: true, dgid: entry(1).gid, dmac: entry(1).mac, hop_limit: 64, ..Default::default() };
        UdDest { av, remote_qpn: qb, remote_qkey: 0x1234 }
    }

    /// Delivers what is on the wire (through the receiver's impairment);
    /// returns how many frames.
    fn pump(&self) -> usize {
        let mut n = 0;
        loop {
            let Some((to, mut f)) = self.wire.queue.lock().unwrap().pop_front() else { break };
            n += 1;
            let mut frames = Vec::new();
            match self.rx[to].lock().unwrap().as_mut() {
                Some(inj) => {
                    inj.process(0, &mut f, self.clock.now_ns(), &self.tally, &mut |_, b| frames.push(b.to_vec()))
                }
                None => frames.push(f),
            }
            for f in frames {
                if let Some((meta, r)) = self.ports[to].accept(&f) {
                    self.nodes[to].eng.receive(&meta, &f[r]);
                }
            }
            self.nodes[to].eng.flush();
        }
        n
    }

    /// Runs until nothing more can happen, moving the clock to the next
    /// timer when idle (as `Pair::run`). False if `limit_ns` is reached.
    fn settle_until(&self, limit_ns: u64) -> bool {
        for _ in 0..1_000_000 {
            let n = self.pump();
            let ta = self.nodes[0].eng.lock().poll_timers();
            let tb = self.nodes[1].eng.lock().poll_timers();
            if n == 0 && self.wire.queue.lock().unwrap().is_empty() {
                match [ta, tb].into_iter().flatten().min() {
                    Some(t) if t > limit_ns => return false,
                    Some(t) => self.clock.set(t.max(self.clock.now_ns())),
                    None => return true,
                }
            }
        }
        false
    }

    fn settle(&self) {
        assert!(self.settle_until(u64::MAX), "stalled");
    }

    /// The frames port `from` sent, parsed, with their time.
    fn sent(&self, from: usize) -> Vec<(u64, Vec<u8>)> {
        self.wire.log.lock().unwrap().iter().filter(|(_, f2, _)| *f2 == from).map(|(t, _, b)| (*t, b.clone())).collect()
    }

    fn write(&self, qa: u32, wr_id: u64, len: u32) {
        let mut w = send(wr_id, WrOpcode::Write, vec![self.nodes[0].sge(BASE, len)]);
        w.remote_addr = BASE + 0x8_0000;
        w.rkey = self.nodes[1].key;
        self.nodes[0].eng.lock().post_send(qa, w).unwrap();
    }

    /// A CNP for `qpn` arriving at port `to` (as port `1 - to` would send it).
    fn deliver_cnp(&self, to: usize, qpn: u32) {
        let mut pkt = Vec::new();
        CnpRepr::to_qp(qpn).emit(&mut pkt).unwrap();
        let g =
            vrnic_wire::grh::Repr { sgid: entry(1 - to).gid, dgid: entry(to).gid, hop_limit: 64, ..Default::default() };
        let meta = RxMeta {
            src: vrnic_fabric::Endpoint { lid: 0, gid: g.sgid },
            local: false,
            grh: Some(g),
            net: NetHdr::RoceV2Ipv4,
            vlan: None,
            smac: entry(1 - to).mac,
            prio: 0,
        };
        self.nodes[to].eng.receive(&meta, &pkt);
    }
}

/// (opcode, ECN, ToS, dest QP) of a RoCEv2 frame.
fn decode(f: &[u8]) -> (u8, Ecn, u8, u32) {
    let p = roce::parse(f).unwrap().unwrap();
    let bth = &f[p.roce.start..];
    let dqp = u32::from_be_bytes([0, bth[5], bth[6], bth[7]]);
    (bth[0], congestion::frame_ecn(&p).unwrap(), p.repr.grh.traffic_class, dqp)
}

#[test]
fn data_leaves_ect0_when_the_rp_is_enabled_and_not_when_disabled() {
    let p = RocePair::new();
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    p.write(qa, 1, 8192);
    p.settle();
    let on = p.sent(0);
    assert!(on.len() >= 8);
    assert!(on.iter().all(|(_, f)| decode(f).1 == Ecn::Ect0), "every RoCEv2 frame ECT(0)");
    assert!(p.sent(1).iter().all(|(_, f)| decode(f).1 == Ecn::Ect0), "the ACKs too");
    // RP off on priority 0 (untagged): the traffic class's own ECN bits (0).
    p.cc(0).set_config(CcConfig { rp_enabled: 0xfe, ..CcConfig::connectx_default() });
    p.write(qa, 2, 8192);
    p.settle();
    let off = &p.sent(0)[on.len()..];
    assert!(off.len() >= 8);
    assert!(off.iter().all(|(_, f)| decode(f).1 == Ecn::NotEct));
    let c: Vec<_> = p.nodes[0].cqes().iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(c, vec![(1, WcStatus::Success), (2, WcStatus::Success)]);
    assert!(p.nodes[1].mem.get(BASE + 0x8_0000, 8192) == p.nodes[0].mem.get(BASE, 8192));
}

#[test]
#[cfg_attr(miri, ignore = "64 RoCE frames of 1-4 KiB framed and ICRC'd on both ends: minutes under the interpreter")]
fn ce_marks_get_one_cnp_per_qp_per_interval_to_the_rc_source_qp() {
    let p = RocePair::new();
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    p.ce_every(1, 1);
    p.nodes[0].mem.set(BASE, &pattern(7, 64 * 1024));
    // 64 packets in one instant (the clock does not move while the wire is busy).
    p.write(qa, 1, 64 * 1024);
    p.pump();
    let cnps: Vec<_> = p.sent(1).into_iter().filter(|(_, f)| decode(f).0 == Opcode::CNP.0).collect();
    assert_eq!(cnps.len(), 1, "one CNP per QP per min_time_between_cnps");
    let (op, ecn, tos, dqp) = decode(&cnps[0].1);
    assert_eq!((op, ecn, tos, dqp), (0x81, Ecn::Ect0, 0xc2, qa), "to the RC source QP, ToS 0xC2 as a ConnectX");
    let b = p.cc(1).statistics();
    assert_eq!((b.np_ecn_marked_roce_packets, b.np_cnp_sent), (64, 1));
    assert_eq!(p.tally.fault_ce_marked.load(std::sync::atomic::Ordering::Relaxed), 64);
    let a = p.cc(0).statistics();
    assert_eq!(a, CongStatistics { rp_cnp_handled: 1, ..Default::default() });
    assert!(p.nodes[0].eng.lock().qp_rate(qa).is_some(), "A's QP is rate-limited");
    let bq = p.nodes[1].eng.lock().qp_counters(qb).unwrap();
    assert_eq!((bq.ecn_marked, bq.cnp_sent), (64, 1));
    assert_eq!(p.nodes[0].eng.lock().qp_counters(qa).unwrap().cnp_received, 1);
    p.settle();
    // The CE marks did not change delivery.
    assert!(p.nodes[1].mem.get(BASE + 0x8_0000, 64 * 1024) == pattern(7, 64 * 1024));
    assert_eq!(p.nodes[0].eng.lock().qp_counters(qa).unwrap().retransmissions, 0);
    // Later than the interval: another CNP.
    let before = p.cc(1).statistics().np_cnp_sent;
    p.clock.advance(10_000);
    p.write(qa, 2, 1024);
    p.settle();
    assert_eq!(p.cc(1).statistics().np_cnp_sent, before + 1);
}

#[test]
fn ud_cnp_goes_to_the_deth_source_qp_and_a_disabled_np_only_counts() {
    let p = RocePair::new();
    let (qa, qb) = p.qps(QpType::Ud, 1024);
    p.ce_every(1, 2);
    for i in 0..4 {
        p.nodes[1].eng.lock().post_recv(qb, RecvWr { wr_id: i, sgl: vec![p.nodes[1].sge(BASE, 2048)] }).unwrap();
        let mut w = send(i, WrOpcode::Send, vec![p.nodes[0].sge(BASE, 100)]);
        w.ud = Some(p.ud_dest(qb));
        p.nodes[0].eng.lock().post_send(qa, w).unwrap();
        p.settle();
        p.clock.advance(10_000);
    }
    assert_eq!(p.nodes[1].cqes().len(), 4, "every SEND delivered, marked or not");
    let cnps: Vec<_> = p.sent(1).into_iter().map(|(_, f)| decode(&f)).filter(|d| d.0 == 0x81).collect();
    assert_eq!(cnps.len(), 2, "every second frame marked, each a new interval");
    assert!(cnps.iter().all(|d| d.3 == qa), "DestQP = the DETH source QP");
    assert_eq!(p.cc(0).statistics().rp_cnp_handled, 2);
    // NP off: marks are counted, no CNP.
    p.cc(1).set_config(CcConfig { np_enabled: 0, ..CcConfig::connectx_default() });
    for i in 4..8 {
        p.nodes[1].eng.lock().post_recv(qb, RecvWr { wr_id: i, sgl: vec![p.nodes[1].sge(BASE, 2048)] }).unwrap();
        let mut w = send(i, WrOpcode::Send, vec![p.nodes[0].sge(BASE, 100)]);
        w.ud = Some(p.ud_dest(qb));
        p.nodes[0].eng.lock().post_send(qa, w).unwrap();
        p.settle();
        p.clock.advance(10_000);
    }
    let b = p.cc(1).statistics();
    assert_eq!((b.np_ecn_marked_roce_packets, b.np_cnp_sent), (4, 2));
}

#[test]
#[cfg_attr(miri, ignore = "64 RoCE frames of 1-4 KiB framed and ICRC'd on both ends: minutes under the interpreter")]
fn a_cnp_cuts_the_rate_and_the_pacer_holds_the_requester_to_it() {
    let p = RocePair::new();
    let (qa, _qb) = p.qps(QpType::Rc, 4096);
    // 1 Gb/s on the first CNP, no increase during the test: the rate is
    // what the cut leaves (alpha ≈ 1: half, the 50% floor).
    let rp = RpParams {
        rate_to_set_on_first_cnp: 1000,
        rpg_time_reset: 1_000_000,
        rpg_byte_reset: 0,
        ..RpParams::default()
    };
    p.cc(0).set_config(CcConfig { rp, ..CcConfig::connectx_default() });
    p.deliver_cnp(0, qa);
    let rate = p.nodes[0].eng.lock().qp_rate(qa).unwrap();
    assert!((500_000_000..=510_000_000).contains(&rate), "{rate}");
    assert_eq!(p.cc(0).statistics().rp_cnp_handled, 1);
    let t0 = p.clock.now_ns();
    let len = 256 * 1024;
    p.nodes[0].mem.set(BASE, &pattern(3, len as usize));
    p.write(qa, 1, len);
    p.settle();
    assert!(p.nodes[1].mem.get(BASE + 0x8_0000, len as usize) == pattern(3, len as usize));
    let data: Vec<_> = p.sent(0).into_iter().filter(|(_, f)| decode(f).0 & 0x1f <= 0x0b).collect();
    assert_eq!(data.len(), 64);
    // Bytes on the wire by time t never exceed rate × (t − t0) + burst.
    let burst = vrnic_cc::limiter::PACER_BURST_BYTES as u128;
    let mut sum = 0u128;
    for (t, f) in &data {
        sum += f.len() as u128;
        let allowed = rate as u128 * (t - t0) as u128 / 8_000_000_000 + burst;
        assert!(sum <= allowed, "{sum} bytes by {} ns: more than {allowed}", t - t0);
    }
    // And the pacer did hold them back: the transfer took about bytes / rate.
    let took = data.last().unwrap().0 - t0;
    let min = ((sum - burst) * 8_000_000_000 / rate as u128) as u64;
    assert!(took >= min, "took {took} ns, at {rate} b/s at least {min}");
    assert!(took < 2 * min, "took {took} ns: paced far below the rate");
}

#[test]
fn the_rp_line_rate_is_the_link_shaper_rate() {
    let p = RocePair::new();
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    // A 50 Mbit/s link (`--eth-rate-mbps 50`): the first CNP starts from it
    // (rate_to_set_on_first_cnp 0) and cuts by alpha/2 ≈ half.
    p.cc(0).set_link_rate_bps(50_000_000);
    p.deliver_cnp(0, qa);
    let r = p.nodes[0].eng.lock().qp_rate(qa).unwrap();
    assert_eq!(r, 50_000_000 - 50_000_000 * 1023 / 2048, "{r}");
    p.settle();
    assert_eq!(p.nodes[0].eng.lock().qp_rate(qa), None, "back at the link's rate: the limiter is gone");
}

#[test]
fn an_idle_limited_qp_climbs_back_to_line_rate_on_its_timers() {
    let p = RocePair::new();
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    p.deliver_cnp(0, qa);
    let r0 = p.nodes[0].eng.lock().qp_rate(qa).unwrap();
    assert!(r0 < vrnic_packet::LINE_RATE_BPS);
    // Nothing to send: only the limiter's timer is armed (300 µs steps).
    let next = p.nodes[0].eng.lock().poll_timers().unwrap();
    assert!(next > p.clock.now_ns() && next <= p.clock.now_ns() + 300_000, "{next}");
    p.clock.set(next);
    p.nodes[0].eng.lock().poll_timers();
    let r1 = p.nodes[0].eng.lock().qp_rate(qa).unwrap();
    assert!(r1 > r0, "the rate rose while idle: {r0} → {r1}");
    p.settle();
    assert_eq!(p.nodes[0].eng.lock().qp_rate(qa), None, "back at line rate: the limiter is gone");
    assert!(p.clock.now_ns() < 100_000_000, "within 100 ms of virtual time");
}

#[test]
fn cnps_the_rp_cannot_take_are_ignored_and_bad_ones_dropped() {
    let p = RocePair::new();
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    p.cc(0).set_config(CcConfig { rp_enabled: 0, ..CcConfig::connectx_default() });
    p.deliver_cnp(0, qa);
    assert_eq!(p.nodes[0].eng.lock().qp_rate(qa), None, "RP disabled");
    p.cc(0).set_config(CcConfig::connectx_default());
    p.deliver_cnp(0, 0x99_9999);
    let s = p.cc(0).statistics();
    assert_eq!((s.rp_cnp_handled, s.rp_cnp_ignored), (0, 2));
    assert_eq!(p.nodes[0].eng.lock().rt.drops.no_qp, 1);
    // A short CNP: a malformed packet, no panic, nothing counted as handled.
    let mut pkt = Vec::new();
    CnpRepr::to_qp(qa).emit(&mut pkt).unwrap();
    let meta = RxMeta::ib(vrnic_fabric::Endpoint { lid: 0, gid: entry(1).gid }, false);
    p.nodes[0].eng.lock().receive(&RxMeta { net: NetHdr::RoceV2Ipv4, ..meta }, &pkt[..10]);
    assert_eq!(p.nodes[0].eng.lock().rt.drops.malformed, 1);
    // Cut short after the BTH, or with a nonzero reserved byte: malformed too.
    p.nodes[0].eng.lock().receive(&RxMeta { net: NetHdr::RoceV2Ipv4, ..meta }, &pkt[..20]);
    let mut odd = pkt.clone();
    odd[12] = 1;
    p.nodes[0].eng.lock().receive(&RxMeta { net: NetHdr::RoceV2Ipv4, ..meta }, &odd);
    assert_eq!(p.nodes[0].eng.lock().rt.drops.malformed, 3);
    assert_eq!(p.cc(0).statistics().rp_cnp_ignored, 2, "none of them reached the RP");
    assert!(p.nodes[0].cqes().is_empty(), "a CNP never completes anything");
    // A CNP frame with a bad ICRC: the port drops it.
    p.ce_every(1, 1);
    p.write(qa, 1, 1024);
    p.pump();
    let cnp = p.sent(1).into_iter().map(|(_, f)| f).find(|f| decode(f).0 == 0x81).unwrap();
    let mut bad = cnp.clone();
    let n = bad.len();
    bad[n - 1] ^= 1;
    assert!(p.ports[0].accept(&bad).is_none());
    assert_eq!(p.ports[0].counters().rx_icrc_errors.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(p.cc(0).statistics().rp_cnp_handled, 1);
}
