//! Server configuration: a TOML file (serde) plus command-line overrides.
//!
//! ```toml
//! [identity]
//! vendor_id = 0x15b3
//! device_id = 0x1017
//! subsystem_vendor_id = 0x15b3
//! subsystem_id = 0x0008
//! revision = 0
//! fw_version = "16.35.2000"
//! node_guid = "0x0002c90300a0b0c0"   # default: derived from the LID (Config::node_guid)
//! port_guid = "0x0002c90300a0b0c1"   # default: node GUID + 1
//! sys_image_guid = "0x0002c90300a0b0c0"   # default: the node GUID
//! node_desc = "vrnic emulated ConnectX-5 lid 1"   # default: with the LID
//! lid = 1
//! sm_lid = 1             # PortInfo.MasterSMLID; default: the lowest LID of this port and its peers
//! sm_sl = 0              # PortInfo.MasterSMSL
//! switch_lid = 4         # the modeled switch's LID; default: the highest LID of this port and its peers + 1
//!
//! [sm]                   # the built-in SM: roles and failover (docs/ib-fabric.md); static with an explicit sm_lid
//! enabled = true         # false: no built-in SM (OpenSM in a guest configures the fabric; the port starts INIT)
//! priority = 0           # SMInfo Priority, 0..=15: the highest live one is master, ties: the lowest LID
//! poll_ms = 1000         # SMInfo polls of the other servers, one per period
//! poll_misses = 3        # polls unanswered in a row that make a server dead
//! failover = true        # false: the SM LID stays static (no polls)
//!
//! [bars]
//! bar0_size = 33554432   # 32 MiB register space
//! device_memory_size = 1048576
//!
//! [doorbell]
//! mode = "trap"          # or "poll"
//! watch_uars = 16        # poll mode: mappable UAR pages (from page 8) watched from reset
//!
//! [logging]
//! level = "info"
//! trace = false
//!
//! [fabric]
//! port = 4791            # this instance's RoCEv2 UDP port
//! bind = "127.0.0.1"
//! peers = [{ lid = 2, addr = "127.0.0.1:4792" }]
//! pcap = "/tmp/vrnic.pcap"
//! pcap_max_bytes = 1073741824  # later packets are counted (pcap_dropped), not written
//!
//! [port]
//! link_layer = "eth"     # "ib" (default) or "eth"
//! congestion = "dcqcn"   # RoCE congestion control at start-up: "dcqcn" (default) or "off"
//!
//! [eth]                  # the Ethernet port's link (port.link_layer = "eth")
//! backend = "udp"        # "none" (default), "udp" or "tap"; see fabric::ether::EtherConfig
//! local = "127.0.0.1:5000"
//! remote = "127.0.0.1:5001"
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use vrnic_mlx5::FwVersion;
use vrnic_pci::{BarLayout, PciIdentity};

/// Config loading and validation errors.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("parsing config: {0}")]
    Parse(#[from] toml::de::Error),
    #[error("invalid config: {0}")]
    Invalid(String),
}

/// How doorbells reach the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DoorbellMode {
    /// Nothing mappable: every BAR store is a posted REGION_WRITE.
    #[default]
    Trap,
    /// UAR pages and device memory mapped from shared memory; a thread polls.
    Poll,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Identity {
    pub vendor_id: u16,
    pub device_id: u16,
    pub subsystem_vendor_id: u16,
    pub subsystem_id: u16,
    pub revision: u8,
    pub fw_version: String,
    /// Node GUID, hex string; empty: derived from the LID ([`Config::node_guid`]).
    pub node_guid: String,
    /// Port GUID, hex string; empty: the node GUID + 1.
    pub port_guid: String,
    /// System image GUID, hex string; empty: the node GUID.
    pub sys_image_guid: String,
    /// NodeDescription the SMA answers (at most 64 bytes); empty: with the LID.
    pub node_desc: String,
    /// Port LID.
    pub lid: u16,
    /// PortInfo.MasterSMLID (and the vport context's `sm_lid`); 0: the
    /// lowest LID among this port and its `[fabric]` peers.
    pub sm_lid: u16,
    /// PortInfo.MasterSMSL, 0..=15.
    pub sm_sl: u8,
    /// The modeled switch's LID (its port 0; docs/ib-fabric.md); 0: the
    /// highest LID among this port and its `[fabric]` peers, plus one.
    pub switch_lid: u16,
    /// RDMA reads and atomics a QP may have outstanding (`max_qp_rd_atom`,
    /// reported as `log_max_ra_req_qp`/`log_max_ra_res_qp`): a power of two,
    /// 1..=128. 128 is what rxe offers and what perftest then uses; a
    /// ConnectX-5/6 reports 16.
    pub max_rd_atomic: u32,
}

