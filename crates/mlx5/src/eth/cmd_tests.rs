//! Ethernet port commands through the real command transport: capability pages, NIC vport
//! context, vport state and carrier events, port registers.

use crate::cmd::status;
use crate::eth::regs::{MAX_MTU, NODE_DESC_SIZE};
use crate::fields::Field;
use crate::ifc::{self, cmd_hca_cap, flow_table_nic_cap, flow_table_prop_layout as ft};
use crate::ifc::{modify_nic_vport_context_in as mi, paos_reg, pfcc_reg};
use crate::ifc::{per_protocol_networking_offload_caps as eo, pmtu_reg, ppcnt_reg, ptys_reg};
use crate::test_support::{cmd, Bench};

/// QUERY_HCA_CAP of `cap_type` (current); the 4 KiB page.
fn cap(t: &mut Bench, cap_type: u16) -> Vec<u8> {
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, cap_type << 1 | 1, 16), ifc::query_hca_cap_out::SIZE);
    o[16..16 + 0x1000].to_vec()
}

#[test]
fn ethernet_capability_pages() {
    let mut t = Bench::eth();
    t.up();
    let g = cap(&mut t, 0);
    assert_eq!(cmd_hca_cap::port_type.get(&g), ifc::MLX5_CAP_PORT_TYPE_ETH as u64);
    for (f, v) in [
        (cmd_hca_cap::eth_net_offloads, 1),
        (cmd_hca_cap::nic_flow_table, 1),
        (cmd_hca_cap::cq_moderation, 1),
        (cmd_hca_cap::cq_period_mode_modify, 0),
        (cmd_hca_cap::log_max_rqt_size, 8),
        (cmd_hca_cap::roce, 1),
        (cmd_hca_cap::striding_rq, 0),
        (cmd_hca_cap::cqe_compression, 0),
        (cmd_hca_cap::eswitch_manager, 0),
        (cmd_hca_cap::vport_group_manager, 1),
        (cmd_hca_cap::qos, 1),
        (cmd_hca_cap::ets, 1),
        (cmd_hca_cap::dcbx, 0),
        (cmd_hca_cap::pcam_reg, 0),
        (cmd_hca_cap::mcam_reg, 0),
        (cmd_hca_cap::qcam_reg, 1),
        (cmd_hca_cap::disable_local_lb_uc, 0),
        (cmd_hca_cap::roce_rw_supported, 0),
    ] {
        assert_eq!(f.get(&g), v, "{f:?}");
    }
    assert!(cmd_hca_cap::max_wqe_sz_sq.get(&g) >= 1024, "mlx5e needs 16 WQEBBs");
    for f in [cmd_hca_cap::log_max_rq, cmd_hca_cap::log_max_sq, cmd_hca_cap::log_max_tir, cmd_hca_cap::log_max_tis] {
        assert!(f.get(&g) >= 8, "{f:?}");
    }
    assert!(cmd_hca_cap::log_max_transport_domain.get(&g) >= 4);
    assert!(cmd_hca_cap::max_qp_cnt.get(&g) >= 4);
    // DW13 bits[9:8] = 1 and bit 25 (nic_flow_table): byte 0x34 as the reference gives them.
    assert_eq!(u32::from_be_bytes(g[0x34..0x38].try_into().unwrap()) & 0x0200_0300, 0x0200_0100);
    // The IB personality's bits stay (RC/UD for mlx5_ib's raw-Ethernet profile).
    assert_eq!(cmd_hca_cap::rc.get(&g), 1);

    let e = cap(&mut t, ifc::MLX5_CAP_ETHERNET_OFFLOADS as u16);
    // DW0: csum_cap (31), vlan_cap (30), self_lb_en_modifiable (23), max_lso_cap 16 ([20:16]),
    // wqe_inline_mode 2 ([13:12]), rss_ind_tbl_cap 8 ([11:8]); nothing else on the page.
    assert_eq!(&e[..4], &0xc090_2800u32.to_be_bytes());
    assert!(e[4..].iter().all(|&b| b == 0), "no tunnel, LRO or MPWQE bits");
    assert_eq!(eo::wqe_inline_mode.get(&e), 2);
    assert_eq!(eo::max_lso_cap.get(&e), 16);

    let f = cap(&mut t, ifc::MLX5_CAP_FLOW_TABLE as u16);
    let rx = |x: Field| flow_table_nic_cap::flow_table_properties_nic_receive.inner(x).get(&f);
    // DW0 of nic_receive (page byte 0x40): ft_support + the four chaining caps, log_max_ft_size 24,
    // max_ft_level 63.
    assert_eq!(&f[0x40..0x48], &[0x9e, 0, 0, 0, 0x18, 0, 0, 0x3f]);
    assert_eq!(rx(ft::log_max_ft_num), 12);
    assert_eq!(rx(ft::log_max_destination), 8);
    assert_eq!(rx(ft::log_max_flow), 20);
    assert_eq!(rx(ft::ft_field_support::outer_ip_version), 1);
    assert_eq!(rx(ft::flow_counter), 0);
    // The other namespaces stay absent.
    assert!(f[0x80..0x200].iter().all(|&b| b == 0));
    // The IB port answers neither page.
    let mut ib = Bench::new();
    ib.up();
    let (s, _) = ib.fails(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 0x3, 16), ifc::query_hca_cap_out::SIZE);
    assert_eq!(s, status::BAD_PARAM);
}

