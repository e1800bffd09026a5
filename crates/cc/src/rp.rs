//! The DCQCN reaction point of one QP (Zhu et al., SIGCOMM 2015, with the
//! ConnectX parameter set of [`RpParams`]): current rate R_C, target rate
//! R_T and alpha; a CNP cuts R_C by alpha/2 (at most once per
//! `rate_reduce_monitor_period`), alpha rises by the EWMA gain at each CNP
//! and decays once per `dce_tcp_rtt` period without one (DCQCN §5.4 of
//! the reference), and the rate climbs back by a timer
//! (`rpg_time_reset`) and a byte counter (`rpg_byte_reset`) through fast
//! recovery, additive and hyper increase.
//!
//! Time is injected (`now` in ns, monotonic); nothing here reads a clock.
//! A QP that never saw a CNP has no limiter ([`Rp::limited`] false) and
//! sends at line rate; the limiter is released once the rate is back at the
//! line rate. With `rpg_max_rate` below the line rate a limited QP stays
//! capped at it (a limiter with nothing to time). Every parameter value is accepted (the guest writes them): the
//! arithmetic saturates and clamps, it never panics.

use super::params::{mbps, us, RpParams};

/// alpha's fixed-point one (the firmware's unit, 1/1024).
pub const ALPHA_ONE: u64 = 1024;
/// Extra fractional bits alpha is kept with: the EWMA's small steps
/// (5/1024 of a small alpha per period with the defaults) are not lost to
/// integer division.
const ALPHA_FRAC: u32 = 10;
/// alpha's one in the internal unit (2^-20).
const ALPHA_ONE_FINE: u64 = ALPHA_ONE << ALPHA_FRAC;

/// `a` (2^-20 units) times `(g/1024)^n`, rounded (exponentiation by
/// squaring in 2^-32 fixed point: O(log n) for any number of periods).
fn decay(a: u64, g: u64, mut n: u64) -> u64 {
    const ONE: u128 = 1 << 32;
    let mut base: u128 = (g.min(ALPHA_ONE) as u128) << 22;
    let mut f: u128 = ONE;
    while n > 0 && f > 0 {
        if n & 1 == 1 {
            f = (f * base + ONE / 2) >> 32;
        }
        base = (base * base + ONE / 2) >> 32;
        n >>= 1;
    }
    ((a as u128 * f + ONE / 2) >> 32) as u64
}

/// One QP's DCQCN state.
#[derive(Debug, Clone)]
pub struct Rp {
    /// The port's line rate (bits/s).
    line: u64,
    limited: bool,
    rc: u64,
    rt: u64,
    /// alpha in 2^-20 units ([`Rp::alpha`] gives the firmware's 1/1024).
    alpha: u64,
    /// A CNP arrived in the current `dce_tcp_rtt` period (no decay at its end).
    cnp_in_period: bool,
    next_alpha: u64,
    /// A CNP is waiting for the monitor period to end.
    cut_pending: bool,
    last_cut: Option<u64>,
    next_timer: u64,
    bytes: u64,
    t_count: u32,
    b_count: u32,
    timer_inc_since_cut: bool,
}

/// What an RP did with a CNP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CnpOutcome {
    /// The rate was cut now.
    Cut,
    /// Within the monitor period of the last cut: the cut happens when it ends.
    Deferred,
}

impl Rp {
    /// A QP on a port of `line_bps`, without a limiter.
    pub fn new(line_bps: u64) -> Rp {
        let line = line_bps.max(1);
        Rp {
            line,
            limited: false,
            rc: line,
            rt: line,
            alpha: 0,
            cnp_in_period: false,
            next_alpha: 0,
            cut_pending: false,
            last_cut: None,
            next_timer: 0,
            bytes: 0,
            t_count: 0,
            b_count: 0,
            timer_inc_since_cut: false,
        }
    }

    /// The most the QP may send at: `rpg_max_rate` (0: the line rate), never
    /// above the line rate.
    fn cap(&self, p: &RpParams) -> u64 {
        if p.rpg_max_rate == 0 {
            self.line
        } else {
            mbps(p.rpg_max_rate).min(self.line)
        }
    }
    fn floor(&self, p: &RpParams) -> u64 {
        mbps(p.rpg_min_rate).clamp(1, self.cap(p))
    }

