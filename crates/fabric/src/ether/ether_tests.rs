//! Ethernet link tests over real sockets on 127.0.0.1 (and, as root, a TAP
//! in a fresh network namespace).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::fault::{FaultConfig, FaultRates};

/// A handler that keeps what it is given.
#[derive(Default)]
struct Collect(Mutex<Vec<Vec<u8>>>);

impl FrameHandler for Collect {
    fn receive_frame(&self, frame: &[u8]) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

impl Collect {
    /// Waits (up to 5 s) until `n` frames have arrived; returns them all.
    fn wait(&self, n: usize) -> Vec<Vec<u8>> {
        let t0 = Instant::now();
        loop {
            let v = self.0.lock().unwrap().clone();
            if v.len() >= n || t0.elapsed() > Duration::from_secs(5) {
                return v;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A frame of `len` bytes: `dst`, a fixed source, EtherType 0x88b5 (local
/// experimental), a payload counting from `seed`.
fn frame(dst: [u8; 6], seed: u8, len: usize) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, seed]);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.extend((0..len.saturating_sub(HEADER_LEN)).map(|i| seed.wrapping_add(i as u8)));
    f.truncate(len);
    f
}

const BCAST: [u8; 6] = [0xff; 6];

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn udp_cfg(local: &str, remote: &str) -> EtherConfig {
    let mut c = EtherConfig::default();
    c.parse_cli(&format!("udp:local={local},remote={remote}")).unwrap();
    c
}

fn started(cfg: &EtherConfig) -> (EtherLink, Arc<Collect>) {
    let mut l = EtherLink::open(cfg).unwrap();
    let h = Arc::new(Collect::default());
    l.start(h.clone()).unwrap();
    (l, h)
}

/// A link cabled to a plain socket playing QEMU's `-netdev dgram` peer.
fn with_qemu(cfg_extra: impl FnOnce(&mut EtherConfig)) -> (EtherLink, Arc<Collect>, UdpSocket) {
    let qemu = UdpSocket::bind("127.0.0.1:0").unwrap();
    qemu.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut cfg = udp_cfg("127.0.0.1:0", &qemu.local_addr().unwrap().to_string());
    cfg_extra(&mut cfg);
    let (l, h) = started(&cfg);
    (l, h, qemu)
}

#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn two_udp_links_exchange_frames_both_ways() {
    let (pa, pb) = (free_port(), free_port());
    let (a, ha) = started(&udp_cfg(&format!("127.0.0.1:{pa}"), &format!("127.0.0.1:{pb}")));
    let (b, hb) = started(&udp_cfg(&format!("127.0.0.1:{pb}"), &format!("127.0.0.1:{pa}")));
    assert!(a.carrier() && b.carrier(), "a udp link is always up");
    let sent_a: Vec<Vec<u8>> = (0..5).map(|i| frame(BCAST, i, 60 + 300 * i as usize)).collect();
    let sent_b: Vec<Vec<u8>> = vec![frame([2, 0, 0, 0, 0, 1], 9, MAX_FRAME), frame(BCAST, 10, HEADER_LEN)];
    for f in &sent_a {
        a.sink().send_frame(f);
    }
    for f in &sent_b {
        b.sink().send_frame(f);
    }
    assert_eq!(hb.wait(5), sent_a);
    assert_eq!(ha.wait(2), sent_b);
    let (ca, cb) = (a.counters(), b.counters());
    assert_eq!(ca.tx_frames.load(Ordering::Relaxed), 5);
    assert_eq!(ca.tx_bytes.load(Ordering::Relaxed), sent_a.iter().map(|f| f.len() as u64).sum::<u64>());
    assert_eq!(cb.rx_frames.load(Ordering::Relaxed), 5);
    assert_eq!(ca.rx_frames.load(Ordering::Relaxed), 2);
    assert_eq!(ca.rx_undersize.load(Ordering::Relaxed), 1, "the 14-byte frame is accepted and counted");
}

/// QEMU's dgram netdev sends and receives one frame per datagram with
/// nothing around it: what its socket reads is exactly the frame, and what
/// it sends arrives exactly.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn qemu_dgram_peer_sees_bare_frames() {
    let (l, h, qemu) = with_qemu(|_| {});
    let f = frame([0x52, 0x54, 0, 0x12, 0x34, 0x56], 3, 98);
    l.sink().send_frame(&f);
    let mut buf = [0u8; 65536];
    let (n, from) = qemu.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], &f[..], "no header, no FCS");
    assert_eq!(Some(from), l.local_addr());
    let g = frame(BCAST, 4, 342);
    qemu.send_to(&g, from).unwrap();
    assert_eq!(h.wait(1), vec![g]);
}

