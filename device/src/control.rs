//! The control socket: a line-based test and observability hook that is not
//! reachable from the guest.
//!
//! Commands (one per line, one reply line each):
//! * `raise <vector>` – raise MSI-X vector → `ok delivered|pending` or `err <reason>`
//! * `link up|down` – change the port's physical state; the driver gets a PORT_CHANGE event
//! * `stats` – one JSON object with every counter
//! * `help`

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::json;
use tracing::{info, warn};

use crate::device::DeviceStats;
use crate::mlx5::firmware::Firmware;
use crate::mlx5::DoorbellStats;
use crate::vfio::{DmaSpace, Interrupts, Raised, ServerStats};

/// Everything the control socket can see.
#[derive(Clone)]
pub struct ControlHandles {
    pub irqs: Arc<Interrupts>,
    pub dma: Arc<DmaSpace>,
    pub server: Arc<ServerStats>,
    pub device: Arc<DeviceStats>,
    pub doorbells: Arc<DoorbellStats>,
    /// Poll mode: the UAR poller's counters.
    pub poller: Option<Arc<crate::mlx5::PollerStats>>,
    pub fw: Option<Arc<std::sync::Mutex<Firmware>>>,
    /// The CPU latency request thread's state ([`crate::host::qos`]).
    pub qos: Arc<crate::host::qos::QosStats>,
}

impl ControlHandles {
    /// Executes one command line and returns the reply line.
    pub fn execute(&self, line: &str) -> String {
        let mut it = line.split_whitespace();
        match (it.next(), it.next(), it.next()) {
            (Some("raise"), Some(v), None) => match v.parse::<u16>() {
                Ok(v) => match self.irqs.raise(v) {
                    Ok(Raised::Delivered) => "ok delivered".into(),
                    Ok(Raised::Pending) => "ok pending".into(),
                    Err(e) => format!("err {e}"),
                },
                Err(_) => format!("err bad vector {v:?}"),
            },
            (Some("link"), Some(st @ ("up" | "down")), None) => match &self.fw {
                Some(fw) => {
                    let mut fw = fw.lock().unwrap_or_else(|e| e.into_inner());
                    fw.port_change(st == "up");
                    format!("ok link {st}")
                }
                None => "err no firmware".into(),
            },
            (Some("stats"), None, None) => self.stats().to_string(),
            (Some("help"), None, None) => "ok commands: raise <vector>, link up|down, stats, help".into(),
            _ => format!("err unknown command {:?}", line.trim()),
        }
    }