    /// The rate the QP may send at (bits/s).
    pub fn rate(&self) -> u64 {
        self.rc
    }
    pub fn target_rate(&self) -> u64 {
        self.rt
    }
    /// alpha in 1/1024 units (rounded).
    pub fn alpha(&self) -> u64 {
        (self.alpha + (1 << (ALPHA_FRAC - 1))) >> ALPHA_FRAC
    }
    /// A limiter is allocated (a CNP came and the rate is not back at the
    /// line rate).
    pub fn limited(&self) -> bool {
        self.limited
    }

    /// Limited, at the cap (`rpg_max_rate` below the line rate) and with no
    /// cut pending: nothing left to time until the next CNP.
    fn at_cap(&self, p: &RpParams) -> bool {
        let cap = self.cap(p);
        self.limited && !self.cut_pending && self.rc >= cap && self.rt >= cap
    }

    /// α ← (1 − g)·α + g (firmware units: (dce_tcp_g·α + (1024 −
    /// dce_tcp_g)·1024) / 1024), rounded.
    fn alpha_up(&mut self, p: &RpParams) {
        let g = (p.dce_tcp_g as u64).min(ALPHA_ONE);
        self.alpha = (g * self.alpha + (ALPHA_ONE - g) * ALPHA_ONE_FINE + ALPHA_ONE / 2) / ALPHA_ONE;
    }

    /// When [`Rp::advance`] next changes the rate: the rate-increase timer,
    /// or the end of the monitor period of a deferred cut. `None` when not
    /// limited or held at the cap. (alpha's per-`dce_tcp_rtt` decay is
    /// caught up lazily.)
    pub fn next_event(&self, p: &RpParams) -> Option<u64> {
        if !self.limited || self.at_cap(p) {
            return None;
        }
        let cut = match (self.cut_pending, self.last_cut) {
            (true, Some(t)) => t.saturating_add(us(p.rate_reduce_monitor_period)),
            _ => u64::MAX,
        };
        Some(self.next_timer.min(cut))
    }

    /// A CNP for this QP arrived at `now`.
    pub fn on_cnp(&mut self, now: u64, p: &RpParams) -> CnpOutcome {
        self.advance(now, p);
        if !self.limited {
            self.limited = true;
            let first = if p.rate_to_set_on_first_cnp == 0 { self.cap(p) } else { mbps(p.rate_to_set_on_first_cnp) };
            self.rc = first.clamp(self.floor(p), self.cap(p));
            self.rt = self.rc;
            self.alpha = (p.initial_alpha_value as u64).min(ALPHA_ONE) << ALPHA_FRAC;
            self.next_alpha = now.saturating_add(us(p.dce_tcp_rtt).max(1));
            self.cnp_in_period = false;
            self.timer_inc_since_cut = true; // the first cut sets R_T = R_C
            self.cut(now, p);
            return CnpOutcome::Cut;
        }
        self.cnp_in_period = true;
        let period = us(p.rate_reduce_monitor_period);
        // The cut takes alpha as it was; alpha then rises at the CNP (the
        // paper's order: R_T ← R_C, R_C ← R_C·(1 − α/2), α ← (1 − g)·α + g).
        let o = match self.last_cut {
            Some(t) if now < t.saturating_add(period) => {
                self.cut_pending = true;
                CnpOutcome::Deferred
            }
            _ => {
                self.cut(now, p);
                CnpOutcome::Cut
            }
        };
        self.alpha_up(p);
        o
    }

    fn cut(&mut self, now: u64, p: &RpParams) {
        if p.clamp_tgt_rate || (p.clamp_tgt_rate_after_time_inc && self.timer_inc_since_cut) {
            self.rt = self.rc;
        }
        let gd = p.rpg_gd.min(63) as u64;
        let dec = ((self.rc as u128 * self.alpha as u128) >> (gd + ALPHA_FRAC as u64)).min(self.rc as u128) as u64;
        let keep = (self.rc as u128 * p.rpg_min_dec_fac.min(100) as u128 / 100) as u64;
        self.rc = self.rc.saturating_sub(dec).max(keep).max(self.floor(p)).min(self.cap(p));
        self.cut_pending = false;
        self.last_cut = Some(now);
        self.t_count = 0;
        self.b_count = 0;
        self.bytes = 0;
        self.timer_inc_since_cut = false;
        self.next_timer = now.saturating_add(us(p.rpg_time_reset).max(1));
    }

