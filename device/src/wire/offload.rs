//! Checksum and segmentation offloads on Ethernet frames (owner: eth-wire):
//! what a NIC does to a frame on transmit (IPv4 header checksum, TCP/UDP
//! checksums, TCP and UDP segmentation) and checks on receive.
//!
//! API contract (the mlx5 Ethernet TX/RX paths are written against it):

use thiserror::Error;

/// A frame the offload cannot process.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OffloadError {
    #[error("no IPv4/IPv6 header to offload")]
    NotIp,
    #[error("no TCP/UDP header to offload")]
    NotL4,
    #[error("headers inconsistent with the frame")]
    Malformed,
    #[error("bad segment size")]
    BadMss,
}

/// One's-complement sum of `data` added to `initial` (not folded).
pub fn ones_sum(_data: &[u8], _initial: u32) -> u32 {
    todo!("eth-wire")
}

/// Folds a sum to 16 bits (not inverted).
pub fn fold(_sum: u32) -> u16 {
    todo!("eth-wire")
}

/// Transmit checksum offload in place: `l3` rewrites the IPv4 header
/// checksum, `l4` the TCP/UDP checksum over pseudo-header and segment
/// (whatever the field held; UDP 0 becomes 0xffff).
pub fn fill_checksums(_frame: &mut [u8], _l3: bool, _l4: bool) -> Result<(), OffloadError> {
    todo!("eth-wire")
}

/// LSO: `frame` is headers (`header_len` bytes: L2 through TCP, or through
/// the UDP header for UDP GSO) followed by the payload; returns the frames of
/// `ceil(payload / mss)` segments with IPv4 total length/ID+i/checksum, IPv6
/// payload length, TCP sequence/flags (FIN, PSH on the last; CWR on the
/// first) or UDP length, and L4 checksums fixed up.
pub fn segment(_frame: &[u8], _header_len: usize, _mss: u16) -> Result<Vec<Vec<u8>>, OffloadError> {
    todo!("eth-wire")
}

/// What the receive side checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxChecksum {
    /// One's-complement sum (folded, not inverted) from the L3 header to the
    /// end of the L3 packet (no padding): the mlx5 CQE `check_sum`.
    pub sum: u16,
    /// The IPv4 header checksum verified (IPv6: always true).
    pub l3_ok: bool,
    /// The TCP/UDP checksum verified (UDP checksum 0 over IPv4 counts as ok).
    pub l4_ok: bool,
}

/// Receive checksum verification of a parsed frame.
pub fn rx_checksum(_frame: &[u8], _info: &super::ether::FrameInfo) -> RxChecksum {
    todo!("eth-wire")
}

/// The Toeplitz hash of `input` with a 40-byte key (Microsoft RSS).
pub fn toeplitz(_key: &[u8; 40], _input: &[u8]) -> u32 {
    todo!("eth-wire")
}
