//! The receive path end to end: frames through steering, TIR/RSS and an
//! RQ's WQE into guest memory, checked by the buffers and the CQE bytes.

use super::rss::hash_type;
use super::test_support::build::{self, outer, To};
use super::test_support::{EthBench, DATA_BASE};
use crate::ifc;
use std::sync::atomic::Ordering::Relaxed;
use vrnic_engine::QpState;
use vrnic_wire::offload::toeplitz;

const OWN: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x22, 0x22];
const PEER: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x33, 0x33];
const FOREIGN: [u8; 6] = [0x02, 0x99, 0x00, 0x00, 0x00, 0x01];
const BCAST: [u8; 6] = [0xff; 6];

/// One's-complement sum, folded, not inverted (independent of `wire::offload`).
fn sum16(data: &[u8], init: u32) -> u16 {
    let mut s = init;
    for c in data.chunks(2) {
        s += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Source IP, destination IP, source port, destination port.
type Flow = ([u8; 4], [u8; 4], u16, u16);

/// An IPv4/UDP frame with valid checksums (`bad_l4`: the UDP checksum off by one),
/// optionally C-tagged with `tci`.
fn udp4(dmac: [u8; 6], tci: Option<u16>, flow: Flow, payload: usize, bad_l4: bool) -> Vec<u8> {
    let (src, dst, sport, dport) = flow;
    let mut f = Vec::new();
    f.extend_from_slice(&dmac);
    f.extend_from_slice(&PEER);
    if let Some(t) = tci {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&t.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let total = 20 + 8 + payload;
    let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = !sum16(&ip, 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut l4 = Vec::new();
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    l4.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    l4.extend_from_slice(&[0, 0]);
    l4.extend((0..payload).map(|k| k as u8));
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    let mut c = !sum16(&l4, sum16(&pseudo, 0) as u32);
    if c == 0 {
        c = 0xffff;
    }
    if bad_l4 {
        c = c.wrapping_add(1);
    }
    l4[6..8].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&l4);
    f
}

fn arp(dmac: [u8; 6]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dmac);
    f.extend_from_slice(&PEER);
    f.extend_from_slice(&[0x08, 0x06]);
    f.extend_from_slice(&[0u8; 28]);
    f.resize(60, 0);
    f
}

/// A bench with one RQ behind a direct TIR; the root table takes frames to
/// the own MAC and broadcast (the flow tag of the own-MAC rule is 0).
struct Rx {
    b: EthBench,
    rq: u32,
}

fn rx() -> Rx {
    let mut b = EthBench::new();
    let rq = b.rq(4, 32);
    let tir = build::id(&b.ok(&build::tir_direct(rq)));
    let t = build::id(&b.ok(&build::flow_table(0, 4, None)));
    let g = build::id(&b.ok(&build::group(t, 0, 1, 1, |m| m[outer::DMAC..outer::DMAC + 6].fill(0xff))));
    for (k, mac) in [(0, OWN), (1, BCAST)] {
        b.ok(&build::fte(t, g, k, &[To::Tir(tir)], |v| v[outer::DMAC..outer::DMAC + 6].copy_from_slice(&mac)));
    }
    b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, t));
    Rx { b, rq }
}

