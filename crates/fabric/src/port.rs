//! The packet path of one port: route lookup, GRH framing and the DGID
//! check, ICRC fill and check, around whichever [`Link`] carries it (with
//! the middleware of `middleware.rs` in between).

use std::io;
use std::sync::Arc;

use super::buf::Scratch;
use super::counters::{bump, PortCounters};
use super::credit::{Credits, Fcp};
use super::fault::FaultConfig;
use super::link::Link;
use super::middleware::{Capture, Faults, Tap};
use super::route::PeerTable;
use super::route::{is_multicast_lid, Peer, Route, LOCAL};
use vrnic_packet::{Dest, Endpoint, RxMeta};
use vrnic_sys::clock::Clock;
use vrnic_wire::bth;
use vrnic_wire::grh;
use vrnic_wire::icrc;
use vrnic_wire::ip::PseudoHeader;

/// The packet path of one port.
pub struct Port {
    pub(super) table: PeerTable,
    pub counters: Arc<PortCounters>,
    faults: Faults,
    capture: Capture,
    /// Every peer is in this process ([`super::InProcNet`]): no packet meets a wire.
    pub(super) in_process: bool,
    /// The GID table the guest sees (set once, before traffic): SGIDs of
    /// sent GRHs, and the DGIDs received GRHs must carry.
    gids: std::sync::OnceLock<Vec<[u8; 16]>>,
    /// Where a packet with a GRH is framed ([`Port::transmit`]).
    frame: Scratch,
    /// Link-level flow control toward the peers (off unless the link turns it on).
    pub(super) credits: Credits,
}

impl Port {
    /// `pcap`: capture file and its byte cap.
    pub fn new(
        local: Endpoint,
        peers: Vec<Peer>,
        faults: &FaultConfig,
        pcap: Option<(&std::path::Path, u64)>,
        clock: Arc<dyn Clock>,
    ) -> io::Result<Port> {
        Ok(Port {
            table: PeerTable::new(local, peers),
            counters: Arc::new(PortCounters::default()),
            faults: Faults::new(faults, clock.clone()),
            capture: Capture::open(pcap)?,
            in_process: false,
            gids: std::sync::OnceLock::new(),
            frame: Scratch::default(),
            credits: Credits::off(clock.clone()),
        })
    }

    /// Sets the port's GID table (index 0 first); only the first call counts.
    pub fn set_gid_table(&self, gids: Vec<[u8; 16]>) -> bool {
        self.gids.set(gids).is_ok()
    }

