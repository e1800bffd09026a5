//! The control socket: a line-based test and observability hook that is not
//! reachable from the guest.
//!
//! Commands (one per line, one reply line each):
//! * `raise <vector>` – raise MSI-X vector → `ok delivered|pending` or `err <reason>`
//! * `link up|down` – change the port's physical state (InfiniBand: PortState, back up ACTIVE with the built-in
//!   SM, INIT without; the SM on the port hears nothing while it is down; Ethernet: the cable, carrier = cable and
//!   PAOS admin up); the driver gets a PORT_CHANGE event when the operational state flips
//! * `cc on|off` – RoCE congestion control (Ethernet port): enable or disable the ECN notification and
//!   DCQCN reaction points on every priority, keeping their parameters → `ok cc on|off`; `cc` alone →
//!   `ok cc rp=0x.. np=0x..` (the per-priority enable masks)
//! * `stats` – one JSON object with every counter
//! * `qps` – one JSON object: `{"qps": [[qpn, tx_packets, rx_packets, retransmissions, timeouts], …]}`, every QP
//!   (how evenly many QPs progress: `tools/qp-spread`)
//! * `help`

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;

use tracing::{info, warn};

use crate::device::DeviceStats;
use vrnic_mlx5::firmware::Firmware;
use vrnic_mlx5::link::LinkLayer;
use vrnic_mlx5::DoorbellStats;
use vrnic_vfio::{DmaSpace, Interrupts, Raised, ServerStats};

mod stats;

/// Everything the control socket can see.
#[derive(Clone)]
pub struct ControlHandles {
    pub irqs: Arc<Interrupts>,
    pub dma: Arc<DmaSpace>,
    pub server: Arc<ServerStats>,
    pub device: Arc<DeviceStats>,
    pub doorbells: Arc<DoorbellStats>,
    /// Poll mode: the UAR poller's counters.
    pub poller: Option<Arc<crate::uar_poller::PollerStats>>,
    pub fw: Option<Arc<std::sync::Mutex<Firmware>>>,
    /// The CPU latency request thread's state ([`crate::qos`]).
    pub qos: Arc<vrnic_sys::host::qos::QosStats>,
    /// An Ethernet port's link counters.
    pub eth_link: Option<Arc<vrnic_fabric::ether::EtherCounters>>,
    /// The RoCE port's congestion control (Ethernet port).
    pub cc: Option<Arc<vrnic_cc::CcControl>>,
    /// The InfiniBand port's IB stage (the modeled switch, the built-in SM).
    pub subnet: Option<Arc<vrnic_subnet::IbStage>>,
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
                    match fw.link_layer() {
                        LinkLayer::Ib => {
                            fw.port_change(st == "up");
                            if let Some(s) = &self.subnet {
                                s.set_link(st == "up");
                            }
                        }
                        // The Ethernet cable: carrier = cable && PAOS admin up, event on a flip.
                        LinkLayer::Eth => fw.eth_set_cable(st == "up"),
                    }
                    format!("ok link {st}")
                }
                None => "err no firmware".into(),
            },
            (Some("cc"), arg @ (None | Some("on" | "off")), None) => match &self.cc {
                Some(cc) => {
                    // Under the firmware's lock: no congestion command runs between the read and the write.
                    let _fw = self.fw.as_ref().map(|f| f.lock().unwrap_or_else(|e| e.into_inner()));
                    let mut c = cc.config();
                    if let Some(a) = arg {
                        let mask = if a == "on" { 0xff } else { 0 };
                        c.rp_enabled = mask;
                        c.np_enabled = mask;
                        cc.set_config(c);
                        format!("ok cc {a}")
                    } else {
                        format!("ok cc rp={:#04x} np={:#04x}", c.rp_enabled, c.np_enabled)
                    }
                }
                None => "err no RoCE port".into(),
            },
            (Some("stats"), None, None) => self.stats().to_string(),
            (Some("qps"), None, None) => self.qps().to_string(),
            (Some("help"), None, None) => {
                "ok commands: raise <vector>, link up|down, cc [on|off], stats, qps, help".into()
            }
            _ => format!("err unknown command {:?}", line.trim()),
        }
    }

    /// The `qps` reply: each QP, its packet counters.
    pub fn qps(&self) -> serde_json::Value {
        let Some(fw) = &self.fw else { return serde_json::json!({ "qps": [] }) };
        let fw = fw.lock().unwrap_or_else(|e| e.into_inner());
        let e = fw.engine();
        let rows: Vec<[u64; 5]> = e
            .qps()
            .filter_map(|(qpn, _)| e.qp_counters(qpn).map(|c| (qpn, c)))
            .map(|(qpn, c)| [qpn as u64, c.tx_packets, c.rx_packets, c.retransmissions, c.timeouts])
            .collect();
        serde_json::json!({ "qps": rows })
    }

    /// The `stats` reply: every counter struct, serialized by its derive
    /// (the tree is in [`stats`]).
    pub fn stats(&self) -> serde_json::Value {
        match &self.fw {
            Some(fw) => {
                let fw = fw.lock().unwrap_or_else(|e| e.into_inner());
                self.stats_tree(Some(&fw))
            }
            None => self.stats_tree(None),
        }
    }
}

/// Binds the control socket (replacing a stale file) and serves it on a thread.
pub fn spawn(path: &Path, h: ControlHandles) -> std::io::Result<()> {
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    info!(path = %path.display(), "control socket listening");
    vrnic_sys::privs::spawn(
        "vrnic-control",
        || (),
        move |()| {
            for conn in listener.incoming() {
                match conn {
                    Ok(s) => {
                        let h = h.clone();
                        let _ =
                            std::thread::Builder::new().name("vrnic-control-conn".into()).spawn(move || serve(s, &h));
                    }
                    Err(e) => warn!("control accept: {e}"),
                }
            }
        },
    )?;
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
#[path = "control/control_tests.rs"]
mod tests;
