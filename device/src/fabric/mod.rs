//! The packet path of a port and the links it runs over (the I/O side of
//! RoCEv2; the codecs are [`crate::wire`]).
//!
//! A [`Link`] carries a port's datagrams to a peer and brings back what
//! arrives: [`UdpFabric`] (`udp.rs`) over a UDP socket (RoCEv2 framing: BTH
//! onward is the UDP payload, loopback to the same instance through the same
//! path), [`InProcNet`] (`inproc.rs`) between ports of one process, delivering
//! when a test pumps it. An Ethernet link (L2 frames over QEMU-dgram UDP or a
//! TAP) is another implementation of the same trait.
//!
//! [`Port`] (`port.rs`) is what every packet goes through, whatever the link:
//! route lookup ([`Routing`], `route.rs`: this InfiniBand port routes by
//! DLID), GRH framing and the DGID check against the port's GID table, ICRC
//! fill and check. Between the port and its link sit the middleware
//! (`middleware.rs`): fault injection, then pcap capture and the counters,
//! wrapping whichever link is below. The UDP link's tokio worker
//! (`worker.rs`) receives and runs the [`PacketHandler`]'s timers; a
//! spinning thread can receive itself (`poller.rs`). Configuration is
//! `config.rs`; every socket option and `sendmmsg`/`recvmsg` call is in
//! [`crate::sys::net`].
//!
//! The ICRC of a packet without a GRH covers a canonical IPv4/UDP header
//! (see [`PseudoHeader::canonical`](crate::wire::ip::PseudoHeader::canonical))
//! built from the two endpoints' fabric addresses (IPv4-mapped), which is
//! exactly the header the pcap frames carry; a packet with a GRH travels in
//! the envelope [`crate::wire::grh`] describes, its ICRC and pcap frame those
//! of RoCEv2 over IPv6.

#![forbid(unsafe_code)]

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::wire::grh;

mod buf;
mod gso;
pub mod config;
pub mod counters;
pub mod fault;
mod inproc;
mod middleware;
pub mod pcap;
mod poller;
mod port;
pub mod route;
mod udp;
mod worker;

#[cfg(test)]
mod grh_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests_faults;
#[cfg(test)]
mod tests_inproc;
#[cfg(test)]
mod tests_udp;

pub use config::{parse_gid, FabricConfig, PeerConfig};
pub use counters::{PortCounters, PortSnapshot};
pub use inproc::{InProcNet, InProcSink};
pub use poller::{FabricPoller, LoopbackPump};
pub use port::Port;
pub use route::{Peer, Route, Routing, LOCAL};
pub use udp::{UdpFabric, Waker};

/// What a link is: it puts a port's datagrams on a medium toward a route
/// (a peer of the port's table, or [`LOCAL`]: this port itself) and takes
/// back what has arrived, naming the sender by its route. A datagram is
/// what the port framed (BTH through ICRC, behind the GRH envelope when the
/// packet has a GRH); the link neither parses nor checks it. Never blocks: a
/// datagram a link cannot send is counted and lost (the engine's
/// reliability recovers it).
///
/// The middleware (fault injection, capture and counters) are links
/// wrapping a link, so they apply to every link alike.
pub trait Link {
    /// Sends one datagram toward `route`.
    fn transmit(&self, route: Route, datagram: &[u8]);
    /// Takes what has arrived, without blocking: up to `burst` datagrams
    /// read into `buf`, each handed to `arrive` with the route of its sender
    /// (datagrams from senders the link does not know are counted and
    /// dropped here). Returns how many datagrams arrived. A link that
    /// delivers by itself (the in-process net, when pumped) takes nothing
    /// here.
    fn receive(&self, _buf: &mut [u8], _burst: usize, _arrive: &mut dyn FnMut(Route, &mut [u8])) -> usize {
        0
    }
}

/// Where the engine sends a packet: the DLID, and the GRH (SGID and DGID
/// filled in) when the address vector is global.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dest {
    pub lid: u16,
    pub grh: Option<grh::Repr>,
}


/// A port's identity on the fabric: its LID (what packets are routed by)
/// and its fabric address (IPv4-mapped; the IPv4 header the ICRC and pcap
/// frames of packets without a GRH use). The GIDs the guest sees are the
/// port's GID table ([`Port::set_gid_table`]), not this address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub lid: u16,
    pub gid: [u8; 16],
}

impl Endpoint {
    /// An endpoint whose GID is the IPv4-mapped `ip`.
    pub fn v4(lid: u16, ip: Ipv4Addr) -> Endpoint {
        Endpoint { lid, gid: ip.to_ipv6_mapped().octets() }
    }
    /// The IPv4 address RoCEv2 framing uses (0.0.0.0 for a GID that is not IPv4-mapped).
    pub fn ip(&self) -> Ipv4Addr {
        Ipv6Addr::from(self.gid).to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED)
    }
}

/// What the receiver learns about a packet besides its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxMeta {
    pub src: Endpoint,
    /// The port sent it to itself (loopback inside this device).
    pub local: bool,
    /// The packet's GRH, if it carried one (its DGID is one of this port's GIDs).
    pub grh: Option<grh::Repr>,
}

/// Where the engine's packets go. `pkt` is BTH through a 4-byte ICRC slot;
/// the sink fills the ICRC (and frames the GRH `dest` carries). Never
/// blocks; a packet that cannot be sent is counted and lost (the engine's
/// reliability recovers it).
pub trait PacketSink: Send + Sync {
    fn send(&self, dest: &Dest, pkt: &mut [u8]);
    /// The port's GID at `index` (a GRH's SGID), if the table has one.
    fn gid(&self, _index: u8) -> Option<[u8; 16]> {
        None
    }
}

/// Who consumes a port's received packets (the engine).
pub trait PacketHandler: Send + Sync {
    /// One packet that passed the ICRC check (BTH through ICRC).
    fn receive(&self, meta: &RxMeta, pkt: &[u8]);
    /// End of a burst of receives: coalesced ACKs go out now.
    fn flush(&self) {}
    /// Runs timers due at `now_ns`; returns the next deadline.
    fn poll(&self, _now_ns: u64) -> Option<u64> {
        None
    }
}

