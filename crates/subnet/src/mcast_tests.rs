//! MCMemberRecord join, create, leave and query through the SA, as ipoib
//! and rdma_cm's multicast joins send them.

use super::test_support::*;
use vrnic_wire::mad;
use vrnic_wire::sa::{self, DATA_OFFSET};
use vrnic_wire::sa_mcmember::{self as mc, ipoib_broadcast_mgid, mask as mm};

fn bytes(r: &mc::Repr) -> Vec<u8> {
    let mut b = vec![0u8; 52];
    r.emit(&mut mc::Packet::new_unchecked(&mut b[..]));
    b
}

fn rec(m: &[u8]) -> mc::Repr {
    mc::Repr::parse(&mc::Packet::new_checked(&m[DATA_OFFSET..]).unwrap()).unwrap()
}

/// ipoib's broadcast join (ipoib_multicast.c ipoib_mcast_join): MGID |
/// PORT_GID | PKEY | JOIN_STATE, FullMember, no create parameters.
fn broadcast_join(lid: u16) -> (Vec<u8>, u64) {
    let r = mc::Repr {
        mgid: ipoib_broadcast_mgid(0xffff),
        port_gid: port(lid).gid(),
        pkey: 0xffff,
        join_state: mc::JOIN_FULL_MEMBER,
        ..mc::Repr::default()
    };
    (bytes(&r), mm::MGID | mm::PORT_GID | mm::PKEY | mm::JOIN_STATE)
}

#[test]
fn ipoib_joins_the_pre_created_broadcast_group() {
    let mut sa = sa_with(3);
    for lid in 1..=3 {
        let (b, m) = broadcast_join(lid);
        let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &b), from(lid)));
        let h = hdr(&out);
        assert_eq!((h.method, h.status), (mad::METHOD_GET_RESP, 0));
        assert_eq!(sa_hdr(&out).attr_offset, 7);
        let r = rec(&out);
        assert_eq!(r.mgid, ipoib_broadcast_mgid(0xffff));
        assert_eq!(r.port_gid, port(lid).gid());
        assert_eq!(r.qkey, 0x0000_0b1b);
        assert_eq!(r.mlid, 0xc000);
        assert_eq!((r.mtu_selector, r.mtu), (2, 4), "2048, what ipoib sizes its UD MTU from");
        assert_eq!(r.rate, 7);
        assert_eq!(r.pkey, 0xffff);
        assert_eq!(r.scope, 2);
        assert_eq!(r.join_state, mc::JOIN_FULL_MEMBER);
    }
    let g = sa.subnet.groups.get(&ipoib_broadcast_mgid(0xffff)).unwrap();
    assert_eq!(g.members.len(), 3);
    // A repeated join is idempotent.
    let (b, m) = broadcast_join(2);
    assert_eq!(hdr(&one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &b), from(2)))).status, 0);
    assert_eq!(sa.subnet.groups.get(&ipoib_broadcast_mgid(0xffff)).unwrap().members.len(), 3);
}

#[test]
fn ipoib_creates_a_group_with_the_broadcast_parameters() {
    let mut sa = sa_with(2);
    // ipoib's join of an IPv6 solicited-node group: create mask.
    let mgid = [0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0xff, 0x00, 0x00, 0x01];
    let r = mc::Repr {
        mgid,
        port_gid: port(1).gid(),
        qkey: 0x0b1b,
        pkey: 0xffff,
        mtu_selector: 2,
        mtu: 4,
        rate_selector: 2,
        rate: 7,
        join_state: mc::JOIN_FULL_MEMBER,
        ..mc::Repr::default()
    };
    let m = mm::MGID
        | mm::PORT_GID
        | mm::PKEY
        | mm::JOIN_STATE
        | mm::QKEY
        | mm::MTU_SELECTOR
        | mm::MTU
        | mm::TRAFFIC_CLASS
        | mm::RATE_SELECTOR
        | mm::RATE
        | mm::SL
        | mm::FLOW_LABEL
        | mm::HOP_LIMIT;
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &bytes(&r)), from(1)));
    assert_eq!(hdr(&out).status, 0);
    let got = rec(&out);
    assert_eq!(got.mlid, 0xc001, "the next MLID after the broadcast group's");
    assert_eq!((got.qkey, got.mtu, got.rate), (0x0b1b, 4, 7));
    // The second port joins as SendOnlyFullMember (ipoib's send-only path).
    let r2 = mc::Repr { port_gid: port(2).gid(), join_state: mc::JOIN_SEND_ONLY_FULL_MEMBER, ..r };
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &bytes(&r2)), from(2)));
    assert_eq!((hdr(&out).status, rec(&out).mlid), (0, 0xc001));
    // A join with another Q_Key does not match the group.
    let bad = mc::Repr { qkey: 0x1234, ..r2 };
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &bytes(&bad)), from(2)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_INVALID);
    // Both leave: the group is gone (the broadcast group stays).
    for (lid, js) in [(1, mc::JOIN_FULL_MEMBER), (2, mc::JOIN_SEND_ONLY_FULL_MEMBER)] {
        let l = mc::Repr { port_gid: port(lid).gid(), join_state: js, ..r };
        let out = one(sa.handle(
            &request(
                mad::METHOD_DELETE,
                sa::ATTR_MCMEMBER_RECORD,
                mm::MGID | mm::PORT_GID | mm::JOIN_STATE,
                &bytes(&l),
            ),
            from(lid),
        ));
        assert_eq!((hdr(&out).method, hdr(&out).status), (mad::METHOD_DELETE_RESP, 0));
    }
    assert!(sa.subnet.groups.get(&mgid).is_none());
    assert_eq!(sa.subnet.groups.len(), 1);
    // Leaving again: not a member.
    let out = one(sa.handle(
        &request(mad::METHOD_DELETE, sa::ATTR_MCMEMBER_RECORD, mm::MGID | mm::PORT_GID | mm::JOIN_STATE, &bytes(&r)),
        from(1),
    ));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_INVALID);
}

