//! The QoS registers (QCAM, QPTS, QPDPM, QTCT, QETCR) through ACCESS_REG, as mlx5e's dcbnl code
//! drives them (`en_dcbnl.c`, `port.c`); images checked byte for byte against the `mlx5_ifc.h` layout.

use super::cmd_tests::reg;
use crate::cmd::status;
use crate::ifc::{self, ets_tcn_config_reg as ets, qcam_access_reg_cap_mask as qm};
use crate::ifc::{qcam_reg, qetc_reg, qpdpm_dscp_reg, qpdpm_reg, qpts_reg, qtct_reg};
use crate::test_support::Bench;

fn bench() -> Bench {
    let mut t = Bench::eth();
    t.up();
    t
}

#[test]
fn qcam_names_the_qos_registers_the_device_has() {
    let mut t = bench();
    let o = reg(&mut t, ifc::MLX5_REG_QCAM, false, &[0u8; qcam_reg::SIZE]).unwrap();
    // qos_access_reg_cap_mask at byte 0x08: QPDPM (bit 19) byte 0x15 = 0x08, QTCT (bit 10) byte 0x16
    // = 0x04, QETCR (bit 5) and QPTS (bit 2) byte 0x17 = 0x24 (§1.6: qpts 0x17/0x04, qpdpm 0x15/0x08).
    let mut want = [0u8; qcam_reg::SIZE];
    want[0x15] = 0x08;
    want[0x16] = 0x04;
    want[0x17] = 0x24;
    assert_eq!(o, want);
    // The same bits by the generated mask layout (what MLX5_CAP_QCAM_REG reads).
    let mask = &o[0x08..0x18];
    assert_eq!((qm::qpts.get(mask), qm::qpdpm.get(mask), qm::qdpm.get(mask), qm::qcap.get(mask)), (1, 1, 0, 0));
    // Read-only; other groups do not exist.
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QCAM, true, &[0u8; qcam_reg::SIZE]), Err(status::BAD_PARAM));
    let mut g = [0u8; qcam_reg::SIZE];
    g[3] = 1;
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QCAM, false, &g), Err(status::BAD_PARAM));
}

#[test]
fn qpts_trust_state_pcp_at_power_on_written_and_read_back() {
    let mut t = bench();
    let mut i = [0u8; qpts_reg::SIZE];
    i[1] = 1; // local_port
    let o = reg(&mut t, ifc::MLX5_REG_QPTS, false, &i).unwrap();
    assert_eq!(o, [0, 1, 0, 0, 0, 0, 0, 1], "local_port 1, trust_state PCP (DW1 bits[2:0])");
    i[7] = 2;
    reg(&mut t, ifc::MLX5_REG_QPTS, true, &i).unwrap();
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QPTS, false, &i).unwrap()[7], 2);
    assert_eq!(t.fw.port.eth_test().qos.dscp_prio(26), Some(3), "DSCP trust: the table decides (26 >> 3 at power-on)");
    for bad in [0u8, 3, 7] {
        i[7] = bad;
        assert_eq!(reg(&mut t, ifc::MLX5_REG_QPTS, true, &i), Err(status::BAD_PARAM));
    }
    let mut p2 = [0u8; qpts_reg::SIZE];
    p2[1] = 2;
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QPTS, false, &p2), Err(status::BAD_PARAM));
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QPTS, false, &[0, 1, 0]), Err(status::BAD_INP_LEN));
    assert_eq!(
        qpts_reg::trust_state.get(&reg(&mut t, ifc::MLX5_REG_QPTS, false, &[0, 1, 0, 0, 0, 0, 0, 0]).unwrap()),
        2
    );
}

