//! [`EtherLink`]: a medium with the fabric's middleware around it, the
//! [`FrameSink`] the firmware sends through, and the thread that receives.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::classify::{Classifier, PrioMap};
use super::config::{Backend, EtherConfig};
use super::counters::EtherCounters;
use super::counters::PrioSnapshot;
use super::frame::{FrameHandler, FrameSink, Medium, HEADER_LEN, MAX_FRAME, MIN_FRAME};
use super::pfc::{PauseGate, PausePolicy};
use super::pfc_tx::RxHold;
use super::rx_buffer::{Fill, RxBuffer};
use super::shaper::Shaper;
use super::tap::TapMedium;
use super::udp::UdpMedium;
use crate::counters::bump;
use crate::fault::Shape;
use crate::middleware::{Capture, Faults};
use crate::route::Route;
use crate::Link;
use vrnic_sys::clock::{Clock, MonotonicClock};
use vrnic_sys::wake::{wait_readable_or_woken, EventFd};

/// The longest the worker waits for a frame (a wake, a fault release or the
/// handler's deadline end it sooner).
const IDLE_WAIT: Duration = Duration::from_millis(200);
/// Frames taken per receive pass.
const BURST: usize = 64;
/// Frames between two looks at the medium's fill within a receive burst
/// (`rx_buffer.rs`).
const FILL_CHECK: usize = 16;
/// How far behind the arrivals the worker may be while RoCE senders go on
/// (`FrameSink::ready`): a real MAC takes a PAUSE as it arrives; here it may
/// wait in the socket while the worker waits for a CPU, and a sender that
/// went on meanwhile would overrun the peer's buffer.
const MAC_LAG_NS: u64 = 1_000_000;
/// Frames the shaper may hold while RoCE senders go on (`FrameSink::ready`):
/// a port's scheduler holds a QP that the line cannot take rather than drop
/// its frames; what does not ask (responses, ACKs, CNPs) keeps the rest of
/// the shaper's queue ([`shaper::QUEUE_FRAMES`](super::shaper::QUEUE_FRAMES)).
const SHAPER_READY_FRAMES: usize = super::shaper::QUEUE_FRAMES / 4;

/// How long the handler's timers may wait for the worker to take what the
/// medium holds (see `worker`).
const TIMER_DEFER_NS: u64 = 10_000_000;

/// No medium: nothing arrives, what is sent is counted and lost.
struct NoMedium(Arc<EtherCounters>);

impl Link for NoMedium {
    fn transmit(&self, _route: Route, _frame: &[u8]) {
        bump(&self.0.tx_no_link, 1);
    }
}

impl Medium for NoMedium {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
    fn carrier(&self) -> bool {
        false
    }
}

/// What the sink and the worker share.
struct Shared {
    medium: Box<dyn Medium>,
    faults: Faults,
    capture: Capture,
    counters: Arc<EtherCounters>,
    stop: AtomicBool,
    /// Ends the worker's wait at once ([`EtherLink::waker`], stop).
    wake: Arc<EventFd>,
    /// UDP media: the receiving socket's address.
    local: Option<SocketAddr>,
    /// A frame's priority (trust, DSCP map): the gate and the hold ask it.
    classes: Arc<Classifier>,
    /// PAUSE/PFC: every transmitted frame passes it.
    pause: PauseGate,
    /// PFC transmit: received frames of a lossless priority wait here for a buffer.
    hold: RxHold,
    /// Global pause transmit: PAUSE while the medium's receive buffer fills.
    rx_buffer: RxBuffer,
    /// A sender asked [`FrameSink::ready`]: the end of a pause calls the
    /// handler's `tx_ready`.
    held: AtomicBool,
    /// A sender heard no because the worker lagged ([`MAC_LAG_NS`]): its
    /// next pass that empties the medium calls `tx_ready`.
    lagged: AtomicBool,
    /// The line rate (`[eth] link_rate_mbps`; none: unlimited): after the gate.
    shaper: Option<Shaper>,
    /// A sender heard no because the shaper held [`SHAPER_READY_FRAMES`]:
    /// the pass that brings it under half of that calls `tx_ready`.
    shaped: AtomicBool,
    clock: Arc<dyn Clock>,
}

/// The one exit onto the medium: counts and captures what leaves.
struct Out<'a>(&'a Shared);

