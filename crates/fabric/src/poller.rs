//! Receiving on the caller's thread: [`LoopbackPump`] delivers what a
//! doorbell looped back before the doorbell returns, [`FabricPoller`] lets
//! a spinning thread take the UDP socket from the worker.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::udp::{UdpFabric, UdpShared};
use vrnic_packet::RxMeta;
use vrnic_sys::net::recv_gro;

/// Delivers loopback traffic on the thread that produced it, skipping the
/// worker's wake-up: the device runs each doorbell inside [`run`](Self::run),
/// and what the doorbell looped back (a request to a local QP, then its ACK
/// or response, ...) is handled before `run` returns.
#[derive(Clone)]
pub struct LoopbackPump(Arc<UdpShared>);

impl LoopbackPump {
    /// Runs `body` (a doorbell), then delivers what it looped back; what
    /// it sends to peers leaves in one batch at the end. While a pump runs,
    /// looped-back packets do not wake the worker: the outermost pump
    /// delivers them when its body returns, and wakes the worker for any
    /// that arrived after its last look.
    pub fn run<R>(&self, body: impl FnOnce() -> R) -> R {
        let s = &self.0;
        s.batched(|| {
            let outer = s.pumps.fetch_add(1, Ordering::SeqCst);
            let r = body();
            if outer == 0 {
                self.drain();
            }
            s.pumps.fetch_sub(1, Ordering::SeqCst);
            if outer == 0 && s.loopback_pending() {
                s.wake.notify_one();
            }
            r
        })
    }

    fn drain(&self) {
        let s = &self.0;
        if !s.loopback_pending() {
            return;
        }
        let (Some(handler), Ok(_order)) = (s.handler.get(), s.drain.try_lock()) else {
            // The worker (or another pump) is delivering: let the worker
            // take these too.
            s.wake.notify_one();
            return;
        };
        let mut deliver = |m: &RxMeta, b: &[u8]| handler.receive(m, b);
        // Bounded: a handler that keeps producing is left to the worker.
        // When the queue runs dry the handler flushes what it coalesced
        // (the responder's ACK): that loops back too, and is delivered
        // here rather than by a worker woken for one packet.
        for _ in 0..64 {
            if s.deliver_loopback(&mut deliver) == 0 {
                handler.flush();
                if !s.loopback_pending() {
                    break;
                }
            }
        }
        if s.loopback_pending() {
            s.wake.notify_one();
        }
    }
}

/// Run-to-completion receive for a thread that spins anyway (the device's
/// doorbell poller, a benchmark's polling loop): [`poll`](Self::poll)
/// receives and handles what is waiting on the socket and the loopback
/// queue, on the caller's thread. While a poller is active the worker takes
/// the socket out of its epoll set, so arriving packets cost no wake-up;
/// [`idle`](Self::idle) (or dropping the poller) hands receiving back to
/// the worker before the caller sleeps. Timers stay with the worker.
pub struct FabricPoller {
    shared: Arc<UdpShared>,
    active: bool,
    buf: Vec<u8>,
    /// Packets were handled and the handler's coalesced ACKs not yet
    /// flushed: they go out at the start of the next pass, after the
    /// caller has had a turn (a reply it posts leaves before the ACK).
    ack_owed: bool,
}

impl FabricPoller {
    /// Delivers what has arrived; never blocks. Returns the number of
    /// packets taken (0: nothing waiting, or the worker is delivering).
    pub fn poll(&mut self) -> usize {
        let shared = self.shared.clone();
        shared.batched(|| self.poll_pass())
    }

    fn poll_pass(&mut self) -> usize {
        let s = &self.shared;
        if !self.active {
            self.active = true;
            s.polling.fetch_add(1, Ordering::SeqCst);
            // The worker drops the socket from its epoll set on waking.
            s.wake.notify_one();
        }
        let Some(handler) = s.handler.get() else { return 0 };
        if std::mem::take(&mut self.ack_owed) {
            handler.flush();
        }
        let Ok(_order) = s.drain.try_lock() else { return 0 };
        let mut deliver = |m: &RxMeta, b: &[u8]| handler.receive(m, b);
        let mut n = s.deliver_loopback(&mut deliver);
        let fd = s.sock.as_raw_fd();
        n += s.receive_burst(&mut |b| recv_gro(fd, b), &mut self.buf, 64, &mut deliver);
        if s.port.release_due(&**s, &mut deliver) {
            handler.tx_ready();
        }
        if n > 0 {
            self.ack_owed = true;
            s.port.flush_pcap();
        }
        n
    }

    /// Hands receiving back to the worker (call before sleeping).
    pub fn idle(&mut self) {
        if std::mem::take(&mut self.ack_owed) {
            if let Some(h) = self.shared.handler.get() {
                h.flush();
            }
        }
        if self.active {
            self.active = false;
            self.shared.polling.fetch_sub(1, Ordering::SeqCst);
            self.shared.wake.notify_one();
        }
    }

    /// Whether [`poll`](Self::poll) has been called since the last idle.
    pub fn is_active(&self) -> bool {
        self.active
    }
}

impl Drop for FabricPoller {
    fn drop(&mut self) {
        self.idle();
    }
}

impl UdpFabric {
    /// A handle that delivers loopback traffic inline (see [`LoopbackPump`]).
    pub fn loopback_pump(&self) -> LoopbackPump {
        LoopbackPump(self.shared.clone())
    }

    /// A run-to-completion receiver for a spinning thread (see [`FabricPoller`]).
    pub fn poller(&self) -> FabricPoller {
        FabricPoller { shared: self.shared.clone(), active: false, buf: vec![0u8; 65536], ack_owed: false }
    }
}
