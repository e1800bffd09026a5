//! What every header view shares: the parse [`Error`] and big-endian
//! field access.

use thiserror::Error;

/// Parse errors of packet views and the whole-packet parser.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer ends before the named header or trailer does.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// A BTH opcode this transport does not define (or RD, which vrnic does not implement).
    #[error("unknown opcode {0:#04x}")]
    Opcode(u8),
    /// Fields that contradict each other (pad, version, lengths, reserved values).
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// The ICRC does not match the packet.
    #[error("bad ICRC")]
    Icrc,
}

pub type Result<T> = core::result::Result<T, Error>;

pub(crate) fn rd16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
pub(crate) fn rd24(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}
pub(crate) fn rd32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
pub(crate) fn rd64(b: &[u8], at: usize) -> u64 {
    (rd32(b, at) as u64) << 32 | rd32(b, at + 4) as u64
}
pub(crate) fn wr16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
pub(crate) fn wr24(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 3].copy_from_slice(&v.to_be_bytes()[1..]);
}
pub(crate) fn wr32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
pub(crate) fn wr64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}
