//! The SA's queries: ClassPortInfo, PathRecord (as rdma_cm and ipoib ask),
//! NodeRecord, PortInfoRecord, ServiceRecord, InformInfo, and the status
//! codes of refused requests.

use super::test_support::*;
use vrnic_wire::mad;
use vrnic_wire::sa::{self, DATA_OFFSET};
use vrnic_wire::sa_path::{self, mask as pm};
use vrnic_wire::{class_port_info, sa_inform, sa_node, sa_portinfo, sa_service};

fn path_req(src: u16, dst: u16) -> sa_path::Repr {
    sa_path::Repr {
        sgid: port(src).gid(),
        dgid: port(dst).gid(),
        pkey: 0xffff,
        numb_path: 1,
        reversible: true,
        ..sa_path::Repr::default()
    }
}

fn bytes_of(r: &sa_path::Repr) -> Vec<u8> {
    let mut b = vec![0u8; 64];
    r.emit(&mut sa_path::Packet::new_unchecked(&mut b[..]));
    b
}

fn path_of(m: &[u8]) -> sa_path::Repr {
    sa_path::Repr::parse(&sa_path::Packet::new_checked(&m[DATA_OFFSET..]).unwrap()).unwrap()
}

#[test]
fn rdma_cm_route_resolution_gets_one_path() {
    let mut sa = sa_with(3);
    // cma.c cma_query_ib_route: DGID | SGID | TRAFFIC_CLASS | PKEY |
    // NUMB_PATH | REVERSIBLE | SERVICE_ID, method Get.
    let m = pm::DGID | pm::SGID | pm::TRAFFIC_CLASS | pm::PKEY | pm::NUMB_PATH | pm::REVERSIBLE | pm::SERVICE_ID;
    let mut r = path_req(1, 3);
    r.service_id = 0x0000_0000_0106_4e21; // RDMA_PS_TCP port 20001
    r.traffic_class = 0x20;
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, m, &bytes_of(&r)), from(1)));
    let h = hdr(&out);
    assert_eq!((h.method, h.status, h.tid), (mad::METHOD_GET_RESP, 0, TID));
    assert_eq!(sa_hdr(&out).attr_offset, 8);
    assert_eq!(sa_hdr(&out).comp_mask, m, "ComponentMask echoed");
    assert!(!rmpp_of(&out).is_active(), "a Get answer is one plain MAD");
    let p = path_of(&out);
    assert_eq!((p.slid, p.dlid), (1, 3));
    assert_eq!(p.sgid, port(1).gid());
    assert_eq!(p.dgid, port(3).gid());
    assert_eq!(p.service_id, r.service_id);
    assert_eq!(p.traffic_class, 0x20);
    assert_eq!(p.pkey, 0xffff);
    assert_eq!((p.mtu_selector, p.mtu), (2, 4), "MTU exactly 2048");
    assert_eq!((p.rate_selector, p.rate), (2, 7), "40 Gb/s");
    assert_eq!((p.packet_life_time_selector, p.packet_life_time), (2, 0x12));
    assert_eq!(p.sl, 0);
    assert!(p.reversible);
    assert_eq!(p.hop_limit, 0, "no GRH inside the subnet");
    // The IPv4 variant (rping over IPoIB): QOS_CLASS from the ToS instead of
    // TRAFFIC_CLASS; the SA echoes it and does not filter on it.
    let m4 = m & !pm::TRAFFIC_CLASS | pm::QOS_CLASS;
    r.qos_class = 0x10;
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, m4, &bytes_of(&r)), from(1)));
    assert_eq!((hdr(&out).status, path_of(&out).qos_class, path_of(&out).dlid), (0, 0x10, 3));
}

