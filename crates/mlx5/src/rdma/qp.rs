//! QP commands: CREATE/DESTROY/QUERY_QP, every state transition, multicast.
//!
//! The firmware keeps the QP context (qpc) as created and latches into it, on
//! each transition, only the fields that transition carries (by QP type) plus
//! those its `opt_param_mask` selects: the driver sends a freshly zeroed qpc
//! with just this transition's attributes. The engine's QP attributes are
//! derived from the latched qpc; QUERY_QP reports the latched qpc with the
//! engine's true state.

use super::state::QpCtx;
use crate::cmd::req::{eng, fail, out, CmdErr, CmdResult, Req};
use crate::cmd::status;
use crate::cmd::syndrome;
use crate::devx::umem::{Placing, QueueBuf};
use crate::fields::Field;
use crate::ifc::{self, qpc, rdma_core};
use crate::queue_buf::{page_offset_bytes, pages_for};
use crate::rdma::RdmaCx;
use vrnic_engine::{Access, AddressVector, Mtu, QpAttrUpdate, QpCreate, QpState, QpTransition, QpType};

/// `qpc.st` values.
pub const ST_RC: u8 = 0x0;
pub const ST_UC: u8 = 0x1;
pub const ST_UD: u8 = 0x2;
pub const ST_XRC: u8 = 0x3;
pub const ST_QP0: u8 = 0x7;
pub const ST_QP1: u8 = 0x8;
pub const ST_REG_UMR: u8 = 0xc;

/// `qpc.rq_type`.
const RQ_REGULAR: u64 = 0;
const RQ_SRQ: u64 = 1;
const RQ_ZERO: u64 = 3;

fn qp_type(st: u8) -> Option<QpType> {
    Some(match st {
        ST_RC => QpType::Rc,
        ST_UC => QpType::Uc,
        ST_UD => QpType::Ud,
        ST_XRC => QpType::XrcInitiator,
        ST_QP0 => QpType::Smi,
        ST_QP1 => QpType::Gsi,
        ST_REG_UMR => QpType::RegUmr,
        _ => return None,
    })
}

/// The qpc of a command input (`*_qp_in.qpc` sits at the same place in all of them).
fn input_qpc(r: &Req<'_>) -> Result<Vec<u8>, CmdErr> {
    r.sub(ifc::create_qp_in::qpc)
}

