//! The fabric's handling of packets with a GRH: routed by DLID, framed in
//! the envelope, ICRC over the IPv6 form, DGID checked by the receiver.

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::fault::FaultConfig;
use super::*;
use vrnic_sys::clock::{ManualClock, MonotonicClock};
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::grh;
use vrnic_wire::packet::{self, Headers, RocePacket};

#[derive(Default)]
struct Rec(Mutex<Vec<(RxMeta, Vec<u8>)>>);
impl PacketHandler for Rec {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        self.0.lock().unwrap().push((*meta, pkt.to_vec()));
    }
}

fn send_only(dqp: u32, psn: u32, payload: &[u8]) -> Vec<u8> {
    let h = Headers::new(bth::Repr { opcode: Opcode(0x04), dest_qp: dqp, psn, ..Default::default() });
    let mut v = Vec::new();
    packet::emit(&h, payload, &mut v).unwrap();
    v
}

/// GID 0 of a port with GUID `guid`: fe80::/64 + the GUID.
fn gid0(guid: u64) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
    g[8..].copy_from_slice(&guid.to_be_bytes());
    g
}

fn grh_to(sgid: [u8; 16], dgid: [u8; 16]) -> Option<grh::Repr> {
    Some(grh::Repr { traffic_class: 0x20, flow_label: 0x1234, hop_limit: 255, sgid, dgid, ..Default::default() })
}

fn net(faults: &[FaultConfig]) -> Arc<InProcNet> {
    let eps = [Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)), Endpoint::v4(2, Ipv4Addr::new(10, 0, 0, 2))];
    let net = InProcNet::new(&eps, faults, Arc::new(ManualClock::default()));
    assert!(net.port(0).set_gid_table(vec![gid0(0xa1), gid0(0)]));
    assert!(net.port(1).set_gid_table(vec![gid0(0xb1)]));
    assert!(!net.port(1).set_gid_table(vec![]), "the table is set once");
    net
}

/// Routed by the DLID whatever the DGID says; delivered with the GRH; a
/// DGID that is not the receiver's is dropped and counted.
fn routes_and_checks(net: &Arc<InProcNet>) {
    let (a, b) = (Rec::default(), Rec::default());
    let s0 = net.sink(0);
    assert_eq!((s0.gid(0), s0.gid(1), s0.gid(2)), (Some(gid0(0xa1)), Some(gid0(0)), None));
    s0.send(&Dest { lid: 2, grh: grh_to(gid0(0xa1), gid0(0xb1)), ..Default::default() }, &mut send_only(7, 1, b"to b"));
    s0.send(
        &Dest { lid: 2, grh: grh_to(gid0(0xa1), gid0(0xa1)), ..Default::default() },
        &mut send_only(7, 2, b"b's LID, a's GID"),
    );
    s0.send(
        &Dest { lid: 9, grh: grh_to(gid0(0xa1), gid0(0xb1)), ..Default::default() },
        &mut send_only(7, 3, b"b's GID, no LID"),
    );
    s0.send(
        &Dest { lid: 1, grh: grh_to(gid0(0xa1), gid0(0xa1)), ..Default::default() },
        &mut send_only(7, 4, b"loopback"),
    );
    s0.send(
        &Dest { lid: 1, grh: grh_to(gid0(0xa1), gid0(0)), ..Default::default() },
        &mut send_only(7, 5, b"loopback, GID 1"),
    );
    assert_eq!(net.pump(&[&a, &b], 100), 4);
    let got_b = b.0.lock().unwrap();
    assert_eq!(got_b.len(), 1);
    let (m, p) = &got_b[0];
    let g = m.grh.expect("delivered with its GRH");
    assert_eq!(
        (g.sgid, g.dgid, g.traffic_class, g.flow_label, g.hop_limit, g.next_header),
        (gid0(0xa1), gid0(0xb1), 0x20, 0x1234, 255, 0x1b)
    );
    assert_eq!(g.payload_len as usize, p.len(), "PayLen: BTH through ICRC");
    assert_eq!(RocePacket::parse(p).unwrap().payload, b"to b");
    let got_a: Vec<_> =
        a.0.lock()
            .unwrap()
            .iter()
            .map(|(m, p)| (m.grh.map(|g| g.dgid), RocePacket::parse(p).unwrap().payload.to_vec()))
            .collect();
    assert_eq!(got_a, vec![(Some(gid0(0xa1)), b"loopback".to_vec()), (Some(gid0(0)), b"loopback, GID 1".to_vec())]);
    let (c0, c1) = (net.port(0).counters.snapshot(), net.port(1).counters.snapshot());
    assert_eq!((c0.tx_packets, c0.tx_no_route, c0.rx_packets, c0.rx_dgid_mismatch), (4, 1, 2, 0));
    assert_eq!((c1.rx_packets, c1.rx_dgid_mismatch, c1.rx_icrc_errors), (1, 1, 0));
    assert_eq!((c0.tx_grh_packets, c0.rx_grh_packets, c1.rx_grh_packets), (4, 2, 1));
}

