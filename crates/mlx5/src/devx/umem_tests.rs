//! Firmware tests of DevX umems (devx/umem.rs): registration, the uid rules, and a queue whose
//! buffer and doorbell record lie in a umem.

use super::umem::{UmemRefused, Umems, MTT_READ, MTT_WRITE};
use crate::cmd::syndrome as syn;
use crate::fields::Field;
use crate::ifc::{create_sq_in, sqc, wq};
use crate::test_support::*;

/// Three 4 KiB pages, out of order in guest memory, as a process's pinned buffer is.
const PAGES: [u64; 3] = [0x200000, 0x210000, 0x205000];
const CQ_BUF: u64 = 0x300000;

/// CREATE_UMEM of `mtt` (entries whole: address | permission bits), 4 KiB << `log_page_size`
/// pages, the memory starting `page_offset` bytes into the first.
fn create_umem(uid: u16, mtt: &[u64], log_page_size: u64, page_offset: u64) -> Vec<u8> {
    use ifc::create_umem_in as c;
    let mut i = by(uid, cmd(ifc::MLX5_CMD_OP_CREATE_UMEM, 0, c::SIZE + 8 * mtt.len()));
    c::umem::log_page_size.set(&mut i, log_page_size);
    c::umem::page_offset.set(&mut i, page_offset);
    c::umem::num_of_mtt.set(&mut i, mtt.len() as u64);
    for (k, e) in mtt.iter().enumerate() {
        c::umem::mtt.elem(k as u32).set(&mut i, *e);
    }
    i
}

fn destroy_umem(uid: u16, id: u32) -> Vec<u8> {
    let mut i = by(uid, cmd(ifc::MLX5_CMD_OP_DESTROY_UMEM, 0, ifc::destroy_umem_in::SIZE));
    ifc::destroy_umem_in::umem_id.set(&mut i, id as u64);
    i
}

fn rw(pages: &[u64]) -> Vec<u64> {
    pages.iter().map(|p| p | MTT_READ | MTT_WRITE).collect()
}

/// What a process's SQ names: its uid and PD, the UAR page and a (kernel) CQ.
#[derive(Clone, Copy)]
struct Proc {
    uid: u16,
    pd: u32,
    uar: u32,
    cqn: u32,
}

/// An Ethernet function with four user contexts, and the first one's SQ names.
fn port() -> (Bench, Proc) {
    let mut t = Bench::eth_with_limits(Limits { uctxs: 4, ..Limits::default() });
    let uar = t.up();
    let eqn = t.eq(uar, 0, 0, 0x100000);
    let cqn = t.cq(uar, eqn, CQ_BUF);
    let uid = create_uctx(&mut t);
    let pd = alloc_pd(&mut t, uid);
    (t, Proc { uid, pd, uar, cqn })
}

fn umem_id(o: &[u8]) -> u32 {
    ifc::create_umem_out::umem_id.get(o) as u32
}

fn wqf(f: Field) -> Field {
    create_sq_in::ctx::wq.inner(f)
}

/// A DevX CREATE_SQ of 64 WQEBBs (4 KiB) at `offset` in umem `buf`, its doorbell record at
/// `dbr_offset` in umem `dbr` (the `*_umem_valid` bits set, as mlx5_ib forces them for DevX).
fn create_sq(p: Proc, buf: u32, offset: u64, dbr: u32, dbr_offset: u64) -> Vec<u8> {
    let mut i = by(p.uid, cmd(ifc::MLX5_CMD_OP_CREATE_SQ, 0, create_sq_in::SIZE));
    wqf(wq::wq_type).set(&mut i, ifc::MLX5_WQ_TYPE_CYCLIC as u64);
    wqf(wq::pd).set(&mut i, p.pd as u64);
    wqf(wq::uar_page).set(&mut i, p.uar as u64);
    wqf(wq::log_wq_sz).set(&mut i, 6);
    wqf(wq::log_wq_stride).set(&mut i, 6);
    wqf(wq::wq_umem_valid).set(&mut i, 1);
    wqf(wq::wq_umem_id).set(&mut i, buf as u64);
    wqf(wq::wq_umem_offset).set(&mut i, offset);
    wqf(wq::dbr_umem_valid).set(&mut i, 1);
    wqf(wq::dbr_umem_id).set(&mut i, dbr as u64);
    wqf(wq::dbr_addr).set(&mut i, dbr_offset);
    create_sq_in::ctx.inner(sqc::cqn).set(&mut i, p.cqn as u64);
    i
}

