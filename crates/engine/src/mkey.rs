//! Memory keys: how a key translates an address range into guest physical
//! chunks, directly (physical, MTT pages, device memory) or indirectly, through
//! a list of other keys (KLM: entries of any length one after another; KSM:
//! entries of one fixed size), and what a refused access is.

use super::objects::Access;

/// How a memory key translates addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Translation {
    /// Virtual address == guest physical address.
    Physical,
    /// Pages of `1 << page_shift` bytes; `pages[i]` is the guest physical address of page i.
    Mtt { page_shift: u8, pages: Vec<u64> },
    /// On-device memory (MEMIC): virtual address `start` is device-memory
    /// offset `base`; addresses come out tagged with [`DEVICE_MEMORY`].
    DeviceMemory { base: u64 },
    /// Indirect, entries of any length (KLM): from the key's `start`, each
    /// entry's `len` bytes, one after another, are its key's bytes at its `va`.
    Klm { entries: Vec<IndirectEntry> },
    /// Indirect, entries of `1 << entry_shift` bytes each (KSM): entry i
    /// covers the key's bytes from `start + (i << entry_shift)`; an entry's
    /// `len` is not read.
    Ksm { entry_shift: u8, entries: Vec<IndirectEntry> },
}

/// One entry of an indirect key (`struct mlx5_klm`, `struct mlx5_ksm`):
/// `len` bytes at address `va` through key `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndirectEntry {
    pub len: u64,
    pub key: u32,
    pub va: u64,
}

/// How many keys deep a translation may go: an indirect key may name
/// indirect keys, which may name ... (a loop of keys ends here too).
pub const MAX_KEY_DEPTH: u32 = 4;

/// The lowest mkey index handed out; the indices below are never a key: index 1 with key byte 0 would be lkey
/// 0x100 (`MLX5_INVALID_LKEY`, which ends a receive scatter list), and index 4 with key byte 0 would be 0x400, a
/// UMR repeat block's `op` where a KLM entry holds its key.
pub const FIRST_MKEY_INDEX: u32 = 0x10;

/// Tag of addresses in on-device memory rather than guest memory.
pub const DEVICE_MEMORY: u64 = 1 << 63;

/// Memory key (MR).
#[derive(Debug, Clone)]
pub struct Mkey {
    /// The low 8 bits of the key the driver chose (`mkey_7_0`).
    pub variant: u8,
    pub pd: u32,
    pub access: Access,
    /// First virtual address covered.
    pub start: u64,
    pub length: u64,
    /// Covers the whole 64-bit space (`length64`).
    pub whole_space: bool,
    pub translation: Translation,
    /// Free (`MLX5_MKEY_STATUS_FREE`): exists but does not translate.
    pub free: bool,
    pub uid: u16,
}

/// Why a memory access through a key failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyFault {
    #[error("no such key")]
    BadKey,
    #[error("key in another protection domain")]
    WrongPd,
    #[error("access right missing")]
    Access,
    #[error("range outside the key")]
    Bounds,
}

impl Mkey {
    /// The 32-bit key: 24-bit index, 8-bit variant.
    pub fn key(index: u32, variant: u8) -> u32 {
        (index << 8) | variant as u32
    }

    /// Whether the key translates through other keys (KLM or KSM).
    pub fn is_indirect(&self) -> bool {
        matches!(self.translation, Translation::Klm { .. } | Translation::Ksm { .. })
    }

    /// Translates `[va, va+len)` into guest physical chunks, checking rights
    /// and bounds first. A zero-length access is valid anywhere in the key.
    /// An indirect key names no key here: use [`Mkey::translate_via`].
    pub fn translate(&self, va: u64, len: u64, pd: u32, need: Access) -> Result<Vec<(u64, u64)>, KeyFault> {
        self.translate_via(va, len, pd, need, &|_| None)
    }