#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn runts_giants_and_strangers_are_counted_and_dropped() {
    let (l, h, qemu) = with_qemu(|_| {});
    let to = l.local_addr().unwrap();
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger.send_to(&frame(BCAST, 1, 64), to).unwrap();
    qemu.send_to(&[], to).unwrap();
    qemu.send_to(&frame(BCAST, 2, 13), to).unwrap();
    qemu.send_to(&frame(BCAST, 3, MAX_FRAME + 1), to).unwrap();
    qemu.send_to(&vec![0xab; 65000], to).unwrap();
    let ok = frame(BCAST, 5, 64);
    qemu.send_to(&ok, to).unwrap();
    assert_eq!(h.wait(1), vec![ok.clone()]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(h.0.lock().unwrap().len(), 1);
    let c = l.counters();
    assert_eq!(c.rx_runts.load(Ordering::Relaxed), 2);
    assert_eq!(c.rx_giants.load(Ordering::Relaxed), 2);
    assert_eq!(c.rx_foreign.load(Ordering::Relaxed), 1);
    assert_eq!(c.rx_frames.load(Ordering::Relaxed), 1);
    // The device's own bad lengths never reach the medium.
    l.sink().send_frame(&[0; 13]);
    l.sink().send_frame(&vec![0; MAX_FRAME + 1]);
    l.sink().send_frame(&ok);
    let mut buf = [0u8; 65536];
    let (n, _) = qemu.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], &ok[..]);
    assert_eq!(c.tx_bad_length.load(Ordering::Relaxed), 2);
    assert_eq!(c.tx_frames.load(Ordering::Relaxed), 1);
}

#[test]
#[cfg_attr(miri, ignore = "starts the link's worker thread (prctl, ppoll), which Miri does not support")]
fn no_medium_is_down_and_counts_what_is_sent() {
    let (l, _h) = started(&EtherConfig::default());
    assert!(!l.carrier());
    assert!(!l.sink().carrier());
    l.sink().send_frame(&frame(BCAST, 0, 60));
    assert_eq!(l.counters().tx_no_link.load(Ordering::Relaxed), 1);
    drop(l); // the worker stops
}

/// Reads a pcap file: (linktype, frames).
fn read_pcap(path: &std::path::Path) -> (u32, Vec<Vec<u8>>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[0..4], &0xa1b2_c3d4u32.to_le_bytes());
    let lt = u32::from_le_bytes(b[20..24].try_into().unwrap());
    let mut at = 24;
    let mut frames = Vec::new();
    while at + 16 <= b.len() {
        let cap = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        let len = u32::from_le_bytes(b[at + 12..at + 16].try_into().unwrap()) as usize;
        assert_eq!(cap, len);
        frames.push(b[at + 16..at + 16 + cap].to_vec());
        at += 16 + cap;
    }
    assert_eq!(at, b.len());
    (lt, frames)
}

