//! The port registers of an Ethernet port (owner: eth-cmd): PAOS, PMTU, PTYS, PPCNT, PFCC,
//! NODE_DESC, HOST_ENDIANNESS and the QoS registers of [`super::qos`] (`mlx5-ethernet-roce.md` §2.8). Every other register id fails with
//! BAD_PARAM (`hca/access_reg.rs`).

pub use super::port_regs::{PortRegs, DEFAULT_MTU, MAX_MTU, STATUS_DOWN, STATUS_UP};
use super::qos_access;
use super::vport::VportCounters;
use super::EthCx;
use crate::cmd::req::{fail, CmdErr};
use crate::cmd::status;
use crate::fields::Field;
use crate::hca::access_reg::{host_endianness, register, Register};
use crate::ifc::{paos_reg, pfcc_reg, pmtu_reg, ppcnt_reg, ptys_reg};
use vrnic_fabric::ether::PrioSnapshot;

/// The one link mode: 100GBASE-CR4 (`MLX5E_100GBASE_CR4` = bit 20 of the legacy map).
pub const PROTO_100GBASE_CR4: u32 = 1 << 20;
/// PTYS `proto_mask` Ethernet (`MLX5_PTYS_EN`).
const PTYS_EN: u64 = 1 << 2;
/// PTYS `connector_type` direct-attach copper (`MLX5E_PORT_DA`).
const PORT_DA: u64 = 7;

/// The registers of an Ethernet port.
pub static REGISTERS: &[Register] = &[
    register!(MLX5_REG_HOST_ENDIANNESS, host_endianness),
    register!(MLX5_REG_PAOS, eth_cx => paos),
    register!(MLX5_REG_PMTU, eth_cx => pmtu),
    register!(MLX5_REG_PTYS, eth_cx => ptys),
    register!(MLX5_REG_PPCNT, eth_cx => ppcnt),
    register!(MLX5_REG_PFCC, eth_cx => pfcc),
    register!(MLX5_REG_NODE_DESC, eth_cx => node_desc),
    register!(MLX5_REG_QCAM, qos_access::qcam_access),
    register!(MLX5_REG_QPTS, eth_cx => qos_access::qpts_access),
    register!(MLX5_REG_QPDPM, eth_cx => qos_access::qpdpm_access),
    register!(MLX5_REG_QTCT, eth_cx => qos_access::qtct_access),
    register!(MLX5_REG_QETCR, eth_cx => qos_access::qetcr_access),
];

/// The register image of `size` bytes (BAD_INP_LEN when shorter), for local port 1 only.
fn image(data: &[u8], size: usize, local_port: Option<Field>) -> Result<Vec<u8>, CmdErr> {
    let img = data.get(..size).ok_or(fail!(status::BAD_INP_LEN, ETH_REG_BAD_INP_LEN))?.to_vec();
    if let Some(lp) = local_port {
        if lp.get(&img) != 1 {
            return Err(fail!(status::BAD_PARAM, ETH_REG_BAD_LOCAL_PORT));
        }
    }
    Ok(img)
}

/// PAOS: admin status (written only with `ase`), operational status = carrier.
fn paos(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let mut img = image(data, paos_reg::SIZE, Some(paos_reg::local_port))?;
    if write && paos_reg::ase.get(&img) != 0 {
        let s = paos_reg::admin_status.get(&img) as u8;
        if s != STATUS_UP && s != STATUS_DOWN {
            return Err(fail!(status::BAD_PARAM, ETH_REG_PAOS_BAD_STATUS));
        }
        cx.eth.regs.admin_status = s;
        cx.link_changed();
    }
    paos_reg::admin_status.set(&mut img, cx.eth.regs.admin_status as u64);
    paos_reg::oper_status.set(&mut img, if cx.oper_up() { STATUS_UP } else { STATUS_DOWN } as u64);
    paos_reg::ase.set(&mut img, 0);
    Ok(img)
}

/// PMTU: `max_mtu` [`MAX_MTU`], `admin_mtu` as written (at least the 68-byte IPv4 minimum + 22),
/// `oper_mtu` = admin.
fn pmtu(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let mut img = image(data, pmtu_reg::SIZE, Some(pmtu_reg::local_port))?;
    if write {
        let m = pmtu_reg::admin_mtu.get(&img);
        if !(68 + 22..=MAX_MTU as u64).contains(&m) {
            return Err(fail!(status::BAD_PARAM, ETH_REG_PMTU_BAD_MTU));
        }
        cx.eth.regs.admin_mtu = m as u16;
    }
    pmtu_reg::max_mtu.set(&mut img, MAX_MTU as u64);
    pmtu_reg::admin_mtu.set(&mut img, cx.eth.regs.admin_mtu as u64);
    pmtu_reg::oper_mtu.set(&mut img, cx.eth.regs.admin_mtu as u64);
    Ok(img)
}

