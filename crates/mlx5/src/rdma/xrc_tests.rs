//! XRC through the commands and data paths of two devices. B: an XRC domain,
//! an XRC SRQ (CREATE_XRC_SRQ, with a user index, on B's CQ) and an XRC target
//! (`st` XRC, no send queue, no UAR); A: an XRC initiator whose SEND WQE
//! carries the XRC segment. The message lands in the SRQ's buffer; its CQE,
//! on the SRQ's CQ, names the target QP and the SRQ's user index (what
//! libmlx5 looks the SRQ up by). The ISSI 1 SRQ commands answer only for
//! their own kind of SRQ.

use crate::datapath::wqe::{opcode, CTRL_CQ_UPDATE};
use crate::test_support::*;

const SRQ_BUF: u64 = 0x340000;
const SRQ_DBR: u64 = 0x380000;
const RECV_BUF: u64 = 0x3a0000;
const SQ: u64 = QP_BUF + 16 * 16;
const USER_INDEX: u64 = 0x5a5a;

fn xrcd(t: &mut Bench) -> u64 {
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_XRCD, 0, 16), 16);
    ifc::alloc_xrcd_out::xrcd.get(&o)
}

/// An XRC SRQ of 16 WQEs of 32 bytes at SRQ_BUF, completing on `cqn`.
fn xrc_srq(s: &mut Side, xrcd: u64, pd: u64) -> u32 {
    use ifc::create_xrc_srq_in as c;
    use ifc::create_xrc_srq_in::xrc_srq_context_entry as x;
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_XRC_SRQ, 0, c::SIZE + 8);
    x::log_xrc_srq_size.set(&mut i, 4);
    x::log_rq_stride.set(&mut i, 1);
    x::xrcd.set(&mut i, xrcd);
    x::cqn.set(&mut i, s.cqn as u64);
    x::user_index.set(&mut i, USER_INDEX);
    x::pd.set(&mut i, pd);
    ifc::create_srq_in::srq_context_entry::dbr_addr.set(&mut i, SRQ_DBR);
    c::pas.elem(0).set(&mut i, SRQ_BUF);
    let o = s.t.ok(&i, 16);
    ifc::create_xrc_srq_out::xrc_srqn.get(&o) as u32
}

/// The XRC target as mlx5_ib's create_xrc_tgt_qp makes it (its qpc SRQ and CQ are
/// mlx5_ib's own dummies, which the target never uses).
fn target(s: &mut Side, xrcd: u64, dummy_srq: u32) -> u32 {
    use ifc::create_qp_in as c;
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_QP, 0, c::SIZE);
    c::qpc::st.set(&mut i, 3);
    c::qpc::no_sq.set(&mut i, 1);
    c::qpc::rq_type.set(&mut i, 1);
    c::qpc::srqn_rmpn_xrqn.set(&mut i, dummy_srq as u64);
    c::qpc::cqn_rcv.set(&mut i, s.cqn as u64);
    c::qpc::cqn_snd.set(&mut i, s.cqn as u64);
    c::qpc::xrcd.set(&mut i, xrcd);
    c::qpc::user_index.set(&mut i, 0x77);
    let o = s.t.ok(&i, 16);
    ifc::create_qp_out::qpn.get(&o) as u32
}

/// A (LID 1) with an XRC initiator, B (LID 2) with an RC QP the test does not use, unconnected.
fn sides() -> (Arc<vrnic_fabric::InProcNet>, Side, Side) {
    use vrnic_fabric::{Endpoint, InProcNet};
    let eps = [
        Endpoint::v4(1, std::net::Ipv4Addr::new(127, 0, 0, 1)),
        Endpoint::v4(2, std::net::Ipv4Addr::new(127, 0, 0, 2)),
    ];
    let clock = Arc::new(vrnic_sys::clock::MonotonicClock::default());
    let net = InProcNet::new(&eps, &[Default::default(), Default::default()], clock);
    let a = side_at(1, &net, 0, QP_BUF, 3);
    let b = side_at(2, &net, 1, QP_BUF, 0);
    (net, a, b)
}

