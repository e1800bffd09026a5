//! Completion queues: the one place in the crate a CQE is written
//! ([`super::ctx::CqCtx::write_cqe`]) and the one widening of the driver's 24-bit
//! consumer counter ([`expand_ci`]).
//!
//! Every CQE takes the same way: the engine's completions (queued by
//! [`super::sink::QueueSink`] while the engine runs, written by [`Core::drain`](crate::core::Core::drain)) and
//! the firmware's own (QP0/QP1 MADs, UMR, flushes: [`Core::post_cqe`](crate::core::Core::post_cqe))
//! both end in `Core::put_cqe`, which writes the CQE and then runs the
//! CQ's arming ([`super::cq_arm`]) to decide on a completion event. A CQ
//! resize writes its `RESIZE_CQ` CQE through the same writer, into the old
//! buffer.

use tracing::{debug, warn};

use super::cq_arm::Moderation;
use super::cqe::{op, syndrome, Cqe};
use super::ctx::expand_ci;
use super::sink::Pending;
use crate::core::Core;
use crate::ifc;
use vrnic_engine::verbs::{Completion, CompletionSink, WcOpcode, WcStatus};
use vrnic_engine::QpType;
use vrnic_wire::roce::NetHdr;

fn status_syndrome(s: WcStatus) -> u8 {
    match s {
        WcStatus::Success => 0,
        WcStatus::LocLenErr => syndrome::LOCAL_LENGTH_ERR,
        WcStatus::LocQpOpErr => syndrome::LOCAL_QP_OP_ERR,
        WcStatus::LocProtErr => syndrome::LOCAL_PROT_ERR,
        WcStatus::WrFlushErr => syndrome::WR_FLUSH_ERR,
        WcStatus::RemInvReqErr => syndrome::REMOTE_INVAL_REQ_ERR,
        WcStatus::RemAccessErr => syndrome::REMOTE_ACCESS_ERR,
        WcStatus::RemOpErr => syndrome::REMOTE_OP_ERR,
        WcStatus::RetryExcErr => syndrome::TRANSPORT_RETRY_EXC_ERR,
        WcStatus::RnrRetryExcErr => syndrome::RNR_RETRY_EXC_ERR,
    }
}

/// The P_Key QP1 receives report on RoCE (`imm_inval_pkey`, the only
/// entry of the port's P_Key table).
pub const ROCE_GSI_PKEY: u32 = 0xffff;

/// `flags_rqpn[25:24]` of a RoCE receive (`MLX5_CQE_ROCE_L3_HEADER_TYPE_*`).
fn roce_packet_type(net: NetHdr) -> Option<u8> {
    match net {
        NetHdr::Ib => None,
        NetHdr::RoceV1 => Some(0),
        NetHdr::RoceV2Ipv6 => Some(1),
        NetHdr::RoceV2Ipv4 => Some(2),
    }
}

/// `srqn_uidx` of an XRC receive is the XRC SRQ's user index (`xrc_srqc.user_index`,
/// which only CREATE_XRC_SRQ carries: ISSI 1). An XRC SRQ made with ISSI 0's
/// CREATE_SRQ has none: 0xffffff, the "no user index" value (mlx5_ib's
/// MLX5_IB_DEFAULT_UIDX), which libmlx5's cqe-version-1 lookup finds no
/// resource for (its poll fails; nothing lands on another resource).
pub(super) const XRC_SRQ_NO_USER_INDEX: u32 = 0x00ff_ffff;

