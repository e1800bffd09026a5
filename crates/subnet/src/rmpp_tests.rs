//! RMPP: GetTable answers larger than one MAD, driven by a model of the
//! kernel's receiver, and the ACK/STOP/ABORT cases of mad_rmpp.c.

use super::test_support::*;
use vrnic_wire::mad::{self, MAD_SIZE};
use vrnic_wire::rmpp::{self, Repr as RmppHeader};
use vrnic_wire::sa;

fn node_table(n: u16, window: u32) -> (Vec<u8>, u32) {
    let mut sa = sa_with(n);
    let first = sa.handle(&request(mad::METHOD_GET_TABLE, sa::ATTR_NODE_RECORD, 0, &[]), from(1));
    let r = receive_table(&mut sa, first, from(1), window);
    assert_eq!(sa.transfers_in_flight(), 0, "finished transfers are forgotten");
    r
}

#[test]
fn tables_of_every_size_reassemble() {
    // 0 records: one segment with the SA header alone (PayloadLength 20).
    let mut sa = sa_with(1);
    let q = vrnic_wire::sa_node::Repr { lid: 5, ..Default::default() };
    let mut b = vec![0u8; 108];
    q.emit(&mut vrnic_wire::sa_node::Packet::new_unchecked(&mut b[..]));
    let out = one(sa.handle(&request(mad::METHOD_GET_TABLE, sa::ATTR_NODE_RECORD, 1, &b), from(1)));
    let r = rmpp_of(&out);
    assert_eq!(r.flags, rmpp::FLAG_ACTIVE | rmpp::FLAG_FIRST | rmpp::FLAG_LAST);
    assert_eq!((r.seg_num, r.paylen_newwin, hdr(&out).status), (1, 20, 0), "an empty table is not an error");
    // 1..=40 NodeRecords (112 bytes each): up to 23 segments.
    for n in [1u16, 2, 7, 40] {
        let (data, _) = node_table(n, 64);
        assert_eq!(data.len(), n as usize * 112, "{n} records");
        for (i, c) in data.chunks(112).enumerate() {
            assert_eq!(u16::from_be_bytes([c[0], c[1]]), i as u16 + 1);
        }
    }
}

#[test]
fn small_windows_need_more_acks() {
    // 40 records = 4480 bytes = 23 segments; window 4: ACKs after 1, 5, 9,
    // …, 21 and the last.
    let (data, acks) = node_table(40, 4);
    assert_eq!(data.len(), 40 * 112);
    assert_eq!(acks, 7);
    let (_, acks) = node_table(40, 64);
    assert_eq!(acks, 2, "segment 1, then the last");
}

fn ack(first: &[u8], seg: u32, newwin: u32) -> Vec<u8> {
    let mut a = first.to_vec();
    a[3] ^= mad::METHOD_RESP;
    RmppHeader::ack(seg, newwin).emit(&mut rmpp::Packet::new_unchecked(&mut a[24..]));
    a
}

