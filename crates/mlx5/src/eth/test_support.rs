//! A firmware with an Ethernet port for the eth-rx unit tests: commands run
//! through the dispatcher (`CommandHandler::execute`), RQs are inserted as
//! eth-cmd creates them (a RawPacket engine QP with its `rdma::QpCtx`, RDY),
//! WQEs, doorbell records and CQEs live in a flat guest memory.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::builder::FirmwareBuilder;
use crate::cmd::{CmdOutput, CommandHandler};
use crate::firmware::Firmware;
use crate::ib::port::PortConfig;
use crate::ifc;
use crate::link::LinkLayer;
use crate::rdma::state::QpCtx;
use crate::test_support::cmd;
use vrnic_engine::mem::FlatMem;
use vrnic_engine::{Limits, QpCreate, QpState, QpType};
use vrnic_vfio::Interrupts;

pub const EQ_BUF: u64 = 0x1000;
pub const CQ_BUF: u64 = 0x4000;
/// Each RQ gets 64 KiB: WQEs at the start, its doorbell record at +0x8000.
pub const RQ_BASE: u64 = 0x100000;
/// Receive buffers: 4 KiB per WQE.
pub const DATA_BASE: u64 = 0x200000;
pub const CQ_ENTRIES: u64 = 64;

pub struct EthBench {
    pub mem: Arc<FlatMem>,
    pub fw: Firmware,
    pub pd: u32,
    pub cqn: u32,
    pub key: u32,
    rqs: u32,
    /// Producer counter per RQ.
    pc: std::collections::BTreeMap<u32, u16>,
}

