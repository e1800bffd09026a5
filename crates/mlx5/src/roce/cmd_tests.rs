//! The RoCE domain through the real command transport: the ROCE capability
//! page, SET/QUERY_ROCE_ADDRESS into the shared GID table, the address
//! path's source GID index, and QP1 sends leaving through the engine.

use std::sync::{Arc, Mutex};

use crate::cmd::{status, syndrome};
use crate::hca::caps::roce::ROCE_ADDRESS_TABLE_SIZE;
use crate::ifc::set_roce_address_in::roce_address as ra;
use crate::ifc::{self, query_roce_address_in, query_roce_address_out, roce_cap, set_roce_address_in as ai};
use crate::roce::state::RoceState;
use crate::test_support::{cmd, data_seg, transition_in, Bench};
use vrnic_engine::Io;
use vrnic_fabric::roce::{GidEntry, RoceGids, RoceVersion};
use vrnic_fabric::{Dest, PacketSink};

const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 7];

fn v4_gid(ip: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&ip);
    g
}

/// A SET_ROCE_ADDRESS input as `mlx5_core_roce_gid_set` builds it.
fn set_in(index: u16, gid: [u8; 16], mac: [u8; 6], vlan: Option<u16>, version: u64, l3: u64) -> Vec<u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_SET_ROCE_ADDRESS, 0, ai::SIZE);
    ai::roce_address_index.set(&mut i, index as u64);
    i[0x10..0x20].copy_from_slice(&gid);
    if let Some(v) = vlan {
        ra::vlan_valid.set(&mut i, 1);
        ra::vlan_id.set(&mut i, v as u64);
    }
    i[0x22..0x28].copy_from_slice(&mac);
    ra::roce_version.set(&mut i, version);
    ra::roce_l3_type.set(&mut i, l3);
    i
}

fn query(t: &mut Bench, index: u16) -> Vec<u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_QUERY_ROCE_ADDRESS, 0, query_roce_address_in::SIZE);
    query_roce_address_in::roce_address_index.set(&mut i, index as u64);
    t.ok(&i, query_roce_address_out::SIZE)
}

#[test]
fn the_roce_page_answers_max_and_cur_with_the_table_size() {
    let mut t = Bench::eth();
    t.up();
    for op_mod in [(ifc::MLX5_CAP_ROCE as u16) << 1, ((ifc::MLX5_CAP_ROCE as u16) << 1) | 1] {
        let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, op_mod, 16), ifc::query_hca_cap_out::SIZE);
        let p = &o[16..16 + 0x1000];
        assert_eq!(roce_cap::sw_r_roce_src_udp_port.get(p), 1, "MAX and CUR: no SET_HCA_CAP");
        assert_eq!(roce_cap::l3_type.get(p), 6);
        assert_eq!(roce_cap::roce_version.get(p), 4);
        assert_eq!(roce_cap::r_roce_dest_udp_port.get(p), 4791);
        assert_eq!(
            (roce_cap::r_roce_min_src_udp_port.get(p), roce_cap::r_roce_max_src_udp_port.get(p)),
            (0xc000, 0xffff)
        );
        assert_eq!(roce_cap::roce_address_table_size.get(p), ROCE_ADDRESS_TABLE_SIZE as u64);
    }
    assert_eq!(t.fw.port.roce_test().gids().len(), ROCE_ADDRESS_TABLE_SIZE, "one constant for the page and the table");
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
    assert_eq!(ifc::cmd_hca_cap::roce.get(&o[16..]), 1);
    // An InfiniBand port has no ROCE page.
    let mut ib = Bench::new();
    ib.up();
    let (st, _) = ib.fails(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 9, 16), ifc::query_hca_cap_out::SIZE);
    assert_eq!(st, status::BAD_PARAM);
}

