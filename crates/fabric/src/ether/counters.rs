//! What an Ethernet link saw (the control socket's `stats`, under
//! `eth_link`).

use std::sync::atomic::AtomicU64;

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
    /// udp: datagrams the kernel dropped at the receiving socket (its full
    /// buffer; `SO_MEMINFO`, read when a burst leaves frames waiting,
    /// `rx_buffer.rs`): lost before the port saw them.
    pub rx_socket_drops: AtomicU64,
    pub fault_dropped: AtomicU64,
    pub fault_duplicated: AtomicU64,
    pub fault_reordered: AtomicU64,
    pub fault_delayed: AtomicU64,
    pub fault_corrupted: AtomicU64,
    /// RoCEv2 frames marked ECN = CE (`ce_every`).
    pub fault_ce_marked: AtomicU64,
    /// Frames not captured because the pcap file reached its size cap.
    pub pcap_dropped: AtomicU64,
    /// MAC control frames (EtherType 0x8808) too short, with an unknown
    /// opcode or a bad class-enable vector: dropped.
    pub rx_mac_control_malformed: AtomicU64,
    /// PFC frames for no priority whose PFC is on, PAUSE frames with global
    /// pause off: dropped.
    pub rx_pause_ignored: AtomicU64,
    /// Frames the line-rate shaper (`[eth] link_rate_mbps`, `shaper.rs`)
    /// held until the bucket paid for them.
    pub tx_shaper_delayed: AtomicU64,
    /// Frames the shaper dropped because its queue was full: lost.
    pub tx_shaper_dropped: AtomicU64,
    /// Per 802.1p priority (PPCNT's per-priority group); in `stats` an
    /// object keyed "0".."7".
    #[serde(serialize_with = "by_priority")]
    pub prio: [PrioCounters; 8],
}

fn by_priority<S: serde::Serializer>(p: &[PrioCounters; 8], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(p.len()))?;
    for (i, c) in p.iter().enumerate() {
        m.serialize_entry(&i.to_string(), c)?;
    }
    m.end()
}

/// One priority's counters (`pfc.rs`).
#[derive(Debug, Default, serde::Serialize)]
pub struct PrioCounters {
    /// Frames (not MAC control) received with this priority.
    pub rx_frames: AtomicU64,
    pub rx_octets: AtomicU64,
    /// Frames that left with this priority.
    pub tx_frames: AtomicU64,
    pub tx_octets: AtomicU64,
    /// PFC frames received for it while its PFC is on (PAUSE frames: priority 0's).
    pub rx_pause: AtomicU64,
    /// Nanoseconds it was paused (counted when a pause ends).
    pub rx_pause_duration_ns: AtomicU64,
    /// Pauses begun (not paused -> paused).
    pub rx_pause_transition: AtomicU64,
    /// PFC frames the port sent for it (XOFF, their refreshes and XON: `pfc_tx.rs`).
    pub tx_pause: AtomicU64,
    /// Nanoseconds the port asked the peer to pause it (XOFF to XON; counted at the XON).
    pub tx_pause_duration_ns: AtomicU64,
    /// Pauses the port began asking for (first XOFF after an XON); no PPCNT field.
    pub tx_pause_transition: AtomicU64,
    /// Received frames that found no receive buffer and waited in the port's (PFC transmit on).
    pub rx_held: AtomicU64,
    /// Received frames dropped because the priority's receive buffer was full.
    pub rx_discards: AtomicU64,
    /// Frames it transmitted while paused beyond the queue's bound: lost.
    pub tx_pause_dropped: AtomicU64,
}

/// A reading of [`PrioCounters`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PrioSnapshot {
    pub rx_frames: u64,
    pub rx_octets: u64,
    pub tx_frames: u64,
    pub tx_octets: u64,
    pub rx_pause: u64,
    /// Microseconds (PPCNT's unit).
    pub rx_pause_duration_us: u64,
    pub rx_pause_transition: u64,
    pub tx_pause: u64,
    /// Microseconds.
    pub tx_pause_duration_us: u64,
    pub rx_discards: u64,
}

impl PrioCounters {
    pub fn snapshot(&self) -> PrioSnapshot {
        let g = |a: &AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        PrioSnapshot {
            rx_frames: g(&self.rx_frames),
            rx_octets: g(&self.rx_octets),
            tx_frames: g(&self.tx_frames),
            tx_octets: g(&self.tx_octets),
            rx_pause: g(&self.rx_pause),
            rx_pause_duration_us: g(&self.rx_pause_duration_ns) / 1000,
            rx_pause_transition: g(&self.rx_pause_transition),
            tx_pause: g(&self.tx_pause),
            tx_pause_duration_us: g(&self.tx_pause_duration_ns) / 1000,
            rx_discards: g(&self.rx_discards),
        }
    }
}

crate::fault::fault_tally!(EtherCounters);
