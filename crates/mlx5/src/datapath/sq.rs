//! Send queues: the send-doorbell router over the shared QP number space
//! ([`Firmware::route_send`]: engine QPs, the firmware's own send queues, or
//! an error CQE for a QP without a send path), fetching WQEs at the SQ head
//! as the doorbell record announces them, and handing engine QPs' WQEs to the
//! engine as work requests (`decode_send`).

use tracing::{debug, warn};

use super::cqe::syndrome;
use super::sq_ops;
use super::sq_read::SqHead;
use super::umr;
use super::wqe::{self, CtrlSeg, Payload, Piece};
use crate::core::Core;
use crate::datapath::fw_sq::drain_fw_sq;
use crate::firmware::Firmware;
use vrnic_engine::verbs::{Run, SendWr, UdDest, WcStatus, WrOpcode};
use vrnic_engine::{AddressVector, QpState, QpType};

/// QP types whose send and receive queues the engine runs (QP0/QP1 are the
/// firmware's: `datagram.rs`, `mad_wire.rs`).
pub fn engine_qp(t: QpType) -> bool {
    matches!(t, QpType::Rc | QpType::Uc | QpType::Ud | QpType::XrcInitiator | QpType::XrcTarget)
}

impl Firmware {
    /// Whether QPs of type `t` run through the engine on this port: RC, UC,
    /// UD, and QP1 where it is on the wire (RoCE, [`Firmware::gsi_on_wire`]).
    pub(crate) fn via_engine(&self, t: QpType) -> bool {
        engine_qp(t) || (t == QpType::Gsi && self.port.gsi_on_wire())
    }
}

/// A work request that completes, in order, with LOCAL_QP_OP_ERR (a WQE
/// that cannot be fetched or decoded); the engine moves the QP to ERR.
fn local_qp_op_err(wr_id: u64) -> SendWr {
    let mut wr = SendWr::new(wr_id, WrOpcode::Send, Vec::new());
    wr.local_error = Some(WcStatus::LocQpOpErr);
    wr.signaled = true;
    wr
}

impl Firmware {
    /// A send doorbell for `qpn`: to the engine (RC, UC, UD; QP1 on RoCE),
    /// the firmware's own send queues (QP0/QP1 on InfiniBand, REG_UMR,
    /// Ethernet SQs) or an error CQE.
    pub(super) fn route_send(&mut self, qpn: u32) {
        let Some(qp) = self.core.engine.qp(qpn) else {
            debug!(qpn, "send doorbell for a nonexistent QP ignored");
            return;
        };
        match qp.qp_type {
            // RoCE: QP1's CM MADs are UD packets between hosts.
            QpType::Gsi if self.port.gsi_on_wire() => self.sync_sq(qpn),
            QpType::Smi | QpType::Gsi => self.drain_ud_sq(qpn),
            QpType::RegUmr => self.drain_umr_sq(qpn),
            QpType::RawPacket => self.drain_eth_sq(qpn),
            t if engine_qp(t) => self.sync_sq(qpn),
            _ => self.no_send_path(qpn),
        }
    }

    /// A send doorbell on a QP type the device accepts at CREATE_QP but does
    /// not execute sends for: through the same SQ loop
    /// as the firmware's own QPs, the WQE at the head completes with
    /// LOCAL_QP_OP_ERR and the QP moves to ERR (the rest flush), as for any
    /// WQE the device does not execute.
    fn no_send_path(&mut self, qpn: u32) {
        if self.core.engine.qp(qpn).map(|e| &e.ext).is_some_and(|ctx| ctx.sq_entries == 0) {
            debug!(qpn, "send doorbell on a QP without a send queue ignored");
            return;
        }
        drain_fw_sq(self, qpn, |fw, qpn, _, ctrl| {
            let qp_type = fw.core.engine.qp(qpn).map(|q| q.qp_type);
            warn!(qpn, ?qp_type, opcode = ctrl.opcode, "send WQE on a QP without a send path");
            Err(syndrome::LOCAL_QP_OP_ERR)
        });
    }

