//! The Ethernet receive path's counters (a leaf: [`super::rx_dispatch`] keeps them).

use serde::Serialize;

/// Per-RQ receive counters (`stats`: `firmware.eth_rx.queues.<rqn>`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RqCounters {
    pub packets: u64,
    pub bytes: u64,
    /// Frames dropped at this RQ (no WQE, too long, RQ not ready).
    pub drops: u64,
    /// No WQE posted (also charged to the RQ's `counter_set_id` Q counter).
    pub out_of_buffer: u64,
}

/// What the receive path did with the frames it was given (`stats`: `firmware.eth_rx`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RxCounters {
    /// Shorter than an Ethernet header.
    pub runts: u64,
    /// Longer than the vport MTU admits ([`max_frame`]).
    pub giants: u64,
    /// Steered to a TIR (or RQT) that no longer exists or has no RQ.
    pub no_tir: u64,
    /// Steered to an RQ that does not exist or is not RDY, or whose CQ is gone.
    pub rq_not_ready: u64,
    /// Longer than the WQE's buffers.
    pub too_long: u64,
    /// A WQE the device could not read or write (error CQE posted).
    pub wqe_errors: u64,
    /// The CQ had no room for the CQE.
    pub cq_overruns: u64,
    /// Frames placed into an RQ (one per RQ a frame reached).
    pub delivered: u64,
}
