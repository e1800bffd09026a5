//! Traffic whose address vectors carry a GRH (`is_global`, DGID = a port
//! GID): RC, UC and UD between two engines and in loopback. The port routes
//! by the DLID; the receiver checks the DGID against its GID table.

use super::test_support::*;
use super::*;
use vrnic_wire::grh;

/// A global AV to `lid` with DGID `dgid` (SGID index `sgid_index`).
fn global(lid: u16, dgid: [u8; 16], sgid_index: u8) -> AddressVector {
    AddressVector {
        dlid: lid,
        grh: true,
        sgid_index,
        hop_limit: 64,
        traffic_class: 0x18,
        flow_label: 0x5a5a5,
        dgid,
        ..Default::default()
    }
}

fn conn_grh(peer_lid: u16, peer_qpn: u32, mtu: u16, dgid: [u8; 16]) -> QpAttrUpdate {
    QpAttrUpdate { av: Some(global(peer_lid, dgid, 0)), ..conn(peer_lid, peer_qpn, mtu) }
}

/// On `a`: two QPs of type `t` whose AVs point at each other through a's
/// own LID and GID 0 (loopback), or QP pairs across a and b.
fn pair_qps(p: &Pair, t: QpType, loopback: bool) -> (u32, &Node, u32, &Node) {
    let (na, nb) = if loopback { (&p.a, &p.a) } else { (&p.a, &p.b) };
    let (lid_a, lid_b) = if loopback { (1, 1) } else { (1, 2) };
    let (gid_a, gid_b) = if loopback { (gid0(0xa1), gid0(0xa1)) } else { (gid0(0xa1), gid0(0xb1)) };
    let qa = na.create_qp(t, None);
    let qb = nb.create_qp(t, None);
    na.connect(qa, conn_grh(lid_b, qb, 1024, gid_b));
    nb.connect(qb, conn_grh(lid_a, qa, 1024, gid_a));
    (qa, na, qb, nb)
}

/// RC send, write, read and atomic with a GRH on every packet, both ways
/// (responses too): everything completes, nothing is dropped.
fn rc_with_grh(loopback: bool) {
    let p = Pair::new(1 << 20, &[]);
    let (qa, na, qb, nb) = pair_qps(&p, QpType::Rc, loopback);
    nb.eng.lock().post_recv(qb, RecvWr { wr_id: 100, sgl: vec![nb.sge(BASE + 0x80000, 8192)] }).unwrap();
    na.mem.set(BASE, &pattern(1, 5000));
    na.eng.lock().post_send(qa, send(1, WrOpcode::Send, vec![na.sge(BASE, 5000)])).unwrap();
    let mut w = send(2, WrOpcode::Write, vec![na.sge(BASE, 3000)]);
    w.remote_addr = BASE + 0x40000;
    w.rkey = nb.key;
    na.eng.lock().post_send(qa, w).unwrap();
    nb.mem.set(BASE + 0x60000, &pattern(2, 4000));
    let mut r = send(3, WrOpcode::Read, vec![na.sge(BASE + 0x10000, 4000)]);
    r.remote_addr = BASE + 0x60000;
    r.rkey = nb.key;
    na.eng.lock().post_send(qa, r).unwrap();
    nb.mem.set(BASE + 0x70000, &5u64.to_le_bytes());
    let mut fa = send(4, WrOpcode::FetchAdd, vec![na.sge(BASE + 0x20000, 8)]);
    fa.remote_addr = BASE + 0x70000;
    fa.rkey = nb.key;
    fa.swap_add = 3;
    na.eng.lock().post_send(qa, fa).unwrap();
    let want_tx = if loopback { 5 } else { 4 }; // loopback: a's CQ also gets b's receive
    assert!(p.run(|p| p.a.cqes().len() >= want_tx));
    let tx: Vec<_> = na.cqes().iter().filter(|c| c.qpn == qa).map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(tx, (1..=4).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>());
    let rx: Vec<_> = nb.cqes().into_iter().filter(|c| c.qpn == qb).collect();
    assert_eq!((rx[0].wr_id, rx[0].status, rx[0].byte_len), (100, WcStatus::Success, 5000));
    assert!(nb.mem.get(BASE + 0x80000, 5000) == pattern(1, 5000), "send bytes");
    assert!(nb.mem.get(BASE + 0x40000, 3000) == pattern(1, 3000), "write bytes");
    assert!(na.mem.get(BASE + 0x10000, 4000) == pattern(2, 4000), "read bytes");
    assert!(
        na.mem.get(BASE + 0x20000, 8) == 5u64.to_le_bytes() && nb.mem.get(BASE + 0x70000, 8) == 8u64.to_le_bytes(),
        "fetch-add"
    );
    for i in 0..2 {
        let c = p.net.port(i).counters.snapshot();
        assert_eq!((c.tx_no_route, c.rx_dgid_mismatch, c.rx_malformed), (0, 0, 0), "port {i}");
    }
    assert_eq!(p.a.eng.lock().counters().retransmissions, 0);
    // Every packet, requests and responses, went with a GRH: the port
    // counts each 44 bytes (envelope + GRH) longer than the engine built it.
    let nodes: &[(usize, &Node)] = if loopback { &[(0, &p.a)] } else { &[(0, &p.a), (1, &p.b)] };
    for &(i, n) in nodes {
        let (c, e) = (p.net.port(i).counters.snapshot(), n.eng.lock().counters());
        assert!(
            c.tx_packets >= 4 && c.tx_packets == e.tx_packets,
            "port {i}: {} packets, engine {}",
            c.tx_packets,
            e.tx_packets
        );
        assert_eq!(c.tx_bytes - e.tx_bytes, 44 * c.tx_packets, "port {i}");
    }
}