/// An engine completion as the CQE libmlx5 / mlx5_ib expect; `gsi`: the
/// completion is QP1's. A RoCE receive (`/work/shared/mlx5-ethernet-roce.md`
/// §4.7, `ib/cq.c:handle_responder`) carries the packet type where IB has
/// the SL (`flags_rqpn[25:24]`), the VLAN (`l4_l3_hdr_type` bit 0,
/// `vlan_info`) and, on QP1, P_Key 0xFFFF; `g` (bit 28) says the GRH area
/// holds the IP header.
pub(super) fn completion_cqe(c: &Completion, user_index: u32, gsi: bool) -> Cqe {
    let mut e = Cqe { qpn: c.qpn, user_index, byte_cnt: c.byte_len, solicited: c.solicited, ..Default::default() };
    let recv = c.opcode.is_recv();
    e.wqe_counter = c.wr_id as u16;
    if recv {
        e.src_qpn = c.src_qp;
        e.slid = c.slid;
        e.grh = c.grh;
        e.opcode = match (c.opcode, c.imm, c.invalidated_rkey) {
            (WcOpcode::RecvRdmaWithImm, _, _) => op::RESP_WR_IMM,
            (_, Some(_), _) => op::RESP_SEND_IMM,
            (_, _, Some(_)) => op::RESP_SEND_INV,
            _ => op::RESP_SEND,
        };
        e.imm_inval_pkey = c.imm.or(c.invalidated_rkey).unwrap_or(0);
        if let Some(t) = roce_packet_type(c.net) {
            e.slid = 0;
            e.sl = t;
            if let Some(tci) = c.vlan {
                e.l4_l3_hdr_type = 1;
                e.vlan_info = tci;
            }
            if gsi {
                e.imm_inval_pkey = ROCE_GSI_PKEY;
            }
        }
    } else {
        e.wqe_opcode = (c.wr_id >> 32) as u8;
        e.opcode = op::REQ;
        if !matches!(c.opcode, WcOpcode::RdmaRead | WcOpcode::CompSwap | WcOpcode::FetchAdd) {
            e.byte_cnt = 0;
        }
    }
    if c.status != WcStatus::Success {
        e.opcode = if recv { op::RESP_ERR } else { op::REQ_ERR };
        e.syndrome = status_syndrome(c.status);
        e.vendor_syndrome = 0x79;
    }
    e
}

impl Core {
    /// Writes everything the engine reported since the last drain. The data
    /// path's entry points and every command run it when they return
    /// ([`super::DataPath`]).
    pub fn drain(&mut self) {
        for _ in 0..64 {
            let items = self.pending.take();
            if items.is_empty() {
                return;
            }
            // A CQE tells the guest its message arrived, and the guest may
            // destroy the QP at once (ibv_rc_pingpong after its last
            // receive): the ACKs still coalescing for what arrived leave
            // first, or the peer's SEND would end in RETRY_EXC_ERR.
            if items.iter().any(|p| matches!(p, Pending::Complete { .. })) {
                self.engine.flush_acks();
            }
            for p in items {
                match p {
                    Pending::Complete { cqn, index, c } => {
                        let user_index = match c.srqn {
                            Some(s) => self
                                .engine
                                .srq(s)
                                .map(|e| &e.ext)
                                .and_then(|x| x.user_index)
                                .unwrap_or(XRC_SRQ_NO_USER_INDEX),
                            None => self.engine.qp(c.qpn).map(|e| &e.ext).map(|q| q.user_index).unwrap_or(0),
                        };
                        let gsi = self.engine.qp(c.qpn).is_some_and(|q| q.qp_type == QpType::Gsi);
                        let e = completion_cqe(&c, user_index, gsi);
                        self.put_cqe(cqn, index, &e, c.solicited || c.status != WcStatus::Success);
                    }
                    Pending::Event(ev) => self.engine_event(ev),
                }
            }
        }
    }

    /// CQE number `index` of CQ `cqn` (a slot the engine's count already
    /// holds): write it, then let the CQ's arming decide on an event.
    fn put_cqe(&mut self, cqn: u32, index: u32, e: &Cqe, solicited: bool) {
        let Some(ctx) = self.engine.cq(cqn).map(|e| &e.ext) else { return };
        let Some(cq) = self.engine.cq(cqn) else { return };
        if let Err(err) = ctx.write_cqe(&*self.mem, index, cq.log_size, e) {
            warn!(cqn, "{err}");
            return;
        }
        self.cq_event(cqn, index.wrapping_add(1), solicited);
    }

    /// A CQE the firmware made (QP0/QP1, UMR, flushes): counted on CQ
    /// `cqn`, written, armed; `solicited` also holds for error CQEs. False:
    /// the CQ is full (overrun) or the CQE could not be written.
    pub(crate) fn post_cqe(&mut self, cqn: u32, c: &Cqe, solicited: bool) -> bool {
        if self.engine.cq(cqn).is_some_and(|cq| !cq.has_room()) {
            // Full by the last known count: the driver may have consumed
            // since (its index is in the CQ doorbell record).
            self.refresh_cq(cqn);
        }
        let Some((cq, ctx)) = self.engine.cq_mut(cqn).map(|e| e.parts_mut()) else { return false };
        if !cq.has_room() {
            cq.overrun = true;
            warn!(cqn, "CQ overrun: completion dropped");
            return false;
        }
        let index = cq.producer;
        if let Err(err) = ctx.write_cqe(&*self.mem, index, cq.log_size, c) {
            warn!(cqn, "{err}");
            return false;
        }
        cq.producer = index.wrapping_add(1);
        let error = matches!(c.opcode, op::REQ_ERR | op::RESP_ERR);
        self.cq_event(cqn, index.wrapping_add(1), solicited || error);
        true
    }