#[test]
fn set_roce_address_programs_the_shared_table_and_query_reads_it_back() {
    let mut t = Bench::eth();
    let shared = Arc::new(RoceGids::new(ROCE_ADDRESS_TABLE_SIZE));
    *t.fw.port.roce_test() = RoceState::new(Some((shared.clone(), Arc::default())), None);
    t.up();
    // Index 1: the first IPv4 address as a RoCEv2 GID (l3 type 0).
    let v4 = set_in(1, v4_gid([10, 0, 0, 1]), MAC, None, 2, 0);
    t.ok(&v4, 16);
    let want = GidEntry { gid: v4_gid([10, 0, 0, 1]), mac: MAC, vlan: None, version: RoceVersion::V2, ipv4: true };
    assert_eq!(shared.get(1), Some(want), "the RoCE port's table, not a copy");
    assert_eq!(&query(&mut t, 1)[0x10..0x30], &v4[0x10..0x30], "the layout reads back byte for byte");
    // Index 2: an IPv6 address of a VLAN upper device (VID 100).
    let g6 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 7];
    let v6 = set_in(2, g6, MAC, Some(100), 2, 1);
    t.ok(&v6, 16);
    let e = shared.get(2).unwrap();
    assert_eq!((e.vlan, e.ipv4, e.version), (Some(100), false, RoceVersion::V2));
    assert_eq!(&query(&mut t, 2)[0x10..0x30], &v6[0x10..0x30]);
    // A RoCEv1 entry is kept as v1.
    t.ok(&set_in(3, g6, MAC, None, 0, 1), 16);
    assert_eq!(shared.get(3).unwrap().version, RoceVersion::V1);
    // Deletion: the same index with an all-zero address and MAC (type still filled in).
    t.ok(&set_in(1, [0; 16], [0; 6], None, 2, 0), 16);
    assert_eq!(shared.get(1), None);
    assert!(query(&mut t, 1)[0x10..0x30].iter().all(|&b| b == 0), "an empty entry reads as zeros");
    // Function reset clears the table.
    t.fw.reset();
    assert!(shared.snapshot().is_empty());
}

#[test]
fn bad_roce_addresses_fail_with_their_own_syndromes() {
    let mut t = Bench::eth();
    t.up();
    let g = v4_gid([10, 0, 0, 1]);
    let last = (ROCE_ADDRESS_TABLE_SIZE - 1) as u16;
    t.ok(&set_in(last, g, MAC, None, 2, 0), 16);
    let cases = [
        (set_in(last + 1, g, MAC, None, 2, 0), syndrome::ROCE_ADDRESS_BAD_INDEX),
        (set_in(0xffff, g, MAC, None, 2, 0), syndrome::ROCE_ADDRESS_BAD_INDEX),
        (set_in(1, g, MAC, None, 1, 0), syndrome::SET_ROCE_ADDRESS_BAD_VERSION),
        (set_in(1, g, MAC, None, 3, 0), syndrome::SET_ROCE_ADDRESS_BAD_VERSION),
        (set_in(1, g, MAC, None, 2, 2), syndrome::SET_ROCE_ADDRESS_BAD_L3_TYPE),
        (
            {
                let mut i = set_in(1, g, MAC, None, 2, 0);
                ai::vhca_port_num.set(&mut i, 2);
                i
            },
            syndrome::ROCE_ADDRESS_BAD_PORT,
        ),
    ];
    for (i, syn) in cases {
        assert_eq!(t.fails(&i, 16), (status::BAD_PARAM, syn));
    }
    assert!(t.fw.port.roce_test().gids().get(1).is_none(), "nothing written by a failed command");
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_ROCE_ADDRESS, 0, query_roce_address_in::SIZE);
    query_roce_address_in::roce_address_index.set(&mut q, ROCE_ADDRESS_TABLE_SIZE as u64);
    assert_eq!(t.fails(&q, query_roce_address_out::SIZE), (status::BAD_PARAM, syndrome::ROCE_ADDRESS_BAD_INDEX));
    // A truncated input.
    let short = &set_in(1, g, MAC, None, 2, 0)[..0x20];
    assert_eq!(t.fails(short, 16).0, status::BAD_INP_LEN);
    // An InfiniBand port has no such command.
    let mut ib = Bench::new();
    ib.up();
    assert_eq!(ib.fails(&set_in(1, g, MAC, None, 2, 0), 16), (status::BAD_OP, syndrome::DISPATCH_UNKNOWN_OPCODE));
}

/// Captures what the engine sends (the RoCE port's place).
#[derive(Default)]
struct Capture {
    sent: Mutex<Vec<(Dest, Vec<u8>)>>,
}

