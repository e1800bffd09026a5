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

use std::collections::{BTreeMap, BTreeSet};

use super::match_image::{MatchImage, PARAM_LEN};
use super::steering_layout::{action, dest_type, flow_group as fg, flow_table_context as ftc, ft_in, fte};
use crate::mlx5::cmd::dispatch::{command, Command};
use crate::mlx5::cmd::req::{fail, out, CmdErr, CmdResult, Req};
use crate::mlx5::cmd::status;
use crate::mlx5::cmd::syndrome as syn;
use crate::mlx5::firmware::Firmware;

/// `log_max_ft_size` (flow_table_nic_cap).
pub const LOG_MAX_FT_SIZE: u8 = 24;
/// `1 << log_max_ft_num`.
pub const MAX_TABLES: usize = 1 << 12;
/// `1 << log_max_destination`.
pub const MAX_DESTINATIONS: usize = 1 << 8;
/// `1 << log_max_flow`: entries over all tables.
pub const MAX_FLOWS: usize = 1 << 20;
/// Flow groups over all tables.
pub const MAX_GROUPS: usize = 1 << 16;
/// Tables one frame may pass through in a row.
pub const MAX_DEPTH: usize = 32;
/// Table visits one frame may make in all (multi-destination entries fan
/// out: without a total bound a guest-built DAG could cost exponential time).
pub const MAX_VISITS: usize = 64;

/// What a table does with a frame no entry takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    Drop,
    Table(u32),
}

/// A flow group: an index range of its table and the mask of its entries.
#[derive(Debug, Clone)]
pub struct FlowGroup {
    pub start: u32,
    pub end: u32,
    pub enable: u8,
    pub mask: Box<[u8; PARAM_LEN]>,
}

/// A steering destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    Table(u32),
    Tir(u32),
}

/// A flow-table entry.
#[derive(Debug, Clone)]
pub struct Fte {
    pub group: u32,
    pub flow_tag: u32,
    pub action: u32,
    pub dests: Vec<Dest>,
    pub value: Box<[u8; PARAM_LEN]>,
}

/// One flow table.
#[derive(Debug, Clone)]
pub struct FlowTable {
    pub level: u8,
    pub log_size: u8,
    pub miss: Miss,
    pub groups: BTreeMap<u32, FlowGroup>,
    pub entries: BTreeMap<u32, Fte>,
}

/// Frames steering dropped, by reason (`stats`: `firmware.eth_rx.steering`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SteeringDrops {
    /// No root table set.
    pub no_root: u64,
    /// A table's miss action dropped it.
    pub miss: u64,
    /// A DROP entry took it.
    pub rule: u64,
    /// A forwarding cycle (or too deep a chain), or a destination that no longer exists.
    pub bad_chain: u64,
}

/// The flow tables the driver programs.
#[derive(Debug, Default)]
pub struct Steering {
    pub tables: BTreeMap<u32, FlowTable>,
    pub root: Option<u32>,
    pub drops: SteeringDrops,
    next_table: u32,
    next_group: u32,
    flows: usize,
    groups: usize,
}

/// Why steering dropped a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    NoRoot,
    Miss,
    Rule,
    BadChain,
}

/// Where steering sends a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// To each TIR (in the order found, each once), with the `flow_tag` of
    /// the entry that first forwarded to a TIR.
    Deliver {
        tirs: Vec<u32>,
        flow_tag: u32,
    },
    Drop(DropReason),
}

