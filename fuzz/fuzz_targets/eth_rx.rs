//! Ethernet frames from the link into the Ethernet personality's receive path, as the link's worker hands them
//! over (`vrnic_mlx5::eth::rx::EthRx` as `FrameHandler`: `receive_frame`, `offer_frame` for a lossless
//! priority, `poll`, `flush`): the RoCE diversion (`RocePort::accept`, the multicast check), size checks, the
//! header walk (`wire::ether::parse`/`walk`), steering (`Steering::classify` over flow tables, groups and entries
//! whose match masks and values come from the input), TIR/RQT dispatch with Toeplitz RSS, VLAN strip, scatter
//! into an RQ's WQE, the receive checksum check (`wire::offload::rx_checksum`) and the CQE.
//!
//! Input: a configuration record (flags, vport MTU, RSS key and fields, DSCP map, the steering masks and
//! values), then `[u16 LE len][flags][mss u16][frame]` records; flags 0xff: `[outlen u32][command input]`, a
//! command of the Ethernet port run between frames (steering, TIR/RQT, SQ/RQ, vport context, port registers:
//! the Ethernet personality's command layouts, which `command_inputs`' InfiniBand firmware does not have);
//! flags 0xfe: `[n][WQEBBs][frame data]`, send WQEs posted on an SQ and its doorbell rung (the transmit path:
//! `eth_seg::parse`, the gather from guest memory, checksum and LSO offloads, the local loopback into the
//! receive path). Each frame also goes through the fabric side's
//! classification (`Classifier::frame_priority` under the input's trust and DSCP map, `pfc::frame_dscp`,
//! `frame_priority`), `rss::hash`, `MatchImage::of`, and through the transmit offloads the same header walk
//! serves for frames a guest sends (`offload::fill_checksums`, `offload::segment`): what they fill or cut must
//! pass the receive checks.
#![no_main]
use std::sync::{Arc, Mutex};

use libfuzzer_sys::fuzz_target;
use vrnic_engine::mem::FlatMem;
use vrnic_engine::{Io, Limits};
use vrnic_fabric::ether::{Classifier, FrameHandler, FrameSink, PrioMap, NUM_DSCP};
use vrnic_fabric::roce::{GidEntry, RoceGids, RocePort, RoceVersion};
use vrnic_fuzz::{cmd, records, Bytes};
use vrnic_mlx5::builder::{FabricIo, FirmwareBuilder};
use vrnic_mlx5::cmd::CommandHandler;
use vrnic_mlx5::eth::match_image::MatchImage;
use vrnic_mlx5::eth::rss::{self, RxHash};
use vrnic_mlx5::eth::rx::EthRx;
use vrnic_mlx5::firmware::Firmware;
use vrnic_mlx5::ib::port::PortConfig;
use vrnic_mlx5::ifc::{self, create_sq_in, modify_rq_in, modify_sq_in, rqc, sqc, wq};
use vrnic_mlx5::link::LinkLayer;
use vrnic_sys::clock::{Clock, ManualClock};
use vrnic_vfio::Interrupts;
use vrnic_wire::ether::{self, Lengths, L3, L4};
use vrnic_wire::{offload, pfc, roce};

const OWN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x22, 0x22];
const EQ_BUF: u64 = 0x1000;
const CQ_BUF: u64 = 0x4000;
const RQ_BUF: u64 = 0x10000;
const DBR: u64 = 0x18000;
const DATA: u64 = 0x20000;
const SQ_BUF: u64 = 0x28000;
const SQ_DBR: u64 = 0x18100;
const TX_DATA: u64 = 0x30000;
const MEM: usize = 0x40000;
const LOG_SQ: u8 = 4;
/// The lkey of a transmit data segment the harness points at the frame data (see `Port::transmit`).
const KEY_MARK: u32 = 0x4b45_5921;
const LOG_RQ: u8 = 6;
/// `fte_match_param` bytes the input sets: outer headers and misc parameters.
const MATCH_BYTES: usize = 128;

/// Frames the port transmits go nowhere.
struct NoFrames;
impl FrameSink for NoFrames {
    fn send_frame(&self, _: &[u8]) {}
}

fn exec(fw: &mut Firmware, input: &[u8]) -> Option<Vec<u8>> {
    let o = fw.execute(input, 0x100);
    (o.status == 0).then_some(o.out)
}

/// The 24-bit object number a CREATE_* command returns.
fn id(out: &[u8]) -> u32 {
    u32::from_be_bytes([0, out[9], out[10], out[11]])
}

