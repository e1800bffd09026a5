//! The IB UDP fabric link: a port's datagrams over a UDP socket (RoCEv2
//! framing: BTH onward, or the GRH envelope, is the UDP payload), with
//! loopback to the same instance through the same path. Sends from a
//! batching thread leave together (`gso.rs`); receiving is the worker's
//! (`worker.rs`) or a spinning thread's (`poller.rs`).

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::buf::BufPool;
use super::config::FabricConfig;
use super::counters::{bump, PortCounters};
use super::gso::TxQueue;
use super::link::Link;
use super::port::Port;
use super::route::{Route, LOCAL};
use vrnic_packet::{Dest, PacketHandler, PacketSink, RxMeta};
use vrnic_sys::clock::MonotonicClock;
use vrnic_sys::net::{enable_udp_gro, recv_gro, set_socket_buffers, socket_drops, socket_receive_buffer};

/// Reads one datagram, or one GRO aggregate of equal-sized datagrams from
/// one sender, without blocking: (length, sender, segment size; the last
/// segment may be shorter).
pub(super) type RecvOne<'a> = dyn FnMut(&mut [u8]) -> io::Result<(usize, SocketAddr, usize)> + 'a;

pub(super) struct UdpShared {
    pub(super) port: Port,
    pub(super) sock: UdpSocket,
    loopback: Mutex<VecDeque<Vec<u8>>>,
    spare: BufPool,
    /// Held by whoever delivers loopback packets (the worker or an inline
    /// [`super::LoopbackPump`]), so they are delivered in order.
    pub(super) drain: Mutex<()>,
    pub(super) handler: std::sync::OnceLock<Arc<dyn PacketHandler>>,
    pub(super) wake: tokio::sync::Notify,
    pub(super) stop: AtomicBool,
    /// Active [`super::FabricPoller`]s: while any is active, the worker takes the
    /// socket out of its epoll set and receiving is left to the pollers.
    pub(super) polling: AtomicUsize,
    /// Datagrams a batch has not sent yet (see [`UdpShared::batched`]).
    tx: Mutex<TxQueue>,
    /// Open send batches ([`UdpShared::batched`]): while any is open, sends
    /// to peers queue and the last batch to close sends them together.
    batches: AtomicUsize,
    /// Open [`super::LoopbackPump`]s: while any runs, what loops back is
    /// delivered by the pump when it ends, so the worker is not woken.
    pub(super) pumps: AtomicUsize,
}

impl UdpShared {
    fn route(&self, tag: Route, bytes: &[u8]) {
        if tag == LOCAL {
            let b = self.spare.copy_of(bytes);
            if let Ok(mut q) = self.loopback.lock() {
                q.push_back(b);
            }
            if self.pumps.load(Ordering::SeqCst) == 0 {
                self.wake.notify_one();
            }
            return;
        }
        let Some(addr) = self.port.peers().get(tag as usize).and_then(|p| p.udp) else {
            bump(&self.port.counters.tx_no_route, 1);
            return;
        };
        // One queue, sent in order by whoever flushes: a datagram never
        // overtakes one batched before it. The batch count is read under
        // the queue's lock, so a batch that closes meanwhile flushes this one too.
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let batching = self.batches.load(Ordering::SeqCst) > 0;
        if tx.is_empty() && !batching {
            drop(tx);
            let c = &self.port.counters;
            bump(&c.tx_socket_calls, 1);
            bump(&c.tx_socket_datagrams, 1);
            if self.sock.send_to(bytes, addr).is_err() {
                bump(&c.tx_errors, 1);
            }
            return;
        }
        tx.push(addr, self.spare.copy_of(bytes));
        if !batching || tx.len() >= TX_BATCH_MAX {
            tx.send(&self.sock, &self.port.counters, &self.spare);
        }
    }

    /// Runs `body` inside a send batch: what anyone sends to peers while a
    /// batch is open is gathered and sent together (one `sendmmsg`) when
    /// the last open batch closes: a receive pass's responses and ACKs, a
    /// doorbell's packets. Batches nest (the worker's pass, a doorbell's
    /// pump) and may overlap on different threads; the last to close sends.
    pub(super) fn batched<R>(&self, body: impl FnOnce() -> R) -> R {
        let _batch = TxBatch::open(self);
        body()
    }
}