fn destroy_sq(uid: u16, sqn: u32) -> Vec<u8> {
    let mut i = by(uid, cmd(ifc::MLX5_CMD_OP_DESTROY_SQ, 0, ifc::destroy_sq_in::SIZE));
    ifc::destroy_sq_in::sqn.set(&mut i, sqn as u64);
    i
}

#[test]
fn a_umem_is_registered_by_its_process_and_checked() {
    let (mut t, p) = port();
    let (uid, other) = (p.uid, create_uctx(&mut t));
    let id = umem_id(&t.ok(&create_umem(uid, &rw(&PAGES), 0, 0x80), ifc::create_umem_out::SIZE));
    assert_ne!(id, 0);
    let u = t.fw.umems.get(id).expect("registered");
    assert_eq!((u.uid, u.mtt.len(), u.len()), (uid, 3, 3 * 4096 - 0x80));
    // The kernel has no umems (no umem_uid_0), nor does a uid with no context.
    assert_eq!(t.fails(&create_umem(0, &rw(&PAGES), 0, 0), 16), (status::BAD_PARAM, syn::CREATE_UMEM_KERNEL_UID));
    assert_eq!(t.fails(&create_umem(3, &rw(&PAGES), 0, 0), 16), (status::BAD_PARAM, syn::UID_UNKNOWN));
    // Sizes and offsets out of range, pages not aligned to their size or not readable.
    assert_eq!(t.fails(&create_umem(uid, &rw(&PAGES), 19, 0), 16), (status::BAD_PARAM, syn::CREATE_UMEM_BAD_PARAM));
    assert_eq!(t.fails(&create_umem(uid, &rw(&PAGES), 0, 4096), 16), (status::BAD_PARAM, syn::CREATE_UMEM_BAD_PARAM));
    assert_eq!(t.fails(&create_umem(uid, &[], 0, 0), 16), (status::BAD_PARAM, syn::CREATE_UMEM_BAD_PARAM));
    assert_eq!(t.fails(&create_umem(uid, &rw(&PAGES), 4, 0), 16), (status::BAD_PARAM, syn::CREATE_UMEM_BAD_MTT));
    assert_eq!(
        t.fails(&create_umem(uid, &[PAGES[0] | MTT_WRITE], 0, 0), 16),
        (status::BAD_PARAM, syn::CREATE_UMEM_BAD_MTT)
    );
    // More entries named than the mailbox carries.
    let mut short = create_umem(uid, &rw(&PAGES), 0, 0);
    ifc::create_umem_in::umem::num_of_mtt.set(&mut short, 1000);
    assert_eq!(t.fails(&short, 16), (status::BAD_INP_LEN, syn::REQ_SHORT_PAS));
    // Only its process destroys it (another's sees nothing); its context waits for it.
    assert_eq!(t.fails(&destroy_umem(other, id), 16), (status::BAD_RES, syn::UID_NOT_OWNER));
    let mut destroy_uctx = cmd(ifc::MLX5_CMD_OP_DESTROY_UCTX, 0, ifc::destroy_uctx_in::SIZE);
    ifc::destroy_uctx_in::uid.set(&mut destroy_uctx, uid as u64);
    assert_eq!(t.fails(&destroy_uctx, 16), (status::BAD_RES_STATE, syn::DESTROY_UCTX_BUSY));
    t.ok(&destroy_umem(uid, id), 16);
    assert_eq!(t.fails(&destroy_umem(uid, id), 16), (status::BAD_RES, syn::DESTROY_UMEM_BAD_RES));
    // FLR: every umem goes.
    t.ok(&create_umem(uid, &rw(&PAGES), 0, 0), 16);
    t.fw.reset();
    assert!(t.fw.umems.is_empty());
}