impl PacketSink for Capture {
    fn send(&self, dest: &Dest, pkt: &mut [u8]) {
        self.sent.lock().unwrap().push((*dest, pkt.to_vec()));
    }
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        (index == 1).then(|| v4_gid([10, 0, 0, 1]))
    }
    fn all_global(&self) -> bool {
        true
    }
}

const QP_BUF: u64 = 0x200000;
const QP_DBR: u64 = 0x280000;
const DATA: u64 = 0x300000;

/// An Ethernet bench with a QP of type `st` in RTS (Q_Key `qkey`) whose engine sends into a [`Capture`].
fn eth_qp(st: u64, qkey: u32, table: usize) -> (Bench, Arc<Capture>, u32, u32) {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    use ifc::rst2init_qp_in::qpc as q;
    let mut t = Bench::eth();
    *t.fw.port.roce_test() = RoceState::new(Some((Arc::new(RoceGids::new(table)), Arc::default())), None);
    let cap = Arc::new(Capture::default());
    let io =
        Io { mem: t.mem.clone(), packets: cap.clone(), completions: t.fw.core.pending.clone(), ..Default::default() };
    t.fw.core.engine.attach(io);
    let uar = t.up();
    let eqn = t.eq(uar, 1, 0, 0x100000);
    let pd = t.pd();
    let key = t.mkey(pd, &[m::lr, m::lw], 0x33);
    let cqn = t.cq(uar, eqn, 0x120000);
    let qpn = t.qp_with(st, pd, uar, cqn, QP_BUF, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, QP_DBR));
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::q_key.set(&mut i, qkey as u64);
    q::primary_address_path::vhca_port_num.set(&mut i, 1);
    t.ok(&i, 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn), 16);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, qpn), 16);
    (t, cap, qpn, key)
}

#[test]
fn qp1_sends_leave_through_the_engine_on_an_ethernet_port() {
    let (t, cap, qpn, key) = eth_qp(crate::rdma::qp::ST_QP1 as u64, 0x8001_0000, ROCE_ADDRESS_TABLE_SIZE);
    let mut t = t;
    // A CM MAD as ib_mad posts it: ctrl + datagram segment (the kernel AH) + one data segment.
    let sq = QP_BUF + 16 * 16;
    let mut w = vec![0u8; 128];
    w[..16].copy_from_slice(&crate::test_support::ctrl_seg(crate::datapath::wqe::opcode::SEND, 0, qpn, 5));
    let av = &mut w[16..64];
    av[0..4].copy_from_slice(&0x8001_0000u32.to_be_bytes());
    av[8..12].copy_from_slice(&1u32.to_be_bytes());
    av[0x0c] = 3 << 1; // SL (PCP) 3
    av[0x0e..0x10].copy_from_slice(&0xc000u16.to_be_bytes());
    av[0x14..0x1a].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 9]);
    av[0x1a] = 0x02;
    av[0x1b] = 64;
    av[0x1c..0x20].copy_from_slice(&((1u32 << 30) | (1 << 20)).to_be_bytes());
    av[0x20..0x30].copy_from_slice(&v4_gid([10, 0, 0, 2]));
    w[64..80].copy_from_slice(&data_seg(256, key, DATA));
    t.mem.put(sq, &w);
    t.mem.put(DATA, &[0x5a; 256]);
    t.mem.put(QP_DBR + 4, &2u32.to_be_bytes());
    t.fw.send_doorbell(qpn);
    let sent = cap.sent.lock().unwrap();
    assert_eq!(sent.len(), 1, "QP1 is on the wire, not answered by the firmware");
    let (d, pkt) = &sent[0];
    assert_eq!(d.eth.sgid_index, 1);
    assert_eq!(d.eth.dmac, [0x52, 0x54, 0, 0, 0, 9]);
    assert_eq!((d.eth.udp_sport, d.eth.pcp), (0xc000, 3));
    let g = d.grh.expect("RoCE: the GRH (IP header) is always built");
    assert_eq!((g.sgid, g.dgid, g.hop_limit), (v4_gid([10, 0, 0, 1]), v4_gid([10, 0, 0, 2]), 64));
    // BTH: UD SEND only (0x64) to QP 1; DETH: Q_Key 0x80010000, source QP 1.
    assert_eq!(pkt[0], 0x64);
    assert_eq!(&pkt[5..8], &[0, 0, 1]);
    assert_eq!(&pkt[12..16], &0x8001_0000u32.to_be_bytes());
    assert_eq!(&pkt[17..20], &[0, 0, 1]);
    assert_eq!(pkt.len(), 12 + 8 + 256 + 4);
    assert!(pkt[20..276].iter().all(|&b| b == 0x5a));
}

