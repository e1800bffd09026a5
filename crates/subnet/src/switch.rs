//! The modeled switch. The vrnic fabric is a full mesh of LIDs; to the SM
//! view it looks like what it models: N channel adapters cabled to one
//! switch of N ports (port k ↔ the k-th CA LID in ascending order), port 0
//! its management port with its own LID. Every vrnic server holds an
//! identical copy ([`Switch::new`] is a pure function of the fabric's LIDs),
//! so a directed-route SMP is routed by the copy of the server whose CA it
//! leaves, and the switch's SMA answers from any copy alike.
//!
//! Two jobs, both MADs in, MADs out (byte layouts are `wire`'s):
//! - [`Switch::dr_step`]: a directed-route SMP arriving at the switch on a
//!   port, advanced as a switch does (IBTA 14.2.2.2/14.2.2.4, Linux
//!   `smi.c`): forwarded along InitialPath / ReturnPath, or answered by the
//!   switch's SMA and sent back. Bad SMPs are refused with a [`DrDrop`].
//! - [`Switch::answer`]: the SMA's answer to a SubnGet (LID-routed to the
//!   switch's LID, or the end of a directed route): NodeInfo,
//!   NodeDescription, SwitchInfo, PortInfo per port, P_KeyTable, GUIDInfo,
//!   LinearForwardingTable, MulticastForwardingTable. The model is
//!   read-only: a SubnSet is answered with "unsupported".

use vrnic_wire::mad::{
    Packet as MadHeader, METHOD_GET, METHOD_GET_RESP, MGMT_CLASS_SUBN_DIRECTED_ROUTE, MGMT_CLASS_SUBN_LID_ROUTED,
    STATUS_BAD_VERSION, STATUS_INVALID_FIELD, STATUS_UNSUP_METH_ATTR,
};
use vrnic_wire::sa_node::{NodeInfo, NODE_TYPE_SWITCH};
use vrnic_wire::sa_portinfo::PortInfo;
use vrnic_wire::smp::{self, SwitchInfo, MAX_HOPS, PERMISSIVE_LID, SMP_LEN};

/// The switch's LinearFDBCap: unicast LIDs 0..0xC000.
pub const LINEAR_FDB_CAP: u16 = 0xc000;
/// MulticastFDBCap (MLIDs from 0xC000).
pub const MCAST_FDB_CAP: u16 = 0x1000;
/// Mellanox's OUI, the switch's VendorID.
pub const VENDOR_ID: u32 = 0x0002c9;
/// DeviceID reported in NodeInfo (Switch-IB 2).
pub const DEVICE_ID: u16 = 0xcf08;
/// A forwarding-table entry for "no port".
pub const NO_PORT: u8 = 0xff;
/// The NodeDescription the model answers.
pub const NODE_DESC: &str = "vrnic modeled switch";

/// Why a directed-route SMP was not advanced (counted by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DrDrop {
    #[error("not a 256-byte directed-route SMP")]
    NotDrSmp,
    #[error("hop count {0} beyond {MAX_HOPS}")]
    HopCount(u8),
    #[error("hop pointer {ptr} not valid at the switch for hop count {cnt} (direction {back})")]
    HopPointer { ptr: u8, cnt: u8, back: bool },
    #[error("path names port {0}, which the switch does not have")]
    NoSuchPort(u8),
    #[error("arrived on port {0}, which the switch does not have")]
    BadIngress(u8),
    #[error("LID-routed part (DrSLID/DrDLID not permissive) is not supported")]
    LidRoutedPart,
}

/// Where a directed-route SMP goes after the switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrOut {
    /// The switch port it leaves through (1..=N).
    pub port: u8,
    /// The SMP as it leaves (hop pointer, ReturnPath, or the SMA's answer).
    pub mad: Vec<u8>,
}

/// Identity overrides (`None`: derived from the fabric's LIDs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchConfig {
    pub lid: Option<u16>,
    pub node_guid: Option<u64>,
}

/// One modeled switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// CA LIDs, ascending: port k is `ca_lids[k - 1]`.
    ca_lids: Vec<u16>,
    /// Port 0's LID.
    lid: u16,
    node_guid: u64,
    sm_lid: u16,
}

/// FNV-1a over the LIDs: the derived GUID's low 16 bits.
fn lid_hash(lids: &[u16]) -> u16 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for l in lids {
        for b in l.to_be_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    (h ^ h >> 16 ^ h >> 32 ^ h >> 48) as u16
}

impl Switch {
    /// The switch of a fabric whose CA ports have `lids` (any order,
    /// duplicates and LID 0 ignored; at most 254 ports are cabled), SM at
    /// `sm_lid`. Derived identity: LID = the highest CA LID + 1, node GUID
    /// 0x0002c90300f0_HHHH (HHHH from the LIDs), the same on every server.
    pub fn new(lids: impl IntoIterator<Item = u16>, sm_lid: u16, cfg: SwitchConfig) -> Switch {
        let mut ca_lids: Vec<u16> = lids.into_iter().filter(|&l| l != 0 && l < LINEAR_FDB_CAP).collect();
        ca_lids.sort_unstable();
        ca_lids.dedup();
        ca_lids.truncate(254);
        let lid = cfg.lid.unwrap_or_else(|| ca_lids.last().map_or(1, |&l| l + 1));
        let node_guid = cfg.node_guid.unwrap_or(0x0002_c903_00f0_0000 | lid_hash(&ca_lids) as u64);
        Switch { ca_lids, lid, node_guid, sm_lid }
    }