#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn pcap_has_ethernet_linktype_and_both_directions() {
    let path = std::env::temp_dir().join(format!("vrnic-eth-{}.pcap", std::process::id()));
    let p = path.clone();
    let (l, h, qemu) = with_qemu(move |c| c.pcap = Some(p));
    let out = frame(BCAST, 1, 100);
    let inn = frame([2, 0, 0, 0, 0, 9], 2, 1500);
    l.sink().send_frame(&out);
    let mut buf = [0u8; 2048];
    let (_, from) = qemu.recv_from(&mut buf).unwrap();
    qemu.send_to(&inn, from).unwrap();
    h.wait(1);
    drop(l);
    let (lt, frames) = read_pcap(&path);
    let _ = std::fs::remove_file(&path);
    assert_eq!(lt, 1, "LINKTYPE_ETHERNET");
    assert_eq!(frames, vec![out, inn]);
}

#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn faults_corrupt_the_payload_and_drop() {
    let corrupt = FaultConfig { seed: 3, rx: FaultRates { corrupt: 1.0, ..Default::default() }, ..Default::default() };
    let (l, h, qemu) = with_qemu(|c| c.faults = corrupt);
    let to = l.local_addr().unwrap();
    let sent: Vec<Vec<u8>> = (0..20).map(|i| frame(BCAST, i, 64 + i as usize)).collect();
    for f in &sent {
        qemu.send_to(f, to).unwrap();
    }
    let got = h.wait(20);
    assert_eq!(got.len(), 20);
    for (s, g) in sent.iter().zip(&got) {
        assert_eq!(s.len(), g.len());
        assert_eq!(&s[..HEADER_LEN], &g[..HEADER_LEN], "the header is spared");
        let bits: u32 = s.iter().zip(g).map(|(a, b)| (a ^ b).count_ones()).sum();
        assert_eq!(bits, 1, "one bit of the payload flipped");
    }
    assert_eq!(l.counters().fault_corrupted.load(Ordering::Relaxed), 20);

    let drop_tx = FaultConfig { tx: FaultRates { drop: 1.0, ..Default::default() }, ..Default::default() };
    let (l, _h, qemu) = with_qemu(|c| c.faults = drop_tx);
    for i in 0..10 {
        l.sink().send_frame(&frame(BCAST, i, 60));
    }
    qemu.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    assert!(qemu.recv_from(&mut [0u8; 128]).is_err(), "every frame dropped");
    assert_eq!(l.counters().fault_dropped.load(Ordering::Relaxed), 10);
    assert_eq!(l.counters().tx_frames.load(Ordering::Relaxed), 0);
}

/// Delayed frames are released by the worker when due.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn delayed_frames_leave_later() {
    let delay =
        FaultConfig { tx: FaultRates { delay: 1.0, delay_us: 30_000, ..Default::default() }, ..Default::default() };
    let (l, _h, qemu) = with_qemu(|c| c.faults = delay);
    let f = frame(BCAST, 7, 80);
    let t0 = Instant::now();
    l.sink().send_frame(&f);
    let mut buf = [0u8; 128];
    let (n, _) = qemu.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], &f[..]);
    assert!(t0.elapsed() >= Duration::from_millis(25), "{:?}", t0.elapsed());
    assert_eq!(l.counters().fault_delayed.load(Ordering::Relaxed), 1);
}

