//! 802.3x PAUSE and 802.1Qbb PFC frames from the link, and the Ethernet port's flow control around them, as the
//! link's worker runs it (`EtherLink::deliver`): every received frame goes to the pause gate
//! (`vrnic_fabric::ether::PauseGate::receive`: `wire::pfc::mac_control_pdu`, `pfc::Repr::parse`, the
//! per-priority timers), what it does not take to PFC transmit (`RxHold::receive`: a lossless priority's frame
//! waits while the handler has no buffer, XOFF/XON go out), and frames the port sends pass the gate
//! (`PauseGate::transmit`, `release`). The receive policy (PFCC `pfcrx`/`pprx`/`pfctx`), the trust state and
//! DSCP map, the speed and the times come from the input.
//!
//! Checked: no MAC control frame reaches the handler; a pause frame the policy honours pauses its priorities
//! at once for nonzero quanta and resumes them for quanta 0; a pause lasts its quanta and always ends by them
//! (`now + quanta_ns(quanta)`; once the peer has sent an XON, by that or `XON_PEER_HOLD_NS`, whichever is
//! later; and later only while the worker has not drained the medium past that time); once no priority is
//! paused, every frame the gate queued has left or was a counted drop; the frames PFC transmit sends are PFC
//! frames for one priority; what `pfc::Repr` parses re-emits as the same frame.
//!
//! Input: a configuration record, then `[u16 LE len][op][delta ns u32][args..]` records (see `Port::step`).
#![no_main]
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use vrnic_fabric::ether::{
    Classifier, EtherCounters, FrameHandler, Offer, PauseGate, PausePolicy, PrioMap, RxHold, HOLD_FRAMES, NUM_DSCP,
    PORT_SPEED_BPS, XON_PEER_HOLD_NS,
};
use vrnic_fuzz::{records, Bytes};
use vrnic_wire::pfc::{self, quanta_ns, Repr, PRIORITIES};

/// The port's RX path: takes what it has a buffer for (per priority, from the input).
struct Handler {
    classes: Arc<Classifier>,
    buffers: AtomicU8,
    taken: AtomicU64,
}

impl Handler {
    fn check(&self, frame: &[u8]) {
        assert!(pfc::mac_control_pdu(frame).is_none(), "a MAC control frame reached the port");
    }
}

impl FrameHandler for Handler {
    fn receive_frame(&self, frame: &[u8]) {
        self.check(frame);
        self.taken.fetch_add(1, Ordering::Relaxed);
    }
    fn offer_frame(&self, frame: &[u8]) -> Offer {
        self.check(frame);
        let p = self.classes.frame_priority(frame);
        if self.buffers.load(Ordering::Relaxed) & (1 << p) == 0 {
            Offer::NoBuffer
        } else {
            self.taken.fetch_add(1, Ordering::Relaxed);
            Offer::Taken
        }
    }
}

/// A PFC frame the port sent asks for one priority.
fn check_sent_pfc(frame: &[u8]) {
    let pdu = pfc::mac_control_pdu(frame).expect("a MAC control frame");
    match Repr::parse(&pfc::Packet::new_checked(pdu).expect("whole PDU")).expect("parses") {
        Repr::Pfc { enable, .. } => assert_eq!(enable.count_ones(), 1, "one priority per PFC frame"),
        r => panic!("PFC transmit sent {r:?}"),
    }
}

struct Port {
    speed: u64,
    counters: Arc<EtherCounters>,
    gate: PauseGate,
    hold: RxHold,
    handler: Handler,
    policy: PausePolicy,
    now: u64,
    /// The latest `medium_drained` time (`u64::MAX`: never called).
    drained: u64,
    /// When each priority's pause may end at the earliest, and must have ended at the latest, by the frames it
    /// received.
    until_min: [u64; PRIORITIES],
    until: [u64; PRIORITIES],
    /// The peer has ended a pause with quanta 0 (XON).
    xon_seen: bool,
    /// Frames given to the gate to transmit, and those that left it.
    queued: u64,
    sent: Cell<u64>,
}

