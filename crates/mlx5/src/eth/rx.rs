//! A frame from the link into an RQ (owner: eth-rx): the RoCE diversion
//! ([`EthRx`]), size checks, the header walk, steering, TIR/RSS, then the RQ's next WQE
//! and its CQE (`struct mlx5_cqe64` as `en_rx.c` reads it).
//!
//! Every frame that is not delivered is counted ([`RxCounters`]); a WQE
//! whose scatter list the device cannot write completes with an error CQE
//! and moves the RQ to ERR (the driver's RX reporter recovers it).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tracing::debug;

use super::match_image::MatchImage;
pub use super::rx_counters::{RqCounters, RxCounters};
use super::steering::{SteeringDrops, Verdict};
use super::tir::{RqChoice, Tir};
use super::EthCx;
use crate::datapath::cqe::{op, syndrome, Cqe};
use crate::datapath::wqe;
use crate::firmware::Firmware;
use crate::queue_buf::buf_addr;
use crate::roce::mcast::accept_multicast;
use crate::uar::{BurstKick, Kick};
use vrnic_engine::{Access, QpState, QpType};
use vrnic_fabric::ether::{FrameHandler, Offer};
use vrnic_fabric::roce::RocePort;
use vrnic_wire::ether::{self, FrameInfo, Lengths, L3, L4, TPID_CTAG};
use vrnic_wire::offload::rx_checksum;

/// Ethernet header bytes (a shorter frame is a runt).
pub const ETH_HLEN: usize = 14;
/// The largest hardware MTU (L2 header, one tag and FCS included, as
/// `MLX5E_SW2HW_MTU` counts it) and the largest frame it admits (plus a
/// second tag, less the FCS the link does not carry).
pub const MAX_HW_MTU: usize = 9978;
pub const MAX_FRAME: usize = MAX_HW_MTU;

/// The largest frame the port takes for the vport MTU the driver wrote
/// (0 until written: [`MAX_FRAME`]).
pub fn max_frame(hw_mtu: u16) -> usize {
    match hw_mtu as usize {
        0 => MAX_FRAME,
        m => m.min(MAX_HW_MTU),
    }
}

/// CQE `hds_ip_ext` bits.
pub mod hds {
    pub const L3_OK: u8 = 1 << 1;
    pub const L4_OK: u8 = 1 << 2;
}

/// The receive path's counters as `stats` shows them.
#[derive(Serialize)]
pub struct EthRxTree<'a> {
    #[serde(flatten)]
    pub frames: &'a RxCounters,
    pub steering: &'a SteeringDrops,
    pub queues: &'a BTreeMap<u32, RqCounters>,
}

/// The receive side of an RQ as the RX path needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxQueue {
    pub cqn: u32,
    pub pd: u32,
    /// `rqc.vsd`: leave VLAN tags in the frame.
    pub vsd: bool,
}

/// The Ethernet link's frame handler: the firmware's RX path, and the RoCE
/// port's receive side. With the vport's `roce_en` set (mlx5_ib's
/// `mlx5_nic_vport_enable_roce`), a frame the RoCE port takes (RoCE to one
/// of the port's GIDs, ICRC good: `RocePort::accept`) goes to the RDMA
/// engine and never reaches steering (§3.8); everything else takes the NIC
/// path. The link's worker calls `flush` after a burst (coalesced ACKs go
/// out) and `poll` on every pass (the RoCE port's loopback packets, the
/// engine's timers).
pub struct EthRx {
    fw: Arc<Mutex<Firmware>>,
    roce: Option<Arc<RocePort>>,
    /// Poll doorbell mode: wake the UAR poller after a burst that put
    /// something in front of the guest (it usually answers with a doorbell).
    kick: Option<BurstKick>,
}

impl EthRx {
    pub fn new(fw: Arc<Mutex<Firmware>>, roce: Option<Arc<RocePort>>, kick: Option<Arc<dyn Kick>>) -> EthRx {
        EthRx { fw, roce, kick: kick.map(BurstKick::new) }
    }

    fn fw(&self) -> std::sync::MutexGuard<'_, Firmware> {
        self.fw.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn note(&self, pkt: &[u8], local: bool) {
        if let Some(k) = &self.kick {
            k.note(pkt, local);
        }
    }

    fn kick_pending(&self) {
        if let Some(k) = &self.kick {
            k.flush();
        }
    }
}

