//! Guest memory as the client maps it for DMA: a translation table from IOVA
//! (guest physical address) to a host mapping of the client's memory fd.
//!
//! Lookups are lock-free: the table is an immutable snapshot behind
//! `ArcSwap`; DMA_MAP/UNMAP publish a new one. A worker doing DMA holds the
//! snapshot (and so every mapping in it) for the duration of one access, so
//! DMA_UNMAP waits until no worker holds a removed mapping before it unmaps
//! it and replies. Guest memory is never referenced as a Rust slice: bytes
//! are copied in and out with volatile accesses.
//!
//! Each mapping's host side is a vm-memory [`MmapRegion`] (the mmap of the
//! client's fd at its offset, unmapped on drop, with a dirty-page log slot
//! for live migration); accesses go through its bounds-checked
//! [`VolatileSlice`]s. The table, protection, fd-less mappings and the wait
//! on DMA_UNMAP are ours: vm-memory's `GuestMemoryMmap` has none of them.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use thiserror::Error;
use vm_memory::bitmap::{AtomicBitmap, Bitmap};
use vm_memory::mmap::{MmapRegion, MmapRegionBuilder, MmapRegionError};
use vm_memory::{FileOffset, VolatileMemory, VolatileSlice};

/// Errors of the translation table and of device-initiated accesses.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DmaError {
    /// Some byte of the access is not covered by any mapping.
    #[error("dma {len:#x} bytes at {iova:#x} outside guest mappings")]
    NotMapped { iova: u64, len: u64 },
    /// The range is mapped but the client gave no fd, so the server cannot reach it.
    #[error("dma at {0:#x} hits a mapping without fd")]
    NoFd(u64),
    /// Write to a mapping the client marked read-only (or read of write-only).
    #[error("dma at {0:#x} violates mapping protection")]
    Protection(u64),
    /// DMA_MAP arguments: zero size, overflow or misalignment.
    #[error("bad dma range {iova:#x}+{size:#x}")]
    BadRange { iova: u64, size: u64 },
    /// DMA_MAP overlapping an existing mapping.
    #[error("dma range {0:#x} overlaps an existing mapping")]
    Overlap(u64),
    /// DMA_UNMAP that would split a mapping.
    #[error("unmap of {0:#x} splits a mapping")]
    Split(u64),
    /// Too many mappings.
    #[error("too many dma mappings")]
    TooMany,
    /// mmap of the client's fd failed.
    #[error("mmap failed: errno {0}")]
    Mmap(i32),
    /// A compare-and-swap or atomic needs natural alignment.
    #[error("unaligned atomic at {0:#x}")]
    Unaligned(u64),
}

impl DmaError {
    /// The errno the vfio-user reply carries.
    pub fn errno(&self) -> i32 {
        match self {
            DmaError::Overlap(_) => libc::EEXIST,
            DmaError::TooMany => libc::ENOSPC,
            DmaError::Mmap(e) => *e,
            DmaError::NotMapped { .. } => libc::ENOENT,
            _ => libc::EINVAL,
        }
    }
}

/// One host mapping of a client memory range.
pub struct Mapping {
    pub iova: u64,
    pub size: u64,
    pub readable: bool,
    pub writable: bool,
    host: Option<Region>,
}

/// The dirty-page log of a mapping: none yet (no live migration); with
/// `Some(AtomicBitmap)` every device write marks its pages.
pub type DirtyLog = Option<AtomicBitmap>;

/// The host side of a mapping: the client's fd mmapped shared (the region
/// keeps the fd open and unmaps on drop), or in tests anonymous memory.
type Region = MmapRegion<DirtyLog>;

impl Mapping {
    fn end(&self) -> u64 {
        self.iova + self.size
    }
    fn contains(&self, iova: u64) -> bool {
        iova >= self.iova && iova < self.end()
    }
    /// The host side of an access at `at`, if the client gave an fd and the
    /// mapping allows the access (errors name `at`).
    fn host_for(&self, at: u64, write: bool) -> Result<&Region, DmaError> {
        let host = self.host.as_ref().ok_or(DmaError::NoFd(at))?;
        if (write && !self.writable) || (!write && !self.readable) {
            return Err(DmaError::Protection(at));
        }
        Ok(host)
    }
}

type Table = Vec<Arc<Mapping>>;

/// Statistics exported to the control socket.
#[derive(Default, serde::Serialize)]
pub struct DmaStats {
    pub maps: AtomicU64,
    pub unmaps: AtomicU64,
    pub faults: AtomicU64,
}