/// Three hub members and a QEMU-style one on one host: each vrnic member
/// hears the others, never itself; the QEMU member hears everything.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn multicast_hub_of_three() {
    let group = format!("239.0.0.{}:{}", 1 + std::process::id() % 200, free_port());
    let mut cfg = EtherConfig::default();
    cfg.parse_cli(&format!("udp:mcast={group},local=127.0.0.1")).unwrap();
    let mut members = Vec::new();
    for _ in 0..3 {
        match EtherLink::open(&cfg) {
            Ok(mut l) => {
                let h = Arc::new(Collect::default());
                l.start(h.clone()).unwrap();
                members.push((l, h));
            }
            Err(e) => {
                println!("skipping multicast_hub_of_three: joining {group} on 127.0.0.1: {e}");
                return;
            }
        }
    }
    // A QEMU `-netdev dgram` hub member: bound to the group's port with
    // SO_REUSEADDR, joined, sending from that same socket.
    let g: std::net::SocketAddrV4 = group.parse().unwrap();
    let qemu = vrnic_sys::dgram::bind_reuse_v4(g).unwrap();
    qemu.join_multicast_v4(g.ip(), &std::net::Ipv4Addr::LOCALHOST).unwrap();
    qemu.set_multicast_loop_v4(true).unwrap();
    vrnic_sys::dgram::set_multicast_if_v4(&qemu, std::net::Ipv4Addr::LOCALHOST).unwrap();
    for (i, (l, _)) in members.iter().enumerate() {
        l.sink().send_frame(&frame(BCAST, i as u8, 60));
    }
    if members[0].0.counters().tx_errors.load(Ordering::Relaxed) > 0 {
        println!("skipping multicast_hub_of_three: this host cannot send to {group} over lo");
        return;
    }
    let from_qemu = frame(BCAST, 3, 70);
    qemu.send_to(&from_qemu, g).unwrap();
    for (i, (l, h)) in members.iter().enumerate() {
        let mut got = h.wait(3);
        std::thread::sleep(Duration::from_millis(30));
        got.extend(h.0.lock().unwrap().drain(3..));
        got.sort();
        let mut want: Vec<Vec<u8>> = (0..3).filter(|&j| j != i).map(|j| frame(BCAST, j as u8, 60)).collect();
        want.push(from_qemu.clone());
        want.sort();
        assert_eq!(got, want, "member {i}");
        assert_eq!(l.counters().rx_own.load(Ordering::Relaxed), 1, "member {i} dropped its own frame");
    }
    // The QEMU member hears the three vrnic members (and its own frame, as QEMU does).
    qemu.set_nonblocking(false).unwrap();
    qemu.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut heard = Vec::new();
    let mut buf = [0u8; 2048];
    while let Ok((n, _)) = qemu.recv_from(&mut buf) {
        heard.push(buf[..n].to_vec());
        if heard.len() == 4 {
            break;
        }
    }
    heard.sort();
    let mut want: Vec<Vec<u8>> = (0..3).map(|j| frame(BCAST, j as u8, 60)).collect();
    want.push(from_qemu);
    want.sort();
    assert_eq!(heard, want);
}

/// The TAP medium, as root, in a network namespace of its own (run by
/// [`tap_in_fresh_netns`]): the kernel's ARP request for a neighbour
/// arrives as a frame, and a frame the link sends reaches a socket.
#[test]
#[ignore = "run inside a fresh network namespace by tap_in_fresh_netns"]
fn tap_inside_netns() {
    assert_eq!(std::env::var("VRNIC_TAP_NETNS").as_deref(), Ok("1"), "only inside the namespace");
    let ip = |args: &str| {
        let s = std::process::Command::new("ip").args(args.split(' ')).status().unwrap();
        assert!(s.success(), "ip {args}");
    };
    // Attaching to an existing (persistent) TAP.
    ip("tuntap add dev vrtap1 mode tap");
    let mut c = EtherConfig::default();
    c.parse_cli("tap:vrtap1").unwrap();
    let l1 = EtherLink::open(&c).unwrap();
    assert!(l1.carrier());
    drop(l1);
    // Creating one.
    c.parse_cli("tap:vrtap0").unwrap();
    let (l, h) = started(&c);
    let link = std::process::Command::new("ip").args(["-o", "link", "show", "vrtap0"]).output().unwrap();
    let link = String::from_utf8_lossy(&link.stdout);
    assert!(link.contains("<BROADCAST,MULTICAST,UP"), "brought up: {link}");
    ip("addr add 10.9.0.1/24 dev vrtap0");
    let s = UdpSocket::bind("10.9.0.1:7777").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.send_to(b"hello", "10.9.0.2:9");
    let t0 = Instant::now();
    let arp = loop {
        let got = h.wait(1);
        if let Some(f) = got.iter().find(|f| f.len() >= 42 && f[12..14] == [0x08, 0x06]) {
            break f.clone();
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "no ARP request: {got:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(&arp[0..6], &BCAST);
    assert_eq!(&arp[38..42], &[10, 9, 0, 2], "who has 10.9.0.2");
    let tap_mac = arp[6..12].to_vec();
    // A UDP/IPv4 frame from 10.9.0.2 to the TAP's address.
    let payload = b"from the device";
    let mut f = tap_mac.clone();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x08, 0x00]);
    let total = 20 + 8 + payload.len();
    let mut iph = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 9, 0, 2, 10, 9, 0, 1];
    let sum: u32 = iph.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    let ck = !((sum & 0xffff) + (sum >> 16)) as u16;
    iph[10..12].copy_from_slice(&ck.to_be_bytes());
    f.extend_from_slice(&iph);
    f.extend_from_slice(&[0x30, 0x39, 0x1e, 0x61, 0, (8 + payload.len()) as u8, 0, 0]); // 12345 -> 7777, no checksum
    f.extend_from_slice(payload);
    l.sink().send_frame(&f);
    let mut buf = [0u8; 64];
    let (n, from) = s.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], payload);
    assert_eq!(from, "10.9.0.2:12345".parse::<SocketAddr>().unwrap());
    assert!(l.counters().rx_frames.load(Ordering::Relaxed) >= 1);
}

