//! Transport error tests: remote and local errors, retries, RNR, CQ overrun.

use super::test_support::*;
use super::*;

fn statuses(v: &[Completion]) -> Vec<(u64, WcStatus)> {
    v.iter().map(|c| (c.wr_id, c.status)).collect()
}

#[test]
fn remote_access_error_and_flush_in_order() {
    let p = Pair::new(1 << 16, &[]);
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    p.b.eng.lock().post_recv(qb, RecvWr { wr_id: 50, sgl: vec![p.b.sge(BASE, 64)] }).unwrap();
    let mut w = send(1, WrOpcode::Write, vec![p.a.sge(BASE, 64)]);
    w.remote_addr = BASE + (1 << 16) - 8; // runs past the end of b's key
    w.rkey = p.b.key;
    p.a.eng.lock().post_send(qa, w).unwrap();
    for i in 2..5 {
        p.a.eng.lock().post_send(qa, send(i, WrOpcode::Send, vec![p.a.sge(BASE, 8)])).unwrap();
    }
    p.settle();
    let tx = p.a.cqes();
    assert_eq!(
        statuses(&tx),
        vec![
            (1, WcStatus::RemAccessErr),
            (2, WcStatus::WrFlushErr),
            (3, WcStatus::WrFlushErr),
            (4, WcStatus::WrFlushErr)
        ]
    );
    assert_eq!(p.a.eng.lock().qps.obj(qa).unwrap().state, QpState::Err);
    // The responder went to ERR too and flushed its receive.
    assert_eq!(p.b.eng.lock().qps.obj(qb).unwrap().state, QpState::Err);
    assert_eq!(statuses(&p.b.cqes()), vec![(50, WcStatus::WrFlushErr)]);
    assert_eq!(p.b.eng.lock().counters().nak_access_sent, 1);
    // Later posts complete at once with WR_FLUSH_ERR.
    p.a.eng.lock().post_send(qa, send(9, WrOpcode::Send, vec![])).unwrap();
    p.a.eng.lock().post_recv(qa, RecvWr { wr_id: 10, sgl: vec![] }).unwrap();
    assert_eq!(statuses(&p.a.cqes()[4..]), vec![(9, WcStatus::WrFlushErr), (10, WcStatus::WrFlushErr)]);
}

#[test]
fn rkey_pd_and_access_rights_are_checked() {
    let p = Pair::new(1 << 16, &[]);
    // A read-only key in b's PD and a key in another PD.
    let (ro, other) = {
        let mut e = p.b.eng.lock();
        let pd2 = e.alloc_pd(0).unwrap();
        let mk = |pd, access| Mkey {
            variant: 1,
            pd,
            access,
            start: BASE,
            length: 4096,
            whole_space: false,
            translation: Translation::Physical,
            free: false,
            uid: 0,
        };
        (
            Mkey::key(e.create_mkey(mk(p.b.pd, Access::REMOTE_READ)).unwrap(), 1),
            Mkey::key(e.create_mkey(mk(pd2, ALL)).unwrap(), 1),
        )
    };
    for (rkey, op) in
        [(ro, WrOpcode::Write), (other, WrOpcode::Read), (ro, WrOpcode::FetchAdd), (p.b.key ^ 0x1, WrOpcode::Write)]
    {
        let (qa, _qb) = p.qps(QpType::Rc, 1024);
        let mut w = send(1, op, vec![p.a.sge(BASE, 8)]);
        w.remote_addr = BASE;
        w.rkey = rkey;
        p.a.eng.lock().post_send(qa, w).unwrap();
        p.settle();
        let tx: Vec<_> = p.a.cqes().into_iter().filter(|c| c.qpn == qa).collect();
        assert_eq!(statuses(&tx), vec![(1, WcStatus::RemAccessErr)], "{op:?} with key {rkey:#x}");
    }
    // A read through the read-only key works.
    let (qa, _) = p.qps(QpType::Rc, 1024);
    let mut r = send(2, WrOpcode::Read, vec![p.a.sge(BASE, 8)]);
    r.remote_addr = BASE;
    r.rkey = ro;
    p.a.eng.lock().post_send(qa, r).unwrap();
    p.settle();
    assert_eq!(
        statuses(&p.a.cqes().into_iter().filter(|c| c.qpn == qa).collect::<Vec<_>>()),
        vec![(2, WcStatus::Success)]
    );
}

