//! The `[eth]` section: which medium the Ethernet port's link uses, and
//! its capture and faults.
//!
//! ```toml
//! [eth]
//! backend = "udp"                 # "none" (default), "udp" or "tap"
//! local = "127.0.0.1:5000"        # udp unicast: the address bound
//! remote = "127.0.0.1:5001"       # udp unicast: where frames go (and the only sender accepted)
//! # mcast = "239.0.0.1:5000"      # udp multicast hub instead of remote; local then an interface IPv4 address
//! # tap = "vrnic0"                # tap: the interface (created if missing)
//! pcap = "/tmp/eth.pcap"          # frames both ways, linktype 1 (Ethernet)
//! pcap_max_bytes = 1073741824
//! faults = { seed = 7, rx = { corrupt = 0.01 } }
//! pause_speed_mbps = 100000       # the speed PAUSE/PFC quanta are timed at (pfc.rs)
//! link_rate_mbps = 0              # transmit line rate (shaper.rs); 0 = unlimited
//! pfc_tx_quanta = 65535           # quanta of the PFC frames the port sends (pfc_tx.rs)
//! ```
//!
//! The command line's `--eth` takes the same in one word:
//! `none`, `tap:NAME`, `udp:local=ADDR:PORT,remote=ADDR:PORT` or
//! `udp:mcast=GROUP:PORT[,local=IP]`.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::fault::FaultConfig;

/// The Ethernet port's link configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EtherConfig {
    /// `none` (no medium: carrier down, frames sent are counted and lost),
    /// `udp` or `tap`.
    pub backend: String,
    /// udp unicast: the socket address bound; udp multicast: the IPv4
    /// address of the interface the hub runs over (empty: any).
    pub local: String,
    /// udp unicast: the peer's socket address.
    pub remote: String,
    /// udp multicast: the hub's group and port (an IPv4 multicast address).
    pub mcast: String,
    /// tap: the interface name.
    pub tap: String,
    /// Capture both directions' frames to this pcap file.
    pub pcap: Option<PathBuf>,
    /// Cap on the capture file; later frames are counted (`pcap_dropped`).
    pub pcap_max_bytes: u64,
    /// Fault injection on the frames (drop, duplicate, reorder, delay,
    /// corrupt: a bit of the payload after the Ethernet header).
    pub faults: FaultConfig,
    /// The link speed (Mb/s) a received PAUSE/PFC frame's quanta are timed
    /// at (512 bit times each): the port's 100 Gb/s by default. A slower
    /// one makes one frame hold longer (the `roce-pfc` scenario's
    /// host-scheduled injector cannot refresh every 335 us; it uses 100).
    pub pause_speed_mbps: u64,
    /// The transmit line rate (Mb/s) of the shaper (`shaper.rs`); 0 (the
    /// default): unlimited, frames leave as fast as the host sends them.
    /// The command line's `--eth-rate-mbps`.
    pub link_rate_mbps: u64,
    /// The quanta of the PFC frames the port sends when a lossless
    /// priority's receive queue has no buffer (`pfc_tx.rs`), timed at
    /// `pause_speed_mbps`; refreshed every half of it. 1..=0xffff.
    pub pfc_tx_quanta: u16,
}

impl Default for EtherConfig {
    fn default() -> Self {
        EtherConfig {
            backend: "none".into(),
            local: String::new(),
            remote: String::new(),
            mcast: String::new(),
            tap: String::new(),
            pcap: None,
            pcap_max_bytes: crate::pcap::DEFAULT_MAX_BYTES,
            faults: FaultConfig::default(),
            pause_speed_mbps: super::pfc::PORT_SPEED_BPS / 1_000_000,
            link_rate_mbps: 0,
            pfc_tx_quanta: super::pfc_tx::DEFAULT_TX_QUANTA,
        }
    }
}

/// The medium a validated [`EtherConfig`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    None,
    /// Point-to-point: one frame per datagram to `remote`.
    Udp {
        local: SocketAddr,
        remote: SocketAddr,
    },
    /// A hub segment: every member joined to `group` hears every frame.
    Mcast {
        group: SocketAddrV4,
        local: Option<Ipv4Addr>,
    },
    Tap {
        name: String,
    },
}