fn query_vport(t: &mut Bench) -> Vec<u8> {
    t.ok(
        &cmd(ifc::MLX5_CMD_OP_QUERY_NIC_VPORT_CONTEXT, 0, ifc::query_nic_vport_context_in::SIZE),
        ifc::query_nic_vport_context_out::SIZE,
    )
}

fn modify_vport(fields: &[Field], ctx: &[(Field, u64)]) -> Vec<u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_MODIFY_NIC_VPORT_CONTEXT, 0, mi::SIZE + 8 * 4);
    for f in fields {
        f.set(&mut i, 1);
    }
    for &(f, v) in ctx {
        mi::nic_vport_context.inner(f).set(&mut i, v);
    }
    i
}

#[test]
fn nic_vport_context_round_trip() {
    use ifc::query_nic_vport_context_out::nic_vport_context as c;
    let mut t = Bench::eth();
    t.up();
    let o = query_vport(&mut t);
    // permanent_address at output byte 0x106 (§2.2 step 2), GUIDs from the port, sd_group 0.
    assert_eq!(&o[0x106..0x10c], &[0x02, 0, 0, 0, 0, 7]);
    assert_eq!((c::node_guid.get(&o), c::port_guid.get(&o)), (0x1111, 0x2222));
    assert_eq!(c::system_image_guid.get(&o), 0x1111);
    assert_eq!(c::sd_group.get(&o), 0);
    assert_eq!(c::mtu.get(&o), 0, "no MTU until the driver sets one");
    // mlx5e_nic_enable: MODIFY mtu, then reads it back and uses what it reads.
    for mtu in [1522u64, 9022, 90] {
        t.ok(&modify_vport(&[mi::field_select::mtu], &[(ifc::nic_vport_context::mtu, mtu)]), 16);
        assert_eq!(c::mtu.get(&query_vport(&mut t)), mtu);
    }
    // Promisc and roce_en stored; a field not selected is ignored.
    t.ok(
        &modify_vport(
            &[mi::field_select::promisc, mi::field_select::roce_en],
            &[
                (ifc::nic_vport_context::promisc_all, 1),
                (ifc::nic_vport_context::roce_en, 1),
                (ifc::nic_vport_context::mtu, 5),
            ],
        ),
        16,
    );
    let o = query_vport(&mut t);
    assert_eq!((c::promisc_all.get(&o), c::promisc_mc.get(&o), c::roce_en.get(&o)), (1, 0, 1));
    assert_eq!(c::mtu.get(&o), 90);
    // A multicast list of two, read back with allowed_list_type 1.
    let mut i = modify_vport(
        &[mi::field_select::addresses_list],
        &[(ifc::nic_vport_context::allowed_list_type, 1), (ifc::nic_vport_context::allowed_list_size, 2)],
    );
    let base = mi::nic_vport_context::current_uc_mac_address.byte_off();
    i[base + 2..base + 8].copy_from_slice(&[0x01, 0, 0x5e, 0, 0, 1]);
    i[base + 10..base + 16].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
    t.ok(&i, 16);
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_NIC_VPORT_CONTEXT, 0, ifc::query_nic_vport_context_in::SIZE);
    ifc::query_nic_vport_context_in::allowed_list_type.set(&mut q, 1);
    let o = t.ok(&q, ifc::query_nic_vport_context_out::SIZE + 16);
    assert_eq!(c::allowed_list_size.get(&o), 2);
    assert_eq!(&o[0x112..0x118], &[0x01, 0, 0x5e, 0, 0, 1]);
    assert_eq!(&o[0x11a..0x120], &[0x33, 0x33, 0, 0, 0, 1]);
    // A VLAN list (8021q's VIDs, allowed_list_type 2): VID in bits 43:32 of each element.
    let mut i = modify_vport(
        &[mi::field_select::addresses_list],
        &[(ifc::nic_vport_context::allowed_list_type, 2), (ifc::nic_vport_context::allowed_list_size, 2)],
    );
    i[base + 2..base + 4].copy_from_slice(&[0x00, 0x0a]);
    i[base + 10..base + 12].copy_from_slice(&[0x0f, 0xff]);
    t.ok(&i, 16);
    assert_eq!(t.fw.port.eth_test().vport.vlan_list, [10, 0xfff]);
    ifc::query_nic_vport_context_in::allowed_list_type.set(&mut q, 2);
    let o = t.ok(&q, ifc::query_nic_vport_context_out::SIZE + 16);
    assert_eq!((c::allowed_list_type.get(&o), c::allowed_list_size.get(&o)), (2, 2));
    assert_eq!(&o[0x110..0x114], &[0, 0, 0, 0x0a]);
    assert_eq!(&o[0x118..0x11c], &[0, 0, 0x0f, 0xff]);
    // A list longer than 2^log_max_current_mc_list, the permanent address, another vport: refused.
    let long = modify_vport(
        &[mi::field_select::addresses_list],
        &[(ifc::nic_vport_context::allowed_list_type, 1), (ifc::nic_vport_context::allowed_list_size, 2048)],
    );
    assert_eq!(t.fails(&long, 16).0, status::BAD_PARAM);
    assert_eq!(t.fails(&modify_vport(&[mi::field_select::permanent_address], &[]), 16).0, status::BAD_PARAM);
    assert_eq!(t.fails(&modify_vport(&[mi::other_vport], &[]), 16).0, status::BAD_PARAM);
    // Reset: context back to power-on, the MAC stays.
    t.fw.reset();
    t.up();
    let o = query_vport(&mut t);
    assert_eq!((c::mtu.get(&o), c::promisc_all.get(&o)), (0, 0));
    assert_eq!(&o[0x106..0x10c], &[0x02, 0, 0, 0, 0, 7]);
}

