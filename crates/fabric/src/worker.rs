//! The UDP link's worker thread (tokio, current-thread): receives while no
//! poller does, loops local traffic back, releases held packets and runs
//! the handler's timers.

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::udp::{UdpFabric, UdpShared};
use super::{PacketHandler, RxMeta};
use vrnic_sys::clock::{Clock, MonotonicClock};
use vrnic_sys::net::recv_gro;

impl UdpFabric {
    /// Starts the worker thread feeding `handler`.
    pub fn start(&mut self, handler: Arc<dyn PacketHandler>) -> io::Result<()> {
        if self.worker.is_some() {
            return Err(io::Error::other("fabric already started"));
        }
        let shared = self.shared.clone();
        let clock = self.clock.clone();
        let sock = self.shared.sock.try_clone()?;
        let _ = self.shared.handler.set(handler.clone());
        let t = vrnic_sys::privs::spawn(
            "vrnic-fabric",
            || tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build(),
            move |rt| match rt {
                Ok(rt) => rt.block_on(worker(shared, sock, clock, handler)),
                Err(e) => tracing::error!("fabric runtime: {e}"),
            },
        )?;
        self.worker = Some(t);
        Ok(())
    }
}

async fn worker(shared: Arc<UdpShared>, sock: UdpSocket, clock: Arc<MonotonicClock>, handler: Arc<dyn PacketHandler>) {
    let port = &shared.port;
    let mut buf = vec![0u8; 65536];
    let mut deliver = |m: &RxMeta, b: &[u8]| handler.receive(m, b);
    // Registered with the reactor only while no poller is active: every
    // datagram on a registered socket wakes this thread.
    let mut watched: Option<tokio::net::UdpSocket> = None;
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let polled = shared.polling.load(Ordering::SeqCst) > 0;
        // Loopback first, then whatever the socket holds, in bursts; in
        // order with any poller or pump (they take `drain` too).
        // What the pass sends (responses, ACKs) leaves in one batch.
        shared.batched(|| {
            {
                let _order = shared.drain.lock().unwrap_or_else(|e| e.into_inner());
                shared.deliver_loopback(&mut deliver);
                if let (false, Some(w)) = (polled, &watched) {
                    let fd = w.as_raw_fd();
                    shared.receive_burst(
                        &mut |b| w.try_io(tokio::io::Interest::READABLE, || recv_gro(fd, b)),
                        &mut buf,
                        256,
                        &mut deliver,
                    );
                }
            }
            let released = port.release_due(&*shared, &mut deliver);
            handler.flush();
            if released {
                handler.tx_ready();
            }
        });
        let now = clock.now_ns();
        let next = [handler.poll(now), port.next_due()].into_iter().flatten().min();
        port.flush_pcap();
        if shared.loopback_pending() {
            continue;
        }
        let sleep = next.map(|d| d.saturating_sub(clock.now_ns())).unwrap_or(50_000_000);
        if sleep == 0 {
            continue;
        }
        let timer = tokio::time::sleep(std::time::Duration::from_nanos(sleep));
        if polled {
            watched = None;
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = timer => {}
            }
            continue;
        }
        if watched.is_none() {
            match sock.try_clone().and_then(tokio::net::UdpSocket::from_std) {
                Ok(s) => watched = Some(s),
                Err(e) => {
                    tracing::error!("fabric socket: {e}");
                    return;
                }
            }
            // Whatever arrived while unwatched is taken on the next pass
            // (and the WouldBlock that ends it arms the readiness).
            continue;
        }
        let Some(w) = &watched else { continue };
        tokio::select! {
            _ = w.readable() => {}
            _ = shared.wake.notified() => {}
            _ = timer => {}
        }
    }
}
