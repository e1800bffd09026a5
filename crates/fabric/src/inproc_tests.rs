//! The in-process net: routing by LID, loopback, no route.

use std::net::Ipv4Addr;
use std::sync::Arc;

use super::test_support::{send_only, Rec};
use super::{Dest, Endpoint, InProcNet};
use vrnic_sys::clock::ManualClock;
use vrnic_wire::packet::RocePacket;

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

/// A packet to a multicast LID goes to every port of the net, the sender's
/// included (the HCA's loopback), with its GRH; the receivers pass the
/// multicast DGID up (the device filters by attached QPs). Without a GRH
/// carrying a multicast DGID it is not sent.
#[test]
fn multicast_lid_reaches_every_port() {
    let eps = [1u8, 2, 3].map(|i| Endpoint::v4(i as u16, Ipv4Addr::new(10, 0, 0, i)));
    let net = InProcNet::new(&eps, &[], Arc::new(ManualClock::default()));
    let mgid = [0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
    let mut sgid = [0u8; 16];
    sgid[..2].copy_from_slice(&[0xfe, 0x80]);
    let g = vrnic_wire::grh::Repr { hop_limit: 1, sgid, dgid: mgid, ..Default::default() };
    let recs = [Rec::default(), Rec::default(), Rec::default()];
    let s1 = net.sink(1);
    s1.send(&Dest { lid: 0xc000, grh: Some(g), ..Default::default() }, &mut send_only(0xff_ffff, 1, b"mc"));
    s1.send(&Dest { lid: 0xc000, grh: None, ..Default::default() }, &mut send_only(0xff_ffff, 2, b"no grh"));
    let mut unicast_dgid = g;
    unicast_dgid.dgid = sgid;
    s1.send(&Dest { lid: 0xc001, grh: Some(unicast_dgid), ..Default::default() }, &mut send_only(0xff_ffff, 3, b"x"));
    assert_eq!(net.pump(&[&recs[0], &recs[1], &recs[2]], 100), 3);
    for (i, r) in recs.iter().enumerate() {
        let got: Vec<_> =
            r.0.lock().unwrap().iter().map(|(m, p)| (m.src.lid, m.local, m.grh.map(|g| g.dgid), p.len())).collect();
        assert_eq!(got, vec![(2, i == 1, Some(mgid), send_only(0xff_ffff, 1, b"mc").len())], "port {i}");
        assert_eq!(net.port(i).counters.snapshot().rx_mcast_packets, 1);
    }
    let c = net.port(1).counters.snapshot();
    assert_eq!((c.tx_mcast_packets, c.tx_packets, c.tx_mcast_no_grh, c.tx_no_route), (1, 3, 2, 0));
}
