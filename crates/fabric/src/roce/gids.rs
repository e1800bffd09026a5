//! The RoCE GID table: what the driver programs with SET_ROCE_ADDRESS (one
//! entry per GID index), and what the RoCE port frames and accepts by. The
//! mlx5 layer writes it; the port reads it for every packet.

use std::sync::RwLock;

use serde::Serialize;
use thiserror::Error;

/// The RoCE versions a GID entry can have (`roce_version`: 0 = v1, 2 = v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum RoceVersion {
    V1,
    V2,
}

/// One programmed GID table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct GidEntry {
    /// The GID: an IPv6 address, or `::ffff:a.b.c.d` for IPv4.
    pub gid: [u8; 16],
    /// Source MAC of frames sent from this GID.
    pub mac: [u8; 6],
    /// VLAN ID of the netdev the GID belongs to.
    pub vlan: Option<u16>,
    pub version: RoceVersion,
    /// RoCEv2: the IP version of frames from this GID (`roce_l3_type`: 0
    /// IPv4, 1 IPv6).
    pub ipv4: bool,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum GidError {
    #[error("GID index {0} out of range")]
    Index(usize),
}

/// The table (fixed size: `roce_address_table_size`).
#[derive(Debug)]
pub struct RoceGids {
    entries: RwLock<Vec<Option<GidEntry>>>,
}

impl RoceGids {
    pub fn new(size: usize) -> RoceGids {
        RoceGids { entries: RwLock::new(vec![None; size]) }
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets (`Some`) or clears (`None`) entry `index`.
    pub fn set(&self, index: usize, e: Option<GidEntry>) -> Result<(), GidError> {
        let mut t = self.entries.write().unwrap_or_else(|p| p.into_inner());
        let slot = t.get_mut(index).ok_or(GidError::Index(index))?;
        *slot = e;
        Ok(())
    }

    pub fn get(&self, index: usize) -> Option<GidEntry> {
        self.read().get(index).copied().flatten()
    }

    /// Clears every entry (function reset, teardown).
    pub fn clear(&self) {
        self.entries.write().unwrap_or_else(|p| p.into_inner()).iter_mut().for_each(|e| *e = None);
    }

    /// The index of an entry with this GID, RoCE version and VLAN ID (what
    /// a received packet's destination address must match).
    pub fn find(&self, gid: &[u8; 16], version: RoceVersion, vlan: Option<u16>) -> Option<usize> {
        self.read().iter().position(|e| e.is_some_and(|e| e.gid == *gid && e.version == version && e.vlan == vlan))
    }

    /// Whether any entry has this GID (loopback: a destination on this port).
    pub fn contains(&self, gid: &[u8; 16]) -> bool {
        self.read().iter().any(|e| e.is_some_and(|e| e.gid == *gid))
    }

    /// The programmed entries, by index.
    pub fn snapshot(&self) -> Vec<(usize, GidEntry)> {
        self.read().iter().enumerate().filter_map(|(i, e)| e.map(|e| (i, e))).collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Option<GidEntry>>> {
        self.entries.read().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(last: u8) -> GidEntry {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[10, 0, 0, last]);
        GidEntry { gid, mac: [2, 0, 0, 0, 0, last], vlan: None, version: RoceVersion::V2, ipv4: true }
    }

    #[test]
    fn set_find_clear() {
        let t = RoceGids::new(4);
        assert_eq!(t.set(4, Some(v4(1))), Err(GidError::Index(4)));
        t.set(1, Some(v4(1))).unwrap();
        assert_eq!(t.get(1), Some(v4(1)));
        assert_eq!(t.get(0), None);
        assert_eq!(t.find(&v4(1).gid, RoceVersion::V2, None), Some(1));
        assert_eq!(t.find(&v4(1).gid, RoceVersion::V1, None), None);
        assert_eq!(t.find(&v4(1).gid, RoceVersion::V2, Some(5)), None);
        assert!(t.contains(&v4(1).gid) && !t.contains(&v4(2).gid));
        t.set(1, None).unwrap();
        assert_eq!(t.snapshot(), vec![]);
        t.set(3, Some(v4(3))).unwrap();
        t.clear();
        assert!(t.get(3).is_none());
    }
}