#[test]
fn rc_with_grh_between_two_ports() {
    rc_with_grh(false);
}

#[test]
fn rc_with_grh_in_loopback() {
    rc_with_grh(true);
}

#[test]
fn uc_with_grh_both_topologies() {
    for loopback in [false, true] {
        let p = Pair::new(1 << 20, &[]);
        let (qa, na, qb, nb) = pair_qps(&p, QpType::Uc, loopback);
        nb.eng.lock().post_recv(qb, RecvWr { wr_id: 7, sgl: vec![nb.sge(BASE + 0x80000, 8192)] }).unwrap();
        na.mem.set(BASE, &pattern(3, 2500));
        na.eng.lock().post_send(qa, send(1, WrOpcode::Send, vec![na.sge(BASE, 2500)])).unwrap();
        p.settle();
        let rx: Vec<_> = nb.cqes().into_iter().filter(|c| c.qpn == qb).collect();
        assert_eq!(rx.len(), 1, "loopback {loopback}");
        assert_eq!((rx[0].wr_id, rx[0].status, rx[0].byte_len), (7, WcStatus::Success, 2500));
        assert!(nb.mem.get(BASE + 0x80000, 2500) == pattern(3, 2500));
    }
}

/// UD with a GRH: the receive buffer's GRH area holds the GRH as it
/// travelled (SGID = the sender's GID 0), the completion has the GRH flag,
/// and an AH built from it the way ibv_init_ah_from_wc does (DLID = SLID,
/// DGID = the GRH's SGID) reaches the sender back.
#[test]
fn ud_with_grh_writes_the_grh_and_answers_through_it() {
    for loopback in [false, true] {
        let p = Pair::new(1 << 20, &[]);
        let (na, nb) = if loopback { (&p.a, &p.a) } else { (&p.a, &p.b) };
        let (lid_a, lid_b, gid_a, gid_b) =
            if loopback { (1, 1, gid0(0xa1), gid0(0xa1)) } else { (1, 2, gid0(0xa1), gid0(0xb1)) };
        let qa = na.create_qp(QpType::Ud, None);
        let qb = nb.create_qp(QpType::Ud, None);
        let qkey = QpAttrUpdate { qkey: Some(0x1234), ..Default::default() };
        na.connect(qa, qkey.clone());
        nb.connect(qb, qkey);
        nb.eng.lock().post_recv(qb, RecvWr { wr_id: 1, sgl: vec![nb.sge(BASE + 0x80000, 2048)] }).unwrap();
        na.eng.lock().post_recv(qa, RecvWr { wr_id: 2, sgl: vec![na.sge(BASE + 0x90000, 2048)] }).unwrap();
        na.mem.set(BASE, &pattern(4, 700));
        let mut w = send(10, WrOpcode::Send, vec![na.sge(BASE, 700)]);
        w.ud = Some(UdDest { av: global(lid_b, gid_b, 0), remote_qpn: qb, remote_qkey: 0x1234 });
        na.eng.lock().post_send(qa, w).unwrap();
        p.settle();
        let rx: Vec<_> = nb.cqes().into_iter().filter(|c| c.qpn == qb).collect();
        assert_eq!(rx.len(), 1, "loopback {loopback}");
        let c = rx[0];
        assert_eq!((c.status, c.byte_len, c.src_qp, c.slid, c.grh), (WcStatus::Success, 740, qa, lid_a, true));
        assert!(nb.mem.get(BASE + 0x80000 + 40, 700) == pattern(4, 700));
        let area = nb.mem.get(BASE + 0x80000, 40);
        let g = grh::Repr::parse(&grh::Packet::new_checked(&area[..]).unwrap()).unwrap();
        assert_eq!(
            (g.sgid, g.dgid, g.next_header, g.hop_limit, g.traffic_class, g.flow_label),
            (gid_a, gid_b, 0x1b, 64, 0x18, 0x5a5a5)
        );
        // PayLen: BTH (12) + DETH (8) + 700 payload + ICRC (4).
        assert_eq!(g.payload_len, 724);
        // Answer through an AH made from the completion and the GRH.
        let mut back = send(11, WrOpcode::Send, vec![nb.sge(BASE + 0x80000 + 40, 100)]);
        back.ud = Some(UdDest { av: global(c.slid, g.sgid, 0), remote_qpn: c.src_qp, remote_qkey: 0x1234 });
        nb.eng.lock().post_send(qb, back).unwrap();
        p.settle();
        let rx: Vec<_> = na.cqes().into_iter().filter(|c| c.qpn == qa && c.wr_id == 2).collect();
        assert_eq!(rx.len(), 1, "the answer arrived (loopback {loopback})");
        assert_eq!((rx[0].status, rx[0].byte_len, rx[0].grh, rx[0].src_qp), (WcStatus::Success, 140, true, qb));
        let g = grh::Repr::parse(&grh::Packet::new_checked(&na.mem.get(BASE + 0x90000, 40)[..]).unwrap()).unwrap();
        assert_eq!((g.sgid, g.dgid), (gid_b, gid_a));
    }
}

