//! MAC control frames (IEEE 802.3 Annex 31B PAUSE, 802.1Qbb PFC) and the
//! 802.1p priority a frame is queued by (owner: eth-wire). The view covers
//! the MAC control PDU, i.e. the bytes after the untagged Ethernet header
//! whose EtherType is [`ETHERTYPE_MAC_CONTROL`]:
//!
//! | bytes  | PAUSE (0x0001)   | PFC (0x0101)                                    |
//! |--------|------------------|-------------------------------------------------|
//! | 0..2   | opcode           | opcode                                          |
//! | 2..4   | pause_time       | class-enable vector (bit i = priority i, 0..7)  |
//! | 4..20  | —                | time\[0..8\]: quanta of priority 0..7           |
//!
//! One quantum is 512 bit times at the port's speed; 0 resumes at once.

use super::codec::{rd16, wr16, Error, Result};
use super::ether::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, TPID_CTAG, TPID_STAG};

/// EtherType of MAC control frames.
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
/// Opcode of an 802.3x PAUSE frame.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// Opcode of an 802.1Qbb PFC frame.
pub const OPCODE_PFC: u16 = 0x0101;
/// The destination of PAUSE and PFC frames (never forwarded by a bridge).
pub const MAC_CONTROL_DMAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// Bits in one pause quantum.
pub const QUANTUM_BITS: u64 = 512;
/// Priorities of 802.1p.
pub const PRIORITIES: usize = 8;

const ETH_HLEN: usize = 14;
/// The shortest Ethernet frame without FCS: MAC control frames are padded to it.
const MIN_FRAME: usize = 60;

pub mod field {
    pub const OPCODE: usize = 0;
    /// PAUSE: pause_time; PFC: the class-enable vector.
    pub const WORD1: usize = 2;
    /// PFC: the eight per-priority times.
    pub const TIMES: usize = 4;
    pub const PAUSE_LEN: usize = 4;
    pub const PFC_LEN: usize = 20;
}

/// A view of a MAC control PDU at the start of a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }
    /// A view that holds at least the opcode and the fields its opcode has
    /// (an unknown opcode needs only the opcode).
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Packet::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < field::WORD1 {
            return Err(Error::Truncated("MAC control opcode"));
        }
        let need = match self.opcode() {
            OPCODE_PAUSE => field::PAUSE_LEN,
            OPCODE_PFC => field::PFC_LEN,
            _ => field::WORD1,
        };
        if len < need {
            return Err(Error::Truncated("MAC control PDU"));
        }
        Ok(())
    }
    pub fn opcode(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::OPCODE)
    }
    /// PAUSE: pause_time; PFC: the class-enable vector.
    pub fn word1(&self) -> u16 {
        rd16(self.buffer.as_ref(), field::WORD1)
    }
    /// PFC: the quanta of priority `prio` (< 8).
    pub fn time(&self, prio: usize) -> u16 {
        rd16(self.buffer.as_ref(), field::TIMES + 2 * prio)
    }
}

/// What a MAC control frame asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr {
    /// 802.3x: every priority stops for `quanta`.
    Pause { quanta: u16 },
    /// 802.1Qbb: each priority whose bit is set in `enable` stops for its
    /// `quanta` (the others' times are ignored).
    Pfc { enable: u8, quanta: [u16; PRIORITIES] },
}

