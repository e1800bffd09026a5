//! The modeled switch. The vrnic fabric is a full mesh of LIDs; to the SM
//! view it looks like what it models: N channel adapters cabled to one
//! switch of N ports (port k ↔ the k-th CA LID in ascending order), port 0
//! its management port with its own LID. Every vrnic server holds a copy
//! built from the same cabling ([`Switch::new`] is a function of the
//! fabric's LIDs), so a directed-route SMP is routed by the copy of the
//! server whose CA it leaves, and the switch's SMA answers from any copy.
//!
//! Two jobs, both MADs in, MADs out (byte layouts are `wire`'s):
//! - [`Switch::dr_step`]: a directed-route SMP arriving at the switch on a
//!   port, advanced as a switch does (IBTA 14.2.2.2/14.2.2.4, Linux
//!   `smi.c`): forwarded along InitialPath / ReturnPath, or answered by the
//!   switch's SMA and sent back. Bad SMPs are refused with a [`DrDrop`].
//! - [`Switch::answer`]: the SMA's answer to a SubnGet or SubnSet
//!   (LID-routed to the switch's LID, or the end of a directed route):
//!   NodeInfo, NodeDescription, SwitchInfo, PortInfo per port, P_KeyTable,
//!   GUIDInfo, LinearForwardingTable, MulticastForwardingTable,
//!   MlnxExtendedPortInfo. An SM configures it with SubnSet: PortInfo (the
//!   management port's LID and MasterSMLID, every port's state ARMED then
//!   ACTIVE, MTU, VLs, timeouts), SwitchInfo (LinearFDBTop, LifeTimeValue,
//!   default ports), the forwarding tables and the P_Key tables; the copy
//!   a Set entered holds it (the SM's SMPs enter the copy of its server).
//!
//! How it starts ([`SwitchStart`]): as vrnic's built-in SM leaves it (its
//! LID, every port ACTIVE, the LFT of the cabling), or as a switch powers up
//! before an SM has swept (no LID, every external port INIT, an empty LFT).

use std::collections::BTreeMap;

use vrnic_wire::mad::{
    Packet as MadHeader, METHOD_GET, METHOD_GET_RESP, METHOD_SET, MGMT_CLASS_SUBN_DIRECTED_ROUTE,
    MGMT_CLASS_SUBN_LID_ROUTED, STATUS_BAD_VERSION, STATUS_INVALID_FIELD, STATUS_UNSUP_METH_ATTR,
};
use vrnic_wire::sa_node::{NodeInfo, NODE_TYPE_SWITCH};
use vrnic_wire::sa_portinfo::PortInfo;
use vrnic_wire::smp::{self, SwitchInfo, MAX_HOPS, PERMISSIVE_LID, SMP_LEN};
use vrnic_wire::smp_portinfo::{self as pi, field as pif};

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
/// P_Key table entries of each port (SwitchInfo PartitionEnforcementCap).
pub const PKEY_CAP: u16 = 8;
/// SwitchInfo LifeTimeValue at power-on.
const LIFE_TIME_VALUE: u8 = 18;

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

/// How a switch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SwitchStart {
    /// As vrnic's built-in SM configures it: port 0 has the switch's LID and
    /// the SM's LID, every port is ACTIVE, the LFT routes each CA LID to its
    /// port and the switch's LID to port 0.
    #[default]
    Configured,
    /// As a switch powers up before an SM has swept: no LID, every external
    /// port INIT (LinkUp), an empty LFT (LinearFDBTop 0); an SM sets the
    /// rest. The base management port 0 has no link: it is ACTIVE (OpenSM
    /// never sets a base port 0's state).
    PowerOn,
}

/// Identity overrides (`None`: derived from the fabric's LIDs) and how the
/// switch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchConfig {
    pub lid: Option<u16>,
    pub node_guid: Option<u64>,
    pub start: SwitchStart,
}

