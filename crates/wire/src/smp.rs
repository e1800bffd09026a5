//! The subnet management packet (IBTA 14.2.1, Linux `struct ib_smp`): the
//! 256-byte MAD of classes SubnGet/Set LID-routed (0x01) and directed-route
//! (0x81). After the common MAD header: M_Key, DrSLID, DrDLID, 64 bytes of
//! attribute data at offset 64, and for directed route the InitialPath and
//! ReturnPath (64 port numbers each, indexed by the hop pointer). The
//! direction bit D is bit 15 of the header's Status (set on the way back),
//! HopPointer and HopCount are the two class-specific bytes.

use super::codec::{rd16, rd64, wr16, Result};

/// The SMP is exactly one MAD.
pub const SMP_LEN: usize = 256;
/// The permissive LID (DrSLID/DrDLID of a purely directed route).
pub const PERMISSIVE_LID: u16 = 0xffff;
/// A directed route has at most 63 hops (IBTA 14.2.2.1: HopCount 0..=63).
pub const MAX_HOPS: u8 = 63;
/// Status bit D: the SMP travels the return path.
pub const STATUS_DIRECTION: u16 = 0x8000;

/// Attributes of the SMP class (IBTA table 145) beyond those the CA's SMA
/// names in `mlx5/ib/mad.rs`.
pub const ATTR_NODE_DESC: u16 = 0x0010;
pub const ATTR_NODE_INFO: u16 = 0x0011;
pub const ATTR_SWITCH_INFO: u16 = 0x0012;
pub const ATTR_GUID_INFO: u16 = 0x0014;
pub const ATTR_PORT_INFO: u16 = 0x0015;
pub const ATTR_PKEY_TABLE: u16 = 0x0016;
pub const ATTR_SL_TO_VL_TABLE: u16 = 0x0017;
pub const ATTR_LINEAR_FWD_TABLE: u16 = 0x0019;
pub const ATTR_MCAST_FWD_TABLE: u16 = 0x001b;
/// MlnxExtendedPortInfo (vendor-specific, Mellanox): FDR10 link speeds.
pub const ATTR_MLNX_EXT_PORT_INFO: u16 = 0xff90;

pub mod field {
    use core::ops::Range;
    pub const STATUS: Range<usize> = 4..6;
    pub const HOP_PTR: usize = 6;
    pub const HOP_CNT: usize = 7;
    pub const M_KEY: Range<usize> = 24..32;
    pub const DR_SLID: Range<usize> = 32..34;
    pub const DR_DLID: Range<usize> = 34..36;
    pub const DATA: Range<usize> = 64..128;
    pub const INITIAL_PATH: Range<usize> = 128..192;
    pub const RETURN_PATH: Range<usize> = 192..256;
    pub const HEADER_LEN: usize = 256;
}

fixed_view!("SMP");

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn status(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::STATUS.start)
    }
    /// D: 0 on the initial path, 1 on the return path.
    pub fn direction(&self) -> bool {
        self.status() & STATUS_DIRECTION != 0
    }
    pub fn hop_ptr(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_PTR]
    }
    pub fn hop_cnt(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_CNT]
    }
    pub fn m_key(&self) -> u64 {
        rd64(self.buffer.as_ref(), field::M_KEY.start)
    }
    pub fn dr_slid(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::DR_SLID.start)
    }
    pub fn dr_dlid(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::DR_DLID.start)
    }
    /// The attribute's 64 bytes.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }
    /// InitialPath[i] (the egress port at hop i); `None` past the array.
    pub fn initial_path(&self, i: u8) -> Option<u8> {
        self.buffer.as_ref()[field::INITIAL_PATH].get(i as usize).copied()
    }
    /// ReturnPath[i] (the ingress port at hop i); `None` past the array.
    pub fn return_path(&self, i: u8) -> Option<u8> {
        self.buffer.as_ref()[field::RETURN_PATH].get(i as usize).copied()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_status(&mut self, v: u16) {
        wr16(self.buffer.as_mut(), field::STATUS.start, v)
    }
    pub fn set_direction(&mut self, back: bool) {
        let s = self.status() & !STATUS_DIRECTION;
        self.set_status(if back { s | STATUS_DIRECTION } else { s })
    }
    pub fn set_hop_ptr(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_PTR] = v
    }
    /// Sets ReturnPath[i]; false (nothing written) past the array.
    pub fn set_return_path(&mut self, i: u8, port: u8) -> bool {
        match self.buffer.as_mut()[field::RETURN_PATH].get_mut(i as usize) {
            Some(p) => {
                *p = port;
                true
            }
            None => false,
        }
    }
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

/// Checks that `b` is a whole SMP.
pub fn check(b: &[u8]) -> Result<Packet<&[u8]>> {
    if b.len() != SMP_LEN {
        return Err(super::Error::Malformed("SMP length"));
    }
    Packet::new_checked(b)
}