#[test]
fn a_path_source_gid_index_past_the_table_is_refused() {
    use ifc::rst2init_qp_in::qpc as q;
    let (mut t, _, qpn, _) = eth_qp(crate::rdma::qp::ST_RC as u64, 0, 4);
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, qpn), 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::primary_address_path::vhca_port_num.set(&mut i, 1);
    t.ok(&i, 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, qpn);
    q::mtu.set(&mut i, 3);
    q::primary_address_path::src_addr_index.set(&mut i, 4);
    q::primary_address_path::rmac_47_32.set(&mut i, 0x5254);
    assert_eq!(t.fails(&i, 16), (status::BAD_PARAM, syndrome::MODIFY_QP_BAD_SRC_ADDR_INDEX));
    q::primary_address_path::src_addr_index.set(&mut i, 3);
    t.ok(&i, 16);
    let av = t.fw.core.engine.qp(qpn).unwrap().attrs.av;
    assert_eq!((av.sgid_index, av.dmac[..2].to_vec()), (3, vec![0x52, 0x54]));
}

/// A CM MAD arriving on RoCEv2/IPv4 with a VLAN tag reaches QP1 through the
/// engine: the GRH area holds the IPv4 header at bytes 20..40, the CQE has
/// the §4.7 fields.
#[test]
fn qp1_receives_a_roce_mad_with_the_roce_cqe_and_grh_area() {
    use vrnic_fabric::{Endpoint, RxMeta};
    use vrnic_wire::roce::NetHdr;
    let (mut t, _, qpn, key) = eth_qp(crate::rdma::qp::ST_QP1 as u64, 0x8001_0000, ROCE_ADDRESS_TABLE_SIZE);
    // One receive WQE (16-byte stride: one data segment) of 40 + 256 bytes, doorbell record 1.
    t.mem.put(QP_BUF, &data_seg(296, key, DATA));
    t.mem.put(QP_DBR, &1u32.to_be_bytes());
    let mut pkt = vec![0x64, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 9];
    pkt.extend_from_slice(&0x8001_0000u32.to_be_bytes());
    pkt.extend_from_slice(&[0, 0, 0, 1]);
    pkt.extend_from_slice(&[0xa5; 256]);
    pkt.extend_from_slice(&[0; 4]);
    let g = vrnic_wire::grh::Repr {
        traffic_class: 0,
        flow_label: 0,
        payload_len: pkt.len() as u16,
        next_header: 0x1b,
        hop_limit: 64,
        sgid: v4_gid([10, 0, 0, 2]),
        dgid: v4_gid([10, 0, 0, 1]),
    };
    let meta = RxMeta {
        src: Endpoint { lid: 0, gid: g.sgid },
        local: false,
        grh: Some(g),
        net: NetHdr::RoceV2Ipv4,
        vlan: Some(0x6064),
        smac: [0; 6],
        prio: 3,
    };
    t.fw.datapath().rdma_receive(&meta, &pkt);
    let area = t.mem.get(DATA, 40);
    assert!(area[..20].iter().all(|&b| b == 0), "RoCEv2/IPv4: bytes 0..20 zero");
    assert_eq!(area[20], 0x45);
    assert_eq!((&area[32..36], &area[36..40]), (&[10, 0, 0, 2][..], &[10, 0, 0, 1][..]));
    assert_eq!(t.mem.get(DATA + 40, 256), vec![0xa5; 256]);
    let cqe = t.mem.get(0x120000, 64);
    assert_eq!(cqe[0x3f] >> 4, crate::datapath::cqe::op::RESP_SEND, "{cqe:02x?}");
    assert_eq!(&cqe[0x18..0x1c], &[0x12, 0, 0, 1], "g, RoCEv2/IPv4, source QP 1");
    assert_eq!(&cqe[0x1c..0x20], &[0, 1, 0x60, 0x64], "VLAN present, TCI");
    assert_eq!(&cqe[0x24..0x28], &[0, 0, 0xff, 0xff], "QP1 P_Key");
    assert_eq!(&cqe[0x2c..0x30], &296u32.to_be_bytes(), "payload + 40");
    assert_eq!(&cqe[0x38..0x3c], &qpn.to_be_bytes());
}

