//! NIC vport context, vport state and counters, carrier and port events (owner: eth-cmd).
//!
//! The carrier is `cable && PAOS admin up` ([`Vport::oper_up`]): the emulated cable (the control
//! socket's `link up|down`) and the driver's PAOS writes ([`super::regs`]) both go through
//! [`Firmware::eth_link_changed`], which posts a PORT_CHANGE EQE (sub_type 4 ACTIVE / 1 DOWN) whenever
//! the operational state flips: mlx5e re-reads QUERY_VPORT_STATE on it (sharp edge §7.2.5).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use super::vport_state::{Vport, VportCounters};
use super::EthCx;
use crate::cmd::dispatch::{command, Command};
use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::fields::Field;
use crate::firmware::Firmware;
use crate::ifc;
use crate::ifc::{modify_nic_vport_context_in as mi, modify_vport_state_in, query_vport_counter_out as vc};

impl EthCx<'_> {
    /// The port's operational state: cable connected and PAOS admin up.
    pub(crate) fn oper_up(&self) -> bool {
        self.eth.vport.cable && self.eth.regs.admin_up()
    }

    /// Announces a change of the operational state (cable or PAOS): a PORT_CHANGE EQE (sub_type 4
    /// ACTIVE, 1 DOWN, port 1) on every EQ that asked for port events, once per flip.
    pub(crate) fn link_changed(&mut self) {
        let up = self.oper_up();
        if up == self.eth.vport.announced_up {
            return;
        }
        self.eth.vport.announced_up = up;
        let sub = if up { ifc::MLX5_PORT_CHANGE_SUBTYPE_ACTIVE } else { ifc::MLX5_PORT_CHANGE_SUBTYPE_DOWN };
        self.core.port_event(sub as u8);
    }
}

impl Firmware {
    /// The emulated cable of an Ethernet port (control socket `link up|down`).
    pub fn eth_set_cable(&mut self, connected: bool) {
        if let Ok(mut cx) = self.eth_cx() {
            cx.eth.vport.cable = connected;
            cx.link_changed();
        }
    }

    /// The Ethernet port's traffic counters, for the data path and `stats`
    /// (`None` on an InfiniBand port).
    pub fn vport_counters(&self) -> Option<&Arc<VportCounters>> {
        self.port.eth().map(|e| &e.vport.counters)
    }
}

fn mac_u64(m: &[u8; 6]) -> u64 {
    m.iter().fold(0u64, |a, &b| a << 8 | b as u64)
}

