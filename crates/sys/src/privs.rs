//! Dropping privileges after start-up.
//!
//! Once its sockets are bound and its files open, the server needs no
//! privilege at all: it accepts on a bound socket, maps the fds QEMU sends,
//! writes eventfds and talks UDP on a bound socket. So, unless told to keep
//! them, it gives up:
//!
//! - **no_new_privs** (set before any thread exists, so every thread has it):
//!   nothing the process could ever exec gains privileges;
//! - **every capability** (effective, permitted, inheritable, ambient and the
//!   bounding set). Capabilities are per thread in Linux, so each long-lived
//!   thread calls [`drop_this_thread`] when it starts, and the main thread
//!   calls it before serving; threads spawned later inherit the empty sets;
//! - with `--user NAME`, the uid/gid (and supplementary groups) as well
//!   (glibc applies set*id to every thread of the process).
//!
//! Then (unless `--seccomp off`) the main thread installs the seccomp
//! allow-list on every thread ([`crate::seccomp`]). Long-lived threads are
//! started with [`spawn`], so the main thread can wait ([`wait_for_threads`])
//! until each has dropped its capabilities and finished its own set-up
//! before the filter (which forbids both) lands on it.
//!
//! What remains: the uid the server was started with unless `--user` is
//! given (so a root-started server still owns root-owned files by plain
//! permission checks, but without CAP_DAC_OVERRIDE cannot open anyone else's),
//! its open fds, its address space, and the syscalls on the allow-list.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use thiserror::Error;

