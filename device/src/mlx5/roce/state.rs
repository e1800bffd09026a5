//! The RoCE domain's state: a handle on the port's GID table (the same
//! `Arc<RoceGids>` the RoCE port reads for every packet) and its counters;
//! a firmware without a RoCE port (unit tests) has a private table.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::fabric::roce::{RoceCounters, RoceGids};
use crate::mlx5::hca::caps::roce::ROCE_ADDRESS_TABLE_SIZE;

pub struct RoceState {
    pub gids: Arc<RoceGids>,
    /// The RoCE port's packet counters (`stats` → `firmware.roce`), when one is attached.
    pub counters: Option<Arc<RoceCounters>>,
    /// PortCounters clear: the totals at the last clear (`pma.rs`).
    pub pma_base: [u64; 6],
    /// Q counter sets: retired QPs' counts and clear baselines (`qcounters.rs`).
    pub q_sets: QCounterSets,
}

impl RoceState {
    /// `gids`: the table shared with the RoCE port (none: a private one of
    /// `roce_address_table_size` entries).
    pub fn new(port: Option<(Arc<RoceGids>, Arc<RoceCounters>)>) -> RoceState {
        match port {
            Some((gids, counters)) => {
                RoceState { gids, counters: Some(counters), pma_base: [0; 6], q_sets: QCounterSets::default() }
            }
            None => RoceState {
                gids: Arc::new(RoceGids::new(ROCE_ADDRESS_TABLE_SIZE)),
                counters: None,
                pma_base: [0; 6],
                q_sets: QCounterSets::default(),
            },
        }
    }

    /// Function reset / teardown: no GID is programmed.
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
    pub retired: BTreeMap<u8, Counts>,
    pub base: BTreeMap<u8, Counts>,
}

impl QCounterSets {
    pub fn reset(&mut self) {
        self.retired.clear();
        self.base.clear();
    }
}
