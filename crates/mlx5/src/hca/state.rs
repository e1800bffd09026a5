//! The HCA's own state: lifecycle, capability pages, boot pages, the
//! adapter's identity and the on-device memory window.

use std::collections::BTreeMap;

use super::caps::eth::{
    eth_offloads_image, flow_table_image, general_eth, qos_image, CAP_ETHERNET_OFFLOADS, CAP_FLOW_TABLE, CAP_QOS,
};
use super::caps::image::{atomic_caps_image, general_caps, CAP_AREA, CAP_ATOMIC, CAP_DEV_MEM, CAP_GENERAL};
use super::caps::roce::{roce_caps_image, CAP_ROCE};
use crate::cmd::dispatch::Phase;
use crate::ifc;
use crate::link_layer::LinkLayer;
use vrnic_engine::table::Table;
use vrnic_engine::Limits;

/// Lifecycle, capabilities and pages of the function (the `hca/` domain's state).
pub struct Hca {
    /// ENABLE_HCA done (and no DISABLE_HCA since).
    pub(in crate::hca) enabled: bool,
    /// INIT_HCA done (and no TEARDOWN_HCA since).
    pub(in crate::hca) initialized: bool,
    /// TEARDOWN_HCA with PREPARE_FAST_TEARDOWN done: the driver's next `nic_interface` = DISABLED
    /// drops every object at once (mlx5_cmd_fast_teardown_hca, the shutdown path).
    pub(in crate::hca) fast_teardown_prepared: bool,
    /// Capability pages by type: what the device offers (MAX) and what is set (CUR).
    pub(in crate::hca) caps_max: BTreeMap<u16, Vec<u8>>,
    pub(in crate::hca) caps_cur: BTreeMap<u16, Vec<u8>>,
    /// QUERY_ADAPTER's PSID.
    pub(in crate::hca) board_id: String,
    /// SET_DRIVER_VERSION's string.
    pub(in crate::hca) driver_version: String,
    /// Pages the driver gave us through MANAGE_PAGES.
    pub(in crate::hca) pages: Vec<u64>,
    /// The MEMIC window: BAR0 offset and size of on-device memory.
    pub(in crate::hca) memic: Option<(u64, u64)>,
    /// Allocated UAR pages (ALLOC_UAR), each with the uid that owns it.
    pub(in crate::hca) uars: Table<u16>,
    /// The port's link layer: which capability pages the function offers.
    pub(in crate::hca) link: LinkLayer,
    /// The interface step SET_ISSI chose (0 until it runs; QUERY_ISSI's `current_issi`).
    pub(in crate::hca) issi: u8,
    /// Called with (UAR index, allocated?) before ALLOC_UAR / DEALLOC_UAR
    /// complete, so the doorbell page is being watched before the driver
    /// can know its number (poll mode).
    pub(in crate::hca) on_uar: Option<UarHook>,
}

/// See [`Hca::on_uar`](Hca#structfield.on_uar).
pub type UarHook = std::sync::Arc<dyn Fn(u32, bool) + Send + Sync>;

impl Hca {
    /// Power-on state for a device with `limits`, an optional MEMIC window and the port's link layer.
    pub fn new(limits: &Limits, memic: Option<(u64, u64)>, link: LinkLayer, on_uar: Option<UarHook>) -> Hca {
        let mut h = Hca {
            enabled: false,
            initialized: false,
            fast_teardown_prepared: false,
            caps_max: BTreeMap::new(),
            caps_cur: BTreeMap::new(),
            board_id: "MT_0000000008".into(),
            driver_version: String::new(),
            pages: Vec::new(),
            memic,
            uars: Table::new(limits.uar_first, limits.uar_last, (limits.uar_last - limits.uar_first + 1) as usize),
            link,
            issi: 0,
            on_uar,
        };
        h.reset(limits);
        h
    }

