//! The in-process net: routing by LID, loopback, no route.

use std::net::Ipv4Addr;
use std::sync::Arc;

use super::test_support::{send_only, Rec};
use super::{Dest, Endpoint, InProcNet};
use crate::wire::clock::ManualClock;
use crate::wire::packet::RocePacket;

#[test]
fn inproc_routes_by_lid() {
    let clock = Arc::new(ManualClock::default());
    let eps = [Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)), Endpoint::v4(2, Ipv4Addr::new(10, 0, 0, 2))];
    let net = InProcNet::new(&eps, &[], clock);
    let (a, b) = (Rec::default(), Rec::default());
    let s0 = net.sink(0);
    s0.send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(7, 1, b"by lid"));
    s0.send(&Dest { lid: 0, grh: None, ..Default::default() }, &mut send_only(7, 2, b"lid 0"));
    s0.send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut send_only(7, 3, b"loopback"));
    s0.send(&Dest { lid: 9, grh: None, ..Default::default() }, &mut send_only(7, 4, b"nowhere"));
    assert_eq!(net.pump(&[&a, &b], 100), 2);
    let got: Vec<_> =
        b.0.lock()
            .unwrap()
            .iter()
            .map(|(m, p)| (m.src.lid, m.grh, RocePacket::parse(p).unwrap().payload.to_vec()))
            .collect();
    assert_eq!(got, vec![(1, None, b"by lid".to_vec())]);
    assert_eq!(a.0.lock().unwrap().len(), 1);
    let c0 = net.port(0).counters.snapshot();
    assert_eq!((c0.tx_packets, c0.tx_no_route, c0.rx_packets), (2, 2, 1));
    assert_eq!(net.port(1).counters.snapshot().rx_packets, 1);
}