/// The firmware of an Ethernet port as mlx5e sets it up: EQ, CQ, PA mkey, two RDY RQs with every WQE posted,
/// a direct TIR, two RSS TIRs over an RQT of both, a root flow table whose first group's mask and entries come
/// from the input, and a catch-all group.
struct Port {
    fw: Arc<Mutex<Firmware>>,
    mem: Arc<FlatMem>,
    /// The SQ (none if its creation failed) and its producer counter (WQEBBs).
    sqn: Option<u32>,
    sq_pc: u16,
    lkey: u32,
    rx: EthRx,
    clock: Arc<ManualClock>,
    hash: RxHash,
    classes: Classifier,
}

fn port(c: &mut Bytes) -> Port {
    let flags = c.u16();
    let mtu = c.u16();
    let mut key = [0u8; 40];
    let k = c.take(40);
    key[..k.len()].copy_from_slice(k);
    let fields = c.u32();
    let dscp: [u8; NUM_DSCP] = std::array::from_fn(|_| c.u8());
    let enable = c.u8();
    let mask = c.take(MATCH_BYTES).to_vec();
    let values = [c.take(MATCH_BYTES).to_vec(), c.take(MATCH_BYTES).to_vec()];

    let mem = Arc::new(FlatMem::new(MEM));
    let clock = Arc::new(ManualClock::default());
    let gids = Arc::new(RoceGids::new(4));
    let roce = Arc::new(RocePort::new(gids.clone(), Arc::new(NoFrames), Arc::new(|| {})));
    let io = Io { mem: mem.clone(), packets: roce.clone(), clock: clock.clone(), ..Default::default() };
    let mut fw = FirmwareBuilder::new(
        mem.clone(),
        Arc::new(Interrupts::new(64)),
        PortConfig::new(1, 2, 3, 0x1017),
        // User contexts: the DevX umems Ethernet queues may lie in are reached too.
        Limits { uctxs: 4, ..Limits::default() },
    )
    .link(LinkLayer::Eth)
    .mac(OWN_MAC)
    .frames(Arc::new(NoFrames))
    .roce(gids.clone(), roce.counters())
    .cc(roce.cc().clone())
    .fabric(FabricIo { io, waker: None, counters: None })
    .build()
    .expect("command table");
    let f = &mut fw;
    exec(f, &cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 16)).expect("ENABLE_HCA");
    exec(f, &cmd(ifc::MLX5_CMD_OP_INIT_HCA, 32)).expect("INIT_HCA");
    let uar = ifc::alloc_uar_out::uar.get(&exec(f, &cmd(ifc::MLX5_CMD_OP_ALLOC_UAR, 16)).expect("UAR"));
    {
        use ifc::create_eq_in as c;
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_EQ, c::SIZE + 8);
        c::eq_context_entry::log_eq_size.set(&mut i, 6);
        c::eq_context_entry::uar_page.set(&mut i, uar);
        c::pas.elem(0).set(&mut i, EQ_BUF);
        for k in 0..64 {
            mem.put(EQ_BUF + k * 64 + 63, &[1]);
        }
        exec(f, &i).expect("EQ");
    }
    let pd = ifc::alloc_pd_out::pd.get(&exec(f, &cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 16)).expect("PD"));
    let cqn = {
        use ifc::create_cq_in as c;
        for k in 0..64 {
            mem.put(CQ_BUF + k * 64 + 63, &[0xf1]);
        }
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_CQ, c::SIZE + 8);
        c::cq_context::log_cq_size.set(&mut i, 6);
        c::cq_context::uar_page.set(&mut i, uar);
        c::cq_context::dbr_addr.set(&mut i, CQ_BUF + 0x1000);
        c::pas.elem(0).set(&mut i, CQ_BUF);
        ifc::create_cq_out::cqn.get(&exec(f, &i).expect("CQ"))
    };
    let lkey = {
        use ifc::create_mkey_in::memory_key_mkey_entry as m;
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, ifc::create_mkey_in::SIZE);
        for k in [m::lw, m::lr, m::length64] {
            k.set(&mut i, 1);
        }
        m::pd.set(&mut i, pd);
        m::mkey_7_0.set(&mut i, 0x42);
        let o = exec(f, &i).expect("MKEY");
        ((ifc::create_mkey_out::mkey_index.get(&o) as u32) << 8) | 0x42
    };
    let mut rqns = Vec::new();
    for q in 0..2u64 {
        let (buf, dbr) = (RQ_BUF + q * 0x4000, DBR + q * 64);
        let wqf = |f| create_sq_in::ctx::wq.inner(f);
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_RQ, create_sq_in::SIZE + 8);
        wqf(wq::wq_type).set(&mut i, ifc::MLX5_WQ_TYPE_CYCLIC as u64);
        wqf(wq::pd).set(&mut i, pd);
        wqf(wq::uar_page).set(&mut i, uar);
        wqf(wq::dbr_addr).set(&mut i, dbr);
        wqf(wq::log_wq_sz).set(&mut i, LOG_RQ as u64);
        wqf(wq::log_wq_stride).set(&mut i, 5);
        create_sq_in::ctx.inner(rqc::cqn).set(&mut i, cqn);
        create_sq_in::ctx.inner(rqc::vsd).set(&mut i, (flags >> q & 1) as u64);
        let at = create_sq_in::ctx::wq::pas.byte_off();
        i[at..at + 8].copy_from_slice(&buf.to_be_bytes());
        let rqn = id(&exec(f, &i).expect("RQ"));
        let mut m = cmd(ifc::MLX5_CMD_OP_MODIFY_RQ, modify_rq_in::SIZE);
        modify_rq_in::rq_state.set(&mut m, 0);
        modify_rq_in::rqn.set(&mut m, rqn as u64);
        create_sq_in::ctx.inner(rqc::state).set(&mut m, 1);
        exec(f, &m).expect("RQ to RDY");
        // Every WQE posted: two 8 KiB segments (a 9978-byte frame fits), all over the same buffer.
        for k in 0..1u64 << LOG_RQ {
            let mut w = [0u8; 32];
            for (s, addr) in [DATA, DATA + 0x2000].into_iter().enumerate() {
                w[s * 16..s * 16 + 4].copy_from_slice(&(0x2000u32 | 0x8000_0000).to_be_bytes());
                w[s * 16 + 4..s * 16 + 8].copy_from_slice(&lkey.to_be_bytes());
                w[s * 16 + 8..s * 16 + 16].copy_from_slice(&addr.to_be_bytes());
            }
            mem.put(buf + k * 32, &w);
        }
        mem.put(dbr, &(1u32 << LOG_RQ).to_be_bytes());
        rqns.push(rqn);
    }
    let rqt = {
        use ifc::create_rqt_in::rqt_context as r;
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_RQT, r::rq_num.byte_off() + 8);
        r::rqt_max_size.set(&mut i, 4);
        r::rqt_actual_size.set(&mut i, 2);
        for (k, q) in rqns.iter().enumerate() {
            r::rq_num.elem(k as u32).set(&mut i, *q as u64);
        }
        id(&exec(f, &i).expect("RQT"))
    };
    let hash =
        RxHash { func: 2, symmetric: flags & 4 != 0, key, l3_ipv6: flags & 8 != 0, l4_udp: flags & 16 != 0, fields };
    let tirs = {
        use ifc::create_tir_in::ctx as t;
        let mut direct = cmd(ifc::MLX5_CMD_OP_CREATE_TIR, ifc::create_tir_in::SIZE);
        t::inline_rqn.set(&mut direct, rqns[0] as u64);
        let mut out = vec![exec(f, &direct).map(|o| id(&o)).expect("direct TIR")];
        for (ipv6, udp) in [(hash.l3_ipv6, hash.l4_udp), (!hash.l3_ipv6, !hash.l4_udp)] {
            let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_TIR, ifc::create_tir_in::SIZE);
            t::disp_type.set(&mut i, 1);
            t::indirect_table.set(&mut i, rqt as u64);
            t::rx_hash_fn.set(&mut i, 2);
            t::rx_hash_symmetric.set(&mut i, hash.symmetric as u64);
            i[t::rx_hash_toeplitz_key.byte_off()..t::rx_hash_toeplitz_key.byte_off() + 40].copy_from_slice(&key);
            t::rx_hash_field_selector_outer::l3_prot_type.set(&mut i, ipv6 as u64);
            t::rx_hash_field_selector_outer::l4_prot_type.set(&mut i, udp as u64);
            t::rx_hash_field_selector_outer::selected_fields.set(&mut i, fields as u64);
            if let Some(o) = exec(f, &i) {
                out.push(id(&o));
            }
        }
        out
    };
    steering(f, &tirs, enable, &mask, &values, flags);
    let sqn = sq(f, pd, uar, cqn);
    {
        use ifc::modify_nic_vport_context_in as v;
        let mut i = cmd(ifc::MLX5_CMD_OP_MODIFY_NIC_VPORT_CONTEXT, v::SIZE);
        v::field_select::roce_en.set(&mut i, 1);
        v::nic_vport_context::roce_en.set(&mut i, (flags >> 5 & 1) as u64);
        if mtu != 0 {
            v::field_select::mtu.set(&mut i, 1);
            v::nic_vport_context::mtu.set(&mut i, mtu as u64);
        }
        let _ = exec(f, &i);
    }
    // The GID table as SET_ROCE_ADDRESS programs it (after the bring-up, which clears it): IPv4 and IPv6
    // (VLAN 5) RoCEv2, RoCEv1.
    let link_local = |b8| [0xfe, 0x80, 0, 0, 0, 0, 0, 0, b8, 0, 0, 0xff, 0xfe, 0, 0x22, 0x22];
    let entry = |gid, version, ipv4, vlan| Some(GidEntry { gid, mac: OWN_MAC, vlan, version, ipv4 });
    let _ = gids.set(0, entry(roce::v4_mapped([10, 0, 0, 2]), RoceVersion::V2, true, None));
    let _ = gids.set(1, entry(link_local(0), RoceVersion::V2, false, Some(5)));
    let _ = gids.set(2, entry(link_local(2), RoceVersion::V1, false, None));
    let classes = Classifier::default();
    classes.set(&PrioMap { trust_dscp: flags & 64 != 0, dscp2prio: dscp });
    let fw = Arc::new(Mutex::new(fw));
    let rx = EthRx::new(fw.clone(), Some(roce), None);
    Port { fw, mem, sqn, sq_pc: 0, lkey, rx, clock, hash, classes }
}

