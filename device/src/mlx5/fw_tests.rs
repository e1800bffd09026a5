//! Firmware tests through the real command transport: hand-built command
//! entries and mailbox chains in a fake guest memory, executed by
//! [`Firmware::doorbell`] exactly as a `cmd_dbell` write would.

use std::sync::Arc;

use super::cmd::tests::{Builder, FlatMem};
use super::cmd::{status, Delivery};
use super::fields::Field;
use super::firmware::Firmware;
use super::ifc;
use super::mad::PortConfig;
use crate::engine::{Access, Limits, QpState};
use vmm_sys_util::eventfd::EventFd;
use crate::vfio::protocol::vfio::*;
use crate::vfio::Interrupts;

pub(super) struct Bench {
    pub(super) mem: Arc<FlatMem>,
    b: Builder,
    pub(super) fw: Firmware,
    irqs: Arc<Interrupts>,
}

/// Output of one command.
struct Out {
    delivery: Delivery,
    status: u8,
    syndrome: u32,
    data: Vec<u8>,
}

impl Bench {
    pub(super) fn new() -> Bench {
        Bench::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Bench {
        let mem = Arc::new(FlatMem::new(4 << 20));
        let irqs = Arc::new(Interrupts::new(64));
        let port = PortConfig::new(0x1111, 0x2222, 3, 0x1017);
        let fw = Firmware::new(mem.clone(), irqs.clone(), port, limits);
        Bench { mem, b: Builder::new(), fw, irqs }
    }

    fn run(&mut self, input: &[u8], outlen: usize) -> Out {
        self.b.next_block = 0x10000;
        let ea = self.b.entry(&self.mem, 0, input, outlen);
        let r = self.fw.doorbell(self.b.cmdq, 1);
        assert_eq!(r.len(), 1);
        let data = self.b.output(&self.mem, ea);
        Out { delivery: r[0].delivery, status: data[0], syndrome: u32::from_be_bytes(data[4..8].try_into().unwrap()), data }
    }

    /// Runs a command that must succeed.
    pub(super) fn ok(&mut self, input: &[u8], outlen: usize) -> Vec<u8> {
        let o = self.run(input, outlen);
        assert_eq!((o.delivery, o.status), (Delivery::Ok, 0), "opcode {:#x} syndrome {:#x}", u16::from_be_bytes([input[0], input[1]]), o.syndrome);
        o.data
    }

    pub(super) fn status(&mut self, input: &[u8], outlen: usize) -> u8 {
        let o = self.run(input, outlen);
        assert_eq!(o.delivery, Delivery::Ok);
        o.status
    }

    pub(super) fn up(&mut self) -> u32 {
        self.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16), 12);
        self.ok(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 0, 32), 16);
        let o = self.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_UAR, 0, 16), 16);
        ifc::alloc_uar_out::uar.get(&o) as u32
    }

    /// Creates an EQ of 64 entries at guest address `buf` with `mask` word 0.
    pub(super) fn eq(&mut self, uar: u32, vector: u32, mask: u64, buf: u64) -> u32 {
        use ifc::create_eq_in as c;
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_EQ, 0, c::SIZE + 8);
        c::eq_context_entry::log_eq_size.set(&mut i, 6);
        c::eq_context_entry::uar_page.set(&mut i, uar as u64);
        c::eq_context_entry::intr.set(&mut i, vector as u64);
        c::event_bitmask.elem(0).set(&mut i, mask);
        c::pas.elem(0).set(&mut i, buf);
        // The driver initialises every EQE owner bit to 1.
        for k in 0..64 {
            self.mem.put(buf + k * 64 + 63, &[1]);
        }
        let o = self.ok(&i, 16);
        ifc::create_eq_out::eq_number.get(&o) as u32
    }

    pub(super) fn pd(&mut self) -> u32 {
        let o = self.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16);
        ifc::alloc_pd_out::pd.get(&o) as u32
    }

    /// A 64-entry CQ at `buf` (doorbell record at `buf + 0x1000`), its CQEs
    /// first marked invalid and hardware-owned (0xf1), as the driver does.
    pub(super) fn cq(&mut self, uar: u32, eqn: u32, buf: u64) -> u32 {
        use ifc::create_cq_in as c;
        for k in 0..64 {
            self.mem.put(buf + k * 64 + 63, &[0xf1]);
        }
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_CQ, 0, c::SIZE + 8);
        c::cq_context::log_cq_size.set(&mut i, 6);
        c::cq_context::uar_page.set(&mut i, uar as u64);
        c::cq_context::c_eqn_or_apu_element.set(&mut i, eqn as u64);
        c::cq_context::dbr_addr.set(&mut i, buf + 0x1000);
        c::pas.elem(0).set(&mut i, buf);
        let o = self.ok(&i, 16);
        ifc::create_cq_out::cqn.get(&o) as u32
    }

    /// A QP with 16-entry RQ and SQ at 0x200000, user index 0x77.
    pub(super) fn qp(&mut self, st: u64, pd: u32, uar: u32, cqn: u32) -> u32 {
        self.qp_with(st, pd, uar, cqn, 0x200000, |i| ifc::create_qp_in::qpc::user_index.set(i, 0x77))
    }

    /// A QP with 16-entry RQ and SQ in `buf`; `extra` sets more of the input.
    pub(super) fn qp_with(&mut self, st: u64, pd: u32, uar: u32, cqn: u32, buf: u64, extra: impl FnOnce(&mut [u8])) -> u32 {
        use ifc::create_qp_in as c;
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_QP, 0, c::SIZE + 16);
        c::qpc::st.set(&mut i, st);
        c::qpc::pd.set(&mut i, pd as u64);
        c::qpc::uar_page.set(&mut i, uar as u64);
        c::qpc::log_rq_size.set(&mut i, 4);
        c::qpc::log_rq_stride.set(&mut i, 0);
        c::qpc::log_sq_size.set(&mut i, 4);
        c::qpc::cqn_snd.set(&mut i, cqn as u64);
        c::qpc::cqn_rcv.set(&mut i, cqn as u64);
        c::pas.elem(0).set(&mut i, buf);
        extra(&mut i);
        let o = self.ok(&i, 16);
        ifc::create_qp_out::qpn.get(&o) as u32
    }

    /// A PA-mode key over the whole address space with the `access` bits of
    /// the mkey entry set and `tag` as its low byte; returns the key.
    pub(super) fn mkey(&mut self, pd: u32, access: &[Field], tag: u8) -> u32 {
        use ifc::create_mkey_in::memory_key_mkey_entry as m;
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, 0, ifc::create_mkey_in::SIZE);
        for f in access.iter().chain(&[m::length64]) {
            f.set(&mut i, 1);
        }
        m::pd.set(&mut i, pd as u64);
        m::mkey_7_0.set(&mut i, tag as u64);
        let o = self.ok(&i, 16);
        ((ifc::create_mkey_out::mkey_index.get(&o) as u32) << 8) | tag as u32
    }
}

