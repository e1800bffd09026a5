//! The firmware test bench: hand-built command entries and mailbox chains
//! in a fake guest memory, executed by [`Firmware::doorbell`] exactly as a
//! `cmd_dbell` write would, and the QP pairs on an in-process fabric the
//! data-path tests drive. Every domain's command tests use it.

pub(crate) use std::sync::Arc;

pub(crate) use crate::builder::FirmwareBuilder;
pub(crate) use crate::cmd::tests::{Builder, FlatMem};
pub(crate) use crate::cmd::{status, Delivery};
pub(crate) use crate::fields::Field;
pub(crate) use crate::firmware::Firmware;
pub(crate) use crate::ib::port::PortConfig;
pub(crate) use crate::ifc;
pub(crate) use vmm_sys_util::eventfd::EventFd;
pub(crate) use vrnic_engine::{Access, Limits, QpState};
pub(crate) use vrnic_vfio::protocol::vfio::*;
pub(crate) use vrnic_vfio::Interrupts;

pub(crate) struct Bench {
    pub(crate) mem: Arc<FlatMem>,
    b: Builder,
    pub(crate) fw: Firmware,
    pub(crate) irqs: Arc<Interrupts>,
}

/// Output of one command.
pub(crate) struct Out {
    pub(crate) delivery: Delivery,
    pub(crate) status: u8,
    pub(crate) syndrome: u32,
    pub(crate) data: Vec<u8>,
}

impl Bench {
    pub(crate) fn new() -> Bench {
        Bench::with_limits(Limits::default())
    }

    /// A firmware whose port is Ethernet (MAC 02:00:00:00:00:07).
    pub(crate) fn eth() -> Bench {
        Bench::eth_with_limits(Limits::default())
    }

    /// [`Bench::eth`] with these object limits.
    pub(crate) fn eth_with_limits(limits: Limits) -> Bench {
        let mem = Arc::new(FlatMem::new(4 << 20));
        let irqs = Arc::new(Interrupts::new(64));
        let port = PortConfig::new(0x1111, 0x2222, 3, 0x1017);
        let fw = FirmwareBuilder::new(mem.clone(), irqs.clone(), port, limits)
            .link(crate::link::LinkLayer::Eth)
            .mac([0x02, 0, 0, 0, 0, 7])
            .build()
            .expect("command table");
        Bench { mem, b: Builder::new(), fw, irqs }
    }

    /// Runs a command; its status and output.
    pub(crate) fn run_raw(&mut self, input: &[u8], outlen: usize) -> (u8, Vec<u8>) {
        let o = self.run(input, outlen);
        assert_eq!(o.delivery, Delivery::Ok);
        (o.status, o.data)
    }

    /// Runs a command that must fail; its (status, syndrome).
    pub(crate) fn fails(&mut self, input: &[u8], outlen: usize) -> (u8, u32) {
        let o = self.run(input, outlen);
        assert_eq!(o.delivery, Delivery::Ok);
        assert_ne!(o.status, 0, "opcode {:#x} must fail", u16::from_be_bytes([input[0], input[1]]));
        (o.status, o.syndrome)
    }

    pub(crate) fn with_limits(limits: Limits) -> Bench {
        let mem = Arc::new(FlatMem::new(4 << 20));
        let irqs = Arc::new(Interrupts::new(64));
        let port = PortConfig::new(0x1111, 0x2222, 3, 0x1017);
        let fw = FirmwareBuilder::new(mem.clone(), irqs.clone(), port, limits).build().expect("command table");
        Bench { mem, b: Builder::new(), fw, irqs }
    }

    pub(crate) fn run(&mut self, input: &[u8], outlen: usize) -> Out {
        self.b.next_block = 0x10000;
        let ea = self.b.entry(&self.mem, 0, input, outlen);
        let r = self.fw.doorbell(self.b.cmdq, 1);
        assert_eq!(r.len(), 1);
        let data = self.b.output(&self.mem, ea);
        Out {
            delivery: r[0].delivery,
            status: data[0],
            syndrome: u32::from_be_bytes(data[4..8].try_into().unwrap()),
            data,
        }
    }

    /// Runs a command that must succeed.
    pub(crate) fn ok(&mut self, input: &[u8], outlen: usize) -> Vec<u8> {
        let o = self.run(input, outlen);
        assert_eq!(
            (o.delivery, o.status),
            (Delivery::Ok, 0),
            "opcode {:#x} syndrome {:#x}",
            u16::from_be_bytes([input[0], input[1]]),
            o.syndrome
        );
        o.data
    }

