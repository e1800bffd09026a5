//! Many QPs at once: a burst from hundreds of RC QPs against a receiver
//! whose buffer holds a fraction of it. Without link-level flow control the
//! receiver's socket drops most of the burst, every QP times out together,
//! retransmits together into the same full buffer and, after `retry_cnt`
//! rounds, ends in RETRY_EXC_ERR (perftest `-q 256`/`-q 1000` between two
//! guests). With it, senders wait for credit: nothing is dropped, nothing
//! is retransmitted, every QP gets its turn.

use super::test_support::*;
use super::transport::RX_HELD_MAX_NS;
use super::*;
use std::sync::Arc;
use vrnic_fabric::InProcNet;

const QPS: usize = 256;
const MSGS: u64 = 32;
const LEN: u32 = 4096;

/// What a burst of `QPS` × `MSGS` RDMA WRITEs of `LEN` bytes ended as.
struct Burst {
    /// A's completions, in the order they were written.
    cqes: Vec<Completion>,
    qps: Vec<(u32, u32)>,
    drops: u64,
    fc_blocked: u64,
    retransmissions: u64,
    link_waits: u64,
    pair: Pair,
}

/// Posts the burst on a pair whose receive buffers hold 4 MiB (a socket's
/// default here), with or without flow control, and runs it to the end.
fn burst(flow_control: bool) -> Burst {
    let mem = (QPS as u64 * MSGS * LEN as u64) as usize;
    let pair = Pair::build(mem, &[], |net: &mut Arc<InProcNet>, clock| {
        net.limit_receive_buffer(4 << 20);
        if flow_control {
            net.enable_flow_control(512 << 10, clock.clone());
        }
    });
    let p = &pair;
    for m in 0..MSGS {
        p.a.mem.set(BASE + m * LEN as u64, &pattern(m, LEN as usize));
    }
    // perftest's defaults: timeout 14 (67 ms), retry_cnt 7.
    let qps: Vec<(u32, u32)> = (0..QPS)
        .map(|_| {
            let qa = p.a.create_qp(QpType::Rc, None);
            let qb = p.b.create_qp(QpType::Rc, None);
            p.a.connect(qa, QpAttrUpdate { timeout: Some(14), ..conn(2, qb, 4096) });
            p.b.connect(qb, QpAttrUpdate { timeout: Some(14), ..conn(1, qa, 4096) });
            (qa, qb)
        })
        .collect();
    // Each QP's whole send queue at once, QP after QP, as a doorbell per QP posts it.
    for (i, &(qa, _)) in qps.iter().enumerate() {
        let mut e = p.a.eng.lock();
        for m in 0..MSGS {
            let slot = i as u64 * MSGS + m;
            let wr = SendWr {
                remote_addr: BASE + slot * LEN as u64,
                rkey: p.b.key,
                ..send(slot, WrOpcode::Write, vec![p.a.sge(BASE + m * LEN as u64, LEN)])
            };
            e.post_send(qa, wr).unwrap();
        }
    }
    let total = QPS * MSGS as usize;
    let mut cqes = Vec::new();
    let done = p.run(|p| {
        cqes = p.a.cqes();
        cqes.len() >= total
    });
    assert!(done, "the burst stalled: {} of {total} completions", cqes.len());
    let drops = p.net.port(1).counters.snapshot().rx_socket_drops + p.net.port(0).counters.snapshot().rx_socket_drops;
    let fc_blocked = p.net.port(0).counters.snapshot().fc_blocked;
    let c = p.a.eng.lock().counters();
    Burst { cqes, qps, drops, fc_blocked, retransmissions: c.retransmissions, link_waits: c.link_waits, pair }
}

