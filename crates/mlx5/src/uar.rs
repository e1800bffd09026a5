//! UAR (doorbell) pages: decoding the stores the driver makes into them, and
//! the two ways the device learns about those stores.
//!
//! * `trap`: UAR pages are not mappable; every store arrives as a (posted)
//!   REGION_WRITE and is decoded on the spot.
//! * `poll`: UAR pages are served from shared memory the guest stores into
//!   directly; [`UarPoller`] watches the doorbell slots of the armed pages.
//!   Each slot holds a sentinel (all ones) that the poller swaps back in
//!   atomically when it consumes a store, so a store is seen exactly once.
//!
//! Layout of a 4 KiB UAR page (mlx5 `MLX5_CQ_DOORBELL`, `MLX5_EQ_DOORBELL_OFFSET`,
//! `MLX5_BF_OFFSET`): 0x20 CQ arm (8 bytes), 0x40 EQ update+arm, 0x48 EQ
//! update (4 bytes each), 0x800-0xfff send doorbells / BlueFlame (8-byte slots;
//! drivers ring at the start of each 256-byte bfreg half, which is all the poller watches).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vrnic_sys::host::{Idle, IdleStrategy, PollerSchedule, Schedule, Verdict, Wake, SCHEDULE};
use vrnic_sys::SharedMem;

pub const MLX5_CQ_DOORBELL: u64 = 0x20;
pub const MLX5_EQ_DOORBELL_ARM: u64 = 0x40;
pub const MLX5_EQ_DOORBELL_NO_ARM: u64 = 0x48;
pub const MLX5_BF_OFFSET: u64 = 0x800;
pub const UAR_PAGE: u64 = 4096;
/// Half of a bfreg (`bf_reg_size / 2`, the caps' `log_bf_reg_size` 9 ⇒ 512-byte
/// bfregs): drivers ring a send doorbell at the start of a half, the kernel
/// alternating `+0`/`+0x100` of its bfreg (`bf->offset ^= buf_size`),
/// libmlx5 always at `+0x800` (BlueFlame is off).
pub const BF_HALF: u64 = 0x100;

/// The page offsets where a driver rings a send doorbell: 0x800, 0x900, … 0xf00.
/// The poller watches these; a trapped store elsewhere in 0x800..0x1000 is
/// still decoded (`Doorbell::decode`), but no driver makes one with BlueFlame off.
pub fn send_doorbell_offsets() -> impl Iterator<Item = u64> {
    (MLX5_BF_OFFSET..UAR_PAGE).step_by(BF_HALF as usize)
}

/// A decoded doorbell store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doorbell {
    /// CQ arm: `sn<<28 | cmd | ci` then `cqn` (two big-endian dwords).
    CqArm { uar: u64, cqn: u32, sn: u8, solicited: bool, ci: u32 },
    /// EQ consumer-index update, with or without arming.
    EqUpdate { uar: u64, eqn: u8, ci: u32, arm: bool },
    /// Send doorbell: the first 8 bytes of the last WQE's control segment.
    Send { uar: u64, offset: u64, opmod_idx_opcode: u32, qpn_ds: u32 },
}

