//! Link-level flow control (`credit.rs`) between two ports of one process:
//! FCP bytes, the modulo-2^32 credit check, holding and releasing, the
//! resynchronisation a lost packet needs, a stalled peer's queue discarded.

use std::sync::{Arc, Mutex};

use super::counters::PortCounters;
use super::credit::*;
use super::link::Link;
use super::route::Route;
use vrnic_sys::clock::{Clock, ManualClock};

/// A link that records what it was given.
#[derive(Default)]
struct Wire(Mutex<Vec<(Route, Vec<u8>)>>);
impl Link for Wire {
    fn transmit(&self, route: Route, d: &[u8]) {
        self.0.lock().unwrap().push((route, d.to_vec()));
    }
}
impl Wire {
    fn take(&self) -> Vec<(Route, Vec<u8>)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn fcps(w: &[(Route, Vec<u8>)]) -> Vec<Fcp> {
    w.iter().filter_map(|(_, d)| Fcp::parse(d)).collect()
}

#[test]
fn fcp_bytes_round_trip_and_are_told_from_transport_packets() {
    let f = Fcp { flags: Fcp::REQUEST, fctbs: 0xdead_beef, fccl: 7 };
    let b = f.emit();
    assert_eq!(Fcp::parse(&b), Some(f));
    // A BTH with the same first byte but another length, or without the tag, is not one.
    assert_eq!(Fcp::parse(&b[..15]), None);
    let mut t = b;
    t[13] ^= 1;
    assert_eq!(Fcp::parse(&t), None);
}

#[test]
fn a_sender_holds_what_has_no_credit_and_sends_it_when_credit_comes() {
    let clock = Arc::new(ManualClock::default());
    let window = 64 << 10;
    let c = Credits::new(1, window, clock.clone());
    let (tap, raw, counters) = (Wire::default(), Wire::default(), PortCounters::default());
    let pkt = vec![0u8; 4096];
    let per = blocks(pkt.len());
    let fit = blocks(window) / per;
    for _ in 0..fit + 5 {
        c.transmit(0, &pkt, &tap, &raw, &counters);
    }
    assert_eq!(tap.take().len() as u32, fit, "what the window allows leaves");
    assert_eq!(c.queued(), 5);
    assert!(!c.ready(0, &raw, &counters), "a held route is not ready");
    let asked = fcps(&raw.take());
    assert_eq!(asked.len(), 1, "one request when the route starts holding");
    assert_eq!((asked[0].flags, asked[0].fctbs), (Fcp::REQUEST, fit * per));
    // The receiver consumed everything: it grants its window beyond what it received.
    let grant = Fcp { flags: 0, fctbs: 0, fccl: (fit * per).wrapping_add(blocks(window)) };
    c.on_fcp(0, grant, &tap, &raw, &counters);
    assert_eq!(tap.take().len(), 5, "the queue leaves, in order");
    assert_eq!(c.queued(), 0);
    assert!(c.pass(&tap, &raw, &counters), "the held sender is released");
    assert!(c.ready(0, &raw, &counters));
}

#[test]
fn credit_wraps_modulo_2_32() {
    let clock = Arc::new(ManualClock::default());
    let c = Credits::new(1, 64 << 10, clock);
    let (tap, raw, counters) = (Wire::default(), Wire::default(), PortCounters::default());
    // Both counters just below the wrap: the grant ahead of them still reads as credit.
    c.on_fcp(0, Fcp { flags: 0, fctbs: 0, fccl: u32::MAX - 10 + blocks(64 << 10) }, &tap, &raw, &counters);
    // (the receiver side resynchronised to fctbs 0: nothing was received)
    let d = vec![0u8; 100];
    for _ in 0..3 {
        c.transmit(0, &d, &tap, &raw, &counters);
    }
    assert_eq!(tap.take().len(), 3);
    assert!(c.ready(0, &raw, &counters));
}

#[test]
fn a_receiver_grants_what_it_consumed_and_resynchronises_on_a_request() {
    let clock = Arc::new(ManualClock::default());
    let window = 64 << 10;
    let c = Credits::new(1, window, clock);
    let (tap, raw, counters) = (Wire::default(), Wire::default(), PortCounters::default());
    // Two packets: far from using half the grant, no FCP yet (one per
    // packet would wake the sender's receiving thread per packet).
    c.received(0, 4096);
    c.received(0, 4096);
    assert!(!c.pass(&tap, &raw, &counters));
    assert!(fcps(&raw.take()).is_empty());
    // Past half of the window: the next pass grants the window again beyond what arrived.
    let half = blocks(window) / 2 / blocks(4096) + 1;
    for _ in 2..half {
        c.received(0, 4096);
    }
    assert!(!c.pass(&tap, &raw, &counters));
    let sent = fcps(&raw.take());
    assert_eq!(sent, vec![Fcp { flags: 0, fctbs: 0, fccl: half * blocks(4096) + blocks(window) }]);
    assert!(fcps(&{
        c.pass(&tap, &raw, &counters);
        raw.take()
    })
    .is_empty());
    // The sender says it sent three: one was lost on the way. ABR takes its
    // FCTBS, so the lost packet's credit comes back, and a request is answered.
    let fctbs = 3 * blocks(4096);
    c.on_fcp(0, Fcp { flags: Fcp::REQUEST, fctbs, fccl: 0 }, &tap, &raw, &counters);
    assert_eq!(fcps(&raw.take()), vec![Fcp { flags: 0, fctbs: 0, fccl: fctbs + blocks(window) }]);
}

#[test]
fn a_peer_that_grants_nothing_has_its_queue_discarded_after_the_stall_time() {
    let clock = Arc::new(ManualClock::default());
    let window = 16 << 10;
    let c = Credits::new(1, window, clock.clone());
    let (tap, raw, counters) = (Wire::default(), Wire::default(), PortCounters::default());
    let pkt = vec![0u8; 4096];
    for _ in 0..10 {
        c.transmit(0, &pkt, &tap, &raw, &counters);
    }
    assert!(c.queued() > 0 && !c.ready(0, &raw, &counters));
    raw.take();
    // It asks again every RETRY_NS while held...
    clock.set(clock.now_ns() + RETRY_NS);
    assert_eq!(c.next_due(), Some(clock.now_ns()));
    assert!(!c.pass(&tap, &raw, &counters));
    assert_eq!(fcps(&raw.take()).iter().filter(|f| f.flags == Fcp::REQUEST).count(), 1);
    // ...and gives up on the queue after STALL_NS: counted, the senders go on.
    let queued = c.queued() as u64;
    clock.set(clock.now_ns() + STALL_NS);
    assert!(c.pass(&tap, &raw, &counters));
    assert_eq!(c.queued(), 0);
    assert_eq!(counters.snapshot().fc_discards, queued);
    assert!(c.ready(0, &raw, &counters));
}
