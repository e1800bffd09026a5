//! Receive queues: a QP's own RQ or its SRQ, as the responder and UD
//! receive draw from them.

use super::super::instance::Engine;
use super::super::objects::Srq;
use super::super::qp::Qp;
use super::super::table::Table;
use super::super::verbs::*;
use super::state::RecvInProgress;
use crate::personality::Personality;
use crate::personality::Slot;

/// Takes a receive WQE from the QP's RQ or its SRQ (the SRQ limit event
/// fires when it falls below the armed limit); true: from the SRQ.
pub(super) fn take_recv(
    qp: &mut Qp,
    srqs: &mut Table<Slot<Srq, impl Sized>>,
    sink: &dyn CompletionSink,
) -> Option<(RecvWr, bool)> {
    match qp.srq {
        None => qp.rt.rq.pop_front().map(|w| (w, false)),
        Some(s) => take_from_srq(srqs, s, sink).map(|w| (w, true)),
    }
}

/// Takes a receive WQE from SRQ `s`; the SRQ limit event fires when it falls
/// below the armed limit.
pub(super) fn take_from_srq(
    srqs: &mut Table<Slot<Srq, impl Sized>>,
    s: u32,
    sink: &dyn CompletionSink,
) -> Option<RecvWr> {
    let srq = srqs.obj_mut(s)?;
    let w = srq.wqes.pop_front()?;
    if srq.limit > 0 && srq.wqes.len() < srq.limit as usize {
        srq.limit = 0;
        sink.event(Event::SrqLimit { srqn: s });
    }
    Some(w)
}

/// Puts a taken receive WQE back (UC message abandoned).
pub(super) fn untake(qp: &mut Qp, srqs: &mut Table<Slot<Srq, impl Sized>>, r: RecvInProgress) {
    if r.from_srq {
        if let Some(srq) = r.xrc_srq.or(qp.srq).and_then(|s| srqs.obj_mut(s)) {
            srq.wqes.push_front(r.wr);
        }
    } else {
        qp.rt.rq.push_front(r.wr);
    }
}

impl<P: Personality> Engine<P> {
    pub(super) fn has_recv(&self, qpn: u32) -> bool {
        let Some(qp) = self.qps.obj(qpn) else { return false };
        match qp.srq {
            None => !qp.rt.rq.is_empty(),
            Some(s) => self.srqs.obj(s).is_some_and(|q| !q.wqes.is_empty()),
        }
    }
}
