//! The RoCE port's send and receive path (see the module doc).

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use super::counters::RoceCounters;
use super::gids::{GidEntry, RoceGids, RoceVersion};
use crate::buf::Scratch;
use crate::counters::bump;
use crate::ether::{FrameSink, MAX_FRAME, MIN_FRAME};
use vrnic_cc::control::{CcConfig, CcControl};
use vrnic_packet::{Dest, Endpoint, PacketSink, RxMeta};
use vrnic_wire::congestion::{CnpRepr, Ecn};
use vrnic_wire::roce::{self, FrameRepr, NetHdr};
use vrnic_wire::{bth, grh, icrc};

/// Packets to the port's own GIDs waiting for [`RocePort::drain_loopback`];
/// more are dropped (`loopback_dropped`).
pub const LOOPBACK_QUEUE: usize = 4096;
/// BTH opcode of a CNP.
const OPCODE_CNP: u8 = 0x81;
/// Hop limit of a packet whose GRH says 0 (ib_core fills the route's).
const DEFAULT_HOP_LIMIT: u8 = 64;

/// The RoCE packet path of one Ethernet port.
pub struct RocePort {
    gids: Arc<RoceGids>,
    frames: Arc<dyn FrameSink>,
    counters: Arc<RoceCounters>,
    /// Wakes the thread that calls [`RocePort::drain_loopback`] (the
    /// Ethernet link's worker).
    wake: Arc<dyn Fn() + Send + Sync>,
    /// Packets (BTH..ICRC) sent to one of the port's own GIDs.
    loopback: Mutex<VecDeque<(RxMeta, Vec<u8>)>>,
    /// Congestion control (ECN/CNP/DCQCN): the settings the mlx5
    /// congestion commands write and the counters the data path adds to.
    cc: Arc<CcControl>,
    /// Where a frame is built (no allocation per packet).
    frame: Scratch,
}

impl RocePort {
    pub fn new(gids: Arc<RoceGids>, frames: Arc<dyn FrameSink>, wake: Arc<dyn Fn() + Send + Sync>) -> RocePort {
        RocePort {
            gids,
            frames,
            counters: Arc::new(RoceCounters::default()),
            wake,
            loopback: Mutex::new(VecDeque::new()),
            cc: CcControl::new(CcConfig::connectx_default()),
            frame: Scratch::default(),
        }
    }

    /// The port's congestion-control settings and counters.
    pub fn cc(&self) -> &Arc<CcControl> {
        &self.cc
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
        let c = &self.counters;
        let p = match roce::parse(frame) {
            Ok(Some(p)) => p,
            Ok(None) => return None,
            Err(_) => {
                bump(&c.rx_malformed, 1);
                return None;
            }
        };
        let version = if p.repr.net == NetHdr::RoceV1 { RoceVersion::V1 } else { RoceVersion::V2 };
        if self.gids.find(&p.repr.grh.dgid, version, vlan_id(p.repr.vlan)).is_none() {
            bump(&c.rx_not_ours, 1);
            return None;
        }
        if roce::verify_icrc(frame, &p).is_err() {
            bump(&c.rx_icrc_errors, 1);
            return None;
        }
        bump(&c.rx_packets, 1);
        bump(&c.rx_bytes, frame.len() as u64);
        if frame[p.roce.start] == OPCODE_CNP {
            bump(&c.cnp_received, 1);
        }
        Some((meta_of(&p.repr, false, self.frame_prio(&p.repr)), p.roce))
    }

