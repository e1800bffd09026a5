//! PFC transmit on a virtual clock (times passed in), with a handler whose
//! receive queue has as many buffers as the test posts.

use std::sync::Mutex;

use super::*;
use vrnic_wire::pfc::{mac_control_pdu, Packet};

const SPEED: u64 = 100_000_000_000;
const MAC: [u8; 6] = [2, 0, 0, 0, 0, 7];

/// An RQ: `bufs` posted WQEs; what it took (the frames' last bytes).
#[derive(Default)]
struct Rq {
    bufs: Mutex<usize>,
    got: Mutex<Vec<u8>>,
    dropped: Mutex<usize>,
}

impl Rq {
    fn post(&self, n: usize) {
        *self.bufs.lock().unwrap() += n;
    }
    fn got(&self) -> Vec<u8> {
        std::mem::take(&mut *self.got.lock().unwrap())
    }
}

impl FrameHandler for Rq {
    fn receive_frame(&self, frame: &[u8]) {
        if self.offer_frame(frame) == Offer::NoBuffer {
            *self.dropped.lock().unwrap() += 1;
        }
    }
    fn offer_frame(&self, frame: &[u8]) -> Offer {
        let mut b = self.bufs.lock().unwrap();
        if *b == 0 {
            return Offer::NoBuffer;
        }
        *b -= 1;
        self.got.lock().unwrap().push(frame[frame.len() - 1]);
        Offer::Taken
    }
}

fn hold(pfc_tx: u8) -> (RxHold, Arc<EtherCounters>) {
    let c = Arc::new(EtherCounters::default());
    let h = RxHold::new(Arc::new(Classifier::default()), c.clone(), DEFAULT_TX_QUANTA, SPEED);
    h.set_policy(pfc_tx, MAC);
    (h, c)
}

/// A 64-byte frame tagged with PCP `prio`, its last byte `tag`.
fn frame(prio: u8, tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[12..16].copy_from_slice(&[0x81, 0x00, prio << 5, 10]);
    f[16..18].copy_from_slice(&[0x88, 0xb5]);
    f[63] = tag;
    f
}

/// The PFC frames sent, as (enable vector, quanta of `prio`).
fn pfc(out: &[Vec<u8>], prio: usize) -> Vec<(u8, u16)> {
    out.iter()
        .map(|f| {
            assert_eq!(&f[6..12], &MAC, "from the port's MAC");
            match Repr::parse(&Packet::new_unchecked(mac_control_pdu(f).expect("a MAC control frame"))).unwrap() {
                Repr::Pfc { enable, quanta } => (enable, quanta[prio]),
                r => panic!("not PFC: {r:?}"),
            }
        })
        .collect()
}

#[test]
fn no_buffer_on_a_lossless_priority_pauses_the_peer_holds_in_order_and_sends_xon() {
    let (h, c) = hold(1 << 3);
    let rq = Rq::default();
    let mut out = Vec::new();
    let mut send = |f: &[u8]| out.push(f.to_vec());
    rq.post(1);
    h.receive(&frame(3, 1), 0, &rq, &mut send);
    assert_eq!(rq.got(), vec![1], "a buffer: delivered at once");
    h.receive(&frame(3, 2), 1_000, &rq, &mut send);
    h.receive(&frame(3, 3), 2_000, &rq, &mut send);
    assert_eq!(rq.got(), Vec::<u8>::new());
    assert_eq!(h.held(3), 2, "held, not dropped");
    assert_eq!(pfc(&out, 3), vec![(1 << 3, 0xffff)], "one XOFF for priority 3");
    out.clear();
    // the refresh: half of 0xffff quanta at 100 Gb/s (335.5 us), before the first retry
    let refresh = quanta_ns(0xffff, SPEED) / 2;
    assert!(refresh < RETRY_NS);
    assert_eq!(h.next_due(), Some(1_000 + refresh));
    assert!(!h.poll(1_000 + refresh, &rq, &mut |f| out.push(f.to_vec())));
    assert_eq!(pfc(&out, 3), vec![(1 << 3, 0xffff)], "XOFF refreshed while frames wait");
    out.clear();
    assert_eq!(h.next_due(), Some(1_000 + RETRY_NS));
    // nothing posted: the retry finds no buffer
    assert!(!h.poll(1_000 + RETRY_NS, &rq, &mut |f| out.push(f.to_vec())));
    assert!(out.is_empty() && h.held(3) == 2);
    // one buffer: the oldest goes, the pause stays
    rq.post(1);
    let t = 1_000 + 2 * RETRY_NS;
    assert!(h.poll(t, &rq, &mut |f| out.push(f.to_vec())));
    assert_eq!((rq.got(), h.held(3)), (vec![2], 1));
    assert!(pfc(&out, 3).iter().all(|&(_, q)| q == 0xffff), "the pause stays (refreshed)");
    let refreshes = out.len() as u64;
    out.clear();
    // a frame arriving meanwhile queues behind, even with a buffer there
    rq.post(5);
    h.receive(&frame(3, 4), t + 1, &rq, &mut |f| out.push(f.to_vec()));
    assert_eq!(rq.got(), Vec::<u8>::new(), "order kept");
    assert!(h.poll(t + RETRY_NS, &rq, &mut |f| out.push(f.to_vec())));
    assert_eq!(rq.got(), vec![3, 4]);
    let sent = pfc(&out, 3);
    assert_eq!(sent.last(), Some(&(1 << 3, 0)), "XON when the buffer is empty: {sent:?}");
    assert_eq!(h.next_due(), None);
    let p3 = c.prio[3].snapshot();
    assert_eq!(p3.tx_pause, 2 + refreshes + sent.len() as u64, "XOFF, its refreshes, XON");
    assert_eq!(p3.tx_pause_duration_us, (t + RETRY_NS - 1_000) / 1000);
    assert_eq!(c.prio[3].tx_pause_transition.load(Ordering::Relaxed), 1);
    assert_eq!(c.prio[3].rx_held.load(Ordering::Relaxed), 3);
    assert_eq!((p3.rx_discards, *rq.dropped.lock().unwrap()), (0, 0), "nothing lost");
}

