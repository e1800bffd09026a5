//! The mlx5 data path, top-down:
//!
//! - [`sq`]: the send-doorbell router over the shared QP number space. Engine
//!   QPs (RC, UC, UD) have their new send WQEs fetched and handed to the
//!   engine as work requests; the firmware's own send queues go to [`fw_sq`]
//!   (QP0/QP1 through `ib/datagram.rs`, REG_UMR through [`umr`]); a QP without a
//!   send path gets an error CQE. [`sq_ops`] says what is executed per QP type.
//! - [`rq`]: receive WQEs (QP RQ, SRQ free list) pulled into the engine.
//! - [`rx`]: packets from the fabric, demultiplexed by BTH destination QP.
//! - [`cq`]: the only CQE writer and the one 24-bit consumer widening; every
//!   CQE (engine or firmware) runs the CQ's arming ([`cq_arm`]).
//! - [`eq`]: the EQE writer, the EQ doorbell, the events raised.
//! - [`wqe`], [`cqe`]: the WQE and CQE codecs. [`cq_resize`]: MODIFY_CQ resize.
//!
//! **Completions reach the guest by construction.** The engine reports
//! completions and events through its [`sink::QueueSink`] while the firmware
//! holds it, so they are queued, not written. Every entry into the data path
//! from outside this module (doorbells, the UAR page scan, fabric packets,
//! flushes, timers) goes through a [`DataPath`], and the work itself is
//! visible only inside this module: dropping the `DataPath` writes what the
//! engine queued (CQEs, then the events their arming raises), whichever way
//! the call returns. Commands run inside a `DataPath` too
//! (`CommandHandler::execute`), so a handler that drives the engine directly
//! (a QP to ERR) need not drain.

pub mod cq;
pub mod cq_arm;
pub mod cq_resize;
pub mod cqe;
pub mod ctx;
pub(crate) mod dbr;
pub mod eq;
pub(crate) mod fw_sq;
mod rq;
pub mod rx;
pub mod sink;
pub(crate) mod sq;
pub mod sq_ops;
mod sq_read;
pub mod umr;
pub mod wqe;

#[cfg(test)]
mod cq_tests;
#[cfg(test)]
mod event_tests;
#[cfg(test)]
mod mcast_wire_tests;
#[cfg(test)]
mod moder_tests;
#[cfg(test)]
mod opcode_tests;
#[cfg(test)]
mod wqe_path_tests;

pub use ctx::{expand_ci, CqCtx, EqCtx, CQ_ARM_UNSET};
pub use rx::FwHandler;
pub use sink::QueueSink;
pub use sq::engine_qp;

use std::ops::{Deref, DerefMut};

use super::firmware::Firmware;
use super::uar::Doorbell;
use dbr::be32_at;

/// The firmware inside the data path: when dropped, everything the engine
/// reported meanwhile is written ([`Firmware::drain`]).
pub struct DataPath<'a>(&'a mut Firmware);

impl Drop for DataPath<'_> {
    fn drop(&mut self) {
        for qpn in std::mem::take(&mut self.0.core.entered_err) {
            self.0.flush_entered_err(qpn);
        }
        self.0.core.drain();
    }
}

impl Deref for DataPath<'_> {
    type Target = Firmware;
    fn deref(&self) -> &Firmware {
        self.0
    }
}

impl DerefMut for DataPath<'_> {
    fn deref_mut(&mut self) -> &mut Firmware {
        self.0
    }
}