impl Doorbell {
    /// Decodes a store of `data` at `page_off` in UAR page `uar`; None for
    /// stores that are not doorbells (wrong offset or width).
    pub fn decode(uar: u64, page_off: u64, data: &[u8]) -> Option<Doorbell> {
        let dw = |i: usize| u32::from_be_bytes(data[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
        match (page_off, data.len()) {
            (MLX5_CQ_DOORBELL, 8) => {
                let a = dw(0);
                Some(Doorbell::CqArm {
                    uar,
                    cqn: dw(1) & 0x00ff_ffff,
                    sn: ((a >> 28) & 0x3) as u8,
                    solicited: a & (1 << 24) != 0,
                    ci: a & 0x00ff_ffff,
                })
            }
            (MLX5_EQ_DOORBELL_ARM, 4) | (MLX5_EQ_DOORBELL_NO_ARM, 4) => {
                let v = dw(0);
                Some(Doorbell::EqUpdate {
                    uar,
                    eqn: (v >> 24) as u8,
                    ci: v & 0x00ff_ffff,
                    arm: page_off == MLX5_EQ_DOORBELL_ARM,
                })
            }
            (o, 8) if (MLX5_BF_OFFSET..UAR_PAGE).contains(&o) && o % 8 == 0 => {
                Some(Doorbell::Send { uar, offset: o, opmod_idx_opcode: dw(0), qpn_ds: dw(1) })
            }
            _ => None,
        }
    }
}

/// Where decoded doorbells go (the data path; counters until it exists).
pub trait DoorbellSink: Send + Sync {
    fn doorbell(&self, db: Doorbell);
}

/// Doorbell counters, also the sink used before a data path is attached.
#[derive(Default, Debug, serde::Serialize)]
pub struct DoorbellStats {
    pub cq_arm: AtomicU64,
    pub eq_update: AtomicU64,
    pub send: AtomicU64,
    pub ignored: AtomicU64,
    /// The last send doorbell seen (qpn_ds << 32 | opmod_idx_opcode), for tests.
    pub last_send: AtomicU64,
}

impl DoorbellStats {
    /// Every decoded doorbell so far (send, CQ arm, EQ update).
    pub fn total(&self) -> u64 {
        [&self.send, &self.cq_arm, &self.eq_update].iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

impl DoorbellSink for DoorbellStats {
    fn doorbell(&self, db: Doorbell) {
        tracing::trace!(?db, "doorbell");
        match db {
            Doorbell::CqArm { .. } => self.cq_arm.fetch_add(1, Ordering::Relaxed),
            Doorbell::EqUpdate { .. } => self.eq_update.fetch_add(1, Ordering::Relaxed),
            Doorbell::Send { opmod_idx_opcode, qpn_ds, .. } => {
                self.last_send.store(((qpn_ds as u64) << 32) | opmod_idx_opcode as u64, Ordering::Relaxed);
                self.send.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

/// Sentinel left in every watched slot; a doorbell never has all bits set
/// (a CQ arm's cqn, an EQ number 0xff with ci 0xffffff, a send with qpn
/// 0xffffff are all outside what the device hands out).
pub const SENTINEL64: u64 = u64::MAX;
pub const SENTINEL32: u32 = u32::MAX;

/// Watches doorbell slots of armed UAR pages in shared memory.
pub struct UarPoller {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pages: Arc<Mutex<Vec<u64>>>,
    pub stats: Arc<PollerStats>,
    kicked: Arc<AtomicBool>,
    /// Set by a local kick (data delivered inside this device).
    local: Arc<AtomicBool>,
}

/// What the poller did (the control socket's `doorbells.poller`).
#[derive(Default, Debug, serde::Serialize)]
pub struct PollerStats {
    /// Passes over the watched pages.
    pub scans: AtomicU64,
    /// Passes that found at least one doorbell.
    pub hit_scans: AtomicU64,
    /// Naps taken, and their requested length in total (µs).
    pub naps: AtomicU64,
    pub nap_us: AtomicU64,
    /// How much later than asked the naps that ran out ended, in total (µs):
    /// the time the woken poller waited for a CPU.
    pub nap_late_us: AtomicU64,
    /// Naps a kick ended, and kicks marked local (loopback delivery).
    pub kicks_taken: AtomicU64,
    pub local_kicks: AtomicU64,
    /// Spins taken while every CPU was busy (see [`vrnic_sys::host::poller::SpinScores`]): those that
    /// found the next doorbell, and those that ran out into a nap.
    pub busy_spin_won: AtomicU64,
    pub busy_spin_lost: AtomicU64,
}

/// Wakes a napping [`UarPoller`] into its spin window: something just
/// happened that makes a doorbell likely soon (the device kicks it when the
/// fabric delivers packets into the guest, which the guest then answers).
#[derive(Clone)]
pub struct PollerKick {
    thread: std::thread::Thread,
    kicked: Arc<AtomicBool>,
    local: Arc<AtomicBool>,
}

impl PollerKick {
    /// Ends the poller's nap. `local`: the data was delivered inside this
    /// device (loopback), so the answering doorbell comes within
    /// microseconds and the poller keeps its naps short for a while.
    pub fn kick(&self, local: bool) {
        if local {
            self.local.store(true, Ordering::Relaxed);
        }
        if !self.kicked.swap(true, Ordering::AcqRel) {
            self.thread.unpark();
        }
    }
}

/// A poller kick that waits for the end of a burst of received packets:
/// it kicks once if one of them changed what the guest sees (data, a
/// completion). RDMA READ and atomic requests are answered by the device
/// alone and kick nothing. A packet from this device itself (loopback)
/// makes the kick local.
pub struct BurstKick {
    kick: PollerKick,
    pending: AtomicBool,
    pending_local: AtomicBool,
}

impl BurstKick {
    pub fn new(kick: PollerKick) -> BurstKick {
        BurstKick { kick, pending: AtomicBool::new(false), pending_local: AtomicBool::new(false) }
    }

    /// Notes one received packet (BTH onward).
    pub fn note(&self, pkt: &[u8], local: bool) {
        if let Ok(b) = vrnic_wire::bth::Packet::new_checked(pkt) {
            let op = b.opcode();
            // RDMA READ request (0x0c) or an atomic request.
            if !(op.op() == 0x0c || op.is_atomic()) {
                if local {
                    self.pending_local.store(true, Ordering::Relaxed);
                }
                self.pending.store(true, Ordering::Relaxed);
            }
        }
    }

    /// End of the burst: kicks if a noted packet asked for it.
    pub fn flush(&self) {
        if self.pending.swap(false, Ordering::Relaxed) {
            self.kick.kick(self.pending_local.swap(false, Ordering::Relaxed));
        }
    }
}

impl UarPoller {
    /// `mem` holds BAR0 at offset 0; `sink` gets every doorbell.
    pub fn start(mem: Arc<SharedMem>, sink: Arc<dyn DoorbellSink>) -> UarPoller {
        Self::start_with(mem, sink, Arc::new(Mutex::new(Vec::new())))
    }

    /// Like [`start`](Self::start), watching the pages of a list shared with its owner.
    pub fn start_with(mem: Arc<SharedMem>, sink: Arc<dyn DoorbellSink>, pages: Arc<Mutex<Vec<u64>>>) -> UarPoller {
        Self::start_scheduled(mem, sink, pages, SCHEDULE)
    }

    fn start_scheduled(
        mem: Arc<SharedMem>,
        sink: Arc<dyn DoorbellSink>,
        pages: Arc<Mutex<Vec<u64>>>,
        sched: Schedule,
    ) -> UarPoller {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(PollerStats::default());
        let kicked = Arc::new(AtomicBool::new(false));
        let local = Arc::new(AtomicBool::new(false));
        let l = local.clone();
        let (s, p, st, k) = (stop.clone(), pages.clone(), stats.clone(), kicked.clone());
        // Made here, before the seccomp filter.
        let sched = PollerSchedule::new(sched);
        let thread = vrnic_sys::privs::spawn("vrnic-uar-poll", PollerSchedule::thread_setup, move |()| {
            poll_loop(&mem, &*sink, &s, &p, &st, (&k, &l), sched)
        })
        .expect("spawn poller thread");
        UarPoller { stop, thread: Some(thread), pages, stats, kicked, local }
    }

    /// A handle that wakes the poller into its spin window.
    pub fn kick_handle(&self) -> Option<PollerKick> {
        let thread = self.thread.as_ref()?.thread().clone();
        Some(PollerKick { thread, kicked: self.kicked.clone(), local: self.local.clone() })
    }

    /// Starts watching UAR page `uar` (its slots must already hold sentinels).
    pub fn watch(&self, uar: u64) {
        let mut p = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        if !p.contains(&uar) {
            p.push(uar);
        }
    }

    /// Stops watching UAR page `uar`.
    pub fn unwatch(&self, uar: u64) {
        self.pages.lock().unwrap_or_else(|e| e.into_inner()).retain(|&p| p != uar);
    }

    /// Stops watching every page.
    pub fn unwatch_all(&self) {
        self.pages.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The shared list of watched pages.
    pub fn pages(&self) -> Arc<Mutex<Vec<u64>>> {
        self.pages.clone()
    }

    pub fn watched(&self) -> Vec<u64> {
        self.pages.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for UarPoller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// Writes sentinels into every doorbell slot of UAR page `uar`.
pub fn arm_page(mem: &SharedMem, uar: u64) {
    let base = (uar * UAR_PAGE) as usize;
    mem.swap_u64(base + MLX5_CQ_DOORBELL as usize, SENTINEL64);
    mem.swap_u32(base + MLX5_EQ_DOORBELL_ARM as usize, SENTINEL32);
    mem.swap_u32(base + MLX5_EQ_DOORBELL_NO_ARM as usize, SENTINEL32);
    let mut o = MLX5_BF_OFFSET;
    while o < UAR_PAGE {
        mem.swap_u64(base + o as usize, SENTINEL64);
        o += 8;
    }
}

/// One pass over a page; returns how many doorbells it consumed.
pub fn scan_page(mem: &SharedMem, uar: u64, sink: &dyn DoorbellSink) -> usize {
    let base = (uar * UAR_PAGE) as usize;
    let mut n = 0;
    let take64 = |off: u64, n: &mut usize| {
        let at = base + off as usize;
        if mem.load_u64(at).is_some_and(|v| v != SENTINEL64) {
            if let Some(v) = mem.swap_u64(at, SENTINEL64) {
                if let Some(db) = Doorbell::decode(uar, off, &v.to_ne_bytes()) {
                    sink.doorbell(db);
                }
                *n += 1;
            }
        }
    };
    take64(MLX5_CQ_DOORBELL, &mut n);
    for o in send_doorbell_offsets() {
        take64(o, &mut n);
    }
    for off in [MLX5_EQ_DOORBELL_ARM, MLX5_EQ_DOORBELL_NO_ARM] {
        // Load first: a swap on every pass would write the line each time.
        if mem.load_u32(base + off as usize).is_none_or(|v| v == SENTINEL32) {
            continue;
        }
        if let Some(v) = mem.swap_u32(base + off as usize, SENTINEL32) {
            if v != SENTINEL32 {
                if let Some(db) = Doorbell::decode(uar, off, &v.to_ne_bytes()) {
                    sink.doorbell(db);
                }
                n += 1;
            }
        }
    }
    n
}

/// Takes a pending local kick (a loopback delivery), counting it.
fn took_local_kick(local_kick: &AtomicBool, stats: &PollerStats) -> bool {
    let took = local_kick.swap(false, Ordering::Relaxed);
    if took {
        stats.local_kicks.fetch_add(1, Ordering::Relaxed);
    }
    took
}

fn poll_loop(
    mem: &SharedMem,
    sink: &dyn DoorbellSink,
    stop: &AtomicBool,
    pages: &Mutex<Vec<u64>>,
    stats: &PollerStats,
    (kicked, local_kick): (&AtomicBool, &AtomicBool),
    mut sched: PollerSchedule,
) {
    let mut local: Vec<u64> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        local.clear();
        local.extend_from_slice(&pages.lock().unwrap_or_else(|e| e.into_inner()));
        let mut hit_page = None;
        for &p in &local {
            if scan_page(mem, p, sink) > 0 {
                hit_page = Some(p);
            }
        }
        stats.scans.fetch_add(1, Ordering::Relaxed);
        if let Some(page) = hit_page {
            stats.hit_scans.fetch_add(1, Ordering::Relaxed);
            let local = took_local_kick(local_kick, stats);
            if sched.on_event(page, local) == Some(Verdict::Won) {
                stats.busy_spin_won.fetch_add(1, Ordering::Relaxed);
            }
            continue;
        }
        let (idle, verdict) = sched.on_idle();
        if verdict == Some(Verdict::Lost) {
            stats.busy_spin_lost.fetch_add(1, Ordering::Relaxed);
        }
        let nap = match idle {
            Idle::Spin { .. } => {
                std::hint::spin_loop();
                continue;
            }
            Idle::Sleep(nap) => nap.unwrap_or(Duration::MAX),
        };
        stats.naps.fetch_add(1, Ordering::Relaxed);
        stats.nap_us.fetch_add(nap.as_micros() as u64, Ordering::Relaxed);
        let slept = Instant::now();
        std::thread::park_timeout(nap);
        if kicked.swap(false, Ordering::AcqRel) {
            stats.kicks_taken.fetch_add(1, Ordering::Relaxed);
            let local = took_local_kick(local_kick, stats);
            sched.on_wake(Wake::Kick { local });
            continue;
        }
        let late = slept.elapsed().saturating_sub(nap);
        stats.nap_late_us.fetch_add(late.as_micros() as u64, Ordering::Relaxed);
        sched.on_wake(Wake::Timeout { late });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vrnic_sys::memfd;

    #[test]
    fn decode_each_kind() {
        let mut cq = [0u8; 8];
        cq[..4].copy_from_slice(&((2u32 << 28) | (1 << 24) | 0x123).to_be_bytes());
        cq[4..].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(
            Doorbell::decode(4, 0x20, &cq),
            Some(Doorbell::CqArm { uar: 4, cqn: 7, sn: 2, solicited: true, ci: 0x123 })
        );
        let eq = ((5u32 << 24) | 9).to_be_bytes();
        assert_eq!(Doorbell::decode(4, 0x40, &eq), Some(Doorbell::EqUpdate { uar: 4, eqn: 5, ci: 9, arm: true }));
        assert_eq!(Doorbell::decode(4, 0x48, &eq), Some(Doorbell::EqUpdate { uar: 4, eqn: 5, ci: 9, arm: false }));
        let mut s = [0u8; 8];
        s[..4].copy_from_slice(&0x0001_000au32.to_be_bytes());
        s[4..].copy_from_slice(&0x0000_4203u32.to_be_bytes());
        assert_eq!(
            Doorbell::decode(4, 0x900, &s),
            Some(Doorbell::Send { uar: 4, offset: 0x900, opmod_idx_opcode: 0x1000a, qpn_ds: 0x4203 })
        );
        assert_eq!(Doorbell::decode(4, 0x904, &s), None);
        assert_eq!(Doorbell::decode(4, 0x20, &s[..4]), None);
        assert_eq!(Doorbell::decode(4, 0x100, &s), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "memfd_create, mmap of an fd and the poller thread's prctl are not supported by Miri")]
    fn poller_sees_each_store_once() {
        let fd = memfd("uar", 8 * 4096).unwrap();
        let mem = Arc::new(SharedMem::map(&fd, 8 * 4096).unwrap());
        arm_page(&mem, 5);
        let stats = Arc::new(DoorbellStats::default());
        let poller = UarPoller::start(mem.clone(), stats.clone());
        poller.watch(5);
        // The "guest": a second mapping of the same fd.
        let guest = SharedMem::map(&fd, 8 * 4096).unwrap();
        let mut s = [0u8; 8];
        s[..4].copy_from_slice(&0x0000_0108u32.to_be_bytes());
        s[4..].copy_from_slice(&0x0000_0102u32.to_be_bytes());
        guest.write(5 * 4096 + 0x800, &s);
        let eq = ((3u32 << 24) | 1).to_be_bytes();
        guest.write(5 * 4096 + 0x40, &eq);
        let t0 = Instant::now();
        while (stats.send.load(Ordering::Relaxed) < 1 || stats.eq_update.load(Ordering::Relaxed) < 1)
            && t0.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(stats.send.load(Ordering::Relaxed), 1);
        assert_eq!(stats.eq_update.load(Ordering::Relaxed), 1);
        assert_eq!(stats.last_send.load(Ordering::Relaxed), (0x102u64 << 32) | 0x108);
        // Slot is re-armed.
        assert_eq!(mem.load_u64(5 * 4096 + 0x800), Some(SENTINEL64));
        // Unwatched pages are ignored.
        guest.write(6 * 4096 + 0x800, &s);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(stats.send.load(Ordering::Relaxed), 1);
        drop(poller);
    }

    /// The poller takes send doorbells at every bfreg half the kernel and
    /// libmlx5 use (0x800..0xf00 step 0x100, from `log_bf_reg_size` 9) and
    /// nothing in between; the caps report the bfreg size this assumes.
    #[test]
    #[cfg_attr(miri, ignore = "memfd_create, mmap of an fd and the poller thread's prctl are not supported by Miri")]
    fn poller_watches_each_bfreg_half() {
        use crate::ifc::cmd_hca_cap;
        let caps = crate::hca::caps::image::general_caps_image();
        assert_eq!(1u64 << cmd_hca_cap::log_bf_reg_size.get(&caps), 2 * BF_HALF);
        let offs: Vec<u64> = send_doorbell_offsets().collect();
        assert_eq!(offs, [0x800, 0x900, 0xa00, 0xb00, 0xc00, 0xd00, 0xe00, 0xf00]);
        let fd = memfd("uar-halves", 4096).unwrap();
        let mem = Arc::new(SharedMem::map(&fd, 4096).unwrap());
        arm_page(&mem, 0);
        let stats = Arc::new(DoorbellStats::default());
        let poller = UarPoller::start(mem.clone(), stats.clone());
        poller.watch(0);
        let guest = SharedMem::map(&fd, 4096).unwrap();
        let wait_sends = |n: u64| {
            let t0 = Instant::now();
            while stats.send.load(Ordering::Relaxed) < n && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        for (i, &o) in offs.iter().enumerate() {
            let mut s = [0u8; 8];
            s[..4].copy_from_slice(&((i as u32) << 8 | 0x0a).to_be_bytes());
            s[4..].copy_from_slice(&(0x0000_4401u32 + i as u32).to_be_bytes());
            guest.write(o as usize, &s);
            wait_sends(i as u64 + 1);
            assert_eq!(stats.send.load(Ordering::Relaxed), i as u64 + 1, "doorbell at {o:#x}");
            assert_eq!(stats.last_send.load(Ordering::Relaxed) >> 32, 0x4401 + i as u64, "doorbell at {o:#x}");
        }
        // Not a doorbell position: left alone.
        guest.write(0x808, &[1; 8]);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(stats.send.load(Ordering::Relaxed), offs.len() as u64);
        assert_eq!(mem.load_u64(0x808), Some(u64::from_ne_bytes([1; 8])));
        drop(poller);
    }

    /// A kick ends an idle poller's nap and opens a spin window. (Here
    /// the idle nap is 30 s: each kick must wake the poller far sooner.)
    #[test]
    #[cfg_attr(miri, ignore = "maps a memfd and the poller thread calls prctl")]
    fn a_kick_ends_the_nap() {
        let fd = memfd("kick", 4096).unwrap();
        let mem = Arc::new(SharedMem::map(&fd, 4096).unwrap());
        let long = Duration::from_secs(30);
        let sched = Schedule {
            first_nap: long,
            hot: Duration::ZERO,
            spin: Duration::from_micros(20),
            max_nap: long,
            warm: Duration::ZERO,
            idle_nap: long,
            busy_spin: Duration::ZERO,
        };
        let poller = UarPoller::start_scheduled(
            mem,
            Arc::new(DoorbellStats::default()),
            Arc::new(Mutex::new(Vec::new())),
            sched,
        );
        let k = poller.kick_handle().unwrap();
        for i in 0..5 {
            // Past the spin window: the poller is in a 30 s nap.
            std::thread::sleep(Duration::from_millis(20));
            let before = poller.stats.scans.load(Ordering::Relaxed);
            let t = Instant::now();
            k.kick(false);
            while poller.stats.scans.load(Ordering::Relaxed) == before {
                assert!(t.elapsed() < Duration::from_secs(10), "kick {i} did not wake the poller");
                std::thread::yield_now();
            }
            assert_eq!(poller.stats.kicks_taken.load(Ordering::Relaxed), i + 1);
        }
        let t = Instant::now();
        drop(poller);
        assert!(t.elapsed() < Duration::from_secs(10), "drop must not wait out the nap");
    }
}
