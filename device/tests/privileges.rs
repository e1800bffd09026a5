//! The `vrnic` binary drops its privileges after start-up: every thread ends
//! with no capabilities, no_new_privs and the seccomp filter (checked in
//! /proc), unless `--keep-privileges` is given.

use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::Server;

use vrnic_sys::privs::ThreadPrivs;

fn own() -> ThreadPrivs {
    ThreadPrivs::parse(&std::fs::read_to_string(Path::new("/proc/self/status")).unwrap()).unwrap()
}

#[test]
fn every_thread_ends_without_capabilities() {
    let s = Server::start("drop", &[]);
    let t0 = Instant::now();
    // The main thread drops last, just before it serves; wait for it.
    loop {
        let ts = s.threads();
        if ts.iter().all(|(_, p)| p.cap_eff == 0 && p.cap_prm == 0) {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "capabilities still held: {ts:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let ts = s.threads();
    let names: Vec<&str> = ts.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.iter().any(|n| n.starts_with("vrnic-fabric")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("vrnic-control")), "{names:?}");
    let setpcap = own().cap_eff & (1 << 8) != 0;
    // The seccomp filter goes in last, on every thread at once.
    let t0 = Instant::now();
    let ts = loop {
        let ts = s.threads();
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
    let s = Server::start("keep", &["--keep-privileges"]);
    std::thread::sleep(Duration::from_millis(300));
    let ts = s.threads();
    assert!(ts.iter().all(|(_, p)| p.cap_eff == me.cap_eff && !p.no_new_privs && p.seccomp == 0), "{ts:?}");
}