/// A zeroed command input with opcode and op_mod.
pub(super) fn cmd(opcode: u32, op_mod: u16, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len.max(16)];
    ifc::mbox_in::opcode.set(&mut v, opcode as u64);
    ifc::mbox_in::op_mod.set(&mut v, op_mod as u64);
    v
}

pub(super) fn transition_in(opcode: u32, qpn: u32) -> Vec<u8> {
    let mut i = cmd(opcode, 0, ifc::rst2init_qp_in::SIZE);
    ifc::rst2init_qp_in::qpn.set(&mut i, qpn as u64);
    i
}

#[test]
fn bring_up_and_capabilities() {
    let mut t = Bench::new();
    // Before ENABLE_HCA only the bring-up commands work.
    assert_eq!(t.status(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16), status::BAD_SYS_STATE);
    t.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16), 12);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_ISSI, 0, 16), ifc::query_issi_out::SIZE);
    assert_eq!(ifc::query_issi_out::supported_issi_dw0.get(&o), 1);
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
    assert_eq!(t.status(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 0x7f << 1, 16), ifc::query_hca_cap_out::SIZE), status::BAD_PARAM);
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
    // Truncated input of a command that needs its whole layout.
    assert_eq!(t.status(&cmd(ifc::MLX5_CMD_OP_CREATE_EQ, 0, 16), 16), status::BAD_INP_LEN);
    // Only 4 KiB UARs.
    let mut s = cmd(ifc::MLX5_CMD_OP_SET_HCA_CAP, 0, ifc::set_hca_cap_in::SIZE);
    ifc::set_hca_cap_in::capability.inner(ifc::cmd_hca_cap::uar_4k).set(&mut s, 1);
    assert_eq!(t.status(&s, 16), status::BAD_PARAM);
}

#[test]
fn command_eq_gets_completion_eqes_and_msix() {
    let mut t = Bench::new();
    let uar = t.up();
    let e = EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK).unwrap();
    t.irqs
        .set_irqs(VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 0, 1, vec![e.try_clone().unwrap()], &[])
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
    assert_eq!(ifc::query_eq_out::eq_context_entry::producer_counter.get(&o), 2, "its own EQE comes after it completes");
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
    let mk = t.fw.engine.lookup_key(key).unwrap();
    assert_eq!(mk.translate(0x7f00_0000_0ff0, 0x20, pd, Access::LOCAL_WRITE), Ok(vec![(0x300ff0, 0x10), (0x500000, 0x10)]));
    assert!(mk.translate(0x7f00_0000_0800, 8, pd, Access::REMOTE_WRITE).is_err());
    // KLM mode is not offered; a PD that does not exist.
    m::access_mode_1_0.set(&mut i, 2);
    assert_eq!(t.status(&i, 16), status::BAD_PARAM);
    m::access_mode_1_0.set(&mut i, 0);
    m::pd.set(&mut i, 0x999);
    assert_eq!(t.status(&i, 16), status::BAD_RES);
}

