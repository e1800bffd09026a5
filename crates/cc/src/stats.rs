//! The congestion counters, as QUERY_CONG_STATISTICS names them.

/// The congestion counters of QUERY_CONG_STATISTICS (`hw_counters`) as
/// values: a snapshot of the port's live ones
/// ([`super::CcControl::statistics`], the control socket's `stats` →
/// `congestion`), or the simulation's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CongStatistics {
    /// RoCEv2 packets received with ECN = CE.
    pub np_ecn_marked_roce_packets: u64,
    /// CNPs sent by the notification point.
    pub np_cnp_sent: u64,
    /// CNPs the reaction point acted upon.
    pub rp_cnp_handled: u64,
    /// CNPs received with the RP disabled or for an unknown QP.
    pub rp_cnp_ignored: u64,
}