impl EthRx {
    /// A frame into the RoCE port or the NIC path; `lossless`: a NIC-path
    /// frame whose RQ has no WQE is left to the link (`Offer::NoBuffer`).
    fn take(&self, frame: &[u8], lossless: bool) -> Offer {
        let mut guard = self.fw();
        let mut dp = guard.datapath();
        if let Some(port) = self.roce.as_ref().filter(|_| dp.port.eth().is_some_and(|e| e.vport.roce_en)) {
            let member = |g: &[u8; 16]| dp.mcast_member(g);
            let taken = accept_multicast(port, frame, &member).or_else(|| port.accept(frame));
            if let Some((meta, range)) = taken {
                if let Some(pkt) = frame.get(range) {
                    self.note(pkt, false);
                    dp.rdma_receive(&meta, pkt);
                }
                // RoCE never waits for the link: an RQ without WQE is the RDMA engine's (RNR NAK on RC,
                // a counted drop on UD), as IBTA has it (docs/qos.md).
                return Offer::Taken;
            }
        }
        if !lossless {
            dp.eth_receive(frame);
            Offer::Taken
        } else if dp.eth_receive_lossless(frame) {
            Offer::Taken
        } else {
            Offer::NoBuffer
        }
    }
}

impl FrameHandler for EthRx {
    fn receive_frame(&self, frame: &[u8]) {
        self.take(frame, false);
    }

    fn offer_frame(&self, frame: &[u8]) -> Offer {
        self.take(frame, true)
    }

    fn flush(&self) {
        if self.roce.is_some() {
            self.fw().datapath().core.engine.flush_acks();
        }
        self.kick_pending();
    }

    fn tx_ready(&self) {
        if self.roce.is_some() {
            self.fw().datapath().core.engine.tx_ready();
        }
        self.kick_pending();
    }

    fn poll(&self, _now_ns: u64) -> Option<u64> {
        let mut guard = self.fw();
        let mut dp = guard.datapath();
        // Held completion events of any CQ (a port without RoCE included).
        let moder = dp.core.expire_cq_moderation();
        let Some(port) = self.roce.as_ref() else { return moder };
        let looped = port.drain_loopback(&mut |meta, pkt| {
            self.note(pkt, true);
            dp.rdma_receive(meta, pkt);
        });
        if looped > 0 {
            dp.core.engine.flush_acks();
        }
        let rq = dp.flush_err_rqs();
        let next = [dp.core.engine.poll_timers(), rq, moder].into_iter().flatten().min();
        drop(dp);
        drop(guard);
        self.kick_pending();
        next
    }
}

/// What became of a frame on the NIC path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Received {
    /// Steered to `admitted` TIRs; `delivered`: an RQ took it.
    Done { admitted: usize, delivered: bool },
    /// Lossless, and an RQ it goes to has no WQE: not delivered, not counted.
    NoBuffer,
}

/// CQE `l4_l3_hdr_type` (without the VLAN-stripped bit 0).
fn hdr_type(info: &FrameInfo) -> u8 {
    let l3 = match info.l3 {
        L3::Ipv6 { .. } => 1,
        L3::Ipv4 { .. } => 2,
        L3::None => 0,
    };
    let l3_payload = match info.l3 {
        L3::Ipv4 { total_len, header_len, .. } => (total_len as usize).saturating_sub(header_len),
        L3::Ipv6 { payload_len, .. } => payload_len as usize,
        L3::None => 0,
    };
    let l4 = match info.l4 {
        L4::None => 0,
        L4::Udp { .. } => 2,
        L4::Tcp { flags, .. } if flags & 0x10 == 0 => 1,
        L4::Tcp { header_len, .. } if l3_payload <= header_len => 3,
        L4::Tcp { .. } => 4,
    };
    (l4 << 4) | (l3 << 2)
}

impl Firmware {
    /// The receive path's counters (control socket `stats`; `None` on an InfiniBand port).
    pub fn eth_rx_stats(&self) -> Option<EthRxTree<'_>> {
        let e = self.port.eth()?;
        let d = &e.dispatch;
        Some(EthRxTree { frames: &d.counters, steering: &e.steering.drops, queues: &d.rq_counters })
    }

    /// The receive path's counters, to set in tests of `stats`.
    #[doc(hidden)]
    pub fn eth_rx_counters_mut(
        &mut self,
    ) -> Option<(&mut RxCounters, &mut SteeringDrops, &mut BTreeMap<u32, RqCounters>)> {
        let e = self.port.eth_mut()?;
        let d = &mut e.dispatch;
        Some((&mut d.counters, &mut e.steering.drops, &mut d.rq_counters))
    }

    /// One received frame (see [`EthCx::receive`]); nothing on an InfiniBand port.
    pub(crate) fn eth_receive(&mut self, frame: &[u8]) {
        if let Ok(mut cx) = self.eth_cx() {
            cx.receive(frame);
        }
    }

    /// See [`EthCx::receive_lossless`].
    pub(crate) fn eth_receive_lossless(&mut self, frame: &[u8]) -> bool {
        self.eth_cx().is_ok_and(|mut cx| cx.receive_lossless(frame))
    }
}

