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
mod fw_sq;
mod rq;
pub mod rx;
pub mod sink;
pub(crate) mod sq;
pub mod sq_ops;
pub mod umr;
pub mod wqe;

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
        self.0.drain();
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
        self.datapath().arm_cq(cqn, sn, solicited, ci);
    }

    /// EQ doorbell: the driver's 24-bit consumer index, optionally re-arm.
    pub fn eq_doorbell(&mut self, eqn: u32, ci: u32, arm: bool) {
        self.datapath().update_eq(eqn, ci, arm);
    }

    /// After a QP entered ERR: queued work was flushed by the engine; WQEs
    /// still only in guest memory are handed over now and flush in order.
    pub fn engine_flush(&mut self, qpn: u32) {
        let mut dp = self.datapath();
        dp.sync_sq(qpn);
        dp.sync_recv(qpn);
        dp.watch_err_rq(qpn);
    }

    /// Poll mode: a store landed somewhere on UAR page `uar`. Doorbells that
    /// share a slot on a page (every QP and CQ of a libmlx5 context uses
    /// its one UAR) collapse into the last value, so look at the doorbell
    /// records of every QP and CQ on that page instead: new send WQEs and
    /// new arm words are found there.
    pub fn uar_activity(&mut self, uar: u32, db: Doorbell) {
        let mut dp = self.datapath();
        // The store itself names one target: act on it first.
        match db {
            Doorbell::Send { qpn_ds, .. } => dp.route_send(qpn_ds >> 8),
            Doorbell::CqArm { cqn, sn, solicited, ci, .. } => dp.arm_cq(cqn, sn, solicited, ci),
            Doorbell::EqUpdate { eqn, ci, arm, .. } => dp.update_eq(eqn as u32, ci, arm),
        }
        // Stores that the last one overwrote: new send WQEs of QPs on this page.
        let qps: Vec<u32> =
            dp.rdma.qps.iter().filter(|(_, q)| q.uar == uar && q.sq_entries > 0).map(|(n, _)| *n).collect();
        for qpn in qps {
            let Some(ctx) = dp.rdma.qps.get(&qpn) else { continue };
            if be32_at(&*dp.mem, ctx.dbr_addr + 4).is_some_and(|pc| pc as u16 != ctx.sq_ci) {
                dp.route_send(qpn);
            }
        }
        // ... and arm words not acted on yet (any CQ: libmlx5 may ring a CQ's
        // arm on another page than the one in its context).
        let cqs: Vec<u32> = dp.engine.cqs.iter().map(|(n, _)| n).collect();
        for cqn in cqs {
            let Some(ctx) = dp.cqs.get(&cqn) else { continue };
            let Some(w) = be32_at(&*dp.mem, ctx.dbr_addr + 4) else { continue };
            // Bits outside an arm word: the record still holds CQ_ARM_UNSET
            // (or garbage), no arm to act on.
            if w & !0x31ff_ffff == 0 && ctx.arming.last_arm != Some(w) {
                dp.arm_cq(cqn, ((w >> 28) & 3) as u8, w & (1 << 24) != 0, w & 0x00ff_ffff);
            }
        }
    }
}
