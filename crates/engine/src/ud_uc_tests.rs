//! UD and UC transport tests: Q_Keys, sources, unacknowledged traffic, dropped messages.

use super::test_support::*;
use super::*;

#[test]
fn ud_send_qkey_check_and_source() {
    let p = Pair::new(1 << 16, &[]);
    let qa = p.a.create_qp(QpType::Ud, None);
    let qb = p.b.create_qp(QpType::Ud, None);
    p.a.connect(qa, QpAttrUpdate { path_mtu: Some(Mtu(1024)), ..Default::default() });
    p.b.connect(qb, QpAttrUpdate::default());
    p.b.eng.lock().post_recv(qb, RecvWr { wr_id: 1, sgl: vec![p.b.sge(BASE, 2048)] }).unwrap();
    p.b.eng.lock().post_recv(qb, RecvWr { wr_id: 2, sgl: vec![p.b.sge(BASE + 4096, 2048)] }).unwrap();
    p.a.mem.set(BASE, &pattern(1, 1000));
    let ud = |qkey| UdDest { av: AddressVector { dlid: 2, ..Default::default() }, remote_qpn: qb, remote_qkey: qkey };
    let mut w = send(10, WrOpcode::SendImm, vec![p.a.sge(BASE, 1000)]);
    w.imm = 5;
    w.ud = Some(ud(0x1234));
    p.a.eng.lock().post_send(qa, w.clone()).unwrap();
    w.ud = Some(ud(0x9999)); // wrong Q_Key: dropped by b
    w.wr_id = 11;
    p.a.eng.lock().post_send(qa, w.clone()).unwrap();
    // Too long for the MTU: local length error.
    let mut big = send(12, WrOpcode::Send, vec![p.a.sge(BASE, 1025)]);
    big.ud = Some(ud(0x1234));
    p.a.eng.lock().post_send(qa, big).unwrap();
    p.settle();
    let rx = p.b.cqes();
    assert_eq!(rx.len(), 1);
    let c = rx[0];
    assert_eq!((c.wr_id, c.byte_len, c.src_qp, c.slid, c.grh, c.imm), (1, 1040, qa, 1, false, Some(5)));
    assert!(p.b.mem.get(BASE + 40, 1000) == pattern(1, 1000), "bytes differ");
    // No GRH on the packet (an IB port): the GRH area is left as it was.
    assert_eq!(p.b.mem.get(BASE, 40), vec![0; 40]);
    assert_eq!(p.b.eng.lock().qp_counters(qb).unwrap().qkey_violations, 1);
    let tx = p.a.cqes();
    assert_eq!(
        tx.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        vec![(10, WcStatus::Success), (11, WcStatus::Success), (12, WcStatus::LocLenErr)]
    );
}

#[test]
fn uc_send_and_write_without_acks() {
    let p = Pair::new(1 << 16, &[]);
    let (qa, qb) = p.qps(QpType::Uc, 256);
    p.b.eng.lock().post_recv(qb, RecvWr { wr_id: 1, sgl: vec![p.b.sge(BASE, 4096)] }).unwrap();
    p.a.mem.set(BASE, &pattern(3, 1000));
    p.a.eng.lock().post_send(qa, send(1, WrOpcode::Send, vec![p.a.sge(BASE, 1000)])).unwrap();
    let mut w = send(2, WrOpcode::Write, vec![p.a.sge(BASE, 1000)]);
    w.remote_addr = BASE + 0x2000;
    w.rkey = p.b.key;
    p.a.eng.lock().post_send(qa, w).unwrap();
    // UC has no READ: local QP operation error.
    p.a.eng.lock().post_send(qa, send(3, WrOpcode::Read, vec![p.a.sge(BASE, 8)])).unwrap();
    p.settle();
    assert!(p.b.mem.get(BASE, 1000) == pattern(3, 1000), "bytes differ");
    assert!(p.b.mem.get(BASE + 0x2000, 1000) == pattern(3, 1000), "bytes differ");
    let tx = p.a.cqes();
    assert_eq!(
        tx.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        vec![(1, WcStatus::Success), (2, WcStatus::Success), (3, WcStatus::LocQpOpErr)]
    );
    assert_eq!(p.b.eng.lock().qp_counters(qb).unwrap().tx_packets, 0, "UC sends no ACKs");
}

/// UC under packet loss: every message arrives whole or not at all.
#[test]
fn uc_drops_messages_with_missing_packets_whole() {
    let f = FaultConfig { seed: 5, tx: FaultRates { drop: 0.05, ..Default::default() }, ..Default::default() };
    let p = Pair::new(1 << 20, &[f]);
    let (qa, qb) = p.qps(QpType::Uc, 256);
    for i in 0..200u64 {
        p.b.eng.lock().post_recv(qb, RecvWr { wr_id: i, sgl: vec![p.b.sge(BASE + i * 4096, 4096)] }).unwrap();
    }
    for i in 0..100u64 {
        p.a.mem.set(BASE + i * 2048, &[i as u8; 2048]);
        let mut w = send(i, WrOpcode::SendImm, vec![p.a.sge(BASE + i * 2048, 1000)]);
        w.imm = i as u32;
        p.a.eng.lock().post_send(qa, w).unwrap();
        p.settle();
    }
    let rx = p.b.cqes();
    let dropped = p.net.port(0).counters.snapshot().fault_dropped;
    assert!(dropped > 0 && rx.len() < 100 && rx.len() > 50, "{} arrived, {dropped} packets dropped", rx.len());
    // Receives are used in order by the messages that arrived, each whole.
    for (k, c) in rx.iter().enumerate() {
        assert_eq!(c.wr_id, k as u64);
        assert_eq!(c.byte_len, 1000);
        let i = c.imm.unwrap() as u8;
        assert!(p.b.mem.get(BASE + k as u64 * 4096, 1000) == vec![i; 1000], "bytes differ");
    }
}
