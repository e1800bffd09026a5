//! InformInfo (IBTA 13.4.8.3), 36 bytes: a subscription to traps/notices
//! (SubnAdmSet(InformInfo) to the SA).

use super::codec::{rd16, rd32, wr16, wr32, Result};

pub mod field {
    use core::ops::Range;
    pub const GID: Range<usize> = 0..16;
    pub const LID_RANGE_BEGIN: Range<usize> = 16..18;
    pub const LID_RANGE_END: Range<usize> = 18..20;
    pub const IS_GENERIC: usize = 22;
    pub const SUBSCRIBE: usize = 23;
    pub const TYPE: Range<usize> = 24..26;
    /// TrapNumber (generic) or DeviceID (vendor).
    pub const TRAP_NUMBER: Range<usize> = 26..28;
    /// QPN (24) | reserved (3) | RespTimeValue (5).
    pub const QPN_RESP_TIME: Range<usize> = 28..32;
    /// reserved (8) | ProducerType or VendorID (24).
    pub const PRODUCER_TYPE: Range<usize> = 32..36;
    pub const HEADER_LEN: usize = 36;
}

fixed_view!("InformInfo");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub gid: [u8; 16],
    pub lid_range_begin: u16,
    pub lid_range_end: u16,
    pub is_generic: bool,
    pub subscribe: bool,
    pub trap_type: u16,
    pub trap_number: u16,
    pub qpn: u32,
    pub resp_time_value: u8,
    pub producer_type: u32,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let q = rd32(b, field::QPN_RESP_TIME.start);
        Ok(Repr {
            gid: b[field::GID].try_into().unwrap_or_default(),
            lid_range_begin: rd16(b, field::LID_RANGE_BEGIN.start),
            lid_range_end: rd16(b, field::LID_RANGE_END.start),
            is_generic: b[field::IS_GENERIC] != 0,
            subscribe: b[field::SUBSCRIBE] != 0,
            trap_type: rd16(b, field::TYPE.start),
            trap_number: rd16(b, field::TRAP_NUMBER.start),
            qpn: q >> 8,
            resp_time_value: (q & 0x1f) as u8,
            producer_type: rd32(b, field::PRODUCER_TYPE.start) & 0xff_ffff,
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.buffer.as_mut()[..field::HEADER_LEN];
        b.fill(0);
        b[field::GID].copy_from_slice(&self.gid);
        wr16(b, field::LID_RANGE_BEGIN.start, self.lid_range_begin);
        wr16(b, field::LID_RANGE_END.start, self.lid_range_end);
        b[field::IS_GENERIC] = self.is_generic as u8;
        b[field::SUBSCRIBE] = self.subscribe as u8;
        wr16(b, field::TYPE.start, self.trap_type);
        wr16(b, field::TRAP_NUMBER.start, self.trap_number);
        wr32(b, field::QPN_RESP_TIME.start, (self.qpn & 0xff_ffff) << 8 | (self.resp_time_value & 0x1f) as u32);
        wr32(b, field::PRODUCER_TYPE.start, self.producer_type & 0xff_ffff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inform_info_layout() {
        // Subscribe to trap 64 (GID in service) for all LIDs, as an
        // ibacm/opensm-style client fills it.
        let r = Repr {
            lid_range_begin: 0xffff,
            is_generic: true,
            subscribe: true,
            trap_type: 0xffff,
            trap_number: 64,
            qpn: 1,
            resp_time_value: 18,
            producer_type: 0xffffff,
            ..Repr::default()
        };
        let mut b = [0u8; 36];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[16..20], &[0xff, 0xff, 0, 0]);
        assert_eq!(&b[22..28], &[1, 1, 0xff, 0xff, 0, 64]);
        assert_eq!(&b[28..32], &[0, 0, 1, 18]);
        assert_eq!(&b[32..36], &[0, 0xff, 0xff, 0xff]);
        assert_eq!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
    }
}