/// ACCESS_REG of `id` with `img` (write or read); Ok(image) or Err(status).
pub(super) fn reg(t: &mut Bench, id: u32, write: bool, img: &[u8]) -> Result<Vec<u8>, u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_ACCESS_REG, if write { 0 } else { 1 }, 16 + img.len());
    ifc::access_register_in::register_id.set(&mut i, id as u64);
    i[16..].copy_from_slice(img);
    let o = t.run_raw(&i, 16 + img.len());
    if o.0 != 0 {
        assert!(o.1[16..].iter().all(|&b| b == 0), "a failed register access returns a zero image");
        return Err(o.0);
    }
    Ok(o.1[16..16 + img.len()].to_vec())
}

fn port1(size: usize, local_port: Field) -> Vec<u8> {
    let mut v = vec![0u8; size];
    local_port.set(&mut v, 1);
    v
}

fn vport_state(t: &mut Bench) -> u64 {
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_VPORT_STATE, 0, ifc::query_vport_state_in::SIZE), 16);
    ifc::query_vport_state_out::state.get(&o)
}

const EQ_BUF: u64 = 0x100000;

/// (event type, sub_type, port) of EQE `k`.
fn eqe(t: &Bench, k: u64) -> (u8, u8, u64) {
    let e = t.mem.get(EQ_BUF + k * 64, 64);
    (e[1], e[3], ifc::port_state_change_event::port_num.get(&e[0x20..0x3c]))
}

