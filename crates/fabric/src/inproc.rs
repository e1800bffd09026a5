//! Ports joined inside one process, without sockets (deterministic, for
//! tests and benches).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::buf::BufPool;
use super::fault::FaultConfig;
use super::link::Link;
use super::port::Port;
use super::route::{Peer, Route, LOCAL};
use vrnic_packet::{Dest, Endpoint, PacketHandler, PacketSink, RxMeta};
use vrnic_sys::clock::Clock;

/// Ports joined inside one process, without sockets: sends are queued and
/// [`InProcNet::pump`] delivers them (deterministic, for tests and benches).
pub struct InProcNet {
    ports: Vec<Port>,
    queue: Mutex<VecDeque<(usize, usize, Vec<u8>)>>,
    free: BufPool,
}

/// The sink of one port of an [`InProcNet`].
pub struct InProcSink {
    net: Arc<InProcNet>,
    index: usize,
}

/// Port `index`'s link: what it transmits is queued for the port at the
/// end of the route, and delivered when the net is pumped.
struct InProcLink<'a> {
    net: &'a InProcNet,
    index: usize,
}

impl Link for InProcLink<'_> {
    fn transmit(&self, route: Route, datagram: &[u8]) {
        self.net.route(self.index, route, datagram);
    }
}

impl PacketSink for InProcSink {
    fn send(&self, dest: &Dest, pkt: &mut [u8]) {
        let port = &self.net.ports[self.index];
        port.transmit(dest, pkt, &InProcLink { net: &self.net, index: self.index });
    }
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.net.ports[self.index].gid(index)
    }
}

impl InProcNet {
    /// One port per endpoint; every port can reach every other. `faults[i]`
    /// applies to port i (missing entries: none).
    pub fn new(endpoints: &[Endpoint], faults: &[FaultConfig], clock: Arc<dyn Clock>) -> Arc<InProcNet> {
        let clean = faults.iter().all(|f| f.tx.is_none() && f.rx.is_none());
        let ports = endpoints
            .iter()
            .enumerate()
            .map(|(i, ep)| {
                let peers = endpoints
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(j, e)| Peer { ep: *e, udp: None, index: j })
                    .collect();
                let f = faults.get(i).cloned().unwrap_or_default();
                let mut p = Port::new(*ep, peers, &f, None, clock.clone())
                    .unwrap_or_else(|_| unreachable!("no pcap file, no I/O"));
                // ICRC-exempt only if no port of the net injects faults (a
                // receiver must check what a corrupting sender sends).
                p.in_process = clean;
                p
            })
            .collect();
        Arc::new(InProcNet { ports, queue: Mutex::new(VecDeque::new()), free: BufPool::new(256) })
    }

    pub fn sink(self: &Arc<Self>, index: usize) -> Arc<dyn PacketSink> {
        Arc::new(InProcSink { net: self.clone(), index })
    }

    pub fn port(&self, index: usize) -> &Port {
        &self.ports[index]
    }

    fn route(&self, from: usize, tag: Route, bytes: &[u8]) {
        let to = if tag == LOCAL { from } else { self.ports[from].peers()[tag as usize].index };
        let b = self.free.copy_of(bytes);
        if let Ok(mut q) = self.queue.lock() {
            q.push_back((to, from, b));
        }
    }

    /// Packets waiting for delivery.
    pub fn pending(&self) -> usize {
        self.queue.lock().map(|q| q.len()).unwrap_or(0)
    }

    /// Delivers every queued packet (and those sent in reaction, up to
    /// `limit`), releases due held packets and flushes each handler.
    /// `handlers[i]` receives port i's packets. Returns packets delivered.
    pub fn pump(&self, handlers: &[&dyn PacketHandler], limit: usize) -> usize {
        let mut n = 0;
        for (i, p) in self.ports.iter().enumerate() {
            let mut d = |m: &RxMeta, b: &[u8]| {
                if let Some(h) = handlers.get(i) {
                    h.receive(m, b)
                }
            };
            p.release_due(&InProcLink { net: self, index: i }, &mut d);
        }
        while n < limit {
            let item = self.queue.lock().ok().and_then(|mut q| q.pop_front());
            let Some((to, from, mut bytes)) = item else { break };
            let src = self.ports[from].local();
            if let Some(h) = handlers.get(to) {
                self.ports[to].accept(src, &mut bytes, &mut |m, b| h.receive(m, b));
            }
            self.free.give(bytes);
            n += 1;
            if self.pending() == 0 {
                for h in handlers {
                    h.flush();
                }
            }
        }
        for h in handlers {
            h.flush();
        }
        n
    }

    /// The earliest held-packet deadline of any port.
    pub fn next_due(&self) -> Option<u64> {
        self.ports.iter().filter_map(|p| p.next_due()).min()
    }
}
