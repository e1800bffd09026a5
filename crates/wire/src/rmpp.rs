//! The RMPP header (IBTA 13.6.2), 12 bytes after the MAD common header of
//! the classes that may span several MADs (SA, vendor classes): version,
//! type (DATA/ACK/STOP/ABORT), response time and flags, status, and two
//! data words (segment number; payload length or new window last).

use super::codec::{rd32, wr32, Error, Result};

/// `RMPPVersion` of IBTA RMPP.
pub const VERSION: u8 = 1;

pub const TYPE_DATA: u8 = 1;
pub const TYPE_ACK: u8 = 2;
pub const TYPE_STOP: u8 = 3;
pub const TYPE_ABORT: u8 = 4;

/// `RMPPFlags` (low 3 bits of byte 2).
pub const FLAG_ACTIVE: u8 = 0x1;
pub const FLAG_FIRST: u8 = 0x2;
pub const FLAG_LAST: u8 = 0x4;

/// `RMPPStatus` values (IBTA table 121; names as in ib_mad.h).
pub const STATUS_NORMAL: u8 = 0;
pub const STATUS_RESX: u8 = 1;
pub const STATUS_T2L: u8 = 118;
pub const STATUS_BAD_LEN: u8 = 119;
pub const STATUS_BAD_SEG: u8 = 120;
pub const STATUS_BADT: u8 = 121;
pub const STATUS_W2S: u8 = 122;
pub const STATUS_S2B: u8 = 123;
pub const STATUS_BAD_STATUS: u8 = 124;
pub const STATUS_UNV: u8 = 125;
pub const STATUS_TMR: u8 = 126;
pub const STATUS_UNSPEC: u8 = 127;

/// Bytes of RMPP payload per segment (the class header and data): 256 - 24 - 12.
pub const SEGMENT_PAYLOAD: usize = 220;

pub mod field {
    use core::ops::Range;
    pub const VERSION: usize = 0;
    pub const TYPE: usize = 1;
    /// RRespTime (5 bits) | RMPPFlags (3 bits).
    pub const RTIME_FLAGS: usize = 2;
    pub const STATUS: usize = 3;
    pub const SEG_NUM: Range<usize> = 4..8;
    /// PayloadLength (DATA) or NewWindowLast (ACK).
    pub const PAYLEN_NEWWIN: Range<usize> = 8..12;
    pub const HEADER_LEN: usize = 12;
}

fixed_view!("RMPP header");

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }
    pub fn rmpp_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    pub fn resp_time(&self) -> u8 {
        self.buffer.as_ref()[field::RTIME_FLAGS] >> 3
    }
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::RTIME_FLAGS] & 0x7
    }
    pub fn status(&self) -> u8 {
        self.buffer.as_ref()[field::STATUS]
    }
    pub fn seg_num(&self) -> u32 {
        rd32(self.buffer.as_ref(), field::SEG_NUM.start)
    }
    pub fn paylen_newwin(&self) -> u32 {
        rd32(self.buffer.as_ref(), field::PAYLEN_NEWWIN.start)
    }
}