#[test]
#[cfg_attr(miri, ignore = "runs the test binary again under unshare, which Miri does not support")]
fn tap_in_fresh_netns() {
    // The effective uid, from /proc.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if !root {
        println!("skipping tap_in_fresh_netns: not root");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("unshare")
        .arg("-n")
        .arg(&exe)
        .args(["ether::tests::tap_inside_netns", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("VRNIC_TAP_NETNS", "1")
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert!(stdout.contains("test result: ok. 1 passed"), "the inner test did not run: {stdout}");
        }
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("unshare failed") => {
            println!("skipping tap_in_fresh_netns: {}", String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(o) => panic!(
            "tap test in a fresh netns failed:\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => println!("skipping tap_in_fresh_netns: unshare: {e}"),
    }
}

/// A PFC frame from the peer holds this link's priority-3 frames (the gate at the sink) while priority 0's
/// leave; the worker sends the held ones when the pause ends (quanta 0xffff at 10 Mb/s: 3.4 s; an XON ends it
/// sooner here). The PFC frame never reaches the handler.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn pfc_from_the_peer_holds_one_priority_and_the_worker_releases_it() {
    use vrnic_wire::pfc::Repr;
    let (l, h, qemu) = with_qemu(|c| c.pause_speed_mbps = 10);
    l.sink().set_pause_policy(PausePolicy { pfc_rx: 1 << 3, pause_rx: true, ..PausePolicy::default() });
    let to = l.local_addr().unwrap();
    let tagged = |pcp: u8, seed: u8| {
        let mut f = frame(BCAST, seed, 64);
        f.splice(12..12, [0x81, 0x00, pcp << 5, 7]);
        f
    };
    let mut quanta = [0u16; 8];
    quanta[3] = 0xffff;
    qemu.send_to(&Repr::Pfc { enable: 1 << 3, quanta }.to_frame([2, 0, 0, 0, 0, 9]), to).unwrap();
    let t0 = Instant::now();
    while l.counters().prio[3].rx_pause.load(Ordering::Relaxed) == 0 {
        assert!(t0.elapsed() < Duration::from_secs(5), "PFC frame not taken");
        std::thread::sleep(Duration::from_millis(2));
    }
    l.sink().send_frame(&tagged(3, 1));
    l.sink().send_frame(&tagged(0, 2));
    let mut buf = [0u8; 2048];
    let n = qemu.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], &tagged(0, 2)[..], "priority 0 goes on, priority 3 waits");
    qemu.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    assert!(qemu.recv(&mut buf).is_err(), "priority 3 held");
    // XON: the worker sends what waited
    qemu.send_to(&Repr::Pfc { enable: 1 << 3, quanta: [0; 8] }.to_frame([2, 0, 0, 0, 0, 9]), to).unwrap();
    qemu.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = qemu.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], &tagged(3, 1)[..]);
    let c = l.counters();
    assert_eq!(c.prio[3].rx_pause.load(Ordering::Relaxed), 2);
    assert_eq!((c.prio[3].tx_frames.load(Ordering::Relaxed), c.prio[0].tx_frames.load(Ordering::Relaxed)), (1, 1));
    assert!(h.0.lock().unwrap().is_empty(), "MAC control frames are not delivered");
}

