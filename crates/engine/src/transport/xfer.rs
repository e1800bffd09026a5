//! Moving bytes between packets and guest memory through keys: an SGL
//! through its L_Keys, a remote range through its R_Key. Every failure is
//! an [`XferError`], and what it becomes on the wire (a NAK code) or in a
//! completion (a WC status) is decided here, in one place.

use crate::personality::Slot;
use thiserror::Error;

use super::super::mkey::{KeyFault, Mkey};
use super::super::objects::Access;
use super::super::table::Table;
use super::super::types::{GuestMemory, MemFault};
use super::super::verbs::{Sge, WcStatus};
use vrnic_wire::aeth::NakCode;

/// Why bytes could not be moved through a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum XferError {
    /// No key with this index and variant.
    #[error("no key {0:#x}")]
    NoKey(u32),
    /// The key refused the access (freed, other PD, right missing, bounds).
    #[error("key {key:#x}: {fault}")]
    Key { key: u32, fault: KeyFault },
    /// The QP does not allow this remote access (its `access` flags).
    #[error("QP does not allow {0:?}")]
    QpAccess(Access),
    /// The address plus offset overflows.
    #[error("address overflow")]
    Overflow,
    /// The SGL holds fewer bytes than the data.
    #[error("SGL too short")]
    ShortSgl,
    /// A translated address the guest has not mapped.
    #[error(transparent)]
    Mem(#[from] MemFault),
}

impl XferError {
    /// The NAK a responder answers a remote access (through an R_Key) that
    /// failed this way with (IBTA 9.7.5.2.4/9.7.5.2.5): a refused key or
    /// range is a remote access error, memory that cannot be reached a
    /// remote operational error.
    pub fn remote_nak(self) -> NakCode {
        match self {
            XferError::Mem(_) => NakCode::RemoteOperationalError,
            XferError::NoKey(_)
            | XferError::Key { .. }
            | XferError::QpAccess(_)
            | XferError::Overflow
            | XferError::ShortSgl => NakCode::RemoteAccessError,
        }
    }

    /// The NAK for a failure in the responder's own receive SGL (its L_Keys):
    /// the requester did nothing wrong, the responder could not place the
    /// data (remote operational error).
    pub fn recv_nak(self) -> NakCode {
        NakCode::RemoteOperationalError
    }

    /// The completion status of a local access (through an L_Key) that
    /// failed this way: a local protection error, whatever the cause.
    pub fn local_status(self) -> WcStatus {
        WcStatus::LocProtErr
    }
}

pub(super) enum Xfer<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

impl Xfer<'_> {
    fn len(&self) -> usize {
        match self {
            Xfer::Read(b) => b.len(),
            Xfer::Write(b) => b.len(),
        }
    }

    /// Moves the `l` bytes at `at` of the data to or from guest address `pa`.
    fn chunk(&mut self, mem: &dyn GuestMemory, pa: u64, at: usize, l: usize) -> Result<(), MemFault> {
        match self {
            Xfer::Read(b) => mem.read(pa, &mut b[at..at + l]),
            Xfer::Write(b) => mem.write(pa, &b[at..at + l]),
        }
    }
}

/// Looks key `key` up and translates `[va, va+len)` through it.
fn translate(
    mkeys: &Table<Slot<Mkey, impl Sized>>,
    key: u32,
    va: u64,
    len: u64,
    pd: u32,
    need: Access,
) -> Result<Vec<(u64, u64)>, XferError> {
    let k = lookup_key(mkeys, key).ok_or(XferError::NoKey(key))?;
    k.translate_via(va, len, pd, need, &|k| lookup_key(mkeys, k)).map_err(|fault| XferError::Key { key, fault })
}

