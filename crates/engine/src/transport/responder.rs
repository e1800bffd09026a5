//! The responder of RC, XRC and UC request packets, as an explicit sequence of
//! steps (after Linux rxe's `enum resp_states`) driven by one loop: check
//! the PSN (duplicates, gaps), the opcode against the message in progress,
//! the resources (a receive WQE, the length), the R_Key, then execute
//! (`execute.rs`) and acknowledge, or answer RNR/NAK and, for errors the
//! QP cannot survive, take the one fatal-error path.

use super::super::instance::Engine;
use super::super::objects::Access;
use super::super::verbs::*;
pub use super::resp_step::RespStep;
use super::rq::{take_from_srq, take_recv, untake};
use super::state::{RecvInProgress, MAX_MSG};
use super::xfer::{check_rkey, sgl_capacity};
use super::xrc::XrcSrq;
use crate::personality::Personality;
use vrnic_packet::RxMeta;
use vrnic_wire::aeth::{NakCode, Syndrome};
use vrnic_wire::bth::Opcode;
use vrnic_wire::packet::RocePacket;
use vrnic_wire::{atomic_eth, psn, reth};

/// What a request asks for, once its opcode is checked.
#[derive(Debug, Clone, Copy)]
pub(super) enum ReqKind {
    Send,
    Write,
    Read(reth::Repr),
    Atomic(atomic_eth::Repr),
}

/// The request packet going through the steps.
pub(super) struct Req<'a, 'p> {
    pub qpn: u32,
    pub meta: &'a RxMeta,
    pub p: &'a RocePacket<'p>,
    pub ps: u32,
    pub op: Opcode,
    pub rc: bool,
    /// A duplicate READ executed again: errors end quietly, the expected PSN stays.
    pub dup: bool,
    pub kind: Option<ReqKind>,
    /// An atomic's target, translated by [`RespStep::CheckRkey`].
    pub atomic_pa: u64,
    /// The PD memory accesses are checked against: the QP's, or an XRC target's SRQ's.
    pub pd: u32,
    /// XRC target: the XRC SRQ the request names.
    pub xrc_srq: Option<u32>,
    /// XRC target: the XRCETH names no SRQ of the target's XRC domain.
    pub xrc_invalid: bool,
}

impl Req<'_, '_> {
    /// A failed check: `step`, or for a duplicate the end (it is never NAKed).
    fn fail(&self, step: RespStep) -> RespStep {
        if self.dup {
            RespStep::Done
        } else {
            step
        }
    }
}

const INVALID: RespStep = RespStep::Nak(NakCode::InvalidRequest, None);

impl<P: Personality> Engine<P> {
    /// RC/UC request packets: runs the steps from [`RespStep::CheckPsn`] to
    /// [`RespStep::Done`].
    pub(super) fn responder(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) {
        let xrc = self.xrc_srq(qpn, &p.headers);
        let Some(qp) = self.qps.obj(qpn) else { return };
        let h = &p.headers;
        let (pd, xrc_srq) = match xrc {
            XrcSrq::Srq { srqn, pd } => (pd, Some(srqn)),
            _ => (qp.pd, None),
        };
        let mut req = Req {
            qpn,
            meta,
            p,
            ps: h.bth.psn,
            op: h.bth.opcode,
            rc: qp.qp_type.is_reliable(),
            dup: false,
            kind: None,
            atomic_pa: 0,
            pd,
            xrc_srq,
            xrc_invalid: xrc == XrcSrq::Invalid,
        };
        let mut step = RespStep::CheckPsn;
        #[cfg(test)]
        self.rt.resp_trace.clear();
        loop {
            #[cfg(test)]
            self.rt.resp_trace.push(step);
            step = match step {
                RespStep::CheckPsn => self.resp_check_psn(&req),
                RespStep::Duplicate => self.resp_duplicate(&mut req),
                RespStep::OutOfSequence => self.resp_out_of_sequence(qpn),
                RespStep::CheckOp => self.resp_check_op(&mut req),
                RespStep::CheckResources => self.resp_check_resources(&req),
                RespStep::CheckRkey => self.resp_check_rkey(&mut req),
                RespStep::Execute => self.resp_execute(&req),
                RespStep::Acknowledge { psns } => self.resp_acknowledge(&req, psns),
                RespStep::Rnr => self.resp_rnr(&req),
                RespStep::Drop => {
                    if let Some(qp) = self.qps.obj_mut(qpn) {
                        count!(self.rt, qp, no_recv_drops);
                    }
                    RespStep::UcDrop
                }
                RespStep::UcDrop => {
                    if let Some(qp) = self.qps.obj_mut(qpn) {
                        qp.rt.uc_dropping = true;
                        qp.rt.epsn = psn::add(req.ps, 1);
                        qp.rt.write = None;
                    }
                    RespStep::Done
                }
                RespStep::Nak(code, st) => {
                    if !req.rc && st.is_none() {
                        RespStep::UcDrop
                    } else {
                        if req.rc {
                            self.send_ack(qpn, Syndrome::Nak(code), req.ps);
                        }
                        RespStep::Error(st)
                    }
                }
                RespStep::Error(st) => {
                    self.resp_error(qpn, st);
                    RespStep::Done
                }
                RespStep::Done => return,
            };
        }
    }

