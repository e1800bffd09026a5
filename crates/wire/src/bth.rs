//! Base Transport Header (IBTA 9.2), 12 bytes, and the opcode table.

use super::codec::{rd16, rd24, wr16, wr24, Error, Result};

/// Byte ranges and bit masks of the BTH.
pub mod field {
    use core::ops::Range;
    pub const OPCODE: usize = 0;
    /// SE | MigReq | PadCnt | TVer.
    pub const FLAGS: usize = 1;
    pub const PKEY: Range<usize> = 2..4;
    /// FECN | BECN | reserved (masked in the ICRC).
    pub const ECN: usize = 4;
    pub const DEST_QP: Range<usize> = 5..8;
    /// AckReq | reserved.
    pub const ACK_REQ: usize = 8;
    pub const PSN: Range<usize> = 9..12;
    pub const HEADER_LEN: usize = 12;

    pub const SE: u8 = 0x80;
    pub const MIG_REQ: u8 = 0x40;
    pub const PAD_MASK: u8 = 0x30;
    pub const PAD_SHIFT: u32 = 4;
    pub const TVER_MASK: u8 = 0x0f;
    pub const FECN: u8 = 0x80;
    pub const BECN: u8 = 0x40;
    pub const ACK_REQ_BIT: u8 = 0x80;
}

/// A BTH opcode: transport (3 bits) | operation (5 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

/// Which headers follow the BTH for an opcode, in wire order
/// (DETH, XRCETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH), and whether a
/// payload may follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    pub deth: bool,
    pub xrceth: bool,
    pub reth: bool,
    pub atomic_eth: bool,
    pub aeth: bool,
    pub atomic_ack_eth: bool,
    pub immdt: bool,
    pub ieth: bool,
    /// The 16 reserved bytes of a CNP.
    pub cnp: bool,
    pub payload: bool,
}

impl Layout {
    /// Bytes of extension headers after the BTH.
    pub fn ext_len(&self) -> usize {
        let mut n = 0;
        n += if self.deth { 8 } else { 0 };
        n += if self.xrceth { 4 } else { 0 };
        n += if self.reth { 16 } else { 0 };
        n += if self.atomic_eth { 28 } else { 0 };
        n += if self.aeth { 4 } else { 0 };
        n += if self.atomic_ack_eth { 8 } else { 0 };
        n += if self.immdt { 4 } else { 0 };
        n += if self.ieth { 4 } else { 0 };
        n += if self.cnp { 16 } else { 0 };
        n
    }
}

/// Transport classes (the opcode's top 3 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Rc,
    Uc,
    Rd,
    Ud,
    Cnp,
    /// Extended reliable connection (IBTA 9.8): RC with an XRCETH on requests.
    Xrc,
    Other,
}

impl Opcode {
    pub const RC: u8 = 0x00;
    pub const UC: u8 = 0x20;
    pub const UD: u8 = 0x60;
    pub const XRC: u8 = 0xa0;

    // Operation codes (low 5 bits), IBTA table 38.
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_IMM: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_IMM: u8 = 0x05;
    pub const WRITE_FIRST: u8 = 0x06;
    pub const WRITE_MIDDLE: u8 = 0x07;
    pub const WRITE_LAST: u8 = 0x08;
    pub const WRITE_LAST_IMM: u8 = 0x09;
    pub const WRITE_ONLY: u8 = 0x0a;
    pub const WRITE_ONLY_IMM: u8 = 0x0b;
    pub const READ_REQUEST: u8 = 0x0c;
    pub const READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const READ_RESPONSE_LAST: u8 = 0x0f;
    pub const READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const CMP_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;
    pub const SEND_LAST_INV: u8 = 0x16;
    pub const SEND_ONLY_INV: u8 = 0x17;

    /// Congestion notification packet (RoCEv2 annex A17).
    pub const CNP: Opcode = Opcode(0x81);

    /// `transport | operation`.
    pub const fn new(transport: u8, op: u8) -> Opcode {
        Opcode(transport | (op & 0x1f))
    }

    pub fn transport(self) -> Transport {
        match self.0 & 0xe0 {
            0x00 => Transport::Rc,
            0x20 => Transport::Uc,
            0x40 => Transport::Rd,
            0x60 => Transport::Ud,
            0x80 => Transport::Cnp,
            0xa0 => Transport::Xrc,
            _ => Transport::Other,
        }
    }

    /// The operation (low 5 bits).
    pub fn op(self) -> u8 {
        self.0 & 0x1f
    }