#[test]
fn bad_acks_abort_like_ib_mad() {
    let mut sa = sa_with(40);
    let start =
        |sa: &mut super::Sa| one(sa.handle(&request(mad::METHOD_GET_TABLE, sa::ATTR_NODE_RECORD, 0, &[]), from(2)));
    let first = start(&mut sa);
    assert_eq!(sa.transfers_in_flight(), 1);
    // NewWindowLast below the segment: W2S.
    let out = one(sa.handle(&ack(&first, 3, 2), from(2)));
    let r = rmpp_of(&out);
    assert_eq!((r.rmpp_type, r.status), (rmpp::TYPE_ABORT, rmpp::STATUS_W2S));
    assert_eq!(hdr(&out).method, mad::METHOD_GET_TABLE_RESP);
    assert_eq!(sa.transfers_in_flight(), 0);
    // ACK of a segment never sent: S2B.
    let first = start(&mut sa);
    let out = one(sa.handle(&ack(&first, 5, 10), from(2)));
    assert_eq!(rmpp_of(&out).status, rmpp::STATUS_S2B);
    // A non-zero status in an ACK: BAD_STATUS.
    let first = start(&mut sa);
    let mut a = ack(&first, 1, 2);
    a[27] = 5;
    assert_eq!(rmpp_of(&one(sa.handle(&a, from(2)))).status, rmpp::STATUS_BAD_STATUS);
    // An unknown RMPP type, and another RMPP version.
    let mut a = ack(&first, 1, 2);
    a[25] = 9;
    assert_eq!(rmpp_of(&one(sa.handle(&a, from(2)))).status, rmpp::STATUS_BADT);
    a[24] = 2;
    assert_eq!(rmpp_of(&one(sa.handle(&a, from(2)))).status, rmpp::STATUS_UNV);
    // An ACK from someone else, or for another TID, is ignored.
    let first = start(&mut sa);
    assert!(sa.handle(&ack(&first, 1, 65), from(3)).is_empty());
    let mut other = ack(&first, 1, 65);
    other[15] ^= 1;
    assert!(sa.handle(&other, from(2)).is_empty());
    // A good ACK releases the window; the same ACK again is old.
    assert_eq!(sa.handle(&ack(&first, 1, 3), from(2)).len(), 2);
    assert!(sa.handle(&ack(&first, 1, 3), from(2)).is_empty());
    // STOP ends the transfer.
    let mut stop = ack(&first, 3, 3);
    stop[25] = rmpp::TYPE_STOP;
    stop[27] = rmpp::STATUS_RESX;
    assert!(sa.handle(&stop, from(2)).is_empty());
    assert_eq!(sa.transfers_in_flight(), 0);
    // A multi-segment request is refused with an ABORT.
    let mut multi = request(mad::METHOD_GET_TABLE, sa::ATTR_NODE_RECORD, 0, &[]);
    RmppHeader::data(1, 2, 0).emit(&mut rmpp::Packet::new_unchecked(&mut multi[24..]));
    assert_eq!(rmpp_of(&one(sa.handle(&multi, from(2)))).rmpp_type, rmpp::TYPE_ABORT);
    // A single-segment RMPP request is an ordinary request.
    RmppHeader::data(1, 1, 200).emit(&mut rmpp::Packet::new_unchecked(&mut multi[24..]));
    assert_eq!(hdr(&one(sa.handle(&multi, from(2)))).method, mad::METHOD_GET_TABLE_RESP);
}

#[test]
fn stalled_windows_are_resent_then_dropped() {
    let mut sa = sa_with(40);
    let first = one(sa.handle(&request(mad::METHOD_GET_TABLE, sa::ATTR_NODE_RECORD, 0, &[]), from(2)));
    assert_eq!(sa.handle(&ack(&first, 1, 4), from(2)).len(), 3);
    assert!(sa.tick().is_empty(), "one quiet tick is patience");
    let again = sa.tick();
    let segs: Vec<u32> = again.iter().map(|(_, m)| rmpp_of(m).seg_num).collect();
    assert_eq!(segs, vec![2, 3, 4], "the unacknowledged window");
    assert!(again.iter().all(|(d, m)| *d == from(2) && m.len() == MAD_SIZE));
    for _ in 0..super::rmpp::GIVE_UP_TICKS {
        sa.tick();
    }
    assert_eq!(sa.transfers_in_flight(), 0);
}

#[test]
fn transfers_in_flight_are_bounded() {
    let mut sa = sa_with(40);
    for q in 0..100u16 {
        let mut m = request(mad::METHOD_GET_TABLE, sa::ATTR_NODE_RECORD, 0, &[]);
        m[14..16].copy_from_slice(&q.to_be_bytes());
        one(sa.handle(&m, from(2)));
    }
    assert_eq!(sa.transfers_in_flight(), super::rmpp::MAX_TRANSFERS);
}
