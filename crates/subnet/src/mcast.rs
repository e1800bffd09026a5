//! Multicast groups (IBTA 15.2.5.17 and OpenSM's osm_sa_mcmember_record.c
//! behaviour): MGID → MLID, Q_Key, P_Key, MTU, rate, SL and the members'
//! JoinStates; join (create), leave and query.

use std::collections::BTreeMap;

use super::error::SaError;
use super::port::PortRecord;
use super::select::{life_satisfies, mtu_satisfies, pick_mtu, pick_rate, rate_mbps, rate_satisfies, SELECTOR_EXACTLY};
use vrnic_wire::sa_mcmember::{
    ipoib_broadcast_mgid, mask, Repr as McMemberRecord, JOIN_FULL_MEMBER, JOIN_SEND_ONLY_FULL_MEMBER,
};

/// The first and last multicast LIDs the SA hands out.
pub const MLID_FIRST: u16 = 0xc000;
pub const MLID_LAST: u16 = 0xfffe;
/// Groups the SA holds at most (joins beyond: ERR_NO_RESOURCES).
pub const MAX_GROUPS: usize = 1024;
/// Members per group at most.
pub const MAX_MEMBERS: usize = 4096;
/// The IPoIB Q_Key (RFC 4391 leaves it to the SM; every SM uses 0x0B1B).
pub const IPOIB_QKEY: u32 = 0x0000_0b1b;
/// The JoinState bits IBTA defines.
const JOIN_STATE_BITS: u8 = 0xf;
/// What a create must specify (OpenSM's REQUIRED_MC_CREATE_COMP_MASK).
const CREATE_MASK: u64 = mask::MGID
    | mask::PORT_GID
    | mask::JOIN_STATE
    | mask::QKEY
    | mask::TRAFFIC_CLASS
    | mask::PKEY
    | mask::FLOW_LABEL
    | mask::SL;

/// One multicast group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McGroup {
    pub mgid: [u8; 16],
    pub mlid: u16,
    pub qkey: u32,
    pub pkey: u16,
    pub mtu: u8,
    pub rate: u8,
    pub packet_life_time: u8,
    pub sl: u8,
    pub traffic_class: u8,
    pub flow_label: u32,
    pub hop_limit: u8,
    /// Port GID → JoinState.
    pub members: BTreeMap<[u8; 16], u8>,
    /// Created by the SM (kept when its last member leaves).
    pub persistent: bool,
}

impl McGroup {
    /// The IPoIB broadcast group of a partition, as an SM pre-creates it.
    pub fn ipoib_broadcast(pkey: u16, mlid: u16, mtu: u8, rate: u8, packet_life_time: u8) -> McGroup {
        McGroup {
            mgid: ipoib_broadcast_mgid(pkey),
            mlid,
            qkey: IPOIB_QKEY,
            pkey: pkey | 0x8000,
            mtu,
            rate,
            packet_life_time,
            sl: 0,
            traffic_class: 0,
            flow_label: 0,
            hop_limit: 0,
            members: BTreeMap::new(),
            persistent: true,
        }
    }

    /// Scope: the low nibble of the MGID's second byte.
    pub fn scope(&self) -> u8 {
        self.mgid[1] & 0xf
    }

    /// The group as an MCMemberRecord for one member.
    pub fn record(&self, port_gid: [u8; 16], join_state: u8) -> McMemberRecord {
        McMemberRecord {
            mgid: self.mgid,
            port_gid,
            qkey: self.qkey,
            mlid: self.mlid,
            mtu_selector: SELECTOR_EXACTLY,
            mtu: self.mtu,
            traffic_class: self.traffic_class,
            pkey: self.pkey,
            rate_selector: SELECTOR_EXACTLY,
            rate: self.rate,
            packet_life_time_selector: SELECTOR_EXACTLY,
            packet_life_time: self.packet_life_time,
            sl: self.sl,
            flow_label: self.flow_label,
            hop_limit: self.hop_limit,
            scope: self.scope(),
            join_state,
            proxy_join: false,
        }
    }

    /// Whether the group's parameters satisfy the request's masked fields
    /// (the member-independent ones).
    fn matches(&self, r: &McMemberRecord, m: u64) -> bool {
        let sel = |bit: u64, s: u8| if m & bit != 0 { s } else { SELECTOR_EXACTLY };
        (m & mask::MGID == 0 || r.mgid == self.mgid)
            && (m & mask::QKEY == 0 || r.qkey == self.qkey)
            && (m & mask::MLID == 0 || r.mlid == 0 || r.mlid == self.mlid)
            && (m & mask::PKEY == 0 || r.pkey & 0x7fff == self.pkey & 0x7fff)
            && (m & mask::TRAFFIC_CLASS == 0 || r.traffic_class == self.traffic_class)
            && (m & mask::SL == 0 || r.sl == self.sl)
            && (m & mask::FLOW_LABEL == 0 || r.flow_label == self.flow_label)
            && (m & mask::SCOPE == 0 || r.scope == self.scope())
            && (m & mask::MTU == 0 || mtu_satisfies(self.mtu, sel(mask::MTU_SELECTOR, r.mtu_selector), r.mtu))
            && (m & mask::RATE == 0 || rate_satisfies(self.rate, sel(mask::RATE_SELECTOR, r.rate_selector), r.rate))
            && (m & mask::PACKET_LIFE_TIME == 0
                || life_satisfies(
                    self.packet_life_time,
                    sel(mask::PACKET_LIFE_TIME_SELECTOR, r.packet_life_time_selector),
                    r.packet_life_time,
                ))
    }

