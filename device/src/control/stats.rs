//! The control socket's `stats` reply: one tree of the device's counter
//! structs, each serialized by its own `#[derive(Serialize)]` (atomics are
//! loaded with `Relaxed` ordering by serde), so a counter added to a struct
//! shows up here without an edit (Firecracker's `metrics.rs` idiom).
//!
//! The tree's shape (object paths and key names) is what the guest harness
//! and the docs read: `firmware.umr_wqes`, `firmware.objects.mkey`,
//! `firmware.fabric.rx_dgid_mismatch`, `doorbells.poller.busy_spin_won`,
//! `cpu_latency_qos.held`, …; a struct flattened into its parent keeps its
//! fields at the parent's level.

use serde::Serialize;

use super::ControlHandles;
use crate::device::DeviceStats;
use crate::uar_poller::PollerStats;
use vrnic_engine::transport::EngineDrops;
use vrnic_engine::QpCounters;
use vrnic_fabric::counters::PortSnapshot;
use vrnic_fabric::ether::EtherCounters;
use vrnic_fabric::roce::{GidEntry, RoceCounters, RoceVersion};
use vrnic_mlx5::core::FwStats;
use vrnic_mlx5::eth::rx::EthRxTree;
use vrnic_mlx5::eth::tx_state::SqTxCounters;
use vrnic_mlx5::eth::vport::VportCounters;
use vrnic_mlx5::firmware::Firmware;
use vrnic_mlx5::ib::port::FwPortCounters;
use vrnic_mlx5::DoorbellStats;
use vrnic_subnet::stage::StageView;
use vrnic_sys::host::qos::QosStats;
use vrnic_vfio::dma::DmaStats;
use vrnic_vfio::irq::IrqStats;
use vrnic_vfio::ServerStats;

/// The whole reply.
#[derive(Serialize)]
pub(super) struct Stats<'a> {
    /// Absent (`null`) when the handles carry no firmware.
    pub firmware: Option<FirmwareStats<'a>>,
    pub server: &'a ServerStats,
    pub dma: DmaTree<'a>,
    pub irq: &'a IrqStats,
    pub device: &'a DeviceStats,
    pub doorbells: Doorbells<'a>,
    pub cpu_latency_qos: &'a QosStats,
    /// An Ethernet port's link (`null` on InfiniBand).
    pub eth_link: Option<&'a EtherCounters>,
    /// The InfiniBand port's IB stage: the modeled switch, and the built-in
    /// SM's SA (`sa`, `null` unless this port is the master SM's) and roles
    /// (`sm`, `null` without them) (`null` on Ethernet).
    pub subnet: Option<StageView>,
}

/// The firmware's own counters and what it owns.
#[derive(Serialize)]
pub(super) struct FirmwareStats<'a> {
    #[serde(flatten)]
    pub fw: &'a FwStats,
    pub port_state: u8,
    pub objects: Objects,
    /// Every QP's transport counters, summed since the last reset.
    pub engine: QpCounters,
    /// Received packets the engine could hand to no QP.
    pub engine_drops: EngineDrops,
    /// The fabric port's packet counters (`null` without a fabric).
    pub fabric: Option<PortSnapshot>,
    /// The IBTA PortCounters the PerfMgt MADs read.
    pub port_counters: &'a FwPortCounters,
    /// The Ethernet receive path (`null` on an InfiniBand port).
    pub eth_rx: Option<EthRxTree<'a>>,
    /// The Ethernet port's transmit counters (`null` on an InfiniBand port).
    pub eth_tx: Option<EthTxStats<'a>>,
    /// The Ethernet port's traffic counters (`null` on an InfiniBand port).
    pub vport_counters: Option<&'a VportCounters>,
    /// An Ethernet port's RoCE port: its packet counters and the GID table
    /// the driver programmed (`null` on InfiniBand).
    pub roce: Option<RoceTree<'a>>,
}

/// The RoCE port's counters and the programmed GID table entries.
#[derive(Serialize)]
pub(super) struct RoceTree<'a> {
    #[serde(flatten)]
    pub counters: &'a RoceCounters,
    pub gids: Vec<GidRow>,
    pub congestion: CongestionTree,
}

/// The RoCE port's congestion control: the per-priority enable masks (what
/// `cc on|off` and MODIFY_CONG_STATUS set) and the QUERY_CONG_STATISTICS
/// counters, as the guest's `hw_counters` show them.
#[derive(Serialize)]
pub(super) struct CongestionTree {
    pub rp_enabled: u8,
    pub np_enabled: u8,
    pub rp_cnp_ignored: u64,
    pub rp_cnp_handled: u64,
    pub np_ecn_marked_roce_packets: u64,
    pub np_cnp_sent: u64,
}