#[test]
fn inproc_grh_routes_by_lid_and_checks_dgid() {
    routes_and_checks(&net(&[]));
}

/// The same with the ICRC on (a port injecting faults makes every port
/// check): the IPv6-form ICRC of GRH packets verifies.
#[test]
fn inproc_grh_with_icrc() {
    let f = FaultConfig {
        seed: 1,
        tx: super::fault::FaultRates { drop: 1e-12, ..Default::default() },
        ..Default::default()
    };
    let n = net(&[FaultConfig::default(), f]);
    routes_and_checks(&n);
}

/// Fault injection on GRH packets: corruption is caught by the ICRC, CE
/// marks set the BTH's FECN.
#[test]
fn corrupted_grh_packets_are_dropped() {
    let f = FaultConfig {
        seed: 5,
        tx: super::fault::FaultRates { corrupt: 0.5, ecn_ce: 0.5, ..Default::default() },
        ..Default::default()
    };
    let n = net(&[f]);
    let b = Rec::default();
    for i in 0..200 {
        n.sink(0).send(
            &Dest { lid: 2, grh: grh_to(gid0(0xa1), gid0(0xb1)), ..Default::default() },
            &mut send_only(7, i, &[i as u8; 40]),
        );
    }
    n.pump(&[&Rec::default(), &b], 1000);
    let (tx, rx) = (n.port(0).counters.snapshot(), n.port(1).counters.snapshot());
    assert!(tx.fault_corrupted > 50);
    // Only bytes the ICRC protects are flipped: every corruption is caught,
    // and a CE mark (FECN, masked) lands on the BTH, not the GRH.
    assert_eq!(rx.rx_icrc_errors, tx.fault_corrupted);
    assert_eq!((rx.rx_malformed, rx.rx_dgid_mismatch), (0, 0));
    assert_eq!(rx.rx_packets + rx.rx_icrc_errors, 200);
    let got = b.0.lock().unwrap();
    assert!(got.iter().any(|(_, p)| p[4] & 0x80 != 0), "some arrived CE-marked");
    for (m, p) in got.iter() {
        let r = RocePacket::parse(p).unwrap();
        assert_eq!(r.payload, &[r.headers.bth.psn as u8; 40][..]);
        let g = m.grh.unwrap();
        assert_eq!((g.sgid, g.dgid), (gid0(0xa1), gid0(0xb1)));
    }
}

