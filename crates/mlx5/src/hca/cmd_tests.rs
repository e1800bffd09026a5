//! Firmware tests, HCA and object commands: bring-up, capabilities, dispatch
//! failures, the command EQ, object references and limits, memory keys.

use crate::cmd::syndrome as syn;
use crate::test_support::*;
use vrnic_engine::KeyFault;

#[test]
fn bring_up_and_capabilities() {
    let mut t = Bench::new();
    // Before ENABLE_HCA only the bring-up commands work.
    assert_eq!(t.status(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16), status::BAD_SYS_STATE);
    t.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16), 12);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_ISSI, 0, 16), ifc::query_issi_out::SIZE);
    assert_eq!(ifc::query_issi_out::supported_issi_dw0.get(&o), 0b11, "ISSI 0 and 1");
    assert_eq!(ifc::query_issi_out::current_issi.get(&o), 0);
    // mlx5_core's choice: SET_ISSI 1 (2 does not exist).
    let mut set = cmd(ifc::MLX5_CMD_OP_SET_ISSI, 0, 16);
    ifc::set_issi_in::current_issi.set(&mut set, 2);
    assert_eq!(t.status(&set, 16), status::BAD_PARAM);
    ifc::set_issi_in::current_issi.set(&mut set, 1);
    t.ok(&set, 16);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_ISSI, 0, 16), ifc::query_issi_out::SIZE);
    assert_eq!(ifc::query_issi_out::current_issi.get(&o), 1);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_PAGES, 1, 16), 16);
    assert_eq!(ifc::query_pages_out::num_pages.get(&o), 0);
    // QUERY_HCA_CAP general, CUR (op_mod 1) and MAX (0): 0x1000 bytes through mailboxes.
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
    let cap = ifc::query_hca_cap_out::capability;
    assert_eq!(cap.inner(ifc::cmd_hca_cap::port_type).get(&o), 0, "IB");
    assert_eq!(cap.inner(ifc::cmd_hca_cap::xrc).get(&o), 1);
    assert_eq!(cap.inner(ifc::cmd_hca_cap::log_max_qp).get(&o), 16);
    assert_eq!(cap.inner(ifc::cmd_hca_cap::bf).get(&o), 0);
    // SET_HCA_CAP: settable fields land in CUR, MAX is untouched.
    let mut s = cmd(ifc::MLX5_CMD_OP_SET_HCA_CAP, 0, ifc::set_hca_cap_in::SIZE);
    let r = ifc::set_hca_cap_in::capability.byte_range().unwrap();
    s[r.clone()].copy_from_slice(&o[ifc::query_hca_cap_out::capability.byte_range().unwrap()]);
    let scap = ifc::set_hca_cap_in::capability;
    scap.inner(ifc::cmd_hca_cap::log_max_qp).set(&mut s, 12);
    scap.inner(ifc::cmd_hca_cap::port_type).set(&mut s, 1); // not settable: ignored
    t.ok(&s, 16);
    let cur = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
    let max = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 0, 16), ifc::query_hca_cap_out::SIZE);
    assert_eq!(cap.inner(ifc::cmd_hca_cap::log_max_qp).get(&cur), 12);
    assert_eq!(cap.inner(ifc::cmd_hca_cap::port_type).get(&cur), 0);
    assert_eq!(cap.inner(ifc::cmd_hca_cap::log_max_qp).get(&max), 16);
    // log_max_qp above MAX is refused.
    scap.inner(ifc::cmd_hca_cap::log_max_qp).set(&mut s, 20);
    assert_eq!(t.status(&s, 16), status::BAD_PARAM);
    // Unknown capability type.
    assert_eq!(
        t.status(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 0x7f << 1, 16), ifc::query_hca_cap_out::SIZE),
        status::BAD_PARAM
    );
    t.ok(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 0, 32), 16);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_ADAPTER, 0, 16), ifc::query_adapter_out::SIZE);
    assert_eq!(ifc::query_adapter_out::query_adapter_struct::ieee_vendor_id.get(&o), 0x0002c9);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_TEARDOWN_HCA, 0, 16), 16);
    assert_eq!(ifc::teardown_hca_out::state.get(&o), 0);
}

