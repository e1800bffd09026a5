//! The ConnectX "firmware" of one device instance: the command domains'
//! state (HCA, RDMA objects, the IB port), the dispatch table the link
//! layer selected, and the event side (EQs, completion events, the CQ
//! arming and the poll-mode doorbell scan) that raises MSI-X vectors.
//!
//! Built by [`super::builder::FirmwareBuilder`]; the command handlers live in
//! the domain modules (`hca/`, `events/`, `rdma/`, `ib/`), which import this
//! module and are not imported by it. Each failure site answers with its own
//! stable syndrome ([`super::cmd::syndrome`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tracing::{debug, info, warn};

use super::cmd::dispatch::CommandTable;
use super::cmd::req::{fail, Req};
use super::cmd::{self, status, CmdOutput, CommandHandler, SlotResult};
use super::hca::state::Hca;
use super::ib::port::{IbPort, PortCounters};
use super::ifc;
use super::queue_buf::buf_addr;
use super::rdma::state::RdmaObjects;
use crate::engine::{Engine, GuestMemory};
use crate::vfio::Interrupts;

/// mlx5 context of an event queue.
#[derive(Debug, Clone)]
pub struct EqCtx {
    pub eqc: Vec<u8>,
    pub pas: Vec<u64>,
    pub log_size: u8,
    pub log_page_size: u8,
    pub page_offset: u64,
    pub event_bitmask: [u64; 4],
}

/// What CREATE_CQ writes into the CQ's arm doorbell record (`dbrec[1]`): no
/// arm word has bit 31 set (`sn << 28 | cmd | ci`, sn 2 bits, cmd bit 24), so
/// the poll-mode scan tells "never armed" from a first arm, whose word is 0.
pub const CQ_ARM_UNSET: u32 = 0x8000_0000;

/// mlx5 context of a completion queue.
#[derive(Debug, Clone)]
pub struct CqCtx {
    pub cqc: Vec<u8>,
    pub pas: Vec<u64>,
    pub cqe_size: usize,
    pub log_page_size: u8,
    pub page_offset: u64,
    pub dbr_addr: u64,
    /// The last arm word (`sn<<28 | cmd | ci`) acted on.
    pub last_arm: Option<u32>,
}

/// Counters exported to the control socket.
#[derive(Default, Debug)]
pub struct FwStats {
    pub commands: AtomicU64,
    pub failed: AtomicU64,
    pub eqes: AtomicU64,
    pub interrupts: AtomicU64,
    /// UMR WQEs executed / completed with an error on the REG_UMR QP.
    pub umr_wqes: AtomicU64,
    pub umr_errors: AtomicU64,
}

/// See [`Firmware::on_uar`].
pub type UarHook = Arc<dyn Fn(u32, bool) + Send + Sync>;

/// The firmware of one device instance. Its state is private to the mlx5
/// personality: other layers use the methods below.
pub struct Firmware {
    pub(in crate::mlx5) engine: Engine,
    pub(in crate::mlx5) mem: Arc<dyn GuestMemory>,
    pub(in crate::mlx5) irqs: Arc<Interrupts>,
    pub(in crate::mlx5) stats: Arc<FwStats>,
    /// Lifecycle, capabilities, pages (`hca/`).
    pub(in crate::mlx5) hca: Hca,
    /// QP, SRQ, mkey and MEMIC contexts (`rdma/`).
    pub(in crate::mlx5) rdma: RdmaObjects,
    /// The IB port: identity, counters, PerfMgt baseline (`ib/`).
    pub(in crate::mlx5) ib: IbPort,
    pub(in crate::mlx5) eqs: BTreeMap<u32, EqCtx>,
    pub(in crate::mlx5) cqs: BTreeMap<u32, CqCtx>,
    /// Called with (UAR index, allocated?) before ALLOC_UAR / DEALLOC_UAR
    /// complete, so the doorbell page is being watched before the driver
    /// can know its number (poll mode).
    pub(in crate::mlx5) on_uar: Option<UarHook>,
    /// Log one line per command.
    pub(in crate::mlx5) trace: bool,
    /// The engine's completion sink (drained by [`Firmware::drain`]).
    pub(in crate::mlx5) pending: Arc<super::datapath::QueueSink>,
    /// Every command this instance executes (the link layer's domains).
    pub(in crate::mlx5) commands: CommandTable<Firmware>,
}

