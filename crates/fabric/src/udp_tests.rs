//! The UDP link: two instances, loopback, the pump and the poller, GSO
//! batches, peer isolation, pcap.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::gso::TxQueue;
use super::test_support::{send_only, wait_for, Rec};
use super::*;
use vrnic_sys::clock::MonotonicClock;
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::icrc;
use vrnic_wire::ip::PseudoHeader;
use vrnic_wire::packet::{self, Headers, RocePacket};

fn udp_cfg(peers: Vec<PeerConfig>, gid: &str) -> FabricConfig {
    FabricConfig { port: 0, bind: "127.0.0.1".into(), gid: Some(gid.into()), peers, ..Default::default() }
}

/// Records the thread each packet was delivered on, and counts flushes.
#[derive(Default)]
struct ThreadRec(Mutex<Vec<(std::thread::ThreadId, u32)>>, std::sync::atomic::AtomicUsize);
impl PacketHandler for ThreadRec {
    fn receive(&self, _: &RxMeta, pkt: &[u8]) {
        let psn = RocePacket::parse(pkt).map(|r| r.headers.bth.psn).unwrap_or(u32::MAX);
        self.0.lock().unwrap().push((std::thread::current().id(), psn));
    }
    fn flush(&self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// Two UDP fabrics on loopback that know each other (LIDs 1 and 2).
fn udp_pair(clock: Arc<MonotonicClock>) -> (UdpFabric, UdpFabric) {
    // Bind B first to learn its port, then A knowing B, then rebuild B knowing A.
    let probe = UdpFabric::bind(&udp_cfg(vec![], "::ffff:10.0.0.2"), 2, clock.clone()).unwrap();
    let b_addr = probe.local_addr().unwrap();
    drop(probe);
    let a = UdpFabric::bind(
        &udp_cfg(
            vec![PeerConfig { lid: Some(2), gid: Some("::ffff:10.0.0.2".into()), addr: b_addr.to_string() }],
            "::ffff:10.0.0.1",
        ),
        1,
        clock.clone(),
    )
    .unwrap();
    let a_addr = a.local_addr().unwrap();
    let mut cfg_b = udp_cfg(
        vec![PeerConfig { lid: Some(1), gid: Some("::ffff:10.0.0.1".into()), addr: a_addr.to_string() }],
        "::ffff:10.0.0.2",
    );
    cfg_b.port = b_addr.port();
    let b = UdpFabric::bind(&cfg_b, 2, clock).unwrap();
    (a, b)
}

/// While a poller is active, what arrives is delivered on the polling
/// thread, in order, and the coalesced-ACK flush comes on the pass
/// after; once idle, the worker receives again.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn poller_receives_on_its_thread_then_hands_back() {
    let (mut a, mut b) = udp_pair(Arc::new(MonotonicClock::default()));
    a.start(Arc::new(Rec::default())).unwrap();
    let rec = Arc::new(ThreadRec::default());
    b.start(rec.clone()).unwrap();
    let me = std::thread::current().id();
    let mut poller = b.poller();
    assert_eq!(poller.poll(), 0);
    assert!(poller.is_active());
    // Let the worker wake and take the socket out of its epoll set.
    std::thread::sleep(Duration::from_millis(50));
    let flushes = rec.1.load(Ordering::SeqCst);
    for i in 0..20 {
        a.sink().send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(9, i, &[i as u8; 100]));
    }
    let t = Instant::now();
    while rec.0.lock().unwrap().len() < 20 {
        poller.poll();
        assert!(t.elapsed() < Duration::from_secs(5), "poller did not receive");
    }
    let got = rec.0.lock().unwrap().clone();
    assert!(got.iter().all(|(t, _)| *t == me), "delivered on another thread while polling");
    assert_eq!(got.iter().map(|(_, p)| *p).collect::<Vec<_>>(), (0..20).collect::<Vec<_>>());
    // The flush owed for the last burst comes at the start of the next pass.
    let owed = rec.1.load(Ordering::SeqCst);
    poller.poll();
    assert!(rec.1.load(Ordering::SeqCst) > owed);
    assert!(owed >= flushes);
    poller.idle();
    assert!(!poller.is_active());
    a.sink().send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(9, 20, b"worker"));
    assert!(wait_for(|| rec.0.lock().unwrap().len() == 21));
    assert_ne!(rec.0.lock().unwrap()[20].0, me, "the worker receives once the poller is idle");
}