impl EtherConfig {
    /// Parses the `--eth` word (see the module documentation) into the
    /// backend fields; capture and faults keep their values.
    pub fn parse_cli(&mut self, s: &str) -> Result<(), String> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        self.local.clear();
        self.remote.clear();
        self.mcast.clear();
        self.tap.clear();
        match kind {
            "none" if rest.is_empty() => {}
            "tap" => self.tap = rest.to_string(),
            "udp" => {
                for item in rest.split(',').filter(|i| !i.is_empty()) {
                    match item.split_once('=') {
                        Some(("local", v)) => self.local = v.to_string(),
                        Some(("remote", v)) => self.remote = v.to_string(),
                        Some(("mcast", v)) => self.mcast = v.to_string(),
                        _ => return Err(format!("--eth udp: {item:?}: want local=, remote= or mcast=")),
                    }
                }
            }
            _ => return Err(format!("--eth {s:?}: want none, tap:NAME or udp:...")),
        }
        self.backend = kind.to_string();
        self.backend().map(|_| ())
    }

    /// The medium, checked.
    pub fn backend(&self) -> Result<Backend, String> {
        let addr = |what: &str, v: &str| -> Result<SocketAddr, String> {
            v.parse().map_err(|_| format!("eth {what} {v:?}: want IP:PORT"))
        };
        match self.backend.as_str() {
            "none" => Ok(Backend::None),
            "tap" => {
                let n = self.tap.as_bytes();
                if n.is_empty() || n.len() >= 16 || n.iter().any(|&b| b == b'/' || b == 0 || b.is_ascii_whitespace()) {
                    return Err(format!("eth tap interface name {:?}", self.tap));
                }
                Ok(Backend::Tap { name: self.tap.clone() })
            }
            "udp" if !self.mcast.is_empty() => {
                if !self.remote.is_empty() {
                    return Err("eth udp: mcast and remote exclude each other".into());
                }
                let group = match addr("mcast", &self.mcast)? {
                    SocketAddr::V4(g) if g.ip().is_multicast() && g.port() != 0 => g,
                    _ => return Err(format!("eth mcast {:?}: want an IPv4 multicast GROUP:PORT", self.mcast)),
                };
                let local = match self.local.as_str() {
                    "" => None,
                    l => Some(l.parse().map_err(|_| format!("eth mcast local {l:?}: want an IPv4 address"))?),
                };
                Ok(Backend::Mcast { group, local })
            }
            "udp" => {
                let local = addr("local", &self.local)?;
                let remote = addr("remote", &self.remote)?;
                if remote.port() == 0 || remote.ip().is_unspecified() {
                    return Err(format!("eth remote {remote}: want a reachable address"));
                }
                Ok(Backend::Udp { local, remote })
            }
            b => Err(format!("eth backend {b:?}: none, udp or tap")),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        self.backend()?;
        for r in [&self.faults.tx, &self.faults.rx] {
            r.validate()?;
            if r.ecn_ce > 0.0 || !r.classes.is_empty() {
                return Err("eth faults: ecn_ce and classes apply to RoCE packets only".into());
            }
        }
        if !(1..=1_000_000).contains(&self.pause_speed_mbps) {
            return Err(format!("eth pause_speed_mbps {}: want 1..=1000000", self.pause_speed_mbps));
        }
        if self.pfc_tx_quanta == 0 {
            return Err("eth pfc_tx_quanta 0: want 1..=65535".into());
        }
        if self.link_rate_mbps > 1_000_000 {
            return Err(format!("eth link_rate_mbps {}: want 0 (unlimited) ..=1000000", self.link_rate_mbps));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(s: &str) -> Result<Backend, String> {
        let mut c = EtherConfig::default();
        c.parse_cli(s)?;
        c.validate()?;
        c.backend()
    }

    #[test]
    fn cli_forms() {
        assert_eq!(cli("none"), Ok(Backend::None));
        assert_eq!(cli("tap:vr0"), Ok(Backend::Tap { name: "vr0".into() }));
        assert_eq!(
            cli("udp:local=127.0.0.1:5000,remote=127.0.0.1:5001"),
            Ok(Backend::Udp { local: "127.0.0.1:5000".parse().unwrap(), remote: "127.0.0.1:5001".parse().unwrap() })
        );
        assert_eq!(
            cli("udp:mcast=239.0.0.1:5000,local=127.0.0.1"),
            Ok(Backend::Mcast { group: "239.0.0.1:5000".parse().unwrap(), local: Some(Ipv4Addr::LOCALHOST) })
        );
        assert_eq!(
            cli("udp:mcast=239.0.0.1:5000"),
            Ok(Backend::Mcast { group: "239.0.0.1:5000".parse().unwrap(), local: None })
        );
        for bad in [
            "tap:",
            "tap:a/b",
            "tap:0123456789abcdef",
            "udp:local=127.0.0.1:5000",
            "udp:remote=127.0.0.1:5001",
            "udp:local=127.0.0.1:5000,remote=127.0.0.1:0",
            "udp:mcast=10.0.0.1:5000",
            "udp:mcast=239.0.0.1:5000,remote=127.0.0.1:1",
            "udp:mcast=239.0.0.1:5000,local=127.0.0.1:5",
            "udp:bogus=1",
            "none:x",
            "vde:/tmp/x",
        ] {
            assert!(cli(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn toml_and_fault_limits() {
        let c: EtherConfig =
            toml::from_str("backend = \"udp\"\nmcast = \"239.1.2.3:7000\"\nfaults = { rx = { corrupt = 1.0 } }")
                .unwrap();
        assert!(c.validate().is_ok());
        let c: EtherConfig =
            toml::from_str("backend = \"tap\"\ntap = \"x\"\nfaults = { tx = { ecn_ce = 0.5 } }").unwrap();
        assert!(c.validate().is_err(), "CE marking is for RoCE packets");
        assert_eq!(EtherConfig::default().backend(), Ok(Backend::None));
        assert_eq!(EtherConfig::default().pause_speed_mbps, 100_000);
        let c: EtherConfig = toml::from_str("pause_speed_mbps = 1000").unwrap();
        assert!(c.validate().is_ok());
        let c: EtherConfig = toml::from_str("pause_speed_mbps = 0").unwrap();
        assert!(c.validate().is_err());
        assert_eq!(EtherConfig::default().link_rate_mbps, 0, "unlimited by default");
        let c: EtherConfig = toml::from_str("link_rate_mbps = 30").unwrap();
        assert!(c.validate().is_ok() && c.link_rate_mbps == 30);
        let c: EtherConfig = toml::from_str("link_rate_mbps = 1000001").unwrap();
        assert!(c.validate().is_err());
    }
}
