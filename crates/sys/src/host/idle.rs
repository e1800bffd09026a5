//! The contract between a waiting thread and its [`IdleStrategy`].

use std::time::Duration;

/// What a waiting thread does when it found nothing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Keep checking without sleeping, for at most `up_to`.
    Spin { up_to: Duration },
    /// Sleep: until the next event (None), or nap this long.
    Sleep(Option<Duration>),
}

/// What ended a wait that [`IdleStrategy::on_idle`] chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A spin found the next event after `after`; `local`: it follows a
    /// delivery inside this device.
    Event { after: Duration, local: bool },
    /// Another thread ended the nap (the device kicks the poller when it
    /// delivers data the guest will answer); `local`: a loopback delivery.
    Kick { local: bool },
    /// The spin or nap ran out, `late` past its end.
    Timeout { late: Duration },
}

/// Whether a spin taken while every CPU was busy paid off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The answer came within the spin.
    Won,
    /// The spin ran out.
    Lost,
}

/// One waiting thread's policy: asked when the thread found nothing to do,
/// told what it found. The caller counts the outcomes it reports.
pub trait IdleStrategy {
    /// An event (a message, a doorbell of UAR page `source`) arrived without
    /// a wait; `local`: a local delivery preceded it.
    fn on_event(&mut self, source: u64, local: bool) -> Option<Verdict>;
    /// Nothing pending: spin or sleep; the verdict on a busy-CPU spin that ran out.
    fn on_idle(&mut self) -> (Idle, Option<Verdict>);
    /// The wait chosen by [`on_idle`](Self::on_idle) ended.
    fn on_wake(&mut self, wake: Wake);
}