    pub fn stats(&self) -> serde_json::Value {
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let fw = self.fw.as_ref().map(|f| {
            let f = f.lock().unwrap_or_else(|e| e.into_inner());
            let c = f.port_counters();
            json!({
                "commands": l(&f.stats().commands),
                "failed": l(&f.stats().failed),
                "eqes": l(&f.stats().eqes),
                "interrupts": l(&f.stats().interrupts),
                "umr_wqes": l(&f.stats().umr_wqes),
                "umr_errors": l(&f.stats().umr_errors),
                "port_state": f.port_state(),
                "objects": {
                    "pd": f.engine().pds.len(), "uar": f.engine().uars.len(), "eq": f.engine().eqs.len(),
                    "cq": f.engine().cqs.len(), "srq": f.engine().srqs.len(), "mkey": f.engine().mkeys.len(),
                    "qp": f.engine().qps.len(), "xrcd": f.engine().xrcds.len(),
                    "mtt_entries": f.engine().mtt_entries(),
                },
                "engine": f.engine().counters(),
                "fabric": f.wire_counters().map(|w| w.snapshot()),
                "port_counters": {
                    "xmit_pkts": l(&c.xmit_pkts), "rcv_pkts": l(&c.rcv_pkts),
                    "xmit_data_words": l(&c.xmit_data_words), "rcv_data_words": l(&c.rcv_data_words),
                    "rcv_errors": l(&c.rcv_errors),
                },
            })
        });
        json!({
            "firmware": fw,
            "server": {
                "connected": self.server.connected.load(Ordering::Relaxed),
                "connections": l(&self.server.connections),
                "messages": l(&self.server.messages),
                "errors": l(&self.server.errors),
                "region_reads": l(&self.server.region_reads),
                "region_writes": l(&self.server.region_writes),
                "posted_writes": l(&self.server.posted_writes),
                "resets": l(&self.server.resets),
                "spin_hits": l(&self.server.spin_hits),
                "spin_misses": l(&self.server.spin_misses),
            },
            "dma": {
                "mappings": self.dma.len(),
                "maps": l(&self.dma.stats.maps),
                "unmaps": l(&self.dma.stats.unmaps),
                "faults": l(&self.dma.stats.faults),
            },
            "irq": {
                "raised": l(&self.irqs.stats.raised),
                "delivered": l(&self.irqs.stats.delivered),
                "set_irqs": l(&self.irqs.stats.set_irqs),
            },
            "device": {
                "config_reads": l(&self.device.config_reads),
                "config_writes": l(&self.device.config_writes),
                "bar_reads": l(&self.device.bar_reads),
                "bar_writes": l(&self.device.bar_writes),
                "cmd_doorbells": l(&self.device.cmd_doorbells),
                "resets": l(&self.device.resets),
                "flrs": l(&self.device.flrs),
            },
            "doorbells": {
                "cq_arm": l(&self.doorbells.cq_arm),
                "eq_update": l(&self.doorbells.eq_update),
                "send": l(&self.doorbells.send),
                "ignored": l(&self.doorbells.ignored),
                "poller": self.poller.as_ref().map(|p| json!({
                    "scans": l(&p.scans), "hit_scans": l(&p.hit_scans), "naps": l(&p.naps), "nap_us": l(&p.nap_us), "nap_late_us": l(&p.nap_late_us),
                    "kicks_taken": l(&p.kicks_taken), "local_kicks": l(&p.local_kicks),
                    "busy_spin_won": l(&p.busy_spin_won), "busy_spin_lost": l(&p.busy_spin_lost),
                })),
            },
            "cpu_latency_qos": {
                "held": self.qos.held.load(Ordering::Relaxed),
                "holds": l(&self.qos.holds),
            },
        })
    }
}

/// Binds the control socket (replacing a stale file) and serves it on a thread.
pub fn spawn(path: &Path, h: ControlHandles) -> std::io::Result<()> {
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    info!(path = %path.display(), "control socket listening");
    crate::privs::spawn("vrnic-control", || (), move |()| {
        for conn in listener.incoming() {
            match conn {
                Ok(s) => {
                    let h = h.clone();
                    let _ = std::thread::Builder::new().name("vrnic-control-conn".into()).spawn(move || serve(s, &h));
                }
                Err(e) => warn!("control accept: {e}"),
            }
        }
    })?;
    Ok(())
}

fn serve(s: UnixStream, h: &ControlHandles) {
    let Ok(mut w) = s.try_clone() else { return };
    for line in BufReader::new(s).lines() {
        let Ok(line) = line else { return };
        if line.trim().is_empty() {
            continue;
        }
        let reply = h.execute(&line);
        if writeln!(w, "{reply}").is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmm_sys_util::eventfd::EventFd;
    use crate::vfio::protocol::vfio::*;

    #[test]
    fn raise_and_stats() {
        let h = ControlHandles {
            irqs: Arc::new(Interrupts::new(64)),
            dma: Arc::new(DmaSpace::default()),
            server: Arc::default(),
            device: Arc::default(),
            doorbells: Arc::default(),
            poller: None,
            fw: None,
            qos: Arc::default(),
        };
        assert_eq!(h.execute("raise 1"), "ok pending");
        let e = EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK).unwrap();
        h.irqs
            .set_irqs(VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 2, 1, vec![e.try_clone().unwrap()], &[])
            .unwrap();
        assert_eq!(h.execute("raise 2"), "ok delivered");
        assert_eq!(e.read().unwrap_or(0), 1);
        assert!(h.execute("raise 64").starts_with("err"));
        assert!(h.execute("raise x").starts_with("err"));
        assert!(h.execute("bogus").starts_with("err"));
        assert_eq!(h.execute("link down"), "err no firmware");
        let s: serde_json::Value = serde_json::from_str(&h.execute("stats")).unwrap();
        assert_eq!(s["irq"]["raised"], 2);
        assert_eq!(s["irq"]["delivered"], 1, "vector 1 has no eventfd and stays pending");
    }
}