impl Link for Out<'_> {
    fn transmit(&self, route: Route, frame: &[u8]) {
        let s = self.0;
        bump(&s.counters.tx_frames, 1);
        bump(&s.counters.tx_bytes, frame.len() as u64);
        s.capture.frame(frame, &s.counters.pcap_dropped);
        s.medium.transmit(route, frame);
    }
}

impl FrameSink for Shared {
    fn send_frame(&self, frame: &[u8]) {
        if !(HEADER_LEN..=MAX_FRAME).contains(&frame.len()) {
            bump(&self.counters.tx_bad_length, 1);
            return;
        }
        let now = self.clock.now_ns();
        self.pause.transmit(frame, now, &mut |f| self.shape(f, now));
    }

    fn carrier(&self) -> bool {
        self.medium.carrier()
    }

    fn set_pause_policy(&self, policy: PausePolicy) {
        self.pause.set_policy(policy, self.clock.now_ns());
        self.hold.set_policy(policy.pfc_tx, policy.smac);
        self.rx_buffer.set_policy(policy.pause_tx, policy.smac);
        // Frames of pauses that ended leave on the worker's next pass.
        self.wake.wake();
    }

    fn set_prio_map(&self, map: PrioMap) {
        self.classes.set(&map);
    }

    fn priority(&self, pcp: Option<u8>, dscp: Option<u8>) -> u8 {
        self.classes.priority(pcp, dscp)
    }

    fn prio_counters(&self, prio: usize) -> Option<PrioSnapshot> {
        self.counters.prio.get(prio).map(|c| c.snapshot())
    }

    fn ready(&self, prio: u8) -> bool {
        // Set before the look: a pause that ends after it finds it set.
        self.held.store(true, Ordering::SeqCst);
        let now = self.clock.now_ns();
        if self.pause.is_paused(prio as usize, now) {
            return false;
        }
        if self.pause.lagging(now, MAC_LAG_NS) {
            self.lagged.store(true, Ordering::SeqCst);
            self.wake.wake();
            return false;
        }
        if let Some(sh) = self.shaper.as_ref().filter(|sh| sh.queued() >= SHAPER_READY_FRAMES) {
            // Set, then looked at again: a drain between the two finds it set.
            self.shaped.store(true, Ordering::SeqCst);
            if sh.queued() >= SHAPER_READY_FRAMES {
                return false;
            }
        }
        true
    }
}

impl Shared {
    /// A frame past the pause gate: the shaper if there is one, then [`emit`](Self::emit).
    fn shape(&self, frame: &[u8], now: u64) {
        match &self.shaper {
            None => self.emit(frame),
            Some(s) => {
                if s.transmit(frame, now, &mut |f| self.emit(f)) {
                    // The worker sends it when the bucket pays for it.
                    self.wake.wake();
                }
            }
        }
    }

    /// A frame past the pause gate and the shaper: tx faults, then the medium.
    fn emit(&self, frame: &[u8]) {
        if self.faults.is_on() {
            let mut f = frame.to_vec();
            self.faults.transmit(0, &mut f, &*self.counters, &Out(self));
        } else {
            Out(self).transmit(0, frame);
        }
    }

    /// A frame from the medium: size checks, capture, rx faults, the handler.
    fn arrive(&self, frame: &mut [u8], handler: &dyn FrameHandler) {
        let c = &self.counters;
        if frame.len() < HEADER_LEN {
            bump(&c.rx_runts, 1);
            return;
        }
        if frame.len() > MAX_FRAME {
            bump(&c.rx_giants, 1);
            return;
        }
        self.capture.frame(frame, &c.pcap_dropped);
        self.faults.receive(0, frame, &*self.counters, &mut |_, f| self.deliver(f, handler));
    }

    fn deliver(&self, frame: &[u8], handler: &dyn FrameHandler) {
        let c = &self.counters;
        bump(&c.rx_frames, 1);
        bump(&c.rx_bytes, frame.len() as u64);
        if frame.len() < MIN_FRAME {
            bump(&c.rx_undersize, 1);
        }
        let now = self.clock.now_ns();
        if self.pause.receive(frame, now) {
            return;
        }
        self.hold.receive(frame, now, handler, &mut |f| self.emit(f));
    }
}

/// The Ethernet port's link: open it, give [`sink`](Self::sink) to the
/// firmware, [`start`](Self::start) its worker with the RX handler. The
/// worker stops (and the capture is flushed) when the link is dropped.
pub struct EtherLink {
    shared: Arc<Shared>,
    clock: Arc<dyn Clock>,
    worker: Option<JoinHandle<()>>,
}

