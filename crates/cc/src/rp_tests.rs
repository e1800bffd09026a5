//! DCQCN reaction point against hand-computed values (ConnectX defaults:
//! alpha 1023/1024 on the first CNP, cut alpha/2^11 floored at 50%, g =
//! 1019/1024 per 1 µs, 300 µs timer, 32767-byte counter, F = 1).

use super::*;

const LINE: u64 = 10_000_000_000;

fn p() -> RpParams {
    RpParams::default()
}

#[test]
fn first_cnp_halves_from_line_rate() {
    let mut rp = Rp::new(LINE);
    assert!(!rp.limited());
    assert_eq!(rp.rate(), LINE);
    assert_eq!(rp.on_cnp(1_000, &p()), CnpOutcome::Cut);
    assert!(rp.limited());
    // Cut 10e9 * 1023 / 2^11 = 4_995_117_187 (above the 50% floor).
    assert_eq!(rp.rate(), 5_004_882_813);
    assert_eq!(rp.target_rate(), LINE);
    assert_eq!(rp.alpha(), 1023);
}

#[test]
fn first_cnp_uses_rate_to_set_on_first_cnp_and_min_dec_fac() {
    let q = RpParams { rate_to_set_on_first_cnp: 2000, rpg_min_dec_fac: 90, ..p() };
    let mut rp = Rp::new(LINE);
    rp.on_cnp(0, &q);
    assert_eq!(rp.target_rate(), 2_000_000_000);
    assert_eq!(rp.rate(), 1_800_000_000, "at most 10% cut");
}

#[test]
fn cuts_are_limited_to_one_per_monitor_period() {
    let mut rp = Rp::new(LINE);
    rp.on_cnp(0, &p());
    let r1 = rp.rate();
    assert_eq!(rp.on_cnp(2_000, &p()), CnpOutcome::Deferred);
    assert_eq!(rp.rate(), r1, "deferred: no cut yet");
    rp.advance(3_999, &p());
    assert_eq!(rp.rate(), r1);
    rp.advance(4_000, &p());
    assert!(rp.rate() < r1, "the deferred cut happens when the period ends");
    let r2 = rp.rate();
    assert_eq!(rp.on_cnp(9_000, &p()), CnpOutcome::Cut);
    assert!(rp.rate() < r2);
}

#[test]
fn alpha_ewma_per_dce_tcp_rtt() {
    let mut rp = Rp::new(LINE);
    rp.on_cnp(0, &p());
    // No CNP in the first period: alpha = 1023 * 1019 / 1024 = 1018.0.
    rp.advance(1_000, &p());
    assert_eq!(rp.alpha(), 1018);
    // A CNP: alpha = (1019 * 1018.0 + 5 * 1024) / 1024 = 1018.03 at once,
    // and no decay at the end of a period that had a CNP.
    rp.on_cnp(1_500, &p());
    assert_eq!(rp.alpha(), 1018);
    rp.advance(2_000, &p());
    assert_eq!(rp.alpha(), 1018);
    // Idle for long: alpha decays to 0 (bounded work).
    rp.advance(1_000_000_000, &p());
    assert_eq!(rp.alpha(), 0);
}

#[test]
fn alpha_rises_at_the_cnp_not_at_the_period_end() {
    // g = 1/2 (dce_tcp_g 512), 100 µs periods, alpha 0 on the first CNP.
    let q = RpParams { dce_tcp_g: 512, dce_tcp_rtt: 100, initial_alpha_value: 0, ..p() };
    let mut rp = Rp::new(LINE);
    rp.on_cnp(0, &q);
    assert_eq!((rp.alpha(), rp.rate()), (0, LINE), "alpha 0: the first cut removes nothing");
    // A CNP at 250 µs: the cut takes alpha as it was (0), then α ← (1 − g)·α + g = 1/2 there and then.
    assert_eq!(rp.on_cnp(250_000, &q), CnpOutcome::Cut);
    assert_eq!(rp.rate(), LINE);
    assert_eq!(rp.alpha(), 512, "alpha rises at the CNP");
    // The period that had the CNP ends at 300 µs: no decay; the next, idle, halves it.
    rp.advance(300_000, &q);
    assert_eq!(rp.alpha(), 512);
    rp.advance(400_000, &q);
    assert_eq!(rp.alpha(), 256);
    // The next cut takes alpha/2 = 1/8 of the rate.
    rp.on_cnp(400_000, &q);
    assert_eq!(rp.rate(), LINE - LINE / 8);
}