    /// Hands the QP's new send WQEs (up to the doorbell record) to the engine.
    pub(super) fn sync_sq(&mut self, qpn: u32) {
        let Some(qp) = self.core.engine.qp(qpn) else { return };
        let (ud, state, qp_type) = (matches!(qp.qp_type, QpType::Ud | QpType::Gsi), qp.state, qp.qp_type);
        if matches!(state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return;
        }
        // The doorbell record is read once: a WQE posted after this read
        // comes with a doorbell of its own, which syncs again.
        let Some(pc) = self.core.engine.qp(qpn).map(|e| &e.ext).and_then(|ctx| Core::sq_producer(&*self.core.mem, ctx))
        else {
            return;
        };
        for _ in 0..=(1u32 << 16) {
            let Some(ctx) = self.core.engine.qp(qpn).map(|e| &e.ext) else { return };
            if ctx.sq_entries == 0 {
                return;
            }
            let (ci, ctrl, first) = match self.core.sq_head_upto(qpn, ctx, pc) {
                SqHead::Empty => return,
                // A WQE fetch that faults is a local QP operation error, as
                // on hardware: an error CQE for that slot and the QP to ERR.
                SqHead::Unreadable { ci } => {
                    let wr = local_qp_op_err(ci as u64);
                    if let Some(ctx) = self.core.engine.qp_mut(qpn).map(|e| &mut e.ext) {
                        ctx.sq_ci = ci.wrapping_add(1);
                    }
                    if let Err(e) = self.core.engine.post_send(qpn, wr) {
                        warn!(qpn, "post_send: {e}");
                    }
                    return;
                }
                // Its CQE names the slot (wqe_counter = ci), where the driver
                // finds its wr_id; the QP moves to ERR.
                SqHead::BadIndex { ci, opcode } => {
                    let wr = local_qp_op_err(((opcode as u64) << 32) | ci as u64);
                    if let Some(ctx) = self.core.engine.qp_mut(qpn).map(|e| &mut e.ext) {
                        ctx.sq_ci = ci.wrapping_add(1);
                    }
                    if let Err(e) = self.core.engine.post_send(qpn, wr) {
                        warn!(qpn, "post_send: {e}");
                    }
                    // What the doorbell announced behind it flushes in order.
                    continue;
                }
                SqHead::Ready { ci, ctrl, first } => (ci, ctrl, first),
            };
            let nbb = ctrl.wqebbs();
            let w = (nbb <= wqe::MAX_WQEBBS && ctrl.ds > 0).then(|| self.core.sq_wqe(ctx, ci, nbb, first)).flatten();
            let wr = match w {
                // fast registration (REG_MR, LOCAL_INV): UMR on an RC QP
                Some(w) if ctrl.opcode == umr::OPCODE_UMR && qp_type == QpType::Rc => self.umr_on_qp(qpn, &w, &ctrl),
                Some(w) => self.decode_send(qpn, qp_type, &w, &ctrl, ud),
                None => {
                    warn!(
                        qpn,
                        opcode = ctrl.opcode,
                        wqe = ctrl.wqe_index,
                        ds = ctrl.ds,
                        "send WQE of a bad size or unreadable"
                    );
                    local_qp_op_err(ctrl.send_wr_id())
                }
            };
            if let Some(ctx) = self.core.engine.qp_mut(qpn).map(|e| &mut e.ext) {
                ctx.sq_ci = ci.wrapping_add(nbb as u16);
            }
            if let Err(e) = self.core.engine.post_send(qpn, wr) {
                warn!(qpn, "post_send: {e}");
            }
        }
    }

