//! RoCEv2 on the wire: packet views and representations (smoltcp style) for
//! the InfiniBand transport headers, the ICRC and whole-packet parse/emit.
//! Codecs only: no I/O, no threads, no unsafe (the packet path of a port,
//! its links and middleware are [`crate::fabric`]).
//!
//! `wire` knows header fields, never QPs: reliability is the engine's job.
//! Every parser rejects short, truncated or inconsistent input with an
//! [`Error`]; nothing here panics on input bytes.

#![forbid(unsafe_code)]

/// The checked-view boilerplate shared by the fixed-size headers (BTH and the
/// extended transport headers).
macro_rules! fixed_view {
    ($name:literal) => {
        /// A view of the header at the start of a buffer.
        #[derive(Debug, Clone)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            pub const fn new_unchecked(buffer: T) -> Packet<T> {
                Packet { buffer }
            }
            pub fn new_checked(buffer: T) -> $crate::wire::Result<Packet<T>> {
                let p = Packet::new_unchecked(buffer);
                p.check_len()?;
                Ok(p)
            }
            pub fn check_len(&self) -> $crate::wire::Result<()> {
                if self.buffer.as_ref().len() < field::HEADER_LEN {
                    Err($crate::wire::Error::Truncated($name))
                } else {
                    Ok(())
                }
            }
            pub fn into_inner(self) -> T {
                self.buffer
            }
            /// The bytes after this header.
            pub fn payload(&self) -> &[u8] {
                &self.buffer.as_ref()[field::HEADER_LEN..]
            }
        }
    };
}

pub mod bth;
pub mod clock;
pub mod ext;
pub mod grh;
pub mod icrc;
pub mod ip;
pub mod packet;
pub mod psn;

pub use bth::Opcode;
pub use ext::{aeth, atomic_ack_eth, atomic_eth, cnp, deth, ieth, immdt, reth};
pub use packet::{Headers, RocePacket};

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