    /// [`Mkey::translate`], with `keys` looking up the keys an indirect key's
    /// entries name (by their 32-bit key).
    ///
    /// An entry's key must be in the indirect key's protection domain and
    /// allow the local side of the access (a read reads it, a write or an
    /// atomic writes it); the rights asked of the access itself are the
    /// indirect key's. A missing or free entry key, or one more than
    /// [`MAX_KEY_DEPTH`] keys down, is [`KeyFault::BadKey`].
    pub fn translate_via<'a>(
        &self,
        va: u64,
        len: u64,
        pd: u32,
        need: Access,
        keys: &dyn Fn(u32) -> Option<&'a Mkey>,
    ) -> Result<Vec<(u64, u64)>, KeyFault> {
        let mut walk = Walk { keys, out: Vec::new() };
        self.translate_into(&mut walk, va, len, pd, need, 1)?;
        Ok(walk.out)
    }

    /// Appends the chunks of `[va, va+len)` to `walk`; `depth` keys deep.
    fn translate_into(
        &self,
        walk: &mut Walk,
        va: u64,
        len: u64,
        pd: u32,
        need: Access,
        depth: u32,
    ) -> Result<(), KeyFault> {
        if self.free {
            return Err(KeyFault::BadKey);
        }
        if self.pd != pd {
            return Err(KeyFault::WrongPd);
        }
        if !self.access.contains(need) {
            return Err(KeyFault::Access);
        }
        let end = va.checked_add(len).ok_or(KeyFault::Bounds)?;
        if !self.whole_space {
            let kend = self.start.checked_add(self.length).ok_or(KeyFault::Bounds)?;
            if va < self.start || end > kend {
                return Err(KeyFault::Bounds);
            }
        }
        if len == 0 {
            return Ok(());
        }
        match &self.translation {
            Translation::Physical => push(&mut walk.out, va, len),
            Translation::DeviceMemory { base } => push(&mut walk.out, DEVICE_MEMORY | (base + (va - self.start)), len),
            Translation::Mtt { page_shift, pages } => {
                let ps = 1u64 << page_shift;
                // Offset of the region's first byte inside its first page.
                let base = self.start & !(ps - 1);
                let mut at = va;
                while at < end {
                    let idx = ((at - base) >> page_shift) as usize;
                    let page = *pages.get(idx).ok_or(KeyFault::Bounds)?;
                    let off = (at - base) & (ps - 1);
                    let n = (ps - off).min(end - at);
                    // A guest-supplied page address near the top of the space
                    // translates nowhere (no wrap-around).
                    let pa = page.checked_add(off).filter(|a| a.checked_add(n).is_some()).ok_or(KeyFault::Bounds)?;
                    push(&mut walk.out, pa, n);
                    at += n;
                }
            }
            Translation::Klm { entries } => {
                // Offsets into the key's range; an entry ends where the next begins.
                let mut at = va.checked_sub(self.start).ok_or(KeyFault::Bounds)?;
                let stop = at + len;
                let mut first = 0u64;
                for e in entries {
                    if at == stop {
                        break;
                    }
                    let last = first.checked_add(e.len).ok_or(KeyFault::Bounds)?;
                    if at < last {
                        let n = (last - at).min(stop - at);
                        self.through(walk, e, at - first, n, need, depth)?;
                        at += n;
                    }
                    first = last;
                }
                if at < stop {
                    return Err(KeyFault::Bounds);
                }
            }
            Translation::Ksm { entry_shift, entries } => {
                let size = 1u64.checked_shl(u32::from(*entry_shift)).ok_or(KeyFault::Bounds)?;
                let mut at = va.checked_sub(self.start).ok_or(KeyFault::Bounds)?;
                let stop = at + len;
                while at < stop {
                    let e =
                        usize::try_from(at >> entry_shift).ok().and_then(|i| entries.get(i)).ok_or(KeyFault::Bounds)?;
                    let off = at & (size - 1);
                    let n = (size - off).min(stop - at);
                    self.through(walk, e, off, n, need, depth)?;
                    at += n;
                }
            }
        }
        Ok(())
    }

    /// `n` bytes from `off` into indirect entry `e`, through its key.
    fn through(
        &self,
        walk: &mut Walk,
        e: &IndirectEntry,
        off: u64,
        n: u64,
        need: Access,
        depth: u32,
    ) -> Result<(), KeyFault> {
        if depth >= MAX_KEY_DEPTH {
            return Err(KeyFault::BadKey);
        }
        let inner = (walk.keys)(e.key).ok_or(KeyFault::BadKey)?;
        let va = e.va.checked_add(off).ok_or(KeyFault::Bounds)?;
        let writes = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_ATOMIC;
        let local = if need.0 & writes.0 == 0 { Access::LOCAL_READ } else { Access::LOCAL_WRITE };
        inner.translate_into(walk, va, n, self.pd, local, depth + 1)
    }
}

/// One translation under way: how it finds the keys an indirect key names, and the chunks found so far.
struct Walk<'k, 'a> {
    keys: &'k dyn Fn(u32) -> Option<&'a Mkey>,
    out: Vec<(u64, u64)>,
}

/// Appends a chunk, merged with the last one when they touch.
fn push(out: &mut Vec<(u64, u64)>, pa: u64, n: u64) {
    match out.last_mut() {
        Some((p, l)) if p.checked_add(*l) == Some(pa) => *l += n,
        _ => out.push((pa, n)),
    }
}

#[cfg(test)]
#[path = "mkey_tests.rs"]
mod tests;