/// An open send batch of a [`UdpShared`] (see [`UdpShared::batched`]):
/// closing the last one sends what the batches queued.
struct TxBatch<'a>(&'a UdpShared);

impl<'a> TxBatch<'a> {
    fn open(s: &'a UdpShared) -> TxBatch<'a> {
        s.batches.fetch_add(1, Ordering::SeqCst);
        TxBatch(s)
    }
}

impl Drop for TxBatch<'_> {
    fn drop(&mut self) {
        let s = self.0;
        if s.batches.fetch_sub(1, Ordering::SeqCst) == 1 {
            let mut tx = s.tx.lock().unwrap_or_else(|e| e.into_inner());
            if !tx.is_empty() {
                tx.send(&s.sock, &s.port.counters, &s.spare);
            }
        }
    }
}

/// Most datagrams one `sendmmsg` carries; a batch that reaches it is sent.
const TX_BATCH_MAX: usize = 64;

impl UdpShared {
    /// Receives what the socket holds now (up to `burst` datagrams) and
    /// delivers it; the caller holds `drain`. Returns how many arrived.
    /// `recv` reads one datagram without blocking (the std socket, or the
    /// worker's registered one, whose readiness a WouldBlock clears).
    pub(super) fn receive_burst(
        &self,
        recv: &mut RecvOne,
        buf: &mut [u8],
        burst: usize,
        deliver: &mut dyn FnMut(&RxMeta, &[u8]),
    ) -> usize {
        let port = &self.port;
        self.receive_with(recv, buf, burst, &mut |route, chunk| {
            let src = port.peers()[route as usize].ep;
            port.accept(src, chunk, self, deliver)
        })
    }

    /// [`Link::receive`] with its reader: datagrams from configured peers
    /// go to `arrive` (a GRO aggregate split back into its datagrams), the
    /// others are counted and dropped.
    fn receive_with(
        &self,
        recv: &mut RecvOne,
        buf: &mut [u8],
        burst: usize,
        arrive: &mut dyn FnMut(Route, &mut [u8]),
    ) -> usize {
        let c = &self.port.counters;
        let mut n = 0;
        let mut reads = 0;
        while n < burst {
            match recv(buf) {
                Ok((len, from, seg)) => {
                    let len = len.min(buf.len());
                    let segs = len.div_ceil(seg).max(1);
                    n += segs;
                    reads += 1;
                    // Isolation: only configured peers reach the engine.
                    let Some((route, _)) = self.port.table.by_udp(&from) else {
                        bump(&c.rx_unknown_peer, segs as u64);
                        continue;
                    };
                    // A GRO aggregate: datagrams of `seg` bytes, the last
                    // one possibly shorter.
                    for chunk in buf[..len].chunks_mut(seg) {
                        arrive(route, chunk);
                    }
                }
                Err(_) => break,
            }
        }
        if n > 0 {
            // The kernel's drop count, read every 64th pass (a syscall).
            if c.rx_socket_passes.load(Ordering::Relaxed) % 64 == 0 {
                if let Some(d) = socket_drops(self.sock.as_raw_fd()) {
                    c.rx_socket_drops.store(d as u64, Ordering::Relaxed);
                }
            }
            bump(&c.rx_socket_passes, 1);
            bump(&c.rx_socket_datagrams, n as u64);
            bump(&c.rx_socket_reads, reads);
        }
        n
    }

    pub(super) fn loopback_pending(&self) -> bool {
        self.loopback.lock().map(|q| !q.is_empty()).unwrap_or(false)
    }

    /// Delivers what is queued for loopback now; returns how many packets.
    /// The caller holds `drain`, which keeps deliveries in order.
    pub(super) fn deliver_loopback(&self, deliver: &mut dyn FnMut(&RxMeta, &[u8])) -> usize {
        let local = std::mem::take(&mut *self.loopback.lock().unwrap_or_else(|e| e.into_inner()));
        let n = local.len();
        for mut p in local {
            self.port.accept(self.port.local(), &mut p, self, deliver);
            self.spare.give(p);
        }
        n
    }
}

/// The UDP link: a peer's datagrams go to its socket address, [`LOCAL`]
/// ones to the loopback queue.
impl Link for UdpShared {
    fn transmit(&self, route: Route, datagram: &[u8]) {
        self.route(route, datagram);
    }

