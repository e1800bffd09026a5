//! Steering and TIR/RQT commands through the dispatcher, and the
//! classification of frames through the table chain mlx5e builds
//! (VLAN -> L2 -> TTC -> TIRs; the promiscuous table as root).

use super::match_image::{criteria, MatchImage};
use super::steering::{DropReason, Verdict};
use super::test_support::build::{self, outer, To};
use super::test_support::EthBench;
use crate::cmd::{status, syndrome as syn};
use crate::ifc;
use vrnic_wire::ether::{FrameInfo, VlanTag, L3, L4, TPID_CTAG, TPID_STAG};

const OWN: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x22, 0x22];
const FOREIGN: [u8; 6] = [0x02, 0x99, 0x00, 0x00, 0x00, 0x01];
const BCAST: [u8; 6] = [0xff; 6];

/// A frame's parse result, built by hand.
fn info(dmac: [u8; 6], vid: Option<u16>, l3: L3, l4: L4) -> FrameInfo {
    let ethertype = match l3 {
        L3::Ipv4 { .. } => 0x0800,
        L3::Ipv6 { .. } => 0x86dd,
        L3::None => 0x0806,
    };
    FrameInfo {
        dmac,
        smac: [0x02, 0, 0, 0, 0, 0x33],
        vlans: [vid.map(|v| VlanTag { tpid: TPID_CTAG, tci: v }), None],
        ethertype,
        l3_offset: if vid.is_some() { 18 } else { 14 },
        l3,
        l4_offset: 0,
        l4,
    }
}

fn v4(protocol: u8) -> L3 {
    L3::Ipv4 {
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        header_len: 20,
        total_len: 60,
        protocol,
        tos: 0,
        ttl: 64,
        frag: false,
    }
}

fn v6(next_header: u8) -> L3 {
    L3::Ipv6 { src: [0xfe; 16], dst: [0xfd; 16], payload_len: 20, next_header, tclass: 0, hop_limit: 64 }
}

fn tcp(sport: u16, dport: u16) -> L4 {
    L4::Tcp { sport, dport, flags: 0x18, header_len: 20 }
}

fn udp(sport: u16, dport: u16) -> L4 {
    L4::Udp { sport, dport, len: 8 }
}

/// The chain mlx5e programs, with one direct TIR per traffic type.
struct Chain {
    b: EthBench,
    vlan: u32,
    l2: u32,
    ttc: u32,
    /// TT_ANY (ARP ...), IPv4 TCP, IPv4 UDP, IPv6.
    tir_any: u32,
    tir_tcp4: u32,
    tir_udp4: u32,
    tir_v6: u32,
}