#[test]
fn unknown_opcodes_and_distinct_syndromes() {
    let mut t = Bench::new();
    t.up();
    let a = t.run(&cmd(0x0fff, 0, 16), 16);
    assert_eq!(a.status, status::BAD_OP);
    let b = t.run(&cmd(ifc::MLX5_CMD_OP_DESTROY_CQ, 0, 16), 16);
    assert_eq!(b.status, status::BAD_RES);
    let c = t.run(&cmd(ifc::MLX5_CMD_OP_QUERY_PAGES, 9, 16), 16);
    assert_eq!(c.status, status::BAD_PARAM);
    assert!(a.syndrome != b.syndrome && b.syndrome != c.syndrome && a.syndrome != c.syndrome);
    // Each names its failure site with a fixed code (cmd/syndrome.rs).
    assert_eq!(a.syndrome, syn::DISPATCH_UNKNOWN_OPCODE);
    assert_eq!(b.syndrome, syn::DESTROY_CQ_ENGINE);
    assert_eq!(c.syndrome, syn::QUERY_PAGES_BAD_PARAM);
    assert_eq!((a.syndrome, b.syndrome, c.syndrome), (0x7e00_0001, 0x7e03_001a, 0x7e01_0006), "codes never renumber");
    // Truncated input of a command that needs its whole layout.
    assert_eq!(t.status(&cmd(ifc::MLX5_CMD_OP_CREATE_EQ, 0, 16), 16), status::BAD_INP_LEN);
    // Only 4 KiB UARs.
    let mut s = cmd(ifc::MLX5_CMD_OP_SET_HCA_CAP, 0, ifc::set_hca_cap_in::SIZE);
    ifc::set_hca_cap_in::capability.inner(ifc::cmd_hca_cap::uar_4k).set(&mut s, 1);
    assert_eq!(t.status(&s, 16), status::BAD_PARAM);
}

/// The dispatch table's phase column: before ENABLE_HCA only the Boot rows
/// run (ISSI, boot pages, ENABLE/DISABLE_HCA); after DISABLE_HCA, again.
#[test]
fn the_phase_column_gates_commands_before_enable_hca() {
    let mut t = Bench::new();
    let alloc_pd = cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16);
    let o = t.run(&alloc_pd, 16);
    assert_eq!((o.status, o.syndrome), (status::BAD_SYS_STATE, syn::DISPATCH_WRONG_PHASE));
    t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_ISSI, 0, 16), ifc::query_issi_out::SIZE);
    t.ok(&cmd(ifc::MLX5_CMD_OP_SET_ISSI, 0, 16), 16);
    t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_PAGES, 1, 16), 16);
    t.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16), 12);
    t.ok(&alloc_pd, 16);
    t.ok(&cmd(ifc::MLX5_CMD_OP_DISABLE_HCA, 0, 16), 16);
    assert_eq!(t.status(&alloc_pd, 16), status::BAD_SYS_STATE);
}

#[test]
fn command_eq_gets_completion_eqes_and_msix() {
    let mut t = Bench::new();
    let uar = t.up();
    let e = EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK).unwrap();
    t.irqs
        .set_irqs(
            VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
            VFIO_PCI_MSIX_IRQ_INDEX,
            0,
            1,
            vec![e.try_clone().unwrap()],
            &[],
        )
        .unwrap();
    let eq_buf = 0x100000;
    let eqn = t.eq(uar, 0, 1 << ifc::MLX5_EVENT_TYPE_CMD, eq_buf);
    // The CREATE_EQ that made the command EQ completes by polling: no EQE.
    assert_eq!(t.mem.get(eq_buf + 63, 1)[0], 1, "EQE 0 still owned by hardware");
    // The driver arms it; the next command posts an EQE with its slot and raises vector 0.
    t.fw.eq_doorbell(eqn, 0, true);
    t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16);
    let eqe = t.mem.get(eq_buf, 64);
    assert_eq!(eqe[1], ifc::MLX5_EVENT_TYPE_CMD as u8);
    assert_eq!(u32::from_be_bytes(eqe[0x20..0x24].try_into().unwrap()), 1, "slot 0 bit");
    assert_eq!(eqe[63] & 1, 0, "owner bit for the first pass is 0");
    assert_eq!(e.read().unwrap_or(0), 1);
    // Not re-armed: the next EQE is written but no interrupt.
    t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16);
    assert_eq!(t.mem.get(eq_buf + 64, 64)[1], ifc::MLX5_EVENT_TYPE_CMD as u8);
    assert_eq!(e.read().unwrap_or(0), 0);
    // Arming with an unconsumed event pending interrupts at once.
    t.fw.eq_doorbell(eqn, 1, true);
    assert_eq!(e.read().unwrap_or(0), 1);
    // QUERY_EQ reports the counters.
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_EQ, 0, 16);
    ifc::query_eq_in::eq_number.set(&mut q, eqn as u64);
    let o = t.ok(&q, ifc::query_eq_out::SIZE);
    assert_eq!(
        ifc::query_eq_out::eq_context_entry::producer_counter.get(&o),
        2,
        "its own EQE comes after it completes"
    );
    assert_eq!(ifc::query_eq_out::eq_context_entry::consumer_counter.get(&o), 1);
    // EQ vector beyond MSI-X, unknown UAR.
    use ifc::create_eq_in as c;
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_EQ, 0, c::SIZE + 8);
    c::eq_context_entry::log_eq_size.set(&mut i, 6);
    c::eq_context_entry::uar_page.set(&mut i, uar as u64);
    c::eq_context_entry::intr.set(&mut i, 64);
    assert_eq!(t.status(&i, 16), status::BAD_PARAM);
    c::eq_context_entry::intr.set(&mut i, 1);
    c::eq_context_entry::uar_page.set(&mut i, 4000);
    assert_eq!(t.status(&i, 16), status::BAD_RES);
    // Missing page list (input too short for 2 pages).
    c::eq_context_entry::uar_page.set(&mut i, uar as u64);
    c::eq_context_entry::log_eq_size.set(&mut i, 7);
    assert_eq!(t.status(&i, 16), status::BAD_INP_LEN);
}

