//! Completion events end to end in the firmware: CQ arm doorbells (trapped
//! UAR store or poll-mode page scan), CQEs from the engine, EQEs counted.

use crate::test_support::*;
use crate::Doorbell;

/// The arm word libmlx5's `mlx5_arm_cq` writes to the CQ doorbell record
/// (`dbrec[1]`) and the UAR CQ doorbell: `sn << 28 | cmd | ci`.
fn arm_word(sn: u8, solicited: bool, ci: u32) -> u32 {
    ((sn as u32 & 3) << 28) | if solicited { 1 << 24 } else { 0 } | (ci & 0x00ff_ffff)
}

/// One SEND of 8 bytes from A (SQ slot `i`) into B's receive slot `i`.
fn send_one(net: &vrnic_fabric::InProcNet, a: &mut Side, b: &mut Side, i: u16) {
    let (qa, sq) = (a.qpn, QP_BUF + 16 * 16);
    b.t.mem.put(QP_BUF + 16 * i as u64, &data_seg(64, b.key, DATA + 0x1000));
    b.t.mem.put(QP_DBR, &(i as u32 + 1).to_be_bytes());
    a.t.mem.put(sq + 64 * i as u64, &ctrl_seg(crate::datapath::wqe::opcode::SEND, i, qa, 2));
    a.t.mem.put(sq + 64 * i as u64 + 16, &data_seg(8, a.key, DATA));
    a.t.mem.put(QP_DBR + 4, &(i as u32 + 1).to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(net, a, b);
}

fn eqes(s: &Side) -> u64 {
    s.t.fw.core.stats.eqes.load(std::sync::atomic::Ordering::Relaxed)
}

/// perftest -e's loop: wait for the event, re-arm (the CQE that raised it
/// not polled yet), poll. The re-arm raised a second EQE for the same CQE,
/// so the next wait woke with nothing to poll (ib_send_lat -e: "Couldn't post
/// send"). Trap mode (the UAR store) and poll mode (the page scan) alike.
#[test]
fn rearm_before_polling_raises_no_second_event() {
    for poll_mode in [false, true] {
        let (net, mut a, mut b) = rc_pair(QP_BUF);
        let cqn = a.cqn;
        let arm = |a: &mut Side, sn: u8, ci: u32| {
            let w = arm_word(sn, false, ci);
            a.t.mem.put(a.cq_buf + 0x1004, &w.to_be_bytes());
            if poll_mode {
                let db = Doorbell::CqArm { uar: 0, cqn, sn, solicited: false, ci };
                a.t.fw.uar_doorbell(db, true);
            } else {
                a.t.fw.cq_arm(cqn, sn, false, ci);
            }
        };
        let e0 = eqes(&a);
        arm(&mut a, 0, 0);
        assert_eq!(eqes(&a), e0, "an empty CQ does not fire on arming");
        send_one(&net, &mut a, &mut b, 0);
        assert_eq!(eqes(&a), e0 + 1, "the send CQE raises one event (poll mode {poll_mode})");
        // The event was taken (libmlx5 bumps sn), the CQE is still unpolled.
        arm(&mut a, 1, 0);
        assert_eq!(
            eqes(&a),
            e0 + 1,
            "re-arming before polling the reported CQE: no second event (poll mode {poll_mode})"
        );
        send_one(&net, &mut a, &mut b, 1);
        assert_eq!(eqes(&a), e0 + 2, "the next CQE raises the next event (poll mode {poll_mode})");
        // A CQE that lands while the CQ is disarmed fires the next arm at once.
        send_one(&net, &mut a, &mut b, 2);
        assert_eq!(eqes(&a), e0 + 2);
        arm(&mut a, 2, 1);
        assert_eq!(eqes(&a), e0 + 3, "an unreported CQE fires the arm at once (poll mode {poll_mode})");
        // The same arm seen again (a later page scan) is acted on once.
        arm(&mut a, 2, 1);
        assert_eq!(eqes(&a), e0 + 3);
    }
}

/// Poll mode: perftest -e arms its send CQ and then its receive CQ, both
/// for the first time (arm word 0: sn 0, next, ci 0), through one UAR slot;
/// the second store overwrites the first before the poller loads it. The
/// page scan must still find the first CQ's arm in its doorbell record, which
/// it could not tell from "never armed" while both read 0 (perftest -e hung
/// at its first wait in poll mode).
#[test]
fn poll_mode_scan_finds_a_first_arm_whose_store_was_overwritten() {
    use super::super::datapath::cq_arm::CqArm;
    let (_net, mut a, _b) = rc_pair(QP_BUF);
    let (uar, eqn) = {
        let cq = a.t.fw.core.engine.cq(a.cqn).map(|e| &e.ext).unwrap();
        (cq.uar, cq.eqn)
    };
    let second_buf = 0x140000u64;
    let second = a.t.cq(uar, eqn, second_buf);
    for (cqn, buf) in [(a.cqn, a.cq_buf), (second, second_buf)] {
        let rec = u32::from_be_bytes(a.t.mem.get(buf + 0x1004, 4).try_into().unwrap());
        assert_eq!(rec, crate::datapath::CQ_ARM_UNSET, "CREATE_CQ marks CQ {cqn} never armed");
        assert_eq!(a.t.fw.core.engine.cq(cqn).map(|e| &e.ext).unwrap().arming.arm, CqArm::None);
    }
    // No arm yet: UAR activity (a send doorbell) arms nothing.
    a.t.fw
        .uar_doorbell(Doorbell::Send { uar: uar as u64, offset: 0x800, opmod_idx_opcode: 0, qpn_ds: a.qpn << 8 }, true);
    assert_eq!(a.t.fw.core.engine.cq(a.cqn).map(|e| &e.ext).unwrap().arming.arm, CqArm::None);
    // libmlx5 writes each record, then stores to the UAR slot; only the
    // second store reaches the poller.
    for buf in [a.cq_buf, second_buf] {
        a.t.mem.put(buf + 0x1004, &arm_word(0, false, 0).to_be_bytes());
    }
    a.t.fw.uar_doorbell(Doorbell::CqArm { uar: uar as u64, cqn: second, sn: 0, solicited: false, ci: 0 }, true);
    assert_eq!(a.t.fw.core.engine.cq(second).map(|e| &e.ext).unwrap().arming.arm, CqArm::Next);
    assert_eq!(
        a.t.fw.core.engine.cq(a.cqn).map(|e| &e.ext).unwrap().arming.arm,
        CqArm::Next,
        "the overwritten first arm is found"
    );
}

/// The EQ doorbell's 24-bit consumer index is widened as the CQs' is: a
/// driver a few EQEs behind a 2^24 wrap of the producer count is behind it.
/// The EQ's own widening (without the wrap correction) put such a consumer
/// 2^24 ahead of the producer; the EQ then looked overrun and every later
/// event was dropped.
#[test]
fn eq_consumer_index_behind_the_24_bit_wrap() {
    let mut t = Bench::new();
    let uar = t.up();
    let eqn = t.eq(uar, 0, 0, 0x100000);
    t.fw.core.eqs.get_mut(eqn).unwrap().producer = 0x0100_0002;
    // Four EQEs not consumed yet: the driver's counter reads 0xfffffe.
    t.fw.eq_doorbell(eqn, 0x00ff_fffe, false);
    assert_eq!(t.fw.core.eqs.get(eqn).unwrap().consumer, 0x00ff_fffe);
    let before = t.fw.core.stats.eqes.load(std::sync::atomic::Ordering::Relaxed);
    assert!(t.fw.core.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_COMP as u8, 0, &[0; 28]), "the EQ has room: 5 of 64 in use");
    assert_eq!(t.fw.core.stats.eqes.load(std::sync::atomic::Ordering::Relaxed), before + 1);
    // EQE 0x01000002 lands in slot 2, owner bit of pass 0x40000 (0).
    assert_eq!(t.mem.get(0x100000 + 2 * 64, 64)[63], 0);
    // Consumed up to the producer: nothing waits.
    t.fw.eq_doorbell(eqn, 0x0000_0003, false);
    assert_eq!(t.fw.core.eqs.get(eqn).unwrap().consumer, 0x0100_0003);
}