#[test]
fn qp_transitions_latch_only_their_fields() {
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::new();
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    let cqn = t.cq(uar, eqn, 0x120000);
    let qpn = t.qp(0, pd, uar, cqn);

    let query = |t: &mut Bench| {
        let mut i = cmd(ifc::MLX5_CMD_OP_QUERY_QP, 0, 16);
        ifc::query_qp_in::qpn.set(&mut i, qpn as u64);
        t.ok(&i, ifc::query_qp_out::SIZE)
    };
    use ifc::query_qp_out::qpc as o;
    assert_eq!(o::state.get(&query(&mut t)), 0, "RESET after create");
    // Illegal: INIT2RTR from RESET.
    assert_eq!(t.status(&transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn), 16), status::BAD_QP_STATE);

    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::rre.set(&mut i, 1);
    q::rwe.set(&mut i, 1);
    q::primary_address_path::vhca_port_num.set(&mut i, 1);
    q::next_send_psn.set(&mut i, 0x999); // not an RST2INIT field
    t.ok(&i, 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn);
    q::mtu.set(&mut i, 3);
    q::remote_qpn.set(&mut i, 0x345);
    q::next_rcv_psn.set(&mut i, 0x1234);
    q::primary_address_path::rlid.set(&mut i, 9);
    q::min_rnr_nak.set(&mut i, 12);
    q::retry_count.set(&mut i, 6); // belongs to RTR2RTS: ignored here
    t.ok(&i, 16);
    let r = query(&mut t);
    assert_eq!(o::state.get(&r), 2);
    assert_eq!((o::remote_qpn.get(&r), o::next_rcv_psn.get(&r), o::mtu.get(&r)), (0x345, 0x1234, 3));
    assert_eq!(o::primary_address_path::rlid.get(&r), 9);
    assert_eq!(o::retry_count.get(&r), 0, "RTR2RTS field not latched by INIT2RTR");
    assert_eq!(o::next_send_psn.get(&r), 0, "RTR2RTS field not latched by RST2INIT");
    assert_eq!((o::rre.get(&r), o::rwe.get(&r), o::rae.get(&r)), (1, 1, 0));

    let mut i = transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, qpn);
    q::next_send_psn.set(&mut i, 0x777);
    q::retry_count.set(&mut i, 7);
    q::rnr_retry.set(&mut i, 7);
    q::primary_address_path::ack_timeout.set(&mut i, 14);
    q::remote_qpn.set(&mut i, 0x1); // not an RTR2RTS field
    t.ok(&i, 16);
    let qp = t.fw.engine.qps.get(qpn).unwrap();
    assert_eq!(qp.state, QpState::Rts);
    assert_eq!((qp.attrs.sq_psn, qp.attrs.retry_cnt, qp.attrs.rnr_retry, qp.attrs.timeout, qp.attrs.dest_qpn), (0x777, 7, 7, 14, 0x345));
    assert_eq!(qp.attrs.av.dlid, 9);
    // RTS2RTS: only what opt_param_mask selects.
    let mut i = transition_in(ifc::MLX5_CMD_OP_RTS2RTS_QP, qpn);
    ifc::rts2rts_qp_in::opt_param_mask.set(&mut i, ifc::MLX5_QP_OPTPAR_RAE as u64);
    q::rae.set(&mut i, 1);
    q::rre.set(&mut i, 0); // RRE not selected: stays 1
    t.ok(&i, 16);
    let r = query(&mut t);
    assert_eq!((o::rre.get(&r), o::rae.get(&r), o::state.get(&r)), (1, 1, 3));
    // To ERR from anywhere, to RESET restores the created context.
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2ERR_QP, qpn), 16);
    assert_eq!(o::state.get(&query(&mut t)), 6);
    assert_eq!(t.status(&transition_in(ifc::MLX5_CMD_OP_RTS2RTS_QP, qpn), 16), status::BAD_QP_STATE);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, qpn), 16);
    let r = query(&mut t);
    assert_eq!((o::state.get(&r), o::remote_qpn.get(&r), o::user_index.get(&r)), (0, 0, 0x77));
    // A nonexistent QP.
    assert_eq!(t.status(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, 0xabcd), 16), status::BAD_RES);
}

#[test]
fn ud_qkey_and_mad_ifc() {
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::new();
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    let cqn = t.cq(uar, eqn, 0x120000);
    let qpn = t.qp(8, pd, uar, cqn); // QP1
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::q_key.set(&mut i, 0x8001_0000);
    q::mtu.set(&mut i, 1);
    t.ok(&i, 16);
    assert_eq!(t.fw.engine.qps.get(qpn).unwrap().attrs.qkey, 0x8001_0000);
    // MAD_IFC NodeInfo through the command.
    let mut m = cmd(ifc::MLX5_CMD_OP_MAD_IFC, 3, ifc::mad_ifc_in::SIZE);
    ifc::mad_ifc_in::port.set(&mut m, 1);
    let mad = ifc::mad_ifc_in::mad.byte_range().unwrap();
    m[mad.start] = 1;
    m[mad.start + 1] = 1;
    m[mad.start + 2] = 1;
    m[mad.start + 3] = 1;
    m[mad.start + 16..mad.start + 18].copy_from_slice(&0x11u16.to_be_bytes());
    let o = t.ok(&m, ifc::mad_ifc_out::SIZE);
    let resp = ifc::mad_ifc_out::response_mad_packet.byte_range().unwrap();
    assert_eq!(o[resp.start + 3], 0x81, "GetResp");
    assert_eq!(&o[resp.start + 64 + 12..resp.start + 64 + 20], &0x1111u64.to_be_bytes(), "node GUID");
    ifc::mad_ifc_in::port.set(&mut m, 2);
    assert_eq!(t.status(&m, ifc::mad_ifc_out::SIZE), status::BAD_PARAM);
}

