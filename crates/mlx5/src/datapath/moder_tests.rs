//! CQ event moderation through the real commands: MODIFY_CQ's cq_period /
//! cq_max_count hold an armed CQ's event (`cq_arm`), the worker's pass
//! (`expire_cq_moderation`) raises it when due, and the worker is woken when
//! an event is first held.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::datapath::cqe::{op, Cqe};
use crate::ifc;
use crate::test_support::{cmd, Bench};
use vrnic_sys::clock::{Clock, ManualClock};

const US: u64 = 1000;

struct Moder {
    t: Bench,
    cqn: u32,
    clock: Arc<ManualClock>,
    wakes: Arc<AtomicU32>,
    /// CQEs posted so far.
    n: u32,
}

impl Moder {
    fn new(period_us: u64, max_count: u64) -> Moder {
        let mut t = Bench::new();
        let uar = t.up();
        let eqn = t.eq(uar, 1, 0, 0x100000);
        let cqn = t.cq(uar, eqn, 0x120000);
        let clock = Arc::new(ManualClock::default());
        clock.set(1_000_000 * US);
        let wakes = Arc::new(AtomicU32::new(0));
        let w = wakes.clone();
        t.fw.core.engine.set_clock(clock.clone());
        t.fw.core.engine.set_waker(Some(Arc::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        })));
        let mut i = cmd(ifc::MLX5_CMD_OP_MODIFY_CQ, 0, ifc::modify_cq_in::SIZE);
        ifc::modify_cq_in::cqn.set(&mut i, cqn as u64);
        ifc::modify_cq_in::modify_field_select_resize_field_select.set(&mut i, 3);
        ifc::modify_cq_in::cq_context::cq_period.set(&mut i, period_us);
        ifc::modify_cq_in::cq_context::cq_max_count.set(&mut i, max_count);
        t.ok(&i, 16);
        Moder { t, cqn, clock, wakes, n: 0 }
    }

    fn eqes(&self) -> u64 {
        self.t.fw.core.stats.eqes.load(Ordering::Relaxed)
    }

    /// A successful send CQE.
    fn cqe(&mut self) {
        let e = Cqe { opcode: op::REQ, qpn: 0x42, wqe_counter: self.n as u16, ..Default::default() };
        assert!(self.t.fw.datapath().core.post_cqe(self.cqn, &e, false));
        self.n += 1;
    }

    /// Arm for the next CQE after consuming every one so far.
    fn arm(&mut self, sn: u8) {
        self.t.fw.cq_arm(self.cqn, sn, false, self.n);
    }

    fn pass(&mut self) -> Option<u64> {
        self.t.fw.datapath().core.expire_cq_moderation()
    }
}

#[test]
fn modify_cq_moderation_holds_and_the_pass_raises_the_event() {
    let mut m = Moder::new(20, 4);
    let e0 = m.eqes();
    m.arm(0);
    m.cqe();
    assert_eq!(m.eqes(), e0 + 1, "first CQE after a quiet spell: event at once");
    m.arm(1);
    m.clock.advance(2 * US);
    m.cqe();
    assert_eq!(m.eqes(), e0 + 1, "within the period, count 1 of 4: held");
    assert_eq!(m.wakes.load(Ordering::Relaxed), 1, "the worker is woken to time the hold");
    let now = m.clock.now_ns();
    assert_eq!(m.pass(), Some(now + 18 * US), "the pass names the due time");
    m.cqe();
    assert_eq!(m.wakes.load(Ordering::Relaxed), 1, "one wake per hold");
    m.clock.advance(18 * US);
    assert_eq!(m.pass(), None);
    assert_eq!(m.eqes(), e0 + 2, "due: one event for both held CQEs");
    assert_eq!(m.pass(), None, "nothing held any more");
    // The count: 4 CQEs since the last event raise it within the period.
    m.arm(2);
    for k in 0..3 {
        m.cqe();
        assert_eq!(m.eqes(), e0 + 2, "CQE {} of 4 held", k + 1);
    }
    m.cqe();
    assert_eq!(m.eqes(), e0 + 3, "the fourth CQE raises it");
    assert_eq!(m.pass(), None, "the hold ended with the event");
}

/// Moderation set back to 0 (rdma_dim's first profile is 1 µs / 1 CQE):
/// every armed CQE raises its event at once again.
#[test]
fn moderation_off_fires_at_once() {
    let mut m = Moder::new(0, 0);
    let e0 = m.eqes();
    for sn in 0..4u8 {
        m.arm(sn);
        m.cqe();
        assert_eq!(m.eqes(), e0 + sn as u64 + 1);
    }
    let mut m = Moder::new(32, 1);
    m.arm(0);
    m.cqe();
    m.arm(1);
    m.cqe();
    assert_eq!(m.eqes() - e0, 2, "cq_max_count 1: each CQE");
    assert_eq!(m.wakes.load(Ordering::Relaxed), 0);
}
