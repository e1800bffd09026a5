//! What sits between a port and its link, for every link alike: fault
//! injection, then capture and the counters. On the way out a datagram goes
//! port → [`Faults`] → [`Tap`] → link; a datagram the faults hold (delay,
//! reorder) leaves later through the same [`Tap`], so what is counted and
//! captured is exactly what reached the link. On the way in the order is
//! mirrored: link → capture → faults → the port's checks and counters.

use std::fs::File;
use std::io::{self, BufWriter};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::counters::{bump, PortCounters};
use super::fault::{FaultConfig, FaultTally, Injector, Shape};
use super::link::Link;
use super::pcap::PcapWriter;
use super::route::PeerTable;
use super::route::Route;
use vrnic_sys::clock::Clock;
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::grh;
use vrnic_wire::ip::PseudoHeader;

/// The BTH of a datagram the port framed: behind the envelope and GRH when
/// it has one ([`grh::MARK`] first), else at its start.
fn bth_of(datagram: &[u8]) -> (bool, Option<u8>) {
    let has_grh = datagram.first() == Some(&grh::MARK);
    let at = if has_grh { grh::ENVELOPE_LEN + grh::field::HEADER_LEN } else { 0 };
    (has_grh, datagram.get(at).copied())
}

/// A port's pcap capture, if configured.
pub(crate) struct Capture(Option<Mutex<PcapWriter<BufWriter<File>>>>);

impl Capture {
    /// `pcap`: the capture file and its byte cap.
    pub(crate) fn open(pcap: Option<(&std::path::Path, u64)>) -> io::Result<Capture> {
        Ok(Capture(match pcap {
            Some((p, max)) => Some(Mutex::new(PcapWriter::with_limit(BufWriter::new(File::create(p)?), max)?)),
            None => None,
        }))
    }

    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Captures a datagram as the frame it stands for: IPv4 around a
    /// packet without GRH, IPv6 (from the GRH) around one with.
    pub(crate) fn datagram(&self, src: Ipv4Addr, dst: Ipv4Addr, datagram: &[u8], c: &PortCounters) {
        if let Some(p) = &self.0 {
            let (g, pkt) = grh::unframe(datagram).unwrap_or((None, datagram));
            let dqp = bth::Packet::new_checked(pkt).map(|b| b.dest_qp()).unwrap_or(0);
            if let Ok(mut w) = p.lock() {
                let r = match g {
                    Some(g) => w.write_roce6(&g.ipv6_udp(dqp, pkt.len()), pkt),
                    None => w.write_roce(&PseudoHeader::canonical(src, dst, dqp, pkt.len()), pkt),
                };
                if let Ok(false) = r {
                    bump(&c.pcap_dropped, 1);
                }
            }
        }
    }

    /// Captures an Ethernet frame as it is (an Ethernet link's traffic);
    /// a frame past the file's size cap bumps `dropped`.
    pub(crate) fn frame(&self, frame: &[u8], dropped: &AtomicU64) {
        if let Some(p) = &self.0 {
            if let Ok(mut w) = p.lock() {
                if let Ok(false) = w.write_ether(frame) {
                    bump(dropped, 1);
                }
            }
        }
    }

    pub(crate) fn flush(&self) {
        if let Some(p) = &self.0 {
            if let Ok(mut w) = p.lock() {
                let _ = w.flush();
            }
        }
    }
}

/// The one exit of a port's datagrams onto its link: counts what leaves
/// (packets, bytes, GRH packets and CNPs, read off the datagram itself),
/// captures it, and hands it to the link.
pub(crate) struct Tap<'a> {
    pub counters: &'a PortCounters,
    pub capture: &'a Capture,
    pub table: &'a PeerTable,
    pub link: &'a dyn Link,
}

impl Link for Tap<'_> {
    fn transmit(&self, route: Route, datagram: &[u8]) {
        let c = self.counters;
        bump(&c.tx_packets, 1);
        bump(&c.tx_bytes, datagram.len() as u64);
        let (has_grh, opcode) = bth_of(datagram);
        if has_grh {
            bump(&c.tx_grh_packets, 1);
        }
        if opcode == Some(Opcode::CNP.0) {
            bump(&c.cnp_sent, 1);
        }
        let local = self.table.local();
        self.capture.datagram(local.ip(), self.table.endpoint_or(route, local).ip(), datagram, c);
        self.link.transmit(route, datagram);
    }
}

/// Seeded fault injection on both directions of a port ([`super::fault`]);
/// a pass-through unless configured.
pub(crate) struct Faults {
    on: AtomicBool,
    tx: Mutex<Injector>,
    rx: Mutex<Injector>,
    clock: Arc<dyn Clock>,
}

impl Faults {
    pub(crate) fn new(cfg: &FaultConfig, clock: Arc<dyn Clock>) -> Faults {
        Faults::with_shape(Shape::Roce, cfg, clock)
    }

    /// Faults on packets of `shape` (an Ethernet link's frames, or RoCE datagrams).
    pub(crate) fn with_shape(shape: Shape, cfg: &FaultConfig, clock: Arc<dyn Clock>) -> Faults {
        Faults {
            on: AtomicBool::new(!cfg.tx.is_none() || !cfg.rx.is_none()),
            tx: Mutex::new(Injector::with_shape(shape, cfg.tx.clone(), cfg.seed)),
            rx: Mutex::new(Injector::with_shape(shape, cfg.rx.clone(), cfg.seed ^ 0x7878_7878)),
            clock,
        }
    }

    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Runs a leaving datagram through the tx faults into `next`.
    pub(crate) fn transmit(&self, route: Route, datagram: &mut [u8], c: &dyn FaultTally, next: &dyn Link) {
        if !self.is_on() {
            next.transmit(route, datagram);
            return;
        }
        let now = self.clock.now_ns();
        if let Ok(mut f) = self.tx.lock() {
            f.process(route, datagram, now, c, &mut |t, b| next.transmit(t, b));
        }
    }

    /// Runs an arriving datagram through the rx faults into `next` (which
    /// gets the route each datagram came from, held ones included).
    pub(crate) fn receive(
        &self,
        route: Route,
        datagram: &mut [u8],
        c: &dyn FaultTally,
        next: &mut dyn FnMut(Route, &[u8]),
    ) {
        if !self.is_on() {
            next(route, datagram);
            return;
        }
        let now = self.clock.now_ns();
        if let Ok(mut f) = self.rx.lock() {
            f.process(route, datagram, now, c, next);
        }
    }

    /// Releases held datagrams due now: leaving ones into `tx`, arriving
    /// ones into `rx`.
    pub(crate) fn release(&self, tx: &dyn Link, rx: &mut dyn FnMut(Route, &[u8])) {
        if !self.is_on() {
            return;
        }
        let now = self.clock.now_ns();
        if let Ok(mut f) = self.tx.lock() {
            f.release(now, &mut |t, b| tx.transmit(t, b));
        }
        if let Ok(mut f) = self.rx.lock() {
            f.release(now, rx);
        }
    }

    /// When the next held datagram falls due.
    pub(crate) fn next_due(&self) -> Option<u64> {
        if !self.is_on() {
            return None;
        }
        let a = self.tx.lock().ok().and_then(|f| f.next_due());
        let b = self.rx.lock().ok().and_then(|f| f.next_due());
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
