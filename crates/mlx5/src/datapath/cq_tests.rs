//! CQ resize and CQE timestamps through the real command transport. CQEs
//! are made by an RC QP in ERR: every send WQE its doorbell hands over
//! completes with WR_FLUSH_ERR, in order, `wqe_counter` = the WQE's index,
//! so a test controls exactly how many CQEs there are and which.

use crate::cmd::status;
use crate::datapath::cq_resize::{MASK_LOG_SIZE, MASK_PG_OFFSET, MASK_PG_SIZE};
use crate::datapath::cqe::{op, syndrome};
use crate::test_support::{cmd, ctrl_seg, transition_in, Bench, QP_BUF, QP_DBR};
use crate::{clock, ifc};

const CQ_BUF: u64 = 0x120000; // 64 x 64 B, doorbell record at +0x1000
const CQ_DBR: u64 = CQ_BUF + 0x1000;
const NEW_BUF: u64 = 0x140000;

struct Cq {
    t: Bench,
    qpn: u32,
    cqn: u32,
    /// Send WQEs posted so far (= flush CQEs made).
    posted: u32,
}

impl Cq {
    /// A 64-entry CQ and an RC QP on it, moved to ERR.
    fn new() -> Cq {
        let mut t = Bench::new();
        let uar = t.up();
        let eqn = t.eq(uar, 1, 0, 0x100000);
        let pd = t.pd();
        let cqn = t.cq(uar, eqn, CQ_BUF);
        let qpn = t.qp_with(0, pd, uar, cqn, QP_BUF, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, QP_DBR));
        t.ok(&transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn), 16);
        t.ok(&transition_in(ifc::MLX5_CMD_OP_2ERR_QP, qpn), 16);
        Cq { t, qpn, cqn, posted: 0 }
    }

    /// Makes `n` flush CQEs (16 send WQEs per doorbell, the SQ's size).
    fn make(&mut self, mut n: u32) {
        let sq = QP_BUF + 16 * 16;
        while n > 0 {
            let k = n.min(16);
            for i in self.posted..self.posted + k {
                self.t.mem.put(
                    sq + (i as u64 % 16) * 64,
                    &ctrl_seg(crate::datapath::wqe::opcode::SEND, i as u16, self.qpn, 1),
                );
            }
            self.posted += k;
            self.t.mem.put(QP_DBR + 4, &self.posted.to_be_bytes());
            self.t.fw.send_doorbell(self.qpn);
            n -= k;
        }
    }

    /// The driver polled up to (not including) index `ci`.
    fn consume_to(&mut self, ci: u32) {
        self.t.mem.put(CQ_DBR, &(ci & 0x00ff_ffff).to_be_bytes());
    }

    fn producer(&self) -> u32 {
        self.t.fw.core.engine.cq(self.cqn).unwrap().producer
    }

    fn log_size(&self) -> u8 {
        self.t.fw.core.engine.cq(self.cqn).unwrap().log_size
    }

    /// MODIFY_CQ op_mod RESIZE to `2^log` entries at `buf` (4 KiB pages).
    fn resize_in(&self, log: u8, buf: u64, select: u64) -> Vec<u8> {
        use ifc::modify_cq_in as m;
        // (At most 16 pages: a size above the limit is refused before the page list is read, and a
        // longer input would run the mailbox chain into the CQ buffer.)
        let npages = ((64u64 << log).div_ceil(4096) as usize).min(16);
        let mut i = cmd(ifc::MLX5_CMD_OP_MODIFY_CQ, 1, m::SIZE + 8 * npages);
        m::cqn.set(&mut i, self.cqn as u64);
        m::modify_field_select_resize_field_select.set(&mut i, select);
        m::cq_context::log_cq_size.set(&mut i, log as u64);
        m::cq_context::log_page_size.set(&mut i, 0);
        for p in 0..npages {
            m::pas.elem(p as u32).set(&mut i, buf + p as u64 * 4096);
        }
        i
    }

    fn resize(&mut self, log: u8, buf: u64) -> u8 {
        let i = self.resize_in(log, buf, MASK_LOG_SIZE | MASK_PG_OFFSET | MASK_PG_SIZE);
        self.t.status(&i, 16)
    }
}

