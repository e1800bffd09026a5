//! RC transport tests: SEND/WRITE/READ/atomics, signaling, SRQs, fences.

use super::test_support::*;
use super::*;

#[test]
fn rc_send_recv_single_multi_and_zero_length() {
    let p = Pair::new(1 << 20, &[]);
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    let sizes = [100usize, 10_000, 0, 1024, 1025];
    let mut off = 0u64;
    for (i, &n) in sizes.iter().enumerate() {
        p.b.eng
            .lock()
            .post_recv(qb, RecvWr { wr_id: 100 + i as u64, sgl: vec![p.b.sge(BASE + 0x80000 + off, 16384)] })
            .unwrap();
        p.a.mem.set(BASE + off, &pattern(i as u64, n));
        let mut wr = send(i as u64, WrOpcode::Send, vec![p.a.sge(BASE + off, n as u32)]);
        if i == 1 {
            wr.opcode = WrOpcode::SendImm;
            wr.imm = 0xdeadbeef;
        }
        p.a.eng.lock().post_send(qa, wr).unwrap();
        off += 16384;
    }
    assert!(p.run(|p| p.b.cqes().len() == sizes.len() && p.a.cqes().len() == sizes.len()));
    let rx = p.b.cqes();
    let mut off = 0u64;
    for (i, &n) in sizes.iter().enumerate() {
        let c = rx[i];
        assert_eq!(
            (c.wr_id, c.status, c.opcode, c.byte_len as usize, c.qpn, c.src_qp),
            (100 + i as u64, WcStatus::Success, WcOpcode::Recv, n, qb, qa)
        );
        assert_eq!(c.imm, if i == 1 { Some(0xdeadbeef) } else { None });
        assert!(p.b.mem.get(BASE + 0x80000 + off, n) == pattern(i as u64, n), "message {i} byte for byte");
        off += 16384;
    }
    let tx = p.a.cqes();
    assert!(tx
        .iter()
        .enumerate()
        .all(|(i, c)| c.wr_id == i as u64 && c.status == WcStatus::Success && c.opcode == WcOpcode::Send));
    // 10,000 bytes at MTU 1024 is 10 packets; zero-length is one.
    assert_eq!(p.a.eng.lock().qp_counters(qa).unwrap().tx_packets, 1 + 10 + 1 + 1 + 2);
    assert_eq!(p.b.eng.lock().counters().retransmissions, 0);
}