    pub fn lid(&self) -> u16 {
        self.lid
    }
    pub fn node_guid(&self) -> u64 {
        self.node_guid
    }
    /// NumPorts: one per CA.
    pub fn num_ports(&self) -> u8 {
        self.ca_lids.len() as u8
    }
    /// The switch port a CA LID is cabled to.
    pub fn port_of(&self, lid: u16) -> Option<u8> {
        self.ca_lids.binary_search(&lid).ok().map(|i| i as u8 + 1)
    }
    /// The CA LID at switch port `port` (1..=N).
    pub fn lid_at(&self, port: u8) -> Option<u16> {
        self.ca_lids.get((port as usize).checked_sub(1)?).copied()
    }
    /// The LFT entry: the port a LID leaves through (0: the switch itself).
    pub fn route(&self, lid: u16) -> u8 {
        if lid == self.lid {
            0
        } else {
            self.port_of(lid).unwrap_or(NO_PORT)
        }
    }

    /// Advances a directed-route SMP that arrived on switch port `in_port`:
    /// what a switch's SMI does on receive, then on send (`smi.c`
    /// `smi_handle_dr_smp_recv` / `smi_check_forward_dr_smp` /
    /// `smi_handle_dr_smp_send` with a switch's node type). Never panics.
    pub fn dr_step(&self, req: &[u8], in_port: u8) -> Result<DrOut, DrDrop> {
        let p = smp::check(req).map_err(|_| DrDrop::NotDrSmp)?;
        if MadHeader::new_unchecked(req).mgmt_class() != MGMT_CLASS_SUBN_DIRECTED_ROUTE {
            return Err(DrDrop::NotDrSmp);
        }
        if self.lid_at(in_port).is_none() {
            return Err(DrDrop::BadIngress(in_port));
        }
        let (ptr, cnt, back) = (p.hop_ptr(), p.hop_cnt(), p.direction());
        if cnt > MAX_HOPS {
            return Err(DrDrop::HopCount(cnt));
        }
        if p.dr_slid() != PERMISSIVE_LID || p.dr_dlid() != PERMISSIVE_LID {
            return Err(DrDrop::LidRoutedPart);
        }
        let bad_ptr = DrDrop::HopPointer { ptr, cnt, back };
        let mut out = smp::Packet::new_unchecked(req.to_vec());
        if !back {
            // C14-9:1 (the sender increments), C14-9:4/5: nothing else is
            // valid at a switch on the initial path.
            if ptr == 0 || ptr > cnt {
                return Err(bad_ptr);
            }
            out.set_return_path(ptr, in_port);
            if ptr < cnt {
                // C14-9:2: an intermediate hop, out InitialPath[ptr + 1].
                let next = p.initial_path(ptr + 1).ok_or(bad_ptr)?;
                if self.lid_at(next).is_none() {
                    return Err(DrDrop::NoSuchPort(next));
                }
                out.set_hop_ptr(ptr + 1);
                return Ok(DrOut { port: next, mad: out.into_inner() });
            }
            // C14-9:3: the end of the path; the SMA answers (hop pointer
            // hop count + 1), then C14-13:1 sends it back out ReturnPath.
            let mut answer = self.answer(&out.into_inner(), in_port);
            let mut a = smp::Packet::new_unchecked(&mut answer[..]);
            a.set_direction(true);
            a.set_hop_ptr(cnt);
            return Ok(DrOut { port: in_port, mad: answer });
        }
        // The return path. C14-13:2: an intermediate hop, out
        // ReturnPath[ptr - 1]; hop pointer 1 at a switch would be for its
        // own SM (C14-13:3), which this model has not.
        if ptr < 2 || ptr > cnt {
            return Err(bad_ptr);
        }
        let next = p.return_path(ptr - 1).ok_or(bad_ptr)?;
        if self.lid_at(next).is_none() {
            return Err(DrDrop::NoSuchPort(next));
        }
        out.set_hop_ptr(ptr - 1);
        Ok(DrOut { port: next, mad: out.into_inner() })
    }