#[test]
fn objects_references_and_limits() {
    let mut t = Bench::with_limits(Limits { pds: 2, ..Limits::default() });
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    t.pd();
    assert_eq!(t.status(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16), status::LIM);
    let cqn = t.cq(uar, eqn, 0x120000);
    let qpn = t.qp(0, pd, uar, cqn);
    // mlx5_ib's REG_UMR QP carries no PD (qpc.pd = 0); an RC QP must.
    let umr = t.qp(0xc, 0, uar, cqn);
    let mut bad = cmd(ifc::MLX5_CMD_OP_CREATE_QP, 0, ifc::create_qp_in::SIZE + 16);
    ifc::create_qp_in::qpc::uar_page.set(&mut bad, uar as u64);
    assert_eq!(t.status(&bad, 16), status::BAD_RES, "RC QP without a PD");
    let mut du = cmd(ifc::MLX5_CMD_OP_DESTROY_QP, 0, 16);
    ifc::destroy_qp_in::qpn.set(&mut du, umr as u64);
    t.ok(&du, 16);
    // A CQ in use by a QP cannot go, nor its EQ.
    let mut d = cmd(ifc::MLX5_CMD_OP_DESTROY_CQ, 0, 16);
    ifc::destroy_cq_in::cqn.set(&mut d, cqn as u64);
    assert_eq!(t.status(&d, 16), status::BAD_RES_STATE);
    let mut de = cmd(ifc::MLX5_CMD_OP_DESTROY_EQ, 0, 16);
    ifc::destroy_eq_in::eq_number.set(&mut de, eqn as u64);
    assert_eq!(t.status(&de, 16), status::BAD_RES_STATE);
    let mut dq = cmd(ifc::MLX5_CMD_OP_DESTROY_QP, 0, 16);
    ifc::destroy_qp_in::qpn.set(&mut dq, qpn as u64);
    t.ok(&dq, 16);
    t.ok(&d, 16);
    t.ok(&de, 16);
    // A CQ on a nonexistent EQ.
    use ifc::create_cq_in as c;
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_CQ, 0, c::SIZE + 8);
    c::cq_context::uar_page.set(&mut i, uar as u64);
    c::cq_context::c_eqn_or_apu_element.set(&mut i, 0x44);
    assert_eq!(t.status(&i, 16), status::BAD_RES);
}

