//! One QP's send-rate limiter: its DCQCN reaction point ([`Rp`]) and the
//! token bucket ([`Pacer`]) that holds its packets to the RP's rate. A QP
//! has one from its first CNP until the RP's rate is back at the line rate
//! (the engine then drops it: an unlimited QP pays one branch per packet).
//! Time is injected (ns); the engine's timer heap calls [`Limiter::advance`]
//! at [`Limiter::next_wake`], so the rate climbs back while the QP is idle.

use super::pacer::Pacer;
use super::params::RpParams;
use super::rp::{CnpOutcome, Rp};

/// Bytes the pacer lets through back to back (four 4096-byte MTU packets
/// with headers): a limited QP's burst.
pub const PACER_BURST_BYTES: u64 = 4 * 4200;

#[derive(Debug, Clone)]
pub struct Limiter {
    rp: Rp,
    pacer: Pacer,
    /// The parameters of the last CNP or timer (the port's, at that time).
    params: RpParams,
    /// A packet is waiting for the pacer until then.
    blocked_until: Option<u64>,
}

impl Limiter {
    /// A QP on a port of `line_bps`, not yet cut.
    pub fn new(now: u64, line_bps: u64, params: RpParams) -> Limiter {
        Limiter {
            rp: Rp::new(line_bps),
            pacer: Pacer::new(now, line_bps, PACER_BURST_BYTES),
            params,
            blocked_until: None,
        }
    }

    pub fn rp(&self) -> &Rp {
        &self.rp
    }

    /// The rate the QP is paced at (bits/s).
    pub fn rate(&self) -> u64 {
        self.pacer.rate()
    }

    fn sync(&mut self, now: u64) {
        if self.pacer.rate() != self.rp.rate() {
            self.pacer.set_rate(now, self.rp.rate());
        }
    }

    /// A CNP for the QP at `now`, under the port's current `params`.
    pub fn on_cnp(&mut self, now: u64, params: RpParams) -> CnpOutcome {
        self.params = params;
        let o = self.rp.on_cnp(now, &self.params);
        self.sync(now);
        o
    }

    /// May a packet of `bytes` leave at `now`? `Err(at)`: not before `at`
    /// (the caller waits for its timer). A packet let through counts
    /// towards the RP's byte counter.
    pub fn admit(&mut self, now: u64, bytes: u64) -> Result<(), u64> {
        self.rp.advance(now, &self.params);
        self.sync(now);
        if self.pacer.try_send(now, bytes) {
            self.blocked_until = None;
            self.rp.on_sent(now, bytes, &self.params);
            self.sync(now);
            Ok(())
        } else {
            let at = self.pacer.next_send_at(now, bytes).max(now.saturating_add(1));
            self.blocked_until = Some(at);
            Err(at)
        }
    }

    /// Runs the RP's timers up to `now` (the timer heap's call) with the
    /// port's current `params`. False once the limiter can go: the rate is
    /// back at the cap and no packet waits for the pacer.
    pub fn advance(&mut self, now: u64, params: RpParams) -> bool {
        self.params = params;
        self.rp.advance(now, &self.params);
        self.sync(now);
        if self.blocked_until.is_some_and(|t| t <= now) {
            self.blocked_until = None;
        }
        self.rp.limited() || self.blocked_until.is_some()
    }

    /// When the QP's timer must next fire: a waiting packet's release or
    /// the RP's next rate change.
    pub fn next_wake(&self) -> Option<u64> {
        [self.blocked_until, self.rp.next_event(&self.params)].into_iter().flatten().min()
    }
}
