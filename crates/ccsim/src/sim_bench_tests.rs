//! bench-cc's path in the simulation ([`SimConfig::bench_cc`]): two
//! window-limited flows at 50 Mbit/s lines into a 30 Mbit/s RED/ECN
//! bottleneck on Linux's EWMA, marking on enqueue. With DCQCN's time
//! constants scaled to this path ([`SimConfig::bench_cc_tuned`]) the loop
//! keeps the bottleneck busy, shares it fairly and keeps the queue below the
//! windows' standing queue; with the ConnectX defaults (µs constants) DCQCN
//! does not act at this timescale and the windows alone set the queue.

use crate::{run, SimConfig, SimResult};
use vrnic_cc::params::RpParams;

/// Figures from 0.5 s on (the flows start at 0 and 1 ms).
const FROM: u64 = 500_000_000;

/// Both windows (2 × 128 KiB) standing in the bottleneck: the queue a
/// window-limited pair builds when nothing slows it down, 70 ms at 30 Mbit/s.
const WINDOWS: u64 = 2 * 128 * 1024;

fn figures(c: &SimConfig) -> (SimResult, f64, f64, u64) {
    let r = run(c);
    let (g, j, q) = (r.goodput_after(c, FROM), r.jain_after(c, FROM), r.queue_percentile(FROM, 99.0));
    (r, g, j, q)
}

#[test]
#[cfg_attr(
    miri,
    ignore = "3 s of simulated time, ~30k packets through the live Limiter: minutes under the interpreter"
)]
fn tuned_dcqcn_fills_the_bench_bottleneck_fairly_with_a_bounded_queue() {
    let c = SimConfig::bench_cc(true, SimConfig::bench_cc_tuned());
    let (r, goodput, jain, q99) = figures(&c);
    assert!(goodput >= 0.9, "goodput {goodput:.3}");
    assert!(jain >= 0.95, "jain {jain:.3}");
    // The bound: the queue stays below what the two windows alone stand in it
    // (the defaults' and CC-off's queue, below) by a margin: RED's EWMA
    // (Wlog 4) and marking on enqueue delay the feedback by the queue itself,
    // so the queue swings above RED's max (45 KB) but DCQCN takes it down
    // before the windows fill it.
    assert!(q99 <= WINDOWS * 9 / 10, "queue p99 {q99} bytes, bound {}", WINDOWS * 9 / 10);
    assert_eq!(r.dropped, 0, "ECN marks, no loss");
    assert!(r.counters.rp_cnp_handled > 0);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "3 s of simulated time, ~30k packets through the live Limiter: minutes under the interpreter"
)]
fn connectx_defaults_do_not_act_at_this_timescale() {
    // µs constants on a ms path: alpha decays to ~0 between CNPs, the cuts
    // remove almost nothing and the windows set the queue.
    let c = SimConfig::bench_cc(true, RpParams::default());
    let (r, goodput, _jain, q99) = figures(&c);
    assert!(goodput >= 0.99, "goodput {goodput:.3}");
    assert!(q99 > WINDOWS * 9 / 10, "queue p99 {q99} bytes: the windows' standing queue");
    assert!(r.counters.rp_cnp_handled > 1000, "CNPs come and are handled");
}
