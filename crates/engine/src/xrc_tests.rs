//! XRC between two engines: an XRC initiator on `a`, an XRC target and XRC
//! SRQs on `b`. SENDs land in the SRQ the XRCETH names and complete on its CQ;
//! RDMA WRITE/READ and atomics go through the target and are checked against
//! the SRQ's PD; an SRQ outside the target's XRC domain is NAKed.

use super::test_support::*;
use super::*;

struct Xrc {
    p: Pair,
    ini: u32,
    tgt: u32,
    xrcd: u32,
    /// An XRC SRQ of `xrcd` and its CQ.
    srq: u32,
    srq_cq: u32,
}

/// A target of `xrcd` on b: no PD, no CQs, no send queue (as mlx5_ib creates one).
fn target(p: &Pair, xrcd: u32) -> u32 {
    let mut e = p.b.eng.lock();
    let q = e
        .create_qp(QpCreate {
            qp_type: QpType::XrcTarget,
            pd: 0,
            send_cq: None,
            recv_cq: None,
            srq: None,
            xrcd: Some(xrcd),
            log_sq_size: 0,
            log_rq_size: 0,
            sq_sig_all: false,
            uid: 0,
        })
        .unwrap();
    e.modify_qp(q, QpTransition::RstToInit, &QpAttrUpdate { access: Some(ALL), ..Default::default() }).unwrap();
    q
}

fn xrc_srq(p: &Pair, xrcd: u32) -> (u32, u32) {
    let mut e = p.b.eng.lock();
    let cq = e.create_cq(10).unwrap();
    let pd = p.b.pd;
    (e.create_srq(pd, 10, Some(cq), Some(xrcd), 0).unwrap(), cq)
}

fn setup(mtu: u16) -> Xrc {
    let p = Pair::new(1 << 20, &[]);
    let xrcd = p.b.eng.lock().alloc_xrcd(0).unwrap();
    let (srq, srq_cq) = xrc_srq(&p, xrcd);
    let ini = p.a.create_qp(QpType::XrcInitiator, None);
    let tgt = target(&p, xrcd);
    p.a.connect(ini, conn(2, tgt, mtu));
    p.b.connect(tgt, conn(1, ini, mtu));
    Xrc { p, ini, tgt, xrcd, srq, srq_cq }
}

fn to_srq(wr_id: u64, op: WrOpcode, sgl: Vec<Sge>, srqn: u32) -> SendWr {
    SendWr { xrc_srqn: srqn, ..send(wr_id, op, sgl) }
}

#[test]
fn send_lands_in_the_named_srq_and_completes_on_its_cq() {
    let x = setup(1024);
    let (a, b) = (&x.p.a, &x.p.b);
    let data = pattern(7, 3000);
    a.mem.set(BASE, &data);
    b.eng.lock().post_srq_recv(x.srq, RecvWr { wr_id: 5, sgl: vec![b.sge(BASE + 0x8000, 4096)] }).unwrap();
    let mut wr = to_srq(1, WrOpcode::SendImm, vec![a.sge(BASE, 3000)], x.srq);
    wr.imm = 0x1234_5678;
    a.eng.lock().post_send(x.ini, wr).unwrap();
    x.p.settle();
    assert_eq!(b.mem.get(BASE + 0x8000, 3000), data);
    let got = b.rec.take(x.srq_cq);
    assert_eq!(got.len(), 1, "{got:?}");
    let c = got[0];
    assert_eq!((c.wr_id, c.status, c.opcode, c.byte_len), (5, WcStatus::Success, WcOpcode::Recv, 3000));
    assert_eq!((c.qpn, c.srqn, c.imm, c.src_qp), (x.tgt, Some(x.srq), Some(0x1234_5678), x.ini));
    // The target has no CQ of its own; the node's CQ on b saw nothing.
    assert!(b.cqes().is_empty());
    let sent = a.cqes();
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].wr_id, sent[0].status), (1, WcStatus::Success));
    // Three XRC_SEND packets (0xa0 | op) went out, each with an XRCETH; the target answered with XRC ACKs.
    let ctr = b.eng.lock().qp_counters(x.tgt).unwrap();
    assert_eq!(ctr.rx_packets, 3);
    assert_eq!(ctr.xrc_bad_srq, 0);
}

#[test]
fn rdma_to_the_target_uses_the_srq_pd_and_takes_no_wqe() {
    let x = setup(1024);
    let (a, b) = (&x.p.a, &x.p.b);
    let data = pattern(9, 2500);
    a.mem.set(BASE, &data);
    b.eng.lock().post_srq_recv(x.srq, RecvWr { wr_id: 6, sgl: vec![b.sge(BASE + 0x9000, 64)] }).unwrap();
    let w = SendWr {
        remote_addr: BASE + 0x4000,
        rkey: b.key,
        ..to_srq(1, WrOpcode::Write, vec![a.sge(BASE, 2500)], x.srq)
    };
    a.eng.lock().post_send(x.ini, w).unwrap();
    b.mem.set(BASE + 0x6000, &pattern(3, 1500));
    let r = SendWr {
        remote_addr: BASE + 0x6000,
        rkey: b.key,
        ..to_srq(2, WrOpcode::Read, vec![a.sge(BASE + 0x2000, 1500)], x.srq)
    };
    a.eng.lock().post_send(x.ini, r).unwrap();
    b.mem.set(BASE + 0x7000, &40u64.to_le_bytes());
    let mut fa = to_srq(3, WrOpcode::FetchAdd, vec![a.sge(BASE + 0x3000, 8)], x.srq);
    (fa.remote_addr, fa.rkey, fa.swap_add) = (BASE + 0x7000, b.key, 2);
    a.eng.lock().post_send(x.ini, fa).unwrap();
    x.p.settle();
    assert_eq!(b.mem.get(BASE + 0x4000, 2500), data);
    assert_eq!(a.mem.get(BASE + 0x2000, 1500), pattern(3, 1500));
    assert_eq!(b.mem.get(BASE + 0x7000, 8), 42u64.to_le_bytes());
    assert_eq!(a.mem.get(BASE + 0x3000, 8), 40u64.to_le_bytes());
    let st: Vec<_> = a.cqes().iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(st, vec![(1, WcStatus::Success), (2, WcStatus::Success), (3, WcStatus::Success)]);
    // No receive WQE consumed, nothing completed on the SRQ's CQ.
    assert!(b.rec.take(x.srq_cq).is_empty());
    assert_eq!(b.eng.lock().srqs.obj(x.srq).unwrap().wqes.len(), 1);
}

