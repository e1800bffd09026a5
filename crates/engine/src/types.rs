//! What every part of the engine shares: guest memory access, object
//! kinds and the engine's errors.

use thiserror::Error;

use super::objects::{QpState, QpTransition};

/// Guest memory as the engine reaches it: every access names an address
/// and a length and fails cleanly on any byte outside what the guest mapped.
pub trait GuestMemory: Send + Sync {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault>;
    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), MemFault>;
    /// Atomic 64-bit compare-and-swap in guest byte order; returns the old value.
    fn compare_and_swap_u64(&self, addr: u64, expected: u64, new: u64) -> Result<u64, MemFault>;
    /// Atomic 64-bit fetch-and-add; returns the old value.
    fn fetch_add_u64(&self, addr: u64, add: u64) -> Result<u64, MemFault>;
}

/// A guest memory access outside the guest's mappings (or unaligned atomic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("guest memory fault at {addr:#x}")]
pub struct MemFault {
    pub addr: u64,
}

/// The kind of an object, for errors and limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pd,
    Xrcd,
    Cq,
    Srq,
    Mkey,
    Qp,
}

/// Engine errors; the mlx5 layer maps each to a command status.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EngineError {
    /// No more objects of this kind (limit reached): LIM.
    #[error("{0:?} limit reached")]
    Limit(Kind),
    /// Unknown object number: BAD_RES.
    #[error("no {0:?} {1:#x}")]
    NoSuch(Kind, u32),
    /// Object still referenced (e.g. CQ used by a QP): BAD_RES_STATE.
    #[error("{0:?} {1:#x} is in use")]
    Busy(Kind, u32),
    /// Illegal QP state transition: BAD_QP_STATE.
    #[error("qp {qpn:#x} in {state:?} cannot {transition:?}")]
    QpState { qpn: u32, state: QpState, transition: QpTransition },
    /// A parameter out of range: BAD_PARAM.
    #[error("bad parameter: {0}")]
    BadParam(&'static str),
}