impl Default for Identity {
    fn default() -> Self {
        let id = PciIdentity::default();
        Identity {
            vendor_id: id.vendor_id,
            device_id: id.device_id,
            subsystem_vendor_id: id.subsystem_vendor_id,
            subsystem_id: id.subsystem_id,
            revision: id.revision,
            fw_version: FwVersion::default().to_string(),
            node_guid: String::new(),
            port_guid: String::new(),
            sys_image_guid: String::new(),
            node_desc: String::new(),
            lid: 1,
            sm_lid: 0,
            sm_sl: 0,
            switch_lid: 0,
            max_rd_atomic: 128,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Bars {
    /// BAR0 (init segment + UAR pages), bytes, power of two.
    pub bar0_size: u64,
    /// BAR4 (on-device memory), bytes, power of two.
    pub device_memory_size: u64,
}

impl Default for Bars {
    fn default() -> Self {
        let b = BarLayout::default();
        Bars { bar0_size: b.bar0, device_memory_size: b.bar4 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DoorbellSection {
    pub mode: DoorbellMode,
    /// Poll mode: how many UAR pages (from the first) are watched from reset.
    pub watch_uars: u32,
    /// Trap mode: after each vfio-user message, check the socket for this
    /// many µs before sleeping in recvmsg (0: sleep at once).
    pub trap_spin_us: u32,
    /// While doorbells flow, hold a 0 µs PM QoS CPU latency request so idle
    /// host cores poll instead of halting (see `qos.rs`; needs root to open
    /// /dev/cpu_dma_latency, dropped 200 ms after the last doorbell).
    pub cpu_latency_qos: bool,
}

impl Default for DoorbellSection {
    fn default() -> Self {
        DoorbellSection { mode: DoorbellMode::Trap, watch_uars: 16, trap_spin_us: 50, cpu_latency_qos: true }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Logging {
    /// error, warn, info, debug or trace.
    pub level: String,
    /// Log every vfio-user message and BAR access.
    pub trace: bool,
}

impl Default for Logging {
    fn default() -> Self {
        Logging { level: "info".into(), trace: false }
    }
}

/// Congestion control on a RoCE port at start-up (`port.congestion`,
/// `--congestion`; the control socket's `cc on|off` flips it at run time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    /// ECN notification and DCQCN reaction points on every priority, ConnectX defaults.
    #[default]
    Dcqcn,
    /// Both nodes disabled on every priority (the parameters keep their defaults).
    Off,
}

impl Congestion {
    /// The port's initial congestion-control settings.
    pub fn cc_config(self) -> vrnic_cc::CcConfig {
        match self {
            Congestion::Dcqcn => vrnic_cc::CcConfig::connectx_default(),
            Congestion::Off => vrnic_cc::CcConfig::disabled(),
        }
    }
}

/// The port: its link layer and, on Ethernet, its MAC address and congestion control.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PortSection {
    /// `ib` (InfiniBand, the default) or `eth` (Ethernet: the mlx5e netdev).
    pub link_layer: String,
    /// Ethernet MAC address `aa:bb:cc:dd:ee:ff`; empty: derived from the
    /// port GUID (its bytes 0-2 and 5-7, the inverse of EUI-64).
    pub mac: String,
    /// RoCE congestion control at start-up: `dcqcn` (default) or `off`.
    pub congestion: Congestion,
}

impl Default for PortSection {
    fn default() -> Self {
        PortSection { link_layer: "ib".into(), mac: String::new(), congestion: Congestion::default() }
    }
}

/// The whole configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub identity: Identity,
    pub bars: Bars,
    pub doorbell: DoorbellSection,
    pub logging: Logging,
    pub port: PortSection,
    /// The RoCEv2 socket and its peers. Without a `[fabric]` section the
    /// device binds an ephemeral UDP port on [`vrnic_fabric::config::DEFAULT_BIND`]
    /// (loopback) with no peers (its own LID still works: loopback).
    pub fabric: vrnic_fabric::FabricConfig,
    /// The Ethernet port's link (used when `port.link_layer` is `eth`).
    pub eth: vrnic_fabric::ether::EtherConfig,
    /// SM roles and failover (IB link layer with fabric peers).
    pub sm: Sm,
}

/// `[sm]`: the built-in SM (`subnet::stage`) and its roles (`subnet::sm_role`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Sm {
    /// Whether vrnic's built-in SM runs (the SA, SMInfo, the roles). False:
    /// an SM in a guest (OpenSM) configures the fabric; the port starts INIT
    /// without a LID and the modeled switch unconfigured.
    pub enabled: bool,
    /// SMInfo Priority, 0..=15.
    pub priority: u8,
    /// The SMInfo poll period in ms (>= 10).
    pub poll_ms: u64,
    /// Missed polls in a row after which a server is dead (>= 1).
    pub poll_misses: u32,
    /// Whether servers poll each other and a standby takes over.
    pub failover: bool,
}

impl Default for Sm {
    fn default() -> Self {
        Sm { enabled: true, priority: 0, poll_ms: 1000, poll_misses: 3, failover: true }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            identity: Identity::default(),
            bars: Bars::default(),
            doorbell: DoorbellSection::default(),
            logging: Logging::default(),
            port: PortSection::default(),
            fabric: vrnic_fabric::FabricConfig { port: 0, ..Default::default() },
            eth: Default::default(),
            sm: Sm::default(),
        }
    }
}

/// Bytes of a NodeDescription (IBTA 14.2.5.2).
pub const NODE_DESC_MAX: usize = 64;

/// The identity of a port whose configuration names none (the subnet's
/// rule: every server derives its peers' so).
pub use vrnic_subnet::port::{derived_node_desc, derived_node_guid};

fn parse_guid(s: &str) -> Result<u64, ConfigError> {
    let t = s.trim_start_matches("0x").replace(':', "");
    u64::from_str_radix(&t, 16).map_err(|_| ConfigError::Invalid(format!("bad GUID {s:?}")))
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
        Config::parse(&text)
    }

    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let c: Config = toml::from_str(text)?;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.fw_version()?;
        self.bar_layout().validate().map_err(ConfigError::Invalid)?;
        for g in [&self.identity.node_guid, &self.identity.port_guid, &self.identity.sys_image_guid] {
            if !g.is_empty() {
                parse_guid(g)?;
            }
        }
        if self.sm.priority > 15 || self.sm.poll_ms < 10 || self.sm.poll_misses == 0 {
            return Err(ConfigError::Invalid(format!(
                "[sm] priority {} (0..=15), poll_ms {} (>= 10), poll_misses {} (>= 1)",
                self.sm.priority, self.sm.poll_ms, self.sm.poll_misses
            )));
        }
        if self.identity.sm_sl > 15 {
            return Err(ConfigError::Invalid(format!("sm_sl {} is not an SL (0..=15)", self.identity.sm_sl)));
        }
        if self.identity.node_desc.len() > NODE_DESC_MAX {
            return Err(ConfigError::Invalid(format!("node_desc longer than {NODE_DESC_MAX} bytes")));
        }
        if !["error", "warn", "info", "debug", "trace"].contains(&self.logging.level.as_str()) {
            return Err(ConfigError::Invalid(format!("log level {:?}", self.logging.level)));
        }
        self.fabric.validate().map_err(ConfigError::Invalid)?;
        self.link_layer()?;
        self.mac()?;
        self.eth.validate().map_err(ConfigError::Invalid)?;
        let ra = self.identity.max_rd_atomic;
        if !ra.is_power_of_two() || ra > 128 {
            return Err(ConfigError::Invalid(format!("max_rd_atomic {ra} is not a power of two in 1..=128")));
        }
        let uars = (self.bars.bar0_size / vrnic_pci::UAR_PAGE_SIZE).saturating_sub(vrnic_pci::FIRST_UAR_PAGE);
        if self.doorbell.watch_uars as u64 > uars {
            return Err(ConfigError::Invalid(format!(
                "watch_uars {} exceeds the {uars} UAR pages of BAR0",
                self.doorbell.watch_uars
            )));
        }
        Ok(())
    }

    /// The port's link layer.
    pub fn link_layer(&self) -> Result<vrnic_mlx5::link::LinkLayer, ConfigError> {
        self.port.link_layer.parse().map_err(ConfigError::Invalid)
    }

    /// The Ethernet MAC address: `port.mac`, else derived from the port GUID.
    pub fn mac(&self) -> Result<[u8; 6], ConfigError> {
        if self.port.mac.is_empty() {
            let g = self.port_guid().to_be_bytes();
            return Ok([g[0], g[1], g[2], g[5], g[6], g[7]]);
        }
        let bad = || ConfigError::Invalid(format!("bad MAC address {:?}", self.port.mac));
        let parts: Vec<&str> = self.port.mac.split(':').collect();
        if parts.len() != 6 {
            return Err(bad());
        }
        let mut mac = [0u8; 6];
        for (m, p) in mac.iter_mut().zip(parts) {
            *m = u8::from_str_radix(p, 16).map_err(|_| bad())?;
        }
        if mac[0] & 1 != 0 {
            return Err(bad());
        }
        Ok(mac)
    }

    pub fn fw_version(&self) -> Result<FwVersion, ConfigError> {
        self.identity.fw_version.parse().map_err(ConfigError::Invalid)
    }

    /// The node GUID: `identity.node_guid`, else [`derived_node_guid`] of
    /// the LID, so servers that differ in LID differ in GUIDs too.
    pub fn node_guid(&self) -> u64 {
        match self.identity.node_guid.as_str() {
            "" => derived_node_guid(self.identity.lid),
            g => parse_guid(g).unwrap_or(0),
        }
    }

    /// The port GUID: `identity.port_guid`, else the node GUID + 1.
    pub fn port_guid(&self) -> u64 {
        match self.identity.port_guid.as_str() {
            "" => self.node_guid().wrapping_add(1),
            g => parse_guid(g).unwrap_or(0),
        }
    }

    /// The system image GUID: `identity.sys_image_guid`, else the node GUID.
    pub fn sys_image_guid(&self) -> u64 {
        match self.identity.sys_image_guid.as_str() {
            "" => self.node_guid(),
            g => parse_guid(g).unwrap_or(0),
        }
    }

    /// The NodeDescription: `identity.node_desc`, else one naming the LID.
    pub fn node_desc(&self) -> String {
        match self.identity.node_desc.as_str() {
            "" => derived_node_desc(self.identity.lid),
            d => d.to_string(),
        }
    }

    /// PortInfo.MasterSMLID: `identity.sm_lid`, else the lowest LID among
    /// this port and its fabric peers (where the subnet's SM will run); 0
    /// without the built-in SM (the SM in a guest sets it).
    pub fn sm_lid(&self) -> u16 {
        if !self.sm.enabled {
            return 0;
        }
        if self.identity.sm_lid != 0 {
            return self.identity.sm_lid;
        }
        self.fabric.peers.iter().filter_map(|p| p.lid).chain([self.identity.lid]).filter(|&l| l != 0).min().unwrap_or(0)
    }

    pub fn pci_identity(&self) -> PciIdentity {
        PciIdentity {
            vendor_id: self.identity.vendor_id,
            device_id: self.identity.device_id,
            subsystem_vendor_id: self.identity.subsystem_vendor_id,
            subsystem_id: self.identity.subsystem_id,
            revision: self.identity.revision,
            ..PciIdentity::default()
        }
    }

    /// log2 of [`Identity::max_rd_atomic`].
    pub fn log_max_rd_atomic(&self) -> u8 {
        self.identity.max_rd_atomic.max(1).ilog2().min(7) as u8
    }

    pub fn bar_layout(&self) -> BarLayout {
        BarLayout { bar0: self.bars.bar0_size, bar4: self.bars.device_memory_size, ..BarLayout::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.identity.device_id, 0x1017);
        assert_eq!(c.bar_layout(), BarLayout::default());
    }

    #[test]
    fn parses_file() {
        let c = Config::parse(
            r#"
            [identity]
            device_id = 0x101b
            fw_version = "20.1.3"
            lid = 7
            [bars]
            device_memory_size = 0x200000
            [doorbell]
            mode = "poll"
            "#,
        )
        .unwrap();
        assert_eq!(c.identity.device_id, 0x101b);
        assert_eq!(c.fw_version().unwrap(), FwVersion { major: 20, minor: 1, subminor: 3 });
        assert_eq!(c.identity.lid, 7);
        assert_eq!(c.bars.device_memory_size, 0x200000);
        assert_eq!(c.doorbell.mode, DoorbellMode::Poll);
        assert_eq!(c.node_guid(), derived_node_guid(7));
        assert_eq!(c.port_guid(), 0x0002c90300a00701);
        assert_eq!(c.sys_image_guid(), c.node_guid());
        assert_eq!(c.node_desc(), "vrnic emulated ConnectX-5 lid 7");
        assert_eq!(c.sm_lid(), 7);
    }

    #[test]
    fn identities_differ_by_lid_unless_given() {
        let a = Config::parse("[identity]\nlid = 1\n").unwrap();
        let b = Config::parse("[identity]\nlid = 2\n").unwrap();
        assert_ne!(a.node_guid(), b.node_guid());
        assert_ne!(a.port_guid(), b.port_guid());
        assert_ne!(a.node_desc(), b.node_desc());
        let c = Config::parse(
            "[identity]\nlid = 3\nnode_guid = \"0x1122334455667788\"\nsys_image_guid = \"0x99\"\n\
             node_desc = \"host-c mlx5_0\"\nsm_lid = 9\n",
        )
        .unwrap();
        assert_eq!(c.node_guid(), 0x1122334455667788);
        assert_eq!(c.port_guid(), 0x1122334455667789);
        assert_eq!(c.sys_image_guid(), 0x99);
        assert_eq!(c.node_desc(), "host-c mlx5_0");
        assert_eq!(c.sm_lid(), 9);
        assert!(Config::parse(&format!("[identity]\nnode_desc = \"{}\"\n", "x".repeat(65))).is_err());
        assert!(Config::parse("[identity]\nsys_image_guid = \"zz\"\n").is_err());
        assert!(Config::parse("[identity]\nsm_sl = 16\n").is_err());
        assert_eq!(Config::parse("[identity]\nsm_sl = 15\n").unwrap().identity.sm_sl, 15);
        assert!(Config::parse("[sm]\npriority = 16\n").is_err());
        assert!(Config::parse("[sm]\npoll_misses = 0\n").is_err());
        let c = Config::parse("[sm]\npriority = 7\npoll_ms = 200\n").unwrap();
        assert_eq!((c.sm.priority, c.sm.poll_ms, c.sm.poll_misses, c.sm.failover), (7, 200, 3, true));
        let off = Config::parse("[sm]\nenabled = false\n[identity]\nlid = 2\n").unwrap();
        assert_eq!((off.sm.enabled, off.sm_lid()), (false, 0));
    }

    #[test]
    fn sm_lid_defaults_to_the_lowest_lid() {
        let c = Config::parse(
            "[identity]\nlid = 3\n[fabric]\npeers = [{ lid = 2, addr = \"127.0.0.1:1\" }, \
             { lid = 5, addr = \"127.0.0.1:2\" }]\n",
        )
        .unwrap();
        assert_eq!(c.sm_lid(), 2);
    }

    #[test]
    fn rejects_bad_values() {
        assert!(Config::parse("[bars]\nbar0_size = 1000\n").is_err());
        assert!(Config::parse("[identity]\nfw_version = \"1.2\"\n").is_err());
        assert!(Config::parse("[identity]\nnode_guid = \"xyz\"\n").is_err());
        assert!(Config::parse("[nonsense]\n").is_err());
        assert!(Config::parse("[doorbell]\nmode = \"fast\"\n").is_err());
        assert!(Config::parse("[doorbell]\nwatch_uars = 9000\n").is_err());
        assert!(Config::parse("[identity]\nmax_rd_atomic = 24\n").is_err());
        assert!(Config::parse("[identity]\nmax_rd_atomic = 256\n").is_err());
        assert!(Config::parse("[identity]\nmax_rd_atomic = 0\n").is_err());
        assert_eq!(Config::parse("[identity]\nmax_rd_atomic = 16\n").unwrap().log_max_rd_atomic(), 4);
        assert_eq!(Config::default().log_max_rd_atomic(), 7);
    }

    #[test]
    fn congestion_knob() {
        use vrnic_cc::CcConfig;
        assert_eq!(Config::default().port.congestion, Congestion::Dcqcn);
        assert_eq!(Congestion::Dcqcn.cc_config(), CcConfig::connectx_default());
        let c = Config::parse("[port]\nlink_layer = \"eth\"\ncongestion = \"off\"\n").unwrap();
        assert_eq!(c.port.congestion.cc_config(), CcConfig::disabled());
        assert!(Config::parse("[port]\ncongestion = \"timely\"\n").is_err());
    }

    /// The fabric binds loopback unless told otherwise, in every path: no
    /// `[fabric]` section, and a section that names only its peers.
    #[test]
    fn fabric_binds_loopback_by_default() {
        let loopback = |c: &Config| c.fabric.bind.parse::<std::net::IpAddr>().unwrap().is_loopback();
        assert!(loopback(&Config::default()));
        let c = Config::parse("[[fabric.peers]]\nlid = 2\naddr = \"192.0.2.7:4791\"\n").unwrap();
        assert_eq!(c.fabric.peers.len(), 1);
        assert!(loopback(&c), "a [fabric] section with only peers binds {}", c.fabric.bind);
        assert_eq!(c.fabric.port, vrnic_wire::ip::ROCEV2_PORT);
        let c = Config::parse("[fabric]\nbind = \"0.0.0.0\"\n").unwrap();
        assert_eq!(c.fabric.bind, "0.0.0.0", "an explicit bind still counts");
    }

    #[test]
    fn eth_section() {
        let c = Config::parse(
            "[port]\nlink_layer = \"eth\"\n[eth]\nbackend = \"udp\"\nlocal = \"127.0.0.1:5000\"\nremote = \"127.0.0.1:5001\"\n",
        )
        .unwrap();
        assert_eq!(
            c.eth.backend(),
            Ok(vrnic_fabric::ether::Backend::Udp {
                local: "127.0.0.1:5000".parse().unwrap(),
                remote: "127.0.0.1:5001".parse().unwrap()
            })
        );
        assert_eq!(Config::default().eth.backend(), Ok(vrnic_fabric::ether::Backend::None));
        for bad in ["[eth]\nbackend = \"vde\"\n", "[eth]\nbackend = \"udp\"\n", "[eth]\nbogus = 1\n"] {
            assert!(Config::parse(bad).is_err(), "{bad:?}");
        }
    }
}