    pub(crate) fn status(&mut self, input: &[u8], outlen: usize) -> u8 {
        let o = self.run(input, outlen);
        assert_eq!(o.delivery, Delivery::Ok);
        o.status
    }

    pub(crate) fn up(&mut self) -> u32 {
        self.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16), 12);
        self.ok(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 0, 32), 16);
        let o = self.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_UAR, 0, 16), 16);
        ifc::alloc_uar_out::uar.get(&o) as u32
    }

    /// Creates an EQ of 64 entries at guest address `buf` with `mask` word 0.
    pub(crate) fn eq(&mut self, uar: u32, vector: u32, mask: u64, buf: u64) -> u32 {
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

    pub(crate) fn pd(&mut self) -> u32 {
        let o = self.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16), 16);
        ifc::alloc_pd_out::pd.get(&o) as u32
    }

    /// A 64-entry CQ at `buf` (doorbell record at `buf + 0x1000`), its CQEs
    /// first marked invalid and hardware-owned (0xf1), as the driver does.
    pub(crate) fn cq(&mut self, uar: u32, eqn: u32, buf: u64) -> u32 {
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
    pub(crate) fn qp(&mut self, st: u64, pd: u32, uar: u32, cqn: u32) -> u32 {
        self.qp_with(st, pd, uar, cqn, 0x200000, |i| ifc::create_qp_in::qpc::user_index.set(i, 0x77))
    }

    /// A QP with 16-entry RQ and SQ in `buf`; `extra` sets more of the input.
    pub(crate) fn qp_with(
        &mut self,
        st: u64,
        pd: u32,
        uar: u32,
        cqn: u32,
        buf: u64,
        extra: impl FnOnce(&mut [u8]),
    ) -> u32 {
        let mut i = create_qp_in(st, pd, uar, cqn, buf);
        extra(&mut i);
        let o = self.ok(&i, 16);
        ifc::create_qp_out::qpn.get(&o) as u32
    }

    /// A PA-mode key over the whole address space with the `access` bits of
    /// the mkey entry set and `tag` as its low byte; returns the key.
    pub(crate) fn mkey(&mut self, pd: u32, access: &[Field], tag: u8) -> u32 {
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
pub(crate) fn cmd(opcode: u32, op_mod: u16, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len.max(16)];
    ifc::mbox_in::opcode.set(&mut v, opcode as u64);
    ifc::mbox_in::op_mod.set(&mut v, op_mod as u64);
    v
}

/// `input` issued by user context `uid` (the header's uid).
pub(crate) fn by(uid: u16, mut input: Vec<u8>) -> Vec<u8> {
    ifc::mbox_in::uid.set(&mut input, uid as u64);
    input
}

/// A new user context (CREATE_UCTX); its uid.
pub(crate) fn create_uctx(t: &mut Bench) -> u16 {
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_CREATE_UCTX, 0, ifc::create_uctx_in::SIZE), ifc::create_uctx_out::SIZE);
    ifc::create_uctx_out::uid.get(&o) as u16
}

/// A PD of user context `uid`.
pub(crate) fn alloc_pd(t: &mut Bench, uid: u16) -> u32 {
    let o = t.ok(&by(uid, cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16)), 16);
    ifc::alloc_pd_out::pd.get(&o) as u32
}

/// CREATE_QP's input: a QP of type `st` with 16-entry RQ and SQ in `buf`,
/// `cqn` as both CQs.
pub(crate) fn create_qp_in(st: u64, pd: u32, uar: u32, cqn: u32, buf: u64) -> Vec<u8> {
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
    i
}

pub(crate) fn transition_in(opcode: u32, qpn: u32) -> Vec<u8> {
    let mut i = cmd(opcode, 0, ifc::rst2init_qp_in::SIZE);
    ifc::rst2init_qp_in::qpn.set(&mut i, qpn as u64);
    i
}

/// One side of the two-device data-path test: commands through the real
/// transport, then WQEs and doorbell records in its own guest memory.
pub(crate) struct Side {
    pub(crate) t: Bench,
    pub(crate) qpn: u32,
    pub(crate) key: u32,
    pub(crate) cq_buf: u64,
    pub(crate) cqn: u32,
}

pub(crate) const QP_BUF: u64 = 0x200000; // RQ: 16 x 16 B, then SQ: 16 x 64 B
pub(crate) const QP_DBR: u64 = 0x280000;
pub(crate) const DATA: u64 = 0x300000;