#[test]
fn xrc_send_lands_in_the_xrc_srq_with_its_user_index() {
    let (net, mut a, mut b) = sides();
    let x = xrcd(&mut b.t);
    let pd = ifc::alloc_pd_out::pd.get(&b.t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16));
    // B's key belongs to another PD: the SRQ's PD (the one the receive is checked against) gets its own key.
    let srqn = xrc_srq(&mut b, x, pd);
    let key = b.t.mkey(pd as u32, &[ifc::create_mkey_in::memory_key_mkey_entry::lw], 0x44);
    let tgt = target(&mut b, x, srqn);
    // Connect A's initiator (side A's QP) to the target, and the target back.
    let ini = a.qpn;
    b.qpn = tgt;
    connect(&mut a, tgt, 2);
    connect(&mut b, ini, 1);
    // One receive WQE: next segment, then a data segment of 64 bytes; the doorbell record counts it.
    let mut w = [0u8; 32];
    w[16..].copy_from_slice(&data_seg(64, key, RECV_BUF));
    b.t.mem.put(SRQ_BUF, &w);
    b.t.mem.put(SRQ_DBR, &1u32.to_be_bytes());
    // A: ctrl, the XRC segment naming the SRQ, one data segment of 24 bytes.
    let msg = b"xrc: to the SRQ of B\0\0\0\0";
    a.t.mem.put(DATA, msg);
    let mut c = ctrl_seg(opcode::SEND, 0, ini, 3);
    c[11] = CTRL_CQ_UPDATE;
    let mut xrc = [0u8; 16];
    xrc[0..4].copy_from_slice(&srqn.to_be_bytes());
    a.t.mem.put(SQ, &c);
    a.t.mem.put(SQ + 16, &xrc);
    a.t.mem.put(SQ + 32, &data_seg(msg.len() as u32, a.key, DATA));
    a.t.mem.put(QP_DBR + 4, &1u32.to_be_bytes());
    a.t.fw.send_doorbell(ini);
    pump(&net, &mut a, &mut b);
    assert_eq!(b.t.mem.get(RECV_BUF, msg.len()), msg);
    let e = b.t.mem.get(b.cq_buf, 64);
    assert_eq!(e[0x3f] >> 4, 2, "RESP_SEND");
    assert_eq!(u32::from_be_bytes(e[0x38..0x3c].try_into().unwrap()) & 0xff_ffff, tgt, "the target QP");
    assert_eq!(u32::from_be_bytes(e[0x20..0x24].try_into().unwrap()) as u64, USER_INDEX, "srqn_uidx");
    assert_eq!(u32::from_be_bytes(e[0x2c..0x30].try_into().unwrap()), msg.len() as u32, "byte_cnt");
    assert_eq!(u16::from_be_bytes(e[0x3c..0x3e].try_into().unwrap()), 0, "wqe_counter: the SRQ WQE");
    let s = a.t.mem.get(a.cq_buf, 64);
    assert_eq!((s[0x3f] >> 4, u32::from_be_bytes(s[0x38..0x3c].try_into().unwrap()) & 0xff_ffff), (0, ini), "REQ");
}