/// CQE `index` of a buffer of `2^log` 64-byte entries: (opcode, owner, wqe_counter, timestamp, syndrome).
fn cqe_at(t: &Bench, buf: u64, log: u8, index: u32) -> (u8, u8, u16, u64, u8) {
    let e = t.mem.get(buf + (index & ((1 << log) - 1)) as u64 * 64, 64);
    (
        e[0x3f] >> 4,
        e[0x3f] & 1,
        u16::from_be_bytes([e[0x3c], e[0x3d]]),
        u64::from_be_bytes(e[0x30..0x38].try_into().unwrap()),
        e[0x37],
    )
}

/// Resize with CQEs pending that straddle the old buffer's end: they stay
/// in the old buffer, the RESIZE_CQ CQE follows them there, and the next
/// CQEs go to the new buffer at their continuing index with the new size's
/// owner bit, across the new buffer's wrap.
#[test]
fn resize_keeps_pending_cqes_and_continues_in_the_new_buffer() {
    let mut c = Cq::new();
    let t0 = clock::now();
    c.make(50);
    c.consume_to(40);
    c.make(20); // indices 40..69 pending: 40..63 then 0..5 of the old buffer
    assert_eq!(c.producer(), 70);
    let e = cqe_at(&c.t, CQ_BUF, 6, 69);
    assert_eq!((e.0, e.1, e.2, e.4), (op::REQ_ERR, 1, 69, syndrome::WR_FLUSH_ERR), "CQE 69 in old slot 5, second pass");

    assert_eq!(c.resize(7, NEW_BUF), status::OK);
    assert_eq!((c.producer(), c.log_size()), (71, 7), "the resize CQE counts as produced");
    // The pending CQEs are untouched, in order, then the resize CQE in slot 70 & 63 = 6, owner of the old size.
    for i in 40..70u32 {
        let e = cqe_at(&c.t, CQ_BUF, 6, i);
        assert_eq!((e.0, e.1, e.2), (op::REQ_ERR, ((i >> 6) & 1) as u8, i as u16), "old CQE {i}");
    }
    let r = cqe_at(&c.t, CQ_BUF, 6, 70);
    assert_eq!((r.0, r.1), (op::RESIZE_CQ, 1), "RESIZE_CQ at index 70 of the old buffer");
    assert!(r.3 >= t0 && r.3 <= clock::now(), "resize CQE stamped with the device clock");
    assert_eq!(cqe_at(&c.t, CQ_BUF, 6, 69).3 >> 16, 0, "flush (error) CQEs carry no timestamp");
    assert_eq!(c.t.mem.get(NEW_BUF + 40 * 64, 64), vec![0; 64], "nothing copied by the device");

    // New CQEs: index 71.. in the new 128-entry buffer, owner (i >> 7) & 1.
    c.consume_to(71); // the driver copied 40..69 to new slots 41..70 and stepped over the resize CQE
    c.make(60); // 71..130: wraps the new buffer at 128
    assert_eq!(c.producer(), 131);
    for i in 71..131u32 {
        let e = cqe_at(&c.t, NEW_BUF, 7, i);
        assert_eq!((e.0, e.1, e.2), (op::REQ_ERR, ((i >> 7) & 1) as u8, (i - 1) as u16), "new CQE {i}");
    }
    assert_eq!(cqe_at(&c.t, CQ_BUF, 6, 71).0, op::REQ_ERR, "old buffer slot 7 still holds CQE 7 of the first pass");
    assert_eq!(cqe_at(&c.t, CQ_BUF, 6, 71).2, 7);

    // QUERY_CQ reports the new size.
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_CQ, 0, ifc::query_cq_in::SIZE);
    ifc::query_cq_in::cqn.set(&mut q, c.cqn as u64);
    let o = c.t.ok(&q, ifc::query_cq_out::SIZE);
    assert_eq!(ifc::query_cq_out::cq_context::log_cq_size.get(&o), 7);
    assert_eq!(ifc::query_cq_out::cq_context::producer_counter.get(&o), 131);

    // Down again to 32 entries with 31 pending (131 - 100): exactly fits with the resize CQE.
    c.consume_to(100);
    assert_eq!(c.resize(5, NEW_BUF + 0x4000), status::OK);
    assert_eq!(cqe_at(&c.t, NEW_BUF, 7, 131).0, op::RESIZE_CQ, "resize CQE in the 128-entry buffer, slot 3");
    assert_eq!(cqe_at(&c.t, NEW_BUF, 7, 131).1, 1);
    c.consume_to(132);
    c.make(32); // 132..163 in the 32-entry buffer: owner (i >> 5) & 1
    for i in 132..164u32 {
        let e = cqe_at(&c.t, NEW_BUF + 0x4000, 5, i);
        assert_eq!(
            (e.0, e.1, e.2),
            (op::REQ_ERR, ((i >> 5) & 1) as u8, (i - 2) as u16),
            "CQE {i} after the second resize"
        );
    }
    assert!(!c.t.fw.core.engine.cq(c.cqn).unwrap().overrun);
}