#[test]
fn an_sq_in_a_umem_walks_the_umem_s_pages() {
    let (mut t, p) = port();
    let uid = p.uid;
    let id = umem_id(&t.ok(&create_umem(uid, &rw(&PAGES), 0, 0x80), 16));
    // 4 KiB of WQEs 0x1780 into the umem: 0x1800 into its pages, so page 1 from 0x800 and
    // page 2; the doorbell record 0x40 in: page 0 at 0xc0.
    let o = t.ok(&create_sq(p, id, 0x1780, id, 0x40), 16);
    let sqn = ifc::create_sq_out::sqn.get(&o) as u32;
    let ctx = &t.fw.core.engine.qp(sqn).expect("the SQ's QP").ext;
    assert_eq!((ctx.pas.clone(), ctx.log_page_size, ctx.page_offset), (vec![PAGES[1], PAGES[2]], 0, 0x800));
    assert_eq!(ctx.dbr_addr, PAGES[0] + 0xc0);
    assert_eq!(crate::queue_buf::buf_addr(&ctx.pas, 0, ctx.page_offset, 0x7ff), Some(PAGES[1] + 0xfff));
    assert_eq!(crate::queue_buf::buf_addr(&ctx.pas, 0, ctx.page_offset, 0x800), Some(PAGES[2]));
    // The umem stays while the SQ lies in it.
    assert_eq!(t.fails(&destroy_umem(uid, id), 16), (status::BAD_RES_STATE, syn::DESTROY_UMEM_BUSY));
    t.ok(&destroy_sq(uid, sqn), 16);
    t.ok(&destroy_umem(uid, id), 16);
    // The buffer in one umem, the doorbell record in another: each is held.
    let buf = umem_id(&t.ok(&create_umem(uid, &rw(&PAGES[1..]), 0, 0), 16));
    let dbr = umem_id(&t.ok(&create_umem(uid, &rw(&PAGES[..1]), 0, 0), 16));
    let o = t.ok(&create_sq(p, buf, 0, dbr, 8), 16);
    let sqn = ifc::create_sq_out::sqn.get(&o) as u32;
    assert_eq!(t.fw.core.engine.qp(sqn).map(|q| q.ext.dbr_addr), Some(PAGES[0] + 8));
    for id in [buf, dbr] {
        assert_eq!(t.fails(&destroy_umem(uid, id), 16), (status::BAD_RES_STATE, syn::DESTROY_UMEM_BUSY));
    }
    t.ok(&destroy_sq(uid, sqn), 16);
    t.ok(&destroy_umem(uid, buf), 16);
    t.ok(&destroy_umem(uid, dbr), 16);
}

#[test]
fn a_queue_reaches_only_its_own_umem_and_only_inside_it() {
    let (mut t, p) = port();
    let uid = p.uid;
    let id = umem_id(&t.ok(&create_umem(uid, &rw(&PAGES), 0, 0x80), 16));
    let sq = |buf, off, dbr, dbr_off| create_sq(p, buf, off, dbr, dbr_off);
    // The buffer's last byte one past the umem; a doorbell record across a page boundary.
    let range = (status::BAD_PARAM, syn::ETH_WQ_UMEM_RANGE);
    assert_eq!(t.fails(&sq(id, 2 * 4096 - 0x80 + 1, id, 0), 16), range);
    assert_eq!(t.fails(&sq(id, u64::MAX - 100, id, 0), 16), range);
    assert_eq!(t.fails(&sq(id, 0, id, 4096 - 0x80 - 4), 16), range);
    assert_eq!(t.fails(&sq(id, 0, id, 3 * 4096), 16), range);
    // A umem that does not exist answers as one of another process does: BAD_RES.
    assert_eq!(t.fails(&sq(77, 0, id, 0), 16), (status::BAD_RES, syn::ETH_WQ_UMEM));
    // Another process may not name it (the uid gate), nor place its doorbell record there.
    let other = create_uctx(&mut t);
    let other_pd = alloc_pd(&mut t, other);
    let mine = umem_id(&t.ok(&create_umem(other, &rw(&PAGES), 0, 0), 16));
    let theirs = create_sq(Proc { uid: other, pd: other_pd, ..p }, mine, 0, id, 0);
    assert_eq!(t.fails(&theirs, 16), (status::BAD_RES, syn::UID_FOREIGN_REFERENCE));
    // Nothing was created by the refusals; the exact fit at the end is accepted.
    assert_eq!(t.fw.umems.len(), 2);
    t.ok(&sq(id, 2 * 4096 - 0x80, id, 0), 16);
}

