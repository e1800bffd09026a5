//! The SMA behind MAD_IFC configured by an SM (`mad.rs`): a port that
//! powered up without one (INIT, no LID) gets its LID, SM LID and
//! ClientReregister, then ARMED and ACTIVE, from SubnSet(PortInfo) as
//! mlx5_ib passes it to MAD_IFC; the driver hears PORT_CHANGE LID,
//! CLIENT_REREG and ACTIVE, and the vport queries follow. IsSM: the
//! driver may claim it only without the built-in SM.

use crate::test_support::*;

const EQ_BUF: u64 = 0x100000;

/// MAD_IFC of `mad` on port 1; the response MAD.
fn mad_ifc(t: &mut Bench, mad: &[u8; 256]) -> Vec<u8> {
    let mut m = cmd(ifc::MLX5_CMD_OP_MAD_IFC, 3, ifc::mad_ifc_in::SIZE);
    ifc::mad_ifc_in::port.set(&mut m, 1);
    let r = ifc::mad_ifc_in::mad.byte_range().unwrap();
    m[r].copy_from_slice(mad);
    let o = t.ok(&m, ifc::mad_ifc_out::SIZE);
    o[ifc::mad_ifc_out::response_mad_packet.byte_range().unwrap()].to_vec()
}

/// A directed-route PortInfo SMP (OpenSM's), method `method`, data `pi`.
fn port_info(method: u8, pi: &[u8]) -> [u8; 256] {
    let mut m = [0u8; 256];
    (m[0], m[1], m[2], m[3]) = (1, 0x81, 1, method);
    m[16..18].copy_from_slice(&0x15u16.to_be_bytes());
    m[20..24].copy_from_slice(&1u32.to_be_bytes());
    m[64..128].copy_from_slice(pi);
    m
}

/// The PORT_CHANGE sub_types posted to the EQ at `EQ_BUF` so far.
fn port_events(t: &Bench) -> Vec<u8> {
    (0..64)
        .map(|k| t.mem.get(EQ_BUF + 64 * k, 64))
        .take_while(|e| e[1] == ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8)
        .map(|e| e[3])
        .collect()
}

fn vport_lid_state(t: &mut Bench) -> (u64, u64, u64) {
    use ifc::query_hca_vport_context_out::hca_vport_context as c;
    let mut i = cmd(ifc::MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT, 0, ifc::query_hca_vport_context_in::SIZE);
    ifc::query_hca_vport_context_in::port_num.set(&mut i, 1);
    let o = t.ok(&i, ifc::query_hca_vport_context_out::SIZE);
    (c::lid.get(&o), c::sm_lid.get(&o), c::port_state.get(&o))
}

#[test]
fn an_sm_configures_the_port_through_mad_ifc() {
    let mut t = Bench::new();
    t.fw.cfg = t.fw.cfg.clone().unconfigured();
    let uar = t.up();
    t.eq(uar, 0, 1 << ifc::MLX5_EVENT_TYPE_PORT_CHANGE, EQ_BUF);
    assert_eq!(vport_lid_state(&mut t), (0, 0, 2), "INIT, no LID");
    let mut pi = mad_ifc(&mut t, &port_info(0x01, &[0; 64]))[64..128].to_vec();
    pi[16..18].copy_from_slice(&3u16.to_be_bytes());
    pi[18..20].copy_from_slice(&1u16.to_be_bytes());
    (pi[32], pi[33], pi[51]) = (pi[32] & 0xf0, 0x02, 0x80 | 18);
    let r = mad_ifc(&mut t, &port_info(0x02, &pi));
    assert_eq!((r[3], u16::from_be_bytes([r[4], r[5]])), (0x81, 0));
    assert_eq!(port_events(&t), vec![6, 9], "LID, CLIENT_REREG");
    for (state, events) in [(3u8, vec![6, 9]), (4, vec![6, 9, 4])] {
        (pi[32], pi[51]) = ((pi[32] & 0xf0) | state, 18);
        mad_ifc(&mut t, &port_info(0x02, &pi));
        assert_eq!(port_events(&t), events);
    }
    assert_eq!(vport_lid_state(&mut t), (3, 1, 4), "LID 3, SM LID 1, ACTIVE");
    // The SM's port claims IsSM (OpenSM opens issm: ib_modify_port writes PCAP).
    let mut img = [0u8; 8];
    img[1] = 1;
    img[4..8].copy_from_slice(&(t.fw.cfg.cap_mask | 2).to_be_bytes());
    assert_eq!(pcap(&mut t, &img)[4..8], img[4..8], "taken");
}

/// PCAP written with `img`; the image read back.
fn pcap(t: &mut Bench, img: &[u8; 8]) -> Vec<u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_ACCESS_REG, 0, 16 + 8);
    ifc::access_register_in::register_id.set(&mut i, ifc::MLX5_REG_PCAP as u64);
    i[16..].copy_from_slice(img);
    t.run_raw(&i, 24).1[16..24].to_vec()
}

#[test]
fn with_the_built_in_sm_the_driver_cannot_claim_is_sm() {
    let mut t = Bench::new();
    t.up();
    let mut img = [0u8; 8];
    img[1] = 1;
    img[4..8].copy_from_slice(&(t.fw.cfg.cap_mask | 2).to_be_bytes());
    let got = pcap(&mut t, &img);
    assert_eq!(u32::from_be_bytes(got[4..8].try_into().unwrap()) & 2, 0);
}