/// What a resize refuses, and that a refused resize changes nothing.
#[test]
fn resize_refusals_leave_the_cq_untouched() {
    let mut c = Cq::new();
    c.make(32); // 32 pending in 64 entries
    let check_unchanged = |c: &Cq| {
        assert_eq!((c.producer(), c.log_size()), (32, 6));
        assert_eq!(c.t.mem.get(CQ_BUF + 32 * 64, 64)[0x3f], 0xf1, "no resize CQE written");
    };
    // 32 pending + the resize CQE do not fit 32 entries.
    assert_eq!(c.resize(5, NEW_BUF), status::BAD_PARAM);
    assert_eq!(c.resize(4, NEW_BUF), status::BAD_PARAM);
    check_unchanged(&c);
    // Select bits: LOG_SIZE is required, unknown bits refused.
    let i = c.resize_in(7, NEW_BUF, MASK_PG_SIZE);
    assert_eq!(c.t.status(&i, 16), status::BAD_PARAM);
    let i = c.resize_in(7, NEW_BUF, MASK_LOG_SIZE | 1 << 5);
    assert_eq!(c.t.status(&i, 16), status::BAD_PARAM);
    // Above log_max_cq_sz; page size above 1 GiB.
    let i = c.resize_in(c.t.fw.core.engine.limits().log_max_cq_size + 1, NEW_BUF, MASK_LOG_SIZE);
    assert_eq!(c.t.status(&i, 16), status::BAD_PARAM);
    let mut i = c.resize_in(7, NEW_BUF, MASK_LOG_SIZE | MASK_PG_SIZE);
    ifc::modify_cq_in::cq_context::log_page_size.set(&mut i, 19);
    assert_eq!(c.t.status(&i, 16), status::BAD_PARAM);
    // A page list shorter than the new size needs.
    let mut i = c.resize_in(7, NEW_BUF, MASK_LOG_SIZE);
    i.truncate(ifc::modify_cq_in::SIZE + 8);
    assert_eq!(c.t.status(&i, 16), status::BAD_INP_LEN);
    // Unknown CQ; unknown op_mod.
    let mut i = c.resize_in(7, NEW_BUF, MASK_LOG_SIZE);
    ifc::modify_cq_in::cqn.set(&mut i, 0x4242);
    assert_eq!(c.t.status(&i, 16), status::BAD_RES);
    let mut i = c.resize_in(7, NEW_BUF, MASK_LOG_SIZE);
    ifc::mbox_in::op_mod.set(&mut i, 2);
    assert_eq!(c.t.status(&i, 16), status::BAD_PARAM);
    check_unchanged(&c);
    // A full old buffer has no slot for the resize CQE.
    c.make(32);
    assert_eq!(c.producer(), 64);
    assert_eq!(c.resize(7, NEW_BUF), status::BAD_RES_STATE);
    assert_eq!((c.producer(), c.log_size()), (64, 6));
    // Once the driver polled, the same resize goes through.
    c.consume_to(1);
    assert_eq!(c.resize(7, NEW_BUF), status::OK);
    assert_eq!((c.producer(), c.log_size()), (65, 7));
    assert_eq!(cqe_at(&c.t, CQ_BUF, 6, 64).0, op::RESIZE_CQ, "resize CQE over the polled slot 0");
}

