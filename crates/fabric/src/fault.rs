//! Seeded, deterministic fault injection on a port's packet path: drop,
//! duplicate, reorder, delay, corrupt (the receiver's ICRC check then drops
//! the packet) and ECN-CE marking (the BTH FECN bit, which the ICRC masks, so
//! the responder sends a CNP). Rates are per direction and can be limited to
//! opcode classes. One class is counted, not rolled: `ce_every = N` marks
//! every Nth ECN-capable RoCEv2 frame CE in its IP header (an Ethernet
//! link: what a congested switch does) or sets FECN on every Nth packet (a
//! RoCE-datagram port).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use std::sync::atomic::AtomicU64;

use super::counters::{bump, PortCounters};
use vrnic_wire::bth::{self, Opcode, Transport};
use vrnic_wire::congestion::{self, Ecn};
use vrnic_wire::roce;

/// Where an injector counts what it did: a port's counters, or an
/// Ethernet link's ([`super::ether::EtherCounters`]).
pub trait FaultTally {
    fn fault_dropped(&self) -> &AtomicU64;
    fn fault_duplicated(&self) -> &AtomicU64;
    fn fault_reordered(&self) -> &AtomicU64;
    fn fault_delayed(&self) -> &AtomicU64;
    fn fault_corrupted(&self) -> &AtomicU64;
    /// Packets marked congestion-experienced (`None`: the link cannot mark).
    fn fault_ce_marked(&self) -> Option<&AtomicU64>;
}

/// [`FaultTally`] for a counters struct with the six `fault_*` fields.
macro_rules! fault_tally {
    ($t:ty) => {
        impl $crate::fault::FaultTally for $t {
            fn fault_dropped(&self) -> &std::sync::atomic::AtomicU64 {
                &self.fault_dropped
            }
            fn fault_duplicated(&self) -> &std::sync::atomic::AtomicU64 {
                &self.fault_duplicated
            }
            fn fault_reordered(&self) -> &std::sync::atomic::AtomicU64 {
                &self.fault_reordered
            }
            fn fault_delayed(&self) -> &std::sync::atomic::AtomicU64 {
                &self.fault_delayed
            }
            fn fault_corrupted(&self) -> &std::sync::atomic::AtomicU64 {
                &self.fault_corrupted
            }
            fn fault_ce_marked(&self) -> Option<&std::sync::atomic::AtomicU64> {
                Some(&self.fault_ce_marked)
            }
        }
    };
}
pub(crate) use fault_tally;

fault_tally!(PortCounters);

/// What an injector's packets are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// RoCE datagrams (BTH through ICRC, maybe behind a GRH envelope):
    /// classes apply, corruption spares the ICRC-masked byte, CE marks FECN.
    Roce,
    /// Ethernet frames: corruption flips a bit after the 14-byte Ethernet
    /// header (the payload, so the frame still reaches its queue and a
    /// checksum must catch it); classes and CE marking do not apply.
    Ethernet,
}

/// Bytes of the Ethernet header a frame corruption spares.
const ETH_HEADER_LEN: usize = 14;

/// Opcode classes faults can be limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    Send,
    Write,
    ReadRequest,
    ReadResponse,
    Atomic,
    /// ACKs, NAKs and atomic ACKs.
    Ack,
    Cnp,
}

impl OpClass {
    pub fn of(op: Opcode) -> OpClass {
        if op.transport() == Transport::Cnp {
            return OpClass::Cnp;
        }
        match op.op() {
            0x00..=0x05 | 0x16 | 0x17 => OpClass::Send,
            0x06..=0x0b => OpClass::Write,
            0x0c => OpClass::ReadRequest,
            0x0d..=0x10 => OpClass::ReadResponse,
            0x13 | 0x14 => OpClass::Atomic,
            _ => OpClass::Ack,
        }
    }
}