impl Rx {
    fn receive(&mut self, f: &[u8]) {
        self.b.fw.datapath().eth_receive(f);
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

#[test]
fn udp_frame_lands_in_the_wqe_with_its_cqe() {
    let mut r = rx();
    let a = r.b.post_buf(r.rq, 0);
    let f = udp4(OWN, None, ([10, 0, 0, 1], [10, 0, 0, 2], 1000, 2000), 100, false);
    r.receive(&f);
    assert_eq!(r.b.mem.get(a, f.len()), f);
    assert_eq!(r.b.cqes(), 1);
    let c = r.b.cqe(0);
    assert_eq!(c[0x3f], 0x20, "RESP_SEND, format 0, owner 0 on the first pass");
    assert_eq!(be32(&c, 0x2c), f.len() as u32, "byte_cnt");
    assert_eq!(be16(&c, 0x3c), 0, "wqe_counter");
    assert_eq!(be32(&c, 0x38), 0, "sop_drop_qpn: the flow tag, not the RQN");
    assert_eq!(c[0x20], 0, "lro_num_seg");
    assert_eq!(c[0x00], 0, "no TLS, not tunneled");
    assert_eq!(c[0x1c], 0x06, "L3_OK | L4_OK");
    assert_eq!(c[0x1d], (2 << 4) | (2 << 2), "UDP over IPv4, not stripped");
    assert_eq!(be16(&c, 0x14), sum16(&f[14..], 0), "check_sum over the L3 packet");
    assert_eq!((be32(&c, 0x0c), c[0x10]), (0, 0), "direct TIR: no hash");
    let s = r.b.fw.port.eth_test().dispatch.rq_counters[&r.rq];
    assert_eq!((s.packets, s.bytes), (1, f.len() as u64));
    assert_eq!(r.b.fw.port.eth_test().vport.counters.rx_unicast_packets.load(Relaxed), 1);
}

#[test]
fn vlan_stripped_and_reported() {
    let mut r = rx();
    let a = r.b.post_buf(r.rq, 0);
    let f = udp4(OWN, Some(0x6005), ([10, 0, 0, 1], [10, 0, 0, 2], 1, 2), 30, false);
    r.receive(&f);
    let want: Vec<u8> = [&f[..12], &f[16..]].concat();
    assert_eq!(r.b.mem.get(a, want.len()), want);
    let c = r.b.cqe(0);
    assert_eq!(be32(&c, 0x2c), want.len() as u32);
    assert_eq!(c[0x1d] & 1, 1, "stripped");
    assert_eq!(be16(&c, 0x1e), 0x6005, "vlan_info = TCI");
    assert_eq!(be16(&c, 0x14), sum16(&f[18..], 0));
}

#[test]
fn bad_l4_checksum_is_not_reported_ok() {
    let mut r = rx();
    r.b.post_buf(r.rq, 0);
    r.receive(&udp4(OWN, None, ([10, 0, 0, 1], [10, 0, 0, 2], 1, 2), 40, true));
    assert_eq!(r.b.cqe(0)[0x1c], 0x02, "L3_OK only");
}

#[test]
fn broadcast_arp_delivered_foreign_dropped() {
    let mut r = rx();
    r.b.post_buf(r.rq, 0);
    r.b.post_buf(r.rq, 1);
    r.receive(&arp(FOREIGN));
    assert_eq!(r.b.cqes(), 0);
    assert_eq!(r.b.fw.port.eth_test().steering.drops.miss, 1);
    let f = arp(BCAST);
    r.receive(&f);
    assert_eq!(r.b.cqes(), 1);
    let c = r.b.cqe(0);
    assert_eq!((c[0x1c], c[0x1d], be16(&c, 0x14)), (0, 0, 0), "no L3: no checksum, no types");
    assert_eq!(r.b.mem.get(DATA_BASE, 60), f);
    assert_eq!(r.b.fw.port.eth_test().vport.counters.rx_broadcast_packets.load(Relaxed), 1);
}

#[test]
fn no_wqe_counts_out_of_buffer_then_wqes_in_order() {
    let mut r = rx();
    let f = udp4(OWN, None, ([10, 0, 0, 1], [10, 0, 0, 2], 1, 2), 10, false);
    r.receive(&f);
    assert_eq!(r.b.cqes(), 0);
    assert_eq!(r.b.fw.port.eth_test().dispatch.rq_counters[&r.rq].out_of_buffer, 1);
    let a0 = r.b.post_buf(r.rq, 0);
    let a1 = r.b.post_buf(r.rq, 1);
    let g = udp4(OWN, None, ([10, 0, 0, 1], [10, 0, 0, 2], 1, 2), 11, false);
    r.receive(&f);
    r.receive(&g);
    assert_eq!((r.b.mem.get(a0, f.len()), r.b.mem.get(a1, g.len())), (f, g));
    assert_eq!((be16(&r.b.cqe(0), 0x3c), be16(&r.b.cqe(1), 0x3c)), (0, 1));
}

#[test]
fn multi_segment_wqe_and_too_long() {
    let mut r = rx();
    let f = udp4(OWN, None, ([10, 0, 0, 1], [10, 0, 0, 2], 1, 2), 200, false);
    // 64 bytes of buffer: too short, the WQE stays.
    r.b.post(r.rq, &[(64, DATA_BASE)]);
    r.receive(&f);
    assert_eq!((r.b.cqes(), r.b.fw.port.eth_test().dispatch.counters.too_long), (0, 1));
    assert_eq!(r.b.fw.core.engine.qp(r.rq).unwrap().ext.rq_ci, 0);
    // Replace the WQE in place with two segments (64 + 4096).
    r.b.fw.core.engine.qp_mut(r.rq).map(|e| &mut e.ext).unwrap().rq_ci = 1;
    r.b.post(r.rq, &[(64, DATA_BASE + 0x1000), (4096, DATA_BASE + 0x3000)]);
    r.receive(&f);
    let got = [r.b.mem.get(DATA_BASE + 0x1000, 64), r.b.mem.get(DATA_BASE + 0x3000, f.len() - 64)].concat();
    assert_eq!(got, f);
    assert_eq!(be16(&r.b.cqe(0), 0x3c), 1);
}

#[test]
fn runts_and_giants_are_counted() {
    let mut r = rx();
    r.b.post_buf(r.rq, 0);
    r.receive(&[0u8; 13]);
    r.receive(&[]);
    r.receive(&vec![0u8; super::rx::MAX_FRAME + 1]);
    let c = &r.b.fw.port.eth_test().dispatch.counters;
    assert_eq!((c.runts, c.giants), (2, 1));
    assert_eq!(r.b.cqes(), 0);
}

#[test]
fn bad_lkey_error_cqe_and_rq_to_error() {
    let mut r = rx();
    let key = r.b.key;
    r.b.key = 0x00de_ad00;
    r.b.post_buf(r.rq, 0);
    r.b.key = key;
    r.b.post_buf(r.rq, 1);
    r.receive(&arp(OWN));
    let c = r.b.cqe(0);
    assert_eq!((c[0x3f] >> 4, c[0x37]), (14, 0x04), "RESP_ERR, LOCAL_PROT_ERR");
    assert_eq!(r.b.fw.core.engine.qp(r.rq).unwrap().state, QpState::Err);
    r.receive(&arp(OWN));
    assert_eq!(r.b.fw.port.eth_test().dispatch.counters.rq_not_ready, 1, "an ERR RQ takes nothing");
}

#[test]
fn rq_not_ready_drops() {
    let mut r = rx();
    r.b.post_buf(r.rq, 0);
    r.b.fw.core.engine.qp_mut(r.rq).unwrap().state = QpState::Reset;
    r.receive(&arp(OWN));
    assert_eq!((r.b.cqes(), r.b.fw.port.eth_test().dispatch.counters.rq_not_ready), (0, 1));
}

/// Four RQs behind an RSS TIR (IPv4 UDP, IPs and ports); frames to `OWN`.
fn rss(symmetric: bool) -> (EthBench, Vec<u32>, [u8; 40]) {
    let mut b = EthBench::new();
    let rqs: Vec<u32> = (0..4).map(|_| b.rq(2, 16)).collect();
    for (k, &q) in rqs.iter().enumerate() {
        b.post_buf(q, k as u64);
    }
    let key: [u8; 40] = core::array::from_fn(|k| (k as u8).wrapping_mul(37).wrapping_add(11));
    let rqtn = build::id(&b.ok(&build::rqt(ifc::MLX5_CMD_OP_CREATE_RQT, 0, 4, &rqs)));
    let tir = build::id(&b.ok(&build::tir_rss(rqtn, &key, 0xf, false, true, symmetric)));
    let t = build::id(&b.ok(&build::flow_table(0, 0, None)));
    let g = build::id(&b.ok(&build::group(t, 0, 0, 0, |_| {})));
    b.ok(&build::fte(t, g, 0, &[To::Tir(tir)], |_| {}));
    b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, t));
    (b, rqs, key)
}