impl Port {
    fn new(c: &mut Bytes) -> Port {
        let speed = match c.u8() % 4 {
            0 => PORT_SPEED_BPS,
            1 => 25_000_000_000,
            2 => 10_000_000_000,
            _ => 1_000_000_000,
        };
        let policy = PausePolicy { pfc_rx: c.u8(), pause_rx: c.bool(), ..PausePolicy::default() };
        let (pfc_tx, quanta, trust_dscp) = (c.u8(), c.u16(), c.bool());
        let dscp2prio: [u8; NUM_DSCP] = std::array::from_fn(|_| c.u8());
        let classes = Arc::new(Classifier::default());
        classes.set(&PrioMap { trust_dscp, dscp2prio });
        let counters = Arc::new(EtherCounters::default());
        let gate = PauseGate::new(counters.clone(), speed, classes.clone());
        gate.set_policy(policy, 0);
        let hold = RxHold::new(classes.clone(), counters.clone(), quanta, speed);
        hold.set_policy(pfc_tx, [2, 0, 0, 0, 0, 1]);
        let handler = Handler { classes, buffers: AtomicU8::new(c.u8()), taken: AtomicU64::new(0) };
        Port {
            speed,
            counters,
            gate,
            hold,
            handler,
            policy,
            now: 0,
            drained: u64::MAX,
            until_min: [0; PRIORITIES],
            until: [0; PRIORITIES],
            xon_seen: false,
            queued: 0,
            sent: Cell::new(0),
        }
    }

    /// Whether a pause until `until` is over at `now` by the rule the gate documents.
    fn over(&self, until: u64, now: u64) -> bool {
        until <= now && (self.drained == u64::MAX || self.drained >= until)
    }

    /// A frame from the link, as the link's worker delivers it.
    fn receive(&mut self, frame: &[u8]) {
        let now = self.now;
        // What the gate should do with it.
        let asks =
            pfc::mac_control_pdu(frame).and_then(|pdu| Repr::parse(&pfc::Packet::new_unchecked(pdu)).ok()).map(|r| {
                match r {
                    Repr::Pfc { enable, quanta } => (enable & self.policy.pfc_rx, quanta),
                    Repr::Pause { quanta } if self.policy.pause_rx => (0xff, [quanta; PRIORITIES]),
                    Repr::Pause { .. } => (0, [0; PRIORITIES]),
                }
            });
        if let Some(pdu) = pfc::mac_control_pdu(frame) {
            if let Ok(r) = Repr::parse(&pfc::Packet::new_unchecked(pdu)) {
                let f = r.to_frame([2, 0, 0, 0, 0, 9]);
                let again = Repr::parse(&pfc::Packet::new_checked(pfc::mac_control_pdu(&f).unwrap()).unwrap());
                assert_eq!(again, Ok(r), "PAUSE/PFC round trip");
            }
        }
        let taken = self.gate.receive(frame, now);
        assert_eq!(taken, pfc::mac_control_pdu(frame).is_some(), "the gate takes exactly the MAC control frames");
        if let Some((enable, quanta)) = asks {
            self.xon_seen |= (0..PRIORITIES).any(|i| enable & (1 << i) != 0 && quanta[i] == 0);
            for (i, &q) in quanta.iter().enumerate().filter(|&(i, _)| enable & (1 << i) != 0) {
                let d = quanta_ns(q, self.speed);
                let hold = if self.xon_seen && d > 0 { XON_PEER_HOLD_NS } else { 0 };
                self.until_min[i] = now + d;
                self.until[i] = now + d.max(hold);
                // Quanta 0 resumes at once, unless the worker has not yet drained the medium up to now.
                let paused = self.gate.is_paused(i, now);
                assert!(paused || d == 0, "priority {i} not paused by {q} quanta");
                assert!(!paused || d > 0 || !self.over(now, now), "priority {i} still paused after quanta 0");
            }
        }
        if !taken {
            self.hold.receive(frame, now, &self.handler, &mut check_sent_pfc);
        }
    }