#[test]
fn joins_are_checked() {
    let mut sa = sa_with(3);
    // Joining on behalf of another port: denied.
    let (b, m) = broadcast_join(2);
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &b), from(3)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_DENIED);
    // A PortGID not on the subnet.
    let mut r = mc::Repr::parse(&mc::Packet::new_checked(&b[..]).unwrap()).unwrap();
    r.port_gid[15] ^= 0x40;
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &bytes(&r)), from(2)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_INVALID_GID);
    // Creating without the required components.
    let r = mc::Repr {
        mgid: [0xff, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9],
        port_gid: port(1).gid(),
        join_state: 1,
        ..Default::default()
    };
    let out = one(sa.handle(
        &request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, mm::MGID | mm::PORT_GID | mm::JOIN_STATE, &bytes(&r)),
        from(1),
    ));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_INSUFFICIENT_COMPONENTS);
    // JoinState 0.
    let (b, m) = broadcast_join(1);
    let r = mc::Repr { join_state: 0, ..mc::Repr::parse(&mc::Packet::new_checked(&b[..]).unwrap()).unwrap() };
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &bytes(&r)), from(1)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_INVALID);
    // A non-multicast MGID.
    let (mut b, m) = broadcast_join(1);
    b[0] = 0xfe;
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &b), from(1)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_INVALID);
}

#[test]
fn sa_assigned_mgid_and_member_queries() {
    let mut sa = sa_with(2);
    // rdma_cm (multicast.c) joins with a zero MGID to have the SA assign one.
    let r = mc::Repr { port_gid: port(1).gid(), qkey: 0x1111_2222, pkey: 0xffff, join_state: 1, ..Default::default() };
    let m =
        mm::MGID | mm::PORT_GID | mm::JOIN_STATE | mm::QKEY | mm::TRAFFIC_CLASS | mm::PKEY | mm::FLOW_LABEL | mm::SL;
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &bytes(&r)), from(1)));
    assert_eq!(hdr(&out).status, 0);
    let g = rec(&out);
    assert_eq!(&g.mgid[..6], &[0xff, 0x12, 0xa0, 0x1b, 0xff, 0xff], "signature 0xA01B, link-local, P_Key");
    let (b, jm) = broadcast_join(2);
    one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, jm, &b), from(2)));
    // saquery -m: GetTable of all MCMemberRecords: one per member.
    let first = sa.handle(&request(mad::METHOD_GET_TABLE, sa::ATTR_MCMEMBER_RECORD, 0, &[]), from(2));
    let (data, _) = receive_table(&mut sa, first, from(2), 64);
    assert_eq!(data.len(), 2 * 56);
    // Get by MLID.
    let q = mc::Repr { mlid: 0xc000, ..Default::default() };
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_MCMEMBER_RECORD, mm::MLID, &bytes(&q)), from(1)));
    assert_eq!((hdr(&out).status, rec(&out).port_gid), (0, port(2).gid()));
    // A port that leaves the subnet leaves its groups.
    sa.subnet.remove_port(1);
    assert!(sa.subnet.groups.get(&g.mgid).is_none());
}

#[test]
fn member_queries_are_bounded() {
    let mut sa = sa_with(3);
    for lid in 1..=3 {
        let (b, m) = broadcast_join(lid);
        one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_MCMEMBER_RECORD, m, &b), from(lid)));
    }
    let all = mc::Repr::default();
    assert_eq!(sa.subnet.groups.query(&all, 0, 3).map(|v| v.len()), Ok(3));
    assert_eq!(sa.subnet.groups.query(&all, 0, 2), Err(super::SaError::NoResources));
}