/// SwitchInfo (IBTA 14.2.5.4), the first 20 bytes of the attribute data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchInfo {
    pub linear_fdb_cap: u16,
    pub random_fdb_cap: u16,
    pub multicast_fdb_cap: u16,
    pub linear_fdb_top: u16,
    pub default_port: u8,
    pub default_mcast_primary_port: u8,
    pub default_mcast_not_primary_port: u8,
    /// 5 bits.
    pub life_time_value: u8,
    pub port_state_change: bool,
    pub lids_per_port: u16,
    pub partition_enforcement_cap: u16,
    pub enhanced_port0: bool,
    pub multicast_fdb_top: u16,
}

impl SwitchInfo {
    pub const LEN: usize = 20;

    pub fn read(b: &[u8; 20]) -> SwitchInfo {
        SwitchInfo {
            linear_fdb_cap: rd16(b, 0),
            random_fdb_cap: rd16(b, 2),
            multicast_fdb_cap: rd16(b, 4),
            linear_fdb_top: rd16(b, 6),
            default_port: b[8],
            default_mcast_primary_port: b[9],
            default_mcast_not_primary_port: b[10],
            life_time_value: b[11] >> 3,
            port_state_change: b[11] & 0x04 != 0,
            lids_per_port: rd16(b, 12),
            partition_enforcement_cap: rd16(b, 14),
            enhanced_port0: b[16] & 0x08 != 0,
            multicast_fdb_top: rd16(b, 18),
        }
    }

    pub fn write(&self, b: &mut [u8; 20]) {
        b.fill(0);
        wr16(b, 0, self.linear_fdb_cap);
        wr16(b, 2, self.random_fdb_cap);
        wr16(b, 4, self.multicast_fdb_cap);
        wr16(b, 6, self.linear_fdb_top);
        b[8] = self.default_port;
        b[9] = self.default_mcast_primary_port;
        b[10] = self.default_mcast_not_primary_port;
        b[11] = (self.life_time_value & 0x1f) << 3 | if self.port_state_change { 0x04 } else { 0 };
        wr16(b, 12, self.lids_per_port);
        wr16(b, 14, self.partition_enforcement_cap);
        b[16] = if self.enhanced_port0 { 0x08 } else { 0 };
        wr16(b, 18, self.multicast_fdb_top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dr_fields_at_ib_smp_offsets() {
        // struct ib_smp: status @4 (D = bit 15), hop_ptr @6, hop_cnt @7,
        // mkey @24, dr_slid @32, dr_dlid @34, data @64, initial_path @128,
        // return_path @192.
        let mut m = [0u8; 256];
        m[4] = 0x80;
        m[6] = 2;
        m[7] = 3;
        m[24..32].copy_from_slice(&7u64.to_be_bytes());
        m[32..36].copy_from_slice(&[0xff, 0xff, 0xff, 0xfe]);
        m[64] = 0x5a;
        m[128 + 2] = 9;
        m[192 + 1] = 4;
        let p = check(&m).unwrap();
        assert!(p.direction());
        assert_eq!((p.hop_ptr(), p.hop_cnt()), (2, 3));
        assert_eq!(p.m_key(), 7);
        assert_eq!((p.dr_slid(), p.dr_dlid()), (PERMISSIVE_LID, 0xfffe));
        assert_eq!(p.data()[0], 0x5a);
        assert_eq!((p.initial_path(2), p.return_path(1)), (Some(9), Some(4)));
        assert_eq!((p.initial_path(64), p.return_path(200)), (None, None));
        let mut q = Packet::new_unchecked(m);
        q.set_direction(false);
        q.set_hop_ptr(1);
        assert!(q.set_return_path(3, 6));
        assert!(!q.set_return_path(64, 6));
        let b = q.into_inner();
        assert_eq!((b[4], b[6], b[192 + 3]), (0, 1, 6));
        assert!(check(&m[..255]).is_err());
    }

    #[test]
    fn switch_info_round_trip() {
        let s = SwitchInfo {
            linear_fdb_cap: 0xc000,
            multicast_fdb_cap: 0x1000,
            linear_fdb_top: 4,
            default_mcast_primary_port: 0xff,
            default_mcast_not_primary_port: 0xff,
            life_time_value: 18,
            lids_per_port: 0,
            partition_enforcement_cap: 32,
            enhanced_port0: true,
            multicast_fdb_top: 0xbfff,
            ..SwitchInfo::default()
        };
        let mut b = [0u8; 20];
        s.write(&mut b);
        assert_eq!(&b[..8], &[0xc0, 0, 0, 0, 0x10, 0, 0, 4]);
        assert_eq!((b[11], b[16]), (18 << 3, 0x08));
        assert_eq!(SwitchInfo::read(&b), s);
    }
}
