//! The `[fabric]` section of the configuration: the socket, the peer table,
//! faults and capture.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::fault::FaultConfig;
use super::route::Peer;
use vrnic_packet::Endpoint;
use vrnic_wire::ip::ROCEV2_PORT;

/// The address the fabric socket binds unless told otherwise, in every
/// configuration path (no `[fabric]` section, a section without `bind`, the
/// command line): loopback. A device that treats its network as untrusted
/// listens on another interface only when asked to.
pub const DEFAULT_BIND: &str = "127.0.0.1";

/// A configured peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PeerConfig {
    pub lid: Option<u16>,
    /// The peer's fabric address (`::ffff:a.b.c.d` or `a.b.c.d`; default
    /// its socket's IPv4 address): the IPv4 header of its packets' ICRC and
    /// pcap frames. Routing is by `lid`.
    pub gid: Option<String>,
    /// The peer's fabric socket, `host:port`.
    pub addr: String,
}

/// The `[fabric]` section of the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FabricConfig {
    /// UDP port of this instance's socket.
    pub port: u16,
    /// Address the socket binds (default [`DEFAULT_BIND`], loopback).
    pub bind: String,
    /// This port's GID (`::ffff:a.b.c.d`); default the IPv4-mapped bind
    /// address, or 127.0.0.1 when binding 0.0.0.0.
    pub gid: Option<String>,
    pub peers: Vec<PeerConfig>,
    pub faults: FaultConfig,
    /// Write every sent and received packet here.
    pub pcap: Option<PathBuf>,
    /// Cap on the pcap file, bytes; later packets are counted in
    /// `pcap_dropped` instead of written.
    pub pcap_max_bytes: u64,
    /// SO_SNDBUF / SO_RCVBUF, bytes: room for the flow-control window
    /// (a quarter of it, per peer) and the kernel's overhead.
    pub socket_buffer: usize,
    /// Deliver traffic to this port's own QPs on the doorbell's thread
    /// ([`LoopbackPump`]) rather than through the worker's wake-up.
    pub inline_loopback: bool,
    /// Link-level flow control toward the peers (`credit.rs`): a sender
    /// holds what the peer's receive buffer has no room for, as an
    /// InfiniBand link does, instead of losing it in a full socket.
    pub flow_control: bool,
    /// Receive buffer granted to each peer, bytes (at most a quarter of the
    /// socket buffer the kernel gave, shared among the peers).
    pub flow_control_window: usize,
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            port: ROCEV2_PORT,
            bind: DEFAULT_BIND.into(),
            gid: None,
            peers: Vec::new(),
            faults: FaultConfig::default(),
            pcap: None,
            pcap_max_bytes: super::pcap::DEFAULT_MAX_BYTES,
            socket_buffer: 16 << 20,
            inline_loopback: true,
            flow_control: true,
            flow_control_window: 4 << 20,
        }
    }
}

/// Parses a GID: an IPv6 literal or an IPv4 address (mapped).
pub fn parse_gid(s: &str) -> Result<[u8; 16], String> {
    match s.parse::<IpAddr>() {
        Ok(IpAddr::V6(a)) => Ok(a.octets()),
        Ok(IpAddr::V4(a)) => Ok(a.to_ipv6_mapped().octets()),
        Err(_) => Err(format!("bad GID {s:?}")),
    }
}

impl FabricConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.bind.parse::<IpAddr>().map_err(|_| format!("bad fabric bind address {:?}", self.bind))?;
        if let Some(g) = &self.gid {
            parse_gid(g)?;
        }
        for p in &self.peers {
            p.addr.parse::<SocketAddr>().map_err(|_| format!("bad peer address {:?}", p.addr))?;
            if let Some(g) = &p.gid {
                parse_gid(g)?;
            }
            if p.lid.is_none_or(|l| l == 0) {
                return Err(format!("peer {} needs a lid (this InfiniBand port routes by LID)", p.addr));
            }
        }
        self.faults.tx.validate()?;
        self.faults.rx.validate()
    }

    /// This port's endpoint with LID `lid`.
    pub fn local_endpoint(&self, lid: u16) -> Result<Endpoint, String> {
        let gid = match &self.gid {
            Some(g) => parse_gid(g)?,
            None => match self.bind.parse::<IpAddr>() {
                Ok(IpAddr::V4(a)) if !a.is_unspecified() => a.to_ipv6_mapped().octets(),
                _ => Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets(),
            },
        };
        Ok(Endpoint { lid, gid })
    }

    pub(super) fn peers(&self) -> Result<Vec<Peer>, String> {
        self.peers
            .iter()
            .map(|p| {
                let addr: SocketAddr = p.addr.parse().map_err(|_| format!("bad peer address {:?}", p.addr))?;
                let gid = match &p.gid {
                    Some(g) => parse_gid(g)?,
                    None => match addr.ip() {
                        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
                        IpAddr::V6(a) => a.octets(),
                    },
                };
                Ok(Peer { ep: Endpoint { lid: p.lid.unwrap_or(0), gid }, udp: Some(addr), index: 0 })
            })
            .collect()
    }
}
