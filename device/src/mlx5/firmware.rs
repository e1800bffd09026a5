//! The ConnectX "firmware": executes commands from the command queue against
//! the engine's objects, keeps the mlx5-specific context of each object
//! (queue buffers, page lists, doorbell records, the raw contexts QUERY_*
//! reports back), runs the event queues and raises their MSI-X vectors.
//!
//! Dispatch is table-driven ([`COMMANDS`]): one handler per opcode, a name for
//! every opcode in logs. Each error site returns a distinct syndrome
//! (`0x7e000000 | source line`) so a failure in the guest's dmesg points at
//! the line that refused it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tracing::{debug, info, warn};

use super::caps;
use super::cmd::{self, status, CmdOutput, CommandHandler, SlotResult};
use super::fields::{Array, Field};
use super::ifc;
use super::mad::{PortConfig, PortCounters};
use crate::engine::{Engine, GuestMemory, Limits};
use crate::vfio::Interrupts;

/// A command failure: status and syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmdErr {
    pub status: u8,
    pub syndrome: u32,
}

/// Builds a [`CmdErr`] whose syndrome names this source line.
macro_rules! fail {
    ($status:expr) => {
        $crate::mlx5::firmware::CmdErr { status: $status, syndrome: 0x7e00_0000 | line!() }
    };
}
pub(crate) use fail;

pub type CmdResult = Result<Vec<u8>, CmdErr>;

/// Maps engine errors onto command statuses (syndrome = call site line).
macro_rules! eng {
    ($e:expr) => {
        $e.map_err(|engine_err: $crate::engine::EngineError| {
            let st = match engine_err {
                $crate::engine::EngineError::Limit(_) => $crate::mlx5::cmd::status::LIM,
                $crate::engine::EngineError::NoSuch(..) => $crate::mlx5::cmd::status::BAD_RES,
                $crate::engine::EngineError::Busy(..) => $crate::mlx5::cmd::status::BAD_RES_STATE,
                $crate::engine::EngineError::QpState { .. } => $crate::mlx5::cmd::status::BAD_QP_STATE,
                $crate::engine::EngineError::BadParam(_) => $crate::mlx5::cmd::status::BAD_PARAM,
            };
            $crate::mlx5::firmware::CmdErr { status: st, syndrome: 0x7e00_0000 | line!() }
        })
    };
}
pub(crate) use eng;

/// Capability types the firmware answers QUERY_HCA_CAP for.
pub const CAP_GENERAL: u16 = 0x0;
pub const CAP_ATOMIC: u16 = 0x3;
pub const CAP_DEV_MEM: u16 = 0xf;

/// Bytes of a capability area.
pub const CAP_AREA: usize = 0x1000;

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

/// mlx5 context of a shared receive queue.
#[derive(Debug, Clone)]
pub struct SrqCtx {
    pub srqc: Vec<u8>,
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

/// mlx5 context of a queue pair.
#[derive(Debug, Clone)]
pub struct QpCtx {
    /// The qpc as created (2RST restores it).
    pub created: Vec<u8>,
    /// The qpc as latched by the transitions so far.
    pub qpc: Vec<u8>,
    pub pas: Vec<u64>,
    pub st: u8,
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
}

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
}

/// See [`Firmware::on_uar`].
pub type UarHook = Arc<dyn Fn(u32, bool) + Send + Sync>;

/// Per-opcode handler.
type Handler = fn(&mut Firmware, &Req<'_>) -> CmdResult;

/// A decoded command header plus its input.
pub struct Req<'a> {
    pub opcode: u16,
    pub op_mod: u16,
    pub uid: u16,
    pub input: &'a [u8],
    pub outlen: usize,
}

