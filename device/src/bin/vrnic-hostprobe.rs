//! What a wake-up costs on this host: the floor under every latency the
//! device can reach when it has no CPU of its own (docs/performance.md,
//! "The host's wake-up floor").
//!
//! Three figures, each the median and 90th percentile of many tries, with a
//! busy thread on the CPU that has to run the woken thread (as a spinning
//! vCPU would be):
//! - `timer_nap_late`: how much later than asked a 10 µs sleep ends (timer
//!   slack 1 µs), what a polling thread's nap costs;
//! - `local_wake`: a thread on the same CPU wakes it (a futex, as a
//!   socket write from a trapping vCPU does);
//! - `cross_cpu_wake`: a thread on the other CPU wakes it (an IPI).
//!
//! Prints one line: `HOST timer_nap_late_us=M/P90 local_wake_us=M/P90 cross_cpu_wake_us=M/P90 cpus=N`.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pin(cpu: usize) -> bool {
    vrnic_sys::proc::pin_to_cpu(cpu).is_ok()
}

/// A thread pinned to `cpu` that spins until `stop`, as a busy vCPU.
fn spinner(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        pin(cpu);
        while !stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    })
}

fn summary(mut v: Vec<f64>) -> String {
    if v.is_empty() {
        return "NA".into();
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    format!("{:.1}/{:.1}", at(0.5), at(0.9))
}

fn timer_nap_late(cpu: usize, n: usize) -> Vec<f64> {
    let stop = Arc::new(AtomicBool::new(false));
    let busy = spinner(cpu, stop.clone());
    let r = std::thread::spawn(move || {
        pin(cpu);
        let _ = vrnic_sys::proc::set_timerslack_ns(1000);
        let nap = Duration::from_micros(10);
        (0..n)
            .map(|_| {
                let t = Instant::now();
                std::thread::sleep(nap);
                t.elapsed().saturating_sub(nap).as_secs_f64() * 1e6
            })
            .collect()
    })
    .join()
    .unwrap_or_default();
    stop.store(true, Ordering::Relaxed);
    let _ = busy.join();
    r
}

/// The sleeper parks on `sleeper_cpu` (kept busy by a spinner unless the
/// waker is that spinner itself); the waker on `waker_cpu` spins and wakes
/// it 100 µs after it said it would park, stamping the time; the sleeper measures from the stamp.
fn wake(sleeper_cpu: usize, waker_cpu: usize, n: usize) -> Vec<f64> {
    let stop = Arc::new(AtomicBool::new(false));
    let busy = (sleeper_cpu != waker_cpu).then(|| spinner(sleeper_cpu, stop.clone()));
    let t0 = Instant::now();
    let stamp = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(AtomicBool::new(false));
    let (st, rd) = (stamp.clone(), ready.clone());
    let sleeper = std::thread::spawn(move || {
        pin(sleeper_cpu);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            rd.store(true, Ordering::Release);
            std::thread::park_timeout(Duration::from_millis(50));
            let s = st.swap(0, Ordering::Acquire);
            if s != 0 {
                out.push((t0.elapsed().as_nanos() as u64).saturating_sub(s) as f64 / 1e3);
            }
        }
        out
    });
    let target = sleeper.thread().clone();
    let (st, rd, done) = (stamp, ready, stop.clone());
    let waker = std::thread::spawn(move || {
        pin(waker_cpu);
        // The sleeper says it is about to park; 100 µs later it surely sleeps.
        let mut seen: Option<Instant> = None;
        while !done.load(Ordering::Relaxed) {
            if seen.is_none() && rd.swap(false, Ordering::AcqRel) {
                seen = Some(Instant::now());
            }
            if seen.is_some_and(|t| t.elapsed() >= Duration::from_micros(100)) {
                seen = None;
                st.store(t0.elapsed().as_nanos() as u64, Ordering::Release);
                target.unpark();
            }
            std::hint::spin_loop();
        }
    });
    let r = sleeper.join().unwrap_or_default();
    stop.store(true, Ordering::Relaxed);
    let _ = waker.join();
    if let Some(b) = busy {
        let _ = b.join();
    }
    r
}

fn main() {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let n = 2000;
    let timer = summary(timer_nap_late(0, n));
    let local = summary(wake(0, 0, n));
    let cross = if cpus >= 2 { summary(wake(0, 1, n)) } else { "NA".into() };
    println!("HOST timer_nap_late_us={timer} local_wake_us={local} cross_cpu_wake_us={cross} cpus={cpus}");
}