/// A transport domain, a TIS and an RDY SQ of 16 WQEBBs on the CQ, as mlx5e opens a channel.
fn sq(f: &mut Firmware, pd: u64, uar: u64, cqn: u64) -> Option<u32> {
    let td = id(&exec(f, &cmd(ifc::MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN, 16))?);
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_TIS, ifc::create_tis_in::SIZE);
    ifc::create_tis_in::ctx::transport_domain.set(&mut i, td as u64);
    let tis = id(&exec(f, &i)?);
    let wqf = |f| create_sq_in::ctx::wq.inner(f);
    let ctx = |f| create_sq_in::ctx.inner(f);
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_SQ, create_sq_in::SIZE + 8);
    wqf(wq::wq_type).set(&mut i, ifc::MLX5_WQ_TYPE_CYCLIC as u64);
    wqf(wq::pd).set(&mut i, pd);
    wqf(wq::uar_page).set(&mut i, uar);
    wqf(wq::dbr_addr).set(&mut i, SQ_DBR);
    wqf(wq::log_wq_sz).set(&mut i, LOG_SQ as u64);
    wqf(wq::log_wq_stride).set(&mut i, 6);
    ctx(sqc::cqn).set(&mut i, cqn);
    ctx(sqc::tis_lst_sz).set(&mut i, 1);
    ctx(sqc::tis_num_0).set(&mut i, tis as u64);
    let at = create_sq_in::ctx::wq::pas.byte_off();
    i[at..at + 8].copy_from_slice(&SQ_BUF.to_be_bytes());
    let sqn = id(&exec(f, &i)?);
    let mut m = cmd(ifc::MLX5_CMD_OP_MODIFY_SQ, modify_sq_in::SIZE);
    modify_sq_in::sqn.set(&mut m, sqn as u64);
    ctx(sqc::state).set(&mut m, 1);
    exec(f, &m)?;
    Some(sqn)
}