/// Microsoft RSS input: src IP, dst IP, src port, dst port.
fn rss_input(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    [&src[..], &dst[..], &sport.to_be_bytes()[..], &dport.to_be_bytes()[..]].concat()
}

#[test]
fn rss_spreads_flows_by_toeplitz() {
    let (mut b, rqs, key) = rss(false);
    let flows = [([10, 0, 0, 1], [10, 0, 0, 2], 1111u16, 2222u16), ([10, 0, 0, 9], [10, 0, 0, 2], 4000, 53)];
    for (n, &(src, dst, sp, dp)) in flows.iter().enumerate() {
        let f = udp4(OWN, None, (src, dst, sp, dp), 20, false);
        b.fw.datapath().eth_receive(&f);
        let h = toeplitz(&key, &rss_input(src, dst, sp, dp));
        let k = h as usize % 4;
        let c = b.cqe(n as u64);
        assert_eq!(be32(&c, 0x0c), h, "rss_hash_result");
        assert_eq!(c[0x10], hash_type::IPV4 | hash_type::UDP);
        assert_eq!(b.mem.get(DATA_BASE + k as u64 * 4096, f.len()), f, "flow {n} on RQ {k}");
        assert_eq!(b.fw.port.eth_test().dispatch.rq_counters[&rqs[k]].packets, 1);
        // Repost that RQ's WQE for the next flow.
        b.post_buf(rqs[k], k as u64);
    }
}

#[test]
fn symmetric_rss_hashes_both_directions_alike() {
    let (mut b, rqs, key) = rss(true);
    let (lo, hi) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    b.fw.datapath().eth_receive(&udp4(OWN, None, (lo, hi, 5000, 80), 20, false));
    let h = be32(&b.cqe(0), 0x0c);
    assert_eq!(h, toeplitz(&key, &rss_input(lo, hi, 5000, 80)), "smaller endpoint first: the plain hash");
    let k = h as usize % 4;
    b.post_buf(rqs[k], k as u64);
    b.fw.datapath().eth_receive(&udp4(OWN, None, (hi, lo, 80, 5000), 20, false));
    assert_eq!(be32(&b.cqe(1), 0x0c), h, "the reverse direction");
}