fn chain() -> Chain {
    let mut b = EthBench::new();
    let rqs: Vec<u32> = (0..4).map(|_| b.rq(4, 16)).collect();
    let tirs: Vec<u32> = rqs.iter().map(|&q| build::id(&b.ok(&build::tir_direct(q)))).collect();
    let ttc = build::id(&b.ok(&build::flow_table(2, 7, None)));
    // TTC: ip_version + ip_protocol, then ip_version, then anything.
    let g = build::id(&b.ok(&build::group(ttc, 0, 7, criteria::OUTER, |m| {
        m[outer::IP_PROTOCOL] = 0xff;
        m[outer::TAGS_VERSION] = 0x1e;
    })));
    for (k, proto, tir) in [(0, 6u8, tirs[1]), (1, 17, tirs[2])] {
        b.ok(&build::fte(ttc, g, k, &[To::Tir(tir)], |v| {
            v[outer::IP_PROTOCOL] = proto;
            v[outer::TAGS_VERSION] = 4 << 1;
        }));
    }
    let g = build::id(&b.ok(&build::group(ttc, 8, 9, criteria::OUTER, |m| m[outer::TAGS_VERSION] = 0x1e)));
    b.ok(&build::fte(ttc, g, 8, &[To::Tir(tirs[3])], |v| v[outer::TAGS_VERSION] = 6 << 1));
    let g = build::id(&b.ok(&build::group(ttc, 10, 10, 0, |_| {})));
    b.ok(&build::fte(ttc, g, 10, &[To::Tir(tirs[0])], |_| {}));
    // L2: full dmac.
    let l2 = build::id(&b.ok(&build::flow_table(1, 16, None)));
    let g =
        build::id(&b.ok(&build::group(l2, 0, 0xff, criteria::OUTER, |m| m[outer::DMAC..outer::DMAC + 6].fill(0xff))));
    for (k, mac) in [(0, OWN), (1, BCAST)] {
        b.ok(&build::fte(l2, g, k, &[To::Table(ttc)], |v| v[outer::DMAC..outer::DMAC + 6].copy_from_slice(&mac)));
    }
    // VLAN: untagged (cvlan_tag masked, 0), then per VID.
    let vlan = build::id(&b.ok(&build::flow_table(0, 12, None)));
    let g = build::id(&b.ok(&build::group(vlan, 0, 0, criteria::OUTER, |m| m[outer::TAGS_VERSION] = 0x80)));
    b.ok(&build::fte(vlan, g, 0, &[To::Table(l2)], |_| {}));
    let g = build::id(&b.ok(&build::group(vlan, 1, 4095, criteria::OUTER, |m| {
        m[outer::TAGS_VERSION] = 0x80;
        m[outer::FIRST_VID] = 0x0f;
        m[outer::FIRST_VID + 1] = 0xff;
    })));
    b.ok(&build::fte(vlan, g, 1 + 100, &[To::Table(l2)], |v| {
        v[outer::TAGS_VERSION] = 0x80;
        v[outer::FIRST_VID..outer::FIRST_VID + 2].copy_from_slice(&100u16.to_be_bytes());
    }));
    b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, vlan));
    Chain { b, vlan, l2, ttc, tir_any: tirs[0], tir_tcp4: tirs[1], tir_udp4: tirs[2], tir_v6: tirs[3] }
}

impl Chain {
    fn classify(&mut self, i: &FrameInfo) -> Verdict {
        self.b.fw.port.eth_test().steering.classify(&MatchImage::of(i))
    }
}

fn to(tir: u32) -> Verdict {
    Verdict::Deliver { tirs: vec![tir], flow_tag: 0 }
}

#[test]
fn mac_filter_of_the_l2_table() {
    let mut c = chain();
    assert_eq!(c.classify(&info(OWN, None, v4(6), tcp(1, 80))), to(c.tir_tcp4), "unicast to own MAC");
    assert_eq!(c.classify(&info(FOREIGN, None, v4(6), tcp(1, 80))), Verdict::Drop(DropReason::Miss));
    assert_eq!(c.classify(&info(BCAST, None, L3::None, L4::None)), to(c.tir_any), "broadcast ARP: TT_ANY");
    assert_eq!(c.b.fw.port.eth_test().steering.drops.miss, 1);
}

#[test]
fn ttc_by_ip_version_and_protocol() {
    let mut c = chain();
    assert_eq!(c.classify(&info(OWN, None, v4(17), udp(5, 53))), to(c.tir_udp4));
    assert_eq!(c.classify(&info(OWN, None, v6(6), tcp(5, 22))), to(c.tir_v6));
    assert_eq!(c.classify(&info(OWN, None, v4(1), L4::None)), to(c.tir_any), "ICMP: no TTC rule but the catch-all");
}

#[test]
fn vlan_table_per_vid_rules() {
    let mut c = chain();
    assert_eq!(c.classify(&info(OWN, Some(100), v4(6), tcp(1, 80))), to(c.tir_tcp4), "VID 100 has a rule");
    assert_eq!(c.classify(&info(OWN, Some(0x2000 | 100), v4(6), tcp(1, 80))), to(c.tir_tcp4), "PCP is not matched");
    assert_eq!(c.classify(&info(OWN, Some(200), v4(6), tcp(1, 80))), Verdict::Drop(DropReason::Miss), "VID 200");
    // An S-tagged frame is not C-tagged: the untagged rule takes it.
    let mut s = info(OWN, Some(300), v4(6), tcp(1, 80));
    s.vlans[0] = Some(VlanTag { tpid: TPID_STAG, tci: 300 });
    assert_eq!(c.classify(&s), to(c.tir_tcp4));
}

