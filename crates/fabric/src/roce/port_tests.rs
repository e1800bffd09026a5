//! RocePort tests: two ports joined by a recording FrameSink, the frames of
//! one fed into the other's `accept`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::*;
use vrnic_packet::EthDest;
use vrnic_wire::bth::Opcode;
use vrnic_wire::packet::{self, Headers, RocePacket};

/// Records what the port sends.
#[derive(Default)]
struct Wire(Mutex<Vec<Vec<u8>>>);

impl FrameSink for Wire {
    fn send_frame(&self, frame: &[u8]) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

impl Wire {
    fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

struct End {
    port: Arc<RocePort>,
    wire: Arc<Wire>,
    wakes: Arc<AtomicUsize>,
}

fn end() -> End {
    let wire = Arc::new(Wire::default());
    let wakes = Arc::new(AtomicUsize::new(0));
    let w = wakes.clone();
    let port = RocePort::new(
        Arc::new(RoceGids::new(8)),
        wire.clone(),
        Arc::new(move || {
            w.fetch_add(1, Ordering::SeqCst);
        }),
    );
    End { port: Arc::new(port), wire, wakes }
}

fn n(c: &std::sync::atomic::AtomicU64) -> u64 {
    c.load(Ordering::SeqCst)
}

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

fn v4_entry(last: u8, mac: [u8; 6], vlan: Option<u16>) -> GidEntry {
    GidEntry { gid: roce::v4_mapped([10, 0, 0, last]), mac, vlan, version: RoceVersion::V2, ipv4: true }
}

fn v6_entry(last: u8, mac: [u8; 6], version: RoceVersion) -> GidEntry {
    let mut gid = [0u8; 16];
    gid[0] = 0xfe;
    gid[1] = 0x80;
    gid[15] = last;
    GidEntry { gid, mac, vlan: None, version, ipv4: false }
}

/// A SEND_ONLY to `qp` with `payload`, its ICRC slot zero.
fn pkt(op: u8, qp: u32, payload: &[u8]) -> Vec<u8> {
    let h = Headers::new(bth::Repr { opcode: Opcode(op), dest_qp: qp, psn: 9, ..Default::default() });
    let mut v = Vec::new();
    packet::emit(&h, payload, &mut v).unwrap();
    v
}

fn dest(from: &GidEntry, to: &GidEntry, dmac: [u8; 6]) -> Dest {
    Dest {
        lid: 0,
        grh: Some(grh::Repr { traffic_class: 0x02, hop_limit: 0, sgid: from.gid, dgid: to.gid, ..Default::default() }),
        eth: EthDest { sgid_index: 1, dmac, udp_sport: 0xc0de, pcp: 0 },
    }
}

/// A sends `p` to B; the one frame on A's wire goes into B's accept.
fn across(a: &End, b: &End, d: &Dest, p: &mut [u8]) -> (Vec<u8>, Option<(RxMeta, Range<usize>)>) {
    a.port.send(d, p);
    let mut frames = a.wire.take();
    assert_eq!(frames.len(), 1);
    let f = frames.pop().unwrap();
    let got = b.port.accept(&f);
    (f, got)
}

#[test]
fn ipv4_roundtrip_with_meta_and_counters() {
    let (a, b) = (end(), end());
    let (ea, eb) = (v4_entry(1, MAC_A, None), v4_entry(2, MAC_B, None));
    a.port.gids().set(1, Some(ea)).unwrap();
    b.port.gids().set(3, Some(eb)).unwrap();
    let mut p = pkt(0x04, 0x42, b"hello over RoCEv2");
    let (f, got) = across(&a, &b, &dest(&ea, &eb, MAC_B), &mut p);
    let (meta, r) = got.expect("accepted");
    // The frame: MACs, IPv4 (TTL 64 for hop limit 0, ToS), UDP ports.
    assert_eq!((&f[..6], &f[6..12], &f[12..14]), (&MAC_B[..], &MAC_A[..], &[8u8, 0][..]));
    assert_eq!((f[15], f[22], &f[26..34]), (0x02, 64, &[10, 0, 0, 1, 10, 0, 0, 2][..]));
    assert_eq!(&f[34..38], &[0xc0, 0xde, 0x12, 0xb7]);
    // BTH..ICRC is the packet, and the sender's packet got the ICRC.
    assert_eq!(&f[r.clone()], &p[..]);
    assert_ne!(&p[p.len() - 4..], &[0; 4]);
    let rp = RocePacket::parse(&f[r]).unwrap();
    assert_eq!((rp.headers.bth.dest_qp, rp.payload), (0x42, &b"hello over RoCEv2"[..]));
    assert_eq!(meta.src, Endpoint { lid: 0, gid: ea.gid });
    assert_eq!((meta.local, meta.net, meta.vlan), (false, NetHdr::RoceV2Ipv4, None));
    let g = meta.grh.unwrap();
    assert_eq!((g.sgid, g.dgid, g.traffic_class, g.hop_limit), (ea.gid, eb.gid, 0x02, 64));
    assert_eq!((g.payload_len as usize, g.next_header, g.flow_label), (p.len(), 0x1b, 0));
    let (ca, cb) = (a.port.counters(), b.port.counters());
    assert_eq!((n(&ca.tx_packets), n(&ca.tx_bytes)), (1, f.len() as u64));
    assert_eq!((n(&cb.rx_packets), n(&cb.rx_bytes)), (1, f.len() as u64));
    assert_eq!(n(&ca.loopback_packets) + n(&cb.rx_not_ours) + n(&cb.rx_icrc_errors), 0);
    assert_eq!(a.wakes.load(Ordering::SeqCst), 0);
}

#[test]
fn vlan_tag_carries_pcp_and_must_match_the_entry() {
    let (a, b) = (end(), end());
    let ea = v4_entry(1, MAC_A, Some(100));
    a.port.gids().set(1, Some(ea)).unwrap();
    let eb = v4_entry(2, MAC_B, Some(100));
    b.port.gids().set(0, Some(eb)).unwrap();
    let mut d = dest(&ea, &eb, MAC_B);
    d.eth.pcp = 5;
    let (f, got) = across(&a, &b, &d, &mut pkt(0x04, 7, b"tagged"));
    assert_eq!(&f[12..16], &[0x81, 0x00, 0xa0, 100]);
    let (meta, _) = got.expect("same VLAN: accepted");
    assert_eq!(meta.vlan, Some(5 << 13 | 100));
    // The same address on another VLAN (or untagged) is not ours.
    b.port.gids().set(0, Some(v4_entry(2, MAC_B, None))).unwrap();
    assert!(b.port.accept(&f).is_none());
    b.port.gids().set(0, Some(v4_entry(2, MAC_B, Some(101)))).unwrap();
    assert!(b.port.accept(&f).is_none());
    assert_eq!(n(&b.port.counters().rx_not_ours), 2);
    // A priority-tagged frame (VID 0) belongs to the untagged entry.
    let ea0 = v4_entry(1, MAC_A, Some(0));
    a.port.gids().set(1, Some(ea0)).unwrap();
    b.port.gids().set(0, Some(v4_entry(2, MAC_B, None))).unwrap();
    let (f, got) = across(&a, &b, &d, &mut pkt(0x04, 7, b"prio"));
    assert_eq!(&f[12..16], &[0x81, 0x00, 0xa0, 0]);
    assert_eq!(got.unwrap().0.vlan, Some(5 << 13));
}

#[test]
fn ect0_follows_the_rp_enable_bit_of_the_frames_priority() {
    use vrnic_wire::congestion::{frame_ecn, Ecn};
    let (a, b) = (end(), end());
    let ea = v4_entry(1, MAC_A, Some(100));
    let eb = v4_entry(2, MAC_B, Some(100));
    a.port.gids().set(1, Some(ea)).unwrap();
    b.port.gids().set(0, Some(eb)).unwrap();
    // The RP on priority 3 only; the traffic class's own ECN bits are 00.
    a.port.cc().set_config(CcConfig { rp_enabled: 1 << 3, ..CcConfig::connectx_default() });
    let mut d = dest(&ea, &eb, MAC_B);
    d.grh.as_mut().unwrap().traffic_class = 26 << 2;
    let ecn_at = |pcp: u8| {
        let mut d = d;
        d.eth.pcp = pcp;
        let (f, got) = across(&a, &b, &d, &mut pkt(0x04, 7, b"x"));
        assert!(got.is_some(), "ICRC good whatever the ECN bits");
        let p = roce::parse(&f).unwrap().unwrap();
        (frame_ecn(&p).unwrap(), p.repr.grh.traffic_class >> 2)
    };
    assert_eq!(ecn_at(3), (Ecn::Ect0, 26), "tagged PCP 3: ECT(0), the DSCP kept");
    assert_eq!(ecn_at(2), (Ecn::NotEct, 26), "PCP 2: the RP is off");
    // Untagged frames are priority 0.
    a.port.gids().set(1, Some(v4_entry(1, MAC_A, None))).unwrap();
    b.port.gids().set(0, Some(v4_entry(2, MAC_B, None))).unwrap();
    assert_eq!(ecn_at(3).0, Ecn::NotEct);
    a.port.cc().set_config(CcConfig { rp_enabled: 1, ..CcConfig::connectx_default() });
    assert_eq!(ecn_at(3).0, Ecn::Ect0);
}

#[test]
fn ipv6_and_v1_frames_with_flow_label_ports() {
    for version in [RoceVersion::V2, RoceVersion::V1] {
        let (a, b) = (end(), end());
        let (ea, eb) = (v6_entry(1, MAC_A, version), v6_entry(2, MAC_B, version));
        a.port.gids().set(1, Some(ea)).unwrap();
        b.port.gids().set(1, Some(eb)).unwrap();
        let mut d = dest(&ea, &eb, MAC_B);
        d.eth.udp_sport = 0;
        d.grh.as_mut().unwrap().flow_label = 0x12345;
        d.grh.as_mut().unwrap().hop_limit = 7;
        let (f, got) = across(&a, &b, &d, &mut pkt(0x04, 3, b"six"));
        let (meta, r) = got.expect("accepted");
        let g = meta.grh.unwrap();
        assert_eq!((g.flow_label, g.hop_limit, g.sgid, g.dgid), (0x12345, 7, ea.gid, eb.gid));
        if version == RoceVersion::V2 {
            assert_eq!((meta.net, &f[12..14]), (NetHdr::RoceV2Ipv6, &[0x86, 0xdd][..]));
            let sport = u16::from_be_bytes([f[54], f[55]]);
            assert_eq!(sport, roce::flow_label_to_udp_sport(0x12345));
            assert_eq!(r.start, 62);
        } else {
            assert_eq!((meta.net, &f[12..14]), (NetHdr::RoceV1, &[0x89, 0x15][..]));
            assert_eq!(r.start, 54);
        }
        // A v2 frame is not for a v1 entry of the same GID, and back.
        let other = if version == RoceVersion::V2 { RoceVersion::V1 } else { RoceVersion::V2 };
        b.port.gids().set(1, Some(v6_entry(2, MAC_B, other))).unwrap();
        assert!(b.port.accept(&f).is_none());
        assert_eq!(n(&b.port.counters().rx_not_ours), 1);
    }
}

#[test]
fn udp_source_port_without_flow_label_is_a_stable_hash() {
    let (a, b) = (end(), end());
    let (ea, eb) = (v4_entry(1, MAC_A, None), v4_entry(2, MAC_B, None));
    a.port.gids().set(1, Some(ea)).unwrap();
    b.port.gids().set(1, Some(eb)).unwrap();
    let mut d = dest(&ea, &eb, MAC_B);
    d.eth.udp_sport = 0;
    let sport = |qp: u32| {
        let (f, got) = across(&a, &b, &d, &mut pkt(0x04, qp, b"h"));
        assert!(got.is_some());
        u16::from_be_bytes([f[34], f[35]])
    };
    let ports: Vec<u16> = (0..64).map(sport).collect();
    assert!(ports.iter().all(|&p| p >= 0xc000));
    assert_eq!(ports, (0..64).map(sport).collect::<Vec<_>>(), "stable per flow");
    let mut distinct = ports.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() > 32, "spread over QPs: {}", distinct.len());
}

#[test]
fn drops_are_counted() {
    let (a, b) = (end(), end());
    let (ea, eb) = (v4_entry(1, MAC_A, None), v4_entry(2, MAC_B, None));
    a.port.gids().set(1, Some(ea)).unwrap();
    b.port.gids().set(1, Some(eb)).unwrap();
    let d = dest(&ea, &eb, MAC_B);
    // Wrong DGID: not ours (left to the NIC path).
    let (f, got) = across(&a, &end(), &d, &mut pkt(0x04, 1, b"x"));
    assert!(got.is_none());
    // A flipped payload bit: ICRC error.
    let mut bad = f.clone();
    let at = bad.len() - 6;
    bad[at] ^= 1;
    assert!(b.port.accept(&bad).is_none());
    // A bad IPv4 header checksum: malformed.
    let mut bad = f.clone();
    bad[24] ^= 1;
    assert!(b.port.accept(&bad).is_none());
    // Not RoCE: ARP, a runt, UDP to another port; no counter moves.
    let mut arp = f.clone();
    arp[12..14].copy_from_slice(&[8, 6]);
    let mut other = f.clone();
    other[37] = 0x35;
    for f in [&arp[..], &f[..10], &other[..]] {
        assert!(b.port.accept(f).is_none());
    }
    let cb = b.port.counters();
    assert_eq!((n(&cb.rx_icrc_errors), n(&cb.rx_malformed), n(&cb.rx_not_ours), n(&cb.rx_packets)), (1, 1, 0, 0));
    assert!(b.port.accept(&f).is_some());
    // Unknown source GID index, no GRH, a packet shorter than BTH + ICRC.
    let ca = a.port.counters();
    a.port.send(&Dest { eth: EthDest { sgid_index: 5, ..d.eth }, ..d }, &mut pkt(0x04, 1, b"x"));
    a.port.send(&Dest { grh: None, ..d }, &mut pkt(0x04, 1, b"x"));
    a.port.send(&d, &mut [0x04; 15]);
    a.port.send(&Dest { eth: EthDest { sgid_index: 200, ..d.eth }, ..d }, &mut pkt(0x04, 1, b"x"));
    assert_eq!((n(&ca.tx_no_gid), n(&ca.tx_errors)), (2, 2));
    // Too big for the link: an error, nothing sent.
    a.port.send(&d, &mut vec![0x04; MAX_FRAME]);
    assert_eq!(n(&ca.tx_errors), 3);
    assert!(a.wire.take().is_empty());
    assert_eq!(n(&ca.tx_packets), 1);
}

/// A frame shorter than Ethernet's minimum leaves padded to 60 bytes and
/// is still taken whole (the IP length, not the frame, bounds the packet).
#[test]
fn short_frames_are_padded() {
    let (a, b) = (end(), end());
    let (ea, eb) = (v4_entry(1, MAC_A, None), v4_entry(2, MAC_B, None));
    a.port.gids().set(1, Some(ea)).unwrap();
    b.port.gids().set(1, Some(eb)).unwrap();
    let mut p = pkt(0x04, 3, b"");
    assert_eq!(p.len(), 16);
    let (f, got) = across(&a, &b, &dest(&ea, &eb, MAC_B), &mut p);
    assert_eq!(f.len(), MIN_FRAME);
    assert_eq!(&f[58..], &[0, 0]);
    let (_, r) = got.expect("accepted");
    assert_eq!((r.clone(), &f[r]), (42..58, &p[..]));
    assert_eq!(n(&a.port.counters().tx_bytes), MIN_FRAME as u64);
}

#[test]
fn cnps_are_counted_both_ways() {
    let (a, b) = (end(), end());
    let (ea, eb) = (v4_entry(1, MAC_A, None), v4_entry(2, MAC_B, None));
    a.port.gids().set(1, Some(ea)).unwrap();
    b.port.gids().set(1, Some(eb)).unwrap();
    let mut cnp = Vec::new();
    packet::emit(&packet::cnp_headers(0x99), &[], &mut cnp).unwrap();
    assert_eq!(cnp.len(), 32);
    let (_, got) = across(&a, &b, &dest(&ea, &eb, MAC_B), &mut cnp);
    assert!(got.is_some());
    assert_eq!((n(&a.port.counters().cnp_sent), n(&b.port.counters().cnp_received)), (1, 1));
}

#[test]
fn loopback_to_own_gid_skips_the_wire() {
    let a = end();
    let (e1, e2) = (v4_entry(1, MAC_A, Some(9)), v4_entry(2, MAC_A, Some(9)));
    a.port.gids().set(1, Some(e1)).unwrap();
    a.port.gids().set(2, Some(e2)).unwrap();
    let mut d = dest(&e1, &e2, MAC_A);
    d.eth.pcp = 3;
    let mut p = pkt(0x04, 0x21, b"to myself");
    a.port.send(&d, &mut p);
    assert!(a.wire.take().is_empty(), "not on the wire");
    assert_eq!(a.wakes.load(Ordering::SeqCst), 1);
    let mut got = Vec::new();
    assert_eq!(a.port.drain_loopback(&mut |m, p| got.push((*m, p.to_vec()))), 1);
    assert_eq!(a.port.drain_loopback(&mut |_, _| panic!("drained")), 0);
    let (meta, bytes) = &got[0];
    assert_eq!(bytes, &p, "the packet as sent, ICRC filled");
    assert_eq!((meta.local, meta.net, meta.vlan, meta.src.gid), (true, NetHdr::RoceV2Ipv4, Some(3 << 13 | 9), e1.gid));
    let g = meta.grh.unwrap();
    assert_eq!((g.dgid, g.hop_limit, g.payload_len as usize), (e2.gid, 64, p.len()));
    // What the wire would have carried: the same frame accepted by a port
    // that owns the destination gives the same meta (but not local).
    let b = end();
    b.port.gids().set(0, Some(e2)).unwrap();
    let other = end();
    other.port.gids().set(1, Some(e1)).unwrap();
    let (_, acc) = across(&other, &b, &d, &mut pkt(0x04, 0x21, b"to myself"));
    let (m2, r2) = acc.unwrap();
    assert_eq!(RxMeta { local: true, ..m2 }, *meta);
    let c = a.port.counters();
    assert_eq!((n(&c.loopback_packets), n(&c.tx_packets)), (1, 0));
    assert!(r2.len() == p.len());
}

#[test]
fn multicast_goes_out_and_back_to_the_port_itself() {
    let a = end();
    let e1 = v4_entry(1, MAC_A, None);
    a.port.gids().set(1, Some(e1)).unwrap();
    let group = GidEntry { gid: roce::v4_mapped([239, 1, 1, 20]), ..e1 };
    let d = dest(&e1, &group, [0x01, 0x00, 0x5e, 0x01, 0x01, 0x14]);
    let mut p = pkt(0x04, 0xff_ffff, b"to the group");
    a.port.send(&d, &mut p);
    let frames = a.wire.take();
    assert_eq!(frames.len(), 1, "on the wire");
    assert_eq!(&frames[0][..6], &[0x01, 0x00, 0x5e, 0x01, 0x01, 0x14]);
    let mut got = Vec::new();
    assert_eq!(a.port.drain_loopback(&mut |m, p| got.push((*m, p.to_vec()))), 1, "and looped back");
    let (meta, bytes) = &got[0];
    assert_eq!(bytes, &p);
    assert_eq!((meta.local, meta.grh.unwrap().dgid, meta.src.gid), (true, group.gid, e1.gid));
    let c = a.port.counters();
    assert_eq!((n(&c.loopback_packets), n(&c.tx_packets)), (1, 1));
    // Unicast to a foreign GID only goes out.
    let e9 = v4_entry(9, MAC_B, None);
    a.port.send(&dest(&e1, &e9, MAC_B), &mut pkt(0x04, 5, b"x"));
    assert_eq!(a.wire.take().len(), 1);
    assert_eq!(a.port.drain_loopback(&mut |_, _| panic!("not looped back")), 0);
}

#[test]
#[cfg_attr(miri, ignore = "frames and ICRCs 4,106 packets: minutes under the interpreter")]
fn loopback_queue_is_bounded_and_drains_in_order() {
    let a = end();
    let e1 = v4_entry(1, MAC_A, None);
    a.port.gids().set(1, Some(e1)).unwrap();
    let d = dest(&e1, &e1, MAC_A);
    for i in 0..LOOPBACK_QUEUE as u32 + 10 {
        a.port.send(&d, &mut pkt(0x04, i, b""));
    }
    let c = a.port.counters();
    assert_eq!((n(&c.loopback_packets), n(&c.loopback_dropped)), (LOOPBACK_QUEUE as u64, 10));
    let mut qps = Vec::new();
    // Replies sent while draining wait for the next drain.
    let port = a.port.clone();
    let drained = a.port.drain_loopback(&mut |_, p| {
        let qp = RocePacket::parse(p).unwrap().headers.bth.dest_qp;
        if qp == 0 {
            port.send(&d, &mut pkt(0x04, 0xabc, b"reply"));
        }
        qps.push(qp);
    });
    assert_eq!(drained, LOOPBACK_QUEUE);
    assert_eq!(qps, (0..LOOPBACK_QUEUE as u32).collect::<Vec<_>>());
    let mut next = Vec::new();
    a.port.drain_loopback(&mut |_, p| next.push(RocePacket::parse(p).unwrap().headers.bth.dest_qp));
    assert_eq!(next, vec![0xabc]);
}

/// A sink that sends again from inside `send_frame` (the scratch buffer is
/// in use on this thread): both frames go out intact.
#[test]
fn reentrant_send_uses_its_own_buffer() {
    struct Reenter {
        // Weak: the port holds the sink (no cycle, nothing leaks).
        port: OnceLock<std::sync::Weak<RocePort>>,
        d: Dest,
        frames: Mutex<Vec<Vec<u8>>>,
    }
    impl FrameSink for Reenter {
        fn send_frame(&self, frame: &[u8]) {
            let first = self.frames.lock().unwrap().is_empty();
            self.frames.lock().unwrap().push(frame.to_vec());
            if first {
                self.port.get().unwrap().upgrade().unwrap().send(&self.d, &mut pkt(0x04, 2, b"inner"));
            }
        }
    }
    let (ea, eb) = (v4_entry(1, MAC_A, None), v4_entry(2, MAC_B, None));
    let sink = Arc::new(Reenter { port: OnceLock::new(), d: dest(&ea, &eb, MAC_B), frames: Mutex::default() });
    let gids = Arc::new(RoceGids::new(4));
    gids.set(1, Some(ea)).unwrap();
    let port = Arc::new(RocePort::new(gids, sink.clone(), Arc::new(|| {})));
    let _ = sink.port.set(Arc::downgrade(&port));
    port.send(&sink.d, &mut pkt(0x04, 1, b"outer"));
    let b = end();
    b.port.gids().set(1, Some(eb)).unwrap();
    let frames = sink.frames.lock().unwrap().clone();
    let qps: Vec<u32> = frames
        .iter()
        .map(|f| {
            let (_, r) = b.port.accept(f).expect("intact");
            RocePacket::parse(&f[r]).unwrap().headers.bth.dest_qp
        })
        .collect();
    assert_eq!(qps, vec![1, 2]);
}

/// A wire that classifies priorities as the Ethernet link does (`fabric/ether/classify.rs`).
#[derive(Default)]
struct ClassWire {
    frames: Mutex<Vec<Vec<u8>>>,
    classes: crate::ether::Classifier,
}

impl FrameSink for ClassWire {
    fn send_frame(&self, frame: &[u8]) {
        self.frames.lock().unwrap().push(frame.to_vec());
    }
    fn priority(&self, pcp: Option<u8>, dscp: Option<u8>) -> u8 {
        self.classes.priority(pcp, dscp)
    }
}

/// Trust DSCP with 26 → 3: a RoCE frame's priority (the RP enable it is ECN-capable by, the priority its
/// receiver's NP/RP go by) is its DSCP's, not its PCP; with trust PCP it is the PCP.
#[test]
fn under_dscp_trust_a_roce_frames_priority_is_its_dscps() {
    use crate::ether::PrioMap;
    use vrnic_wire::congestion::{frame_ecn, Ecn};
    let mk = || {
        let w = Arc::new(ClassWire::default());
        let p = Arc::new(RocePort::new(Arc::new(RoceGids::new(8)), w.clone(), Arc::new(|| {})));
        (p, w)
    };
    let ((a, wa), (b, wb)) = (mk(), mk());
    let mut m = PrioMap { trust_dscp: true, ..PrioMap::default() };
    m.dscp2prio[26] = 3;
    wa.classes.set(&m);
    wb.classes.set(&m);
    let (ea, eb) = (v4_entry(1, MAC_A, Some(100)), v4_entry(2, MAC_B, Some(100)));
    a.gids().set(1, Some(ea)).unwrap();
    b.gids().set(0, Some(eb)).unwrap();
    a.cc().set_config(CcConfig { rp_enabled: 1 << 3, ..CcConfig::connectx_default() });
    let send = |dscp: u8, pcp: u8| {
        let mut d = dest(&ea, &eb, MAC_B);
        d.grh.as_mut().unwrap().traffic_class = dscp << 2;
        d.eth.pcp = pcp;
        a.send(&d, &mut pkt(0x04, 7, b"x"));
        let f = wa.frames.lock().unwrap().pop().unwrap();
        let (meta, _) = b.accept(&f).expect("accepted");
        (frame_ecn(&roce::parse(&f).unwrap().unwrap()).unwrap(), meta.prio())
    };
    assert_eq!(send(26, 0), (Ecn::Ect0, 3), "DSCP 26 -> priority 3 though PCP 0");
    assert_eq!(send(8, 3), (Ecn::NotEct, 1), "DSCP 8 -> priority 1 though PCP 3");
    wa.classes.set(&PrioMap::default());
    wb.classes.set(&PrioMap::default());
    assert_eq!(send(26, 0), (Ecn::NotEct, 0), "trust PCP: PCP 0");
    assert_eq!(send(8, 3), (Ecn::Ect0, 3), "trust PCP: PCP 3");
}