impl Steering {
    /// The verdict for a frame's match image, counted when it drops.
    pub fn classify(&mut self, img: &MatchImage) -> Verdict {
        let v = match self.root {
            None => Verdict::Drop(DropReason::NoRoot),
            Some(root) => {
                let mut walk = Walk {
                    tirs: Vec::new(),
                    seen: BTreeSet::new(),
                    flow_tag: None,
                    path: BTreeSet::new(),
                    visits: 0,
                    dropped: None,
                };
                walk.table(self, root, img, 0);
                match (walk.dropped, walk.tirs.is_empty()) {
                    (_, false) => Verdict::Deliver { tirs: walk.tirs, flow_tag: walk.flow_tag.unwrap_or(0) },
                    (Some(r), true) => Verdict::Drop(r),
                    (None, true) => Verdict::Drop(DropReason::Miss),
                }
            }
        };
        if let Verdict::Drop(r) = v {
            let d = &mut self.drops;
            match r {
                DropReason::NoRoot => d.no_root += 1,
                DropReason::Miss => d.miss += 1,
                DropReason::Rule => d.rule += 1,
                DropReason::BadChain => d.bad_chain += 1,
            }
        }
        v
    }

    fn table_mut(&mut self, r: &Req<'_>, syndrome: u32) -> Result<&mut FlowTable, CmdErr> {
        let id = r.get(ft_in::table_id) as u32;
        self.tables.get_mut(&id).ok_or(CmdErr { status: status::BAD_PARAM, syndrome })
    }
}

/// One frame's walk through the tables.
struct Walk {
    tirs: Vec<u32>,
    /// The TIRs of `tirs`, for the once-each check.
    seen: BTreeSet<u32>,
    flow_tag: Option<u32>,
    /// Tables on the current forwarding path (cycle guard).
    path: BTreeSet<u32>,
    /// Tables visited so far.
    visits: usize,
    dropped: Option<DropReason>,
}

impl Walk {
    fn drop(&mut self, r: DropReason) {
        self.dropped.get_or_insert(r);
    }

    fn table(&mut self, s: &Steering, id: u32, img: &MatchImage, depth: usize) {
        self.visits += 1;
        if depth >= MAX_DEPTH || self.visits > MAX_VISITS || !self.path.insert(id) {
            return self.drop(DropReason::BadChain);
        }
        let Some(t) = s.tables.get(&id) else {
            self.path.remove(&id);
            return self.drop(DropReason::BadChain);
        };
        let hit = t
            .entries
            .values()
            .find(|e| t.groups.get(&e.group).is_some_and(|g| img.matches(g.enable, &g.mask, &e.value)));
        match hit {
            Some(e) if e.action & action::DROP != 0 => self.drop(DropReason::Rule),
            Some(e) if e.action & action::FWD_DEST != 0 => {
                for d in &e.dests {
                    match *d {
                        Dest::Tir(n) => {
                            if self.seen.insert(n) {
                                self.tirs.push(n);
                                self.flow_tag.get_or_insert(e.flow_tag);
                            }
                        }
                        Dest::Table(next) => self.table(s, next, img, depth + 1),
                    }
                }
            }
            _ => match t.miss {
                Miss::Drop => self.drop(DropReason::Miss),
                Miss::Table(next) => self.table(s, next, img, depth + 1),
            },
        }
        self.path.remove(&id);
    }
}

fn check_type(r: &Req<'_>, syndrome: u32) -> Result<(), CmdErr> {
    if r.get(ft_in::table_type) != 0 {
        return Err(CmdErr { status: status::BAD_PARAM, syndrome });
    }
    Ok(())
}

/// The miss action of a `flow_table_context`.
fn miss_of(fw: &Firmware, r: &Req<'_>) -> Result<Miss, CmdErr> {
    match r.get(ftc::table_miss_action) {
        0 => Ok(Miss::Drop),
        1 => {
            let id = r.get(ftc::table_miss_id) as u32;
            if !fw.eth.steering.tables.contains_key(&id) {
                return Err(fail!(status::BAD_PARAM, FLOW_TABLE_BAD_MISS_ID));
            }
            Ok(Miss::Table(id))
        }
        _ => Err(fail!(status::BAD_PARAM, FLOW_TABLE_BAD_MISS_ACTION)),
    }
}