/// The DMA address space of one client connection.
pub struct DmaSpace {
    table: ArcSwap<Table>,
    max_maps: usize,
    pub stats: DmaStats,
    /// Accesses currently in flight (for diagnostics).
    inflight: AtomicU32,
}

impl Default for DmaSpace {
    fn default() -> Self {
        Self::new(4096)
    }
}

const PAGE: u64 = 4096;

impl DmaSpace {
    pub fn new(max_maps: usize) -> DmaSpace {
        DmaSpace {
            table: ArcSwap::from_pointee(Vec::new()),
            max_maps,
            stats: DmaStats::default(),
            inflight: AtomicU32::new(0),
        }
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.table.load().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a mapping; with `fd` the range is mmapped shared at `offset`.
    pub fn map(
        &self,
        iova: u64,
        size: u64,
        offset: u64,
        readable: bool,
        writable: bool,
        fd: Option<OwnedFd>,
    ) -> Result<(), DmaError> {
        self.map_with(iova, size, readable, writable, || match fd {
            None => Ok(None),
            Some(fd) => Self::mmap(iova, size, offset, readable, writable, fd).map(Some),
        })
    }

    /// Tests only: adds a mapping backed by zeroed anonymous memory instead
    /// of an mmapped fd (under Miri, where vm-memory allocates it, the DMA
    /// accessors run through this).
    #[cfg(test)]
    pub(crate) fn map_heap(&self, iova: u64, size: u64, readable: bool, writable: bool) -> Result<(), DmaError> {
        self.map_with(iova, size, readable, writable, || {
            let region = MmapRegionBuilder::new_with_bitmap(size as usize, None)
                .with_mmap_prot(Self::prot(readable, writable))
                .with_mmap_flags(libc::MAP_ANONYMOUS | libc::MAP_PRIVATE)
                .build()
                .map_err(|e| Self::mmap_error(e, iova, size))?;
            Ok(Some(region))
        })
    }

    /// Validates a new mapping of `[iova, iova+size)`, then creates its host
    /// side with `host` and publishes it.
    fn map_with(
        &self,
        iova: u64,
        size: u64,
        readable: bool,
        writable: bool,
        host: impl FnOnce() -> Result<Option<Region>, DmaError>,
    ) -> Result<(), DmaError> {
        let end = iova.checked_add(size);
        if size == 0 || end.is_none() || iova % PAGE != 0 || size % PAGE != 0 || usize::try_from(size).is_err() {
            return Err(DmaError::BadRange { iova, size });
        }
        let end = end.unwrap_or(u64::MAX);
        let cur = self.table.load_full();
        if cur.len() >= self.max_maps {
            return Err(DmaError::TooMany);
        }
        if let Some(m) = cur.iter().find(|m| iova < m.end() && m.iova < end) {
            return Err(DmaError::Overlap(m.iova));
        }
        let host = host()?;
        let mut next: Table = (*cur).clone();
        next.push(Arc::new(Mapping { iova, size, readable, writable, host }));
        next.sort_by_key(|m| m.iova);
        // Control thread is the only writer, so a plain store is race-free.
        self.table.store(Arc::new(next));
        self.stats.maps.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn prot(readable: bool, writable: bool) -> i32 {
        let mut prot = 0;
        if readable {
            prot |= libc::PROT_READ;
        }
        if writable {
            prot |= libc::PROT_WRITE;
        }
        prot
    }

    fn mmap_error(e: MmapRegionError, iova: u64, size: u64) -> DmaError {
        match e {
            MmapRegionError::Mmap(e) => DmaError::Mmap(e.raw_os_error().unwrap_or(libc::EINVAL)),
            _ => DmaError::BadRange { iova, size },
        }
    }

    /// mmaps `size` bytes of the client's `fd` at `offset`, shared.
    fn mmap(
        iova: u64,
        size: u64,
        offset: u64,
        readable: bool,
        writable: bool,
        fd: OwnedFd,
    ) -> Result<Region, DmaError> {
        libc::off_t::try_from(offset).map_err(|_| DmaError::BadRange { iova, size })?;
        // A mapping past the end of a regular file (memfd, hugetlbfs)
        // would SIGBUS the server on first touch: refuse it here.
        let end = offset.checked_add(size).ok_or(DmaError::BadRange { iova, size })?;
        let file = std::fs::File::from(fd);
        if let Ok(md) = file.metadata() {
            if md.file_type().is_file() && end > md.len() {
                return Err(DmaError::BadRange { iova, size });
            }
        }
        MmapRegionBuilder::new_with_bitmap(size as usize, None)
            .with_file_offset(FileOffset::new(file, offset))
            .with_mmap_prot(Self::prot(readable, writable))
            .with_mmap_flags(libc::MAP_SHARED)
            .build()
            .map_err(|e| Self::mmap_error(e, iova, size))
    }

    /// Removes every mapping inside `[iova, iova+size)` and waits until no
    /// in-flight access uses them; returns the bytes unmapped.
    pub fn unmap(&self, iova: u64, size: u64) -> Result<u64, DmaError> {
        let end = iova.checked_add(size).ok_or(DmaError::BadRange { iova, size })?;
        let cur = self.table.load_full();
        let mut keep = Vec::new();
        let mut gone = Vec::new();
        for m in cur.iter() {
            let overlaps = m.iova < end && iova < m.end();
            if !overlaps {
                keep.push(m.clone());
            } else if m.iova >= iova && m.end() <= end {
                gone.push(m.clone());
            } else {
                return Err(DmaError::Split(m.iova));
            }
        }
        self.table.store(Arc::new(keep));
        drop(cur);
        Ok(self.retire(gone))
    }

    /// Removes all mappings (DMA_UNMAP_FLAG_ALL, disconnect, reset).
    pub fn clear(&self) -> u64 {
        let cur = self.table.swap(Arc::new(Vec::new()));
        let gone: Vec<_> = cur.iter().cloned().collect();
        drop(cur);
        self.retire(gone)
    }

    fn retire(&self, gone: Vec<Arc<Mapping>>) -> u64 {
        let mut bytes = 0;
        for m in gone {
            bytes += m.size;
            let t0 = Instant::now();
            // Our clone is one reference; the old table snapshot may still be
            // held by a worker mid-access. Wait for those to finish.
            while Arc::strong_count(&m) > 1 {
                if t0.elapsed() > Duration::from_secs(5) {
                    tracing::warn!(iova = m.iova, "dma unmap still waiting for in-flight access");
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            self.stats.unmaps.fetch_add(1, Ordering::Relaxed);
        }
        bytes
    }

    /// Snapshot of (iova, size, has_fd) for diagnostics and tests.
    pub fn mappings(&self) -> Vec<(u64, u64, bool)> {
        self.table.load().iter().map(|m| (m.iova, m.size, m.host.is_some())).collect()
    }

    /// The mapping containing `at` (the table is sorted by iova and its
    /// mappings do not overlap).
    fn lookup(table: &Table, at: u64) -> Option<&Arc<Mapping>> {
        let i = table.partition_point(|m| m.iova <= at);
        i.checked_sub(1).map(|i| &table[i]).filter(|m| m.contains(at))
    }

    /// Runs `f(slice, done)` over each piece of `[iova, iova+len)` (`done`:
    /// the bytes before it), which must be fully covered by fd-backed
    /// mappings with the needed access.
    fn for_each_chunk(
        &self,
        iova: u64,
        len: usize,
        write: bool,
        f: impl FnMut(Piece<'_>, usize),
    ) -> Result<(), DmaError> {
        if len == 0 {
            return Ok(());
        }
        let Some(end) = iova.checked_add(len as u64) else {
            self.stats.faults.fetch_add(1, Ordering::Relaxed);
            return Err(DmaError::NotMapped { iova, len: len as u64 });
        };
        let table = self.table.load();
        self.inflight.fetch_add(1, Ordering::Relaxed);
        let res = Self::chunks(&table, iova, end, write, f);
        self.inflight.fetch_sub(1, Ordering::Relaxed);
        if res.is_err() {
            self.stats.faults.fetch_add(1, Ordering::Relaxed);
        }
        res
    }

    /// The piece `[off, off+n)` of `region` (inside it: checked by the caller).
    fn piece(region: &Region, off: usize, n: usize) -> Result<Piece<'_>, DmaError> {
        let slice = region.get_slice(off, n).map_err(|_| DmaError::NotMapped { iova: off as u64, len: n as u64 })?;
        Ok(Piece { slice, log: region.bitmap(), off })
    }

    /// [`DmaSpace::for_each_chunk`] over one snapshot of the table, for
    /// `[iova, end)`; nothing is applied unless the whole range is valid.
    fn chunks(
        table: &Table,
        iova: u64,
        end: u64,
        write: bool,
        mut f: impl FnMut(Piece<'_>, usize),
    ) -> Result<(), DmaError> {
        let len = end - iova;
        // Nearly every access lies inside one mapping: one binary search
        // (the table is sorted by iova), one check, one copy.
        if let Some(m) = Self::lookup(table, iova).filter(|m| end <= m.end()) {
            let host = m.host_for(iova, write)?;
            f(Self::piece(host, (iova - m.iova) as usize, len as usize)?, 0);
            return Ok(());
        }
        // Two walks over the same snapshot: the first validates the whole
        // range so a failing access has no effect, the second copies (no
        // allocation on this path: it runs for every descriptor and CQE).
        let walk = |apply: &mut dyn FnMut(Piece<'_>, usize)| -> Result<(), DmaError> {
            let mut at = iova;
            let mut done = 0usize;
            while at < end {
                let m = Self::lookup(table, at).ok_or(DmaError::NotMapped { iova, len })?;
                let host = m.host_for(at, write)?;
                let off = (at - m.iova) as usize;
                let n = ((m.end().min(end)) - at) as usize;
                apply(Self::piece(host, off, n)?, done);
                at += n as u64;
                done += n;
            }
            Ok(())
        };
        walk(&mut |_, _| {})?;
        let res = walk(&mut f);
        debug_assert!(res.is_ok(), "the snapshot validated above cannot fail");
        res
    }

    /// Copies guest memory at `iova` into `buf`.
    pub fn read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.for_each_chunk(iova, buf.len(), false, |p, o| p.read(&mut buf[o..o + p.len()]))
    }

    /// Copies `buf` into guest memory at `iova`.
    pub fn write(&self, iova: u64, buf: &[u8]) -> Result<(), DmaError> {
        self.for_each_chunk(iova, buf.len(), true, |p, o| p.write(&buf[o..o + p.len()]))
    }

    pub fn read_u32_be(&self, iova: u64) -> Result<u32, DmaError> {
        let mut b = [0u8; 4];
        self.read(iova, &mut b)?;
        Ok(u32::from_be_bytes(b))
    }

    pub fn read_u64_be(&self, iova: u64) -> Result<u64, DmaError> {
        let mut b = [0u8; 8];
        self.read(iova, &mut b)?;
        Ok(u64::from_be_bytes(b))
    }

    /// Atomic 64-bit compare-and-swap on guest memory (native byte order of
    /// the stored value is the caller's business); returns the old value.
    pub fn compare_and_swap_u64(&self, iova: u64, expected: u64, new: u64) -> Result<u64, DmaError> {
        self.atomic_u64(iova, |a| match a.compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(v) | Err(v) => v,
        })
    }

    /// Atomic 64-bit fetch-and-add; returns the old value.
    pub fn fetch_add_u64(&self, iova: u64, add: u64) -> Result<u64, DmaError> {
        self.atomic_u64(iova, |a| a.fetch_add(add, Ordering::SeqCst))
    }

    /// Runs `op` on the naturally aligned 8 bytes at `iova` as an atomic
    /// (atomics tolerate concurrent guest stores); returns what it returns.
    fn atomic_u64(&self, iova: u64, op: impl FnOnce(&AtomicU64) -> u64) -> Result<u64, DmaError> {
        if iova % 8 != 0 {
            return Err(DmaError::Unaligned(iova));
        }
        let mut op = Some(op);
        let mut old = Err(DmaError::Unaligned(iova));
        self.for_each_chunk(iova, 8, true, |p, _| {
            // Aligned: iova is, and mappings are page aligned.
            if let (Ok(a), Some(op)) = (p.slice.get_atomic_ref::<AtomicU64>(0), op.take()) {
                old = Ok(op(a));
                p.log.mark_dirty(p.off, 8);
            }
        })?;
        old
    }
}

/// One piece of an access: a bounds-checked slice of one mapping's region,
/// and the region's dirty log with the slice's offset in it.
struct Piece<'a> {
    slice: VolatileSlice<'a, vm_memory::bitmap::BS<'a, DirtyLog>>,
    log: &'a DirtyLog,
    off: usize,
}

impl Piece<'_> {
    fn len(&self) -> usize {
        self.slice.len()
    }

    /// Copies the piece into `buf` (as long as the piece).
    fn read(&self, buf: &mut [u8]) {
        let n = buf.len().min(self.slice.len());
        let g = self.slice.ptr_guard();
        // SAFETY: the guard's pointer covers the slice's bytes, at least n, in
        // a live shared mapping the table snapshot holds.
        unsafe { vrnic_sys::volatile_read(g.as_ptr().cast_mut(), &mut buf[..n]) };
    }

    /// Copies `buf` (as long as the piece) into the piece, marking its pages dirty.
    fn write(&self, buf: &[u8]) {
        let n = buf.len().min(self.slice.len());
        let g = self.slice.ptr_guard_mut();
        // SAFETY: as in read; the mapping is writable (checked by host_for).
        unsafe { vrnic_sys::volatile_write(g.as_ptr(), &buf[..n]) };
        self.log.mark_dirty(self.off, n);
    }
}

#[cfg(test)]
#[path = "dma_tests.rs"]
mod tests;
