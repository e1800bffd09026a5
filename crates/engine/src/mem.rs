//! A flat, bounds-checked guest memory from address 0 to `len`: used by unit
//! tests and the fuzz targets (guest memory the fuzzer controls byte for
//! byte). Every access outside the range is a [`MemFault`], as with real
//! DMA mappings.

use std::sync::Mutex;

use super::types::{GuestMemory, MemFault};

/// Guest memory backed by one `Vec<u8>` at guest addresses `0..len`.
pub struct FlatMem(pub Mutex<Vec<u8>>);

impl FlatMem {
    pub fn new(len: usize) -> FlatMem {
        FlatMem(Mutex::new(vec![0; len]))
    }

    /// Memory holding exactly `bytes`.
    pub fn from_bytes(bytes: Vec<u8>) -> FlatMem {
        FlatMem(Mutex::new(bytes))
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn range(m: &[u8], addr: u64, n: usize) -> Result<std::ops::Range<usize>, MemFault> {
        let end = addr.checked_add(n as u64).filter(|&e| e <= m.len() as u64).ok_or(MemFault { addr })?;
        Ok(addr as usize..end as usize)
    }

    /// `n` bytes at `a`; panics outside the memory (a test helper).
    pub fn get(&self, a: u64, n: usize) -> Vec<u8> {
        self.lock()[a as usize..a as usize + n].to_vec()
    }

    /// Stores `b` at `a`; panics outside the memory (a test helper).
    pub fn put(&self, a: u64, b: &[u8]) {
        self.lock()[a as usize..a as usize + b.len()].copy_from_slice(b);
    }
}

impl GuestMemory for FlatMem {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let m = self.lock();
        let r = Self::range(&m, addr, buf.len())?;
        buf.copy_from_slice(&m[r]);
        Ok(())
    }
    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
        let mut m = self.lock();
        let r = Self::range(&m, addr, buf.len())?;
        m[r].copy_from_slice(buf);
        Ok(())
    }
    fn compare_and_swap_u64(&self, addr: u64, expected: u64, new: u64) -> Result<u64, MemFault> {
        if addr % 8 != 0 {
            return Err(MemFault { addr });
        }
        let mut m = self.lock();
        let r = Self::range(&m, addr, 8)?;
        let old = u64::from_le_bytes(m[r.clone()].try_into().expect("8 bytes"));
        if old == expected {
            m[r].copy_from_slice(&new.to_le_bytes());
        }
        Ok(old)
    }
    fn fetch_add_u64(&self, addr: u64, add: u64) -> Result<u64, MemFault> {
        if addr % 8 != 0 {
            return Err(MemFault { addr });
        }
        let mut m = self.lock();
        let r = Self::range(&m, addr, 8)?;
        let old = u64::from_le_bytes(m[r.clone()].try_into().expect("8 bytes"));
        m[r].copy_from_slice(&old.wrapping_add(add).to_le_bytes());
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_atomics() {
        let m = FlatMem::new(64);
        m.put(8, &5u64.to_le_bytes());
        assert_eq!(m.fetch_add_u64(8, 2), Ok(5));
        assert_eq!(m.compare_and_swap_u64(8, 7, 9), Ok(7));
        assert_eq!(m.get(8, 8), 9u64.to_le_bytes());
        assert!(m.read(60, &mut [0; 8]).is_err());
        assert!(m.write(u64::MAX - 2, &[0; 8]).is_err());
        assert!(m.fetch_add_u64(4, 1).is_err());
    }
}