#[test]
fn ipoib_path_query_and_selectors() {
    let mut sa = sa_with(2);
    // ipoib_main.c path_rec_start: DGID | SGID | NUMB_PATH | TRAFFIC_CLASS | PKEY.
    let m = pm::DGID | pm::SGID | pm::NUMB_PATH | pm::TRAFFIC_CLASS | pm::PKEY;
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, m, &bytes_of(&path_req(2, 1))), from(2)));
    assert_eq!(hdr(&out).status, 0);
    assert_eq!((path_of(&out).slid, path_of(&out).dlid), (2, 1));
    // MTU "less than 2048": the SA offers 1024.
    let mut r = path_req(1, 2);
    r.mtu_selector = 1;
    r.mtu = 4;
    let out = one(sa.handle(
        &request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, m | pm::MTU_SELECTOR | pm::MTU, &bytes_of(&r)),
        from(1),
    ));
    assert_eq!(path_of(&out).mtu, 3);
    // MTU "greater than 2048" cannot be had.
    r.mtu_selector = 0;
    let out = one(sa.handle(
        &request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, m | pm::MTU_SELECTOR | pm::MTU, &bytes_of(&r)),
        from(1),
    ));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_NO_RECORDS);
    // A P_Key neither port holds.
    let mut r = path_req(1, 2);
    r.pkey = 0x8001;
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, m, &bytes_of(&r)), from(1)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_NO_RECORDS);
    // A DGID not on the subnet.
    let mut r = path_req(1, 2);
    r.dgid[15] ^= 0x80;
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, m, &bytes_of(&r)), from(1)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_INVALID_GID);
    // By LIDs (saquery -p SLID DLID).
    let r = sa_path::Repr { slid: 2, dlid: 2, ..sa_path::Repr::default() };
    let out =
        one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, pm::SLID | pm::DLID, &bytes_of(&r)), from(1)));
    assert_eq!((path_of(&out).slid, path_of(&out).dlid, hdr(&out).status), (2, 2, 0), "a port's path to itself");
    // Get over many matches: ERR_TOO_MANY_RECORDS.
    let out =
        one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, pm::SGID, &bytes_of(&path_req(1, 2))), from(1)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_TOO_MANY_RECORDS);
}

#[test]
fn path_table_of_all_pairs() {
    let mut sa = sa_with(3);
    let first = sa.handle(&request(mad::METHOD_GET_TABLE, sa::ATTR_PATH_RECORD, 0, &[]), from(2));
    let (data, _) = receive_table(&mut sa, first, from(2), 64);
    assert_eq!(data.len(), 9 * 64, "3 x 3 paths, stride 64");
    let pairs: Vec<(u16, u16)> = data
        .chunks(64)
        .map(|c| {
            let p = sa_path::Repr::parse(&sa_path::Packet::new_checked(c).unwrap()).unwrap();
            (p.slid, p.dlid)
        })
        .collect();
    assert_eq!(pairs[0], (1, 1));
    assert_eq!(pairs[5], (2, 3));
    assert_eq!(pairs[8], (3, 3));
}

#[test]
fn class_port_info_says_send_only_full_member() {
    let mut sa = sa_with(1);
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_CLASS_PORT_INFO, 0, &[]), from(1)));
    assert_eq!(hdr(&out).status, 0);
    let c = class_port_info::Repr::parse(&class_port_info::Packet::new_checked(&out[DATA_OFFSET..]).unwrap()).unwrap();
    assert_eq!((c.base_version, c.class_version), (1, 2));
    assert!(c.cap_mask2 & class_port_info::SA_CAP_MASK2_SENDONLY_FULL_MEM != 0);
    assert_eq!(c.resp_time_value, 18);
}

