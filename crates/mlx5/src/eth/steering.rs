//! NIC RX flow tables, groups and entries (owner: eth-rx): the commands that
//! program them and [`Steering::classify`], which walks them from the root
//! for one frame's [`MatchImage`].
//!
//! Only `table_type` 0 (NIC RX) exists. Tables are kept as given (entries by
//! `flow_index`, nothing pre-allocated for `log_size`). Evaluation: the
//! entries of a table in increasing `flow_index`; the first whose
//! `(image XOR value) AND group mask` is zero wins; DROP drops, FWD_DEST
//! forwards to each destination (TIRs collected once, tables walked);
//! an entry that neither drops nor forwards, or no match, takes the table's
//! miss action (drop, or the miss table). A walk that revisits a table or
//! goes deeper than [`MAX_DEPTH`] (or visits more than [`MAX_VISITS`] tables)
//! drops the frame and counts it.

use std::collections::BTreeMap;

pub use super::flow_table::{
    Dest, DropReason, FlowGroup, FlowTable, Fte, Miss, Steering, SteeringDrops, Verdict, LOG_MAX_FT_SIZE, MAX_DEPTH,
    MAX_DESTINATIONS, MAX_FLOWS, MAX_GROUPS, MAX_TABLES, MAX_VISITS,
};
use super::match_image::PARAM_LEN;
use super::EthCx;
use crate::cmd::dispatch::{command, Command};
use crate::cmd::req::{fail, out, CmdErr, CmdResult, Req};
use crate::cmd::status;
use crate::cmd::syndrome as syn;
use crate::firmware::Firmware;
use crate::ifc::set_fte_in::flow_context as fc;
use crate::ifc::{self, create_flow_group_in, create_flow_table_in, dest_format, destroy_flow_table_in, set_fte_in};
use crate::ifc::{MLX5_FLOW_CONTEXT_ACTION_ALLOW, MLX5_FLOW_CONTEXT_ACTION_COUNT};
use crate::ifc::{MLX5_FLOW_CONTEXT_ACTION_DROP, MLX5_FLOW_CONTEXT_ACTION_FWD_DEST};
use crate::ifc::{MLX5_IFC_FLOW_DESTINATION_TYPE_FLOW_TABLE, MLX5_IFC_FLOW_DESTINATION_TYPE_TIR};

// `table_type` (and, but for CREATE_FLOW_TABLE, `table_id`) is at the same place in every flow-steering
// command: the checks every command shares ([`check_type`], `Steering::table_mut`) read
// `destroy_flow_table_in`'s. CREATE and MODIFY_FLOW_TABLE's `flow_table_context` ([`miss_of`]) too.
const _: () = {
    use ifc::*;
    let ty = destroy_flow_table_in::table_type.bit_off;
    assert!(create_flow_table_in::table_type.bit_off == ty && modify_flow_table_in::table_type.bit_off == ty);
    assert!(set_flow_table_root_in::table_type.bit_off == ty && create_flow_group_in::table_type.bit_off == ty);
    assert!(destroy_flow_group_in::table_type.bit_off == ty && set_fte_in::table_type.bit_off == ty);
    assert!(delete_fte_in::table_type.bit_off == ty);
    let id = destroy_flow_table_in::table_id.bit_off;
    assert!(modify_flow_table_in::table_id.bit_off == id && set_flow_table_root_in::table_id.bit_off == id);
    assert!(create_flow_group_in::table_id.bit_off == id && destroy_flow_group_in::table_id.bit_off == id);
    assert!(set_fte_in::table_id.bit_off == id && delete_fte_in::table_id.bit_off == id);
    assert!(create_flow_table_in::flow_table_context.bit_off == modify_flow_table_in::flow_table_context.bit_off);
};

fn check_type(r: &Req<'_>, syndrome: u32) -> Result<(), CmdErr> {
    if r.get(destroy_flow_table_in::table_type) != 0 {
        return Err(CmdErr { status: status::BAD_PARAM, syndrome });
    }
    Ok(())
}

/// The miss action of a `flow_table_context`.
fn miss_of(cx: &EthCx<'_>, r: &Req<'_>) -> Result<Miss, CmdErr> {
    use create_flow_table_in::flow_table_context as ftc;
    match r.get(ftc::table_miss_action) {
        0 => Ok(Miss::Drop),
        1 => {
            let id = r.get(ftc::table_miss_id) as u32;
            if !cx.eth.steering.tables.contains_key(&id) {
                return Err(fail!(status::BAD_PARAM, FLOW_TABLE_BAD_MISS_ID));
            }
            Ok(Miss::Table(id))
        }
        _ => Err(fail!(status::BAD_PARAM, FLOW_TABLE_BAD_MISS_ACTION)),
    }
}