pub fn create_qp(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(ifc::create_qp_in::SIZE)?;
    if r.get(ifc::create_qp_in::input_qpn) != 0 || r.get(ifc::create_qp_in::qpc_ext) != 0 {
        return Err(fail!(status::BAD_PARAM, CREATE_QP_BAD_PARAM));
    }
    let c = input_qpc(r)?;
    let st = qpc::st.get(&c) as u8;
    let log_rq_size = qpc::log_rq_size.get(&c) as u8;
    let rq_stride = 16usize << qpc::log_rq_stride.get(&c);
    let no_sq = qpc::no_sq.get_bool(&c);
    // Both ends of XRC are `st` XRC: the target is the one without a send queue (mlx5_ib's
    // create_xrc_tgt_qp sets no_sq, no UAR, and its own PD, CQ and SRQ, none of which it uses).
    let qp_type = match qp_type(st).ok_or(fail!(status::BAD_PARAM, CREATE_QP_BAD_PARAM_2))? {
        QpType::XrcInitiator if no_sq => QpType::XrcTarget,
        t => t,
    };
    let log_sq_size = qpc::log_sq_size.get(&c) as u8;
    let rq_type = qpc::rq_type.get(&c);
    let log_page_size = qpc::log_page_size.get(&c) as u8;
    if log_page_size > 18 || !matches!(rq_type, RQ_REGULAR | RQ_SRQ | RQ_ZERO) {
        return Err(fail!(status::BAD_PARAM, CREATE_QP_BAD_PARAM_3));
    }
    let page_offset = page_offset_bytes(qpc::page_offset.get(&c), log_page_size);
    let uar = qpc::uar_page.get(&c) as u32;
    if !cx.hca.uar_allocated(uar) && !matches!(qp_type, QpType::RegUmr | QpType::XrcTarget) {
        return Err(fail!(status::BAD_RES, CREATE_QP_BAD_RES));
    }
    let rq_entries = if rq_type == RQ_REGULAR { 1u32 << log_rq_size } else { 0 };
    let sq_entries = if no_sq { 0 } else { 1u32 << log_sq_size };
    let bytes = rq_entries as u64 * rq_stride as u64 + sq_entries as u64 * 64;
    // The buffer and the doorbell record: in the mailbox, or (DevX) in the process's umems.
    let mut place = Placing::new(cx.umems, r.uid, syndrome::CREATE_QP_UMEM, syndrome::CREATE_QP_UMEM_RANGE);
    let in_umem = r.get(ifc::create_qp_in::wq_umem_valid) != 0 && bytes != 0;
    let at = (r.get(ifc::create_qp_in::wq_umem_id) as u32, r.get(ifc::create_qp_in::wq_umem_offset));
    let QueueBuf { pas, log_page_size, page_offset } = place.queue(in_umem, at, bytes, false, || {
        let npages = if bytes == 0 { 0 } else { pages_for(bytes, log_page_size, page_offset) };
        Ok(QueueBuf { pas: r.pas(ifc::create_qp_in::pas, npages)?, log_page_size, page_offset })
    })?;
    let (in_umem, id) = (qpc::dbr_umem_valid.get(&c) != 0, r.get(rdma_core::create_qp_in::dbr_umem_id) as u32);
    let dbr_addr = place.dbr(in_umem, id, qpc::dbr_addr.get(&c), false)?;
    let umems = place.held;
    let srq = (rq_type == RQ_SRQ).then(|| qpc::srqn_rmpn_xrqn.get(&c) as u32);
    // Only a target belongs to its XRC domain (mlx5_ib gives initiators and every other QP a
    // domain of its own, xrcdn0/1, that nothing uses).
    let xrcd = (qp_type == QpType::XrcTarget).then(|| qpc::xrcd.get(&c) as u32);
    let cq = |v: u64| (v != 0).then_some(v as u32);
    let create = QpCreate {
        qp_type,
        pd: qpc::pd.get(&c) as u32,
        send_cq: cq(qpc::cqn_snd.get(&c)),
        recv_cq: cq(qpc::cqn_rcv.get(&c)),
        srq,
        xrcd,
        log_sq_size: if no_sq { 0 } else { log_sq_size },
        log_rq_size: if rq_type == RQ_REGULAR { log_rq_size } else { 0 },
        sq_sig_all: false,
        uid: r.uid,
    };
    let mut stored = c.clone();
    qpc::state.set(&mut stored, 0);
    let ctx = QpCtx {
        uar,
        created: stored.clone(),
        qpc: stored,
        pas,
        st,
        user_index: qpc::user_index.get(&c) as u32,
        dbr_addr,
        log_page_size,
        page_offset,
        rq_stride,
        rq_entries,
        sq_entries,
        mcast: Default::default(),
        sq_ci: 0,
        rq_ci: 0,
        rq_flush_until: 0,
        umems,
    };
    let qpn = eng!(cx.core.engine.create_qp_with(create, ctx), CREATE_QP_ENGINE)?;
    let mut o = out(ifc::create_qp_out::SIZE);
    ifc::create_qp_out::qpn.set(&mut o, qpn as u64);
    Ok(o)
}

pub fn destroy_qp(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let qpn = r.get(ifc::destroy_qp_in::qpn) as u32;
    // Its counter set keeps what it counted (the engine's destroy only fails for a QP that is not there).
    cx.retire_counters(qpn);
    eng!(cx.core.engine.destroy_qp(qpn), DESTROY_QP_ENGINE)?;
    Ok(out(ifc::destroy_qp_out::SIZE))
}

use qpc::primary_address_path as pap;

/// Address-vector fields of the primary path (IB_QP_AV).
const AV: &[Field] = &[
    pap::fl,
    pap::free_ar,
    pap::grh,
    pap::mlid,
    pap::rlid,
    pap::src_addr_index,
    pap::stat_rate,
    pap::hop_limit,
    pap::tclass,
    pap::flow_label,
    pap::rgid_rip,
    pap::sl,
    // RoCE: the L2/UDP part of the path.
    pap::rmac_47_32,
    pap::rmac_31_0,
    pap::udp_sport,
    pap::eth_prio,
    pap::dscp,
];
const ACCESS: &[Field] = &[qpc::rre, qpc::rwe, qpc::rae, qpc::atomic_mode];
const MTU: &[Field] = &[qpc::mtu, qpc::log_msg_max];