#[test]
fn node_records_as_saquery_asks() {
    let mut sa = sa_with(3);
    sa.subnet.port_mut(2).unwrap().node_desc = "guest-b mlx5_0".into();
    // saquery (no arguments): GetTable NodeRecord, mask 0.
    let first = sa.handle(&request(mad::METHOD_GET_TABLE, sa::ATTR_NODE_RECORD, 0, &[]), from(3));
    assert_eq!(first.len(), 1, "three NodeRecords (3 x 112 bytes) start an RMPP transfer");
    assert_eq!(sa_hdr(&first[0]).attr_offset, 14);
    let (data, acks) = receive_table(&mut sa, first, from(3), 64);
    assert_eq!(acks, 2);
    assert_eq!(data.len(), 3 * 112);
    let n2 = sa_node::Repr::parse(&sa_node::Packet::new_checked(&data[112..]).unwrap()).unwrap();
    assert_eq!(n2.lid, 2);
    assert_eq!(n2.node_info.port_guid, guid(2));
    assert_eq!(n2.node_info.node_type, sa_node::NODE_TYPE_CA);
    assert!(n2.node_desc.starts_with(b"guest-b mlx5_0\0"));
    // saquery -N by LID: Get with mask LID.
    let q = sa_node::Repr { lid: 3, ..sa_node::Repr::default() };
    let mut b = vec![0u8; 108];
    q.emit(&mut sa_node::Packet::new_unchecked(&mut b[..]));
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_NODE_RECORD, sa_node::mask::LID, &b), from(1)));
    let n = sa_node::Repr::parse(&sa_node::Packet::new_checked(&out[DATA_OFFSET..]).unwrap()).unwrap();
    assert_eq!((hdr(&out).status, n.lid, n.node_info.node_guid), (0, 3, guid(3) & !0xf));
    // A LID that is not there: ERR_NO_RECORDS.
    let q = sa_node::Repr { lid: 9, ..sa_node::Repr::default() };
    q.emit(&mut sa_node::Packet::new_unchecked(&mut b[..]));
    let out = one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_NODE_RECORD, sa_node::mask::LID, &b), from(1)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_NO_RECORDS);
}

#[test]
fn port_info_records_report_the_sm() {
    let mut sa = sa_with(2);
    sa.subnet.port_mut(1).unwrap().cap_mask |= sa_portinfo::CAP_IS_SM;
    // saquery -s: PortInfoRecords whose CapabilityMask has IsSM.
    let q = sa_portinfo::Repr {
        port_info: sa_portinfo::PortInfo { cap_mask: sa_portinfo::CAP_IS_SM, ..Default::default() },
        ..Default::default()
    };
    let mut b = vec![0u8; 68];
    q.emit(&mut sa_portinfo::Packet::new_unchecked(&mut b[..]));
    let first =
        sa.handle(&request(mad::METHOD_GET_TABLE, sa::ATTR_PORT_INFO_RECORD, sa_portinfo::mask::CAP_MASK, &b), from(2));
    let (data, _) = receive_table(&mut sa, first, from(2), 64);
    assert_eq!(data.len(), 72, "one record, stride 72");
    let r = sa_portinfo::Repr::parse(&sa_portinfo::Packet::new_checked(&data[..]).unwrap()).unwrap();
    assert_eq!((r.lid, r.port_info.master_sm_lid, r.port_info.port_state), (1, 1, 4));
    assert_eq!(r.port_info.neighbor_mtu, 4);
}

#[test]
fn services_register_query_delete() {
    let mut sa = sa_with(2);
    let mut s = sa_service::Repr {
        service_id: 0x1000_0000_0000_00aa,
        service_gid: port(2).gid(),
        service_pkey: 0xffff,
        service_lease: sa_service::LEASE_INFINITE,
        ..Default::default()
    };
    s.service_name[..6].copy_from_slice(b"target");
    let mut b = vec![0u8; 176];
    s.emit(&mut sa_service::Packet::new_unchecked(&mut b[..]));
    let m = sa_service::mask::SERVICE_ID | sa_service::mask::SERVICE_GID | sa_service::mask::SERVICE_NAME;
    // Registering for another port's GID: denied.
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_SERVICE_RECORD, m, &b), from(1)));
    assert_eq!(hdr(&out).status, sa::STATUS_ERR_REQ_DENIED);
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_SERVICE_RECORD, m, &b), from(2)));
    assert_eq!((hdr(&out).method, hdr(&out).status), (mad::METHOD_GET_RESP, 0));
    let out =
        one(sa.handle(&request(mad::METHOD_GET, sa::ATTR_SERVICE_RECORD, sa_service::mask::SERVICE_NAME, &b), from(1)));
    let got = sa_service::Repr::parse(&sa_service::Packet::new_checked(&out[DATA_OFFSET..]).unwrap()).unwrap();
    assert_eq!(got, s);
    let out = one(
        sa.handle(&request(mad::METHOD_DELETE, sa::ATTR_SERVICE_RECORD, sa_service::mask::SERVICE_ID, &b), from(2))
    );
    assert_eq!((hdr(&out).method, hdr(&out).status), (mad::METHOD_DELETE_RESP, 0));
    assert!(sa.subnet.services.is_empty());
}