#[test]
fn other_priorities_and_untagged_frames_are_not_held() {
    let (h, c) = hold(1 << 3);
    let rq = Rq::default();
    let mut out = Vec::new();
    h.receive(&frame(0, 1), 0, &rq, &mut |f| out.push(f.to_vec()));
    let mut untagged = frame(0, 2);
    untagged.drain(12..16);
    h.receive(&untagged, 0, &rq, &mut |f| out.push(f.to_vec()));
    assert_eq!(*rq.dropped.lock().unwrap(), 2, "dropped by the RQ as before");
    assert!(out.is_empty() && h.next_due().is_none());
    assert_eq!(c.prio[0].snapshot().tx_pause, 0);
}

#[test]
fn a_full_receive_buffer_drops_and_counts() {
    let (h, c) = hold(1 << 5);
    let rq = Rq::default();
    let mut out = Vec::new();
    for i in 0..HOLD_FRAMES + 3 {
        h.receive(&frame(5, i as u8), i as u64, &rq, &mut |f| out.push(f.to_vec()));
    }
    assert_eq!(h.held(5), HOLD_FRAMES);
    assert_eq!(c.prio[5].snapshot().rx_discards, 3);
    assert_eq!(pfc(&out, 5).len(), 1, "one XOFF, not one per frame");
}

#[test]
fn turning_pfctx_off_hands_the_held_frames_over_and_sends_xon() {
    let (h, c) = hold(1 << 3);
    let rq = Rq::default();
    let mut out = Vec::new();
    h.receive(&frame(3, 1), 0, &rq, &mut |f| out.push(f.to_vec()));
    h.receive(&frame(3, 2), 0, &rq, &mut |f| out.push(f.to_vec()));
    out.clear();
    rq.post(1);
    h.set_policy(0, MAC);
    assert!(h.poll(10, &rq, &mut |f| out.push(f.to_vec())));
    assert_eq!((rq.got(), *rq.dropped.lock().unwrap()), (vec![1], 1), "an ordinary receive: one fits, one drops");
    assert_eq!(pfc(&out, 3), vec![(1 << 3, 0)]);
    assert_eq!((h.held(3), h.next_due()), (0, None));
    assert_eq!(c.prio[3].snapshot().tx_pause, 2);
}

#[test]
fn dscp_trust_makes_an_untagged_ip_frame_lossless_by_its_dscp() {
    let classes = Arc::new(Classifier::default());
    let c = Arc::new(EtherCounters::default());
    let h = RxHold::new(classes.clone(), c.clone(), 0x100, SPEED);
    h.set_policy(1 << 3, MAC);
    let mut ip = vec![0u8; 64];
    ip[12..16].copy_from_slice(&[0x08, 0x00, 0x45, 26 << 2]);
    let rq = Rq::default();
    let mut out = Vec::new();
    h.receive(&ip, 0, &rq, &mut |f| out.push(f.to_vec()));
    assert_eq!((h.held(3), h.held(0), *rq.dropped.lock().unwrap()), (0, 0, 1), "PCP trust: priority 0, dropped");
    let mut m = crate::ether::PrioMap { trust_dscp: true, ..Default::default() };
    m.dscp2prio[26] = 3;
    classes.set(&m);
    h.receive(&ip, 0, &rq, &mut |f| out.push(f.to_vec()));
    assert_eq!(h.held(3), 1, "DSCP 26 -> priority 3: held");
    assert_eq!(pfc(&out, 3), vec![(1 << 3, 0x100)], "the configured quanta");
}
