//! The pause gate on a virtual clock (times are passed in).

use super::*;

const SPEED: u64 = 100_000_000_000;

fn gate(pfc_rx: u8) -> (PauseGate, Arc<EtherCounters>) {
    let c = Arc::new(EtherCounters::default());
    let g = PauseGate::new(c.clone(), SPEED, Arc::new(Classifier::default()));
    g.set_policy(PausePolicy { pfc_rx, pause_rx: true, ..PausePolicy::default() }, 0);
    (g, c)
}

/// A 64-byte frame tagged with PCP `prio` (VID 10), its last byte `tag`.
fn frame(prio: u8, tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[12..16].copy_from_slice(&[0x81, 0x00, prio << 5, 10]);
    f[16..18].copy_from_slice(&[0x08, 0x00]);
    f[63] = tag;
    f
}

fn pfc_frame(enable: u8, q: u16) -> Vec<u8> {
    Repr::Pfc { enable, quanta: [q; PRIORITIES] }.to_frame([2, 0, 0, 0, 0, 9])
}

/// Sends `f` at `now`, returns the tags that left.
fn send(g: &PauseGate, f: &[u8], now: u64) -> Vec<u8> {
    let mut out = Vec::new();
    g.transmit(f, now, &mut |x| out.push(x[63]));
    out
}

fn release(g: &PauseGate, now: u64) -> Vec<u8> {
    let mut out = Vec::new();
    g.release(now, &mut |x| out.push(x[63]));
    out
}

#[test]
fn pfc_pauses_its_priority_for_its_quanta_only() {
    let (g, c) = gate(1 << 3);
    // 1000 quanta at 100 Gb/s = 5120 ns
    assert!(g.receive(&pfc_frame(1 << 3, 1000), 1_000));
    assert!(g.is_paused(3, 1_000) && !g.is_paused(0, 1_000));
    assert_eq!(g.next_due(), Some(6_120));
    assert_eq!(send(&g, &frame(3, 1), 2_000), Vec::<u8>::new(), "prio 3 waits");
    assert_eq!(send(&g, &frame(0, 2), 2_000), vec![2], "prio 0 goes on");
    assert_eq!(send(&g, &frame(3, 3), 3_000), Vec::<u8>::new());
    assert_eq!(release(&g, 6_119), Vec::<u8>::new(), "still paused 1 ns before the end");
    assert_eq!(release(&g, 6_120), vec![1, 3], "in order at the end");
    assert_eq!(g.next_due(), None);
    assert_eq!(send(&g, &frame(3, 4), 6_200), vec![4]);
    let p3 = c.prio[3].snapshot();
    assert_eq!((p3.rx_pause, p3.rx_pause_transition, p3.tx_frames), (1, 1, 3));
    assert_eq!(c.prio[3].rx_pause_duration_ns.load(Ordering::Relaxed), 5_120);
    assert_eq!(c.prio[0].snapshot().tx_frames, 1);
    assert_eq!(c.prio[0].snapshot().rx_pause, 0);
}

#[test]
fn quanta_zero_resumes_and_a_new_frame_replaces_the_timer() {
    let (g, c) = gate(0xff);
    g.receive(&pfc_frame(1 << 3, 0xffff), 0);
    assert_eq!(send(&g, &frame(3, 1), 10), Vec::<u8>::new());
    // a shorter pause replaces the longer one
    g.receive(&pfc_frame(1 << 3, 10), 100);
    assert_eq!(g.next_due(), Some(100 + 51));
    // XON
    g.receive(&pfc_frame(1 << 3, 0), 120);
    assert!(!g.is_paused(3, 120));
    assert_eq!(release(&g, 120), vec![1]);
    let p3 = c.prio[3].snapshot();
    assert_eq!((p3.rx_pause, p3.rx_pause_transition), (3, 1), "XON counted as a pause frame, one transition");
    assert_eq!(c.prio[3].rx_pause_duration_ns.load(Ordering::Relaxed), 120);
}

#[test]
fn disabled_priority_ignores_pfc() {
    let (g, c) = gate(1 << 3);
    assert!(g.receive(&pfc_frame(1 << 5, 0xffff), 0), "consumed even when ignored");
    assert!(!g.is_paused(5, 1));
    assert_eq!(send(&g, &frame(5, 7), 1), vec![7]);
    assert_eq!(c.rx_pause_ignored.load(Ordering::Relaxed), 1);
    assert_eq!(c.prio[5].snapshot().rx_pause, 0);
    // an enabled and a disabled priority in one frame: only the enabled one stops
    g.receive(&pfc_frame((1 << 3) | (1 << 5), 0xffff), 2);
    assert!(g.is_paused(3, 3) && !g.is_paused(5, 3));
}

