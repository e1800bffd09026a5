//! QP0 past the port's own SMA (`smi_route.rs`), between two firmwares
//! (LIDs 1 and 2, each with its copy of the modeled switch; LID 1 runs the
//! SM): directed-route SMPs from byte level, the switch's answers, SMInfo.

use std::sync::atomic::Ordering::Relaxed;

use super::mad_wire_tests::{be32, send_mad, special_pair};
use crate::test_support::*;
use vrnic_subnet::sm_info::SmInfoAgent;
use vrnic_subnet::switch::{Switch, SwitchConfig};
use vrnic_wire::smp::ATTR_NODE_INFO;
use vrnic_wire::smp_sminfo::ATTR_SM_INFO;

const QP0_ST: u64 = 7;

fn pair() -> (std::sync::Arc<vrnic_fabric::InProcNet>, Side, Side) {
    let (net, mut a, mut b) = special_pair(QP0_ST);
    for s in [&mut a, &mut b] {
        s.t.fw.ib.switch = Some(Box::new(Switch::new([1, 2], 1, SwitchConfig::default())));
    }
    a.t.fw.ib.sm_info = Some(SmInfoAgent::new(0x0002_c903_00a0_0101, 0));
    (net, a, b)
}

/// A SubnGet(attr) SMP; `path` non-empty: directed route as the sending
/// kernel posts it (hop pointer already 1).
fn smp(attr: u16, path: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    (m[0], m[1], m[2], m[3]) = (1, if path.is_empty() { 0x01 } else { 0x81 }, 1, 0x01);
    m[8..16].copy_from_slice(&0x77u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    if !path.is_empty() {
        (m[6], m[7]) = (1, (path.len() - 1) as u8);
        m[32..36].fill(0xff);
        m[128..128 + path.len()].copy_from_slice(path);
    }
    m
}

/// The MAD in `s`'s receive buffer and the source LID of its CQE (the
/// first CQE; the second where `s` sent first).
fn received(s: &Side) -> (Vec<u8>, u16) {
    received_at(s, 0)
}

fn received_at(s: &Side, cqe: u64) -> (Vec<u8>, u16) {
    let c = s.t.mem.get(s.cq_buf + 64 * cqe, 64);
    (s.t.mem.get(DATA + 40, 256), u16::from_be_bytes([c[0x16], c[0x17]]))
}

#[test]
fn one_hop_reaches_the_switch_and_comes_back() {
    let (_net, mut a, _b) = pair();
    send_mad(&mut a, 0xffff, 0, 0, &smp(ATTR_NODE_INFO, &[0, 1]));
    let (m, slid) = received(&a);
    assert_eq!((m[3], m[4] & 0x80, m[6]), (0x81, 0x80, 1), "GetResp, D, hop pointer 1");
    assert_eq!((m[64 + 2], m[64 + 3], m[64 + 36]), (2, 2, 1), "a 2-port switch, entered on port 1");
    assert_eq!(slid, 0xffff, "permissive SLID");
    assert_eq!(a.t.fw.ib.counters.dr_smp_routed.load(Relaxed), 1);
}

#[test]
fn two_hops_reach_the_peer_ca_and_its_answer_returns() {
    let (net, mut a, mut b) = pair();
    // LID 1 asks the CA at switch port 2 (LID 2).
    send_mad(&mut a, 0xffff, 0, 0, &smp(ATTR_NODE_INFO, &[0, 1, 2]));
    pump(&net, &mut a, &mut b);
    let (m, slid) = received(&b);
    assert_eq!((m[3], m[4], m[6], m[7]), (0x01, 0, 2, 2), "a Get with hop pointer = hop count");
    assert_eq!(m[192 + 1], 1, "ReturnPath[1]: the requester's switch port");
    assert_eq!(slid, 1);
    assert_eq!(a.t.mem.get(DATA + 40, 256), vec![0u8; 256], "nothing back yet");
    // LID 2's kernel answers as smi.c does (D set, hop pointer back to the
    // hop count, ReturnPath[2] its port) to the CQE's source LID.
    let mut resp = m.clone();
    (resp[3], resp[4]) = (0x81, 0x80);
    resp[192 + 2] = 1;
    resp[64] = 0xab;
    send_mad(&mut b, slid, 0, 0, &resp);
    pump(&net, &mut a, &mut b);
    let (back, _) = received(&a);
    assert_eq!((back[3], back[6], back[64]), (0x81, 1, 0xab), "at the requester with hop pointer 1");
    assert_eq!(a.t.fw.ib.counters.dr_smp_routed.load(Relaxed), 1);
    assert_eq!(b.t.fw.ib.counters.dr_smp_routed.load(Relaxed), 1);
}

#[test]
fn hostile_directed_routes_are_counted_drops() {
    let no_port = smp(ATTR_NODE_INFO, &[0, 1, 9]);
    let mut too_far = no_port.clone();
    too_far[7] = 64;
    let mut no_ptr = smp(ATTR_NODE_INFO, &[0, 1, 2]);
    no_ptr[6] = 0;
    for bad in [no_port, too_far, no_ptr] {
        let (net, mut a, mut b) = pair();
        send_mad(&mut a, 0xffff, 0, 0, &bad);
        pump(&net, &mut a, &mut b);
        assert_eq!(a.t.fw.ib.counters.dr_smp_drops.load(Relaxed), 1);
        assert_eq!(a.t.fw.ib.counters.mad_wire_xmit.load(Relaxed), 0, "nothing left the port");
        assert_eq!(b.t.fw.ib.counters.mad_wire_rcv.load(Relaxed), 0);
        assert_eq!(a.t.mem.get(DATA + 40, 256), vec![0u8; 256]);
    }
}

#[test]
fn lid_routed_smps_to_the_switch_lid_are_answered_by_it() {
    let (_net, mut a, _b) = pair();
    send_mad(&mut a, 3, 0, 0, &smp(ATTR_NODE_INFO, &[]));
    let (m, slid) = received(&a);
    assert_eq!((m[3], m[4], m[64 + 2]), (0x81, 0, 2), "GetResp from a switch");
    assert_eq!(slid, 3, "from the switch's LID");
    assert_eq!(a.t.fw.ib.counters.switch_smp_answered.load(Relaxed), 1);
}

#[test]
fn sminfo_is_answered_by_the_sm_port() {
    let (net, mut a, mut b) = pair();
    send_mad(&mut b, 1, 0, 0, &smp(ATTR_SM_INFO, &[]));
    pump(&net, &mut a, &mut b);
    assert_eq!(a.t.mem.get(DATA + 40, 256), vec![0u8; 256], "not the SM guest's");
    let (m, slid) = received_at(&b, 1);
    assert_eq!((m[3], m[4], m[5], slid), (0x81, 0, 0, 1));
    assert_eq!(&m[64..72], &0x0002_c903_00a0_0101u64.to_be_bytes(), "the SM's port GUID");
    assert_eq!((be32(&m, 64 + 16), m[64 + 20]), (1, 0x03), "ActCount 1, priority 0, MASTER");
    // The SM's own guest asks locally.
    send_mad(&mut a, 1, 0, 0, &smp(ATTR_SM_INFO, &[]));
    let (l, _) = received(&a);
    assert_eq!((l[3], be32(&l, 64 + 16)), (0x81, 2));
    assert_eq!(a.t.fw.ib.counters.sm_info_answered.load(Relaxed), 2);
}
