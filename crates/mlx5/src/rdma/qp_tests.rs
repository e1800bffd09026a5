//! Firmware tests, QP commands and the IB port: transitions and their
//! latched fields, UD Q_Keys, MAD_IFC, the QP1 MAD loopback, port events
//! and PerfMgt counters.

use crate::test_support::*;

#[test]
fn qp_transitions_latch_only_their_fields() {
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::new();
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    let cqn = t.cq(uar, eqn, 0x120000);
    let qpn = t.qp(0, pd, uar, cqn);

    let query = |t: &mut Bench| {
        let mut i = cmd(ifc::MLX5_CMD_OP_QUERY_QP, 0, 16);
        ifc::query_qp_in::qpn.set(&mut i, qpn as u64);
        t.ok(&i, ifc::query_qp_out::SIZE)
    };
    use ifc::query_qp_out::qpc as o;
    assert_eq!(o::state.get(&query(&mut t)), 0, "RESET after create");
    // Illegal: INIT2RTR from RESET.
    assert_eq!(t.status(&transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn), 16), status::BAD_QP_STATE);

    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::rre.set(&mut i, 1);
    q::rwe.set(&mut i, 1);
    q::primary_address_path::vhca_port_num.set(&mut i, 1);
    q::next_send_psn.set(&mut i, 0x999); // not an RST2INIT field
    t.ok(&i, 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn);
    q::mtu.set(&mut i, 3);
    q::remote_qpn.set(&mut i, 0x345);
    q::next_rcv_psn.set(&mut i, 0x1234);
    q::primary_address_path::rlid.set(&mut i, 9);
    q::min_rnr_nak.set(&mut i, 12);
    q::retry_count.set(&mut i, 6); // belongs to RTR2RTS: ignored here
    t.ok(&i, 16);
    let r = query(&mut t);
    assert_eq!(o::state.get(&r), 2);
    assert_eq!((o::remote_qpn.get(&r), o::next_rcv_psn.get(&r), o::mtu.get(&r)), (0x345, 0x1234, 3));
    assert_eq!(o::primary_address_path::rlid.get(&r), 9);
    assert_eq!(o::retry_count.get(&r), 0, "RTR2RTS field not latched by INIT2RTR");
    assert_eq!(o::next_send_psn.get(&r), 0, "RTR2RTS field not latched by RST2INIT");
    assert_eq!((o::rre.get(&r), o::rwe.get(&r), o::rae.get(&r)), (1, 1, 0));

    let mut i = transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, qpn);
    q::next_send_psn.set(&mut i, 0x777);
    q::retry_count.set(&mut i, 7);
    q::rnr_retry.set(&mut i, 7);
    q::primary_address_path::ack_timeout.set(&mut i, 14);
    q::remote_qpn.set(&mut i, 0x1); // not an RTR2RTS field
    t.ok(&i, 16);
    let qp = t.fw.core.engine.qp(qpn).unwrap();
    assert_eq!(qp.state, QpState::Rts);
    assert_eq!(
        (qp.attrs.sq_psn, qp.attrs.retry_cnt, qp.attrs.rnr_retry, qp.attrs.timeout, qp.attrs.dest_qpn),
        (0x777, 7, 7, 14, 0x345)
    );
    assert_eq!(qp.attrs.av.dlid, 9);
    // RTS2RTS: only what opt_param_mask selects.
    let mut i = transition_in(ifc::MLX5_CMD_OP_RTS2RTS_QP, qpn);
    ifc::rts2rts_qp_in::opt_param_mask.set(&mut i, ifc::MLX5_QP_OPTPAR_RAE as u64);
    q::rae.set(&mut i, 1);
    q::rre.set(&mut i, 0); // RRE not selected: stays 1
    t.ok(&i, 16);
    let r = query(&mut t);
    assert_eq!((o::rre.get(&r), o::rae.get(&r), o::state.get(&r)), (1, 1, 3));
    // To ERR from anywhere, to RESET restores the created context.
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2ERR_QP, qpn), 16);
    assert_eq!(o::state.get(&query(&mut t)), 6);
    assert_eq!(t.status(&transition_in(ifc::MLX5_CMD_OP_RTS2RTS_QP, qpn), 16), status::BAD_QP_STATE);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, qpn), 16);
    let r = query(&mut t);
    assert_eq!((o::state.get(&r), o::remote_qpn.get(&r), o::user_index.get(&r)), (0, 0, 0x77));
    // A nonexistent QP.
    assert_eq!(t.status(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, 0xabcd), 16), status::BAD_RES);
}