#[test]
fn paos_and_cable_drive_carrier_and_port_change_events() {
    let mut t = Bench::eth();
    let uar = t.up();
    t.eq(uar, 0, 1 << ifc::MLX5_EVENT_TYPE_PORT_CHANGE, EQ_BUF);
    assert_eq!(vport_state(&mut t), 1, "power-on: cable in, admin up");
    let paos = |admin: u64| {
        let mut p = port1(paos_reg::SIZE, paos_reg::local_port);
        paos_reg::admin_status.set(&mut p, admin);
        paos_reg::ase.set(&mut p, 1);
        p
    };
    // mlx5e probe: PAOS down.
    let o = reg(&mut t, ifc::MLX5_REG_PAOS, true, &paos(2)).unwrap();
    assert_eq!((paos_reg::admin_status.get(&o), paos_reg::oper_status.get(&o)), (2, 2));
    assert_eq!(eqe(&t, 0), (ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, 1, 1), "DOWN");
    assert_eq!(vport_state(&mut t), 0);
    // Writing the same state again: no event.
    reg(&mut t, ifc::MLX5_REG_PAOS, true, &paos(2)).unwrap();
    assert_eq!(t.mem.get(EQ_BUF + 64 + 63, 1)[0], 1, "EQE 1 still hardware-owned");
    // Without ase the admin status is not written.
    let mut p = paos(1);
    paos_reg::ase.set(&mut p, 0);
    reg(&mut t, ifc::MLX5_REG_PAOS, true, &p).unwrap();
    assert_eq!(vport_state(&mut t), 0);
    // mlx5e_open: PAOS up after the carrier query: ACTIVE, and the query agrees.
    reg(&mut t, ifc::MLX5_REG_PAOS, true, &paos(1)).unwrap();
    assert_eq!(eqe(&t, 1), (ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, 4, 1), "ACTIVE");
    assert_eq!(vport_state(&mut t), 1);
    // The cable (control socket `link down|up`).
    t.fw.eth_set_cable(false);
    assert_eq!(eqe(&t, 2).1, 1);
    assert_eq!(vport_state(&mut t), 0);
    let o = reg(&mut t, ifc::MLX5_REG_PAOS, false, &port1(paos_reg::SIZE, paos_reg::local_port)).unwrap();
    assert_eq!((paos_reg::admin_status.get(&o), paos_reg::oper_status.get(&o)), (1, 2));
    let o = reg(&mut t, ifc::MLX5_REG_PTYS, false, &{
        let mut p = port1(ptys_reg::SIZE, ptys_reg::local_port);
        ptys_reg::proto_mask.set(&mut p, 4);
        p
    })
    .unwrap();
    assert_eq!(ptys_reg::eth_proto_oper.get(&o), 0, "no link mode while the cable is out");
    t.fw.eth_set_cable(true);
    assert_eq!(eqe(&t, 3).1, 4);
    assert_eq!(vport_state(&mut t), 1);
    // A bad admin status is refused.
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PAOS, true, &paos(5)), Err(status::BAD_PARAM));
}

