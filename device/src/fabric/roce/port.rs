//! The RoCE port's send and receive path (see the module doc).

use std::ops::Range;
use std::sync::Arc;

use super::counters::RoceCounters;
use super::gids::RoceGids;
use crate::fabric::ether::FrameSink;
use crate::fabric::types::{Dest, PacketSink, RxMeta};

/// The RoCE packet path of one Ethernet port.
pub struct RocePort {
    gids: Arc<RoceGids>,
    frames: Arc<dyn FrameSink>,
    counters: Arc<RoceCounters>,
    /// Wakes the thread that calls [`RocePort::drain_loopback`] (the
    /// Ethernet link's worker).
    wake: Arc<dyn Fn() + Send + Sync>,
}

impl RocePort {
    pub fn new(gids: Arc<RoceGids>, frames: Arc<dyn FrameSink>, wake: Arc<dyn Fn() + Send + Sync>) -> RocePort {
        RocePort { gids, frames, counters: Arc::new(RoceCounters::default()), wake }
    }

    pub fn gids(&self) -> &Arc<RoceGids> {
        &self.gids
    }

    pub fn counters(&self) -> Arc<RoceCounters> {
        self.counters.clone()
    }

    /// A received frame: when it is RoCE (v2 over IPv4/IPv6, v1) addressed
    /// to one of this port's GIDs (with the entry's VLAN and version), with
    /// a good ICRC, the metadata the engine takes and where BTH..ICRC lies
    /// in `frame`. `None`: not for the RDMA engine (not RoCE, or not one of
    /// ours: the NIC path takes it) or dropped (counted).
    pub fn accept(&self, frame: &[u8]) -> Option<(RxMeta, Range<usize>)> {
        let _ = frame;
        todo!("fabric/roce: accept")
    }

    /// Hands the packets this port sent to its own GIDs to `deliver`
    /// (called on the Ethernet worker's pass, with the engine reachable).
    /// Returns how many.
    pub fn drain_loopback(&self, deliver: &mut dyn FnMut(&RxMeta, &[u8])) -> usize {
        let _ = deliver;
        todo!("fabric/roce: drain_loopback")
    }
}

impl PacketSink for RocePort {
    /// Frames `pkt` from the GID table entry at `dest.eth.sgid_index` and
    /// the GRH `dest` carries (always, on RoCE), fills the ICRC and sends
    /// it onto the link, or queues it for [`RocePort::drain_loopback`] when
    /// its DGID is one of this port's GIDs.
    fn send(&self, dest: &Dest, pkt: &mut [u8]) {
        let _ = (dest, pkt, &self.frames, &self.wake);
        todo!("fabric/roce: send")
    }

    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.gids.get(index as usize).map(|e| e.gid)
    }

    fn all_global(&self) -> bool {
        true
    }
}
