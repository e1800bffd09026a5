//! The congestion-control commands of a RoCE port
//! (`/work/shared/mlx5-ethernet-roce.md` §5.1–§5.2): the one writer of the
//! port's `CcControl` from the guest's side, and its reader for the counters.
//!
//! * QUERY/MODIFY_CONG_STATUS (0x822/0x823): the `enable` bit of one node
//!   (`cong_protocol` 1 reaction point, 2 notification point) on one 802.1p
//!   `priority` (0–7). `tag_enable` (802.1Qau CN-tags) is not implemented:
//!   accepted, read back as 0.
//! * QUERY/MODIFY_CONG_PARAMS (0x824/0x825): the 256-byte parameter block of
//!   node 1 (RP: `RpParams`), 2 (NP: `NpParams`) or 3 (general:
//!   `rtt_resp_dscp`, held here, read by nothing). MODIFY copies exactly the
//!   fields whose `field_select` bit is set (the bits of ib/cong.c's
//!   `MLX5_IB_*_ATTR`; NP bit 4 carries `cnp_prio_mode` and `cnp_802p_prio`
//!   together, as the driver writes them) and keeps the rest; a bit that
//!   names no field of the node, or a selected value out of range, fails the
//!   whole command with BAD_PARAM and changes nothing.
//! * QUERY_CONG_STATISTICS (0x826): the four counters the data path adds to
//!   (`rp_cnp_ignored`, `rp_cnp_handled`, `np_ecn_marked_roce_packets`,
//!   `np_cnp_sent`); `clear` zeroes them after reading.
//!
//! Linux 6.12 sends only QUERY/MODIFY_CONG_PARAMS (debugfs `cc_params`) and
//! QUERY_CONG_STATISTICS (`hw_counters`); the status commands come from DEVX.
//! An InfiniBand port has no RoCE domain: the opcodes are not in its
//! table (BAD_OP) and its caps say so (`cc_query_allowed` = 0).

use std::ops::RangeInclusive;

use super::state::CongGeneral;
use crate::cmd::req::{fail, out, CmdErr, CmdResult, Req};
use crate::cmd::status;
use crate::fields::Field;
use crate::ifc::{cong_control_r_roce_ecn_np as ecn_np, cong_control_r_roce_ecn_rp as ecn_rp};
use crate::ifc::{cong_control_r_roce_general as general, cong_control_roce_ecn_auto};
use crate::ifc::{modify_cong_params_in, query_cong_params_in, query_cong_params_out};
use crate::ifc::{modify_cong_status_in, query_cong_status_in, query_cong_status_out};
use crate::ifc::{query_cong_statistics_in, query_cong_statistics_out};
use crate::roce::RoceCx;
use vrnic_cc::{CcConfig, NpParams, RpParams};

/// One parameter of a node's block: its field, its `field_select` bit, the
/// values the device takes, and where the port's state keeps it.
pub struct Param<P> {
    pub name: &'static str,
    pub field: Field,
    pub bit: u32,
    pub range: RangeInclusive<u32>,
    pub get: fn(&P) -> u32,
    pub set: fn(&mut P, u32),
}

const ANY: RangeInclusive<u32> = 0..=u32::MAX;

/// `cong_protocol` values (`enum mlx5_ib_cong_node_type` of drivers/infiniband/hw/mlx5/cong.c: not in
/// the mlx5 headers).
pub const NODE_RP: u64 = 1;
pub const NODE_NP: u64 = 2;
pub const NODE_GENERAL: u64 = 3;

// [`status_target`] reads QUERY and MODIFY_CONG_STATUS's node and priority through QUERY's names.
const _: () = {
    assert!(query_cong_status_in::cong_protocol.bit_off == modify_cong_status_in::cong_protocol.bit_off);
    assert!(query_cong_status_in::priority.bit_off == modify_cong_status_in::priority.bit_off);
};