#[test]
fn port_registers() {
    let mut t = Bench::eth();
    t.up();
    // PMTU: max 9000 + 22; admin written and read back as admin and oper.
    let p = port1(pmtu_reg::SIZE, pmtu_reg::local_port);
    let o = reg(&mut t, ifc::MLX5_REG_PMTU, false, &p).unwrap();
    assert_eq!(pmtu_reg::max_mtu.get(&o), 9022);
    assert_eq!(MAX_MTU, 9022);
    let mut w = p.clone();
    pmtu_reg::admin_mtu.set(&mut w, 4000 + 22);
    reg(&mut t, ifc::MLX5_REG_PMTU, true, &w).unwrap();
    let o = reg(&mut t, ifc::MLX5_REG_PMTU, false, &p).unwrap();
    assert_eq!((pmtu_reg::admin_mtu.get(&o), pmtu_reg::oper_mtu.get(&o)), (4022, 4022));
    pmtu_reg::admin_mtu.set(&mut w, 9023);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PMTU, true, &w), Err(status::BAD_PARAM));
    // PTYS: 100GBASE-CR4 (bit 20) capability/admin/oper, no extended map; the IB mask is refused.
    let mut p = port1(ptys_reg::SIZE, ptys_reg::local_port);
    ptys_reg::proto_mask.set(&mut p, 4);
    let o = reg(&mut t, ifc::MLX5_REG_PTYS, false, &p).unwrap();
    for f in [ptys_reg::eth_proto_capability, ptys_reg::eth_proto_admin, ptys_reg::eth_proto_oper] {
        assert_eq!(f.get(&o), 1 << 20, "{f:?}");
    }
    assert_eq!(ptys_reg::ext_eth_proto_capability.get(&o), 0);
    ptys_reg::proto_mask.set(&mut p, 1);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PTYS, false, &p), Err(status::BAD_PARAM));
    // PFCC: pause on by default, written and read back.
    let p = port1(pfcc_reg::SIZE, pfcc_reg::local_port);
    let o = reg(&mut t, ifc::MLX5_REG_PFCC, false, &p).unwrap();
    assert_eq!((pfcc_reg::pptx.get(&o), pfcc_reg::pprx.get(&o)), (1, 1));
    let mut w = p.clone();
    pfcc_reg::pprx.set(&mut w, 1);
    reg(&mut t, ifc::MLX5_REG_PFCC, true, &w).unwrap();
    let o = reg(&mut t, ifc::MLX5_REG_PFCC, false, &p).unwrap();
    assert_eq!((pfcc_reg::pptx.get(&o), pfcc_reg::pprx.get(&o)), (0, 1));
    // NODE_DESC: the node description, NUL-padded.
    let o = reg(&mut t, ifc::MLX5_REG_NODE_DESC, false, &[0u8; NODE_DESC_SIZE]).unwrap();
    assert!(o.starts_with(b"vrnic emulated ConnectX-5\0"));
    // PPCNT: 802.3 counters from the vport counters; unknown group refused.
    let frame = [[0xffu8; 6].as_slice(), &[0u8; 54]].concat();
    t.fw.vport_counters().expect("an Ethernet port").count_tx(&frame);
    t.fw.vport_counters()
        .expect("an Ethernet port")
        .count_rx(&[[0x02u8, 0, 0, 0, 0, 7].as_slice(), &[0u8; 94]].concat());
    let mut p = port1(ppcnt_reg::SIZE, ppcnt_reg::local_port);
    let o = reg(&mut t, ifc::MLX5_REG_PPCNT, false, &p).unwrap();
    let ctr = |k: usize| u64::from_be_bytes(o[8 + k * 8..16 + k * 8].try_into().unwrap());
    assert_eq!((ctr(0), ctr(1), ctr(4), ctr(5), ctr(7)), (1, 1, 60, 100, 1));
    for grp in [1u64, 2, 0x12, 0x10] {
        ppcnt_reg::grp.set(&mut p, grp);
        assert!(reg(&mut t, ifc::MLX5_REG_PPCNT, false, &p).is_ok(), "group {grp:#x}");
    }
    ppcnt_reg::grp.set(&mut p, 0);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PPCNT, true, &p), Err(status::BAD_PARAM), "write");
    ppcnt_reg::grp.set(&mut p, 0x20);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PPCNT, false, &p), Err(status::BAD_PARAM));
    // Unknown register, IB-only register: BAD_PARAM with a zero image.
    assert_eq!(reg(&mut t, 0x5041, false, &[0u8; 16]), Err(status::BAD_PARAM), "PCMR");
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PCAP, false, &[0, 1, 0, 0, 0, 0, 0, 0]), Err(status::BAD_PARAM));
    // Short image, wrong port.
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PAOS, false, &[0u8; 8]), Err(status::BAD_INP_LEN));
    let mut p = port1(pmtu_reg::SIZE, pmtu_reg::local_port);
    pmtu_reg::local_port.set(&mut p, 2);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PMTU, false, &p), Err(status::BAD_PARAM));
    // The IB port has no Ethernet registers.
    let mut ib = Bench::new();
    ib.up();
    assert_eq!(reg(&mut ib, ifc::MLX5_REG_PAOS, false, &port1(16, paos_reg::local_port)), Err(status::BAD_PARAM));
}

