//! The QoS register handlers (ACCESS_REG) of an Ethernet port: they check each image and update
//! [`QosRegs`](super::qos::QosRegs) in `EthPort::qos` (the state and its meaning: `qos.rs`).

use super::qos::{MAX_GROUP, NUM_DSCP, NUM_PRIO, QCAM_REGISTERS, TRUST_DSCP, TRUST_PCP};
use super::EthCx;
use crate::cmd::req::{fail, CmdErr};
use crate::cmd::status;
use crate::fields::Field;
use crate::ifc::{ets_tcn_config_reg as ets, qcam_reg, qetc_reg, qpdpm_dscp_reg, qpdpm_reg, qpts_reg, qtct_reg};

/// The register image of `size` bytes (BAD_INP_LEN when shorter).
fn image(data: &[u8], size: usize) -> Result<Vec<u8>, CmdErr> {
    Ok(data.get(..size).ok_or(fail!(status::BAD_INP_LEN, ETH_REG_BAD_INP_LEN))?.to_vec())
}

/// Local port 1 only.
fn port1(port: u64) -> Result<(), CmdErr> {
    if port != 1 {
        return Err(fail!(status::BAD_PARAM, ETH_REG_BAD_LOCAL_PORT));
    }
    Ok(())
}

/// Port 1, or 0 where the driver leaves the field unset (QTCT writes, QETCR).
fn port0or1(port: u64) -> Result<(), CmdErr> {
    if port > 1 {
        return Err(fail!(status::BAD_PARAM, ETH_REG_BAD_LOCAL_PORT));
    }
    Ok(())
}

/// The `qos_access_reg_cap_mask` bit of register 0x4000 + `n` (n < 128): bit n from the mask's least
/// significant bit (`qcam_access_reg_cap_mask` names only a few of them: `qpts`, `qpdpm`...).
fn reg_cap_bit(n: u32) -> Field {
    let m = qcam_reg::qos_access_reg_cap_mask;
    Field::new(m.bit_off + m.bits - 1 - n, 1)
}

/// QCAM: the QoS access-register mask (group 0, feature group 0 only); no feature bits.
pub fn qcam_access(write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let img = image(data, qcam_reg::SIZE)?;
    if write || qcam_reg::access_reg_group.get(&img) != 0 || qcam_reg::feature_group.get(&img) != 0 {
        return Err(fail!(status::BAD_PARAM, ETH_REG_QCAM_BAD_GROUP));
    }
    let mut o = vec![0u8; qcam_reg::SIZE];
    for &id in QCAM_REGISTERS {
        reg_cap_bit(id - 0x4000).set(&mut o, 1);
    }
    Ok(o)
}

/// QPTS: the trust state (1 PCP, 2 DSCP).
pub fn qpts_access(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let mut img = image(data, qpts_reg::SIZE)?;
    port1(qpts_reg::local_port.get(&img))?;
    if write {
        let t = qpts_reg::trust_state.get(&img) as u8;
        if t != TRUST_PCP && t != TRUST_DSCP {
            return Err(fail!(status::BAD_PARAM, ETH_REG_QPTS_BAD_TRUST));
        }
        cx.eth.qos.trust = t;
        cx.eth.apply_prio_map();
    }
    img.fill(0);
    qpts_reg::local_port.set(&mut img, 1);
    qpts_reg::trust_state.set(&mut img, cx.eth.qos.trust as u64);
    Ok(img)
}

/// QPDPM: 64 entries; a write updates those with `e` set (priority < 8), a read returns them all.
pub fn qpdpm_access(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let mut img = image(data, qpdpm_reg::SIZE)?;
    port1(qpdpm_reg::local_port.get(&img))?;
    if write {
        let upd: Vec<(usize, u8)> = (0..NUM_DSCP)
            .filter(|&d| qpdpm_reg::dscp.at(d as u32, qpdpm_dscp_reg::e).get(&img) != 0)
            .map(|d| (d, qpdpm_reg::dscp.at(d as u32, qpdpm_dscp_reg::prio).get(&img) as u8))
            .collect();
        if upd.iter().any(|&(_, p)| p as usize >= NUM_PRIO) {
            return Err(fail!(status::BAD_PARAM, ETH_REG_QPDPM_BAD_PRIO));
        }
        for (d, p) in upd {
            cx.eth.qos.dscp2prio[d] = p;
        }
        cx.eth.apply_prio_map();
    }
    img.fill(0);
    qpdpm_reg::local_port.set(&mut img, 1);
    for (d, &p) in cx.eth.qos.dscp2prio.iter().enumerate() {
        qpdpm_reg::dscp.at(d as u32, qpdpm_dscp_reg::prio).set(&mut img, p as u64);
    }
    Ok(img)
}

