//! SMInfo (IBTA 14.2.5.13), the 21 bytes of an SMP's data (attribute 0x0020)
//! an SM answers about itself: its port GUID, SM_Key, activity count,
//! priority and state. `sminfo` asks the master SM with it; a standby SM
//! polls the master with it (SMInfo Get) and hands over with SMInfo Set
//! (AttributeModifier = the [`control`] code). Also the LID-routed SMP
//! around it ([`smp`], [`parse_smp`]; IBTA 14.2.1.1, the SMP's layout is
//! `wire::smp`'s). Linux: `struct ib_sm_info` (ib_smi.h), infiniband-diags
//! `sminfo`.

use super::codec::{rd32, rd64, wr32, wr64, Error, Result};
use super::mad::{self, MGMT_CLASS_SUBN_LID_ROUTED};
use super::smp::{self as smp_wire, SMP_LEN};

/// The SMInfo attribute ID.
pub const ATTR_SM_INFO: u16 = 0x0020;
/// The SMP class version.
pub const SMP_CLASS_VERSION: u8 = 1;

/// SMState (4 bits; IBTA 14.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SmState {
    #[default]
    NotActive = 0,
    Discovering = 1,
    Standby = 2,
    Master = 3,
}

impl SmState {
    /// The state of SMState's 4 bits; `None` for the values IBTA does not define.
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

/// SMInfo Set's AttributeModifier (IBTA table 152, the control packets of
/// 14.4.2): what the requesting SM asks of the one it sets.
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
    /// Priority (high nibble) | SMState (low nibble).
    pub const PRIORITY_STATE: usize = 20;
    pub const HEADER_LEN: usize = 21;
}

fixed_view!("SMInfo");

/// SMInfo's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub guid: u64,
    pub sm_key: u64,
    pub act_count: u32,
    /// 4 bits (0..=15).
    pub priority: u8,
    pub sm_state: SmState,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    /// Reads the attribute; an error if short or the SMState is not one of IBTA's.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let ps = b[field::PRIORITY_STATE];
        Ok(Repr {
            guid: rd64(b, field::GUID.start),
            sm_key: rd64(b, field::SM_KEY.start),
            act_count: rd32(b, field::ACT_COUNT.start),
            priority: ps >> 4,
            sm_state: SmState::from_bits(ps & 0xf).ok_or(Error::Malformed("SMInfo SMState"))?,
        })
    }

    /// Writes the 21 bytes (a priority above 15 as 15); `p` must be checked.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        wr64(b, field::GUID.start, self.guid);
        wr64(b, field::SM_KEY.start, self.sm_key);
        wr32(b, field::ACT_COUNT.start, self.act_count);
        b[field::PRIORITY_STATE] = self.priority.min(15) << 4 | self.sm_state as u8;
    }
}

/// A LID-routed SMInfo SMP: `method` (Get, Set, GetResp), `tid`, the
/// attribute modifier, and the attribute (a Get carries zeros).
pub fn smp(method: u8, tid: u64, attr_mod: u32, info: Option<&Repr>) -> Vec<u8> {
    let mut m = vec![0u8; SMP_LEN];
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
        let mut s = smp_wire::Packet::new_unchecked(&mut m[..]);
        i.emit(&mut Packet::new_unchecked(s.data_mut()));
    }
    m
}

/// The header and attribute of a LID-routed SMInfo SMP (the attribute
/// `None` if its SMState is not IBTA's); `None` for any other MAD or one
/// that is not a whole SMP.
pub fn parse_smp(m: &[u8]) -> Option<(mad::Repr, Option<Repr>)> {
    let s = smp_wire::check(m).ok()?;
    let hdr = mad::Repr::parse(&mad::Packet::new_checked(m).ok()?).ok()?;
    if hdr.mgmt_class != MGMT_CLASS_SUBN_LID_ROUTED || hdr.attr_id != ATTR_SM_INFO {
        return None;
    }
    Some((hdr, Packet::new_checked(s.data()).and_then(|p| Repr::parse(&p)).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mad::{METHOD_GET, METHOD_GET_RESP};

    #[test]
    fn sminfo_at_ibta_offsets() {
        // A master SM of priority 14, as OpenSM answers it (ib_types.h
        // ib_sm_info_t: guid, sm_key, act_count, pri_state).
        let mut bytes = [0u8; 21];
        bytes[..8].copy_from_slice(&0x0002_c903_00a0_0101u64.to_be_bytes());
        bytes[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
        bytes[16..20].copy_from_slice(&0x0000_0102u32.to_be_bytes());
        bytes[20] = 0xe3;
        let r = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.guid, 0x0002_c903_00a0_0101);
        assert_eq!(r.sm_key, 0x1122_3344_5566_7788);
        assert_eq!(r.act_count, 0x102);
        assert_eq!((r.priority, r.sm_state), (14, SmState::Master));
        let mut out = [0xaau8; 21];
        r.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes);
        assert!(Packet::new_checked(&bytes[..20]).is_err());
    }

    #[test]
    fn sminfo_smp_at_ibta_offsets() {
        let i = Repr {
            guid: 0x0002_c903_00a0_0201,
            sm_key: 0,
            act_count: 0x0102_0304,
            priority: 5,
            sm_state: SmState::Master,
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
