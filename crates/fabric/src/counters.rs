//! Per-port packet counters (lock-free; read by the firmware for MAD
//! PortCounters and by the stats dump).

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($(#[$m:meta])* $name:ident, $snap:ident { $($(#[$fm:meta])* $f:ident),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Default)]
        pub struct $name {
            $($(#[$fm])* pub $f: AtomicU64,)*
        }
        /// A plain copy of the counters.
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
        pub struct $snap {
            $(pub $f: u64,)*
        }
        impl $name {
            pub fn snapshot(&self) -> $snap {
                $snap { $($f: self.$f.load(Ordering::Relaxed),)* }
            }
        }
    };
}

counters!(
    /// What a port's packet path saw.
    PortCounters, PortSnapshot {
    /// Packets handed to the network (after tx faults; a duplicate counts twice).
    tx_packets,
    tx_bytes,
    /// Packets accepted after rx faults and ICRC check.
    rx_packets,
    rx_bytes,
    /// Received packets whose ICRC did not match (dropped silently).
    rx_icrc_errors,
    /// Received datagrams the parser refused (dropped).
    rx_malformed,
    /// Datagrams from an address not in the peer table.
    rx_unknown_peer,
    /// Packets with a GRH whose DGID is not in this port's GID table (dropped).
    rx_dgid_mismatch,
    /// Packets that left / were accepted with a GRH (included in tx/rx_packets).
    tx_grh_packets,
    rx_grh_packets,
    /// Socket receive passes that found datagrams (received datagrams per
    /// pass = how well the receiving thread's wake-ups are amortized).
    rx_socket_passes,
    rx_socket_datagrams,
    /// Socket reads that returned data: a GRO read carries a run of
    /// datagrams (datagrams per read = how much GSO/GRO saved).
    rx_socket_reads,
    /// Socket send calls (sendto, or one sendmmsg for a pass's batch) and
    /// the datagrams they carried.
    tx_socket_calls,
    tx_socket_datagrams,
    /// Sends to a LID no peer has.
    tx_no_route,
    /// Sends to a multicast LID (each counted once; the copies to the
    /// peers and to this port are in tx_packets).
    tx_mcast_packets,
    /// Sends to a multicast LID without a GRH whose DGID is a multicast GID
    /// (IBTA: a multicast packet carries its MGID): dropped.
    tx_mcast_no_grh,
    /// Received packets with a multicast DGID (included in rx_packets;
    /// the device delivers them to the QPs attached to the group).
    rx_mcast_packets,
    /// Socket errors on send (incl. a full socket buffer: the engine retransmits).
    tx_errors,
    fault_dropped,
    fault_duplicated,
    fault_reordered,
    fault_delayed,
    fault_corrupted,
    fault_ce_marked,
    cnp_sent,
    cnp_received,
    /// Packets not captured because the pcap file reached its size cap.
    pcap_dropped,
    /// Link-level flow control (`credit.rs`): FCPs sent and received;
    /// datagrams that waited for credit; times a route started holding its
    /// senders; datagrams discarded after a route granted nothing for the
    /// stall time (a peer gone).
    fc_packets_sent,
    fc_packets_received,
    fc_held,
    fc_blocked,
    fc_discards,
    /// Datagrams the kernel dropped because the socket's receive buffer was
    /// full (SO_MEMINFO's drop count, as last read).
    rx_socket_drops,
});

#[inline]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}
