//! A shared mapping of a memory fd, accessed only with volatile and atomic
//! operations.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::volatile::{volatile_read, volatile_write};

/// A shared mapping of a memory fd that other processes (QEMU, the guest)
/// may write at any time. Never exposed as a Rust slice.
pub struct SharedMem {
    ptr: *mut u8,
    len: usize,
    /// Tests only: the layout when the memory is a heap allocation
    /// ([`SharedMem::heap`]) rather than a mapping.
    #[cfg(test)]
    heap: Option<std::alloc::Layout>,
}

// SAFETY: all accesses are volatile or atomic on process-shared memory.
unsafe impl Send for SharedMem {}
// SAFETY: see above.
unsafe impl Sync for SharedMem {}

impl SharedMem {
    /// Maps `len` bytes of `fd` read-write, shared.
    pub fn map(fd: &OwnedFd, len: usize) -> io::Result<SharedMem> {
        // SAFETY: maps a memfd we own into fresh address space.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedMem {
            ptr: p.cast(),
            len,
            #[cfg(test)]
            heap: None,
        })
    }

    /// Tests only: `len` zeroed, page-aligned bytes on the heap instead of a
    /// mapping, so the accessors can run under Miri (which cannot mmap an fd).
    #[cfg(test)]
    pub(crate) fn heap(len: usize) -> SharedMem {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096).expect("layout");
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        SharedMem { ptr, len, heap: Some(layout) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, off: usize, n: usize) -> bool {
        off.checked_add(n).is_some_and(|e| e <= self.len)
    }

    /// Copies out; returns false (and leaves `buf` untouched) if out of range.
    pub fn read(&self, off: usize, buf: &mut [u8]) -> bool {
        if !self.check(off, buf.len()) {
            return false;
        }
        // SAFETY: off..off+len(buf) is inside the live mapping (checked).
        unsafe { volatile_read(self.ptr.add(off), buf) };
        true
    }

    /// Copies in; returns false if out of range.
    pub fn write(&self, off: usize, buf: &[u8]) -> bool {
        if !self.check(off, buf.len()) {
            return false;
        }
        // SAFETY: off..off+len(buf) is inside the live mapping (checked).
        unsafe { volatile_write(self.ptr.add(off), buf) };
        true
    }

    /// Fills a range with one byte value.
    pub fn fill(&self, off: usize, n: usize, v: u8) -> bool {
        if !self.check(off, n) {
            return false;
        }
        for i in 0..n {
            // SAFETY: off+i < len.
            unsafe { std::ptr::write_volatile(self.ptr.add(off + i), v) };
        }
        true
    }

    /// Atomically exchanges the aligned u64 at `off`; None if out of range or unaligned.
    pub fn swap_u64(&self, off: usize, v: u64) -> Option<u64> {
        if off % 8 != 0 || !self.check(off, 8) {
            return None;
        }
        // SAFETY: aligned (mapping is page aligned, off % 8 == 0) and in range;
        // the atomic type tolerates concurrent stores by the guest.
        let a = unsafe { AtomicU64::from_ptr(self.ptr.add(off).cast()) };
        Some(a.swap(v, Ordering::AcqRel))
    }

    /// Atomically loads the aligned u64 at `off`.
    pub fn load_u64(&self, off: usize) -> Option<u64> {
        if off % 8 != 0 || !self.check(off, 8) {
            return None;
        }
        // SAFETY: as in swap_u64.
        let a = unsafe { AtomicU64::from_ptr(self.ptr.add(off).cast()) };
        Some(a.load(Ordering::Acquire))
    }

    /// Atomic compare-and-swap of the aligned u64 at `off`; returns the old value.
    pub fn compare_and_swap_u64(&self, off: usize, expected: u64, new: u64) -> Option<u64> {
        if off % 8 != 0 || !self.check(off, 8) {
            return None;
        }
        // SAFETY: aligned and in range, as in swap_u64.
        let a = unsafe { AtomicU64::from_ptr(self.ptr.add(off).cast()) };
        Some(match a.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(v) | Err(v) => v,
        })
    }

    /// Atomic fetch-and-add of the aligned u64 at `off`; returns the old value.
    pub fn fetch_add_u64(&self, off: usize, v: u64) -> Option<u64> {
        if off % 8 != 0 || !self.check(off, 8) {
            return None;
        }
        // SAFETY: aligned and in range, as in swap_u64.
        let a = unsafe { AtomicU64::from_ptr(self.ptr.add(off).cast()) };
        Some(a.fetch_add(v, Ordering::AcqRel))
    }

    /// Atomically loads the aligned u32 at `off`.
    pub fn load_u32(&self, off: usize) -> Option<u32> {
        if off % 4 != 0 || !self.check(off, 4) {
            return None;
        }
        // SAFETY: as in swap_u64, with 4-byte alignment.
        let a = unsafe { AtomicU32::from_ptr(self.ptr.add(off).cast()) };
        Some(a.load(Ordering::Acquire))
    }

    /// Atomically exchanges the aligned u32 at `off`.
    pub fn swap_u32(&self, off: usize, v: u32) -> Option<u32> {
        if off % 4 != 0 || !self.check(off, 4) {
            return None;
        }
        // SAFETY: as in swap_u64, with 4-byte alignment.
        let a = unsafe { AtomicU32::from_ptr(self.ptr.add(off).cast()) };
        Some(a.swap(v, Ordering::AcqRel))
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        #[cfg(test)]
        if let Some(layout) = self.heap {
            // SAFETY: ptr came from alloc_zeroed with this layout.
            unsafe { std::alloc::dealloc(self.ptr, layout) };
            return;
        }
        // SAFETY: ptr/len came from our own successful mmap.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memfd;

    #[test]
    fn shared_mem_bounds() {
        // Under Miri (no memfd, no mmap of an fd) the same checks run on heap memory.
        let m =
            if cfg!(miri) { SharedMem::heap(4096) } else { SharedMem::map(&memfd("x", 4096).unwrap(), 4096).unwrap() };
        assert!(m.write(4092, &[1, 2, 3, 4]));
        assert!(!m.write(4093, &[1, 2, 3, 4]));
        assert!(!m.read(usize::MAX, &mut [0u8; 2]));
        let mut b = [0u8; 4];
        assert!(m.read(4092, &mut b));
        assert_eq!(b, [1, 2, 3, 4]);
        assert_eq!(m.swap_u64(8, 7), Some(0));
        assert_eq!(m.swap_u64(8, 0), Some(7));
        assert_eq!(m.swap_u64(9, 0), None);
        assert_eq!(m.swap_u64(4096, 0), None);
        assert_eq!(m.compare_and_swap_u64(16, 0, 5), Some(0));
        assert_eq!(m.fetch_add_u64(16, 2), Some(5));
        assert_eq!(m.load_u64(16), Some(7));
        assert_eq!(m.swap_u32(4092, 0), Some(u32::from_ne_bytes([1, 2, 3, 4])));
        assert_eq!(m.swap_u32(4094, 0), None);
        assert!(m.fill(32, 8, 0xab) && !m.fill(4090, 8, 0));
        assert_eq!(m.load_u64(32), Some(u64::from_ne_bytes([0xab; 8])));
    }
}
