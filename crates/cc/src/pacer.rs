//! A per-QP token bucket: the requester asks "may I send n bytes now?" and,
//! when not, "when?". Tokens accrue at the rate set (bits/s) up to a burst;
//! a packet larger than the burst is sent once the bucket is full. Time is
//! injected (ns) and only moves forward (an earlier `now` counts as no time).

/// Token units per bit: tokens are bit-nanoseconds scaled so that a rate in
/// bits/s times ns gives them exactly.
const PER_BIT: u128 = 1_000_000_000;

#[derive(Debug, Clone)]
pub struct Pacer {
    rate: u64,
    burst_bytes: u64,
    tokens: u128,
    last: u64,
}

impl Pacer {
    /// A full bucket of `burst_bytes` filling at `rate_bps` (at least 1 bit/s).
    pub fn new(now: u64, rate_bps: u64, burst_bytes: u64) -> Pacer {
        let burst_bytes = burst_bytes.max(1);
        Pacer { rate: rate_bps.max(1), burst_bytes, tokens: Self::cost(burst_bytes), last: now }
    }

    fn cost(bytes: u64) -> u128 {
        bytes as u128 * 8 * PER_BIT
    }
    fn cap(&self, bytes: u64) -> u128 {
        Self::cost(self.burst_bytes.max(bytes))
    }

    fn refill(&mut self, now: u64, bytes: u64) {
        if now > self.last {
            let add = self.rate as u128 * (now - self.last) as u128;
            self.tokens = (self.tokens + add).min(self.cap(bytes));
            self.last = now;
        }
    }

    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// A new rate from `now` on (tokens earned so far are kept).
    pub fn set_rate(&mut self, now: u64, rate_bps: u64) {
        self.refill(now, 0);
        self.rate = rate_bps.max(1);
    }

    /// Takes the tokens for `bytes` if the bucket holds them.
    pub fn try_send(&mut self, now: u64, bytes: u64) -> bool {
        self.refill(now, bytes);
        let c = Self::cost(bytes);
        if self.tokens >= c {
            self.tokens -= c;
            true
        } else {
            false
        }
    }

    /// The earliest time (≥ `now`) at which `bytes` may be sent.
    pub fn next_send_at(&mut self, now: u64, bytes: u64) -> u64 {
        self.refill(now, bytes);
        let c = Self::cost(bytes);
        if self.tokens >= c {
            return now.max(self.last);
        }
        let wait = (c - self.tokens).div_ceil(self.rate as u128);
        self.last.saturating_add(wait.min(u64::MAX as u128) as u64)
    }
}