#[test]
fn qp1_mad_loopback_and_flush() {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::new();
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    // The kernel's PD-wide DMA key: PA mode, whole address space.
    let lkey = t.mkey(pd, &[m::lr, m::lw], 0x11);
    let cq_buf = 0x120000u64;
    let cqn = t.cq(uar, eqn, cq_buf);
    // QP1 with its buffer at 0x200000 (RQ 16 x 16 B, then SQ 16 x 64 B), dbr at 0x280000.
    let qpn = t.qp_with(8, pd, uar, cqn, 0x200000, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, 0x280000));
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::q_key.set(&mut i, 0x8001_0000);
    q::mtu.set(&mut i, 1);
    t.ok(&i, 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn), 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, qpn), 16);
    // One receive: 296 bytes at 0x300000.
    let mut rwqe = [0u8; 16];
    rwqe[0..4].copy_from_slice(&296u32.to_be_bytes());
    rwqe[4..8].copy_from_slice(&lkey.to_be_bytes());
    rwqe[8..16].copy_from_slice(&0x300000u64.to_be_bytes());
    t.mem.put(0x200000, &rwqe);
    t.mem.put(0x280000, &1u32.to_be_bytes());
    // One send: a 256-byte MAD to our own LID (3), QP1.
    let mad: Vec<u8> = (0..256).map(|x| x as u8).collect();
    t.mem.put(0x310000, &mad);
    let mut w = [0u8; 80];
    w[0..4].copy_from_slice(&(0x0a_u32).to_be_bytes()); // index 0, SEND
    w[4..8].copy_from_slice(&((qpn << 8) | 5).to_be_bytes());
    w[11] = 0x08;
    w[16..20].copy_from_slice(&0x8001_0000u32.to_be_bytes());
    w[24..28].copy_from_slice(&1u32.to_be_bytes());
    w[16 + 0x0e..16 + 0x10].copy_from_slice(&3u16.to_be_bytes());
    w[64..68].copy_from_slice(&256u32.to_be_bytes());
    w[68..72].copy_from_slice(&lkey.to_be_bytes());
    w[72..80].copy_from_slice(&0x310000u64.to_be_bytes());
    t.mem.put(0x200000 + 256, &w);
    t.mem.put(0x280004, &1u32.to_be_bytes());
    t.fw.send_doorbell(qpn);
    // The MAD landed after the 40-byte GRH area.
    assert_eq!(t.mem.get(0x300000 + 40, 256), mad);
    // Two CQEs: the responder one (delivered first) and the requester one.
    let c0 = t.mem.get(cq_buf, 64);
    let c1 = t.mem.get(cq_buf + 64, 64);
    assert_eq!(c0[0x3f] >> 4, super::cqe::op::RESP_SEND);
    assert_eq!(u32::from_be_bytes(c0[0x2c..0x30].try_into().unwrap()), 296, "GRH + MAD");
    assert_eq!(u32::from_be_bytes(c0[0x18..0x1c].try_into().unwrap()) & 0xffffff, 1, "source QP 1");
    assert_eq!(u16::from_be_bytes(c0[0x16..0x18].try_into().unwrap()), 3, "source LID");
    assert_eq!(c1[0x3f] >> 4, super::cqe::op::REQ);
    assert_eq!(c1[0x3f] & 1, 0, "first pass owner 0");
    // Both stamped with the device clock, in order.
    let ts = |c: &[u8]| u64::from_be_bytes(c[0x30..0x38].try_into().unwrap());
    assert!(ts(&c0) != 0 && ts(&c0) <= ts(&c1) && ts(&c1) <= super::clock::now(), "QP1 CQE timestamps");
    assert_eq!(u32::from_be_bytes(c1[0x38..0x3c].try_into().unwrap()), (0x0a << 24) | qpn);
    // A second send with no receive posted: dropped, but the send completes.
    // (The first WQE took 2 WQEBBs: ds 5.)
    w[0..4].copy_from_slice(&((2u32 << 8) | 0x0a).to_be_bytes());
    t.mem.put(0x200000 + 256 + 128, &w);
    t.mem.put(0x280004, &4u32.to_be_bytes());
    t.fw.send_doorbell(qpn);
    assert_eq!(t.mem.get(cq_buf + 128, 64)[0x3f] >> 4, super::cqe::op::REQ);
    // Two receives posted, then the QP is moved to ERR: each is flushed.
    t.mem.put(0x200000 + 16, &rwqe);
    t.mem.put(0x200000 + 32, &rwqe);
    t.mem.put(0x280000, &3u32.to_be_bytes());
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2ERR_QP, qpn), 16);
    for k in 3..5u64 {
        let e = t.mem.get(cq_buf + k * 64, 64);
        assert_eq!((e[0x3f] >> 4, e[0x37]), (super::cqe::op::RESP_ERR, super::cqe::syndrome::WR_FLUSH_ERR), "CQE {k}");
    }
    assert_eq!(t.mem.get(cq_buf + 5 * 64, 64)[0x3f], 0xf1, "nothing more");
    // A send with a bad lkey on another QP errors with LOCAL_PROT_ERR.
    let _ = Access::LOCAL_READ;
}