/// PTYS (Ethernet protocol mask only): one link mode, no extended map.
fn ptys(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let mut img = image(data, ptys_reg::SIZE, Some(ptys_reg::local_port))?;
    if ptys_reg::proto_mask.get(&img) & PTYS_EN == 0 {
        return Err(fail!(status::BAD_PARAM, ETH_REG_PTYS_BAD_MASK));
    }
    if write {
        let admin = ptys_reg::eth_proto_admin.get(&img) as u32;
        if admin == 0 || admin & !PROTO_100GBASE_CR4 != 0 || ptys_reg::ext_eth_proto_admin.get(&img) != 0 {
            return Err(fail!(status::BAD_PARAM, ETH_REG_PTYS_BAD_ADMIN));
        }
    }
    let up = cx.oper_up();
    let mut o = vec![0u8; ptys_reg::SIZE];
    ptys_reg::local_port.set(&mut o, 1);
    ptys_reg::proto_mask.set(&mut o, PTYS_EN);
    ptys_reg::eth_proto_capability.set(&mut o, PROTO_100GBASE_CR4 as u64);
    ptys_reg::eth_proto_admin.set(&mut o, PROTO_100GBASE_CR4 as u64);
    ptys_reg::eth_proto_oper.set(&mut o, if up { PROTO_100GBASE_CR4 as u64 } else { 0 });
    ptys_reg::connector_type.set(&mut o, PORT_DA);
    img.copy_from_slice(&o);
    Ok(img)
}

/// PPCNT groups (`grp`).
pub const PPCNT_IEEE_802_3: u64 = 0x0;
pub const PPCNT_RFC_2863: u64 = 0x1;
pub const PPCNT_RFC_2819: u64 = 0x2;
pub const PPCNT_PER_PRIO: u64 = 0x10;
pub const PPCNT_PHYS_LAYER: u64 = 0x12;

/// The 64-bit counters (`_high`/`_low` pairs) of a PPCNT group, in layout order from byte 0x08:
/// those sourced from [`VportCounters`]; the rest of the group reads 0.
pub fn ppcnt_counters(grp: u64, c: &VportCounters) -> Vec<u64> {
    use std::sync::atomic::Ordering::Relaxed;
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Relaxed);
    let ((rx_p, rx_o), (tx_p, tx_o)) = c.totals();
    match grp {
        // eth_802_3_cntrs_grp_data_layout: frames tx/rx ok, FCS errors, alignment errors, octets tx/rx,
        // multicast tx, broadcast tx, multicast rx, broadcast rx.
        PPCNT_IEEE_802_3 => vec![
            tx_p,
            rx_p,
            0,
            0,
            tx_o,
            rx_o,
            g(&c.tx_multicast_packets),
            g(&c.tx_broadcast_packets),
            g(&c.rx_multicast_packets),
            g(&c.rx_broadcast_packets),
        ],
        // eth_2863_cntrs_grp_data_layout: in octets, in ucast, in discards, in errors, in unknown
        // protos, out octets, out ucast, out discards, out errors, in mcast, in bcast, out mcast, out bcast.
        PPCNT_RFC_2863 => vec![
            rx_o,
            g(&c.rx_unicast_packets),
            0,
            g(&c.rx_errors),
            0,
            tx_o,
            g(&c.tx_unicast_packets),
            0,
            g(&c.tx_errors),
            g(&c.rx_multicast_packets),
            g(&c.rx_broadcast_packets),
            g(&c.tx_multicast_packets),
            g(&c.tx_broadcast_packets),
        ],
        // eth_2819_cntrs_grp_data_layout: drop events, octets, packets, broadcast, multicast (received).
        PPCNT_RFC_2819 => vec![0, rx_o, rx_p, g(&c.rx_broadcast_packets), g(&c.rx_multicast_packets)],
        _ => Vec::new(),
    }
}