/// A DGID that is not the receiver's: dropped and counted at the receiving
/// port. UD: the message never arrives. RC: when the responder's own path
/// names a wrong DGID, its ACKs are the packets dropped (responses carry
/// the responder QP's GRH), so the requester runs out of retries.
#[test]
fn wrong_dgid_is_dropped_and_counted() {
    let p = Pair::new(1 << 20, &[]);
    let qa = p.a.create_qp(QpType::Ud, None);
    let qb = p.b.create_qp(QpType::Ud, None);
    p.a.connect(qa, QpAttrUpdate { qkey: Some(1), ..Default::default() });
    p.b.connect(qb, QpAttrUpdate { qkey: Some(1), ..Default::default() });
    p.b.eng.lock().post_recv(qb, RecvWr { wr_id: 1, sgl: vec![p.b.sge(BASE, 2048)] }).unwrap();
    let mut w = send(10, WrOpcode::Send, vec![p.a.sge(BASE, 10)]);
    w.ud = Some(UdDest { av: global(2, gid0(0xa1), 0), remote_qpn: qb, remote_qkey: 1 });
    p.a.eng.lock().post_send(qa, w).unwrap();
    p.settle();
    assert!(p.b.cqes().is_empty());
    assert_eq!(p.net.port(1).counters.snapshot().rx_dgid_mismatch, 1);

    let p = Pair::new(1 << 20, &[]);
    let qa = p.a.create_qp(QpType::Rc, None);
    let qb = p.b.create_qp(QpType::Rc, None);
    p.a.connect(qa, QpAttrUpdate { retry_cnt: Some(2), ..conn_grh(2, qb, 1024, gid0(0xb1)) });
    p.b.connect(qb, conn_grh(1, qa, 1024, gid0(0xdead)));
    let mut w = send(1, WrOpcode::Write, vec![p.a.sge(BASE, 100)]);
    w.remote_addr = BASE + 0x1000;
    w.rkey = p.b.key;
    p.a.eng.lock().post_send(qa, w).unwrap();
    assert!(p.run(|p| !p.a.cqes().is_empty()));
    assert_eq!(p.a.cqes()[0].status, WcStatus::RetryExcErr);
    let (ca, cb) = (p.net.port(0).counters.snapshot(), p.net.port(1).counters.snapshot());
    assert_eq!(cb.rx_dgid_mismatch, 0, "the requests were for b");
    assert!(ca.rx_dgid_mismatch >= 3, "every ACK dropped at a: {}", ca.rx_dgid_mismatch);
}

/// A global AV whose SGID index names no GID of the port is not sent: the
/// WR completes with a local QP operation error.
#[test]
fn sgid_index_outside_the_gid_table_fails_the_wr() {
    let p = Pair::new(1 << 20, &[]);
    let qa = p.a.create_qp(QpType::Ud, None);
    p.a.connect(qa, QpAttrUpdate { qkey: Some(1), ..Default::default() });
    let mut w = send(10, WrOpcode::Send, vec![p.a.sge(BASE, 10)]);
    w.ud = Some(UdDest { av: global(2, gid0(0xb1), 5), remote_qpn: 9, remote_qkey: 1 });
    p.a.eng.lock().post_send(qa, w).unwrap();
    p.settle();
    let tx = p.a.cqes();
    assert_eq!((tx[0].wr_id, tx[0].status), (10, WcStatus::LocQpOpErr));
    assert_eq!(p.net.port(0).counters.snapshot().tx_packets, 0);
    // Index 1 is in a's table (fe80::): sent, and dropped at b (not b's GID).
    let mut w = send(11, WrOpcode::Send, vec![p.a.sge(BASE, 10)]);
    w.ud = Some(UdDest { av: global(2, gid0(0xb1), 1), remote_qpn: 9, remote_qkey: 1 });
    let qa2 = p.a.create_qp(QpType::Ud, None);
    p.a.connect(qa2, QpAttrUpdate { qkey: Some(1), ..Default::default() });
    p.a.eng.lock().post_send(qa2, w).unwrap();
    p.settle();
    assert_eq!(p.net.port(0).counters.snapshot().tx_packets, 1);
}
