//! The Ethernet queue objects' state: transport domains, TISes, Q counters, SQ and RQ extras (a
//! leaf: the firmware holds it; the commands are in [`super::queues`]).

use std::collections::BTreeMap;
use vrnic_engine::table::Table;

/// Transport domains and TISes per function, Q counter sets (`max_qp_cnt`).
pub const MAX_TDS: usize = 256;

pub const MAX_TISES: usize = 256;

pub const MAX_Q_COUNTERS: usize = 8;

/// An SQ's Ethernet extras.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthSq {
    pub cqn: u32,
    /// `tis_num_0` (0: none, as mlx5e's ICOSQs leave it).
    pub tisn: u32,
    /// `sqc.state`: 0 RST, 1 RDY, 3 ERR.
    pub state: u8,
    pub min_wqe_inline_mode: u8,
    /// The sqc + wq as created (QUERY_SQ reports it with the current state).
    pub ctx: Vec<u8>,
}

/// An RQ's Ethernet extras.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthRq {
    pub cqn: u32,
    /// VLAN stripping disabled.
    pub vsd: bool,
    /// Q counter set whose `out_of_buffer` a drop for lack of WQEs bumps (0: none).
    pub counter_set_id: u8,
    /// `rqc.state`: 0 RST, 1 RDY, 3 ERR.
    pub state: u8,
    pub ctx: Vec<u8>,
}

/// A transmit interface send context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tis {
    pub prio: u8,
    pub transport_domain: u32,
}

/// One Q counter set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QCounter {
    pub out_of_buffer: u32,
}

/// Queue objects of the Ethernet port.
#[derive(Debug)]
pub struct EthQueues {
    pub tds: Table<()>,
    pub tises: Table<Tis>,
    pub q_counters: Table<QCounter>,
    pub sqs: BTreeMap<u32, EthSq>,
    pub rqs: BTreeMap<u32, EthRq>,
}

impl Default for EthQueues {
    fn default() -> EthQueues {
        EthQueues {
            tds: Table::new(1, 0xff_ffff, MAX_TDS),
            tises: Table::new(1, 0xff_ffff, MAX_TISES),
            // Counter set ids are 8 bits and 0 means "none".
            q_counters: Table::new(1, 0xff, MAX_Q_COUNTERS),
            sqs: BTreeMap::new(),
            rqs: BTreeMap::new(),
        }
    }
}

impl EthQueues {
    /// The SQ `sqn`, if it is one.
    pub fn sq(&self, sqn: u32) -> Option<&EthSq> {
        self.sqs.get(&sqn)
    }

    /// The RQ `rqn`, if it is one.
    pub fn rq(&self, rqn: u32) -> Option<&EthRq> {
        self.rqs.get(&rqn)
    }

    /// A frame dropped for lack of a receive WQE on an RQ counting into set `id` (eth-rx calls this).
    pub fn q_counter_out_of_buffer(&mut self, id: u8) {
        if let Some(c) = self.q_counters.get_mut(id as u32) {
            c.out_of_buffer = c.out_of_buffer.wrapping_add(1);
        }
    }
}