/// Why flow control: without it a burst from 256 QPs into a 4 MiB receive
/// buffer loses most of its packets and the QPs resend them together into
/// the same buffer (with a receiver as quick as this in-process one they
/// get through; with a guest's, QPs exhaust their retries: the UDP test
/// below).
#[test]
#[cfg_attr(miri, ignore = "256 QPs × 32 × 4 KiB: too slow under Miri")]
fn without_flow_control_a_256_qp_burst_overflows_the_receiver() {
    let b = burst(false);
    let failed = b.cqes.iter().filter(|c| c.status == WcStatus::RetryExcErr).count();
    eprintln!(
        "no flow control: {} drops, {} retransmissions, {failed} QPs in RETRY_EXC_ERR of {QPS}",
        b.drops, b.retransmissions
    );
    assert!(b.drops > 0 && b.retransmissions > 0, "the receive buffer overflowed and packets were resent");
}

/// The fix: link-level flow control holds the senders instead of losing
/// their packets. Every WRITE of every QP completes, with its bytes, with
/// no drop and no retransmission; QPs the link held resume in turn.
#[test]
#[cfg_attr(miri, ignore = "256 QPs × 32 × 4 KiB: too slow under Miri")]
fn with_flow_control_a_256_qp_burst_completes_without_loss() {
    let b = burst(true);
    let bad: Vec<_> = b.cqes.iter().filter(|c| c.status != WcStatus::Success).take(3).collect();
    assert!(bad.is_empty(), "error completions: {bad:?}");
    assert_eq!(b.drops, 0, "nothing dropped");
    assert_eq!(b.retransmissions, 0, "nothing to retransmit");
    assert!(b.fc_blocked > 0 && b.link_waits > 0, "flow control held the senders");
    let p = &b.pair;
    for (i, _) in b.qps.iter().enumerate() {
        for m in 0..MSGS {
            let slot = i as u64 * MSGS + m;
            assert!(
                p.b.mem.get(BASE + slot * LEN as u64, LEN as usize) == pattern(m, LEN as usize),
                "QP {i} message {m}"
            );
        }
    }
    // Fairness: where in the completion order each QP finished.
    let mut last = std::collections::HashMap::new();
    for (k, c) in b.cqes.iter().enumerate() {
        last.insert(c.qpn, k);
    }
    let (lo, hi) = (last.values().min().copied().unwrap_or(0), last.values().max().copied().unwrap_or(0));
    eprintln!(
        "flow control: the link held its senders {} times, {} QP waits; QPs finished between completion {lo} and {hi} of {}",
        b.fc_blocked,
        b.link_waits,
        b.cqes.len()
    );
    assert_eq!(last.len(), QPS, "every QP completed");
    for &(qa, _) in &b.qps {
        assert_eq!(p.a.eng.lock().qp(qa).map(|q| q.state), Some(QpState::Rts), "QP {qa} still in RTS");
    }
}

/// Two engines over real UDP sockets on 127.0.0.1 with the fabric's
/// defaults (4 MiB socket buffers, flow control on): 256 RC QPs each post
/// 32 WRITEs of 4 KiB at once. Every one completes with its bytes, the
/// kernel drops nothing at either socket. (With `flow_control = false`, as
/// before, the same burst ends in RETRY_EXC_ERR.)
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn a_256_qp_burst_over_real_udp_sockets_loses_nothing() {
    let (cqes, snaps, retransmissions) = udp_burst(true);
    let bad: Vec<_> = cqes.iter().filter(|c| c.status != WcStatus::Success).take(3).collect();
    assert!(bad.is_empty(), "error completions: {bad:?} (retransmissions {retransmissions}, ports {snaps:?})");
    assert_eq!(cqes.len(), QPS * MSGS as usize);
    for s in &snaps {
        assert_eq!(s.rx_socket_drops, 0, "the kernel dropped nothing: {s:?}");
    }
    assert!(snaps[0].fc_packets_received > 0 && snaps[1].fc_packets_sent > 0, "{snaps:?}");
}