#[test]
fn resolving_checks_the_owner_the_range_and_the_write_bit() {
    let (mut t, p) = port();
    let uid = p.uid;
    let ro: Vec<u64> = PAGES.iter().map(|p| p | MTT_READ).collect();
    let id = umem_id(&t.ok(&create_umem(uid, &ro, 0, 0), 16));
    let umems: &Umems = &t.fw.umems;
    // Read-only pages: the device may read a queue there, never write one.
    let b = umems.resolve(uid, id, 4096, 4096, false).expect("readable");
    assert_eq!((b.pas, b.page_offset), (vec![PAGES[1]], 0));
    assert_eq!(umems.resolve(uid, id, 0, 64, true), Err(UmemRefused::ReadOnly));
    assert_eq!(umems.dbr_addr(uid, id, 8, true), Err(UmemRefused::ReadOnly));
    // The kernel may name any umem; another process none; nothing is zero bytes long.
    assert!(umems.resolve(0, id, 0, 64, false).is_ok());
    assert_eq!(umems.resolve(uid + 1, id, 0, 64, false), Err(UmemRefused::Unknown));
    assert_eq!(umems.resolve(uid, id, 0, 0, false), Err(UmemRefused::OutOfRange));
    assert_eq!(umems.resolve(uid, id, 3 * 4096 - 64, 65, false), Err(UmemRefused::OutOfRange));
    assert_eq!(umems.dbr_addr(uid, id, 3 * 4096 - 8, false), Ok(PAGES[2] + 4096 - 8));
}

/// A DevX CREATE_CQ of 64 64-byte CQEs (4 KiB) at `offset` in umem `buf`, its doorbell record
/// at `dbr_offset` in umem `dbr`, on EQ 0.
fn create_cq(p: Proc, buf: u32, offset: u64, dbr: u32, dbr_offset: u64) -> Vec<u8> {
    use ifc::create_cq_in as c;
    use ifc::rdma_core::create_cq_in as rc;
    let mut i = by(p.uid, cmd(ifc::MLX5_CMD_OP_CREATE_CQ, 0, c::SIZE));
    c::cq_context::log_cq_size.set(&mut i, 6);
    c::cq_context::uar_page.set(&mut i, p.uar as u64);
    c::cq_umem_valid.set(&mut i, 1);
    rc::cq_umem_id.set(&mut i, buf as u64);
    rc::cq_umem_offset.set(&mut i, offset);
    c::cq_context::dbr_umem_valid.set(&mut i, 1);
    rc::dbr_umem_id.set(&mut i, dbr as u64);
    c::cq_context::dbr_addr.set(&mut i, dbr_offset);
    i
}

/// A DevX RC QP (16 receive WQEs of 16 bytes, 16 WQEBBs: 1280 bytes) at `offset` in umem `buf`,
/// its doorbell record at `dbr_offset` in umem `dbr`.
fn create_rc_qp(p: Proc, cqn: u32, buf: u32, offset: u64, dbr: u32, dbr_offset: u64) -> Vec<u8> {
    use ifc::create_qp_in as c;
    let mut i = by(p.uid, create_qp_in(ifc::MLX5_QP_ST_RC as u64, p.pd, p.uar, cqn, 0));
    c::wq_umem_valid.set(&mut i, 1);
    c::wq_umem_id.set(&mut i, buf as u64);
    c::wq_umem_offset.set(&mut i, offset);
    c::qpc::dbr_umem_valid.set(&mut i, 1);
    ifc::rdma_core::create_qp_in::dbr_umem_id.set(&mut i, dbr as u64);
    c::qpc::dbr_addr.set(&mut i, dbr_offset);
    i
}

fn destroy(op: u32, uid: u16, n: u32) -> Vec<u8> {
    // DESTROY_CQ and DESTROY_QP name the object at the same place.
    let mut i = by(uid, cmd(op, 0, ifc::destroy_qp_in::SIZE));
    ifc::destroy_qp_in::qpn.set(&mut i, n as u64);
    i
}