    /// Whether `port` can be a member: it holds the P_Key and runs at
    /// least the group's MTU and rate.
    fn admits(&self, port: &PortRecord) -> bool {
        port.has_pkey(self.pkey)
            && port.mtu >= self.mtu
            && rate_mbps(port.rate).unwrap_or(0) >= rate_mbps(self.rate).unwrap_or(u32::MAX)
    }
}

/// All multicast groups of the subnet, by MGID.
#[derive(Debug, Default)]
pub struct McGroups {
    groups: BTreeMap<[u8; 16], McGroup>,
    /// Counter for SA-assigned MGIDs.
    next_mgid: u32,
}

impl McGroups {
    pub fn new() -> McGroups {
        McGroups::default()
    }

    /// Adds a group the SM creates itself (e.g. IPoIB broadcast).
    pub fn create(&mut self, g: McGroup) -> Result<(), SaError> {
        if g.mgid[0] != 0xff || !(MLID_FIRST..=MLID_LAST).contains(&g.mlid) {
            return Err(SaError::InvalidField);
        }
        if self.groups.contains_key(&g.mgid) || self.by_mlid(g.mlid).is_some() {
            return Err(SaError::ReqInvalid);
        }
        if self.groups.len() >= MAX_GROUPS {
            return Err(SaError::NoResources);
        }
        self.groups.insert(g.mgid, g);
        Ok(())
    }

    pub fn get(&self, mgid: &[u8; 16]) -> Option<&McGroup> {
        self.groups.get(mgid)
    }

    pub fn by_mlid(&self, mlid: u16) -> Option<&McGroup> {
        self.groups.values().find(|g| g.mlid == mlid)
    }