/// Fault rates (probabilities 0..=1) for one direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct FaultRates {
    pub drop: f64,
    pub duplicate: f64,
    /// Hold a packet back until the next one has passed (or 1 ms).
    pub reorder: f64,
    pub delay: f64,
    /// How long a delayed packet is held, µs.
    pub delay_us: u64,
    /// Flip one bit of an ICRC-protected byte.
    pub corrupt: f64,
    /// Set FECN (congestion experienced).
    pub ecn_ce: f64,
    /// Congestion experienced on every Nth packet, deterministically (0:
    /// never): Ethernet, ECN = CE on every Nth ECN-capable RoCEv2 frame;
    /// RoCE datagrams, FECN on every Nth packet.
    pub ce_every: u64,
    /// Opcode classes the faults apply to; empty means all.
    pub classes: Vec<OpClass>,
}

impl FaultRates {
    pub fn is_none(&self) -> bool {
        self.drop <= 0.0
            && self.duplicate <= 0.0
            && self.reorder <= 0.0
            && self.delay <= 0.0
            && self.corrupt <= 0.0
            && self.ecn_ce <= 0.0
            && self.ce_every == 0
    }
    pub fn validate(&self) -> Result<(), String> {
        for (n, v) in [
            ("drop", self.drop),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
            ("delay", self.delay),
            ("corrupt", self.corrupt),
            ("ecn_ce", self.ecn_ce),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("fault rate {n} = {v} outside 0..=1"));
            }
        }
        Ok(())
    }
}

/// Both directions and the seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    pub seed: u64,
    pub tx: FaultRates,
    pub rx: FaultRates,
}

impl FaultConfig {
    /// Parses the CLI form `dir:kind=rate,...` e.g. `tx:drop=0.05,rx:corrupt=0.01,seed=7,delay_us=200`.
    pub fn parse_cli(s: &str) -> Result<FaultConfig, String> {
        let mut c = FaultConfig::default();
        for item in s.split(',').filter(|i| !i.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| format!("fault {item:?}: want key=value"))?;
            if k == "seed" {
                c.seed = v.parse().map_err(|_| format!("bad seed {v:?}"))?;
                continue;
            }
            let (dirs, kind): (Vec<&mut FaultRates>, &str) = match k.split_once(':') {
                Some(("tx", kind)) => (vec![&mut c.tx], kind),
                Some(("rx", kind)) => (vec![&mut c.rx], kind),
                Some((d, _)) => return Err(format!("fault direction {d:?}: tx or rx")),
                None => (vec![&mut c.tx], k),
            };
            for r in dirs {
                if kind == "delay_us" {
                    r.delay_us = v.parse().map_err(|_| format!("bad delay {v:?}"))?;
                    continue;
                }
                if kind == "ce_every" {
                    r.ce_every = v.parse().map_err(|_| format!("bad ce_every {v:?}"))?;
                    continue;
                }
                let x: f64 = v.parse().map_err(|_| format!("bad rate {v:?}"))?;
                match kind {
                    "drop" => r.drop = x,
                    "duplicate" => r.duplicate = x,
                    "reorder" => r.reorder = x,
                    "delay" => r.delay = x,
                    "corrupt" => r.corrupt = x,
                    "ecn_ce" => r.ecn_ce = x,
                    _ => return Err(format!("fault kind {kind:?}")),
                }
            }
        }
        c.tx.validate()?;
        c.rx.validate()?;
        Ok(c)
    }
}

/// splitmix64: small, seedable, good enough for fault dice.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

const REORDER_HOLD_NS: u64 = 1_000_000;

struct Held {
    due_ns: u64,
    /// Released once this many later packets have passed (reorder), or at `due_ns`.
    after_packets: u32,
    tag: u32,
    bytes: Vec<u8>,
}

/// One direction's injector. `tag` travels with held packets (the route).
pub struct Injector {
    shape: Shape,
    rates: FaultRates,
    rng: Rng,
    held: VecDeque<Held>,
    /// Packets `ce_every` counted so far.
    ce_seen: u64,
}

impl Injector {
    pub fn new(rates: FaultRates, seed: u64) -> Injector {
        Injector::with_shape(Shape::Roce, rates, seed)
    }

    pub fn with_shape(shape: Shape, rates: FaultRates, seed: u64) -> Injector {
        Injector { shape, rates, rng: Rng::new(seed), held: VecDeque::new(), ce_seen: 0 }
    }

    pub fn is_passthrough(&self) -> bool {
        self.rates.is_none() && self.held.is_empty()
    }

