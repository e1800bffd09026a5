//! The RDMA objects' mlx5 contexts (QPs, SRQs, memory keys, MEMIC blocks):
//! what the `rdma/` commands keep beside the engine's objects.

use std::collections::{BTreeMap, BTreeSet};

/// mlx5 context of a shared receive queue.
#[derive(Debug, Clone, Default)]
pub struct SrqCtx {
    /// The command family that created it; only that family queries, arms and destroys it.
    pub kind: SrqKind,
    /// The context as created (`srqc`, `xrc_srqc` or `rmpc`, by `kind`).
    pub srqc: Vec<u8>,
    /// XRC SRQ created by CREATE_XRC_SRQ: `xrc_srqc.user_index`, the CQE's
    /// `srqn_uidx` for its receives (cqe_version 1).
    pub user_index: Option<u32>,
    pub pas: Vec<u64>,
    pub stride: usize,
    pub dbr_addr: u64,
    pub log_page_size: u8,
    pub page_offset: u64,
    /// Next WQE index the device consumes (the free list's head) and the
    /// count of WQEs handed to the engine.
    pub head: u16,
    pub posted: u16,
}

/// The commands an SRQ was created with: ISSI 0's CREATE_SRQ (basic and XRC),
/// or at ISSI 1 CREATE_RMP (basic) and CREATE_XRC_SRQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SrqKind {
    #[default]
    Srq,
    Rmp,
    XrcSrq,
}

/// mlx5 context of a queue pair.
#[derive(Debug, Clone, Default)]
pub struct QpCtx {
    /// The qpc as created (2RST restores it).
    pub created: Vec<u8>,
    /// The qpc as latched by the transitions so far.
    pub qpc: Vec<u8>,
    pub pas: Vec<u64>,
    pub st: u8,
    /// The UAR page of its doorbells (the poll-mode scan looks at the QPs
    /// of a page).
    pub uar: u32,
    pub user_index: u32,
    pub dbr_addr: u64,
    pub log_page_size: u8,
    pub page_offset: u64,
    pub rq_stride: usize,
    pub rq_entries: u32,
    pub sq_entries: u32,
    pub mcast: BTreeSet<[u8; 16]>,
    /// SQ consumer counter (WQEBBs) and RQ consumer counter.
    pub sq_ci: u16,
    pub rq_ci: u16,
    /// Until this engine-clock time (ns; 0: not) receive WQEs posted while
    /// the QP is in ERR are looked for and flushed ([`Firmware::flush_err_rqs`]).
    ///
    /// [`Firmware::flush_err_rqs`]: crate::firmware::Firmware::flush_err_rqs
    pub rq_flush_until: u64,
    /// The umems its buffer and doorbell record lie in (a DevX queue's; DESTROY_UMEM waits for
    /// the QP to go).
    pub umems: Vec<u32>,
}

/// mlx5 context of a memory key: the raw mkey context, for QUERY_MKEY.
#[derive(Debug, Clone, Default)]
pub struct MkeyCtx {
    pub mkc: Vec<u8>,
}

/// The `rdma/` domain's state besides the contexts kept in the engine's
/// object entries ([`crate::firmware::Mlx5`]).
#[derive(Debug, Default)]
pub struct RdmaObjects {
    /// MEMIC allocations: BAR0 offset -> bytes.
    pub(in crate::rdma) memic_allocs: BTreeMap<u64, u64>,
    /// QPs whose `rq_flush_until` is set (the poll pass looks at these only).
    pub(crate) err_rq_watch: BTreeSet<u32>,
}

impl RdmaObjects {
    /// FLR / device reset: every context gone.
    pub fn reset(&mut self) {
        *self = RdmaObjects::default();
    }
}
