//! The IB port's state: identity and link state (`PortConfig`, what the
//! SMA reports and an SM sets), its traffic counters, and the PerfMgt
//! baseline.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Initial PortInfo.CapabilityMask (trap, SL map, sys image GUID, vendor
/// class, cap-mask notice, client reregistration, other local changes,
/// mcast P_Key trap suppression).
pub const DEFAULT_CAP_MASK: u32 = 0x2650_0848;

/// The firmware's own packet counters of the port (what it delivered
/// itself: QP0/QP1 MADs, multicast copies), in the shape of IBTA
/// PortCounters / PortCountersExt: `MAD_IFC` PerfMgt queries read them
/// beside the fabric port's counters.
#[derive(Debug, Default, serde::Serialize)]
pub struct FwPortCounters {
    /// In 4-byte words, as IBTA counts PortXmitData / PortRcvData.
    pub xmit_data_words: AtomicU64,
    pub rcv_data_words: AtomicU64,
    pub xmit_pkts: AtomicU64,
    pub rcv_pkts: AtomicU64,
    pub rcv_errors: AtomicU64,
    pub xmit_discards: AtomicU64,
    pub unicast_xmit: AtomicU64,
    pub unicast_rcv: AtomicU64,
    pub multicast_xmit: AtomicU64,
    pub multicast_rcv: AtomicU64,
    /// QP0/QP1 MADs sent to other ports over the fabric (counted in the
    /// fabric's packets, not above) and received from it; QP0/QP1 packets
    /// from the fabric dropped as malformed or refused (also PortRcvErrors).
    /// Not PerfMgt counters: a PortCounters Set leaves them.
    pub mad_wire_xmit: AtomicU64,
    pub mad_wire_rcv: AtomicU64,
    pub mad_wire_drops: AtomicU64,
    /// UD multicast: copies delivered to attached QPs, and packets to the
    /// multicast QPN dropped (no GRH, or no QP of this port attached to the
    /// DGID). Not PerfMgt counters either.
    pub mcast_delivered: AtomicU64,
    pub mcast_drops: AtomicU64,
}

impl FwPortCounters {
    /// What PerfMgt reports: `now - base` per counter, both in the order of
    /// [`IbPort::totals`] (xmit words, rcv words, xmit pkts, rcv pkts, rcv
    /// errors, xmit discards); every packet counts as unicast.
    pub fn pma_view(now: &[u64; 6], base: &[u64; 6]) -> FwPortCounters {
        let view = FwPortCounters::default();
        let d = |i: usize| now[i].saturating_sub(base[i]);
        view.xmit_data_words.store(d(0), Ordering::Relaxed);
        view.rcv_data_words.store(d(1), Ordering::Relaxed);
        view.xmit_pkts.store(d(2), Ordering::Relaxed);
        view.rcv_pkts.store(d(3), Ordering::Relaxed);
        view.rcv_errors.store(d(4), Ordering::Relaxed);
        view.xmit_discards.store(d(5), Ordering::Relaxed);
        view.unicast_xmit.store(d(2), Ordering::Relaxed);
        view.unicast_rcv.store(d(3), Ordering::Relaxed);
        view
    }

