//! A deterministic discrete-event simulation of DCQCN (issue 21, item 5): N
//! senders, each a QP with an [`Rp`] and a [`Pacer`] behind its own NIC
//! line rate, share one bottleneck link whose FIFO marks CE like
//! `tc qdisc ... red ... ecn` on the instantaneous queue (at egress) (Kmin, Kmax, Pmax)
//! and drops when its buffer is full. The receiver is an [`Np`]: a CE mark
//! on a delivered packet makes it send a CNP, which reaches the sender's RP
//! after a fixed delay. With `dcqcn` off the CNPs still flow but the senders
//! ignore them (`rp_cnp_ignored`), as with the RP disabled.
//!
//! The marking draws come from a seeded xorshift generator: the same config
//! gives the same run, bit for bit.
//!
//! [`SimConfig::bench_cc`] is the guest bench's path (`guest-tests/run
//! bench-cc`): window-limited flows (ib_write_bw's outstanding messages, the
//! ACK after a round trip), 50 Mbit/s lines, a 30 Mbit/s bottleneck whose RED
//! marks on enqueue on Linux's EWMA of the queue (`sch_red`), senders driven
//! through the live path's [`Limiter`].

#![forbid(unsafe_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use vrnic_cc::{CongStatistics, Limiter, Np, NpParams, Pacer, Rp, RpParams};
use vrnic_wire::congestion::Ecn;

/// RED with ECN on the instantaneous queue (bytes); the marking
/// probability grows linearly from 0 at `kmin` to `pmax` at `kmax`, and is
/// 1 above `kmax`.
#[derive(Debug, Clone, Copy)]
pub struct Red {
    pub kmin: u64,
    pub kmax: u64,
    pub pmax: f64,
}

impl Red {
    pub fn mark_probability(&self, q: u64) -> f64 {
        if q <= self.kmin {
            0.0
        } else if q >= self.kmax {
            1.0
        } else {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        }
    }
}

#[derive(Debug, Clone)]
pub struct SimConfig {
    pub flows: usize,
    /// Bottleneck rate (bits/s).
    pub link_bps: u64,
    /// Each sender's line rate (bits/s).
    pub nic_bps: u64,
    /// Bytes of one packet on the wire.
    pub mtu: u64,
    /// Flow `i` starts at `i * stagger_ns`.
    pub stagger_ns: u64,
    pub duration_ns: u64,
    pub red: Red,
    /// The bottleneck's buffer: a packet that does not fit is dropped.
    pub buffer_bytes: u64,
    /// Sender to bottleneck propagation.
    pub prop_ns: u64,
    /// Receiver to sender: when a CNP reaches the RP after the marked packet left the queue.
    pub cnp_delay_ns: u64,
    pub dcqcn: bool,
    pub rp: RpParams,
    pub np: NpParams,
    pub sample_ns: u64,
    pub seed: u64,
    /// The line rate the RP believes (bits/s; 0: `nic_bps`, as the live path
    /// does: the lower of the port speed and the link's shaper).
    pub rp_line_bps: u64,
    /// Bytes a flow may have unacknowledged (0: unlimited): ib_write_bw's
    /// outstanding messages. An ACK returns `ack_delay_ns` after delivery.
    pub window_bytes: u64,
    pub ack_delay_ns: u64,
    /// Drive the senders through the live path's [`Limiter`] (created on a
    /// CNP, dropped when `advance` says so) instead of a bare `Rp` + `Pacer`.
    pub live_limiter: bool,
    /// RED on Linux's EWMA of the queue (`avg += (q - avg) * 2^-wlog` per
    /// arrival) instead of the instantaneous queue; 0: instantaneous.
    pub red_wlog: u32,
    /// Mark on enqueue (Linux `sch_red`) rather than on egress: the CNP then
    /// waits out the queue.
    pub mark_at_enqueue: bool,
}