/// QTCT: the traffic class of one priority. `mlx5_set_port_prio_tc` leaves `port_number` 0 (the
/// query sets 1): both name the one port.
pub fn qtct_access(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let mut img = image(data, qtct_reg::SIZE)?;
    port0or1(qtct_reg::port_number.get(&img))?;
    let prio = qtct_reg::prio.get(&img) as usize;
    if write {
        // tclass is 3 bits: every value names one of the 8 TCs.
        cx.eth.qos.prio2tc[prio] = qtct_reg::tclass.get(&img) as u8;
    }
    img.fill(0);
    qtct_reg::port_number.set(&mut img, 1);
    qtct_reg::prio.set(&mut img, prio as u64);
    qtct_reg::tclass.set(&mut img, cx.eth.qos.prio2tc[prio] as u64);
    Ok(img)
}

/// QETCR: per-TC group / bandwidth / rate limit, merged by valid bit; mlx5e leaves `port_number` 0.
pub fn qetcr_access(cx: &mut EthCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    let mut img = image(data, qetc_reg::SIZE)?;
    port0or1(qetc_reg::port_number.get(&img))?;
    if write {
        let mut next = cx.eth.qos.clone();
        for (i, tc) in next.tc.iter_mut().enumerate() {
            if qetc_reg::tc_configuration.at(i as u32, ets::g).get(&img) != 0 {
                tc.group = qetc_reg::tc_configuration.at(i as u32, ets::group).get(&img) as u8;
            }
            if qetc_reg::tc_configuration.at(i as u32, ets::b).get(&img) != 0 {
                tc.bw_allocation = qetc_reg::tc_configuration.at(i as u32, ets::bw_allocation).get(&img) as u8;
            }
            if qetc_reg::tc_configuration.at(i as u32, ets::r).get(&img) != 0 {
                tc.max_bw_units = qetc_reg::tc_configuration.at(i as u32, ets::max_bw_units).get(&img) as u8;
                tc.max_bw_value = qetc_reg::tc_configuration.at(i as u32, ets::max_bw_value).get(&img) as u8;
            }
            if tc.group > MAX_GROUP || tc.bw_allocation > 100 {
                return Err(fail!(status::BAD_PARAM, ETH_REG_QETCR_BAD_TC));
            }
        }
        if qetc_reg::global_configuration::r.get(&img) != 0 {
            next.global_max_bw = (
                qetc_reg::global_configuration::max_bw_units.get(&img) as u8,
                qetc_reg::global_configuration::max_bw_value.get(&img) as u8,
            );
        }
        cx.eth.qos = next;
    }
    img.fill(0);
    let q = &cx.eth.qos;
    for (i, tc) in q.tc.iter().enumerate() {
        qetc_reg::tc_configuration.at(i as u32, ets::group).set(&mut img, tc.group as u64);
        qetc_reg::tc_configuration.at(i as u32, ets::bw_allocation).set(&mut img, tc.bw_allocation as u64);
        qetc_reg::tc_configuration.at(i as u32, ets::max_bw_units).set(&mut img, tc.max_bw_units as u64);
        qetc_reg::tc_configuration.at(i as u32, ets::max_bw_value).set(&mut img, tc.max_bw_value as u64);
    }
    qetc_reg::global_configuration::max_bw_units.set(&mut img, q.global_max_bw.0 as u64);
    qetc_reg::global_configuration::max_bw_value.set(&mut img, q.global_max_bw.1 as u64);
    Ok(img)
}