#[test]
fn two_tirs_on_one_rq_deliver_one_copy_two_rqs_two() {
    let mut b = EthBench::new();
    let (q1, q2) = (b.rq(2, 16), b.rq(2, 16));
    b.post_buf(q1, 0);
    b.post_buf(q2, 1);
    let t1 = build::id(&b.ok(&build::tir_direct(q1)));
    let t1b = build::id(&b.ok(&build::tir_direct(q1)));
    let t2 = build::id(&b.ok(&build::tir_direct(q2)));
    let t = build::id(&b.ok(&build::flow_table(0, 0, None)));
    let g = build::id(&b.ok(&build::group(t, 0, 0, 0, |_| {})));
    b.ok(&build::fte(t, g, 0, &[To::Tir(t1), To::Tir(t1b), To::Tir(t2)], |_| {}));
    b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, t));
    let f = arp(BCAST);
    b.fw.datapath().eth_receive(&f);
    assert_eq!(b.cqes(), 2, "one CQE per RQ");
    assert_eq!((b.mem.get(DATA_BASE, 60), b.mem.get(DATA_BASE + 4096, 60)), (f.clone(), f));
    assert_eq!(
        (
            b.fw.port.eth_test().dispatch.counters.delivered,
            b.fw.port.eth_test().vport.counters.rx_broadcast_packets.load(Relaxed)
        ),
        (2, 1)
    );
}

/// Steering matches the IP header's fields even when its length field is wrong (rdma-core's raw IPv6 frames give
/// the IPv6 payload length 40 bytes too long): a rule on the IP version takes the frame; the checksum report does
/// not call it good.
#[test]
fn steering_matches_ipv6_fields_whatever_the_payload_length_says() {
    let mut b = EthBench::new();
    let rq = b.rq(4, 32);
    let tir = build::id(&b.ok(&build::tir_direct(rq)));
    let t = build::id(&b.ok(&build::flow_table(0, 4, None)));
    let g = build::id(&b.ok(&build::group(t, 0, 0, 1, |m| m[outer::TAGS_VERSION] = 0x1e)));
    b.ok(&build::fte(t, g, 0, &[To::Tir(tir)], |v| v[outer::TAGS_VERSION] = 6 << 1));
    b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, t));
    b.post_buf(rq, 0);
    let mut f = Vec::new();
    f.extend_from_slice(&OWN);
    f.extend_from_slice(&PEER);
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    let udp_len = 8 + 20;
    f.extend_from_slice(&((udp_len + 40) as u16).to_be_bytes());
    f.extend_from_slice(&[17, 64]);
    f.extend_from_slice(&[0xa0; 16]);
    f.extend_from_slice(&[0xb0; 16]);
    f.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 0, udp_len as u8, 0, 0]);
    f.extend_from_slice(&[7; 20]);
    b.fw.datapath().eth_receive(&f);
    assert_eq!(b.cqes(), 1, "delivered by the IPv6 rule");
    assert_eq!(b.cqe(0)[0x1c] & 0x06, 0, "no checksum reported good");
}

/// A frame of a lossless priority (PFC transmit) that finds its RQ without a WQE is not taken and not counted
/// (the link holds it: `fabric/ether/pfc_tx.rs`); offered again after a WQE is posted, it lands in it.
#[test]
fn lossless_no_wqe_leaves_the_frame_to_the_link_uncounted() {
    let mut r = rx();
    let f = udp4(OWN, Some(3 << 13 | 3), ([10, 0, 0, 1], [10, 0, 0, 2], 1, 2), 10, false);
    assert!(!r.b.fw.datapath().eth_receive_lossless(&f), "no WQE: not taken");
    assert_eq!(r.b.cqes(), 0);
    let c =
        r.b.fw.port.eth_test().dispatch.rq_counters.get(&r.rq).map(|c| (c.out_of_buffer, c.drops)).unwrap_or_default();
    assert_eq!(c, (0, 0), "no out_of_buffer, no drop");
    let a = r.b.post_buf(r.rq, 0);
    assert!(r.b.fw.datapath().eth_receive_lossless(&f), "a WQE: delivered");
    assert_eq!(r.b.cqes(), 1);
    // the tag is stripped into the CQE as usual
    assert_eq!(r.b.mem.get(a, f.len() - 4), [&f[..12], &f[16..]].concat());
    // a frame steering drops is taken (dropped there), not held
    assert!(r.b.fw.datapath().eth_receive_lossless(&udp4(
        FOREIGN,
        None,
        ([10, 0, 0, 1], [10, 0, 0, 2], 1, 2),
        10,
        false
    )));
}
