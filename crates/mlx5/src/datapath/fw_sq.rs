//! The send queues the firmware executes itself (QP0/QP1, the REG_UMR QP,
//! and QPs without a send path): every WQE up to the doorbell record, in
//! order; the first error completes with an error CQE, moves the QP to ERR
//! and flushes the rest. The CQEs go through [`super::cq`] like the engine's.

use tracing::warn;

use super::cqe::{op, syndrome, Cqe};
use super::dbr::be32_at;
use super::sq_read::SqHead;
use super::wqe::{self, CtrlSeg};
use crate::core::Core;
use crate::firmware::Firmware;
use vrnic_engine::{QpState, QpTransition};

/// What has a [`Core`]: the firmware, and the contexts whose data path
/// runs a firmware send queue (the Ethernet port's).
pub(crate) trait HasCore {
    fn core(&mut self) -> &mut Core;
}

impl HasCore for Firmware {
    fn core(&mut self) -> &mut Core {
        &mut self.core
    }
}

/// The send queue of a QP the firmware executes itself (QP0/QP1, the
/// REG_UMR QP): every WQE up to the doorbell record, in order, through
/// `exec`. A signaled WQE that executed gets a REQ CQE; one that did
/// not (or could not be fetched) gets an error CQE with `exec`'s
/// syndrome and the QP goes to ERR; an ERR QP flushes.
pub(crate) fn drain_fw_sq<C: HasCore>(
    cx: &mut C,
    qpn: u32,
    exec: impl Fn(&mut C, u32, &[u8], &CtrlSeg) -> Result<(), u8>,
) {
    // Bounded: at most one pass over the SQ per doorbell.
    for _ in 0..=(1u32 << 16) {
        let core = cx.core();
        let Some(qp) = core.engine.qp(qpn) else { return };
        let (state, send_cq) = (qp.state, qp.send_cq);
        if state == QpState::Err {
            core.flush_qp(qpn);
            return;
        }
        if state != QpState::Rts {
            return;
        }
        let (ci, ctrl, first) = match core.sq_head(qpn, &qp.ext) {
            SqHead::Empty => return,
            SqHead::Unreadable { ci } => {
                core.qp_error(qpn, ci, 0, syndrome::LOCAL_QP_OP_ERR, true);
                return;
            }
            SqHead::BadIndex { ci, opcode } => {
                core.qp_error(qpn, ci, opcode, syndrome::LOCAL_QP_OP_ERR, true);
                return;
            }
            SqHead::Ready { ci, ctrl, first } => (ci, ctrl, first),
        };
        let nbb = ctrl.wqebbs();
        let wqe = if nbb > wqe::MAX_WQEBBS || ctrl.ds == 0 { None } else { core.sq_wqe(&qp.ext, ci, nbb, first) };
        let result = match wqe {
            None => Err(syndrome::LOCAL_QP_OP_ERR),
            Some(w) => exec(cx, qpn, &w, &ctrl),
        };
        if let Some(ctx) = cx.core().engine.qp_mut(qpn).map(|e| &mut e.ext) {
            ctx.sq_ci = ci.wrapping_add(nbb as u16);
        }
        match result {
            Ok(()) => {
                if let (true, Some(cqn)) = (ctrl.signaled(), send_cq) {
                    let user_index = cx.core().engine.qp(qpn).map(|e| &e.ext).map(|c| c.user_index).unwrap_or(0);
                    let c = Cqe {
                        opcode: op::REQ,
                        wqe_opcode: ctrl.opcode,
                        qpn,
                        wqe_counter: ctrl.wqe_index,
                        user_index,
                        ..Default::default()
                    };
                    cx.core().post_cqe(cqn, &c, false);
                }
            }
            Err(s) => {
                cx.core().qp_error(qpn, ctrl.wqe_index, ctrl.opcode, s, true);
                return;
            }
        }
    }
}