impl Port {
    /// The guest posts send WQEs (`n & 15` + 1 WQEBBs of the input; unless bit 7 of `n`, with the ring's index
    /// and the SQ's number written into the control segment) over frame data at `TX_DATA`, and rings the
    /// doorbell.
    fn transmit(&mut self, b: &mut Bytes) {
        let Some(sqn) = self.sqn else { return };
        let n = b.u8();
        let bbs = (n & 0xf) as usize + 1;
        let mut w = b.take(bbs * 64).to_vec();
        w.resize(bbs * 64, 0);
        if n & 0x80 == 0 {
            w[1..3].copy_from_slice(&self.sq_pc.to_be_bytes());
            w[4..7].copy_from_slice(&sqn.to_be_bytes()[1..]);
        }
        // Data segments whose lkey is `KEY_MARK`: the port's key, the address an offset into the frame data.
        for seg in w.chunks_mut(16).skip(2) {
            if seg[4..8] == KEY_MARK.to_be_bytes() {
                seg[4..8].copy_from_slice(&self.lkey.to_be_bytes());
                let off = u64::from_be_bytes(seg[8..16].try_into().unwrap()) % 0x4000;
                seg[8..16].copy_from_slice(&(TX_DATA + off).to_be_bytes());
            }
        }
        for (k, bb) in w.chunks(64).enumerate() {
            let slot = (self.sq_pc as u64 + k as u64) % (1 << LOG_SQ);
            self.mem.put(SQ_BUF + slot * 64, bb);
        }
        let data = b.take(0x4000);
        self.mem.put(TX_DATA, data);
        self.sq_pc = self.sq_pc.wrapping_add(bbs as u16);
        self.mem.put(SQ_DBR + 4, &(self.sq_pc as u32).to_be_bytes());
        self.fw.lock().unwrap().send_doorbell(sqn);
    }

