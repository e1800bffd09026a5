//! The device's free-running clock: the init segment's `internal_timer_h/l`
//! (BAR0 0x1000/0x1004, which libmlx5 also maps read-only for
//! `ibv_query_rt_values_ex`) and the `timestamp` of every CQE. It counts at
//! [`DEVICE_FREQUENCY_KHZ`] (`cmd_hca_cap.device_frequency_khz`, the
//! `hca_core_clock` of `ibv_query_device_ex`) and is the host's
//! `CLOCK_MONOTONIC_RAW` scaled to that frequency, so it never goes
//! backwards, is the same for every device instance on a host, and does not
//! follow NTP slewing.

/// The frequency a ConnectX-5 reports (78.125 MHz).
pub const DEVICE_FREQUENCY_KHZ: u32 = 78_125;

/// The host's raw monotonic clock in nanoseconds.
pub fn host_raw_ns() -> u64 {
    vrnic_sys::proc::monotonic_raw_ns()
}

/// `ns` nanoseconds as device clock ticks (monotonic in `ns`).
pub fn ns_to_ticks(ns: u64) -> u64 {
    (ns as u128 * DEVICE_FREQUENCY_KHZ as u128 / 1_000_000) as u64
}

/// The device clock now, in ticks of [`DEVICE_FREQUENCY_KHZ`].
pub fn now() -> u64 {
    ns_to_ticks(host_raw_ns())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_to_the_advertised_frequency() {
        assert_eq!(ns_to_ticks(1_000_000_000), DEVICE_FREQUENCY_KHZ as u64 * 1000, "one second");
        assert_eq!(ns_to_ticks(1_000_000), DEVICE_FREQUENCY_KHZ as u64, "one millisecond");
        assert_eq!(ns_to_ticks(0), 0);
        // No overflow over a host uptime of centuries.
        assert_eq!(ns_to_ticks(u64::MAX), (u64::MAX as u128 * 78_125 / 1_000_000) as u64);
    }

    #[test]
    fn monotonic_and_advancing_with_the_host_clock() {
        let mut last = now();
        for _ in 0..10_000 {
            let t = now();
            assert!(t >= last, "went backwards: {last} -> {t}");
            last = t;
        }
        let (t0, h0) = (now(), host_raw_ns());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, h1) = (now(), host_raw_ns());
        let ticks = (t1 - t0) as f64;
        let want = (h1 - h0) as f64 * DEVICE_FREQUENCY_KHZ as f64 / 1e6;
        assert!((ticks - want).abs() <= 2.0 + want * 0.001, "{ticks} ticks over {} ns", h1 - h0);
        assert!(ticks >= 20.0 * DEVICE_FREQUENCY_KHZ as f64, "20 ms is at least {} ticks", 20 * DEVICE_FREQUENCY_KHZ);
    }
}