#[test]
fn promiscuous_root_then_back_and_disconnect() {
    let mut c = chain();
    let promisc = build::id(&c.b.ok(&build::flow_table(0, 0, None)));
    let g = build::id(&c.b.ok(&build::group(promisc, 0, 0, 0, |_| {})));
    c.b.ok(&build::fte(promisc, g, 0, &[To::Table(c.ttc)], |_| {}));
    c.b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, promisc));
    assert_eq!(c.classify(&info(FOREIGN, None, v4(6), tcp(1, 80))), to(c.tir_tcp4), "promiscuous");
    c.b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, c.vlan));
    assert_eq!(c.classify(&info(FOREIGN, None, v4(6), tcp(1, 80))), Verdict::Drop(DropReason::Miss));
    c.b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 1, 0));
    assert_eq!(c.classify(&info(OWN, None, v4(6), tcp(1, 80))), Verdict::Drop(DropReason::NoRoot));
    assert_eq!(c.b.fw.port.eth_test().steering.drops.no_root, 1);
}

#[test]
fn miss_table_and_modify_flow_table() {
    let mut c = chain();
    // An empty table in front of VLAN, missing into it.
    let front = build::id(&c.b.ok(&build::flow_table(0, 4, Some(c.vlan))));
    c.b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, front));
    assert_eq!(c.classify(&info(OWN, None, v4(6), tcp(1, 80))), to(c.tir_tcp4));
    // MODIFY_FLOW_TABLE: miss now goes straight to TTC (no MAC filter).
    let mut m = build::table_cmd(ifc::MLX5_CMD_OP_MODIFY_FLOW_TABLE, 0, front);
    m[0x0e..0x10].copy_from_slice(&1u16.to_be_bytes());
    m[0x18] = 0x01;
    m[0x1c..0x20].copy_from_slice(&c.ttc.to_be_bytes());
    c.b.ok(&m);
    assert_eq!(c.classify(&info(FOREIGN, None, v4(17), udp(1, 2))), to(c.tir_udp4));
    // Miss action 0: drop.
    m[0x18] = 0;
    c.b.ok(&m);
    assert_eq!(c.classify(&info(OWN, None, v4(17), udp(1, 2))), Verdict::Drop(DropReason::Miss));
    // A miss to itself is refused.
    m[0x18] = 0x01;
    m[0x1c..0x20].copy_from_slice(&front.to_be_bytes());
    assert_eq!(c.b.fails(&m), (status::BAD_PARAM, syn::MODIFY_FLOW_TABLE_SELF_MISS));
}

#[test]
fn forwarding_cycle_drops_and_counts() {
    let mut b = EthBench::new();
    let t_b = build::id(&b.ok(&build::flow_table(1, 2, None)));
    let t_a = build::id(&b.ok(&build::flow_table(0, 2, Some(t_b))));
    let g = build::id(&b.ok(&build::group(t_b, 0, 0, 0, |_| {})));
    b.ok(&build::fte(t_b, g, 0, &[To::Table(t_a)], |_| {}));
    b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, t_a));
    let v = b.fw.port.eth_test().steering.classify(&MatchImage::of(&info(OWN, None, v4(6), tcp(1, 2))));
    assert_eq!(v, Verdict::Drop(DropReason::BadChain));
    assert_eq!(b.fw.port.eth_test().steering.drops.bad_chain, 1);
}

