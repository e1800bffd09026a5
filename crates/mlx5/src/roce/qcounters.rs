//! The RDMA half of a Q counter set (QUERY_Q_COUNTER, `hw_counters/` of a
//! RoCE port, `/work/shared/mlx5-ethernet-roce.md` §5.2): every QP carries
//! the set it was given at RST2INIT (`qpc.counter_set_id`); a set's value is
//! the sum of its QPs' engine counters, plus what QPs that were reset or
//! destroyed had counted (retired here first), less the sum at the set's
//! last clear. `out_of_buffer` adds the RNR NAKs sent and the UD datagrams
//! dropped for want of a receive WQE to the Ethernet RQs' count.

use crate::core::MlxEngine;
use crate::fields::Field;
use crate::ifc::{self, qpc};
use vrnic_engine::QpCounters;

pub use super::state::Counts;
use super::state::QCounterSets;

/// One Q counter field and how the engine's counters of a QP make it.
pub type Source = (Field, fn(&QpCounters) -> u64);

/// The Q counter fields the engine has counters for (the rest read 0).
pub const FIELDS: [Source; 6] = {
    use ifc::query_q_counter_out as o;
    [
        (o::out_of_buffer, |c| c.rnr_nak_sent + c.no_recv_drops),
        (o::out_of_sequence, |c| c.out_of_sequence),
        (o::duplicate_request, |c| c.duplicates),
        (o::rnr_nak_retry_err, |c| c.rnr_nak_received),
        (o::packet_seq_err, |c| c.nak_seq_received),
        (o::local_ack_timeout_err, |c| c.timeouts),
    ]
};

fn counts(c: &QpCounters) -> Counts {
    FIELDS.map(|(_, f)| f(c))
}

fn add(a: &mut Counts, b: &Counts) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
}

/// The counter set QP `qpn` counts into (0: none).
fn set_of(engine: &MlxEngine, qpn: u32) -> u8 {
    engine.qp(qpn).map(|e| qpc::counter_set_id.get(&e.ext.qpc) as u8).unwrap_or(0)
}

impl QCounterSets {
    /// QP `qpn`'s counters are about to go (2RST, DESTROY_QP): keep them in its set.
    pub fn retire(&mut self, engine: &MlxEngine, qpn: u32) {
        let id = set_of(engine, qpn);
        if let Some(c) = engine.qp_counters(qpn).filter(|_| id != 0) {
            add(self.retired.entry(id).or_default(), &counts(&c));
        }
    }

    /// Set `id`'s RDMA counts since its last clear; `clear`: start again from now.
    pub fn query(&mut self, engine: &MlxEngine, id: u8, clear: bool) -> Counts {
        let mut sum = self.retired.get(&id).copied().unwrap_or_default();
        for (qpn, q) in engine.qps() {
            if qpc::counter_set_id.get(&q.ext.qpc) as u8 == id {
                if let Some(c) = engine.qp_counters(qpn) {
                    add(&mut sum, &counts(&c));
                }
            }
        }
        let base = self.base.get(&id).copied().unwrap_or_default();
        if clear {
            self.base.insert(id, sum);
        }
        let mut out = [0u64; 6];
        for i in 0..6 {
            out[i] = sum[i].saturating_sub(base[i]);
        }
        out
    }

    /// A set allocated or freed: nothing of an earlier holder of the id remains.
    pub fn forget(&mut self, id: u8) {
        self.retired.remove(&id);
        self.base.remove(&id);
    }
}