impl Req<'_> {
    /// A field of the input (0 when the input is too short).
    pub fn get(&self, f: Field) -> u64 {
        f.get(self.input)
    }

    /// Fails with BAD_INP_LEN unless the input holds `n` bytes.
    pub fn need(&self, n: usize) -> Result<(), CmdErr> {
        if self.input.len() < n {
            Err(fail!(status::BAD_INP_LEN))
        } else {
            Ok(())
        }
    }

    /// The bytes of a byte-aligned sub-structure.
    pub fn sub(&self, f: Field) -> Result<Vec<u8>, CmdErr> {
        f.bytes(self.input).map(|b| b.to_vec()).ok_or(fail!(status::BAD_INP_LEN))
    }

    /// Reads `n` 64-bit page addresses of a `pas[]` array (low 12 bits masked).
    pub fn pas(&self, a: Array, n: usize) -> Result<Vec<u64>, CmdErr> {
        let start = (a.bit_off / 8) as usize;
        let end = n.checked_mul(8).and_then(|b| b.checked_add(start)).ok_or(fail!(status::BAD_INP_LEN))?;
        if end > self.input.len() {
            return Err(fail!(status::BAD_INP_LEN));
        }
        Ok((0..n)
            .map(|i| u64::from_be_bytes(self.input[start + i * 8..start + i * 8 + 8].try_into().expect("8 bytes")) & !0xfff)
            .collect())
    }
}

/// An output buffer of `size` bytes.
pub fn out(size: usize) -> Vec<u8> {
    vec![0u8; size.max(16)]
}

/// The firmware of one device instance.
pub struct Firmware {
    pub engine: Engine,
    pub mem: Arc<dyn GuestMemory>,
    pub irqs: Arc<Interrupts>,
    pub port: PortConfig,
    pub counters: Arc<PortCounters>,
    pub stats: Arc<FwStats>,
    pub caps_max: BTreeMap<u16, Vec<u8>>,
    pub caps_cur: BTreeMap<u16, Vec<u8>>,
    pub enabled: bool,
    pub initialized: bool,
    pub board_id: String,
    pub driver_version: String,
    pub eqs: BTreeMap<u32, EqCtx>,
    pub cqs: BTreeMap<u32, CqCtx>,
    pub srqs: BTreeMap<u32, SrqCtx>,
    pub qps: BTreeMap<u32, QpCtx>,
    /// Raw mkey contexts for QUERY_MKEY.
    pub mkcs: BTreeMap<u32, Vec<u8>>,
    /// Pages the driver gave us through MANAGE_PAGES.
    pub pages: Vec<u64>,
    /// Called with (UAR index, allocated?) before ALLOC_UAR / DEALLOC_UAR
    /// complete, so the doorbell page is being watched before the driver
    /// can know its number (poll mode).
    pub on_uar: Option<UarHook>,
    /// Log one line per command.
    pub trace: bool,
    /// The fabric port's packet counters (real traffic), for PerfMgt.
    pub wire_counters: Option<Arc<crate::wire::counters::PortCounters>>,
    /// The MEMIC window: BAR0 offset and size of on-device memory.
    pub memic: Option<(u64, u64)>,
    /// MEMIC allocations: BAR0 offset -> bytes.
    pub memic_allocs: BTreeMap<u64, u64>,
    /// PerfMgt counter values at the last clear (PortCounters Set).
    pub pma_base: [u64; 6],
    /// The engine's completion sink (drained by [`Firmware::drain`]).
    pub pending: Arc<super::datapath::QueueSink>,
}