    /// Runs `pkt` (BTH through ICRC) through the dice, calling `emit(tag, bytes)`
    /// for whatever leaves now (possibly nothing, possibly twice, possibly a
    /// held packet released behind it).
    pub fn process(
        &mut self,
        tag: u32,
        pkt: &mut [u8],
        now_ns: u64,
        c: &dyn FaultTally,
        emit: &mut dyn FnMut(u32, &[u8]),
    ) {
        if self.rates.is_none() {
            if !self.held.is_empty() {
                emit(tag, pkt);
                self.after_one(now_ns, emit);
            } else {
                emit(tag, pkt);
            }
            return;
        }
        // A datagram with a GRH: its BTH starts after the envelope and GRH.
        let at = if pkt.first() == Some(&vrnic_wire::grh::MARK) {
            vrnic_wire::grh::ENVELOPE_LEN + vrnic_wire::grh::field::HEADER_LEN
        } else {
            0
        };
        let applies = match self.shape {
            Shape::Roce => {
                pkt.len() >= at + bth::field::HEADER_LEN
                    && (self.rates.classes.is_empty() || self.rates.classes.contains(&OpClass::of(Opcode(pkt[at]))))
            }
            Shape::Ethernet => pkt.len() > ETH_HEADER_LEN,
        };
        if !applies {
            emit(tag, pkt);
            self.after_one(now_ns, emit);
            return;
        }
        let r = &self.rates;
        if self.rng.chance(r.drop) {
            bump(c.fault_dropped(), 1);
            return;
        }
        if self.rng.chance(r.corrupt) {
            let i = match self.shape {
                // Any byte from the BTH on but BTH byte 4 (masked by the ICRC).
                Shape::Roce => {
                    let mut i = at + self.rng.below((pkt.len() - at) as u64 - 1) as usize;
                    if i >= at + bth::field::ECN {
                        i += 1;
                    }
                    i
                }
                Shape::Ethernet => ETH_HEADER_LEN + self.rng.below((pkt.len() - ETH_HEADER_LEN) as u64) as usize,
            };
            pkt[i] ^= 1 << self.rng.below(8);
            bump(c.fault_corrupted(), 1);
        }
        if let (Shape::Roce, Some(ce)) = (self.shape, c.fault_ce_marked()) {
            if self.rng.chance(r.ecn_ce) {
                pkt[at + bth::field::ECN] |= bth::field::FECN;
                bump(ce, 1);
            }
        }
        if r.ce_every > 0 {
            self.mark_every(pkt, at, c);
        }
        let r = &self.rates;
        let dup = self.rng.chance(r.duplicate);
        if self.rng.chance(r.delay) {
            bump(c.fault_delayed(), 1);
            self.held.push_back(Held {
                due_ns: now_ns + r.delay_us * 1000,
                after_packets: u32::MAX,
                tag,
                bytes: pkt.to_vec(),
            });
        } else if self.rng.chance(r.reorder) {
            bump(c.fault_reordered(), 1);
            self.held.push_back(Held { due_ns: now_ns + REORDER_HOLD_NS, after_packets: 1, tag, bytes: pkt.to_vec() });
            return;
        } else {
            emit(tag, pkt);
        }
        if dup {
            bump(c.fault_duplicated(), 1);
            emit(tag, pkt);
        }
        self.after_one(now_ns, emit);
    }

    /// `ce_every`: counts the packet if it can be marked and marks every Nth.
    fn mark_every(&mut self, pkt: &mut [u8], at: usize, c: &dyn FaultTally) {
        let Some(ce) = c.fault_ce_marked() else { return };
        match self.shape {
            Shape::Roce => {
                self.ce_seen += 1;
                if self.ce_seen % self.rates.ce_every == 0 {
                    pkt[at + bth::field::ECN] |= bth::field::FECN;
                    bump(ce, 1);
                }
            }
            Shape::Ethernet => {
                let Ok(Some(mut p)) = roce::parse(pkt) else { return };
                if !congestion::frame_ecn(&p).is_some_and(|e| e.is_capable() && e != Ecn::Ce) {
                    return;
                }
                self.ce_seen += 1;
                if self.ce_seen % self.rates.ce_every == 0 && congestion::mark_ce(pkt, &mut p).unwrap_or(false) {
                    bump(ce, 1);
                }
            }
        }
    }