    fn receive(&self, buf: &mut [u8], burst: usize, arrive: &mut dyn FnMut(Route, &mut [u8])) -> usize {
        let fd = self.sock.as_raw_fd();
        self.receive_with(&mut |b| recv_gro(fd, b), buf, burst, arrive)
    }
}

impl PacketSink for UdpShared {
    fn send(&self, dest: &Dest, pkt: &mut [u8]) {
        self.port.transmit(dest, pkt, self);
    }
    fn ready(&self, dest: &Dest) -> bool {
        self.port.ready(dest, self)
    }
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.port.gid(index)
    }
}

/// A port on a UDP socket, with a worker thread (tokio, current-thread)
/// that receives, runs the handler's timers and loops local traffic back.
pub struct UdpFabric {
    pub(super) shared: Arc<UdpShared>,
    pub(super) clock: Arc<MonotonicClock>,
    pub(super) worker: Option<JoinHandle<()>>,
}

impl UdpFabric {
    /// Binds the socket. `lid` is the port's LID; `clock` the one the
    /// handler's deadlines are expressed in.
    pub fn bind(cfg: &FabricConfig, lid: u16, clock: Arc<MonotonicClock>) -> io::Result<UdpFabric> {
        cfg.validate().map_err(io::Error::other)?;
        let bind: IpAddr = cfg.bind.parse().map_err(io::Error::other)?;
        let sock = UdpSocket::bind(SocketAddr::new(bind, cfg.port))?;
        sock.set_nonblocking(true)?;
        set_socket_buffers(&sock, cfg.socket_buffer);
        // Runs of equal-sized datagrams from one peer may arrive as one
        // buffer (recv_gro splits them); where the kernel lacks it, they
        // arrive one by one.
        enable_udp_gro(&sock);
        let local = cfg.local_endpoint(lid).map_err(io::Error::other)?;
        let peers = cfg.peers().map_err(io::Error::other)?;
        let npeers = peers.len();
        let mut port =
            Port::new(local, peers, &cfg.faults, cfg.pcap.as_deref().map(|p| (p, cfg.pcap_max_bytes)), clock.clone())?;
        if cfg.flow_control {
            // What each peer may have in this socket's buffer: the window
            // asked for, within a quarter of the buffer the kernel gave
            // (it reports twice what it accounts), shared among the peers.
            let buffer = socket_receive_buffer(&sock).unwrap_or(208 << 10) / 2;
            let share = buffer / 4 / npeers.max(1);
            port.enable_flow_control(cfg.flow_control_window.min(share), clock.clone());
        }
        Ok(UdpFabric {
            shared: Arc::new(UdpShared {
                port,
                sock,
                loopback: Mutex::new(VecDeque::new()),
                spare: BufPool::new(128),
                drain: Mutex::new(()),
                handler: std::sync::OnceLock::new(),
                wake: tokio::sync::Notify::new(),
                stop: AtomicBool::new(false),
                polling: AtomicUsize::new(0),
                tx: Mutex::new(TxQueue::default()),
                batches: AtomicUsize::new(0),
                pumps: AtomicUsize::new(0),
            }),
            clock,
            worker: None,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.shared.sock.local_addr()
    }

    pub fn port(&self) -> &Port {
        &self.shared.port
    }

    pub fn counters(&self) -> Arc<PortCounters> {
        self.shared.port.counters.clone()
    }

    /// The sink the engine sends through.
    pub fn sink(&self) -> Arc<dyn PacketSink> {
        self.shared.clone()
    }

    /// Wakes the worker (e.g. after the handler armed an earlier timer).
    pub fn wake(&self) {
        self.shared.wake.notify_one();
    }

    /// A handle that wakes the worker, for the handler to keep.
    pub fn waker(&self) -> Waker {
        Waker(self.shared.clone())
    }
}

/// Wakes a fabric's worker thread.
#[derive(Clone)]
pub struct Waker(Arc<UdpShared>);

impl Waker {
    pub fn wake(&self) {
        self.0.wake.notify_one();
    }
}

impl Drop for UdpFabric {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake.notify_one();
        if let Some(t) = self.worker.take() {
            let _ = t.join();
        }
        self.shared.port.flush_pcap();
    }
}