impl CongestionTree {
    fn new(cc: &vrnic_cc::CcControl) -> CongestionTree {
        let (c, s) = (cc.config(), cc.statistics());
        CongestionTree {
            rp_enabled: c.rp_enabled,
            np_enabled: c.np_enabled,
            rp_cnp_ignored: s.rp_cnp_ignored,
            rp_cnp_handled: s.rp_cnp_handled,
            np_ecn_marked_roce_packets: s.np_ecn_marked_roce_packets,
            np_cnp_sent: s.np_cnp_sent,
        }
    }
}

/// One programmed GID table entry, readable.
#[derive(Serialize)]
pub(super) struct GidRow {
    pub index: usize,
    /// The GID as an IPv6 address (`::ffff:a.b.c.d` for IPv4).
    pub gid: String,
    pub mac: String,
    pub vlan: Option<u16>,
    pub version: RoceVersion,
    pub ipv4: bool,
}

impl GidRow {
    fn new(index: usize, e: &GidEntry) -> GidRow {
        let m = e.mac;
        GidRow {
            index,
            gid: std::net::Ipv6Addr::from(e.gid).to_string(),
            mac: format!("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]),
            vlan: e.vlan,
            version: e.version,
            ipv4: e.ipv4,
        }
    }
}

/// Ethernet transmit: every SQ's counters summed.
#[derive(Serialize)]
pub(super) struct EthTxStats<'a> {
    #[serde(flatten)]
    pub totals: &'a SqTxCounters,
}

/// How many objects of each kind the engine holds (gauges, not counters).
#[derive(Serialize)]
pub(super) struct Objects {
    pub pd: usize,
    pub uar: usize,
    pub eq: usize,
    pub cq: usize,
    pub srq: usize,
    pub mkey: usize,
    pub qp: usize,
    pub xrcd: usize,
    /// Translation entries the memory keys hold.
    pub mtt_entries: usize,
}

/// The DMA space: its live mapping count beside its counters.
#[derive(Serialize)]
pub(super) struct DmaTree<'a> {
    pub mappings: usize,
    #[serde(flatten)]
    pub stats: &'a DmaStats,
}

/// Decoded doorbells, and in poll mode the UAR poller (`null` otherwise).
#[derive(Serialize)]
pub(super) struct Doorbells<'a> {
    #[serde(flatten)]
    pub stats: &'a DoorbellStats,
    pub poller: Option<&'a PollerStats>,
}

impl<'a> FirmwareStats<'a> {
    pub(super) fn new(f: &'a Firmware) -> FirmwareStats<'a> {
        let e = f.engine();
        let n = e.counts();
        FirmwareStats {
            fw: f.stats(),
            port_state: f.port_state(),
            objects: Objects {
                pd: n.pds,
                uar: f.uars_in_use(),
                eq: f.eqs_in_use(),
                cq: n.cqs,
                srq: n.srqs,
                mkey: n.mkeys,
                qp: n.qps,
                xrcd: n.xrcds,
                mtt_entries: e.mtt_entries(),
            },
            engine: e.counters(),
            engine_drops: *e.drops(),
            fabric: f.wire_counters().map(|w| w.snapshot()),
            port_counters: f.port_counters(),
            eth_rx: f.eth_rx_stats(),
            eth_tx: f.eth_tx().map(|t| EthTxStats { totals: &t.totals }),
            vport_counters: f.vport_counters().map(|c| &**c),
            roce: f.roce_counters().zip(f.roce_cc()).map(|(c, cc)| RoceTree {
                counters: c,
                gids: f.roce_gids().iter().map(|(i, e)| GidRow::new(*i, e)).collect(),
                congestion: CongestionTree::new(cc),
            }),
        }
    }
}

impl ControlHandles {
    /// Serializes the tree; `fw` is the locked firmware, if any.
    pub(super) fn stats_tree(&self, fw: Option<&Firmware>) -> serde_json::Value {
        let tree = Stats {
            firmware: fw.map(FirmwareStats::new),
            server: &self.server,
            dma: DmaTree { mappings: self.dma.len(), stats: &self.dma.stats },
            irq: &self.irqs.stats,
            device: &self.device,
            doorbells: Doorbells { stats: &self.doorbells, poller: self.poller.as_deref() },
            cpu_latency_qos: &self.qos,
            eth_link: self.eth_link.as_deref(),
            subnet: self.subnet.as_ref().map(|s| s.view()),
        };
        // Counter structs have string keys only; an error here is a bug, reported in the reply.
        serde_json::to_value(&tree).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
    }
}
