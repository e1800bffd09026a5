//! Small OS edges: memfds and a shared-memory window accessed only
//! with volatile/atomic operations.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Creates a sealed-size anonymous memory file of `len` bytes.
pub fn memfd(name: &str, len: u64) -> io::Result<OwnedFd> {
    let cname = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: cname is a valid NUL-terminated string; the returned fd is new.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just created and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: plain syscall on an fd we own.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Copies `dst.len()` bytes out of memory another process (the guest) may
/// write at any time: volatile loads only, 8 bytes at a time once `src` is
/// 8-aligned (a byte loop is ~8x slower and this is every payload's path).
///
/// # Safety
/// `src..src + dst.len()` must stay mapped and readable during the call.
pub unsafe fn volatile_read(src: *const u8, dst: &mut [u8]) {
    let n = dst.len();
    let head = ((src as usize).wrapping_neg() & 7).min(n);
    let mut i = 0;
    while i < head {
        // SAFETY: i < n, inside the caller's range.
        dst[i] = unsafe { std::ptr::read_volatile(src.add(i)) };
        i += 1;
    }
    while i + 8 <= n {
        // SAFETY: src + i is 8-aligned (past the head) and i + 8 <= n.
        let w = unsafe { std::ptr::read_volatile(src.add(i).cast::<u64>()) };
        dst[i..i + 8].copy_from_slice(&w.to_ne_bytes());
        i += 8;
    }
    while i < n {
        // SAFETY: i < n.
        dst[i] = unsafe { std::ptr::read_volatile(src.add(i)) };
        i += 1;
    }
}

/// Copies `src` into memory another process may read or write at any time
/// (volatile stores, 8 bytes at a time once `dst` is 8-aligned).
///
/// # Safety
/// `dst..dst + src.len()` must stay mapped and writable during the call.
pub unsafe fn volatile_write(dst: *mut u8, src: &[u8]) {
    let n = src.len();
    let head = ((dst as usize).wrapping_neg() & 7).min(n);
    let mut i = 0;
    while i < head {
        // SAFETY: i < n, inside the caller's range.
        unsafe { std::ptr::write_volatile(dst.add(i), src[i]) };
        i += 1;
    }
    while i + 8 <= n {
        let mut w = [0u8; 8];
        w.copy_from_slice(&src[i..i + 8]);
        // SAFETY: dst + i is 8-aligned (past the head) and i + 8 <= n.
        unsafe { std::ptr::write_volatile(dst.add(i).cast::<u64>(), u64::from_ne_bytes(w)) };
        i += 8;
    }
    while i < n {
        // SAFETY: i < n.
        unsafe { std::ptr::write_volatile(dst.add(i), src[i]) };
        i += 1;
    }
}

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
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
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

    /// Every alignment of source and destination, every length around the
    /// 8-byte word: bytes land exactly, nothing outside the range is touched.
    #[test]
    fn volatile_copies_every_alignment_and_length() {
        let pattern: Vec<u8> = (0..96u32).map(|i| (i * 7 + 3) as u8).collect();
        for off in 0..9usize {
            for len in 0..40usize {
                for slice_off in [0usize, 3] {
                    // read: shared side at `off`, into a slice at `slice_off`
                    let mut out = vec![0xeeu8; len + slice_off + 2];
                    // SAFETY: pattern[off..off+len] is in bounds (off + len <= 48 < 96).
                    unsafe { volatile_read(pattern.as_ptr().add(off), &mut out[slice_off..slice_off + len]) };
                    assert_eq!(&out[slice_off..slice_off + len], &pattern[off..off + len], "read off {off} len {len}");
                    assert!(out[..slice_off].iter().chain(&out[slice_off + len..]).all(|&b| b == 0xee));
                    // write: from the pattern into a buffer at `off`
                    let mut mem = vec![0xeeu8; 64];
                    // SAFETY: mem[off..off+len] is in bounds.
                    unsafe { volatile_write(mem.as_mut_ptr().add(off), &pattern[slice_off..slice_off + len]) };
                    assert_eq!(&mem[off..off + len], &pattern[slice_off..slice_off + len], "write off {off} len {len}");
                    assert!(mem[..off].iter().chain(&mem[off + len..]).all(|&b| b == 0xee));
                }
            }
        }
    }

    #[test]
    fn shared_mem_bounds() {
        // Under Miri (no memfd, no mmap of an fd) the same checks run on heap memory.
        let m = if cfg!(miri) { SharedMem::heap(4096) } else { SharedMem::map(&memfd("x", 4096).unwrap(), 4096).unwrap() };
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