/// Fields each `MLX5_QP_OPTPAR_*` bit selects.
fn optpar_fields(bit: u32) -> &'static [Field] {
    const PKEY: &[Field] = &[pap::pkey_index];
    const QKEY: &[Field] = &[qpc::q_key];
    const RNR: &[Field] = &[qpc::min_rnr_nak];
    const SRA: &[Field] = &[qpc::log_sra_max];
    const RRA: &[Field] = &[qpc::log_rra_max];
    const PM: &[Field] = &[qpc::pm_state];
    const RETRY: &[Field] = &[qpc::retry_count];
    const RNR_RETRY: &[Field] = &[qpc::rnr_retry];
    const ACK: &[Field] = &[pap::ack_timeout];
    const PORT: &[Field] = &[pap::vhca_port_num];
    const LAG: &[Field] = &[qpc::lag_tx_port_affinity];
    const SRQN: &[Field] = &[qpc::srqn_rmpn_xrqn];
    const CQN_RCV: &[Field] = &[qpc::cqn_rcv];
    const COUNTER: &[Field] = &[qpc::counter_set_id];
    const ALT: &[Field] = &[qpc::secondary_address_path];
    match 1u32 << bit {
        ifc::MLX5_QP_OPTPAR_ALT_ADDR_PATH => ALT,
        ifc::MLX5_QP_OPTPAR_RRE => &[qpc::rre],
        ifc::MLX5_QP_OPTPAR_RAE => &[qpc::rae, qpc::atomic_mode],
        ifc::MLX5_QP_OPTPAR_RWE => &[qpc::rwe],
        ifc::MLX5_QP_OPTPAR_PKEY_INDEX => PKEY,
        ifc::MLX5_QP_OPTPAR_Q_KEY => QKEY,
        ifc::MLX5_QP_OPTPAR_RNR_TIMEOUT => RNR,
        // The whole primary path; its ack_timeout is latched beside it.
        ifc::MLX5_QP_OPTPAR_PRIMARY_ADDR_PATH => AV,
        ifc::MLX5_QP_OPTPAR_SRA_MAX => SRA,
        ifc::MLX5_QP_OPTPAR_RRA_MAX => RRA,
        ifc::MLX5_QP_OPTPAR_PM_STATE => PM,
        ifc::MLX5_QP_OPTPAR_RETRY_COUNT => RETRY,
        ifc::MLX5_QP_OPTPAR_RNR_RETRY => RNR_RETRY,
        ifc::MLX5_QP_OPTPAR_ACK_TIMEOUT => ACK,
        ifc::MLX5_QP_OPTPAR_LAG_TX_AFF => LAG,
        ifc::MLX5_QP_OPTPAR_PRI_PORT => PORT,
        ifc::MLX5_QP_OPTPAR_SRQN => SRQN,
        ifc::MLX5_QP_OPTPAR_CQN_RCV => CQN_RCV,
        ifc::MLX5_QP_OPTPAR_COUNTER_SET_ID => COUNTER,
        _ => &[],
    }
}

/// Fields a transition always carries, by QP type.
fn required_fields(t: QpTransition, st: u8) -> Vec<Field> {
    let connected = matches!(st, ST_RC | ST_UC | ST_XRC);
    let reliable = matches!(st, ST_RC | ST_XRC);
    let datagram = matches!(st, ST_UD | ST_QP0 | ST_QP1);
    let mut v: Vec<Field> = Vec::new();
    match t {
        QpTransition::RstToInit => {
            v.extend([qpc::pm_state, pap::pkey_index, pap::vhca_port_num, qpc::counter_set_id, qpc::dbr_addr]);
            if connected {
                v.extend_from_slice(ACCESS);
            }
            if datagram {
                v.push(qpc::q_key);
            }
        }
        QpTransition::InitToRtr => {
            if connected {
                v.extend_from_slice(AV);
                v.extend_from_slice(MTU);
                v.extend([qpc::remote_qpn, qpc::next_rcv_psn]);
            }
            if reliable {
                v.extend([qpc::log_rra_max, qpc::min_rnr_nak]);
            }
        }
        QpTransition::RtrToRts => {
            v.push(qpc::next_send_psn);
            if reliable {
                v.extend([qpc::retry_count, qpc::rnr_retry, qpc::log_sra_max, pap::ack_timeout]);
            }
        }
        _ => {}
    }
    // The driver re-sends the datagram MTU on every transition of UD/special QPs.
    if datagram && !matches!(t, QpTransition::ToErr | QpTransition::ToRst) {
        v.extend_from_slice(MTU);
    }
    v
}