#[test]
fn inform_info_subscriptions_are_accepted() {
    let mut sa = sa_with(2);
    let r = sa_inform::Repr {
        is_generic: true,
        subscribe: true,
        trap_type: 0xffff,
        trap_number: 64,
        lid_range_begin: 0xffff,
        ..Default::default()
    };
    let mut b = vec![0u8; 36];
    r.emit(&mut sa_inform::Packet::new_unchecked(&mut b[..]));
    let out = one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_INFORM_INFO, 0, &b), from(2)));
    assert_eq!((hdr(&out).method, hdr(&out).status), (mad::METHOD_GET_RESP, 0));
    assert_eq!(&out[DATA_OFFSET..DATA_OFFSET + 36], &b[..]);
    assert_eq!(sa.subnet.subscriptions.len(), 1);
    assert_eq!(sa.subnet.subscriptions[0].gid, port(2).gid());
    b[23] = 0; // Subscribe = 0: unsubscribe
    one(sa.handle(&request(mad::METHOD_SET, sa::ATTR_INFORM_INFO, 0, &b), from(2)));
    assert!(sa.subnet.subscriptions.is_empty());
}

#[test]
fn refused_requests_get_status_codes() {
    let mut sa = sa_with(2);
    let st = |sa: &mut super::Sa, m: Vec<u8>| hdr(&one(sa.handle(&m, from(1)))).status;
    // Unknown attribute.
    assert_eq!(st(&mut sa, request(mad::METHOD_GET, 0x0020, 0, &[])), mad::STATUS_UNSUP_METH_ATTR);
    // Known attribute, wrong method.
    assert_eq!(st(&mut sa, request(mad::METHOD_SET, sa::ATTR_PATH_RECORD, 0, &[])), mad::STATUS_UNSUP_METH_ATTR);
    assert_eq!(
        st(&mut sa, request(mad::METHOD_GET_MULTI, sa::ATTR_MULTI_PATH_RECORD, 0, &[])),
        mad::STATUS_UNSUP_METH_ATTR
    );
    // Unknown method.
    assert_eq!(st(&mut sa, request(0x07, sa::ATTR_PATH_RECORD, 0, &[])), mad::STATUS_UNSUP_METHOD);
    // Class version 1.
    let mut m = request(mad::METHOD_GET, sa::ATTR_PATH_RECORD, 0, &[]);
    m[2] = 1;
    assert_eq!(st(&mut sa, m), mad::STATUS_BAD_VERSION);
    // A MAD cut short after its header: invalid field, header echoed.
    let m = request(mad::METHOD_GET, sa::ATTR_NODE_RECORD, 0, &[]);
    let out = one(sa.handle(&m[..40], from(1)));
    assert_eq!(
        (hdr(&out).status, hdr(&out).tid, hdr(&out).method),
        (mad::STATUS_INVALID_FIELD, TID, mad::METHOD_GET_RESP)
    );
    // Requests from a LID the SA does not know cannot change anything.
    let m = request(mad::METHOD_SET, sa::ATTR_INFORM_INFO, 0, &[]);
    assert_eq!(hdr(&one(sa.handle(&m, from(7)))).status, sa::STATUS_ERR_REQ_DENIED);
    // Not answered: shorter than a MAD header, other classes, responses.
    assert!(sa.handle(&m[..20], from(1)).is_empty());
    let mut other = m.clone();
    other[1] = mad::MGMT_CLASS_PERF_MGMT;
    assert!(sa.handle(&other, from(1)).is_empty());
    let mut resp = m.clone();
    resp[3] = mad::METHOD_GET_RESP;
    assert!(sa.handle(&resp, from(1)).is_empty());
    let s = sa.stats();
    assert_eq!(s.dropped, 3);
    assert_eq!(s.errors, 7);
}
