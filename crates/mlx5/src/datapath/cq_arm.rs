//! CQ arming: the one state machine behind every completion event, whichever
//! path produced the CQE (the engine's transports or the firmware's own
//! QP0/QP1/REG_UMR send queues) and whichever doorbell carried the arm (the
//! UAR store or the poll-mode page scan). [`super::cq`] runs it for every CQE
//! it writes; the engine knows nothing of it.
//!
//! mlx5 semantics (the arm doorbell carries `sn`, `cmd` and the driver's
//! consumer index `ci`): an armed CQ raises one event for the next (solicited,
//! for `REQ_NOT_SOL`) CQE, then disarms. An arm that finds CQEs the driver has
//! not consumed raises the event at once, which is what makes "poll until
//! empty, then arm" race-free (the kernel's `IB_CQ_REPORT_MISSED_EVENTS`
//! returns 0 on mlx5). CQEs an earlier event already reported do not count:
//! verbs consumers such as perftest `-e` and `ibv_rc_pingpong -e` take the
//! event, re-arm, and only then poll the CQE that raised it; a second event for
//! that same CQE would wake their next wait with nothing to poll.
//!
//! Moderation (`cq_period` µs and `cq_max_count` CQEs, set by CREATE_CQ and
//! MODIFY_CQ; the kernel's `rdma_dim` and mlx5e's DIM change them at run
//! time): period mode START_FROM_EQE, the only one advertised. An event the
//! arm asks for waits until `cq_max_count` CQEs were written since the CQ's
//! last event, or until `cq_period` has passed since that event, whichever
//! comes first: a CQE after a quiet spell raises its event at once, a burst
//! raises one event per period or per count. Solicited and error CQEs are not
//! held. A held event is raised by [`CqArming::expire`], which the worker's
//! pass runs at the time [`CqArming::due`] names.

/// How a CQ is armed for its next completion event (`MLX5_CQ_DB_REQ_NOT`,
/// `MLX5_CQ_DB_REQ_NOT_SOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CqArm {
    #[default]
    None,
    /// Any completion raises an event.
    Next,
    /// Only solicited (or error) completions raise an event.
    Solicited,
}

/// The arming state of one CQ. Counts are the CQ's 32-bit producer count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CqArming {
    pub arm: CqArm,
    /// The arm sequence number last used (mlx5 `sn`).
    pub sn: u8,
    /// Producer count when the last completion event was raised: CQEs below
    /// it were reported.
    pub reported: u32,
    /// Producer count just after the latest solicited or error CQE.
    pub solicited_end: u32,
    /// The last arm word (`sn<<28 | cmd | ci`) acted on: the same arm seen
    /// twice (trapped write and a later page scan) counts once.
    pub last_arm: Option<u32>,
    /// CQEs written since the last event (moderation's count).
    pub since_event: u32,
    /// Clock time of the last event (moderation's period starts there).
    pub last_event_ns: u64,
    /// An event held by moderation is due at this time.
    pub due: Option<u64>,
}

/// A CQ's event moderation. Off (every event at once) when the period is 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moderation {
    pub period_ns: u64,
    /// 0: no count limit (the period alone).
    pub max_count: u32,
}

impl Moderation {
    /// From the CQ context's `cq_period` (µs) and `cq_max_count`.
    pub fn new(period_us: u16, max_count: u16) -> Moderation {
        Moderation { period_ns: period_us as u64 * 1000, max_count: max_count as u32 }
    }

    pub fn off(&self) -> bool {
        self.period_ns == 0 || self.max_count == 1
    }
}

/// `a` is later than `b` (both at or behind `producer`).
fn later(producer: u32, a: u32, b: u32) -> u32 {
    if producer.wrapping_sub(a) < producer.wrapping_sub(b) {
        a
    } else {
        b
    }
}

impl CqArming {
    /// A CQE was just written; `producer` counts it. `solicited` is true for
    /// a solicited or error completion; `now` is the clock (read only when
    /// `m` is on). True: raise the event now; else [`Self::due`] may hold it.
    pub fn on_cqe(&mut self, producer: u32, solicited: bool, m: Moderation, now: u64) -> bool {
        if solicited {
            self.solicited_end = producer;
        }
        self.since_event = self.since_event.saturating_add(1);
        let want = match self.arm {
            CqArm::None => false,
            CqArm::Next => true,
            CqArm::Solicited => solicited,
        };
        want && self.fire_or_hold(producer, solicited, m, now)
    }

    /// The arm wants an event: raise it now (true) unless moderation holds
    /// it (`due` set). `urgent`: a solicited or error CQE, never held.
    fn fire_or_hold(&mut self, producer: u32, urgent: bool, m: Moderation, now: u64) -> bool {
        let due = self.last_event_ns.saturating_add(m.period_ns);
        if urgent || m.off() || (m.max_count != 0 && self.since_event >= m.max_count) || now >= due {
            self.fired(producer, now);
            return true;
        }
        self.due = Some(due);
        false
    }

    /// The moderation timer at `now`: true when a held event is due and was
    /// raised (it reports every CQE so far). A hold whose arm is gone (a
    /// reset) is dropped.
    pub fn expire(&mut self, producer: u32, now: u64) -> bool {
        match self.due {
            Some(d) if d > now => false,
            Some(_) if self.arm != CqArm::None => {
                self.fired(producer, now);
                true
            }
            _ => {
                self.due = None;
                false
            }
        }
    }