    /// Refreshes the consumer index of `cqn` from its doorbell record.
    pub fn refresh_cq(&mut self, cqn: u32) {
        let Some(cq) = self.engine.cq(cqn) else { return };
        if let Some(c) = self.pending.consumer(cqn, cq.producer) {
            self.engine.cq_consumed(cqn, c);
        }
    }

    /// CQ arm doorbell: the next (solicited) completion raises an event;
    /// completions waiting past `ci` that no event reported raise one now.
    pub(super) fn arm_cq(&mut self, cqn: u32, sn: u8, solicited: bool, ci: u32) {
        let word = ((sn as u32 & 3) << 28) | ((solicited as u32) << 24) | (ci & 0x00ff_ffff);
        let Some(producer) = self.engine.cq(cqn).map(|cq| cq.producer) else {
            debug!(cqn, "arm for a nonexistent CQ ignored");
            return;
        };
        let Some(ctx) = self.engine.cq_mut(cqn).map(|e| &mut e.ext) else { return };
        // The same arm seen twice (trapped write and a later page scan): once.
        if ctx.arming.last_arm == Some(word) {
            return;
        }
        ctx.arming.last_arm = Some(word);
        let consumer = expand_ci(producer, ci);
        let (m, now) = self.moderation(cqn);
        let Some(ctx) = self.engine.cq_mut(cqn).map(|e| &mut e.ext) else { return };
        let fire = ctx.arming.request_notify(producer, consumer, solicited, sn, m, now);
        self.engine.cq_consumed(cqn, consumer);
        self.after_arming(cqn, fire);
    }

    /// CQE number `producer - 1` of CQ `cqn` was written: raise a
    /// completion event if the CQ is armed for it (now, or when its
    /// moderation lets it: [`Self::expire_cq_moderation`]).
    fn cq_event(&mut self, cqn: u32, producer: u32, solicited: bool) {
        let (m, now) = self.moderation(cqn);
        let Some(ctx) = self.engine.cq_mut(cqn).map(|e| &mut e.ext) else { return };
        let fire = ctx.arming.on_cqe(producer, solicited, m, now);
        self.after_arming(cqn, fire);
    }

    /// CQ `cqn`'s moderation and the clock for it (0 when it is off). Off
    /// where no worker runs the timer (no waker: a device without a packet
    /// path, unit tests).
    fn moderation(&self, cqn: u32) -> (Moderation, u64) {
        let m = match self.engine.cq(cqn) {
            Some(cq) if self.engine.has_waker() => Moderation::new(cq.period, cq.max_count),
            _ => Moderation::default(),
        };
        (m, if m.off() { 0 } else { self.engine.now_ns() })
    }

    /// Raise the event the arming decided on, or have the worker's pass
    /// look at a held one (woken, so that its wait ends by the due time).
    fn after_arming(&mut self, cqn: u32, fire: bool) {
        if fire {
            self.cq_due.remove(&cqn);
            self.comp_event(cqn);
        } else if self.engine.cq(cqn).map(|e| &e.ext).is_some_and(|c| c.arming.due.is_some()) && self.cq_due.insert(cqn)
        {
            self.stats.cq_moder_holds.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.engine.wake();
        }
    }

    /// The moderation timer, on every pass of the packet worker: raises the
    /// held events that are due; the time of the next one, if any.
    pub(crate) fn expire_cq_moderation(&mut self) -> Option<u64> {
        if self.cq_due.is_empty() {
            return None;
        }
        let now = self.engine.now_ns();
        let mut next: Option<u64> = None;
        for cqn in self.cq_due.clone() {
            let producer = self.engine.cq(cqn).map(|cq| cq.producer);
            let (Some(producer), Some(ctx)) = (producer, self.engine.cq_mut(cqn).map(|e| &mut e.ext)) else {
                self.cq_due.remove(&cqn);
                continue;
            };
            if ctx.arming.expire(producer, now) {
                self.cq_due.remove(&cqn);
                self.comp_event(cqn);
            } else if let Some(d) = ctx.arming.due {
                next = Some(next.map_or(d, |n| n.min(d)));
            } else {
                self.cq_due.remove(&cqn);
            }
        }
        next
    }