macro_rules! param {
    ($layout:ident :: $f:ident, $bit:expr, bool) => {
        Param {
            name: stringify!($f),
            field: $layout::$f,
            bit: $bit,
            range: 0..=1,
            get: |p| p.$f as u32,
            set: |p, v| p.$f = v != 0,
        }
    };
    ($layout:ident :: $f:ident, $bit:expr, $range:expr) => {
        Param {
            name: stringify!($f),
            field: $layout::$f,
            bit: $bit,
            range: $range,
            get: |p| p.$f as u32,
            set: |p, v| p.$f = v as _,
        }
    };
}

/// Node 1, `cong_control_r_roce_ecn_rp`. Ranges: alpha and `dce_tcp_g` are
/// 10-bit fractions, `rpg_min_dec_fac` a percentage, `rpg_threshold` 1–31
/// and `rpg_gd` 0–15 (NVIDIA's DCQCN parameter page); the rest any value.
pub static RP_PARAMS: &[Param<RpParams>] = &[
    param!(ecn_rp::clamp_tgt_rate, 1, bool),
    param!(ecn_rp::clamp_tgt_rate_after_time_inc, 2, bool),
    param!(ecn_rp::rpg_time_reset, 3, ANY),
    param!(ecn_rp::rpg_byte_reset, 4, ANY),
    param!(ecn_rp::rpg_threshold, 5, 1..=31),
    param!(ecn_rp::rpg_max_rate, 6, ANY),
    param!(ecn_rp::rpg_ai_rate, 7, ANY),
    param!(ecn_rp::rpg_hai_rate, 8, ANY),
    param!(ecn_rp::rpg_min_dec_fac, 9, 0..=100),
    param!(ecn_rp::rpg_min_rate, 10, ANY),
    param!(ecn_rp::rate_to_set_on_first_cnp, 11, ANY),
    param!(ecn_rp::dce_tcp_g, 12, 0..=1023),
    param!(ecn_rp::dce_tcp_rtt, 13, ANY),
    param!(ecn_rp::rate_reduce_monitor_period, 14, ANY),
    param!(ecn_rp::initial_alpha_value, 15, 0..=1023),
    param!(ecn_rp::rpg_gd, 16, 0..=15),
];

/// Node 2, `cong_control_r_roce_ecn_np` (the 6- and 3-bit fields hold any value they can).
pub static NP_PARAMS: &[Param<NpParams>] = &[
    param!(ecn_np::min_time_between_cnps, 2, ANY),
    param!(ecn_np::cnp_dscp, 3, 0..=63),
    param!(ecn_np::cnp_prio_mode, 4, bool),
    param!(ecn_np::cnp_802p_prio, 4, 0..=7),
];

/// Node 3, `cong_control_r_roce_general` (bit 0 carries both fields).
pub static GENERAL_PARAMS: &[Param<CongGeneral>] =
    &[param!(general::rtt_resp_dscp_valid, 0, bool), param!(general::rtt_resp_dscp, 0, 0..=63)];

/// Writes every parameter of `p` into `block`.
pub fn encode<P>(table: &[Param<P>], p: &P, block: &mut [u8]) {
    for f in table {
        f.field.set(block, (f.get)(p) as u64);
    }
}

/// Copies the fields of `block` selected by `select` into `p`; nothing is
/// changed when a bit names no field of the table or a value is out of range.
pub fn apply<P: Copy>(table: &[Param<P>], select: u32, block: &[u8], p: &P) -> Result<P, CmdErr> {
    let known = table.iter().fold(0u32, |m, f| m | 1 << f.bit);
    if select & !known != 0 {
        return Err(fail!(status::BAD_PARAM, MODIFY_CONG_PARAMS_BAD_FIELD_SELECT));
    }
    let mut next = *p;
    for f in table.iter().filter(|f| select & (1 << f.bit) != 0) {
        let v = f.field.get32(block);
        if !f.range.contains(&v) {
            return Err(fail!(status::BAD_PARAM, MODIFY_CONG_PARAMS_BAD_VALUE));
        }
        (f.set)(&mut next, v);
    }
    Ok(next)
}