#[test]
fn mkey_mtt_translation_and_checks() {
    use ifc::create_mkey_in as c;
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    let mut t = Bench::new();
    t.up();
    let pd = t.pd();
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, 0, c::SIZE + 3 * 8 + 8);
    m::access_mode_1_0.set(&mut i, 1);
    m::lr.set(&mut i, 1);
    m::lw.set(&mut i, 1);
    m::rr.set(&mut i, 1);
    m::mkey_7_0.set(&mut i, 0x42);
    m::pd.set(&mut i, pd as u64);
    m::start_addr.set(&mut i, 0x7f00_0000_0800);
    m::len.set(&mut i, 0x2000);
    m::log_page_size.set(&mut i, 12);
    for (k, pa) in [0x300000u64, 0x500000, 0x400000].iter().enumerate() {
        c::klm_pas_mtt.elem(k as u32 * 2).set(&mut i, pa >> 32);
        c::klm_pas_mtt.elem(k as u32 * 2 + 1).set(&mut i, pa & 0xffff_ffff);
    }
    // Too few translations supplied for 3 pages.
    c::translations_octword_actual_size.set(&mut i, 1);
    assert_eq!(t.status(&i, 16), status::BAD_PARAM);
    c::translations_octword_actual_size.set(&mut i, 2);
    let o = t.ok(&i, 16);
    let index = ifc::create_mkey_out::mkey_index.get(&o) as u32;
    let key = (index << 8) | 0x42;
    let mk = t.fw.core.engine.lookup_key(key).unwrap();
    assert_eq!(
        mk.translate(0x7f00_0000_0ff0, 0x20, pd, Access::LOCAL_WRITE),
        Ok(vec![(0x300ff0, 0x10), (0x500000, 0x10)])
    );
    assert!(mk.translate(0x7f00_0000_0800, 8, pd, Access::REMOTE_WRITE).is_err());
    // A PD that does not exist.
    let mut bad = i.clone();
    m::access_mode_1_0.set(&mut bad, 0);
    m::pd.set(&mut bad, 0x999);
    assert_eq!(t.status(&bad, 16), status::BAD_RES);
    // An indirect (KLM) key over the MTT key, its two entries in the mailbox: 0x10 bytes of the MTT key's
    // second page, then 0x20 of its first; remote write through it writes the MTT key (which allows local write).
    let mut k = cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, 0, c::SIZE + 2 * 16);
    m::access_mode_1_0.set(&mut k, 2);
    m::lr.set(&mut k, 1);
    m::lw.set(&mut k, 1);
    m::rw.set(&mut k, 1);
    m::mkey_7_0.set(&mut k, 0x17);
    m::pd.set(&mut k, pd as u64);
    m::start_addr.set(&mut k, 0x1000);
    m::len.set(&mut k, 0x30);
    for (e, (len, va)) in [(0x10u64, 0x7f00_0000_1000u64), (0x20, 0x7f00_0000_0800)].iter().enumerate() {
        let e = e as u32 * 4;
        c::klm_pas_mtt.elem(e).set(&mut k, *len);
        c::klm_pas_mtt.elem(e + 1).set(&mut k, key as u64);
        c::klm_pas_mtt.elem(e + 2).set(&mut k, va >> 32);
        c::klm_pas_mtt.elem(e + 3).set(&mut k, va & 0xffff_ffff);
    }
    c::translations_octword_actual_size.set(&mut k, 2);
    // Room for fewer entries than supplied, or more than log_max_klm_list_size allows.
    m::translations_octword_size.set(&mut k, 1 << 17);
    assert_eq!(t.status(&k, 16), status::BAD_PARAM);
    m::translations_octword_size.set(&mut k, 4);
    let o = t.ok(&k, 16);
    let klm = (ifc::create_mkey_out::mkey_index.get(&o) as u32) << 8 | 0x17;
    assert_eq!(
        t.fw.core.engine.translate_key(klm, 0x1008, 0x10, pd, Access::REMOTE_WRITE),
        Ok(vec![(0x500008, 0x8), (0x300800, 0x8)])
    );
    assert_eq!(t.fw.core.engine.translate_key(klm, 0x1000, 0x31, pd, Access::REMOTE_WRITE), Err(KeyFault::Bounds));
    assert_eq!(t.fw.core.engine.translate_key(klm, 0x1000, 8, pd, Access::REMOTE_READ), Err(KeyFault::Access));
    // A KSM key's entry size is its log_page_size, which must be in range.
    m::access_mode_1_0.set(&mut k, 3);
    m::log_page_size.set(&mut k, 40);
    assert_eq!(t.status(&k, 16), status::BAD_PARAM);
    m::log_page_size.set(&mut k, 12);
    t.ok(&k, 16);
}