#[test]
fn several_destinations_deliver_to_each_tir_once() {
    let mut c = chain();
    let t = build::id(&c.b.ok(&build::flow_table(0, 1, None)));
    let g = build::id(&c.b.ok(&build::group(t, 0, 0, 0, |_| {})));
    let dests = [To::Tir(c.tir_any), To::Tir(c.tir_v6), To::Tir(c.tir_any), To::Table(c.l2)];
    c.b.ok(&build::fte(t, g, 0, &dests, |_| {}));
    c.b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, t));
    let v = c.classify(&info(OWN, None, v4(17), udp(1, 2)));
    assert_eq!(v, Verdict::Deliver { tirs: vec![c.tir_any, c.tir_v6, c.tir_udp4], flow_tag: 0 });
}

#[test]
fn drop_rule_flow_tag_and_modify_entry() {
    let mut c = chain();
    let t = build::id(&c.b.ok(&build::flow_table(0, 2, None)));
    let g = build::id(
        &c.b.ok(&build::group(t, 0, 0, criteria::OUTER, |m| m[outer::UDP_DPORT..outer::UDP_DPORT + 2].fill(0xff))),
    );
    c.b.ok(&build::fte(t, g, 0, &[], |v| {
        v[outer::UDP_DPORT..outer::UDP_DPORT + 2].copy_from_slice(&9u16.to_be_bytes())
    }));
    let g2 = build::id(&c.b.ok(&build::group(t, 1, 1, 0, |_| {})));
    let mut e = build::fte(t, g2, 1, &[To::Tir(c.tir_udp4)], |_| {});
    e[0x48..0x4c].copy_from_slice(&0x00ab_cdefu32.to_be_bytes());
    c.b.ok(&e);
    c.b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, t));
    assert_eq!(c.classify(&info(OWN, None, v4(17), udp(1, 9))), Verdict::Drop(DropReason::Rule));
    assert_eq!(
        c.classify(&info(OWN, None, v4(17), udp(1, 7))),
        Verdict::Deliver { tirs: vec![c.tir_udp4], flow_tag: 0xab_cdef }
    );
    // op_mod 1, destination list only: the entry now goes to the IPv6 TIR, tag kept.
    let mut m = build::fte(t, g2, 1, &[To::Tir(c.tir_v6)], |_| {});
    m[0x04..0x06].copy_from_slice(&[0, 0]);
    m[0x06..0x08].copy_from_slice(&1u16.to_be_bytes());
    m[0x1b] = 1 << 2;
    c.b.ok(&m);
    assert_eq!(
        c.classify(&info(OWN, None, v4(17), udp(1, 7))),
        Verdict::Deliver { tirs: vec![c.tir_v6], flow_tag: 0xab_cdef }
    );
    // Deleted: miss (drop).
    c.b.ok(&build::delete_fte(t, 1));
    assert_eq!(c.classify(&info(OWN, None, v4(17), udp(1, 7))), Verdict::Drop(DropReason::Miss));
    assert_eq!(c.b.fails(&build::delete_fte(t, 1)), (status::BAD_PARAM, syn::DELETE_FTE_NO_ENTRY));
}

#[test]
fn unknown_criteria_sections() {
    let img = MatchImage::of(&info(OWN, None, v4(6), tcp(1, 2)));
    let mut mask = [0u8; 0x200];
    let value = [0u8; 0x200];
    // Inner headers (bit 2) enabled with a zero mask: matches; any mask bit: never.
    assert!(img.matches(1 << 2, &mask, &value));
    mask[0x80 + 0x10] = 0xff;
    assert!(!img.matches(1 << 2, &mask, &value));
    // Not enabled: ignored.
    assert!(img.matches(criteria::OUTER, &mask, &value));
    // Misc: all zero in the image (source port 0).
    mask[0x40 + 0x06] = 0xff;
    assert!(img.matches(criteria::MISC, &mask, &value));
}

