//! Receive queues: a QP's own RQ or its SRQ, as the responder and UD
//! receive draw from them.

use super::super::instance::Engine;
use super::super::objects::Srq;
use super::super::qp::Qp;
use super::super::table::Table;
use super::super::verbs::*;
use super::state::RecvInProgress;

/// Takes a receive WQE from the QP's RQ or its SRQ (the SRQ limit event
/// fires when it falls below the armed limit); true: from the SRQ.
pub(super) fn take_recv(qp: &mut Qp, srqs: &mut Table<Srq>, sink: &dyn CompletionSink) -> Option<(RecvWr, bool)> {
    match qp.srq {
        None => qp.rt.rq.pop_front().map(|w| (w, false)),
        Some(s) => take_from_srq(srqs, s, sink).map(|w| (w, true)),
    }
}

/// Takes a receive WQE from SRQ `s`; the SRQ limit event fires when it falls
/// below the armed limit.
pub(super) fn take_from_srq(srqs: &mut Table<Srq>, s: u32, sink: &dyn CompletionSink) -> Option<RecvWr> {
    let srq = srqs.get_mut(s)?;
    let w = srq.wqes.pop_front()?;
    if srq.limit > 0 && srq.wqes.len() < srq.limit as usize {
        srq.limit = 0;
        sink.event(Event::SrqLimit { srqn: s });
    }
    Some(w)
}

/// Puts a taken receive WQE back (UC message abandoned).
pub(super) fn untake(qp: &mut Qp, srqs: &mut Table<Srq>, r: RecvInProgress) {
    if r.from_srq {
        if let Some(srq) = r.xrc_srq.or(qp.srq).and_then(|s| srqs.get_mut(s)) {
            srq.wqes.push_front(r.wr);
        }
    } else {
        qp.rt.rq.push_front(r.wr);
    }
}

impl Engine {
    pub(super) fn has_recv(&self, qpn: u32) -> bool {
        let Some(qp) = self.qps.get(qpn) else { return false };
        match qp.srq {
            None => !qp.rt.rq.is_empty(),
            Some(s) => self.srqs.get(s).is_some_and(|q| !q.wqes.is_empty()),
        }
    }
}