#[test]
fn rc_write_write_imm_read_and_atomics() {
    let p = Pair::new(1 << 20, &[]);
    let (qa, qb) = p.qps(QpType::Rc, 512);
    let data = pattern(7, 3000);
    p.a.mem.set(BASE, &data);
    let mut w = send(1, WrOpcode::Write, vec![p.a.sge(BASE, 3000)]);
    w.remote_addr = BASE + 0x1000;
    w.rkey = p.b.key;
    p.a.eng.lock().post_send(qa, w.clone()).unwrap();
    // WRITE_IMM consumes a receive and reports the length, not the data.
    p.b.eng.lock().post_recv(qb, RecvWr { wr_id: 9, sgl: vec![] }).unwrap();
    w.wr_id = 2;
    w.opcode = WrOpcode::WriteImm;
    w.imm = 77;
    w.remote_addr = BASE + 0x2000;
    p.a.eng.lock().post_send(qa, w).unwrap();
    // READ 5000 bytes of b's memory into a's.
    p.b.mem.set(BASE + 0x8000, &pattern(8, 5000));
    let mut r = send(3, WrOpcode::Read, vec![p.a.sge(BASE + 0x10000, 2000), p.a.sge(BASE + 0x20000, 3000)]);
    r.remote_addr = BASE + 0x8000;
    r.rkey = p.b.key;
    p.a.eng.lock().post_send(qa, r).unwrap();
    // Atomics on b's u64 at 0xa000 (value 40).
    p.b.mem.set(BASE + 0xa000, &40u64.to_le_bytes());
    let mut fa = send(4, WrOpcode::FetchAdd, vec![p.a.sge(BASE + 0x30000, 8)]);
    fa.remote_addr = BASE + 0xa000;
    fa.rkey = p.b.key;
    fa.swap_add = 2;
    p.a.eng.lock().post_send(qa, fa).unwrap();
    let mut cs = send(5, WrOpcode::CmpSwap, vec![p.a.sge(BASE + 0x30008, 8)]);
    cs.remote_addr = BASE + 0xa000;
    cs.rkey = p.b.key;
    cs.compare = 42;
    cs.swap_add = 1000;
    p.a.eng.lock().post_send(qa, cs).unwrap();
    assert!(p.run(|p| p.a.cqes().len() == 5));
    let tx = p.a.cqes();
    let got: Vec<_> = tx.iter().map(|c| (c.wr_id, c.status, c.opcode, c.byte_len)).collect();
    assert_eq!(
        got,
        vec![
            (1, WcStatus::Success, WcOpcode::RdmaWrite, 3000),
            (2, WcStatus::Success, WcOpcode::RdmaWrite, 3000),
            (3, WcStatus::Success, WcOpcode::RdmaRead, 5000),
            (4, WcStatus::Success, WcOpcode::FetchAdd, 8),
            (5, WcStatus::Success, WcOpcode::CompSwap, 8),
        ]
    );
    assert!(p.b.mem.get(BASE + 0x1000, 3000) == data, "bytes differ");
    assert!(p.b.mem.get(BASE + 0x2000, 3000) == data, "bytes differ");
    let rx = p.b.cqes();
    assert_eq!(rx.len(), 1);
    assert_eq!((rx[0].wr_id, rx[0].opcode, rx[0].byte_len, rx[0].imm), (9, WcOpcode::RecvRdmaWithImm, 3000, Some(77)));
    let mut read = p.a.mem.get(BASE + 0x10000, 2000);
    read.extend(p.a.mem.get(BASE + 0x20000, 3000));
    assert!(read == pattern(8, 5000), "bytes differ");
    assert!(p.a.mem.get(BASE + 0x30000, 8) == 40u64.to_le_bytes(), "fetch-add returns the old value");
    assert!(p.a.mem.get(BASE + 0x30008, 8) == 42u64.to_le_bytes(), "cmp-swap returns the old value");
    assert!(p.b.mem.get(BASE + 0xa000, 8) == 1000u64.to_le_bytes(), "bytes differ");
}

#[test]
fn unsignaled_wrs_and_sq_sig_all() {
    let p = Pair::new(1 << 16, &[]);
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    for i in 0..4 {
        p.b.eng.lock().post_recv(qb, RecvWr { wr_id: i, sgl: vec![p.b.sge(BASE, 64)] }).unwrap();
        let mut w = send(i, WrOpcode::Send, vec![p.a.sge(BASE, 8)]);
        w.signaled = i == 3;
        p.a.eng.lock().post_send(qa, w).unwrap();
    }
    assert!(p.run(|p| p.b.cqes().len() == 4));
    p.settle();
    let tx = p.a.cqes();
    assert_eq!(tx.len(), 1, "only the signaled WR completes");
    assert_eq!(tx[0].wr_id, 3);
    assert_eq!(p.a.eng.lock().qps.obj(qa).unwrap().rt.sq_outstanding(), 0);
}

