//! XRC targets (IBTA 9.8): an XRC target QP has no receive queue of its
//! own. Each request names, in its XRCETH, an XRC SRQ; it must belong to the
//! target's XRC domain. A SEND (or WRITE with immediate) takes its receive
//! WQE from that SRQ and completes on the SRQ's CQ, and every memory access
//! of the request is checked against the SRQ's PD (the target has none).

use super::super::instance::Engine;
use super::super::objects::QpType;
use crate::personality::Personality;
use vrnic_wire::packet::Headers;

/// What the XRCETH of a request to an XRC target resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum XrcSrq {
    /// Not an XRC target: the QP's own RQ or SRQ and PD apply.
    None,
    /// The named XRC SRQ and its PD.
    Srq { srqn: u32, pd: u32 },
    /// No such SRQ, or one outside the target's XRC domain: an invalid request.
    Invalid,
}

impl<P: Personality> Engine<P> {
    /// Resolves the XRCETH of a request to QP `qpn`.
    pub(super) fn xrc_srq(&self, qpn: u32, h: &Headers) -> XrcSrq {
        let Some(qp) = self.qps.obj(qpn) else { return XrcSrq::Invalid };
        if qp.qp_type != QpType::XrcTarget {
            return XrcSrq::None;
        }
        let Some(x) = h.xrceth else { return XrcSrq::Invalid };
        match self.srqs.obj(x.xrc_srq) {
            Some(s) if s.xrcd.is_some() && s.xrcd == qp.xrcd => XrcSrq::Srq { srqn: x.xrc_srq, pd: s.pd },
            _ => XrcSrq::Invalid,
        }
    }

    /// Whether a receive WQE waits for a request to `qpn`: in the XRC SRQ it names (`xrc_srq`), or the QP's RQ
    /// or SRQ.
    pub(super) fn req_has_recv(&self, qpn: u32, xrc_srq: Option<u32>) -> bool {
        match xrc_srq {
            Some(s) => self.srqs.obj(s).is_some_and(|s| !s.wqes.is_empty()),
            None => self.has_recv(qpn),
        }
    }
}
