//! UMEM: memory a process registers for the queues it builds itself (CREATE_UMEM / DESTROY_UMEM).
//!
//! mlx5_ib builds CREATE_UMEM for a DevX process (devx.c `devx_umem_reg_cmd_alloc`): the pinned
//! pages as an MTT list (`mtt[i]` = page address | `MLX5_IB_MTT_READ` (bit 0) | `MLX5_IB_MTT_WRITE`
//! (bit 1)), their size (`log_page_size`, from 4 KiB) and where the memory starts in the first page
//! (`page_offset`, bytes). The process then names the umem and an offset in it instead of a page
//! list when it creates a queue (`wq_umem_id` + `wq_umem_offset`) or places a doorbell record
//! (`dbr_umem_id` + `dbr_addr` as an offset). The device resolves those names here, once, at
//! create time, into the page list the data path walks ([`QueueBuf`]), and refuses what leaves
//! the umem, what it would write without the write bit, and a umem of another process.
//!
//! A umem is the process's (its uid; the device does not offer `umem_uid_0`) and cannot be
//! destroyed while an object still uses it (BAD_RES_STATE, the PRM's rule for a referenced
//! object): the pages stay pinned as long as a queue may reach them. The commands are in
//! [`super::umem_cmd`].

use super::uid::{self, Kind};
use crate::cmd::req::CmdErr;
use crate::cmd::status;
use vrnic_engine::table::Table;

/// `MLX5_IB_MTT_READ`.
pub const MTT_READ: u64 = 1 << 0;
/// `MLX5_IB_MTT_WRITE`.
pub const MTT_WRITE: u64 = 1 << 1;
/// Umems the device holds at once.
pub const MAX_UMEMS: usize = 1 << 16;
/// MTT entries of every umem together (8 bytes each of the server's memory).
pub const MAX_MTT_ENTRIES: u64 = 1 << 22;
/// Largest page: `log_page_size` + 12 (the queue page lists allow 4 KiB << 18).
pub const MAX_LOG_PAGE_SIZE: u8 = 18;

/// One registered umem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Umem {
    /// The user context that registered it.
    pub uid: u16,
    /// `mtt[]` as registered: page address | permission bits.
    pub mtt: Vec<u64>,
    /// Pages of `4 KiB << log_page_size`.
    pub log_page_size: u8,
    /// Bytes into page 0 where the memory starts.
    pub page_offset: u64,
}

impl Umem {
    fn page_bytes(&self) -> u64 {
        1u64 << (12 + self.log_page_size as u32)
    }

