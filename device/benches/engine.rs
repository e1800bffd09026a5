//! `cargo bench -p vrnic --bench engine`: transport figures for two engine
//! instances, in one process without sockets and over loopback UDP, next to
//! this machine's limits measured in the same run (single-core memcpy
//! bandwidth, raw UDP loopback round trip).

use std::hint::black_box;
use std::net::{Ipv4Addr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vrnic_engine::*;
use vrnic_fabric::{Endpoint, FabricConfig, FabricPoller, InProcNet, PacketHandler, PacketSink, PeerConfig, UdpFabric};
use vrnic_sys::clock::{Clock, ManualClock, MonotonicClock};

const BASE: u64 = 0x1000_0000;
const MEM: usize = 64 << 20;

/// Flat guest memory behind a mutex (the engine copies in and out of it).
struct Mem(Mutex<Vec<u8>>);

impl Mem {
    fn range(&self, addr: u64, len: usize, cap: usize) -> Result<std::ops::Range<usize>, MemFault> {
        let off = addr.checked_sub(BASE).ok_or(MemFault { addr })? as usize;
        if off + len > cap {
            return Err(MemFault { addr });
        }
        Ok(off..off + len)
    }
}

impl GuestMemory for Mem {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let m = self.0.lock().unwrap();
        let r = self.range(addr, buf.len(), m.len())?;
        buf.copy_from_slice(&m[r]);
        Ok(())
    }
    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
        let mut m = self.0.lock().unwrap();
        let r = self.range(addr, buf.len(), m.len())?;
        m[r].copy_from_slice(buf);
        Ok(())
    }
    fn compare_and_swap_u64(&self, addr: u64, e: u64, n: u64) -> Result<u64, MemFault> {
        let mut m = self.0.lock().unwrap();
        let r = self.range(addr, 8, m.len())?;
        let old = u64::from_le_bytes(m[r.clone()].try_into().unwrap());
        if old == e {
            m[r].copy_from_slice(&n.to_le_bytes());
        }
        Ok(old)
    }
    fn fetch_add_u64(&self, addr: u64, a: u64) -> Result<u64, MemFault> {
        let mut m = self.0.lock().unwrap();
        let r = self.range(addr, 8, m.len())?;
        let old = u64::from_le_bytes(m[r.clone()].try_into().unwrap());
        m[r].copy_from_slice(&old.wrapping_add(a).to_le_bytes());
        Ok(old)
    }
}

/// Counts completions: sends and receives.
#[derive(Default)]
struct Count {
    send: AtomicU64,
    recv: AtomicU64,
    errors: AtomicU64,
}