#[test]
fn port_change_events_reach_subscribed_eqs() {
    let mut t = Bench::new();
    let uar = t.up();
    let async_buf = 0x100000;
    let other_buf = 0x140000;
    let async_eq = t.eq(uar, 0, 1 << ifc::MLX5_EVENT_TYPE_PORT_CHANGE, async_buf);
    let _comp_eq = t.eq(uar, 1, 0, other_buf);
    t.fw.port_change(false);
    let e = t.mem.get(async_buf, 64);
    assert_eq!((e[1], e[3], e[0x28] >> 4, e[63] & 1), (ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, 1, 1, 0), "DOWN on port 1");
    assert_eq!(t.mem.get(other_buf + 63, 1)[0], 1, "EQ without the event bit untouched");
    // PortInfo through MAD_IFC now says DOWN.
    assert_eq!(t.fw.port.port_state, 1);
    t.fw.port_change(true);
    assert_eq!(t.mem.get(async_buf + 64, 64)[3], 4, "ACTIVE");
    let _ = async_eq;
}

#[test]
fn perfmgt_port_counters_are_real_and_clear() {
    use std::sync::atomic::Ordering::Relaxed;
    let mut t = Bench::new();
    t.up();
    let wire = Arc::new(crate::wire::counters::PortCounters::default());
    t.fw.wire_counters = Some(wire.clone());
    wire.tx_packets.store(10, Relaxed);
    wire.tx_bytes.store(4000, Relaxed);
    t.fw.counters.xmit_pkts.store(2, Relaxed);
    let pma = |t: &mut Bench, method: u8, select: u16| {
        let mut m = cmd(ifc::MLX5_CMD_OP_MAD_IFC, 3, ifc::mad_ifc_in::SIZE);
        ifc::mad_ifc_in::port.set(&mut m, 1);
        let b = ifc::mad_ifc_in::mad.byte_range().unwrap().start;
        m[b] = 1;
        m[b + 1] = 0x04;
        m[b + 2] = 1;
        m[b + 3] = method;
        m[b + 16..b + 18].copy_from_slice(&0x12u16.to_be_bytes());
        m[b + 66..b + 68].copy_from_slice(&select.to_be_bytes());
        let o = t.ok(&m, ifc::mad_ifc_out::SIZE);
        let r = ifc::mad_ifc_out::response_mad_packet.byte_range().unwrap().start;
        (u32::from_be_bytes(o[r + 64 + 32..r + 64 + 36].try_into().unwrap()), u32::from_be_bytes(o[r + 64 + 24..r + 64 + 28].try_into().unwrap()))
    };
    assert_eq!(pma(&mut t, 1, 0), (12, 1000), "fabric + local packets, data in words");
    pma(&mut t, 2, 0xffff);
    assert_eq!(pma(&mut t, 1, 0), (0, 0), "cleared");
    wire.tx_packets.store(15, Relaxed);
    assert_eq!(pma(&mut t, 1, 0).0, 5);
}

/// One side of the two-device data-path test: commands through the real
/// transport, then WQEs and doorbell records in its own guest memory.
pub(super) struct Side {
    pub(super) t: Bench,
    pub(super) qpn: u32,
    pub(super) key: u32,
    pub(super) cq_buf: u64,
    pub(super) cqn: u32,
}

pub(super) const QP_BUF: u64 = 0x200000; // RQ: 16 x 16 B, then SQ: 16 x 64 B
pub(super) const QP_DBR: u64 = 0x280000;
pub(super) const DATA: u64 = 0x300000;

/// A side with a QP of `qpc.st` `st` whose QP buffer (RQ, then SQ) is at `qp_buf`.
pub(super) fn side_at(lid: u16, net: &Arc<crate::wire::fabric::InProcNet>, index: usize, qp_buf: u64, st: u64) -> Side {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    let mut t = Bench::new();
    t.fw.port.lid = lid;
    let io = crate::engine::transport::Io {
        mem: t.mem.clone(),
        packets: net.sink(index),
        completions: t.fw.pending.clone(),
        local: crate::wire::fabric::Endpoint::v4(lid, std::net::Ipv4Addr::new(127, 0, 0, index as u8 + 1)),
        ..Default::default()
    };
    t.fw.engine.attach(io);
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    let key = t.mkey(pd, &[m::lr, m::lw, m::rr, m::rw, m::a], 0x33);
    let cq_buf = 0x120000u64;
    let cqn = t.cq(uar, eqn, cq_buf);
    let qpn = t.qp_with(st, pd, uar, cqn, qp_buf, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, QP_DBR));
    Side { t, qpn, key, cq_buf, cqn }
}