    /// A command the guest runs while frames arrive (steering, TIRs, queues, the vport context...).
    fn command(&self, b: &mut Bytes) {
        let outlen = (b.u32() as usize).clamp(16, 0x10000);
        let _ = self.fw.lock().unwrap().execute(b.rest(), outlen);
    }
}

/// Root table 0 (level 0): group 0 (entries 0..=3) with the input's criteria, entry 0 forwarding to the RSS
/// TIRs, entry 1 to table 1 and the direct TIR, entry 2 dropping; group 1 (entry 4) matching everything,
/// forwarding to the direct TIR. Table 1 (level 1) misses back to table 0 (a loop the walk must stop) or drops.
fn steering(f: &mut Firmware, tirs: &[u32], enable: u8, mask: &[u8], values: &[Vec<u8>; 2], flags: u16) {
    use ifc::create_flow_table_in::flow_table_context as ftc;
    use ifc::set_fte_in::flow_context as fc;
    use ifc::{create_flow_group_in as fg, dest_format, set_fte_in};
    let table = |f: &mut Firmware, level: u64, miss: Option<u32>| {
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_FLOW_TABLE, 0x40);
        ftc::level.set(&mut i, level);
        ftc::log_size.set(&mut i, 4);
        if let Some(m) = miss {
            ftc::table_miss_action.set(&mut i, 1);
            ftc::table_miss_id.set(&mut i, m as u64);
        }
        exec(f, &i).map(|o| id(&o))
    };
    let Some(t0) = table(f, 0, None) else { return };
    let t1 = table(f, 1, (flags & 128 != 0).then_some(t0));
    let group = |f: &mut Firmware, start: u64, end: u64, enable: u8, mask: &[u8]| {
        let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_FLOW_GROUP, 0x400);
        ifc::destroy_flow_table_in::table_id.set(&mut i, t0 as u64);
        fg::start_flow_index.set(&mut i, start);
        fg::end_flow_index.set(&mut i, end);
        fg::match_criteria_enable.set(&mut i, enable as u64);
        let at = fg::match_criteria.byte_off();
        i[at..at + mask.len()].copy_from_slice(mask);
        exec(f, &i).map(|o| id(&o))
    };
    let fte = |f: &mut Firmware, group: u32, index: u64, to: &[(u32, u32)], value: &[u8]| {
        let mut i = cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ENTRY, set_fte_in::SIZE + dest_format::SIZE * to.len().max(1));
        ifc::destroy_flow_table_in::table_id.set(&mut i, t0 as u64);
        set_fte_in::flow_index.set(&mut i, index);
        fc::group_id.set(&mut i, group as u64);
        fc::action.set(&mut i, if to.is_empty() { 2 } else { 4 });
        fc::destination_list_size.set(&mut i, to.len() as u64);
        for (k, (ty, d)) in to.iter().enumerate() {
            let at = fc::destination.byte_off() + k * dest_format::SIZE;
            i[at..at + 4].copy_from_slice(&((ty << 24) | d).to_be_bytes());
        }
        let at = fc::match_value.byte_off();
        i[at..at + value.len()].copy_from_slice(value);
        let _ = exec(f, &i);
    };
    if let Some(g) = group(f, 0, 3, enable, mask) {
        let rss: Vec<(u32, u32)> = tirs[1..].iter().map(|&t| (2, t)).collect();
        fte(f, g, 0, &rss, &values[0]);
        let mut chain = vec![(2, tirs[0])];
        chain.extend(t1.map(|t| (1, t)));
        fte(f, g, 1, &chain, &values[1]);
        fte(f, g, 2, &[], &values[1]);
    }
    if let Some(g) = group(f, 4, 4, 0, &[]) {
        fte(f, g, 4, &[(2, tirs[0])], &[]);
    }
    let mut i = cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0x40);
    ifc::destroy_flow_table_in::table_id.set(&mut i, t0 as u64);
    let _ = exec(f, &i);
}