pub fn create_flow_table(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(0x20)?;
    check_type(r, syn::CREATE_FLOW_TABLE_BAD_TYPE)?;
    let log_size = r.get(create_flow_table_in::flow_table_context::log_size) as u8;
    if log_size > LOG_MAX_FT_SIZE {
        return Err(fail!(status::BAD_PARAM, CREATE_FLOW_TABLE_BAD_SIZE));
    }
    let miss = miss_of(cx, r)?;
    let s = &mut cx.eth.steering;
    if s.tables.len() >= MAX_TABLES {
        return Err(fail!(status::LIM, CREATE_FLOW_TABLE_LIM));
    }
    let id = loop {
        s.next_table = (s.next_table + 1) & 0x00ff_ffff;
        if s.next_table != 0 && !s.tables.contains_key(&s.next_table) {
            break s.next_table;
        }
    };
    let level = r.get(create_flow_table_in::flow_table_context::level) as u8;
    s.tables.insert(id, FlowTable { level, log_size, miss, groups: BTreeMap::new(), entries: BTreeMap::new() });
    let mut o = out(0x10);
    ifc::create_flow_table_out::table_id.set(&mut o, id as u64);
    Ok(o)
}

pub fn destroy_flow_table(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(0x18)?;
    check_type(r, syn::DESTROY_FLOW_TABLE_BAD_TYPE)?;
    let s = &mut cx.eth.steering;
    let id = r.get(destroy_flow_table_in::table_id) as u32;
    let t = s.table_mut(r, syn::DESTROY_FLOW_TABLE_BAD_ID)?;
    if !t.groups.is_empty() || !t.entries.is_empty() {
        return Err(fail!(status::BAD_RES_STATE, DESTROY_FLOW_TABLE_IN_USE));
    }
    s.tables.remove(&id);
    if s.root == Some(id) {
        s.root = None;
    }
    Ok(out(0x10))
}

pub fn modify_flow_table(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(0x20)?;
    check_type(r, syn::MODIFY_FLOW_TABLE_BAD_TYPE)?;
    let select = r.get(ifc::modify_flow_table_in::modify_field_select);
    if select & !(ifc::MLX5_MODIFY_FLOW_TABLE_MISS_TABLE_ID as u64) != 0 {
        return Err(fail!(status::BAD_PARAM, MODIFY_FLOW_TABLE_BAD_SELECT));
    }
    let id = r.get(ifc::modify_flow_table_in::table_id) as u32;
    let miss = if select != 0 { Some(miss_of(cx, r)?) } else { None };
    if miss == Some(Miss::Table(id)) {
        return Err(fail!(status::BAD_PARAM, MODIFY_FLOW_TABLE_SELF_MISS));
    }
    let t = cx.eth.steering.table_mut(r, syn::MODIFY_FLOW_TABLE_BAD_ID)?;
    if let Some(m) = miss {
        t.miss = m;
    }
    Ok(out(0x10))
}

pub fn set_flow_table_root(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(0x18)?;
    check_type(r, syn::SET_FLOW_TABLE_ROOT_BAD_TYPE)?;
    let s = &mut cx.eth.steering;
    if r.op_mod == 1 {
        s.root = None;
        return Ok(out(0x10));
    }
    let id = r.get(ifc::set_flow_table_root_in::table_id) as u32;
    if !s.tables.contains_key(&id) {
        return Err(fail!(status::BAD_PARAM, SET_FLOW_TABLE_ROOT_BAD_ID));
    }
    s.root = Some(id);
    Ok(out(0x10))
}

fn param(r: &Req<'_>, at: usize) -> Result<Box<[u8; PARAM_LEN]>, CmdErr> {
    let b = r.input.get(at..at + PARAM_LEN).ok_or(fail!(status::BAD_INP_LEN, FLOW_SHORT_MATCH_PARAM))?;
    Ok(Box::new(b.try_into().expect("512 bytes")))
}

