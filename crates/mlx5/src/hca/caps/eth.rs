//! The capability pages of an Ethernet port (`/work/shared/mlx5-ethernet-roce.md` §1.2–§1.4, M1):
//! the general page's deltas from the InfiniBand image, the ETHERNET_OFFLOADS page and the FLOW_TABLE
//! page. RoCE is on (`roce = 1`: `mlx5_ib` binds with its RoCE profile and queries the ROCE page,
//! [`super::roce`]); `roce_rw_supported = 0` keeps the bit read-only. Everything not listed stays 0: no striding RQ, no CQE compression,
//! no LRO, no tunnels, no e-switch manager, no PCAM/MCAM, no DIM (`cq_period_mode_modify = 0`).
//! `vport_group_manager = 1` as a PF has it: mlx5e accepts `ethtool -A` (PFCC pause) only then.
//! QoS (§1.6): `qos` + `vport_group_manager` give the netdev its dcbnl ops, `ets` the ETS registers,
//! `qcam_reg` the QCAM mask that names QPTS/QPDPM (DSCP trust); the QOS page is all zero (no packet
//! pacing, no SQ scheduling); `dcbx = 0` (host-managed DCBX, no DCBX_PARAM). Congestion control
//! (§5.1): `cc_query_allowed` and `cc_modify_allowed` (the commands of `roce/cong.rs`).

use super::image::{build, CapValue};
use crate::ifc::{self, cmd_hca_cap, flow_table_nic_cap, flow_table_prop_layout, per_protocol_networking_offload_caps};

/// Capability types beyond GENERAL that an Ethernet port answers.
pub const CAP_ETHERNET_OFFLOADS: u16 = ifc::MLX5_CAP_ETHERNET_OFFLOADS as u16;
pub const CAP_FLOW_TABLE: u16 = ifc::MLX5_CAP_FLOW_TABLE as u16;
pub const CAP_QOS: u16 = ifc::MLX5_CAP_QOS as u16;

macro_rules! caps {
    ($m:ident: $($f:ident = $v:expr),* $(,)?) => {
        &[$((stringify!($f), $m::$f, $v as u64)),*]
    };
}

/// §1.2: what an Ethernet port changes on `cmd_hca_cap`.
pub const GENERAL_ETH: &[CapValue] = caps!(cmd_hca_cap:
    port_type = ifc::MLX5_CAP_PORT_TYPE_ETH,
    eth_net_offloads = 1,
    vport_group_manager = 1,
    nic_flow_table = 1,
    cq_moderation = 1,
    cq_period_mode_modify = 0,
    log_max_rq = 10,
    // the largest user RQ WQ (ibv_create_wq; mlx5_ib refuses max_wr > 1 << log_max_wq_sz), as for QPs
    log_max_wq_sz = 15,
    log_max_sq = 10,
    log_max_tir = 10,
    log_max_tis = 8,
    log_max_rqt = 8,
    log_max_rqt_size = 8,
    log_max_tis_per_sq = 0,
    log_max_transport_domain = 8,
    log_max_current_uc_list = 7,
    log_max_current_mc_list = 10,
    log_max_vlan_list = 12,
    max_qp_cnt = 8,
    out_of_seq_cnt = 1,
    retransmission_q_counters = 1,
    striding_rq = 0,
    cqe_compression = 0,
    roce = 1,
    roce_rw_supported = 0,
    qos = 1,
    ets = 1,
    max_tc = 8,
    dcbx = 0,
    qcam_reg = 1,
    // §5.1: the congestion-control commands (roce/cong.rs); mlx5_ib creates debugfs `cc_params` and
    // reads QUERY_CONG_STATISTICS into `hw_counters` only with both.
    cc_query_allowed = 1,
    cc_modify_allowed = 1,
);

/// §1.3: the ETHERNET_OFFLOADS page (checksums, VLAN stripping, LSO; inline mode NOT_REQUIRED).
pub const ETH_OFFLOADS: &[CapValue] = caps!(per_protocol_networking_offload_caps:
    csum_cap = 1,
    vlan_cap = 1,
    lro_cap = 0,
    wqe_vlan_insert = 0,
    self_lb_en_modifiable = 1,
    max_lso_cap = 16,
    multi_pkt_send_wqe = 0,
    wqe_inline_mode = 2,
    rss_ind_tbl_cap = 8,
    reg_umr_sq = 0,
    scatter_fcs = 0,
    enhanced_multi_pkt_send_wqe = 0,
);

