//! The packet path of a port and the links it runs over (the I/O side of
//! RoCEv2; the codecs are [`vrnic_wire`]).
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
//! wrapping whichever link is below, and on the UDP link the link-level
//! flow control (`credit.rs`) that holds a sender instead of overflowing the
//! receiver's socket. The UDP link's tokio worker
//! (`worker.rs`) receives and runs the [`PacketHandler`]'s timers; a
//! spinning thread can receive itself (`poller.rs`). Configuration is
//! `config.rs`; every socket option and `sendmmsg`/`recvmsg` call is in
//! [`vrnic_sys::net`].
//!
//! The ICRC of a packet without a GRH covers a canonical IPv4/UDP header
//! (see [`PseudoHeader::canonical`](vrnic_wire::ip::PseudoHeader::canonical))
//! built from the two endpoints' fabric addresses (IPv4-mapped), which is
//! exactly the header the pcap frames carry; a packet with a GRH travels in
//! the envelope [`vrnic_wire::grh`] describes, its ICRC and pcap frame those
//! of RoCEv2 over IPv6.

#![forbid(unsafe_code)]

mod buf;
pub mod config;
pub mod counters;
pub mod credit;
pub mod ether;
pub mod fault;
mod gso;
mod inproc;
mod link;
mod middleware;
pub mod pcap;
mod poller;
mod port;
pub mod roce;
pub mod route;
mod udp;
mod worker;

#[cfg(test)]
mod credit_tests;
#[cfg(test)]
mod faults_tests;
#[cfg(test)]
mod grh_tests;
#[cfg(test)]
mod inproc_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod udp_tests;

pub use config::{parse_gid, FabricConfig, PeerConfig};
pub use counters::{PortCounters, PortSnapshot};
pub use inproc::{InProcNet, InProcSink};
pub use link::Link;
pub use poller::{FabricPoller, LoopbackPump};
pub use port::Port;
pub use route::{Peer, Route, Routing, LOCAL};
pub use udp::{UdpFabric, Waker};
pub use vrnic_packet::{Dest, Endpoint, EthDest, NetHdr, PacketHandler, PacketSink, RxMeta};
