//! Extended transport headers (IBTA 9.3): RETH, AETH, DETH, ImmDt, IETH,
//! AtomicETH, AtomicAckETH, and the CNP body. Each is a module with a
//! `field` module, a `Packet<T>` view and a `Repr`.

/// RDMA Extended Transport Header: VA, R_Key, DMA length.
pub mod reth {
    use crate::codec::{rd32, rd64, wr32, wr64, Result};
    pub mod field {
        use core::ops::Range;
        pub const VA: Range<usize> = 0..8;
        pub const RKEY: Range<usize> = 8..12;
        pub const DMA_LEN: Range<usize> = 12..16;
        pub const HEADER_LEN: usize = 16;
    }
    fixed_view!("RETH");
    impl<T: AsRef<[u8]>> Packet<T> {
        pub fn va(&self) -> u64 {
            rd64(self.buffer.as_ref(), field::VA.start)
        }
        pub fn rkey(&self) -> u32 {
            rd32(self.buffer.as_ref(), field::RKEY.start)
        }
        pub fn dma_len(&self) -> u32 {
            rd32(self.buffer.as_ref(), field::DMA_LEN.start)
        }
    }
    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        pub fn set_va(&mut self, v: u64) {
            wr64(self.buffer.as_mut(), field::VA.start, v)
        }
        pub fn set_rkey(&mut self, v: u32) {
            wr32(self.buffer.as_mut(), field::RKEY.start, v)
        }
        pub fn set_dma_len(&mut self, v: u32) {
            wr32(self.buffer.as_mut(), field::DMA_LEN.start, v)
        }
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Repr {
        pub va: u64,
        pub rkey: u32,
        pub dma_len: u32,
    }
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr { va: p.va(), rkey: p.rkey(), dma_len: p.dma_len() })
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_va(self.va);
            p.set_rkey(self.rkey);
            p.set_dma_len(self.dma_len);
        }
    }
}

/// ACK Extended Transport Header: syndrome and MSN.
pub mod aeth {
    use crate::codec::{rd24, wr24, Error, Result};
    pub mod field {
        pub const SYNDROME: usize = 0;
        pub const MSN: core::ops::Range<usize> = 1..4;
        pub const HEADER_LEN: usize = 4;
    }
    fixed_view!("AETH");
    impl<T: AsRef<[u8]>> Packet<T> {
        pub fn syndrome(&self) -> u8 {
            self.buffer.as_ref()[field::SYNDROME]
        }
        pub fn msn(&self) -> u32 {
            rd24(self.buffer.as_ref(), field::MSN.start)
        }
    }
    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        pub fn set_syndrome(&mut self, v: u8) {
            self.buffer.as_mut()[field::SYNDROME] = v;
        }
        pub fn set_msn(&mut self, v: u32) {
            wr24(self.buffer.as_mut(), field::MSN.start, v)
        }
    }

    /// NAK codes (syndrome 0x60 | code).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum NakCode {
        PsnSequenceError,
        InvalidRequest,
        RemoteAccessError,
        RemoteOperationalError,
        InvalidRdRequest,
    }

    impl NakCode {
        pub fn code(self) -> u8 {
            match self {
                NakCode::PsnSequenceError => 0,
                NakCode::InvalidRequest => 1,
                NakCode::RemoteAccessError => 2,
                NakCode::RemoteOperationalError => 3,
                NakCode::InvalidRdRequest => 4,
            }
        }
    }

    /// The meaning of a syndrome.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Syndrome {
        /// ACK with a credit count (0x1f: unlimited).
        Ack {
            credits: u8,
        },
        /// Receiver not ready, with a timer code (0..=31, see the RNR table).
        RnrNak {
            timer: u8,
        },
        Nak(NakCode),
    }

    pub const CREDITS_UNLIMITED: u8 = 0x1f;

    impl Syndrome {
        pub fn from_byte(b: u8) -> Result<Syndrome> {
            match b >> 5 {
                0 => Ok(Syndrome::Ack { credits: b & 0x1f }),
                1 => Ok(Syndrome::RnrNak { timer: b & 0x1f }),
                3 => match b & 0x1f {
                    0 => Ok(Syndrome::Nak(NakCode::PsnSequenceError)),
                    1 => Ok(Syndrome::Nak(NakCode::InvalidRequest)),
                    2 => Ok(Syndrome::Nak(NakCode::RemoteAccessError)),
                    3 => Ok(Syndrome::Nak(NakCode::RemoteOperationalError)),
                    4 => Ok(Syndrome::Nak(NakCode::InvalidRdRequest)),
                    _ => Err(Error::Malformed("AETH NAK code")),
                },
                _ => Err(Error::Malformed("AETH syndrome")),
            }
        }
        pub fn to_byte(self) -> u8 {
            match self {
                Syndrome::Ack { credits } => credits & 0x1f,
                Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
                Syndrome::Nak(c) => 0x60 | c.code(),
            }
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Repr {
        pub syndrome: Syndrome,
        pub msn: u32,
    }
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr { syndrome: Syndrome::from_byte(p.syndrome())?, msn: p.msn() })
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_syndrome(self.syndrome.to_byte());
            p.set_msn(self.msn);
        }
    }
}