#[test]
fn srq_of_another_xrcd_or_none_is_naked() {
    for bad in [None, Some(0x00ab_cdef)] {
        let x = setup(1024);
        let (a, b) = (&x.p.a, &x.p.b);
        let other = b.eng.lock().alloc_xrcd(0).unwrap();
        let (srq2, cq2) = xrc_srq(&x.p, other);
        b.eng.lock().post_srq_recv(srq2, RecvWr { wr_id: 8, sgl: vec![b.sge(BASE + 0x8000, 64)] }).unwrap();
        let named = bad.unwrap_or(srq2);
        a.eng.lock().post_send(x.ini, to_srq(4, WrOpcode::Send, vec![a.sge(BASE, 16)], named)).unwrap();
        x.p.settle();
        let st: Vec<_> = a.cqes().iter().map(|c| (c.wr_id, c.status)).collect();
        assert_eq!(st, vec![(4, WcStatus::RemInvReqErr)], "SRQ {named:#x}");
        let e = b.eng.lock();
        let ctr = e.qp_counters(x.tgt).unwrap();
        assert_eq!((ctr.xrc_bad_srq, ctr.nak_inv_req_sent), (1, 1));
        assert_eq!(e.qps.obj(x.tgt).unwrap().state, QpState::Err);
        assert_eq!(e.srqs.obj(srq2).unwrap().wqes.len(), 1, "the other domain's WQE stays");
        drop(e);
        assert!(b.rec.take(cq2).is_empty() && b.rec.take(x.srq_cq).is_empty());
        let _ = x.xrcd;
    }
}

#[test]
fn no_srq_wqe_is_rnr_then_delivered() {
    let x = setup(1024);
    let (a, b) = (&x.p.a, &x.p.b);
    a.mem.set(BASE, b"xrc!");
    a.eng.lock().post_send(x.ini, to_srq(1, WrOpcode::Send, vec![a.sge(BASE, 4)], x.srq)).unwrap();
    // Let the first attempt meet an empty SRQ (an RNR NAK), then post.
    x.p.run(|p| p.b.eng.lock().qp_counters(x.tgt).unwrap().rnr_nak_sent > 0);
    b.eng.lock().post_srq_recv(x.srq, RecvWr { wr_id: 2, sgl: vec![b.sge(BASE + 0x100, 4)] }).unwrap();
    x.p.settle();
    assert_eq!(b.mem.get(BASE + 0x100, 4), b"xrc!");
    assert_eq!(
        b.rec.take(x.srq_cq).iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        vec![(2, WcStatus::Success)]
    );
    assert_eq!(a.cqes().iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(1, WcStatus::Success)]);
}

#[test]
fn requests_to_an_initiator_and_responses_to_a_target_are_dropped() {
    let x = setup(1024);
    let (a, b) = (&x.p.a, &x.p.b);
    // An RC QP on b aimed at the initiator: its RC SEND is the wrong transport for an XRC QP.
    let rc = b.create_qp(QpType::Rc, None);
    b.connect(rc, conn(1, x.ini, 1024));
    b.eng.lock().post_send(rc, send(1, WrOpcode::Send, vec![b.sge(BASE, 8)])).unwrap();
    x.p.run(|p| p.a.eng.lock().rt.drops.bad_transport > 0);
    assert_eq!(a.eng.lock().rt.drops.bad_transport, 1);
}

#[test]
fn a_target_in_error_flushes_its_message_to_the_srq_cq() {
    let x = setup(256);
    let (a, b) = (&x.p.a, &x.p.b);
    b.eng.lock().post_srq_recv(x.srq, RecvWr { wr_id: 9, sgl: vec![b.sge(BASE + 0x8000, 4096)] }).unwrap();
    a.eng.lock().post_send(x.ini, to_srq(1, WrOpcode::Send, vec![a.sge(BASE, 1024)], x.srq)).unwrap();
    // One packet at a time until the first has taken the SRQ's WQE, then move the target to ERR.
    for _ in 0..8 {
        if b.eng.lock().srqs.obj(x.srq).unwrap().wqes.is_empty() {
            break;
        }
        x.p.net.pump(&[&a.eng as &dyn vrnic_fabric::PacketHandler, &b.eng], 1);
    }
    assert!(b.eng.lock().srqs.obj(x.srq).unwrap().wqes.is_empty());
    assert!(b.rec.take(x.srq_cq).is_empty(), "the message is not complete yet");
    b.eng.lock().modify_qp(x.tgt, QpTransition::ToErr, &QpAttrUpdate::default()).unwrap();
    let got = b.rec.take(x.srq_cq);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].wr_id, got[0].status, got[0].srqn, got[0].qpn), (9, WcStatus::WrFlushErr, Some(x.srq), x.tgt));
    assert!(b.cqes().is_empty());
}