/// A PerfMgt MAD through MAD_IFC (what ib_core's port `counters/` read).
fn pma_in(class: u8, method: u8, attr: u16) -> Vec<u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_MAD_IFC, 3, ifc::mad_ifc_in::SIZE);
    ifc::mad_ifc_in::port.set(&mut i, 1);
    let m = ifc::mad_ifc_in::mad.byte_off();
    i[m..m + 4].copy_from_slice(&[1, class, 1, method]);
    i[m + 16..m + 18].copy_from_slice(&attr.to_be_bytes());
    i
}

#[test]
fn mad_ifc_on_roce_is_the_pma_over_the_roce_port_counters() {
    use std::sync::atomic::Ordering::Relaxed;
    let mut t = Bench::eth();
    let c = Arc::new(vrnic_fabric::roce::RoceCounters::default());
    *t.fw.port.roce_test() = RoceState::new(Some((Arc::new(RoceGids::new(4)), c.clone())), None);
    t.up();
    c.tx_packets.store(7, Relaxed);
    c.rx_packets.store(5, Relaxed);
    c.tx_bytes.store(400, Relaxed);
    c.rx_icrc_errors.store(2, Relaxed);
    let r = ifc::mad_ifc_out::response_mad_packet.byte_off();
    let o = t.ok(&pma_in(4, 1, 0x0012), ifc::mad_ifc_out::SIZE);
    let d = &o[r + 64..];
    assert_eq!(u16::from_be_bytes([d[8], d[9]]), 2, "SymbolErrors.. PortRcvErrors");
    assert_eq!(u32::from_be_bytes(d[24..28].try_into().unwrap()), 100, "PortXmitData in words");
    assert_eq!(u32::from_be_bytes(d[32..36].try_into().unwrap()), 7);
    assert_eq!(u32::from_be_bytes(d[36..40].try_into().unwrap()), 5);
    // ClassPortInfo says PortCountersExt exist; the extended counters are 64-bit.
    let o = t.ok(&pma_in(4, 1, 0x0001), ifc::mad_ifc_out::SIZE);
    assert_eq!(u16::from_be_bytes([o[r + 66], o[r + 67]]) & (1 << 9), 1 << 9);
    let o = t.ok(&pma_in(4, 1, 0x001d), ifc::mad_ifc_out::SIZE);
    assert_eq!(u64::from_be_bytes(o[r + 64 + 24..r + 64 + 32].try_into().unwrap()), 7);
    // A clear (Set with a CounterSelect) starts them from zero; the port's own counters keep counting.
    let mut clr = pma_in(4, 2, 0x0012);
    let m = ifc::mad_ifc_in::mad.byte_off();
    clr[m + 66..m + 68].copy_from_slice(&[0xff, 0xff]);
    t.ok(&clr, ifc::mad_ifc_out::SIZE);
    c.tx_packets.store(9, Relaxed);
    let o = t.ok(&pma_in(4, 1, 0x0012), ifc::mad_ifc_out::SIZE);
    assert_eq!(u32::from_be_bytes(o[r + 64 + 32..r + 64 + 36].try_into().unwrap()), 2);
    // No SMA on RoCE.
    assert_eq!(
        t.fails(&pma_in(1, 1, 0x0011), ifc::mad_ifc_out::SIZE),
        (status::BAD_PARAM, syndrome::ROCE_MAD_IFC_NOT_PMA)
    );
    let mut p2 = pma_in(4, 1, 0x0012);
    ifc::mad_ifc_in::port.set(&mut p2, 2);
    assert_eq!(t.fails(&p2, ifc::mad_ifc_out::SIZE), (status::BAD_PARAM, syndrome::ROCE_MAD_IFC_BAD_PORT));
}

