//! The RoCE domain's state: a handle on the port's GID table (the same
//! `Arc<RoceGids>` the RoCE port reads for every packet) and its counters;
//! a firmware without a RoCE port (unit tests) has a private table.

use std::sync::Arc;

use crate::fabric::roce::{RoceCounters, RoceGids};
use crate::mlx5::hca::caps::roce::ROCE_ADDRESS_TABLE_SIZE;

pub struct RoceState {
    pub gids: Arc<RoceGids>,
    /// The RoCE port's packet counters (`stats` → `firmware.roce`), when one is attached.
    pub counters: Option<Arc<RoceCounters>>,
}

impl RoceState {
    /// `gids`: the table shared with the RoCE port (none: a private one of
    /// `roce_address_table_size` entries).
    pub fn new(port: Option<(Arc<RoceGids>, Arc<RoceCounters>)>) -> RoceState {
        match port {
            Some((gids, counters)) => RoceState { gids, counters: Some(counters) },
            None => RoceState { gids: Arc::new(RoceGids::new(ROCE_ADDRESS_TABLE_SIZE)), counters: None },
        }
    }

    /// Function reset / teardown: no GID is programmed.
    pub fn reset(&mut self) {
        self.gids.clear();
    }
}
