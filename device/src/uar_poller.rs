//! The poll-mode doorbell poller: a thread that scans the doorbell slots of
//! the armed UAR pages (`vrnic_mlx5::uar::scan_page`) and hands what it
//! finds to the firmware, spinning after activity and napping when idle
//! (the schedule is `vrnic_sys::host::PollerSchedule`'s). The personality
//! decodes doorbells; when and on which thread they are looked for is the
//! device's choice, made here.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vrnic_mlx5::uar::{scan_page, DoorbellSink, Kick};
use vrnic_sys::host::{Idle, IdleStrategy, PollerSchedule, Schedule, Verdict, Wake, SCHEDULE};
use vrnic_sys::SharedMem;

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

/// Wakes a napping [`UarPoller`] into its spin window ([`Kick`]).
#[derive(Clone)]
pub struct PollerKick {
    thread: std::thread::Thread,
    kicked: Arc<AtomicBool>,
    local: Arc<AtomicBool>,
}

impl Kick for PollerKick {
    /// Ends the poller's nap; a local kick keeps its naps short for a while.
    fn kick(&self, local: bool) {
        if local {
            self.local.store(true, Ordering::Relaxed);
        }
        if !self.kicked.swap(true, Ordering::AcqRel) {
            self.thread.unpark();
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
    use vrnic_mlx5::uar::{arm_page, send_doorbell_offsets, DoorbellStats, BF_HALF, SENTINEL64};
    use vrnic_sys::memfd;

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
        use vrnic_mlx5::ifc::cmd_hca_cap;
        let caps = vrnic_mlx5::hca::caps::image::general_caps_image();
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