/// mlx5_core's shutdown: TEARDOWN_HCA PREPARE_FAST_TEARDOWN, then `nic_interface` = DISABLED ends
/// the function at once; a graceful teardown leaves that write alone; the function comes up again.
#[test]
fn fast_teardown_drops_every_object() {
    use ifc::cmd_hca_cap as c;
    let mut t = Bench::new();
    t.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16), 12);
    let caps = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 0, 16), ifc::query_hca_cap_out::SIZE);
    assert_eq!(ifc::query_hca_cap_out::capability.inner(c::fast_teardown).get(&caps), 1);
    assert_eq!(ifc::query_hca_cap_out::capability.inner(c::force_teardown).get(&caps), 0);
    t.ok(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 0, 32), 16);
    let pd = ifc::alloc_pd_out::pd.get(&t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16));
    let mut dealloc = cmd(ifc::MLX5_CMD_OP_DEALLOC_PD, 0, ifc::dealloc_pd_in::SIZE);
    ifc::dealloc_pd_in::pd.set(&mut dealloc, pd);
    // Graceful: DISABLED afterwards is only a register write.
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_TEARDOWN_HCA, 0, 16), 16);
    assert_eq!(ifc::teardown_hca_out::state.get(&o), 0);
    assert!(!t.fw.nic_interface_disabled());
    t.ok(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 0, 32), 16);
    // INIT_HCA forgets a prepared teardown.
    let mut fast = cmd(ifc::MLX5_CMD_OP_TEARDOWN_HCA, 0, 16);
    ifc::teardown_hca_in::profile.set(&mut fast, ifc::MLX5_TEARDOWN_HCA_IN_PROFILE_PREPARE_FAST_TEARDOWN as u64);
    t.ok(&fast, 16);
    t.ok(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 0, 32), 16);
    assert!(!t.fw.nic_interface_disabled());
    let o = t.ok(&fast, 16);
    assert_eq!(ifc::teardown_hca_out::state.get(&o), 0, "success, not FORCE_STATE_FAIL");
    assert!(t.fw.nic_interface_disabled());
    assert!(!t.fw.nic_interface_disabled(), "once");
    // Back to power-on: bring-up commands only, and the PD is gone.
    assert_eq!(t.status(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16), status::BAD_SYS_STATE);
    t.up();
    assert_eq!(t.status(&dealloc, 16), status::BAD_RES);
}

/// SET_HCA_CAP's `log_max_qp` sizes the QP table, as mlx5_core's profiles do
/// (`prof_sel=1`: 2^12): QUERY reports it and the next create past it is
/// refused with LIM; a reset gives the device's own maximum back.
#[test]
fn the_qp_table_is_as_large_as_the_driver_set_it() {
    let mut t = Bench::new();
    t.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16), 12);
    let set_log_max_qp = |t: &mut Bench, log: u64| {
        let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
        let mut s = cmd(ifc::MLX5_CMD_OP_SET_HCA_CAP, 0, ifc::set_hca_cap_in::SIZE);
        let r = ifc::set_hca_cap_in::capability.byte_range().unwrap();
        s[r].copy_from_slice(&o[ifc::query_hca_cap_out::capability.byte_range().unwrap()]);
        ifc::set_hca_cap_in::capability.inner(ifc::cmd_hca_cap::log_max_qp).set(&mut s, log);
        t.ok(&s, 16);
    };
    set_log_max_qp(&mut t, 2);
    t.ok(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 0, 32), 16);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_UAR, 0, 16), 16);
    let uar = ifc::alloc_uar_out::uar.get(&o) as u32;
    let eqn = t.eq(uar, 0, 0, 0x10000);
    let cqn = t.cq(uar, eqn, 0x20000);
    let pd = t.pd();
    let qps: Vec<u32> = (0..4).map(|_| t.qp(ifc::MLX5_QP_ST_RC as u64, pd, uar, cqn)).collect();
    let fifth = create_qp_in(ifc::MLX5_QP_ST_RC as u64, pd, uar, cqn, 0x200000);
    assert_eq!(t.status(&fifth, 16), status::LIM, "a fifth QP past log_max_qp 2");
    // One destroyed: one more fits.
    let mut d = cmd(ifc::MLX5_CMD_OP_DESTROY_QP, 0, ifc::destroy_qp_in::SIZE);
    ifc::destroy_qp_in::qpn.set(&mut d, qps[0] as u64);
    t.ok(&d, 16);
    t.ok(&fifth, 16);
    assert_eq!(t.status(&fifth, 16), status::LIM);
    // A reset: the device's own maximum again (2^16), whatever the driver had set.
    t.fw.reset();
    let uar = t.up();
    let eqn = t.eq(uar, 0, 0, 0x10000);
    let cqn = t.cq(uar, eqn, 0x20000);
    let pd = t.pd();
    for _ in 0..8 {
        t.qp(ifc::MLX5_QP_ST_RC as u64, pd, uar, cqn);
    }
}
