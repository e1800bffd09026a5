//! The device core every command domain and the data path share: the
//! engine (whose entries hold each QP's, CQ's, SRQ's and mkey's mlx5
//! context), guest memory, MSI-X, the event queues, the CQs whose moderation
//! holds an event, the engine's completion sink, and the firmware's counters.
//! The core writes every CQE and EQE and raises every interrupt: its methods
//! are in `datapath/cq.rs` (the one CQE writer, arming, moderation) and
//! `datapath/eq.rs` (the EQE writer, the events).

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::datapath::ctx::{CqCtx, EqCtx};
use super::datapath::sink::QueueSink;
use super::ifc;
use super::rdma::state::{MkeyCtx, QpCtx, SrqCtx};
use vrnic_engine::table::Table;
use vrnic_engine::{Engine, GuestMemory, Personality};
use vrnic_vfio::Interrupts;

/// Counters exported to the control socket.
#[derive(Default, Debug, serde::Serialize)]
pub struct FwStats {
    pub commands: AtomicU64,
    pub failed: AtomicU64,
    pub eqes: AtomicU64,
    pub interrupts: AtomicU64,
    /// UMR WQEs executed / completed with an error on the REG_UMR QP.
    pub umr_wqes: AtomicU64,
    pub umr_errors: AtomicU64,
    /// Completion events CQ moderation held back (raised later, each
    /// covering more CQEs), and MODIFY_CQ moderation changes.
    pub cq_moder_holds: AtomicU64,
    pub cq_moder_changes: AtomicU64,
}

/// The mlx5 personality of the engine: the context of each QP, CQ, SRQ
/// and mkey lives in the engine's entry for that object.
pub struct Mlx5;

impl Personality for Mlx5 {
    type Qp = QpCtx;
    type Cq = CqCtx;
    type Srq = SrqCtx;
    type Mkey = MkeyCtx;
}

/// The engine with mlx5's object contexts.
pub type MlxEngine = Engine<Mlx5>;

/// The shared core of one device instance (see the module doc).
pub struct Core {
    pub(crate) engine: MlxEngine,
    pub(crate) mem: Arc<dyn GuestMemory>,
    pub(crate) irqs: Arc<Interrupts>,
    pub(crate) stats: Arc<FwStats>,
    /// Event queues, numbered by CREATE_EQ (0xff reserved, [`super::datapath::ctx::EQN_LAST`]).
    pub(crate) eqs: Table<EqCtx>,
    /// CQs whose completion event moderation holds (`cq_arm`'s `due`).
    pub(crate) cq_due: BTreeSet<u32>,
    /// The engine's completion sink (drained by [`Core::drain`]).
    pub(crate) pending: Arc<QueueSink>,
    /// QPs a command moved to ERR: the data path's guard flushes their
    /// outstanding work when the command returns (`datapath/mod.rs`).
    pub(crate) entered_err: Vec<u32>,
}

impl Core {
    /// The EQ that receives command-completion events, if any.
    pub fn cmd_eq(&self) -> Option<u32> {
        self.eqs.iter().find(|(_, e)| e.event_bitmask[0] & (1 << ifc::MLX5_EVENT_TYPE_CMD) != 0).map(|(n, _)| n)
    }

    /// FLR / device reset: every object, EQ and queued completion gone.
    pub fn reset(&mut self) {
        self.engine.reset();
        self.eqs.clear();
        self.cq_due.clear();
        self.entered_err.clear();
        self.pending.forget_cqs();
        // Requester atomic results: big-endian until the driver selects
        // host endianness (atomic_req_8B_endianness_mode 1).
        self.pending.set_atomic_reply_be(true);
    }
}
