//! [`Shaper`]: the Ethernet port's line rate (owner: eth-link). A token
//! bucket on the transmit side, after the [`PauseGate`](super::PauseGate):
//! what leaves the gate passes it before the tx faults and the medium.
//!
//! - The bucket fills at `rate` bit/s up to [`burst_bytes`] (the larger of
//!   two largest frames and 1 ms at the rate) and starts full. A frame costs
//!   its length + [`WIRE_OVERHEAD`] (preamble, IFG, FCS) bytes, as on a wire.
//! - A frame leaves at once when nothing waits and the bucket holds its cost;
//!   otherwise it waits in a FIFO of at most [`QUEUE_FRAMES`] frames (an
//!   overflow is a counted drop, `tx_shaper_dropped`) and leaves in order
//!   when the tokens allow.
//! - So over any interval `t` the bytes (with overhead) that leave are at most
//!   `rate x t + burst`.
//!
//! Time is the link's clock, passed in (`now`); the link's worker wakes at
//! [`next_due`](Shaper::next_due) to [`release`](Shaper::release), and a
//! sender whose frame starts the queue wakes the worker ([`transmit`] says so).
//! The link has no shaper at rate 0 (`[eth] link_rate_mbps = 0`, the default).
//!
//! [`transmit`]: Shaper::transmit

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::counters::EtherCounters;
use super::frame::MAX_FRAME;
use crate::counters::bump;

/// Bytes a frame takes on the wire beyond its length: preamble + SFD (8),
/// inter-frame gap (12), FCS (4).
pub const WIRE_OVERHEAD: u64 = 8 + 12 + 4;
/// Frames the shaper holds before it drops (at most 1024 frames of up to 9 KiB).
pub const QUEUE_FRAMES: usize = 1024;
const NS_PER_S: u128 = 1_000_000_000;

/// The bucket's depth at `rate_bps`: the larger of two largest frames (so
/// that every frame fits) and 1 ms at the rate.
pub fn burst_bytes(rate_bps: u64) -> u64 {
    (2 * (MAX_FRAME as u64 + WIRE_OVERHEAD)).max(rate_bps / 8 / 1000)
}

/// Tokens are bit-nanoseconds: a byte costs 8 x 10^9, a nanosecond adds `rate_bps`.
fn cost(frame_len: usize) -> u128 {
    (frame_len as u128 + WIRE_OVERHEAD as u128) * 8 * NS_PER_S
}

struct Bucket {
    tokens: u128,
    /// The time `tokens` is as of.
    at: u64,
    queue: VecDeque<Vec<u8>>,
}

/// See the module documentation.
pub struct Shaper {
    rate_bps: u64,
    depth: u128,
    bucket: Mutex<Bucket>,
    counters: Arc<EtherCounters>,
}

impl Shaper {
    /// A shaper at `rate_bps`, its bucket full at `now`; none at rate 0 (unlimited).
    pub fn new(counters: Arc<EtherCounters>, rate_bps: u64, now: u64) -> Option<Shaper> {
        if rate_bps == 0 {
            return None;
        }
        let depth = burst_bytes(rate_bps) as u128 * 8 * NS_PER_S;
        Some(Shaper {
            rate_bps,
            depth,
            bucket: Mutex::new(Bucket { tokens: depth, at: now, queue: VecDeque::new() }),
            counters,
        })
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Bucket> {
        // A panic elsewhere while holding it leaves plain data: go on with it.
        self.bucket.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the tokens earned up to `now` (a clock that went back earns none).
    fn refill(&self, b: &mut Bucket, now: u64) {
        if now > b.at {
            let earned = (now - b.at) as u128 * self.rate_bps as u128;
            b.tokens = (b.tokens + earned).min(self.depth);
            b.at = now;
        }
    }

    /// Sends the queue's head frames the bucket pays for.
    fn drain(&self, b: &mut Bucket, out: &mut dyn FnMut(&[u8])) {
        while let Some(f) = b.queue.front() {
            let c = cost(f.len());
            if b.tokens < c {
                break;
            }
            b.tokens -= c;
            if let Some(f) = b.queue.pop_front() {
                out(&f);
            }
        }
    }

    /// A frame to transmit: to `out` now if nothing waits and the bucket
    /// holds its cost, else queued (or dropped when the queue is full).
    /// True when this frame started the queue: the caller wakes the worker,
    /// which sends it at [`next_due`](Self::next_due).
    pub fn transmit(&self, frame: &[u8], now: u64, out: &mut dyn FnMut(&[u8])) -> bool {
        let mut b = self.lock();
        self.refill(&mut b, now);
        if b.queue.is_empty() {
            let c = cost(frame.len());
            if b.tokens >= c {
                b.tokens -= c;
                out(frame);
                return false;
            }
        }
        if b.queue.len() >= QUEUE_FRAMES {
            bump(&self.counters.tx_shaper_dropped, 1);
            return false;
        }
        bump(&self.counters.tx_shaper_delayed, 1);
        b.queue.push_back(frame.to_vec());
        b.queue.len() == 1
    }

    /// Sends, in order, the queued frames the tokens earned by `now` pay for.
    pub fn release(&self, now: u64, out: &mut dyn FnMut(&[u8])) {
        let mut b = self.lock();
        self.refill(&mut b, now);
        self.drain(&mut b, out);
    }

    /// When the queue's head can leave (the link's worker wakes then), if a frame waits.
    pub fn next_due(&self) -> Option<u64> {
        let b = self.lock();
        let f = b.queue.front()?;
        let short = cost(f.len()).saturating_sub(b.tokens);
        let wait = short.div_ceil(self.rate_bps as u128);
        Some(b.at.saturating_add(u64::try_from(wait).unwrap_or(u64::MAX)))
    }

    /// Frames waiting.
    pub fn queued(&self) -> usize {
        self.lock().queue.len()
    }
}

#[cfg(test)]
#[path = "shaper_tests.rs"]
mod tests;
