//! UMR WQEs on an RC QP (fast registration: the kernel ULPs' IB_WR_REG_MR and
//! IB_WR_LOCAL_INV), and receive WQEs posted to a QP already in ERR (the
//! marker of `ib_drain_rq`).

use super::*;

/// `frwr_mkey_mask` of mlx5_ib's `set_reg_umr_seg` (no atomic).
fn reg_mr(len: u64) -> W {
    let mut w = W::new(
        mask::LEN
            | mask::PAGE_SIZE
            | mask::START_ADDR
            | mask::EN_RINVAL
            | mask::KEY
            | mask::LR
            | mask::LW
            | mask::RR
            | mask::RW
            | mask::SMALL_FENCE
            | mask::FREE,
    );
    w.flags = flag::CHECK_NOT_FREE | flag::INLINE;
    mkc::lr.set(&mut w.seg, 1);
    mkc::lw.set(&mut w.seg, 1);
    mkc::rw.set(&mut w.seg, 1);
    mkc::rr.set(&mut w.seg, 1);
    mkc::en_rinval.set(&mut w.seg, 1);
    mkc::start_addr.set(&mut w.seg, 0x10000);
    mkc::len.set(&mut w.seg, len);
    mkc::log_page_size.set(&mut w.seg, 12);
    mkc::mkey_7_0.set(&mut w.seg, 0x23);
    w.tail = mtt_bytes(&[0x340000, 0x350000, 0, 0]);
    w.octowords = 2;
    w
}

/// `set_linv_wr`: the key back to free.
fn local_inv() -> W {
    let mut w = W::new(mask::FREE);
    w.flags = flag::INLINE;
    mkc::free.set(&mut w.seg, 1);
    w
}

#[test]
fn rc_qp_fast_registration_and_invalidation() {
    let mut u = Umr::with_st(0);
    let key = u.free_key(0x22);
    let pd = u.pd;
    // REG_MR: the key, its new variant, enabled with the entries inline; the CQE carries the UMR opcode.
    assert_eq!(u.post(OPCODE_UMR, key, &reg_mr(0x2000)), (op::REQ, 0, OPCODE_UMR, 0));
    let new = (key & !0xff) | 0x23;
    let k = u.t.fw.core.engine.lookup_key(new).unwrap();
    assert!(!k.free);
    assert_eq!(k.translate(0x10ff0, 0x20, pd, Access::REMOTE_WRITE).unwrap(), vec![(0x340ff0, 0x10), (0x350000, 0x10)]);
    assert_eq!(u.t.fw.core.engine.mkey(key >> 8).map(|e| mkc::en_rinval.get(&e.ext.mkc)), Some(1));
    // LOCAL_INV: free again, access refused; a second REG_MR of the free key works.
    assert_eq!(u.post(OPCODE_UMR, new, &local_inv()), (op::REQ, 0, OPCODE_UMR, 3));
    let k = u.t.fw.core.engine.lookup_key(new).unwrap();
    assert_eq!(k.translate(0x10000, 1, pd, Access::LOCAL_READ), Err(KeyFault::BadKey));
    assert_eq!(u.post(OPCODE_UMR, new, &reg_mr(0x1000)), (op::REQ, 0, OPCODE_UMR, 5));
    // REG_MR of a key in use (CHECK_NOT_FREE): LOCAL_PROT_ERR, the QP in ERR, nothing applied.
    assert_eq!(u.post(OPCODE_UMR, new, &reg_mr(0x2000)), (op::REQ_ERR, syndrome::LOCAL_PROT_ERR, OPCODE_UMR, 8));
    assert_eq!(u.state(), QpState::Err);
    assert_eq!(u.t.fw.core.engine.lookup_key(new).unwrap().length, 0x1000);
    assert_eq!(u.t.fw.core.stats.umr_wqes.load(Ordering::Relaxed), 3);
    assert_eq!(u.t.fw.core.stats.umr_errors.load(Ordering::Relaxed), 1);
}

/// An RC QP reaches only the keys of its own PD and cannot move a key to
/// another PD.
#[test]
fn rc_qp_umr_stays_in_its_pd() {
    let mut u = Umr::with_st(0);
    let other = u.t.pd();
    let foreign = u.create_key(&free_key_cmd(other, 1, 8, 0x22));
    assert_eq!(u.post(OPCODE_UMR, foreign, &reg_mr(0x1000)), (op::REQ_ERR, syndrome::LOCAL_PROT_ERR, OPCODE_UMR, 0));
    assert!(u.t.fw.core.engine.lookup_key(foreign).unwrap().free, "nothing applied");
    let mut u = Umr::with_st(0);
    let key = u.free_key(0x22);
    let mut w = reg_mr(0x1000);
    w.mask |= mask::PD;
    assert_eq!(u.post(OPCODE_UMR, key, &w), (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR, OPCODE_UMR, 0));
}