    /// Bytes of memory the umem spans from its start.
    pub fn len(&self) -> u64 {
        (self.mtt.len() as u64 * self.page_bytes()).saturating_sub(self.page_offset)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A queue buffer as the data path walks it (see [`crate::queue_buf::buf_addr`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueBuf {
    pub pas: Vec<u64>,
    pub log_page_size: u8,
    /// Bytes into `pas[0]`.
    pub page_offset: u64,
}

/// A create placing its queue buffer and doorbell record, each in the mailbox's terms or (DevX)
/// in the caller's umems; `held` gathers the umems used, for the object to keep. A refused umem
/// reference fails the command with the create's own syndromes: `unknown` (BAD_RES: no such umem
/// of the caller's) or `range` (BAD_PARAM: outside the umem, a split record, read-only pages).
pub struct Placing<'a> {
    umems: &'a Umems,
    caller: u16,
    unknown: u32,
    range: u32,
    pub held: Vec<u32>,
}

impl<'a> Placing<'a> {
    pub fn new(umems: &'a Umems, caller: u16, unknown: u32, range: u32) -> Placing<'a> {
        Placing { umems, caller, unknown, range, held: Vec::new() }
    }

    fn refused(&self, e: UmemRefused) -> CmdErr {
        match e {
            UmemRefused::Unknown => CmdErr { status: status::BAD_RES, syndrome: self.unknown },
            UmemRefused::OutOfRange | UmemRefused::ReadOnly => {
                CmdErr { status: status::BAD_PARAM, syndrome: self.range }
            }
        }
    }

    /// With `in_umem`: `bytes` at `offset` in umem `id`; otherwise the page list `mailbox` reads.
    pub fn queue(
        &mut self,
        in_umem: bool,
        (id, offset): (u32, u64),
        bytes: u64,
        write: bool,
        mailbox: impl FnOnce() -> Result<QueueBuf, CmdErr>,
    ) -> Result<QueueBuf, CmdErr> {
        if !in_umem {
            return mailbox();
        }
        let b = self.umems.resolve(self.caller, id, offset, bytes, write).map_err(|e| self.refused(e))?;
        self.held.push(id);
        Ok(b)
    }

    /// A doorbell record: `addr` itself, or with `in_umem` the record `addr` bytes into umem `id`.
    pub fn dbr(&mut self, in_umem: bool, id: u32, addr: u64, write: bool) -> Result<u64, CmdErr> {
        if !in_umem {
            return Ok(addr);
        }
        let a = self.umems.dbr_addr(self.caller, id, addr, write).map_err(|e| self.refused(e))?;
        self.held.push(id);
        Ok(a)
    }
}

/// Why a umem reference is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UmemRefused {
    /// No such umem, or another process's.
    Unknown,
    /// The range leaves the umem (or its offset and length overflow).
    OutOfRange,
    /// The device would write to a page registered without `MLX5_IB_MTT_WRITE`.
    ReadOnly,
}

/// The live umems, by id.
pub struct Umems {
    table: Table<Umem>,
    /// MTT entries held by every umem together.
    entries: u64,
}

impl Default for Umems {
    fn default() -> Self {
        Umems { table: Table::new(1, MAX_UMEMS as u32, MAX_UMEMS), entries: 0 }
    }
}

impl Umems {
    pub fn get(&self, id: u32) -> Option<&Umem> {
        self.table.get(id)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Umems user context `uid` holds.
    pub fn owned_by(&self, uid: u16) -> usize {
        self.table.iter().filter(|(_, u)| u.uid == uid).count()
    }

    /// FLR / device reset: every umem goes.
    pub fn clear(&mut self) {
        self.table.clear();
        self.entries = 0;
    }

    /// A new umem's id (None: every id or the MTT budget is in use).
    pub(super) fn alloc(&mut self, u: Umem) -> Option<u32> {
        let n = u.mtt.len() as u64;
        if self.entries + n > MAX_MTT_ENTRIES {
            return None;
        }
        let id = self.table.alloc_lowest_with(|_| u)?;
        self.entries += n;
        Some(id)
    }

    pub(super) fn remove(&mut self, id: u32) -> Option<Umem> {
        let u = self.table.remove(id)?;
        self.entries -= u.mtt.len() as u64;
        Some(u)
    }

    /// `bytes` of umem `id` from `offset`, for an object `caller` creates: the page list the
    /// data path walks. `write`: the device writes there (a CQ's entries, a doorbell record it
    /// initializes), so every page needs the write bit.
    pub fn resolve(&self, caller: u16, id: u32, offset: u64, bytes: u64, write: bool) -> Result<QueueBuf, UmemRefused> {
        let u =
            self.table.get(id).filter(|u| uid::may_reference(caller, u.uid, Kind::Umem)).ok_or(UmemRefused::Unknown)?;
        let end = offset.checked_add(bytes).ok_or(UmemRefused::OutOfRange)?;
        if bytes == 0 || end > u.len() {
            return Err(UmemRefused::OutOfRange);
        }
        let shift = 12 + u.log_page_size as u32;
        let start = u.page_offset + offset;
        let first = (start >> shift) as usize;
        let last = ((u.page_offset + end - 1) >> shift) as usize;
        let mtt = &u.mtt[first..=last];
        if write && mtt.iter().any(|e| e & MTT_WRITE == 0) {
            return Err(UmemRefused::ReadOnly);
        }
        Ok(QueueBuf {
            pas: mtt.iter().map(|e| e & !0xfff).collect(),
            log_page_size: u.log_page_size,
            page_offset: start & ((1u64 << shift) - 1),
        })
    }

    /// The guest address of a doorbell record at `offset` in umem `id` (8 bytes, within one page).
    pub fn dbr_addr(&self, caller: u16, id: u32, offset: u64, write: bool) -> Result<u64, UmemRefused> {
        let b = self.resolve(caller, id, offset, 8, write)?;
        if b.pas.len() != 1 {
            // A record split over two pages: the device reads it as one.
            return Err(UmemRefused::OutOfRange);
        }
        Ok(b.pas[0] + b.page_offset)
    }
}