/// A responder that coalesces: each request (PSN < 1000) owes an "ACK"
/// (PSN + 1000) to itself, sent on flush, as the engine does.
struct Acker {
    rec: ThreadRec,
    owed: Mutex<Vec<u32>>,
    sink: std::sync::OnceLock<Arc<dyn PacketSink>>,
}
impl PacketHandler for Acker {
    fn receive(&self, m: &RxMeta, pkt: &[u8]) {
        self.rec.receive(m, pkt);
        let psn = RocePacket::parse(pkt).map(|r| r.headers.bth.psn).unwrap_or(u32::MAX);
        if psn < 1000 {
            self.owed.lock().unwrap().push(psn + 1000);
        }
    }
    fn flush(&self) {
        self.rec.flush();
        let owed = std::mem::take(&mut *self.owed.lock().unwrap());
        for psn in owed {
            self.sink
                .get()
                .unwrap()
                .send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut send_only(9, psn, b"ack"));
        }
    }
}

/// What the handler sends when the pump flushes it (a coalesced ACK to
/// a local QP) is delivered by the pump as well, before `run` returns:
/// a loopback WRITE completes without waking the worker.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn loopback_pump_delivers_what_the_flush_sends() {
    let clock = Arc::new(MonotonicClock::default());
    let mut f = UdpFabric::bind(&udp_cfg(vec![], "::ffff:10.0.0.1"), 1, clock).unwrap();
    let acker = Arc::new(Acker { rec: ThreadRec::default(), owed: Mutex::new(vec![]), sink: Default::default() });
    let _ = acker.sink.set(f.sink());
    f.start(acker.clone()).unwrap();
    let pump = f.loopback_pump();
    let sink = f.sink();
    let me = std::thread::current().id();
    let mut inline = 0;
    for i in 0..40u32 {
        pump.run(|| sink.send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut send_only(9, i, b"req")));
        let got = acker.rec.0.lock().unwrap().clone();
        if got.len() == 2 * i as usize + 2 && got[got.len() - 2..] == [(me, i), (me, i + 1000)] {
            inline += 1;
        }
        assert!(wait_for(|| acker.rec.0.lock().unwrap().len() == 2 * i as usize + 2));
    }
    let psns: Vec<u32> = acker.rec.0.lock().unwrap().iter().map(|(_, p)| *p).collect();
    let want: Vec<u32> = (0..40).flat_map(|i| [i, i + 1000]).collect();
    assert_eq!(psns, want, "each request, then its ACK");
    assert!(inline >= 20, "only {inline} of 40 request+ACK rounds delivered inline");
}

/// Loopback traffic sent inside a pump is delivered, in order, before
/// `run` returns, on the sending thread (unless the worker happened to
/// be delivering at that moment; then the worker takes it).
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn loopback_pump_delivers_inline_and_in_order() {
    let clock = Arc::new(MonotonicClock::default());
    let mut f = UdpFabric::bind(&udp_cfg(vec![], "::ffff:10.0.0.1"), 1, clock).unwrap();
    let rec = Arc::new(ThreadRec::default());
    f.start(rec.clone()).unwrap();
    let pump = f.loopback_pump();
    let sink = f.sink();
    let me = std::thread::current().id();
    let mut inline = 0;
    for i in 0..40u32 {
        pump.run(|| {
            sink.send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut send_only(9, 2 * i, b"a"));
            sink.send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut send_only(9, 2 * i + 1, b"b"));
        });
        let got = rec.0.lock().unwrap().clone();
        if got.len() == 2 * i as usize + 2 && got[got.len() - 2..].iter().all(|(t, _)| *t == me) {
            inline += 1;
        }
        assert!(wait_for(|| rec.0.lock().unwrap().len() == 2 * i as usize + 2));
    }
    let psns: Vec<u32> = rec.0.lock().unwrap().iter().map(|(_, p)| *p).collect();
    assert_eq!(psns, (0..80).collect::<Vec<_>>(), "in order, none lost or doubled");
    assert!(inline >= 20, "only {inline} of 40 rounds delivered inline");
    // Outside a pump the worker delivers.
    sink.send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut send_only(9, 500, b"c"));
    assert!(wait_for(|| rec.0.lock().unwrap().len() == 81));
    assert_ne!(rec.0.lock().unwrap()[80].0, me);
}

