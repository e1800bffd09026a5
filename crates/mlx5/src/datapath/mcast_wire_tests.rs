//! UD multicast on the InfiniBand fabric between two firmwares over an
//! in-process fabric: a send to a multicast LID (with its MGID in the GRH)
//! reaches the QPs attached to the group on the other port and on the
//! sending port (the HCA's loopback), and nothing else; packets without a
//! GRH or to a group nobody here joined are counted drops.

use std::sync::atomic::Ordering::Relaxed;

use crate::datapath::cqe::op;
use crate::test_support::*;

const QKEY: u32 = 0x0b1b;
const MGID: [u8; 16] = [0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
const MLID: u16 = 0xc000;

fn gid0(lid: u16) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[14..].copy_from_slice(&lid.to_be_bytes());
    g
}

/// A UD side in RTS (Q_Key [`QKEY`]) with two 2 KiB receives posted.
fn ud(lid: u16, net: &std::sync::Arc<vrnic_fabric::InProcNet>, index: usize) -> Side {
    use ifc::rst2init_qp_in::qpc as q;
    assert!(net.port(index).set_gid_table(vec![gid0(lid)]));
    let mut s = side_at(lid, net, index, QP_BUF, 2);
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, s.qpn);
    q::q_key.set(&mut i, QKEY as u64);
    q::primary_address_path::vhca_port_num.set(&mut i, 1);
    s.t.ok(&i, 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, s.qpn);
    q::mtu.set(&mut i, 4);
    s.t.ok(&i, 16);
    s.t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, s.qpn), 16);
    s.t.mem.put(QP_BUF, &data_seg(2048, s.key, DATA));
    s.t.mem.put(QP_BUF + 16, &data_seg(2048, s.key, DATA + 0x1000));
    s.t.mem.put(QP_DBR, &2u32.to_be_bytes());
    s
}

fn attach(s: &mut Side, gid: [u8; 16]) {
    let mut a = cmd(ifc::MLX5_CMD_OP_ATTACH_TO_MCG, 0, ifc::attach_to_mcg_in::SIZE);
    ifc::attach_to_mcg_in::qpn.set(&mut a, s.qpn as u64);
    let g = ifc::attach_to_mcg_in::multicast_gid.byte_off();
    a[g..g + 16].copy_from_slice(&gid);
    s.t.ok(&a, 16);
}

/// Posts the WQE at WQEBB `idx` (80 bytes: two WQEBBs): a UD SEND of 64 bytes of `fill` to the multicast QPN at
/// `dlid`, with a GRH to `dgid` when given (`mlx5_av`: grh bit 30, SGID index 0).
fn send(s: &mut Side, idx: u16, dlid: u16, dgid: Option<[u8; 16]>, fill: u8) {
    s.t.mem.put(DATA + 0x8000 + idx as u64 * 0x100, &[fill; 64]);
    let mut w = [0u8; 80];
    w[..16].copy_from_slice(&ctrl_seg(0x0a, idx, s.qpn, 5));
    w[16..20].copy_from_slice(&QKEY.to_be_bytes());
    w[24..28].copy_from_slice(&0x00ff_ffffu32.to_be_bytes());
    w[16 + 0x0e..16 + 0x10].copy_from_slice(&dlid.to_be_bytes());
    if let Some(g) = dgid {
        w[16 + 27] = 1;
        w[16 + 28..16 + 32].copy_from_slice(&(1u32 << 30).to_be_bytes());
        w[16 + 32..16 + 48].copy_from_slice(&g);
    }
    w[64..80].copy_from_slice(&data_seg(64, s.key, DATA + 0x8000 + idx as u64 * 0x100));
    s.t.mem.put(QP_BUF + 16 * 16 + idx as u64 * 64, &w);
    s.t.mem.put(QP_DBR + 4, &(idx as u32 + 2).to_be_bytes());
    s.t.fw.send_doorbell(s.qpn);
}

