//! Link-level flow control (IBTA vol. 1 §7.9.4): an InfiniBand link never
//! drops a packet for lack of buffer space. The receiver grants credit for
//! the buffer it has, the sender sends only against it and holds the rest.
//! Over a datagram link the receiver's buffer is its socket's: without
//! credit, a burst from many QPs overflows it and the packets of every QP
//! are lost together (and retransmitted together, and lost again).
//!
//! Per peer route, in 64-byte blocks as the spec counts them (modulo 2^32
//! here, 2^12 on a real link): the sender counts FCTBS (blocks sent), the
//! receiver ABR (blocks received). Flow control packets ([`Fcp`]) carry the
//! sender's FCTBS and the receiver's FCCL = ABR + its window. The receiver
//! sends one at the end of a receive pass (its buffer is drained then) to
//! each peer that has used half of its last grant (an FCP per packet would
//! wake the peer's receiving thread per packet); on an FCP the receiver sets ABR to the
//! sender's FCTBS (a packet lost on the way gives its credit back) and the
//! sender takes FCCL. A packet of n blocks leaves while FCTBS + n ≤ FCCL;
//! otherwise it waits in the route's queue, in order, the sender asks for
//! credit (an FCP with [`Fcp::REQUEST`], again every [`RETRY_NS`]) and
//! [`Credits::ready`] is false until the queue has drained: the requester
//! waits ([`vrnic_packet::PacketHandler::tx_ready`] resumes it). A route
//! that grants nothing for [`STALL_NS`] (a peer that is gone) has its queue
//! discarded and counted, as a switch's head-of-queue lifetime limit does;
//! the transports' timers take over from there.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::counters::{bump, PortCounters};
use super::link::Link;
use super::route::{Route, LOCAL};
use vrnic_sys::clock::Clock;

/// The unit of credit (IBTA: a 64-byte block).
pub const BLOCK: usize = 64;
/// The largest datagram a port sends (4096-byte MTU, headers, the GRH envelope).
pub const MAX_DATAGRAM: usize = 4096 + 128;
/// A held sender asks again for credit this often.
pub const RETRY_NS: u64 = 1_000_000;
/// A route that grants no credit for this long is taken as stalled: its
/// queue is discarded (counted in `fc_discards`).
pub const STALL_NS: u64 = 500_000_000;

/// What a datagram costs its receiver beyond its bytes: the kernel's
/// buffer accounting charges every datagram its socket buffer and
/// metadata, so a window of small packets (ACKs) fills a socket buffer long
/// before their bytes do.
pub const DATAGRAM_OVERHEAD: usize = 1024;

/// Blocks of credit a datagram of `len` bytes takes (both ends charge the
/// same: FCTBS and ABR count alike).
pub fn blocks(len: usize) -> u32 {
    (len + DATAGRAM_OVERHEAD).div_ceil(BLOCK) as u32
}

/// A flow control packet: 16 bytes, told from a transport packet by its
/// first byte (a manufacturer-specific BTH opcode no transport uses), its
/// length and its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fcp {
    pub flags: u8,
    /// Total blocks the sender of this FCP has sent to its receiver.
    pub fctbs: u32,
    /// Credit limit the sender of this FCP grants for what it receives.
    pub fccl: u32,
}

impl Fcp {
    pub const LEN: usize = 16;
    pub const OPCODE: u8 = 0xfe;
    const TAG: [u8; 4] = *b"VRFC";
    /// The receiver answers with an FCP of its own.
    pub const REQUEST: u8 = 1;

    pub fn parse(d: &[u8]) -> Option<Fcp> {
        if d.len() != Self::LEN || d[0] != Self::OPCODE || d[12..16] != Self::TAG {
            return None;
        }
        let word = |i: usize| u32::from_be_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
        Some(Fcp { flags: d[1], fctbs: word(4), fccl: word(8) })
    }

    pub fn emit(&self) -> [u8; Self::LEN] {
        let mut d = [0u8; Self::LEN];
        d[0] = Self::OPCODE;
        d[1] = self.flags;
        d[4..8].copy_from_slice(&self.fctbs.to_be_bytes());
        d[8..12].copy_from_slice(&self.fccl.to_be_bytes());
        d[12..16].copy_from_slice(&Self::TAG);
        d
    }
}