    /// A send WQE as an engine work request. A WQE the device does not
    /// execute (opcode, opmod, fence mode: [`sq_ops::classify`]) or cannot
    /// decode becomes a WR that fails in order with LOCAL_QP_OP_ERR.
    fn decode_send(&self, qpn: u32, qp_type: QpType, w: &[u8], ctrl: &CtrlSeg, ud: bool) -> SendWr {
        let bad = || local_qp_op_err(ctrl.send_wr_id());
        let op = match sq_ops::classify(qp_type, ctrl) {
            Ok(WrOpcode::Nop) => {
                let mut wr = SendWr::new(ctrl.send_wr_id(), WrOpcode::Nop, Vec::new());
                wr.signaled = ctrl.signaled();
                return wr;
            }
            Ok(op) => op,
            Err(e) => {
                warn!(qpn, opcode = ctrl.opcode, wqe = ctrl.wqe_index, "send WQE not executed: {e}");
                return bad();
            }
        };
        let parsed = if qp_type == QpType::XrcInitiator { wqe::parse_send_xrc(w) } else { wqe::parse_send(w, ud) };
        let Ok(s) = parsed else {
            warn!(qpn, opcode = ctrl.opcode, wqe = ctrl.wqe_index, ds = ctrl.ds, "malformed send WQE");
            return bad();
        };
        let mut wr = SendWr::new(ctrl.send_wr_id(), op, Vec::new());
        send_data(s.payload, &mut wr);
        wr.signaled = ctrl.signaled();
        wr.solicited = ctrl.solicited();
        wr.fence = ctrl.fm_ce_se & 0xe0 != 0;
        match op {
            WrOpcode::SendImm | WrOpcode::WriteImm => wr.imm = ctrl.imm,
            WrOpcode::SendInv => wr.invalidate_rkey = ctrl.imm,
            _ => {}
        }
        if let Some(r) = s.raddr {
            wr.remote_addr = r.raddr;
            wr.rkey = r.rkey;
        }
        wr.xrc_srqn = s.xrc_srqn.unwrap_or(0);
        if let Some(a) = s.atomic {
            wr.swap_add = a.swap_add;
            wr.compare = a.compare;
        }
        if let Some(av) = s.av {
            wr.ud = Some(UdDest { av: ud_av(&av), remote_qpn: av.dqpn, remote_qkey: av.qkey });
        }
        wr
    }
}

/// The engine's address vector of a UD WQE's datagram segment.
pub(crate) fn ud_av(av: &wqe::DatagramSeg) -> AddressVector {
    AddressVector {
        dlid: av.rlid,
        sl: av.sl,
        src_path_bits: av.src_path_bits,
        static_rate: av.stat_rate,
        grh: av.grh,
        sgid_index: av.sgid_index,
        hop_limit: av.hop_limit,
        traffic_class: av.tclass,
        flow_label: av.flow_label,
        dgid: av.rgid,
        port: 1,
        dmac: av.rmac,
        udp_sport: av.udp_sport,
        pcp: av.pcp,
    }
}

/// Puts a WQE's data and inline segments into `wr` (`sgl`, `inline` and,
/// only where they interleave beyond an inline header, `order`).
fn send_data(p: Payload, wr: &mut SendWr) {
    let mut pieces = p.0;
    if let [Piece::Inline(_)] = pieces.as_slice() {
        if let Some(Piece::Inline(d)) = pieces.pop() {
            wr.inline = Some(d);
        }
        return;
    }
    if !pieces.iter().any(|p| matches!(p, Piece::Inline(_))) {
        wr.sgl = pieces.into_iter().filter_map(|p| if let Piece::Sge(g) = p { Some(g) } else { None }).collect();
        return;
    }
    wr.sgl.reserve(pieces.len());
    let mut order: Vec<Run> = Vec::new();
    let mut inline: Option<Vec<u8>> = None;
    for piece in pieces {
        match piece {
            Piece::Sge(g) => {
                wr.sgl.push(g);
                match order.last_mut() {
                    Some(Run::Sges(n)) => *n += 1,
                    _ => order.push(Run::Sges(1)),
                }
            }
            Piece::Inline(d) => {
                inline.get_or_insert_with(Vec::new).extend_from_slice(&d);
                match order.last_mut() {
                    Some(Run::Inline(n)) => *n += d.len() as u32,
                    _ => order.push(Run::Inline(d.len() as u32)),
                }
            }
        }
    }
    // Inline data first, then the SGL (or no inline at all): the default order.
    if inline.is_some() && !matches!(order.as_slice(), [Run::Inline(_)] | [Run::Inline(_), Run::Sges(_)]) {
        wr.order = order;
    }
    wr.inline = inline;
}
