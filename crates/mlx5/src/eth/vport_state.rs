//! The NIC vport's state: MAC, MTU, address lists, carrier and its traffic counters (a leaf: the
//! firmware holds it; the commands are in [`super::vport`]).

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The port's traffic counters (QUERY_VPORT_COUNTER, PPCNT). The data path bumps them with
/// [`VportCounters::count_rx`] / [`VportCounters::count_tx`] for every frame it delivers to an RQ /
/// puts on the link (octets without the FCS), and `rx_errors` / `tx_errors` for frames it drops as
/// malformed. Nothing else writes them.
#[derive(Debug, Default, Serialize)]
pub struct VportCounters {
    pub rx_unicast_packets: AtomicU64,
    pub rx_unicast_octets: AtomicU64,
    pub rx_multicast_packets: AtomicU64,
    pub rx_multicast_octets: AtomicU64,
    pub rx_broadcast_packets: AtomicU64,
    pub rx_broadcast_octets: AtomicU64,
    pub tx_unicast_packets: AtomicU64,
    pub tx_unicast_octets: AtomicU64,
    pub tx_multicast_packets: AtomicU64,
    pub tx_multicast_octets: AtomicU64,
    pub tx_broadcast_packets: AtomicU64,
    pub tx_broadcast_octets: AtomicU64,
    pub rx_errors: AtomicU64,
    pub tx_errors: AtomicU64,
}

/// Unicast, multicast or broadcast, by destination MAC.
fn class(dmac: &[u8]) -> usize {
    match dmac {
        [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ..] => 2,
        [b, ..] if b & 1 != 0 => 1,
        _ => 0,
    }
}

impl VportCounters {
    /// A frame received and delivered (`frame` starts at the destination MAC).
    pub fn count_rx(&self, frame: &[u8]) {
        let (p, o) = [
            (&self.rx_unicast_packets, &self.rx_unicast_octets),
            (&self.rx_multicast_packets, &self.rx_multicast_octets),
            (&self.rx_broadcast_packets, &self.rx_broadcast_octets),
        ][class(frame)];
        p.fetch_add(1, Ordering::Relaxed);
        o.fetch_add(frame.len() as u64, Ordering::Relaxed);
    }

    /// A frame transmitted.
    pub fn count_tx(&self, frame: &[u8]) {
        let (p, o) = [
            (&self.tx_unicast_packets, &self.tx_unicast_octets),
            (&self.tx_multicast_packets, &self.tx_multicast_octets),
            (&self.tx_broadcast_packets, &self.tx_broadcast_octets),
        ][class(frame)];
        p.fetch_add(1, Ordering::Relaxed);
        o.fetch_add(frame.len() as u64, Ordering::Relaxed);
    }

    pub(super) fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// (packets, octets) received in total and sent in total.
    pub fn totals(&self) -> ((u64, u64), (u64, u64)) {
        let g = Self::get;
        (
            (
                g(&self.rx_unicast_packets) + g(&self.rx_multicast_packets) + g(&self.rx_broadcast_packets),
                g(&self.rx_unicast_octets) + g(&self.rx_multicast_octets) + g(&self.rx_broadcast_octets),
            ),
            (
                g(&self.tx_unicast_packets) + g(&self.tx_multicast_packets) + g(&self.tx_broadcast_packets),
                g(&self.tx_unicast_octets) + g(&self.tx_multicast_octets) + g(&self.tx_broadcast_octets),
            ),
        )
    }
}

/// The NIC vport of the Ethernet port.
#[derive(Debug)]
pub struct Vport {
    /// The port's MAC (`permanent_address`); survives reset.
    pub mac: [u8; 6],
    /// The emulated cable (control socket `link up|down`); survives reset.
    pub cable: bool,
    /// The operational state last announced (port-change EQEs are sent on a flip).
    pub announced_up: bool,
    /// NIC vport MTU as last written (0 until MODIFY_NIC_VPORT_CONTEXT sets it).
    pub mtu: u16,
    /// Unicast / multicast address lists, promiscuous flags (stored; filtering is the flow tables').
    pub uc_list: Vec<[u8; 6]>,
    pub mc_list: Vec<[u8; 6]>,
    /// The VLAN list (`allowed_list_type` 2; stored: filtering is the flow tables').
    pub vlan_list: Vec<u16>,
    pub promisc_uc: bool,
    pub promisc_mc: bool,
    pub promisc_all: bool,
    pub roce_en: bool,
    pub disable_uc_local_lb: bool,
    pub disable_mc_local_lb: bool,
    /// MODIFY_VPORT_STATE's admin_state (1 down, 2 up, 3 follow: the power-on default).
    pub admin_state: u8,
    pub counters: Arc<VportCounters>,
}

impl Default for Vport {
    fn default() -> Vport {
        Vport::new([0x02, 0, 0, 0, 0, 1])
    }
}

impl Vport {
    pub fn new(mac: [u8; 6]) -> Vport {
        Vport {
            mac,
            cable: true,
            announced_up: false,
            mtu: 0,
            uc_list: Vec::new(),
            mc_list: Vec::new(),
            vlan_list: Vec::new(),
            promisc_uc: false,
            promisc_mc: false,
            promisc_all: false,
            roce_en: false,
            disable_uc_local_lb: false,
            disable_mc_local_lb: false,
            admin_state: 3,
            counters: Arc::default(),
        }
    }

    /// FLR / device reset: context settings back to power-on; MAC, cable and counters stay.
    pub fn reset(&mut self) {
        let fresh = Vport::new(self.mac);
        *self = Vport { cable: self.cable, counters: self.counters.clone(), ..fresh };
    }
}
