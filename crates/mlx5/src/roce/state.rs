//! The RoCE domain's state: a handle on the port's GID table (the same
//! `Arc<RoceGids>` the RoCE port reads for every packet), its counters and
//! its congestion control (the port's `CcControl`); a firmware without a
//! RoCE port (unit tests) has a private table and a private `CcControl`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::hca::caps::roce::ROCE_ADDRESS_TABLE_SIZE;
use vrnic_cc::{CcConfig, CcControl};
use vrnic_fabric::roce::{RoceCounters, RoceGids};

pub struct RoceState {
    pub(in crate::roce) gids: Arc<RoceGids>,
    /// The RoCE port's packet counters (`stats` → `firmware.roce`), when one is attached.
    pub(in crate::roce) counters: Option<Arc<RoceCounters>>,
    /// PortCounters clear: the totals at the last clear (`pma.rs`).
    pub(in crate::roce) pma_base: [u64; 6],
    /// Q counter sets: retired QPs' counts and clear baselines (`qcounters.rs`).
    pub(in crate::roce) q_sets: QCounterSets,
    /// The port's congestion-control settings and counters (`cong.rs` writes
    /// the settings, the RoCE data path reads them and counts).
    pub(in crate::roce) cc: Arc<CcControl>,
    /// Node 3 of MODIFY_CONG_PARAMS (`cong.rs`): stored and read back only.
    pub(in crate::roce) cong_general: CongGeneral,
}

/// `cong_control_r_roce_general`: the DSCP of RTT responses. Nothing sends
/// them; the ROCE page's `roce_cc_general` is 0, so mlx5_ib shows no files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CongGeneral {
    pub rtt_resp_dscp_valid: bool,
    pub rtt_resp_dscp: u8,
}

impl RoceState {
    /// The RoCE GID table (SET_ROCE_ADDRESS writes it, the port frames by it).
    pub fn gids(&self) -> &Arc<RoceGids> {
        &self.gids
    }

    /// The RoCE port's packet counters, when a port is attached.
    pub fn counters(&self) -> Option<&Arc<RoceCounters>> {
        self.counters.as_ref()
    }

    /// The congestion control the congestion commands act on.
    pub fn cc(&self) -> &Arc<CcControl> {
        &self.cc
    }

    /// The Q counter sets' RDMA half (ALLOC/QUERY_Q_COUNTER, a QP's counts at 2RST/destroy).
    pub fn q_sets(&mut self) -> &mut QCounterSets {
        &mut self.q_sets
    }

    /// `gids`: the table shared with the RoCE port (none: a private one of
    /// `roce_address_table_size` entries).
    pub fn new(port: Option<(Arc<RoceGids>, Arc<RoceCounters>)>, cc: Option<Arc<CcControl>>) -> RoceState {
        let (gids, counters) = match port {
            Some((gids, counters)) => (gids, Some(counters)),
            None => (Arc::new(RoceGids::new(ROCE_ADDRESS_TABLE_SIZE)), None),
        };
        RoceState {
            gids,
            counters,
            pma_base: [0; 6],
            q_sets: QCounterSets::default(),
            cc: cc.unwrap_or_else(|| CcControl::new(CcConfig::connectx_default())),
            cong_general: CongGeneral::default(),
        }
    }

    /// Function reset / teardown: no GID is programmed. Congestion control
    /// is the port's (like a ConnectX's firmware settings it outlives the
    /// driver): its settings and counters stay.
    pub fn reset(&mut self) {
        self.gids.clear();
        self.pma_base = [0; 6];
        self.q_sets.reset();
    }
}

/// Q counter values of one set, in `qcounters::FIELDS` order.
pub type Counts = [u64; 6];

/// Per Q counter set: what retired QPs counted, and the sum at the last clear (`qcounters.rs`).
#[derive(Debug, Default)]
pub struct QCounterSets {
    pub(in crate::roce) retired: BTreeMap<u8, Counts>,
    pub(in crate::roce) base: BTreeMap<u8, Counts>,
}

impl QCounterSets {
    pub fn reset(&mut self) {
        self.retired.clear();
        self.base.clear();
    }
}