/// The node and priority a CONG_STATUS command names.
fn status_target(r: &Req<'_>) -> Result<(u64, u8), CmdErr> {
    let node = r.get(query_cong_status_in::cong_protocol);
    if node != NODE_RP && node != NODE_NP {
        return Err(fail!(status::BAD_PARAM, CONG_STATUS_BAD_PROTOCOL));
    }
    let prio = r.get(query_cong_status_in::priority);
    if prio > 7 {
        return Err(fail!(status::BAD_PARAM, CONG_STATUS_BAD_PRIORITY));
    }
    Ok((node, prio as u8))
}

pub fn query_cong_status(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(query_cong_status_in::SIZE)?;
    let (node, prio) = status_target(r)?;
    let c = cx.roce.cc.config();
    let on = if node == NODE_RP { c.rp_on(prio) } else { c.np_on(prio) };
    let mut o = out(query_cong_status_out::SIZE);
    query_cong_status_out::enable.set_bool(&mut o, on);
    Ok(o)
}

pub fn modify_cong_status(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(modify_cong_status_in::SIZE)?;
    let (node, prio) = status_target(r)?;
    let on = r.get(modify_cong_status_in::enable) != 0;
    let mut c = cx.roce.cc.config();
    let mask = if node == NODE_RP { &mut c.rp_enabled } else { &mut c.np_enabled };
    if on {
        *mask |= 1 << prio;
    } else {
        *mask &= !(1 << prio);
    }
    cx.roce.cc.set_config(c);
    Ok(out(16))
}

pub fn query_cong_params(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(query_cong_params_in::SIZE)?;
    let mut block = [0u8; cong_control_roce_ecn_auto::SIZE];
    let c = cx.roce.cc.config();
    match r.get(query_cong_params_in::cong_protocol) {
        NODE_RP => encode(RP_PARAMS, &c.rp, &mut block),
        NODE_NP => encode(NP_PARAMS, &c.np, &mut block),
        NODE_GENERAL => encode(GENERAL_PARAMS, &cx.roce.cong_general, &mut block),
        _ => return Err(fail!(status::BAD_PARAM, CONG_PARAMS_BAD_PROTOCOL)),
    }
    let mut o = out(query_cong_params_out::SIZE);
    if let Some(b) = query_cong_params_out::congestion_parameters.bytes_mut(&mut o) {
        b.copy_from_slice(&block);
    }
    Ok(o)
}

pub fn modify_cong_params(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(modify_cong_params_in::SIZE)?;
    let block = r.sub(modify_cong_params_in::congestion_parameters)?;
    let select = r.get(modify_cong_params_in::field_select) as u32;
    let c = cx.roce.cc.config();
    match r.get(modify_cong_params_in::cong_protocol) {
        NODE_RP => {
            let rp = apply(RP_PARAMS, select, &block, &c.rp)?;
            cx.roce.cc.set_config(CcConfig { rp, ..c });
        }
        NODE_NP => {
            let np = apply(NP_PARAMS, select, &block, &c.np)?;
            cx.roce.cc.set_config(CcConfig { np, ..c });
        }
        NODE_GENERAL => cx.roce.cong_general = apply(GENERAL_PARAMS, select, &block, &cx.roce.cong_general)?,
        _ => return Err(fail!(status::BAD_PARAM, CONG_PARAMS_BAD_PROTOCOL)),
    }
    Ok(out(16))
}

pub fn query_cong_statistics(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    use query_cong_statistics_out as o_;
    r.need(query_cong_statistics_in::SIZE)?;
    let s = if r.get(query_cong_statistics_in::clear) != 0 {
        cx.roce.cc.take_statistics()
    } else {
        cx.roce.cc.statistics()
    };
    let mut o = out(o_::SIZE);
    o_::rp_cnp_ignored.set(&mut o, s.rp_cnp_ignored);
    o_::rp_cnp_handled.set(&mut o, s.rp_cnp_handled);
    o_::np_ecn_marked_roce_packets.set(&mut o, s.np_ecn_marked_roce_packets);
    o_::np_cnp_sent.set(&mut o, s.np_cnp_sent);
    Ok(o)
}