#[test]
fn small_alphas_decay_as_the_ewma_not_by_integer_steps() {
    // alpha 10/1024, no CNP for 100 periods of 1 µs: 10 · (1019/1024)^100 = 6.14.
    let q = RpParams { initial_alpha_value: 10, ..p() };
    let mut rp = Rp::new(LINE);
    rp.on_cnp(0, &q);
    for t in 1..=100u64 {
        rp.advance(t * 1_000, &q);
    }
    assert_eq!(rp.alpha(), 6, "stepwise (one period per call)");
    let mut once = Rp::new(LINE);
    once.on_cnp(0, &q);
    once.advance(100_000, &q);
    assert_eq!(once.alpha(), 6, "caught up at once");
    // 400 periods: 10 · 0.1416 = 1.42.
    once.advance(400_000, &q);
    assert_eq!(once.alpha(), 1);
}

#[test]
fn timer_increase_fast_recovery_then_additive() {
    // Byte counter off: timer only; F = 1.
    let q = RpParams { rpg_byte_reset: 0, ..p() };
    let mut rp = Rp::new(LINE);
    rp.on_cnp(0, &q);
    let r1 = rp.rate();
    assert_eq!((r1, rp.target_rate()), (5_004_882_813, LINE));
    rp.advance(299_999, &q);
    assert_eq!(rp.rate(), r1);
    rp.advance(300_000, &q); // timer 1, fast recovery: R_C = (R_T + R_C) / 2
    assert_eq!(rp.rate(), (r1 + LINE) / 2);
    let r2 = rp.rate();
    // A CNP after a timer increase clamps R_T to R_C (clamp_tgt_rate_after_time_inc).
    rp.on_cnp(300_001, &q);
    assert_eq!(rp.target_rate(), r2);
    let rc = rp.rate();
    assert!(rc < r2);
    rp.advance(600_001, &q); // timer 1 again: fast recovery
    assert_eq!(rp.rate(), (rc + r2) / 2);
    let rc = rp.rate();
    rp.advance(900_001, &q); // timer 2 > F: additive, R_T += 5 Mb/s
    assert_eq!(rp.target_rate(), r2 + 5_000_000);
    assert_eq!(rp.rate(), (rc + r2 + 5_000_000) / 2);
}

#[test]
fn byte_counter_and_timer_reach_hyper_increase() {
    let mut rp = Rp::new(LINE);
    let q = p();
    rp.on_cnp(0, &q);
    rp.on_cnp(10_000, &q); // a second cut: R_T stays at line rate (no timer increase yet)
    assert_eq!(rp.target_rate(), LINE);
    rp.advance(310_000, &q); // the timer restarted at the second cut
    rp.on_cnp(310_000, &q); // after a timer increase: R_T = R_C
    let rt = rp.target_rate();
    assert!(rt < LINE);
    // Two byte expirations: the first is fast recovery, the second (b 2 > F) additive.
    rp.on_sent(310_001, 2 * 32767, &q);
    assert_eq!(rp.target_rate(), rt + 5_000_000);
    // Timer 1 (t 1, b 2): additive; timer 2 (both > F): hyper, i = 1.
    rp.advance(910_000, &q);
    assert_eq!(rp.target_rate(), rt + 5_000_000 + 5_000_000 + 50_000_000);
}

