//! ClassPortInfo (IBTA 13.4.8.1), 72 bytes: a management class's versions,
//! capabilities and response time. vrnic's agents never redirect and send no
//! traps, so the redirect/trap fields are written as zero.

use super::codec::{rd16, rd32, wr16, wr32, Result};

/// SA CapabilityMask2 bit: SendOnlyFullMember joins supported
/// (`IB_SA_CAP_MASK2_SENDONLY_FULL_MEM_SUPPORT`, which ipoib checks).
pub const SA_CAP_MASK2_SENDONLY_FULL_MEM: u32 = 1 << 12;
/// SA CapabilityMask: IsMulticastSupported (bit 9 of the SA's ClassPortInfo).
pub const SA_CAP_MULTICAST: u16 = 1 << 9;

pub mod field {
    use core::ops::Range;
    pub const BASE_VERSION: usize = 0;
    pub const CLASS_VERSION: usize = 1;
    pub const CAP_MASK: Range<usize> = 2..4;
    /// CapabilityMask2 (27) | RespTimeValue (5).
    pub const CAP_MASK2_RESP_TIME: Range<usize> = 4..8;
    pub const HEADER_LEN: usize = 72;
}

fixed_view!("ClassPortInfo");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub base_version: u8,
    pub class_version: u8,
    pub cap_mask: u16,
    pub cap_mask2: u32,
    pub resp_time_value: u8,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let c2 = rd32(b, field::CAP_MASK2_RESP_TIME.start);
        Ok(Repr {
            base_version: b[field::BASE_VERSION],
            class_version: b[field::CLASS_VERSION],
            cap_mask: rd16(b, field::CAP_MASK.start),
            cap_mask2: c2 >> 5,
            resp_time_value: (c2 & 0x1f) as u8,
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.buffer.as_mut()[..field::HEADER_LEN];
        b.fill(0);
        b[field::BASE_VERSION] = self.base_version;
        b[field::CLASS_VERSION] = self.class_version;
        wr16(b, field::CAP_MASK.start, self.cap_mask);
        wr32(
            b,
            field::CAP_MASK2_RESP_TIME.start,
            (self.cap_mask2 & 0x7ff_ffff) << 5 | (self.resp_time_value & 0x1f) as u32,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_mask2_and_resp_time_share_a_word() {
        let r = Repr {
            base_version: 1,
            class_version: 2,
            cap_mask: SA_CAP_MULTICAST,
            cap_mask2: SA_CAP_MASK2_SENDONLY_FULL_MEM,
            resp_time_value: 18,
        };
        let mut b = [0xffu8; 72];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        // sa_query.c: be32_to_cpu(cap_mask2_resp_time) >> 5 & SENDONLY bit.
        assert_eq!(u32::from_be_bytes(b[4..8].try_into().unwrap()) >> 5, 1 << 12);
        assert_eq!(&b[0..4], &[1, 2, 0x02, 0x00]);
        assert!(b[8..].iter().all(|&x| x == 0));
        assert_eq!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
    }
}
