//! The data path's queue contexts as plain data: a CQ's buffer and arming
//! ([`CqCtx`], with the one CQE writer) and an EQ's buffer ([`EqCtx`]). A
//! leaf: the firmware holds these without importing the data path's
//! `impl Firmware` blocks.

use super::cq_arm::CqArming;
use super::cqe::{self, Cqe};
use crate::queue_buf::buf_addr;
use vrnic_engine::GuestMemory;

/// What CREATE_CQ writes into the CQ's arm doorbell record (`dbrec[1]`): no
/// arm word has bit 31 set (`sn << 28 | cmd | ci`, sn 2 bits, cmd bit 24), so
/// the poll-mode scan tells "never armed" from a first arm, whose word is 0.
pub const CQ_ARM_UNSET: u32 = 0x8000_0000;

/// mlx5 context of a completion queue.
#[derive(Debug, Clone, Default)]
pub struct CqCtx {
    pub cqc: Vec<u8>,
    pub pas: Vec<u64>,
    pub cqe_size: usize,
    pub log_page_size: u8,
    pub page_offset: u64,
    pub dbr_addr: u64,
    /// The EQ its completion events go to, and its UAR page.
    pub eqn: u32,
    pub uar: u32,
    /// Completion-event arming (and the last arm word acted on).
    pub arming: CqArming,
    /// The user context (uid) that created it; 0: the kernel.
    pub uid: u16,
    /// The umems its buffer and doorbell record lie in (a DevX CQ's).
    pub umems: Vec<u32>,
}

/// Why a CQE was not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CqeWriteError {
    #[error("CQE address outside the CQ's pages")]
    OutsidePages,
    #[error("CQE write outside guest memory")]
    OutsideMemory,
}

impl CqCtx {
    /// Writes `e` as CQE number `index` (the CQ's 32-bit producer count) of
    /// a CQ of 2^`log_size` entries in this buffer, stamped now, with the
    /// owner bit of that count: the only CQE writer.
    pub fn write_cqe(&self, mem: &dyn GuestMemory, index: u32, log_size: u8, e: &Cqe) -> Result<(), CqeWriteError> {
        let slot = (index & ((1u32 << log_size) - 1)) as u64;
        let owner = ((index >> log_size) & 1) as u8;
        let addr = buf_addr(&self.pas, self.log_page_size, self.page_offset, slot * self.cqe_size as u64)
            .ok_or(CqeWriteError::OutsidePages)?;
        let e = Cqe { timestamp: crate::clock::now(), ..*e };
        if cqe::write(mem, addr, self.cqe_size, &e, owner) {
            Ok(())
        } else {
            Err(CqeWriteError::OutsideMemory)
        }
    }
}

/// The full 32-bit counter whose low 24 bits are `ci24`, at or behind
/// `producer`: the driver's CQ and EQ consumer indexes are 24 bits.
pub fn expand_ci(producer: u32, ci24: u32) -> u32 {
    let c = (producer & !0x00ff_ffff) | (ci24 & 0x00ff_ffff);
    if c.wrapping_sub(producer) as i32 > 0 {
        c.wrapping_sub(0x0100_0000)
    } else {
        c
    }
}

/// mlx5 context of an event queue.
#[derive(Debug, Clone)]
pub struct EqCtx {
    pub eqc: Vec<u8>,
    pub pas: Vec<u64>,
    pub log_size: u8,
    pub log_page_size: u8,
    pub page_offset: u64,
    pub event_bitmask: [u64; 4],
    /// MSI-X vector raised for this EQ.
    pub vector: u16,
    /// Armed: the next event raises the interrupt.
    pub armed: bool,
    /// Consumer index last reported by the driver (widened).
    pub consumer: u32,
    /// Events produced so far.
    pub producer: u32,
}

/// EQ numbers: 0..=0xfe; 0xff is never handed out (the poll-mode doorbell
/// sentinel).
pub const EQN_LAST: u32 = 0xfe;
