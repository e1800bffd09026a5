//! The link worker's pass: the waker ends a wait at once, the handler's
//! deadline shortens it, `flush` follows each receive burst, a dropped link
//! stops at once.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use super::*;

/// Counts the worker's passes; `poll` returns `now + period` when set.
#[derive(Default)]
struct Passes {
    polls: AtomicUsize,
    period_ns: AtomicU64,
    events: Mutex<Vec<&'static str>>,
}

impl FrameHandler for Passes {
    fn receive_frame(&self, _frame: &[u8]) {
        self.events.lock().unwrap().push("rx");
    }
    fn flush(&self) {
        self.events.lock().unwrap().push("flush");
    }
    fn poll(&self, now_ns: u64) -> Option<u64> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        match self.period_ns.load(Ordering::SeqCst) {
            0 => None,
            p => Some(now_ns + p),
        }
    }
}

fn started(cfg: &EtherConfig, period: Duration) -> (EtherLink, Arc<Passes>) {
    let mut l = EtherLink::open(cfg).unwrap();
    let h = Arc::new(Passes::default());
    h.period_ns.store(period.as_nanos() as u64, Ordering::SeqCst);
    l.start(h.clone()).unwrap();
    (l, h)
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn wait_is_the_earliest_deadline() {
    let ms = |n: u64| Duration::from_millis(n);
    assert_eq!(wait_for(1_000, &[None, None]), IDLE_WAIT);
    assert_eq!(wait_for(1_000_000, &[Some(6_000_000), None]), ms(5));
    assert_eq!(wait_for(1_000_000, &[Some(9_000_000), Some(4_000_000)]), ms(3));
    assert_eq!(wait_for(1_000_000, &[None, Some(500)]), Duration::ZERO, "overdue: no wait");
    assert_eq!(wait_for(0, &[None, Some(u64::MAX)]), IDLE_WAIT);
}

/// Wakes from another thread each end the worker's (long) wait promptly.
#[test]
#[cfg_attr(miri, ignore = "starts the link's worker thread (prctl, ppoll), which Miri does not support")]
fn waker_ends_the_wait_at_once() {
    let (link, h) = started(&EtherConfig::default(), Duration::ZERO);
    wait_until("first pass", || h.polls.load(Ordering::SeqCst) >= 1);
    let wake = link.waker();
    let rounds = 10;
    let t0 = Instant::now();
    for _ in 0..rounds {
        // Let the worker settle into its wait, then wake it.
        std::thread::sleep(Duration::from_millis(2));
        let before = h.polls.load(Ordering::SeqCst);
        wake();
        wait_until("woken pass", || h.polls.load(Ordering::SeqCst) > before);
    }
    // Without the wakes each round would take a whole IDLE_WAIT.
    let took = t0.elapsed();
    assert!(took < IDLE_WAIT * rounds / 2, "{rounds} wakes took {took:?}");
    // A wake while the worker is not waiting is not lost.
    let before = h.polls.load(Ordering::SeqCst);
    wake();
    wake();
    wait_until("pass after early wakes", || h.polls.load(Ordering::SeqCst) > before);
    // Dropping the link stops the worker without waiting out IDLE_WAIT.
    let t0 = Instant::now();
    drop(link);
    assert!(t0.elapsed() < IDLE_WAIT, "stop took {:?}", t0.elapsed());
}

/// The handler's deadline makes the worker pass again by then.
#[test]
#[cfg_attr(miri, ignore = "starts the link's worker thread (prctl, ppoll), which Miri does not support")]
fn poll_deadline_shortens_the_wait() {
    let span = IDLE_WAIT * 2;
    let (idle, hi) = started(&EtherConfig::default(), Duration::ZERO);
    let (busy, hb) = started(&EtherConfig::default(), Duration::from_millis(5));
    std::thread::sleep(span);
    let (i, b) = (hi.polls.load(Ordering::SeqCst), hb.polls.load(Ordering::SeqCst));
    drop((idle, busy));
    assert!(i <= 4, "no deadline: about one pass per IDLE_WAIT, got {i}");
    assert!(b >= 20, "5 ms deadlines over {span:?}: got {b} passes");
}

/// Received frames reach the handler and a flush follows each burst.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn flush_follows_each_receive_burst() {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = EtherConfig::default();
    cfg.parse_cli(&format!("udp:local=127.0.0.1:0,remote={}", peer.local_addr().unwrap())).unwrap();
    let (link, h) = started(&cfg, Duration::ZERO);
    let to = link.local_addr().unwrap();
    let mut frame = vec![0xff; 6];
    frame.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x88, 0xb5]);
    frame.resize(60, 7);
    for _ in 0..3 {
        peer.send_to(&frame, to).unwrap();
    }
    wait_until("three frames and a flush", || {
        let e = h.events.lock().unwrap();
        e.iter().filter(|&&x| x == "rx").count() == 3 && e.last() == Some(&"flush")
    });
    let e = h.events.lock().unwrap().clone();
    // Every receive is followed, before the next pass's idle wait, by a flush.
    assert_eq!(e.first(), Some(&"rx"));
    for (i, x) in e.iter().enumerate() {
        if *x == "flush" {
            assert!(i > 0 && e[i - 1] == "rx", "{e:?}");
        }
    }
    drop(link);
}