#[test]
fn vport_counters_and_state_commands() {
    let mut t = Bench::eth();
    t.up();
    let c = t.fw.vport_counters().expect("an Ethernet port").clone();
    c.count_rx(&[[0x01u8, 0, 0x5e, 0, 0, 1].as_slice(), &[0u8; 58]].concat());
    c.count_tx(&[[0x02u8, 1, 2, 3, 4, 5].as_slice(), &[0u8; 1508]].concat());
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_VPORT_COUNTER, 0, 0x20), ifc::query_vport_counter_out::SIZE);
    let be = |at: usize| u64::from_be_bytes(o[at..at + 8].try_into().unwrap());
    assert_eq!((be(0xb0), be(0xb8)), (1, 64), "received_eth_multicast");
    assert_eq!((be(0xa0), be(0xa8)), (1, 1514), "transmitted_eth_unicast");
    assert_eq!(be(0x90), 0, "received_eth_unicast");
    // MODIFY_VPORT_STATE stores the admin state; QUERY_VPORT_STATE reports it.
    let mut i = cmd(ifc::MLX5_CMD_OP_MODIFY_VPORT_STATE, 0, 16);
    ifc::modify_vport_state_in::admin_state.set(&mut i, 2);
    t.ok(&i, 16);
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_VPORT_STATE, 0, 16), 16);
    assert_eq!(ifc::query_vport_state_out::admin_state.get(&o), 2);
    ifc::modify_vport_state_in::admin_state.set(&mut i, 7);
    assert_eq!(t.fails(&i, 16).0, status::BAD_PARAM);
    // Another vport / the uplink: refused.
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_VPORT_STATE, 1, 16);
    assert_eq!(t.fails(&q, 16).0, status::BAD_PARAM);
    q = cmd(ifc::MLX5_CMD_OP_QUERY_VPORT_STATE, 0, 16);
    ifc::query_vport_state_in::other_vport.set(&mut q, 1);
    assert_eq!(t.fails(&q, 16).0, status::BAD_PARAM);
}

#[test]
fn pkey_table_of_an_ethernet_port() {
    use ifc::query_hca_vport_pkey_in as i;
    let mut t = Bench::eth();
    t.up();
    // mlx5_ib (raw-Ethernet profile) asks for the whole table: default P_Key at 0, the rest 0.
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_HCA_VPORT_PKEY, 0, i::SIZE);
    i::port_num.set(&mut q, 1);
    i::pkey_index.set(&mut q, 0xffff);
    let o = t.ok(&q, 16 + 128 * 4);
    assert_eq!(&o[16..20], &[0, 0, 0xff, 0xff]);
    assert!(o[20..16 + 128 * 4].iter().all(|&b| b == 0));
    i::pkey_index.set(&mut q, 5);
    assert_eq!(&t.ok(&q, 20)[16..20], &[0, 0, 0, 0]);
    i::pkey_index.set(&mut q, 128);
    assert_eq!(t.fails(&q, 20).0, status::BAD_PARAM);
    i::port_num.set(&mut q, 2);
    i::pkey_index.set(&mut q, 0);
    assert_eq!(t.fails(&q, 20).0, status::BAD_PARAM);
}