impl EtherLink {
    /// Opens the configured medium (a TAP is created or attached and
    /// brought up here, before privileges are dropped) and the capture file.
    pub fn open(cfg: &EtherConfig) -> io::Result<EtherLink> {
        EtherLink::open_with_clock(cfg, Arc::new(MonotonicClock::default()))
    }

    /// [`open`](Self::open) on `clock`: the worker's time, the faults'
    /// delays and the `now_ns`/deadlines of [`FrameHandler::poll`] (share it
    /// with an engine whose timers the handler runs).
    pub fn open_with_clock(cfg: &EtherConfig, clock: Arc<dyn Clock>) -> io::Result<EtherLink> {
        let backend = cfg.backend().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let counters = Arc::new(EtherCounters::default());
        let mut local = None;
        let medium: Box<dyn Medium> = match backend {
            Backend::None => Box::new(NoMedium(counters.clone())),
            Backend::Udp { local: l, remote } => {
                let m = UdpMedium::unicast(l, remote, counters.clone())?;
                local = m.local_addr().ok();
                Box::new(m)
            }
            Backend::Mcast { group, local: l } => {
                let m = UdpMedium::multicast(group, l, counters.clone())?;
                local = m.local_addr().ok();
                Box::new(m)
            }
            Backend::Tap { name } => Box::new(TapMedium::open(&name, counters.clone())?),
        };
        let counters_pause = counters.clone();
        let counters_hold = counters.clone();
        let counters_shaper = counters.clone();
        let counters_buffer = counters.clone();
        let classes = Arc::new(Classifier::default());
        let pause_bps = cfg.pause_speed_mbps.max(1).saturating_mul(1_000_000);
        let shared = Arc::new(Shared {
            medium,
            faults: Faults::with_shape(Shape::Ethernet, &cfg.faults, clock.clone()),
            capture: Capture::open(cfg.pcap.as_deref().map(|p| (p, cfg.pcap_max_bytes)))?,
            counters,
            stop: AtomicBool::new(false),
            wake: Arc::new(EventFd::new()?),
            local,
            pause: PauseGate::new(counters_pause, pause_bps, classes.clone()),
            hold: RxHold::new(classes.clone(), counters_hold, cfg.pfc_tx_quanta.max(1), pause_bps),
            rx_buffer: RxBuffer::new(counters_buffer, cfg.pfc_tx_quanta.max(1), pause_bps),
            held: AtomicBool::new(false),
            lagged: AtomicBool::new(false),
            shaped: AtomicBool::new(false),
            classes,
            shaper: Shaper::new(counters_shaper, cfg.link_rate_mbps.saturating_mul(1_000_000), clock.now_ns()),
            clock: clock.clone(),
        });
        Ok(EtherLink { shared, clock, worker: None })
    }

    /// The link's clock (see [`open_with_clock`](Self::open_with_clock)).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// Where the device sends frames.
    pub fn sink(&self) -> Arc<dyn FrameSink> {
        self.shared.clone()
    }

    pub fn counters(&self) -> Arc<EtherCounters> {
        self.shared.counters.clone()
    }

    /// See [`FrameSink::carrier`].
    pub fn carrier(&self) -> bool {
        self.shared.medium.carrier()
    }

    /// Wakes the worker from its wait at once, so that its next pass runs
    /// the handler's [`poll`](FrameHandler::poll) (RoCE loopback queued,
    /// an engine timer armed earlier than the current wait). A wake while
    /// the worker is busy is kept for its next wait.
    pub fn waker(&self) -> Arc<dyn Fn() + Send + Sync> {
        let w = self.shared.wake.clone();
        Arc::new(move || w.wake())
    }

    /// A UDP link's receiving socket address.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.shared.local
    }

    /// Starts the thread that receives frames into `handler` (and releases
    /// frames the faults hold).
    pub fn start(&mut self, handler: Arc<dyn FrameHandler>) -> io::Result<()> {
        if self.worker.is_some() {
            return Err(io::Error::other("ethernet link already started"));
        }
        let (shared, clock) = (self.shared.clone(), self.clock.clone());
        self.worker = Some(vrnic_sys::privs::spawn("vrnic-eth", || (), move |()| worker(&shared, &*clock, &*handler))?);
        Ok(())
    }
}

impl Drop for EtherLink {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake.wake();
        if let Some(t) = self.worker.take() {
            let _ = t.join();
        }
        self.shared.capture.flush();
    }
}

