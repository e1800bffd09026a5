//! Firmware tests of the DevX domain: user contexts and the uid rules (devx/uid.rs).

use crate::cmd::syndrome as syn;
use crate::test_support::*;

/// A brought-up function with `uctxs` user contexts, and its first UAR page (the kernel's).
fn bench(uctxs: usize) -> (Bench, u32) {
    let mut t = Bench::with_limits(Limits { uctxs, ..Limits::default() });
    let uar = t.up();
    (t, uar)
}

fn destroy_uctx(uid: u16) -> Vec<u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_DESTROY_UCTX, 0, ifc::destroy_uctx_in::SIZE);
    ifc::destroy_uctx_in::uid.set(&mut i, uid as u64);
    i
}

fn dealloc_pd(uid: u16, pd: u32) -> Vec<u8> {
    let mut i = by(uid, cmd(ifc::MLX5_CMD_OP_DEALLOC_PD, 0, ifc::dealloc_pd_in::SIZE));
    ifc::dealloc_pd_in::pd.set(&mut i, pd as u64);
    i
}

/// A 64-entry CQ at `buf` created by `uid`.
fn create_cq(uid: u16, uar: u32, eqn: u32, buf: u64) -> Vec<u8> {
    use ifc::create_cq_in as c;
    let mut i = by(uid, cmd(ifc::MLX5_CMD_OP_CREATE_CQ, 0, c::SIZE + 8));
    c::cq_context::log_cq_size.set(&mut i, 6);
    c::cq_context::uar_page.set(&mut i, uar as u64);
    c::cq_context::c_eqn_or_apu_element.set(&mut i, eqn as u64);
    c::cq_context::dbr_addr.set(&mut i, buf + 0x1000);
    c::pas.elem(0).set(&mut i, buf);
    i
}

fn cq_cmd(op: u32, uid: u16, cqn: u32) -> Vec<u8> {
    let mut i = by(uid, cmd(op, 0, ifc::query_cq_in::SIZE.max(ifc::destroy_cq_in::SIZE)));
    ifc::destroy_cq_in::cqn.set(&mut i, cqn as u64);
    i
}

/// An RC QP created by `uid` on `pd` with `cqn` as both CQs.
fn create_qp(uid: u16, pd: u32, uar: u32, cqn: u32) -> Vec<u8> {
    by(uid, create_qp_in(ifc::MLX5_QP_ST_RC as u64, pd, uar, cqn, 0x200000))
}

#[test]
fn user_contexts_are_offered_only_where_the_instance_has_them() {
    use ifc::cmd_hca_cap as c;
    let cap = ifc::query_hca_cap_out::capability;
    let (mut t, _) = bench(0);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
    assert_eq!(cap.inner(c::log_max_uctx).get(&o), 0, "no DevX by default");
    let create = cmd(ifc::MLX5_CMD_OP_CREATE_UCTX, 0, ifc::create_uctx_in::SIZE);
    assert_eq!(t.fails(&create, 16), (status::LIM, syn::CREATE_UCTX_LIM));

    let (mut t, _) = bench(4);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
    assert_eq!(cap.inner(c::log_max_uctx).get(&o), 2);
    assert_eq!(cap.inner(c::uctx_cap).get(&o), 0);
    // Uids 1..=4, never 0 or 0xffff; the fifth is refused.
    let uids: Vec<u16> = (0..4).map(|_| create_uctx(&mut t)).collect();
    assert_eq!(uids, [1, 2, 3, 4]);
    assert_eq!(t.fails(&create, 16), (status::LIM, syn::CREATE_UCTX_LIM));
    t.ok(&destroy_uctx(2), 16);
    assert_eq!(t.fails(&destroy_uctx(2), 16), (status::BAD_PARAM, syn::DESTROY_UCTX_BAD_UID));
    assert_eq!(create_uctx(&mut t), 2, "a freed uid is given again");
    // A cap bit the device does not grant (RAW_TX).
    t.ok(&destroy_uctx(4), 16);
    let mut raw = create.clone();
    ifc::create_uctx_in::uctx::cap.set(&mut raw, ifc::MLX5_UCTX_CAP_RAW_TX as u64);
    assert_eq!(t.fails(&raw, 16), (status::BAD_PARAM, syn::CREATE_UCTX_BAD_CAP));
    // A device reset ends every context.
    t.fw.reset();
    t.up();
    assert_eq!(t.fails(&destroy_uctx(1), 16), (status::BAD_PARAM, syn::DESTROY_UCTX_BAD_UID));
}

#[test]
fn a_user_uid_must_be_live_and_issues_only_user_commands() {
    let (mut t, _) = bench(4);
    let a = create_uctx(&mut t);
    // Not a live context: refused before anything is allocated.
    assert_eq!(t.fails(&by(3, cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16)), 16), (status::BAD_PARAM, syn::UID_UNKNOWN));
    assert_eq!(t.fw.engine().counts().pds, 0);
    alloc_pd(&mut t, a);
    // The function's lifecycle, pages, capabilities, EQs, registers and contexts are the kernel's.
    for op in [
        ifc::MLX5_CMD_OP_TEARDOWN_HCA,
        ifc::MLX5_CMD_OP_MANAGE_PAGES,
        ifc::MLX5_CMD_OP_SET_HCA_CAP,
        ifc::MLX5_CMD_OP_CREATE_EQ,
        ifc::MLX5_CMD_OP_DESTROY_EQ,
        ifc::MLX5_CMD_OP_ACCESS_REG,
        ifc::MLX5_CMD_OP_DESTROY_UCTX,
        ifc::MLX5_CMD_OP_MAD_IFC,
    ] {
        assert_eq!(t.fails(&by(a, cmd(op, 0, 0x100)), 0x100), (status::BAD_PARAM, syn::UID_KERNEL_ONLY), "{op:#x}");
    }
    // The general queries DevX forwards work.
    t.ok(&by(a, cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16)), ifc::query_hca_cap_out::SIZE);
    // The shared uid is the kernel's.
    t.ok(&by(ifc::MLX5_SHARED_RESOURCE_UID as u16, cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16)), 16);
}

