//! The ConnectX "firmware" of one device instance: the [`Core`] every
//! domain shares (engine, memory, MSI-X, EQs, the CQE/EQE writers), the
//! domains' state (HCA, RDMA objects, the port: InfiniBand or Ethernet with
//! RoCE, [`Port`]), the port's identity, and the dispatch table the link
//! layer selected.
//!
//! Built by [`super::builder::FirmwareBuilder`]; the command handlers live in
//! the domain modules (`hca/`, `events/`, `rdma/`, `ib/`, `eth/`, `roce/`),
//! each running on the narrow context its domain lends (`rdma_cx()`, ...),
//! split borrows of this struct. Each failure site answers with its own
//! stable syndrome ([`super::cmd::syndrome`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tracing::{info, warn};

use super::cmd::dispatch::CommandTable;
use super::cmd::req::{fail, Req};
use super::cmd::{self, status, CmdOutput, CommandHandler, SlotResult};
use super::core::{Core, FwStats, MlxEngine};
use super::devx::state::Uctxs;
use super::devx::umem::Umems;
use super::hca::state::Hca;
use super::ib::port::{FwPortCounters, PortConfig};
use super::link_layer::LinkLayer;
use super::port::Port;
use super::rdma::state::RdmaObjects;
use crate::ifc;

/// The firmware of one device instance. Its state is private to the mlx5
/// personality: other layers use the methods below.
pub struct Firmware {
    /// The engine, memory, interrupts, EQs and the CQE/EQE writers every domain shares.
    pub(crate) core: Core,
    /// Lifecycle, capabilities, pages (`hca/`).
    pub(crate) hca: Hca,
    /// QP, SRQ, mkey and MEMIC contexts (`rdma/`).
    pub(crate) rdma: RdmaObjects,
    /// The port's identity and state (what the SMA, the capabilities and
    /// the vport queries report), whichever the link layer.
    pub(crate) cfg: PortConfig,
    /// Packets the firmware delivered itself (QP0/QP1 MADs, multicast copies).
    pub(crate) counters: Arc<FwPortCounters>,
    /// The port: InfiniBand, or Ethernet with its RoCE state (its link layer
    /// picked the command domains in `commands`).
    pub(crate) port: Port,
    /// Log one line per command.
    pub(crate) trace: bool,
    /// Every command this instance executes (the link layer's domains).
    pub(crate) commands: CommandTable<Firmware>,
    /// DevX user contexts: the uids commands and objects carry (`devx/`).
    pub(crate) uctxs: Uctxs,
    /// Their registered memory (`devx/umem.rs`).
    pub(crate) umems: Umems,
}

impl Firmware {
    /// FLR / device reset: every object and setting back to power-on.
    pub fn reset(&mut self) {
        self.core.reset();
        self.rdma.reset();
        self.port.reset();
        self.hca.reset(self.core.engine.limits());
        self.uctxs.clear();
        self.umems.clear();
    }

    /// The driver set `nic_interface` to DISABLED. After TEARDOWN_HCA's PREPARE_FAST_TEARDOWN
    /// that ends the function as a ConnectX's firmware does (every object, page and setting gone,
    /// as an FLR leaves them) and returns true; otherwise nothing happens.
    pub fn nic_interface_disabled(&mut self) -> bool {
        if !self.hca.fast_teardown_prepared() {
            return false;
        }
        self.reset();
        true
    }

    /// The RDMA engine (object tables, counters), for the control socket.
    pub fn engine(&self) -> &MlxEngine {
        &self.core.engine
    }

    /// The engine, to set counters in tests of other layers.
    #[doc(hidden)]
    pub fn engine_mut(&mut self) -> &mut MlxEngine {
        &mut self.core.engine
    }

    /// The port's link layer.
    pub fn link_layer(&self) -> LinkLayer {
        self.port.link_layer()
    }

    /// UAR pages allocated (ALLOC_UAR), for the control socket.
    pub fn uars_in_use(&self) -> usize {
        self.hca.uars_in_use()
    }

    /// Event queues (CREATE_EQ), for the control socket.
    pub fn eqs_in_use(&self) -> usize {
        self.core.eqs.len()
    }

    /// Command and event counters.
    pub fn stats(&self) -> &Arc<FwStats> {
        &self.core.stats
    }

    /// PortInfo.PortState of the IB port (4 ACTIVE, 1 DOWN).
    pub fn port_state(&self) -> u8 {
        self.cfg.port_state
    }

    /// Packets the firmware delivered itself (QP0/QP1 MADs).
    pub fn port_counters(&self) -> &FwPortCounters {
        &self.counters
    }

    /// The fabric port's packet counters, when a fabric is attached.
    pub fn wire_counters(&self) -> Option<&Arc<vrnic_fabric::counters::PortCounters>> {
        self.port.ib().and_then(|ib| ib.wire_counters.as_ref())
    }

    /// The RoCE GID table's programmed entries (control socket `stats`).
    pub fn roce_gids(&self) -> Vec<(usize, vrnic_fabric::roce::GidEntry)> {
        self.port.roce().map(|r| r.gids().snapshot()).unwrap_or_default()
    }

    /// The RoCE port's counters (`None` without a RoCE port).
    pub fn roce_counters(&self) -> Option<&Arc<vrnic_fabric::roce::RoceCounters>> {
        self.port.roce().and_then(|r| r.counters())
    }

    /// The congestion control the congestion commands act on (an Ethernet
    /// port's RoCE; `None` on an InfiniBand port).
    pub fn roce_cc(&self) -> Option<&Arc<vrnic_cc::CcControl>> {
        self.port.roce().map(|r| r.cc())
    }

    /// The name of an opcode this instance executes, for logs.
    pub fn opcode_name(&self, opcode: u16) -> &'static str {
        self.commands.name(opcode)
    }

    /// Runs the commands of a `cmd_dbell` write, in slot order, then posts
    /// the command-completion EQE for those that started with a command EQ.
    pub fn doorbell(&mut self, cmdq: u64, mask: u32) -> Vec<SlotResult> {
        let mut results = Vec::new();
        let mut eqe_vector = 0u32;
        let mem = self.core.mem.clone();
        for slot in 0..cmd::NUM_SLOTS {
            if mask & (1 << slot) == 0 {
                continue;
            }
            // Only commands issued in events mode get an EQE: the driver is
            // in events mode only once the command EQ exists.
            let eq_at_start = self.core.cmd_eq();
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
                if eq_at_start.is_some() && eq_at_start == self.core.cmd_eq() {
                    eqe_vector |= 1 << slot;
                }
                results.push(r);
            }
        }
        if eqe_vector != 0 {
            if let Some(eqn) = self.core.cmd_eq() {
                let mut data = [0u8; 28];
                ifc::cmd_inter_comp_event::command_completion_vector.set(&mut data, eqe_vector as u64);
                self.core.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_CMD as u8, 0, &data);
            }
        }
        results
    }
}

impl CommandHandler for Firmware {
    fn execute(&mut self, input: &[u8], outlen: usize) -> CmdOutput {
        self.core.stats.commands.fetch_add(1, Ordering::Relaxed);
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
            // The uid rules (devx/) first: who may issue it, and which objects it may touch.
            Some(c) => {
                let handler = c.handler;
                self.admit(&req).and_then(|()| handler(&mut self.datapath(), &req))
            }
        };
        match result {
            Ok(out) => CmdOutput { status: status::OK, syndrome: 0, out },
            Err(e) => {
                self.core.stats.failed.fetch_add(1, Ordering::Relaxed);
                CmdOutput::err(e.status, e.syndrome)
            }
        }
    }
}