pub fn create_flow_group(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    check_type(r, syn::CREATE_FLOW_GROUP_BAD_TYPE)?;
    let mask = param(r, create_flow_group_in::match_criteria.byte_off())?;
    let (start, end) =
        (r.get(create_flow_group_in::start_flow_index) as u32, r.get(create_flow_group_in::end_flow_index) as u32);
    let enable = r.get(create_flow_group_in::match_criteria_enable) as u8;
    let s = &mut cx.eth.steering;
    if s.groups >= MAX_GROUPS {
        return Err(fail!(status::LIM, CREATE_FLOW_GROUP_LIM));
    }
    let t = s.table_mut(r, syn::CREATE_FLOW_GROUP_BAD_TABLE)?;
    if start > end || (end as u64) >> t.log_size != 0 {
        return Err(fail!(status::BAD_PARAM, CREATE_FLOW_GROUP_BAD_RANGE));
    }
    if t.groups.values().any(|g| start <= g.end && g.start <= end) {
        return Err(fail!(status::BAD_PARAM, CREATE_FLOW_GROUP_OVERLAP));
    }
    let id = loop {
        s.next_group = (s.next_group + 1) & 0x00ff_ffff;
        let n = s.next_group;
        if n != 0 && !s.tables.values().any(|t| t.groups.contains_key(&n)) {
            break n;
        }
    };
    let t = s.table_mut(r, syn::CREATE_FLOW_GROUP_BAD_TABLE)?;
    t.groups.insert(id, FlowGroup { start, end, enable, mask });
    s.groups += 1;
    let mut o = out(0x10);
    ifc::create_flow_group_out::group_id.set(&mut o, id as u64);
    Ok(o)
}

pub fn destroy_flow_group(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(0x1c)?;
    check_type(r, syn::DESTROY_FLOW_GROUP_BAD_TYPE)?;
    let gid = r.get(ifc::destroy_flow_group_in::group_id) as u32;
    let s = &mut cx.eth.steering;
    let t = s.table_mut(r, syn::DESTROY_FLOW_GROUP_BAD_TABLE)?;
    if !t.groups.contains_key(&gid) {
        return Err(fail!(status::BAD_PARAM, DESTROY_FLOW_GROUP_BAD_ID));
    }
    if t.entries.values().any(|e| e.group == gid) {
        return Err(fail!(status::BAD_RES_STATE, DESTROY_FLOW_GROUP_IN_USE));
    }
    t.groups.remove(&gid);
    s.groups -= 1;
    Ok(out(0x10))
}

/// `modify_enable_mask` bits of SET_FLOW_TABLE_ENTRY op_mod 1.
mod modify {
    pub const ACTION: u64 = 1 << 0;
    pub const FLOW_TAG: u64 = 1 << 1;
    pub const DESTINATION_LIST: u64 = 1 << 2;
}

/// The destination list of a `flow_context` (flow counters after it are
/// read past and ignored: no flow counter is ever allocated).
fn destinations(cx: &EthCx<'_>, r: &Req<'_>, act: u32) -> Result<Vec<Dest>, CmdErr> {
    if r.get(fc::extended_destination) != 0 {
        return Err(fail!(status::BAD_PARAM, SET_FTE_EXTENDED_DEST));
    }
    let n = r.get(fc::destination_list_size) as usize;
    let counters = r.get(fc::flow_counter_list_size) as usize;
    if n > MAX_DESTINATIONS || counters > MAX_DESTINATIONS {
        return Err(fail!(status::BAD_PARAM, SET_FTE_TOO_MANY_DEST));
    }
    // Non-extended entries: `dest_format`s (8 bytes), then the flow counters (`flow_counter_list`, 8 bytes);
    // the array's element type is the union with the 16-byte extended format.
    let list = fc::destination.byte_off();
    if list + (n + counters) * dest_format::SIZE > r.input.len() {
        return Err(fail!(status::BAD_INP_LEN, SET_FTE_SHORT_DEST));
    }
    if (act & MLX5_FLOW_CONTEXT_ACTION_FWD_DEST != 0) != (n != 0) {
        return Err(fail!(status::BAD_PARAM, SET_FTE_DEST_VS_ACTION));
    }
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let d = &r.input[list + i * dest_format::SIZE..];
        let id = dest_format::destination_id.get32(d);
        let dest = match dest_format::destination_type.get32(d) {
            MLX5_IFC_FLOW_DESTINATION_TYPE_FLOW_TABLE if cx.eth.steering.tables.contains_key(&id) => Dest::Table(id),
            MLX5_IFC_FLOW_DESTINATION_TYPE_TIR if cx.eth.dispatch.tirs.contains_key(&id) => Dest::Tir(id),
            MLX5_IFC_FLOW_DESTINATION_TYPE_FLOW_TABLE | MLX5_IFC_FLOW_DESTINATION_TYPE_TIR => {
                return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_DEST_ID))
            }
            _ => return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_DEST_TYPE)),
        };
        v.push(dest);
    }
    Ok(v)
}