/// The data path's entry points.
impl Firmware {
    /// Enters the data path (see the module doc).
    pub fn datapath(&mut self) -> DataPath<'_> {
        DataPath(self)
    }

    /// A send doorbell for `qpn`.
    pub fn send_doorbell(&mut self, qpn: u32) {
        self.datapath().route_send(qpn);
    }

    /// CQ arm doorbell (`sn`, solicited-only, the driver's 24-bit `ci`).
    pub fn cq_arm(&mut self, cqn: u32, sn: u8, solicited: bool, ci: u32) {
        self.datapath().core.arm_cq(cqn, sn, solicited, ci);
    }

    /// EQ doorbell: the driver's 24-bit consumer index, optionally re-arm.
    pub fn eq_doorbell(&mut self, eqn: u32, ci: u32, arm: bool) {
        self.datapath().core.update_eq(eqn, ci, arm);
    }

    /// A command moved QP `qpn` to ERR: its outstanding work completes with
    /// WR_FLUSH_ERR, in order (an engine QP's, or the firmware's own queue's).
    fn flush_entered_err(&mut self, qpn: u32) {
        match self.core.engine.qp(qpn).map(|q| q.qp_type) {
            Some(t) if self.via_engine(t) => self.engine_flush(qpn),
            Some(_) => self.core.flush_qp(qpn),
            None => {}
        }
    }

    /// After a QP entered ERR: queued work was flushed by the engine; WQEs
    /// still only in guest memory are handed over now and flush in order.
    pub fn engine_flush(&mut self, qpn: u32) {
        let mut dp = self.datapath();
        dp.sync_sq(qpn);
        dp.sync_recv(qpn);
        dp.watch_err_rq(qpn);
    }

    /// A decoded UAR doorbell: a send doorbell to the QP's send path, a CQ
    /// arm or an EQ update to the core. `scan_page` (poll mode): doorbells
    /// that share a slot on a page (every QP and CQ of a libmlx5 context
    /// uses its one UAR) collapse into the last value, so after the store's
    /// own target the doorbell records of every QP and CQ on its page are
    /// looked at: new send WQEs and new arm words are found there.
    pub fn uar_doorbell(&mut self, db: Doorbell, scan_page: bool) {
        let mut dp = self.datapath();
        let uar = match db {
            Doorbell::Send { uar, qpn_ds, .. } => {
                dp.route_send(qpn_ds >> 8);
                uar
            }
            Doorbell::CqArm { uar, cqn, sn, solicited, ci } => {
                dp.core.arm_cq(cqn, sn, solicited, ci);
                uar
            }
            // EQ doorbells have their own slot: nothing collapses into them.
            Doorbell::EqUpdate { eqn, ci, arm, .. } => return dp.core.update_eq(eqn as u32, ci, arm),
        };
        if scan_page {
            dp.scan_uar_page(uar as u32);
        }
    }
}

impl DataPath<'_> {
    /// The doorbell records of every QP and CQ on UAR page `uar`.
    fn scan_uar_page(&mut self, uar: u32) {
        // Stores that the last one overwrote: new send WQEs of QPs on this page.
        let qps: Vec<u32> =
            self.core.engine.qps().filter(|(_, q)| q.ext.uar == uar && q.ext.sq_entries > 0).map(|(n, _)| n).collect();
        for qpn in qps {
            let Some(ctx) = self.core.engine.qp(qpn).map(|e| &e.ext) else { continue };
            if be32_at(&*self.core.mem, ctx.dbr_addr + 4).is_some_and(|pc| pc as u16 != ctx.sq_ci) {
                self.route_send(qpn);
            }
        }
        // ... and arm words not acted on yet (any CQ: libmlx5 may ring a CQ's
        // arm on another page than the one in its context).
        let cqs: Vec<u32> = self.core.engine.cqs().map(|(n, _)| n).collect();
        for cqn in cqs {
            let Some(ctx) = self.core.engine.cq(cqn).map(|e| &e.ext) else { continue };
            let Some(w) = be32_at(&*self.core.mem, ctx.dbr_addr + 4) else { continue };
            // Bits outside an arm word: the record still holds CQ_ARM_UNSET
            // (or garbage), no arm to act on.
            if w & !0x31ff_ffff == 0 && ctx.arming.last_arm != Some(w) {
                self.core.arm_cq(cqn, ((w >> 28) & 3) as u8, w & (1 << 24) != 0, w & 0x00ff_ffff);
            }
        }
    }
}
