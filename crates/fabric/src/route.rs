//! Port routing: which peer a packet goes to, and which peer a datagram
//! came from. The peer table is the port's whole view of the network: only
//! its peers are reachable, and only their datagrams are accepted.

use std::collections::HashMap;
use std::net::SocketAddr;

use vrnic_packet::{Dest, Endpoint};

/// How a port finds the peer a packet goes to: a property of the port's
/// link layer. An InfiniBand port routes by the DLID; the GRH, if any,
/// travels with the packet and the receiver checks its DGID. (A RoCE port
/// frames by the GID table instead: `roce/port.rs`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    #[default]
    Lid,
}

/// The multicast LID range (IBTA 4.1.2: 0xC000..=0xFFFE; 0xFFFF is the
/// permissive LID).
pub const MULTICAST_LIDS: std::ops::RangeInclusive<u16> = 0xC000..=0xFFFE;

/// Whether `lid` is a multicast LID.
pub fn is_multicast_lid(lid: u16) -> bool {
    MULTICAST_LIDS.contains(&lid)
}

/// A peer of a port: its endpoint and how to reach it.
#[derive(Debug, Clone)]
pub struct Peer {
    pub ep: Endpoint,
    pub udp: Option<SocketAddr>,
    /// In-process networks: the peer's port number.
    pub index: usize,
}

/// Where a datagram goes or came from: a peer's index in the port's table,
/// or [`LOCAL`].
pub type Route = u32;

/// Route tag of packets that stay in this instance.
pub const LOCAL: Route = u32::MAX;

/// A port's peers and how it routes to them.
pub(crate) struct PeerTable {
    local: Endpoint,
    peers: Vec<Peer>,
    by_udp: HashMap<SocketAddr, usize>,
    routing: Routing,
}

impl PeerTable {
    pub(crate) fn new(local: Endpoint, peers: Vec<Peer>) -> PeerTable {
        let by_udp = peers.iter().enumerate().filter_map(|(i, p)| p.udp.map(|a| (a, i))).collect();
        PeerTable { local, peers, by_udp, routing: Routing::Lid }
    }

    pub(crate) fn local(&self) -> Endpoint {
        self.local
    }

    pub(crate) fn peers(&self) -> &[Peer] {
        &self.peers
    }

    /// The route for `dest`: [`LOCAL`] or a peer index.
    pub(crate) fn resolve(&self, dest: &Dest) -> Option<Route> {
        match self.routing {
            Routing::Lid if dest.lid == self.local.lid => Some(LOCAL),
            Routing::Lid => self.peers.iter().position(|p| p.ep.lid == dest.lid && dest.lid != 0).map(|i| i as Route),
        }
    }

    /// Where a packet to a multicast LID goes: every peer (the vrnic fabric
    /// is a full mesh, and each receiving port filters by its attached QPs,
    /// as a ConnectX does with its multicast table), then this port itself
    /// (the HCA's own multicast loopback).
    pub(crate) fn multicast_routes(&self) -> impl Iterator<Item = Route> + '_ {
        (0..self.peers.len() as Route).chain(std::iter::once(LOCAL))
    }

    /// The endpoint at the end of `route` (this port's own for [`LOCAL`];
    /// `fallback` for a route no peer has).
    pub(crate) fn endpoint_or(&self, route: Route, fallback: Endpoint) -> Endpoint {
        if route == LOCAL {
            self.local
        } else {
            self.peers.get(route as usize).map(|p| p.ep).unwrap_or(fallback)
        }
    }

    /// The route of a sender known by its endpoint (`LOCAL - 1` for none).
    pub(crate) fn route_of(&self, src: &Endpoint) -> Route {
        if *src == self.local {
            LOCAL
        } else {
            self.peers.iter().position(|p| p.ep == *src).map(|i| i as Route).unwrap_or(LOCAL - 1)
        }
    }

    /// The peer a datagram from `addr` came from, and its route.
    pub(crate) fn by_udp(&self, addr: &SocketAddr) -> Option<(Route, &Peer)> {
        self.by_udp.get(addr).map(|&i| (i as Route, &self.peers[i]))
    }
}