/// Datagram Extended Transport Header: Q_Key and source QP.
pub mod deth {
    use crate::codec::{rd24, rd32, wr24, wr32, Result};
    pub mod field {
        use core::ops::Range;
        pub const QKEY: Range<usize> = 0..4;
        pub const RESERVED: usize = 4;
        pub const SRC_QP: Range<usize> = 5..8;
        pub const HEADER_LEN: usize = 8;
    }
    /// The Q_Key of the general services interface (QP1).
    pub const GSI_QKEY: u32 = 0x8001_0000;
    fixed_view!("DETH");
    impl<T: AsRef<[u8]>> Packet<T> {
        pub fn qkey(&self) -> u32 {
            rd32(self.buffer.as_ref(), field::QKEY.start)
        }
        pub fn src_qp(&self) -> u32 {
            rd24(self.buffer.as_ref(), field::SRC_QP.start)
        }
    }
    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        pub fn set_qkey(&mut self, v: u32) {
            wr32(self.buffer.as_mut(), field::QKEY.start, v)
        }
        pub fn set_src_qp(&mut self, v: u32) {
            self.buffer.as_mut()[field::RESERVED] = 0;
            wr24(self.buffer.as_mut(), field::SRC_QP.start, v)
        }
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Repr {
        pub qkey: u32,
        pub src_qp: u32,
    }
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr { qkey: p.qkey(), src_qp: p.src_qp() })
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_qkey(self.qkey);
            p.set_src_qp(self.src_qp);
        }
    }
}

/// Immediate data (4 opaque bytes, kept in network order).
pub mod immdt {
    use crate::codec::Result;
    pub mod field {
        pub const IMM: core::ops::Range<usize> = 0..4;
        pub const HEADER_LEN: usize = 4;
    }
    fixed_view!("ImmDt");
    impl<T: AsRef<[u8]>> Packet<T> {
        pub fn imm(&self) -> [u8; 4] {
            let b = self.buffer.as_ref();
            [b[0], b[1], b[2], b[3]]
        }
    }
    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        pub fn set_imm(&mut self, v: [u8; 4]) {
            self.buffer.as_mut()[field::IMM].copy_from_slice(&v)
        }
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Repr {
        /// The bytes as they travel (network order).
        pub imm: [u8; 4],
    }
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr { imm: p.imm() })
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_imm(self.imm)
        }
    }
}

/// Invalidate Extended Transport Header: the R_Key to invalidate.
pub mod ieth {
    use crate::codec::{rd32, wr32, Result};
    pub mod field {
        pub const RKEY: core::ops::Range<usize> = 0..4;
        pub const HEADER_LEN: usize = 4;
    }
    fixed_view!("IETH");
    impl<T: AsRef<[u8]>> Packet<T> {
        pub fn rkey(&self) -> u32 {
            rd32(self.buffer.as_ref(), field::RKEY.start)
        }
    }
    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        pub fn set_rkey(&mut self, v: u32) {
            wr32(self.buffer.as_mut(), field::RKEY.start, v)
        }
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Repr {
        pub rkey: u32,
    }
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr { rkey: p.rkey() })
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_rkey(self.rkey)
        }
    }
}