    pub fn iter(&self) -> impl Iterator<Item = &McGroup> {
        self.groups.values()
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn free_mlid(&self) -> Option<u16> {
        (MLID_FIRST..=MLID_LAST).find(|&l| self.by_mlid(l).is_none())
    }

    /// SubnAdmSet(MCMemberRecord): `port` (the PortGID's port, already
    /// checked to be the requester's) joins or creates the group. Returns
    /// the response record.
    pub fn join(
        &mut self,
        r: &McMemberRecord,
        m: u64,
        port: &PortRecord,
        default_life: u8,
    ) -> Result<McMemberRecord, SaError> {
        if m & (mask::PORT_GID | mask::JOIN_STATE) != mask::PORT_GID | mask::JOIN_STATE {
            return Err(SaError::InsufficientComponents);
        }
        if r.join_state == 0 || r.join_state & !JOIN_STATE_BITS != 0 {
            return Err(SaError::ReqInvalid);
        }
        let zero_mgid = m & mask::MGID == 0 || r.mgid == [0; 16];
        if !zero_mgid && r.mgid[0] != 0xff {
            return Err(SaError::ReqInvalid);
        }
        if !zero_mgid {
            if let Some(g) = self.groups.get_mut(&r.mgid) {
                if !g.matches(r, m) || !g.admits(port) {
                    return Err(SaError::ReqInvalid);
                }
                let gid = port.gid();
                if !g.members.contains_key(&gid) && g.members.len() >= MAX_MEMBERS {
                    return Err(SaError::NoResources);
                }
                let st = g.members.entry(gid).or_insert(0);
                *st |= r.join_state;
                let st = *st;
                return Ok(g.record(gid, st));
            }
        }
        self.create_on_join(r, m, port, zero_mgid, default_life)
    }

    fn create_on_join(
        &mut self,
        r: &McMemberRecord,
        m: u64,
        port: &PortRecord,
        zero_mgid: bool,
        default_life: u8,
    ) -> Result<McMemberRecord, SaError> {
        let needed = if zero_mgid { CREATE_MASK & !mask::MGID } else { CREATE_MASK };
        if m & needed != needed {
            return Err(SaError::InsufficientComponents);
        }
        if r.join_state & (JOIN_FULL_MEMBER | JOIN_SEND_ONLY_FULL_MEMBER) == 0 {
            return Err(SaError::ReqInvalid);
        }
        if !port.has_pkey(r.pkey) {
            return Err(SaError::ReqInvalid);
        }
        let sel = |bit: u64, s: u8| if m & bit != 0 { s } else { SELECTOR_EXACTLY };
        let mtu = if m & mask::MTU != 0 {
            pick_mtu(port.mtu, sel(mask::MTU_SELECTOR, r.mtu_selector), r.mtu).ok_or(SaError::ReqInvalid)?
        } else {
            port.mtu
        };
        let rate = if m & mask::RATE != 0 {
            pick_rate(port.rate, sel(mask::RATE_SELECTOR, r.rate_selector), r.rate).ok_or(SaError::ReqInvalid)?
        } else {
            port.rate
        };
        let life = if m & mask::PACKET_LIFE_TIME != 0 {
            let s = sel(mask::PACKET_LIFE_TIME_SELECTOR, r.packet_life_time_selector);
            (0..64u8).rev().find(|&v| life_satisfies(v, s, r.packet_life_time)).ok_or(SaError::ReqInvalid)?
        } else {
            default_life
        };
        if self.groups.len() >= MAX_GROUPS {
            return Err(SaError::NoResources);
        }
        let mlid = self.free_mlid().ok_or(SaError::NoResources)?;
        let mgid = if zero_mgid { self.assign_mgid(r, m) } else { r.mgid };
        let gid = port.gid();
        let mut g = McGroup {
            mgid,
            mlid,
            qkey: r.qkey,
            pkey: r.pkey | 0x8000,
            mtu,
            rate,
            packet_life_time: life,
            sl: r.sl & 0xf,
            traffic_class: r.traffic_class,
            flow_label: r.flow_label,
            hop_limit: if m & mask::HOP_LIMIT != 0 { r.hop_limit } else { 0 },
            members: BTreeMap::new(),
            persistent: false,
        };
        g.members.insert(gid, r.join_state);
        let rec = g.record(gid, r.join_state);
        self.groups.insert(mgid, g);
        Ok(rec)
    }

    /// An SA-assigned MGID (IBTA 4.1.1: signature 0xA01B, the P_Key, then
    /// a counter), not yet in use.
    fn assign_mgid(&mut self, r: &McMemberRecord, m: u64) -> [u8; 16] {
        let scope = if m & mask::SCOPE != 0 && r.scope != 0 { r.scope } else { 2 };
        loop {
            self.next_mgid = self.next_mgid.wrapping_add(1);
            let p = (r.pkey | 0x8000).to_be_bytes();
            let c = self.next_mgid.to_be_bytes();
            let mgid = [0xff, 0x10 | scope, 0xa0, 0x1b, p[0], p[1], 0, 0, 0, 0, 0, 0, c[0], c[1], c[2], c[3]];
            if !self.groups.contains_key(&mgid) {
                return mgid;
            }
        }
    }

    /// SubnAdmDelete(MCMemberRecord): the member drops the JoinState bits
    /// it names; a member left with none leaves, and a group left without
    /// members is deleted unless the SM created it.
    pub fn leave(&mut self, r: &McMemberRecord, m: u64, port: &PortRecord) -> Result<McMemberRecord, SaError> {
        let needed = mask::MGID | mask::PORT_GID | mask::JOIN_STATE;
        if m & needed != needed {
            return Err(SaError::InsufficientComponents);
        }
        let gid = port.gid();
        let g = self.groups.get_mut(&r.mgid).ok_or(SaError::ReqInvalid)?;
        let st = g.members.get_mut(&gid).ok_or(SaError::ReqInvalid)?;
        if *st & r.join_state == 0 {
            return Err(SaError::ReqInvalid);
        }
        *st &= !r.join_state;
        if *st == 0 {
            g.members.remove(&gid);
        }
        let rec = g.record(gid, r.join_state & JOIN_STATE_BITS);
        if g.members.is_empty() && !g.persistent {
            self.groups.remove(&r.mgid);
        }
        Ok(rec)
    }

    /// A port left the subnet: it leaves every group.
    pub fn remove_member(&mut self, gid: &[u8; 16]) {
        for g in self.groups.values_mut() {
            g.members.remove(gid);
        }
        self.groups.retain(|_, g| g.persistent || !g.members.is_empty());
    }

    /// SubnAdmGet/GetTable(MCMemberRecord): one record per matching member,
    /// or per group when the query names no member and the group has none;
    /// more than `limit`: ERR_NO_RESOURCES.
    pub fn query(&self, r: &McMemberRecord, m: u64, limit: usize) -> Result<Vec<McMemberRecord>, SaError> {
        let mut out = Vec::new();
        for g in self.groups.values().filter(|g| g.matches(r, m)) {
            let by_member = m & (mask::PORT_GID | mask::JOIN_STATE) != 0;
            if g.members.is_empty() && !by_member {
                out.push(g.record([0; 16], 0));
            }
            for (gid, &st) in &g.members {
                if (m & mask::PORT_GID == 0 || *gid == r.port_gid)
                    && (m & mask::JOIN_STATE == 0 || st & r.join_state != 0)
                {
                    out.push(g.record(*gid, st));
                }
            }
            if out.len() > limit {
                return Err(SaError::NoResources);
            }
        }
        Ok(out)
    }
}
