//! The RoCE port wired as the device wires it, over two real Ethernet links
//! (UDP on 127.0.0.1): frames cross, non-RoCE and not-ours frames go to the
//! NIC path, and loopback packets reach the engine through the link
//! worker's `poll` as soon as the port's wake (the link's waker) fires.

use std::net::UdpSocket;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::*;
use crate::ether::{EtherConfig, EtherLink, FrameHandler};
use vrnic_packet::{Dest, EthDest, PacketSink, RxMeta};
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::grh;
use vrnic_wire::packet::{self, Headers, RocePacket};
use vrnic_wire::roce::{self, NetHdr};

/// The link's handler as EthRx is meant to be: RoCE first, the rest to the NIC.
#[derive(Default)]
struct Rx {
    port: OnceLock<Weak<RocePort>>,
    engine: Mutex<Vec<(RxMeta, Vec<u8>)>>,
    nic: Mutex<Vec<Vec<u8>>>,
}

impl FrameHandler for Rx {
    fn receive_frame(&self, frame: &[u8]) {
        let port = self.port.get().and_then(Weak::upgrade);
        match port.and_then(|p| p.accept(frame)) {
            Some((meta, r)) => self.engine.lock().unwrap().push((meta, frame[r].to_vec())),
            None => self.nic.lock().unwrap().push(frame.to_vec()),
        }
    }
    fn poll(&self, _now_ns: u64) -> Option<u64> {
        if let Some(p) = self.port.get().and_then(Weak::upgrade) {
            p.drain_loopback(&mut |m, pkt| self.engine.lock().unwrap().push((*m, pkt.to_vec())));
        }
        None
    }
}

struct Side {
    port: Arc<RocePort>,
    rx: Arc<Rx>,
    _link: EtherLink,
}

fn side(local: u16, remote: u16, gid: GidEntry) -> Side {
    let mut cfg = EtherConfig::default();
    cfg.parse_cli(&format!("udp:local=127.0.0.1:{local},remote=127.0.0.1:{remote}")).unwrap();
    let mut link = EtherLink::open(&cfg).unwrap();
    let gids = Arc::new(RoceGids::new(4));
    gids.set(0, Some(gid)).unwrap();
    let port = Arc::new(RocePort::new(gids, link.sink(), link.waker()));
    let rx = Arc::new(Rx::default());
    let _ = rx.port.set(Arc::downgrade(&port));
    link.start(rx.clone()).unwrap();
    Side { port, rx, _link: link }
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn entry(last: u8) -> GidEntry {
    GidEntry {
        gid: roce::v4_mapped([10, 0, 0, last]),
        mac: [2, 0, 0, 0, 0, last],
        vlan: None,
        version: RoceVersion::V2,
        ipv4: true,
    }
}

fn send(from: &Side, to: GidEntry, qp: u32, payload: &[u8]) {
    let h = Headers::new(bth::Repr { opcode: Opcode(0x04), dest_qp: qp, psn: 1, ..Default::default() });
    let mut p = Vec::new();
    packet::emit(&h, payload, &mut p).unwrap();
    let grh = grh::Repr { hop_limit: 64, sgid: from.port.gid(0).unwrap(), dgid: to.gid, ..Default::default() };
    let d = Dest { lid: 0, grh: Some(grh), eth: EthDest { sgid_index: 0, dmac: to.mac, ..Default::default() } };
    from.port.send(&d, &mut p);
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
#[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
fn roce_over_two_ethernet_links() {
    let (pa, pb) = (free_port(), free_port());
    let (ea, eb) = (entry(1), entry(2));
    let a = side(pa, pb, ea);
    let b = side(pb, pa, eb);
    // A to B: the engine on B gets the packet with the GRH from the IPv4 header.
    send(&a, eb, 0x33, b"across the link");
    let (meta, pkt) = wait_for("B's engine gets it", || b.rx.engine.lock().unwrap().first().cloned());
    let rp = RocePacket::parse(&pkt).unwrap();
    assert_eq!((rp.headers.bth.dest_qp, rp.payload), (0x33, &b"across the link"[..]));
    assert_eq!((meta.net, meta.local, meta.src.gid), (NetHdr::RoceV2Ipv4, false, ea.gid));
    assert_eq!(meta.grh.unwrap().dgid, eb.gid);
    // To an address B does not own: on the wire, but B's NIC path takes it.
    send(&a, entry(9), 0x34, b"not for B");
    let f = wait_for("B's NIC path gets it", || b.rx.nic.lock().unwrap().first().cloned());
    assert_eq!(&f[30..34], &[10, 0, 0, 9]);
    assert_eq!(b.port.counters().rx_not_ours.load(std::sync::atomic::Ordering::SeqCst), 1);
    // A to itself: never on the wire; A's worker hands it over on the pass
    // the port's wake starts (not after an idle wait).
    let rounds = 5;
    let t0 = Instant::now();
    for i in 0..rounds {
        send(&a, ea, 0x40 + i, b"loop");
        wait_for("A's engine gets its loopback", || {
            let e = a.rx.engine.lock().unwrap();
            e.iter()
                .any(|(m, p)| m.local && RocePacket::parse(p).unwrap().headers.bth.dest_qp == 0x40 + i)
                .then_some(())
        });
    }
    let took = t0.elapsed();
    assert!(took < Duration::from_millis(100) * rounds, "{rounds} loopbacks took {took:?}");
    assert_eq!(b.rx.engine.lock().unwrap().len(), 1, "loopback stays on A");
    assert!(a.rx.nic.lock().unwrap().is_empty());
}