#[test]
fn srq_shared_by_two_qps_with_limit_event() {
    let p = Pair::new(1 << 16, &[]);
    let srq = p.b.eng.lock().create_srq(p.b.pd, 6, None, None, 0).unwrap();
    let qb1 = p.b.create_qp(QpType::Rc, Some(srq));
    let qb2 = p.b.create_qp(QpType::Rc, Some(srq));
    let qa1 = p.a.create_qp(QpType::Rc, None);
    let qa2 = p.a.create_qp(QpType::Rc, None);
    for (a, b) in [(qa1, qb1), (qa2, qb2)] {
        p.a.connect(a, conn(2, b, 1024));
        p.b.connect(b, conn(1, a, 1024));
    }
    for i in 0..4 {
        p.b.eng.lock().post_srq_recv(srq, RecvWr { wr_id: i, sgl: vec![p.b.sge(BASE + i * 256, 256)] }).unwrap();
    }
    assert!(p.b.eng.lock().post_recv(qb1, RecvWr::default()).is_err(), "a QP on an SRQ has no RQ");
    p.b.eng.lock().arm_srq(srq, 2).unwrap();
    for (i, q) in [qa1, qa2, qa1].into_iter().enumerate() {
        p.a.mem.set(BASE + i as u64 * 16, &[i as u8 + 1; 16]);
        p.a.eng.lock().post_send(q, send(i as u64, WrOpcode::Send, vec![p.a.sge(BASE + i as u64 * 16, 16)])).unwrap();
    }
    assert!(p.run(|p| p.b.cqes().len() == 3));
    let rx = p.b.cqes();
    assert_eq!(rx.iter().map(|c| (c.wr_id, c.qpn)).collect::<Vec<_>>(), vec![(0, qb1), (1, qb2), (2, qb1)]);
    for i in 0..3u64 {
        assert!(p.b.mem.get(BASE + i * 256, 16) == vec![i as u8 + 1; 16], "bytes differ");
    }
    let ev = p.b.rec.events.lock().unwrap().clone();
    assert_eq!(ev.iter().filter(|e| matches!(e, Event::SrqLimit { .. })).count(), 1, "{ev:?}");
    assert!(ev.contains(&Event::SrqLimit { srqn: srq }));
}

#[test]
fn fence_waits_for_earlier_reads() {
    let p = Pair::new(1 << 16, &[]);
    let (qa, qb) = p.qps(QpType::Rc, 1024);
    p.b.mem.set(BASE + 0x100, b"before");
    let mut r = send(1, WrOpcode::Read, vec![p.a.sge(BASE, 6)]);
    r.remote_addr = BASE + 0x100;
    r.rkey = p.b.key;
    p.a.eng.lock().post_send(qa, r).unwrap();
    // A fenced WRITE to the same place must not overtake the READ.
    p.a.mem.set(BASE + 0x200, b"after!");
    let mut w = send(2, WrOpcode::Write, vec![p.a.sge(BASE + 0x200, 6)]);
    w.remote_addr = BASE + 0x100;
    w.rkey = p.b.key;
    w.fence = true;
    p.a.eng.lock().post_send(qa, w).unwrap();
    assert_eq!(p.a.eng.lock().qp_counters(qa).unwrap().tx_packets, 1, "the fenced write waits");
    p.settle();
    assert!(p.a.mem.get(BASE, 6) == b"before", "bytes differ");
    assert!(p.b.mem.get(BASE + 0x100, 6) == b"after!", "bytes differ");
    let _ = qb;
}

/// The engine hands an atomic's original value to its completion sink as a
/// number; the bytes that land in the requester's buffer are in the byte
/// order the sink (the personality) chooses.
#[test]
fn atomic_result_byte_order_is_the_sinks() {
    let p = Pair::new(1 << 16, &[]);
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    p.b.mem.set(BASE + 0x800, &0x0102_0304_0506_0708u64.to_le_bytes());
    for (i, be) in [false, true].into_iter().enumerate() {
        p.a.rec.atomic_be.store(be, std::sync::atomic::Ordering::Relaxed);
        let mut fa = send(i as u64, WrOpcode::FetchAdd, vec![p.a.sge(BASE + 0x100, 8)]);
        fa.remote_addr = BASE + 0x800;
        fa.rkey = p.b.key;
        fa.swap_add = 0x10;
        p.a.eng.lock().post_send(qa, fa).unwrap();
        assert!(p.run(|p| p.a.cqes().len() == i + 1));
        let orig = 0x0102_0304_0506_0708u64 + 0x10 * i as u64;
        let want = if be { orig.to_be_bytes() } else { orig.to_le_bytes() };
        assert_eq!(p.a.mem.get(BASE + 0x100, 8), want, "big-endian: {be}");
    }
    assert_eq!(
        p.b.mem.get(BASE + 0x800, 8),
        (0x0102_0304_0506_0708u64 + 0x20).to_le_bytes(),
        "the target is in host order"
    );
}

