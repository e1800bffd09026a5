//! Receive queues: WQEs have no doorbell, only a doorbell record; the
//! receive WQEs of a QP (or its SRQ) are pulled into the engine when a
//! packet that consumes one arrives ([`super::rx`]) and when a QP's queues
//! flush. A receive WQE posted to a QP already in ERR (the marker of
//! `ib_drain_rq`, which then waits for its flush) has nothing to pull it in:
//! for [`ERR_RQ_WATCH_NS`] after a QP enters ERR the workers' poll passes
//! look at its doorbell record ([`Firmware::flush_err_rqs`]).

use tracing::warn;

use super::dbr::be32_at;
use super::wqe;
use crate::firmware::Firmware;
use crate::queue_buf::buf_addr;
use crate::rdma::state::QpCtx;
use vrnic_engine::verbs::RecvWr;
use vrnic_engine::QpState;

/// How long after entering ERR a QP's receive doorbell record is watched.
pub const ERR_RQ_WATCH_NS: u64 = 30_000_000_000;
/// How often a watched doorbell record is read.
pub const ERR_RQ_POLL_NS: u64 = 1_000_000;

impl Firmware {
    /// QP `qpn` entered ERR: watch its receive doorbell record for a while.
    pub(super) fn watch_err_rq(&mut self, qpn: u32) {
        let until = self.core.engine.now_ns() + ERR_RQ_WATCH_NS;
        if let Some(ctx) = self.core.engine.qp_mut(qpn).map(|e| &mut e.ext).filter(|c| c.rq_entries > 0) {
            ctx.rq_flush_until = until;
            self.rdma.err_rq_watch.insert(qpn);
        }
    }

    /// Flushes receive WQEs posted to watched QPs in ERR since the last
    /// look; the time of the next look, if any QP is still watched. Call it
    /// on a [`super::DataPath`] (the flush completions are written when
    /// that is dropped).
    pub(crate) fn flush_err_rqs(&mut self) -> Option<u64> {
        if self.rdma.err_rq_watch.is_empty() {
            return None;
        }
        let now = self.core.engine.now_ns();
        let watched: Vec<u32> = self.rdma.err_rq_watch.iter().copied().collect();
        let mut any = false;
        for qpn in watched {
            let in_err = self.core.engine.qp(qpn).is_some_and(|q| q.state == QpState::Err && q.srq.is_none());
            let Some(ctx) = self.core.engine.qp_mut(qpn).map(|e| &mut e.ext).filter(|c| c.rq_flush_until != 0) else {
                self.rdma.err_rq_watch.remove(&qpn);
                continue;
            };
            if !in_err || ctx.rq_flush_until <= now {
                ctx.rq_flush_until = 0;
                self.rdma.err_rq_watch.remove(&qpn);
                continue;
            }
            any = true;
            if be32_at(&*self.core.mem, ctx.dbr_addr).is_some_and(|pc| pc as u16 != ctx.rq_ci) {
                self.sync_recv(qpn);
            }
        }
        any.then_some(now + ERR_RQ_POLL_NS)
    }

    pub(crate) fn rq_addr(ctx: &QpCtx, idx: u16) -> Option<u64> {
        if ctx.rq_entries == 0 {
            return None;
        }
        let off = ((idx as u32 & (ctx.rq_entries - 1)) as u64) * ctx.rq_stride as u64;
        buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off)
    }

    /// Pulls newly posted receive WQEs of a QP (or its SRQ) into the engine.
    pub(super) fn sync_recv(&mut self, qpn: u32) {
        let Some(qp) = self.core.engine.qp(qpn) else { return };
        if qp.state == QpState::Reset {
            return;
        }
        if let Some(srqn) = qp.srq {
            self.sync_srq(srqn);
            return;
        }
        for _ in 0..=(1u32 << 16) {
            let Some(ctx) = self.core.engine.qp(qpn).map(|e| &e.ext) else { return };
            if ctx.rq_entries == 0 {
                return;
            }
            let Some(pc) = be32_at(&*self.core.mem, ctx.dbr_addr) else { return };
            let idx = ctx.rq_ci;
            if idx == pc as u16 {
                return;
            }
            let off = ((idx as u32 & (ctx.rq_entries - 1)) as u64) * ctx.rq_stride as u64;
            let mut w = vec![0u8; ctx.rq_stride];
            let ok = buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off)
                .is_some_and(|a| self.core.mem.read(a, &mut w).is_ok());
            if !ok {
                warn!(qpn, "RQ outside guest memory");
                return;
            }
            if let Some(ctx) = self.core.engine.qp_mut(qpn).map(|e| &mut e.ext) {
                ctx.rq_ci = idx.wrapping_add(1);
            }
            let sgl = wqe::parse_recv(&w);
            if let Err(e) = self.core.engine.post_recv(qpn, RecvWr { wr_id: idx as u64, sgl }) {
                warn!(qpn, "post_recv: {e}");
                return;
            }
        }
    }

    /// SRQ: WQEs form a list through `next_wqe_index`; the doorbell record counts posted WQEs.
    pub(super) fn sync_srq(&mut self, srqn: u32) {
        for _ in 0..=(1u32 << 16) {
            let Some(ctx) = self.core.engine.srq(srqn).map(|e| &e.ext) else { return };
            let Some(srq) = self.core.engine.srq(srqn) else { return };
            let entries = 1u32 << srq.log_size;
            let Some(pc) = be32_at(&*self.core.mem, ctx.dbr_addr) else { return };
            if ctx.posted == pc as u16 {
                return;
            }
            let idx = ctx.head;
            let mut w = vec![0u8; ctx.stride];
            let off = ((idx as u32 & (entries - 1)) as u64) * ctx.stride as u64;
            let ok = buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off)
                .is_some_and(|a| self.core.mem.read(a, &mut w).is_ok());
            if !ok || ctx.stride < 16 {
                warn!(srqn, "SRQ outside guest memory");
                return;
            }
            let next = u16::from_be_bytes([w[2], w[3]]);
            let sgl = wqe::parse_recv(&w[16..]);
            if let Some(ctx) = self.core.engine.srq_mut(srqn).map(|e| &mut e.ext) {
                ctx.head = next;
                ctx.posted = ctx.posted.wrapping_add(1);
            }
            if let Err(e) = self.core.engine.post_srq_recv(srqn, RecvWr { wr_id: idx as u64, sgl }) {
                warn!(srqn, "post_srq_recv: {e}");
                return;
            }
        }
    }
}