impl Firmware {
    pub fn new(mem: Arc<dyn GuestMemory>, irqs: Arc<Interrupts>, port: PortConfig, limits: Limits) -> Firmware {
        let mut f = Firmware {
            engine: Engine::new(limits),
            mem: mem.clone(),
            irqs,
            port,
            counters: Arc::new(PortCounters::default()),
            stats: Arc::new(FwStats::default()),
            caps_max: BTreeMap::new(),
            caps_cur: BTreeMap::new(),
            enabled: false,
            initialized: false,
            board_id: "MT_0000000008".into(),
            driver_version: String::new(),
            eqs: BTreeMap::new(),
            cqs: BTreeMap::new(),
            srqs: BTreeMap::new(),
            qps: BTreeMap::new(),
            mkcs: BTreeMap::new(),
            pages: Vec::new(),
            on_uar: None,
            trace: false,
            pending: Arc::new(super::datapath::QueueSink::new(mem.clone())),
            wire_counters: None,
            memic: None,
            memic_allocs: BTreeMap::new(),
            pma_base: [0; 6],
        };
        let io = crate::engine::transport::Io { mem: f.mem.clone(), completions: f.pending.clone(), ..Default::default() };
        f.engine.attach(io);
        f.reset();
        f
    }

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
        self.srqs.clear();
        self.qps.clear();
        self.mkcs.clear();
        self.pages.clear();
        self.enabled = false;
        self.initialized = false;
        let general = general_caps(&self.engine.limits);
        let atomic = caps::atomic_caps_image();
        self.caps_max = BTreeMap::from([(CAP_GENERAL, general.clone()), (CAP_ATOMIC, atomic.clone())]);
        self.caps_cur = BTreeMap::from([(CAP_GENERAL, general), (CAP_ATOMIC, atomic)]);
        self.memic_allocs.clear();
        if let Some((off, size)) = self.memic {
            // On-device memory: the `device_memory` bit and the DEV_MEM page.
            for page in [self.caps_max.get_mut(&CAP_GENERAL), self.caps_cur.get_mut(&CAP_GENERAL)].into_iter().flatten() {
                ifc::cmd_hca_cap::device_memory.set(page, 1);
            }
            use ifc::device_mem_cap as d;
            let mut dm = vec![0u8; CAP_AREA];
            d::memic.set(&mut dm, 1);
            d::memic_bar_start_addr.set(&mut dm, off);
            d::memic_bar_size.set(&mut dm, size);
            d::max_memic_size.set(&mut dm, size);
            d::log_min_memic_alloc_size.set(&mut dm, 6);
            d::log_max_memic_addr_alignment.set(&mut dm, 12);
            self.caps_max.insert(CAP_DEV_MEM, dm.clone());
            self.caps_cur.insert(CAP_DEV_MEM, dm);
        }
        // Requester atomic results: big-endian until the driver selects
        // host endianness (atomic_req_8B_endianness_mode 1).
        self.engine.rt.atomic_reply_be = true;
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
                        opcode_name(r.opcode),
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