/// A send's data mixing inline bytes and SGL entries (as mlx5 WQEs may):
/// inline first by default, any interleaving through `SendWr::order`; at
/// MTU 256 the packet boundaries fall inside inline runs and SGL runs alike.
/// READ with inline data and an `order` that claims more than the WR holds
/// fail cleanly.
#[test]
fn rc_send_of_inline_and_sgl_data_in_order() {
    let p = Pair::new(1 << 20, &[]);
    let (qa, qb) = p.qps(QpType::Rc, 256);
    for r in 0..3u64 {
        p.b.eng.lock().post_recv(qb, RecvWr { wr_id: r, sgl: vec![p.b.sge(BASE + 0x80000 + r * 4096, 4096)] }).unwrap();
    }
    let (a, b, c) = (pattern(1, 300), pattern(2, 50), pattern(3, 400));
    p.a.mem.set(BASE, &a);
    p.a.mem.set(BASE + 0x1000, &b);
    p.a.mem.set(BASE + 0x2000, &c);
    let (i1, i2) = (pattern(4, 100), pattern(5, 10));
    // Inline header, then the SGL: the default order (UCX's resend and am_zcopy).
    let mut w = send(1, WrOpcode::Send, vec![p.a.sge(BASE, 300), p.a.sge(BASE + 0x1000, 50)]);
    w.inline = Some(i1.clone());
    assert_eq!(w.length(), 450);
    p.a.eng.lock().post_send(qa, w).unwrap();
    // A(300) | inline 100 | B(50) | inline 10 | C(400).
    let mut w =
        send(2, WrOpcode::Send, vec![p.a.sge(BASE, 300), p.a.sge(BASE + 0x1000, 50), p.a.sge(BASE + 0x2000, 400)]);
    w.inline = Some([i1.clone(), i2.clone()].concat());
    w.order = vec![Run::Sges(1), Run::Inline(100), Run::Sges(1), Run::Inline(10), Run::Sges(1)];
    assert_eq!(w.length(), 860);
    p.a.eng.lock().post_send(qa, w).unwrap();
    assert!(p.run(|p| p.b.cqes().len() == 2 && p.a.cqes().len() == 2));
    assert_eq!(p.b.mem.get(BASE + 0x80000, 450), [&i1[..], &a, &b].concat(), "inline, then the SGL");
    assert_eq!(p.b.mem.get(BASE + 0x81000, 860), [&a[..], &i1, &b, &i2, &c].concat(), "runs in order");
    // An order past the WR's data: a local error, not a panic; READ with inline data: LOC_QP_OP_ERR.
    let (qa, _qb) = p.qps(QpType::Rc, 256);
    let mut w = send(3, WrOpcode::Send, vec![p.a.sge(BASE, 8)]);
    w.inline = Some(vec![1; 4]);
    w.order = vec![Run::Inline(8), Run::Sges(2)];
    p.a.eng.lock().post_send(qa, w).unwrap();
    let (qa, _qb) = p.qps(QpType::Rc, 256);
    let mut w = send(4, WrOpcode::Read, vec![p.a.sge(BASE, 8)]);
    w.inline = Some(vec![1; 4]);
    p.a.eng.lock().post_send(qa, w).unwrap();
    p.settle();
    let tx: Vec<_> = p.a.cqes().iter().map(|c| (c.wr_id, c.status)).collect();
    assert!(tx.contains(&(3, WcStatus::LocProtErr)), "{tx:?}");
    assert!(tx.contains(&(4, WcStatus::LocQpOpErr)), "{tx:?}");
}