/// The burst of [`a_256_qp_burst_over_real_udp_sockets_loses_nothing`]:
/// A's completions, both ports' counters, A's retransmissions.
pub(crate) fn udp_burst(flow_control: bool) -> (Vec<Completion>, [vrnic_fabric::PortSnapshot; 2], u64) {
    use std::time::{Duration, Instant};
    use vrnic_fabric::{FabricConfig, PeerConfig, UdpFabric};
    use vrnic_sys::clock::MonotonicClock;

    let clock = Arc::new(MonotonicClock::default());
    let cfg = |gid: &str, port: u16, peers: Vec<PeerConfig>| FabricConfig {
        port,
        bind: "127.0.0.1".into(),
        gid: Some(gid.into()),
        peers,
        flow_control,
        ..Default::default()
    };
    let probe = UdpFabric::bind(&cfg("10.0.0.2", 0, vec![]), 2, clock.clone()).unwrap();
    let b_port = probe.local_addr().unwrap().port();
    drop(probe);
    let peer = |lid: u16, gid: &str, port: u16| PeerConfig {
        lid: Some(lid),
        gid: Some(gid.into()),
        addr: format!("127.0.0.1:{port}"),
    };
    let mut fa = UdpFabric::bind(&cfg("10.0.0.1", 0, vec![peer(2, "10.0.0.2", b_port)]), 1, clock.clone()).unwrap();
    let a_port = fa.local_addr().unwrap().port();
    let mut fb =
        UdpFabric::bind(&cfg("10.0.0.2", b_port, vec![peer(1, "10.0.0.1", a_port)]), 2, clock.clone()).unwrap();
    let mem = (QPS as u64 * MSGS * LEN as u64) as usize;
    let a = Node::new(1, mem, fa.sink(), clock.clone());
    let b = Node::new(2, mem, fb.sink(), clock.clone());
    for (n, f) in [(&a, &fa), (&b, &fb)] {
        let w = f.waker();
        n.eng.lock().rt.waker = Some(Arc::new(move || w.wake()));
    }
    fa.start(Arc::new(a.eng.clone())).unwrap();
    fb.start(Arc::new(b.eng.clone())).unwrap();
    for m in 0..MSGS {
        a.mem.set(BASE + m * LEN as u64, &pattern(m, LEN as usize));
    }
    let qps: Vec<u32> = (0..QPS)
        .map(|_| {
            let qa = a.create_qp(QpType::Rc, None);
            let qb = b.create_qp(QpType::Rc, None);
            a.connect(qa, QpAttrUpdate { timeout: Some(14), ..conn(2, qb, 4096) });
            b.connect(qb, QpAttrUpdate { timeout: Some(14), ..conn(1, qa, 4096) });
            qa
        })
        .collect();
    for (i, &qa) in qps.iter().enumerate() {
        let mut e = a.eng.lock();
        for m in 0..MSGS {
            let slot = i as u64 * MSGS + m;
            let wr = SendWr {
                remote_addr: BASE + slot * LEN as u64,
                rkey: b.key,
                ..send(slot, WrOpcode::Write, vec![a.sge(BASE + m * LEN as u64, LEN)])
            };
            e.post_send(qa, wr).unwrap();
        }
    }
    let total = QPS * MSGS as usize;
    let mut cqes = Vec::new();
    let t = Instant::now();
    while cqes.len() < total && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
        cqes = a.cqes();
    }
    if flow_control {
        for (i, _) in qps.iter().enumerate() {
            for m in 0..MSGS {
                let slot = i as u64 * MSGS + m;
                assert!(
                    b.mem.get(BASE + slot * LEN as u64, LEN as usize) == pattern(m, LEN as usize),
                    "QP {i} msg {m}"
                );
            }
        }
    }
    let snaps = [fa.counters().snapshot(), fb.counters().snapshot()];
    let retransmissions = a.eng.lock().counters().retransmissions;
    if std::env::var("VRNIC_DEBUG_BURST").is_ok() {
        let done: std::collections::HashSet<u32> = cqes.iter().map(|c| c.qpn).collect();
        let mut per = std::collections::HashMap::new();
        for c in &cqes {
            *per.entry(c.qpn).or_insert(0) += 1;
        }
        let e = a.eng.lock();
        let mut shown = 0;
        for &q in &qps {
            if per.get(&q).copied().unwrap_or(0) < MSGS as usize && shown < 3 {
                shown += 1;
                let rt = &e.qp(q).unwrap().rt;
                let d = format!("{rt:?}");
                let from = d.find(" cur:").unwrap_or(0);
                eprintln!(
                    "QP {q} ({} done, in cqes {}) now {}: {}",
                    per.get(&q).copied().unwrap_or(0),
                    done.contains(&q),
                    vrnic_sys::clock::Clock::now_ns(&*clock),
                    &d[from..d.len().min(from + 900)]
                );
            }
        }
    }
    drop(fa);
    drop(fb);
    (cqes, snaps, retransmissions)
}