/// The pause ends by itself after its quanta (the worker wakes at the end, nothing else happening).
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn pfc_pause_expires_on_the_worker() {
    use vrnic_wire::pfc::Repr;
    // 2000 quanta at 10 Mb/s = 102.4 ms
    let (l, _h, qemu) = with_qemu(|c| c.pause_speed_mbps = 10);
    l.sink().set_pause_policy(PausePolicy { pfc_rx: 1 << 3, pause_rx: true, ..PausePolicy::default() });
    let mut quanta = [0u16; 8];
    quanta[3] = 2000;
    qemu.send_to(&Repr::Pfc { enable: 1 << 3, quanta }.to_frame([2; 6]), l.local_addr().unwrap()).unwrap();
    let t0 = Instant::now();
    while l.counters().prio[3].rx_pause.load(Ordering::Relaxed) == 0 {
        assert!(t0.elapsed() < Duration::from_secs(5), "PFC frame not taken");
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut f = frame(BCAST, 5, 64);
    f.splice(12..12, [0x81, 0x00, 3 << 5, 7]);
    let sent = Instant::now();
    l.sink().send_frame(&f);
    let mut buf = [0u8; 2048];
    let n = qemu.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], &f[..]);
    let waited = sent.elapsed();
    assert!(waited < Duration::from_millis(103) + Duration::from_secs(2), "released by the worker: {waited:?}");
    assert!(l.counters().prio[3].rx_pause_duration_ns.load(Ordering::Relaxed) >= 102_400_000);
}

/// At `--eth-rate-mbps 1` the link sends a burst (the bucket's two largest frames) at once and the rest at the
/// line rate, in order: the worker wakes for each release with nothing else happening.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets and waits ~0.1 s, which Miri does not support")]
fn the_shaper_paces_frames_at_the_line_rate_in_order() {
    let (l, _h, qemu) = with_qemu(|c| c.link_rate_mbps = 1);
    // 1000-byte frames take 1024 bytes of the line: 8.192 ms each at 1 Mb/s; the burst is 17 of them.
    let frames: Vec<Vec<u8>> = (0..30).map(|i| frame(BCAST, i, 1000)).collect();
    let t0 = Instant::now();
    for f in &frames {
        l.sink().send_frame(f);
    }
    let delayed = l.counters().tx_shaper_delayed.load(Ordering::Relaxed);
    assert!((10..=13).contains(&delayed), "frames over the burst wait: {delayed}");
    let mut buf = [0u8; 2048];
    for (i, f) in frames.iter().enumerate() {
        let n = qemu.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], &f[..], "frame {i} in order");
    }
    let took = t0.elapsed();
    assert!(took >= Duration::from_micros((delayed - 1) * 8192), "paced: {took:?} for {delayed} held");
    assert_eq!(l.counters().tx_frames.load(Ordering::Relaxed), 30);
    assert_eq!(l.counters().tx_shaper_dropped.load(Ordering::Relaxed), 0);
}

/// Unlimited (the default): no frame waits.
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn without_a_rate_frames_are_not_shaped() {
    let (l, _h, qemu) = with_qemu(|_| {});
    for i in 0..40 {
        l.sink().send_frame(&frame(BCAST, i, 1000));
    }
    assert_eq!(l.counters().tx_frames.load(Ordering::Relaxed), 40, "all left on the sender's thread");
    assert_eq!(l.counters().tx_shaper_delayed.load(Ordering::Relaxed), 0);
    let mut buf = [0u8; 2048];
    assert!(qemu.recv(&mut buf).is_ok());
}

