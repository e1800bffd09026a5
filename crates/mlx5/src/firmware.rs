//! The ConnectX "firmware" of one device instance: the command domains'
//! state (HCA, RDMA objects, the IB port), the dispatch table the link
//! layer selected, and the event side (EQs, completion events, the CQ
//! arming and the poll-mode doorbell scan) that raises MSI-X vectors.
//!
//! Built by [`super::builder::FirmwareBuilder`]; the command handlers live in
//! the domain modules (`hca/`, `events/`, `rdma/`, `ib/`), which import this
//! module and are not imported by it. Each failure site answers with its own
//! stable syndrome ([`super::cmd::syndrome`]).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tracing::{info, warn};

use super::cmd::dispatch::CommandTable;
use super::cmd::req::{fail, Req};
use super::cmd::{self, status, CmdOutput, CommandHandler, SlotResult};
use super::datapath::ctx::{CqCtx, EqCtx};
use super::datapath::sink::QueueSink;
use super::eth::state::EthPort;
use super::hca::state::Hca;
use super::ib::port::{IbPort, PortCounters};
use super::link_layer::LinkLayer;
use super::rdma::state::{MkeyCtx, QpCtx, RdmaObjects, SrqCtx};
use super::roce::state::RoceState;
use crate::ifc;
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

/// See [`Firmware::on_uar`].
pub type UarHook = Arc<dyn Fn(u32, bool) + Send + Sync>;

/// The firmware of one device instance. Its state is private to the mlx5
/// personality: other layers use the methods below.
pub struct Firmware {
    pub(crate) engine: MlxEngine,
    pub(crate) mem: Arc<dyn GuestMemory>,
    pub(crate) irqs: Arc<Interrupts>,
    pub(crate) stats: Arc<FwStats>,
    /// Lifecycle, capabilities, pages (`hca/`).
    pub(crate) hca: Hca,
    /// QP, SRQ, mkey and MEMIC contexts (`rdma/`).
    pub(crate) rdma: RdmaObjects,
    /// The IB port: identity, counters, PerfMgt baseline (`ib/`).
    pub(crate) ib: IbPort,
    /// The Ethernet port (`eth/`): vport, queues, steering, link.
    pub(crate) eth: EthPort,
    /// The RoCE GID table (`roce/`, Ethernet ports).
    pub(crate) roce: RoceState,
    /// The port's link layer (which domains `commands` holds).
    pub(crate) link_layer: LinkLayer,
    /// QP1 runs through the engine onto the wire (`LinkLayer::gsi_on_wire`)
    /// instead of the firmware's local MAD path.
    pub(crate) gsi_on_wire: bool,
    /// Event queues, numbered by CREATE_EQ (0xff reserved, [`super::datapath::ctx::EQN_LAST`]).
    pub(crate) eqs: Table<EqCtx>,
    /// CQs whose completion event moderation holds (`cq_arm`'s `due`).
    pub(crate) cq_due: BTreeSet<u32>,
    /// Called with (UAR index, allocated?) before ALLOC_UAR / DEALLOC_UAR
    /// complete, so the doorbell page is being watched before the driver
    /// can know its number (poll mode).
    pub(crate) on_uar: Option<UarHook>,
    /// Log one line per command.
    pub(crate) trace: bool,
    /// The engine's completion sink (drained by [`Firmware::drain`]).
    pub(crate) pending: Arc<QueueSink>,
    /// Every command this instance executes (the link layer's domains).
    pub(crate) commands: CommandTable<Firmware>,
}

impl Firmware {
    /// FLR / device reset: every object and setting back to power-on.
    pub fn reset(&mut self) {
        let uars: Vec<u32> = self.hca.uars.iter().map(|(n, _)| n).collect();
        if let Some(h) = &self.on_uar {
            for n in uars {
                h(n, false);
            }
        }
        self.engine.reset();
        self.eqs.clear();
        self.pending.forget_cqs();
        self.rdma.reset();
        self.eth.reset();
        self.roce.reset();
        self.hca.reset(self.engine.limits());
        // Requester atomic results: big-endian until the driver selects
        // host endianness (atomic_req_8B_endianness_mode 1).
        self.pending.set_atomic_reply_be(true);
    }

    /// The RDMA engine (object tables, counters), for the control socket.
    pub fn engine(&self) -> &MlxEngine {
        &self.engine
    }

    /// The engine, to set counters in tests of other layers.
    #[doc(hidden)]
    pub fn engine_mut(&mut self) -> &mut MlxEngine {
        &mut self.engine
    }

    /// The port's link layer.
    pub fn link_layer(&self) -> LinkLayer {
        self.link_layer
    }

    /// UAR pages allocated (ALLOC_UAR), for the control socket.
    pub fn uars_in_use(&self) -> usize {
        self.hca.uars.len()
    }

    /// Event queues (CREATE_EQ), for the control socket.
    pub fn eqs_in_use(&self) -> usize {
        self.eqs.len()
    }