    /// Port totals for PerfMgt: xmit words, rcv words, xmit pkts, rcv pkts,
    /// rcv errors, xmit discards: the fabric's packets plus the locally
    /// delivered MADs, minus what a PortCounters Set cleared.
    pub fn port_totals(&self) -> [u64; 6] {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.counters;
        let mut t = [
            c.xmit_data_words.load(Relaxed),
            c.rcv_data_words.load(Relaxed),
            c.xmit_pkts.load(Relaxed),
            c.rcv_pkts.load(Relaxed),
            c.rcv_errors.load(Relaxed),
            c.xmit_discards.load(Relaxed),
        ];
        if let Some(w) = &self.wire_counters {
            let s = w.snapshot();
            t[0] += s.tx_bytes / 4;
            t[1] += s.rx_bytes / 4;
            t[2] += s.tx_packets;
            t[3] += s.rx_packets;
            t[4] += s.rx_icrc_errors + s.rx_malformed;
            t[5] += s.tx_errors + s.tx_no_route;
        }
        t
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
            let Some(ctx) = self.qps.get(&qpn) else { continue };
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
        self.port.port_state = if active { 4 } else { 1 };
        self.port.phys_state = if active { 5 } else { 3 };
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

/// The general capability page with the object limits of this instance.
pub fn general_caps(l: &Limits) -> Vec<u8> {
    use ifc::cmd_hca_cap as c;
    // 8-byte compare-and-swap and fetch-and-add are offered (ATOMIC page).
    let mut page = caps::general_caps_image_with_atomic();
    let log2 = |n: usize| (usize::BITS - 1 - n.max(1).leading_zeros()) as u64;
    c::log_max_qp.set(&mut page, log2(l.qps));
    c::log_max_cq.set(&mut page, log2(l.cqs));
    c::log_max_srq.set(&mut page, log2(l.srqs));
    c::log_max_mkey.set(&mut page, log2(l.mkeys));
    c::log_max_pd.set(&mut page, log2(l.pds));
    c::log_max_xrcd.set(&mut page, log2(l.xrcds));
    c::log_max_eq.set(&mut page, log2(l.eqs));
    c::log_max_cq_sz.set(&mut page, l.log_max_cq_size as u64);
    c::log_max_qp_sz.set(&mut page, l.log_max_qp_size as u64);
    c::log_max_srq_sz.set(&mut page, l.log_max_qp_size as u64);
    c::log_max_eq_sz.set(&mut page, l.log_max_eq_size as u64);
    c::log_max_ra_req_qp.set(&mut page, l.log_max_rd_atomic.min(7) as u64);
    c::log_max_ra_res_qp.set(&mut page, l.log_max_rd_atomic.min(7) as u64);
    // MODIFY_CQ resize (mlx5_ib answers ibv_resize_cq with ENOSYS without it).
    c::cq_resize.set(&mut page, 1);
    // The free-running internal timer that stamps CQEs (clock.rs).
    c::device_frequency_khz.set(&mut page, super::clock::DEVICE_FREQUENCY_KHZ as u64);
    page
}

/// Guest address of byte `off` of a queue buffer described by a page list
/// (`pas[i]` = page i of `4 KiB << log_page_size`), starting `page_offset` bytes into page 0.
pub fn buf_addr(pas: &[u64], log_page_size: u8, page_offset: u64, off: u64) -> Option<u64> {
    let shift = 12 + log_page_size as u32;
    let at = page_offset.checked_add(off)?;
    let page = pas.get(usize::try_from(at >> shift).ok()?)?;
    Some(page + (at & ((1u64 << shift) - 1)))
}

/// Number of pages of `1 << (12 + log_page_size)` bytes a buffer of `bytes`
/// starting `page_offset` into the first page spans.
pub fn pages_for(bytes: u64, log_page_size: u8, page_offset: u64) -> usize {
    let ps = 1u64 << (12 + log_page_size as u32);
    (page_offset + bytes).div_ceil(ps) as usize
}

/// `page_offset` fields count units of `page_size / 64`.
pub fn page_offset_bytes(field: u64, log_page_size: u8) -> u64 {
    field << (log_page_size as u32 + 12 - 6)
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
        let result = match COMMANDS.iter().find(|c| c.0 == req.opcode) {
            None => Err(fail!(status::BAD_OP)),
            Some(&(_, name, h)) => {
                if !self.enabled && !matches!(name, "ENABLE_HCA" | "QUERY_ISSI" | "SET_ISSI" | "QUERY_PAGES" | "DISABLE_HCA") {
                    // Before ENABLE_HCA only the bring-up commands work.
                    Err(fail!(status::BAD_SYS_STATE))
                } else {
                    h(self, &req)
                }
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

/// The name of an opcode, for logs.
pub fn opcode_name(op: u16) -> &'static str {
    COMMANDS.iter().find(|c| c.0 == op).map(|c| c.1).unwrap_or("UNKNOWN")
}

macro_rules! op {
    ($c:ident) => {
        ifc::$c as u16
    };
}

/// Every opcode the firmware executes.
pub static COMMANDS: &[(u16, &str, Handler)] = &[
    (op!(MLX5_CMD_OP_QUERY_HCA_CAP), "QUERY_HCA_CAP", super::hca::query_hca_cap),
    (op!(MLX5_CMD_OP_QUERY_ADAPTER), "QUERY_ADAPTER", super::hca::query_adapter),
    (op!(MLX5_CMD_OP_INIT_HCA), "INIT_HCA", super::hca::init_hca),
    (op!(MLX5_CMD_OP_TEARDOWN_HCA), "TEARDOWN_HCA", super::hca::teardown_hca),
    (op!(MLX5_CMD_OP_ENABLE_HCA), "ENABLE_HCA", super::hca::enable_hca),
    (op!(MLX5_CMD_OP_DISABLE_HCA), "DISABLE_HCA", super::hca::disable_hca),
    (op!(MLX5_CMD_OP_QUERY_PAGES), "QUERY_PAGES", super::hca::query_pages),
    (op!(MLX5_CMD_OP_MANAGE_PAGES), "MANAGE_PAGES", super::hca::manage_pages),
    (op!(MLX5_CMD_OP_SET_HCA_CAP), "SET_HCA_CAP", super::hca::set_hca_cap),
    (op!(MLX5_CMD_OP_QUERY_ISSI), "QUERY_ISSI", super::hca::query_issi),
    (op!(MLX5_CMD_OP_SET_ISSI), "SET_ISSI", super::hca::set_issi),
    (op!(MLX5_CMD_OP_SET_DRIVER_VERSION), "SET_DRIVER_VERSION", super::hca::set_driver_version),
    (op!(MLX5_CMD_OP_CREATE_MKEY), "CREATE_MKEY", super::objects::create_mkey),
    (op!(MLX5_CMD_OP_QUERY_MKEY), "QUERY_MKEY", super::objects::query_mkey),
    (op!(MLX5_CMD_OP_DESTROY_MKEY), "DESTROY_MKEY", super::objects::destroy_mkey),
    (op!(MLX5_CMD_OP_CREATE_EQ), "CREATE_EQ", super::hca::create_eq),
    (op!(MLX5_CMD_OP_DESTROY_EQ), "DESTROY_EQ", super::hca::destroy_eq),
    (op!(MLX5_CMD_OP_QUERY_EQ), "QUERY_EQ", super::hca::query_eq),
    (op!(MLX5_CMD_OP_CREATE_CQ), "CREATE_CQ", super::objects::create_cq),
    (op!(MLX5_CMD_OP_DESTROY_CQ), "DESTROY_CQ", super::objects::destroy_cq),
    (op!(MLX5_CMD_OP_QUERY_CQ), "QUERY_CQ", super::objects::query_cq),
    (op!(MLX5_CMD_OP_MODIFY_CQ), "MODIFY_CQ", super::objects::modify_cq),
    (op!(MLX5_CMD_OP_CREATE_QP), "CREATE_QP", super::qp::create_qp),
    (op!(MLX5_CMD_OP_DESTROY_QP), "DESTROY_QP", super::qp::destroy_qp),
    (op!(MLX5_CMD_OP_RST2INIT_QP), "RST2INIT_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_INIT2RTR_QP), "INIT2RTR_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_RTR2RTS_QP), "RTR2RTS_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_RTS2RTS_QP), "RTS2RTS_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_SQERR2RTS_QP), "SQERR2RTS_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_2ERR_QP), "2ERR_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_2RST_QP), "2RST_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_QUERY_QP), "QUERY_QP", super::qp::query_qp),
    (op!(MLX5_CMD_OP_SQD_RTS_QP), "SQD_RTS_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_INIT2INIT_QP), "INIT2INIT_QP", super::qp::modify_qp),
    (op!(MLX5_CMD_OP_MAD_IFC), "MAD_IFC", super::hca::mad_ifc),
    (op!(MLX5_CMD_OP_CREATE_SRQ), "CREATE_SRQ", super::objects::create_srq),
    (op!(MLX5_CMD_OP_DESTROY_SRQ), "DESTROY_SRQ", super::objects::destroy_srq),
    (op!(MLX5_CMD_OP_QUERY_SRQ), "QUERY_SRQ", super::objects::query_srq),
    (op!(MLX5_CMD_OP_ARM_RQ), "ARM_RQ", super::objects::arm_rq),
    (op!(MLX5_CMD_OP_QUERY_VPORT_STATE), "QUERY_VPORT_STATE", super::hca::query_vport_state),
    (op!(MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT), "QUERY_HCA_VPORT_CONTEXT", super::hca::query_hca_vport_context),
    (op!(MLX5_CMD_OP_ALLOC_PD), "ALLOC_PD", super::objects::alloc_pd),
    (op!(MLX5_CMD_OP_DEALLOC_PD), "DEALLOC_PD", super::objects::dealloc_pd),
    (op!(MLX5_CMD_OP_ALLOC_UAR), "ALLOC_UAR", super::hca::alloc_uar),
    (op!(MLX5_CMD_OP_DEALLOC_UAR), "DEALLOC_UAR", super::hca::dealloc_uar),
    (op!(MLX5_CMD_OP_ACCESS_REG), "ACCESS_REG", super::hca::access_reg),
    (op!(MLX5_CMD_OP_ATTACH_TO_MCG), "ATTACH_TO_MCG", super::qp::attach_to_mcg),
    (op!(MLX5_CMD_OP_DETACH_FROM_MCG), "DETACH_FROM_MCG", super::qp::detach_from_mcg),
    (op!(MLX5_CMD_OP_NOP), "NOP", super::hca::nop),
    (op!(MLX5_CMD_OP_ALLOC_XRCD), "ALLOC_XRCD", super::objects::alloc_xrcd),
    (op!(MLX5_CMD_OP_ALLOC_MEMIC), "ALLOC_MEMIC", super::objects::alloc_memic),
    (op!(MLX5_CMD_OP_DEALLOC_MEMIC), "DEALLOC_MEMIC", super::objects::dealloc_memic),
    (op!(MLX5_CMD_OP_DEALLOC_XRCD), "DEALLOC_XRCD", super::objects::dealloc_xrcd),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_unique_opcodes_and_names() {
        let mut ops: Vec<u16> = COMMANDS.iter().map(|c| c.0).collect();
        ops.sort();
        ops.dedup();
        assert_eq!(ops.len(), COMMANDS.len());
        assert_eq!(opcode_name(0x104), "ENABLE_HCA");
        assert_eq!(opcode_name(0x50d), "MAD_IFC");
        assert_eq!(opcode_name(0xffff), "UNKNOWN");
    }

    #[test]
    fn read_atomic_depth_follows_the_limits() {
        use ifc::cmd_hca_cap as c;
        let page = general_caps(&Limits::default());
        assert_eq!(c::log_max_ra_req_qp.get(&page), 7, "128 outstanding, as rxe");
        assert_eq!(c::log_max_ra_res_qp.get(&page), 7);
        let page = general_caps(&Limits { log_max_rd_atomic: 4, ..Limits::default() });
        assert_eq!((c::log_max_ra_req_qp.get(&page), c::log_max_ra_res_qp.get(&page)), (4, 4), "ConnectX-5's 16");
        // The responder keeps an atomic result for every atomic the requester may have outstanding.
        assert!(crate::engine::transport::ATOMIC_REPLAY >= 1 << Limits::default().log_max_rd_atomic);
    }

    #[test]
    fn buffer_addressing() {
        let pas = [0x10000, 0x30000, 0x20000];
        assert_eq!(buf_addr(&pas, 0, 0, 0), Some(0x10000));
        assert_eq!(buf_addr(&pas, 0, 0, 0x1040), Some(0x30040));
        assert_eq!(buf_addr(&pas, 0, 0x800, 0x1000), Some(0x30800));
        assert_eq!(buf_addr(&pas, 0, 0, 0x3000), None);
        assert_eq!(buf_addr(&pas, 1, 0, 0x2010), Some(0x30010));
        assert_eq!(buf_addr(&pas, 0, u64::MAX, 1), None);
        assert_eq!(pages_for(0x1000, 0, 0), 1);
        assert_eq!(pages_for(0x1000, 0, 0x40), 2);
        assert_eq!(page_offset_bytes(1, 0), 64);
    }
}