    /// The header layout, or `None` for opcodes vrnic does not accept
    /// (reserved, RD, manufacturer-specific, UD other than SEND_ONLY[_IMM]).
    pub fn layout(self) -> Option<Layout> {
        let l = Layout::default();
        let p = Layout { payload: true, ..l };
        let op = self.op();
        let common = |op: u8| -> Option<Layout> {
            Some(match op {
                Self::SEND_FIRST | Self::SEND_MIDDLE | Self::SEND_LAST | Self::SEND_ONLY => p,
                Self::SEND_LAST_IMM | Self::SEND_ONLY_IMM => Layout { immdt: true, ..p },
                Self::WRITE_FIRST | Self::WRITE_ONLY => Layout { reth: true, ..p },
                Self::WRITE_MIDDLE | Self::WRITE_LAST => p,
                Self::WRITE_LAST_IMM => Layout { immdt: true, ..p },
                Self::WRITE_ONLY_IMM => Layout { reth: true, immdt: true, ..p },
                _ => return None,
            })
        };
        let rc = |op: u8| -> Option<Layout> {
            match op {
                0x00..=0x0b => common(op),
                Self::READ_REQUEST => Some(Layout { reth: true, ..l }),
                Self::READ_RESPONSE_FIRST | Self::READ_RESPONSE_LAST | Self::READ_RESPONSE_ONLY => {
                    Some(Layout { aeth: true, ..p })
                }
                Self::READ_RESPONSE_MIDDLE => Some(p),
                Self::ACKNOWLEDGE => Some(Layout { aeth: true, ..l }),
                Self::ATOMIC_ACKNOWLEDGE => Some(Layout { aeth: true, atomic_ack_eth: true, ..l }),
                Self::CMP_SWAP | Self::FETCH_ADD => Some(Layout { atomic_eth: true, ..l }),
                Self::SEND_LAST_INV | Self::SEND_ONLY_INV => Some(Layout { ieth: true, ..p }),
                _ => None,
            }
        };
        match self.transport() {
            Transport::Rc => rc(op),
            // XRC: the RC opcodes; every request carries an XRCETH, responses and ACKs none.
            Transport::Xrc => rc(op).map(|l| Layout { xrceth: self.is_request(), ..l }),
            Transport::Uc => match op {
                0x00..=0x0b => common(op),
                _ => None,
            },
            Transport::Ud => match op {
                Self::SEND_ONLY => Some(Layout { deth: true, ..p }),
                Self::SEND_ONLY_IMM => Some(Layout { deth: true, immdt: true, ..p }),
                _ => None,
            },
            Transport::Cnp if self == Self::CNP => Some(Layout { cnp: true, ..l }),
            _ => None,
        }
    }

    /// A request (sent by a requester) rather than a response or ACK.
    pub fn is_request(self) -> bool {
        !matches!(self.transport(), Transport::Cnp) && !matches!(self.op(), 0x0d..=0x12)
    }

    pub fn is_send(self) -> bool {
        matches!(self.op(), 0x00..=0x05 | 0x16 | 0x17)
    }
    /// A request that may take a receive WQE at the responder: a SEND of any
    /// kind or an RDMA WRITE with immediate (not ACKs, reads, atomics, CNPs).
    pub fn consumes_recv(self) -> bool {
        self.transport() != Transport::Cnp
            && (self.is_send() || matches!(self.op(), Self::WRITE_LAST_IMM | Self::WRITE_ONLY_IMM))
    }
    pub fn is_write(self) -> bool {
        matches!(self.op(), 0x06..=0x0b)
    }
    pub fn is_read_response(self) -> bool {
        matches!(self.op(), 0x0d..=0x10) && self.is_reliable()
    }
    pub fn is_atomic(self) -> bool {
        matches!(self.op(), 0x13 | 0x14) && self.is_reliable()
    }
    /// RC or XRC: the transports with reads, atomics and acknowledgements.
    pub fn is_reliable(self) -> bool {
        matches!(self.transport(), Transport::Rc | Transport::Xrc)
    }
    /// First packet of a multi-packet message (or only packet).
    pub fn is_first(self) -> bool {
        matches!(self.op(), 0x00 | 0x04 | 0x05 | 0x06 | 0x0a | 0x0b | 0x0c | 0x0d | 0x10 | 0x13 | 0x14 | 0x17)
    }
    /// Last packet of a message (or only packet).
    pub fn is_last(self) -> bool {
        matches!(self.op(), 0x02..=0x05 | 0x08..=0x0c | 0x0f..=0x14 | 0x16 | 0x17)
    }