/// The same burst without flow control, as vrnic ran before it: run by hand
/// (`cargo test --release -p vrnic-engine -- --ignored udp_burst_without`)
/// for the evidence in the note; it depends on the host's socket buffers.
#[test]
#[ignore = "evidence of the old behaviour, not a check: depends on the host's socket buffers and speed"]
fn udp_burst_without_flow_control() {
    let (cqes, snaps, retransmissions) = udp_burst(false);
    let mut by_status = std::collections::BTreeMap::new();
    for c in &cqes {
        *by_status.entry(format!("{:?}", c.status)).or_insert(0) += 1;
    }
    eprintln!(
        "without flow control: {by_status:?}, retransmissions {retransmissions}, rx_socket_drops a {} b {}",
        snaps[0].rx_socket_drops, snaps[1].rx_socket_drops
    );
}

/// A sink whose link lets `budget` more packets go, then holds the sender
/// (`ready` false) until the budget is raised: a link paused or out of
/// credit for as long as the test likes.
struct HeldSink {
    inner: Arc<dyn vrnic_packet::PacketSink>,
    budget: std::sync::atomic::AtomicU64,
}

impl vrnic_packet::PacketSink for HeldSink {
    fn send(&self, dest: &vrnic_packet::Dest, pkt: &mut [u8]) {
        self.inner.send(dest, pkt);
    }
    fn ready(&self, dest: &vrnic_packet::Dest) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.budget.fetch_update(SeqCst, SeqCst, |b| b.checked_sub(1)).is_ok() && self.inner.ready(dest)
    }
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.inner.gid(index)
    }
}

/// A QP with packets unacknowledged that then waits in line for a link that
/// holds it longer than `retry_cnt + 1` ACK timeouts (a thousand QPs on one
/// slow link, each waiting its turn) has spent no retry: it could send
/// none. Its timeouts restart (`link_held_timeouts`), and once the link
/// lets it go every WRITE completes. (Counting them failed it with
/// RETRY_EXC_ERR while its ACKs were on their way: perftest `-q 1024` over
/// RoCE.)
#[test]
fn a_qp_held_by_its_link_spends_no_retry() {
    use std::sync::atomic::Ordering::SeqCst;
    let clock = Arc::new(ManualClock::default());
    let net = InProcNet::new(&[endpoint(1), endpoint(2)], &[], clock.clone());
    let held = Arc::new(HeldSink { inner: net.sink(0), budget: 3.into() });
    let a = Node::new(1, 1 << 20, held.clone(), clock.clone());
    let b = Node::new(2, 1 << 20, net.sink(1), clock.clone());
    let qa = a.create_qp(QpType::Rc, None);
    let qb = b.create_qp(QpType::Rc, None);
    a.connect(qa, conn(2, qb, 1024));
    b.connect(qb, conn(1, qa, 1024));
    a.mem.set(BASE, &pattern(7, 8192));
    for m in 0..2u64 {
        let wr = SendWr {
            remote_addr: BASE + m * 4096,
            rkey: b.key,
            ..send(m, WrOpcode::Write, vec![a.sge(BASE + m * 4096, 4096)])
        };
        a.eng.lock().post_send(qa, wr).unwrap();
    }
    // Three packets left, the fourth waits for the link; nothing is
    // delivered yet (the ACKs are on their way), and the ACK timeout
    // (4.096 us x 2^10) passes twenty times.
    assert_eq!(a.eng.lock().counters().tx_packets, 3);
    let timeout = 4096 << 10;
    for _ in 0..20 {
        clock.set(clock.now_ns() + timeout + 1);
        a.eng.lock().poll_timers();
    }
    let c = a.eng.lock().counters();
    assert_eq!((c.timeouts, c.retransmissions), (0, 0), "no retry spent while held");
    assert!(c.link_held_timeouts >= 20, "each timeout restarted: {}", c.link_held_timeouts);
    assert!(a.cqes().is_empty(), "no completion, no RETRY_EXC_ERR: {:?}", a.cqes());
    // The link lets it go: everything is delivered and completes.
    held.budget.store(u64::MAX, SeqCst);
    a.eng.lock().tx_ready();
    for _ in 0..1000 {
        if a.cqes().len() >= 2 {
            break;
        }
        net.pump(&[&a.eng as &dyn vrnic_packet::PacketHandler, &b.eng], 100_000);
        a.eng.lock().poll_timers();
        b.eng.lock().poll_timers();
    }
    let cqes = a.cqes();
    assert_eq!(cqes.iter().map(|c| c.status).collect::<Vec<_>>(), vec![WcStatus::Success; 2]);
    assert!(b.mem.get(BASE, 8192) == pattern(7, 8192), "both WRITEs landed");
}