#[test]
fn remote_invalid_request_and_remote_operation_errors() {
    let p = Pair::new(1 << 16, &[]);
    // Message longer than the receive buffer.
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    p.b.eng.lock().post_recv(qb, RecvWr { wr_id: 7, sgl: vec![p.b.sge(BASE, 100)] }).unwrap();
    p.a.eng.lock().post_send(qa, send(1, WrOpcode::Send, vec![p.a.sge(BASE, 101)])).unwrap();
    p.settle();
    assert_eq!(statuses(&p.a.cqes()), vec![(1, WcStatus::RemInvReqErr)]);
    assert_eq!(statuses(&p.b.cqes()), vec![(7, WcStatus::LocLenErr)]);
    // Misaligned atomic.
    let (qa, _) = p.qps(QpType::Rc, 1024);
    let mut fa = send(2, WrOpcode::FetchAdd, vec![p.a.sge(BASE, 8)]);
    fa.remote_addr = BASE + 4;
    fa.rkey = p.b.key;
    p.a.eng.lock().post_send(qa, fa).unwrap();
    p.settle();
    assert!(p.a.cqes().contains(&Completion {
        byte_len: 0,
        src_qp: p.a.eng.lock().qps.obj(qa).unwrap().attrs.dest_qpn,
        ..Completion::new(2, qa, WcOpcode::FetchAdd, WcStatus::RemInvReqErr)
    }));
    // Receive buffer behind a bad lkey: responder local protection, requester remote operation error.
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    p.b.eng
        .lock()
        .post_recv(qb, RecvWr { wr_id: 8, sgl: vec![Sge { addr: BASE, length: 64, lkey: 0xdead_0001 }] })
        .unwrap();
    p.a.eng.lock().post_send(qa, send(3, WrOpcode::Send, vec![p.a.sge(BASE, 8)])).unwrap();
    p.settle();
    assert!(statuses(&p.a.cqes()).contains(&(3, WcStatus::RemOpErr)));
    assert!(statuses(&p.b.cqes()).contains(&(8, WcStatus::LocProtErr)));
}

#[test]
fn local_errors() {
    let p = Pair::new(1 << 16, &[]);
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    // Bad lkey: local protection error; then the QP is in ERR and flushes.
    p.a.eng.lock().post_send(qa, send(1, WrOpcode::Send, vec![Sge { addr: BASE, length: 8, lkey: 0x5_55 }])).unwrap();
    p.a.eng.lock().post_send(qa, send(2, WrOpcode::Send, vec![p.a.sge(BASE, 8)])).unwrap();
    p.settle();
    assert_eq!(statuses(&p.a.cqes()), vec![(1, WcStatus::LocProtErr), (2, WcStatus::WrFlushErr)]);
    // Atomic with a result buffer that is not 8 bytes: local length error.
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    p.a.eng.lock().post_send(qa, send(3, WrOpcode::CmpSwap, vec![p.a.sge(BASE, 4)])).unwrap();
    p.settle();
    assert!(statuses(&p.a.cqes()).contains(&(3, WcStatus::LocLenErr)));
    // Posting before RTS is refused.
    let q = p.a.create_qp(QpType::Rc, None);
    assert!(p.a.eng.lock().post_send(q, send(4, WrOpcode::Send, vec![])).is_err());
}

#[test]
fn retry_exceeded_when_the_peer_never_answers() {
    let f = FaultConfig { seed: 1, tx: FaultRates { drop: 1.0, ..Default::default() }, ..Default::default() };
    let p = Pair::new(1 << 16, &[f]);
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    p.a.eng
        .lock()
        .modify_qp(
            qa,
            QpTransition::RtsToRts,
            &QpAttrUpdate { retry_cnt: Some(3), timeout: Some(12), ..Default::default() },
        )
        .unwrap();
    // retry_cnt is loaded at RTR→RTS: take a fresh QP with retry_cnt 3.
    let qa2 = p.a.create_qp(QpType::Rc, None);
    p.a.connect(qa2, QpAttrUpdate { retry_cnt: Some(3), timeout: Some(12), ..conn(2, 0x100, 1024) });
    let t0 = p.clock.now_ns();
    p.a.eng.lock().post_send(qa2, send(1, WrOpcode::Send, vec![p.a.sge(BASE, 8)])).unwrap();
    p.a.eng.lock().post_send(qa2, send(2, WrOpcode::Send, vec![p.a.sge(BASE, 8)])).unwrap();
    p.settle();
    assert_eq!(statuses(&p.a.cqes()), vec![(1, WcStatus::RetryExcErr), (2, WcStatus::WrFlushErr)]);
    let c = p.a.eng.lock().qp_counters(qa2).unwrap();
    assert_eq!(c.timeouts, 4, "initial timeout + 3 retries");
    assert_eq!(c.retransmissions, 3 * 2);
    // 4 timeouts of 4.096 µs × 2^12 each.
    let elapsed = p.clock.now_ns() - t0;
    assert!((4 * (4096 << 12)..5 * (4096 << 12)).contains(&elapsed), "{elapsed}");
}

