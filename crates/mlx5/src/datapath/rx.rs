//! Packets into the RDMA engine, from the InfiniBand fabric ([`FwHandler`])
//! or the RoCE port of an Ethernet link (`eth::rx::EthRx`), through one
//! method ([`Firmware::rdma_receive`]): the destination QP is read through
//! `bth::Packet`; a packet that consumes a receive WQE first pulls the QP's
//! new ones ([`super::rq`]); the engine takes the packet.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::sq::engine_qp;
use crate::firmware::Firmware;
use crate::ifc::qpc;
use vrnic_engine::QpType;
use vrnic_fabric::{PacketHandler, RxMeta};
use vrnic_wire::bth;
use vrnic_wire::ext::deth;

/// The fabric's packet handler: the firmware (which owns the engine).
pub struct FwHandler(pub Arc<Mutex<Firmware>>);

impl FwHandler {
    fn fw(&self) -> std::sync::MutexGuard<'_, Firmware> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl PacketHandler for FwHandler {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        self.fw().datapath().rdma_receive(meta, pkt);
    }

    fn flush(&self) {
        self.fw().datapath().core.engine.flush_acks();
    }

    /// The link has credit again: the QPs it held go on (what they complete
    /// is written when the datapath is dropped).
    fn tx_ready(&self) {
        self.fw().datapath().core.engine.tx_ready();
    }

    /// Runs on every pass of the fabric worker: the timers and the receive
    /// queues of QPs in ERR (a CQ's consumer index is read when the CQ looks
    /// full, see QueueSink).
    fn poll(&self, _now_ns: u64) -> Option<u64> {
        let mut fw = self.fw();
        let mut dp = fw.datapath();
        let rq = dp.flush_err_rqs();
        let moder = dp.core.expire_cq_moderation();
        [dp.core.engine.poll_timers(), rq, moder].into_iter().flatten().min()
    }
}

impl Firmware {
    /// One packet (BTH through ICRC) for the RDMA engine. Call it on a
    /// [`super::DataPath`]: what the engine completes is written when that
    /// is dropped.
    pub(crate) fn rdma_receive(&mut self, meta: &RxMeta, pkt: &[u8]) {
        let Ok(bth) = bth::Packet::new_checked(pkt) else { return };
        if bth.dest_qp() == MULTICAST_QPN {
            return self.multicast_receive(meta, pkt);
        }
        let target = match bth.dest_qp() {
            // QP1 runs through the engine on RoCE; on InfiniBand QP0 and QP1
            // are the firmware's (`ib/mad_wire.rs`); RoCE has no QP0.
            1 if self.port.gsi_on_wire() => {
                self.core.engine.qps().find(|(_, q)| q.qp_type == QpType::Gsi).map(|(n, _)| n)
            }
            0 | 1 if !self.port.gsi_on_wire() => return self.receive_mad(meta, pkt),
            0 | 1 => None,
            n => self.core.engine.qp(n).filter(|q| engine_qp(q.qp_type)).map(|_| n),
        };
        // Only a packet that may take a receive WQE needs the RQ's new ones
        // (ACKs, read and atomic traffic do not: skip the doorbell record read).
        if let Some(q) = target.filter(|_| bth.opcode().consumes_recv()) {
            match self.xrc_target_srq(q, pkt) {
                // An XRC target receives into the XRC SRQ its request names.
                Some(srqn) => self.sync_srq(srqn),
                None => self.sync_recv(q),
            }
        }
        self.core.engine.receive(meta, pkt);
    }

    /// The XRC SRQ a request to XRC target `qpn` names (its XRCETH), if it
    /// exists; the engine checks it belongs to the target's XRC domain.
    fn xrc_target_srq(&self, qpn: u32, pkt: &[u8]) -> Option<u32> {
        if self.core.engine.qp(qpn)?.qp_type != QpType::XrcTarget {
            return None;
        }
        let at = vrnic_wire::bth::field::HEADER_LEN;
        let x = vrnic_wire::xrceth::Packet::new_checked(pkt.get(at..)?).ok()?;
        Some(x.xrc_srq()).filter(|s| self.core.engine.srq(*s).is_some())
    }

    /// Whether a UD QP of this port is attached to group `gid` (ATTACH_TO_MCG).
    pub(crate) fn mcast_member(&self, gid: &[u8; 16]) -> bool {
        self.core.engine.qps().any(|(_, q)| q.ext.mcast.contains(gid))
    }

    /// A packet to the multicast QPN: one copy to every UD QP attached to its
    /// destination GID, addressed to that QP. One this port sent (`meta.local`,
    /// the RoCE port's multicast loopback) reaches none while the NIC vport
    /// context disables multicast local loopback, and not its sender when that
    /// QP was created with `block_lb_mc` (IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK).
    fn multicast_receive(&mut self, meta: &RxMeta, pkt: &[u8]) {
        let counters = self.counters.clone();
        let drop = || counters.mcast_drops.fetch_add(1, Ordering::Relaxed);
        // IBTA 9.2.1 / 8.2.4: a multicast packet carries its MGID in a GRH.
        let Some(dgid) = meta.grh.map(|g| g.dgid) else {
            drop();
            return;
        };
        let mut sender = None;
        if meta.local {
            if self.port.eth().is_some_and(|e| e.mc_local_lb_disabled()) {
                return;
            }
            sender = pkt
                .get(bth::field::HEADER_LEN..)
                .and_then(|d| deth::Packet::new_checked(d).ok())
                .map(|d| d.src_qp())
                .filter(|q| {
                    self.core.engine.qp(*q).map(|e| &e.ext).is_some_and(|c| qpc::block_lb_mc.get_bool(&c.created))
                });
        }
        let members: Vec<u32> = self
            .core
            .engine
            .qps()
            .filter(|(n, q)| Some(*n) != sender && q.ext.mcast.contains(&dgid) && q.qp_type == QpType::Ud)
            .map(|(n, _)| n)
            .collect();
        if members.is_empty() || pkt.len() < 8 {
            drop();
            return;
        }
        counters.multicast_rcv.fetch_add(1, Ordering::Relaxed);
        for qpn in members {
            let mut copy = pkt.to_vec();
            copy[5..8].copy_from_slice(&qpn.to_be_bytes()[1..]);
            self.sync_recv(qpn);
            self.core.engine.receive(meta, &copy);
            counters.mcast_delivered.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// BTH destination QP of multicast packets.
const MULTICAST_QPN: u32 = 0x00ff_ffff;
