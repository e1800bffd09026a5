//! A CPU wake-up latency request while doorbells flow.
//!
//! Every half round trip of a ping-pong wakes a thread that sleeps on an
//! idle core: the vCPU that waits for QEMU's BQL, or the server thread that
//! waits for the next doorbell. On hosts whose idle cores halt (a nested or
//! paravirtualised host with cpuidle `haltpoll` and `guest_halt_poll_ns` 0,
//! deep C-states on bare metal) waking such a core costs more than the
//! device's own work (figures: docs/performance.md). The kernel's PM QoS CPU latency request
//! (`/dev/cpu_dma_latency`, the interface tuned's `latency-performance`
//! profile uses) keeps idle cores in shallow states while it is held.
//!
//! [`spawn`] starts a thread that holds a 0 µs request while doorbells flow
//! and drops it after [`RELEASE_AFTER`] without one, so an idle device
//! leaves the host's power management alone. The cost while held: idle
//! host cores poll instead of halting. `doorbell.cpu_latency_qos = false`
//! turns it off; without the right to open the file (not root) it is off.

use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The kernel's CPU latency request interface.
pub const PATH: &str = "/dev/cpu_dma_latency";
/// How often the thread looks at the doorbell count.
pub const TICK: Duration = Duration::from_millis(20);
/// No doorbell for this long: the request is dropped.
pub const RELEASE_AFTER: Duration = Duration::from_millis(200);
/// PM_QOS_DEFAULT_VALUE: "no constraint" (the value an open file starts with).
const NO_CONSTRAINT: i32 = -1;

/// What the request thread did, for the control socket and tests.
#[derive(Debug, Default, serde::Serialize)]
pub struct QosStats {
    /// A 0 µs request is in force now.
    pub held: AtomicBool,
    /// Times the request was taken.
    pub holds: AtomicU64,
}

/// Decides from successive doorbell counts when to hold and when to drop
/// the request (the clock is passed in, so tests drive it).
#[derive(Debug)]
pub struct Hysteresis {
    last_count: u64,
    last_change: Instant,
    held: bool,
}

/// What [`Hysteresis::observe`] asks the caller to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    Hold,
    Release,
    Nothing,
}

impl Hysteresis {
    pub fn new(count: u64, now: Instant) -> Hysteresis {
        Hysteresis { last_count: count, last_change: now, held: false }
    }

    pub fn observe(&mut self, count: u64, now: Instant) -> Action {
        if count != self.last_count {
            self.last_count = count;
            self.last_change = now;
            if !self.held {
                self.held = true;
                return Action::Hold;
            }
        } else if self.held && now.duration_since(self.last_change) >= RELEASE_AFTER {
            self.held = false;
            return Action::Release;
        }
        Action::Nothing
    }
}

fn request(f: &mut File, us: i32) -> io::Result<()> {
    // The binary form: one native-endian s32 (µs).
    f.write_all(&us.to_ne_bytes())
}

/// Opens [`PATH`] (call before privileges are dropped) and starts the
/// request thread; `count` returns a number that grows with every
/// doorbell. `None` (logged) when the file cannot be opened.
pub fn spawn(count: impl Fn() -> u64 + Send + 'static, stats: Arc<QosStats>) -> Option<std::thread::JoinHandle<()>> {
    let mut f = match std::fs::OpenOptions::new().write(true).open(PATH) {
        Ok(f) => f,
        Err(e) => {
            tracing::info!("cpu latency request off: {PATH}: {e}");
            return None;
        }
    };
    let r = crate::privs::spawn(
        "vrnic-qos",
        || (),
        move |()| {
            let mut h = Hysteresis::new(count(), Instant::now());
            loop {
                std::thread::sleep(TICK);
                let (us, held) = match h.observe(count(), Instant::now()) {
                    Action::Hold => (0, true),
                    Action::Release => (NO_CONSTRAINT, false),
                    Action::Nothing => continue,
                };
                if let Err(e) = request(&mut f, us) {
                    tracing::warn!("cpu latency request: {e}; off");
                    return;
                }
                stats.held.store(held, Ordering::Relaxed);
                if held {
                    stats.holds.fetch_add(1, Ordering::Relaxed);
                }
                tracing::debug!(held, "cpu latency request");
            }
        },
    );
    match r {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!("cpu latency request thread: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_on_doorbells_and_releases_after_quiet() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut h = Hysteresis::new(5, t0);
        assert_eq!(h.observe(5, at(20)), Action::Nothing, "no doorbell yet");
        assert_eq!(h.observe(9, at(40)), Action::Hold);
        assert_eq!(h.observe(12, at(60)), Action::Nothing, "already held");
        assert_eq!(h.observe(12, at(60 + 199)), Action::Nothing, "quiet for less than RELEASE_AFTER");
        assert_eq!(h.observe(12, at(60 + 200)), Action::Release);
        assert_eq!(h.observe(12, at(1000)), Action::Nothing, "already released");
        assert_eq!(h.observe(13, at(1020)), Action::Hold, "doorbells again");
    }
}