/// RDMA through indirect (KLM) keys: the responder's rkey and the requester's lkey each map their range
/// through entries naming the node's physical key; a remote access past the indirect key's entries is a
/// remote access error.
#[test]
fn rdma_through_indirect_keys() {
    let p = Pair::new(1 << 20, &[]);
    let (qa, qb) = p.qps(QpType::Rc, 512);
    let indirect = |n: &Node, start: u64, entries: Vec<(u64, u64)>| {
        let mut e = n.eng.lock();
        let length = entries.iter().map(|&(len, _)| len).sum();
        let entries = entries.into_iter().map(|(len, va)| IndirectEntry { len, key: n.key, va }).collect();
        let idx = e
            .create_mkey(Mkey {
                variant: 0x22,
                pd: n.pd,
                access: ALL,
                start,
                length,
                whole_space: false,
                translation: Translation::Klm { entries },
                free: false,
                uid: 0,
            })
            .unwrap();
        Mkey::key(idx, 0x22)
    };
    // b: a zero-based key whose first 0x800 bytes are at 0x5000 and next 0x800 at 0x1000.
    let rkey = indirect(&p.b, 0, vec![(0x800, BASE + 0x5000), (0x800, BASE + 0x1000)]);
    // a: the data to write gathered from 0x3000.. (0x400) then 0x9000.. (0xc00) through one lkey.
    let lkey = indirect(&p.a, 0x7000_0000, vec![(0x400, BASE + 0x3000), (0xc00, BASE + 0x9000)]);
    let data = pattern(5, 0x1000);
    p.a.mem.set(BASE + 0x3000, &data[..0x400]);
    p.a.mem.set(BASE + 0x9000, &data[0x400..]);
    let mut w = send(1, WrOpcode::Write, vec![Sge { addr: 0x7000_0000, length: 0x1000, lkey }]);
    w.remote_addr = 0;
    w.rkey = rkey;
    p.a.eng.lock().post_send(qa, w).unwrap();
    // Read it back from the middle (across b's two entries) into a's memory at 0x20000.
    let mut r = send(2, WrOpcode::Read, vec![p.a.sge(BASE + 0x20000, 0x200)]);
    r.remote_addr = 0x700;
    r.rkey = rkey;
    p.a.eng.lock().post_send(qa, r).unwrap();
    assert!(p.run(|p| p.a.cqes().len() == 2));
    assert!(p.b.mem.get(BASE + 0x5000, 0x800) == data[..0x800], "bytes differ");
    assert!(p.b.mem.get(BASE + 0x1000, 0x800) == data[0x800..], "bytes differ");
    assert!(p.a.mem.get(BASE + 0x20000, 0x200) == data[0x700..0x900], "bytes differ");
    assert!(p.b.cqes().is_empty(), "plain RDMA consumes no receive on {qb}");
    // One byte past the indirect key: refused by the responder.
    let mut bad = send(3, WrOpcode::Write, vec![p.a.sge(BASE, 2)]);
    bad.remote_addr = 0xfff;
    bad.rkey = rkey;
    p.a.eng.lock().post_send(qa, bad).unwrap();
    assert!(p.run(|p| p.a.cqes().len() == 3));
    let c = p.a.cqes()[2];
    assert_eq!((c.wr_id, c.status), (3, WcStatus::RemAccessErr));
    // Refused whole: the key's last byte (the second entry's, at 0x17ff) keeps what the first WRITE put there.
    assert_ne!(p.a.mem.get(BASE, 1)[0], data[0xfff]);
    assert_eq!(p.b.mem.get(BASE + 0x17ff, 1), [data[0xfff]]);
}