/// eth_per_prio_grp_data_layout from byte 0x08: rx octets, 3 reserved, rx frames, tx octets, 3 reserved,
/// tx frames, rx pause, rx pause duration (us), tx pause, tx pause duration (us), rx pause transition, rx
/// discards (what mlx5e shows as `rx_prio%d_bytes/packets`, `tx_prio%d_*`, `rx_prio%d_pause*`,
/// `tx_prio%d_pause`, `tx_prio%d_pause_duration`; `rx_prio%d_discards` on kernels that name it).
pub fn ppcnt_per_prio(s: &PrioSnapshot) -> Vec<u64> {
    vec![
        s.rx_octets,
        0,
        0,
        0,
        s.rx_frames,
        s.tx_octets,
        0,
        0,
        0,
        s.tx_frames,
        s.rx_pause,
        s.rx_pause_duration_us,
        s.tx_pause,
        s.tx_pause_duration_us,
        s.rx_pause_transition,
        s.rx_discards,
    ]
}

/// PPCNT: the groups mlx5e reads; other groups are not implemented (BAD_PARAM).
fn ppcnt(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let mut img = image(data, ppcnt_reg::SIZE, Some(ppcnt_reg::local_port))?;
    if write || ppcnt_reg::clr.get(&img) != 0 {
        // The counters are the data path's; clearing them is not offered.
        return Err(fail!(status::BAD_PARAM, ETH_REG_PPCNT_WRITE));
    }
    let grp = ppcnt_reg::grp.get(&img);
    match grp {
        PPCNT_IEEE_802_3 | PPCNT_RFC_2863 | PPCNT_RFC_2819 | PPCNT_PHYS_LAYER => {}
        PPCNT_PER_PRIO if ppcnt_reg::prio_tc.get(&img) < 8 => {}
        _ => return Err(fail!(status::BAD_PARAM, ETH_REG_PPCNT_BAD_GROUP)),
    }
    img[8..].fill(0);
    let values = if grp == PPCNT_PER_PRIO {
        let prio = ppcnt_reg::prio_tc.get(&img) as usize;
        cx.eth.link.as_ref().and_then(|l| l.prio_counters(prio)).map(|s| ppcnt_per_prio(&s)).unwrap_or_default()
    } else {
        ppcnt_counters(grp, &cx.eth.vport.counters)
    };
    for (k, v) in values.into_iter().enumerate() {
        img[8 + k * 8..16 + k * 8].copy_from_slice(&v.to_be_bytes());
    }
    Ok(img)
}

/// PFCC: global pause (`ethtool -a/-A`) and PFC enables, stored and read back; the receive policy
/// (`pfcrx`, `pprx`) goes to the link's pause gate (`fabric/ether/pfc.rs`).
fn pfcc(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    use pfcc_reg as p;
    let mut img = image(data, p::SIZE, Some(p::local_port))?;
    if write {
        let r = &mut cx.eth.regs;
        if p::pptx_mask_n.get(&img) == 0 {
            r.pause_tx = p::pptx.get(&img) != 0;
        }
        if p::pprx_mask_n.get(&img) == 0 {
            r.pause_rx = p::pprx.get(&img) != 0;
        }
        let (mtx, mrx) = (p::prio_mask_tx.get(&img) as u8, p::prio_mask_rx.get(&img) as u8);
        r.pfc_tx = (r.pfc_tx & !mtx) | (p::pfctx.get(&img) as u8 & mtx);
        r.pfc_rx = (r.pfc_rx & !mrx) | (p::pfcrx.get(&img) as u8 & mrx);
        cx.eth.apply_pause_policy();
    }
    let r = &cx.eth.regs;
    let mut o = vec![0u8; p::SIZE];
    p::local_port.set(&mut o, 1);
    p::pptx.set(&mut o, r.pause_tx as u64);
    p::pprx.set(&mut o, r.pause_rx as u64);
    p::pfctx.set(&mut o, r.pfc_tx as u64);
    p::pfcrx.set(&mut o, r.pfc_rx as u64);
    img.copy_from_slice(&o);
    Ok(img)
}

/// The NODE_DESC register's size: `struct mlx5_reg_node_desc { u8 desc[IB_DEVICE_NODE_DESC_MAX]; }` of
/// mlx5_ib (drivers/infiniband/hw/mlx5/main.c, not an `mlx5_ifc.h` layout).
pub const NODE_DESC_SIZE: usize = 64;

/// NODE_DESC: the 64-byte node description (mlx5_ib reads it on Ethernet too: fatal if missing).
fn node_desc(cx: &mut EthCx<'_>, write: bool, _data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    if write {
        // The description is the device's (`[identity]`); a write is not executed.
        return Err(fail!(status::BAD_PARAM, ETH_REG_NODE_DESC_WRITE));
    }
    let mut img = vec![0u8; NODE_DESC_SIZE];
    let s = cx.cfg.node_desc.as_bytes();
    let n = s.len().min(NODE_DESC_SIZE - 1);
    img[..n].copy_from_slice(&s[..n]);
    Ok(img)
}