#[test]
fn a_cq_and_a_qp_lie_in_umems() {
    let (mut t, p) = port();
    let id = umem_id(&t.ok(&create_umem(p.uid, &rw(&PAGES), 0, 0x80), 16));
    // The CQ 0x780 in (page 0 from 0x800, page 1), its doorbell record 0x1f80 in (page 2 at 0).
    let o = t.ok(&create_cq(p, id, 0x780, id, 0x1f80), ifc::create_cq_out::SIZE);
    let cqn = ifc::create_cq_out::cqn.get(&o) as u32;
    let cq = &t.fw.core.engine.cq(cqn).expect("the CQ").ext;
    assert_eq!((cq.pas.clone(), cq.page_offset, cq.dbr_addr), (vec![PAGES[0], PAGES[1]], 0x800, PAGES[2]));
    assert_eq!(cq.umems, vec![id, id]);
    // The device marked the record's arm word (it writes there: the pages need the write bit).
    assert_eq!(t.mem.get(PAGES[2] + 4, 4), crate::datapath::CQ_ARM_UNSET.to_be_bytes());
    // The QP's 1280 bytes 0x2000 in (page 2 from 0x80), its record 0x10 in (page 0 at 0x90).
    let o = t.ok(&create_rc_qp(p, cqn, id, 0x2000, id, 0x10), ifc::create_qp_out::SIZE);
    let qpn = ifc::create_qp_out::qpn.get(&o) as u32;
    let qp = &t.fw.core.engine.qp(qpn).expect("the QP").ext;
    assert_eq!((qp.pas.clone(), qp.page_offset, qp.dbr_addr), (vec![PAGES[2]], 0x80, PAGES[0] + 0x90));
    // Held until both go; then freed.
    let busy = (status::BAD_RES_STATE, syn::DESTROY_UMEM_BUSY);
    assert_eq!(t.fails(&destroy_umem(p.uid, id), 16), busy);
    t.ok(&destroy(ifc::MLX5_CMD_OP_DESTROY_QP, p.uid, qpn), 16);
    assert_eq!(t.fails(&destroy_umem(p.uid, id), 16), busy);
    // A resize into a umem is not executed.
    let mut resize = by(p.uid, cmd(ifc::MLX5_CMD_OP_MODIFY_CQ, 1, ifc::modify_cq_in::SIZE));
    ifc::modify_cq_in::cqn.set(&mut resize, cqn as u64);
    ifc::modify_cq_in::modify_field_select_resize_field_select.set(&mut resize, 1);
    ifc::modify_cq_in::cq_umem_valid.set(&mut resize, 1);
    assert_eq!(t.fails(&resize, 16), (status::BAD_PARAM, syn::RESIZE_CQ_UMEM));
    t.ok(&destroy(ifc::MLX5_CMD_OP_DESTROY_CQ, p.uid, cqn), 16);
    t.ok(&destroy_umem(p.uid, id), 16);
}

#[test]
fn a_cq_needs_writable_pages_and_a_qp_its_own_umem() {
    let (mut t, p) = port();
    let ro: Vec<u64> = PAGES.iter().map(|a| a | MTT_READ).collect();
    let ro = umem_id(&t.ok(&create_umem(p.uid, &ro, 0, 0), 16));
    let id = umem_id(&t.ok(&create_umem(p.uid, &rw(&PAGES), 0, 0), 16));
    let range = (status::BAD_PARAM, syn::CREATE_CQ_UMEM_RANGE);
    assert_eq!(t.fails(&create_cq(p, ro, 0, id, 0), 16), range);
    assert_eq!(t.fails(&create_cq(p, id, 0, ro, 0), 16), range);
    assert_eq!(t.fails(&create_cq(p, id, 2 * 4096 + 64, id, 0), 16), range);
    assert_eq!(t.fails(&create_cq(p, 99, 0, id, 0), 16), (status::BAD_RES, syn::CREATE_CQ_UMEM));
    // The QP's queues are only read: read-only pages do.
    let o = t.ok(&create_cq(p, id, 0, id, 4096), ifc::create_cq_out::SIZE);
    let cqn = ifc::create_cq_out::cqn.get(&o) as u32;
    t.ok(&create_rc_qp(p, cqn, ro, 0, ro, 8), ifc::create_qp_out::SIZE);
    assert_eq!(
        t.fails(&create_rc_qp(p, cqn, id, 3 * 4096 - 1279, id, 0), 16),
        (status::BAD_PARAM, syn::CREATE_QP_UMEM_RANGE)
    );
    assert_eq!(t.fails(&create_rc_qp(p, cqn, 99, 0, id, 0), 16), (status::BAD_RES, syn::CREATE_QP_UMEM));
    // Another process's umem, for the buffer or for the record: the uid gate.
    let other = create_uctx(&mut t);
    let q = Proc { uid: other, pd: alloc_pd(&mut t, other), ..p };
    let foreign = (status::BAD_RES, syn::UID_FOREIGN_REFERENCE);
    assert_eq!(t.fails(&create_cq(q, id, 0, id, 0), 16), foreign);
    assert_eq!(t.fails(&create_rc_qp(q, q.cqn, id, 0, id, 0), 16), foreign);
}