    /// Command and event counters.
    pub fn stats(&self) -> &Arc<FwStats> {
        &self.stats
    }

    /// PortInfo.PortState of the IB port (4 ACTIVE, 1 DOWN).
    pub fn port_state(&self) -> u8 {
        self.ib.port.port_state
    }

    /// Packets the firmware delivered itself (QP0/QP1 MADs).
    pub fn port_counters(&self) -> &PortCounters {
        &self.ib.counters
    }

    /// The fabric port's packet counters, when a fabric is attached.
    pub fn wire_counters(&self) -> Option<&Arc<vrnic_fabric::counters::PortCounters>> {
        self.ib.wire_counters.as_ref()
    }

    /// The RoCE GID table's programmed entries (control socket `stats`).
    pub fn roce_gids(&self) -> Vec<(usize, vrnic_fabric::roce::GidEntry)> {
        self.roce.gids.snapshot()
    }

    /// The RoCE port's counters (`None` without a RoCE port).
    pub fn roce_counters(&self) -> Option<&Arc<vrnic_fabric::roce::RoceCounters>> {
        self.roce.counters.as_ref()
    }

    /// The congestion control the congestion commands act on (the RoCE
    /// port's; a private one without a port).
    pub fn roce_cc(&self) -> &Arc<vrnic_cc::CcControl> {
        &self.roce.cc
    }

    /// The name of an opcode this instance executes, for logs.
    pub fn opcode_name(&self, opcode: u16) -> &'static str {
        self.commands.name(opcode)
    }

    /// The EQ that receives command-completion events, if any.
    pub fn cmd_eq(&self) -> Option<u32> {
        self.eqs.iter().find(|(_, e)| e.event_bitmask[0] & (1 << ifc::MLX5_EVENT_TYPE_CMD) != 0).map(|(n, _)| n)
    }

    /// Runs the commands of a `cmd_dbell` write, in slot order, then posts
    /// the command-completion EQE for those that started with a command EQ.
    pub fn doorbell(&mut self, cmdq: u64, mask: u32) -> Vec<SlotResult> {
        let mut results = Vec::new();
        let mut eqe_vector = 0u32;
        let mem = self.mem.clone();
        for slot in 0..cmd::NUM_SLOTS {
            if mask & (1 << slot) == 0 {
                continue;
            }
            // Only commands issued in events mode get an EQE: the driver is
            // in events mode only once the command EQ exists.
            let eq_at_start = self.cmd_eq();
            let t0 = Instant::now();
            if let Some(r) = cmd::run_slot(&*mem, cmdq, slot, self) {
                if self.trace || r.status != 0 || r.delivery != cmd::Delivery::Ok {
                    let line = format!(
                        "cmd slot={} {}({:#x}) op_mod={:#x} delivery={:?} status={:#x} syndrome={:#x} time={}us",
                        r.slot,
                        self.commands.name(r.opcode),
                        r.opcode,
                        r.op_mod,
                        r.delivery,
                        r.status,
                        r.syndrome,
                        t0.elapsed().as_micros()
                    );
                    if r.status == 0 && r.delivery == cmd::Delivery::Ok {
                        info!("{line}");
                    } else {
                        warn!("{line}");
                    }
                }
                if eq_at_start.is_some() && eq_at_start == self.cmd_eq() {
                    eqe_vector |= 1 << slot;
                }
                results.push(r);
            }
        }
        if eqe_vector != 0 {
            if let Some(eqn) = self.cmd_eq() {
                let mut data = [0u8; 28];
                ifc::cmd_inter_comp_event::command_completion_vector.set(&mut data, eqe_vector as u64);
                self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_CMD as u8, 0, &data);
            }
        }
        results
    }
}

impl CommandHandler for Firmware {
    fn execute(&mut self, input: &[u8], outlen: usize) -> CmdOutput {
        self.stats.commands.fetch_add(1, Ordering::Relaxed);
        let req = Req {
            opcode: ifc::mbox_in::opcode.get(input) as u16,
            uid: ifc::mbox_in::uid.get(input) as u16,
            op_mod: ifc::mbox_in::op_mod.get(input) as u16,
            input,
            outlen,
        };
        let result = match self.commands.get(req.opcode) {
            None => Err(fail!(status::BAD_OP, DISPATCH_UNKNOWN_OPCODE)),
            // Before ENABLE_HCA only the bring-up commands work.
            Some(c) if c.phase > self.hca.phase() => Err(fail!(status::BAD_SYS_STATE, DISPATCH_WRONG_PHASE)),
            // Inside the data path's guard: whatever the engine reported
            // while the command drove it (a QP to ERR flushing, a CQ resize)
            // is written when the command returns, whichever way it returns.
            Some(c) => {
                let handler = c.handler;
                handler(&mut self.datapath(), &req)
            }
        };
        match result {
            Ok(out) => CmdOutput { status: status::OK, syndrome: 0, out },
            Err(e) => {
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                CmdOutput::err(e.status, e.syndrome)
            }
        }
    }
}