    /// A packet passed: count it against reordered packets and release those due.
    fn after_one(&mut self, now_ns: u64, emit: &mut dyn FnMut(u32, &[u8])) {
        for h in self.held.iter_mut() {
            if h.after_packets != u32::MAX {
                h.after_packets = h.after_packets.saturating_sub(1);
            }
        }
        self.release(now_ns, emit);
    }

    /// Releases held packets that are due.
    pub fn release(&mut self, now_ns: u64, emit: &mut dyn FnMut(u32, &[u8])) {
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].after_packets == 0 || self.held[i].due_ns <= now_ns {
                if let Some(h) = self.held.remove(i) {
                    emit(h.tag, &h.bytes);
                }
            } else {
                i += 1;
            }
        }
    }

    /// When the next held packet falls due.
    pub fn next_due(&self) -> Option<u64> {
        self.held.iter().map(|h| h.due_ns).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(n: u8) -> Vec<u8> {
        let mut p = vec![0u8; 32];
        p[0] = 0x04;
        p[11] = n;
        p
    }

    fn run(rates: FaultRates, seed: u64, n: u8) -> (Vec<Vec<u8>>, PortCounters) {
        let c = PortCounters::default();
        let mut inj = Injector::new(rates, seed);
        let mut out = Vec::new();
        for i in 0..n {
            inj.process(0, &mut pkt(i), i as u64 * 1000, &c, &mut |_, b| out.push(b.to_vec()));
        }
        inj.release(u64::MAX, &mut |_, b| out.push(b.to_vec()));
        (out, c)
    }

    #[test]
    fn passthrough_without_rates() {
        let (out, c) = run(FaultRates::default(), 1, 10);
        assert_eq!(out, (0..10).map(pkt).collect::<Vec<_>>());
        assert_eq!(c.snapshot(), Default::default());
    }

    #[test]
    fn deterministic_and_counted() {
        let rates =
            FaultRates { drop: 0.1, duplicate: 0.1, reorder: 0.1, corrupt: 0.1, ecn_ce: 0.1, ..Default::default() };
        let (a, ca) = run(rates.clone(), 42, 200);
        let (b, cb) = run(rates.clone(), 42, 200);
        assert_eq!(a, b, "same seed, same faults");
        assert_eq!(ca.snapshot(), cb.snapshot());
        let (c, _) = run(rates, 43, 200);
        assert_ne!(a, c, "another seed, other faults");
        let s = ca.snapshot();
        assert!(
            s.fault_dropped > 5
                && s.fault_duplicated > 5
                && s.fault_reordered > 5
                && s.fault_corrupted > 5
                && s.fault_ce_marked > 5,
            "{s:?}"
        );
        assert_eq!(a.len() as u64, 200 - s.fault_dropped + s.fault_duplicated);
        // Every CE-marked packet has FECN; corruption never touches byte 4.
        let fecn = a.iter().filter(|p| p[4] & 0x80 != 0).count() as u64;
        assert!(fecn >= s.fault_ce_marked);
        assert!(a.iter().all(|p| p[4] & 0x7f == 0));
    }

    #[test]
    fn reorder_swaps_neighbours_and_delay_holds() {
        let (out, _) = run(FaultRates { reorder: 1.0, classes: vec![OpClass::Send], ..Default::default() }, 1, 4);
        // Every packet is held until the next passes: with all held, they
        // leave at the next packet (which is itself held) or at the end.
        assert_eq!(out.len(), 4);
        let mut inj = Injector::new(FaultRates { delay: 1.0, delay_us: 5, ..Default::default() }, 1);
        let c = PortCounters::default();
        let mut out = Vec::new();
        inj.process(7, &mut pkt(1), 0, &c, &mut |t, b| out.push((t, b.to_vec())));
        assert!(out.is_empty());
        assert_eq!(inj.next_due(), Some(5000));
        inj.release(4999, &mut |t, b| out.push((t, b.to_vec())));
        assert!(out.is_empty());
        inj.release(5000, &mut |t, b| out.push((t, b.to_vec())));
        assert_eq!(out, vec![(7, pkt(1))]);
    }

    #[test]
    fn classes_limit_faults() {
        let mut ack = pkt(0);
        ack[0] = 0x11;
        let c = PortCounters::default();
        let mut inj = Injector::new(FaultRates { drop: 1.0, classes: vec![OpClass::Ack], ..Default::default() }, 1);
        let mut n = 0;
        inj.process(0, &mut pkt(0), 0, &c, &mut |_, _| n += 1);
        inj.process(0, &mut ack, 0, &c, &mut |_, _| n += 1);
        assert_eq!(n, 1, "the SEND passes, the ACK is dropped");
    }

    #[test]
    fn ce_every_marks_every_nth_ect_roce_v2_frame() {
        use vrnic_wire::roce::{emit, v4_mapped, FrameRepr, NetHdr};
        let frame = |ecn: Ecn| {
            let g = vrnic_wire::grh::Repr {
                traffic_class: ecn.apply(26 << 2),
                hop_limit: 64,
                sgid: v4_mapped([10, 0, 0, 1]),
                dgid: v4_mapped([10, 0, 0, 2]),
                ..Default::default()
            };
            let r = FrameRepr {
                dmac: [2; 6],
                smac: [4; 6],
                vlan: None,
                net: NetHdr::RoceV2Ipv4,
                grh: g,
                udp_sport: 0xc000,
            };
            let mut out = Vec::new();
            emit(&r, &pkt(0), &mut out).unwrap();
            out
        };
        let c = crate::ether::EtherCounters::default();
        let rates = FaultRates { ce_every: 3, ..Default::default() };
        let mut inj = Injector::with_shape(Shape::Ethernet, rates, 1);
        let mut seen = Vec::new();
        for i in 0..9 {
            // Not-ECT frames are neither marked nor counted.
            let mut f = frame(if i % 3 == 1 { Ecn::NotEct } else { Ecn::Ect0 });
            inj.process(0, &mut f, 0, &c, &mut |_, b| seen.push(b.to_vec()));
        }
        let ecn: Vec<_> = seen
            .iter()
            .map(|f| {
                let p = roce::parse(f).unwrap().unwrap();
                assert!(roce::verify_icrc(f, &p).is_ok(), "the ICRC masks the ToS");
                assert_eq!(vrnic_wire::ip::ipv4::checksum(&f[14..34]), 0, "header checksum fixed");
                (congestion::frame_ecn(&p).unwrap(), p.repr.grh.traffic_class >> 2)
            })
            .collect();
        let marked: Vec<_> = ecn.iter().enumerate().filter(|(_, e)| e.0 == Ecn::Ce).map(|(i, _)| i).collect();
        assert_eq!(marked, vec![3, 8], "the 3rd and 6th ECT frames (of 0,2,3,5,6,8)");
        assert!(ecn.iter().all(|e| e.1 == 26), "the DSCP stays");
        assert_eq!(c.fault_ce_marked.load(std::sync::atomic::Ordering::Relaxed), 2);
        // RoCE datagrams: FECN on every Nth packet.
        let (out, pc) = run(FaultRates { ce_every: 4, ..Default::default() }, 1, 8);
        assert_eq!(out.iter().filter(|p| p[4] & 0x80 != 0).count(), 2);
        assert_eq!(pc.snapshot().fault_ce_marked, 2);
        assert_eq!(FaultConfig::parse_cli("rx:ce_every=5").unwrap().rx.ce_every, 5);
        assert!(FaultConfig::parse_cli("rx:ce_every=0.5").is_err());
    }

    #[test]
    fn cli_syntax() {
        let c = FaultConfig::parse_cli("tx:drop=0.05,rx:corrupt=0.01,seed=7,tx:delay_us=200,reorder=0.5").unwrap();
        assert_eq!((c.tx.drop, c.rx.corrupt, c.seed, c.tx.delay_us, c.tx.reorder), (0.05, 0.01, 7, 200, 0.5));
        assert!(FaultConfig::parse_cli("tx:drop=2").is_err());
        assert!(FaultConfig::parse_cli("up:drop=0.1").is_err());
        assert!(FaultConfig::parse_cli("tx:explode=0.1").is_err());
        assert!(FaultConfig::parse_cli("drop").is_err());
    }
}
