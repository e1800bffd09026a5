//! The RoCE port's counters (`stats` → `roce`).

use std::sync::atomic::AtomicU64;

use serde::Serialize;

#[derive(Debug, Default, Serialize)]
pub struct RoceCounters {
    /// Frames sent onto the link (and their bytes, headers included).
    pub tx_packets: AtomicU64,
    pub tx_bytes: AtomicU64,
    /// Packets not sent: the source GID index has no entry.
    pub tx_no_gid: AtomicU64,
    /// Packets not sent: too short, too long or unframeable.
    pub tx_errors: AtomicU64,
    /// Packets to one of the port's own GIDs, delivered without the link.
    pub loopback_packets: AtomicU64,
    /// Packets to the port's own GIDs dropped: the loopback queue was full.
    pub loopback_dropped: AtomicU64,
    /// RoCE frames taken (ICRC good, destination one of the port's GIDs).
    pub rx_packets: AtomicU64,
    pub rx_bytes: AtomicU64,
    /// RoCE frames dropped: bad ICRC.
    pub rx_icrc_errors: AtomicU64,
    /// RoCE frames dropped: malformed headers or lengths.
    pub rx_malformed: AtomicU64,
    /// RoCE frames for an address that is not one of the port's GIDs (left
    /// to the NIC's steering).
    pub rx_not_ours: AtomicU64,
    pub cnp_sent: AtomicU64,
    pub cnp_received: AtomicU64,
}
