//! The DevX domain's state: the live user contexts.

use vrnic_engine::table::Table;

/// One user context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uctx {
    /// `uctx.cap`: `MLX5_UCTX_CAP_RAW_TX`, `MLX5_UCTX_CAP_INTERNAL_DEV_RES`.
    pub cap: u32,
}

/// The live user contexts, by uid.
pub struct Uctxs {
    table: Table<Uctx>,
}

/// The `uctx_cap` bits this device grants (none: no raw Ethernet send or internal resources for
/// a process yet).
pub const UCTX_CAP: u32 = 0;

impl Uctxs {
    /// Room for `n` contexts (uids 1..=n).
    pub fn new(n: usize) -> Uctxs {
        let last = n.clamp(1, 0xfffe) as u32;
        Uctxs { table: Table::new(1, last, n.min(0xfffe)) }
    }

    /// Whether `uid` names a live user context.
    pub fn contains(&self, uid: u16) -> bool {
        self.table.contains(uid as u32)
    }

    pub fn get(&self, uid: u16) -> Option<&Uctx> {
        self.table.get(uid as u32)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// A new context; its uid (None: every uid is in use).
    pub fn alloc(&mut self, u: Uctx) -> Option<u16> {
        self.table.alloc_lowest_with(|_| u).map(|n| n as u16)
    }

    /// Ends context `uid`.
    pub fn remove(&mut self, uid: u16) -> Option<Uctx> {
        self.table.remove(uid as u32)
    }

    /// FLR / device reset: every context goes.
    pub fn clear(&mut self) {
        self.table.clear();
    }
}
