//! Fault injection on a port's path, and what the counters see of it.

use std::net::Ipv4Addr;
use std::sync::Arc;

use super::fault::{FaultConfig, FaultRates, OpClass};
use super::test_support::{send_only, Rec};
use super::{Dest, Endpoint, InProcNet};
use vrnic_sys::clock::ManualClock;
use vrnic_wire::bth::Opcode;
use vrnic_wire::packet::{self, RocePacket};

#[test]
fn corrupted_packets_are_dropped_and_counted() {
    let clock = Arc::new(ManualClock::default());
    let eps = [Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)), Endpoint::v4(2, Ipv4Addr::new(10, 0, 0, 2))];
    let f = FaultConfig {
        seed: 3,
        tx: FaultRates { corrupt: 0.5, ecn_ce: 0.5, ..Default::default() },
        ..Default::default()
    };
    let net = InProcNet::new(&eps, &[f], clock);
    let b = Rec::default();
    for i in 0..200 {
        net.sink(0).send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(7, i, &[i as u8; 40]));
    }
    net.pump(&[&Rec::default(), &b], 1000);
    let tx = net.port(0).counters.snapshot();
    let rx = net.port(1).counters.snapshot();
    assert!(tx.fault_corrupted > 50);
    assert_eq!(rx.rx_icrc_errors, tx.fault_corrupted, "every corruption is caught by the ICRC");
    assert_eq!(rx.rx_packets + rx.rx_icrc_errors, 200);
    // CE marks survive (FECN is masked in the ICRC) and nothing that passed is damaged.
    let got = b.0.lock().unwrap();
    assert!(got.iter().any(|(_, p)| p[4] & 0x80 != 0));
    for (_, p) in got.iter() {
        let r = RocePacket::parse(p).unwrap();
        assert_eq!(r.payload, &[r.headers.bth.psn as u8; 40][..]);
    }
}

/// A CNP the tx faults hold back (delay) is counted as sent when it leaves,
/// not before, and exactly once: a held packet goes out through the same
/// exit as every other.
#[test]
fn a_held_cnp_is_counted_when_released() {
    let clock = Arc::new(ManualClock::default());
    let eps = [Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)), Endpoint::v4(2, Ipv4Addr::new(10, 0, 0, 2))];
    let tx = FaultRates { delay: 1.0, delay_us: 100, classes: vec![OpClass::Cnp], ..Default::default() };
    let net = InProcNet::new(&eps, &[FaultConfig { seed: 1, tx, ..Default::default() }], clock.clone());
    let (a, b) = (Rec::default(), Rec::default());
    let mut cnp = Vec::new();
    packet::emit(&packet::cnp_headers(7), &[], &mut cnp).unwrap();
    let s0 = net.sink(0);
    s0.send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut cnp);
    s0.send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(7, 1, b"not held"));
    assert_eq!(net.pump(&[&a, &b], 100), 1);
    let c = net.port(0).counters.snapshot();
    assert_eq!((c.fault_delayed, c.tx_packets, c.cnp_sent), (1, 1, 0), "held: not sent yet");
    clock.advance(100_000);
    assert_eq!(net.next_due(), Some(100_000));
    assert_eq!(net.pump(&[&a, &b], 100), 1);
    let c = net.port(0).counters.snapshot();
    assert_eq!((c.tx_packets, c.cnp_sent), (2, 1), "released: sent and counted once");
    assert_eq!(net.port(1).counters.snapshot().cnp_received, 1);
    let got = b.0.lock().unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].1[0], Opcode::CNP.0);
}