impl CompletionSink for Count {
    fn complete(&self, _: u32, _: u32, c: &Completion) {
        if c.status != WcStatus::Success {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        if c.opcode.is_recv() {
            self.recv.fetch_add(1, Ordering::Release);
        } else {
            self.send.fetch_add(1, Ordering::Release);
        }
    }
    fn event(&self, _: Event) {}
}

struct Node {
    eng: SharedEngine,
    count: Arc<Count>,
    key: u32,
    qp: u32,
    cq: u32,
}

fn node(lid: u16, packets: Arc<dyn PacketSink>, clock: Arc<dyn Clock>) -> Node {
    let count = Arc::new(Count::default());
    let mut e = Engine::new(Limits::default());
    let mem = Arc::new(Mem(Mutex::new(vec![7u8; MEM])));
    e.attach(Io {
        mem,
        packets,
        completions: count.clone(),
        clock,
        local: Endpoint::v4(lid, Ipv4Addr::new(10, 0, 0, lid as u8)),
    });
    let pd = e.alloc_pd(0).unwrap();
    let cq = e.create_cq(22).unwrap();
    let all = Access(Access::LOCAL_WRITE.0 | Access::REMOTE_READ.0 | Access::REMOTE_WRITE.0 | Access::REMOTE_ATOMIC.0);
    let idx = e
        .create_mkey(Mkey {
            variant: 1,
            pd,
            access: all,
            start: BASE,
            length: MEM as u64,
            whole_space: false,
            translation: Translation::Physical,
            free: false,
            uid: 0,
        })
        .unwrap();
    let qp = e
        .create_qp(QpCreate {
            qp_type: QpType::Rc,
            pd,
            send_cq: Some(cq),
            recv_cq: Some(cq),
            srq: None,
            xrcd: None,
            log_sq_size: 14,
            log_rq_size: 14,
            sq_sig_all: true,
            uid: 0,
        })
        .unwrap();
    e.modify_qp(qp, QpTransition::RstToInit, &QpAttrUpdate { access: Some(all), ..Default::default() }).unwrap();
    Node { eng: SharedEngine::new(e), count, key: Mkey::key(idx, 1), qp, cq }
}

fn connect(a: &Node, b: &Node, a_lid: u16, b_lid: u16) {
    for (x, peer, lid) in [(a, b, b_lid), (b, a, a_lid)] {
        let u = QpAttrUpdate {
            dest_qpn: Some(peer.qp),
            path_mtu: Some(Mtu(4096)),
            timeout: Some(14),
            retry_cnt: Some(7),
            rnr_retry: Some(7),
            min_rnr_timer: Some(1),
            max_rd_atomic: Some(16),
            max_dest_rd_atomic: Some(16),
            av: Some(AddressVector { dlid: lid, ..Default::default() }),
            ..Default::default()
        };
        let mut e = x.eng.lock();
        e.modify_qp(x.qp, QpTransition::InitToRtr, &u).unwrap();
        e.modify_qp(x.qp, QpTransition::RtrToRts, &u).unwrap();
    }
}

/// How the benchmark waits: pump an in-process network, or let the fabric threads run.
trait Drive {
    fn a(&self) -> &Node;
    fn b(&self) -> &Node;
    fn wait(&self, cond: &dyn Fn() -> bool);
}

struct InProc {
    net: Arc<InProcNet>,
    a: Node,
    b: Node,
}

impl Drive for InProc {
    fn a(&self) -> &Node {
        &self.a
    }
    fn b(&self) -> &Node {
        &self.b
    }
    fn wait(&self, cond: &dyn Fn() -> bool) {
        while !cond() {
            self.net.pump(&[&self.a.eng as &dyn PacketHandler, &self.b.eng], 1 << 20);
            self.a.eng.lock().poll_timers();
            self.b.eng.lock().poll_timers();
        }
    }
}

struct Udp {
    fa: UdpFabric,
    fb: UdpFabric,
    a: Node,
    b: Node,
}

impl Drive for Udp {
    fn a(&self) -> &Node {
        &self.a
    }
    fn b(&self) -> &Node {
        &self.b
    }
    fn wait(&self, cond: &dyn Fn() -> bool) {
        let t = Instant::now();
        while !cond() {
            if t.elapsed() > Duration::from_secs(60) {
                panic!("udp bench stalled");
            }
            std::thread::yield_now();
        }
    }
}

/// The UDP pair with both sides receiving run-to-completion: the waiting
/// thread polls A's fabric, a helper thread spins on B's.
struct Polled<'a> {
    u: &'a Udp,
    pa: std::cell::RefCell<FabricPoller>,
}

impl Drive for Polled<'_> {
    fn a(&self) -> &Node {
        &self.u.a
    }
    fn b(&self) -> &Node {
        &self.u.b
    }
    fn wait(&self, cond: &dyn Fn() -> bool) {
        let t = Instant::now();
        let mut pa = self.pa.borrow_mut();
        while !cond() {
            pa.poll();
            assert!(t.elapsed() < Duration::from_secs(60), "polled bench stalled");
        }
    }
}

/// Runs `f` with B's fabric polled by a spinning thread.
fn with_b_polled<R>(u: &Udp, f: impl FnOnce(&Polled) -> R) -> R {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        let mut pb = u.fb.poller();
        let done = &done;
        sc.spawn(move || {
            while !done.load(Ordering::Relaxed) {
                pb.poll();
            }
        });
        let r = f(&Polled { u, pa: std::cell::RefCell::new(u.fa.poller()) });
        done.store(true, Ordering::Relaxed);
        r
    })
}

fn inproc() -> InProc {
    let clock = Arc::new(ManualClock::default());
    let net = InProcNet::new(
        &[Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)), Endpoint::v4(2, Ipv4Addr::new(10, 0, 0, 2))],
        &[],
        clock.clone(),
    );
    let a = node(1, net.sink(0), clock.clone());
    let b = node(2, net.sink(1), clock);
    connect(&a, &b, 1, 2);
    InProc { net, a, b }
}