/// Keeps what a node sends (its READ responses, as in line behind other
/// QPs' on its link) until `hold` is cleared and `release` forwards them.
struct BacklogSink {
    inner: Arc<dyn vrnic_packet::PacketSink>,
    hold: std::sync::atomic::AtomicBool,
    held: std::sync::Mutex<Vec<(vrnic_packet::Dest, Vec<u8>)>>,
}

impl BacklogSink {
    fn release(&self) {
        self.hold.store(false, std::sync::atomic::Ordering::SeqCst);
        for (d, mut p) in self.held.lock().unwrap().drain(..) {
            self.inner.send(&d, &mut p);
        }
    }
}

impl vrnic_packet::PacketSink for BacklogSink {
    fn send(&self, dest: &vrnic_packet::Dest, pkt: &mut [u8]) {
        if self.hold.load(std::sync::atomic::Ordering::SeqCst) {
            self.held.lock().unwrap().push((*dest, pkt.to_vec()));
        } else {
            self.inner.send(dest, pkt);
        }
    }
    fn ready(&self, dest: &vrnic_packet::Dest) -> bool {
        self.inner.ready(dest)
    }
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.inner.gid(index)
    }
}

/// A reads 8 KiB from B, whose responses wait in B's backlog, for `rounds`
/// ACK timeouts (4.096 us x 2^14, retry_cnt 7); in each, when `inbound`, C
/// writes 32 packets into A (A's port keeps receiving). Returns A's counters,
/// its completions so far, and what releasing the backlog then completes.
fn read_behind_a_backlog(inbound: bool, rounds: usize) -> (QpCounters, Vec<Completion>, Vec<Completion>, bool) {
    let clock = Arc::new(ManualClock::default());
    let net = InProcNet::new(&[endpoint(1), endpoint(2), endpoint(3)], &[], clock.clone());
    let backlog = Arc::new(BacklogSink { inner: net.sink(1), hold: true.into(), held: Default::default() });
    let a = Node::new(1, 1 << 20, net.sink(0), clock.clone());
    let b = Node::new(2, 1 << 20, backlog.clone(), clock.clone());
    let c = Node::new(3, 1 << 20, net.sink(2), clock.clone());
    let (qa, qb) = (a.create_qp(QpType::Rc, None), b.create_qp(QpType::Rc, None));
    let (qa2, qc) = (a.create_qp(QpType::Rc, None), c.create_qp(QpType::Rc, None));
    a.connect(qa, QpAttrUpdate { timeout: Some(14), ..conn(2, qb, 1024) });
    b.connect(qb, QpAttrUpdate { timeout: Some(14), ..conn(1, qa, 1024) });
    a.connect(qa2, QpAttrUpdate { timeout: Some(14), ..conn(3, qc, 1024) });
    c.connect(qc, QpAttrUpdate { timeout: Some(14), ..conn(1, qa2, 1024) });
    b.mem.set(BASE, &pattern(9, 8192));
    let wr = SendWr { remote_addr: BASE, rkey: b.key, ..send(1, WrOpcode::Read, vec![a.sge(BASE, 8192)]) };
    a.eng.lock().post_send(qa, wr).unwrap();
    let handlers = [&a.eng as &dyn vrnic_packet::PacketHandler, &b.eng, &c.eng];
    let timeout = 4096u64 << 14;
    for r in 0..rounds as u64 {
        if inbound {
            let wr = SendWr {
                remote_addr: BASE + 0x10000,
                rkey: a.key,
                ..send(100 + r, WrOpcode::Write, vec![c.sge(BASE, 32 * 1024)])
            };
            c.eng.lock().post_send(qc, wr).unwrap();
        }
        net.pump(&handlers, 100_000);
        clock.set(clock.now_ns() + timeout + 1);
        for n in [&a, &b, &c] {
            n.eng.lock().poll_timers();
        }
        net.pump(&handlers, 100_000);
    }
    let counters = a.eng.lock().counters();
    let before = a.cqes();
    backlog.release();
    net.pump(&handlers, 100_000);
    let after = a.cqes();
    (counters, before, after, a.mem.get(BASE, 8192) == pattern(9, 8192))
}