impl Core {
    /// The first error of a QP: an error CQE for the failing WQE, the QP
    /// moves to ERR, every other outstanding WQE is flushed.
    pub(crate) fn qp_error(&mut self, qpn: u32, wqe_counter: u16, wqe_opcode: u8, syn: u8, send: bool) {
        let Some(qp) = self.engine.qp(qpn) else { return };
        let cq = if send { qp.send_cq } else { qp.recv_cq };
        let user_index = self.engine.qp(qpn).map(|e| &e.ext).map(|c| c.user_index).unwrap_or(0);
        warn!(qpn, syndrome = syn, send, "work request failed: QP to error");
        if let Some(cqn) = cq {
            let c = Cqe {
                opcode: if send { op::REQ_ERR } else { op::RESP_ERR },
                wqe_opcode,
                qpn,
                wqe_counter,
                user_index,
                syndrome: syn,
                vendor_syndrome: 0x79,
                ..Default::default()
            };
            self.post_cqe(cqn, &c, true);
        }
        if let Some(ctx) = self.engine.qp_mut(qpn).map(|e| &mut e.ext) {
            if !send {
                ctx.rq_ci = ctx.rq_ci.wrapping_add(1);
            }
        }
        let _ = self.engine.modify_qp(qpn, QpTransition::ToErr, &Default::default());
        self.flush_qp(qpn);
    }

    /// Completes every outstanding WQE of an ERR QP with WR_FLUSH_ERR, one each.
    pub fn flush_qp(&mut self, qpn: u32) {
        let Some(qp) = self.engine.qp(qpn) else { return };
        if qp.state != QpState::Err {
            return;
        }
        let (send_cq, recv_cq, has_srq) = (qp.send_cq, qp.recv_cq, qp.srq.is_some());
        let Some(ctx) = self.engine.qp(qpn).map(|e| &e.ext).cloned() else { return };
        let mut c = Cqe {
            qpn,
            user_index: ctx.user_index,
            syndrome: syndrome::WR_FLUSH_ERR,
            vendor_syndrome: 0x79,
            ..Default::default()
        };
        // Send queue.
        if ctx.sq_entries > 0 {
            if let Some(pc) = be32_at(&*self.mem, ctx.dbr_addr + 4) {
                let mut ci = ctx.sq_ci;
                let mut n = 0;
                while ci != pc as u16 && n <= ctx.sq_entries {
                    let Some(first) = self.read_sq(&ctx, ci, 1) else { break };
                    let ctrl = CtrlSeg::parse(first[..16].try_into().expect("16 bytes"));
                    if ctrl.wqe_index != ci {
                        break;
                    }
                    c.opcode = op::REQ_ERR;
                    c.wqe_opcode = ctrl.opcode;
                    c.wqe_counter = ci;
                    if let Some(cqn) = send_cq {
                        self.post_cqe(cqn, &c, false);
                    }
                    ci = ci.wrapping_add(ctrl.wqebbs() as u16);
                    n += 1;
                }
                if let Some(x) = self.engine.qp_mut(qpn).map(|e| &mut e.ext) {
                    x.sq_ci = ci;
                }
            }
        }
        // Receive queue (an SRQ's WQEs belong to the SRQ, not the QP).
        if ctx.rq_entries > 0 && !has_srq {
            if let Some(pc) = be32_at(&*self.mem, ctx.dbr_addr) {
                let mut ci = ctx.rq_ci;
                let mut n = 0;
                while ci != pc as u16 && n <= ctx.rq_entries {
                    c.opcode = op::RESP_ERR;
                    c.wqe_opcode = 0;
                    c.wqe_counter = ci;
                    if let Some(cqn) = recv_cq {
                        self.post_cqe(cqn, &c, false);
                    }
                    ci = ci.wrapping_add(1);
                    n += 1;
                }
                if let Some(x) = self.engine.qp_mut(qpn).map(|e| &mut e.ext) {
                    x.rq_ci = ci;
                }
            }
        }
    }
}