#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn udp_two_instances_and_loopback() {
    let (mut a, mut b) = udp_pair(Arc::new(MonotonicClock::default()));
    let (ra, rb) = (Arc::new(Rec::default()), Arc::new(Rec::default()));
    a.start(ra.clone()).unwrap();
    b.start(rb.clone()).unwrap();
    for i in 0..50 {
        a.sink().send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(9, i, &[i as u8; 1000]));
    }
    a.sink().send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut send_only(9, 99, b"self"));
    assert!(wait_for(|| rb.0.lock().unwrap().len() == 50 && ra.0.lock().unwrap().len() == 1));
    let got = rb.0.lock().unwrap();
    for (m, p) in got.iter() {
        assert_eq!(m.src, Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)));
        let r = RocePacket::parse(p).unwrap();
        assert_eq!(r.payload, &[r.headers.bth.psn as u8; 1000][..]);
    }
    assert_eq!(RocePacket::parse(&ra.0.lock().unwrap()[0].1).unwrap().payload, b"self");
    let c = b.counters().snapshot();
    assert_eq!(c.rx_icrc_errors, 0);
    // The 50 datagrams came off the socket in 1..=50 receive passes;
    // the looped-back one never touched a socket; what came back to A's
    // socket is B's flow control packets (its credit for what it received).
    assert_eq!(c.rx_socket_datagrams, 50);
    assert!((1..=50).contains(&c.rx_socket_passes), "{} passes", c.rx_socket_passes);
    assert!(wait_for(|| a.counters().snapshot().fc_packets_received == c.fc_packets_sent));
    let ca = a.counters().snapshot();
    assert_eq!(ca.rx_socket_datagrams, ca.fc_packets_received);
    assert_eq!(ca.rx_packets, 1, "only the looped-back packet reached A's handler");
}

/// A batch leaves in one sendmmsg: runs of equal-sized datagrams to one
/// peer as GSO messages, which the receiver splits back (GRO) into the
/// datagrams, whole and in order.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn a_batch_leaves_in_one_call_and_arrives_whole_and_in_order() {
    let (a, mut b) = udp_pair(Arc::new(MonotonicClock::default()));
    let rb = Arc::new(Rec::default());
    b.start(rb.clone()).unwrap();
    let size = |i: u32| match i {
        0..20 => 1000,
        20..39 => 500,
        39 => 7,
        _ => 1200,
    };
    let sink = a.sink();
    a.shared.batched(|| {
        for i in 0..41 {
            sink.send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(9, i, &vec![i as u8; size(i)]));
        }
    });
    let ca = a.counters().snapshot();
    assert_eq!((ca.tx_socket_calls, ca.tx_socket_datagrams, ca.tx_errors), (1, 41, 0));
    assert!(wait_for(|| rb.0.lock().unwrap().len() == 41));
    for (i, (_, p)) in rb.0.lock().unwrap().iter().enumerate() {
        let r = RocePacket::parse(p).unwrap();
        assert_eq!(r.headers.bth.psn, i as u32);
        assert_eq!(r.payload, &vec![i as u8; size(i as u32)][..]);
    }
    let cb = b.counters().snapshot();
    assert_eq!((cb.rx_socket_datagrams, cb.rx_icrc_errors, cb.rx_malformed), (41, 0, 0));
    // Three GSO messages (21 x 1000 ending with a 500, 18 x 500 ending
    // with a 7, one 1200) came off the socket in three GRO reads.
    assert_eq!(cb.rx_socket_reads, 3);
    // Outside a batch, a send is one sendto.
    sink.send(&Dest { lid: 2, grh: None, ..Default::default() }, &mut send_only(9, 41, b"x"));
    assert_eq!(a.counters().snapshot().tx_socket_calls, 2);
    assert!(wait_for(|| rb.0.lock().unwrap().len() == 42));
}