fn mac_of(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

pub fn query_nic_vport_context(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_nic_vport_context_in as i;
    use ifc::query_nic_vport_context_out::nic_vport_context as c;
    r.own_vport(i::other_vport, fail!(status::BAD_PARAM, QUERY_NIC_VPORT_CONTEXT_BAD_PARAM))?;
    let list_type = r.get(i::allowed_list_type);
    let v = &cx.eth.vport;
    let p = &cx.cfg;
    // Each list element is 8 bytes: a MAC in the low 48 bits, or a VLAN
    // (`struct mlx5_ifc_vlan_layout_bits`) in bits 43:32.
    let list: Vec<u64> = match list_type {
        0 => v.uc_list.iter().map(mac_u64).collect(),
        1 => v.mc_list.iter().map(mac_u64).collect(),
        2 => v.vlan_list.iter().map(|&id| (id as u64) << 32).collect(),
        _ => return Err(fail!(status::BAD_PARAM, QUERY_NIC_VPORT_CONTEXT_BAD_PARAM_2)),
    };
    let mut o = out(ifc::query_nic_vport_context_out::SIZE + list.len() * 8);
    c::min_wqe_inline_mode.set(&mut o, 0);
    c::roce_en.set(&mut o, v.roce_en as u64);
    c::disable_uc_local_lb.set(&mut o, v.disable_uc_local_lb as u64);
    c::disable_mc_local_lb.set(&mut o, v.disable_mc_local_lb as u64);
    c::sd_group.set(&mut o, 0);
    c::mtu.set(&mut o, v.mtu as u64);
    c::system_image_guid.set(&mut o, p.sys_image_guid);
    c::port_guid.set(&mut o, p.port_guid);
    c::node_guid.set(&mut o, p.node_guid);
    c::promisc_uc.set(&mut o, v.promisc_uc as u64);
    c::promisc_mc.set(&mut o, v.promisc_mc as u64);
    c::promisc_all.set(&mut o, v.promisc_all as u64);
    c::allowed_list_type.set(&mut o, list_type);
    c::allowed_list_size.set(&mut o, list.len() as u64);
    c::permanent_address.set(&mut o, mac_u64(&v.mac));
    for (k, &e) in list.iter().enumerate() {
        c::current_uc_mac_address.elem(k as u32).set(&mut o, e);
    }
    Ok(o)
}

pub fn modify_nic_vport_context(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::nic_vport_context as c;
    use mi::field_select as fs;
    r.own_vport(mi::other_vport, fail!(status::BAD_PARAM, MODIFY_NIC_VPORT_CONTEXT_BAD_PARAM))?;
    r.need(mi::SIZE)?;
    let ctx = |f: Field| r.get(mi::nic_vport_context.inner(f));
    let unsupported = [fs::node_guid, fs::port_guid, fs::permanent_address, fs::min_inline, fs::change_event];
    if unsupported.iter().any(|&f| r.get(f) != 0) {
        // Identity and inline mode are the device's (firmware refuses them for a PF's own vport).
        return Err(fail!(status::BAD_PARAM, MODIFY_NIC_VPORT_CONTEXT_BAD_PARAM_2));
    }
    let mut lists: Option<(u64, Vec<u64>)> = None;
    if r.get(fs::addresses_list) != 0 {
        let ty = ctx(c::allowed_list_type);
        let n = ctx(c::allowed_list_size) as usize;
        let max_log = match ty {
            0 => ifc::cmd_hca_cap::log_max_current_uc_list,
            1 => ifc::cmd_hca_cap::log_max_current_mc_list,
            2 => ifc::cmd_hca_cap::log_max_vlan_list,
            _ => return Err(fail!(status::BAD_PARAM, MODIFY_NIC_VPORT_CONTEXT_BAD_PARAM_3)),
        };
        let cap = cx.hca.cap(0).map(|p| max_log.get(p)).unwrap_or(0);
        if n > 1usize << cap {
            return Err(fail!(status::BAD_PARAM, MODIFY_NIC_VPORT_CONTEXT_BAD_PARAM_4));
        }
        let base = mi::nic_vport_context::current_uc_mac_address.bit_off;
        let need = (base / 8) as usize + n * 8;
        r.need(need)?;
        let elems = (0..n).map(|k| r.get(Field::new(base + k as u32 * 64, 64))).collect();
        lists = Some((ty, elems));
    }
    // Everything validated: apply.
    let v = &mut cx.eth.vport;
    if r.get(fs::mtu) != 0 {
        v.mtu = ctx(c::mtu) as u16;
    }
    if r.get(fs::promisc) != 0 {
        v.promisc_uc = ctx(c::promisc_uc) != 0;
        v.promisc_mc = ctx(c::promisc_mc) != 0;
        v.promisc_all = ctx(c::promisc_all) != 0;
    }
    if r.get(fs::roce_en) != 0 {
        v.roce_en = ctx(c::roce_en) != 0;
    }
    if r.get(fs::disable_uc_local_lb) != 0 {
        v.disable_uc_local_lb = ctx(c::disable_uc_local_lb) != 0;
    }
    if r.get(fs::disable_mc_local_lb) != 0 {
        v.disable_mc_local_lb = ctx(c::disable_mc_local_lb) != 0;
    }
    match lists {
        Some((0, e)) => v.uc_list = e.into_iter().map(mac_of).collect(),
        Some((1, e)) => v.mc_list = e.into_iter().map(mac_of).collect(),
        Some((_, e)) => v.vlan_list = e.into_iter().map(|x| ((x >> 32) & 0xfff) as u16).collect(),
        None => {}
    }
    Ok(out(16))
}

pub fn query_vport_state(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_vport_state_in as i;
    use ifc::query_vport_state_out as o_;
    r.own_vport(i::other_vport, fail!(status::BAD_PARAM, ETH_QUERY_VPORT_STATE_BAD_PARAM))?;
    if r.get(i::op_mod) != 0 {
        // Only the NIC vport (op_mod 0 VNIC_VPORT) exists: no e-switch, no uplink.
        return Err(fail!(status::BAD_PARAM, ETH_QUERY_VPORT_STATE_BAD_PARAM_2));
    }
    let mut o = out(o_::SIZE);
    o_::admin_state.set(&mut o, cx.eth.vport.admin_state as u64);
    o_::state.set(&mut o, cx.oper_up() as u64);
    Ok(o)
}

pub fn modify_vport_state(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.own_vport(modify_vport_state_in::other_vport, fail!(status::BAD_PARAM, MODIFY_VPORT_STATE_BAD_PARAM))?;
    let s = r.get(modify_vport_state_in::admin_state);
    if !(1..=3).contains(&s) {
        return Err(fail!(status::BAD_PARAM, MODIFY_VPORT_STATE_BAD_PARAM_2));
    }
    cx.eth.vport.admin_state = s as u8;
    Ok(out(16))
}

pub fn query_vport_counter(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.own_vport(ifc::query_vport_counter_in::other_vport, fail!(status::BAD_PARAM, QUERY_VPORT_COUNTER_BAD_PARAM))?;
    let c = &cx.eth.vport.counters;
    let mut o = out(vc::SIZE);
    let mut put = |at: usize, p: &AtomicU64, b: &AtomicU64| {
        o[at..at + 8].copy_from_slice(&p.load(Ordering::Relaxed).to_be_bytes());
        o[at + 8..at + 16].copy_from_slice(&b.load(Ordering::Relaxed).to_be_bytes());
    };
    let zero = AtomicU64::new(0);
    put(vc::received_errors.byte_off(), &c.rx_errors, &zero);
    put(vc::transmit_errors.byte_off(), &c.tx_errors, &zero);
    put(vc::received_eth_broadcast.byte_off(), &c.rx_broadcast_packets, &c.rx_broadcast_octets);
    put(vc::transmitted_eth_broadcast.byte_off(), &c.tx_broadcast_packets, &c.tx_broadcast_octets);
    put(vc::received_eth_unicast.byte_off(), &c.rx_unicast_packets, &c.rx_unicast_octets);
    put(vc::transmitted_eth_unicast.byte_off(), &c.tx_unicast_packets, &c.tx_unicast_octets);
    put(vc::received_eth_multicast.byte_off(), &c.rx_multicast_packets, &c.rx_multicast_octets);
    put(vc::transmitted_eth_multicast.byte_off(), &c.tx_multicast_packets, &c.tx_multicast_octets);
    Ok(o)
}

/// The P_Key table an Ethernet port reports (`mlx5_ib` reads it for the IB core's cache even on
/// Ethernet): the default P_Key at index 0, every other entry 0. Its size is `pkey_table_size`'s (0: 128).
pub const PKEY_TABLE_LEN: usize = 128;

pub fn query_hca_vport_pkey(_cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    use ifc::query_hca_vport_pkey_in as i;
    r.own_vport(i::other_vport, fail!(status::BAD_PARAM, QUERY_HCA_VPORT_PKEY_BAD_PARAM))?;
    if r.get(i::port_num) > 1 {
        return Err(fail!(status::BAD_PARAM, QUERY_HCA_VPORT_PKEY_BAD_PARAM_2));
    }
    let index = r.get(i::pkey_index) as usize;
    // MLX5_HCA_VPORT_ALL_PKEYS (0xffff): the whole table.
    let (first, n) = match index {
        0xffff => (0, PKEY_TABLE_LEN),
        k if k < PKEY_TABLE_LEN => (k, 1),
        _ => return Err(fail!(status::BAD_PARAM, QUERY_HCA_VPORT_PKEY_BAD_PARAM_3)),
    };
    let mut o = out(16 + n * 4);
    if first == 0 {
        // `pkey` is the low 16 bits of each 4-byte entry.
        ifc::query_hca_vport_pkey_out::pkey.elem(0).set(&mut o, 0xffff);
    }
    Ok(o)
}

/// The vport commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_QUERY_NIC_VPORT_CONTEXT, Enabled, eth_cx => query_nic_vport_context),
    command!(MLX5_CMD_OP_MODIFY_NIC_VPORT_CONTEXT, Enabled, eth_cx => modify_nic_vport_context),
    command!(MLX5_CMD_OP_QUERY_VPORT_STATE, Enabled, eth_cx => query_vport_state),
    command!(MLX5_CMD_OP_MODIFY_VPORT_STATE, Enabled, eth_cx => modify_vport_state),
    command!(MLX5_CMD_OP_QUERY_VPORT_COUNTER, Enabled, eth_cx => query_vport_counter),
    command!(MLX5_CMD_OP_QUERY_HCA_VPORT_PKEY, Enabled, eth_cx => query_hca_vport_pkey),
];