fn udp() -> Udp {
    let clock = Arc::new(MonotonicClock::default());
    let cfg = |gid: &str, port: u16, peers: Vec<PeerConfig>| FabricConfig {
        port,
        bind: "127.0.0.1".into(),
        gid: Some(gid.into()),
        peers,
        socket_buffer: 16 << 20,
        ..Default::default()
    };
    let probe = UdpFabric::bind(&cfg("10.0.0.2", 0, vec![]), 2, clock.clone()).unwrap();
    let bp = probe.local_addr().unwrap().port();
    drop(probe);
    let mut fa = UdpFabric::bind(
        &cfg(
            "10.0.0.1",
            0,
            vec![PeerConfig { lid: Some(2), gid: Some("10.0.0.2".into()), addr: format!("127.0.0.1:{bp}") }],
        ),
        1,
        clock.clone(),
    )
    .unwrap();
    let ap = fa.local_addr().unwrap().port();
    let mut fb = UdpFabric::bind(
        &cfg(
            "10.0.0.2",
            bp,
            vec![PeerConfig { lid: Some(1), gid: Some("10.0.0.1".into()), addr: format!("127.0.0.1:{ap}") }],
        ),
        2,
        clock.clone(),
    )
    .unwrap();
    let a = node(1, fa.sink(), clock.clone());
    let b = node(2, fb.sink(), clock);
    for (n, f) in [(&a, &fa), (&b, &fb)] {
        let w = f.waker();
        n.eng.lock().set_waker(Some(Arc::new(move || w.wake())));
    }
    fa.start(Arc::new(a.eng.clone())).unwrap();
    fb.start(Arc::new(b.eng.clone())).unwrap();
    connect(&a, &b, 1, 2);
    Udp { fa, fb, a, b }
}

fn sge(n: &Node, addr: u64, len: u32) -> Sge {
    Sge { addr, length: len, lkey: n.key }
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p) as usize]
}