#[test]
fn malformed_mac_control_is_a_counted_drop() {
    let (g, c) = gate(0xff);
    let mut f = pfc_frame(1 << 3, 0xffff);
    f.truncate(14 + 10); // PFC PDU cut short
    assert!(g.receive(&f, 0));
    let mut f = pfc_frame(1 << 3, 0xffff);
    f[15] = 0x02; // opcode 0x0102
    assert!(g.receive(&f, 0));
    let mut f = pfc_frame(1 << 3, 0xffff);
    f[16] = 0x01; // class-enable vector 0x0108
    assert!(g.receive(&f, 0));
    assert!(g.receive(&[0x01, 0x80, 0xc2, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x88, 0x08], 0), "no opcode at all");
    assert_eq!(c.rx_mac_control_malformed.load(Ordering::Relaxed), 4);
    assert_eq!(g.next_due(), None);
    assert_eq!(send(&g, &frame(3, 1), 1), vec![1]);
}

#[test]
fn other_frames_are_counted_and_delivered() {
    let (g, c) = gate(0xff);
    assert!(!g.receive(&frame(3, 0), 0));
    assert!(!g.receive(&[0u8; 60], 0), "untagged: priority 0");
    assert_eq!((c.prio[3].snapshot().rx_frames, c.prio[3].snapshot().rx_octets), (1, 64));
    assert_eq!(c.prio[0].snapshot().rx_frames, 1);
}

#[test]
fn global_pause_stops_everything_when_on() {
    let (g, c) = gate(0);
    let pause = Repr::Pause { quanta: 100 }.to_frame([2; 6]);
    g.receive(&pause, 0);
    assert!((0..8).all(|p| g.is_paused(p, 1)));
    assert_eq!(send(&g, &frame(6, 1), 1), Vec::<u8>::new());
    assert_eq!(c.prio[0].snapshot().rx_pause, 1, "global pause reads as priority 0's");
    assert_eq!(release(&g, 512), vec![1]);
    // pprx off: ignored
    g.set_policy(PausePolicy { pfc_rx: 0, pause_rx: false, ..PausePolicy::default() }, 600);
    g.receive(&pause, 600);
    assert!(!g.is_paused(0, 601));
    assert_eq!(c.rx_pause_ignored.load(Ordering::Relaxed), 1);
}

#[test]
fn queue_is_bounded_and_policy_change_releases() {
    let (g, c) = gate(1 << 3);
    g.receive(&pfc_frame(1 << 3, 0xffff), 0);
    for i in 0..QUEUE_FRAMES + 5 {
        assert!(send(&g, &frame(3, i as u8), 1).is_empty());
    }
    assert_eq!(c.prio[3].tx_pause_dropped.load(Ordering::Relaxed), 5);
    // PFC turned off for priority 3: its pause ends now
    g.set_policy(PausePolicy { pfc_rx: 0, pause_rx: true, ..PausePolicy::default() }, 10);
    assert!(!g.is_paused(3, 10));
    assert_eq!(release(&g, 10).len(), QUEUE_FRAMES);
}

/// A peer that has sent XON is taken at its word: its later pauses last
/// until its XON, or at least `XON_PEER_HOLD_NS` where it sends none (a
/// refresh that came late), not only their quanta; before its first XON a
/// pause ends with its quanta.
#[test]
fn a_peer_that_sends_xon_holds_until_it_does() {
    let (g, c) = gate(0);
    let pause = |q| Repr::Pause { quanta: q }.to_frame([2, 0, 0, 0, 0, 9]);
    // 1000 quanta at 100 Gb/s = 5120 ns: over at 6_120 before any XON.
    g.receive(&pause(1000), 1_000);
    assert!(g.is_paused(0, 6_119) && !g.is_paused(0, 6_120), "quanta only");
    g.receive(&pause(0), 7_000);
    assert!(!g.is_paused(0, 7_000));
    // Now a pause lasts XON_PEER_HOLD_NS unless the peer ends it.
    g.receive(&pause(1000), 10_000);
    assert!(g.is_paused(0, 10_000 + 5_120), "held past its quanta");
    assert!(g.is_paused(0, 10_000 + XON_PEER_HOLD_NS - 1));
    assert!(!g.is_paused(0, 10_000 + XON_PEER_HOLD_NS), "but not past the hold");
    g.receive(&pause(1000), 20_000_000_000);
    assert_eq!(send(&g, &frame(0, 1), 20_000_100_000), Vec::<u8>::new(), "waits");
    g.receive(&pause(0), 20_000_200_000);
    assert_eq!(release(&g, 20_000_200_000), vec![1], "the XON ends it at once");
    assert_eq!(c.prio[0].snapshot().rx_pause_transition, 3);
}