/// Four thousand QPs reading at once (perftest `ib_read_bw -q 4096`): each
/// QP's responses wait at the responder behind every other QP's, longer
/// than `retry_cnt + 1` ACK timeouts, while the requester's port receives
/// the others' all along. Those timeouts restart without spending a retry
/// (`rx_held_timeouts`), and once its responses come the READ completes.
/// (Counting them ended the run in RETRY_EXC_ERR, syndrome 0x79, with every
/// retry re-executing the READ at the responder and lengthening the line.)
#[test]
fn a_read_in_line_behind_a_busy_inbound_link_spends_no_retry() {
    let (c, before, after, data) = read_behind_a_backlog(true, 20);
    assert_eq!((c.timeouts, c.retransmissions), (0, 0), "no retry spent while the port received");
    assert!(c.rx_held_timeouts >= 20, "each timeout restarted: {}", c.rx_held_timeouts);
    assert!(before.is_empty(), "no completion yet, no RETRY_EXC_ERR: {before:?}");
    assert_eq!(after.iter().map(|c| c.status).collect::<Vec<_>>(), vec![WcStatus::Success]);
    assert!(data, "the READ's data landed");
}

/// The excuse is bounded: a READ whose responses never come while the port
/// keeps receiving is retried once `RX_HELD_MAX_NS` has passed, and ends in
/// RETRY_EXC_ERR after its retries; with the port quiet no timeout is excused.
#[test]
fn a_read_behind_a_busy_inbound_link_is_retried_past_the_bound() {
    let timeout = 4096u64 << 14;
    let excused = RX_HELD_MAX_NS.div_ceil(timeout);
    let (c, before, _, _) = read_behind_a_backlog(true, excused as usize + 12);
    assert!(c.rx_held_timeouts >= excused - 1 && c.rx_held_timeouts <= excused + 1, "{}", c.rx_held_timeouts);
    assert_eq!(c.timeouts, 8, "retry_cnt 7: eight timeouts past the bound");
    assert_eq!(before.iter().map(|c| c.status).collect::<Vec<_>>(), vec![WcStatus::RetryExcErr]);
    let (c, before, _, _) = read_behind_a_backlog(false, 12);
    assert_eq!((c.rx_held_timeouts, c.timeouts), (0, 8), "a quiet port: every timeout counts");
    assert_eq!(before.iter().map(|c| c.status).collect::<Vec<_>>(), vec![WcStatus::RetryExcErr]);
}