    /// Posts the completion EQE of CQ `cqn` to the CQ's EQ.
    fn comp_event(&mut self, cqn: u32) {
        let Some(eqn) = self.engine.cq(cqn).map(|e| &e.ext).map(|cq| cq.eqn) else { return };
        let mut data = [0u8; 28];
        ifc::comp_event::cq_number.set(&mut data, cqn as u64);
        self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_COMP as u8, 0, &data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_index_expands_across_the_24_bit_wrap() {
        assert_eq!(expand_ci(0x0100_0002, 0x00ff_fffe), 0x00ff_fffe);
        assert_eq!(expand_ci(0x0100_0002, 0x0000_0001), 0x0100_0001);
        assert_eq!(expand_ci(0x0100_0002, 0x0000_0002), 0x0100_0002);
        assert_eq!(expand_ci(5, 0x00ff_ffff), 0xffff_ffff);
    }

    /// §4.7: a RoCEv2/IPv4 UD receive on QP1 with a VLAN tag, byte for byte.
    #[test]
    fn roce_gsi_receive_cqe_bytes() {
        use vrnic_engine::verbs::{Completion, WcOpcode, WcStatus};
        let mut c = Completion::new(5, 0x1234, WcOpcode::Recv, WcStatus::Success);
        c.byte_len = 256 + 40;
        c.src_qp = 1;
        c.slid = 7; // an IB field: never on RoCE
        c.grh = true;
        c.net = NetHdr::RoceV2Ipv4;
        c.vlan = Some(0x6064); // PCP 3, VID 100
        let b = completion_cqe(&c, 0x42, true).emit(1);
        let mut want = [0u8; 64];
        want[0x18..0x1c].copy_from_slice(&[0x12, 0, 0, 1]); // g = 1 (bit 28), type 2 (IPv4), src QP 1
        want[0x1c..0x20].copy_from_slice(&[0, 1, 0x60, 0x64]); // VLAN present, TCI
        want[0x20..0x24].copy_from_slice(&[0, 0, 0, 0x42]);
        want[0x24..0x28].copy_from_slice(&[0, 0, 0xff, 0xff]); // P_Key 0xFFFF on QP1
        want[0x2c..0x30].copy_from_slice(&296u32.to_be_bytes());
        want[0x38..0x3c].copy_from_slice(&[0, 0, 0x12, 0x34]);
        want[0x3c..0x3e].copy_from_slice(&[0, 5]);
        want[0x3f] = (op::RESP_SEND << 4) | 1;
        assert_eq!(b, want);

        // IPv6 and RoCEv1 types; no VLAN: bit 0 and vlan_info stay 0; a UD QP keeps its immediate.
        c.vlan = None;
        c.net = NetHdr::RoceV2Ipv6;
        c.imm = Some(0xabcd_0001);
        let b = completion_cqe(&c, 0, false).emit(0);
        assert_eq!(&b[0x18..0x1c], &[0x11, 0, 0, 1]);
        assert_eq!(&b[0x1c..0x20], &[0, 0, 0, 0]);
        assert_eq!(&b[0x24..0x28], &0xabcd_0001u32.to_be_bytes());
        assert_eq!(b[0x3f] >> 4, op::RESP_SEND_IMM);
        c.net = NetHdr::RoceV1;
        assert_eq!(&completion_cqe(&c, 0, false).emit(0)[0x18..0x1c], &[0x10, 0, 0, 1]);

        // An InfiniBand receive is unchanged: SLID, no packet type, QP1 P_Key not forced.
        c.net = NetHdr::Ib;
        c.imm = None;
        let b = completion_cqe(&c, 0, true).emit(0);
        assert_eq!(&b[0x16..0x18], &[0, 7]);
        assert_eq!(&b[0x18..0x1c], &[0x10, 0, 0, 1]);
        assert_eq!(&b[0x24..0x28], &[0; 4]);
    }
}