/// How long a pass may wait: until the faults' next release, the handler's
/// deadline, the end of a pause, the shaper's next release, the hold's next
/// retry or refresh or [`IDLE_WAIT`], whichever is first.
fn wait_for(now: u64, dues: &[Option<u64>]) -> Duration {
    dues.iter()
        .copied()
        .flatten()
        .map(|due| Duration::from_nanos(due.saturating_sub(now)))
        .fold(IDLE_WAIT, Duration::min)
}

/// The link's thread: each pass runs the handler's `poll` (loopback,
/// timers), waits for the medium, a wake or the next deadline, receives a
/// burst (then `flush`), releases frames the faults, the pause gate and
/// the shaper hold (a sender waiting for the end of a pause resumes), offers
/// the frames PFC transmit holds again, and sends PAUSE while the medium's
/// receive buffer fills (`rx_buffer.rs`).
fn worker(s: &Shared, clock: &dyn Clock, handler: &dyn FrameHandler) {
    let mut buf = vec![0u8; 65536];
    let mut polled = clock.now_ns();
    while !s.stop.load(Ordering::SeqCst) {
        let now = clock.now_ns();
        // The handler's timers run once the medium holds nothing more: an
        // ACK that waits unread in the socket (the worker was busy sending
        // or waited for a CPU) arrived before the timer it would stop, and
        // a real port would have taken it then. At most TIMER_DEFER_NS late.
        let pending = s
            .medium
            .fd()
            .is_some_and(|fd| wait_readable_or_woken(Some(fd), &s.wake, Duration::ZERO).is_ok_and(|(ready, _)| ready));
        let handler_due = if pending && now.saturating_sub(polled) < TIMER_DEFER_NS {
            None
        } else {
            polled = now;
            handler.poll(now)
        };
        let shaper_due = s.shaper.as_ref().and_then(Shaper::next_due);
        let dues = [s.faults.next_due(), handler_due, s.pause.next_due(), shaper_due, s.hold.next_due()];
        let wait = wait_for(clock.now_ns(), &dues);
        let (ready, woken) = wait_readable_or_woken(s.medium.fd(), &s.wake, wait).unwrap_or_else(|_| {
            std::thread::sleep(wait);
            (s.medium.fd().is_some(), false)
        });
        if woken {
            // Cleared before the next poll: a wake after this point is kept.
            s.wake.drain();
        }
        let pass = clock.now_ns();
        let fill = if ready {
            let mut taken = 0;
            let n = s.medium.receive(&mut buf, BURST, &mut |_, f| {
                s.arrive(f, handler);
                taken += 1;
                // How full the socket is, every FILL_CHECK frames of a long burst
                // (a getsockopt): a PAUSE leaves before the burst ends.
                match (taken % FILL_CHECK == 0).then(|| s.medium.backlog()).flatten() {
                    Some(m) => drop(s.rx_buffer.update(Fill::Level(m), clock.now_ns(), &mut |p| s.emit(p))),
                    None => s.rx_buffer.refresh(clock.now_ns(), &mut |p| s.emit(p)),
                }
            });
            handler.flush();
            match n < BURST {
                true => Fill::Empty,
                false => s.medium.backlog().map_or(Fill::Unknown, Fill::Level),
            }
        } else {
            s.capture.flush();
            Fill::Empty
        };
        if fill == Fill::Empty {
            s.pause.medium_drained(pass);
        }
        if s.medium.fd().is_some() {
            s.rx_buffer.update(fill, clock.now_ns(), &mut |f| s.emit(f));
        }
        let mut released = false;
        s.faults.release(&Out(s), &mut |_, f| {
            released = true;
            s.deliver(f, handler);
        });
        if released {
            handler.flush();
        }
        let now = clock.now_ns();
        let mut drained = false;
        if let Some(sh) = &s.shaper {
            sh.release(now, &mut |f| s.emit(f));
            drained = sh.queued() < SHAPER_READY_FRAMES / 2 && s.shaped.swap(false, Ordering::SeqCst);
        }
        let ended = s.pause.release(now, &mut |f| s.shape(f, now)) && s.held.swap(false, Ordering::SeqCst);
        let caught_up = fill == Fill::Empty && s.lagged.swap(false, Ordering::SeqCst);
        if ended || caught_up || drained {
            handler.tx_ready();
        }
        if s.hold.poll(now, handler, &mut |f| s.emit(f)) {
            handler.flush();
        }
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
