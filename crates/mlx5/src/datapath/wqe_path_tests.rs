//! Firmware tests through WQEs: SQ faults, the CQ consumer index, RC
//! SEND/WRITE between two devices, WQEs that mix inline and data segments
//! (UD and RC, across the SQ wrap), MEMIC.

use crate::test_support::*;

/// An RC QP whose SQ lies outside guest memory: the WQE fetch at the
/// doorbell faults, the requester gets LOCAL_QP_OP_ERR for that slot and
/// the QP goes to ERR (as QP0/QP1/UD QPs do), instead of stopping silently.
#[test]
fn sq_outside_guest_memory_is_a_local_qp_op_error() {
    use crate::datapath::cqe::{op, syndrome};
    let (net, mut a, mut b) = rc_pair(0x7f00_0000_0000);
    let qa = a.qpn;
    a.t.mem.put(QP_DBR + 4, &1u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    let e = a.t.mem.get(a.cq_buf, 64);
    assert_eq!((e[0x3f] >> 4, e[0x37]), (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR), "error CQE for the faulting fetch");
    assert_eq!(u16::from_be_bytes([e[0x3c], e[0x3d]]), 0, "wqe_counter: the slot at the consumer index");
    assert_eq!(a.t.fw.core.engine.qp(qa).unwrap().state, QpState::Err);
    assert_eq!(a.t.mem.get(a.cq_buf + 64, 64)[0x3f], 0xf1, "one CQE, nothing more");
    assert_eq!(b.t.mem.get(b.cq_buf, 64)[0x3f], 0xf1, "nothing reached the peer");
}

/// The device reads a CQ's consumer index from its doorbell record only
/// when the CQ looks full by the last count it knows: 96 signaled WRITEs
/// through a 64-entry CQ, the driver consuming after each batch of 16 and
/// never ringing a CQ doorbell, complete without an overrun.
#[test]
fn a_full_looking_cq_reads_the_consumer_index() {
    use crate::datapath::cqe::op;
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    let qa = a.qpn;
    let sq = QP_BUF + 16 * 16;
    let mut raddr = [0u8; 16];
    raddr[0..8].copy_from_slice(&(DATA + 0x3000).to_be_bytes());
    raddr[8..12].copy_from_slice(&b.key.to_be_bytes());
    for batch in 0..6u32 {
        for k in 0..16u32 {
            let i = batch * 16 + k;
            let slot = sq + (i as u64 % 16) * 64;
            a.t.mem.put(slot, &ctrl_seg(crate::datapath::wqe::opcode::RDMA_WRITE, i as u16, qa, 3));
            a.t.mem.put(slot + 16, &raddr);
            a.t.mem.put(slot + 32, &data_seg(8, a.key, DATA));
        }
        a.t.mem.put(QP_DBR + 4, &(batch * 16 + 16).to_be_bytes());
        a.t.fw.send_doorbell(qa);
        pump(&net, &mut a, &mut b);
        // The driver polls the batch's CQEs and updates the record only.
        a.t.mem.put(a.cq_buf + 0x1000, &(batch * 16 + 16).to_be_bytes());
    }
    let cq = a.t.fw.core.engine.cq(a.cqn).unwrap();
    assert!(!cq.overrun, "no overrun");
    assert_eq!(cq.producer, 96);
    let last = a.t.mem.get(a.cq_buf + 31 * 64, 64);
    assert_eq!(
        (last[0x3f] >> 4, u16::from_be_bytes([last[0x3c], last[0x3d]])),
        (op::REQ, 95),
        "completion 95 in slot 31"
    );
    assert_eq!(last[0x3f] & 1, 1, "its owner bit: the CQ's second pass");
}

#[test]
fn rc_send_and_write_between_two_devices_through_wqes() {
    use crate::datapath::cqe::op;
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    let (qa, qb) = (a.qpn, b.qpn);

    // B posts one receive of 256 bytes (no doorbell: only the record).
    b.t.mem.put(QP_BUF, &data_seg(256, b.key, DATA + 0x1000));
    b.t.mem.put(QP_DBR, &1u32.to_be_bytes());
    // A sends 200 bytes: ctrl + one data segment.
    let msg: Vec<u8> = (0..200u32).map(|x| (x * 7) as u8).collect();
    a.t.mem.put(DATA, &msg);
    let sq = QP_BUF + 16 * 16;
    a.t.mem.put(sq, &ctrl_seg(crate::datapath::wqe::opcode::SEND, 0, qa, 2));
    a.t.mem.put(sq + 16, &data_seg(200, a.key, DATA));
    a.t.mem.put(QP_DBR + 4, &1u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    assert_eq!(b.t.mem.get(DATA + 0x1000, 200), msg, "payload landed in B's receive buffer");
    let rc = b.t.mem.get(b.cq_buf, 64);
    assert_eq!(rc[0x3f] >> 4, op::RESP_SEND);
    assert_eq!(u32::from_be_bytes(rc[0x2c..0x30].try_into().unwrap()), 200);
    assert_eq!(u32::from_be_bytes(rc[0x38..0x3c].try_into().unwrap()) & 0xffffff, qb);
    let sc = a.t.mem.get(a.cq_buf, 64);
    assert_eq!(sc[0x3f] >> 4, op::REQ, "requester completion after the ACK");
    assert_eq!(u16::from_be_bytes([sc[0x3c], sc[0x3d]]), 0, "wqe_counter");

    // A writes 64 bytes into B's memory with B's rkey: ctrl + raddr + data (ds 3).
    let w: Vec<u8> = (0..64u8).collect();
    a.t.mem.put(DATA + 0x2000, &w);
    a.t.mem.put(sq + 64, &ctrl_seg(crate::datapath::wqe::opcode::RDMA_WRITE, 1, qa, 3));
    let mut raddr = [0u8; 16];
    raddr[0..8].copy_from_slice(&(DATA + 0x3000).to_be_bytes());
    raddr[8..12].copy_from_slice(&b.key.to_be_bytes());
    a.t.mem.put(sq + 64 + 16, &raddr);
    a.t.mem.put(sq + 64 + 32, &data_seg(64, a.key, DATA + 0x2000));
    a.t.mem.put(QP_DBR + 4, &2u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    assert_eq!(b.t.mem.get(DATA + 0x3000, 64), w, "RDMA WRITE landed");
    let sc = a.t.mem.get(a.cq_buf + 64, 64);
    assert_eq!((sc[0x3f] >> 4, sc[0x38]), (op::REQ, crate::datapath::wqe::opcode::RDMA_WRITE));
    assert_eq!(b.t.mem.get(b.cq_buf + 64, 64)[0x3f], 0xf1, "a plain WRITE consumes no receive");

    // A write with a wrong rkey: remote access error CQE on A, QP to ERR.
    a.t.mem.put(sq + 128, &ctrl_seg(crate::datapath::wqe::opcode::RDMA_WRITE, 2, qa, 3));
    raddr[8..12].copy_from_slice(&(b.key ^ 0x100).to_be_bytes());
    a.t.mem.put(sq + 128 + 16, &raddr);
    a.t.mem.put(sq + 128 + 32, &data_seg(64, a.key, DATA + 0x2000));
    a.t.mem.put(QP_DBR + 4, &3u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    let e = a.t.mem.get(a.cq_buf + 128, 64);
    assert_eq!((e[0x3f] >> 4, e[0x37]), (op::REQ_ERR, crate::datapath::cqe::syndrome::REMOTE_ACCESS_ERR));
    assert_eq!(a.t.fw.core.engine.qp(qa).unwrap().state, QpState::Err);
}

#[test]
fn memic_alloc_register_and_free() {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    let mut t = Bench::new();
    t.fw.hca.set_memic(Some((31 << 20, 1 << 20)));
    t.fw.reset();
    t.up();
    let o = t.ok(
        &cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, (crate::hca::caps::image::CAP_DEV_MEM << 1) | 1, 16),
        ifc::query_hca_cap_out::SIZE,
    );
    let cap = ifc::query_hca_cap_out::capability;
    assert_eq!(cap.inner(ifc::device_mem_cap::memic).get(&o), 1);
    assert_eq!(cap.inner(ifc::device_mem_cap::memic_bar_start_addr).get(&o), 31 << 20);
    let alloc = |t: &mut Bench, start: u64, size: u64, len: u64| {
        let mut i = cmd(ifc::MLX5_CMD_OP_ALLOC_MEMIC, 0, ifc::alloc_memic_in::SIZE);
        ifc::alloc_memic_in::range_start_addr.set(&mut i, start);
        ifc::alloc_memic_in::range_size.set(&mut i, size);
        ifc::alloc_memic_in::memic_size.set(&mut i, len);
        t.run(&i, ifc::alloc_memic_out::SIZE)
    };
    let a = alloc(&mut t, 31 << 20, 4096, 4096);
    assert_eq!(a.status, 0);
    let at = ifc::alloc_memic_out::memic_start_addr.get(&a.data);
    assert_eq!(at, 31 << 20);
    assert_eq!(alloc(&mut t, 31 << 20, 4096, 64).status, status::NO_RES, "range busy: the driver tries the next");
    assert_eq!(alloc(&mut t, 30 << 20, 4096, 64).status, status::BAD_PARAM, "outside the window");
    let pd = t.pd();
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, 0, ifc::create_mkey_in::SIZE);
    m::access_mode_4_2.set(&mut i, 1);
    m::access_mode_1_0.set(&mut i, 1); // 5 = MEMIC
    m::lr.set(&mut i, 1);
    m::rw.set(&mut i, 1);
    m::pd.set(&mut i, pd as u64);
    m::start_addr.set(&mut i, at + 0x100);
    m::len.set(&mut i, 0x100);
    let o = t.ok(&i, 16);
    let key = (ifc::create_mkey_out::mkey_index.get(&o) as u32) << 8;
    let k = t.fw.core.engine.lookup_key(key).unwrap();
    // Zero based: remote address 0x80 is 0x80 bytes into the key's memory.
    assert_eq!(k.translate(0x80, 8, pd, Access::REMOTE_WRITE), Ok(vec![(vrnic_engine::DEVICE_MEMORY | 0x180, 8)]));
    assert!(k.translate(0xfc, 8, pd, Access::REMOTE_WRITE).is_err(), "past the key");
    // Registering device memory that was never allocated is refused.
    m::start_addr.set(&mut i, at + 0x2000);
    assert_eq!(t.status(&i, 16), status::BAD_PARAM);
    let mut d = cmd(ifc::MLX5_CMD_OP_DEALLOC_MEMIC, 0, ifc::dealloc_memic_in::SIZE);
    ifc::dealloc_memic_in::memic_start_addr.set(&mut d, at);
    ifc::dealloc_memic_in::memic_size.set(&mut d, 4096);
    t.ok(&d, 16);
    assert_eq!(t.status(&d, 16), status::BAD_PARAM, "double free");
}

/// An `mlx5_wqe_inline_seg`: count with `MLX5_INLINE_SEG`, data, zero padding to 16.
fn inline_seg(data: &[u8]) -> Vec<u8> {
    let mut v = (crate::datapath::wqe::INLINE_SEG | data.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(data);
    v.resize((4 + data.len()).next_multiple_of(16), 0);
    v
}

/// UCX ud_mlx5's CREQ resend shape between two UD QPs: ctrl + AV + inline
/// 12-byte header + a data segment with the other 58 bytes. The receiver
/// gets all 70 bytes after its 40-byte GRH area (byte_cnt 110), in order,
/// and nothing past them. Before mixed WQEs were parsed it got 12.
#[test]
fn ud_send_of_inline_header_and_data_segment_delivers_both() {
    use crate::datapath::cqe::op;
    use crate::datapath::wqe::opcode;
    use crate::test_support::{side_at, transition_in};
    use ifc::rst2init_qp_in::qpc as q;
    let net = {
        use vrnic_fabric::{Endpoint, InProcNet};
        let eps = [
            Endpoint::v4(1, std::net::Ipv4Addr::new(127, 0, 0, 1)),
            Endpoint::v4(2, std::net::Ipv4Addr::new(127, 0, 0, 2)),
        ];
        InProcNet::new(
            &eps,
            &[Default::default(), Default::default()],
            Arc::new(vrnic_sys::clock::MonotonicClock::default()),
        )
    };
    let mut a = side_at(1, &net, 0, QP_BUF, 2);
    let mut b = side_at(2, &net, 1, QP_BUF, 2);
    for s in [&mut a, &mut b] {
        let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, s.qpn);
        q::q_key.set(&mut i, 0x1234);
        q::primary_address_path::vhca_port_num.set(&mut i, 1);
        s.t.ok(&i, 16);
        let mut i = transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, s.qpn);
        q::mtu.set(&mut i, 5);
        s.t.ok(&i, 16);
        s.t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, s.qpn), 16);
    }
    let (qa, qb) = (a.qpn, b.qpn);
    // B: one receive of 256 bytes over a buffer of 0xaa.
    b.t.mem.put(DATA + 0x1000, &[0xaa; 256]);
    b.t.mem.put(QP_BUF, &data_seg(256, b.key, DATA + 0x1000));
    b.t.mem.put(QP_DBR, &1u32.to_be_bytes());
    // A: the resend WQE.
    let neth = [0xff, 0xff, 0xff, 0x22, 0, 0, 0, 1, 0, 0, 0, 0];
    let rest: Vec<u8> = (0..58u8).map(|x| x.wrapping_mul(3) ^ 0x5c).collect();
    a.t.mem.put(DATA, &rest);
    let sq = QP_BUF + 16 * 16;
    let mut av = [0u8; 48];
    av[0..4].copy_from_slice(&0x1234u32.to_be_bytes());
    av[8..12].copy_from_slice(&(0x8000_0000 | qb).to_be_bytes());
    av[0x0e..0x10].copy_from_slice(&2u16.to_be_bytes());
    let mut w = ctrl_seg(opcode::SEND, 0, qa, 6).to_vec();
    w.extend_from_slice(&av);
    w.extend_from_slice(&inline_seg(&neth));
    w.extend_from_slice(&data_seg(58, a.key, DATA));
    assert_eq!(w.len(), 96);
    a.t.mem.put(sq, &w);
    a.t.mem.put(QP_DBR + 4, &1u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    let sc = a.t.mem.get(a.cq_buf, 64);
    assert_eq!(sc[0x3f] >> 4, op::REQ, "send completion");
    let rc = b.t.mem.get(b.cq_buf, 64);
    assert_eq!(rc[0x3f] >> 4, op::RESP_SEND, "receive completion");
    assert_eq!(u32::from_be_bytes(rc[0x2c..0x30].try_into().unwrap()), 40 + 70, "byte_cnt: GRH area + 70");
    let got = b.t.mem.get(DATA + 0x1000 + 40, 70);
    assert_eq!(&got[..12], &neth, "the inline header first");
    assert_eq!(&got[12..], &rest[..], "then the data segment's bytes");
    assert_eq!(b.t.mem.get(DATA + 0x1000 + 110, 146), vec![0xaa; 146], "nothing past the message");
}