/// Moves bytes between `data` and the SGL at byte offset `off`, each SGE
/// through its key (PD `pd`, rights `need`).
pub(super) fn sgl_xfer(
    mkeys: &Table<Slot<Mkey, impl Sized>>,
    mem: &dyn GuestMemory,
    pd: u32,
    sgl: &[Sge],
    mut off: u64,
    mut data: Xfer,
    need: Access,
) -> Result<(), XferError> {
    let total = data.len();
    let mut done = 0usize;
    for s in sgl {
        if done == total {
            break;
        }
        if off >= s.length as u64 {
            off -= s.length as u64;
            continue;
        }
        let n = ((s.length as u64 - off) as usize).min(total - done);
        let va = s.addr.checked_add(off).ok_or(XferError::Overflow)?;
        let mut at = done;
        for (pa, l) in translate(mkeys, s.lkey, va, n as u64, pd, need)? {
            data.chunk(mem, pa, at, l as usize)?;
            at += l as usize;
        }
        done += n;
        off = 0;
    }
    if done == total {
        Ok(())
    } else {
        Err(XferError::ShortSgl)
    }
}

/// Whether every SGE of `sgl` may be accessed whole with rights `need`.
pub(super) fn check_sgl(
    mkeys: &Table<Slot<Mkey, impl Sized>>,
    pd: u32,
    sgl: &[Sge],
    need: Access,
) -> Result<(), XferError> {
    for s in sgl {
        translate(mkeys, s.lkey, s.addr, s.length as u64, pd, need)?;
    }
    Ok(())
}

/// Whether a remote access of `len` bytes at `va` through `rkey` with rights
/// `need` is allowed: by the QP's access flags `qp_access`, then by the key.
pub(super) fn check_rkey(
    mkeys: &Table<Slot<Mkey, impl Sized>>,
    qp_access: Access,
    pd: u32,
    rkey: u32,
    va: u64,
    len: u64,
    need: Access,
) -> Result<Vec<(u64, u64)>, XferError> {
    if !qp_access.contains(need) {
        return Err(XferError::QpAccess(need));
    }
    translate(mkeys, rkey, va, len, pd, need)
}

pub(super) fn lookup_key(mkeys: &Table<Slot<Mkey, impl Sized>>, key: u32) -> Option<&Mkey> {
    mkeys.obj(key >> 8).filter(|m| m.variant == key as u8)
}

/// Moves bytes at remote address `va` through `rkey`.
pub(super) fn key_xfer(
    mkeys: &Table<Slot<Mkey, impl Sized>>,
    mem: &dyn GuestMemory,
    pd: u32,
    rkey: u32,
    va: u64,
    mut data: Xfer,
    need: Access,
) -> Result<(), XferError> {
    let mut at = 0;
    for (pa, l) in translate(mkeys, rkey, va, data.len() as u64, pd, need)? {
        data.chunk(mem, pa, at, l as usize)?;
        at += l as usize;
    }
    Ok(())
}

