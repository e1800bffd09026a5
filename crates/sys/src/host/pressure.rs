//! How busy the host's CPUs are: the spinners ask before they spin.

/// Whether the host has no CPU to spare: the runnable-task count of
/// `/proc/loadavg` (its fourth field, "R/T") against the CPUs this process
/// may run on. A thread that spins while every CPU is taken takes that CPU
/// from a vCPU, which then waits out the whole spin, so the
/// spinners (the trap-mode socket spin, the UAR poller) ask this first.
/// Sampled at most once per `period`; the file is opened at construction,
/// before the seccomp filter, and re-read with `pread`.
pub struct CpuPressure {
    file: Option<std::fs::File>,
    cpus: u32,
    period: std::time::Duration,
    last: Option<std::time::Instant>,
    busy: bool,
}

impl Default for CpuPressure {
    /// Sampled every 2 ms (a spinner asks before every spin).
    fn default() -> CpuPressure {
        CpuPressure::new(std::time::Duration::from_millis(2))
    }
}

impl CpuPressure {
    pub fn new(period: std::time::Duration) -> CpuPressure {
        let cpus = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
        CpuPressure { file: std::fs::File::open("/proc/loadavg").ok(), cpus, period, last: None, busy: false }
    }

    /// Whether the other runnable threads already fill every CPU.
    pub fn busy(&mut self) -> bool {
        if self.last.is_some_and(|t| t.elapsed() < self.period) {
            return self.busy;
        }
        self.last = Some(std::time::Instant::now());
        let Some(f) = &self.file else { return false };
        let mut buf = [0u8; 128];
        let n = std::os::unix::fs::FileExt::read_at(f, &mut buf, 0).unwrap_or(0);
        // The count includes the caller, which is running.
        self.busy = runnable_in_loadavg(&buf[..n]).is_some_and(|r| r.saturating_sub(1) >= self.cpus);
        self.busy
    }
}

/// The runnable-task count in a `/proc/loadavg` line ("0.93 0.51 0.20 3/187 9133" -> 3).
pub fn runnable_in_loadavg(line: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(line).ok()?;
    let rt = s.split_ascii_whitespace().nth(3)?;
    rt.split_once('/')?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_runnable_count() {
        assert_eq!(runnable_in_loadavg(b"0.93 0.51 0.20 3/187 9133\n"), Some(3));
        assert_eq!(runnable_in_loadavg(b"12.00 4.00 1.00 17/2000 1"), Some(17));
        assert_eq!(runnable_in_loadavg(b"0.93 0.51 0.20"), None);
        assert_eq!(runnable_in_loadavg(b"0.93 0.51 0.20 x/187 9"), None);
        assert_eq!(runnable_in_loadavg(b"\xff\xfe"), None);
    }

    /// On this machine the file is there: a busy spinner on every CPU
    /// makes the host busy, and their end makes it idle again.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc")]
    fn cpu_pressure_follows_spinning_threads() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let mut p = CpuPressure::new(std::time::Duration::ZERO);
        let cpus = std::thread::available_parallelism().unwrap().get();
        let stop = Arc::new(AtomicBool::new(false));
        let spinners: Vec<_> = (0..cpus + 1)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let t = std::time::Instant::now();
        let mut seen_busy = false;
        while t.elapsed() < std::time::Duration::from_secs(5) && !seen_busy {
            seen_busy = p.busy();
        }
        stop.store(true, Ordering::Relaxed);
        for s in spinners {
            s.join().unwrap();
        }
        assert!(seen_busy, "{} spinners on {cpus} CPUs never read as busy", cpus + 1);
    }
}
