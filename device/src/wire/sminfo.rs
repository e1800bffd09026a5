//! SMInfo (IBTA 14.2.5.13), the 21 bytes an SM answers about itself, and the
//! LID-routed SMP around it (IBTA 14.2.1.1: MAD header, M_Key, 32 reserved
//! bytes, 64 bytes of SMP data at offset 64, 128 reserved). Linux:
//! `struct ib_sm_info` (ib_smi.h), infiniband-diags `sminfo`.

use super::codec::{rd32, rd64, wr32, wr64};
use super::mad::{self, MAD_SIZE, MGMT_CLASS_SUBN_LID_ROUTED};

/// SMInfo's attribute ID.
pub const ATTR_SM_INFO: u16 = 0x0020;
/// Where an SMP's data starts (after the MAD header, M_Key and 32 reserved bytes).
pub const SMP_DATA_OFFSET: usize = 64;
/// The SMP class version.
pub const SMP_CLASS_VERSION: u8 = 1;

/// SMState (IBTA 14.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SmState {
    NotActive = 0,
    Discovering = 1,
    Standby = 2,
    Master = 3,
}

impl SmState {
    pub fn from_bits(v: u8) -> Option<SmState> {
        Some(match v {
            0 => SmState::NotActive,
            1 => SmState::Discovering,
            2 => SmState::Standby,
            3 => SmState::Master,
            _ => return None,
        })
    }
}

/// SMInfo's attribute modifier on a Set: the control packets of IBTA 14.4.2.
pub mod control {
    pub const HANDOVER: u32 = 1;
    pub const ACKNOWLEDGE: u32 = 2;
    pub const DISABLE: u32 = 3;
    pub const STANDBY: u32 = 4;
    pub const DISCOVER: u32 = 5;
}

pub mod field {
    use core::ops::Range;
    pub const GUID: Range<usize> = 0..8;
    pub const SM_KEY: Range<usize> = 8..16;
    pub const ACT_COUNT: Range<usize> = 16..20;
    /// Priority (bits 7:4), SMState (bits 3:0).
    pub const PRI_STATE: usize = 20;
    pub const LEN: usize = 21;
}

/// The SMInfo attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmInfo {
    pub guid: u64,
    pub sm_key: u64,
    pub act_count: u32,
    /// 0..=15.
    pub priority: u8,
    pub state: SmState,
}

impl SmInfo {
    /// Reads the attribute from an SMP's data; `None` if short or the state is not one of IBTA's.
    pub fn parse(b: &[u8]) -> Option<SmInfo> {
        if b.len() < field::LEN {
            return None;
        }
        let ps = b[field::PRI_STATE];
        Some(SmInfo {
            guid: rd64(b, field::GUID.start),
            sm_key: rd64(b, field::SM_KEY.start),
            act_count: rd32(b, field::ACT_COUNT.start),
            priority: ps >> 4,
            state: SmState::from_bits(ps & 0xf)?,
        })
    }

    /// Writes the attribute into `b` (at least [`field::LEN`] bytes).
    pub fn write(&self, b: &mut [u8]) {
        wr64(b, field::GUID.start, self.guid);
        wr64(b, field::SM_KEY.start, self.sm_key);
        wr32(b, field::ACT_COUNT.start, self.act_count);
        b[field::PRI_STATE] = (self.priority.min(15) << 4) | self.state as u8;
    }
}

/// A LID-routed SMInfo SMP: `method` (Get, Set, GetResp), `tid`, the
/// attribute modifier, and the attribute (a Get carries zeros).
pub fn smp(method: u8, tid: u64, attr_mod: u32, info: Option<&SmInfo>) -> Vec<u8> {
    let mut m = vec![0u8; MAD_SIZE];
    let hdr = mad::Repr {
        base_version: mad::BASE_VERSION,
        mgmt_class: MGMT_CLASS_SUBN_LID_ROUTED,
        class_version: SMP_CLASS_VERSION,
        method,
        tid,
        attr_id: ATTR_SM_INFO,
        attr_mod,
        ..mad::Repr::default()
    };
    hdr.emit(&mut mad::Packet::new_unchecked(&mut m[..]));
    if let Some(i) = info {
        i.write(&mut m[SMP_DATA_OFFSET..]);
    }
    m
}

/// The header and attribute of a LID-routed SMInfo SMP; `None` for any other MAD or a short one.
pub fn parse_smp(m: &[u8]) -> Option<(mad::Repr, Option<SmInfo>)> {
    if m.len() != MAD_SIZE {
        return None;
    }
    let hdr = mad::Repr::parse(&mad::Packet::new_checked(m).ok()?).ok()?;
    if hdr.mgmt_class != MGMT_CLASS_SUBN_LID_ROUTED || hdr.attr_id != ATTR_SM_INFO {
        return None;
    }
    Some((hdr, SmInfo::parse(&m[SMP_DATA_OFFSET..])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::mad::{METHOD_GET, METHOD_GET_RESP};

    #[test]
    fn sminfo_at_ibta_offsets() {
        let i = SmInfo {
            guid: 0x0002_c903_00a0_0201,
            sm_key: 0,
            act_count: 0x0102_0304,
            priority: 5,
            state: SmState::Master,
        };
        let m = smp(METHOD_GET_RESP, 0xabcd, 0, Some(&i));
        assert_eq!((m[0], m[1], m[2], m[3]), (1, 0x01, 1, METHOD_GET_RESP));
        assert_eq!(&m[16..18], &[0x00, 0x20], "attribute SMInfo");
        assert_eq!(&m[64..72], &0x0002_c903_00a0_0201u64.to_be_bytes(), "GUID");
        assert_eq!(&m[80..84], &[1, 2, 3, 4], "ActCount");
        assert_eq!(m[84], 0x53, "priority 5, state MASTER");
        let (h, back) = parse_smp(&m).unwrap();
        assert_eq!((h.tid, h.method), (0xabcd, METHOD_GET_RESP));
        assert_eq!(back, Some(i));
    }

    #[test]
    fn other_mads_and_bad_states_are_not_sminfo() {
        let mut m = smp(METHOD_GET, 1, 0, None);
        assert!(parse_smp(&m[..255]).is_none());
        m[84] = 0x07; // SMState 7: not IBTA's
        assert_eq!(parse_smp(&m).unwrap().1, None);
        m[17] = 0x11; // NodeInfo
        assert!(parse_smp(&m).is_none());
    }
}
