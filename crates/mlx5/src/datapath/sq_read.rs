//! Reading a QP's send queue from guest memory (its context is in the
//! engine's entry): the head its doorbell record announces, whole WQEs,
//! wrapping at the end of the ring. Shared by the engine QPs' send path
//! (`sq.rs`) and the firmware's own send queues (`fw_sq.rs`).

use tracing::warn;

use super::dbr::be32_at;
use super::wqe::{CtrlSeg, WQEBB};
use crate::core::Core;
use crate::queue_buf::buf_addr;
use crate::rdma::state::QpCtx;

/// What a QP's doorbell record announces at the head of its send queue.
pub(crate) enum SqHead {
    /// Nothing new, or the WQE at the consumer index is not (yet) the one the
    /// doorbell announced: stop at the doorbell.
    Empty,
    /// The WQE at consumer index `ci` lies outside guest memory.
    Unreadable { ci: u16 },
    /// The doorbell announced a WQE at consumer index `ci` whose control
    /// segment names another index: not executed, a local QP operation error
    /// (a ConnectX never skips or waits on a WQE its doorbell announced).
    BadIndex { ci: u16, opcode: u8 },
    /// A WQE at consumer index `ci` with this control segment; `first` is
    /// its first WQEBB as read (all of a one-WQEBB WQE).
    Ready { ci: u16, ctrl: CtrlSeg, first: Vec<u8> },
}

/// Reading a QP's send queue from guest memory (its context is in the engine's entry).
impl Core {
    pub(super) fn sq_addr(ctx: &QpCtx, idx: u16) -> Option<u64> {
        if ctx.sq_entries == 0 {
            return None;
        }
        let off =
            ctx.rq_entries as u64 * ctx.rq_stride as u64 + ((idx as u32 & (ctx.sq_entries - 1)) as u64) * WQEBB as u64;
        buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off)
    }

    /// The next send WQE of QP `qpn`, as its doorbell record announces it.
    pub(crate) fn sq_head(&self, qpn: u32, ctx: &QpCtx) -> SqHead {
        match Core::sq_producer(&*self.mem, ctx) {
            Some(pc) => self.sq_head_upto(qpn, ctx, pc),
            None => SqHead::Empty,
        }
    }

    /// The send doorbell record's producer counter (the second big-endian word).
    pub(crate) fn sq_producer(mem: &dyn vrnic_engine::GuestMemory, ctx: &QpCtx) -> Option<u16> {
        be32_at(mem, ctx.dbr_addr + 4).map(|pc| pc as u16)
    }

    /// The next send WQE of QP `qpn` if it is before producer counter `pc`.
    pub(crate) fn sq_head_upto(&self, qpn: u32, ctx: &QpCtx, pc: u16) -> SqHead {
        let ci = ctx.sq_ci;
        // Nothing announced, or the consumer is past the producer (a WQE
        // longer than the WQEBBs the doorbell record counted): stop there.
        let announced = pc.wrapping_sub(ci) as u32;
        if announced == 0 || announced > ctx.sq_entries {
            return SqHead::Empty;
        }
        let Some(first) = self.read_sq(ctx, ci, 1) else {
            warn!(qpn, "SQ outside guest memory");
            return SqHead::Unreadable { ci };
        };
        let ctrl = CtrlSeg::parse(first[..16].try_into().expect("16 bytes"));
        if ctrl.wqe_index != ci {
            warn!(
                qpn,
                expected = ci,
                got = ctrl.wqe_index,
                "send WQE with the wrong wqe_index: local QP operation error"
            );
            return SqHead::BadIndex { ci, opcode: ctrl.opcode };
        }
        SqHead::Ready { ci, ctrl, first }
    }

    /// The whole WQE at the SQ head: `first` if it is one WQEBB, else all
    /// `nbb` read again (a copy taken at one time, parsed as such).
    pub(crate) fn sq_wqe(&self, ctx: &QpCtx, ci: u16, nbb: usize, first: Vec<u8>) -> Option<Vec<u8>> {
        if nbb == 1 {
            Some(first)
        } else {
            self.read_sq(ctx, ci, nbb)
        }
    }

    /// Copies `nbb` WQEBBs starting at SQ index `idx` (wrapping at the end of the SQ).
    pub(crate) fn read_sq(&self, ctx: &QpCtx, idx: u16, nbb: usize) -> Option<Vec<u8>> {
        let mut w = vec![0u8; nbb * WQEBB];
        for i in 0..nbb {
            let a = Core::sq_addr(ctx, idx.wrapping_add(i as u16))?;
            self.mem.read(a, &mut w[i * WQEBB..(i + 1) * WQEBB]).ok()?;
        }
        Some(w)
    }
}