/// The RMPP header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub version: u8,
    pub rmpp_type: u8,
    /// RRespTime, 5 bits.
    pub resp_time: u8,
    /// RMPPFlags, 3 bits ([`FLAG_ACTIVE`] | [`FLAG_FIRST`] | [`FLAG_LAST`]).
    pub flags: u8,
    pub status: u8,
    pub seg_num: u32,
    /// PayloadLength in DATA, NewWindowLast in ACK.
    pub paylen_newwin: u32,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            version: p.version(),
            rmpp_type: p.rmpp_type(),
            resp_time: p.resp_time(),
            flags: p.flags(),
            status: p.status(),
            seg_num: p.seg_num(),
            paylen_newwin: p.paylen_newwin(),
        })
    }

    /// Like [`Repr::parse`], and an active header must be version 1 with a
    /// known type (what ib_mad checks before it runs its RMPP state machine).
    pub fn parse_strict<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        let r = Repr::parse(p)?;
        if r.is_active() && (r.version != VERSION || !(TYPE_DATA..=TYPE_ABORT).contains(&r.rmpp_type)) {
            return Err(Error::Malformed("RMPP header"));
        }
        Ok(r)
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        b[field::VERSION] = self.version;
        b[field::TYPE] = self.rmpp_type;
        b[field::RTIME_FLAGS] = (self.resp_time << 3) | (self.flags & 0x7);
        b[field::STATUS] = self.status;
        wr32(b, field::SEG_NUM.start, self.seg_num);
        wr32(b, field::PAYLEN_NEWWIN.start, self.paylen_newwin);
    }

    pub fn is_active(&self) -> bool {
        self.flags & FLAG_ACTIVE != 0
    }

    /// A DATA segment `seg` (1-based) of `count`, as ib_mad's sender fills
    /// it: PayloadLength is the whole transfer's in the first segment, the
    /// last segment's own in the last, 0 in between; `pad` is the unused
    /// bytes of the last segment.
    pub fn data(seg: u32, count: u32, pad: u32) -> Repr {
        let seg_payload = SEGMENT_PAYLOAD as u32;
        let mut flags = FLAG_ACTIVE;
        let mut paylen = 0;
        if seg == 1 {
            flags |= FLAG_FIRST;
            paylen = count * seg_payload - pad;
        }
        if seg == count {
            flags |= FLAG_LAST;
            paylen = seg_payload - pad;
        }
        Repr {
            version: VERSION,
            rmpp_type: TYPE_DATA,
            resp_time: 0,
            flags,
            status: 0,
            seg_num: seg,
            paylen_newwin: paylen,
        }
    }

    /// An ACK of segment `seg` opening the window up to `newwin`.
    pub fn ack(seg: u32, newwin: u32) -> Repr {
        Repr {
            version: VERSION,
            rmpp_type: TYPE_ACK,
            resp_time: 0,
            flags: FLAG_ACTIVE,
            status: 0,
            seg_num: seg,
            paylen_newwin: newwin,
        }
    }

    /// An ABORT with `status` (one of the `STATUS_*` codes of 118..127).
    pub fn abort(status: u8) -> Repr {
        Repr {
            version: VERSION,
            rmpp_type: TYPE_ABORT,
            resp_time: 0,
            flags: FLAG_ACTIVE,
            status,
            seg_num: 0,
            paylen_newwin: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_segments_carry_the_lengths_ib_mad_expects() {
        // Three segments of SA data: 56 + 3 * 200 - pad bytes once reassembled
        // (mad_rmpp.c get_mad_len), here 450 bytes of records: pad 150.
        let first = Repr::data(1, 3, 150);
        assert_eq!(first.flags, FLAG_ACTIVE | FLAG_FIRST);
        assert_eq!(first.paylen_newwin, 3 * 220 - 150);
        assert_eq!(Repr::data(2, 3, 150).paylen_newwin, 0);
        let last = Repr::data(3, 3, 150);
        assert_eq!(last.flags, FLAG_ACTIVE | FLAG_LAST);
        assert_eq!(last.paylen_newwin, 220 - 150);
        let only = Repr::data(1, 1, 200);
        assert_eq!(only.flags, FLAG_ACTIVE | FLAG_FIRST | FLAG_LAST);
        assert_eq!(only.paylen_newwin, 20, "an empty table: the SA header alone");
    }

    #[test]
    fn bytes_of_an_ack() {
        // ACK of segment 1 with NewWindowLast 65, as the kernel receiver sends
        // it with a 512-deep receive queue (window 512 >> 3 = 64).
        let b = [1u8, 2, 1, 0, 0, 0, 0, 1, 0, 0, 0, 65];
        let r = Repr::parse_strict(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r, Repr::ack(1, 65));
        let mut out = [0u8; 12];
        r.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
        let mut bad = b;
        bad[1] = 9;
        assert!(Repr::parse_strict(&Packet::new_checked(&bad[..]).unwrap()).is_err());
        let mut inactive = bad;
        inactive[2] = 0;
        assert!(Repr::parse_strict(&Packet::new_checked(&inactive[..]).unwrap()).is_ok(), "inactive: not checked");
        assert_eq!(Packet::new_unchecked(&[0xabu8; 12][..]).resp_time(), 0xab >> 3);
    }
}