#[test]
fn match_image_layout() {
    let mut i = info(OWN, Some(0x6064), v4(6), tcp(0x1234, 0x0050));
    if let L3::Ipv4 { tos, frag, .. } = &mut i.l3 {
        *tos = 0xb9;
        *frag = true;
    }
    let img = MatchImage::of(&i);
    let o = &img.0[..0x40];
    assert_eq!(&o[0x00..0x06], &[0x02, 0, 0, 0, 0, 0x33]);
    assert_eq!(&o[0x06..0x08], &[0x08, 0x00]);
    assert_eq!(&o[0x08..0x0e], &OWN);
    assert_eq!(&o[0x0e..0x10], &[0x60, 0x64], "first_prio 3, cfi 0, vid 0x64");
    assert_eq!((o[0x10], o[0x11], o[0x12], o[0x13]), (6, 0xb9, 0x80 | 0x20 | (4 << 1), 0x18));
    assert_eq!(&o[0x14..0x18], &[0x12, 0x34, 0x00, 0x50]);
    assert_eq!(o[0x1b], 64);
    assert_eq!(&o[0x1c..0x20], &[0; 4], "no UDP ports for TCP");
    assert_eq!(&o[0x2c..0x30], &[10, 0, 0, 1]);
    assert_eq!(&o[0x3c..0x40], &[10, 0, 0, 2]);
    assert!(img.0[0x40..].iter().all(|&b| b == 0));
    let img = MatchImage::of(&info(OWN, None, v6(17), udp(7, 8)));
    assert_eq!((img.0[0x12], &img.0[0x1c..0x20]), (6 << 1, &[0, 7, 0, 8][..]));
    assert_eq!((&img.0[0x20..0x30], &img.0[0x30..0x40]), (&[0xfe; 16][..], &[0xfd; 16][..]));
}