    pub(super) fn reset(&self) {
        for c in [
            &self.xmit_data_words,
            &self.rcv_data_words,
            &self.xmit_pkts,
            &self.rcv_pkts,
            &self.rcv_errors,
            &self.xmit_discards,
            &self.unicast_xmit,
            &self.unicast_rcv,
            &self.multicast_xmit,
            &self.multicast_rcv,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Identity and state of the (single) port and its node.
#[derive(Debug, Clone)]
pub struct PortConfig {
    pub node_guid: u64,
    pub port_guid: u64,
    pub sys_image_guid: u64,
    pub lid: u16,
    pub sm_lid: u16,
    /// PortInfo.MasterSMSL: the SL to reach the SM on.
    pub sm_sl: u8,
    pub device_id: u16,
    pub revision: u32,
    pub vendor_id: u32,
    pub node_desc: String,
    pub gid_prefix: u64,
    pub cap_mask: u32,
    /// PortInfo.PortState: 4 = ACTIVE, 3 = ARMED, 2 = INIT, 1 = DOWN.
    pub port_state: u8,
    /// PortInfo.PortPhysicalState: 5 = LinkUp, 3 = Disabled.
    pub phys_state: u8,
    pub gid_table_len: u8,
    pub pkey_table_len: u16,
    /// vrnic's built-in SM configures the port (it is ACTIVE with its LID
    /// from the start, and the driver may not claim IsSM); false: an SM in a
    /// guest does (the port starts INIT without a LID).
    pub builtin_sm: bool,
    /// The PortInfo components an SM sets that have no field above
    /// (M_Key, LMC, NeighborMTU, OperationalVLs, SubnetTimeOut, ...), as an
    /// image of the attribute (`wire::smp_portinfo::RW` bits).
    pub port_info: [u8; 64],
}

/// The RW PortInfo components at power-on: LinkWidthEnabled 1x|4x,
/// LinkDownDefaultState Polling, LinkSpeedEnabled SDR|DDR|QDR, NeighborMTU
/// 4096, HOQLife 0x1f, OperationalVLs 1 (VL0), SubnetTimeOut 18.
fn default_port_info() -> [u8; 64] {
    let mut b = [0u8; 64];
    (b[29], b[33], b[35], b[36], b[42], b[43], b[51]) = (3, 2, 7, 5 << 4, 0x1f, 1 << 4, 18);
    b
}

impl PortConfig {
    pub fn new(node_guid: u64, port_guid: u64, lid: u16, device_id: u16) -> PortConfig {
        PortConfig {
            node_guid,
            port_guid,
            sys_image_guid: node_guid,
            lid,
            sm_lid: lid,
            sm_sl: 0,
            device_id,
            revision: 0,
            vendor_id: 0x0002c9,
            node_desc: "vrnic emulated ConnectX-5".into(),
            gid_prefix: 0xfe80_0000_0000_0000,
            cap_mask: DEFAULT_CAP_MASK,
            port_state: 4,
            phys_state: 5,
            gid_table_len: 8,
            pkey_table_len: 16,
            builtin_sm: true,
            port_info: default_port_info(),
        }
    }

    /// The port as it powers up on a fabric whose SM is not vrnic's: INIT
    /// (LinkUp), no LID, no SM LID, until an SM sets them.
    pub fn unconfigured(mut self) -> PortConfig {
        self.builtin_sm = false;
        self.lid = 0;
        self.sm_lid = 0;
        self.port_state = 2;
        self
    }

    /// The cable in (`up`) or out: the port goes DOWN/Disabled, or back to
    /// LinkUp and ACTIVE (the built-in SM configures it at once) or INIT
    /// (for the SM to configure). Returns the PORT_CHANGE sub_type: 1 DOWN,
    /// 4 ACTIVE, 5 INITIALIZED.
    pub fn set_link(&mut self, up: bool) -> u8 {
        if !up {
            self.port_state = 1;
            self.phys_state = 3;
            return 1;
        }
        self.phys_state = 5;
        self.port_state = if self.builtin_sm { 4 } else { 2 };
        if self.builtin_sm {
            4
        } else {
            5
        }
    }

    /// GID `index` as the guest reads it: GidPrefix (PortInfo) then the
    /// GUID at that index (GUIDInfo: the port GUID at 0, none after).
    pub fn gid(&self, index: u8) -> Option<[u8; 16]> {
        if index >= self.gid_table_len {
            return None;
        }
        let guid = if index == 0 { self.port_guid } else { 0 };
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&self.gid_prefix.to_be_bytes());
        g[8..].copy_from_slice(&guid.to_be_bytes());
        Some(g)
    }

    /// The whole GID table, index 0 first.
    pub fn gid_table(&self) -> Vec<[u8; 16]> {
        (0..self.gid_table_len).filter_map(|i| self.gid(i)).collect()
    }
}

/// What only an InfiniBand port has (the `ib/` command domain's state;
/// its identity and the firmware's counters are the firmware's, both link
/// layers report them).
pub struct IbPort {
    /// The fabric port's packet counters (real traffic), for PerfMgt.
    pub wire_counters: Option<Arc<vrnic_fabric::counters::PortCounters>>,
    /// PerfMgt counter values at the last clear (PortCounters Set).
    pub pma_base: [u64; 6],
}

impl IbPort {
    pub fn new(wire_counters: Option<Arc<vrnic_fabric::counters::PortCounters>>) -> IbPort {
        IbPort { wire_counters, pma_base: [0; 6] }
    }

    /// Port totals for PerfMgt: xmit words, rcv words, xmit pkts, rcv pkts,
    /// rcv errors, xmit discards: the fabric's packets plus the locally
    /// delivered MADs, minus what a PortCounters Set cleared.
    pub fn totals(&self, c: &FwPortCounters) -> [u64; 6] {
        use std::sync::atomic::Ordering::Relaxed;
        let mut t = [
            c.xmit_data_words.load(Relaxed),
            c.rcv_data_words.load(Relaxed),
            c.xmit_pkts.load(Relaxed),
            c.rcv_pkts.load(Relaxed),
            c.rcv_errors.load(Relaxed),
            c.xmit_discards.load(Relaxed),
        ];
        if let Some(w) = &self.wire_counters {
            let s = w.snapshot();
            t[0] += s.tx_bytes / 4;
            t[1] += s.rx_bytes / 4;
            t[2] += s.tx_packets;
            t[3] += s.rx_packets;
            t[4] += s.rx_icrc_errors + s.rx_malformed;
            t[5] += s.tx_errors + s.tx_no_route;
        }
        t
    }
}