#[test]
fn issi1_srq_commands_answer_for_their_own_kind() {
    let (_net, _a, mut b) = sides();
    let x = xrcd(&mut b.t);
    let pd = ifc::alloc_pd_out::pd.get(&b.t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16));
    let srqn = xrc_srq(&mut b, x, pd);
    // An RMP as mlx5_ib's create_rmp_cmd makes it: linked list, stride 2^5, 16 WQEs.
    use ifc::create_rmp_in::ctx::wq as w;
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_RMP, 0, ifc::create_rmp_in::SIZE + 8);
    ifc::create_rmp_in::ctx::state.set(&mut i, 1);
    w::log_wq_stride.set(&mut i, 5);
    w::log_wq_sz.set(&mut i, 4);
    w::pd.set(&mut i, pd);
    w::lwm.set(&mut i, 3);
    w::dbr_addr.set(&mut i, SRQ_DBR + 64);
    w::pas.elem(0).set(&mut i, SRQ_BUF + 0x8000);
    let rmpn = ifc::create_rmp_out::rmpn.get(&b.t.ok(&i, 16)) as u32;
    // QUERY_RMP: RDY and the watermark; MODIFY_RMP moves the watermark.
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_RMP, 0, 16);
    ifc::query_rmp_in::rmpn.set(&mut q, rmpn as u64);
    let o = b.t.ok(&q, ifc::query_rmp_out::SIZE);
    assert_eq!(ifc::query_rmp_out::rmp_context::state.get(&o), 1);
    assert_eq!(ifc::query_rmp_out::rmp_context::wq::lwm.get(&o), 3);
    let mut m = cmd(ifc::MLX5_CMD_OP_MODIFY_RMP, 0, ifc::modify_rmp_in::SIZE);
    ifc::modify_rmp_in::rmpn.set(&mut m, rmpn as u64);
    ifc::modify_rmp_in::rmp_state.set(&mut m, 1);
    ifc::modify_rmp_in::ctx::state.set(&mut m, 1);
    ifc::modify_rmp_in::bitmask::lwm.set(&mut m, 1);
    ifc::modify_rmp_in::ctx::wq::lwm.set(&mut m, 7);
    b.t.ok(&m, 16);
    assert_eq!(b.t.fw.core.engine.srq(rmpn).unwrap().limit, 7);
    // A watermark beyond the size, or another state, is refused.
    ifc::modify_rmp_in::ctx::wq::lwm.set(&mut m, 16);
    assert_eq!(b.t.status(&m, 16), status::BAD_PARAM);
    // ARM_XRC_SRQ and QUERY_XRC_SRQ on the XRC SRQ.
    let mut arm = cmd(ifc::MLX5_CMD_OP_ARM_XRC_SRQ, 1, ifc::arm_xrc_srq_in::SIZE);
    ifc::arm_xrc_srq_in::xrc_srqn.set(&mut arm, srqn as u64);
    ifc::arm_xrc_srq_in::lwm.set(&mut arm, 2);
    b.t.ok(&arm, 16);
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_XRC_SRQ, 0, 16);
    ifc::query_xrc_srq_in::xrc_srqn.set(&mut q, srqn as u64);
    let o = b.t.ok(&q, ifc::query_xrc_srq_out::SIZE);
    use ifc::query_xrc_srq_out::xrc_srq_context_entry as xc;
    assert_eq!((xc::lwm.get(&o), xc::user_index.get(&o), xc::xrcd.get(&o)), (2, USER_INDEX, x));
    // Each family refuses the other's SRQs (and ISSI 0's QUERY_SRQ/ARM_RQ/DESTROY_SRQ both).
    let mut qx = cmd(ifc::MLX5_CMD_OP_QUERY_XRC_SRQ, 0, 16);
    ifc::query_xrc_srq_in::xrc_srqn.set(&mut qx, rmpn as u64);
    assert_eq!(b.t.status(&qx, ifc::query_xrc_srq_out::SIZE), status::BAD_RES);
    let mut qs = cmd(ifc::MLX5_CMD_OP_QUERY_SRQ, 0, 16);
    ifc::query_srq_in::srqn.set(&mut qs, rmpn as u64);
    assert_eq!(b.t.status(&qs, ifc::query_srq_out::SIZE), status::BAD_RES);
    let mut ds = cmd(ifc::MLX5_CMD_OP_DESTROY_SRQ, 0, 16);
    ifc::destroy_srq_in::srqn.set(&mut ds, srqn as u64);
    assert_eq!(b.t.status(&ds, 16), status::BAD_RES);
    let mut dr = cmd(ifc::MLX5_CMD_OP_DESTROY_RMP, 0, 16);
    ifc::destroy_rmp_in::rmpn.set(&mut dr, srqn as u64);
    assert_eq!(b.t.status(&dr, 16), status::BAD_RES);
    // Destroyed by their own commands.
    ifc::destroy_rmp_in::rmpn.set(&mut dr, rmpn as u64);
    b.t.ok(&dr, 16);
    let mut dx = cmd(ifc::MLX5_CMD_OP_DESTROY_XRC_SRQ, 0, 16);
    ifc::destroy_xrc_srq_in::xrc_srqn.set(&mut dx, srqn as u64);
    b.t.ok(&dx, 16);
    assert_eq!(b.t.fw.core.engine.counts().srqs, 0);
}