pub(super) fn connect(s: &mut Side, peer_qpn: u32, peer_lid: u16) {
    use ifc::rst2init_qp_in::qpc as q;
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, s.qpn);
    q::rre.set(&mut i, 1);
    q::rwe.set(&mut i, 1);
    q::rae.set(&mut i, 1);
    q::primary_address_path::vhca_port_num.set(&mut i, 1);
    s.t.ok(&i, 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, s.qpn);
    q::mtu.set(&mut i, 3);
    q::remote_qpn.set(&mut i, peer_qpn as u64);
    q::primary_address_path::rlid.set(&mut i, peer_lid as u64);
    q::log_rra_max.set(&mut i, 2);
    q::min_rnr_nak.set(&mut i, 1);
    s.t.ok(&i, 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, s.qpn);
    q::retry_count.set(&mut i, 7);
    q::rnr_retry.set(&mut i, 7);
    q::log_sra_max.set(&mut i, 2);
    q::primary_address_path::ack_timeout.set(&mut i, 14);
    s.t.ok(&i, 16);
}

/// Two connected RC sides (LIDs 1 and 2) on an in-process network; A's QP
/// buffer at `a_qp_buf`.
pub(super) fn rc_pair(a_qp_buf: u64) -> (Arc<crate::wire::fabric::InProcNet>, Side, Side) {
    pair_of(a_qp_buf, 0)
}

/// [`rc_pair`] with QPs of `qpc.st` `st` (RC or UC: connected to each other).
pub(super) fn pair_of(a_qp_buf: u64, st: u64) -> (Arc<crate::wire::fabric::InProcNet>, Side, Side) {
    use crate::wire::fabric::{Endpoint, InProcNet};
    let eps = [Endpoint::v4(1, std::net::Ipv4Addr::new(127, 0, 0, 1)), Endpoint::v4(2, std::net::Ipv4Addr::new(127, 0, 0, 2))];
    let net = InProcNet::new(&eps, &[Default::default(), Default::default()], Arc::new(crate::wire::clock::MonotonicClock::default()));
    let mut a = side_at(1, &net, 0, a_qp_buf, st);
    let mut b = side_at(2, &net, 1, QP_BUF, st);
    let (qa, qb) = (a.qpn, b.qpn);
    connect(&mut a, qb, 2);
    connect(&mut b, qa, 1);
    (net, a, b)
}

/// Runs both firmwares' packet handlers until the network is quiet.
pub(super) fn pump(net: &crate::wire::fabric::InProcNet, a: &mut Side, b: &mut Side) {
    use super::datapath::FwHandler;
    use std::sync::Mutex;
    let fa = Arc::new(Mutex::new(std::mem::replace(&mut a.t.fw, Firmware::new(a.t.mem.clone(), a.t.irqs.clone(), PortConfig::new(0, 0, 0, 0), Limits::default()))));
    let fb = Arc::new(Mutex::new(std::mem::replace(&mut b.t.fw, Firmware::new(b.t.mem.clone(), b.t.irqs.clone(), PortConfig::new(0, 0, 0, 0), Limits::default()))));
    let (ha, hb) = (FwHandler(fa.clone()), FwHandler(fb.clone()));
    for _ in 0..100 {
        if net.pump(&[&ha, &hb], 10_000) == 0 {
            break;
        }
    }
    drop((ha, hb));
    a.t.fw = Arc::try_unwrap(fa).ok().unwrap().into_inner().unwrap();
    b.t.fw = Arc::try_unwrap(fb).ok().unwrap().into_inner().unwrap();
}

pub(super) fn ctrl_seg(op: u8, idx: u16, qpn: u32, ds: u8) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[0..4].copy_from_slice(&(((idx as u32) << 8) | op as u32).to_be_bytes());
    c[4..8].copy_from_slice(&((qpn << 8) | ds as u32).to_be_bytes());
    c[11] = super::wqe::CTRL_CQ_UPDATE;
    c
}

pub(super) fn data_seg(len: u32, key: u32, addr: u64) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[0..4].copy_from_slice(&len.to_be_bytes());
    d[4..8].copy_from_slice(&key.to_be_bytes());
    d[8..16].copy_from_slice(&addr.to_be_bytes());
    d
}