    fn resp_check_psn(&mut self, req: &Req) -> RespStep {
        let Some(qp) = self.qps.obj_mut(req.qpn) else { return RespStep::Done };
        let d = psn::diff(req.ps, qp.rt.epsn);
        if req.rc {
            if d < 0 {
                count!(self.rt, qp, duplicates);
                return RespStep::Duplicate;
            }
            if d > 0 {
                count!(self.rt, qp, out_of_sequence);
                return RespStep::OutOfSequence;
            }
            qp.rt.nak_seq_sent = false;
            qp.rt.rnr_nak_sent = false;
            return RespStep::CheckOp;
        }
        if d != 0 {
            count!(self.rt, qp, out_of_sequence);
            // A packet went missing: the message in progress is dropped whole.
            if let Some(r) = qp.rt.recv.take() {
                untake(qp, &mut self.srqs, r);
            }
            qp.rt.write = None;
            qp.rt.uc_dropping = !req.op.is_first();
        }
        qp.rt.epsn = req.ps;
        if qp.rt.uc_dropping && !req.op.is_first() {
            qp.rt.epsn = psn::add(req.ps, 1);
            return RespStep::Done;
        }
        qp.rt.uc_dropping = false;
        RespStep::CheckOp
    }

    fn resp_duplicate(&mut self, req: &mut Req) -> RespStep {
        let h = &req.p.headers;
        if req.op.op() == Opcode::READ_REQUEST {
            // Read again (memory may have changed: so does hardware).
            let Some(rh) = h.reth else { return RespStep::Done };
            req.dup = true;
            req.kind = Some(ReqKind::Read(rh));
            RespStep::CheckResources
        } else if req.op.is_atomic() {
            let Some(qp) = self.qps.obj(req.qpn) else { return RespStep::Done };
            if let Some(&(_, orig)) = qp.rt.replay.iter().find(|(ps, _)| *ps == req.ps) {
                self.send_atomic_ack(req.qpn, req.ps, orig);
            }
            RespStep::Done
        } else {
            self.want_ack(req.qpn);
            RespStep::Done
        }
    }

    fn resp_out_of_sequence(&mut self, qpn: u32) -> RespStep {
        let Some(qp) = self.qps.obj_mut(qpn) else { return RespStep::Done };
        if !qp.rt.nak_seq_sent && !qp.rt.rnr_nak_sent {
            qp.rt.nak_seq_sent = true;
            let e = qp.rt.epsn;
            self.send_ack(qpn, Syndrome::Nak(NakCode::PsnSequenceError), e);
        }
        RespStep::Done
    }

    fn resp_check_op(&mut self, req: &mut Req) -> RespStep {
        if req.xrc_invalid {
            if let Some(qp) = self.qps.obj_mut(req.qpn) {
                count!(self.rt, qp, xrc_bad_srq);
            }
            return INVALID;
        }
        let Some(qp) = self.qps.obj(req.qpn) else { return RespStep::Done };
        let h = &req.p.headers;
        let op = req.op;
        let in_progress = qp.rt.recv.is_some() || qp.rt.write.is_some();
        let kind = if op.is_send() {
            let in_order = if op.is_first() { !in_progress } else { qp.rt.recv.is_some() };
            if !in_order {
                return INVALID;
            }
            ReqKind::Send
        } else if op.is_write() {
            let in_order = if op.is_first() { !in_progress && h.reth.is_some() } else { qp.rt.write.is_some() };
            if !in_order {
                return INVALID;
            }
            ReqKind::Write
        } else if op.op() == Opcode::READ_REQUEST {
            let Some(rh) = h.reth else { return INVALID };
            ReqKind::Read(rh)
        } else if op.is_atomic() {
            let Some(a) = h.atomic_eth else { return INVALID };
            ReqKind::Atomic(a)
        } else {
            return INVALID;
        };
        req.kind = Some(kind);
        RespStep::CheckResources
    }