/// Moderation (op_mod 0) still works next to resize, and leaves the size alone.
#[test]
fn modify_moderation_is_not_a_resize() {
    let mut c = Cq::new();
    let mut i = cmd(ifc::MLX5_CMD_OP_MODIFY_CQ, 0, ifc::modify_cq_in::SIZE);
    ifc::modify_cq_in::cqn.set(&mut i, c.cqn as u64);
    ifc::modify_cq_in::modify_field_select_resize_field_select.set(&mut i, 3);
    ifc::modify_cq_in::cq_context::cq_period.set(&mut i, 16);
    ifc::modify_cq_in::cq_context::cq_max_count.set(&mut i, 8);
    ifc::modify_cq_in::cq_context::log_cq_size.set(&mut i, 9);
    c.t.ok(&i, 16);
    let cq = c.t.fw.core.engine.cq(c.cqn).unwrap();
    assert_eq!((cq.period, cq.max_count, cq.log_size, cq.producer), (16, 8, 6, 0));
}

/// The capabilities that let mlx5_ib resize CQs and start its clock.
#[test]
fn resize_and_clock_capabilities() {
    let mut t = Bench::new();
    t.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16), 12);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
    let cap = ifc::query_hca_cap_out::capability;
    assert_eq!(cap.inner(ifc::cmd_hca_cap::cq_resize).get(&o), 1);
    assert_eq!(cap.inner(ifc::cmd_hca_cap::device_frequency_khz).get(&o), clock::DEVICE_FREQUENCY_KHZ as u64);
}

/// RC requester CQEs (written by the engine's completion path) carry the
/// device clock: non-zero, non-decreasing, between reads of the clock taken
/// before posting and after, and batches posted 3 ms apart are >= 3 ms of
/// ticks apart.
#[test]
fn rc_cqes_carry_non_decreasing_device_timestamps() {
    use crate::test_support::{data_seg, pump, rc_pair, DATA};
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    let qa = a.qpn;
    let sq = QP_BUF + 16 * 16;
    let mut raddr = [0u8; 16];
    raddr[0..8].copy_from_slice(&(DATA + 0x3000).to_be_bytes());
    raddr[8..12].copy_from_slice(&b.key.to_be_bytes());
    let before = clock::now();
    for batch in 0..3u32 {
        for k in 0..5u32 {
            let i = batch * 5 + k;
            let slot = sq + (i as u64 % 16) * 64;
            a.t.mem.put(slot, &ctrl_seg(crate::datapath::wqe::opcode::RDMA_WRITE, i as u16, qa, 3));
            a.t.mem.put(slot + 16, &raddr);
            a.t.mem.put(slot + 32, &data_seg(8, a.key, DATA));
        }
        a.t.mem.put(QP_DBR + 4, &(batch * 5 + 5).to_be_bytes());
        a.t.fw.send_doorbell(qa);
        pump(&net, &mut a, &mut b);
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    let after = clock::now();
    let ts: Vec<u64> = (0..15u32)
        .map(|i| {
            let e = cqe_at(&a.t, a.cq_buf, 6, i);
            assert_eq!((e.0, e.2), (op::REQ, i as u16), "CQE {i}");
            e.3
        })
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "non-decreasing: {ts:?}");
    assert!(ts[0] >= before && ts[14] <= after, "within [{before}, {after}]: {ts:?}");
    let ms3 = 3 * clock::DEVICE_FREQUENCY_KHZ as u64;
    assert!(ts[5] - ts[4] >= ms3 && ts[10] - ts[9] >= ms3, "batches 3 ms apart: {ts:?}");
}