/// An RC QP whose SQ lies outside guest memory: the WQE fetch at the
/// doorbell faults, the requester gets LOCAL_QP_OP_ERR for that slot and
/// the QP goes to ERR (as QP0/QP1/UD QPs do), instead of stopping silently.
#[test]
fn sq_outside_guest_memory_is_a_local_qp_op_error() {
    use super::cqe::{op, syndrome};
    let (net, mut a, mut b) = rc_pair(0x7f00_0000_0000);
    let qa = a.qpn;
    a.t.mem.put(QP_DBR + 4, &1u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    let e = a.t.mem.get(a.cq_buf, 64);
    assert_eq!((e[0x3f] >> 4, e[0x37]), (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR), "error CQE for the faulting fetch");
    assert_eq!(u16::from_be_bytes([e[0x3c], e[0x3d]]), 0, "wqe_counter: the slot at the consumer index");
    assert_eq!(a.t.fw.engine.qps.get(qa).unwrap().state, QpState::Err);
    assert_eq!(a.t.mem.get(a.cq_buf + 64, 64)[0x3f], 0xf1, "one CQE, nothing more");
    assert_eq!(b.t.mem.get(b.cq_buf, 64)[0x3f], 0xf1, "nothing reached the peer");
}

/// The device reads a CQ's consumer index from its doorbell record only
/// when the CQ looks full by the last count it knows: 96 signaled WRITEs
/// through a 64-entry CQ, the driver consuming after each batch of 16 and
/// never ringing a CQ doorbell, complete without an overrun.
#[test]
fn a_full_looking_cq_reads_the_consumer_index() {
    use super::cqe::op;
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    let qa = a.qpn;
    let sq = QP_BUF + 16 * 16;
    let mut raddr = [0u8; 16];
    raddr[0..8].copy_from_slice(&(DATA + 0x3000).to_be_bytes());
    raddr[8..12].copy_from_slice(&b.key.to_be_bytes());
    for batch in 0..6u32 {
        for k in 0..16u32 {
            let i = batch * 16 + k;
            let slot = sq + (i as u64 % 16) * 64;
            a.t.mem.put(slot, &ctrl_seg(super::wqe::opcode::RDMA_WRITE, i as u16, qa, 3));
            a.t.mem.put(slot + 16, &raddr);
            a.t.mem.put(slot + 32, &data_seg(8, a.key, DATA));
        }
        a.t.mem.put(QP_DBR + 4, &(batch * 16 + 16).to_be_bytes());
        a.t.fw.send_doorbell(qa);
        pump(&net, &mut a, &mut b);
        // The driver polls the batch's CQEs and updates the record only.
        a.t.mem.put(a.cq_buf + 0x1000, &(batch * 16 + 16).to_be_bytes());
    }
    let cq = a.t.fw.engine.cqs.get(a.cqn).unwrap();
    assert!(!cq.overrun, "no overrun");
    assert_eq!(cq.producer, 96);
    let last = a.t.mem.get(a.cq_buf + 31 * 64, 64);
    assert_eq!((last[0x3f] >> 4, u16::from_be_bytes([last[0x3c], last[0x3d]])), (op::REQ, 95), "completion 95 in slot 31");
    assert_eq!(last[0x3f] & 1, 1, "its owner bit: the CQ's second pass");
}

#[test]
fn rc_send_and_write_between_two_devices_through_wqes() {
    use super::cqe::op;
    let (net, mut a, mut b) = rc_pair(QP_BUF);
    let (qa, qb) = (a.qpn, b.qpn);

    // B posts one receive of 256 bytes (no doorbell: only the record).
    b.t.mem.put(QP_BUF, &data_seg(256, b.key, DATA + 0x1000));
    b.t.mem.put(QP_DBR, &1u32.to_be_bytes());
    // A sends 200 bytes: ctrl + one data segment.
    let msg: Vec<u8> = (0..200u32).map(|x| (x * 7) as u8).collect();
    a.t.mem.put(DATA, &msg);
    let sq = QP_BUF + 16 * 16;
    a.t.mem.put(sq, &ctrl_seg(super::wqe::opcode::SEND, 0, qa, 2));
    a.t.mem.put(sq + 16, &data_seg(200, a.key, DATA));
    a.t.mem.put(QP_DBR + 4, &1u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    assert_eq!(b.t.mem.get(DATA + 0x1000, 200), msg, "payload landed in B's receive buffer");
    let rc = b.t.mem.get(b.cq_buf, 64);
    assert_eq!(rc[0x3f] >> 4, op::RESP_SEND);
    assert_eq!(u32::from_be_bytes(rc[0x2c..0x30].try_into().unwrap()), 200);
    assert_eq!(u32::from_be_bytes(rc[0x38..0x3c].try_into().unwrap()) & 0xffffff, qb);
    let sc = a.t.mem.get(a.cq_buf, 64);
    assert_eq!(sc[0x3f] >> 4, op::REQ, "requester completion after the ACK");
    assert_eq!(u16::from_be_bytes([sc[0x3c], sc[0x3d]]), 0, "wqe_counter");

    // A writes 64 bytes into B's memory with B's rkey: ctrl + raddr + data (ds 3).
    let w: Vec<u8> = (0..64u8).collect();
    a.t.mem.put(DATA + 0x2000, &w);
    a.t.mem.put(sq + 64, &ctrl_seg(super::wqe::opcode::RDMA_WRITE, 1, qa, 3));
    let mut raddr = [0u8; 16];
    raddr[0..8].copy_from_slice(&(DATA + 0x3000).to_be_bytes());
    raddr[8..12].copy_from_slice(&b.key.to_be_bytes());
    a.t.mem.put(sq + 64 + 16, &raddr);
    a.t.mem.put(sq + 64 + 32, &data_seg(64, a.key, DATA + 0x2000));
    a.t.mem.put(QP_DBR + 4, &2u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    assert_eq!(b.t.mem.get(DATA + 0x3000, 64), w, "RDMA WRITE landed");
    let sc = a.t.mem.get(a.cq_buf + 64, 64);
    assert_eq!((sc[0x3f] >> 4, sc[0x38]), (op::REQ, super::wqe::opcode::RDMA_WRITE));
    assert_eq!(b.t.mem.get(b.cq_buf + 64, 64)[0x3f], 0xf1, "a plain WRITE consumes no receive");

    // A write with a wrong rkey: remote access error CQE on A, QP to ERR.
    a.t.mem.put(sq + 128, &ctrl_seg(super::wqe::opcode::RDMA_WRITE, 2, qa, 3));
    raddr[8..12].copy_from_slice(&(b.key ^ 0x100).to_be_bytes());
    a.t.mem.put(sq + 128 + 16, &raddr);
    a.t.mem.put(sq + 128 + 32, &data_seg(64, a.key, DATA + 0x2000));
    a.t.mem.put(QP_DBR + 4, &3u32.to_be_bytes());
    a.t.fw.send_doorbell(qa);
    pump(&net, &mut a, &mut b);
    let e = a.t.mem.get(a.cq_buf + 128, 64);
    assert_eq!((e[0x3f] >> 4, e[0x37]), (op::REQ_ERR, super::cqe::syndrome::REMOTE_ACCESS_ERR));
    assert_eq!(a.t.fw.engine.qps.get(qa).unwrap().state, QpState::Err);
}

#[test]
fn memic_alloc_register_and_free() {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    let mut t = Bench::new();
    t.fw.memic = Some((31 << 20, 1 << 20));
    t.fw.reset();
    t.up();
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, (super::firmware::CAP_DEV_MEM << 1) | 1, 16), ifc::query_hca_cap_out::SIZE);
    let cap = ifc::query_hca_cap_out::capability;
    assert_eq!(cap.inner(ifc::device_mem_cap::memic).get(&o), 1);
    assert_eq!(cap.inner(ifc::device_mem_cap::memic_bar_start_addr).get(&o), 31 << 20);
    let alloc = |t: &mut Bench, start: u64, size: u64, len: u64| {
        let mut i = cmd(ifc::MLX5_CMD_OP_ALLOC_MEMIC, 0, ifc::alloc_memic_in::SIZE);
        ifc::alloc_memic_in::range_start_addr.set(&mut i, start);
        ifc::alloc_memic_in::range_size.set(&mut i, size);
        ifc::alloc_memic_in::memic_size.set(&mut i, len);
        t.run(&i, ifc::alloc_memic_out::SIZE)
    };
    let a = alloc(&mut t, 31 << 20, 4096, 4096);
    assert_eq!(a.status, 0);
    let at = ifc::alloc_memic_out::memic_start_addr.get(&a.data);
    assert_eq!(at, 31 << 20);
    assert_eq!(alloc(&mut t, 31 << 20, 4096, 64).status, status::NO_RES, "range busy: the driver tries the next");
    assert_eq!(alloc(&mut t, 30 << 20, 4096, 64).status, status::BAD_PARAM, "outside the window");
    let pd = t.pd();
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, 0, ifc::create_mkey_in::SIZE);
    m::access_mode_4_2.set(&mut i, 1);
    m::access_mode_1_0.set(&mut i, 1); // 5 = MEMIC
    m::lr.set(&mut i, 1);
    m::rw.set(&mut i, 1);
    m::pd.set(&mut i, pd as u64);
    m::start_addr.set(&mut i, at + 0x100);
    m::len.set(&mut i, 0x100);
    let o = t.ok(&i, 16);
    let key = (ifc::create_mkey_out::mkey_index.get(&o) as u32) << 8;
    let k = t.fw.engine.lookup_key(key).unwrap();
    // Zero based: remote address 0x80 is 0x80 bytes into the key's memory.
    assert_eq!(k.translate(0x80, 8, pd, Access::REMOTE_WRITE), Ok(vec![(crate::engine::DEVICE_MEMORY | 0x180, 8)]));
    assert!(k.translate(0xfc, 8, pd, Access::REMOTE_WRITE).is_err(), "past the key");
    // Registering device memory that was never allocated is refused.
    m::start_addr.set(&mut i, at + 0x2000);
    assert_eq!(t.status(&i, 16), status::BAD_PARAM);
    let mut d = cmd(ifc::MLX5_CMD_OP_DEALLOC_MEMIC, 0, ifc::dealloc_memic_in::SIZE);
    ifc::dealloc_memic_in::memic_start_addr.set(&mut d, at);
    ifc::dealloc_memic_in::memic_size.set(&mut d, 4096);
    t.ok(&d, 16);
    assert_eq!(t.status(&d, 16), status::BAD_PARAM, "double free");
}

#[path = "fw_tests_cq.rs"]
mod cq;
#[path = "fw_event_tests.rs"]
mod events;