#[test]
fn flow_table_command_errors() {
    let mut b = EthBench::new();
    let mut t = build::flow_table(0, 4, None);
    t[0x10] = 1;
    assert_eq!(b.fails(&t), (status::BAD_PARAM, syn::CREATE_FLOW_TABLE_BAD_TYPE), "NIC TX");
    assert_eq!(b.fails(&build::flow_table(0, 25, None)), (status::BAD_PARAM, syn::CREATE_FLOW_TABLE_BAD_SIZE));
    assert_eq!(b.fails(&build::flow_table(0, 4, Some(77))), (status::BAD_PARAM, syn::FLOW_TABLE_BAD_MISS_ID));
    assert_eq!(b.fails(&build::flow_table(0, 4, None)[..0x18]).0, status::BAD_INP_LEN);
    let id = build::id(&b.ok(&build::flow_table(0, 22, None)));
    assert_eq!(b.fails(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, id + 1)).0, status::BAD_PARAM);
    // Groups: in range, disjoint, whole mask in the mailbox.
    let g = build::id(&b.ok(&build::group(id, 0, 9, 0, |_| {})));
    assert_eq!(b.fails(&build::group(id, 5, 12, 0, |_| {})), (status::BAD_PARAM, syn::CREATE_FLOW_GROUP_OVERLAP));
    assert_eq!(b.fails(&build::group(id, 12, 5, 0, |_| {})), (status::BAD_PARAM, syn::CREATE_FLOW_GROUP_BAD_RANGE));
    assert_eq!(
        b.fails(&build::group(id, 10, 1 << 22, 0, |_| {})),
        (status::BAD_PARAM, syn::CREATE_FLOW_GROUP_BAD_RANGE)
    );
    assert_eq!(
        b.fails(&build::group(id, 10, 11, 0, |_| {})[..0x100]),
        (status::BAD_INP_LEN, syn::FLOW_SHORT_MATCH_PARAM)
    );
    assert_eq!(b.fails(&build::group(id + 9, 0, 1, 0, |_| {})).0, status::BAD_PARAM, "no such table");
    // Entries.
    assert_eq!(b.fails(&build::fte(id, g, 10, &[], |_| {})), (status::BAD_PARAM, syn::SET_FTE_OUTSIDE_GROUP));
    assert_eq!(b.fails(&build::fte(id, g + 5, 1, &[], |_| {})), (status::BAD_PARAM, syn::SET_FTE_BAD_GROUP));
    assert_eq!(b.fails(&build::fte(id, g, 1, &[To::Tir(5)], |_| {})), (status::BAD_PARAM, syn::SET_FTE_BAD_DEST_ID));
    assert_eq!(b.fails(&build::fte(id, g, 1, &[To::Table(id)], |_| {})), (status::BAD_PARAM, syn::SET_FTE_SELF_DEST));
    let mut e = build::fte(id, g, 1, &[To::Table(id)], |_| {});
    e[0x53] = 200; // destination_list_size past the mailbox
    assert_eq!(b.fails(&e), (status::BAD_INP_LEN, syn::SET_FTE_SHORT_DEST));
    let mut e = build::fte(id, g, 1, &[To::Table(id)], |_| {});
    e[crate::ifc::set_fte_in::flow_context::destination.byte_off()] = 0x09;
    assert_eq!(b.fails(&e), (status::BAD_PARAM, syn::SET_FTE_BAD_DEST_TYPE));
    let mut e = build::fte(id, g, 1, &[], |_| {});
    e[0x4f] = 0x40 | 2; // MOD_HDR | DROP
    assert_eq!(b.fails(&e), (status::BAD_PARAM, syn::SET_FTE_BAD_ACTION));
    b.ok(&build::fte(id, g, 1, &[], |_| {}));
    assert_eq!(b.fails(&build::fte(id, g, 1, &[], |_| {})), (status::BAD_RES_STATE, syn::SET_FTE_EXISTS));
    // In use: group, then table.
    let mut dg = build::table_cmd(ifc::MLX5_CMD_OP_DESTROY_FLOW_GROUP, 0, id);
    dg[0x18..0x1c].copy_from_slice(&g.to_be_bytes());
    assert_eq!(b.fails(&dg), (status::BAD_RES_STATE, syn::DESTROY_FLOW_GROUP_IN_USE));
    let dt = build::table_cmd(ifc::MLX5_CMD_OP_DESTROY_FLOW_TABLE, 0, id);
    assert_eq!(b.fails(&dt), (status::BAD_RES_STATE, syn::DESTROY_FLOW_TABLE_IN_USE));
    b.ok(&build::delete_fte(id, 1));
    b.ok(&dg);
    b.ok(&dt);
    assert_eq!(b.fails(&dt).0, status::BAD_PARAM, "gone");
}