    /// Hands the packets this port sent to its own GIDs to `deliver`
    /// (called on the Ethernet worker's pass, with the engine reachable).
    /// Returns how many. Packets queued while it runs (replies `deliver`
    /// sends to the port itself) wait for the next call, which the queueing
    /// wakes.
    pub fn drain_loopback(&self, deliver: &mut dyn FnMut(&RxMeta, &[u8])) -> usize {
        let n = self.queue().len();
        for i in 0..n {
            // The lock is not held while the engine runs (it may loop more back).
            let Some((meta, pkt)) = self.queue().pop_front() else { return i };
            deliver(&meta, &pkt);
        }
        n
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<(RxMeta, Vec<u8>)>> {
        self.loopback.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The 802.1p priority of a frame with headers `r`, as the Ethernet link
    /// classifies it (`FrameSink::priority`: its VLAN PCP, or under DSCP
    /// trust the priority the DSCP maps to; RoCEv1 carries no DSCP).
    pub fn frame_prio(&self, r: &FrameRepr) -> u8 {
        let pcp = r.vlan.map(|tci| (tci >> 13) as u8 & 7);
        let dscp = (r.net != NetHdr::RoceV1).then_some(r.grh.traffic_class >> 2);
        self.frames.priority(pcp, dscp)
    }

    /// The frame's headers for `pkt` from GID entry `e` to `dest`.
    fn repr_for(e: &GidEntry, dest: &Dest, g: &grh::Repr, pkt: &[u8]) -> FrameRepr {
        let net = match (e.version, e.ipv4) {
            (RoceVersion::V1, _) => NetHdr::RoceV1,
            (RoceVersion::V2, true) => NetHdr::RoceV2Ipv4,
            (RoceVersion::V2, false) => NetHdr::RoceV2Ipv6,
        };
        let udp_sport = match (dest.eth.udp_sport, g.flow_label & 0xf_ffff) {
            (0, 0) => hashed_sport(&e.gid, &g.dgid, pkt),
            (0, fl) => roce::flow_label_to_udp_sport(fl),
            (sp, _) => sp,
        };
        let grh = grh::Repr {
            sgid: e.gid,
            hop_limit: if g.hop_limit == 0 { DEFAULT_HOP_LIMIT } else { g.hop_limit },
            // IPv4 has no flow label: what the receiver sees is 0.
            flow_label: if net == NetHdr::RoceV2Ipv4 { 0 } else { g.flow_label & 0xf_ffff },
            payload_len: pkt.len().min(u16::MAX as usize) as u16,
            next_header: grh::NXTHDR_IBA,
            ..*g
        };
        FrameRepr {
            dmac: dest.eth.dmac,
            smac: e.mac,
            vlan: e.vlan.map(|vid| (dest.eth.pcp as u16 & 7) << 13 | (vid & 0xfff)),
            net,
            grh,
            udp_sport: if net == NetHdr::RoceV1 { 0 } else { udp_sport },
        }
    }

    /// Builds and sends (or loops back) one frame; `Err` = not sent.
    fn send_frame(&self, r: &FrameRepr, pkt: &mut [u8], out: &mut Vec<u8>) -> Result<(), ()> {
        let c = &self.counters;
        if roce::emit(r, pkt, out).is_err() || out.len() > MAX_FRAME {
            return Err(());
        }
        // The caller's packet gets its ICRC too (PacketSink's contract).
        let n = pkt.len() - icrc::LEN;
        pkt[n..].copy_from_slice(&out[out.len() - icrc::LEN..]);
        let dgid = r.grh.dgid;
        if self.gids.contains(&dgid) {
            self.loop_back(r, out);
            return Ok(());
        }
        // A group this port may have joined itself: its own members get a
        // copy (the engine decides which, `mlx5/datapath/rx.rs`), the link the frame.
        if is_multicast_gid(&dgid) {
            self.loop_back(r, out);
        }
        if out.len() < MIN_FRAME {
            // As a NIC pads on the wire; receivers go by the IP lengths.
            out.resize(MIN_FRAME, 0);
        }
        self.frames.send_frame(out);
        bump(&c.tx_packets, 1);
        bump(&c.tx_bytes, out.len() as u64);
        if pkt[0] == OPCODE_CNP {
            bump(&c.cnp_sent, 1);
        }
        Ok(())
    }
}

impl RocePort {
    /// Queues the packet of frame `out` (headers `r`) for [`RocePort::drain_loopback`].
    fn loop_back(&self, r: &FrameRepr, out: &[u8]) {
        let c = &self.counters;
        let hl = roce::header_len(r);
        let mut q = self.queue();
        if q.len() >= LOOPBACK_QUEUE {
            bump(&c.loopback_dropped, 1);
            return;
        }
        q.push_back((meta_of(r, true, self.frame_prio(r)), out[hl..].to_vec()));
        drop(q);
        bump(&c.loopback_packets, 1);
        (self.wake)();
    }
}

impl PacketSink for RocePort {
    /// Frames `pkt` from the GID table entry at `dest.eth.sgid_index` and
    /// the GRH `dest` carries (always, on RoCE), fills the ICRC and sends
    /// it onto the link, or queues it for [`RocePort::drain_loopback`] when
    /// its DGID is one of this port's GIDs; a multicast DGID is both queued
    /// and sent.
    fn send(&self, dest: &Dest, pkt: &mut [u8]) {
        let c = &self.counters;
        let Some(e) = self.gids.get(dest.eth.sgid_index as usize) else {
            bump(&c.tx_no_gid, 1);
            return;
        };
        let Some(g) = dest.grh else {
            bump(&c.tx_errors, 1);
            return;
        };
        if pkt.len() < bth::field::HEADER_LEN + icrc::LEN {
            bump(&c.tx_errors, 1);
            return;
        }
        let mut r = Self::repr_for(&e, dest, &g, pkt);
        if matches!(r.net, NetHdr::RoceV2Ipv4 | NetHdr::RoceV2Ipv6) {
            // The reaction point of the frame's priority (the link's
            // classification: PCP, or the DSCP's under DSCP trust) makes it
            // ECN-capable.
            if self.cc.rp_on(self.frame_prio(&r)) {
                r.grh.traffic_class = Ecn::Ect0.apply(r.grh.traffic_class);
            }
        }
        let sent = self.frame.with(|out| self.send_frame(&r, pkt, out));
        if sent.is_err() {
            bump(&c.tx_errors, 1);
        }
    }

    /// Whether a packet to `dest` would leave now: its frame's priority is
    /// not paused by the peer (global pause or PFC, `ether/pfc.rs`). Loopback
    /// and what cannot be sent at all never wait.
    fn ready(&self, dest: &Dest) -> bool {
        let (Some(e), Some(g)) = (self.gids.get(dest.eth.sgid_index as usize), dest.grh) else {
            return true;
        };
        if self.gids.contains(&g.dgid) {
            return true;
        }
        let pcp = e.vlan.map(|_| dest.eth.pcp & 7);
        let dscp = (e.version != RoceVersion::V1).then_some(g.traffic_class >> 2);
        self.frames.ready(self.frames.priority(pcp, dscp))
    }

    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.gids.get(index as usize).map(|e| e.gid)
    }

    fn all_global(&self) -> bool {
        true
    }

    fn cc(&self) -> Option<&Arc<CcControl>> {
        Some(&self.cc)
    }

    /// Answers the packet of `meta` with a CNP as a ConnectX does
    /// ([`CnpRepr::reply_frame`]: addresses swapped, ToS `dscp` + ECT(0),
    /// the VLAN with PCP `prio`), from the GID entry the packet was sent to.
    fn send_cnp(&self, meta: &RxMeta, dest_qp: u32, dscp: u8, prio: u8) -> bool {
        let c = &self.counters;
        let Some(g) = meta.grh else { return false };
        let version = match meta.net {
            NetHdr::Ib => return false,
            NetHdr::RoceV1 => RoceVersion::V1,
            NetHdr::RoceV2Ipv4 | NetHdr::RoceV2Ipv6 => RoceVersion::V2,
        };
        let Some(e) = self.gids.find(&g.dgid, version, vlan_id(meta.vlan)).and_then(|i| self.gids.get(i)) else {
            bump(&c.tx_no_gid, 1);
            return false;
        };
        let data = FrameRepr { dmac: e.mac, smac: meta.smac, vlan: meta.vlan, net: meta.net, grh: g, udp_sport: 0 };
        let mut r = CnpRepr::reply_frame(&data, dscp, prio);
        let mut pkt = Vec::with_capacity(vrnic_wire::congestion::CNP_LEN);
        if CnpRepr::to_qp(dest_qp).emit(&mut pkt).is_err() {
            bump(&c.tx_errors, 1);
            return false;
        }
        r.grh.payload_len = pkt.len() as u16;
        r.grh.next_header = grh::NXTHDR_IBA;
        let sent = self.frame.with(|out| self.send_frame(&r, &mut pkt, out));
        if sent.is_err() {
            bump(&c.tx_errors, 1);
        }
        sent.is_ok()
    }
}

/// The VLAN ID a GID entry must have for a frame with this TCI (a
/// priority-tagged frame, VID 0, is untagged).
fn vlan_id(tci: Option<u16>) -> Option<u16> {
    tci.map(|t| t & 0xfff).filter(|&v| v != 0)
}

/// Whether `gid` is a multicast group address (IPv6 `ff00::/8`, or IPv4
/// 224.0.0.0/4 v4-mapped).
pub fn is_multicast_gid(gid: &[u8; 16]) -> bool {
    let v4_mapped = gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff];
    gid[0] == 0xff || (v4_mapped && gid[12] & 0xf0 == 0xe0)
}

/// What the engine learns of a packet with these headers and priority.
fn meta_of(r: &FrameRepr, local: bool, prio: u8) -> RxMeta {
    RxMeta {
        src: Endpoint { lid: 0, gid: r.grh.sgid },
        local,
        grh: Some(grh::Repr { next_header: grh::NXTHDR_IBA, ..r.grh }),
        net: r.net,
        vlan: r.vlan,
        smac: r.smac,
        prio,
    }
}

/// A stable UDP source port in 0xC000..=0xFFFF for a flow without one
/// (FNV-1a over SGID, DGID and the BTH's destination QP).
fn hashed_sport(sgid: &[u8; 16], dgid: &[u8; 16], pkt: &[u8]) -> u16 {
    let dqp = pkt.get(5..8).unwrap_or(&[0; 3]);
    let mut h: u32 = 0x811c_9dc5;
    for b in sgid.iter().chain(dgid).chain(dqp) {
        h = (h ^ *b as u32).wrapping_mul(0x0100_0193);
    }
    0xc000 | ((h ^ (h >> 16)) & 0x3fff) as u16
}

#[cfg(test)]
#[path = "port_tests.rs"]
mod tests;
