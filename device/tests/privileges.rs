//! The `vrnic` binary drops its privileges after start-up: every thread ends
//! with no capabilities, no_new_privs and the seccomp filter (checked in
//! /proc), unless `--keep-privileges` is given.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vrnic::privs::ThreadPrivs;

struct Server {
    child: Child,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start(tag: &str, extra: &[&str]) -> Server {
    let dir = std::env::temp_dir().join(format!("vrnic-privs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("vrnic.sock");
    let ctl = dir.join("ctl.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_vrnic"))
        .arg("--socket")
        .arg(&sock)
        .arg("--control")
        .arg(&ctl)
        .args(["--doorbell", "poll", "--fabric-port", "0"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let s = Server { child, dir };
    let t0 = Instant::now();
    while !(sock.exists() && ctl.exists()) {
        assert!(t0.elapsed() < Duration::from_secs(10), "server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    s
}

fn threads(pid: u32) -> Vec<(String, ThreadPrivs)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let p = e.path();
        let name = std::fs::read_to_string(p.join("comm")).unwrap_or_default().trim().to_string();
        if let Ok(s) = std::fs::read_to_string(p.join("status")) {
            v.push((name, ThreadPrivs::parse(&s).unwrap()));
        }
    }
    v
}

fn own() -> ThreadPrivs {
    ThreadPrivs::parse(&std::fs::read_to_string(Path::new("/proc/self/status")).unwrap()).unwrap()
}

#[test]
fn every_thread_ends_without_capabilities() {
    let s = start("drop", &[]);
    let pid = s.child.id();
    let t0 = Instant::now();
    // The main thread drops last, just before it serves; wait for it.
    loop {
        let ts = threads(pid);
        if ts.iter().all(|(_, p)| p.cap_eff == 0 && p.cap_prm == 0) {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "capabilities still held: {ts:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let ts = threads(pid);
    let names: Vec<&str> = ts.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.iter().any(|n| n.starts_with("vrnic-fabric")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("vrnic-control")), "{names:?}");
    let setpcap = own().cap_eff & (1 << 8) != 0;
    // The seccomp filter goes in last, on every thread at once.
    let t0 = Instant::now();
    let ts = loop {
        let ts = threads(pid);
        if ts.iter().all(|(_, p)| p.seccomp == 2) {
            break ts;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "seccomp filter missing: {ts:?}");
        std::thread::sleep(Duration::from_millis(10));
    };
    for (n, p) in &ts {
        assert!(p.no_new_privs, "{n}: no_new_privs not set");
        assert_eq!((p.cap_eff, p.cap_prm), (0, 0), "{n}");
        if setpcap {
            assert_eq!(p.cap_bnd, 0, "{n}: bounding set not emptied");
        }
    }
}

#[test]
fn keep_privileges_keeps_them() {
    let me = own();
    if me.cap_eff == 0 {
        eprintln!("test runs without capabilities: nothing to keep, not checked");
        return;
    }
    let s = start("keep", &["--keep-privileges"]);
    std::thread::sleep(Duration::from_millis(300));
    let ts = threads(s.child.id());
    assert!(ts.iter().all(|(_, p)| p.cap_eff == me.cap_eff && !p.no_new_privs && p.seccomp == 0), "{ts:?}");
}
