//! Timers: the ACK timeout, the RNR back-off and the rate limiter's
//! wake-ups (`congestion.rs`), kept in one heap per
//! engine (a QP costs memory, not a thread or a wake-up).

use std::cmp::Reverse;

use super::super::instance::Engine;
use super::super::objects::QpState;
use super::super::verbs::WcStatus;
use super::state::{MIN_CWND, RX_BUSY_PACKETS, RX_HELD_MAX_NS};
use crate::personality::Personality;
use vrnic_wire::psn;

/// RNR NAK timer code → µs (IBTA table 45).
pub const RNR_TIMER_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10_240,
    15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
];

/// Local ACK timeout: 4.096 µs × 2^timeout; 0 = never.
pub fn ack_timeout_ns(timeout: u8) -> Option<u64> {
    (timeout != 0).then(|| 4096u64 << timeout.min(31))
}

impl<P: Personality> Engine<P> {
    // ----------------------------------------------------------------- timers

    pub(super) fn arm_timer(&mut self, qpn: u32, at: u64) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        qp.rt.deadline = Some(at);
        self.queue_timer(qpn, at);
    }

    /// Makes sure the QP's entry in the heap fires no later than `at` (the
    /// ACK/RNR deadline and the rate limiter share it).
    pub(super) fn queue_timer(&mut self, qpn: u32, at: u64) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        if qp.rt.queued_at.is_none_or(|q| q > at) {
            qp.rt.queued_at = Some(at);
            let earliest = self.rt.timers.peek().map(|r| r.0 .0);
            self.rt.timers.push(Reverse((at, qpn)));
            if earliest.is_none_or(|e| at < e) {
                if let Some(w) = &self.rt.waker {
                    w();
                }
            }
        }
    }

    pub(super) fn arm_ack_timer(&mut self, qpn: u32, restart: bool) {
        let Some(qp) = self.qps.obj(qpn) else { return };
        if !qp.qp_type.is_reliable() || qp.rt.rnr_wait {
            return;
        }
        let outstanding = psn::lt(qp.rt.unacked, qp.rt.max_sent);
        match ack_timeout_ns(qp.attrs.timeout) {
            Some(t) if outstanding => {
                if restart || qp.rt.deadline.is_none() {
                    let at = self.rt.io.clock.now_ns() + t;
                    let rx = self.rt.totals.rx_packets;
                    self.arm_timer(qpn, at);
                    if let Some(qp) = self.qps.obj_mut(qpn) {
                        qp.rt.rx_mark = rx;
                    }
                }
            }
            _ => {
                if let Some(qp) = self.qps.obj_mut(qpn) {
                    qp.rt.deadline = None;
                }
            }
        }
    }

    /// Runs the timers due now; returns the next deadline (clock ns).
    pub fn poll_timers(&mut self) -> Option<u64> {
        let now = self.rt.io.clock.now_ns();
        while let Some(&Reverse((at, qpn))) = self.rt.timers.peek() {
            // Entries superseded by an earlier one, or of a QP gone or
            // quiescent, are dropped whenever they reach the top.
            let live = self.qps.obj(qpn).is_some_and(|q| q.rt.queued_at == Some(at));
            if !live {
                self.rt.timers.pop();
                continue;
            }
            if at > now {
                break;
            }
            self.rt.timers.pop();
            let Some(qp) = self.qps.obj_mut(qpn) else { continue };
            qp.rt.queued_at = None;
            let limiter_due = qp.rt.limiter.as_ref().and_then(|l| l.next_wake()).is_some_and(|t| t <= now);
            if qp.rt.deadline.is_some_and(|d| d <= now) {
                qp.rt.deadline = None;
                self.on_timer(qpn);
            }
            if limiter_due {
                self.on_limiter_timer(qpn, now);
            }
            // What is still ahead (a deadline moved later, the limiter's next event).
            let Some(qp) = self.qps.obj_mut(qpn) else { continue };
            // (never at `now` again: the limiter has run up to it)
            let wake = qp.rt.limiter.as_ref().and_then(|l| l.next_wake()).map(|t| t.max(now + 1));
            let next = [qp.rt.deadline, wake].into_iter().flatten().min();
            if let Some(d) = next {
                if qp.rt.queued_at.is_none_or(|q| q > d) {
                    qp.rt.queued_at = Some(d);
                    self.rt.timers.push(Reverse((d, qpn)));
                }
            }
        }
        self.rt.timers.peek().map(|r| r.0 .0)
    }

    pub(super) fn on_timer(&mut self, qpn: u32) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            return;
        }
        if qp.rt.rnr_wait {
            qp.rt.rnr_wait = false;
            self.progress(qpn);
            return;
        }
        if !psn::lt(qp.rt.unacked, qp.rt.max_sent) {
            return;
        }
        if qp.rt.link_wait {
            // The QP waits in line for a link that holds it (flow control,
            // pause): a retry it cannot send is not one. Its timer starts
            // again; a loss shows once it has had its turn (a NAK, or this
            // timer with the link free). With a thousand QPs on a slow link
            // a QP's turn comes less often than its ACK timeout.
            count!(self.rt, qp, link_held_timeouts);
            self.arm_ack_timer(qpn, true);
            return;
        }
        let front_waits_for_data = qp.rt.sq.front().is_some_and(|e| e.wr.opcode.is_read_or_atomic());
        if front_waits_for_data && self.rt.totals.rx_packets.wrapping_sub(qp.rt.rx_mark) >= RX_BUSY_PACKETS {
            // A READ's or atomic's responses come from the peer's link, in
            // line behind every response it owes other QPs (four thousand
            // QPs reading at once: the line is longer than the timeout),
            // while this port keeps receiving. That is the line, not a loss:
            // the timer starts again, for a bounded time; a loss among them
            // shows as a PSN gap, or as this timer once the port is quiet or
            // the bound has passed.
            let now = self.rt.io.clock.now_ns();
            let since = *qp.rt.rx_held_since.get_or_insert(now);
            if now.saturating_sub(since) < RX_HELD_MAX_NS {
                count!(self.rt, qp, rx_held_timeouts);
                self.arm_ack_timer(qpn, true);
                return;
            }
        }
        count!(self.rt, qp, timeouts);
        if qp.rt.retry_left == 0 {
            self.fail_front(qpn, WcStatus::RetryExcErr);
            return;
        }
        qp.rt.retry_left -= 1;
        qp.rt.cwnd = (qp.rt.cwnd / 2).max(MIN_CWND);
        let p = qp.rt.unacked;
        qp.rt.goback_psn = None;
        self.seek(qpn, p);
        self.progress(qpn);
        self.arm_ack_timer(qpn, true);
    }
}