pub(super) fn sgl_capacity(sgl: &[Sge]) -> u64 {
    sgl.iter().map(|s| s.length as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mkey::Translation;

    /// Guest memory mapped only at `[0x1000, 0x3000)`.
    struct Mem;
    impl GuestMemory for Mem {
        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
            if addr >= 0x1000 && addr + buf.len() as u64 <= 0x3000 {
                buf.fill(0xab);
                Ok(())
            } else {
                Err(MemFault { addr })
            }
        }
        fn write(&self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
            if addr >= 0x1000 && addr + buf.len() as u64 <= 0x3000 {
                Ok(())
            } else {
                Err(MemFault { addr })
            }
        }
        fn compare_and_swap_u64(&self, addr: u64, _: u64, _: u64) -> Result<u64, MemFault> {
            Err(MemFault { addr })
        }
        fn fetch_add_u64(&self, addr: u64, _: u64) -> Result<u64, MemFault> {
            Err(MemFault { addr })
        }
    }

    /// One physical key of PD 1 over `[0x1000, 0x5000)` (beyond 0x3000 unmapped); its 32-bit key.
    fn keys(access: Access) -> (Table<Slot<Mkey, ()>>, u32) {
        let mut t = Table::new(1, 0xff, 4);
        let m = Mkey {
            variant: 7,
            pd: 1,
            access,
            start: 0x1000,
            length: 0x4000,
            whole_space: false,
            translation: Translation::Physical,
            free: false,
            uid: 0,
        };
        let idx = t.alloc_with(|_| Slot::new(m)).unwrap();
        (t, Mkey::key(idx, 7))
    }

    #[test]
    fn xfer_errors_and_their_nak_codes_and_statuses() {
        let rw = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
        let (t, key) = keys(rw);
        let mut b = [0u8; 16];
        let sge = |addr, length, lkey| Sge { addr, length, lkey };
        // Success, through two SGEs.
        let sgl = [sge(0x1000, 8, key), sge(0x2000, 8, key)];
        assert_eq!(sgl_xfer(&t, &Mem, 1, &sgl, 0, Xfer::Read(&mut b), Access::LOCAL_WRITE), Ok(()));
        assert_eq!(b, [0xab; 16]);
        let cases: Vec<(Result<(), XferError>, XferError, NakCode)> = vec![
            (
                sgl_xfer(&t, &Mem, 1, &[sge(0x1000, 8, key ^ 1)], 0, Xfer::Write(&[0; 8]), Access::LOCAL_WRITE),
                XferError::NoKey(key ^ 1),
                NakCode::RemoteAccessError,
            ),
            (
                sgl_xfer(&t, &Mem, 2, &[sge(0x1000, 8, key)], 0, Xfer::Write(&[0; 8]), Access::LOCAL_WRITE),
                XferError::Key { key, fault: KeyFault::WrongPd },
                NakCode::RemoteAccessError,
            ),
            (
                sgl_xfer(&t, &Mem, 1, &[sge(0x4ff8, 16, key)], 0, Xfer::Write(&[0; 16]), Access::LOCAL_WRITE),
                XferError::Key { key, fault: KeyFault::Bounds },
                NakCode::RemoteAccessError,
            ),
            (
                sgl_xfer(&t, &Mem, 1, &[sge(u64::MAX, 8, key)], 4, Xfer::Write(&[0; 4]), Access::LOCAL_WRITE),
                XferError::Overflow,
                NakCode::RemoteAccessError,
            ),
            (
                sgl_xfer(&t, &Mem, 1, &[sge(0x1000, 8, key)], 0, Xfer::Write(&[0; 16]), Access::LOCAL_WRITE),
                XferError::ShortSgl,
                NakCode::RemoteAccessError,
            ),
            (
                sgl_xfer(&t, &Mem, 1, &[sge(0x3000, 8, key)], 0, Xfer::Write(&[0; 8]), Access::LOCAL_WRITE),
                XferError::Mem(MemFault { addr: 0x3000 }),
                NakCode::RemoteOperationalError,
            ),
            (
                key_xfer(&t, &Mem, 1, key, 0x1000, Xfer::Write(&[0; 8]), Access::REMOTE_ATOMIC),
                XferError::Key { key, fault: KeyFault::Access },
                NakCode::RemoteAccessError,
            ),
            (
                key_xfer(&t, &Mem, 1, key, 0x3ff8, Xfer::Read(&mut [0; 16]), Access::REMOTE_READ),
                XferError::Mem(MemFault { addr: 0x3ff8 }),
                NakCode::RemoteOperationalError,
            ),
            (
                check_rkey(&t, Access::REMOTE_READ, 1, key, 0x1000, 8, Access::REMOTE_WRITE).map(|_| ()),
                XferError::QpAccess(Access::REMOTE_WRITE),
                NakCode::RemoteAccessError,
            ),
        ];
        for (i, (got, err, nak)) in cases.into_iter().enumerate() {
            assert_eq!(got, Err(err), "case {i}");
            assert_eq!(err.remote_nak(), nak, "case {i}: {err}");
            assert_eq!(err.recv_nak(), NakCode::RemoteOperationalError, "case {i}");
            assert_eq!(err.local_status(), WcStatus::LocProtErr, "case {i}");
        }
        assert_eq!(check_rkey(&t, rw, 1, key, 0x1000, 0x10, Access::REMOTE_WRITE), Ok(vec![(0x1000, 0x10)]));
        assert_eq!(check_sgl(&t, 1, &sgl, Access::LOCAL_WRITE), Ok(()));
        assert_eq!(check_sgl(&t, 1, &sgl, Access::REMOTE_ATOMIC), Err(XferError::Key { key, fault: KeyFault::Access }));
    }
}