impl SimConfig {
    /// `flows` senders at 10 Gb/s into a 10 Gb/s bottleneck, 1086-byte
    /// packets (1 KiB payload), RED Kmin 5 KB / Kmax 200 KB (the DCQCN
    /// paper's thresholds) with Pmax 20%, a 1 MB buffer, flows starting 10 ms
    /// apart; the ConnectX defaults except the two settings that give the
    /// paper's reaction point: `clamp_tgt_rate` (R_T ← R_C on every cut) and
    /// a 55 µs alpha period (`dce_tcp_rtt`). [`SimConfig::firmware_defaults`]
    /// keeps every ConnectX default.
    pub fn standard(flows: usize, dcqcn: bool) -> SimConfig {
        let mut c = SimConfig::firmware_defaults(flows, dcqcn);
        c.rp.clamp_tgt_rate = true;
        c.rp.dce_tcp_rtt = 55;
        c
    }

    /// [`SimConfig::standard`] with every RP/NP parameter at its ConnectX
    /// default (`dce_tcp_rtt` 1 µs, no target clamp on each cut).
    pub fn firmware_defaults(flows: usize, dcqcn: bool) -> SimConfig {
        SimConfig {
            flows,
            link_bps: 10_000_000_000,
            nic_bps: 10_000_000_000,
            mtu: 1086,
            stagger_ns: 10_000_000,
            duration_ns: 10_000_000 * flows as u64 + 90_000_000,
            red: Red { kmin: 5_000, kmax: 200_000, pmax: 0.2 },
            buffer_bytes: 1_000_000,
            prop_ns: 1_000,
            cnp_delay_ns: 4_000,
            dcqcn,
            rp: RpParams::default(),
            np: NpParams::default(),
            sample_ns: 50_000,
            seed: 0x5eed_cc21,
            rp_line_bps: 0,
            window_bytes: 0,
            ack_delay_ns: 0,
            live_limiter: false,
            red_wlog: 0,
            mark_at_enqueue: false,
        }
    }
    /// bench-cc's path (`guest-tests/run bench-cc`, docs/congestion.md): 2
    /// flows at a 50 Mbit/s line (`--eth-rate-mbps 50`, which the RP takes as
    /// its line rate) into a 30 Mbit/s bottleneck with the switch guest's RED
    /// (min 15 KB, max 45 KB, p 0.1, limit 300 KB; Linux's EWMA with Wlog 4,
    /// what `tc red ... burst 24 avpkt 1000` gives; marking on enqueue),
    /// 0.5 ms to the switch and 1.5 ms back (CNP and ACK), 128 KiB
    /// outstanding per flow (ib_write_bw -t 2 -s 65536), 1100-byte frames,
    /// the senders driven through the live [`Limiter`]; 3 s, flows 1 ms apart.
    pub fn bench_cc(dcqcn: bool, rp: RpParams) -> SimConfig {
        let mut c = SimConfig::firmware_defaults(2, dcqcn);
        c.link_bps = 30_000_000;
        c.nic_bps = 50_000_000;
        c.mtu = 1100;
        c.stagger_ns = 1_000_000;
        c.duration_ns = 3_000_000_000;
        c.red = Red { kmin: 15_000, kmax: 45_000, pmax: 0.1 };
        c.red_wlog = 4;
        c.mark_at_enqueue = true;
        c.buffer_bytes = 300_000;
        c.prop_ns = 500_000;
        c.cnp_delay_ns = 1_500_000;
        c.ack_delay_ns = 1_500_000;
        c.window_bytes = 128 * 1024;
        c.live_limiter = true;
        c.rp = rp;
        c.sample_ns = 1_000_000;
        c
    }

    /// DCQCN's time constants scaled to bench-cc's path (ms round trips,
    /// Mbit/s rates; `docs/notes/ccsim-findings.md` on branch wip-ccsim): the
    /// set `guest-tests/run bench-cc` also runs as its "tuned" arm through the
    /// guests' debugfs `cc_params`.
    pub fn bench_cc_tuned() -> RpParams {
        RpParams {
            rpg_time_reset: 2000,
            rpg_ai_rate: 1,
            rpg_hai_rate: 5,
            dce_tcp_rtt: 2000,
            rate_reduce_monitor_period: 2000,
            clamp_tgt_rate: false,
            rate_to_set_on_first_cnp: 50,
            rpg_max_rate: 50,
            rpg_min_rate: 5,
            ..RpParams::default()
        }
    }

    /// When the last flow starts.
    pub fn last_start(&self) -> u64 {
        self.stagger_ns * self.flows.saturating_sub(1) as u64
    }
}