/// An indirect (KLM) key configured by a UMR on an RC QP, the way a memory-window bind
/// (`set_bind_wr`) and `mlx5dv_wr_mr_list` post it: one inline KLM padded to four octowords at
/// translation offset 0, the key made usable with its range and rights; the data path then reaches
/// the MTT key's pages through it, and only them.
#[test]
fn rc_qp_umr_configures_an_indirect_key() {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    let mut u = Umr::with_st(0);
    let pd = u.pd;
    let mtt = u.free_key(0x22);
    assert_eq!(u.post(OPCODE_UMR, mtt, &reg_mr(0x2000)), (op::REQ, 0, OPCODE_UMR, 0));
    let mtt = (mtt & !0xff) | 0x23;
    // The free KLM key (mlx5_ib_alloc_mw, mlx5dv_create_mkey): room for 4 entries.
    let mut i = free_key_cmd(pd, 2, 4, 0x30);
    m::lr.set(&mut i, 1);
    m::qpn.set(&mut i, 0xff_ffff);
    let mw = u.create_key(&i);
    let mut w =
        W::new(mask::FREE | mask::KEY | mask::LEN | mask::START_ADDR | mask::LW | mask::RR | mask::RW | mask::A);
    // CHECK_QPN as rdma-core's mkey configuration sets it: the key's qpn 0xffffff lets any QP configure it.
    w.flags = flag::TRANSLATION_OFFSET_EN | flag::INLINE | flag::CHECK_QPN;
    mkc::start_addr.set(&mut w.seg, 0x10800);
    mkc::len.set(&mut w.seg, 0x1000);
    mkc::lw.set(&mut w.seg, 1);
    mkc::rw.set(&mut w.seg, 1);
    mkc::rr.set(&mut w.seg, 1);
    mkc::mkey_7_0.set(&mut w.seg, 0x31);
    let mut klm = vec![0u8; 64];
    klm[0..4].copy_from_slice(&0x1000u32.to_be_bytes());
    klm[4..8].copy_from_slice(&mtt.to_be_bytes());
    klm[8..16].copy_from_slice(&0x10800u64.to_be_bytes());
    w.tail = klm;
    w.octowords = 4;
    assert_eq!(u.post(OPCODE_UMR, mw, &w), (op::REQ, 0, OPCODE_UMR, 3));
    let bound = (mw & !0xff) | 0x31;
    let e = &u.t.fw.core.engine;
    assert!(e.lookup_key(bound).is_some_and(|k| !k.free && k.is_indirect()));
    // Across the MTT key's two pages, through the bound key.
    assert_eq!(
        e.translate_key(bound, 0x10ff0, 0x20, pd, Access::REMOTE_WRITE).unwrap(),
        vec![(0x340ff0, 0x10), (0x350000, 0x10)]
    );
    // Past the bound range; atomics not granted.
    assert_eq!(e.translate_key(bound, 0x117f8, 0x10, pd, Access::REMOTE_READ), Err(KeyFault::Bounds));
    assert_eq!(e.translate_key(bound, 0x10800, 8, pd, Access::REMOTE_ATOMIC), Err(KeyFault::Access));
    // The MTT key invalidated: the bound key no longer reaches its pages.
    assert_eq!(u.post(OPCODE_UMR, mtt, &local_inv()), (op::REQ, 0, OPCODE_UMR, 6));
    let e = &u.t.fw.core.engine;
    assert_eq!(e.translate_key(bound, 0x10800, 8, pd, Access::REMOTE_READ), Err(KeyFault::BadKey));
    // A key bound to another QP refuses a CHECK_QPN configuration from this one: LOCAL_PROT_ERR, nothing applied.
    m::qpn.set(&mut i, (u.qpn + 1) as u64);
    let other = u.create_key(&i);
    assert_eq!(u.post(OPCODE_UMR, other, &w), (op::REQ_ERR, syndrome::LOCAL_PROT_ERR, OPCODE_UMR, 8));
    assert!(u.t.fw.core.engine.lookup_key(other).is_some_and(|k| k.free), "nothing applied");
    assert_eq!(u.state(), QpState::Err);
}

/// ib_drain_rq: the QP moved to ERR, then a receive WQE posted (no doorbell
/// but the record): the workers' poll pass flushes it.
#[test]
fn receive_posted_in_err_is_flushed_by_the_poll_pass() {
    let mut u = Umr::with_st(0);
    assert_eq!(u.t.fw.datapath().flush_err_rqs(), None, "nothing watched before ERR");
    u.t.ok(&transition_in(ifc::MLX5_CMD_OP_2ERR_QP, u.qpn), 16);
    assert!(u.t.fw.datapath().flush_err_rqs().is_some(), "an ERR QP's RQ is watched");
    // One receive WQE (a data segment through the PD's key) at RQ index 0, the record says 1.
    let mut d = [0u8; 16];
    d[0..4].copy_from_slice(&64u32.to_be_bytes());
    d[4..8].copy_from_slice(&u.lkey.to_be_bytes());
    d[8..16].copy_from_slice(&0x360000u64.to_be_bytes());
    u.t.mem.put(0x200000, &d);
    u.t.mem.put(DBR, &1u32.to_be_bytes());
    let _ = u.t.fw.datapath().flush_err_rqs();
    let (opcode, syn, _, counter) = u.cqe();
    assert_eq!((opcode, syn, counter), (op::RESP_ERR, syndrome::WR_FLUSH_ERR, 0));
    // Back to RESET: no longer watched.
    u.t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, u.qpn), 16);
    assert_eq!(u.t.fw.datapath().flush_err_rqs(), None);
}
