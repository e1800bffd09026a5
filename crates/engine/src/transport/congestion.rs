//! RoCE congestion control on the engine's packet path (the settings and
//! counters are the port's [`CcControl`](vrnic_cc::CcControl),
//! reached through the [`PacketSink`](vrnic_packet::PacketSink)):
//!
//! - notification point: a RoCEv2 packet with ECN = CE for a QP is counted
//!   and, when the NP is enabled for its priority, answered with a CNP to
//!   the flow's source QP, at most one per QP per `min_time_between_cnps`;
//! - reaction point: a CNP (never a completion) creates or feeds the QP's
//!   [`Limiter`], whose pacer the requester asks before each packet
//!   (`requester.rs`) and whose wake-ups run on the engine's timer heap.

use super::super::instance::Engine;
use super::super::objects::{QpState, QpType};
use super::demux::count_drop;
use crate::personality::Personality;
use vrnic_cc::{CcCounter, CongStatistics, Limiter};
use vrnic_packet::RxMeta;
use vrnic_wire::congestion::Ecn;
use vrnic_wire::roce::NetHdr;

/// Bytes a RoCEv2 frame adds to its packet (Ethernet 14, IPv4 20, UDP 8):
/// the pacer counts frames, not just BTH through ICRC.
pub(super) const FRAME_OVERHEAD: u64 = 14 + 20 + 8;

fn is_roce_v2(meta: &RxMeta) -> bool {
    matches!(meta.net, NetHdr::RoceV2Ipv4 | NetHdr::RoceV2Ipv6)
}

impl<P: Personality> Engine<P> {
    /// The rate QP `qpn` is paced at (bits/s), `None` while it is not
    /// rate-limited (no CNP yet, or back at line rate).
    pub fn qp_rate(&self, qpn: u32) -> Option<u64> {
        self.qps.obj(qpn)?.rt.limiter.as_ref().map(|l| l.rate())
    }

    /// A packet that passed the QP's checks arrived with `meta`: if it is
    /// RoCEv2 with ECN = CE, the notification point of QP `qpn` counts it
    /// and may send a CNP to `src_qp` (RC/UC: the remote QPN; UD: the DETH
    /// source QP). Delivery is not otherwise affected.
    pub(super) fn ecn_receive(&mut self, qpn: u32, meta: &RxMeta, src_qp: u32) {
        let Some(g) = meta.grh else { return };
        if !is_roce_v2(meta) || Ecn::from_tos(g.traffic_class) != Ecn::Ce {
            return;
        }
        let Some(cfg) = self.rt.cc_config() else { return };
        let prio = meta.prio();
        let now = self.rt.io.clock.now_ns();
        let np = &mut self.rt.np;
        np.params = cfg.np;
        np.enabled = cfg.np_on(prio);
        let cnp = np.on_packet(now, qpn, src_qp, Ecn::Ce, prio, &mut CongStatistics::default());
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        count!(self.rt, qp, ecn_marked);
        let io = &self.rt.io;
        let Some(cc) = io.packets.cc() else { return };
        cc.count(CcCounter::NpEcnMarkedRocePackets, 1);
        if let Some(c) = cnp {
            if io.packets.send_cnp(meta, c.dest_qp, c.dscp, c.prio) {
                cc.count(CcCounter::NpCnpSent, 1);
                count!(self.rt, qp, cnp_sent);
            }
        }
    }

    /// A CNP (already parsed) for local QP `dest_qp`: never a completion.
    /// On RoCE the reaction point of a QP that exists, sends and has the RP
    /// enabled for the CNP's priority cuts the QP's rate (`rp_cnp_handled`);
    /// any other is `rp_cnp_ignored`.
    pub(super) fn cnp_receive(&mut self, meta: &RxMeta, dest_qp: u32, len: usize) {
        let qp = self.qps.obj_mut(dest_qp);
        match qp {
            Some(qp) => {
                count!(self.rt, qp, rx_packets);
                count!(self.rt, qp, rx_bytes, len as u64);
                count!(self.rt, qp, cnp_received);
            }
            None => count_drop(&mut self.rt.drops.no_qp),
        }
        if meta.net == NetHdr::Ib {
            return;
        }
        let Some(cfg) = self.rt.cc_config() else { return };
        let now = self.rt.io.clock.now_ns();
        let port = self.rt.io.packets.line_rate_bps();
        let line = self.rt.io.packets.cc().map_or(port, |cc| cc.rp_line_rate(port));
        let qp = self.qps.obj_mut(dest_qp).filter(|q| {
            matches!(q.qp_type, QpType::Rc | QpType::Uc | QpType::Ud | QpType::XrcInitiator)
                && matches!(q.state, QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe)
        });
        let handled = match qp {
            Some(qp) if cfg.rp_on(meta.prio()) => {
                qp.rt.limiter.get_or_insert_with(|| Box::new(Limiter::new(now, line, cfg.rp))).on_cnp(now, cfg.rp);
                true
            }
            _ => false,
        };
        if let Some(cc) = self.rt.io.packets.cc() {
            cc.count(if handled { CcCounter::RpCnpHandled } else { CcCounter::RpCnpIgnored }, 1);
        }
        if handled {
            self.arm_limiter(dest_qp);
        }
    }

    /// Queues the QP's timer for its limiter's next wake-up.
    pub(super) fn arm_limiter(&mut self, qpn: u32) {
        let at = self.qps.obj(qpn).and_then(|q| q.rt.limiter.as_ref()).and_then(|l| l.next_wake());
        if let Some(at) = at {
            self.queue_timer(qpn, at);
        }
    }

    /// The limiter's wake-up (timer heap): the RP's timers run up to `now`
    /// (idle or not), the limiter goes once the rate is back at line rate,
    /// and a packet that waited for the pacer is sent.
    pub(super) fn on_limiter_timer(&mut self, qpn: u32, now: u64) {
        let params = self.rt.cc_config().map(|c| c.rp);
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let Some(l) = qp.rt.limiter.as_mut() else { return };
        let keep = match params {
            Some(p) => l.advance(now, p),
            None => false,
        };
        if !keep {
            qp.rt.limiter = None;
        }
        self.progress(qpn);
    }
}