/// QUERY_Q_COUNTER of a set: its QPs' engine counters (kept across 2RST and DESTROY_QP), since the last clear.
#[test]
fn q_counters_sum_the_engine_counters_of_their_qps() {
    use ifc::rst2init_qp_in::qpc as q;
    let (mut t, _, qpn, _) = eth_qp(crate::rdma::qp::ST_RC as u64, 0, 4);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_ALLOC_Q_COUNTER, 0, 16), 16);
    let id = ifc::alloc_q_counter_out::counter_set_id.get(&o);
    let query = |t: &mut Bench, clear: bool| {
        let mut i = cmd(ifc::MLX5_CMD_OP_QUERY_Q_COUNTER, 0, ifc::query_q_counter_in::SIZE);
        ifc::query_q_counter_in::counter_set_id.set(&mut i, id);
        ifc::query_q_counter_in::clear.set(&mut i, clear as u64);
        let o = t.ok(&i, ifc::query_q_counter_out::SIZE);
        use ifc::query_q_counter_out as c;
        [
            c::out_of_buffer,
            c::out_of_sequence,
            c::duplicate_request,
            c::rnr_nak_retry_err,
            c::packet_seq_err,
            c::local_ack_timeout_err,
        ]
        .map(|f| f.get(&o))
    };
    // The QP joins the set at RST2INIT.
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, qpn), 16);
    let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, qpn);
    q::primary_address_path::vhca_port_num.set(&mut i, 1);
    q::counter_set_id.set(&mut i, id);
    t.ok(&i, 16);
    {
        let c = &mut t.fw.core.engine.qp_mut(qpn).unwrap().rt.counters;
        (c.rnr_nak_sent, c.out_of_sequence, c.duplicates, c.rnr_nak_received, c.nak_seq_received, c.timeouts) =
            (1, 2, 3, 4, 5, 6);
    }
    assert_eq!(query(&mut t, false), [1, 2, 3, 4, 5, 6]);
    // 2RST zeroes the engine's per-QP counters; the set keeps what the QP counted.
    t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, qpn), 16);
    assert_eq!(query(&mut t, true), [1, 2, 3, 4, 5, 6], "read, then cleared");
    assert_eq!(query(&mut t, false), [0; 6]);
    t.ok(&i, 16);
    t.fw.core.engine.qp_mut(qpn).unwrap().rt.counters.duplicates = 7;
    let mut d = cmd(ifc::MLX5_CMD_OP_DESTROY_QP, 0, ifc::destroy_qp_in::SIZE);
    ifc::destroy_qp_in::qpn.set(&mut d, qpn as u64);
    t.ok(&d, 16);
    assert_eq!(query(&mut t, false), [0, 0, 7, 0, 0, 0], "a destroyed QP's counts stay in its set");
}

/// A UD QP in RTS attached to 239.1.1.20 with two receive WQEs posted: (bench, QPN, group).
fn ud_member() -> (Bench, u32, [u8; 16]) {
    let (mut t, _, qpn, key) = eth_qp(crate::rdma::qp::ST_UD as u64, 0x1234, ROCE_ADDRESS_TABLE_SIZE);
    let group = v4_gid([239, 1, 1, 20]);
    let mut a = cmd(ifc::MLX5_CMD_OP_ATTACH_TO_MCG, 0, ifc::attach_to_mcg_in::SIZE);
    ifc::attach_to_mcg_in::qpn.set(&mut a, qpn as u64);
    let g = ifc::attach_to_mcg_in::multicast_gid.byte_off();
    a[g..g + 16].copy_from_slice(&group);
    t.ok(&a, 16);
    t.mem.put(QP_BUF, &data_seg(40 + 64, key, DATA));
    t.mem.put(QP_BUF + 16, &data_seg(40 + 64, key, DATA + 0x1000));
    t.mem.put(QP_DBR, &2u32.to_be_bytes());
    (t, qpn, group)
}

/// A UD SEND to the multicast QPN from QP `src_qp` (Q_Key 0x1234, 64 bytes of 0x3c).
fn mc_pkt(src_qp: u32) -> Vec<u8> {
    let mut pkt = vec![0x64, 0, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0, 0, 0, 1];
    pkt.extend_from_slice(&0x1234u32.to_be_bytes());
    pkt.extend_from_slice(&src_qp.to_be_bytes());
    pkt.extend_from_slice(&[0x3c; 64]);
    pkt.extend_from_slice(&[0; 4]);
    pkt
}