#[test]
fn ud_qkey_and_mad_ifc() {
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::new();
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    let cqn = t.cq(uar, eqn, 0x120000);
    let qpn = t.qp(8, pd, uar, cqn); // QP1
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::q_key.set(&mut i, 0x8001_0000);
    q::mtu.set(&mut i, 1);
    t.ok(&i, 16);
    assert_eq!(t.fw.core.engine.qp(qpn).unwrap().attrs.qkey, 0x8001_0000);
    // MAD_IFC NodeInfo through the command.
    let mut m = cmd(ifc::MLX5_CMD_OP_MAD_IFC, 3, ifc::mad_ifc_in::SIZE);
    ifc::mad_ifc_in::port.set(&mut m, 1);
    let mad = ifc::mad_ifc_in::mad.byte_range().unwrap();
    m[mad.start] = 1;
    m[mad.start + 1] = 1;
    m[mad.start + 2] = 1;
    m[mad.start + 3] = 1;
    m[mad.start + 16..mad.start + 18].copy_from_slice(&0x11u16.to_be_bytes());
    let o = t.ok(&m, ifc::mad_ifc_out::SIZE);
    let resp = ifc::mad_ifc_out::response_mad_packet.byte_range().unwrap();
    assert_eq!(o[resp.start + 3], 0x81, "GetResp");
    assert_eq!(&o[resp.start + 64 + 12..resp.start + 64 + 20], &0x1111u64.to_be_bytes(), "node GUID");
    ifc::mad_ifc_in::port.set(&mut m, 2);
    assert_eq!(t.status(&m, ifc::mad_ifc_out::SIZE), status::BAD_PARAM);
}

#[test]
fn qp1_mad_loopback_and_flush() {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::new();
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    // The kernel's PD-wide DMA key: PA mode, whole address space.
    let lkey = t.mkey(pd, &[m::lr, m::lw], 0x11);
    let cq_buf = 0x120000u64;
    let cqn = t.cq(uar, eqn, cq_buf);
    // QP1 with its buffer at 0x200000 (RQ 16 x 16 B, then SQ 16 x 64 B), dbr at 0x280000.
    let qpn = t.qp_with(8, pd, uar, cqn, 0x200000, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, 0x280000));
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::q_key.set(&mut i, 0x8001_0000);
    q::mtu.set(&mut i, 1);
    t.ok(&i, 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn), 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, qpn), 16);
    // One receive: 296 bytes at 0x300000.
    let mut rwqe = [0u8; 16];
    rwqe[0..4].copy_from_slice(&296u32.to_be_bytes());
    rwqe[4..8].copy_from_slice(&lkey.to_be_bytes());
    rwqe[8..16].copy_from_slice(&0x300000u64.to_be_bytes());
    t.mem.put(0x200000, &rwqe);
    t.mem.put(0x280000, &1u32.to_be_bytes());
    // One send: a 256-byte MAD to LID 0, QP1 (it stays in the port; no fabric here).
    let mad: Vec<u8> = (0..256).map(|x| x as u8).collect();
    t.mem.put(0x310000, &mad);
    let mut w = [0u8; 80];
    w[0..4].copy_from_slice(&(0x0a_u32).to_be_bytes()); // index 0, SEND
    w[4..8].copy_from_slice(&((qpn << 8) | 5).to_be_bytes());
    w[11] = 0x08;
    w[16..20].copy_from_slice(&0x8001_0000u32.to_be_bytes());
    w[24..28].copy_from_slice(&1u32.to_be_bytes());
    w[16 + 0x0e..16 + 0x10].copy_from_slice(&0u16.to_be_bytes());
    w[64..68].copy_from_slice(&256u32.to_be_bytes());
    w[68..72].copy_from_slice(&lkey.to_be_bytes());
    w[72..80].copy_from_slice(&0x310000u64.to_be_bytes());
    t.mem.put(0x200000 + 256, &w);
    t.mem.put(0x280004, &1u32.to_be_bytes());
    t.fw.send_doorbell(qpn);
    // The MAD landed after the 40-byte GRH area.
    assert_eq!(t.mem.get(0x300000 + 40, 256), mad);
    // Two CQEs: the responder one (delivered first) and the requester one.
    let c0 = t.mem.get(cq_buf, 64);
    let c1 = t.mem.get(cq_buf + 64, 64);
    assert_eq!(c0[0x3f] >> 4, crate::datapath::cqe::op::RESP_SEND);
    assert_eq!(u32::from_be_bytes(c0[0x2c..0x30].try_into().unwrap()), 296, "GRH + MAD");
    assert_eq!(u32::from_be_bytes(c0[0x18..0x1c].try_into().unwrap()) & 0xffffff, 1, "source QP 1");
    assert_eq!(u16::from_be_bytes(c0[0x16..0x18].try_into().unwrap()), 3, "source LID");
    assert_eq!(c1[0x3f] >> 4, crate::datapath::cqe::op::REQ);
    assert_eq!(c1[0x3f] & 1, 0, "first pass owner 0");
    // Both stamped with the device clock, in order.
    let ts = |c: &[u8]| u64::from_be_bytes(c[0x30..0x38].try_into().unwrap());
    assert!(ts(&c0) != 0 && ts(&c0) <= ts(&c1) && ts(&c1) <= crate::clock::now(), "QP1 CQE timestamps");
    assert_eq!(u32::from_be_bytes(c1[0x38..0x3c].try_into().unwrap()), (0x0a << 24) | qpn);
    // A second send with no receive posted: dropped, but the send completes.
    // (The first WQE took 2 WQEBBs: ds 5.)
    w[0..4].copy_from_slice(&((2u32 << 8) | 0x0a).to_be_bytes());
    t.mem.put(0x200000 + 256 + 128, &w);
    t.mem.put(0x280004, &4u32.to_be_bytes());
    t.fw.send_doorbell(qpn);
    assert_eq!(t.mem.get(cq_buf + 128, 64)[0x3f] >> 4, crate::datapath::cqe::op::REQ);
    // Two receives posted, then the QP is moved to ERR: each is flushed.
    t.mem.put(0x200000 + 16, &rwqe);
    t.mem.put(0x200000 + 32, &rwqe);
    t.mem.put(0x280000, &3u32.to_be_bytes());
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2ERR_QP, qpn), 16);
    for k in 3..5u64 {
        let e = t.mem.get(cq_buf + k * 64, 64);
        assert_eq!(
            (e[0x3f] >> 4, e[0x37]),
            (crate::datapath::cqe::op::RESP_ERR, crate::datapath::cqe::syndrome::WR_FLUSH_ERR),
            "CQE {k}"
        );
    }
    assert_eq!(t.mem.get(cq_buf + 5 * 64, 64)[0x3f], 0xf1, "nothing more");
    // A send with a bad lkey on another QP errors with LOCAL_PROT_ERR.
    let _ = Access::LOCAL_READ;
}

