//! The ECN notification point of a port: a RoCEv2 packet that arrives with
//! ECN = CE for one of the port's QPs is counted, and the QP sends a CNP to
//! the flow's source QP unless it sent one within `min_time_between_cnps`
//! (the firmware's per-QP CNP rate limit). Time is injected (ns).

use std::collections::HashMap;

use super::params::{us, NpParams};
use super::stats::CongStatistics;
use vrnic_wire::congestion::Ecn;

/// Notification-point state of one port.
#[derive(Debug, Default)]
pub struct Np {
    pub params: NpParams,
    /// NP enabled (QUERY/MODIFY_CONG_STATUS, node 2).
    pub enabled: bool,
    /// When each local QP last sent a CNP.
    last_cnp: HashMap<u32, u64>,
}

/// A CNP to send: to `dest_qp` (the congested flow's source QP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CnpToSend {
    pub dest_qp: u32,
    pub dscp: u8,
    pub prio: u8,
}

impl Np {
    pub fn new(params: NpParams, enabled: bool) -> Np {
        Np { params, enabled, last_cnp: HashMap::new() }
    }

    /// A RoCEv2 packet with `ecn` arrived at local QP `qpn` from remote QP
    /// `src_qp` with priority `prio`: the CNP to send, if any.
    pub fn on_packet(
        &mut self,
        now: u64,
        qpn: u32,
        src_qp: u32,
        ecn: Ecn,
        prio: u8,
        c: &mut CongStatistics,
    ) -> Option<CnpToSend> {
        if ecn != Ecn::Ce {
            return None;
        }
        c.np_ecn_marked_roce_packets += 1;
        if !self.enabled {
            return None;
        }
        let gap = us(self.params.min_time_between_cnps);
        if let Some(&t) = self.last_cnp.get(&qpn) {
            if now < t.saturating_add(gap) {
                return None;
            }
        }
        self.last_cnp.insert(qpn, now);
        c.np_cnp_sent += 1;
        Some(CnpToSend {
            dest_qp: src_qp & 0xff_ffff,
            dscp: self.params.cnp_dscp & 0x3f,
            prio: self.params.cnp_prio(prio),
        })
    }

    /// The QP is gone (destroyed or reset): forget its CNP time.
    pub fn forget(&mut self, qpn: u32) {
        self.last_cnp.remove(&qpn);
    }
}