pub fn create_flow_table(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    r.need(0x20)?;
    check_type(r, syn::CREATE_FLOW_TABLE_BAD_TYPE)?;
    let log_size = r.get(ftc::log_size) as u8;
    if log_size > LOG_MAX_FT_SIZE {
        return Err(fail!(status::BAD_PARAM, CREATE_FLOW_TABLE_BAD_SIZE));
    }
    let miss = miss_of(fw, r)?;
    let s = &mut fw.eth.steering;
    if s.tables.len() >= MAX_TABLES {
        return Err(fail!(status::LIM, CREATE_FLOW_TABLE_LIM));
    }
    let id = loop {
        s.next_table = (s.next_table + 1) & 0x00ff_ffff;
        if s.next_table != 0 && !s.tables.contains_key(&s.next_table) {
            break s.next_table;
        }
    };
    let level = r.get(ftc::level) as u8;
    s.tables.insert(id, FlowTable { level, log_size, miss, groups: BTreeMap::new(), entries: BTreeMap::new() });
    let mut o = out(0x10);
    ftc::out_table_id.set(&mut o, id as u64);
    Ok(o)
}

pub fn destroy_flow_table(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    r.need(0x18)?;
    check_type(r, syn::DESTROY_FLOW_TABLE_BAD_TYPE)?;
    let s = &mut fw.eth.steering;
    let id = r.get(ft_in::table_id) as u32;
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

pub fn modify_flow_table(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    r.need(0x20)?;
    check_type(r, syn::MODIFY_FLOW_TABLE_BAD_TYPE)?;
    let select = r.get(ftc::modify_field_select);
    if select & !ftc::SELECT_MISS_TABLE_ID != 0 {
        return Err(fail!(status::BAD_PARAM, MODIFY_FLOW_TABLE_BAD_SELECT));
    }
    let id = r.get(ft_in::table_id) as u32;
    let miss = if select != 0 { Some(miss_of(fw, r)?) } else { None };
    if miss == Some(Miss::Table(id)) {
        return Err(fail!(status::BAD_PARAM, MODIFY_FLOW_TABLE_SELF_MISS));
    }
    let t = fw.eth.steering.table_mut(r, syn::MODIFY_FLOW_TABLE_BAD_ID)?;
    if let Some(m) = miss {
        t.miss = m;
    }
    Ok(out(0x10))
}

pub fn set_flow_table_root(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    r.need(0x18)?;
    check_type(r, syn::SET_FLOW_TABLE_ROOT_BAD_TYPE)?;
    let s = &mut fw.eth.steering;
    if r.op_mod == 1 {
        s.root = None;
        return Ok(out(0x10));
    }
    let id = r.get(ft_in::table_id) as u32;
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

pub fn create_flow_group(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    check_type(r, syn::CREATE_FLOW_GROUP_BAD_TYPE)?;
    let mask = param(r, fg::MATCH_CRITERIA)?;
    let (start, end) = (r.get(fg::start_flow_index) as u32, r.get(fg::end_flow_index) as u32);
    let enable = r.get(fg::match_criteria_enable) as u8;
    let s = &mut fw.eth.steering;
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
    fg::out_group_id.set(&mut o, id as u64);
    Ok(o)
}

pub fn destroy_flow_group(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    r.need(0x1c)?;
    check_type(r, syn::DESTROY_FLOW_GROUP_BAD_TYPE)?;
    let gid = r.get(fg::group_id) as u32;
    let s = &mut fw.eth.steering;
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
fn destinations(fw: &Firmware, r: &Req<'_>, act: u32) -> Result<Vec<Dest>, CmdErr> {
    if r.get(fte::extended_destination) != 0 {
        return Err(fail!(status::BAD_PARAM, SET_FTE_EXTENDED_DEST));
    }
    let n = r.get(fte::destination_list_size) as usize;
    let counters = r.get(fte::flow_counter_list_size) as usize;
    if n > MAX_DESTINATIONS || counters > MAX_DESTINATIONS {
        return Err(fail!(status::BAD_PARAM, SET_FTE_TOO_MANY_DEST));
    }
    if fte::DESTINATION + (n + counters) * 8 > r.input.len() {
        return Err(fail!(status::BAD_INP_LEN, SET_FTE_SHORT_DEST));
    }
    if (act & action::FWD_DEST != 0) != (n != 0) {
        return Err(fail!(status::BAD_PARAM, SET_FTE_DEST_VS_ACTION));
    }
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let d = &r.input[fte::DESTINATION + i * 8..];
        let id = u32::from_be_bytes([0, d[1], d[2], d[3]]);
        let dest = match d[0] {
            dest_type::FLOW_TABLE if fw.eth.steering.tables.contains_key(&id) => Dest::Table(id),
            dest_type::TIR if fw.eth.dispatch.tirs.contains_key(&id) => Dest::Tir(id),
            dest_type::FLOW_TABLE | dest_type::TIR => return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_DEST_ID)),
            _ => return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_DEST_TYPE)),
        };
        v.push(dest);
    }
    Ok(v)
}

