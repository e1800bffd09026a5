//! [`RxHold`]: PFC transmit (owner: eth-link). When a received frame of a
//! priority whose PFC transmit is on (PFCC `pfctx`) finds no receive buffer
//! — the port's handler answers [`Offer::NoBuffer`]: the mlx5e RQ it would
//! land in has no WQE — the port keeps it and asks the peer to stop that
//! priority:
//!
//! - the frame waits in the priority's receive buffer (at most
//!   [`HOLD_FRAMES`]; beyond: a counted drop, `rx_discards`, as a real port's
//!   headroom overflows), and so does every later frame of that priority, in
//!   order;
//! - the port sends an 802.1Qbb PFC frame for the priority with `quanta`
//!   (`[eth] pfc_tx_quanta`, 0xffff by default) and sends it again every half
//!   pause time while frames wait (the peer's timer never runs out);
//! - the RQ has no doorbell (mlx5e only writes its doorbell record), so the
//!   port looks for posted buffers as hardware does, by offering the oldest
//!   frame again, every [`RETRY_NS`] on the link's worker;
//! - when the buffer is empty it sends XON (quanta 0). Turning the
//!   priority's `pfctx` off hands what waits to the handler as an ordinary
//!   receive (delivered or dropped there) and sends XON.
//!
//! RoCE frames never wait here (the RDMA engine answers an empty RQ by
//! IBTA's rules: RNR NAK on RC, a counted drop on UD; `docs/qos.md`).
//! Counters (per priority, [`EtherCounters::prio`](super::EtherCounters)):
//! `tx_pause` (PFC frames sent, XON included), `tx_pause_duration` (XOFF to
//! XON), `tx_pause_transition`, `rx_held`, `rx_discards`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use super::classify::Classifier;
use super::counters::{EtherCounters, PrioCounters};
use super::frame::{FrameHandler, Offer};
use crate::counters::bump;
use vrnic_wire::pfc::{quanta_ns, Repr, PRIORITIES};

/// Frames one priority's receive buffer holds (at most 8 x 256 frames of up
/// to 9 KiB: 18 MiB).
pub const HOLD_FRAMES: usize = 256;
/// How often the oldest held frame is offered again (the RQs have no
/// doorbell the port could wait on).
pub const RETRY_NS: u64 = 200_000;
/// The quanta of the PFC frames the port sends, unless configured.
pub const DEFAULT_TX_QUANTA: u16 = 0xffff;

/// One pause the port asks its peer for (PFC for a priority here, global
/// PAUSE in `rx_buffer.rs`): XOFF, its refreshes and XON, and their
/// counters.
#[derive(Debug, Default)]
pub(super) struct Asking {
    /// XOFF sent and no XON yet.
    pub(super) paused: bool,
    since: u64,
    /// When the XOFF is due again.
    pub(super) next_refresh: u64,
}

impl Asking {
    /// Sends XOFF (`send`), a refresh if the pause is on; the next is due
    /// `refresh_ns` later.
    pub(super) fn xoff(&mut self, now: u64, refresh_ns: u64, c: &PrioCounters, send: impl FnOnce()) {
        if !self.paused {
            self.paused = true;
            self.since = now;
            bump(&c.tx_pause_transition, 1);
        }
        send();
        self.next_refresh = now + refresh_ns;
    }

    /// Ends the pause, if on: `send` sends the XON.
    pub(super) fn xon(&mut self, now: u64, c: &PrioCounters, send: impl FnOnce()) {
        if self.paused {
            self.paused = false;
            bump(&c.tx_pause_duration_ns, now.saturating_sub(self.since));
            send();
        }
    }
}

/// The port's MAC, the source address of the PAUSE/PFC frames it sends
/// (in the low 48 bits).
#[derive(Debug, Default)]
pub(super) struct SourceMac(AtomicU64);

impl SourceMac {
    pub(super) fn set(&self, mac: [u8; 6]) {
        let mut m = [0u8; 8];
        m[2..].copy_from_slice(&mac);
        self.0.store(u64::from_be_bytes(m), Ordering::Relaxed);
    }

    pub(super) fn get(&self) -> [u8; 6] {
        self.0.load(Ordering::Relaxed).to_be_bytes()[2..].try_into().unwrap_or([0; 6])
    }
}

#[derive(Debug, Default)]
struct Held {
    queue: VecDeque<Vec<u8>>,
    asking: Asking,
    next_retry: u64,
}

/// See the module documentation.
pub struct RxHold {
    classes: Arc<Classifier>,
    counters: Arc<EtherCounters>,
    quanta: u16,
    /// Time between two XOFFs of one pause (half its length, at least 1 ns).
    refresh_ns: u64,
    /// PFCC `pfctx`: bit i = priority i is lossless.
    pfc_tx: AtomicU8,
    smac: SourceMac,
    /// Only the link's worker (and tests) touch it.
    prios: Mutex<[Held; PRIORITIES]>,
}