impl Repr {
    /// Parses a PAUSE or PFC PDU. Errors: too short, an unknown opcode, a
    /// PFC class-enable vector with bits above priority 7.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        match p.opcode() {
            OPCODE_PAUSE => Ok(Repr::Pause { quanta: p.word1() }),
            OPCODE_PFC => {
                let v = p.word1();
                if v > 0xff {
                    return Err(Error::Malformed("PFC class-enable vector"));
                }
                let mut quanta = [0; PRIORITIES];
                for (i, q) in quanta.iter_mut().enumerate() {
                    *q = p.time(i);
                }
                Ok(Repr::Pfc { enable: v as u8, quanta })
            }
            _ => Err(Error::Malformed("MAC control opcode")),
        }
    }

    /// Bytes of the PDU.
    pub fn buffer_len(&self) -> usize {
        match self {
            Repr::Pause { .. } => field::PAUSE_LEN,
            Repr::Pfc { .. } => field::PFC_LEN,
        }
    }

    /// Writes the PDU at the start of `p` (at least [`buffer_len`](Self::buffer_len) bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        match *self {
            Repr::Pause { quanta } => {
                wr16(b, field::OPCODE, OPCODE_PAUSE);
                wr16(b, field::WORD1, quanta);
            }
            Repr::Pfc { enable, quanta } => {
                wr16(b, field::OPCODE, OPCODE_PFC);
                wr16(b, field::WORD1, enable as u16);
                for (i, q) in quanta.iter().enumerate() {
                    wr16(b, field::TIMES + 2 * i, *q);
                }
            }
        }
    }

    /// The whole frame from `smac` to [`MAC_CONTROL_DMAC`], padded to 60 bytes.
    pub fn to_frame(&self, smac: [u8; 6]) -> Vec<u8> {
        let mut f = vec![0u8; MIN_FRAME];
        f[0..6].copy_from_slice(&MAC_CONTROL_DMAC);
        f[6..12].copy_from_slice(&smac);
        wr16(&mut f, 12, ETHERTYPE_MAC_CONTROL);
        self.emit(&mut Packet::new_unchecked(&mut f[ETH_HLEN..]));
        f
    }
}

/// The MAC control PDU of `frame` when it is an untagged MAC control frame
/// (tagged ones are not MAC control frames and travel as data).
pub fn mac_control_pdu(frame: &[u8]) -> Option<&[u8]> {
    (frame.len() >= ETH_HLEN && rd16(frame, 12) == ETHERTYPE_MAC_CONTROL).then(|| &frame[ETH_HLEN..])
}

/// The PCP of a frame's outer VLAN tag, 0 untagged (or shorter than a tag).
/// Under PCP trust this is its 802.1p priority; the port's classifier
/// (`fabric/ether/classify.rs`) decides under DSCP trust.
pub fn frame_priority(frame: &[u8]) -> u8 {
    if frame.len() >= ETH_HLEN + 4 && matches!(rd16(frame, 12), TPID_CTAG | TPID_STAG) {
        (frame[14] >> 5) & 7
    } else {
        0
    }
}

/// Whether the frame's outer header carries a VLAN tag.
pub fn is_tagged(frame: &[u8]) -> bool {
    frame.len() >= ETH_HLEN + 4 && matches!(rd16(frame, 12), TPID_CTAG | TPID_STAG)
}

/// The DSCP (upper six bits of the IPv4 ToS / IPv6 traffic class) of an IP
/// frame, after at most two VLAN tags; `None` for any other frame or one
/// too short to hold it.
pub fn frame_dscp(frame: &[u8]) -> Option<u8> {
    let mut at = 12;
    for _ in 0..2 {
        if frame.len() >= at + 4 && matches!(rd16(frame, at), TPID_CTAG | TPID_STAG) {
            at += 4;
        }
    }
    if frame.len() < at + 4 {
        return None;
    }
    let (ty, ip) = (rd16(frame, at), at + 2);
    match ty {
        ETHERTYPE_IPV4 if frame[ip] >> 4 == 4 => Some(frame[ip + 1] >> 2),
        ETHERTYPE_IPV6 if frame[ip] >> 4 == 6 => Some(((frame[ip] & 0x0f) << 2) | (frame[ip + 1] >> 6)),
        _ => None,
    }
}

/// Nanoseconds of `quanta` pause quanta at `speed_bps` (bits per second; 0 reads as 1).
pub fn quanta_ns(quanta: u16, speed_bps: u64) -> u64 {
    (quanta as u64 * QUANTUM_BITS).saturating_mul(1_000_000_000) / speed_bps.max(1)
}

#[cfg(test)]
#[path = "pfc_tests.rs"]
mod tests;