impl EthBench {
    pub fn new() -> EthBench {
        let mem = Arc::new(FlatMem::new(4 << 20));
        let irqs = Arc::new(Interrupts::new(64));
        let port = PortConfig::new(0x1111, 0x2222, 3, 0x1017);
        let fw = FirmwareBuilder::new(mem.clone(), irqs, port, Limits::default())
            .link(LinkLayer::Eth)
            .build()
            .expect("command table");
        let mut b = EthBench { mem, fw, pd: 0, cqn: 0, key: 0, rqs: 0, pc: Default::default() };
        b.ok(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 0, 16));
        b.ok(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 0, 32));
        let o = b.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_UAR, 0, 16));
        let uar = ifc::alloc_uar_out::uar.get(&o);
        {
            use ifc::create_eq_in as c;
            let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_EQ, 0, c::SIZE + 8);
            c::eq_context_entry::log_eq_size.set(&mut i, 6);
            c::eq_context_entry::uar_page.set(&mut i, uar);
            c::pas.elem(0).set(&mut i, EQ_BUF);
            for k in 0..64 {
                b.mem.put(EQ_BUF + k * 64 + 63, &[1]);
            }
            b.ok(&i);
        }
        let o = b.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 0, 16));
        b.pd = ifc::alloc_pd_out::pd.get(&o) as u32;
        {
            use ifc::create_cq_in as c;
            for k in 0..CQ_ENTRIES {
                b.mem.put(CQ_BUF + k * 64 + 63, &[0xf1]);
            }
            let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_CQ, 0, c::SIZE + 8);
            c::cq_context::log_cq_size.set(&mut i, 6);
            c::cq_context::uar_page.set(&mut i, uar);
            c::cq_context::c_eqn_or_apu_element.set(&mut i, 0);
            c::cq_context::dbr_addr.set(&mut i, CQ_BUF + 0x1000);
            c::pas.elem(0).set(&mut i, CQ_BUF);
            let o = b.ok(&i);
            b.cqn = ifc::create_cq_out::cqn.get(&o) as u32;
        }
        {
            // The mlx5e PA mkey: whole space, local write.
            use ifc::create_mkey_in::memory_key_mkey_entry as m;
            let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, 0, ifc::create_mkey_in::SIZE);
            for f in [m::lw, m::lr, m::length64] {
                f.set(&mut i, 1);
            }
            m::pd.set(&mut i, b.pd as u64);
            m::mkey_7_0.set(&mut i, 0x42);
            let o = b.ok(&i);
            b.key = ((ifc::create_mkey_out::mkey_index.get(&o) as u32) << 8) | 0x42;
        }
        b
    }

    pub fn exec(&mut self, input: &[u8]) -> CmdOutput {
        self.fw.execute(input, 0x100)
    }

    /// Runs a command that must succeed; its output.
    pub fn ok(&mut self, input: &[u8]) -> Vec<u8> {
        let o = self.exec(input);
        assert_eq!(o.status, 0, "opcode {:#x}: syndrome {:#x}", u16::from_be_bytes([input[0], input[1]]), o.syndrome);
        o.out
    }

    /// The status and syndrome of a command that must fail.
    pub fn fails(&mut self, input: &[u8]) -> (u8, u32) {
        let o = self.exec(input);
        assert_ne!(o.status, 0, "opcode {:#x} succeeded", u16::from_be_bytes([input[0], input[1]]));
        (o.status, o.syndrome)
    }

    /// An RDY RQ of `1 << log_size` WQEs of `stride` bytes on the bench CQ.
    pub fn rq(&mut self, log_size: u8, stride: usize) -> u32 {
        let rqn = self
            .fw
            .core
            .engine
            .create_qp(QpCreate {
                qp_type: QpType::RawPacket,
                pd: self.pd,
                send_cq: None,
                recv_cq: Some(self.cqn),
                srq: None,
                xrcd: None,
                log_sq_size: 0,
                log_rq_size: log_size,
                sq_sig_all: false,
                uid: 0,
            })
            .expect("RawPacket QP");
        let buf = RQ_BASE + self.rqs as u64 * 0x10000;
        self.rqs += 1;
        let pas = (0..8).map(|p| buf + p * 0x1000).collect();
        self.fw.core.engine.qp_mut(rqn).expect("qp").ext = QpCtx {
            created: Vec::new(),
            qpc: Vec::new(),
            pas,
            st: 0,
            uar: 0,
            user_index: 0,
            dbr_addr: buf + 0x8000,
            log_page_size: 12,
            page_offset: 0,
            rq_stride: stride,
            rq_entries: 1 << log_size,
            sq_entries: 0,
            mcast: BTreeSet::new(),
            sq_ci: 0,
            rq_ci: 0,
            rq_flush_until: 0,
            umems: Vec::new(),
        };
        self.fw.core.engine.qp_mut(rqn).expect("qp").state = QpState::Rts;
        rqn
    }

    fn rq_buf(&self, rqn: u32) -> (u64, u64, usize, u32) {
        let c = &self.fw.core.engine.qp(rqn).expect("rq").ext;
        (c.pas[0], c.dbr_addr, c.rq_stride, c.rq_entries)
    }

    /// Posts one WQE of data segments `(len, addr)` (mlx5e style: bit 31 of
    /// `byte_count` set; terminator when the stride has room) and publishes
    /// the producer counter in DBR[0].
    pub fn post(&mut self, rqn: u32, segs: &[(u32, u64)]) {
        let (buf, dbr, stride, entries) = self.rq_buf(rqn);
        let pc = self.pc.entry(rqn).or_default();
        let at = buf + (*pc as u32 & (entries - 1)) as u64 * stride as u64;
        let mut w = vec![0u8; stride];
        for (k, &(len, addr)) in segs.iter().enumerate() {
            let s = &mut w[k * 16..k * 16 + 16];
            s[0..4].copy_from_slice(&(len | 0x8000_0000).to_be_bytes());
            s[4..8].copy_from_slice(&self.key.to_be_bytes());
            s[8..16].copy_from_slice(&addr.to_be_bytes());
        }
        if segs.len() * 16 < stride {
            w[segs.len() * 16 + 4..segs.len() * 16 + 8].copy_from_slice(&0x100u32.to_be_bytes());
        }
        self.mem.put(at, &w);
        *pc = pc.wrapping_add(1);
        let v = *pc as u32;
        self.mem.put(dbr, &v.to_be_bytes());
    }

    /// Posts one single-segment 4 KiB WQE whose buffer is `DATA_BASE + slot * 4096`.
    pub fn post_buf(&mut self, rqn: u32, slot: u64) -> u64 {
        let a = DATA_BASE + slot * 4096;
        self.post(rqn, &[(4096, a)]);
        a
    }

    /// CQE `n` of the bench CQ.
    pub fn cqe(&self, n: u64) -> Vec<u8> {
        self.mem.get(CQ_BUF + (n % CQ_ENTRIES) * 64, 64)
    }

    /// CQEs the device wrote so far (owner bit flipped from the initial 0xf1
    /// pattern: the first pass writes owner 0 with a valid opcode).
    pub fn cqes(&self) -> usize {
        (0..CQ_ENTRIES).take_while(|&n| self.cqe(n)[63] != 0xf1).count()
    }
}