impl RxHold {
    /// `quanta` per PFC frame, timed at `speed_bps` (the pause gate's speed).
    pub fn new(classes: Arc<Classifier>, counters: Arc<EtherCounters>, quanta: u16, speed_bps: u64) -> RxHold {
        RxHold {
            classes,
            counters,
            quanta,
            refresh_ns: (quanta_ns(quanta, speed_bps) / 2).max(1),
            pfc_tx: AtomicU8::new(0),
            smac: SourceMac::default(),
            prios: Mutex::new(Default::default()),
        }
    }

    /// PFCC `pfctx` and the port's MAC. Takes effect on the worker's next
    /// [`poll`](Self::poll) for frames already held.
    pub fn set_policy(&self, pfc_tx: u8, smac: [u8; 6]) {
        self.smac.set(smac);
        self.pfc_tx.store(pfc_tx, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, [Held; PRIORITIES]> {
        self.prios.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pfc_frame(&self, prio: usize, quanta: u16, out: &mut dyn FnMut(&[u8])) {
        let mut q = [0u16; PRIORITIES];
        q[prio] = quanta;
        bump(&self.counters.prio[prio].tx_pause, 1);
        out(&Repr::Pfc { enable: 1 << prio, quanta: q }.to_frame(self.smac.get()));
    }

    fn xoff(&self, i: usize, h: &mut Held, now: u64, out: &mut dyn FnMut(&[u8])) {
        h.asking.xoff(now, self.refresh_ns, &self.counters.prio[i], || self.pfc_frame(i, self.quanta, out));
    }

    fn xon(&self, i: usize, h: &mut Held, now: u64, out: &mut dyn FnMut(&[u8])) {
        h.asking.xon(now, &self.counters.prio[i], || self.pfc_frame(i, 0, out));
    }

    fn hold(&self, i: usize, h: &mut Held, frame: &[u8]) {
        let c = &self.counters.prio[i];
        if h.queue.len() >= HOLD_FRAMES {
            bump(&c.rx_discards, 1);
        } else {
            bump(&c.rx_held, 1);
            h.queue.push_back(frame.to_vec());
        }
    }

    /// A received frame (not MAC control) for `handler`: delivered now, or
    /// held (see the module documentation); PFC frames the port sends go to
    /// `out`.
    pub fn receive(&self, frame: &[u8], now: u64, handler: &dyn FrameHandler, out: &mut dyn FnMut(&[u8])) {
        let i = self.classes.frame_priority(frame);
        if self.pfc_tx.load(Ordering::Relaxed) & (1 << i) == 0 {
            handler.receive_frame(frame);
            return;
        }
        let mut prios = self.lock();
        let h = &mut prios[i];
        if !h.queue.is_empty() {
            self.hold(i, h, frame);
            return;
        }
        if handler.offer_frame(frame) == Offer::NoBuffer {
            self.hold(i, h, frame);
            h.next_retry = now + RETRY_NS;
            self.xoff(i, h, now, out);
        }
    }

    /// The worker's pass: offers held frames again when their retry is due,
    /// refreshes pauses, sends XON for emptied buffers, hands the frames of
    /// priorities no longer lossless to the handler. Returns whether a held
    /// frame went to the handler.
    pub fn poll(&self, now: u64, handler: &dyn FrameHandler, out: &mut dyn FnMut(&[u8])) -> bool {
        let lossless = self.pfc_tx.load(Ordering::Relaxed);
        let mut handed = false;
        let mut prios = self.lock();
        for (i, h) in prios.iter_mut().enumerate() {
            if lossless & (1 << i) == 0 {
                handed |= !h.queue.is_empty();
                for f in h.queue.drain(..) {
                    handler.receive_frame(&f);
                }
                self.xon(i, h, now, out);
                continue;
            }
            if !h.queue.is_empty() && h.next_retry <= now {
                while let Some(f) = h.queue.front() {
                    if handler.offer_frame(f) == Offer::NoBuffer {
                        break;
                    }
                    handed = true;
                    h.queue.pop_front();
                }
                h.next_retry = now + RETRY_NS;
            }
            if h.queue.is_empty() {
                self.xon(i, h, now, out);
            } else if h.asking.next_refresh <= now {
                self.xoff(i, h, now, out);
            }
        }
        handed
    }

    /// When [`poll`](Self::poll) has work next (a retry or a refresh), if
    /// any frame waits.
    pub fn next_due(&self) -> Option<u64> {
        self.lock().iter().filter(|h| !h.queue.is_empty()).map(|h| h.next_retry.min(h.asking.next_refresh)).min()
    }

    /// Frames priority `prio` holds now.
    pub fn held(&self, prio: usize) -> usize {
        self.lock().get(prio).map_or(0, |h| h.queue.len())
    }
}

#[cfg(test)]
#[path = "pfc_tx_tests.rs"]
mod tests;