    /// Short upper-case name as Wireshark prints it (for logs and pcap tests).
    pub fn name(self) -> &'static str {
        if self == Self::CNP {
            return "CNP";
        }
        match self.op() {
            0x00 => "SEND_FIRST",
            0x01 => "SEND_MIDDLE",
            0x02 => "SEND_LAST",
            0x03 => "SEND_LAST_IMM",
            0x04 => "SEND_ONLY",
            0x05 => "SEND_ONLY_IMM",
            0x06 => "WRITE_FIRST",
            0x07 => "WRITE_MIDDLE",
            0x08 => "WRITE_LAST",
            0x09 => "WRITE_LAST_IMM",
            0x0a => "WRITE_ONLY",
            0x0b => "WRITE_ONLY_IMM",
            0x0c => "READ_REQUEST",
            0x0d => "READ_RESPONSE_FIRST",
            0x0e => "READ_RESPONSE_MIDDLE",
            0x0f => "READ_RESPONSE_LAST",
            0x10 => "READ_RESPONSE_ONLY",
            0x11 => "ACKNOWLEDGE",
            0x12 => "ATOMIC_ACKNOWLEDGE",
            0x13 => "CMP_SWAP",
            0x14 => "FETCH_ADD",
            0x16 => "SEND_LAST_INV",
            0x17 => "SEND_ONLY_INV",
            _ => "RESERVED",
        }
    }
}

fixed_view!("BTH");

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn opcode(&self) -> Opcode {
        Opcode(self.buffer.as_ref()[field::OPCODE])
    }
    pub fn solicited(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & field::SE != 0
    }
    pub fn mig_req(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & field::MIG_REQ != 0
    }
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] & field::PAD_MASK) >> field::PAD_SHIFT
    }
    pub fn tver(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & field::TVER_MASK
    }
    pub fn pkey(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::PKEY.start)
    }
    pub fn fecn(&self) -> bool {
        self.buffer.as_ref()[field::ECN] & field::FECN != 0
    }
    pub fn becn(&self) -> bool {
        self.buffer.as_ref()[field::ECN] & field::BECN != 0
    }
    pub fn dest_qp(&self) -> u32 {
        rd24(self.buffer.as_ref(), field::DEST_QP.start)
    }
    pub fn ack_req(&self) -> bool {
        self.buffer.as_ref()[field::ACK_REQ] & field::ACK_REQ_BIT != 0
    }
    pub fn psn(&self) -> u32 {
        rd24(self.buffer.as_ref(), field::PSN.start)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_opcode(&mut self, op: Opcode) {
        self.buffer.as_mut()[field::OPCODE] = op.0;
    }
    fn set_flag(&mut self, at: usize, bit: u8, on: bool) {
        let b = &mut self.buffer.as_mut()[at];
        *b = if on { *b | bit } else { *b & !bit };
    }
    pub fn set_solicited(&mut self, v: bool) {
        self.set_flag(field::FLAGS, field::SE, v);
    }
    pub fn set_mig_req(&mut self, v: bool) {
        self.set_flag(field::FLAGS, field::MIG_REQ, v);
    }
    pub fn set_pad_count(&mut self, pad: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & !field::PAD_MASK) | ((pad << field::PAD_SHIFT) & field::PAD_MASK);
    }
    pub fn set_tver(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & !field::TVER_MASK) | (v & field::TVER_MASK);
    }
    pub fn set_pkey(&mut self, v: u16) {
        wr16(self.buffer.as_mut(), field::PKEY.start, v);
    }
    pub fn set_fecn(&mut self, v: bool) {
        self.set_flag(field::ECN, field::FECN, v);
    }
    pub fn set_becn(&mut self, v: bool) {
        self.set_flag(field::ECN, field::BECN, v);
    }
    pub fn set_dest_qp(&mut self, v: u32) {
        wr24(self.buffer.as_mut(), field::DEST_QP.start, v);
    }
    pub fn set_ack_req(&mut self, v: bool) {
        self.set_flag(field::ACK_REQ, field::ACK_REQ_BIT, v);
    }
    pub fn set_psn(&mut self, v: u32) {
        wr24(self.buffer.as_mut(), field::PSN.start, v);
    }
}

/// A parsed BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub opcode: Opcode,
    pub solicited: bool,
    pub mig_req: bool,
    pub pad_count: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    pub dest_qp: u32,
    pub ack_req: bool,
    pub psn: u32,
}

