//! Shared by the integration tests that start the real `vrnic` binary.
#![allow(dead_code)] // each test crate uses its own part

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vrnic_sys::privs::ThreadPrivs;

/// A `vrnic` server in a scratch directory (socket, control socket, pcap),
/// killed and cleaned up on drop.
pub struct Server {
    pub child: Child,
    pub dir: PathBuf,
    pub sock: PathBuf,
    pub ctl: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Server {
    /// Starts `vrnic` in poll mode on an ephemeral fabric port with `extra` flags
    /// and waits for its sockets.
    pub fn start(tag: &str, extra: &[&str]) -> Server {
        let dir = std::env::temp_dir().join(format!("vrnic-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (sock, ctl) = (dir.join("vrnic.sock"), dir.join("ctl.sock"));
        let child = Command::new(env!("CARGO_BIN_EXE_vrnic"))
            .arg("--socket")
            .arg(&sock)
            .arg("--control")
            .arg(&ctl)
            .arg("--pcap")
            .arg(dir.join("fabric.pcap"))
            .args(["--doorbell", "poll", "--fabric-port", "0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Server { child, dir, sock: sock.clone(), ctl: ctl.clone() };
        let t0 = Instant::now();
        while !(sock.exists() && ctl.exists()) {
            assert!(t0.elapsed() < Duration::from_secs(10), "server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        s
    }

    /// Every thread's name and privileges, from /proc.
    pub fn threads(&self) -> Vec<(String, ThreadPrivs)> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(format!("/proc/{}/task", self.child.id())).unwrap().flatten() {
            let p = e.path();
            let name = std::fs::read_to_string(p.join("comm")).unwrap_or_default().trim().to_string();
            if let Ok(s) = std::fs::read_to_string(p.join("status")) {
                v.push((name, ThreadPrivs::parse(&s).unwrap()));
            }
        }
        v
    }
}
