//! What a port and its users exchange: destinations, endpoints, receive
//! metadata, and the packet sink/handler traits.

#![forbid(unsafe_code)]

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use vrnic_cc::CcControl;
use vrnic_wire::grh;
pub use vrnic_wire::roce::NetHdr;

/// Where the engine sends a packet: the DLID, the GRH (SGID and DGID
/// filled in) when the address vector is global, and what a RoCE port
/// frames it with (an InfiniBand port ignores `eth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dest {
    pub lid: u16,
    pub grh: Option<grh::Repr>,
    pub eth: EthDest,
}

/// The RoCE part of a destination: the GID table entry that gives the
/// frame's source MAC, IP, VLAN and format, and the L2/UDP fields of the
/// address vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EthDest {
    pub sgid_index: u8,
    pub dmac: [u8; 6],
    /// 0: the port picks one in 0xC000..=0xFFFF.
    pub udp_sport: u16,
    /// 802.1p priority when the source GID has a VLAN.
    pub pcp: u8,
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
    /// The packet's GRH, if it carried one (its DGID is one of this port's
    /// GIDs). On RoCE every packet has one: the IP header read as a GRH
    /// (IPv4 addresses v4-mapped, ToS as traffic class, TTL as hop limit).
    pub grh: Option<grh::Repr>,
    /// Which network header carried it.
    pub net: NetHdr,
    /// RoCE: the 802.1Q TCI of a tagged frame.
    pub vlan: Option<u16>,
    /// RoCE: the frame's source MAC (where a CNP goes back); zero on InfiniBand.
    pub smac: [u8; 6],
    /// RoCE: the frame's 802.1p priority as the Ethernet link classifies it
    /// (`fabric/ether/classify.rs`: the VLAN PCP under PCP trust, the DSCP's
    /// mapped priority under DSCP trust); 0 on InfiniBand.
    pub prio: u8,
}

impl RxMeta {
    /// The packet's 802.1p priority (what the per-priority congestion
    /// control enables go by): see [`RxMeta::prio`](Self#structfield.prio).
    pub fn prio(&self) -> u8 {
        self.prio & 7
    }

    /// A packet without GRH from `src` on an InfiniBand port.
    pub fn ib(src: Endpoint, local: bool) -> RxMeta {
        RxMeta { src, local, grh: None, net: NetHdr::Ib, vlan: None, smac: [0; 6], prio: 0 }
    }
}

/// Where the engine's packets go. `pkt` is BTH through a 4-byte ICRC slot;
/// the sink fills the ICRC (and frames the GRH `dest` carries). Never
/// blocks; a packet that cannot be sent is counted and lost (the engine's
/// reliability recovers it).
pub trait PacketSink: Send + Sync {
    fn send(&self, dest: &Dest, pkt: &mut [u8]);
    /// Whether the link toward `dest` takes a packet now. False: its link-level flow control holds
    /// the sender (no credit, or packets already waiting for it); a packet sent anyway waits in the
    /// link's queue. A sender that can wait (the requester) waits for
    /// [`PacketHandler::tx_ready`].
    fn ready(&self, _dest: &Dest) -> bool {
        true
    }
    /// The port's GID at `index` (a GRH's SGID), if the table has one.
    fn gid(&self, _index: u8) -> Option<[u8; 16]> {
        None
    }
    /// Every address vector is global (RoCE: the GRH is implicit, the
    /// `grh` bit of a path or AV means nothing).
    fn all_global(&self) -> bool {
        false
    }
    /// RoCE congestion control (ECN/CNP/DCQCN): the port's settings and
    /// counters. `None`: the port has none (InfiniBand marks with FECN).
    fn cc(&self) -> Option<&Arc<CcControl>> {
        None
    }
    /// The port's line rate, bits/s (a reaction point's ceiling).
    fn line_rate_bps(&self) -> u64 {
        LINE_RATE_BPS
    }
    /// Sends a CNP (BTH opcode 0x81) to QP `dest_qp` back along the path
    /// the packet of `meta` came in on, with DSCP `dscp` and 802.1p
    /// priority `prio`. False: not sent (the port cannot, or no route).
    fn send_cnp(&self, _meta: &RxMeta, _dest_qp: u32, _dscp: u8, _prio: u8) -> bool {
        false
    }
}

/// The line rate a port reports unless it says otherwise: 100 Gb/s (the
/// Ethernet port's one link mode, 100GBASE-CR4, `mlx5/eth/regs.rs`).
pub const LINE_RATE_BPS: u64 = 100_000_000_000;

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
    /// A link that held senders ([`PacketSink::ready`] was false) has credit again: the senders
    /// waiting for it go on.
    fn tx_ready(&self) {}
}