pub fn set_flow_table_entry(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(set_fte_in::SIZE)?;
    check_type(r, syn::SET_FTE_BAD_TYPE)?;
    let act = r.get(fc::action) as u32;
    let known = MLX5_FLOW_CONTEXT_ACTION_ALLOW
        | MLX5_FLOW_CONTEXT_ACTION_DROP
        | MLX5_FLOW_CONTEXT_ACTION_FWD_DEST
        | MLX5_FLOW_CONTEXT_ACTION_COUNT;
    if act & !known != 0 || (act & MLX5_FLOW_CONTEXT_ACTION_DROP != 0 && act & MLX5_FLOW_CONTEXT_ACTION_FWD_DEST != 0) {
        return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_ACTION));
    }
    let dests = destinations(cx, r, act)?;
    let value = param(r, fc::match_value.byte_off())?;
    let (index, gid, tag) =
        (r.get(set_fte_in::flow_index) as u32, r.get(fc::group_id) as u32, r.get(fc::flow_tag) as u32);
    let s = &mut cx.eth.steering;
    let table_id = r.get(set_fte_in::table_id) as u32;
    if let Some(Dest::Table(_)) = dests.iter().find(|d| **d == Dest::Table(table_id)) {
        return Err(fail!(status::BAD_PARAM, SET_FTE_SELF_DEST));
    }
    let new_flow = s.flows < MAX_FLOWS;
    let t = s.table_mut(r, syn::SET_FTE_BAD_TABLE)?;
    if (index as u64) >> t.log_size != 0 {
        return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_INDEX));
    }
    if r.op_mod == 1 {
        let mask = r.get(set_fte_in::modify_enable_mask);
        let Some(e) = t.entries.get_mut(&index) else {
            return Err(fail!(status::BAD_PARAM, SET_FTE_NO_ENTRY));
        };
        if mask & modify::ACTION != 0 {
            e.action = act;
        }
        if mask & modify::FLOW_TAG != 0 {
            e.flow_tag = tag;
        }
        if mask & modify::DESTINATION_LIST != 0 {
            e.dests = dests;
        }
        return Ok(out(0x10));
    }
    if r.op_mod != 0 {
        return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_OP_MOD));
    }
    let Some(g) = t.groups.get(&gid) else {
        return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_GROUP));
    };
    if !(g.start..=g.end).contains(&index) {
        return Err(fail!(status::BAD_PARAM, SET_FTE_OUTSIDE_GROUP));
    }
    if t.entries.contains_key(&index) {
        return Err(fail!(status::BAD_RES_STATE, SET_FTE_EXISTS));
    }
    if !new_flow {
        return Err(fail!(status::LIM, SET_FTE_LIM));
    }
    t.entries.insert(index, Fte { group: gid, flow_tag: tag, action: act, dests, value });
    s.flows += 1;
    Ok(out(0x10))
}

pub fn delete_flow_table_entry(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(0x24)?;
    check_type(r, syn::DELETE_FTE_BAD_TYPE)?;
    let index = r.get(ifc::delete_fte_in::flow_index) as u32;
    let s = &mut cx.eth.steering;
    let t = s.table_mut(r, syn::DELETE_FTE_BAD_TABLE)?;
    if t.entries.remove(&index).is_none() {
        return Err(fail!(status::BAD_PARAM, DELETE_FTE_NO_ENTRY));
    }
    s.flows -= 1;
    Ok(out(0x10))
}

/// The flow-table commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_CREATE_FLOW_TABLE, Enabled, eth_cx => create_flow_table),
    command!(MLX5_CMD_OP_DESTROY_FLOW_TABLE, Enabled, eth_cx => destroy_flow_table),
    command!(MLX5_CMD_OP_MODIFY_FLOW_TABLE, Enabled, eth_cx => modify_flow_table),
    command!(MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, Enabled, eth_cx => set_flow_table_root),
    command!(MLX5_CMD_OP_CREATE_FLOW_GROUP, Enabled, eth_cx => create_flow_group),
    command!(MLX5_CMD_OP_DESTROY_FLOW_GROUP, Enabled, eth_cx => destroy_flow_group),
    command!(MLX5_CMD_OP_SET_FLOW_TABLE_ENTRY, Enabled, eth_cx => set_flow_table_entry),
    command!(MLX5_CMD_OP_DELETE_FLOW_TABLE_ENTRY, Enabled, eth_cx => delete_flow_table_entry),
];
