//! The Subnet Administration class header (IBTA 15.2.1.1), 20 bytes after
//! the RMPP header: SM_Key, AttributeOffset (a record's stride in 8-byte
//! words, for GetTable) and ComponentMask (which record fields a query
//! sets). Also the SA's attribute IDs and its class-specific status codes.
//! A SA MAD is: common header (24) | RMPP (12) | SA header (20) | data (200).

use super::codec::{rd16, rd64, wr16, wr64, Result};

/// `ClassVersion` of the SA class.
pub const CLASS_VERSION: u8 = 2;
/// Offset of the SA data (records) in the MAD: `IB_MGMT_SA_HDR`.
pub const DATA_OFFSET: usize = 56;
/// Bytes of records one SA MAD carries.
pub const DATA_LEN: usize = 200;

pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
pub const ATTR_NOTICE: u16 = 0x0002;
pub const ATTR_INFORM_INFO: u16 = 0x0003;
pub const ATTR_NODE_RECORD: u16 = 0x0011;
pub const ATTR_PORT_INFO_RECORD: u16 = 0x0012;
pub const ATTR_SERVICE_RECORD: u16 = 0x0031;
pub const ATTR_PATH_RECORD: u16 = 0x0035;
pub const ATTR_MCMEMBER_RECORD: u16 = 0x0038;
pub const ATTR_MULTI_PATH_RECORD: u16 = 0x003a;
pub const ATTR_INFORM_INFO_RECORD: u16 = 0x00f3;

/// SA status codes (IBTA 15.2.1.1, table 194: the class-specific bits 8..14
/// of the MAD `Status`).
pub const STATUS_ERR_NO_RESOURCES: u16 = 0x0100;
pub const STATUS_ERR_REQ_INVALID: u16 = 0x0200;
pub const STATUS_ERR_NO_RECORDS: u16 = 0x0300;
pub const STATUS_ERR_TOO_MANY_RECORDS: u16 = 0x0400;
pub const STATUS_ERR_REQ_INVALID_GID: u16 = 0x0500;
pub const STATUS_ERR_REQ_INSUFFICIENT_COMPONENTS: u16 = 0x0600;
pub const STATUS_ERR_REQ_DENIED: u16 = 0x0700;

/// Bit `n` of a ComponentMask.
pub const fn comp(n: u32) -> u64 {
    1u64 << n
}

pub mod field {
    use core::ops::Range;
    pub const SM_KEY: Range<usize> = 0..8;
    pub const ATTR_OFFSET: Range<usize> = 8..10;
    pub const RESV: Range<usize> = 10..12;
    pub const COMP_MASK: Range<usize> = 12..20;
    pub const HEADER_LEN: usize = 20;
}

fixed_view!("SA header");

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn sm_key(&self) -> u64 {
        rd64(self.buffer.as_ref(), field::SM_KEY.start)
    }
    pub fn attr_offset(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::ATTR_OFFSET.start)
    }
    pub fn comp_mask(&self) -> u64 {
        rd64(self.buffer.as_ref(), field::COMP_MASK.start)
    }
}

/// The SA header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub sm_key: u64,
    /// A record's stride in 8-byte words (responses to GetTable).
    pub attr_offset: u16,
    pub comp_mask: u64,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr { sm_key: p.sm_key(), attr_offset: p.attr_offset(), comp_mask: p.comp_mask() })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        wr64(b, field::SM_KEY.start, self.sm_key);
        wr16(b, field::ATTR_OFFSET.start, self.attr_offset);
        wr16(b, field::RESV.start, 0);
        wr64(b, field::COMP_MASK.start, self.comp_mask);
    }
}

/// A record's AttributeOffset: its length rounded up to 8 bytes, in words.
pub const fn attr_offset_of(record_len: usize) -> u16 {
    record_len.div_ceil(8) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sa_header_offsets() {
        let mut b = [0u8; 20];
        let r = Repr { sm_key: 0x0102_0304_0506_0708, attr_offset: 8, comp_mask: comp(2) | comp(3) | comp(13) };
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[0..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[8..10], &[0, 8]);
        assert_eq!(&b[12..20], &[0, 0, 0, 0, 0, 0, 0x20, 0x0c], "DGID|SGID|PKEY as cma.c sets them");
        assert_eq!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
        assert_eq!(attr_offset_of(64), 8, "PathRecord");
        assert_eq!(attr_offset_of(52), 7, "MCMemberRecord, padded to 56");
        assert_eq!(attr_offset_of(108), 14, "NodeRecord, padded to 112");
        assert_eq!(24 + 12 + Repr::LEN, DATA_OFFSET);
        assert_eq!(DATA_OFFSET + DATA_LEN, super::super::mad::MAD_SIZE);
    }
}