/// The state at one sample time.
#[derive(Debug, Clone)]
pub struct Sample {
    pub t_ns: u64,
    /// Each flow's RP rate (its NIC rate before it starts limiting; 0 before it starts).
    pub rate_bps: Vec<u64>,
    /// Each flow's delivered throughput over the last sample interval.
    pub thr_bps: Vec<u64>,
    pub queue_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct SimResult {
    pub samples: Vec<Sample>,
    /// Bytes each flow got through the bottleneck.
    pub delivered: Vec<u64>,
    pub dropped: u64,
    pub marked: u64,
    pub queue_max: u64,
    pub counters: CongStatistics,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Send(usize),
    Arrive(usize),
    Depart,
    Cnp(usize),
    Ack(usize),
    Tick(usize),
}

struct Sender {
    rp: Rp,
    pacer: Pacer,
    limiter: Option<Limiter>,
    inflight: u64,
    /// The limiter's scheduled timer (one per sender, as the engine's heap entry).
    tick_at: u64,
}

impl Sender {
    fn rate(&self, nic: u64) -> u64 {
        match &self.limiter {
            Some(l) => l.rate().min(nic),
            None => self.rp.rate().min(nic),
        }
    }
}

/// xorshift64*: deterministic marking draws in [0, 1).
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The longest a paced sender sleeps before it looks at its rate again (the
/// RP's timers may have raised it).
const MAX_NAP_NS: u64 = 10_000;

fn tx_ns(bytes: u64, bps: u64) -> u64 {
    (bytes as u128 * 8 * 1_000_000_000).div_ceil(bps.max(1) as u128) as u64
}

pub fn run(cfg: &SimConfig) -> SimResult {
    let n = cfg.flows;
    let rp_line = if cfg.rp_line_bps == 0 { cfg.nic_bps } else { cfg.rp_line_bps };
    let mut senders: Vec<Sender> = (0..n)
        .map(|_| Sender {
            rp: Rp::new(rp_line),
            pacer: Pacer::new(0, cfg.nic_bps, cfg.mtu),
            limiter: None,
            inflight: 0,
            tick_at: u64::MAX,
        })
        .collect();
    let mut avg_q = 0.0f64;
    let mut np = Np::new(cfg.np, true);
    let mut c = CongStatistics::default();
    let mut rng = Rng(cfg.seed | 1);
    let mut heap: BinaryHeap<Reverse<(u64, u64, Ev)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<Reverse<(u64, u64, Ev)>>, t: u64, ev: Ev| {
        seq += 1;
        heap.push(Reverse((t, seq, ev)));
    };
    for i in 0..n {
        push(&mut heap, cfg.stagger_ns * i as u64, Ev::Send(i));
    }
    let mut queue: VecDeque<(usize, bool)> = VecDeque::new();
    let mut q_bytes = 0u64;
    let mut link_busy = false;
    let mut res = SimResult {
        samples: Vec::new(),
        delivered: vec![0; n],
        dropped: 0,
        marked: 0,
        queue_max: 0,
        counters: CongStatistics::default(),
    };
    let mut last_delivered = vec![0u64; n];
    let mut next_sample = cfg.sample_ns.max(1);
    while let Some(Reverse((t, _, ev))) = heap.pop() {
        if t > cfg.duration_ns {
            break;
        }
        while next_sample <= t {
            let rate_bps = (0..n)
                .map(|i| if next_sample < cfg.stagger_ns * i as u64 { 0 } else { senders[i].rate(u64::MAX) })
                .collect();
            let thr_bps = (0..n)
                .map(|i| {
                    ((res.delivered[i] - last_delivered[i]) as u128 * 8 * 1_000_000_000 / cfg.sample_ns as u128) as u64
                })
                .collect();
            last_delivered.clone_from(&res.delivered);
            res.samples.push(Sample { t_ns: next_sample, rate_bps, thr_bps, queue_bytes: q_bytes });
            next_sample += cfg.sample_ns.max(1);
        }
        match ev {
            Ev::Send(i) => {
                let s = &mut senders[i];
                if cfg.window_bytes > 0 && s.inflight + cfg.mtu > cfg.window_bytes {
                    continue; // the ACK wakes it
                }
                let ok = if cfg.live_limiter && cfg.dcqcn {
                    // The line (NIC serialisation) first, then the limiter's pacer.
                    let nic_ok = s.pacer.try_send(t, cfg.mtu);
                    if !nic_ok {
                        Err(s.pacer.next_send_at(t, cfg.mtu).max(t + 1))
                    } else if let Some(l) = s.limiter.as_mut() {
                        match l.admit(t, cfg.mtu) {
                            Ok(()) => Ok(()),
                            Err(at) => {
                                // Give the line tokens back: nothing left.
                                s.pacer = Pacer::new(t, cfg.nic_bps, cfg.mtu);
                                Err(at)
                            }
                        }
                    } else {
                        Ok(())
                    }
                } else {
                    s.rp.advance(t, &cfg.rp);
                    let rate = if cfg.dcqcn { s.rp.rate().min(cfg.nic_bps) } else { cfg.nic_bps };
                    if rate != s.pacer.rate() {
                        s.pacer.set_rate(t, rate);
                    }
                    if s.pacer.try_send(t, cfg.mtu) {
                        s.rp.on_sent(t, cfg.mtu, &cfg.rp);
                        Ok(())
                    } else {
                        Err(s.pacer.next_send_at(t, cfg.mtu).min(t + MAX_NAP_NS).max(t + 1))
                    }
                };
                match ok {
                    Ok(()) => {
                        s.inflight += cfg.mtu;
                        let ser = tx_ns(cfg.mtu, cfg.nic_bps);
                        push(&mut heap, t + ser + cfg.prop_ns, Ev::Arrive(i));
                        push(&mut heap, t + ser, Ev::Send(i));
                    }
                    Err(at) => push(&mut heap, at, Ev::Send(i)),
                }
            }
            Ev::Tick(i) => {
                // The engine's timer heap: run the limiter, drop it once it can go.
                let s = &mut senders[i];
                if t != s.tick_at {
                    continue;
                }
                s.tick_at = u64::MAX;
                if let Some(l) = s.limiter.as_mut() {
                    if !l.advance(t, cfg.rp) {
                        s.limiter = None;
                    } else if let Some(w) = l.next_wake() {
                        s.tick_at = w.max(t + 1);
                        push(&mut heap, s.tick_at, Ev::Tick(i));
                    }
                }
            }
            Ev::Ack(i) => {
                let s = &mut senders[i];
                let was_blocked = cfg.window_bytes > 0 && s.inflight + cfg.mtu > cfg.window_bytes;
                s.inflight = s.inflight.saturating_sub(cfg.mtu);
                if was_blocked {
                    push(&mut heap, t, Ev::Send(i));
                }
            }
            Ev::Arrive(i) => {
                if cfg.red_wlog > 0 {
                    let w = 1.0 / (1u64 << cfg.red_wlog) as f64;
                    avg_q += (q_bytes as f64 - avg_q) * w;
                }
                if q_bytes + cfg.mtu > cfg.buffer_bytes {
                    res.dropped += 1;
                    // RC go-back-N is not modelled: the window slot comes back.
                    push(&mut heap, t + cfg.ack_delay_ns, Ev::Ack(i));
                    continue;
                }
                let qm = if cfg.red_wlog > 0 { avg_q as u64 } else { q_bytes };
                let ce_in = cfg.mark_at_enqueue && rng.next_f64() < cfg.red.mark_probability(qm);
                queue.push_back((i, ce_in));
                q_bytes += cfg.mtu;
                res.queue_max = res.queue_max.max(q_bytes);
                if !link_busy {
                    link_busy = true;
                    push(&mut heap, t + tx_ns(cfg.mtu, cfg.link_bps), Ev::Depart);
                }
            }
            Ev::Depart => {
                let Some((i, ce_in)) = queue.pop_front() else {
                    link_busy = false;
                    continue;
                };
                // Marked on egress from the queue it leaves behind (as the
                // DCQCN paper's switches do): the CNP does not wait out the queue.
                let qm = if cfg.red_wlog > 0 { avg_q as u64 } else { q_bytes };
                let ce = if cfg.mark_at_enqueue { ce_in } else { rng.next_f64() < cfg.red.mark_probability(qm) };
                res.marked += ce as u64;
                q_bytes -= cfg.mtu;
                res.delivered[i] += cfg.mtu;
                if cfg.window_bytes > 0 {
                    push(&mut heap, t + cfg.ack_delay_ns, Ev::Ack(i));
                }
                let ecn = if ce { Ecn::Ce } else { Ecn::Ect0 };
                if np.on_packet(t, i as u32, i as u32, ecn, 0, &mut c).is_some() {
                    push(&mut heap, t + cfg.cnp_delay_ns, Ev::Cnp(i));
                }
                if queue.is_empty() {
                    link_busy = false;
                } else {
                    push(&mut heap, t + tx_ns(cfg.mtu, cfg.link_bps), Ev::Depart);
                }
            }
            Ev::Cnp(i) => {
                if cfg.dcqcn && cfg.live_limiter {
                    let s = &mut senders[i];
                    let l = s.limiter.get_or_insert_with(|| Limiter::new(t, rp_line, cfg.rp));
                    l.on_cnp(t, cfg.rp);
                    if let Some(w) = l.next_wake() {
                        let w = w.max(t + 1);
                        if w < s.tick_at {
                            s.tick_at = w;
                            push(&mut heap, w, Ev::Tick(i));
                        }
                    }
                    c.rp_cnp_handled += 1;
                } else if cfg.dcqcn {
                    senders[i].rp.on_cnp(t, &cfg.rp);
                    c.rp_cnp_handled += 1;
                } else {
                    c.rp_cnp_ignored += 1;
                }
            }
        }
    }
    res.counters = c;
    res
}

/// Jain's fairness index of `x`: (Σx)² / (n·Σx²); 1 for equal shares.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return 1.0;
    }
    s * s / (x.len() as f64 * s2)
}