    fn resp_check_resources(&mut self, req: &Req) -> RespStep {
        match req.kind {
            Some(ReqKind::Send) if req.op.is_first() => {
                let Some(qp) = self.qps.obj_mut(req.qpn) else { return RespStep::Done };
                let sink = &*self.rt.io.completions;
                let taken = match req.xrc_srq {
                    Some(s) => take_from_srq(&mut self.srqs, s, sink).map(|w| (w, true)),
                    None => take_recv(qp, &mut self.srqs, sink),
                };
                let Some((wr, from_srq)) = taken else { return RespStep::Rnr };
                let capacity = sgl_capacity(&wr.sgl);
                qp.rt.recv = Some(RecvInProgress { wr, from_srq, xrc_srq: req.xrc_srq, off: 0, capacity });
            }
            // A WRITE with immediate needs a receive WQE: checked before anything is written.
            Some(ReqKind::Write) if req.p.headers.immdt.is_some() && !self.req_has_recv(req.qpn, req.xrc_srq) => {
                return RespStep::Rnr
            }
            Some(ReqKind::Read(rh)) if rh.dma_len as u64 > MAX_MSG => return req.fail(INVALID),
            _ => {}
        }
        RespStep::CheckRkey
    }

    fn resp_check_rkey(&mut self, req: &mut Req) -> RespStep {
        let Some(qp) = self.qps.obj(req.qpn) else { return RespStep::Done };
        let access_error = req.fail(RespStep::Nak(NakCode::RemoteAccessError, None));
        // A zero-length READ or WRITE names no memory: nothing to check.
        let range_ok = |rh: reth::Repr, need| {
            rh.dma_len == 0
                || check_rkey(&self.mkeys, qp.attrs.access, req.pd, rh.rkey, rh.va, rh.dma_len as u64, need).is_ok()
        };
        match req.kind {
            Some(ReqKind::Write) if req.op.is_first() => {
                let Some(rh) = req.p.headers.reth else { return INVALID };
                if !range_ok(rh, Access::REMOTE_WRITE) {
                    return access_error;
                }
            }
            Some(ReqKind::Read(rh)) if !range_ok(rh, Access::REMOTE_READ) => return access_error,
            Some(ReqKind::Atomic(a)) => {
                if a.va % 8 != 0 {
                    return INVALID;
                }
                let Ok(chunks) =
                    check_rkey(&self.mkeys, qp.attrs.access, req.pd, a.rkey, a.va, 8, Access::REMOTE_ATOMIC)
                else {
                    return access_error;
                };
                // The 8 bytes must be contiguous in guest memory.
                let Some(&(pa, 8)) = chunks.first() else { return INVALID };
                req.atomic_pa = pa;
            }
            _ => {}
        }
        RespStep::Execute
    }

    fn resp_execute(&mut self, req: &Req) -> RespStep {
        let next = match req.kind {
            Some(ReqKind::Send) => self.exec_send(req),
            Some(ReqKind::Write) => self.exec_write(req),
            Some(ReqKind::Read(rh)) => self.exec_read(req.qpn, req.ps, rh, req.pd),
            Some(ReqKind::Atomic(a)) => self.exec_atomic(req, a),
            None => INVALID,
        };
        if req.dup {
            RespStep::Done
        } else {
            next
        }
    }

    fn resp_acknowledge(&mut self, req: &Req, psns: u32) -> RespStep {
        let Some(qp) = self.qps.obj_mut(req.qpn) else { return RespStep::Done };
        qp.rt.epsn = psn::add(req.ps, psns);
        if req.rc && req.p.headers.bth.ack_req && (req.op.is_send() || req.op.is_write()) {
            self.want_ack(req.qpn);
        }
        RespStep::Done
    }

    fn resp_rnr(&mut self, req: &Req) -> RespStep {
        if !req.rc {
            return RespStep::Drop;
        }
        let Some(qp) = self.qps.obj_mut(req.qpn) else { return RespStep::Done };
        qp.rt.rnr_nak_sent = true;
        let t = qp.attrs.min_rnr_timer;
        self.send_ack(req.qpn, Syndrome::RnrNak { timer: t }, req.ps);
        RespStep::Done
    }

    /// The responder QP goes to ERR, with a receive completion of status
    /// `st` (if given) for the WQE the failed message used.
    fn resp_error(&mut self, qpn: u32, st: Option<WcStatus>) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let err = match (st, qp.rt.recv.take()) {
            (Some(st), Some(rp)) => {
                let mut c = Completion::new(rp.wr.wr_id, qpn, WcOpcode::Recv, st);
                c.src_qp = qp.attrs.dest_qpn;
                c.srqn = rp.xrc_srq;
                let cq = match rp.xrc_srq {
                    Some(s) => self.srqs.obj(s).and_then(|s| s.cqn),
                    None => qp.recv_cq,
                };
                Some((cq, c))
            }
            (None, rp) => {
                qp.rt.recv = rp;
                None
            }
            (Some(_), None) => None,
        };
        self.qp_fatal(qpn, err);
    }
}
