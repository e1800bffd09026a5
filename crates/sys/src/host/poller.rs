//! The UAR poller's idle strategy: spin after a doorbell, then nap with
//! growing naps; while every CPU is busy, spin only after the doorbells of
//! pages whose spins paid before.

use std::time::{Duration, Instant};

use super::idle::{Idle, IdleStrategy, Verdict, Wake};
use super::pressure::CpuPressure;

/// The poller's spin-then-nap schedule.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// The first nap after a spin window; each next one doubles, once
    /// `hot` has passed since the last doorbell that delivered data locally.
    pub first_nap: Duration,
    pub hot: Duration,
    /// Spin this long after the last doorbell before napping.
    pub spin: Duration,
    /// Longest nap within `warm` of the last doorbell...
    pub max_nap: Duration,
    pub warm: Duration,
    /// ...and after it.
    pub idle_nap: Duration,
    /// While every CPU is busy, spin this long after a doorbell of a page
    /// whose doorbells were answered within it before ([`SpinScores`]).
    pub busy_spin: Duration,
}

/// The poller's schedule: spin briefly after activity (a long spin takes the
/// vCPUs' CPU on a small host); after a doorbell whose data this device
/// delivered itself (a local kick: loopback, whichever thread delivered it),
/// nap in short steps for a while, because the next doorbell of a ping-pong
/// comes within that window; then naps double up to `max_nap`, and grow to
/// `idle_nap` once `warm` passes without a doorbell, so an idle device costs
/// almost no CPU. The thread's timer slack is 1 µs so a nap lasts what it
/// asks. The short-nap window opens only after a local delivery: every nap is
/// a context switch taken from a busy vCPU, and a delivery from the fabric
/// kicks the poller anyway. The window is fixed, not derived from the observed
/// doorbell gap, which feeds back on itself. Figures: docs/performance.md.
pub const SCHEDULE: Schedule = Schedule {
    first_nap: Duration::from_micros(10),
    hot: Duration::from_micros(200),
    spin: Duration::from_micros(20),
    max_nap: Duration::from_micros(250),
    warm: Duration::from_millis(100),
    idle_nap: Duration::from_millis(2),
    busy_spin: Duration::from_micros(15),
};

/// Per UAR page: whether spinning after its doorbells pays while every CPU
/// is busy. In one guest's ping-pong on a 2-CPU host the poller shares a
/// CPU with one vCPU: after the doorbell of the process on the *other* CPU
/// the answer comes from the vCPU the poller displaced only once the poller
/// naps, so spinning is waste; after the doorbell of the process on its own
/// CPU's vCPU, the answer comes from the other CPU, which is running, within
/// microseconds, and a spin catches it where a nap would add a wake-up.
/// Each UAR page is one process (one libmlx5 context), so the page tells the
/// two apart without knowing where the vCPUs run. A score in 0..=3 per
/// page, spin at 2 or more; a page below that still gets a spin every
/// `PROBE` doorbells, so a change of placement is relearned.
#[derive(Default)]
struct SpinScores {
    /// (page, score, doorbells since the last probe)
    v: Vec<(u64, u8, u8)>,
}

impl SpinScores {
    const START: u8 = 2;
    const MAX: u8 = 3;
    const PROBE: u8 = 32;

    fn entry(&mut self, page: u64) -> &mut (u64, u8, u8) {
        let i = match self.v.iter().position(|e| e.0 == page) {
            Some(i) => i,
            None => {
                // Pages come and go with processes; a handful at most are live.
                if self.v.len() >= 64 {
                    self.v.remove(0);
                }
                self.v.push((page, Self::START, 0));
                self.v.len() - 1
            }
        };
        &mut self.v[i]
    }

    /// Whether to spin after a doorbell of `page`.
    fn should_spin(&mut self, page: u64) -> bool {
        let e = self.entry(page);
        if e.1 >= Self::START {
            return true;
        }
        e.2 += 1;
        if e.2 >= Self::PROBE {
            e.2 = 0;
            return true;
        }
        false
    }

    fn won(&mut self, page: u64) {
        let e = self.entry(page);
        e.1 = (e.1 + 1).min(Self::MAX);
    }

    fn lost(&mut self, page: u64) {
        let e = self.entry(page);
        e.1 = e.1.saturating_sub(1);
    }
}