    /// `n` bytes left the QP (the byte counter).
    pub fn on_sent(&mut self, now: u64, n: u64, p: &RpParams) {
        self.advance(now, p);
        if !self.limited || p.rpg_byte_reset == 0 {
            return;
        }
        self.bytes = self.bytes.saturating_add(n);
        let reset = p.rpg_byte_reset as u64;
        // A huge send counts as a bounded number of expirations.
        let mut left = 64;
        while self.bytes >= reset && left > 0 && self.limited {
            self.bytes -= reset;
            self.b_count = self.b_count.saturating_add(1);
            self.increase(p);
            left -= 1;
        }
        if left == 0 {
            self.bytes %= reset;
        }
    }

    /// Runs the alpha and rate-increase timers and a deferred cut up to `now`.
    pub fn advance(&mut self, now: u64, p: &RpParams) {
        if !self.limited {
            return;
        }
        // alpha: at the end of each dce_tcp_rtt period, decay if no CNP came
        // in it (a CNP raised it when it came); k idle periods at once.
        let step = us(p.dce_tcp_rtt).max(1);
        if now >= self.next_alpha {
            let periods = (now - self.next_alpha) / step + 1;
            let idle = if self.cnp_in_period { periods - 1 } else { periods };
            self.cnp_in_period = false;
            self.alpha = decay(self.alpha, p.dce_tcp_g as u64, idle);
            self.next_alpha = self.next_alpha.saturating_add(periods.saturating_mul(step));
        }
        if self.cut_pending {
            if let Some(t) = self.last_cut {
                let at = t.saturating_add(us(p.rate_reduce_monitor_period));
                if now >= at {
                    self.cut(at, p);
                }
            }
        }
        let period = us(p.rpg_time_reset).max(1);
        if self.at_cap(p) {
            // Held at the cap: no increase to make; the timer restarts at the next cut.
            self.next_timer = self.next_timer.max(now.saturating_add(period));
            return;
        }
        let mut left = 4096;
        while self.limited && now >= self.next_timer && left > 0 {
            self.t_count = self.t_count.saturating_add(1);
            self.timer_inc_since_cut = true;
            self.increase(p);
            self.next_timer = self.next_timer.saturating_add(period);
            left -= 1;
        }
        if left == 0 && now >= self.next_timer {
            self.next_timer = now.saturating_add(period);
        }
    }

    /// One increase event (timer or byte counter expiration).
    fn increase(&mut self, p: &RpParams) {
        let f = p.rpg_threshold;
        let cap = self.cap(p);
        if self.t_count > f && self.b_count > f {
            // Hyper increase, growing with the stage.
            let i = self.t_count.min(self.b_count) - f;
            self.rt = self.rt.saturating_add(mbps(p.rpg_hai_rate).saturating_mul(i as u64));
        } else if self.t_count > f || self.b_count > f {
            self.rt = self.rt.saturating_add(mbps(p.rpg_ai_rate));
        }
        self.rt = self.rt.min(cap);
        self.rc = ((self.rc as u128 + self.rt as u128) / 2) as u64;
        // Round up the last bit so that fast recovery reaches R_T.
        if self.rt - self.rc.min(self.rt) <= 1 {
            self.rc = self.rt;
        }
        self.rc = self.rc.clamp(self.floor(p), cap);
        // Back at the line rate the limiter goes; below it (`rpg_max_rate`)
        // the QP stays held at the cap (§5.4: rates are capped by rpg_max_rate).
        if self.rc >= cap && self.rt >= cap && !self.cut_pending && cap >= self.line {
            self.limited = false;
            self.rc = cap;
            self.rt = cap;
        }
    }
}

#[cfg(test)]
#[path = "rp_tests.rs"]
mod tests;
