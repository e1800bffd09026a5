//! Time for timers and fault injection: a monotonic clock in production, a
//! manual one in deterministic tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Nanoseconds since an arbitrary epoch, never decreasing.
pub trait Clock: Send + Sync {
    fn now_ns(&self) -> u64;
}

/// `Instant`-based clock.
#[derive(Debug)]
pub struct MonotonicClock {
    t0: Instant,
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock { t0: Instant::now() }
    }
}

impl MonotonicClock {
    /// The `Instant` of a clock reading (for sleeping until it).
    pub fn instant(&self, ns: u64) -> Instant {
        self.t0 + std::time::Duration::from_nanos(ns)
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }
}

/// A clock tests move by hand.
#[derive(Debug, Default)]
pub struct ManualClock {
    ns: AtomicU64,
}

impl ManualClock {
    pub fn advance(&self, ns: u64) {
        self.ns.fetch_add(ns, Ordering::SeqCst);
    }
    pub fn set(&self, ns: u64) {
        self.ns.fetch_max(ns, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.ns.load(Ordering::SeqCst)
    }
}
