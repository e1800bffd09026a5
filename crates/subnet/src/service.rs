//! Registered services (IBTA 15.2.5.14): ServiceRecords keyed by
//! (ServiceID, ServiceGID, ServiceP_Key). Leases are stored as given but
//! never expire (the SA has no clock).

use super::error::SaError;
use vrnic_wire::sa_service::{mask, Repr as ServiceRecord};

/// Services the SA holds at most.
pub const MAX_SERVICES: usize = 1024;

#[derive(Debug, Default)]
pub struct Services {
    records: Vec<ServiceRecord>,
}

fn same_key(a: &ServiceRecord, b: &ServiceRecord) -> bool {
    a.service_id == b.service_id && a.service_gid == b.service_gid && a.service_pkey == b.service_pkey
}

fn matches(s: &ServiceRecord, r: &ServiceRecord, m: u64) -> bool {
    (m & mask::SERVICE_ID == 0 || s.service_id == r.service_id)
        && (m & mask::SERVICE_GID == 0 || s.service_gid == r.service_gid)
        && (m & mask::SERVICE_PKEY == 0 || s.service_pkey == r.service_pkey)
        && (m & mask::SERVICE_KEY == 0 || s.service_key == r.service_key)
        && (m & mask::SERVICE_NAME == 0 || s.service_name == r.service_name)
}

impl Services {
    pub fn new() -> Services {
        Services::default()
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// SubnAdmSet(ServiceRecord): registers or replaces a service. The
    /// caller has checked that the ServiceGID is the requester's.
    pub fn register(&mut self, r: &ServiceRecord, m: u64) -> Result<ServiceRecord, SaError> {
        if m & (mask::SERVICE_ID | mask::SERVICE_GID) != mask::SERVICE_ID | mask::SERVICE_GID {
            return Err(SaError::InsufficientComponents);
        }
        if let Some(s) = self.records.iter_mut().find(|s| same_key(s, r)) {
            *s = *r;
            return Ok(*r);
        }
        if self.records.len() >= MAX_SERVICES {
            return Err(SaError::NoResources);
        }
        self.records.push(*r);
        Ok(*r)
    }

    /// SubnAdmGet/GetTable(ServiceRecord).
    pub fn query(&self, r: &ServiceRecord, m: u64) -> Vec<ServiceRecord> {
        self.records.iter().filter(|s| matches(s, r, m)).copied().collect()
    }

    /// SubnAdmDelete(ServiceRecord): removes the matching services of
    /// `owner_gid`; returns the first removed.
    pub fn delete(&mut self, r: &ServiceRecord, m: u64, owner_gid: &[u8; 16]) -> Result<ServiceRecord, SaError> {
        let hit = |s: &ServiceRecord| matches(s, r, m) && s.service_gid == *owner_gid;
        let first = self.records.iter().find(|s| hit(s)).copied().ok_or(SaError::NoRecords)?;
        self.records.retain(|s| !hit(s));
        Ok(first)
    }

    /// A port left: its services go with it.
    pub fn remove_owner(&mut self, gid: &[u8; 16]) {
        self.records.retain(|s| s.service_gid != *gid);
    }
}