    /// The GID at `index`.
    pub fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.gids.get().and_then(|t| t.get(index as usize).copied())
    }

    fn owns_gid(&self, gid: &[u8; 16]) -> bool {
        self.gids.get().is_some_and(|t| t.contains(gid))
    }

    /// Whether a packet on this route skips the ICRC: it never meets a wire
    /// (loopback to this port, or a port of an [`super::InProcNet`]) and
    /// nothing could see or damage it (no pcap, no fault injection). The
    /// ICRC protects bytes on a wire; on a wire, in a capture or under
    /// injected corruption every packet carries and checks it.
    fn icrc_exempt(&self, local_route: bool) -> bool {
        (local_route || self.in_process) && !self.capture.is_on() && !self.faults.is_on()
    }

    pub fn local(&self) -> Endpoint {
        self.table.local()
    }

    pub fn peers(&self) -> &[Peer] {
        self.table.peers()
    }

    /// The route for `dest`: [`LOCAL`] or a peer index.
    pub fn resolve(&self, dest: &Dest) -> Option<Route> {
        self.table.resolve(dest)
    }

    /// Flushes the pcap file.
    pub fn flush_pcap(&self) {
        self.capture.flush();
    }

    /// The exit of this port's datagrams onto `link`.
    fn tap<'a>(&'a self, link: &'a dyn Link) -> Tap<'a> {
        Tap { counters: &self.counters, capture: &self.capture, table: &self.table, link }
    }

    /// The credit gate in front of the exit: what has no credit waits.
    fn gate<'a>(&'a self, link: &'a dyn Link) -> Gate<'a> {
        Gate { port: self, tap: self.tap(link), link }
    }

    /// Turns link-level flow control on toward the peers, granting each
    /// `window_bytes` of receive buffer (`credit.rs`).
    pub fn enable_flow_control(&mut self, window_bytes: usize, clock: Arc<dyn Clock>) {
        self.credits = Credits::new(self.peers().len(), window_bytes, clock);
    }

    /// Whether the link toward `dest` takes a packet now (see
    /// [`vrnic_packet::PacketSink::ready`]); `link` carries the request for
    /// credit a newly held route sends.
    pub fn ready(&self, dest: &Dest, link: &dyn Link) -> bool {
        if !self.credits.is_on() || is_multicast_lid(dest.lid) {
            return true;
        }
        match self.resolve(dest) {
            Some(route) => self.credits.ready(route, link, &self.counters),
            None => true,
        }
    }

    /// Datagrams waiting for credit.
    pub fn fc_queued(&self) -> usize {
        self.credits.queued()
    }

    /// Sends `pkt` over `link`: fills the ICRC, frames the GRH, then the tx
    /// faults and the [`Tap`] (counted and captured as it leaves).
    pub fn transmit(&self, dest: &Dest, pkt: &mut [u8], link: &dyn Link) {
        if is_multicast_lid(dest.lid) {
            return self.transmit_multicast(dest, pkt, link);
        }
        let Some(route) = self.resolve(dest) else {
            bump(&self.counters.tx_no_route, 1);
            return;
        };
        let Ok(b) = bth::Packet::new_checked(&*pkt) else {
            bump(&self.counters.tx_errors, 1);
            return;
        };
        let dqp = b.dest_qp();
        if !self.icrc_exempt(route == LOCAL) {
            let local = self.local();
            match &dest.grh {
                Some(g) => grh::fill_icrc(g, pkt),
                None => icrc::fill(
                    &PseudoHeader::canonical(local.ip(), self.table.endpoint_or(route, local).ip(), dqp, pkt.len()),
                    pkt,
                ),
            }
        }
        // The envelope + GRH + packet, built in the port's frame buffer.
        match &dest.grh {
            Some(g) => self.frame.with(|framed| {
                grh::frame(g, pkt, framed);
                self.faults.transmit(route, framed, &*self.counters, &self.gate(link));
            }),
            None => self.faults.transmit(route, pkt, &*self.counters, &self.gate(link)),
        }
    }

    /// Sends `pkt` to a multicast LID: a copy to every peer and one to this
    /// port (each receiver delivers to its QPs attached to the DGID). The
    /// GRH is mandatory and its DGID must be a multicast GID; the ICRC
    /// covers GRH and packet only, so it is filled once for every copy.
    fn transmit_multicast(&self, dest: &Dest, pkt: &mut [u8], link: &dyn Link) {
        let Some(g) = dest.grh.filter(|g| g.dgid[0] == 0xff) else {
            bump(&self.counters.tx_mcast_no_grh, 1);
            return;
        };
        if bth::Packet::new_checked(&*pkt).is_err() {
            bump(&self.counters.tx_errors, 1);
            return;
        }
        bump(&self.counters.tx_mcast_packets, 1);
        if !self.icrc_exempt(self.peers().is_empty()) {
            grh::fill_icrc(&g, pkt);
        }
        let mut framed = Vec::new();
        grh::frame(&g, pkt, &mut framed);
        let faults = self.faults.is_on();
        let mut copy = Vec::new();
        for route in self.table.multicast_routes() {
            // Fault injection may change a copy in place: each route gets its own.
            let datagram: &mut [u8] = if faults {
                copy.clear();
                copy.extend_from_slice(&framed);
                &mut copy
            } else {
                &mut framed
            };
            self.faults.transmit(route, datagram, &*self.counters, &self.gate(link));
        }
    }

    /// Receives `pkt` from `src`: captures it (unless it is loopback, already
    /// captured when sent), runs the rx faults, checks the ICRC (a mismatch
    /// is counted and dropped silently) and calls `deliver` for what passes.
    /// A flow control packet is the link's own: it goes to the credits
    /// (which may send what waited for it on `link`), nowhere else.
    pub fn accept(&self, src: Endpoint, pkt: &mut [u8], link: &dyn Link, deliver: &mut dyn FnMut(&RxMeta, &[u8])) {
        let local = self.local();
        // The route travels with a held datagram: LOCAL, or the peer index.
        let route = self.table.route_of(&src);
        if self.credits.is_on() && route != LOCAL {
            if let Some(fcp) = Fcp::parse(pkt) {
                return self.credits.on_fcp(route, fcp, &self.tap(link), link, &self.counters);
            }
            self.credits.received(route, pkt.len());
        }
        if src != local {
            self.capture.datagram(src.ip(), local.ip(), pkt, &self.counters);
        }
        self.faults.receive(route, pkt, &*self.counters, &mut |t, bytes| {
            let s = if t == route { src } else { self.table.endpoint_or(t, src) };
            self.check_and_deliver(&RxMeta::ib(s, s == local), bytes, deliver)
        });
    }

    /// Unframes a datagram, checks its ICRC, then (with a GRH) its DGID
    /// against the GID table, and hands BTH onward to `deliver`.
    fn check_and_deliver(&self, meta: &RxMeta, datagram: &[u8], deliver: &mut dyn FnMut(&RxMeta, &[u8])) {
        let Ok((g, bytes)) = grh::unframe(datagram) else {
            bump(&self.counters.rx_malformed, 1);
            return;
        };
        let Ok(b) = bth::Packet::new_checked(bytes) else {
            bump(&self.counters.rx_malformed, 1);
            return;
        };
        if bytes.len() < icrc::LEN + bth::field::HEADER_LEN {
            bump(&self.counters.rx_malformed, 1);
            return;
        }
        let local = self.local();
        if !self.icrc_exempt(meta.src == local) {
            let ok = match &g {
                Some(g) => grh::verify_icrc(g, bytes),
                None => {
                    icrc::verify(&PseudoHeader::canonical(meta.src.ip(), local.ip(), b.dest_qp(), bytes.len()), bytes)
                }
            };
            if ok.is_err() {
                bump(&self.counters.rx_icrc_errors, 1);
                return;
            }
        }
        if let Some(g) = &g {
            // A multicast DGID is not in the GID table: the device delivers
            // to the QPs attached to the group (or counts a drop).
            if g.dgid[0] == 0xff {
                bump(&self.counters.rx_mcast_packets, 1);
            } else if !self.owns_gid(&g.dgid) {
                bump(&self.counters.rx_dgid_mismatch, 1);
                return;
            }
        }
        bump(&self.counters.rx_packets, 1);
        bump(&self.counters.rx_bytes, datagram.len() as u64);
        if g.is_some() {
            bump(&self.counters.rx_grh_packets, 1);
        }
        if bytes[0] == bth::Opcode::CNP.0 {
            bump(&self.counters.cnp_received, 1);
        }
        deliver(&RxMeta { grh: g, ..*meta }, bytes);
    }

    /// Ends a receive pass: releases held (delayed/reordered) packets due
    /// now (leaving ones onto `link` through the same [`Gate`] as every
    /// other, arriving ones to `deliver` after the checks), then sends the
    /// flow control packets owed and due. True: a route that held senders
    /// let go (call the handler's `tx_ready`).
    #[must_use]
    pub fn release_due(&self, link: &dyn Link, deliver: &mut dyn FnMut(&RxMeta, &[u8])) -> bool {
        let local = self.local();
        self.faults.release(&self.gate(link), &mut |t, bytes| {
            let s = self.table.endpoint_or(t, local);
            self.check_and_deliver(&RxMeta::ib(s, t == LOCAL), bytes, deliver)
        });
        self.credits.pass(&self.tap(link), link, &self.counters)
    }

    /// When the next held packet falls due, or a held route needs its timer.
    pub fn next_due(&self) -> Option<u64> {
        [self.faults.next_due(), self.credits.next_due()].into_iter().flatten().min()
    }
}

/// The credit gate between the faults and the [`Tap`]: a datagram leaves
/// when its route has credit, else waits in the route's queue.
struct Gate<'a> {
    port: &'a Port,
    tap: Tap<'a>,
    link: &'a dyn Link,
}

impl Link for Gate<'_> {
    fn transmit(&self, route: Route, datagram: &[u8]) {
        self.port.credits.transmit(route, datagram, &self.tap, self.link, &self.port.counters);
    }
}