/// Errors from dropping privileges; each carries the OS error.
#[derive(Debug, Error)]
pub enum PrivError {
    #[error("prctl({0}): {1}")]
    Prctl(&'static str, std::io::Error),
    #[error("capset: {0}")]
    Capset(std::io::Error),
    #[error("unknown user {0:?}")]
    NoSuchUser(String),
    #[error("{0}: {1}")]
    SetId(&'static str, std::io::Error),
    #[error("{0} thread(s) still starting after {1:?}")]
    ThreadsStarting(usize, Duration),
}

static DROP: AtomicBool = AtomicBool::new(false);

/// Asks every thread to drop its capabilities ([`drop_this_thread`]) and sets
/// no_new_privs. Call first thing in `main`, before any thread is spawned.
///
/// Not with [`switch_user`]: glibc makes every thread repeat a set*id call
/// and aborts if one of them lacks the capability; there the uid change
/// itself empties every thread's sets.
pub fn request_drop() -> Result<(), PrivError> {
    DROP.store(true, Ordering::SeqCst);
    set_no_new_privs()
}

/// Sets no_new_privs for the calling thread and the threads it spawns later.
pub fn set_no_new_privs() -> Result<(), PrivError> {
    prctl(libc::PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS")
}

/// Whether [`request_drop`] was called.
pub fn drop_requested() -> bool {
    DROP.load(Ordering::SeqCst)
}

fn prctl(op: libc::c_int, arg: libc::c_ulong, name: &'static str) -> Result<(), PrivError> {
    crate::proc::prctl(op, arg).map_err(|e| PrivError::Prctl(name, e))
}

fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(40)
}

/// [`drop_caps`] if [`request_drop`] was called; a no-op otherwise.
pub fn drop_this_thread() -> Result<(), PrivError> {
    if !drop_requested() {
        return Ok(());
    }
    drop_caps()
}

/// What each long-lived thread calls first: [`drop_this_thread`], a
/// failure logged (the thread still runs, with what it has). Nothing once
/// the seccomp filter is in place: a thread spawned then inherits its
/// creator's empty sets and filter (which would not let it drop anyway).
pub fn enter_thread(name: &str) {
    if crate::seccomp::installed() {
        return;
    }
    if let Err(e) = drop_this_thread() {
        tracing::warn!("{name} thread: dropping capabilities: {e}");
    }
}

/// Threads started by [`spawn`] that have not finished their set-up yet.
static STARTING: AtomicUsize = AtomicUsize::new(0);

/// Starts a long-lived thread named `name`: it calls [`enter_thread`], then
/// `setup` (whatever needs syscalls the seccomp filter forbids, e.g.
/// building an event loop), reports itself started, then runs `run` with
/// what `setup` returned.
pub fn spawn<S, R>(
    name: &str,
    setup: impl FnOnce() -> S + Send + 'static,
    run: impl FnOnce(S) -> R + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<R>>
where
    R: Send + 'static,
    S: Send + 'static,
{
    STARTING.fetch_add(1, Ordering::SeqCst);
    let tag = name.to_string();
    let r = std::thread::Builder::new().name(name.into()).spawn(move || {
        enter_thread(&tag);
        let s = setup();
        STARTING.fetch_sub(1, Ordering::SeqCst);
        run(s)
    });
    if r.is_err() {
        STARTING.fetch_sub(1, Ordering::SeqCst);
    }
    r
}

/// Waits until every thread started by [`spawn`] has finished its set-up.
pub fn wait_for_threads(timeout: Duration) -> Result<(), PrivError> {
    let t0 = Instant::now();
    loop {
        let n = STARTING.load(Ordering::SeqCst);
        if n == 0 {
            return Ok(());
        }
        if t0.elapsed() >= timeout {
            return Err(PrivError::ThreadsStarting(n, timeout));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Clears the calling thread's ambient, bounding, effective, permitted and
/// inheritable capability sets. Safe to call more than once.
pub fn drop_caps() -> Result<(), PrivError> {
    // Ambient first (EINVAL on kernels without ambient caps: nothing to clear).
    let _ = crate::proc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong);
    // The bounding set needs CAP_SETPCAP in the effective set; without it
    // (an unprivileged start) there is nothing to bound, so failures are
    // ignored here and the capset below still empties the sets.
    for cap in 0..=last_cap() {
        let _ = crate::proc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong);
    }
    crate::proc::capset_clear().map_err(PrivError::Capset)?;
    Ok(())
}

/// Switches the whole process to `user` (its primary group, no supplementary
/// groups). Needs root (or CAP_SETUID/CAP_SETGID) to still be held.
pub fn switch_user(user: &str) -> Result<(), PrivError> {
    let name = std::ffi::CString::new(user).map_err(|_| PrivError::NoSuchUser(user.into()))?;
    let (uid, gid) = crate::proc::user_ids(&name).ok_or_else(|| PrivError::NoSuchUser(user.into()))?;
    crate::proc::set_ids(uid, gid).map_err(|(call, e)| PrivError::SetId(call, e))?;
    Ok(())
}

/// The `CapEff`, `CapPrm`, `CapBnd`, `NoNewPrivs` and `Seccomp` lines of a
/// `/proc/.../status` file, parsed (for the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPrivs {
    pub cap_eff: u64,
    pub cap_prm: u64,
    pub cap_bnd: u64,
    pub no_new_privs: bool,
    /// 0: none, 1: strict, 2: filter.
    pub seccomp: u8,
}

impl ThreadPrivs {
    pub fn parse(status: &str) -> Option<ThreadPrivs> {
        let field = |k: &str| status.lines().find_map(|l| l.strip_prefix(k)).map(|v| v.trim().to_string());
        let hex = |k: &str| field(k).and_then(|v| u64::from_str_radix(&v, 16).ok());
        Some(ThreadPrivs {
            cap_eff: hex("CapEff:")?,
            cap_prm: hex("CapPrm:")?,
            cap_bnd: hex("CapBnd:")?,
            no_new_privs: field("NoNewPrivs:")? == "1",
            seccomp: field("Seccomp:")?.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_status() {
        let s = "Name:\tvrnic\nNoNewPrivs:\t1\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n\
                 CapEff:\t0000000000000000\nCapBnd:\t000001ffffffffff\nSeccomp:\t2\nSeccomp_filters:\t2\n";
        let p = ThreadPrivs::parse(s).unwrap();
        let want = ThreadPrivs {
            cap_eff: 0,
            cap_prm: 0x1ff_ffff_ffff,
            cap_bnd: 0x1ff_ffff_ffff,
            no_new_privs: true,
            seccomp: 2,
        };
        assert_eq!(p, want);
        assert!(ThreadPrivs::parse("Name:\tx\n").is_none());
    }

    /// Dropping in a fresh thread empties that thread's sets (and only its).
    #[test]
    #[cfg_attr(miri, ignore = "prctl and capget/capset are foreign calls Miri does not support")]
    fn drop_empties_the_calling_threads_sets() {
        // The flag is process-global; set it from a thread that then drops,
        // so the test runner's other threads are unaffected apart from
        // no_new_privs (harmless: tests exec nothing setuid).
        let t = std::thread::spawn(|| {
            request_drop().unwrap();
            drop_this_thread().unwrap();
            ThreadPrivs::parse(&std::fs::read_to_string("/proc/thread-self/status").unwrap()).unwrap()
        });
        let p = t.join().unwrap();
        assert_eq!(p.cap_eff, 0);
        assert_eq!(p.cap_prm, 0);
        assert!(p.no_new_privs);
        // CapBnd can only shrink with CAP_SETPCAP; when it was held, it is empty now.
        let me = ThreadPrivs::parse(&std::fs::read_to_string("/proc/thread-self/status").unwrap()).unwrap();
        if me.cap_eff & (1 << 8) != 0 {
            assert_eq!(p.cap_bnd, 0);
        }
    }
}