/// An RQ for the link's worker: `bufs` posted WQEs (the test posts them), the frames it took.
#[derive(Default)]
struct Rq {
    bufs: Mutex<usize>,
    got: Mutex<Vec<Vec<u8>>>,
}

impl FrameHandler for Rq {
    fn receive_frame(&self, frame: &[u8]) {
        let _ = self.offer_frame(frame);
    }
    fn offer_frame(&self, frame: &[u8]) -> Offer {
        let mut b = self.bufs.lock().unwrap();
        if *b == 0 {
            return Offer::NoBuffer;
        }
        *b -= 1;
        self.got.lock().unwrap().push(frame.to_vec());
        Offer::Taken
    }
}

/// PFC transmit over a real link: the peer's priority-3 frames find no receive buffer, so the port sends it a
/// PFC frame for priority 3 and holds them; once buffers are posted the worker delivers them in order and sends
/// XON (quanta 0).
#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn a_lossless_priority_without_buffers_sends_pfc_holds_and_delivers_after_buffers_come() {
    use vrnic_wire::pfc::{mac_control_pdu, Packet, Repr};
    let qemu = UdpSocket::bind("127.0.0.1:0").unwrap();
    qemu.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut cfg = udp_cfg("127.0.0.1:0", &qemu.local_addr().unwrap().to_string());
    // 0xffff quanta at 10 Mb/s: 3.4 s, refreshed every 1.7 s (a loaded host may still see a refresh: skipped below)
    cfg.pause_speed_mbps = 10;
    let mut l = EtherLink::open(&cfg).unwrap();
    let rq = Arc::new(Rq::default());
    l.start(rq.clone()).unwrap();
    let mac = [2, 0, 0, 0, 0, 0x33];
    l.sink().set_pause_policy(PausePolicy {
        pfc_rx: 1 << 3,
        pfc_tx: 1 << 3,
        pause_rx: true,
        pause_tx: false,
        smac: mac,
    });
    let to = l.local_addr().unwrap();
    let tagged = |seed: u8| {
        let mut f = frame(mac, seed, 64);
        f.splice(12..12, [0x81, 0x00, 3 << 5, 7]);
        f
    };
    for i in 1..=3 {
        qemu.send_to(&tagged(i), to).unwrap();
    }
    let mut buf = [0u8; 2048];
    let n = qemu.recv(&mut buf).expect("a PFC frame from the port");
    let pdu = mac_control_pdu(&buf[..n]).expect("MAC control");
    let mut xoff = [0u16; 8];
    xoff[3] = DEFAULT_TX_QUANTA;
    assert_eq!(Repr::parse(&Packet::new_unchecked(pdu)).unwrap(), Repr::Pfc { enable: 1 << 3, quanta: xoff });
    assert_eq!(&buf[6..12], &mac);
    let t0 = Instant::now();
    while l.counters().prio[3].rx_held.load(Ordering::Relaxed) < 3 {
        assert!(t0.elapsed() < Duration::from_secs(5), "frames not held");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(rq.got.lock().unwrap().is_empty());
    *rq.bufs.lock().unwrap() = 8;
    // the worker's retry finds the buffers: the frames in order, then XON
    let mut refreshes = 0;
    loop {
        let n = qemu.recv(&mut buf).expect("XON");
        match Repr::parse(&Packet::new_unchecked(mac_control_pdu(&buf[..n]).unwrap())).unwrap() {
            Repr::Pfc { enable: 8, quanta } if quanta == xoff => refreshes += 1,
            r => {
                assert_eq!(r, Repr::Pfc { enable: 1 << 3, quanta: [0; 8] });
                break;
            }
        }
    }
    assert_eq!(*rq.got.lock().unwrap(), vec![tagged(1), tagged(2), tagged(3)]);
    let p3 = l.counters().prio[3].snapshot();
    assert_eq!((p3.tx_pause, p3.rx_discards), (2 + refreshes, 0));
    assert!(p3.tx_pause_duration_us > 0 || l.counters().prio[3].tx_pause_duration_ns.load(Ordering::Relaxed) > 0);
}
