//! XOFF at a sixteenth of the buffer, refreshes every half pause while
//! above a sixty-fourth, XON below it or when the burst emptied the socket; nothing
//! with global pause transmit off or a medium that cannot say.

use super::*;
use vrnic_wire::pfc::{mac_control_pdu, Packet, Repr};

const BUF: u32 = 64 << 20;
/// The XON mark, a sixty-fourth of the buffer (1 MiB); XOFF is 4 of them.
const UNIT: u32 = BUF / XON_DIVISOR;

fn level(rmem_alloc: u32) -> Fill {
    Fill::Level(SocketMemory { rmem_alloc, rcvbuf: BUF, drops: 3 })
}

/// An RxBuffer at 100 Gb/s with quanta 0xffff (a pause of 335 µs) and the
/// frames it sends, as their quanta.
fn buffer() -> (RxBuffer, Arc<EtherCounters>) {
    let c = Arc::new(EtherCounters::default());
    let b = RxBuffer::new(c.clone(), 0xffff, 100_000_000_000);
    b.set_policy(true, [2, 0, 0, 0, 0, 1]);
    (b, c)
}

fn step(b: &RxBuffer, fill: Fill, now: u64) -> Vec<u16> {
    let mut sent = Vec::new();
    b.update(fill, now, &mut |f| {
        assert_eq!(&f[6..12], &[2, 0, 0, 0, 0, 1], "from the port's MAC");
        match Repr::parse(&Packet::new_unchecked(mac_control_pdu(f).unwrap())).unwrap() {
            Repr::Pause { quanta } => sent.push(quanta),
            other => panic!("not a PAUSE: {other:?}"),
        }
    });
    sent
}

#[test]
fn pause_while_the_socket_fills_and_xon_once_it_drains() {
    let (b, c) = buffer();
    let p = &c.prio[0];
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    assert!(step(&b, level(3 * UNIT), 0).is_empty(), "below the mark: nothing");
    assert_eq!(step(&b, level(4 * UNIT), 1_000), vec![0xffff], "a sixteenth: XOFF");
    assert!(b.paused());
    assert_eq!(get(&c.rx_socket_drops), 3, "the socket's own drop count");
    assert!(step(&b, level(5 * UNIT), 2_000).is_empty(), "paused: no second XOFF before the refresh");
    // Half of 65535 × 512 bit times at 100 Gb/s after the XOFF.
    let refresh = 1_000 + 65535 * 512 / 100 / 2;
    assert!(step(&b, level(UNIT), refresh - 1).is_empty());
    assert_eq!(step(&b, level(UNIT), refresh), vec![0xffff], "still above XON: refreshed");
    assert_eq!(step(&b, level(UNIT - 1), refresh + 10), vec![0], "below a sixty-fourth: XON");
    assert!(!b.paused());
    assert!(step(&b, Fill::Empty, refresh + 20).is_empty(), "no second XON");
    assert_eq!((get(&p.tx_pause), get(&p.tx_pause_transition)), (3, 1));
    assert_eq!(get(&p.tx_pause_duration_ns), refresh + 10 - 1_000, "XOFF to XON");
    // An emptied socket ends a pause at once.
    assert_eq!(step(&b, level(7 * UNIT), 50_000), vec![0xffff]);
    assert_eq!(step(&b, Fill::Empty, 50_001), vec![0]);
}

#[test]
fn nothing_without_global_pause_or_a_level() {
    let (b, c) = buffer();
    assert!(step(&b, Fill::Unknown, 0).is_empty(), "a medium that cannot say");
    assert_eq!(step(&b, level(4 * UNIT), 10), vec![0xffff]);
    assert!(step(&b, Fill::Unknown, 20).is_empty(), "nor does it end a pause");
    // PFCC pptx off while paused: XON on the next pass, then nothing however full.
    b.set_policy(false, [2, 0, 0, 0, 0, 1]);
    assert_eq!(step(&b, level(8 * UNIT), 30), vec![0]);
    assert!(step(&b, level(8 * UNIT), 40).is_empty());
    assert_eq!(c.prio[0].tx_pause_transition.load(Ordering::Relaxed), 1);
}

#[test]
fn a_long_burst_refreshes_the_pause_as_frames_arrive() {
    let (b, c) = buffer();
    let mut sent = Vec::new();
    b.refresh(1_000_000, &mut |f| sent.push(f.to_vec()));
    assert!(sent.is_empty(), "not paused: nothing");
    assert_eq!(step(&b, level(5 * UNIT), 0), vec![0xffff]);
    let half = 65535 * 512 / 100 / 2;
    b.refresh(half - 1, &mut |f| sent.push(f.to_vec()));
    assert!(sent.is_empty());
    b.refresh(half, &mut |f| sent.push(f.to_vec()));
    b.refresh(half + 1, &mut |f| sent.push(f.to_vec()));
    assert_eq!(sent.len(), 1, "once per half pause");
    assert_eq!(c.prio[0].tx_pause.load(Ordering::Relaxed), 2);
}
