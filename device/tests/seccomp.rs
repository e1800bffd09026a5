//! The seccomp allow-list: the real `vrnic` binary runs every thread under
//! it (checked in /proc) and still serves a vfio-user client through a whole
//! connection lifecycle; and the filter really kills: a child process (this
//! test binary, re-run) installs it and makes one forbidden syscall.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::Server;

use vmm_sys_util::eventfd::EventFd;
use vrnic_sys::memfd;
use vrnic_sys::privs::ThreadPrivs;
use vrnic_sys::seccomp::{allowed_names, install_this_thread, SeccompMode};

fn eventfd() -> std::io::Result<EventFd> {
    EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK)
}
use vrnic_vfio::protocol::vfio::*;

impl Server {
    /// Waits until every thread shows `mode` (the main thread installs the
    /// filter just before serving).
    fn wait_seccomp(&self, mode: u8) -> Vec<(String, ThreadPrivs)> {
        let t0 = Instant::now();
        loop {
            let ts = self.threads();
            if ts.iter().all(|(_, p)| p.seccomp == mode) {
                return ts;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "threads not at Seccomp {mode}: {ts:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn control(&self) -> (UnixStream, BufReader<UnixStream>) {
        let s = UnixStream::connect(&self.ctl).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let r = BufReader::new(s.try_clone().unwrap());
        (s, r)
    }

    /// Still running (not killed by SIGSYS or anything else).
    fn assert_alive(&mut self) {
        if let Some(st) = self.child.try_wait().unwrap() {
            panic!("server died: {st:?} (signal {:?}; SIGSYS is {})", st.signal(), libc::SIGSYS);
        }
    }
}

fn ask(c: &mut (UnixStream, BufReader<UnixStream>), line: &str) -> String {
    writeln!(c.0, "{line}").unwrap();
    let mut r = String::new();
    c.1.read_line(&mut r).unwrap();
    r
}

#[test]
fn every_thread_of_the_server_is_filtered() {
    let s = Server::start("threads", &[]);
    s.wait_seccomp(2);
    // A control connection is served on a thread spawned after the filter
    // went in: it inherits it.
    let mut c = s.control();
    assert!(ask(&mut c, "help").contains("stats"));
    let ts = s.wait_seccomp(2);
    let names: Vec<&str> = ts.iter().map(|(n, _)| n.as_str()).collect();
    for want in ["vrnic-fabric", "vrnic-control", "vrnic-uar-poll", "vrnic-control-c"] {
        assert!(names.iter().any(|n| n.starts_with(want)), "no {want} thread: {names:?}");
    }
    for (n, p) in &ts {
        assert!(p.no_new_privs, "{n}");
        assert_eq!((p.cap_eff, p.cap_prm), (0, 0), "{n}");
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).unwrap();
    let want = format!("Seccomp_filters:\t{}", vrnic_sys::seccomp::REFUSED.len() + 1);
    assert!(status.contains(&want), "allow-list + one filter per refusal: {status}");
}

#[test]
fn seccomp_off_and_keep_privileges_install_nothing() {
    let s = Server::start("off", &["--seccomp", "off"]);
    let mut c = s.control();
    assert!(ask(&mut c, "help").contains("stats"));
    // Give the main thread time to (wrongly) install it.
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.threads().iter().all(|(_, p)| p.seccomp == 0), "{:?}", s.threads());
    drop(s);
    let s = Server::start("keep", &["--keep-privileges"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.threads().iter().all(|(_, p)| p.seccomp == 0), "{:?}", s.threads());
    drop(s);
    // Explicitly asked for, it is installed with --keep-privileges too.
    let s = Server::start("keep-log", &["--keep-privileges", "--seccomp", "log"]);
    s.wait_seccomp(2);
}

/// `--user`: glibc makes every thread repeat the set*id calls, which the
/// filter would refuse; the switch happens before the filter goes in.
#[test]
fn user_switch_then_filter() {
    // SAFETY: plain getters; the passwd record is read at once.
    let uid = unsafe {
        let pw = libc::getpwnam(c"nobody".as_ptr());
        if libc::geteuid() != 0 || pw.is_null() {
            eprintln!("not root or no user nobody: not checked");
            return;
        }
        (*pw).pw_uid
    };
    let s = Server::start("user", &["--user", "nobody"]);
    let mut c = s.control();
    assert!(ask(&mut c, "help").contains("stats"));
    for (n, p) in s.wait_seccomp(2) {
        assert_eq!((p.cap_eff, p.cap_prm), (0, 0), "{n}");
    }
    for e in std::fs::read_dir(format!("/proc/{}/task", s.child.id())).unwrap().flatten() {
        let st = std::fs::read_to_string(e.path().join("status")).unwrap();
        assert!(st.contains(&format!("Uid:\t{uid}\t{uid}\t{uid}\t{uid}\n")), "{st}");
    }
}

/// A whole connection lifecycle against the filtered binary: negotiation,
/// regions (with the BAR fd passed back), config space, DMA map/unmap of
/// memfds, eventfd interrupts raised through the control socket, reset,
/// disconnect, reconnect. Any syscall missing from the list kills it.
#[test]
fn the_filtered_server_serves_a_client_through_reconnects() {
    let mut s = Server::start("serve", &[]);
    s.wait_seccomp(2);
    let ram = memfd("guest-ram", 4 << 20).unwrap();
    let mut ctl = s.control();
    for round in 0..2 {
        let mut c = vfio_user::Client::new(&s.sock).unwrap();
        let r0 = c.region(0).unwrap();
        assert_eq!(r0.size, 32 << 20);
        assert!(r0.file_offset.is_some(), "poll mode passes the BAR fd");
        let mut id = [0u8; 4];
        c.region_read(7, 0, &mut id).unwrap();
        assert_eq!(u32::from_le_bytes(id), 0x1017_15b3);
        c.region_write(7, 0x10, &[0xff; 4]).unwrap();
        c.dma_map(0, 0, 1 << 20, ram.as_raw_fd()).unwrap();
        c.dma_map(1 << 20, 1 << 32, 3 << 20, ram.as_raw_fd()).unwrap();
        let e = eventfd().unwrap();
        c.set_irqs(
            VFIO_PCI_MSIX_IRQ_INDEX,
            VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
            5,
            1,
            &[e.as_raw_fd()],
        )
        .unwrap();
        assert!(ask(&mut ctl, "raise 5").starts_with("ok"), "round {round}");
        let t0 = Instant::now();
        while e.read().unwrap_or(0) == 0 {
            assert!(t0.elapsed() < Duration::from_secs(10), "no interrupt");
            std::thread::sleep(Duration::from_millis(5));
        }
        // The driver's init segment write, then a device reset.
        c.region_write(0, 0x14, &0x0012_3000u32.to_be_bytes()).unwrap();
        c.region_write(4, 0x40, b"dm").unwrap();
        c.reset().unwrap();
        c.dma_unmap(1 << 32, 3 << 20).unwrap();
        let stats = ask(&mut ctl, "stats");
        assert!(stats.contains("\"resets\""), "{stats}");
        s.assert_alive();
        drop(c);
    }
    let t0 = Instant::now();
    while !ask(&mut ctl, "stats").contains("\"connected\":false") {
        assert!(t0.elapsed() < Duration::from_secs(10), "server did not drop the connection");
        std::thread::sleep(Duration::from_millis(10));
    }
    s.assert_alive();
}

/// Runs `case` in a child process (this test binary, `seccomp_child` only).
fn run_child(case: &str) -> ExitStatus {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "seccomp_child", "--nocapture", "--test-threads=1"])
        .env("VRNIC_SECCOMP_CHILD", case)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
}