/// A side with a QP of `qpc.st` `st` whose QP buffer (RQ, then SQ) is at `qp_buf`.
pub(crate) fn side_at(lid: u16, net: &Arc<vrnic_fabric::InProcNet>, index: usize, qp_buf: u64, st: u64) -> Side {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    let mut t = Bench::new();
    t.fw.cfg.lid = lid;
    let io = vrnic_engine::transport::Io {
        mem: t.mem.clone(),
        packets: net.sink(index),
        completions: t.fw.core.pending.clone(),
        local: vrnic_fabric::Endpoint::v4(lid, std::net::Ipv4Addr::new(127, 0, 0, index as u8 + 1)),
        ..Default::default()
    };
    t.fw.core.engine.attach(io);
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    let key = t.mkey(pd, &[m::lr, m::lw, m::rr, m::rw, m::a], 0x33);
    let cq_buf = 0x120000u64;
    let cqn = t.cq(uar, eqn, cq_buf);
    let qpn = t.qp_with(st, pd, uar, cqn, qp_buf, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, QP_DBR));
    Side { t, qpn, key, cq_buf, cqn }
}

pub(crate) fn connect(s: &mut Side, peer_qpn: u32, peer_lid: u16) {
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
pub(crate) fn rc_pair(a_qp_buf: u64) -> (Arc<vrnic_fabric::InProcNet>, Side, Side) {
    pair_of(a_qp_buf, 0)
}

/// An in-process fabric of two ports, LIDs 1 and 2 (127.0.0.1 and .2).
pub(crate) fn two_port_net() -> Arc<vrnic_fabric::InProcNet> {
    use vrnic_fabric::{Endpoint, InProcNet};
    let eps = [
        Endpoint::v4(1, std::net::Ipv4Addr::new(127, 0, 0, 1)),
        Endpoint::v4(2, std::net::Ipv4Addr::new(127, 0, 0, 2)),
    ];
    InProcNet::new(
        &eps,
        &[Default::default(), Default::default()],
        Arc::new(vrnic_sys::clock::MonotonicClock::default()),
    )
}

/// [`rc_pair`] with QPs of `qpc.st` `st` (RC or UC: connected to each other).
pub(crate) fn pair_of(a_qp_buf: u64, st: u64) -> (Arc<vrnic_fabric::InProcNet>, Side, Side) {
    let net = two_port_net();
    let mut a = side_at(1, &net, 0, a_qp_buf, st);
    let mut b = side_at(2, &net, 1, QP_BUF, st);
    let (qa, qb) = (a.qpn, b.qpn);
    connect(&mut a, qb, 2);
    connect(&mut b, qa, 1);
    (net, a, b)
}

/// Moves `t`'s firmware behind a mutex, for a packet handler (an idle one
/// takes its place); [`restore_fw`] puts it back.
pub(crate) fn shared_fw(t: &mut Bench) -> Arc<std::sync::Mutex<crate::firmware::Firmware>> {
    let idle = FirmwareBuilder::new(t.mem.clone(), t.irqs.clone(), PortConfig::new(0, 0, 0, 0), Limits::default())
        .build()
        .expect("command table");
    Arc::new(std::sync::Mutex::new(std::mem::replace(&mut t.fw, idle)))
}

/// Puts back a firmware [`shared_fw`] took (its handlers dropped).
pub(crate) fn restore_fw(t: &mut Bench, fw: Arc<std::sync::Mutex<crate::firmware::Firmware>>) {
    t.fw = Arc::try_unwrap(fw).ok().expect("no handler left").into_inner().expect("not poisoned");
}

/// Runs both firmwares' packet handlers until the network is quiet.
pub(crate) fn pump(net: &vrnic_fabric::InProcNet, a: &mut Side, b: &mut Side) {
    use super::datapath::FwHandler;
    let (fa, fb) = (shared_fw(&mut a.t), shared_fw(&mut b.t));
    let (ha, hb) = (FwHandler(fa.clone()), FwHandler(fb.clone()));
    for _ in 0..100 {
        if net.pump(&[&ha, &hb], 10_000) == 0 {
            break;
        }
    }
    drop((ha, hb));
    restore_fw(&mut a.t, fa);
    restore_fw(&mut b.t, fb);
}

pub(crate) fn ctrl_seg(op: u8, idx: u16, qpn: u32, ds: u8) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[0..4].copy_from_slice(&(((idx as u32) << 8) | op as u32).to_be_bytes());
    c[4..8].copy_from_slice(&((qpn << 8) | ds as u32).to_be_bytes());
    c[11] = crate::datapath::wqe::CTRL_CQ_UPDATE;
    c
}

pub(crate) fn data_seg(len: u32, key: u32, addr: u64) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[0..4].copy_from_slice(&len.to_be_bytes());
    d[4..8].copy_from_slice(&key.to_be_bytes());
    d[8..16].copy_from_slice(&addr.to_be_bytes());
    d
}
