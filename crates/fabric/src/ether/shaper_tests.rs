//! The shaper on a virtual clock (times are passed in).

use std::sync::atomic::Ordering;

use super::*;

fn shaper(rate_bps: u64) -> (Shaper, Arc<EtherCounters>) {
    let c = Arc::new(EtherCounters::default());
    (Shaper::new(c.clone(), rate_bps, 0).unwrap(), c)
}

/// A frame of `len` bytes whose first byte is `tag`.
fn frame(tag: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0] = tag;
    f
}

fn send(s: &Shaper, f: &[u8], now: u64, out: &mut Vec<u8>) -> bool {
    s.transmit(f, now, &mut |x| out.push(x[0]))
}

fn release(s: &Shaper, now: u64) -> Vec<u8> {
    let mut out = Vec::new();
    s.release(now, &mut |x| out.push(x[0]));
    out
}

#[test]
fn burst_is_two_largest_frames_or_a_millisecond() {
    assert_eq!(burst_bytes(1_000_000), 2 * (MAX_FRAME as u64 + 24));
    assert_eq!(burst_bytes(100_000_000_000), 12_500_000);
}

#[test]
fn a_full_bucket_passes_a_burst_then_frames_wait_in_order() {
    // 8 Mb/s: one byte per microsecond; 1000-byte frames cost 1024 us each.
    let (s, c) = shaper(8_000_000);
    let burst = burst_bytes(8_000_000);
    let fit = (burst / 1024) as usize;
    let mut out = Vec::new();
    for i in 0..fit {
        assert!(!send(&s, &frame(i as u8, 1000), 0, &mut out));
    }
    assert_eq!(out.len(), fit, "the burst leaves at once");
    assert_eq!(s.next_due(), None);
    // the next one starts the queue; later ones wait behind it
    assert!(send(&s, &frame(100, 1000), 0, &mut out), "started the queue: wake the worker");
    assert!(!send(&s, &frame(101, 60), 0, &mut out), "behind it, even though a small frame would fit");
    assert_eq!(out.len(), fit);
    let left = burst - fit as u64 * 1024;
    let due = (1024 - left) * 1000;
    assert_eq!(s.next_due(), Some(due));
    assert_eq!(release(&s, due - 1), Vec::<u8>::new(), "1 ns early: not yet");
    assert_eq!(release(&s, due), vec![100]);
    assert_eq!(s.next_due(), Some(due + 84 * 1000));
    assert_eq!(release(&s, due + 84 * 1000), vec![101]);
    assert_eq!(s.next_due(), None);
    assert_eq!(c.tx_shaper_delayed.load(Ordering::Relaxed), 2);
    assert_eq!(c.tx_shaper_dropped.load(Ordering::Relaxed), 0);
}

#[test]
fn admitted_bytes_never_exceed_rate_times_time_plus_burst() {
    // Offered load far above the rate, frames of varied sizes, released each 50 us.
    let rate = 30_000_000u64;
    let (s, _c) = shaper(rate);
    let burst = burst_bytes(rate);
    let sent = std::cell::Cell::new(0u64);
    let mut t = 0u64;
    let mut n = 0usize;
    while t < 20_000_000 {
        for k in 0..3 {
            let len = [60, 1514, 9022][(n + k) % 3];
            n += 1;
            s.transmit(&frame(0, len), t, &mut |f| sent.set(sent.get() + f.len() as u64 + WIRE_OVERHEAD));
        }
        s.release(t, &mut |f| sent.set(sent.get() + f.len() as u64 + WIRE_OVERHEAD));
        let bound = (rate as u128 * t as u128 / 8 / 1_000_000_000) as u64 + burst;
        assert!(sent.get() <= bound, "at {t} ns: {} bytes > {bound}", sent.get());
        t += 50_000;
    }
    // and it keeps the line busy: within one largest frame of the bound
    let bound = (rate as u128 * t as u128 / 8 / 1_000_000_000) as u64 + burst;
    assert!(sent.get() + 9046 + 1000 >= bound, "under-used: {} of {bound}", sent.get());
}

#[test]
fn the_queue_is_bounded_and_overflow_is_counted() {
    let (s, c) = shaper(1_000_000);
    let mut out = Vec::new();
    // empty the bucket
    while s.queued() == 0 {
        send(&s, &frame(0, MAX_FRAME), 0, &mut out);
    }
    let first = out.len();
    for i in 0..QUEUE_FRAMES + 7 {
        send(&s, &frame(i as u8, 100), 0, &mut out);
    }
    assert_eq!(s.queued(), QUEUE_FRAMES);
    // the frame that emptied the bucket waits too: 7 + 1 over
    assert_eq!(c.tx_shaper_dropped.load(Ordering::Relaxed), 8);
    assert_eq!(out.len(), first);
    // one late release sends at most a burst (the bucket is capped)
    let late = release(&s, 60_000_000_000);
    assert!(!late.is_empty() && (late.len() as u64) * 124 <= burst_bytes(1_000_000));
    // the worker's way: wake at next_due, release; all leave, in order
    let mut all = late;
    while let Some(due) = s.next_due() {
        all.extend(release(&s, due));
    }
    assert_eq!(all.len(), QUEUE_FRAMES);
    assert!(all[1..].iter().enumerate().all(|(i, &t)| t == i as u8), "in order");
    assert_eq!(s.next_due(), None);
}

#[test]
fn a_clock_going_back_earns_nothing_and_does_not_panic() {
    let (s, _c) = shaper(8_000_000);
    let mut out = Vec::new();
    while s.queued() == 0 {
        send(&s, &frame(1, 1500), 1_000_000, &mut out);
    }
    assert_eq!(release(&s, 10), Vec::<u8>::new());
    assert!(s.next_due().unwrap() > 1_000_000);
}

#[test]
fn rate_zero_is_no_shaper() {
    assert!(Shaper::new(Arc::new(EtherCounters::default()), 0, 0).is_none());
}