    /// The phase the command table's gate checks rows against.
    pub fn phase(&self) -> Phase {
        if self.enabled {
            Phase::Enabled
        } else {
            Phase::Boot
        }
    }

    /// Whether UAR page `n` is allocated (ALLOC_UAR).
    pub fn uar_allocated(&self, n: u32) -> bool {
        self.uars.contains(n)
    }

    /// Whether TEARDOWN_HCA prepared a fast teardown (see the field).
    pub fn fast_teardown_prepared(&self) -> bool {
        self.fast_teardown_prepared
    }

    /// The uid (user context) UAR page `n` was allocated for.
    pub fn uar_owner(&self, n: u32) -> Option<u16> {
        self.uars.get(n).copied()
    }

    /// UAR pages allocated for user context `uid`.
    pub fn uars_owned_by(&self, uid: u16) -> usize {
        self.uars.iter().filter(|(_, &u)| u == uid).count()
    }

    /// UAR pages allocated, for the control socket.
    pub fn uars_in_use(&self) -> usize {
        self.uars.len()
    }

    /// The MEMIC window (BAR0 offset, size), if the device has one.
    pub fn memic(&self) -> Option<(u64, u64)> {
        self.memic
    }

    /// Gives the device a MEMIC window (tests; a built device gets it from the builder).
    #[cfg(test)]
    pub fn set_memic(&mut self, window: Option<(u64, u64)>) {
        self.memic = window;
    }

    /// The current capability page of `kind` (SET_HCA_CAP changes some), if offered.
    pub fn cap(&self, kind: u16) -> Option<&[u8]> {
        self.caps_cur.get(&kind).map(|v| &v[..])
    }

    /// FLR / device reset: lifecycle, pages and capabilities back to power-on;
    /// the UAR hook hears every page go.
    pub fn reset(&mut self, limits: &Limits) {
        if let Some(h) = &self.on_uar {
            for (n, _) in self.uars.iter() {
                h(n, false);
            }
        }
        self.pages.clear();
        self.uars.clear();
        self.enabled = false;
        self.initialized = false;
        self.fast_teardown_prepared = false;
        self.issi = 0;
        let mut general = general_caps(limits);
        let atomic = atomic_caps_image();
        let mut pages = vec![(CAP_ATOMIC, atomic)];
        if self.link == LinkLayer::Eth {
            // An Ethernet port: the §1.2 deltas, the ETHERNET_OFFLOADS, FLOW_TABLE, QOS and ROCE pages.
            general = general_eth(&general);
            pages.push((CAP_ETHERNET_OFFLOADS, eth_offloads_image()));
            pages.push((CAP_FLOW_TABLE, flow_table_image()));
            pages.push((CAP_QOS, qos_image()));
            // RoCE on the port (§1.5).
            pages.push((CAP_ROCE, roce_caps_image()));
        }
        pages.push((CAP_GENERAL, general));
        self.caps_max = pages.iter().cloned().collect();
        self.caps_cur = pages.into_iter().collect();
        if let Some((off, size)) = self.memic {
            // On-device memory: the `device_memory` bit and the DEV_MEM page.
            for page in [self.caps_max.get_mut(&CAP_GENERAL), self.caps_cur.get_mut(&CAP_GENERAL)].into_iter().flatten()
            {
                ifc::cmd_hca_cap::device_memory.set(page, 1);
            }
            use ifc::device_mem_cap as d;
            let mut dm = vec![0u8; CAP_AREA];
            d::memic.set(&mut dm, 1);
            d::memic_bar_start_addr.set(&mut dm, off);
            d::memic_bar_size.set(&mut dm, size);
            d::max_memic_size.set(&mut dm, size);
            d::log_min_memic_alloc_size.set(&mut dm, 6);
            d::log_max_memic_addr_alignment.set(&mut dm, 12);
            self.caps_max.insert(CAP_DEV_MEM, dm.clone());
            self.caps_cur.insert(CAP_DEV_MEM, dm);
        }
    }
}