/// The Ethernet port's receive path.
impl EthCx<'_> {
    /// The RQ `rqn` if it takes frames now (RDY, with a CQ).
    fn rx_queue(&self, rqn: u32) -> Option<RxQueue> {
        let qp = self.core.engine.qp(rqn).filter(|q| q.qp_type == QpType::RawPacket && q.state == QpState::Rts)?;
        let cqn = qp.recv_cq.filter(|c| self.core.engine.cq(*c).is_some())?;
        self.core.engine.qp(rqn).map(|e| &e.ext).filter(|c| c.rq_entries != 0)?;
        let vsd = self.eth.queues.rq(rqn).is_some_and(|r| r.vsd);
        Some(RxQueue { cqn, pd: qp.pd, vsd })
    }

    /// One received frame: steering, RQ, CQE.
    pub(crate) fn receive(&mut self, frame: &[u8]) {
        self.receive_if(frame, &|_| true);
    }

    /// [`receive`](Self::receive) of a frame of a lossless priority
    /// (PFC transmit on, `fabric/ether/pfc_tx.rs`): if an RQ it is steered
    /// to has no WQE, it is delivered nowhere and nothing is counted (false:
    /// the link holds it and offers it again).
    pub(crate) fn receive_lossless(&mut self, frame: &[u8]) -> bool {
        self.receive_with(frame, &|_| true, true) != Received::NoBuffer
    }

    /// A frame through steering to the RQs of the TIRs `admit` lets take it
    /// (the local loopback's filter, `loopback.rs`). Returns how many TIRs it
    /// admitted and whether an RQ took the frame.
    pub(super) fn receive_if(&mut self, frame: &[u8], admit: &dyn Fn(&Tir) -> bool) -> (usize, bool) {
        match self.receive_with(frame, admit, false) {
            Received::Done { admitted, delivered } => (admitted, delivered),
            Received::NoBuffer => (0, false),
        }
    }

    fn receive_with(&mut self, frame: &[u8], admit: &dyn Fn(&Tir) -> bool, lossless: bool) -> Received {
        let counters = &mut self.eth.dispatch.counters;
        if frame.len() < ETH_HLEN {
            counters.runts += 1;
            return Received::Done { admitted: 0, delivered: false };
        }
        if frame.len() > max_frame(self.eth.vport.mtu) {
            counters.giants += 1;
            return Received::Done { admitted: 0, delivered: false };
        }
        let Ok(info) = ether::parse(frame) else {
            counters.runts += 1;
            return Received::Done { admitted: 0, delivered: false };
        };
        // Steering and RSS read the header fields as a ConnectX's parser does, whatever the IP length fields say
        // (rdma-core's raw IPv6 test frames claim 40 bytes more than they carry); the checksum report and the
        // CQE's header types go by the checked walk.
        let fields = ether::walk(frame, Lengths::FromFrame).unwrap_or(info);
        let img = MatchImage::of(&fields);
        let (tirs, flow_tag) = match self.eth.steering.classify(&img) {
            Verdict::Deliver { tirs, flow_tag } => (tirs, flow_tag),
            Verdict::Drop(why) => {
                debug!(?why, "frame dropped by steering");
                return Received::Done { admitted: 0, delivered: false };
            }
        };
        let mut admitted = 0;
        let mut rqs: Vec<RqChoice> = Vec::with_capacity(tirs.len());
        for tirn in tirs {
            if self.eth.dispatch.tirs.get(&tirn).is_some_and(|t| !admit(t)) {
                continue;
            }
            admitted += 1;
            match self.eth.dispatch.choose_rq(tirn, &fields) {
                // Two TIRs choosing one RQ deliver one copy.
                Some(c) if rqs.iter().any(|d| d.rqn == c.rqn) => {}
                Some(c) => rqs.push(c),
                None => self.eth.dispatch.counters.no_tir += 1,
            }
        }
        if lossless && rqs.iter().any(|c| self.rx_queue(c.rqn).is_some() && !self.rq_posted(c.rqn)) {
            return Received::NoBuffer;
        }
        let mut delivered = false;
        for c in rqs {
            delivered |= self.deliver(c, flow_tag, frame, &info);
        }
        if delivered {
            self.eth.vport.counters.count_rx(frame);
        }
        Received::Done { admitted, delivered }
    }

    /// Whether RQ `rqn` has a WQE posted (its doorbell record ahead of the consumer index).
    fn rq_posted(&self, rqn: u32) -> bool {
        let Some(ctx) = self.core.engine.qp(rqn).map(|e| &e.ext) else { return false };
        let mut pc = [0u8; 4];
        self.core.mem.read(ctx.dbr_addr, &mut pc).is_ok() && u32::from_be_bytes(pc) as u16 != ctx.rq_ci
    }

    /// Places a frame into RQ `c.rqn`'s next WQE and completes it; false: dropped (counted).
    fn deliver(&mut self, c: RqChoice, flow_tag: u32, frame: &[u8], info: &FrameInfo) -> bool {
        let rqn = c.rqn;
        let Some(q) = self.rx_queue(rqn) else {
            self.eth.dispatch.counters.rq_not_ready += 1;
            self.rq_counters(rqn).drops += 1;
            return false;
        };
        let Some(ctx) = self.core.engine.qp(rqn).map(|e| &e.ext) else { return false };
        let (ci, stride, entries) = (ctx.rq_ci, ctx.rq_stride, ctx.rq_entries);
        if !self.rq_posted(rqn) {
            if let Some(id) = self.eth.queues.rq(rqn).map(|r| r.counter_set_id) {
                self.eth.queues.q_counter_out_of_buffer(id);
            }
            let r = self.rq_counters(rqn);
            r.out_of_buffer += 1;
            r.drops += 1;
            return false;
        }
        let off = ((ci as u32 & (entries - 1)) as u64) * stride as u64;
        let mut w = vec![0u8; stride];
        let read = buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, off)
            .is_some_and(|a| self.core.mem.read(a, &mut w).is_ok());
        if !read {
            self.eth.dispatch.counters.wqe_errors += 1;
            self.core.qp_error(rqn, ci, 0, syndrome::LOCAL_QP_OP_ERR, false);
            return false;
        }
        // VLAN stripping: the outermost tag, C-tags only.
        let strip = info.vlans[0].filter(|t| !q.vsd && t.tpid == TPID_CTAG);
        let data: std::borrow::Cow<[u8]> = match strip {
            Some(_) => [&frame[..12], frame.get(16..).unwrap_or_default()].concat().into(),
            None => frame.into(),
        };
        let sges = wqe::parse_recv(&w);
        if sges.iter().map(|s| s.length as u64).sum::<u64>() < data.len() as u64 {
            self.eth.dispatch.counters.too_long += 1;
            self.rq_counters(rqn).drops += 1;
            return false;
        }
        if let Err(syn) = self.scatter(&sges, q.pd, &data) {
            self.eth.dispatch.counters.wqe_errors += 1;
            self.core.qp_error(rqn, ci, 0, syn, false);
            return false;
        }
        if let Some(ctx) = self.core.engine.qp_mut(rqn).map(|e| &mut e.ext) {
            ctx.rq_ci = ci.wrapping_add(1);
        }
        let sum = rx_checksum(frame, info);
        let ip = !matches!(info.l3, L3::None);
        let mut hds_ip_ext = 0;
        if ip && sum.l3_ok {
            hds_ip_ext |= hds::L3_OK;
            if !matches!(info.l4, L4::None) && sum.l4_ok {
                hds_ip_ext |= hds::L4_OK;
            }
        }
        let cqe = Cqe {
            opcode: op::RESP_SEND,
            qpn: flow_tag,
            wqe_counter: ci,
            byte_cnt: data.len() as u32,
            rss_hash: c.hash,
            rss_hash_type: c.hash_type,
            check_sum: if ip { sum.sum } else { 0 },
            hds_ip_ext,
            l4_l3_hdr_type: hdr_type(info) | strip.is_some() as u8,
            vlan_info: strip.map(|t| t.tci).unwrap_or(0),
            ..Default::default()
        };
        if !self.core.post_cqe(q.cqn, &cqe, false) {
            self.eth.dispatch.counters.cq_overruns += 1;
        }
        let n = data.len() as u64;
        let r = self.rq_counters(rqn);
        r.packets += 1;
        r.bytes += n;
        self.eth.dispatch.counters.delivered += 1;
        true
    }

    fn rq_counters(&mut self, rqn: u32) -> &mut RqCounters {
        self.eth.dispatch.rq_counters.entry(rqn).or_default()
    }

    /// Writes `data` through a receive WQE's scatter list (lkeys of PD `pd`).
    fn scatter(&self, sges: &[wqe::Sge], pd: u32, data: &[u8]) -> Result<(), u8> {
        let mut done = 0usize;
        for sge in sges {
            if done == data.len() {
                break;
            }
            let n = (sge.length as usize).min(data.len() - done);
            let chunks = (self.core.engine)
                .translate_key(sge.lkey, sge.addr, n as u64, pd, Access::LOCAL_WRITE)
                .map_err(|_| syndrome::LOCAL_PROT_ERR)?;
            for (pa, len) in chunks {
                let len = len as usize;
                self.core.mem.write(pa, &data[done..done + len]).map_err(|_| syndrome::LOCAL_PROT_ERR)?;
                done += len;
            }
        }
        Ok(())
    }
}