pub fn set_flow_table_entry(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    r.need(fte::DESTINATION)?;
    check_type(r, syn::SET_FTE_BAD_TYPE)?;
    let act = r.get(fte::action) as u32;
    if act & !(action::ALLOW | action::DROP | action::FWD_DEST | action::COUNT) != 0
        || (act & action::DROP != 0 && act & action::FWD_DEST != 0)
    {
        return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_ACTION));
    }
    let dests = destinations(fw, r, act)?;
    let value = param(r, fte::MATCH_VALUE)?;
    let (index, gid, tag) = (r.get(fte::flow_index) as u32, r.get(fte::group_id) as u32, r.get(fte::flow_tag) as u32);
    let s = &mut fw.eth.steering;
    let table_id = r.get(ft_in::table_id) as u32;
    if let Some(Dest::Table(_)) = dests.iter().find(|d| **d == Dest::Table(table_id)) {
        return Err(fail!(status::BAD_PARAM, SET_FTE_SELF_DEST));
    }
    let new_flow = s.flows < MAX_FLOWS;
    let t = s.table_mut(r, syn::SET_FTE_BAD_TABLE)?;
    if (index as u64) >> t.log_size != 0 {
        return Err(fail!(status::BAD_PARAM, SET_FTE_BAD_INDEX));
    }
    if r.op_mod == 1 {
        let mask = r.get(fte::modify_enable_mask);
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

pub fn delete_flow_table_entry(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    r.need(0x24)?;
    check_type(r, syn::DELETE_FTE_BAD_TYPE)?;
    let index = r.get(fte::flow_index) as u32;
    let s = &mut fw.eth.steering;
    let t = s.table_mut(r, syn::DELETE_FTE_BAD_TABLE)?;
    if t.entries.remove(&index).is_none() {
        return Err(fail!(status::BAD_PARAM, DELETE_FTE_NO_ENTRY));
    }
    s.flows -= 1;
    Ok(out(0x10))
}

/// The flow-table commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_CREATE_FLOW_TABLE, Enabled, create_flow_table),
    command!(MLX5_CMD_OP_DESTROY_FLOW_TABLE, Enabled, destroy_flow_table),
    command!(MLX5_CMD_OP_MODIFY_FLOW_TABLE, Enabled, modify_flow_table),
    command!(MLX5_CMD_OP_SET_FLOW_TABLE_ROOT, Enabled, set_flow_table_root),
    command!(MLX5_CMD_OP_CREATE_FLOW_GROUP, Enabled, create_flow_group),
    command!(MLX5_CMD_OP_DESTROY_FLOW_GROUP, Enabled, destroy_flow_group),
    command!(MLX5_CMD_OP_SET_FLOW_TABLE_ENTRY, Enabled, set_flow_table_entry),
    command!(MLX5_CMD_OP_DELETE_FLOW_TABLE_ENTRY, Enabled, delete_flow_table_entry),
];