/// One peer route's flow control state, both directions.
#[derive(Default)]
struct RouteCredit {
    /// Sent: blocks sent to the peer, and the limit it granted.
    fctbs: u32,
    fccl: u32,
    /// Datagrams waiting for credit, in order.
    queue: VecDeque<Vec<u8>>,
    /// Since when the route has been holding senders, and when to ask again.
    blocked_since: Option<u64>,
    next_request: u64,
    /// A sender was told the link is not ready (it waits for `tx_ready`).
    held: bool,
    /// Received: blocks received from the peer (ABR), the limit last
    /// granted it (FCCL as sent, initially the implicit first window), and
    /// whether an FCP is owed.
    abr: u32,
    granted: u32,
    owe_update: bool,
}

impl RouteCredit {
    /// Whether `n` more blocks fit under the granted limit (modulo 2^32: a
    /// limit more than half the space ahead reads as behind).
    fn fits(&self, n: u32) -> bool {
        let room = self.fccl.wrapping_sub(self.fctbs.wrapping_add(n));
        room < (1 << 31)
    }
}

/// A port's link-level flow control toward its peers (off: every datagram
/// goes at once, as on the in-process net, where nothing can overflow).
pub struct Credits {
    /// Credit granted to each peer: blocks of receive buffer per sender.
    window: u32,
    routes: Option<Mutex<Vec<RouteCredit>>>,
    /// A held route drained: the port's senders may go on.
    released: AtomicBool,
    clock: Arc<dyn Clock>,
}

impl Credits {
    pub fn off(clock: Arc<dyn Clock>) -> Credits {
        Credits { window: 0, routes: None, released: AtomicBool::new(false), clock }
    }

    /// Flow control toward `peers` routes, granting each `window_bytes` of
    /// buffer (and assuming as much from each until its first FCP).
    pub fn new(peers: usize, window_bytes: usize, clock: Arc<dyn Clock>) -> Credits {
        let window = blocks(window_bytes).max(blocks(MAX_DATAGRAM));
        let routes = (0..peers).map(|_| RouteCredit { fccl: window, granted: window, ..Default::default() }).collect();
        Credits { window, routes: Some(Mutex::new(routes)), released: AtomicBool::new(false), clock }
    }

    pub fn is_on(&self) -> bool {
        self.routes.is_some()
    }

    fn lock(&self) -> Option<std::sync::MutexGuard<'_, Vec<RouteCredit>>> {
        self.routes.as_ref().map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The limit granted the peer now: what it sent that arrived, plus the window.
    fn grant(&self, r: &mut RouteCredit) -> u32 {
        r.granted = r.abr.wrapping_add(self.window);
        r.granted
    }

    fn send_fcp(&self, route: Route, fcp: Fcp, raw: &dyn Link, c: &PortCounters) {
        bump(&c.fc_packets_sent, 1);
        raw.transmit(route, &fcp.emit());
    }

    /// Sends `datagram` on `route` through `tap` if its credit allows, else
    /// queues it (and asks the peer for credit through `raw`, the link
    /// under the tap: an FCP is neither counted as a packet nor captured).
    pub fn transmit(&self, route: Route, datagram: &[u8], tap: &dyn Link, raw: &dyn Link, c: &PortCounters) {
        let Some(mut routes) = self.lock().filter(|_| route != LOCAL) else {
            return tap.transmit(route, datagram);
        };
        let Some(r) = routes.get_mut(route as usize) else {
            return tap.transmit(route, datagram);
        };
        let n = blocks(datagram.len());
        if r.queue.is_empty() && r.fits(n) {
            r.fctbs = r.fctbs.wrapping_add(n);
            // Sent under the lock: a datagram never overtakes a queued one.
            return tap.transmit(route, datagram);
        }
        bump(&c.fc_held, 1);
        r.queue.push_back(datagram.to_vec());
        self.block(r, route, raw, c);
    }

    /// The route starts holding senders: ask the peer for credit now.
    fn block(&self, r: &mut RouteCredit, route: Route, raw: &dyn Link, c: &PortCounters) {
        if r.blocked_since.is_none() {
            let now = self.clock.now_ns();
            r.blocked_since = Some(now);
            r.next_request = now + RETRY_NS;
            bump(&c.fc_blocked, 1);
            self.send_fcp(route, Fcp { flags: Fcp::REQUEST, fctbs: r.fctbs, fccl: self.grant(r) }, raw, c);
        }
    }

