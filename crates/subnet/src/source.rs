//! The requester of a MAD.

/// Where a MAD came from (the UD completion's SLID and source QP): the
/// requester, and the destination of the answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MadSource {
    pub lid: u16,
    pub qpn: u32,
}