impl SimResult {
    fn after(&self, from_ns: u64) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(move |s| s.t_ns > from_ns)
    }
    /// Bytes per flow delivered after `from_ns`.
    fn bytes_after(&self, from_ns: u64, sample_ns: u64) -> Vec<f64> {
        let n = self.delivered.len();
        let mut v = vec![0.0; n];
        for s in self.after(from_ns) {
            for (i, r) in s.thr_bps.iter().enumerate() {
                v[i] += *r as f64 * sample_ns as f64 / 8e9;
            }
        }
        v
    }
    /// Jain's index of the flows' throughput after `from_ns`.
    pub fn jain_after(&self, cfg: &SimConfig, from_ns: u64) -> f64 {
        jain(&self.bytes_after(from_ns, cfg.sample_ns))
    }
    /// Delivered bytes after `from_ns` over what the bottleneck could carry.
    pub fn goodput_after(&self, cfg: &SimConfig, from_ns: u64) -> f64 {
        let got: f64 = self.bytes_after(from_ns, cfg.sample_ns).iter().sum();
        let span = self.after(from_ns).count() as f64 * cfg.sample_ns as f64;
        got / (cfg.link_bps as f64 * span / 8e9)
    }
    /// The `p`-th percentile (0..=100) of the sampled queue after `from_ns`.
    pub fn queue_percentile(&self, from_ns: u64, p: f64) -> u64 {
        let mut q: Vec<u64> = self.after(from_ns).map(|s| s.queue_bytes).collect();
        if q.is_empty() {
            return 0;
        }
        q.sort_unstable();
        let k = ((p / 100.0) * (q.len() - 1) as f64).round() as usize;
        q[k.min(q.len() - 1)]
    }
    /// When the flows converged: the end of the last `window_ns` window
    /// (after the last flow started; whole windows only) whose Jain index
    /// was below `bar`; the last start itself if none was. `None` if the
    /// final window is unfair.
    pub fn converged_at(&self, cfg: &SimConfig, window_ns: u64, bar: f64) -> Option<u64> {
        let start = cfg.last_start();
        let per = (window_ns / cfg.sample_ns).max(1) as usize;
        let tail: Vec<&Sample> = self.after(start).collect();
        let mut at = start;
        let mut last_ok = true;
        for w in tail.chunks_exact(per) {
            let n = self.delivered.len();
            let mut v = vec![0.0; n];
            for s in w {
                for (i, r) in s.thr_bps.iter().enumerate() {
                    v[i] += *r as f64;
                }
            }
            last_ok = jain(&v) >= bar;
            if !last_ok {
                at = w.last().map_or(at, |s| s.t_ns);
            }
        }
        last_ok.then_some(at)
    }
}

#[cfg(test)]
mod sim_bench_tests;
#[cfg(test)]
mod sim_tests;