/// A RoCE frame with its ICRC made right (what parses as RoCE, re-emitted), else the frame as is.
fn fix_icrc(frame: &[u8]) -> Vec<u8> {
    if let Ok(Some(p)) = roce::parse(frame) {
        let mut out = Vec::new();
        if roce::emit(&p.repr, &frame[p.roce.clone()], &mut out).is_ok() {
            return out;
        }
    }
    frame.to_vec()
}

/// The parsers the receive path uses, called directly, and the transmit offloads over the same bytes.
fn headers(p: &Port, frame: &[u8], b: u8, mss: u16) {
    let prio = p.classes.frame_priority(frame);
    assert!(prio < pfc::PRIORITIES);
    let _ = (pfc::frame_dscp(frame), pfc::frame_priority(frame), pfc::is_tagged(frame));
    let checked = ether::parse(frame);
    let fields = ether::walk(frame, Lengths::FromFrame);
    for info in checked.iter().chain(fields.iter()) {
        let _ = offload::rx_checksum(frame, info);
        let _ = MatchImage::of(info);
        let _ = (info.l3_end(), info.l3_header_len(), info.l4_header_len());
        for func in [2, b] {
            let _ = rss::hash(&RxHash { func, ..p.hash.clone() }, info);
        }
        let _ = rss::hash_input(&p.hash, info);
    }
    // Transmit checksum offload: what it fills, the receive check accepts.
    let (l3, l4) = (b & 1 != 0, b & 2 != 0);
    let mut filled = frame.to_vec();
    if offload::fill_checksums(&mut filled, l3, l4).is_ok() {
        if let Ok(info) = ether::parse(&filled) {
            let sum = offload::rx_checksum(&filled, &info);
            let ipv4 = matches!(info.l3, L3::Ipv4 { .. });
            if l3 && ipv4 {
                assert!(sum.l3_ok, "filled IPv4 header checksum verifies");
            }
            if l4 && !matches!(info.l4, L4::None) {
                assert!(sum.l4_ok, "filled L4 checksum verifies: {info:?}");
            }
        }
    }
    // LSO: the headers as the walk over the whole buffer finds them.
    if let Ok(info) = &fields {
        let header_len = info.l4_offset + info.l4_header_len();
        if let Ok(segs) = offload::segment(frame, header_len, mss) {
            assert!(!segs.is_empty());
            for s in &segs {
                let Ok(i) = ether::parse(s) else { continue };
                let sum = offload::rx_checksum(s, &i);
                assert!(sum.l3_ok, "a segment's IPv4 header checksum verifies");
                assert!(matches!(i.l4, L4::None) || sum.l4_ok, "a segment's L4 checksum verifies: {i:?}");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut recs = records(data).into_iter();
    let Some(cfg) = recs.next() else { return };
    let mut p = port(&mut Bytes(cfg));
    for r in recs {
        let mut b = Bytes(r);
        let flags = b.u8();
        match flags {
            0xff => {
                p.command(&mut b);
                continue;
            }
            0xfe => {
                p.transmit(&mut b);
                continue;
            }
            _ => {}
        }
        let mss = b.u16();
        let frame = b.rest();
        let frame = if flags & 1 != 0 { fix_icrc(frame) } else { frame.to_vec() };
        headers(&p, &frame, flags >> 4, mss);
        if flags & 2 != 0 {
            let _ = p.rx.offer_frame(&frame);
        } else {
            p.rx.receive_frame(&frame);
        }
        if flags & 4 != 0 {
            p.rx.flush();
        }
        if flags & 8 != 0 {
            p.clock.advance(1_000_000);
            let _ = p.rx.poll(p.clock.now_ns());
        }
    }
    let fw = p.fw.lock().unwrap();
    let _ = fw.eth_rx_stats().map(|s| serde_json::to_string(&s).unwrap());
});