    /// An arm request; `consumer` is the driver's consumer count (widened,
    /// at or behind `producer`). True: CQEs the driver has not consumed and
    /// no event reported are waiting, raise the event now (or, under
    /// moderation, [`Self::due`] holds it).
    pub fn request_notify(
        &mut self,
        producer: u32,
        consumer: u32,
        solicited: bool,
        sn: u8,
        m: Moderation,
        now: u64,
    ) -> bool {
        self.sn = sn;
        self.arm = if solicited { CqArm::Solicited } else { CqArm::Next };
        // CQEs from `base` on are neither consumed nor reported.
        let base = later(producer, consumer, self.reported);
        let waiting = producer.wrapping_sub(base);
        // The last solicited (or error) CQE lies in [base, producer).
        let urgent = waiting != 0 && producer.wrapping_sub(self.solicited_end) < waiting;
        let want = if solicited { urgent } else { waiting != 0 };
        want && self.fire_or_hold(producer, urgent, m, now)
    }

    /// An event is raised: every CQE so far is reported, the arm is spent.
    fn fired(&mut self, producer: u32, now: u64) {
        self.arm = CqArm::None;
        self.reported = producer;
        self.since_event = 0;
        self.last_event_ns = now;
        self.due = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::ctx::expand_ci;
    use super::*;

    /// A CQ's arming and its producer/consumer counts.
    #[derive(Default)]
    struct Cq {
        a: CqArming,
        producer: u32,
        consumer: u32,
    }

    impl Cq {
        fn request_notify(&mut self, solicited: bool, sn: u8, ci24: u32) -> bool {
            self.consumer = expand_ci(self.producer, ci24);
            self.a.request_notify(self.producer, self.consumer, solicited, sn, Moderation::default(), 0)
        }
    }

    fn cq() -> Cq {
        Cq::default()
    }

    fn produce(c: &mut Cq, solicited: bool) -> bool {
        c.producer = c.producer.wrapping_add(1);
        c.a.on_cqe(c.producer, solicited, Moderation::default(), 0)
    }

    #[test]
    fn next_arm_fires_once_for_the_next_cqe() {
        let mut c = cq();
        assert!(!produce(&mut c, false), "unarmed: no event");
        assert!(c.request_notify(false, 0, 0), "an unconsumed, unreported CQE fires the arm at once");
        assert!(!produce(&mut c, false), "the arm is spent");
        assert!(!c.request_notify(false, 1, 2), "all consumed: nothing now");
        assert!(produce(&mut c, false));
        assert!(!produce(&mut c, false));
    }

    /// perftest -e / ibv_rc_pingpong -e: get the event, re-arm, then poll the
    /// CQE that raised it. The re-arm must not raise a second event for it
    /// (the next wait would wake with nothing to poll: perftest's ib_send_lat
    /// then posts past its send queue, "Couldn't post send").
    #[test]
    fn rearm_before_polling_the_reported_cqe_does_not_fire_again() {
        let mut c = cq();
        assert!(!c.request_notify(false, 0, 0));
        assert!(produce(&mut c, false), "CQE 0 raises the event");
        assert!(!c.request_notify(false, 1, 0), "CQE 0 was reported: no second event");
        assert!(produce(&mut c, false), "CQE 1 raises the next event");
        // A CQE that lands between the event and the re-arm was not reported.
        assert!(!c.request_notify(false, 2, 1));
        assert!(produce(&mut c, false));
        assert!(!produce(&mut c, false), "CQE 3 arrives while disarmed");
        assert!(c.request_notify(false, 3, 2), "CQE 3 is unreported: fire at once");
    }

    /// The kernel's pattern: poll until empty, arm; a CQE that slipped in
    /// between the last poll and the arm fires the arm (REPORT_MISSED_EVENTS
    /// is 0 on mlx5).
    #[test]
    fn cqe_between_last_poll_and_arm_fires() {
        let mut c = cq();
        for _ in 0..5 {
            produce(&mut c, false);
        }
        assert!(c.request_notify(false, 0, 4), "CQE 4 is unconsumed");
        assert!(!c.request_notify(false, 1, 5), "consumed up to the producer");
        assert!(produce(&mut c, false));
    }

    #[test]
    fn solicited_arm_counts_only_solicited_and_error_cqes() {
        let mut c = cq();
        assert!(!c.request_notify(true, 0, 0));
        assert!(!produce(&mut c, false), "a plain success does not fire a solicited arm");
        assert!(produce(&mut c, true));
        produce(&mut c, false);
        assert!(!c.request_notify(true, 1, 0), "the solicited CQE was reported, the later one is not solicited");
        assert!(c.request_notify(false, 2, 0), "a next-arm takes the unreported success");
        produce(&mut c, true);
        assert!(c.request_notify(true, 3, 3), "an unreported solicited CQE fires a solicited arm");
    }

    #[test]
    fn arm_behind_a_24_bit_wrap() {
        let mut c = cq();
        c.producer = 0x0100_0002;
        c.a.reported = 0x0100_0002;
        assert!(!c.request_notify(false, 0, 0x00ff_fffe), "consumer behind a wrap is not ahead of the producer");
        assert_eq!(c.consumer, 0x00ff_fffe);
    }
}

#[cfg(test)]
#[path = "cq_arm_moder_tests.rs"]
mod moder_tests;