#[test]
fn rnr_retry_exceeded_and_rnr_with_late_receive() {
    let p = Pair::new(1 << 16, &[]);
    // rnr_retry 2, no receive ever posted.
    let qa = p.a.create_qp(QpType::Rc, None);
    let qb = p.b.create_qp(QpType::Rc, None);
    p.a.connect(qa, QpAttrUpdate { rnr_retry: Some(2), ..conn(2, qb, 1024) });
    p.b.connect(qb, QpAttrUpdate { min_rnr_timer: Some(14), ..conn(1, qa, 1024) });
    let t0 = p.clock.now_ns();
    p.a.eng.lock().post_send(qa, send(1, WrOpcode::Send, vec![p.a.sge(BASE, 8)])).unwrap();
    p.settle();
    assert_eq!(statuses(&p.a.cqes()), vec![(1, WcStatus::RnrRetryExcErr)]);
    assert_eq!(p.b.eng.lock().qp_counters(qb).unwrap().rnr_nak_sent, 3);
    // Two waits of the advertised timer (code 14 = 1.28 ms).
    let elapsed = p.clock.now_ns() - t0;
    assert!((2 * 1_280_000..3 * 1_280_000).contains(&elapsed), "{elapsed}");

    // Infinite RNR retry; the receive is posted late and the message lands.
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    p.a.mem.set(BASE + 64, b"late receive");
    p.a.eng.lock().post_send(qa, send(2, WrOpcode::Send, vec![p.a.sge(BASE + 64, 12)])).unwrap();
    let mut rounds = 0;
    assert!(
        !p.run(|p| {
            rounds += 1;
            p.b.eng.lock().qp_counters(qb).unwrap().rnr_nak_sent >= 5
        }) || rounds > 0
    );
    p.b.eng.lock().post_recv(qb, RecvWr { wr_id: 3, sgl: vec![p.b.sge(BASE + 4096, 64)] }).unwrap();
    assert!(p.run(|p| p.b.cqes().iter().any(|c| c.wr_id == 3)));
    assert!(p.b.mem.get(BASE + 4096, 12) == b"late receive", "bytes differ");
    p.settle();
    assert!(statuses(&p.a.cqes()).contains(&(2, WcStatus::Success)));
}

#[test]
fn rnr_nak_timer_table() {
    use super::transport::RNR_TIMER_US;
    assert_eq!((RNR_TIMER_US[0], RNR_TIMER_US[1], RNR_TIMER_US[14], RNR_TIMER_US[31]), (655_360, 10, 1280, 491_520));
    assert_eq!(super::transport::ack_timeout_ns(0), None);
    assert_eq!(super::transport::ack_timeout_ns(1), Some(8192));
    assert_eq!(super::transport::ack_timeout_ns(14), Some(4096 << 14));
}

#[test]
fn cq_overrun() {
    let p = Pair::new(1 << 16, &[]);
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    let small = {
        let mut e = p.a.eng.lock();
        e.create_cq(1).unwrap()
    };
    // Move a's QP to the small CQ by creating a new one on it.
    let q = {
        let mut e = p.a.eng.lock();
        let q = e
            .create_qp(QpCreate {
                qp_type: QpType::Rc,
                pd: p.a.pd,
                send_cq: Some(small),
                recv_cq: Some(small),
                srq: None,
                xrcd: None,
                log_sq_size: 6,
                log_rq_size: 6,
                sq_sig_all: true,
                uid: 0,
            })
            .unwrap();
        e.modify_qp(q, QpTransition::RstToInit, &QpAttrUpdate { access: Some(ALL), ..Default::default() }).unwrap();
        q
    };
    let qb2 = p.b.create_qp(QpType::Rc, None);
    p.a.connect(q, conn(2, qb2, 1024));
    p.b.connect(qb2, conn(1, q, 1024));
    let _ = (qa, qb);
    for i in 0..3 {
        let mut w = send(i, WrOpcode::Write, vec![p.a.sge(BASE, 8)]);
        w.remote_addr = BASE;
        w.rkey = p.b.key;
        p.a.eng.lock().post_send(q, w).unwrap();
    }
    p.settle();
    assert_eq!(p.a.rec.take(small).len(), 2, "a 2-entry CQ takes two completions");
    let ev = p.a.rec.events.lock().unwrap().clone();
    assert!(ev.contains(&Event::CqError { cqn: small }), "{ev:?}");
    // The driver consumes: the next completion (a flush) fits again.
    p.a.eng.lock().cq_consumed(small, 2);
    p.a.eng.lock().modify_qp(q, QpTransition::ToErr, &QpAttrUpdate::default()).unwrap();
    p.a.eng.lock().post_send(q, send(9, WrOpcode::Send, vec![])).unwrap();
    assert!(p.a.rec.take(small).iter().any(|c| c.wr_id == 9 && c.status == WcStatus::WrFlushErr));
}