/// How a queue splits into messages: a run is one peer and one size,
/// a shorter datagram ends it, at most 64 datagrams and 65000 bytes.
#[test]
fn gso_runs_are_one_peer_one_size() {
    let p: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let q: SocketAddr = "127.0.0.1:2".parse().unwrap();
    let plan = |pkts: &[(SocketAddr, usize)]| {
        let mut t = TxQueue::default();
        for &(a, l) in pkts {
            t.push(a, vec![0; l]);
        }
        t.plan();
        t.msgs.clone()
    };
    assert_eq!(plan(&[(p, 100), (p, 100), (p, 50), (p, 50)]), vec![(0, 3), (3, 1)]);
    assert_eq!(plan(&[(p, 100), (q, 100), (q, 100), (p, 100)]), vec![(0, 1), (1, 2), (3, 1)]);
    assert_eq!(plan(&[(p, 100), (p, 200), (p, 200)]), vec![(0, 1), (1, 2)]);
    let many: Vec<_> = (0..70).map(|_| (p, 10)).collect();
    assert_eq!(plan(&many), vec![(0, 64), (64, 6)]);
    let big: Vec<_> = (0..20).map(|_| (p, 4000)).collect();
    assert_eq!(plan(&big), vec![(0, 16), (16, 4)]);
    let mut t = TxQueue { gso_below: 100, ..TxQueue::default() };
    t.push(p, vec![0; 100]);
    t.push(p, vec![0; 100]);
    t.push(p, vec![0; 99]);
    t.push(p, vec![0; 99]);
    t.plan();
    assert_eq!(t.msgs, vec![(0, 1), (1, 1), (2, 2)]);
}

#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn packets_from_unconfigured_senders_are_dropped() {
    let clock = Arc::new(MonotonicClock::default());
    let mut a = UdpFabric::bind(&udp_cfg(vec![], "::ffff:10.0.0.1"), 1, clock).unwrap();
    let r = Arc::new(Rec::default());
    a.start(r.clone()).unwrap();
    let stranger = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut p = send_only(9, 1, b"who are you");
    // A correct ICRC as if from 10.0.0.9: only the peer table may vouch for a sender.
    let ph = PseudoHeader::canonical(Ipv4Addr::new(10, 0, 0, 9), Ipv4Addr::new(10, 0, 0, 1), 9, p.len());
    icrc::fill(&ph, &mut p);
    stranger.send_to(&p, a.local_addr().unwrap()).unwrap();
    assert!(wait_for(|| a.counters().snapshot().rx_unknown_peer == 1));
    std::thread::sleep(Duration::from_millis(20));
    assert!(r.0.lock().unwrap().is_empty(), "nothing reached the engine");
    assert_eq!(a.counters().snapshot().rx_packets, 0);
}

/// The pcap file decodes in tshark as InfiniBand with the right opcodes,
/// QPNs and PSNs. Skipped (with a note) when tshark is not installed.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn pcap_decodes_in_tshark() {
    let dir = std::env::temp_dir().join(format!("vrnic-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.pcap");
    let clock = Arc::new(MonotonicClock::default());
    let mut cfg = udp_cfg(vec![], "::ffff:10.0.0.1");
    cfg.pcap = Some(file.clone());
    let mut a = UdpFabric::bind(&cfg, 1, clock).unwrap();
    let r = Arc::new(Rec::default());
    a.start(r.clone()).unwrap();
    let mut ack = Vec::new();
    let h = Headers {
        aeth: Some(vrnic_wire::aeth::Repr {
            syndrome: vrnic_wire::aeth::Syndrome::Nak(vrnic_wire::aeth::NakCode::PsnSequenceError),
            msn: 5,
        }),
        ..Headers::new(bth::Repr { opcode: Opcode(0x11), dest_qp: 0x1234, psn: 0xabcdef, ..Default::default() })
    };
    packet::emit(&h, &[], &mut ack).unwrap();
    a.sink().send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut send_only(0x42, 77, b"tshark"));
    a.sink().send(&Dest { lid: 1, grh: None, ..Default::default() }, &mut ack);
    assert!(wait_for(|| r.0.lock().unwrap().len() == 2));
    drop(a);
    let out = std::process::Command::new("tshark")
        .args(["-r"])
        .arg(&file)
        .args([
            "-T",
            "fields",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "infiniband.bth.destqp",
            "-e",
            "infiniband.bth.psn",
            "-e",
            "infiniband.aeth.syndrome",
        ])
        .output();
    let Ok(out) = out else {
        eprintln!("tshark not installed: pcap decoding not checked");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines.len(), 2, "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines[0][..3], ["4", "0x000042", "77"]);
    assert_eq!(lines[1][..3], ["17", "0x001234", "11259375"]);
    assert_eq!(lines[1][3], "96", "NAK PSN sequence error = 0x60");
    let _ = std::fs::remove_dir_all(&dir);
}