/// SEND ping-pong of `size` bytes: returns (p50, p99) round trip in µs.
fn pingpong(d: &dyn Drive, size: u32, iters: usize) -> (f64, f64) {
    let (a, b) = (d.a(), d.b());
    let mut rtts = Vec::with_capacity(iters);
    for i in 0..iters + 100 {
        b.eng.lock().post_recv(b.qp, RecvWr { wr_id: 0, sgl: vec![sge(b, BASE, 4096)] }).unwrap();
        a.eng.lock().post_recv(a.qp, RecvWr { wr_id: 0, sgl: vec![sge(a, BASE, 4096)] }).unwrap();
        let (ra, rb) = (a.count.recv.load(Ordering::Acquire), b.count.recv.load(Ordering::Acquire));
        let t = Instant::now();
        a.eng.lock().post_send(a.qp, SendWr::new(1, WrOpcode::Send, vec![sge(a, BASE + 8192, size)])).unwrap();
        d.wait(&|| b.count.recv.load(Ordering::Acquire) > rb);
        b.eng.lock().post_send(b.qp, SendWr::new(1, WrOpcode::Send, vec![sge(b, BASE + 8192, size)])).unwrap();
        d.wait(&|| a.count.recv.load(Ordering::Acquire) > ra);
        if i >= 100 {
            rtts.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let s0 = a.count.send.load(Ordering::Acquire);
    d.wait(&|| a.count.send.load(Ordering::Acquire) >= s0 && b.count.send.load(Ordering::Acquire) >= s0);
    (percentile(&mut rtts, 0.5), percentile(&mut rtts, 0.99))
}

/// Posts `count` work requests on A with `post(i)`, keeping at most
/// `depth` uncompleted, and waits for the last: seconds taken.
fn pipelined(d: &dyn Drive, count: u64, depth: u64, post: impl Fn(u64)) -> f64 {
    let a = d.a();
    let base = a.count.send.load(Ordering::Acquire);
    let t = Instant::now();
    for i in 0..count {
        d.wait(&|| i - (a.count.send.load(Ordering::Acquire) - base) < depth);
        post(i);
    }
    d.wait(&|| a.count.send.load(Ordering::Acquire) - base == count);
    t.elapsed().as_secs_f64()
}

/// RDMA WRITE of `size` bytes, `count` times, up to `depth` in flight: GB/s.
fn write_bw(d: &dyn Drive, size: u32, count: u64, depth: u64) -> f64 {
    let (a, b) = (d.a(), d.b());
    let secs = pipelined(d, count, depth, |i| {
        let slot = (i % 16) * (2 << 20);
        let wr = SendWr {
            remote_addr: BASE + slot,
            rkey: b.key,
            ..SendWr::new(i, WrOpcode::Write, vec![sge(a, BASE + slot, size)])
        };
        a.eng.lock().post_send(a.qp, wr).unwrap();
    });
    (size as u64 * count) as f64 / secs / 1e9
}

/// 64-byte SENDs, `count` of them, up to `depth` in flight: messages/s.
fn msg_rate(d: &dyn Drive, count: u64, depth: u64) -> f64 {
    let (a, b) = (d.a(), d.b());
    let secs = pipelined(d, count, depth, |i| {
        b.eng.lock().post_recv(b.qp, RecvWr { wr_id: i, sgl: vec![sge(b, BASE, 64)] }).unwrap();
        a.eng.lock().post_send(a.qp, SendWr::new(i, WrOpcode::Send, vec![sge(a, BASE, 64)])).unwrap();
    });
    count as f64 / secs
}

/// 8-byte FETCH_ADDs into B's memory, `count` of them, up to `depth` in
/// flight (the QPs allow 16 outstanding, as ib_atomic_bw runs): ops/s.
fn atomic_rate(d: &dyn Drive, count: u64, depth: u64) -> f64 {
    let (a, b) = (d.a(), d.b());
    let secs = pipelined(d, count, depth, |i| {
        let wr = SendWr {
            remote_addr: BASE + 4096,
            rkey: b.key,
            swap_add: 1,
            ..SendWr::new(i, WrOpcode::FetchAdd, vec![sge(a, BASE + 8192 + (i % 64) * 8, 8)])
        };
        a.eng.lock().post_send(a.qp, wr).unwrap();
    });
    count as f64 / secs
}

/// SEND ping-pong of `size` bytes over UDP with each side's thread
/// receiving run-to-completion (a [`FabricPoller`] each, spinning, like the
/// device's doorbell poller): returns (p50, p99) round trip in µs.
fn polled_pingpong(u: &Udp, size: u32, iters: usize) -> (f64, f64) {
    let (a, b) = (&u.a, &u.b);
    let total = (iters + 100) as u64;
    for n in [a, b] {
        for _ in 0..16 {
            n.eng.lock().post_recv(n.qp, RecvWr { wr_id: 0, sgl: vec![sge(n, BASE, 4096)] }).unwrap();
        }
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    // Read before A's first send: B's worker may still deliver that one.
    let mut seen = b.count.recv.load(Ordering::Acquire);
    std::thread::scope(|sc| {
        // B echoes every message it receives.
        let mut pb: FabricPoller = u.fb.poller();
        let done = &done;
        sc.spawn(move || {
            let t = Instant::now();
            while !done.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(60) {
                pb.poll();
                if b.count.recv.load(Ordering::Acquire) > seen {
                    seen += 1;
                    let mut e = b.eng.lock();
                    e.post_recv(b.qp, RecvWr { wr_id: 0, sgl: vec![sge(b, BASE, 4096)] }).unwrap();
                    e.post_send(b.qp, SendWr::new(1, WrOpcode::Send, vec![sge(b, BASE + 8192, size)])).unwrap();
                }
            }
        });
        let mut pa = u.fa.poller();
        let mut rtts = Vec::with_capacity(iters);
        for i in 0..total {
            let ra = a.count.recv.load(Ordering::Acquire);
            let t = Instant::now();
            a.eng.lock().post_send(a.qp, SendWr::new(1, WrOpcode::Send, vec![sge(a, BASE + 8192, size)])).unwrap();
            while a.count.recv.load(Ordering::Acquire) == ra {
                pa.poll();
                if t.elapsed() > Duration::from_secs(10) {
                    panic!(
                        "polled ping-pong stalled at {i}: A {:?} recv {} send {}\nB {:?} recv {} send {}",
                        a.eng.lock().counters(),
                        a.count.recv.load(Ordering::Acquire),
                        a.count.send.load(Ordering::Acquire),
                        b.eng.lock().counters(),
                        b.count.recv.load(Ordering::Acquire),
                        b.count.send.load(Ordering::Acquire)
                    );
                }
            }
            if i >= 100 {
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
            }
            a.eng.lock().post_recv(a.qp, RecvWr { wr_id: 0, sgl: vec![sge(a, BASE, 4096)] }).unwrap();
        }
        // Let the last ACKs land before the pollers hand back to the workers.
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(20) {
            pa.poll();
        }
        done.store(true, Ordering::Relaxed);
        (percentile(&mut rtts, 0.5), percentile(&mut rtts, 0.99))
    })
}

fn memcpy_gbs() -> f64 {
    let src = vec![1u8; 64 << 20];
    let mut dst = vec![0u8; 64 << 20];
    dst.copy_from_slice(&src);
    let t = Instant::now();
    let reps = 20;
    for _ in 0..reps {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    }
    (reps * src.len()) as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// One small guest-memory access as the data path makes it (a doorbell
/// record, a CQ consumer index): `DmaSpace::read` of 4 bytes through the
/// translation table, over a memfd mapping. ns per access.
fn dma_small_read_ns(n: u64) -> f64 {
    let dma = vrnic_vfio::dma::DmaSpace::new(8);
    let fd = vrnic_sys::memfd("bench-dma", 1 << 20).expect("memfd");
    dma.map(0x10000, 1 << 20, 0, true, true, Some(fd)).expect("map");
    let mut b = [0u8; 4];
    for i in 0..n / 10 {
        dma.read(0x11000 + (i % 64) * 64, &mut b).expect("read");
    }
    let t = Instant::now();
    for i in 0..n {
        dma.read(0x11000 + (i % 64) * 64, &mut b).expect("read");
        black_box(&b);
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// The data path's guest-memory copy: `DmaSpace::write` / `DmaSpace::read`
/// (translation-table lookup, range validation, the copy) over a 64 MiB
/// memfd mapping in 4 KiB packets: GB/s (write, read).
fn dma_space_copy_gbs() -> (f64, f64) {
    let size = 64u64 << 20;
    let dma = vrnic_vfio::dma::DmaSpace::new(8);
    let fd = vrnic_sys::memfd("bench-dma-copy", size).expect("memfd");
    dma.map(0x1_0000_0000, size, 0, true, true, Some(fd)).expect("map");
    let pkt = vec![5u8; 4096];
    let mut back = vec![0u8; 4096];
    let reps = 5;
    let run = |f: &mut dyn FnMut(u64)| {
        for off in (0..size).step_by(4096) {
            f(off);
        }
        let t = Instant::now();
        for _ in 0..reps {
            for off in (0..size).step_by(4096) {
                f(off);
            }
        }
        (reps * size) as f64 / t.elapsed().as_secs_f64() / 1e9
    };
    let w = run(&mut |off| dma.write(0x1_0000_0000 + off, &pkt).expect("write"));
    let r = run(&mut |off| dma.read(0x1_0000_0000 + off, &mut back).expect("read"));
    black_box(&back);
    (w, r)
}

/// The device's guest-memory copy (`sys::volatile_write` / `volatile_read`:
/// volatile words) over 64 MiB in 4 KiB packets, and a volatile byte loop
/// for reference: GB/s (write, read, byte-loop write).
fn dma_copy_gbs() -> (f64, f64, f64) {
    let mut mem = vec![0u8; 64 << 20];
    let p = mem.as_mut_ptr();
    let pkt = vec![5u8; 4096];
    let mut back = vec![0u8; 4096];
    let reps = 5;
    let run = |f: &mut dyn FnMut(usize)| {
        for off in (0..64 << 20).step_by(4096) {
            f(off);
        }
        let t = Instant::now();
        for _ in 0..reps {
            for off in (0..64 << 20).step_by(4096) {
                f(off);
            }
        }
        (reps * (64 << 20)) as f64 / t.elapsed().as_secs_f64() / 1e9
    };
    // SAFETY (all three): off + 4096 <= 64 MiB, inside `mem`, which outlives the closures.
    let w = run(&mut |off| unsafe { vrnic_sys::volatile_write(p.add(off), &pkt) });
    let r = run(&mut |off| unsafe { vrnic_sys::volatile_read(p.add(off), &mut back) });
    let b = run(&mut |off| {
        for (i, v) in pkt.iter().enumerate() {
            // SAFETY: see above.
            unsafe { std::ptr::write_volatile(p.add(off + i), *v) };
        }
    });
    black_box(&back);
    black_box(&mut mem);
    (w, r, b)
}

/// Raw UDP ping-pong between two threads, receiving blocking or spinning
/// on non-blocking receives: (p50, p99) round trip in µs.
fn udp_rtt(iters: usize, spin: bool) -> (f64, f64) {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    a.set_nonblocking(spin).unwrap();
    b.set_nonblocking(spin).unwrap();
    let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let recv = move |s: &UdpSocket, buf: &mut [u8]| loop {
        match s.recv(buf) {
            Ok(n) => return n,
            Err(e) if spin && e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => panic!("udp recv: {e}"),
        }
    };
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        for _ in 0..iters + 100 {
            let n = recv(&b, &mut buf);
            b.send_to(&buf[..n], aa).unwrap();
        }
    });
    let mut buf = [0u8; 64];
    let mut v = Vec::new();
    for i in 0..iters + 100 {
        let t = Instant::now();
        a.send_to(&[0u8; 32], ba).unwrap();
        recv(&a, &mut buf);
        if i >= 100 {
            v.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    echo.join().unwrap();
    (percentile(&mut v, 0.5), percentile(&mut v, 0.99))
}

fn report(name: &str, d: &dyn Drive, lat_iters: usize) {
    if lat_iters > 0 {
        let (p50, p99) = pingpong(d, 32, lat_iters);
        println!("{name:>10}  SEND 32 B round trip      p50 {p50:8.2} µs   p99 {p99:8.2} µs");
    }
    for (size, count) in [(4096u32, 20_000u64), (65536, 4000), (1 << 20, 300)] {
        let gbs = write_bw(d, size, count, 16);
        println!("{name:>10}  RDMA WRITE {:>7} B       {gbs:8.3} GB/s", size);
    }
    let r = msg_rate(d, 200_000, 64);
    println!("{name:>10}  SEND 64 B message rate    {:8.3} M msg/s", r / 1e6);
    let r = atomic_rate(d, 50_000, 128);
    println!("{name:>10}  FETCH_ADD 8 B rate        {:8.3} M op/s (16 outstanding)", r / 1e6);
    let e = (d.a().count.errors.load(Ordering::Relaxed), d.b().count.errors.load(Ordering::Relaxed));
    assert_eq!(e, (0, 0), "error completions during the bench");
    let _ = d.a().cq;
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs us with no args: keep that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let only = std::env::var("VRNIC_BENCH").unwrap_or_default();
    if only == "inproc-only" {
        // For profiling the engine alone.
        report("in-process", &inproc(), 20_000);
        return;
    }
    println!("limits measured now:");
    println!("    memcpy (single core)      {:8.3} GB/s", memcpy_gbs());
    if !quick {
        let (w, r, b) = dma_copy_gbs();
        println!("    guest-memory copy         {w:8.3} GB/s write, {r:.3} GB/s read (volatile words; a volatile byte loop writes {b:.3} GB/s)");
        let (w, r) = dma_space_copy_gbs();
        println!("    DmaSpace copy             {w:8.3} GB/s write, {r:.3} GB/s read (4 KiB packets through the translation table)");
        println!(
            "    guest-memory access       {:8.1} ns per 4 B DmaSpace::read (doorbell record, CQ consumer index)",
            dma_small_read_ns(5_000_000)
        );
    }
    if only == "mem" {
        return;
    }
    let (p50, p99) = udp_rtt(if quick { 200 } else { 20_000 }, false);
    println!("    UDP loopback round trip   p50 {p50:8.2} µs   p99 {p99:8.2} µs (32 B, blocking receives)");
    let (p50, p99) = udp_rtt(if quick { 200 } else { 20_000 }, true);
    println!("    UDP loopback round trip   p50 {p50:8.2} µs   p99 {p99:8.2} µs (32 B, spinning receives)");
    if quick {
        return;
    }
    // VRNIC_BENCH=inproc|udp|rtt picks a part, mem only the limits above (default: all).
    let only = std::env::var("VRNIC_BENCH").unwrap_or_default();
    if only == "rtt" {
        let (p50, p99) = pingpong(&udp(), 32, 5_000);
        println!("    UDP lo  SEND 32 B round trip      p50 {p50:8.2} µs   p99 {p99:8.2} µs");
        return;
    }
    if only.is_empty() || only == "inproc" {
        report("in-process", &inproc(), 20_000);
    }
    if only.is_empty() || only == "udp" {
        let u = udp();
        report("UDP lo", &u, 5_000);
        // The same pair, each side receiving on a spinning thread of its
        // own instead of through its worker's wake-ups.
        let (p50, p99) = polled_pingpong(&u, 32, 20_000);
        println!("{:>10}  SEND 32 B round trip      p50 {p50:8.2} µs   p99 {p99:8.2} µs", "UDP polled");
        with_b_polled(&u, |p| report("UDP polled", p, 0));
        if std::env::var_os("VRNIC_BENCH_COUNTERS").is_some() {
            println!("A {:?}\nB {:?}", u.a.eng.lock().counters(), u.b.eng.lock().counters());
        }
    }
}
