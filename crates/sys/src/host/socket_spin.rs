//! The vfio-user server's idle strategy: spin on the socket for the next
//! message, or sleep in recvmsg.

use std::time::Duration;

use super::idle::{Idle, IdleStrategy, Verdict, Wake};
use super::pressure::CpuPressure;

/// When to spin on the socket before sleeping in recvmsg (trap mode: the
/// next doorbell often follows within microseconds, sooner than a sleeping
/// thread can be woken on a virtualized host). Spinning only pays while the
/// next message comes soon: the limit follows twice the recent waits, a
/// spin that runs out twice in a row stops spinning (the limit never goes
/// below 16 µs while spinning), and every
/// [`SpinPolicy::PROBE_EVERY`] messages a short probe checks again. So a
/// guest whose doorbells come slowly is not charged for it. A spin that
/// finds its message can still be a loss: the message came from a vCPU on
/// the other CPU while this thread held the CPU the answering vCPU needed;
/// so the server does not spin at all while [`CpuPressure`]
/// says every CPU is busy.
#[derive(Debug, Clone)]
pub struct SpinPolicy {
    max: Duration,
    /// Current limit; zero: not spinning.
    limit: Duration,
    /// Smoothed wait of the spins that found a message.
    avg: Duration,
    misses: u32,
    idle_msgs: u32,
}

impl SpinPolicy {
    pub const PROBE_EVERY: u32 = 128;
    const FIRST: Duration = Duration::from_micros(16);

    pub fn new(max: Duration) -> SpinPolicy {
        SpinPolicy { max, limit: Self::FIRST.min(max), avg: Duration::ZERO, misses: 0, idle_msgs: 0 }
    }

    /// How long to spin before the next message, or None to block at once.
    pub fn limit(&mut self) -> Option<Duration> {
        if self.max.is_zero() {
            return None;
        }
        if self.limit.is_zero() {
            self.idle_msgs += 1;
            if self.idle_msgs < Self::PROBE_EVERY {
                return None;
            }
            self.idle_msgs = 0;
            self.misses = 0;
            self.limit = Self::FIRST.min(self.max);
        }
        Some(self.limit)
    }

    /// What the spin found: Some(wait) if a message came after `wait`.
    pub fn record(&mut self, found: Option<Duration>) {
        match found {
            Some(w) => {
                self.misses = 0;
                self.avg = if self.avg.is_zero() { w } else { (self.avg * 3 + w) / 4 };
                self.limit = (self.avg * 2 + Duration::from_micros(2)).clamp(Self::FIRST.min(self.max), self.max);
            }
            None => {
                self.misses += 1;
                if self.misses >= 2 {
                    self.limit = Duration::ZERO;
                }
            }
        }
    }
}

/// The server thread's [`IdleStrategy`]: a [`SpinPolicy`] that is not
/// asked while [`CpuPressure`] says every CPU is busy.
pub struct SocketSpin {
    policy: SpinPolicy,
    /// Opened at construction, before the seccomp filter.
    pressure: CpuPressure,
}

impl SocketSpin {
    /// Spins up to `max` (zero: never).
    pub fn new(max: Duration) -> SocketSpin {
        SocketSpin { policy: SpinPolicy::new(max), pressure: CpuPressure::default() }
    }

    /// A new client: the policy starts over (the CPU sampling goes on).
    pub fn restart(&mut self) {
        self.policy = SpinPolicy::new(self.policy.max);
    }
}

impl IdleStrategy for SocketSpin {
    fn on_event(&mut self, _source: u64, _local: bool) -> Option<Verdict> {
        None
    }

    /// Spin up to the policy's limit, or block in recvmsg at once (no
    /// spinning while the vCPUs, or anything else, fill every CPU).
    fn on_idle(&mut self) -> (Idle, Option<Verdict>) {
        let idle = match self.policy.limit().filter(|_| !self.pressure.busy()) {
            Some(up_to) => Idle::Spin { up_to },
            None => Idle::Sleep(None),
        };
        (idle, None)
    }

    fn on_wake(&mut self, wake: Wake) {
        match wake {
            Wake::Event { after, .. } => self.policy.record(Some(after)),
            Wake::Timeout { .. } => self.policy.record(None),
            Wake::Kick { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn spin_policy_follows_the_waits() {
        // Off when the maximum is zero.
        assert_eq!(SpinPolicy::new(Duration::ZERO).limit(), None);
        let mut p = SpinPolicy::new(50 * US);
        assert_eq!(p.limit(), Some(16 * US));
        // Messages coming after ~5 µs: keep spinning, limit never below 16 µs.
        for _ in 0..10 {
            let l = p.limit().unwrap();
            assert!((16 * US..=50 * US).contains(&l));
            p.record(Some(5 * US));
        }
        // Slow waits raise the limit up to the maximum.
        for _ in 0..10 {
            p.limit();
            p.record(Some(40 * US));
        }
        assert_eq!(p.limit(), Some(50 * US));
        // Two spins that run out stop spinning...
        p.record(None);
        assert!(p.limit().is_some());
        p.record(None);
        let blocked = (0..SpinPolicy::PROBE_EVERY - 1).filter(|_| p.limit().is_none()).count();
        assert_eq!(blocked as u32, SpinPolicy::PROBE_EVERY - 1);
        // ...until a probe.
        assert_eq!(p.limit(), Some(16 * US));
        p.record(Some(3 * US));
        assert!(p.limit().is_some());
    }
}
