//! A seccomp-BPF allow-list for the server process.
//!
//! After start-up (sockets bound, files open, every long-lived thread
//! started and its capabilities dropped) the main thread installs the
//! filters on every thread at once (`SECCOMP_FILTER_FLAG_TSYNC`); threads
//! spawned later inherit them from their creator:
//!
//! 1. **refusals** ([`REFUSED`]), one small filter each: calls answered
//!    with an errno instead of running. clone3 → ENOSYS: its flags sit in
//!    memory a filter cannot read, so glibc is made to fall back to
//!    clone(2), whose flags the allow-list checks (threads only:
//!    CLONE_THREAD must be set). openat → EACCES: glibc's malloc opens
//!    `/proc/sys/vm/overcommit_memory` once when it first shrinks a
//!    thread's heap (and a panic's backtrace opens the binary); both cope
//!    with a failed open, and no file is ever opened;
//! 2. the **allow-list** ([`allow_list`]): the syscalls the running server
//!    makes, some with their arguments pinned; anything else, or a syscall
//!    from another ABI (the architecture field is checked first), kills the
//!    whole process with SIGSYS (`SECCOMP_RET_KILL_PROCESS`), or in
//!    [`SeccompMode::Log`] is allowed and logged by the kernel.
//!
//! The kernel runs every filter on each syscall and takes the strictest
//! answer, so the refused calls are on the allow-list too (else its kill
//! would win over their errno).
//!
//! The list was derived from `strace -f` of the server under the guest
//! scenarios (everything each thread does after it dropped its
//! capabilities), plus the few calls of rare paths that are part of
//! running: thread start and exit, signal return and restart, abort.
//! docs/security.md explains each group.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use thiserror::Error;

/// What to do about the filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SeccompMode {
    /// No filter.
    Off,
    /// Syscalls outside the list are allowed and logged by the kernel
    /// (`SECCOMP_RET_LOG`: dmesg/audit `type=1326`), to find missing ones.
    Log,
    /// Syscalls outside the list kill the process with SIGSYS.
    #[default]
    Enforce,
}