/// The poller thread's [`IdleStrategy`]: the [`Schedule`], the per-page
/// [`SpinScores`] and [`CpuPressure`].
pub struct PollerSchedule {
    sched: Schedule,
    pressure: CpuPressure,
    scores: SpinScores,
    last_hit: Instant,
    /// The last doorbell or kick that followed a local delivery.
    last_local: Option<Instant>,
    /// The next nap's length.
    nap: Duration,
    /// The page whose doorbell opened the current busy-CPU spin.
    busy_spin: Option<u64>,
}

impl PollerSchedule {
    /// Opens `/proc/loadavg` (for [`CpuPressure`]): call it before the seccomp filter.
    pub fn new(sched: Schedule) -> PollerSchedule {
        PollerSchedule {
            sched,
            pressure: CpuPressure::default(),
            scores: SpinScores::default(),
            last_hit: Instant::now(),
            last_local: None,
            nap: sched.first_nap,
            busy_spin: None,
        }
    }

    /// For the poller thread itself, once: naps of 10 µs must not become 60
    /// (the default timer slack is 50 µs).
    pub fn thread_setup() {
        let _ = crate::proc::set_timerslack_ns(1000);
    }
}

impl IdleStrategy for PollerSchedule {
    /// A doorbell of UAR page `source`; `local`: a local kick (loopback
    /// delivery) came before it. Returns `Won` when it ends a busy-CPU spin
    /// opened by another page's doorbell.
    fn on_event(&mut self, source: u64, local: bool) -> Option<Verdict> {
        self.last_hit = Instant::now();
        if local {
            self.last_local = Some(self.last_hit);
        }
        // Only another process's doorbell is an answer; one process
        // ringing again (a CQ arm after a post, the next post of a
        // stream) is no verdict on spinning.
        let verdict = self.busy_spin.take().filter(|&p| p != source).map(|p| {
            self.scores.won(p);
            Verdict::Won
        });
        if self.pressure.busy() && self.scores.should_spin(source) {
            self.busy_spin = Some(source);
        }
        self.nap = self.sched.first_nap;
        verdict
    }

    /// A pass found nothing: spin on (one more pass), or nap. `Lost` when
    /// a busy-CPU spin ran out.
    fn on_idle(&mut self) -> (Idle, Option<Verdict>) {
        let since = self.last_hit.elapsed();
        let mut verdict = None;
        if let Some(p) = self.busy_spin {
            if since < self.sched.busy_spin {
                return (Idle::Spin { up_to: self.sched.busy_spin - since }, None);
            }
            self.busy_spin = None;
            self.scores.lost(p);
            verdict = Some(Verdict::Lost);
        } else if since < self.sched.spin && !self.pressure.busy() {
            // The spin window, unless the CPUs are all busy (the vCPUs): then
            // a spin would only take a vCPU's CPU, and the naps start at once.
            return (Idle::Spin { up_to: self.sched.spin - since }, None);
        }
        // Idle: sleep with growing naps so an idle device costs almost no CPU;
        // a kick ends the nap and opens a new spin window.
        (Idle::Sleep(Some(self.nap)), verdict)
    }

    fn on_wake(&mut self, wake: Wake) {
        match wake {
            Wake::Kick { local } | Wake::Event { local, .. } => {
                self.last_hit = Instant::now();
                if local {
                    self.last_local = Some(self.last_hit);
                }
                self.nap = self.sched.first_nap;
            }
            Wake::Timeout { .. } => {
                let since = self.last_hit.elapsed();
                if self.last_local.is_none_or(|t| t.elapsed() >= self.sched.hot) {
                    let cap = if since < self.sched.warm { self.sched.max_nap } else { self.sched.idle_nap };
                    self.nap = (self.nap * 2).min(cap);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page whose spins keep losing stops spinning but is probed every
    /// `PROBE` doorbells; one whose spins win keeps spinning; a win brings a
    /// page that had stopped back.
    #[test]
    fn spin_scores_learn_per_page() {
        let mut s = SpinScores::default();
        assert!(s.should_spin(6) && s.should_spin(7), "new pages start spinning");
        for _ in 0..10 {
            assert!(s.should_spin(7));
            s.won(7);
        }
        s.lost(6);
        s.lost(6);
        let spins = (0..SpinScores::PROBE as usize * 3).filter(|_| s.should_spin(6)).count();
        assert_eq!(spins, 3, "only the probes spin");
        assert!(s.should_spin(7));
        s.won(6);
        s.won(6);
        assert!(s.should_spin(6));
        // The table stays bounded however many pages come and go.
        for p in 100..1000 {
            s.should_spin(p);
        }
        assert!(s.v.len() <= 64);
    }
}
