//! The subnet database: every end port (by LID), the multicast groups,
//! the registered services and the event subscriptions. One owner of the
//! fabric's management state; the SA ([`super::sa`]) reads and changes it.

use std::collections::BTreeMap;

use super::error::SubnetError;
use super::mcast::McGroups;
use super::port::PortRecord;
use super::service::Services;
use vrnic_wire::sa_inform::Repr as InformInfo;

/// Ports the database holds at most.
pub const MAX_PORTS: usize = 4096;
/// Event subscriptions held at most.
pub const MAX_SUBSCRIPTIONS: usize = 256;
/// The last unicast LID.
pub const LID_UNICAST_LAST: u16 = 0xbfff;

#[derive(Debug, Default)]
pub struct Subnet {
    ports: BTreeMap<u16, PortRecord>,
    pub groups: McGroups,
    pub services: Services,
    /// InformInfo subscriptions (accepted and kept; vrnic sends no reports).
    pub subscriptions: Vec<InformInfo>,
    /// The master SM's LID (reported in PortInfoRecords).
    pub sm_lid: u16,
}

impl Subnet {
    pub fn new(sm_lid: u16) -> Subnet {
        Subnet { sm_lid, ..Subnet::default() }
    }

    pub fn add_port(&mut self, p: PortRecord) -> Result<(), SubnetError> {
        if p.lid == 0 || p.lid > LID_UNICAST_LAST {
            return Err(SubnetError::BadLid(p.lid));
        }
        if self.ports.contains_key(&p.lid) {
            return Err(SubnetError::DuplicateLid(p.lid));
        }
        if self.port_by_guid(p.port_guid).is_some() {
            return Err(SubnetError::DuplicateGuid(p.port_guid));
        }
        if self.ports.len() >= MAX_PORTS {
            return Err(SubnetError::Full);
        }
        self.ports.insert(p.lid, p);
        Ok(())
    }

    /// Removes a port and everything it owned (memberships, services).
    pub fn remove_port(&mut self, lid: u16) -> Option<PortRecord> {
        let p = self.ports.remove(&lid)?;
        let gid = p.gid();
        self.groups.remove_member(&gid);
        self.services.remove_owner(&gid);
        self.subscriptions.retain(|s| s.gid != gid);
        Some(p)
    }

    pub fn port(&self, lid: u16) -> Option<&PortRecord> {
        self.ports.get(&lid)
    }

    pub fn port_mut(&mut self, lid: u16) -> Option<&mut PortRecord> {
        self.ports.get_mut(&lid)
    }

    pub fn port_by_guid(&self, guid: u64) -> Option<&PortRecord> {
        self.ports.values().find(|p| p.port_guid == guid)
    }

    pub fn port_by_gid(&self, gid: &[u8; 16]) -> Option<&PortRecord> {
        self.ports.values().find(|p| p.gid() == *gid)
    }

    /// Ports in LID order.
    pub fn ports(&self) -> impl Iterator<Item = &PortRecord> {
        self.ports.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_unique_by_lid_and_guid() {
        let mut s = Subnet::new(1);
        s.add_port(PortRecord::new(1, 0x11, 0x10)).unwrap();
        assert_eq!(s.add_port(PortRecord::new(1, 0x21, 0x20)), Err(SubnetError::DuplicateLid(1)));
        assert_eq!(s.add_port(PortRecord::new(2, 0x11, 0x20)), Err(SubnetError::DuplicateGuid(0x11)));
        assert_eq!(s.add_port(PortRecord::new(0, 0x31, 0x30)), Err(SubnetError::BadLid(0)));
        assert_eq!(s.add_port(PortRecord::new(0xc000, 0x31, 0x30)), Err(SubnetError::BadLid(0xc000)));
        let g = s.port(1).unwrap().gid();
        assert_eq!(s.port_by_gid(&g).unwrap().lid, 1);
        assert_eq!(&g[..8], &[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
        assert!(s.remove_port(1).is_some());
        assert!(s.port_by_gid(&g).is_none());
    }
}
