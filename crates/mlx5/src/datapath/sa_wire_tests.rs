//! The SA on the SM's port (`sa_wire.rs`): a QP1 SubnAdm MAD from another
//! port over the in-process fabric, or from the own guest, is answered by
//! the SA and the answer lands in the requester's QP1 receive queue; other
//! ports deliver SubnAdm MADs to their guest as before.

use std::sync::atomic::Ordering::Relaxed;

use super::mad_wire_tests::{be32, send_mad, special_pair, QP1_ST};
use crate::datapath::cqe::op;
use crate::test_support::*;
use vrnic_subnet::test_support::{request, sa_with, TID};
use vrnic_wire::mad::{METHOD_GET, METHOD_GET_RESP, MGMT_CLASS_SUBN_ADM};
use vrnic_wire::sa::{ATTR_NODE_RECORD, DATA_OFFSET};
use vrnic_wire::sa_node;

/// A SubnAdmGet(NodeRecord) of `lid`.
fn node_record_get(lid: u16) -> Vec<u8> {
    let mut rec = [0u8; 108];
    rec[..2].copy_from_slice(&lid.to_be_bytes());
    request(METHOD_GET, ATTR_NODE_RECORD, sa_node::mask::LID, &rec)
}

/// Checks the GetResp in `s`'s QP1 receive buffer: NodeRecord of `lid`,
/// from source LID `slid` QP 1, completed in CQE `cqe`.
fn assert_node_record_answer(s: &Side, lid: u16, slid: u16, cqe: u64) {
    let m = s.t.mem.get(DATA + 40, 256);
    assert_eq!((m[1], m[3]), (MGMT_CLASS_SUBN_ADM, METHOD_GET_RESP), "a SubnAdm GetResp");
    assert_eq!(u16::from_be_bytes([m[4], m[5]]), 0, "status");
    assert_eq!(u64::from_be_bytes(m[8..16].try_into().unwrap()), TID, "the request's TID");
    assert_eq!(u16::from_be_bytes([m[DATA_OFFSET], m[DATA_OFFSET + 1]]), lid, "the record's LID");
    let c = s.t.mem.get(s.cq_buf + 64 * cqe, 64);
    assert_eq!(c[0x3f] >> 4, op::RESP_SEND);
    assert_eq!(be32(&c, 0x18) & 0xff_ffff, 1, "from QP1");
    assert_eq!(u16::from_be_bytes([c[0x16], c[0x17]]), slid, "from the SA's LID");
}

#[test]
fn sa_answers_a_remote_port_over_the_fabric() {
    let (net, mut a, mut b) = special_pair(QP1_ST);
    a.t.fw.ib.sa = Some(Box::new(sa_with(2)));
    send_mad(&mut b, 1, 1, 0x8001_0000, &node_record_get(2));
    pump(&net, &mut a, &mut b);
    assert_eq!(a.t.mem.get(DATA, 296), vec![0u8; 296], "the SA's guest does not see the request");
    // CQE 0 is b's send.
    assert_node_record_answer(&b, 2, 1, 1);
    let st = a.t.fw.sa_stats().unwrap();
    assert_eq!((st.requests, st.dropped, st.errors), (1, 0, 0));
    let (ca, cb) = (&a.t.fw.ib.counters, &b.t.fw.ib.counters);
    assert_eq!((ca.mad_wire_rcv.load(Relaxed), ca.mad_wire_xmit.load(Relaxed)), (1, 1));
    assert_eq!((cb.mad_wire_xmit.load(Relaxed), cb.mad_wire_rcv.load(Relaxed)), (1, 1));
}

#[test]
fn sa_answers_its_own_guest_locally() {
    let (net, mut a, mut b) = special_pair(QP1_ST);
    a.t.fw.ib.sa = Some(Box::new(sa_with(2)));
    send_mad(&mut a, 1, 1, 0x8001_0000, &node_record_get(1));
    assert_node_record_answer(&a, 1, 1, 0);
    pump(&net, &mut a, &mut b);
    assert_eq!(b.t.fw.ib.counters.mad_wire_rcv.load(Relaxed), 0, "nothing on the fabric");
    assert_eq!(a.t.fw.sa_stats().unwrap().requests, 1);
}

#[test]
fn sa_refuses_a_bad_request_with_a_status() {
    let (net, mut a, mut b) = special_pair(QP1_ST);
    a.t.fw.ib.sa = Some(Box::new(sa_with(2)));
    let mut m = node_record_get(7);
    m[2] = 9; // class version
    send_mad(&mut b, 1, 1, 0x8001_0000, &m);
    pump(&net, &mut a, &mut b);
    let r = b.t.mem.get(DATA + 40, 256);
    assert_eq!(r[3], METHOD_GET_RESP);
    assert_ne!(u16::from_be_bytes([r[4], r[5]]), 0, "an error status");
    assert_eq!(a.t.fw.sa_stats().unwrap().errors, 1);
}

#[test]
fn without_an_sa_subnadm_mads_reach_the_guest() {
    let (net, mut a, mut b) = special_pair(QP1_ST);
    let m = node_record_get(2);
    send_mad(&mut b, 1, 1, 0x8001_0000, &m);
    pump(&net, &mut a, &mut b);
    assert_eq!(a.t.mem.get(DATA + 40, 256), m);
    assert!(a.t.fw.sa_stats().is_none());
    assert_eq!(a.t.fw.sa_poll(5), None);
}

#[test]
fn sa_timer_runs_once_a_second() {
    let (_net, mut a, _b) = special_pair(QP1_ST);
    a.t.fw.ib.sa = Some(Box::new(sa_with(1)));
    assert_eq!(a.t.fw.sa_poll(10), Some(10 + super::super::datapath::sa_wire::SA_TICK_NS));
    assert_eq!(a.t.fw.sa_poll(20), Some(10 + super::super::datapath::sa_wire::SA_TICK_NS));
}
