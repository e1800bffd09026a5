//! The MAD common header (IBTA 13.4.2), 24 bytes at the start of every
//! 256-byte management datagram, and the constants every management class
//! shares: base version, methods, generic status codes, common attributes.
//! Class-specific headers follow it ([`super::rmpp`], [`super::sa`]).

use super::codec::{rd16, rd32, rd64, wr16, wr32, wr64, Result};

/// Every IB MAD (UD payload on QP0/QP1) is exactly this long.
pub const MAD_SIZE: usize = 256;
/// `BaseVersion` of an IB MAD.
pub const BASE_VERSION: u8 = 1;

pub const MGMT_CLASS_SUBN_LID_ROUTED: u8 = 0x01;
pub const MGMT_CLASS_SUBN_ADM: u8 = 0x03;
pub const MGMT_CLASS_PERF_MGMT: u8 = 0x04;
pub const MGMT_CLASS_SUBN_DIRECTED_ROUTE: u8 = 0x81;

pub const METHOD_GET: u8 = 0x01;
pub const METHOD_SET: u8 = 0x02;
pub const METHOD_SEND: u8 = 0x03;
pub const METHOD_TRAP: u8 = 0x05;
pub const METHOD_REPORT: u8 = 0x06;
pub const METHOD_GET_TABLE: u8 = 0x12;
pub const METHOD_GET_TRACE_TABLE: u8 = 0x13;
pub const METHOD_GET_MULTI: u8 = 0x14;
pub const METHOD_DELETE: u8 = 0x15;
/// The response bit: a response's method is its request's | this.
pub const METHOD_RESP: u8 = 0x80;
pub const METHOD_GET_RESP: u8 = METHOD_GET | METHOD_RESP;
pub const METHOD_GET_TABLE_RESP: u8 = METHOD_GET_TABLE | METHOD_RESP;
pub const METHOD_DELETE_RESP: u8 = METHOD_DELETE | METHOD_RESP;

/// Status (IBTA table 106, bits 0..4 of `Status`): "busy".
pub const STATUS_BUSY: u16 = 0x0001;
/// Status: bad base or class version.
pub const STATUS_BAD_VERSION: u16 = 0x0004;
/// Status: the method is not supported.
pub const STATUS_UNSUP_METHOD: u16 = 0x0008;
/// Status: method/attribute combination not supported.
pub const STATUS_UNSUP_METH_ATTR: u16 = 0x000c;
/// Status: invalid value in attribute or modifier.
pub const STATUS_INVALID_FIELD: u16 = 0x001c;

/// `ClassPortInfo`, the attribute every class answers.
pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;

/// Byte ranges of the common header.
pub mod field {
    use core::ops::Range;
    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: Range<usize> = 4..6;
    pub const CLASS_SPECIFIC: Range<usize> = 6..8;
    pub const TID: Range<usize> = 8..16;
    pub const ATTR_ID: Range<usize> = 16..18;
    pub const RESV: Range<usize> = 18..20;
    pub const ATTR_MOD: Range<usize> = 20..24;
    pub const HEADER_LEN: usize = 24;
}

fixed_view!("MAD header");

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn base_version(&self) -> u8 {
        self.buffer.as_ref()[field::BASE_VERSION]
    }
    pub fn mgmt_class(&self) -> u8 {
        self.buffer.as_ref()[field::MGMT_CLASS]
    }
    pub fn class_version(&self) -> u8 {
        self.buffer.as_ref()[field::CLASS_VERSION]
    }
    pub fn method(&self) -> u8 {
        self.buffer.as_ref()[field::METHOD]
    }
    pub fn status(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::STATUS.start)
    }
    pub fn class_specific(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::CLASS_SPECIFIC.start)
    }
    pub fn tid(&self) -> u64 {
        rd64(self.buffer.as_ref(), field::TID.start)
    }
    pub fn attr_id(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::ATTR_ID.start)
    }
    pub fn attr_mod(&self) -> u32 {
        rd32(self.buffer.as_ref(), field::ATTR_MOD.start)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_method(&mut self, v: u8) {
        self.buffer.as_mut()[field::METHOD] = v;
    }
    pub fn set_status(&mut self, v: u16) {
        wr16(self.buffer.as_mut(), field::STATUS.start, v)
    }
}

/// The common header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub base_version: u8,
    pub mgmt_class: u8,
    pub class_version: u8,
    pub method: u8,
    pub status: u16,
    pub class_specific: u16,
    pub tid: u64,
    pub attr_id: u16,
    pub attr_mod: u32,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            base_version: p.base_version(),
            mgmt_class: p.mgmt_class(),
            class_version: p.class_version(),
            method: p.method(),
            status: p.status(),
            class_specific: p.class_specific(),
            tid: p.tid(),
            attr_id: p.attr_id(),
            attr_mod: p.attr_mod(),
        })
    }

    /// Writes the header (the reserved bytes as zero); `p` must be checked.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        b[field::BASE_VERSION] = self.base_version;
        b[field::MGMT_CLASS] = self.mgmt_class;
        b[field::CLASS_VERSION] = self.class_version;
        b[field::METHOD] = self.method;
        wr16(b, field::STATUS.start, self.status);
        wr16(b, field::CLASS_SPECIFIC.start, self.class_specific);
        wr64(b, field::TID.start, self.tid);
        wr16(b, field::ATTR_ID.start, self.attr_id);
        wr16(b, field::RESV.start, 0);
        wr32(b, field::ATTR_MOD.start, self.attr_mod);
    }

    /// Whether the method is a response (GetResp, GetTableResp, …).
    pub fn is_response(&self) -> bool {
        self.method & METHOD_RESP != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_at_ibta_offsets() {
        // A SubnAdmGet(PathRecord) header as ib_sa sends it (TID in the
        // kernel's agent-id-high/counter-low format).
        let bytes: [u8; 24] = [
            0x01, 0x03, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x12, 0x34, 0x00, 0x35,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        let r = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.mgmt_class, MGMT_CLASS_SUBN_ADM);
        assert_eq!(r.class_version, 2);
        assert_eq!(r.method, METHOD_GET);
        assert_eq!(r.tid, 0x0000_0007_0000_1234);
        assert_eq!(r.attr_id, 0x0035);
        assert!(!r.is_response());
        let mut out = [0xffu8; 24];
        r.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes);
        assert!(Packet::new_checked(&bytes[..23]).is_err());
    }
}
