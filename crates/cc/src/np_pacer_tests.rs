//! Notification point (CNP per QP per min_time_between_cnps, counters) and
//! the token-bucket pacer.

use super::*;
use vrnic_wire::congestion::Ecn;

#[test]
fn np_one_cnp_per_qp_per_interval() {
    let mut np = Np::new(NpParams::default(), true);
    let mut c = CongStatistics::default();
    let cnp = np.on_packet(0, 5, 0x118, Ecn::Ce, 3, &mut c).unwrap();
    assert_eq!(cnp, CnpToSend { dest_qp: 0x118, dscp: 48, prio: 6 });
    assert_eq!(np.on_packet(3_999, 5, 0x118, Ecn::Ce, 3, &mut c), None, "within 4 µs");
    assert!(np.on_packet(1_000, 6, 0x200, Ecn::Ce, 3, &mut c).is_some(), "another QP has its own interval");
    assert!(np.on_packet(4_000, 5, 0x118, Ecn::Ce, 3, &mut c).is_some());
    assert_eq!(np.on_packet(5_000, 5, 0x118, Ecn::Ect0, 3, &mut c), None, "not marked");
    assert_eq!(np.on_packet(5_000, 5, 0x118, Ecn::NotEct, 3, &mut c), None);
    assert_eq!(c, CongStatistics { np_ecn_marked_roce_packets: 4, np_cnp_sent: 3, ..Default::default() });
    np.forget(5);
    assert!(np.on_packet(5_001, 5, 0x118, Ecn::Ce, 3, &mut c).is_some(), "a reset QP starts afresh");
}

#[test]
fn np_disabled_counts_marks_but_sends_nothing() {
    let mut np = Np::new(NpParams::default(), false);
    let mut c = CongStatistics::default();
    for t in 0..10 {
        assert_eq!(np.on_packet(t * 10_000, 1, 2, Ecn::Ce, 0, &mut c), None);
    }
    assert_eq!((c.np_ecn_marked_roce_packets, c.np_cnp_sent), (10, 0));
}

#[test]
fn np_prio_mode_and_zero_interval() {
    let p = NpParams { min_time_between_cnps: 0, cnp_prio_mode: true, cnp_dscp: 0xff, ..Default::default() };
    let mut np = Np::new(p, true);
    let mut c = CongStatistics::default();
    let a = np.on_packet(7, 1, 0xffff_ffff, Ecn::Ce, 3, &mut c).unwrap();
    assert_eq!(a, CnpToSend { dest_qp: 0xff_ffff, dscp: 0x3f, prio: 3 });
    assert!(np.on_packet(7, 1, 2, Ecn::Ce, 3, &mut c).is_some(), "interval 0: every CE packet");
}

#[test]
fn pacer_paces_to_the_rate() {
    // 1 Gb/s, burst one 1000-byte packet: one packet per 8 µs.
    let mut p = Pacer::new(0, 1_000_000_000, 1000);
    assert!(p.try_send(0, 1000));
    assert!(!p.try_send(0, 1000));
    assert_eq!(p.next_send_at(0, 1000), 8_000);
    assert!(!p.try_send(7_999, 1000));
    assert!(p.try_send(8_000, 1000));
    // Over 1 ms at most 125 packets + the burst.
    let mut sent = 0;
    let mut t = 8_000;
    while t <= 1_008_000 {
        if p.try_send(t, 1000) {
            sent += 1;
        }
        t = p.next_send_at(t, 1000).max(t + 1);
    }
    assert_eq!(sent, 125);
}

#[test]
fn pacer_rate_change_and_large_packets() {
    let mut p = Pacer::new(0, 8_000_000, 100); // 1 byte/µs
    assert!(p.try_send(0, 100));
    p.set_rate(50_000, 16_000_000); // 50 tokens earned at the old rate
    assert_eq!(p.next_send_at(50_000, 100), 75_000);
    // A packet larger than the burst goes once the bucket holds it.
    let mut p = Pacer::new(0, 8_000_000, 100);
    assert!(!p.try_send(0, 1000));
    let at = p.next_send_at(0, 1000);
    assert_eq!(at, 900_000);
    assert!(p.try_send(at, 1000));
    // Time going backwards and a zero rate do not panic.
    assert!(!p.try_send(1, 1000));
    p.set_rate(0, 0);
    assert!(p.next_send_at(0, 1) > 0);
}
