//! Copies to and from memory another process (the guest, QEMU) may write at
//! any time: volatile accesses only, never a Rust reference.

/// Copies `dst.len()` bytes out of memory another process (the guest) may
/// write at any time: volatile loads only, 8 bytes at a time once `src` is
/// 8-aligned (every payload takes this path, so it copies words, not bytes;
/// the engine bench prints its speed next to memcpy's).
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
}