    fn check(&self) {
        for i in 0..PRIORITIES {
            if self.gate.is_paused(i, self.now) {
                assert!(
                    !self.over(self.until[i], self.now),
                    "priority {i} paused past {} at {}",
                    self.until[i],
                    self.now
                );
            } else {
                assert!(
                    self.now >= self.until_min[i],
                    "priority {i} resumed before {} at {}",
                    self.until_min[i],
                    self.now
                );
            }
            assert!(self.hold.held(i) <= HOLD_FRAMES);
        }
        if let Some(due) = self.gate.next_due() {
            let at_an_end = (0..PRIORITIES).any(|i| (self.until_min[i]..=self.until[i]).contains(&due));
            assert!(at_an_end, "the gate wakes at {due}, no pause's end");
        }
    }

    fn release(&self) {
        let out = |_: &[u8]| self.sent.set(self.sent.get() + 1);
        self.gate.release(self.now, &mut { out });
        if (0..PRIORITIES).all(|i| !self.gate.is_paused(i, self.now)) {
            let dropped: u64 = self.counters.prio.iter().map(|c| c.tx_pause_dropped.load(Ordering::Relaxed)).sum();
            assert_eq!(self.queued, self.sent.get() + dropped, "nothing stays queued once no priority is paused");
        }
    }

    fn step(&mut self, b: &mut Bytes) {
        let op = b.u8();
        self.now = self.now.saturating_add(b.u32() as u64);
        match op % 7 {
            // A frame from the link.
            0 => self.receive(b.rest()),
            // A well-formed PAUSE (opcode 1) or PFC frame, padded with the rest.
            1 => {
                let kind = b.u8();
                let r = if kind & 1 == 0 {
                    Repr::Pause { quanta: b.u16() }
                } else {
                    Repr::Pfc { enable: b.u8(), quanta: std::array::from_fn(|_| b.u16()) }
                };
                let mut f = r.to_frame([2, 0, 0, 0, 0, 2]);
                if kind & 2 != 0 {
                    f.truncate(14 + r.buffer_len());
                }
                f.extend_from_slice(b.rest());
                self.receive(&f);
            }
            // A frame the port transmits.
            2 => {
                self.queued += 1;
                let out = |_: &[u8]| self.sent.set(self.sent.get() + 1);
                self.gate.transmit(b.rest(), self.now, &mut { out });
            }
            // The worker's pass.
            3 => {
                self.release();
                let _ = self.hold.poll(self.now, &self.handler, &mut check_sent_pfc);
                let _ = self.hold.next_due();
            }
            // A PFCC write.
            4 => {
                self.policy = PausePolicy { pfc_rx: b.u8(), pause_rx: b.bool(), ..PausePolicy::default() };
                self.gate.set_policy(self.policy, self.now);
                // Every pause ends now.
                self.until_min = [0; PRIORITIES];
                self.until = [0; PRIORITIES];
                self.hold.set_policy(b.u8(), [2, 0, 0, 0, 0, 1]);
            }
            // The worker drained the medium `back` ns ago.
            5 => {
                let at = self.now.saturating_sub(b.u32() as u64);
                self.gate.medium_drained(at);
                self.drained = if self.drained == u64::MAX { at } else { self.drained.max(at) };
                let _ = self.gate.lagging(self.now, b.u32() as u64);
            }
            // RQ buffers come and go.
            _ => self.handler.buffers.store(b.u8(), Ordering::Relaxed),
        }
        self.check();
    }
}

fuzz_target!(|data: &[u8]| {
    let mut recs = records(data).into_iter();
    let Some(cfg) = recs.next() else { return };
    let mut p = Port::new(&mut Bytes(cfg));
    for r in recs {
        p.step(&mut Bytes(r));
    }
    // Long after every pause: everything queued has left.
    p.now = p.now.saturating_add(1 << 40);
    p.gate.medium_drained(p.now);
    p.drained = p.now;
    p.release();
    assert!((0..PRIORITIES).all(|i| !p.gate.is_paused(i, p.now)));
});
