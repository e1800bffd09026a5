//! SMInfo (IBTA 14.2.5.13), the 21 bytes of an SMP's data (attribute 0x0020)
//! an SM answers about itself: its port GUID, SM_Key, activity count,
//! priority and state. `sminfo` asks the master SM with it; a standby SM
//! polls the master with it (SMInfo Get) and hands over with SMInfo Set
//! (AttributeModifier = the [`control`] code).

use super::codec::{rd32, rd64, wr32, wr64, Result};

/// The SMInfo attribute ID.
pub const ATTR_SM_INFO: u16 = 0x0020;

/// SMState (4 bits).
pub mod state {
    pub const NOT_ACTIVE: u8 = 0;
    pub const DISCOVERING: u8 = 1;
    pub const STANDBY: u8 = 2;
    pub const MASTER: u8 = 3;
}

/// SMInfo Set's AttributeModifier (IBTA table 152): what the requesting SM
/// asks of the one it sets.
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
    /// 4 bits.
    pub priority: u8,
    /// 4 bits: [`state`].
    pub sm_state: u8,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let ps = b[field::PRIORITY_STATE];
        Ok(Repr {
            guid: rd64(b, field::GUID.start),
            sm_key: rd64(b, field::SM_KEY.start),
            act_count: rd32(b, field::ACT_COUNT.start),
            priority: ps >> 4,
            sm_state: ps & 0xf,
        })
    }

    /// Writes the 21 bytes; `p` must be checked.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        wr64(b, field::GUID.start, self.guid);
        wr64(b, field::SM_KEY.start, self.sm_key);
        wr32(b, field::ACT_COUNT.start, self.act_count);
        b[field::PRIORITY_STATE] = (self.priority & 0xf) << 4 | (self.sm_state & 0xf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!((r.priority, r.sm_state), (14, state::MASTER));
        let mut out = [0xaau8; 21];
        r.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes);
        assert!(Packet::new_checked(&bytes[..20]).is_err());
    }
}