#[test]
fn port_change_events_reach_subscribed_eqs() {
    let mut t = Bench::new();
    let uar = t.up();
    let async_buf = 0x100000;
    let other_buf = 0x140000;
    let async_eq = t.eq(uar, 0, 1 << ifc::MLX5_EVENT_TYPE_PORT_CHANGE, async_buf);
    let _comp_eq = t.eq(uar, 1, 0, other_buf);
    t.fw.port_change(false);
    let e = t.mem.get(async_buf, 64);
    assert_eq!(
        (e[1], e[3], e[0x28] >> 4, e[63] & 1),
        (ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, 1, 1, 0),
        "DOWN on port 1"
    );
    assert_eq!(t.mem.get(other_buf + 63, 1)[0], 1, "EQ without the event bit untouched");
    // PortInfo through MAD_IFC now says DOWN.
    assert_eq!(t.fw.cfg.port_state, 1);
    t.fw.port_change(true);
    assert_eq!(t.mem.get(async_buf + 64, 64)[3], 4, "ACTIVE");
    let _ = async_eq;
}

#[test]
fn perfmgt_port_counters_are_real_and_clear() {
    use std::sync::atomic::Ordering::Relaxed;
    let mut t = Bench::new();
    t.up();
    let wire = Arc::new(vrnic_fabric::counters::PortCounters::default());
    t.fw.port.ib_test().wire_counters = Some(wire.clone());
    wire.tx_packets.store(10, Relaxed);
    wire.tx_bytes.store(4000, Relaxed);
    t.fw.counters.xmit_pkts.store(2, Relaxed);
    let pma = |t: &mut Bench, method: u8, select: u16| {
        let mut m = cmd(ifc::MLX5_CMD_OP_MAD_IFC, 3, ifc::mad_ifc_in::SIZE);
        ifc::mad_ifc_in::port.set(&mut m, 1);
        let b = ifc::mad_ifc_in::mad.byte_range().unwrap().start;
        m[b] = 1;
        m[b + 1] = 0x04;
        m[b + 2] = 1;
        m[b + 3] = method;
        m[b + 16..b + 18].copy_from_slice(&0x12u16.to_be_bytes());
        m[b + 66..b + 68].copy_from_slice(&select.to_be_bytes());
        let o = t.ok(&m, ifc::mad_ifc_out::SIZE);
        let r = ifc::mad_ifc_out::response_mad_packet.byte_range().unwrap().start;
        (
            u32::from_be_bytes(o[r + 64 + 32..r + 64 + 36].try_into().unwrap()),
            u32::from_be_bytes(o[r + 64 + 24..r + 64 + 28].try_into().unwrap()),
        )
    };
    assert_eq!(pma(&mut t, 1, 0), (12, 1000), "fabric + local packets, data in words");
    pma(&mut t, 2, 0xffff);
    assert_eq!(pma(&mut t, 1, 0), (0, 0), "cleared");
    wire.tx_packets.store(15, Relaxed);
    assert_eq!(pma(&mut t, 1, 0).0, 5);
}