/// Errors from building or installing the filter.
#[derive(Debug, Error)]
pub enum SeccompError {
    #[error("seccomp filter: {0}")]
    Build(#[from] seccompiler::BackendError),
    #[error("installing seccomp filter: {0}")]
    Install(#[from] seccompiler::Error),
}

/// One allowed syscall: its name (for docs and tests), number, and the
/// argument rules (empty: any arguments; else one of them must match).
pub struct Allowed {
    pub name: &'static str,
    pub nr: i64,
    pub rules: Vec<SeccompRule>,
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> SeccompCondition {
    // Only fails for an argument index above 5.
    SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value).expect("argument index <= 5")
}

fn rule(conds: Vec<SeccompCondition>) -> SeccompRule {
    // Only fails for an empty condition list.
    SeccompRule::new(conds).expect("non-empty rule")
}

/// `arg == v`
fn eq(arg: u8, v: u64) -> SeccompRule {
    rule(vec![cond(arg, SeccompCmpOp::Eq, v)])
}

/// `arg & bits == 0`
fn clear(arg: u8, bits: u64) -> SeccompRule {
    rule(vec![cond(arg, SeccompCmpOp::MaskedEq(bits), 0)])
}

/// `arg & bits == bits`
fn set(arg: u8, bits: u64) -> SeccompRule {
    rule(vec![cond(arg, SeccompCmpOp::MaskedEq(bits), bits)])
}

macro_rules! any {
    ($($name:ident),* $(,)?) => {
        [$(Allowed { name: stringify!($name), nr: sys::$name, rules: Vec::new() }),*]
    };
}

/// Syscall numbers by name (libc's `SYS_*`, without the prefix).
#[allow(non_upper_case_globals)]
mod sys {
    macro_rules! nrs {
        ($($name:ident => $sys:ident),* $(,)?) => { $(pub const $name: i64 = libc::$sys;)* };
    }
    nrs!(
        write => SYS_write, close => SYS_close, accept4 => SYS_accept4, recvmsg => SYS_recvmsg,
        sendmsg => SYS_sendmsg, recvfrom => SYS_recvfrom, sendto => SYS_sendto, sendmmsg => SYS_sendmmsg, statx => SYS_statx,
        fcntl => SYS_fcntl, munmap => SYS_munmap, mremap => SYS_mremap, brk => SYS_brk, madvise => SYS_madvise,
        futex => SYS_futex, clock_nanosleep => SYS_clock_nanosleep, clock_gettime => SYS_clock_gettime,
        gettimeofday => SYS_gettimeofday, epoll_ctl => SYS_epoll_ctl, getrandom => SYS_getrandom, rseq => SYS_rseq,
        set_robust_list => SYS_set_robust_list, rt_sigprocmask => SYS_rt_sigprocmask,
        sigaltstack => SYS_sigaltstack, sched_getaffinity => SYS_sched_getaffinity, gettid => SYS_gettid,
        getpid => SYS_getpid, exit => SYS_exit, exit_group => SYS_exit_group, rt_sigreturn => SYS_rt_sigreturn,
        restart_syscall => SYS_restart_syscall, clone3 => SYS_clone3, openat => SYS_openat,
        mmap => SYS_mmap, mprotect => SYS_mprotect, clone => SYS_clone, prctl => SYS_prctl,
        tgkill => SYS_tgkill, fallocate => SYS_fallocate, pread64 => SYS_pread64, read => SYS_read,
        ppoll => SYS_ppoll, getsockopt => SYS_getsockopt,
    );
    #[cfg(target_arch = "x86_64")]
    nrs!(epoll_wait => SYS_epoll_wait);
    // Where there is no epoll_wait, mio uses epoll_pwait.
    #[cfg(not(target_arch = "x86_64"))]
    nrs!(epoll_wait => SYS_epoll_pwait);
}

/// The allow-list. `pid` is the server's own process id (tgkill may only
/// signal the server's own threads).
pub fn allow_list(pid: u32) -> Vec<Allowed> {
    let mut v: Vec<Allowed> = Vec::new();
    // Sockets it already has: the vfio-user socket (accept, messages with
    // SCM_RIGHTS fds, replies, one with the BAR fd), the UDP fabric
    // (recvfrom/sendto, sendmmsg for a batch), the control socket and its connections. Writes:
    // eventfds (interrupts), the pcap file, the log on stderr. fds QEMU
    // passes are fstat'ed (statx), dup'ed (fcntl) and closed.
    v.extend(any!(write, close, accept4, recvmsg, sendmsg, recvfrom, sendto, sendmmsg, statx));
    // The spinners' look at /proc/loadavg (host::CpuPressure), opened
    // before the filter and re-read in place.
    v.extend(any!(pread64));
    // The Ethernet link: frames are read from its TAP (opened before the
    // filter); its worker waits on its socket or TAP with ppoll.
    v.extend(any!(read, ppoll));
    // The UDP fabric reads its socket's drop count (SO_MEMINFO) after a
    // receive pass; no other option may be read.
    let meminfo = rule(vec![
        cond(1, SeccompCmpOp::Eq, libc::SOL_SOCKET as u64),
        cond(2, SeccompCmpOp::Eq, libc::SO_MEMINFO as u64),
    ]);
    v.push(Allowed { name: "getsockopt", nr: sys::getsockopt, rules: vec![meminfo] });
    let fcntl_cmds = [libc::F_DUPFD_CLOEXEC, libc::F_GETFD, libc::F_SETFD, libc::F_GETFL, libc::F_SETFL];
    v.push(Allowed { name: "fcntl", nr: sys::fcntl, rules: fcntl_cmds.iter().map(|&c| eq(1, c as u64)).collect() });
    // Memory: the allocator (brk, mmap, mremap for big reallocs, madvise
    // when freeing), DMA_MAP/UNMAP of QEMU's memfds, thread stacks. Nothing
    // may be mapped or made executable.
    v.extend(any!(munmap, mremap, brk, madvise));
    let prot_exec = libc::PROT_EXEC as u64;
    v.push(Allowed { name: "mmap", nr: sys::mmap, rules: vec![clear(2, prot_exec)] });
    v.push(Allowed { name: "mprotect", nr: sys::mprotect, rules: vec![clear(2, prot_exec)] });
    // A device reset zeroes the BAR memfd by punching it out.
    let punch = (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE) as u64;
    v.push(Allowed { name: "fallocate", nr: sys::fallocate, rules: vec![eq(1, punch)] });
    // Waiting: locks, joins and the poller's naps; the fabric's event loop;
    // clocks (vDSO normally, the syscalls when the clocksource has no vDSO
    // support).
    v.extend(any!(futex, clock_nanosleep, clock_gettime, gettimeofday, epoll_ctl, epoll_wait));
    // Threads: control connections are served on new threads. Start-up in
    // glibc and std (rseq, robust list, signal mask, guard page lookup,
    // alternate signal stack, hash keys, the name), exit. clone only for a
    // thread (clone3 is refused, see REFUSED).
    v.extend(any!(getrandom, rseq, set_robust_list, rt_sigprocmask, sigaltstack, sched_getaffinity, gettid, exit));
    v.push(Allowed { name: "clone", nr: sys::clone, rules: vec![set(0, libc::CLONE_THREAD as u64)] });
    v.push(Allowed { name: "prctl", nr: sys::prctl, rules: vec![eq(0, libc::PR_SET_NAME as u64)] });
    // Ending: exit, signal return and restart of an interrupted sleep, and
    // abort (raise(SIGABRT) signals its own thread).
    v.extend(any!(exit_group, rt_sigreturn, restart_syscall, getpid));
    v.push(Allowed { name: "tgkill", nr: sys::tgkill, rules: vec![eq(0, u64::from(pid))] });
    // Let through here only to be answered by their refusal filter.
    v.extend(REFUSED.iter().map(|r| Allowed { name: r.name, nr: r.nr, rules: Vec::new() }));
    v
}

/// A syscall answered with an errno, never run.
pub struct Refused {
    pub name: &'static str,
    pub nr: i64,
    pub errno: i32,
}

/// The refusals (see the module documentation).
pub const REFUSED: &[Refused] = &[
    Refused { name: "clone3", nr: sys::clone3, errno: libc::ENOSYS },
    Refused { name: "openat", nr: sys::openat, errno: libc::EACCES },
];

/// The names of the syscalls the filter lets run (the allow-list without
/// the refusals), sorted.
pub fn allowed_names() -> Vec<&'static str> {
    let mut v: Vec<_> =
        allow_list(0).into_iter().map(|a| a.name).filter(|n| !REFUSED.iter().any(|r| r.name == *n)).collect();
    v.sort_unstable();
    v
}

fn arch() -> Result<TargetArch, SeccompError> {
    Ok(TargetArch::try_from(std::env::consts::ARCH)?)
}

/// The programs for `mode` (none for [`SeccompMode::Off`]), in the order
/// they are installed: the refusals, then the allow-list (last, since
/// installing a filter takes prctl and seccomp calls the allow-list
/// refuses). The order does not change what they do.
pub fn programs(mode: SeccompMode, pid: u32) -> Result<Vec<BpfProgram>, SeccompError> {
    let mismatch = match mode {
        SeccompMode::Off => return Ok(Vec::new()),
        SeccompMode::Log => SeccompAction::Log,
        SeccompMode::Enforce => SeccompAction::KillProcess,
    };
    let mut v = Vec::new();
    for r in REFUSED {
        let rules = BTreeMap::from([(r.nr, Vec::new())]);
        let f = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(r.errno as u32), arch()?)?;
        v.push(f.try_into()?);
    }
    let rules: BTreeMap<i64, Vec<SeccompRule>> = allow_list(pid).into_iter().map(|a| (a.nr, a.rules)).collect();
    v.push(SeccompFilter::new(rules, mismatch, SeccompAction::Allow, arch()?)?.try_into()?);
    Ok(v)
}

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Whether [`install_all_threads`] has put (or is putting) a filter on this process.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::SeqCst)
}