/// Command inputs the driver sends (layouts of [`crate::ifc`]).
pub mod build {
    use crate::ifc::create_flow_table_in::flow_table_context as ftc;
    use crate::ifc::create_rqt_in::rqt_context as rqtc;
    use crate::ifc::create_tir_in::ctx as tirc;
    use crate::ifc::set_fte_in::flow_context as fc;
    use crate::ifc::{self, create_flow_group_in as fg, dest_format, set_fte_in};
    use crate::test_support::cmd;

    /// CREATE_FLOW_TABLE (NIC RX) of `2^log_size` entries; `miss` Some: forward misses there.
    pub fn flow_table(level: u8, log_size: u8, miss: Option<u32>) -> Vec<u8> {
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_FLOW_TABLE, 0, 0x40);
        ftc::level.set(&mut i, level as u64);
        ftc::log_size.set(&mut i, log_size as u64);
        if let Some(m) = miss {
            ftc::table_miss_action.set(&mut i, 1);
            ftc::table_miss_id.set(&mut i, m as u64);
        }
        i
    }

    pub fn table_cmd(opcode: u32, op_mod: u16, table: u32) -> Vec<u8> {
        let mut i = cmd(opcode, op_mod, 0x40);
        ifc::destroy_flow_table_in::table_id.set(&mut i, table as u64);
        i
    }

    /// CREATE_FLOW_GROUP over `[start, end]` with `enable` and the mask `set` writes.
    pub fn group(table: u32, start: u32, end: u32, enable: u8, set: impl FnOnce(&mut [u8])) -> Vec<u8> {
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_FLOW_GROUP, 0, 0x400);
        ifc::destroy_flow_table_in::table_id.set(&mut i, table as u64);
        fg::start_flow_index.set(&mut i, start as u64);
        fg::end_flow_index.set(&mut i, end as u64);
        fg::match_criteria_enable.set(&mut i, enable as u64);
        set(&mut i[fg::match_criteria.byte_off()..fg::match_criteria.byte_end()]);
        i
    }

    /// A destination of a flow entry.
    #[derive(Clone, Copy)]
    pub enum To {
        Table(u32),
        Tir(u32),
    }

    /// SET_FLOW_TABLE_ENTRY at `index` of `group`: FWD_DEST to `to` (none: DROP),
    /// the match value `set` writes.
    pub fn fte(table: u32, group: u32, index: u32, to: &[To], set: impl FnOnce(&mut [u8])) -> Vec<u8> {
        let mut i =
            cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ENTRY, 0, set_fte_in::SIZE + dest_format::SIZE * to.len().max(1));
        ifc::destroy_flow_table_in::table_id.set(&mut i, table as u64);
        set_fte_in::flow_index.set(&mut i, index as u64);
        fc::group_id.set(&mut i, group as u64);
        fc::action.set(&mut i, if to.is_empty() { 2 } else { 4 });
        fc::destination_list_size.set(&mut i, to.len() as u64);
        for (k, d) in to.iter().enumerate() {
            let (ty, id) = match *d {
                To::Table(t) => (1u32, t),
                To::Tir(t) => (2, t),
            };
            let at = fc::destination.byte_off() + k * dest_format::SIZE;
            i[at..at + 4].copy_from_slice(&((ty << 24) | id).to_be_bytes());
        }
        set(&mut i[fc::match_value.byte_off()..fc::match_value.byte_end()]);
        i
    }

    pub fn delete_fte(table: u32, index: u32) -> Vec<u8> {
        let mut i = table_cmd(ifc::MLX5_CMD_OP_DELETE_FLOW_TABLE_ENTRY, 0, table);
        ifc::delete_fte_in::flow_index.set(&mut i, index as u64);
        i
    }

    /// CREATE_TIR, direct to `rqn`.
    pub fn tir_direct(rqn: u32) -> Vec<u8> {
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_TIR, 0, ifc::create_tir_in::SIZE);
        tirc::inline_rqn.set(&mut i, rqn as u64);
        i
    }

    /// CREATE_TIR, indirect through `rqtn` with a Toeplitz hash over `fields`
    /// of IPv4 (`ipv6` false) TCP (`udp` false).
    pub fn tir_rss(rqtn: u32, key: &[u8; 40], fields: u32, ipv6: bool, udp: bool, symmetric: bool) -> Vec<u8> {
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_TIR, 0, ifc::create_tir_in::SIZE);
        tirc::disp_type.set(&mut i, 1);
        tirc::indirect_table.set(&mut i, rqtn as u64);
        tirc::rx_hash_fn.set(&mut i, 2);
        tirc::rx_hash_symmetric.set(&mut i, symmetric as u64);
        i[tirc::rx_hash_toeplitz_key.byte_off()..tirc::rx_hash_toeplitz_key.byte_off() + 40].copy_from_slice(key);
        tirc::rx_hash_field_selector_outer::l3_prot_type.set(&mut i, ipv6 as u64);
        tirc::rx_hash_field_selector_outer::l4_prot_type.set(&mut i, udp as u64);
        tirc::rx_hash_field_selector_outer::selected_fields.set(&mut i, fields as u64);
        i
    }

    /// CREATE_RQT (`opcode` CREATE) or MODIFY_RQT of `rqns` with room for `max`.
    pub fn rqt(opcode: u32, rqtn: u32, max: u16, rqns: &[u32]) -> Vec<u8> {
        let mut i = cmd(opcode, 0, rqtc::rq_num.byte_off() + 4 * rqns.len());
        ifc::modify_rqt_in::rqtn.set(&mut i, rqtn as u64);
        ifc::modify_rqt_in::bitmask::rqn_list.set(&mut i, 1);
        rqtc::rqt_max_size.set(&mut i, max as u64);
        rqtc::rqt_actual_size.set(&mut i, rqns.len() as u64);
        for (k, q) in rqns.iter().enumerate() {
            rqtc::rq_num.elem(k as u32).set(&mut i, *q as u64);
        }
        i
    }

    /// The id a CREATE_* command returned (bits 23:0 of output DW2).
    pub fn id(out: &[u8]) -> u32 {
        u32::from_be_bytes([0, out[9], out[10], out[11]])
    }

    /// `fte_match_set_lyr_2_4` offsets inside `fte_match_param`.
    pub mod outer {
        pub const DMAC: usize = 0x08;
        pub const FIRST_VID: usize = 0x0e;
        pub const IP_PROTOCOL: usize = 0x10;
        /// cvlan_tag bit 7, svlan_tag bit 6, frag bit 5, ip_version bits 4:1.
        pub const TAGS_VERSION: usize = 0x12;
        pub const UDP_DPORT: usize = 0x1e;
    }
}