#[test]
fn qpdpm_read_modify_write_of_one_codepoint_as_mlx5_set_dscp2prio() {
    let mut t = bench();
    let mut i = vec![0u8; qpdpm_reg::SIZE];
    i[1] = 1;
    let o = reg(&mut t, ifc::MLX5_REG_QPDPM, false, &i).unwrap();
    for d in 0..64 {
        // entry d: 16 bits at byte 4 + 2d, prio in bits[3:0], e (bit 15) clear on read
        assert_eq!(u16::from_be_bytes([o[4 + 2 * d], o[5 + 2 * d]]), (d >> 3) as u16, "dscp {d}");
    }
    // mlx5_set_dscp2prio: read, copy, set entry 26 = prio 5 with e = 1, write the whole image.
    let mut w = o.clone();
    qpdpm_reg::dscp.at(26, qpdpm_dscp_reg::prio).set(&mut w, 5);
    qpdpm_reg::dscp.at(26, qpdpm_dscp_reg::e).set(&mut w, 1);
    // An entry without e is not touched even if its prio differs.
    qpdpm_reg::dscp.at(27, qpdpm_dscp_reg::prio).set(&mut w, 6);
    assert_eq!(&w[4 + 52..4 + 54], &[0x80, 0x05]);
    reg(&mut t, ifc::MLX5_REG_QPDPM, true, &w).unwrap();
    let o = reg(&mut t, ifc::MLX5_REG_QPDPM, false, &i).unwrap();
    assert_eq!(
        (
            qpdpm_reg::dscp.at(26, qpdpm_dscp_reg::prio).get(&o),
            qpdpm_reg::dscp.at(27, qpdpm_dscp_reg::prio).get(&o),
            qpdpm_reg::dscp.at(26, qpdpm_dscp_reg::e).get(&o)
        ),
        (5, 3, 0)
    );
    assert_eq!(t.fw.port.eth_test().qos.dscp_prio(26), None, "PCP trust: the VLAN tag decides");
    // A priority past 7 is refused and nothing changes.
    qpdpm_reg::dscp.at(26, qpdpm_dscp_reg::prio).set(&mut w, 9);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QPDPM, true, &w), Err(status::BAD_PARAM));
    assert_eq!(t.fw.port.eth_test().qos.dscp2prio[26], 5);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QPDPM, false, &i[..0x80]), Err(status::BAD_INP_LEN));
}

#[test]
fn qtct_and_qetcr_as_mlx5e_ets_init_then_read_back() {
    let mut t = bench();
    // mlx5_set_port_prio_tc: one write per priority with port_number left 0 (the query sets 1),
    // {0→1, 1→0, i→i} reversed here to see a change.
    for p in 0..8u8 {
        let i = [0, 0, 0, p, 0, 0, 0, 7 - p];
        reg(&mut t, ifc::MLX5_REG_QTCT, true, &i).unwrap();
    }
    for p in 0..8u8 {
        let o = reg(&mut t, ifc::MLX5_REG_QTCT, false, &[0, 1, 0, p, 0, 0, 0, 0]).unwrap();
        assert_eq!(o, [0, 1, 0, p, 0, 0, 0, 7 - p]);
        assert_eq!((qtct_reg::prio.get(&o), qtct_reg::tclass.get(&o)), (p as u64, 7 - p as u64));
    }
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QTCT, false, &[0, 2, 0, 0, 0, 0, 0, 0]), Err(status::BAD_PARAM));

    // mlx5_set_port_tc_group (g only, port_number 0), then tc_bw_alloc (b only), then a rate limit (r).
    let mut g = vec![0u8; qetc_reg::SIZE];
    for i in 0..8 {
        qetc_reg::tc_configuration.at(i as u32, ets::g).set(&mut g, 1);
        qetc_reg::tc_configuration.at(i as u32, ets::group).set(&mut g, if i < 4 { 0 } else { 7 });
    }
    reg(&mut t, ifc::MLX5_REG_QETCR, true, &g).unwrap();
    let mut b = vec![0u8; qetc_reg::SIZE];
    for (i, bw) in [10u64, 20, 30, 40, 100, 100, 100, 100].into_iter().enumerate() {
        qetc_reg::tc_configuration.at(i as u32, ets::b).set(&mut b, 1);
        qetc_reg::tc_configuration.at(i as u32, ets::bw_allocation).set(&mut b, bw);
        qetc_reg::tc_configuration.at(i as u32, ets::group).set(&mut b, 3); // no g: ignored
    }
    // tc 0 DW0: b (bit 30), bw 10; byte layout from ets_tcn_config_reg
    assert_eq!(&b[8..12], &[0x40, 0x03, 0x00, 10]);
    reg(&mut t, ifc::MLX5_REG_QETCR, true, &b).unwrap();
    let mut r = vec![0u8; qetc_reg::SIZE];
    qetc_reg::tc_configuration.at(2, ets::r).set(&mut r, 1);
    qetc_reg::tc_configuration.at(2, ets::max_bw_units).set(&mut r, 4);
    qetc_reg::tc_configuration.at(2, ets::max_bw_value).set(&mut r, 25);
    reg(&mut t, ifc::MLX5_REG_QETCR, true, &r).unwrap();
    let o = reg(&mut t, ifc::MLX5_REG_QETCR, false, &[0u8; qetc_reg::SIZE]).unwrap();
    let got: Vec<(u64, u64, u64, u64)> = (0..8)
        .map(|i| {
            (
                qetc_reg::tc_configuration.at(i as u32, ets::group).get(&o),
                qetc_reg::tc_configuration.at(i as u32, ets::bw_allocation).get(&o),
                qetc_reg::tc_configuration.at(i as u32, ets::max_bw_units).get(&o),
                qetc_reg::tc_configuration.at(i as u32, ets::max_bw_value).get(&o),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 10, 0, 0),
            (0, 20, 0, 0),
            (0, 30, 4, 25),
            (0, 40, 0, 0),
            (7, 100, 0, 0),
            (7, 100, 0, 0),
            (7, 100, 0, 0),
            (7, 100, 0, 0)
        ]
    );
    // tc 2 as bytes: DW0 group 0 bw 30; DW1 units 4 (bits[19:16]) value 25.
    assert_eq!(&o[0x18..0x20], &[0, 0, 0, 30, 0, 0x04, 0, 25]);
    // Over 100% or a group past 7: refused, state unchanged.
    qetc_reg::tc_configuration.at(0, ets::bw_allocation).set(&mut b, 101);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QETCR, true, &b), Err(status::BAD_PARAM));
    qetc_reg::tc_configuration.at(1, ets::group).set(&mut g, 8);
    assert_eq!(reg(&mut t, ifc::MLX5_REG_QETCR, true, &g), Err(status::BAD_PARAM));
    assert_eq!(t.fw.port.eth_test().qos.tc[0].bw_allocation, 10);
    assert_eq!(t.fw.port.eth_test().qos.tc[1].group, 0);
}

