//! The vport's local loopback (`loopback.rs`): which of an SQ's frames this
//! port's own RQs receive, and which still go on the link.

use super::loopback::LbRoute;
use super::queue_state::{EthSq, Tis};
use super::test_support::build::{self, outer, To};
use super::test_support::{EthBench, DATA_BASE};
use crate::ifc;
use crate::ifc::create_tir_in::ctx as tirc;

/// rdma-core's raw traffic tests' `PacketConsts.DST_MAC` (a multicast MAC).
const RAW_DST: [u8; 6] = [0x01, 0x50, 0x56, 0x19, 0x20, 0xa7];
const BCAST: [u8; 6] = [0xff; 6];
const FOREIGN: [u8; 6] = [0x02, 0x99, 0x00, 0x00, 0x00, 0x01];
/// The sending SQ's transport domain (mlx5e's, or one user context's).
const SQ_TD: u32 = 5;
/// Another user context's transport domain.
const OTHER_TD: u32 = 6;

struct Lb {
    b: EthBench,
    rq: u32,
    sqn: u32,
}

/// An RQ behind a direct TIR in transport domain `td` with `self_lb_block`
/// `lb`, a root table taking the own MAC, broadcast and [`RAW_DST`] to it,
/// and an SQ whose TIS is in [`SQ_TD`].
fn lb(td: u32, lb: u8) -> Lb {
    let mut b = EthBench::new();
    let rq = b.rq(4, 32);
    let mut c = build::tir_direct(rq);
    tirc::transport_domain.set(&mut c, td as u64);
    tirc::self_lb_block.set(&mut c, lb as u64);
    let tir = build::id(&b.ok(&c));
    let t = build::id(&b.ok(&build::flow_table(0, 4, None)));
    let g = build::id(&b.ok(&build::group(t, 0, 2, 1, |m| m[outer::DMAC..outer::DMAC + 6].fill(0xff))));
    let own = b.fw.port.eth_test().vport.mac;
    for (k, mac) in [(0, own), (1, BCAST), (2, RAW_DST)] {
        b.ok(&build::fte(t, g, k, &[To::Tir(tir)], |v| v[outer::DMAC..outer::DMAC + 6].copy_from_slice(&mac)));
    }
    b.ok(&build::table_cmd(ifc::MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, 0, t));
    let q = &mut b.fw.port.eth_test().queues;
    let tisn = q.tises.alloc_with(|_| Tis { prio: 0, transport_domain: SQ_TD }).unwrap();
    let sqn = 0x77;
    q.sqs.insert(sqn, EthSq { cqn: 0, tisn, state: 1, min_wqe_inline_mode: 0, ctx: Vec::new() });
    b.post_buf(rq, 0);
    Lb { b, rq, sqn }
}

fn frame(dmac: [u8; 6]) -> Vec<u8> {
    let mut f = dmac.to_vec();
    f.extend_from_slice(&[0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8]);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.extend((0..46).map(|k| k as u8));
    f
}

impl Lb {
    fn send(&mut self, f: &[u8]) -> LbRoute {
        self.b.fw.eth_cx().expect("an Ethernet port").loopback(self.sqn, f)
    }

    fn received(&self) -> usize {
        self.b.cqes()
    }
}

const BOTH: LbRoute = LbRoute { looped: true, wire: true };
const WIRE: LbRoute = LbRoute { looped: false, wire: true };
const LOCAL: LbRoute = LbRoute { looped: true, wire: false };

#[test]
fn multicast_to_another_transport_domain_is_delivered_and_sent() {
    let mut l = lb(OTHER_TD, 0);
    let f = frame(RAW_DST);
    assert_eq!(l.send(&f), BOTH);
    assert_eq!(l.received(), 1);
    assert_eq!(l.b.mem.get(DATA_BASE, f.len()), f);
    assert_eq!(l.b.fw.port.eth_test().dispatch.rq_counters[&l.rq].packets, 1);
}

#[test]
fn broadcast_is_delivered_across_transport_domains_too() {
    let mut l = lb(OTHER_TD, 0);
    assert_eq!(l.send(&frame(BCAST)), BOTH);
    assert_eq!(l.received(), 1);
}

#[test]
fn own_transport_domain_does_not_receive_its_multicast_unless_its_tir_allows() {
    // mlx5e: TIS and TIRs in one domain, self_lb_block 0: never its own frames.
    let mut l = lb(SQ_TD, 0);
    let drops = l.b.fw.port.eth_test().steering.drops;
    assert_eq!(l.send(&frame(BCAST)), WIRE);
    assert_eq!(l.send(&frame(RAW_DST)), WIRE);
    assert_eq!(l.received(), 0);
    assert_eq!(l.b.fw.port.eth_test().steering.drops, drops, "no receive-side drop counted");
    // The unicast bit does not allow multicast.
    let mut l = lb(SQ_TD, 1);
    assert_eq!(l.send(&frame(RAW_DST)), WIRE);
    assert_eq!(l.received(), 0);
    // MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC.
    let mut l = lb(SQ_TD, 2);
    assert_eq!(l.send(&frame(RAW_DST)), BOTH);
    assert_eq!(l.received(), 1);
}

#[test]
fn vport_disable_mc_local_lb_stops_multicast_between_domains() {
    let mut l = lb(OTHER_TD, 0);
    l.b.fw.port.eth_test().vport.disable_mc_local_lb = true;
    assert_eq!(l.send(&frame(RAW_DST)), WIRE);
    assert_eq!(l.received(), 0);
    l.b.fw.port.eth_test().vport.disable_mc_local_lb = false;
    l.b.fw.port.eth_test().vport.disable_uc_local_lb = true;
    assert_eq!(l.send(&frame(RAW_DST)), BOTH, "the unicast bit does not stop multicast");
}

#[test]
fn unicast_to_the_own_mac_stays_local_when_a_tir_takes_it() {
    let own = lb(OTHER_TD, 0).b.fw.port.eth_test().vport.mac;
    let mut l = lb(OTHER_TD, 0);
    assert_eq!(l.send(&frame(own)), LOCAL);
    assert_eq!(l.received(), 1);
    // Between domains the vport's unicast bit decides; then it goes out.
    let mut l = lb(OTHER_TD, 0);
    l.b.fw.port.eth_test().vport.disable_uc_local_lb = true;
    assert_eq!(l.send(&frame(own)), WIRE);
    assert_eq!(l.received(), 0);
    // mlx5e's own unicast: out, not back to itself ...
    let mut l = lb(SQ_TD, 0);
    assert_eq!(l.send(&frame(own)), WIRE);
    assert_eq!(l.received(), 0);
    // ... unless its loopback self-test set the unicast bit.
    let mut l = lb(SQ_TD, 1);
    assert_eq!(l.send(&frame(own)), LOCAL);
    assert_eq!(l.received(), 1);
}

#[test]
fn unicast_to_a_foreign_mac_only_goes_out() {
    let mut l = lb(OTHER_TD, 3);
    assert_eq!(l.send(&frame(FOREIGN)), WIRE);
    assert_eq!(l.received(), 0);
    assert_eq!(l.b.fw.port.eth_test().steering.drops.miss, 0, "not looked up");
}

#[test]
fn short_or_unparsable_frames_are_not_looped_back() {
    let mut l = lb(OTHER_TD, 0);
    assert_eq!(l.send(&RAW_DST[..4]), WIRE);
    assert_eq!(l.send(&[]), WIRE);
    assert_eq!(l.received(), 0);
}