/// The receive CQE at `slot` of `s`'s CQ, if written: (opcode, QPN, source QP, source LID, GRH flag).
fn recv_cqe(s: &Side, slot: u64) -> Option<(u8, u32, u32, u16, bool)> {
    let e = s.t.mem.get(s.cq_buf + slot * 64, 64);
    if e[0x3f] >> 4 == 0xf {
        return None;
    }
    let be32 = |o: usize| u32::from_be_bytes(e[o..o + 4].try_into().unwrap());
    let slid = u16::from_be_bytes([e[0x16], e[0x17]]);
    Some((e[0x3f] >> 4, be32(0x38) & 0xff_ffff, be32(0x18) & 0xff_ffff, slid, be32(0x18) >> 28 & 1 == 1))
}

/// A's send to MLID 0xC000 reaches B's attached QP (with the GRH: flag in
/// the CQE, MGID in the first 40 bytes of the buffer) and, through the HCA's
/// loopback, A's own attached QP, the sender itself (ipoib drops those by
/// source QP and LID; `block_lb_mc` would stop it).
#[test]
fn multicast_reaches_attached_qps_on_every_port() {
    let net = crate::test_support::two_port_net();
    let (mut a, mut b) = (ud(1, &net, 0), ud(2, &net, 1));
    attach(&mut a, MGID);
    attach(&mut b, MGID);
    send(&mut a, 0, MLID, Some(MGID), 0x5a);
    pump(&net, &mut a, &mut b);
    let sent = a.t.fw.core.engine.qp(a.qpn).map(|q| q.qp_type);
    assert_eq!(sent, Some(vrnic_engine::QpType::Ud));
    let want = |s: &Side| Some((op::RESP_SEND, s.qpn, a.qpn, 1, true));
    assert_eq!(recv_cqe(&b, 0), want(&b), "B's member got it");
    assert_eq!(recv_cqe(&a, 1), want(&a), "A's own member got the loopback copy");
    assert_eq!(b.t.mem.get(DATA + 24, 16), MGID.to_vec(), "the GRH's DGID is the MGID");
    assert_eq!(b.t.mem.get(DATA + 40, 64), vec![0x5a; 64]);
    let c = net.port(0).counters.snapshot();
    assert_eq!((c.tx_mcast_packets, c.tx_packets, c.tx_mcast_no_grh), (1, 2, 0));
    assert_eq!(net.port(1).counters.snapshot().rx_mcast_packets, 1);
    for s in [&a, &b] {
        let ib = &s.t.fw.counters;
        assert_eq!((ib.multicast_rcv.load(Relaxed), ib.mcast_delivered.load(Relaxed)), (1, 1));
        assert_eq!(ib.mcast_drops.load(Relaxed), 0);
    }
}

/// A group B did not join, or one B left (DETACH): the packet arrives and
/// is a counted drop; no CQE. No GRH on a multicast LID: not sent at all.
#[test]
fn multicast_without_member_or_grh_is_dropped_and_counted() {
    let net = crate::test_support::two_port_net();
    let (mut a, mut b) = (ud(1, &net, 0), ud(2, &net, 1));
    attach(&mut b, MGID);
    let mut d = cmd(ifc::MLX5_CMD_OP_DETACH_FROM_MCG, 0, ifc::detach_from_mcg_in::SIZE);
    ifc::detach_from_mcg_in::qpn.set(&mut d, b.qpn as u64);
    let g = ifc::detach_from_mcg_in::multicast_gid.byte_off();
    d[g..g + 16].copy_from_slice(&MGID);
    b.t.ok(&d, 16);
    let mut other = MGID;
    other[15] = 0x01;
    send(&mut a, 0, MLID, Some(MGID), 1);
    send(&mut a, 2, MLID + 1, Some(other), 2);
    send(&mut a, 4, MLID, None, 3);
    pump(&net, &mut a, &mut b);
    assert_eq!(recv_cqe(&b, 0), None);
    let c = net.port(0).counters.snapshot();
    assert_eq!((c.tx_mcast_packets, c.tx_mcast_no_grh), (2, 1));
    assert_eq!(b.t.fw.counters.mcast_drops.load(Relaxed), 2, "B: detached group and unknown group");
    assert_eq!(a.t.fw.counters.mcast_drops.load(Relaxed), 2, "A: its loopback copies, no member");
    assert_eq!(b.t.fw.counters.mcast_delivered.load(Relaxed), 0);
}