/// §1.4: `flow_table_properties_nic_receive` of the FLOW_TABLE page (offsets inside the 64-byte layout).
pub const NIC_RX_FLOW_TABLE: &[CapValue] = caps!(flow_table_prop_layout:
    ft_support = 1,
    flow_modify_en = 1,
    modify_root = 1,
    identified_miss_table_mode = 1,
    flow_table_modify = 1,
    log_max_ft_size = 24,
    max_ft_level = 63,
    log_max_ft_num = 12,
    log_max_destination = 8,
    log_max_flow = 20,
);

/// Match fields the NIC RX tables support (`ft_field_support`, §1.4; what mlx5e's VLAN, L2, TTC and
/// ARFS tables match on).
const NIC_RX_FIELDS: &[CapValue] = {
    use flow_table_prop_layout::ft_field_support as s;
    &[
        ("outer_dmac", s::outer_dmac, 1),
        ("outer_smac", s::outer_smac, 1),
        ("outer_ether_type", s::outer_ether_type, 1),
        ("outer_ip_version", s::outer_ip_version, 1),
        ("outer_first_prio", s::outer_first_prio, 1),
        ("outer_first_cfi", s::outer_first_cfi, 1),
        ("outer_first_vid", s::outer_first_vid, 1),
        ("outer_sip", s::outer_sip, 1),
        ("outer_dip", s::outer_dip, 1),
        ("outer_frag", s::outer_frag, 1),
        ("outer_ip_protocol", s::outer_ip_protocol, 1),
        ("outer_udp_sport", s::outer_udp_sport, 1),
        ("outer_udp_dport", s::outer_udp_dport, 1),
        ("outer_tcp_sport", s::outer_tcp_sport, 1),
        ("outer_tcp_dport", s::outer_tcp_dport, 1),
    ]
};

/// The general page of an Ethernet port: `ib` (the InfiniBand image with this instance's limits) with
/// the §1.2 deltas.
pub fn general_eth(ib: &[u8]) -> Vec<u8> {
    let mut page = ib.to_vec();
    for &(_, f, v) in GENERAL_ETH {
        f.set(&mut page, v);
    }
    page
}

/// The ETHERNET_OFFLOADS page.
pub fn eth_offloads_image() -> Vec<u8> {
    build(ETH_OFFLOADS)
}

/// The QOS page: all zero (§1.6).
pub fn qos_image() -> Vec<u8> {
    build(&[])
}

/// The FLOW_TABLE page: only NIC receive has tables (the other namespaces stay absent).
pub fn flow_table_image() -> Vec<u8> {
    let mut page = build(&[]);
    let rx = flow_table_nic_cap::flow_table_properties_nic_receive;
    for &(_, f, v) in NIC_RX_FLOW_TABLE.iter().chain(NIC_RX_FIELDS) {
        rx.inner(f).set(&mut page, v);
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hca::caps::image::{general_caps, CAP_ATOMIC, CAP_GENERAL};
    use crate::hca::state::Hca;
    use crate::link::LinkLayer;
    use vrnic_engine::Limits;

    #[test]
    fn the_ib_function_keeps_its_pages_and_eth_differs_only_by_the_deltas() {
        let l = Limits::default();
        let ib = Hca::new(&l, None, LinkLayer::Ib, None);
        assert_eq!(ib.caps_max.keys().copied().collect::<Vec<_>>(), vec![CAP_GENERAL, CAP_ATOMIC]);
        assert_eq!(ib.caps_max[&CAP_GENERAL], general_caps(&l), "IB general page byte for byte");
        let eth = Hca::new(&l, None, LinkLayer::Eth, None);
        let mut keys: Vec<u16> = eth.caps_max.keys().copied().collect();
        keys.sort();
        assert_eq!(
            keys,
            vec![CAP_GENERAL, CAP_ETHERNET_OFFLOADS, CAP_ATOMIC, super::super::roce::CAP_ROCE, CAP_FLOW_TABLE, CAP_QOS]
        );
        // Every field that differs between the two general pages is one of the §1.2 deltas.
        for &(name, f) in cmd_hca_cap::FIELDS {
            if f.get(&ib.caps_max[&CAP_GENERAL]) != f.get(&eth.caps_max[&CAP_GENERAL]) {
                assert!(GENERAL_ETH.iter().any(|&(n, _, _)| n == name), "{name} changed but is no delta");
            }
        }
        assert_eq!(eth.caps_cur, eth.caps_max);
    }
}
