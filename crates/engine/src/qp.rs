//! The queue pair object: its attributes and its transport state.

use super::objects::{QpAttrs, QpState, QpType};
use super::transport::state::QpRt;

/// Queue pair.
#[derive(Debug, Clone)]
pub struct Qp {
    pub qp_type: QpType,
    pub state: QpState,
    pub pd: u32,
    pub send_cq: Option<u32>,
    pub recv_cq: Option<u32>,
    pub srq: Option<u32>,
    pub xrcd: Option<u32>,
    pub log_sq_size: u8,
    pub log_rq_size: u8,
    pub attrs: QpAttrs,
    /// Signal every send WR (otherwise per-WR).
    pub sq_sig_all: bool,
    pub uid: u16,
    /// Transport state (queues, PSNs, timers, counters).
    pub rt: QpRt,
}