/// One modeled switch: its cabling and identity, and what an SM set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// CA LIDs, ascending: port k is `ca_lids[k - 1]`.
    ca_lids: Vec<u16>,
    /// The LID the fabric reaches the switch at (LID-routed SMPs to it are
    /// the switch's); port 0's PortInfo LID is what an SM set.
    lid: u16,
    node_guid: u64,
    /// PortInfo of ports 0..=N as the SMA keeps it (LocalPortNum aside).
    ports: Vec<[u8; 64]>,
    /// SwitchInfo as last set (the capabilities are constant).
    info: SwitchInfo,
    /// The linear forwarding table: the output port of each unicast LID.
    lft: Vec<u8>,
    /// MulticastForwardingTable blocks that hold a port, by attribute
    /// modifier (block | position << 28).
    mft: BTreeMap<u32, [u8; 64]>,
    /// P_KeyTable block 0 of ports 0..=N.
    pkeys: Vec<[u8; 64]>,
    /// SubnSets the SMA applied.
    sets: u64,
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
        let configured = cfg.start == SwitchStart::Configured;
        let state = if configured { pi::PORT_STATE_ACTIVE } else { pi::PORT_STATE_INIT };
        let ports = (0..=ca_lids.len())
            .map(|p| {
                let mgmt = p == 0 && configured;
                let state = if p == 0 { pi::PORT_STATE_ACTIVE } else { state };
                port_image(if mgmt { lid } else { 0 }, if mgmt { sm_lid } else { 0 }, state)
            })
            .collect();
        let mut lft = vec![NO_PORT; LINEAR_FDB_CAP as usize];
        let mut top = 0;
        if configured {
            for (i, &l) in ca_lids.iter().enumerate() {
                lft[l as usize] = i as u8 + 1;
            }
            if let Some(e) = lft.get_mut(lid as usize) {
                *e = 0;
            }
            top = ca_lids.iter().copied().chain([lid]).max().unwrap_or(0);
        }
        let info = SwitchInfo {
            linear_fdb_cap: LINEAR_FDB_CAP,
            multicast_fdb_cap: MCAST_FDB_CAP,
            linear_fdb_top: top,
            default_port: 0,
            default_mcast_primary_port: NO_PORT,
            default_mcast_not_primary_port: NO_PORT,
            life_time_value: LIFE_TIME_VALUE,
            partition_enforcement_cap: PKEY_CAP,
            ..SwitchInfo::default()
        };
        let mut pkey0 = [0u8; 64];
        pkey0[..2].copy_from_slice(&0xffffu16.to_be_bytes());
        let pkeys = vec![pkey0; ca_lids.len() + 1];
        Switch { ca_lids, lid, node_guid, ports, info, lft, mft: BTreeMap::new(), pkeys, sets: 0 }
    }

    /// The LID the fabric reaches the switch at.
    pub fn lid(&self) -> u16 {
        self.lid
    }
    /// Port 0's LID as an SM set it (the configured LID from the start when
    /// [`SwitchStart::Configured`]; 0 until an SM sets one otherwise).
    pub fn port0_lid(&self) -> u16 {
        self.ports.first().map_or(0, |p| pi::get(p, pif::LID) as u16)
    }
    /// SwitchInfo LinearFDBTop.
    pub fn linear_fdb_top(&self) -> u16 {
        self.info.linear_fdb_top
    }
    /// SubnSets the SMA applied.
    pub fn sets(&self) -> u64 {
        self.sets
    }
    /// The PortState of port `port` (0..=N).
    pub fn port_state(&self, port: u8) -> Option<u8> {
        self.ports.get(port as usize).map(|p| p[pif::STATE_INFO1] & 0xf)
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
    /// The LFT entry: the port a LID leaves through (0: the switch itself,
    /// [`NO_PORT`]: none, or beyond LinearFDBTop).
    pub fn route(&self, lid: u16) -> u8 {
        if lid > self.info.linear_fdb_top {
            return NO_PORT;
        }
        self.lft.get(lid as usize).copied().unwrap_or(NO_PORT)
    }

    /// Advances a directed-route SMP that arrived on switch port `in_port`:
    /// what a switch's SMI does on receive, then on send (`smi.c`
    /// `smi_handle_dr_smp_recv` / `smi_check_forward_dr_smp` /
    /// `smi_handle_dr_smp_send` with a switch's node type). Never panics.
    pub fn dr_step(&mut self, req: &[u8], in_port: u8) -> Result<DrOut, DrDrop> {
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
    /// (a 256-byte MAD; anything shorter is answered as zeros would be): a
    /// SubnGet reads, a SubnSet writes and answers what it now holds (an
    /// invalid Set changes nothing and is answered with status 0x1C). The D
    /// bit of a directed-route answer is the caller's ([`dr_step`]).
    ///
    /// [`dr_step`]: Switch::dr_step
    pub fn answer(&mut self, req: &[u8], in_port: u8) -> Vec<u8> {
        let mut r = vec![0u8; SMP_LEN];
        let n = req.len().min(SMP_LEN);
        r[..n].copy_from_slice(&req[..n]);
        let h = MadHeader::new_unchecked(&r[..]);
        let (class, method, attr, attr_mod) = (h.mgmt_class(), h.method(), h.attr_id(), h.attr_mod());
        let bad_version = h.base_version() != 1 || h.class_version() != 1;
        let mut d = [0u8; 64];
        d.copy_from_slice(&r[smp::field::DATA]);
        let status = if class != MGMT_CLASS_SUBN_LID_ROUTED && class != MGMT_CLASS_SUBN_DIRECTED_ROUTE {
            STATUS_UNSUP_METH_ATTR
        } else if bad_version {
            STATUS_BAD_VERSION
        } else if method == METHOD_SET {
            self.set(&mut d, attr, attr_mod, in_port)
        } else if method == METHOD_GET {
            d = [0; 64];
            self.get(&mut d, attr, attr_mod, in_port)
        } else {
            STATUS_UNSUP_METH_ATTR
        };
        if status != 0 && method == METHOD_SET {
            // What the switch holds, unchanged (for an attribute it has).
            d = [0; 64];
            let _ = self.get(&mut d, attr, attr_mod, in_port);
        }
        let mut m = MadHeader::new_unchecked(&mut r[..]);
        m.set_method(METHOD_GET_RESP);
        m.set_status(status);
        smp::Packet::new_unchecked(&mut r[..]).data_mut().copy_from_slice(&d);
        r
    }

    /// The P_KeyTable / MFT / PortInfo port an attribute modifier names, if the switch has it.
    fn port_index(&self, port: u32) -> Option<usize> {
        (port <= self.num_ports() as u32).then_some(port as usize)
    }

    fn get(&self, d: &mut [u8; 64], attr: u16, attr_mod: u32, in_port: u8) -> u16 {
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
                    partition_cap: PKEY_CAP,
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
                let mut b = [0u8; SwitchInfo::LEN];
                self.info.write(&mut b);
                d[..SwitchInfo::LEN].copy_from_slice(&b);
                0
            }
            smp::ATTR_PORT_INFO => {
                // AttributeModifier: the port (bit 31 is OpenSM's SMSupportsExtendedSpeeds).
                let Some(p) = self.port_index(attr_mod & 0xff) else { return STATUS_INVALID_FIELD };
                if attr_mod & 0x7fff_ff00 != 0 {
                    return STATUS_INVALID_FIELD;
                }
                d.copy_from_slice(&self.ports[p]);
                d[pif::LOCAL_PORT_NUM] = in_port;
                0
            }
            smp::ATTR_PKEY_TABLE => {
                // AttributeModifier: port (31..16), block (15..0).
                let (Some(p), 0) = (self.port_index(attr_mod >> 16), attr_mod & 0xffff) else {
                    return STATUS_INVALID_FIELD;
                };
                d.copy_from_slice(&self.pkeys[p]);
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
                let Some(first) = lft_block(attr_mod) else { return STATUS_INVALID_FIELD };
                d.copy_from_slice(&self.lft[first..first + 64]);
                0
            }
            smp::ATTR_MCAST_FWD_TABLE => {
                let Some(key) = self.mft_key(attr_mod) else { return STATUS_INVALID_FIELD };
                if let Some(b) = self.mft.get(&key) {
                    d.copy_from_slice(b);
                }
                0
            }
            smp::ATTR_MLNX_EXT_PORT_INFO => {
                // No FDR10: every field zero.
                if self.port_index(attr_mod).is_none() {
                    return STATUS_INVALID_FIELD;
                }
                0
            }
            _ => STATUS_UNSUP_METH_ATTR,
        }
    }

    /// Applies one SubnSet; `d` holds the request's attribute and is left
    /// holding the answer.
    fn set(&mut self, d: &mut [u8; 64], attr: u16, attr_mod: u32, in_port: u8) -> u16 {
        match attr {
            smp::ATTR_SWITCH_INFO => {
                let mut b = [0u8; SwitchInfo::LEN];
                b.copy_from_slice(&d[..SwitchInfo::LEN]);
                let req = SwitchInfo::read(&b);
                if req.linear_fdb_top >= LINEAR_FDB_CAP {
                    return STATUS_INVALID_FIELD;
                }
                // RW: LinearFDBTop, the default ports, LifeTimeValue, MulticastFDBTop;
                // PortStateChange is cleared by writing 1 (the model never sets it).
                let i = &mut self.info;
                i.linear_fdb_top = req.linear_fdb_top;
                i.default_port = req.default_port;
                i.default_mcast_primary_port = req.default_mcast_primary_port;
                i.default_mcast_not_primary_port = req.default_mcast_not_primary_port;
                i.life_time_value = req.life_time_value & 0x1f;
                i.multicast_fdb_top = req.multicast_fdb_top;
            }
            smp::ATTR_PORT_INFO => {
                let Some(p) = self.port_index(attr_mod & 0xff) else { return STATUS_INVALID_FIELD };
                if attr_mod & 0x7fff_ff00 != 0 {
                    return STATUS_INVALID_FIELD;
                }
                let img = &mut self.ports[p];
                let (state, phys) = (img[pif::STATE_INFO1] & 0xf, img[pif::STATE_INFO2] >> 4);
                let (rs, rp) = pi::requested_state(d);
                let Ok((s, ph)) = pi::state_after(state, phys, rs, rp) else { return STATUS_INVALID_FIELD };
                pi::merge_set(img, d);
                pi::put_state(img, s, ph);
            }
            smp::ATTR_PKEY_TABLE => {
                let (Some(p), 0) = (self.port_index(attr_mod >> 16), attr_mod & 0xffff) else {
                    return STATUS_INVALID_FIELD;
                };
                let mut t = [0u8; 64];
                let cap = 2 * PKEY_CAP as usize;
                t[..cap].copy_from_slice(&d[..cap]);
                self.pkeys[p] = t;
            }
            smp::ATTR_LINEAR_FWD_TABLE => {
                let Some(first) = lft_block(attr_mod) else { return STATUS_INVALID_FIELD };
                self.lft[first..first + 64].copy_from_slice(&d[..]);
            }
            smp::ATTR_MCAST_FWD_TABLE => {
                let Some(key) = self.mft_key(attr_mod) else { return STATUS_INVALID_FIELD };
                if d.iter().all(|&b| b == 0) {
                    self.mft.remove(&key);
                } else {
                    self.mft.insert(key, *d);
                }
            }
            // NodeInfo, NodeDescription, GUIDInfo (read-only), and the rest.
            _ => return STATUS_UNSUP_METH_ATTR,
        }
        self.sets += 1;
        *d = [0; 64];
        self.get(d, attr, attr_mod, in_port)
    }

    /// The MFT block an attribute modifier names: block (8..0) of 32 MLIDs
    /// from 0xC000, position (31..28) of 16 ports; `None` past the cap or
    /// the switch's ports.
    fn mft_key(&self, attr_mod: u32) -> Option<u32> {
        let (block, position) = (attr_mod & 0x1ff, attr_mod >> 28);
        let ok = block * 32 < MCAST_FDB_CAP as u32
            && position <= self.num_ports() as u32 / 16
            && attr_mod & 0x0fff_fe00 == 0;
        ok.then_some(block | position << 28)
    }

    /// The multicast port mask of `mlid` (bit k: port k), from the MFT.
    pub fn mcast_ports(&self, mlid: u16) -> u64 {
        let Some(i) = mlid.checked_sub(0xc000) else { return 0 };
        let (block, at) = (i as u32 / 32, (i as usize % 32) * 2);
        (0..=self.num_ports() as u32 / 16).fold(0u64, |acc, pos| {
            let m = self.mft.get(&(block | pos << 28)).map_or(0, |b| u16::from_be_bytes([b[at], b[at + 1]]));
            acc | (m as u64) << (16 * pos)
        })
    }
}

/// The first LID of the LFT block an attribute modifier names (64 LIDs a
/// block), if it is below LinearFDBCap.
fn lft_block(attr_mod: u32) -> Option<usize> {
    attr_mod.checked_mul(64).filter(|&f| f < LINEAR_FDB_CAP as u32).map(|f| f as usize)
}

/// A port's PortInfo at start (4x QDR, MTU 4096, VL0): LID and MasterSMLID
/// (port 0 only), PortState `state`, LinkUp.
fn port_image(lid: u16, sm_lid: u16, state: u8) -> [u8; 64] {
    let pi = PortInfo {
        lid,
        master_sm_lid: sm_lid,
        link_width_enabled: 3,
        link_width_supported: 3,
        link_width_active: 2,
        link_speed_supported: 7,
        port_state: state,
        phys_state: pi::PHYS_LINK_UP,
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
    b
}
