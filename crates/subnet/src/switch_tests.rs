//! The modeled switch from byte-level SMPs: what ibnetdiscover's directed
//! routes look like when they reach it (after the sending CA's
//! `smi_handle_dr_smp_send`), its SMA's answers, refusals, and an SM
//! configuring it as OpenSM does.

use super::switch::{DrDrop, Switch, SwitchConfig, SwitchStart, NO_PORT};
use vrnic_wire::smp::{
    ATTR_LINEAR_FWD_TABLE, ATTR_MCAST_FWD_TABLE, ATTR_MLNX_EXT_PORT_INFO, ATTR_NODE_DESC, ATTR_NODE_INFO,
    ATTR_PKEY_TABLE, ATTR_PORT_INFO, ATTR_SWITCH_INFO,
};

fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

/// Three CAs (LIDs 1, 2, 3), SM at LID 1.
fn sw() -> Switch {
    Switch::new([3, 1, 2], 1, SwitchConfig::default())
}

/// A directed-route SubnGet as the requesting CA's kernel sends it: hop
/// pointer already incremented to 1, DrSLID/DrDLID permissive.
fn dr_get(attr: u16, attr_mod: u32, path: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[0] = 1;
    m[1] = 0x81;
    m[2] = 1;
    m[3] = 0x01;
    m[6] = 1;
    m[7] = (path.len() - 1) as u8;
    m[8..16].copy_from_slice(&0xabcd_0000_0000_0042u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m[20..24].copy_from_slice(&attr_mod.to_be_bytes());
    m[32..36].fill(0xff);
    m[128..128 + path.len()].copy_from_slice(path);
    m
}

#[test]
fn the_same_switch_on_every_server() {
    let a = Switch::new([1, 2, 3], 1, SwitchConfig::default());
    let b = Switch::new([2, 3, 1, 2, 0], 1, SwitchConfig::default());
    assert_eq!(a, b, "the LIDs' order, duplicates and LID 0 do not matter");
    assert_eq!((a.lid(), a.num_ports()), (4, 3));
    assert_eq!(a.node_guid() >> 16, 0x0002_c903_00f0);
    assert_ne!(a.node_guid(), Switch::new([1, 2], 1, SwitchConfig::default()).node_guid());
    let c = Switch::new([1, 2, 3], 1, SwitchConfig { lid: Some(100), node_guid: Some(7), ..Default::default() });
    assert_eq!((c.lid(), c.node_guid()), (100, 7));
    assert_eq!((a.port_of(1), a.port_of(3), a.port_of(4)), (Some(1), Some(3), None));
    assert_eq!((a.lid_at(0), a.lid_at(2), a.lid_at(4)), (None, Some(2), None));
}

#[test]
fn one_hop_is_answered_by_the_switch_and_returns_on_the_ingress_port() {
    // ibnetdiscover from LID 2's CA: NodeInfo at path 0,1.
    let out = sw().dr_step(&dr_get(ATTR_NODE_INFO, 0, &[0, 1]), 2).unwrap();
    assert_eq!(out.port, 2, "back to the requester");
    let m = &out.mad;
    assert_eq!(m[3], 0x81, "GetResp");
    assert_eq!(rd16(m, 4), 0x8000, "D bit, status 0");
    assert_eq!((m[6], m[7]), (1, 1), "hop pointer 1 as the CA's smi_handle_dr_smp_recv wants");
    assert_eq!(m[192 + 1], 2, "ReturnPath[1] = ingress port");
    assert_eq!(&m[8..16], &0xabcd_0000_0000_0042u64.to_be_bytes(), "TID");
    let d = &m[64..];
    assert_eq!((d[2], d[3]), (2, 3), "NodeType switch, NumPorts 3");
    assert_eq!(&d[12..20], &sw().node_guid().to_be_bytes());
    assert_eq!(d[36], 2, "LocalPortNum = the port the SMP came in on");
}

#[test]
fn two_hops_go_out_the_named_port_and_come_back() {
    let mut s = sw();
    // LID 1's CA asks for the node at switch port 3.
    let fwd = s.dr_step(&dr_get(ATTR_NODE_INFO, 0, &[0, 1, 3]), 1).unwrap();
    assert_eq!(fwd.port, 3);
    assert_eq!(s.lid_at(fwd.port), Some(3));
    assert_eq!((fwd.mad[3], fwd.mad[6], fwd.mad[7]), (0x01, 2, 2), "still a Get, hop pointer 2 = hop count");
    assert_eq!(fwd.mad[192 + 1], 1, "ReturnPath[1]");
    // The CA at port 3 answers (its kernel: D set, hop pointer back to 2).
    let mut resp = fwd.mad.clone();
    resp[3] = 0x81;
    resp[4] = 0x80;
    resp[192 + 2] = 1;
    let back = s.dr_step(&resp, 3).unwrap();
    assert_eq!(back.port, 1, "out ReturnPath[1]");
    assert_eq!(back.mad[6], 1, "hop pointer 1 at the requester");
    assert_eq!(&back.mad[64..], &resp[64..], "payload untouched");
}

#[test]
fn the_sma_answers_switch_attributes() {
    let mut s = sw();
    let si = s.dr_step(&dr_get(ATTR_SWITCH_INFO, 0, &[0, 1]), 1).unwrap().mad;
    assert_eq!((rd16(&si, 4) & 0x7fff, rd16(&si, 64), rd16(&si, 64 + 6)), (0, 0xc000, 4), "LinearFDBCap/Top");
    let p0 = s.answer(&dr_get(ATTR_PORT_INFO, 0, &[0, 1]), 1);
    assert_eq!((rd16(&p0, 64 + 16), rd16(&p0, 64 + 18)), (4, 1), "port 0: the switch's LID, SM LID");
    let p3 = s.answer(&dr_get(ATTR_PORT_INFO, 3, &[0, 1]), 1);
    assert_eq!((p3[64 + 32] & 0xf, p3[64 + 33] >> 4), (4, 5), "Active, LinkUp");
    assert_eq!(rd16(&s.answer(&dr_get(ATTR_PORT_INFO, 4, &[0, 1]), 1), 4), 0x1c, "no port 4");
    let lft = s.answer(&dr_get(ATTR_LINEAR_FWD_TABLE, 0, &[0, 1]), 1);
    assert_eq!(&lft[64..70], &[NO_PORT, 1, 2, 3, 0, NO_PORT], "LID 0..5: CA ports, the switch at port 0");
    assert_eq!(rd16(&s.answer(&dr_get(ATTR_LINEAR_FWD_TABLE, 0x300, &[0, 1]), 1), 4), 0x1c, "past the cap");
    let mut set = dr_get(ATTR_NODE_DESC, 0, &[0, 1]);
    set[3] = 0x02;
    assert_eq!(rd16(&s.answer(&set, 1), 4), 0x0c, "NodeDescription is read-only");
    assert_eq!(rd16(&s.answer(&dr_get(ATTR_MLNX_EXT_PORT_INFO, 2, &[0, 1]), 1), 4), 0, "no FDR10, all zero");
    let mut lr = dr_get(ATTR_NODE_INFO, 0, &[0]);
    lr[1] = 0x01;
    let a = s.answer(&lr, 3);
    assert_eq!((a[3], rd16(&a, 4), a[64 + 2]), (0x81, 0, 2), "LID-routed Get to the switch's LID");
}

#[test]
fn hostile_directed_routes_are_refused() {
    let mut s = sw();
    let ok = dr_get(ATTR_NODE_INFO, 0, &[0, 1, 2]);
    assert_eq!(s.dr_step(&ok[..200], 1), Err(DrDrop::NotDrSmp));
    let mut m = ok.clone();
    m[1] = 0x01;
    assert_eq!(s.dr_step(&m, 1), Err(DrDrop::NotDrSmp));
    assert_eq!(s.dr_step(&ok, 0), Err(DrDrop::BadIngress(0)));
    assert_eq!(s.dr_step(&ok, 4), Err(DrDrop::BadIngress(4)));
    let mut m = ok.clone();
    m[7] = 64;
    assert_eq!(s.dr_step(&m, 1), Err(DrDrop::HopCount(64)));
    let mut m = ok.clone();
    m[6] = 0;
    assert!(matches!(s.dr_step(&m, 1), Err(DrDrop::HopPointer { .. })));
    let mut m = ok.clone();
    m[6] = 3;
    assert!(matches!(s.dr_step(&m, 1), Err(DrDrop::HopPointer { .. })));
    for bad in [0u8, 4, 0xff] {
        let m = dr_get(ATTR_NODE_INFO, 0, &[0, 1, bad]);
        assert_eq!(s.dr_step(&m, 1), Err(DrDrop::NoSuchPort(bad)));
    }
    let mut m = ok.clone();
    m[34] = 0;
    assert_eq!(s.dr_step(&m, 1), Err(DrDrop::LidRoutedPart));
    let mut back = ok.clone();
    back[4] = 0x80;
    assert!(matches!(s.dr_step(&back, 1), Err(DrDrop::HopPointer { .. })), "hop pointer 1 on the way back");
    back[6] = 2;
    back[192 + 1] = 9;
    assert_eq!(s.dr_step(&back, 1), Err(DrDrop::NoSuchPort(9)));
    // The longest route: 63 hops, pointer at 63 → answered.
    let mut far = dr_get(ATTR_NODE_INFO, 0, &[0, 1]);
    far[6] = 63;
    far[7] = 63;
    let a = s.dr_step(&far, 2).unwrap();
    assert_eq!((a.port, a.mad[6], a.mad[192 + 63]), (2, 63, 2));
}

#[test]
fn random_smps_never_panic() {
    let mut s = sw();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let base = dr_get(ATTR_NODE_INFO, 0, &[0, 1, 2]);
    // (Under Miri a few hundred: the same shapes, fewer of them.)
    for i in 0..if cfg!(miri) { 300 } else { 20_000 } {
        let mut m = base.clone();
        for _ in 0..(next() % 8) {
            let at = (next() % 256) as usize;
            m[at] = next() as u8;
        }
        if i % 4 == 0 {
            m[6] = (next() % 70) as u8;
            m[7] = (next() % 70) as u8;
        }
        let len = if i % 50 == 0 { (next() % 257) as usize } else { 256 };
        let port = (next() % 6) as u8;
        if let Ok(o) = s.dr_step(&m[..len], port) {
            assert!(s.lid_at(o.port).is_some());
            assert_eq!(o.mad.len(), 256);
        }
        let _ = s.answer(&m[..len], port);
    }
}

/// A SubnSet at the end of a one-hop directed route, as OpenSM sends it.
fn dr_set(attr: u16, attr_mod: u32, data: &[u8]) -> Vec<u8> {
    let mut m = dr_get(attr, attr_mod, &[0, 1]);
    m[3] = 0x02;
    m[64..64 + data.len()].copy_from_slice(data);
    m
}

/// The attribute data of an answer, after checking its status.
fn ok_data(a: &[u8]) -> Vec<u8> {
    assert_eq!(rd16(a, 4) & 0x7fff, 0, "status");
    a[64..128].to_vec()
}

#[test]
fn an_sm_configures_a_powered_up_switch() {
    let mut s = Switch::new([1, 2, 3], 0, SwitchConfig { start: SwitchStart::PowerOn, ..Default::default() });
    assert_eq!((s.lid(), s.port0_lid()), (4, 0), "reached at LID 4, no LID of its own yet");
    assert_eq!((0..=3).map(|p| s.port_state(p).unwrap()).collect::<Vec<_>>(), vec![4, 2, 2, 2], "external ports INIT");
    assert!((0..8).all(|l| s.route(l) == NO_PORT), "an empty LFT");
    // Port 0: LID 4, MasterSMLID 1 (OpenSM's lid manager; its PortInfo Get, changed).
    let mut p0 = ok_data(&s.answer(&dr_get(ATTR_PORT_INFO, 0, &[0, 1]), 1));
    p0[16..18].copy_from_slice(&4u16.to_be_bytes());
    p0[18..20].copy_from_slice(&1u16.to_be_bytes());
    (p0[32], p0[33]) = (p0[32] & 0xf0, 0x02);
    let a = ok_data(&s.answer(&dr_set(ATTR_PORT_INFO, 0, &p0), 1));
    assert_eq!((rd16(&a, 16), rd16(&a, 18), a[32] & 0xf), (4, 1, 4), "LID, MasterSMLID set; port 0 ACTIVE");
    assert_eq!(s.port0_lid(), 4);
    // The link manager: ARMED, then ACTIVE, on every external port; ACTIVE before ARMED is refused.
    for port in 1..=3u32 {
        let mut pi = ok_data(&s.answer(&dr_get(ATTR_PORT_INFO, port, &[0, 1]), 1));
        (pi[32], pi[33]) = ((pi[32] & 0xf0) | 4, 0x02);
        let r = s.answer(&dr_set(ATTR_PORT_INFO, port, &pi), 1);
        assert_eq!(rd16(&r, 4) & 0x7fff, 0x1c, "INIT -> ACTIVE");
        assert_eq!(r[64 + 32] & 0xf, 2, "unchanged");
        pi[32] = (pi[32] & 0xf0) | 3;
        pi[36] = 0x40; // NeighborMTU 2048
        assert_eq!(ok_data(&s.answer(&dr_set(ATTR_PORT_INFO, port, &pi), 1))[32] & 0xf, 3);
        pi[32] = (pi[32] & 0xf0) | 4;
        let a = ok_data(&s.answer(&dr_set(ATTR_PORT_INFO, port, &pi), 1));
        assert_eq!((a[32] & 0xf, a[36] >> 4, a[33] >> 4), (4, 4, 5), "ACTIVE, the MTU set, LinkUp");
    }
    // The unicast manager: LinearFDBTop, then the LFT's first block.
    let mut si = ok_data(&s.answer(&dr_get(ATTR_SWITCH_INFO, 0, &[0, 1]), 1));
    si[6..8].copy_from_slice(&4u16.to_be_bytes());
    si[11] = 0x11 << 3;
    let a = ok_data(&s.answer(&dr_set(ATTR_SWITCH_INFO, 0, &si), 1));
    assert_eq!((rd16(&a, 0), rd16(&a, 6), a[11] >> 3), (0xc000, 4, 0x11), "cap kept, top and life time set");
    assert_eq!(s.linear_fdb_top(), 4);
    let mut lft = [NO_PORT; 64];
    lft[1..5].copy_from_slice(&[1, 2, 3, 0]);
    assert_eq!(&ok_data(&s.answer(&dr_set(ATTR_LINEAR_FWD_TABLE, 0, &lft), 1))[..6], &[NO_PORT, 1, 2, 3, 0, NO_PORT]);
    assert_eq!((s.route(2), s.route(4), s.route(5)), (2, 0, NO_PORT));
    // The multicast manager: MLID 0xC000 to ports 1..3; the P_Key manager: port 2's table.
    let mut mft = [0u8; 64];
    mft[..2].copy_from_slice(&0b1110u16.to_be_bytes());
    assert_eq!(&ok_data(&s.answer(&dr_set(ATTR_MCAST_FWD_TABLE, 0, &mft), 1))[..2], &[0, 0b1110]);
    assert_eq!(s.mcast_ports(0xc000), 0b1110);
    assert_eq!(rd16(&s.answer(&dr_set(ATTR_MCAST_FWD_TABLE, 128, &mft), 1), 4) & 0x7fff, 0x1c, "past the cap");
    let mut pk = [0u8; 64];
    pk[..4].copy_from_slice(&[0xff, 0xff, 0x80, 0x01]);
    assert_eq!(&ok_data(&s.answer(&dr_set(ATTR_PKEY_TABLE, 2 << 16, &pk), 1))[..4], &[0xff, 0xff, 0x80, 0x01]);
    let mut far = [0u8; 64];
    far[2 * 8] = 0x80;
    assert_eq!(ok_data(&s.answer(&dr_set(ATTR_PKEY_TABLE, 1 << 16, &far), 1))[2 * 8], 0, "beyond the cap of 8");
    // ibroute's view: what the SM programmed.
    let got = ok_data(&s.answer(&dr_get(ATTR_LINEAR_FWD_TABLE, 0, &[0, 1]), 2));
    assert_eq!(&got[..5], &[NO_PORT, 1, 2, 3, 0]);
    assert_eq!(s.sets(), 1 + 3 * 2 + 5, "port 0, ARMED and ACTIVE on 3 ports, SwitchInfo, LFT, MFT, two P_Key tables");
    let mut top = si.clone();
    top[6..8].copy_from_slice(&0xc000u16.to_be_bytes());
    assert_eq!(rd16(&s.answer(&dr_set(ATTR_SWITCH_INFO, 0, &top), 1), 4) & 0x7fff, 0x1c, "top past the cap");
}