/// QP1 MAD completions go through the same arming as the engine's: a CQ
/// armed for the next completion gets one EQE at the MAD send's first CQE,
/// a re-arm fires for the unreported second one and not again, and a
/// solicited-only arm ignores a plain MAD completion.
#[test]
fn qp1_mad_completions_run_the_cq_arming() {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::new();
    let uar = t.up();
    let eq_buf = 0x100000;
    let eqn = t.eq(uar, 1, 0, eq_buf);
    let pd = t.pd();
    let lkey = t.mkey(pd, &[m::lr, m::lw], 0x11);
    let cq_buf = 0x120000u64;
    let cqn = t.cq(uar, eqn, cq_buf);
    let qpn = t.qp_with(8, pd, uar, cqn, 0x200000, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, 0x280000));
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::q_key.set(&mut i, 0x8001_0000);
    q::mtu.set(&mut i, 1);
    t.ok(&i, 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn), 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, qpn), 16);
    let mut rwqe = [0u8; 16];
    rwqe[0..4].copy_from_slice(&296u32.to_be_bytes());
    rwqe[4..8].copy_from_slice(&lkey.to_be_bytes());
    rwqe[8..16].copy_from_slice(&0x300000u64.to_be_bytes());
    // A 256-byte MAD SEND from SQ slot `k` (2 WQEBBs each) to LID 0 (it stays in the port), QP1.
    let mad_send = |t: &mut Bench, k: u16, rq: u32| {
        t.mem.put(0x200000 + 16 * (rq as u64 - 1), &rwqe);
        t.mem.put(0x280000, &rq.to_be_bytes());
        let idx = 2 * k;
        let mut w = [0u8; 80];
        w[0..4].copy_from_slice(&(((idx as u32) << 8) | 0x0a).to_be_bytes());
        w[4..8].copy_from_slice(&((qpn << 8) | 5).to_be_bytes());
        w[11] = 0x08;
        w[16..20].copy_from_slice(&0x8001_0000u32.to_be_bytes());
        w[24..28].copy_from_slice(&1u32.to_be_bytes());
        w[16 + 0x0e..16 + 0x10].copy_from_slice(&0u16.to_be_bytes());
        w[64..68].copy_from_slice(&256u32.to_be_bytes());
        w[68..72].copy_from_slice(&lkey.to_be_bytes());
        w[72..80].copy_from_slice(&0x310000u64.to_be_bytes());
        t.mem.put(0x200000 + 256 + 64 * idx as u64, &w);
        t.mem.put(0x280004, &(idx as u32 + 2).to_be_bytes());
        t.fw.send_doorbell(qpn);
    };
    let eqes = |t: &Bench| t.fw.core.stats.eqes.load(std::sync::atomic::Ordering::Relaxed);
    let e0 = eqes(&t);
    t.fw.cq_arm(cqn, 0, false, 0);
    assert_eq!(eqes(&t), e0, "an empty CQ does not fire on arming");
    mad_send(&mut t, 0, 1);
    assert_eq!(t.mem.get(cq_buf + 64, 64)[0x3f] >> 4, crate::datapath::cqe::op::REQ, "two CQEs");
    assert_eq!(eqes(&t), e0 + 1, "one completion event for the armed CQ");
    let eqe = t.mem.get(eq_buf, 64);
    assert_eq!(eqe[1], ifc::MLX5_EVENT_TYPE_COMP as u8);
    assert_eq!(ifc::comp_event::cq_number.get(&eqe[0x20..0x20 + 28]) as u32, cqn);
    // The event came with the first CQE (the responder's); the requester's
    // came after it, unreported: a re-arm before polling fires for it at once.
    t.fw.cq_arm(cqn, 1, false, 0);
    assert_eq!(eqes(&t), e0 + 2, "an unreported CQE fires the re-arm");
    // perftest -e's order: re-arm before polling the reported CQEs.
    t.fw.cq_arm(cqn, 2, false, 0);
    assert_eq!(eqes(&t), e0 + 2, "reported CQEs do not fire the re-arm");
    // Consumed both; a solicited-only arm: a plain MAD completion does not fire it.
    t.fw.cq_arm(cqn, 3, true, 2);
    mad_send(&mut t, 1, 2);
    assert_eq!(t.mem.get(cq_buf + 3 * 64, 64)[0x3f] >> 4, crate::datapath::cqe::op::REQ);
    assert_eq!(eqes(&t), e0 + 2, "solicited-only arm ignores successes");
    let armed = t.fw.core.engine.cq(cqn).map(|e| &e.ext).unwrap().arming.arm;
    assert_eq!(armed, super::super::datapath::cq_arm::CqArm::Solicited);
}