fn transition(opcode: u16) -> Option<QpTransition> {
    Some(match opcode as u32 {
        ifc::MLX5_CMD_OP_RST2INIT_QP => QpTransition::RstToInit,
        ifc::MLX5_CMD_OP_INIT2INIT_QP => QpTransition::InitToInit,
        ifc::MLX5_CMD_OP_INIT2RTR_QP => QpTransition::InitToRtr,
        ifc::MLX5_CMD_OP_RTR2RTS_QP => QpTransition::RtrToRts,
        ifc::MLX5_CMD_OP_RTS2RTS_QP => QpTransition::RtsToRts,
        ifc::MLX5_CMD_OP_SQERR2RTS_QP => QpTransition::SqerrToRts,
        ifc::MLX5_CMD_OP_SQD_RTS_QP => QpTransition::SqdToRts,
        ifc::MLX5_CMD_OP_2ERR_QP => QpTransition::ToErr,
        ifc::MLX5_CMD_OP_2RST_QP => QpTransition::ToRst,
        _ => return None,
    })
}

/// Copies field `f` from `src` to `dst` (both qpc images).
fn latch(dst: &mut [u8], src: &[u8], f: Field) {
    if f.bits > 64 {
        if let (Some(s), Some(d)) = (f.bytes(src), f.byte_range()) {
            let s = s.to_vec();
            if let Some(d) = dst.get_mut(d) {
                d.copy_from_slice(&s);
            }
        }
    } else {
        f.set(dst, f.get(src));
    }
}