#[test]
fn a_context_reaches_only_its_own_objects_and_what_the_kernel_shares() {
    let (mut t, uar) = bench(4);
    let eqn = t.eq(uar, 0, 0, 0x10000);
    let (a, b) = (create_uctx(&mut t), create_uctx(&mut t));
    let pd_a = alloc_pd(&mut t, a);
    let pd_b = alloc_pd(&mut t, b);
    let pd_k = alloc_pd(&mut t, 0);
    let o = t.ok(&create_cq(a, uar, eqn, 0x20000), 16);
    let cq_a = ifc::create_cq_out::cqn.get(&o) as u32;
    let cq_k = t.cq(uar, eqn, 0x30000);
    let o = t.ok(&create_cq(b, uar, eqn, 0x40000), 16);
    let cq_b = ifc::create_cq_out::cqn.get(&o) as u32;

    // B cannot destroy, query or modify A's objects: to B they do not exist.
    let not_owner = (status::BAD_RES, syn::UID_NOT_OWNER);
    assert_eq!(t.fails(&dealloc_pd(b, pd_a), 16), not_owner);
    assert_eq!(t.fails(&cq_cmd(ifc::MLX5_CMD_OP_DESTROY_CQ, b, cq_a), 16), not_owner);
    assert_eq!(t.fails(&cq_cmd(ifc::MLX5_CMD_OP_QUERY_CQ, b, cq_a), ifc::query_cq_out::SIZE), not_owner);
    assert_eq!(t.fails(&cq_cmd(ifc::MLX5_CMD_OP_DESTROY_CQ, b, cq_k), 16), not_owner, "nor the kernel's");
    // The kernel (uid 0) reaches everything; A its own.
    t.ok(&cq_cmd(ifc::MLX5_CMD_OP_QUERY_CQ, 0, cq_a), ifc::query_cq_out::SIZE);
    t.ok(&cq_cmd(ifc::MLX5_CMD_OP_QUERY_CQ, a, cq_a), ifc::query_cq_out::SIZE);

    // Creates: another context's PD or CQ, or the kernel's PD, are refused; the kernel's CQs
    // are not (mlx5_ib points user QPs at its own CQ and SRQs).
    let foreign = (status::BAD_RES, syn::UID_FOREIGN_REFERENCE);
    assert_eq!(t.fails(&create_qp(b, pd_a, uar, cq_b), 16), foreign, "A's PD");
    assert_eq!(t.fails(&create_qp(b, pd_b, uar, cq_a), 16), foreign, "A's CQ");
    assert_eq!(t.fails(&create_qp(b, pd_k, uar, cq_b), 16), foreign, "the kernel's PD");
    let o = t.ok(&create_qp(b, pd_b, uar, cq_k), 16);
    let qp_b = ifc::create_qp_out::qpn.get(&o) as u32;
    let qp_a_try = transition(ifc::MLX5_CMD_OP_2ERR_QP, a, qp_b);
    assert_eq!(t.fails(&qp_a_try, 16), not_owner, "A moves B's QP");
    let mut mkey = by(b, cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, 0, ifc::create_mkey_in::SIZE));
    ifc::create_mkey_in::memory_key_mkey_entry::pd.set(&mut mkey, pd_a as u64);
    ifc::create_mkey_in::memory_key_mkey_entry::length64.set(&mut mkey, 1);
    assert_eq!(t.fails(&mkey, 16), foreign, "a key on A's PD");

    // A context that still owns objects stays; once they are gone it can go.
    assert_eq!(t.fails(&destroy_uctx(a), 16), (status::BAD_RES_STATE, syn::DESTROY_UCTX_BUSY));
    t.ok(&cq_cmd(ifc::MLX5_CMD_OP_DESTROY_CQ, a, cq_a), 16);
    t.ok(&dealloc_pd(a, pd_a), 16);
    t.ok(&destroy_uctx(a), 16);
    // B's QP, destroyed by the kernel (as after kill -9), then B.
    let mut d = cmd(ifc::MLX5_CMD_OP_DESTROY_QP, 0, ifc::destroy_qp_in::SIZE);
    ifc::destroy_qp_in::qpn.set(&mut d, qp_b as u64);
    t.ok(&d, 16);
    t.ok(&cq_cmd(ifc::MLX5_CMD_OP_DESTROY_CQ, 0, cq_b), 16);
    assert_eq!(t.fails(&destroy_uctx(b), 16), (status::BAD_RES_STATE, syn::DESTROY_UCTX_BUSY), "its PD");
    t.ok(&dealloc_pd(0, pd_b), 16);
    t.ok(&destroy_uctx(b), 16);
}

fn transition(op: u32, uid: u16, qpn: u32) -> Vec<u8> {
    by(uid, transition_in(op, qpn))
}