/// XRC Extended Transport Header (IBTA 9.3.6): the XRC SRQ a request of an
/// XRC initiator is for (24 bits; the top byte is reserved).
pub mod xrceth {
    use crate::codec::{rd32, wr32, Result};
    pub mod field {
        pub const XRC_SRQ: core::ops::Range<usize> = 0..4;
        pub const HEADER_LEN: usize = 4;
    }
    fixed_view!("XRCETH");
    impl<T: AsRef<[u8]>> Packet<T> {
        pub fn xrc_srq(&self) -> u32 {
            rd32(self.buffer.as_ref(), field::XRC_SRQ.start) & 0x00ff_ffff
        }
    }
    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        pub fn set_xrc_srq(&mut self, v: u32) {
            wr32(self.buffer.as_mut(), field::XRC_SRQ.start, v & 0x00ff_ffff)
        }
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Repr {
        pub xrc_srq: u32,
    }
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr { xrc_srq: p.xrc_srq() })
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_xrc_srq(self.xrc_srq)
        }
    }
}

/// Atomic Extended Transport Header: VA, R_Key, swap (or add) and compare data.
pub mod atomic_eth {
    use crate::codec::{rd32, rd64, wr32, wr64, Result};
    pub mod field {
        use core::ops::Range;
        pub const VA: Range<usize> = 0..8;
        pub const RKEY: Range<usize> = 8..12;
        pub const SWAP_ADD: Range<usize> = 12..20;
        pub const COMPARE: Range<usize> = 20..28;
        pub const HEADER_LEN: usize = 28;
    }
    fixed_view!("AtomicETH");
    impl<T: AsRef<[u8]>> Packet<T> {
        pub fn va(&self) -> u64 {
            rd64(self.buffer.as_ref(), field::VA.start)
        }
        pub fn rkey(&self) -> u32 {
            rd32(self.buffer.as_ref(), field::RKEY.start)
        }
        pub fn swap_add(&self) -> u64 {
            rd64(self.buffer.as_ref(), field::SWAP_ADD.start)
        }
        pub fn compare(&self) -> u64 {
            rd64(self.buffer.as_ref(), field::COMPARE.start)
        }
    }
    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        pub fn set_va(&mut self, v: u64) {
            wr64(self.buffer.as_mut(), field::VA.start, v)
        }
        pub fn set_rkey(&mut self, v: u32) {
            wr32(self.buffer.as_mut(), field::RKEY.start, v)
        }
        pub fn set_swap_add(&mut self, v: u64) {
            wr64(self.buffer.as_mut(), field::SWAP_ADD.start, v)
        }
        pub fn set_compare(&mut self, v: u64) {
            wr64(self.buffer.as_mut(), field::COMPARE.start, v)
        }
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Repr {
        pub va: u64,
        pub rkey: u32,
        pub swap_add: u64,
        pub compare: u64,
    }
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr { va: p.va(), rkey: p.rkey(), swap_add: p.swap_add(), compare: p.compare() })
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_va(self.va);
            p.set_rkey(self.rkey);
            p.set_swap_add(self.swap_add);
            p.set_compare(self.compare);
        }
    }
}

/// Atomic ACK Extended Transport Header: the original remote value.
pub mod atomic_ack_eth {
    use crate::codec::{rd64, wr64, Result};
    pub mod field {
        pub const ORIG: core::ops::Range<usize> = 0..8;
        pub const HEADER_LEN: usize = 8;
    }
    fixed_view!("AtomicAckETH");
    impl<T: AsRef<[u8]>> Packet<T> {
        pub fn orig(&self) -> u64 {
            rd64(self.buffer.as_ref(), field::ORIG.start)
        }
    }
    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        pub fn set_orig(&mut self, v: u64) {
            wr64(self.buffer.as_mut(), field::ORIG.start, v)
        }
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Repr {
        pub orig: u64,
    }
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr { orig: p.orig() })
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_orig(self.orig)
        }
    }
}