#[test]
fn forbidden_syscalls_kill_the_process_with_sigsys() {
    for case in ["execve", "ptrace", "socket", "fork", "mmap-exec", "mprotect-exec", "tgkill-other", "uname", "x32"] {
        let st = run_child(case);
        assert_eq!(st.signal(), Some(libc::SIGSYS), "{case}: {st:?}");
    }
}

#[test]
fn allowed_work_and_log_mode_survive() {
    for case in ["threads", "clone3-enosys", "openat-eacces", "log-uname", "nothing"] {
        let st = run_child(case);
        assert_eq!(st.code(), Some(0), "{case}: {st:?}");
    }
    assert!(allowed_names().len() < 60, "the list stays short: {:?}", allowed_names());
}

/// The child side of the two tests above; a no-op in a normal test run.
#[test]
fn seccomp_child() {
    let Ok(case) = std::env::var("VRNIC_SECCOMP_CHILD") else { return };
    let mode = if case.starts_with("log-") { SeccompMode::Log } else { SeccompMode::Enforce };
    let fail = |what: &str| -> ! {
        eprintln!("child {case}: {what}");
        // SAFETY: ends the process at once (exit_group is on the list).
        unsafe { libc::_exit(1) }
    };
    // Made before the filter: it forbids creating them.
    let ram = memfd("child", 4096).unwrap_or_else(|_| fail("memfd"));
    let efd = std::sync::Arc::new(eventfd().unwrap_or_else(|_| fail("eventfd")));
    if case != "nothing" {
        install_this_thread(mode).unwrap_or_else(|_| fail("install"));
    }
    // SAFETY: each call below is a plain syscall with valid (or null)
    // arguments, made to see whether the filter lets it through.
    unsafe {
        match case.as_str() {
            "execve" => {
                let path = c"/bin/true";
                let argv = [path.as_ptr(), std::ptr::null()];
                libc::execv(path.as_ptr(), argv.as_ptr());
            }
            "ptrace" => {
                libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
            }
            "socket" => {
                libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            }
            "openat-eacces" => {
                let fd = libc::open(c"/proc/sys/vm/overcommit_memory".as_ptr(), libc::O_RDONLY);
                if fd != -1 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EACCES) {
                    fail("openat not EACCES");
                }
            }
            "mprotect-exec" => {
                let p = libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_SHARED, ram.as_raw_fd(), 0);
                if p == libc::MAP_FAILED {
                    fail("mmap");
                }
                libc::mprotect(p, 4096, libc::PROT_READ | libc::PROT_EXEC);
            }
            "x32" => {
                // getpid (allowed) through the x32 ABI: same arch field, other numbers.
                libc::syscall(libc::SYS_getpid | 0x4000_0000);
            }
            "fork" => {
                if libc::fork() == 0 {
                    libc::_exit(0);
                }
            }
            "mmap-exec" => {
                libc::mmap(
                    std::ptr::null_mut(),
                    4096,
                    libc::PROT_READ | libc::PROT_EXEC,
                    libc::MAP_SHARED,
                    ram.as_raw_fd(),
                    0,
                );
            }
            "tgkill-other" => {
                libc::syscall(libc::SYS_tgkill, 1, 1, 0);
            }
            "uname" | "log-uname" => {
                let mut u: libc::utsname = std::mem::zeroed();
                if libc::uname(&mut u) != 0 {
                    fail("uname refused");
                }
            }
            "threads" => {
                // Thread start and exit (clone3 falls back to clone with
                // CLONE_THREAD), a shared mapping, an eventfd write.
                let e = efd.clone();
                // The thread also grows and shrinks its malloc arena: glibc
                // then tries to open /proc/sys/vm/overcommit_memory (refused
                // with EACCES, which it copes with).
                let t = std::thread::spawn(move || {
                    let v: Vec<Vec<u8>> = (0..400).map(|i| vec![i as u8; 60 << 10]).collect();
                    let sum: usize = v.iter().map(|b| b[0] as usize).sum();
                    drop(v);
                    sum > 0 && e.write(1).is_ok()
                });
                if !t.join().unwrap_or(false) {
                    fail("thread/eventfd");
                }
                let m = vrnic_sys::SharedMem::map(&ram, 4096).unwrap_or_else(|_| fail("mmap"));
                if !m.write(0, b"x") {
                    fail("write");
                }
            }
            "clone3-enosys" => {
                let r = libc::syscall(libc::SYS_clone3, std::ptr::null::<u8>(), 0usize);
                if r != -1 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS) {
                    fail("clone3 not ENOSYS");
                }
            }
            "nothing" => {}
            other => fail(other),
        }
        libc::_exit(0);
    }
}
