//! Process and thread syscalls of the privilege drop ([`crate::privs`])
//! and the host-scheduling knobs: `prctl`, `capset`, the passwd lookup and
//! the set*id calls.

use std::io;

/// `prctl(op, arg, 0, 0, 0)`: the integer-only options.
pub fn prctl(op: libc::c_int, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: prctl with integer arguments only; no memory is passed.
    let r = unsafe { libc::prctl(op, arg, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the calling thread's timer slack (ns): how late the kernel may wake
/// its timed sleeps.
pub fn set_timerslack_ns(ns: u64) -> io::Result<()> {
    prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong)
}

/// Empties the calling thread's effective, permitted and inheritable
/// capability sets (`capset` with a v3 header and zeroed data).
pub fn capset_clear() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let mut hdr = Header { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    let data = [Data::default(); 2];
    // SAFETY: capset reads a v3 header and two data structs, both live and
    // laid out as <linux/capability.h> declares them.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut Header, data.as_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The uid and primary gid of user `name`, if the passwd database has it.
pub fn user_ids(name: &std::ffi::CStr) -> Option<(libc::uid_t, libc::gid_t)> {
    // SAFETY: getpwnam reads a NUL-terminated string; the returned record is
    // static storage we copy the two ids out of immediately (single-threaded
    // use of the passwd database here).
    unsafe {
        let pw = libc::getpwnam(name.as_ptr());
        if pw.is_null() {
            return None;
        }
        Some(((*pw).pw_uid, (*pw).pw_gid))
    }
}

/// Which set*id call failed, and how.
pub type SetIdError = (&'static str, io::Error);

/// Drops the supplementary groups, then sets the real, effective and saved
/// gid and uid (glibc applies them to all threads).
pub fn set_ids(uid: libc::uid_t, gid: libc::gid_t) -> Result<(), SetIdError> {
    // SAFETY: integer-only set*id calls; setgroups with an empty list reads
    // no memory.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) < 0 {
            return Err(("setgroups", io::Error::last_os_error()));
        }
        if libc::setresgid(gid, gid, gid) < 0 {
            return Err(("setresgid", io::Error::last_os_error()));
        }
        if libc::setresuid(uid, uid, uid) < 0 {
            return Err(("setresuid", io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// The host's raw monotonic clock in nanoseconds (`CLOCK_MONOTONIC_RAW`:
/// never goes backwards, does not follow NTP slewing); 0 if unreadable.
pub fn monotonic_raw_ns() -> u64 {
    #[cfg(not(miri))]
    const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC_RAW;
    // Miri models only the plain monotonic clock.
    #[cfg(miri)]
    const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(CLOCK, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// Pins the calling thread to CPU `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain old data, filled by the libc macros; the call
    // changes only the calling thread's affinity.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
