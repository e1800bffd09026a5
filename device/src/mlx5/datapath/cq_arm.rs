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
    /// a solicited or error completion. True: raise the event.
    pub fn on_cqe(&mut self, producer: u32, solicited: bool) -> bool {
        if solicited {
            self.solicited_end = producer;
        }
        let fire = match self.arm {
            CqArm::None => false,
            CqArm::Next => true,
            CqArm::Solicited => solicited,
        };
        if fire {
            self.fired(producer);
        }
        fire
    }

    /// An arm request; `consumer` is the driver's consumer count (widened,
    /// at or behind `producer`). True: CQEs the driver has not consumed and
    /// no event reported are waiting, raise the event now.
    pub fn request_notify(&mut self, producer: u32, consumer: u32, solicited: bool, sn: u8) -> bool {
        self.sn = sn;
        self.arm = if solicited { CqArm::Solicited } else { CqArm::Next };
        // CQEs from `base` on are neither consumed nor reported.
        let base = later(producer, consumer, self.reported);
        let waiting = producer.wrapping_sub(base);
        let fire = if solicited {
            // The last solicited CQE lies in [base, producer).
            waiting != 0 && producer.wrapping_sub(self.solicited_end) < waiting
        } else {
            waiting != 0
        };
        if fire {
            self.fired(producer);
        }
        fire
    }

    /// An event is raised: every CQE so far is reported, the arm is spent.
    fn fired(&mut self, producer: u32) {
        self.arm = CqArm::None;
        self.reported = producer;
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
            self.a.request_notify(self.producer, self.consumer, solicited, sn)
        }
    }

    fn cq() -> Cq {
        Cq::default()
    }

    fn produce(c: &mut Cq, solicited: bool) -> bool {
        c.producer = c.producer.wrapping_add(1);
        c.a.on_cqe(c.producer, solicited)
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