/// Installs the filters on every thread of the process (TSYNC); threads
/// spawned afterwards inherit them. Sets no_new_privs (the kernel requires
/// it, or CAP_SYS_ADMIN). Call once, after every long-lived thread has
/// started (see [`crate::privs::wait_for_threads`]).
pub fn install_all_threads(mode: SeccompMode) -> Result<(), SeccompError> {
    let programs = programs(mode, std::process::id())?;
    // Before the filter lands: a thread started from here on must not try
    // to drop capabilities (it inherits empty sets, and the filter would
    // kill it for trying). On failure the server exits.
    if !programs.is_empty() {
        INSTALLED.store(true, Ordering::SeqCst);
    }
    for p in &programs {
        seccompiler::apply_filter_all_threads(p)?;
    }
    Ok(())
}

/// Installs the filters on the calling thread only (tests).
pub fn install_this_thread(mode: SeccompMode) -> Result<(), SeccompError> {
    for p in programs(mode, std::process::id())? {
        seccompiler::apply_filter(&p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_has_no_dangerous_calls_and_builds() {
        let names = allowed_names();
        for bad in [
            "execve",
            "execveat",
            "ptrace",
            "mount",
            "bpf",
            "process_vm_readv",
            "process_vm_writev",
            "open",
            "openat",
            "socket",
            "connect",
            "bind",
            "ioctl",
            "kill",
            "setuid",
            "capset",
            "memfd_create",
            "uname",
            "fork",
            "vfork",
            "clone3",
        ] {
            assert!(!names.contains(&bad), "{bad} is allowed");
        }
        let all: Vec<_> = allow_list(0).into_iter().map(|a| a.name).collect();
        let mut dedup = all.clone();
        dedup.sort_unstable();
        dedup.dedup();
        assert_eq!(dedup.len(), all.len(), "duplicate entries: {all:?}");
        assert_eq!(all.len(), names.len() + REFUSED.len());
        assert_eq!(programs(SeccompMode::Off, 1).unwrap().len(), 0);
        for m in [SeccompMode::Log, SeccompMode::Enforce] {
            let p = programs(m, 1).unwrap();
            assert_eq!(p.len(), REFUSED.len() + 1);
            assert!(p.last().unwrap().len() > all.len(), "one jump per syscall at least");
        }
    }
}
