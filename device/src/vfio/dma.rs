//! Guest memory as the client maps it for DMA: a translation table from IOVA
//! (guest physical address) to a host mapping of the client's memory fd.
//!
//! Lookups are lock-free: the table is an immutable snapshot behind
//! `ArcSwap`; DMA_MAP/UNMAP publish a new one. A worker doing DMA holds the
//! snapshot (and so every mapping in it) for the duration of one access, so
//! DMA_UNMAP waits until no worker holds a removed mapping before it unmaps
//! it and replies. Guest memory is never referenced as a Rust slice: bytes
//! are copied in and out with volatile accesses.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use thiserror::Error;

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
    host: Option<HostMap>,
}

struct HostMap {
    ptr: *mut u8,
    len: usize,
    backing: Backing,
}

/// What `HostMap::ptr` points into.
enum Backing {
    /// A shared mmap of the client's fd (kept open while mapped).
    Mmap { _fd: OwnedFd },
    /// Tests only: a zeroed heap allocation standing in for the client's
    /// memory, so the accessors can run under Miri (which cannot mmap an fd).
    #[cfg(test)]
    Heap(std::alloc::Layout),
}

// SAFETY: the mapping is process-wide shared memory; all accesses through it
// are volatile or atomic, so sending/sharing the pointer between threads is sound.
unsafe impl Send for HostMap {}
// SAFETY: see above.
unsafe impl Sync for HostMap {}

impl Drop for HostMap {
    fn drop(&mut self) {
        match self.backing {
            // SAFETY: ptr/len came from a successful mmap and nobody else can
            // hold it: the last Arc<Mapping> is being dropped.
            Backing::Mmap { .. } => unsafe {
                libc::munmap(self.ptr.cast(), self.len);
            },
            // SAFETY: ptr came from alloc_zeroed with this layout; as above,
            // nobody else holds it.
            #[cfg(test)]
            Backing::Heap(layout) => unsafe { std::alloc::dealloc(self.ptr, layout) },
        }
    }
}