#[test]
fn limiter_released_back_at_line_rate() {
    let mut rp = Rp::new(LINE);
    rp.on_cnp(0, &p());
    for k in 1..200 {
        rp.on_sent(k * 10_000, 100_000, &p());
    }
    assert!(!rp.limited(), "back at the line rate: limiter released");
    assert_eq!(rp.rate(), LINE);
}

#[test]
fn rpg_max_rate_below_line_rate_holds_the_qp_at_the_cap() {
    let q = RpParams { rpg_max_rate: 8000, ..p() };
    let mut rp = Rp::new(LINE);
    rp.on_cnp(0, &q);
    assert!(rp.rate() <= 8_000_000_000 && rp.target_rate() <= 8_000_000_000);
    for k in 1..200 {
        rp.on_sent(k * 10_000, 100_000, &q);
    }
    assert!(rp.limited(), "at rpg_max_rate < line rate the QP stays limited, not back at line rate");
    assert_eq!(rp.rate(), 8_000_000_000);
    assert_eq!(rp.next_event(&q), None, "held at the cap: nothing to time");
    rp.advance(10_000_000_000, &q);
    assert_eq!((rp.rate(), rp.limited()), (8_000_000_000, true));
    // CNPs cut from the cap (the first with alpha decayed to 0 removes
    // nothing but raises alpha) and the timers run again.
    rp.on_cnp(10_000_000_000, &q);
    rp.on_cnp(10_000_010_000, &q);
    assert!(rp.rate() < 8_000_000_000 && rp.next_event(&q).is_some(), "{}", rp.rate());
}

#[test]
fn rpg_max_rate_caps_the_limiter_pacer() {
    let q = RpParams { rpg_max_rate: 50, rate_to_set_on_first_cnp: 50, ..p() };
    let mut l = crate::Limiter::new(0, LINE, q);
    l.on_cnp(0, q);
    let mut t = 0;
    for _ in 0..1000 {
        t += 1_000_000;
        assert!(l.advance(t, q), "the limiter stays");
    }
    assert_eq!(l.rate(), 50_000_000);
    assert_eq!(l.next_wake(), None);
}

#[test]
fn rate_never_below_min_rate() {
    let q = RpParams { rpg_min_dec_fac: 0, ..p() };
    let mut rp = Rp::new(LINE);
    for k in 0..10_000 {
        rp.on_cnp(k * 4_000, &q);
    }
    assert_eq!(rp.rate(), 1_000_000);
}

#[test]
fn any_parameter_values_do_not_panic() {
    let extremes = [0u32, 1, 1023, 1024, 4096, u32::MAX];
    for &v in &extremes {
        let q = RpParams {
            clamp_tgt_rate: v % 2 == 0,
            clamp_tgt_rate_after_time_inc: v % 3 == 0,
            rpg_time_reset: v,
            rpg_byte_reset: v,
            rpg_threshold: v,
            rpg_max_rate: v,
            rpg_ai_rate: v,
            rpg_hai_rate: v,
            rpg_gd: v,
            rpg_min_dec_fac: v,
            rpg_min_rate: v,
            rate_to_set_on_first_cnp: v,
            dce_tcp_g: v,
            dce_tcp_rtt: v,
            rate_reduce_monitor_period: v,
            initial_alpha_value: v,
        };
        let mut rp = Rp::new(LINE);
        let mut t = 0u64;
        for k in 0..500u64 {
            t = t.saturating_add(k * 997);
            rp.on_cnp(t, &q);
            rp.on_sent(t, u64::MAX / 2, &q);
            rp.advance(t.saturating_add(1 << 40), &q);
            assert!(rp.rate() >= 1 && rp.rate() <= LINE, "{v}: {}", rp.rate());
        }
        // Time going backwards is harmless.
        rp.on_cnp(0, &q);
        rp.advance(0, &q);
    }
}