/// The congestion notification packet's body after the BTH: 16 reserved bytes.
pub mod cnp {
    use crate::codec::{Error, Result};
    pub mod field {
        pub const RESERVED: core::ops::Range<usize> = 0..16;
        pub const HEADER_LEN: usize = 16;
    }
    fixed_view!("CNP");
    /// A CNP notifies `dest_qp` (in the BTH); its body carries nothing.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Repr;
    impl Repr {
        pub const LEN: usize = field::HEADER_LEN;
        /// Accepts only zero reserved bytes (as ConnectX sends them).
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            if p.buffer.as_ref()[field::RESERVED].iter().any(|&b| b != 0) {
                return Err(Error::Malformed("CNP reserved"));
            }
            Ok(Repr)
        }
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.buffer.as_mut()[field::RESERVED].fill(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Error;

    #[test]
    fn reth_bytes() {
        let b = [0, 0, 0, 1, 0x23, 0x45, 0x67, 0x89, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0x10, 0];
        let r = reth::Repr::parse(&reth::Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r, reth::Repr { va: 0x1_2345_6789, rkey: 0xdeadbeef, dma_len: 4096 });
        let mut o = [0u8; 16];
        r.emit(&mut reth::Packet::new_unchecked(&mut o[..]));
        assert_eq!(o, b);
        assert_eq!(reth::Packet::new_checked(&b[..15]).unwrap_err(), Error::Truncated("RETH"));
    }

    #[test]
    fn aeth_syndromes() {
        use aeth::{NakCode, Syndrome};
        let cases = [
            (0x1f, Syndrome::Ack { credits: 31 }),
            (0x2e, Syndrome::RnrNak { timer: 14 }),
            (0x60, Syndrome::Nak(NakCode::PsnSequenceError)),
            (0x61, Syndrome::Nak(NakCode::InvalidRequest)),
            (0x62, Syndrome::Nak(NakCode::RemoteAccessError)),
            (0x63, Syndrome::Nak(NakCode::RemoteOperationalError)),
        ];
        for (byte, s) in cases {
            let b = [byte, 0x00, 0x01, 0x02];
            let r = aeth::Repr::parse(&aeth::Packet::new_checked(&b[..]).unwrap()).unwrap();
            assert_eq!(r, aeth::Repr { syndrome: s, msn: 0x102 });
            let mut o = [0u8; 4];
            r.emit(&mut aeth::Packet::new_unchecked(&mut o[..]));
            assert_eq!(o, b);
        }
        for bad in [0x40u8, 0x65, 0x80, 0xff] {
            assert!(aeth::Repr::parse(&aeth::Packet::new_unchecked(&[bad, 0, 0, 0][..])).is_err(), "{bad:#x}");
        }
    }

    #[test]
    fn deth_immdt_ieth() {
        let b = [0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01];
        let d = deth::Repr::parse(&deth::Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(d, deth::Repr { qkey: deth::GSI_QKEY, src_qp: 1 });
        let mut o = [0xffu8; 8];
        d.emit(&mut deth::Packet::new_unchecked(&mut o[..]));
        assert_eq!(o, b);
        assert!(deth::Packet::new_checked(&b[..7]).is_err());
        let i = immdt::Repr::parse(&immdt::Packet::new_checked(&[1, 2, 3, 4][..]).unwrap()).unwrap();
        assert_eq!(i.imm, [1, 2, 3, 4]);
        let e = ieth::Repr::parse(&ieth::Packet::new_checked(&[0, 0, 0x12, 0x34][..]).unwrap()).unwrap();
        assert_eq!(e.rkey, 0x1234);
        assert!(ieth::Packet::new_checked(&[0u8; 3][..]).is_err());
    }

    #[test]
    fn atomic_headers() {
        let mut b = [0u8; 28];
        b[7] = 8; // va 8
        b[11] = 0x42; // rkey
        b[19] = 5; // add 5
        b[20] = 0x80; // compare top bit
        let a = atomic_eth::Repr::parse(&atomic_eth::Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(a, atomic_eth::Repr { va: 8, rkey: 0x42, swap_add: 5, compare: 1 << 63 });
        let mut o = [0u8; 28];
        a.emit(&mut atomic_eth::Packet::new_unchecked(&mut o[..]));
        assert_eq!(o, b);
        assert!(atomic_eth::Packet::new_checked(&b[..27]).is_err());
        let k =
            atomic_ack_eth::Repr::parse(&atomic_ack_eth::Packet::new_checked(&[0, 0, 0, 0, 0, 0, 1, 0][..]).unwrap());
        assert_eq!(k.unwrap().orig, 256);
    }

    #[test]
    fn cnp_reserved_must_be_zero() {
        assert!(cnp::Repr::parse(&cnp::Packet::new_checked(&[0u8; 16][..]).unwrap()).is_ok());
        let mut b = [0u8; 16];
        b[3] = 1;
        assert_eq!(cnp::Repr::parse(&cnp::Packet::new_unchecked(&b[..])), Err(Error::Malformed("CNP reserved")));
        assert!(cnp::Packet::new_checked(&b[..15]).is_err());
    }
}