#[test]
fn qos_pages_and_registers_absent_on_infiniband() {
    let mut t = Bench::new();
    t.up();
    for id in [ifc::MLX5_REG_QCAM, ifc::MLX5_REG_QPTS, ifc::MLX5_REG_QPDPM, ifc::MLX5_REG_QTCT, ifc::MLX5_REG_QETCR] {
        assert_eq!(reg(&mut t, id, false, &[0, 1, 0, 0, 0, 0, 0, 0]), Err(status::BAD_PARAM), "{id:#x}");
    }
}

/// A link that classifies by what the port hands it (as `EtherLink` does).
#[derive(Default)]
struct ClassLink(vrnic_fabric::ether::Classifier);

impl vrnic_fabric::ether::FrameSink for ClassLink {
    fn send_frame(&self, _frame: &[u8]) {}
    fn set_prio_map(&self, map: vrnic_fabric::ether::PrioMap) {
        self.0.set(&map);
    }
    fn priority(&self, pcp: Option<u8>, dscp: Option<u8>) -> u8 {
        self.0.priority(pcp, dscp)
    }
}

/// `dcb app add dev X dscp-prio 26:3` (QPTS trust DSCP, QPDPM 26 → 3) reaches the link's classifier, so a frame
/// with DSCP 26 has priority 3 whatever its PCP; `dcb app del` (QPTS back to PCP) and a reset undo it.
#[test]
fn qpts_and_qpdpm_writes_reach_the_links_classifier() {
    let mut t = bench();
    let link = std::sync::Arc::new(ClassLink::default());
    t.fw.port.eth_test().link = Some(link.clone());
    let sink: &dyn vrnic_fabric::ether::FrameSink = &*link;
    assert_eq!(sink.priority(Some(5), Some(26)), 5, "power-on: PCP trust");
    let mut i = vec![0u8; qpdpm_reg::SIZE];
    i[1] = 1;
    let mut w = reg(&mut t, ifc::MLX5_REG_QPDPM, false, &i).unwrap();
    qpdpm_reg::dscp.at(26, qpdpm_dscp_reg::prio).set(&mut w, 3);
    qpdpm_reg::dscp.at(26, qpdpm_dscp_reg::e).set(&mut w, 1);
    reg(&mut t, ifc::MLX5_REG_QPDPM, true, &w).unwrap();
    assert_eq!(sink.priority(Some(5), Some(26)), 5, "the map alone: still PCP trust");
    let mut q = [0u8; qpts_reg::SIZE];
    q[1] = 1;
    q[7] = 2;
    reg(&mut t, ifc::MLX5_REG_QPTS, true, &q).unwrap();
    assert_eq!(sink.priority(Some(5), Some(26)), 3, "DSCP trust: DSCP 26 -> 3");
    assert_eq!(sink.priority(None, Some(26)), 3, "untagged too");
    assert_eq!(sink.priority(Some(5), Some(0)), 0, "DSCP 0 -> 0 >> 3");
    assert_eq!(sink.priority(Some(5), None), 5, "no IP: the PCP");
    q[7] = 1;
    reg(&mut t, ifc::MLX5_REG_QPTS, true, &q).unwrap();
    assert_eq!(sink.priority(Some(5), Some(26)), 5, "back to PCP trust");
    q[7] = 2;
    reg(&mut t, ifc::MLX5_REG_QPTS, true, &q).unwrap();
    t.fw.port.eth_test().reset();
    assert_eq!(sink.priority(Some(5), Some(26)), 5, "reset: PCP trust, power-on map");
    assert_eq!(link.0.map(), vrnic_fabric::ether::PrioMap::default());
}
