//! NIC RX flow tables as the driver programmed them, and how a frame walks them (a leaf: the
//! firmware holds it; the flow-table commands are in [`super::steering`]).

use super::match_image::{MatchImage, PARAM_LEN};
use crate::cmd::req::{CmdErr, Req};
use crate::cmd::status;
use crate::ifc;
use std::collections::{BTreeMap, BTreeSet};

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
    pub(super) next_table: u32,
    pub(super) next_group: u32,
    pub(super) flows: usize,
    pub(super) groups: usize,
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

    pub(super) fn table_mut(&mut self, r: &Req<'_>, syndrome: u32) -> Result<&mut FlowTable, CmdErr> {
        let id = r.get(ifc::destroy_flow_table_in::table_id) as u32;
        self.tables.get_mut(&id).ok_or(CmdErr { status: status::BAD_PARAM, syndrome })
    }
}

/// One frame's walk through the tables.
struct Walk {
    pub(super) tirs: Vec<u32>,
    /// The TIRs of `tirs`, for the once-each check.
    pub(super) seen: BTreeSet<u32>,
    pub(super) flow_tag: Option<u32>,
    /// Tables on the current forwarding path (cycle guard).
    pub(super) path: BTreeSet<u32>,
    /// Tables visited so far.
    pub(super) visits: usize,
    pub(super) dropped: Option<DropReason>,
}

impl Walk {
    pub(super) fn drop(&mut self, r: DropReason) {
        self.dropped.get_or_insert(r);
    }

    pub(super) fn table(&mut self, s: &Steering, id: u32, img: &MatchImage, depth: usize) {
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
            Some(e) if e.action & ifc::MLX5_FLOW_CONTEXT_ACTION_DROP != 0 => self.drop(DropReason::Rule),
            Some(e) if e.action & ifc::MLX5_FLOW_CONTEXT_ACTION_FWD_DEST != 0 => {
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
