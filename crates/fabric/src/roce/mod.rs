//! The RoCE port: the packet path of an Ethernet port's RDMA traffic. The
//! engine's packets leave as RoCE frames through the Ethernet link's
//! [`FrameSink`](super::ether::FrameSink) (`port.rs`: GID table entry →
//! headers, ICRC, loopback to its own GIDs, and of multicast to its own
//! group members as well as out); received frames that are RoCE
//! for one of the port's GIDs are taken before the NIC's steering
//! (`RocePort::accept`). The GID table (`gids.rs`) is what the driver
//! programs with SET_ROCE_ADDRESS. Codecs are [`vrnic_wire::roce`].

#![forbid(unsafe_code)]

pub mod counters;
pub mod gids;
mod port;

#[cfg(test)]
mod link_tests;

pub use counters::RoceCounters;
pub use gids::{GidEntry, GidError, RoceGids, RoceVersion};
pub use port::{is_multicast_gid, RocePort};
