//! RoCEv2 on the wire: packet views and representations (smoltcp style) for
//! the InfiniBand transport headers, the ICRC and whole-packet parse/emit;
//! and the management datagrams' headers and SA records (MAD, RMPP, SA).
//! Codecs only: no I/O, no threads, no unsafe (the packet path of a port,
//! its links and middleware are [`vrnic_fabric`]).
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
            pub fn new_checked(buffer: T) -> $crate::codec::Result<Packet<T>> {
                let p = Packet::new_unchecked(buffer);
                p.check_len()?;
                Ok(p)
            }
            pub fn check_len(&self) -> $crate::codec::Result<()> {
                if self.buffer.as_ref().len() < field::HEADER_LEN {
                    Err($crate::codec::Error::Truncated($name))
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
pub mod class_port_info;
pub mod codec;
pub mod congestion;
pub mod ether;
pub mod ether_build;
pub mod ext;
pub mod grh;
pub mod icrc;
pub mod ip;
pub mod mad;
pub mod offload;
pub mod packet;
pub mod pfc;
pub mod psn;
pub mod rmpp;
pub mod roce;
pub mod sa;
pub mod sa_inform;
pub mod sa_mcmember;
pub mod sa_node;
pub mod sa_path;
pub mod sa_portinfo;
pub mod sa_service;
pub mod smp;
pub mod smp_portinfo;
pub mod smp_sminfo;
#[cfg(test)]
mod xrc_tests;

pub use bth::Opcode;
pub use codec::{Error, Result};
pub use ext::{aeth, atomic_ack_eth, atomic_eth, cnp, deth, ieth, immdt, reth, xrceth};
pub use packet::{Headers, RocePacket};
