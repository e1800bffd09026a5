//! TIRs and RQTs as the driver created them, and how a steered frame picks its RQ (a leaf: the
//! firmware holds it; the TIR/RQT commands are in [`super::tir`]).

use super::rss::{self, RxHash};
use super::rx_counters::{RqCounters, RxCounters};
use std::collections::BTreeMap;
use vrnic_wire::ether::FrameInfo;

/// TIRs the device holds (`1 << log_max_tir`).
pub const MAX_TIRS: usize = 1 << 16;

/// RQTs the device holds (`1 << log_max_rqt`).
pub const MAX_RQTS: usize = 1 << 16;

/// Entries of one RQT (`1 << log_max_rqt_size`).
pub const MAX_RQT_SIZE: usize = 1 << 16;

/// Where a TIR sends its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disp {
    /// `disp_type` 0: `inline_rqn`.
    Direct(u32),
    /// `disp_type` 1: `indirect_table` (an RQT).
    Indirect(u32),
}

/// A transport interface receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tir {
    pub disp: Disp,
    pub hash: RxHash,
    /// `self_lb_block` (bit 0 unicast, bit 1 multicast).
    pub self_lb_block: u8,
    pub transport_domain: u32,
}

/// An RQ table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rqt {
    pub max_size: u16,
    pub rqns: Vec<u32>,
}

/// The RQ a frame goes to, with the hash that chose it (CQE `rss_hash_result`, `rss_hash_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RqChoice {
    pub rqn: u32,
    pub hash: u32,
    pub hash_type: u8,
}

/// TIRs, RQTs and the RX path's counters.
#[derive(Debug, Default)]
pub struct RxDispatch {
    pub tirs: BTreeMap<u32, Tir>,
    pub rqts: BTreeMap<u32, Rqt>,
    pub counters: RxCounters,
    pub rq_counters: BTreeMap<u32, RqCounters>,
    pub(super) next_tir: u32,
    pub(super) next_rqt: u32,
}

impl RxDispatch {
    /// The RQ of TIR `tirn` for a frame (None: no such TIR or RQT, or an empty RQT).
    pub fn choose_rq(&self, tirn: u32, info: &FrameInfo) -> Option<RqChoice> {
        let tir = self.tirs.get(&tirn)?;
        match tir.disp {
            Disp::Direct(rqn) => Some(RqChoice { rqn, hash: 0, hash_type: 0 }),
            Disp::Indirect(rqtn) => {
                let rqt = self.rqts.get(&rqtn)?;
                let (hash, hash_type) = rss::hash(&tir.hash, info);
                let rqn = *rqt.rqns.get(hash as usize % rqt.rqns.len().max(1))?;
                Some(RqChoice { rqn, hash, hash_type })
            }
        }
    }
}

pub(super) fn next_id(next: &mut u32, taken: impl Fn(u32) -> bool) -> u32 {
    loop {
        *next = (*next + 1) & 0x00ff_ffff;
        if *next != 0 && !taken(*next) {
            return *next;
        }
    }
}