/// A link that records the pause policy it is given and reports fixed per-priority counters.
#[derive(Default)]
struct PauseLink(std::sync::Mutex<Vec<vrnic_fabric::ether::PausePolicy>>);

impl vrnic_fabric::ether::FrameSink for PauseLink {
    fn send_frame(&self, _frame: &[u8]) {}
    fn set_pause_policy(&self, p: vrnic_fabric::ether::PausePolicy) {
        self.0.lock().unwrap().push(p);
    }
    fn prio_counters(&self, prio: usize) -> Option<vrnic_fabric::ether::PrioSnapshot> {
        let p = prio as u64;
        Some(vrnic_fabric::ether::PrioSnapshot {
            rx_octets: 100 + p,
            rx_frames: 200 + p,
            tx_octets: 300 + p,
            tx_frames: 400 + p,
            rx_pause: 500 + p,
            rx_pause_duration_us: 600 + p,
            rx_pause_transition: 700 + p,
            tx_pause: 800 + p,
            tx_pause_duration_us: 900 + p,
            rx_discards: 1000 + p,
        })
    }
}

#[test]
fn pfcc_policy_reaches_the_link_and_ppcnt_reads_its_priorities() {
    use vrnic_fabric::ether::PausePolicy;
    let mut t = Bench::eth();
    t.up();
    let link = std::sync::Arc::new(PauseLink::default());
    t.fw.port.eth_test().link = Some(link.clone());
    // dcb pfc set prio-pfc 3:on (mlx5_set_port_pfc: both masks 0xff, pfctx = pfcrx = 0x08)
    let mut w = port1(pfcc_reg::SIZE, pfcc_reg::local_port);
    pfcc_reg::pptx_mask_n.set(&mut w, 1);
    pfcc_reg::pprx_mask_n.set(&mut w, 1);
    pfcc_reg::prio_mask_tx.set(&mut w, 0xff);
    pfcc_reg::prio_mask_rx.set(&mut w, 0xff);
    pfcc_reg::pfctx.set(&mut w, 0x08);
    pfcc_reg::pfcrx.set(&mut w, 0x08);
    reg(&mut t, ifc::MLX5_REG_PFCC, true, &w).unwrap();
    let mac = t.fw.port.eth_test().vport.mac;
    assert_eq!(
        link.0.lock().unwrap().last(),
        Some(&PausePolicy { pfc_rx: 0x08, pause_rx: true, pause_tx: true, pfc_tx: 0x08, smac: mac }),
        "pfcrx to the pause gate, pfctx (and the port's MAC) to PFC transmit"
    );
    // PPCNT per-priority group (0x10) of priority 3: the link's counters at the layout's offsets
    let mut p = port1(ppcnt_reg::SIZE, ppcnt_reg::local_port);
    ppcnt_reg::grp.set(&mut p, 0x10);
    ppcnt_reg::prio_tc.set(&mut p, 3);
    let o = reg(&mut t, ifc::MLX5_REG_PPCNT, false, &p).unwrap();
    let c = |k: usize| u64::from_be_bytes(o[8 + 8 * k..16 + 8 * k].try_into().unwrap());
    assert_eq!((c(0), c(4), c(5), c(9)), (103, 203, 303, 403), "rx/tx octets and frames");
    assert_eq!((c(10), c(11), c(12), c(14)), (503, 603, 803, 703), "rx pause, duration, tx pause, transition");
    assert_eq!((c(13), c(15)), (903, 1003), "tx pause duration, rx discards");
    assert_eq!((c(1), c(16)), (0, 0));
    ppcnt_reg::prio_tc.set(&mut p, 8);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_PPCNT, false, &p), Err(status::BAD_PARAM));
}