impl Default for Repr {
    fn default() -> Repr {
        Repr {
            opcode: Opcode(0),
            solicited: false,
            mig_req: true,
            pad_count: 0,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: 0,
            ack_req: false,
            psn: 0,
        }
    }
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    /// Parses a BTH; rejects transport versions other than 0.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        if p.tver() != 0 {
            return Err(Error::Malformed("BTH TVer"));
        }
        Ok(Repr {
            opcode: p.opcode(),
            solicited: p.solicited(),
            mig_req: p.mig_req(),
            pad_count: p.pad_count(),
            pkey: p.pkey(),
            fecn: p.fecn(),
            becn: p.becn(),
            dest_qp: p.dest_qp(),
            ack_req: p.ack_req(),
            psn: p.psn(),
        })
    }

    /// Writes the BTH (reserved bits zero).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        b[..field::HEADER_LEN].fill(0);
        p.set_opcode(self.opcode);
        p.set_solicited(self.solicited);
        p.set_mig_req(self.mig_req);
        p.set_pad_count(self.pad_count);
        p.set_pkey(self.pkey);
        p.set_fecn(self.fecn);
        p.set_becn(self.becn);
        p.set_dest_qp(self.dest_qp);
        p.set_ack_req(self.ack_req);
        p.set_psn(self.psn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // BTH of vector 2 of the anchors doc: UC SEND_ONLY, MigReq, PadCnt 2, QP 211, PSN 13571856.
    const BTH: [u8; 12] = [0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10];

    #[test]
    fn parse_and_emit_roundtrip() {
        let r = Repr::parse(&Packet::new_checked(&BTH[..]).unwrap()).unwrap();
        assert_eq!(r.opcode, Opcode::new(Opcode::UC, Opcode::SEND_ONLY));
        assert!(r.mig_req && !r.solicited && !r.ack_req && !r.fecn);
        assert_eq!((r.pad_count, r.pkey, r.dest_qp, r.psn), (2, 0xffff, 211, 13571856));
        let mut out = [0xaau8; 12];
        r.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, BTH);
    }

    #[test]
    fn rejects_short_and_bad_version() {
        assert_eq!(Packet::new_checked(&BTH[..11]).unwrap_err(), Error::Truncated("BTH"));
        let mut b = BTH;
        b[1] |= 1;
        assert_eq!(Repr::parse(&Packet::new_unchecked(&b[..])).unwrap_err(), Error::Malformed("BTH TVer"));
    }

    #[test]
    fn which_requests_take_a_receive() {
        let rc = |op| Opcode::new(Opcode::RC, op);
        for op in [
            Opcode::SEND_FIRST,
            Opcode::SEND_MIDDLE,
            Opcode::SEND_LAST,
            Opcode::SEND_ONLY_IMM,
            Opcode::SEND_ONLY_INV,
            Opcode::WRITE_ONLY_IMM,
            Opcode::WRITE_LAST_IMM,
        ] {
            assert!(rc(op).consumes_recv(), "{}", rc(op).name());
        }
        assert!(Opcode::new(Opcode::UD, Opcode::SEND_ONLY).consumes_recv());
        for op in [
            Opcode::WRITE_ONLY,
            Opcode::WRITE_FIRST,
            Opcode::READ_REQUEST,
            Opcode::READ_RESPONSE_ONLY,
            Opcode::ACKNOWLEDGE,
            Opcode::ATOMIC_ACKNOWLEDGE,
            Opcode::FETCH_ADD,
            Opcode::CMP_SWAP,
        ] {
            assert!(!rc(op).consumes_recv(), "{}", rc(op).name());
        }
        assert!(!Opcode::CNP.consumes_recv());
    }

    #[test]
    fn opcode_table() {
        let rc = |op| Opcode::new(Opcode::RC, op);
        assert_eq!(rc(Opcode::WRITE_ONLY_IMM).layout().unwrap().ext_len(), 20);
        assert_eq!(rc(Opcode::ATOMIC_ACKNOWLEDGE).layout().unwrap().ext_len(), 12);
        assert_eq!(rc(Opcode::CMP_SWAP).layout().unwrap().ext_len(), 28);
        assert!(!rc(Opcode::READ_REQUEST).layout().unwrap().payload);
        assert_eq!(Opcode(0x65).layout().unwrap().ext_len(), 12);
        assert!(Opcode(0x60).layout().is_none(), "UD has only SEND_ONLY[_IMM]");
        assert!(Opcode(0x2c).layout().is_none(), "UC has no READ");
        assert!(Opcode(0x15).layout().is_none());
        assert!(Opcode(0x44).layout().is_none(), "RD is not implemented");
        assert_eq!(Opcode::CNP.layout().unwrap().ext_len(), 16);
        assert!(rc(Opcode::SEND_FIRST).is_first() && !rc(Opcode::SEND_FIRST).is_last());
        assert!(rc(Opcode::READ_RESPONSE_ONLY).is_first() && rc(Opcode::READ_RESPONSE_ONLY).is_last());
        assert!(!rc(Opcode::ACKNOWLEDGE).is_request() && rc(Opcode::FETCH_ADD).is_request());
    }
}