/// The meta of a packet to group `dgid`, from the link or (`local`) this port's loopback.
fn mc_meta(dgid: [u8; 16], local: bool) -> vrnic_fabric::RxMeta {
    vrnic_fabric::RxMeta {
        src: vrnic_fabric::Endpoint { lid: 0, gid: v4_gid([10, 0, 0, 2]) },
        local,
        grh: Some(vrnic_wire::grh::Repr {
            payload_len: 92,
            next_header: 0x1b,
            hop_limit: 1,
            sgid: v4_gid([10, 0, 0, 2]),
            dgid,
            ..Default::default()
        }),
        net: vrnic_wire::roce::NetHdr::RoceV2Ipv4,
        smac: [0; 6],
        vlan: None,
        prio: 0,
    }
}

/// A RoCE packet to the multicast QPN reaches the UD QPs attached to its destination group, as that QP.
#[test]
fn multicast_packets_reach_the_attached_ud_qps() {
    let (mut t, qpn, group) = ud_member();
    assert!(t.fw.mcast_member(&group) && !t.fw.mcast_member(&v4_gid([239, 1, 1, 21])));
    let pkt = mc_pkt(0x99);
    // A group nobody here joined: nothing.
    t.fw.datapath().rdma_receive(&mc_meta(v4_gid([239, 1, 1, 21]), false), &pkt);
    assert_eq!(t.mem.get(0x120000 + 63, 1)[0] >> 4, 0xf, "no CQE");
    t.fw.datapath().rdma_receive(&mc_meta(group, false), &pkt);
    let cqe = t.mem.get(0x120000, 64);
    assert_eq!(cqe[0x3f] >> 4, crate::datapath::cqe::op::RESP_SEND, "{cqe:02x?}");
    assert_eq!(&cqe[0x38..0x3c], &qpn.to_be_bytes(), "delivered as the member QP");
    assert_eq!(&cqe[0x18..0x1c], &[0x12, 0, 0, 0x99]);
    assert_eq!(t.mem.get(DATA + 40, 64), vec![0x3c; 64]);
}

/// This port's own multicast (the RoCE port's loopback, `meta.local`) reaches
/// its members, the sender included, unless the vport disables multicast
/// local loopback or the sender was created with `block_lb_mc`.
#[test]
fn own_multicast_loops_back_to_members_as_the_block_bits_allow() {
    let no_cqe = |t: &Bench| t.mem.get(0x120000 + 63, 1)[0] >> 4 == 0xf;
    // Sent by the member itself.
    let (mut t, qpn, group) = ud_member();
    t.fw.datapath().rdma_receive(&mc_meta(group, true), &mc_pkt(qpn));
    let cqe = t.mem.get(0x120000, 64);
    assert_eq!(cqe[0x3f] >> 4, crate::datapath::cqe::op::RESP_SEND, "{cqe:02x?}");
    assert_eq!(&cqe[0x19..0x1c], &qpn.to_be_bytes()[1..], "source QP: the sender");
    // The vport's disable_mc_local_lb: no member gets it.
    let (mut t, qpn, group) = ud_member();
    t.fw.port.eth_test().set_mc_local_lb_disabled(true);
    t.fw.datapath().rdma_receive(&mc_meta(group, true), &mc_pkt(qpn + 1));
    assert!(no_cqe(&t));
    // ... which does not concern multicast from the link.
    t.fw.datapath().rdma_receive(&mc_meta(group, false), &mc_pkt(qpn + 1));
    assert!(!no_cqe(&t));
    // block_lb_mc: not back to the sender, still to another member.
    let (mut t, qpn, group) = ud_member();
    ifc::qpc::block_lb_mc.set(&mut t.fw.core.engine.qp_mut(qpn).map(|e| &mut e.ext).unwrap().created, 1);
    t.fw.datapath().rdma_receive(&mc_meta(group, true), &mc_pkt(qpn));
    assert!(no_cqe(&t));
    t.fw.datapath().rdma_receive(&mc_meta(group, true), &mc_pkt(qpn + 1));
    assert!(!no_cqe(&t));
}