fn wait_for(cond: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// Two UDP instances: a GRH packet crosses the socket (ICRC checked) and
/// loops back; the pcap holds IPv6 frames for them and IPv4 for the rest.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn udp_grh_between_instances_and_in_pcap() {
    let dir = std::env::temp_dir().join(format!("vrnic-grh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("g.pcap");
    let clock = Arc::new(MonotonicClock::default());
    let cfg = |peers, gid: &str| FabricConfig {
        port: 0,
        bind: "127.0.0.1".into(),
        gid: Some(gid.into()),
        peers,
        ..Default::default()
    };
    let probe = UdpFabric::bind(&cfg(vec![], "10.0.0.2"), 2, clock.clone()).unwrap();
    let b_addr = probe.local_addr().unwrap();
    drop(probe);
    let mut ca =
        cfg(vec![PeerConfig { lid: Some(2), gid: Some("10.0.0.2".into()), addr: b_addr.to_string() }], "10.0.0.1");
    ca.pcap = Some(file.clone());
    let mut a = UdpFabric::bind(&ca, 1, clock.clone()).unwrap();
    let mut cb = cfg(
        vec![PeerConfig { lid: Some(1), gid: Some("10.0.0.1".into()), addr: a.local_addr().unwrap().to_string() }],
        "10.0.0.2",
    );
    cb.port = b_addr.port();
    let mut b = UdpFabric::bind(&cb, 2, clock).unwrap();
    a.port().set_gid_table(vec![gid0(0xa1)]);
    b.port().set_gid_table(vec![gid0(0xb1)]);
    let (ra, rb) = (Arc::new(Rec::default()), Arc::new(Rec::default()));
    a.start(ra.clone()).unwrap();
    b.start(rb.clone()).unwrap();
    a.sink().send(
        &Dest { lid: 2, grh: grh_to(gid0(0xa1), gid0(0xb1)), ..Default::default() },
        &mut send_only(9, 1, b"over the socket"),
    );
    a.sink().send(
        &Dest { lid: 2, grh: grh_to(gid0(0xa1), gid0(0xbb)), ..Default::default() },
        &mut send_only(9, 2, b"wrong DGID"),
    );
    a.sink().send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(9, 3, b"no GRH"));
    a.sink().send(
        &Dest { lid: 1, grh: grh_to(gid0(0xa1), gid0(0xa1)), ..Default::default() },
        &mut send_only(9, 4, b"loopback"),
    );
    let done = wait_for(|| {
        rb.0.lock().unwrap().len() == 2
            && ra.0.lock().unwrap().len() == 1
            && b.counters().snapshot().rx_dgid_mismatch == 1
    });
    assert!(
        done,
        "a {:?}\nb {:?}\nra {} rb {}",
        a.counters().snapshot(),
        b.counters().snapshot(),
        ra.0.lock().unwrap().len(),
        rb.0.lock().unwrap().len()
    );
    let got: Vec<_> =
        rb.0.lock()
            .unwrap()
            .iter()
            .map(|(m, p)| (m.grh.map(|g| g.sgid), RocePacket::parse(p).unwrap().payload.to_vec()))
            .collect();
    assert_eq!(got, vec![(Some(gid0(0xa1)), b"over the socket".to_vec()), (None, b"no GRH".to_vec())]);
    assert_eq!(ra.0.lock().unwrap()[0].0.grh.map(|g| g.dgid), Some(gid0(0xa1)));
    let c = b.counters().snapshot();
    assert_eq!((c.rx_icrc_errors, c.rx_malformed, c.rx_packets), (0, 0, 2));
    assert_eq!(a.counters().snapshot().rx_icrc_errors, 0, "the looped-back GRH packet was ICRC-checked (pcap on)");
    drop(a);
    // pcap: global header, then per record: 16 bytes + Ethernet (14) + ...
    let f = std::fs::read(&file).unwrap();
    let mut at = 24;
    let mut kinds = Vec::new();
    while at + 16 <= f.len() {
        let len = u32::from_le_bytes(f[at + 8..at + 12].try_into().unwrap()) as usize;
        let fr = &f[at + 16..at + 16 + len];
        let ethertype = u16::from_be_bytes([fr[12], fr[13]]);
        if ethertype == 0x86dd {
            // IPv6 next header UDP, destination port 4791, then BTH.
            assert_eq!((fr[14] >> 4, fr[20]), (6, 17));
            assert_eq!(&fr[14 + 8..14 + 24], &gid0(0xa1));
            assert_eq!(u16::from_be_bytes([fr[56], fr[57]]), 4791);
            assert_eq!(fr[62], 0x04, "BTH follows the UDP header");
        }
        kinds.push(ethertype);
        at += 16 + len;
    }
    // Sent: 3 to b (two IPv6, one IPv4), 1 looped back (IPv6, captured once).
    assert_eq!(kinds, vec![0x86dd, 0x86dd, 0x0800, 0x86dd]);
    // tshark decodes the IPv6 frames as RoCEv2 (skipped when not installed).
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .args([
            "-T",
            "fields",
            "-e",
            "ipv6.dst",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "infiniband.bth.destqp",
            "-e",
            "infiniband.bth.psn",
        ])
        .output();
    match out {
        Err(_) => eprintln!("tshark not installed: pcap decoding not checked"),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
            assert_eq!(lines.len(), 4, "{text}\n{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(lines[0], ["fe80::b1", "4", "0x000009", "1"]);
            assert_eq!(lines[1], ["fe80::bb", "4", "0x000009", "2"]);
            assert_eq!(lines[2], ["", "4", "0x000009", "3"]);
            assert_eq!(lines[3], ["fe80::a1", "4", "0x000009", "4"]);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
