//! What an Ethernet link saw (the control socket's `stats`, under
//! `eth_link`).

use std::sync::atomic::AtomicU64;

use crate::fabric::fault::FaultTally;

/// An Ethernet link's counters (lock-free).
#[derive(Debug, Default, serde::Serialize)]
pub struct EtherCounters {
    /// Frames handed to the medium (after tx faults; a duplicate counts twice).
    pub tx_frames: AtomicU64,
    pub tx_bytes: AtomicU64,
    /// Frames the medium could not take now (socket buffer or TAP queue full): lost.
    pub tx_full: AtomicU64,
    /// Other send errors (frames lost).
    pub tx_errors: AtomicU64,
    /// Frames sent while the port has no medium (backend `none`): lost.
    pub tx_no_link: AtomicU64,
    /// Frames the device sent shorter than an Ethernet header or longer than
    /// [`super::MAX_FRAME`]: not sent.
    pub tx_bad_length: AtomicU64,
    /// Frames accepted from the medium (after rx faults) and handed to the port.
    pub rx_frames: AtomicU64,
    pub rx_bytes: AtomicU64,
    /// Received frames shorter than an Ethernet header (14 bytes): dropped.
    pub rx_runts: AtomicU64,
    /// Received frames longer than [`super::MAX_FRAME`]: dropped.
    pub rx_giants: AtomicU64,
    /// Accepted frames shorter than the 60-byte minimum (unpadded senders).
    pub rx_undersize: AtomicU64,
    /// udp unicast: datagrams from an address other than `remote`: dropped.
    pub rx_foreign: AtomicU64,
    /// udp multicast: this link's own frames heard back from the hub: dropped.
    pub rx_own: AtomicU64,
    /// Receive errors of the medium.
    pub rx_errors: AtomicU64,
    pub fault_dropped: AtomicU64,
    pub fault_duplicated: AtomicU64,
    pub fault_reordered: AtomicU64,
    pub fault_delayed: AtomicU64,
    pub fault_corrupted: AtomicU64,
    /// RoCEv2 frames marked ECN = CE (`ce_every`).
    pub fault_ce_marked: AtomicU64,
    /// Frames not captured because the pcap file reached its size cap.
    pub pcap_dropped: AtomicU64,
}

impl FaultTally for EtherCounters {
    fn fault_dropped(&self) -> &AtomicU64 {
        &self.fault_dropped
    }
    fn fault_duplicated(&self) -> &AtomicU64 {
        &self.fault_duplicated
    }
    fn fault_reordered(&self) -> &AtomicU64 {
        &self.fault_reordered
    }
    fn fault_delayed(&self) -> &AtomicU64 {
        &self.fault_delayed
    }
    fn fault_corrupted(&self) -> &AtomicU64 {
        &self.fault_corrupted
    }
    fn fault_ce_marked(&self) -> Option<&AtomicU64> {
        Some(&self.fault_ce_marked)
    }
}