#[test]
fn tir_and_rqt_command_errors() {
    let mut b = EthBench::new();
    let rq = b.rq(4, 16);
    assert_eq!(b.fails(&build::tir_direct(rq + 7)), (status::BAD_PARAM, syn::CREATE_TIR_BAD_RQN));
    let key = [0x6d; 40];
    assert_eq!(b.fails(&build::tir_rss(9, &key, 3, false, false, true)), (status::BAD_PARAM, syn::CREATE_TIR_BAD_RQT));
    let create = ifc::MLX5_CMD_OP_CREATE_RQT;
    assert_eq!(b.fails(&build::rqt(create, 0, 1, &[rq, rq])), (status::BAD_PARAM, syn::RQT_BAD_SIZE), "actual > max");
    assert_eq!(b.fails(&build::rqt(create, 0, 4, &[rq, rq + 3])), (status::BAD_PARAM, syn::RQT_BAD_RQN));
    let mut short = build::rqt(create, 0, 8, &[rq, rq]);
    short[0x3b] = 8; // actual size 8, two entries in the mailbox
    assert_eq!(b.fails(&short), (status::BAD_INP_LEN, syn::RQT_SHORT_LIST));
    let rqtn = build::id(&b.ok(&build::rqt(create, 0, 4, &[rq])));
    let mut t = build::tir_rss(rqtn, &key, 3, false, false, true);
    t[0x44] = 0x30; // rx_hash_fn 3
    assert_eq!(b.fails(&t), (status::BAD_PARAM, syn::TIR_BAD_HASH));
    let mut t = build::tir_rss(rqtn, &key, 3, false, false, true);
    ifc::create_tir_in::ctx::packet_merge_mask.set(&mut t, 1); // LRO is not advertised
    assert_eq!(b.fails(&t), (status::BAD_PARAM, syn::TIR_LRO));
    let tirn = build::id(&b.ok(&build::tir_rss(rqtn, &key, 3, false, false, true)));
    // MODIFY_TIR: hash and self_lb_en bits; an unknown bit is refused.
    let mut m = build::tir_rss(rqtn, &[0x11; 40], 0xf, false, true, false);
    m[0..2].copy_from_slice(&(ifc::MLX5_CMD_OP_MODIFY_TIR as u16).to_be_bytes());
    m[0x08..0x0c].copy_from_slice(&tirn.to_be_bytes());
    m[0x17] = 1 << 1;
    assert_eq!(b.fails(&m), (status::BAD_PARAM, syn::MODIFY_TIR_BAD_BITMASK));
    m[0x17] = (1 << 2) | (1 << 4);
    m[0x20 + 0x24] |= 0x01; // self_lb_block unicast
    b.ok(&m);
    let t = &b.fw.port.eth_test().dispatch.tirs[&tirn];
    assert_eq!(
        (t.hash.key, t.hash.fields, t.hash.l4_udp, t.hash.symmetric, t.self_lb_block),
        ([0x11; 40], 0xf, true, false, 1)
    );
    // MODIFY_RQT to a list longer than its max: refused; within: replaced.
    let rq2 = b.rq(4, 16);
    let modify = ifc::MLX5_CMD_OP_MODIFY_RQT;
    assert_eq!(b.fails(&build::rqt(modify, rqtn, 4, &[rq; 5])), (status::BAD_PARAM, syn::RQT_BAD_SIZE));
    b.ok(&build::rqt(modify, rqtn, 4, &[rq2, rq]));
    assert_eq!(b.fw.port.eth_test().dispatch.rqts[&rqtn].rqns, vec![rq2, rq]);
    let mut d = build::rqt(ifc::MLX5_CMD_OP_DESTROY_RQT, rqtn, 1, &[]);
    b.ok(&d);
    assert_eq!(b.fails(&d), (status::BAD_PARAM, syn::DESTROY_RQT_BAD_RQTN));
    d[0..2].copy_from_slice(&(ifc::MLX5_CMD_OP_DESTROY_TIR as u16).to_be_bytes());
    d[0x08..0x0c].copy_from_slice(&tirn.to_be_bytes());
    b.ok(&d);
    assert!(b.fw.port.eth_test().dispatch.tirs.is_empty());
}

#[test]
fn fan_out_dag_is_bounded() {
    // 30 levels, each entry forwarding twice to the next level: 2^30 paths
    // without a bound on visits. The walk stops after MAX_VISITS tables.
    let mut b = EthBench::new();
    let rq = b.rq(2, 16);
    let tir = build::id(&b.ok(&build::tir_direct(rq)));
    let mut next = build::id(&b.ok(&build::flow_table(30, 0, None)));
    let g = build::id(&b.ok(&build::group(next, 0, 0, 0, |_| {})));
    b.ok(&build::fte(next, g, 0, &[To::Tir(tir)], |_| {}));
    for level in (0..30).rev() {
        let t = build::id(&b.ok(&build::flow_table(level, 0, None)));
        let g = build::id(&b.ok(&build::group(t, 0, 0, 0, |_| {})));
        b.ok(&build::fte(t, g, 0, &[To::Table(next), To::Table(next)], |_| {}));
        next = t;
    }
    b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, next));
    let v = b.fw.port.eth_test().steering.classify(&MatchImage::of(&info(OWN, None, v4(6), tcp(1, 2))));
    // The first path reaches the TIR; the walk is cut short after that.
    assert_eq!(v, Verdict::Deliver { tirs: vec![tir], flow_tag: 0 });
}