/// A MAC from its `_47_32` and `_31_0` halves.
fn mac48(hi: u64, lo: u64) -> [u8; 6] {
    let m = (hi & 0xffff) << 32 | (lo & 0xffff_ffff);
    let b = m.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// The engine attributes a latched qpc describes.
fn attrs_of(c: &[u8]) -> QpAttrUpdate {
    let mut access = Access::LOCAL_WRITE;
    if qpc::rre.get_bool(c) {
        access = access | Access::REMOTE_READ;
    }
    if qpc::rwe.get_bool(c) {
        access = access | Access::REMOTE_WRITE;
    }
    if qpc::rae.get_bool(c) {
        access = access | Access::REMOTE_ATOMIC;
    }
    let mut dgid = [0u8; 16];
    if let Some(g) = pap::rgid_rip.bytes(c) {
        dgid.copy_from_slice(&g[..16]);
    }
    let av = AddressVector {
        dlid: pap::rlid.get(c) as u16,
        sl: pap::sl.get(c) as u8,
        src_path_bits: pap::mlid.get(c) as u8,
        static_rate: pap::stat_rate.get(c) as u8,
        grh: pap::grh.get_bool(c),
        sgid_index: pap::src_addr_index.get(c) as u8,
        hop_limit: pap::hop_limit.get(c) as u8,
        traffic_class: pap::tclass.get(c) as u8,
        flow_label: pap::flow_label.get(c) as u32,
        dgid,
        port: pap::vhca_port_num.get(c) as u8,
        dmac: mac48(pap::rmac_47_32.get(c), pap::rmac_31_0.get(c)),
        udp_sport: pap::udp_sport.get(c) as u16,
        pcp: pap::eth_prio.get(c) as u8,
    };
    let log2 = |v: u64| (1u64 << v).min(255) as u8;
    QpAttrUpdate {
        pkey_index: Some(pap::pkey_index.get(c) as u16),
        port: Some(pap::vhca_port_num.get(c).max(1) as u8),
        qkey: Some(qpc::q_key.get(c) as u32),
        access: Some(access),
        path_mtu: Mtu::from_ib_enum(qpc::mtu.get(c) as u8),
        dest_qpn: Some(qpc::remote_qpn.get(c) as u32),
        rq_psn: Some(qpc::next_rcv_psn.get(c) as u32),
        sq_psn: Some(qpc::next_send_psn.get(c) as u32),
        timeout: Some(pap::ack_timeout.get(c) as u8),
        retry_cnt: Some(qpc::retry_count.get(c) as u8),
        rnr_retry: Some(qpc::rnr_retry.get(c) as u8),
        min_rnr_timer: Some(qpc::min_rnr_nak.get(c) as u8),
        max_rd_atomic: Some(log2(qpc::log_sra_max.get(c))),
        max_dest_rd_atomic: Some(log2(qpc::log_rra_max.get(c))),
        av: Some(av),
    }
}

pub fn modify_qp(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    let t = transition(r.opcode).ok_or(fail!(status::BAD_OP, MODIFY_QP_BAD_OP))?;
    let qpn = r.get(ifc::rst2init_qp_in::qpn) as u32;
    let ctx = cx.core.engine.qp(qpn).map(|e| &e.ext).ok_or(fail!(status::BAD_RES, MODIFY_QP_BAD_RES))?;
    let mut next = match t {
        QpTransition::ToRst => ctx.created.clone(),
        _ => ctx.qpc.clone(),
    };
    if !matches!(t, QpTransition::ToErr | QpTransition::ToRst) {
        r.need(ifc::rst2init_qp_in::SIZE)?;
        let input = input_qpc(r)?;
        for f in required_fields(t, ctx.st) {
            latch(&mut next, &input, f);
        }
        let mask = r.get(ifc::rst2init_qp_in::opt_param_mask) as u32;
        for bit in 0..32 {
            if mask & (1 << bit) != 0 {
                for &f in optpar_fields(bit) {
                    latch(&mut next, &input, f);
                }
                if 1u32 << bit == ifc::MLX5_QP_OPTPAR_PRIMARY_ADDR_PATH {
                    latch(&mut next, &input, pap::ack_timeout);
                }
            }
        }
        if qpc::mtu.get(&next) > 5 || pap::vhca_port_num.get(&next) > 1 {
            return Err(fail!(status::BAD_PARAM, MODIFY_QP_BAD_PARAM));
        }
        // The source GID (RoCE: source IP, MAC, VLAN and frame format) must be a table entry.
        if pap::src_addr_index.get(&next) as usize >= cx.gid_table_len() {
            return Err(fail!(status::BAD_PARAM, MODIFY_QP_BAD_SRC_ADDR_INDEX));
        }
    }
    if t == QpTransition::ToRst {
        // The engine's counters of the QP start again: its Q counter set keeps them.
        cx.retire_counters(qpn);
    }
    let update = if t == QpTransition::ToRst { QpAttrUpdate::default() } else { attrs_of(&next) };
    let state = eng!(cx.core.engine.modify_qp(qpn, t, &update), MODIFY_QP_ENGINE)?;
    qpc::state.set(&mut next, state_code(state) as u64);
    if let Some(ctx) = cx.core.engine.qp_mut(qpn).map(|e| &mut e.ext) {
        ctx.qpc = next;
        if t == QpTransition::ToRst {
            ctx.sq_ci = 0;
            ctx.rq_ci = 0;
            ctx.rq_flush_until = 0;
        }
    }
    if t == QpTransition::ToErr {
        // The engine flushed what it held; the work still only in guest memory completes with
        // WR_FLUSH_ERR, in order, when the command returns (the data path's guard), as do the
        // completions of every other transition.
        cx.core.entered_err.push(qpn);
    }
    // Every *_qp_out is the 16-byte header.
    Ok(out(16))
}

/// `qpc.state` encoding.
pub fn state_code(s: QpState) -> u8 {
    match s {
        QpState::Reset => 0,
        QpState::Init => 1,
        QpState::Rtr => 2,
        QpState::Rts => 3,
        QpState::Sqe => 4,
        QpState::Sqd => 5,
        QpState::Err => 6,
    }
}

pub fn query_qp(cx: &mut RdmaCx<'_>, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::query_qp_in::qpc_ext) != 0 {
        return Err(fail!(status::BAD_PARAM, QUERY_QP_BAD_PARAM));
    }
    let qpn = r.get(ifc::query_qp_in::qpn) as u32;
    let ctx = cx.core.engine.qp(qpn).map(|e| &e.ext).ok_or(fail!(status::BAD_RES, QUERY_QP_BAD_RES))?;
    let qp = cx.core.engine.qp(qpn).ok_or(fail!(status::BAD_RES, QUERY_QP_BAD_RES_2))?;
    let mut c = ctx.qpc.clone();
    qpc::state.set(&mut c, state_code(qp.state) as u64);
    qpc::next_send_psn.set(&mut c, qp.attrs.sq_psn as u64);
    qpc::next_rcv_psn.set(&mut c, qp.attrs.rq_psn as u64);
    let mut o = out(ifc::query_qp_out::SIZE);
    let range = ifc::query_qp_out::qpc.byte_range().ok_or(fail!(status::INT_ERR, QUERY_QP_INT_ERR))?;
    o[range].copy_from_slice(&c);
    Ok(o)
}
