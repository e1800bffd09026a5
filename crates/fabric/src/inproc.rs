//! Ports joined inside one process, without sockets (deterministic, for
//! tests and benches).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::buf::BufPool;
use super::counters::bump;
use super::credit::DATAGRAM_OVERHEAD;
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
    /// A model of each port's socket receive buffer (bytes; `None`:
    /// unbounded): what arrives beyond it is dropped and counted in
    /// `rx_socket_drops`, as a full socket drops it.
    rx_buffer: Option<usize>,
    /// What each port's modeled buffer holds now, charged as the kernel charges a datagram.
    rx_held: Mutex<Vec<usize>>,
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
    fn ready(&self, dest: &Dest) -> bool {
        self.net.ports[self.index].ready(dest, &InProcLink { net: &self.net, index: self.index })
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
        let ports: Vec<Port> = endpoints
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
        let n = ports.len();
        Arc::new(InProcNet {
            ports,
            queue: Mutex::new(VecDeque::new()),
            free: BufPool::new(256),
            rx_buffer: None,
            rx_held: Mutex::new(vec![0; n]),
        })
    }

    pub fn sink(self: &Arc<Self>, index: usize) -> Arc<dyn PacketSink> {
        Arc::new(InProcSink { net: self.clone(), index })
    }

    pub fn port(&self, index: usize) -> &Port {
        &self.ports[index]
    }

    fn route(&self, from: usize, tag: Route, bytes: &[u8]) {
        let to = if tag == LOCAL { from } else { self.ports[from].peers()[tag as usize].index };
        if let Some(cap) = self.rx_buffer.filter(|_| to != from) {
            let mut held = self.rx_held.lock().unwrap_or_else(|e| e.into_inner());
            let charge = bytes.len() + DATAGRAM_OVERHEAD;
            if held[to] + charge > cap {
                bump(&self.ports[to].counters.rx_socket_drops, 1);
                return;
            }
            held[to] += charge;
        }
        let b = self.free.copy_of(bytes);
        if let Ok(mut q) = self.queue.lock() {
            q.push_back((to, from, b));
        }
    }

    /// Packets waiting for delivery.
    pub fn pending(&self) -> usize {
        self.queue.lock().map(|q| q.len()).unwrap_or(0)
    }

    /// Each port's held packets that are due (flow control packets, the
    /// senders a route let go); a port whose route drained calls its
    /// handler's `tx_ready`.
    fn release_due(&self, handlers: &[&dyn PacketHandler]) {
        for (i, p) in self.ports.iter().enumerate() {
            let mut d = |m: &RxMeta, b: &[u8]| {
                if let Some(h) = handlers.get(i) {
                    h.receive(m, b)
                }
            };
            if p.release_due(&InProcLink { net: self, index: i }, &mut d) {
                if let Some(h) = handlers.get(i) {
                    h.tx_ready();
                }
            }
        }
    }

    /// Delivers every queued packet (and those sent in reaction, up to
    /// `limit`), releases due held packets and flushes each handler.
    /// `handlers[i]` receives port i's packets. Returns packets delivered.
    pub fn pump(&self, handlers: &[&dyn PacketHandler], limit: usize) -> usize {
        let mut n = 0;
        self.release_due(handlers);
        while n < limit {
            let item = self.queue.lock().ok().and_then(|mut q| q.pop_front());
            let Some((to, from, mut bytes)) = item else { break };
            if self.rx_buffer.is_some() && to != from {
                let mut held = self.rx_held.lock().unwrap_or_else(|e| e.into_inner());
                held[to] = held[to].saturating_sub(bytes.len() + DATAGRAM_OVERHEAD);
            }
            let src = self.ports[from].local();
            if let Some(h) = handlers.get(to) {
                let link = InProcLink { net: self, index: to };
                self.ports[to].accept(src, &mut bytes, &link, &mut |m, b| h.receive(m, b));
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
        // The end of the pass: each port's flow control packets, and the
        // senders a route let go.
        self.release_due(handlers);
        n
    }

    /// Bounds each port's receive buffer at `bytes` (a model of a socket's:
    /// what does not fit is dropped and counted). Call before taking sinks.
    pub fn limit_receive_buffer(self: &mut Arc<Self>, bytes: usize) {
        if let Some(net) = Arc::get_mut(self) {
            net.rx_buffer = Some(bytes);
        }
    }

    /// Turns link-level flow control on at every port (`credit.rs`), each
    /// granting its peers `window_bytes`: a model of a receiver with that
    /// much buffer, for tests of what holds a sender.
    pub fn enable_flow_control(self: &mut Arc<Self>, window_bytes: usize, clock: Arc<dyn Clock>) {
        if let Some(net) = Arc::get_mut(self) {
            for p in &mut net.ports {
                p.enable_flow_control(window_bytes, clock.clone());
            }
        }
    }

    /// The earliest held-packet deadline of any port.
    pub fn next_due(&self) -> Option<u64> {
        self.ports.iter().filter_map(|p| p.next_due()).min()
    }
}