impl Mapping {
    fn end(&self) -> u64 {
        self.iova + self.size
    }
    fn contains(&self, iova: u64) -> bool {
        iova >= self.iova && iova < self.end()
    }
    /// The host side of an access at `at`, if the client gave an fd and the
    /// mapping allows the access (errors name `at`).
    fn host_for(&self, at: u64, write: bool) -> Result<&HostMap, DmaError> {
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
    pub fn map(&self, iova: u64, size: u64, offset: u64, readable: bool, writable: bool, fd: Option<OwnedFd>) -> Result<(), DmaError> {
        self.map_with(iova, size, readable, writable, || match fd {
            None => Ok(None),
            Some(fd) => Self::mmap(iova, size, offset, readable, writable, fd).map(Some),
        })
    }

    /// Tests only: adds a mapping backed by zeroed heap memory instead of an
    /// mmapped fd (Miri runs the DMA accessors through this).
    #[cfg(test)]
    pub(crate) fn map_heap(&self, iova: u64, size: u64, readable: bool, writable: bool) -> Result<(), DmaError> {
        self.map_with(iova, size, readable, writable, || {
            let layout = std::alloc::Layout::from_size_align(size as usize, PAGE as usize).map_err(|_| DmaError::BadRange { iova, size })?;
            // SAFETY: layout has a non-zero size (map_with refuses size 0).
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
            if ptr.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Ok(Some(HostMap { ptr, len: size as usize, backing: Backing::Heap(layout) }))
        })
    }

    /// Validates a new mapping of `[iova, iova+size)`, then creates its host
    /// side with `host` and publishes it.
    fn map_with(&self, iova: u64, size: u64, readable: bool, writable: bool, host: impl FnOnce() -> Result<Option<HostMap>, DmaError>) -> Result<(), DmaError> {
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

    /// mmaps `size` bytes of the client's `fd` at `offset`, shared.
    fn mmap(iova: u64, size: u64, offset: u64, readable: bool, writable: bool, fd: OwnedFd) -> Result<HostMap, DmaError> {
        let mut prot = 0;
        if readable {
            prot |= libc::PROT_READ;
        }
        if writable {
            prot |= libc::PROT_WRITE;
        }
        let off = libc::off_t::try_from(offset).map_err(|_| DmaError::BadRange { iova, size })?;
        // A mapping past the end of a regular file (memfd, hugetlbfs)
        // would SIGBUS the server on first touch: refuse it here.
        let end = offset.checked_add(size).ok_or(DmaError::BadRange { iova, size })?;
        if let Ok(md) = fd.try_clone().map(std::fs::File::from).and_then(|f| f.metadata()) {
            if md.file_type().is_file() && end > md.len() {
                return Err(DmaError::BadRange { iova, size });
            }
        }
        // SAFETY: mapping a client-provided fd into fresh address
        // space chosen by the kernel; no existing memory is affected.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), size as usize, prot, libc::MAP_SHARED, fd.as_raw_fd(), off) };
        if p == libc::MAP_FAILED {
            return Err(DmaError::Mmap(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL)));
        }
        Ok(HostMap { ptr: p.cast(), len: size as usize, backing: Backing::Mmap { _fd: fd } })
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

    /// Runs `f(host_ptr, len)` over each piece of `[iova, iova+len)`, which
    /// must be fully covered by fd-backed mappings with the needed access.
    fn for_each_chunk(&self, iova: u64, len: usize, write: bool, f: impl FnMut(*mut u8, usize, usize)) -> Result<(), DmaError> {
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

    /// [`DmaSpace::for_each_chunk`] over one snapshot of the table, for
    /// `[iova, end)`; nothing is applied unless the whole range is valid.
    fn chunks(table: &Table, iova: u64, end: u64, write: bool, mut f: impl FnMut(*mut u8, usize, usize)) -> Result<(), DmaError> {
        let len = end - iova;
        // Nearly every access lies inside one mapping: one binary search
        // (the table is sorted by iova), one check, one copy.
        if let Some(m) = Self::lookup(table, iova).filter(|m| end <= m.end()) {
            let host = m.host_for(iova, write)?;
            // SAFETY: iova - m.iova + len <= m.size == host.len (end <= m.end()).
            f(unsafe { host.ptr.add((iova - m.iova) as usize) }, len as usize, 0);
            return Ok(());
        }
        // Two walks over the same snapshot: the first validates the whole
        // range so a failing access has no effect, the second copies (no
        // allocation on this path: it runs for every descriptor and CQE).
        let walk = |apply: &mut dyn FnMut(*mut u8, usize, usize)| -> Result<(), DmaError> {
            let mut at = iova;
            let mut done = 0usize;
            while at < end {
                let m = Self::lookup(table, at).ok_or(DmaError::NotMapped { iova, len })?;
                let host = m.host_for(at, write)?;
                let off = (at - m.iova) as usize;
                let n = ((m.end().min(end)) - at) as usize;
                // SAFETY: off + n <= m.size == host.len, checked above.
                apply(unsafe { host.ptr.add(off) }, n, done);
                at += n as u64;
                done += n;
            }
            Ok(())
        };
        walk(&mut |_, _, _| {})?;
        let res = walk(&mut f);
        debug_assert!(res.is_ok(), "the snapshot validated above cannot fail");
        res
    }

    /// Copies guest memory at `iova` into `buf`.
    pub fn read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.for_each_chunk(iova, buf.len(), false, |p, n, o| {
            // SAFETY: p..p+n lies in a live shared mapping held by the snapshot.
            unsafe { crate::util::volatile_read(p, &mut buf[o..o + n]) };
        })
    }

    /// Copies `buf` into guest memory at `iova`.
    pub fn write(&self, iova: u64, buf: &[u8]) -> Result<(), DmaError> {
        self.for_each_chunk(iova, buf.len(), true, |p, n, o| {
            // SAFETY: p..p+n lies in a live shared mapping held by the snapshot.
            unsafe { crate::util::volatile_write(p, &buf[o..o + n]) };
        })
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
        if iova % 8 != 0 {
            return Err(DmaError::Unaligned(iova));
        }
        let mut old = 0;
        self.for_each_chunk(iova, 8, true, |p, _, _| {
            // SAFETY: p is 8-byte aligned (iova aligned, mappings page aligned)
            // and lies in a live shared mapping; atomics tolerate concurrent
            // guest stores.
            let a = unsafe { AtomicU64::from_ptr(p.cast()) };
            old = match a.compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(v) | Err(v) => v,
            };
        })?;
        Ok(old)
    }

    /// Atomic 64-bit fetch-and-add; returns the old value.
    pub fn fetch_add_u64(&self, iova: u64, add: u64) -> Result<u64, DmaError> {
        if iova % 8 != 0 {
            return Err(DmaError::Unaligned(iova));
        }
        let mut old = 0;
        self.for_each_chunk(iova, 8, true, |p, _, _| {
            // SAFETY: as in compare_and_swap_u64.
            let a = unsafe { AtomicU64::from_ptr(p.cast()) };
            old = a.fetch_add(add, Ordering::SeqCst);
        })?;
        Ok(old)
    }
}

impl crate::engine::GuestMemory for DmaSpace {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), crate::engine::MemFault> {
        DmaSpace::read(self, addr, buf).map_err(|_| crate::engine::MemFault { addr })
    }
    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), crate::engine::MemFault> {
        DmaSpace::write(self, addr, buf).map_err(|_| crate::engine::MemFault { addr })
    }
    fn compare_and_swap_u64(&self, addr: u64, expected: u64, new: u64) -> Result<u64, crate::engine::MemFault> {
        DmaSpace::compare_and_swap_u64(self, addr, expected, new).map_err(|_| crate::engine::MemFault { addr })
    }
    fn fetch_add_u64(&self, addr: u64, add: u64) -> Result<u64, crate::engine::MemFault> {
        DmaSpace::fetch_add_u64(self, addr, add).map_err(|_| crate::engine::MemFault { addr })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::memfd;

    /// Maps `size` bytes of fresh zeroed memory at `iova`: a memfd, or under
    /// Miri (no memfd, no mmap of an fd) a heap allocation, so that Miri
    /// checks the volatile and atomic accessors.
    fn map_mem(s: &DmaSpace, iova: u64, size: u64, readable: bool, writable: bool) -> Result<(), DmaError> {
        if cfg!(miri) {
            s.map_heap(iova, size, readable, writable)
        } else {
            s.map(iova, size, 0, readable, writable, Some(memfd("t", size).unwrap()))
        }
    }

    fn space_with(len: u64) -> DmaSpace {
        let s = DmaSpace::new(8);
        map_mem(&s, 0x10000, len, true, true).unwrap();
        s
    }

    #[test]
    fn read_write_inside_and_outside() {
        let s = space_with(0x2000);
        s.write(0x10ffe, &[1, 2, 3, 4]).unwrap();
        let mut b = [0u8; 4];
        s.read(0x10ffe, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4]);
        assert!(matches!(s.read(0x11ffe, &mut b), Err(DmaError::NotMapped { .. })));
        assert!(matches!(s.write(0xfffe, &b), Err(DmaError::NotMapped { .. })));
        assert!(matches!(s.read(u64::MAX - 1, &mut b), Err(DmaError::NotMapped { .. })));
        assert_eq!(s.stats.faults.load(Ordering::Relaxed), 3);
    }

    /// A DMA_MAP reaching past the end of its file (which would SIGBUS the
    /// server on the first guest access there) is refused; one that fits,
    /// at an offset, is accepted.
    #[test]
    #[cfg_attr(miri, ignore = "memfd_create and mmap of an fd are not supported by Miri")]
    fn mapping_past_the_end_of_its_file_is_refused() {
        let fd = memfd("short", 0x2000).unwrap();
        let s = DmaSpace::new(8);
        let r = s.map(0x10000, 0x3000, 0, true, true, Some(fd.try_clone().unwrap()));
        assert!(matches!(r, Err(DmaError::BadRange { .. })), "{r:?}");
        let r = s.map(0x10000, 0x2000, 0x1000, true, true, Some(fd.try_clone().unwrap()));
        assert!(matches!(r, Err(DmaError::BadRange { .. })), "{r:?}");
        assert!(s.mappings().is_empty());
        s.map(0x10000, 0x1000, 0x1000, true, true, Some(fd)).unwrap();
        s.write(0x10ff8, &[7; 8]).unwrap();
    }

    #[test]
    fn adjacent_mappings_are_one_range() {
        let s = DmaSpace::new(8);
        map_mem(&s, 0x1000, 0x1000, true, true).unwrap();
        map_mem(&s, 0x2000, 0x1000, true, true).unwrap();
        s.write(0x1ffc, &[9; 8]).unwrap();
        let mut x = [0u8; 8];
        s.read(0x1ffc, &mut x).unwrap();
        assert_eq!(x, [9; 8]);
    }

    /// Mappings made out of order, with gaps and a read-only one: every
    /// access finds its own mapping (the lookup is a binary search), a gap
    /// or a protection violation is refused and leaves memory untouched.
    #[test]
    fn lookup_among_many_mappings() {
        let s = DmaSpace::new(16);
        for i in [5u64, 1, 7, 3, 0, 6] {
            map_mem(&s, 0x10000 + i * 0x2000, 0x1000, true, i != 3).unwrap();
        }
        for i in [0u64, 1, 5, 6, 7] {
            s.write(0x10000 + i * 0x2000 + 0x800, &[i as u8 + 1; 4]).unwrap();
        }
        for i in [0u64, 1, 5, 6, 7] {
            let mut b = [0u8; 4];
            s.read(0x10000 + i * 0x2000 + 0x800, &mut b).unwrap();
            assert_eq!(b, [i as u8 + 1; 4], "mapping {i}");
        }
        let mut b = [0u8; 4];
        assert!(matches!(s.read(0x11800, &mut b), Err(DmaError::NotMapped { .. })), "gap after mapping 0");
        assert!(matches!(s.read(0x10ffe, &mut b), Err(DmaError::NotMapped { .. })), "runs into the gap");
        assert!(matches!(s.read(0x8000, &mut b), Err(DmaError::NotMapped { .. })), "below every mapping");
        assert!(matches!(s.read(0x1f000, &mut b), Err(DmaError::NotMapped { .. })), "above every mapping");
        assert!(matches!(s.write(0x16800, &[1; 4]), Err(DmaError::Protection(_))), "read-only mapping");
        s.read(0x16800, &mut b).unwrap();
        assert_eq!(b, [0; 4], "the refused write left the read-only mapping alone");
        assert_eq!(s.stats.faults.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn map_validation() {
        let s = space_with(0x1000);
        assert_eq!(map_mem(&s, 0x10000, 0x1000, true, true), Err(DmaError::Overlap(0x10000)));
        assert!(matches!(s.map(0x20001, 0x1000, 0, true, true, None), Err(DmaError::BadRange { .. })));
        assert!(matches!(s.map(0x20000, 0, 0, true, true, None), Err(DmaError::BadRange { .. })));
        assert!(matches!(s.map(u64::MAX - 0xfff, 0x2000, 0, true, true, None), Err(DmaError::BadRange { .. })));
        assert!(matches!(s.map_heap(0x20001, 0x1000, true, true), Err(DmaError::BadRange { .. })));
        // No fd: recorded, but not reachable.
        s.map(0xc0000, 0x1000, 0, true, false, None).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(s.read(0xc0000, &mut b), Err(DmaError::NoFd(0xc0000)));
        // Read-only mapping refuses writes.
        map_mem(&s, 0x30000, 0x1000, true, false).unwrap();
        assert_eq!(s.write(0x30000, &b), Err(DmaError::Protection(0x30000)));
    }

    #[test]
    fn unmap_rules() {
        let s = space_with(0x2000);
        assert_eq!(s.unmap(0x10000, 0x1000), Err(DmaError::Split(0x10000)));
        assert_eq!(s.unmap(0x50000, 0x1000), Ok(0));
        assert_eq!(s.unmap(0x10000, 0x2000), Ok(0x2000));
        assert!(s.is_empty());
    }

    #[test]
    fn unmap_waits_for_inflight_access() {
        let s = space_with(0x1000);
        let s = Arc::new(s);
        let holder = s.table.load_full(); // a worker mid-access
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.unmap(0x10000, 0x1000));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!t.is_finished(), "unmap must wait for the in-flight snapshot");
        drop(holder);
        assert_eq!(t.join().unwrap(), Ok(0x1000));
    }

    #[test]
    fn atomics() {
        let s = space_with(0x1000);
        s.write(0x10008, &5u64.to_ne_bytes()).unwrap();
        assert_eq!(s.compare_and_swap_u64(0x10008, 5, 7), Ok(5));
        assert_eq!(s.compare_and_swap_u64(0x10008, 5, 9), Ok(7));
        assert_eq!(s.fetch_add_u64(0x10008, 3), Ok(7));
        assert_eq!(s.read_u64_be(0x10008).map(u64::swap_bytes), Ok(10));
        assert_eq!(s.fetch_add_u64(0x10004, 1), Err(DmaError::Unaligned(0x10004)));
    }
}