    /// The switch SMA's GetResp to one SMP that reached it on `in_port`
    /// (a 256-byte MAD; anything shorter is answered as zeros would be).
    /// The D bit of a directed-route answer is the caller's ([`dr_step`]).
    ///
    /// [`dr_step`]: Switch::dr_step
    pub fn answer(&self, req: &[u8], in_port: u8) -> Vec<u8> {
        let mut r = vec![0u8; SMP_LEN];
        let n = req.len().min(SMP_LEN);
        r[..n].copy_from_slice(&req[..n]);
        let h = MadHeader::new_unchecked(&r[..]);
        let (class, method, attr, attr_mod) = (h.mgmt_class(), h.method(), h.attr_id(), h.attr_mod());
        let bad_version = h.base_version() != 1 || h.class_version() != 1;
        let mut d = [0u8; 64];
        let status = if class != MGMT_CLASS_SUBN_LID_ROUTED && class != MGMT_CLASS_SUBN_DIRECTED_ROUTE {
            STATUS_UNSUP_METH_ATTR
        } else if bad_version {
            STATUS_BAD_VERSION
        } else if method != METHOD_GET {
            STATUS_UNSUP_METH_ATTR
        } else {
            self.attribute(&mut d, attr, attr_mod, in_port)
        };
        let mut m = MadHeader::new_unchecked(&mut r[..]);
        m.set_method(METHOD_GET_RESP);
        m.set_status(status);
        smp::Packet::new_unchecked(&mut r[..]).data_mut().copy_from_slice(&d);
        r
    }

    fn attribute(&self, d: &mut [u8; 64], attr: u16, attr_mod: u32, in_port: u8) -> u16 {
        let n = self.num_ports();
        match attr {
            smp::ATTR_NODE_INFO => {
                let ni = NodeInfo {
                    base_version: 1,
                    class_version: 1,
                    node_type: NODE_TYPE_SWITCH,
                    num_ports: n,
                    sys_image_guid: self.node_guid,
                    node_guid: self.node_guid,
                    port_guid: self.node_guid,
                    partition_cap: 8,
                    device_id: DEVICE_ID,
                    revision: 0,
                    local_port_num: in_port,
                    vendor_id: VENDOR_ID,
                };
                let mut b = [0u8; NodeInfo::LEN];
                ni.write(&mut b);
                d[..NodeInfo::LEN].copy_from_slice(&b);
                0
            }
            smp::ATTR_NODE_DESC => {
                d[..NODE_DESC.len()].copy_from_slice(NODE_DESC.as_bytes());
                0
            }
            smp::ATTR_SWITCH_INFO => {
                let si = SwitchInfo {
                    linear_fdb_cap: LINEAR_FDB_CAP,
                    multicast_fdb_cap: MCAST_FDB_CAP,
                    linear_fdb_top: self.ca_lids.iter().copied().chain([self.lid]).max().unwrap_or(0),
                    default_mcast_primary_port: NO_PORT,
                    default_mcast_not_primary_port: NO_PORT,
                    life_time_value: 18,
                    partition_enforcement_cap: 8,
                    ..SwitchInfo::default()
                };
                let mut b = [0u8; SwitchInfo::LEN];
                si.write(&mut b);
                d[..SwitchInfo::LEN].copy_from_slice(&b);
                0
            }
            smp::ATTR_PORT_INFO => {
                let Ok(port) = u8::try_from(attr_mod) else { return STATUS_INVALID_FIELD };
                if port > n {
                    return STATUS_INVALID_FIELD;
                }
                let mgmt = port == 0;
                let pi = PortInfo {
                    lid: if mgmt { self.lid } else { 0 },
                    master_sm_lid: if mgmt { self.sm_lid } else { 0 },
                    local_port_num: in_port,
                    link_width_enabled: 3,
                    link_width_supported: 3,
                    link_width_active: 2,
                    link_speed_supported: 7,
                    port_state: 4,
                    phys_state: 5,
                    link_speed_active: 4,
                    link_speed_enabled: 7,
                    neighbor_mtu: 5,
                    vl_cap: 1,
                    mtu_cap: 5,
                    operational_vls: 1,
                    subnet_timeout: 18,
                    resp_time_value: 16,
                    ..PortInfo::default()
                };
                let mut b = [0u8; PortInfo::LEN];
                pi.write(&mut b);
                d.copy_from_slice(&b);
                0
            }
            smp::ATTR_PKEY_TABLE => {
                // AttributeModifier: port (31..16), block (15..0).
                let (port, block) = (attr_mod >> 16, attr_mod & 0xffff);
                if port > n as u32 || block != 0 {
                    return STATUS_INVALID_FIELD;
                }
                d[..2].copy_from_slice(&0xffffu16.to_be_bytes());
                0
            }
            smp::ATTR_GUID_INFO => {
                if attr_mod != 0 {
                    return STATUS_INVALID_FIELD;
                }
                d[..8].copy_from_slice(&self.node_guid.to_be_bytes());
                0
            }
            smp::ATTR_LINEAR_FWD_TABLE => {
                // 64 LIDs a block.
                let Some(first) = attr_mod.checked_mul(64).filter(|&f| f < LINEAR_FDB_CAP as u32) else {
                    return STATUS_INVALID_FIELD;
                };
                for (i, e) in d.iter_mut().enumerate() {
                    *e = self.route((first + i as u32) as u16);
                }
                0
            }
            smp::ATTR_MCAST_FWD_TABLE => {
                // Block (8..0) of 32 MLIDs, position (31..28): no groups
                // are forwarded by the model, every mask is empty.
                if (attr_mod & 0x1ff) * 32 >= MCAST_FDB_CAP as u32 {
                    return STATUS_INVALID_FIELD;
                }
                0
            }
            _ => STATUS_UNSUP_METH_ATTR,
        }
    }
}
