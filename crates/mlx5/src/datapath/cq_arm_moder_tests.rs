//! CQ event moderation (START_FROM_EQE): count, period, urgent CQEs, arms.

use super::*;

const US: u64 = 1000;

/// A CQ's arming with its producer count and moderation.
struct Cq {
    a: CqArming,
    producer: u32,
    m: Moderation,
}

impl Cq {
    fn new(period_us: u16, max_count: u16) -> Cq {
        Cq { a: CqArming::default(), producer: 0, m: Moderation::new(period_us, max_count) }
    }

    fn produce(&mut self, solicited: bool, now: u64) -> bool {
        self.producer = self.producer.wrapping_add(1);
        self.a.on_cqe(self.producer, solicited, self.m, now)
    }

    /// Arm after consuming everything so far.
    fn arm(&mut self, now: u64) -> bool {
        self.a.request_notify(self.producer, self.producer, false, 0, self.m, now)
    }
}

#[test]
fn off_when_period_is_zero_or_count_is_one() {
    assert!(Moderation::new(0, 16).off());
    assert!(Moderation::new(16, 1).off());
    assert!(!Moderation::new(16, 0).off());
    assert!(!Moderation::new(1, 4).off());
}

/// After a quiet spell the first CQE raises its event at once (latency);
/// in a burst the next event waits for the count.
#[test]
fn count_limits_a_burst() {
    let mut c = Cq::new(50, 4);
    let t0 = 1_000 * US;
    assert!(!c.arm(t0));
    assert!(c.produce(false, t0), "period since the last event (never) passed: at once");
    assert!(!c.arm(t0 + US));
    for i in 0..2 {
        assert!(!c.produce(false, t0 + 2 * US + i), "held: count {} of 4, period not over", i + 1);
    }
    assert_eq!(c.a.due, Some(t0 + 50 * US), "due one period after the last event");
    assert!(!c.produce(false, t0 + 5 * US));
    assert!(c.produce(false, t0 + 6 * US), "fourth CQE since the event: the count raises it");
    assert_eq!(c.a.due, None);
    assert_eq!(c.a.reported, c.producer, "the event reports every CQE so far");
}

/// The period raises a held event when the count is not reached.
#[test]
fn period_raises_a_held_event() {
    let mut c = Cq::new(20, 8);
    let t0 = 100 * US;
    c.arm(t0);
    assert!(c.produce(false, t0));
    c.arm(t0);
    assert!(!c.produce(false, t0 + 5 * US));
    assert!(!c.a.expire(c.producer, t0 + 19 * US), "not yet due");
    assert!(c.a.expire(c.producer, t0 + 20 * US), "one period after the last event");
    assert!(!c.a.expire(c.producer, t0 + 40 * US), "raised once");
    assert_eq!(c.a.arm, CqArm::None, "the arm is spent");
    // Next arm: the period now runs from t0 + 20 µs.
    c.arm(t0 + 21 * US);
    assert!(!c.produce(false, t0 + 22 * US));
    assert_eq!(c.a.due, Some(t0 + 40 * US));
    assert!(c.produce(false, t0 + 41 * US), "a CQE after the period passed raises it at once");
}

/// Period only (count 0): a burst of any size waits for the period.
#[test]
fn count_zero_is_period_only() {
    let mut c = Cq::new(10, 0);
    c.arm(0);
    assert!(c.produce(false, 10 * US));
    c.arm(10 * US);
    for i in 0..100 {
        assert!(!c.produce(false, 11 * US + i));
    }
    assert!(c.a.expire(c.producer, 20 * US));
}

#[test]
fn solicited_and_error_cqes_are_not_held() {
    let mut c = Cq::new(100, 16);
    c.arm(0);
    assert!(c.produce(false, 100 * US));
    c.arm(100 * US);
    assert!(!c.produce(false, 101 * US));
    assert!(c.produce(true, 102 * US), "an error CQE raises the held event at once");
    // A solicited arm fires for a solicited CQE whatever the moderation.
    assert!(!c.a.request_notify(c.producer, c.producer, true, 1, c.m, 103 * US));
    assert!(!c.produce(false, 104 * US));
    assert_eq!(c.a.due, None, "a plain CQE does not fire a solicited arm: nothing held");
    assert!(c.produce(true, 105 * US));
}

/// An arm that finds unconsumed CQEs is moderated too, and a later arm
/// keeps the hold.
#[test]
fn arm_with_waiting_cqes_is_held_within_the_period() {
    let mut c = Cq::new(30, 16);
    c.arm(0);
    assert!(c.produce(false, 1_000 * US));
    c.produce(false, 1_001 * US);
    let consumer = c.producer - 1;
    assert!(!c.a.request_notify(c.producer, consumer, false, 1, c.m, 1_002 * US), "within the period");
    assert_eq!(c.a.due, Some(1_030 * US));
    assert!(c.a.expire(c.producer, 1_030 * US));
    assert_eq!(c.a.reported, c.producer);
}

/// A held event whose arm was cleared (CQ reset) is dropped, not raised.
#[test]
fn hold_without_an_arm_is_dropped() {
    let mut c = Cq::new(30, 16);
    c.arm(0);
    assert!(c.produce(false, 100 * US));
    c.arm(100 * US);
    assert!(!c.produce(false, 101 * US));
    c.a.arm = CqArm::None;
    assert!(!c.a.expire(c.producer, 200 * US));
    assert_eq!(c.a.due, None);
}