    /// Whether `route` takes a packet now (false: the caller waits for the
    /// port's release, see [`Credits::take_released`]).
    pub fn ready(&self, route: Route, raw: &dyn Link, c: &PortCounters) -> bool {
        let Some(mut routes) = self.lock().filter(|_| route != LOCAL) else { return true };
        let Some(r) = routes.get_mut(route as usize) else { return true };
        if r.queue.is_empty() && r.fits(blocks(MAX_DATAGRAM)) {
            return true;
        }
        r.held = true;
        self.block(r, route, raw, c);
        false
    }

    /// A datagram of `len` bytes arrived from `route` (before any check: it
    /// took its place in the receive buffer all the same).
    pub fn received(&self, route: Route, len: usize) {
        if route == LOCAL {
            return;
        }
        if let Some(mut routes) = self.lock() {
            if let Some(r) = routes.get_mut(route as usize) {
                r.abr = r.abr.wrapping_add(blocks(len));
                // An update is owed once the peer has used half of what it
                // was granted (not after every packet: an FCP wakes the
                // peer's receiving thread).
                let left = r.granted.wrapping_sub(r.abr);
                if left >= 1 << 31 || left <= self.window / 2 {
                    r.owe_update = true;
                }
            }
        }
    }

    /// An FCP from `route`: resynchronises what was received, takes the
    /// credit granted, answers a request, sends what now fits.
    pub fn on_fcp(&self, route: Route, fcp: Fcp, tap: &dyn Link, raw: &dyn Link, c: &PortCounters) {
        bump(&c.fc_packets_received, 1);
        let Some(mut routes) = self.lock() else { return };
        let Some(r) = routes.get_mut(route as usize) else { return };
        r.abr = fcp.fctbs;
        r.fccl = fcp.fccl;
        if fcp.flags & Fcp::REQUEST != 0 {
            r.owe_update = false;
            self.send_fcp(route, Fcp { flags: 0, fctbs: r.fctbs, fccl: self.grant(r) }, raw, c);
        }
        self.drain(r, route, tap);
    }

    /// Sends queued datagrams while they fit; a drained route stops holding.
    fn drain(&self, r: &mut RouteCredit, route: Route, tap: &dyn Link) {
        while let Some(front) = r.queue.front() {
            let n = blocks(front.len());
            if !r.fits(n) {
                return;
            }
            r.fctbs = r.fctbs.wrapping_add(n);
            tap.transmit(route, front);
            r.queue.pop_front();
        }
        if r.fits(blocks(MAX_DATAGRAM)) {
            r.blocked_since = None;
            if std::mem::take(&mut r.held) {
                self.released.store(true, Ordering::SeqCst);
            }
        }
    }

    /// End of a receive pass (and the timer's turn): the FCPs owed to the
    /// peers that sent, the requests of held routes that are due, the queue
    /// of a stalled route discarded. True: a held route let go (the port's
    /// senders go on).
    pub fn pass(&self, tap: &dyn Link, raw: &dyn Link, c: &PortCounters) -> bool {
        if let Some(mut routes) = self.lock() {
            let now = self.clock.now_ns();
            for (i, r) in routes.iter_mut().enumerate() {
                let route = i as Route;
                if std::mem::take(&mut r.owe_update) {
                    self.send_fcp(route, Fcp { flags: 0, fctbs: r.fctbs, fccl: self.grant(r) }, raw, c);
                }
                let Some(since) = r.blocked_since else { continue };
                if now.saturating_sub(since) >= STALL_NS {
                    // Nothing granted for too long: the peer is gone or stuck.
                    bump(&c.fc_discards, r.queue.len() as u64);
                    r.queue.clear();
                    r.fccl = r.fctbs.wrapping_add(self.window);
                    self.drain(r, route, tap);
                } else if now >= r.next_request {
                    r.next_request = now + RETRY_NS;
                    let fcp = Fcp { flags: Fcp::REQUEST, fctbs: r.fctbs, fccl: self.grant(r) };
                    self.send_fcp(route, fcp, raw, c);
                }
            }
        }
        self.released.swap(false, Ordering::SeqCst)
    }

    /// When a held route next needs the timer (its next request or its stall).
    pub fn next_due(&self) -> Option<u64> {
        let routes = self.lock()?;
        routes.iter().filter_map(|r| r.blocked_since.map(|s| r.next_request.min(s + STALL_NS))).min()
    }

    /// Datagrams waiting for credit, all routes.
    pub fn queued(&self) -> usize {
        self.lock().map_or(0, |r| r.iter().map(|r| r.queue.len()).sum())
    }
}