impl Firmware {
    /// FLR / device reset: every object and setting back to power-on.
    pub fn reset(&mut self) {
        let uars: Vec<u32> = self.engine.uars.iter().map(|(n, _)| n).collect();
        if let Some(h) = &self.on_uar {
            for n in uars {
                h(n, false);
            }
        }
        self.engine.reset();
        self.eqs.clear();
        self.cqs.clear();
        self.pending.forget_cqs();
        self.rdma.reset();
        self.hca.reset(&self.engine.limits);
        // Requester atomic results: big-endian until the driver selects
        // host endianness (atomic_req_8B_endianness_mode 1).
        self.pending.set_atomic_reply_be(true);
    }

    /// The RDMA engine (object tables, counters), for the control socket.
    pub fn engine(&self) -> &Engine {
        &self.engine
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
    pub fn wire_counters(&self) -> Option<&Arc<crate::fabric::counters::PortCounters>> {
        self.ib.wire_counters.as_ref()
    }

    /// The name of an opcode this instance executes, for logs.
    pub fn opcode_name(&self, opcode: u16) -> &'static str {
        self.commands.name(opcode)
    }

    /// The EQ that receives command-completion events, if any.
    pub fn cmd_eq(&self) -> Option<u32> {
        self.eqs.iter().find(|(_, e)| e.event_bitmask[0] & (1 << ifc::MLX5_EVENT_TYPE_CMD) != 0).map(|(n, _)| *n)
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

    /// Writes one EQE into EQ `eqn` and raises its vector if armed.
    pub fn post_eqe(&mut self, eqn: u32, event_type: u8, sub_type: u8, data: &[u8; 28]) -> bool {
        let Some(ctx) = self.eqs.get(&eqn) else { return false };
        let Some(eq) = self.engine.eqs.get_mut(eqn) else { return false };
        let nent = 1u32 << ctx.log_size;
        if eq.producer.wrapping_sub(eq.consumer) >= nent {
            warn!(eqn, "EQ overrun: event {event_type:#x} dropped");
            return false;
        }
        let idx = eq.producer & (nent - 1);
        let owner = ((eq.producer >> ctx.log_size) & 1) as u8;
        let Some(addr) = buf_addr(&ctx.pas, ctx.log_page_size, ctx.page_offset, idx as u64 * 64) else {
            warn!(eqn, "EQE address outside the EQ's pages");
            return false;
        };
        let mut eqe = [0u8; 64];
        eqe[1] = event_type;
        eqe[3] = sub_type;
        eqe[0x20..0x20 + 28].copy_from_slice(data);
        // Body first, then the owner byte.
        if self.mem.write(addr, &eqe[..63]).is_err() {
            warn!(eqn, addr, "EQE write outside guest memory");
            return false;
        }
        std::sync::atomic::fence(Ordering::Release);
        if self.mem.write(addr + 63, &[owner]).is_err() {
            return false;
        }
        eq.producer = eq.producer.wrapping_add(1);
        self.stats.eqes.fetch_add(1, Ordering::Relaxed);
        if eq.armed {
            eq.armed = false;
            let v = eq.vector;
            self.stats.interrupts.fetch_add(1, Ordering::Relaxed);
            let _ = self.irqs.raise(v);
        }
        true
    }

    /// EQ doorbell: new consumer index, optionally re-arm.
    pub fn eq_doorbell(&mut self, eqn: u32, ci: u32, arm: bool) {
        let Some(eq) = self.engine.eqs.get_mut(eqn) else {
            debug!(eqn, "doorbell for a nonexistent EQ ignored");
            return;
        };
        // The driver reports a 24-bit counter; keep our producer's high bits.
        eq.consumer = (eq.producer & !0x00ff_ffff) | (ci & 0x00ff_ffff);
        if eq.consumer.wrapping_sub(eq.producer) < 0x0080_0000 && eq.consumer != eq.producer {
            eq.consumer = eq.consumer.wrapping_sub(0x0100_0000);
        }
        if arm {
            if eq.producer != eq.consumer {
                // Unconsumed events: interrupt at once.
                eq.armed = false;
                let v = eq.vector;
                self.stats.interrupts.fetch_add(1, Ordering::Relaxed);
                let _ = self.irqs.raise(v);
            } else {
                eq.armed = true;
            }
        }
    }

    /// CQ arm doorbell: the next (solicited) completion raises an event;
    /// completions waiting past `ci` that no event reported raise one now
    /// (`engine::cq_arm`).
    pub fn cq_arm(&mut self, cqn: u32, sn: u8, solicited: bool, ci: u32) {
        let word = ((sn as u32 & 3) << 28) | ((solicited as u32) << 24) | (ci & 0x00ff_ffff);
        match self.cqs.get_mut(&cqn) {
            // The same arm seen twice (trapped write and a later page scan): once.
            Some(ctx) if ctx.last_arm == Some(word) => return,
            Some(ctx) => ctx.last_arm = Some(word),
            None => {}
        }
        if self.engine.cqs.get(cqn).is_none() {
            debug!(cqn, "arm for a nonexistent CQ ignored");
            return;
        }
        if self.engine.arm_cq(cqn, solicited, sn, ci) {
            self.comp_event(cqn);
        }
    }


    /// Poll mode: a store landed somewhere on UAR page `uar`. Doorbells that
    /// share a slot on a page (every QP and CQ of a libmlx5 context uses
    /// its one UAR) collapse into the last value, so look at the doorbell
    /// records of every QP and CQ on that page instead: new send WQEs and
    /// new arm words are found there.
    pub fn uar_activity(&mut self, uar: u32, db: super::uar::Doorbell) {
        use super::uar::Doorbell;
        // The store itself names one target: act on it first.
        match db {
            Doorbell::Send { qpn_ds, .. } => self.send_doorbell(qpn_ds >> 8),
            Doorbell::CqArm { cqn, sn, solicited, ci, .. } => self.cq_arm(cqn, sn, solicited, ci),
            Doorbell::EqUpdate { eqn, ci, arm, .. } => self.eq_doorbell(eqn as u32, ci, arm),
        }
        // Stores that the last one overwrote: new send WQEs of QPs on this page.
        let qps: Vec<u32> = self.engine.qps.iter().filter(|(_, q)| q.uar == uar).map(|(n, _)| n).collect();
        for qpn in qps {
            let Some(ctx) = self.rdma.qps.get(&qpn) else { continue };
            if ctx.sq_entries == 0 {
                continue;
            }
            let mut b = [0u8; 4];
            if self.mem.read(ctx.dbr_addr + 4, &mut b).is_ok() && u32::from_be_bytes(b) as u16 != ctx.sq_ci {
                self.send_doorbell(qpn);
            }
        }
        // ... and arm words not acted on yet (any CQ: libmlx5 may ring a CQ's
        // arm on another page than the one in its context).
        let cqs: Vec<u32> = self.engine.cqs.iter().map(|(n, _)| n).collect();
        for cqn in cqs {
            let Some(ctx) = self.cqs.get(&cqn) else { continue };
            let mut b = [0u8; 4];
            if self.mem.read(ctx.dbr_addr + 4, &mut b).is_err() {
                continue;
            }
            let w = u32::from_be_bytes(b);
            // Bits outside an arm word: the record still holds CQ_ARM_UNSET
            // (or garbage), no arm to act on.
            if w & !0x31ff_ffff == 0 && ctx.last_arm != Some(w) {
                self.cq_arm(cqn, ((w >> 28) & 3) as u8, w & (1 << 24) != 0, w & 0x00ff_ffff);
            }
        }
    }

    /// A CQE was written to CQ `cqn` (outside the engine: the QP0/QP1 MAD
    /// path): raise a completion event if the CQ is armed for it. The arming
    /// itself is the engine's `Cq::on_cqe`, as for every other CQE.
    pub fn cq_event(&mut self, cqn: u32, solicited: bool) {
        if self.engine.cqs.get_mut(cqn).is_some_and(|cq| cq.on_cqe(solicited)) {
            self.comp_event(cqn);
        }
    }

    /// Posts the completion EQE of CQ `cqn` to the CQ's EQ.
    pub fn comp_event(&mut self, cqn: u32) {
        let Some(eqn) = self.engine.cqs.get(cqn).map(|cq| cq.eqn) else { return };
        let mut data = [0u8; 28];
        ifc::comp_event::cq_number.set(&mut data, cqn as u64);
        self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_COMP as u8, 0, &data);
    }

    /// Posts a PORT_CHANGE event (sub_type 4 ACTIVE, 1 DOWN) to every EQ that asked for it.
    pub fn port_change(&mut self, active: bool) {
        self.ib.port.port_state = if active { 4 } else { 1 };
        self.ib.port.phys_state = if active { 5 } else { 3 };
        let mut data = [0u8; 28];
        ifc::port_state_change_event::port_num.set(&mut data, 1);
        let targets: Vec<u32> = self
            .eqs
            .iter()
            .filter(|(_, e)| e.event_bitmask[0] & (1 << ifc::MLX5_EVENT_TYPE_PORT_CHANGE) != 0)
            .map(|(n, _)| *n)
            .collect();
        for eqn in targets {
            self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, if active { 4 } else { 1 }, &data);
        }
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
            Some(c) => (c.handler)(self, &req),
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