/// RC SENDs that mix segments, the first at the last SQ slot so that its
/// inline bytes cross the SQ wrap (ctrl + 76 inline bytes + a data segment
/// of 2000: two packets of 1024, the inline bytes and the key's bytes met at
/// offsets); then data, inline, data (the order kept, a packet boundary
/// inside the inline bytes).
#[test]
fn rc_sends_mixing_inline_and_data_segments_across_the_sq_wrap() {
    use crate::datapath::cqe::op;
    use crate::datapath::wqe::opcode;
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    let qa = a.qpn;
    let sq = QP_BUF + 16 * 16;
    // 15 unsignaled NOPs bring the SQ to its last slot.
    for i in 0..15u16 {
        let mut c = ctrl_seg(opcode::NOP, i, qa, 1);
        c[11] = 0;
        a.t.mem.put(sq + i as u64 * 64, &c);
    }
    a.t.mem.put(QP_DBR + 4, &15u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    for r in 0..2u64 {
        b.t.mem.put(QP_BUF + r * 16, &data_seg(4096, b.key, DATA + 0x10000 + r * 0x2000));
    }
    b.t.mem.put(QP_DBR, &2u32.to_be_bytes());
    let head: Vec<u8> = (0..76u8).map(|x| x ^ 0xa5).collect();
    let body: Vec<u8> = (0..2000u32).map(|x| (x * 13 + 1) as u8).collect();
    a.t.mem.put(DATA, &body);
    // WQE 15: ctrl (16) + inline seg (4 + 76 = 80) + data seg (16) = ds 7, two WQEBBs: 15 and 0.
    let mut w = ctrl_seg(opcode::SEND, 15, qa, 7).to_vec();
    w.extend_from_slice(&inline_seg(&head));
    w.extend_from_slice(&data_seg(2000, a.key, DATA));
    assert_eq!(w.len(), 112);
    a.t.mem.put(sq + 15 * 64, &w[..64]);
    a.t.mem.put(sq, &w[64..]);
    // WQE 17 (slot 1): data 1022, inline "mid" (across the first packet's end), data 1500 (ds 4).
    a.t.mem.put(DATA + 0x4000, &[0x11; 1022]);
    a.t.mem.put(DATA + 0x5000, &[0x22; 1500]);
    let mut w = ctrl_seg(opcode::SEND, 17, qa, 4).to_vec();
    w.extend_from_slice(&data_seg(1022, a.key, DATA + 0x4000));
    w.extend_from_slice(&inline_seg(b"mid"));
    w.extend_from_slice(&data_seg(1500, a.key, DATA + 0x5000));
    a.t.mem.put(sq + 64, &w);
    a.t.mem.put(QP_DBR + 4, &18u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    let rc = b.t.mem.get(b.cq_buf, 64);
    assert_eq!(rc[0x3f] >> 4, op::RESP_SEND);
    assert_eq!(u32::from_be_bytes(rc[0x2c..0x30].try_into().unwrap()), 2076, "byte_cnt: 76 inline + 2000");
    let got = b.t.mem.get(DATA + 0x10000, 2076);
    assert_eq!(&got[..76], &head[..], "inline bytes, read across the SQ wrap");
    assert_eq!(&got[76..], &body[..], "then the data segment, across the packet boundary");
    let rc = b.t.mem.get(b.cq_buf + 64, 64);
    assert_eq!(u32::from_be_bytes(rc[0x2c..0x30].try_into().unwrap()), 2525);
    let mut want = vec![0x11; 1022];
    want.extend_from_slice(b"mid");
    want.extend_from_slice(&[0x22; 1500]);
    assert_eq!(b.t.mem.get(DATA + 0x12000, 2525), want, "data, inline, data: in WQE order, over three packets");
    for (slot, counter) in [(0u64, 15u16), (1, 17)] {
        let sc = a.t.mem.get(a.cq_buf + slot * 64, 64);
        assert_eq!((sc[0x3f] >> 4, u16::from_be_bytes([sc[0x3c], sc[0x3d]])), (op::REQ, counter), "send completions");
    }
}
