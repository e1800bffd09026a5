//! Moving bytes between packets and guest memory through keys: an SGL
//! through its L_Keys, a remote range through its R_Key.

use super::super::objects::{Access, Mkey};
use super::super::table::Table;
use super::super::verbs::Sge;
use super::super::GuestMemory;
use crate::wire::aeth::NakCode;

pub(super) enum Xfer<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

/// Moves bytes between `data` and the SGL at byte offset `off`, each SGE
/// through its key (PD `pd`, rights `need`).
pub(super) fn sgl_xfer(mkeys: &Table<Mkey>, mem: &dyn GuestMemory, pd: u32, sgl: &[Sge], mut off: u64, mut data: Xfer, need: Access) -> Result<(), ()> {
    let total = match &data {
        Xfer::Read(b) => b.len(),
        Xfer::Write(b) => b.len(),
    };
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
        let key = lookup_key(mkeys, s.lkey).ok_or(())?;
        let chunks = key.translate(s.addr.checked_add(off).ok_or(())?, n as u64, pd, need).map_err(|_| ())?;
        let mut at = done;
        for (pa, l) in chunks {
            let l = l as usize;
            match &mut data {
                Xfer::Read(b) => mem.read(pa, &mut b[at..at + l]).map_err(|_| ())?,
                Xfer::Write(b) => mem.write(pa, &b[at..at + l]).map_err(|_| ())?,
            }
            at += l;
        }
        done += n;
        off = 0;
    }
    if done == total {
        Ok(())
    } else {
        Err(())
    }
}

pub(super) fn lookup_key(mkeys: &Table<Mkey>, key: u32) -> Option<&Mkey> {
    mkeys.get(key >> 8).filter(|m| m.variant == key as u8)
}

/// Moves bytes at remote address `va` through `rkey`.
pub(super) fn key_xfer(mkeys: &Table<Mkey>, mem: &dyn GuestMemory, pd: u32, rkey: u32, va: u64, mut data: Xfer, need: Access) -> Result<(), NakCode> {
    let len = match &data {
        Xfer::Read(b) => b.len(),
        Xfer::Write(b) => b.len(),
    };
    let key = lookup_key(mkeys, rkey).ok_or(NakCode::RemoteAccessError)?;
    let chunks = key.translate(va, len as u64, pd, need).map_err(|_| NakCode::RemoteAccessError)?;
    let mut at = 0;
    for (pa, l) in chunks {
        let l = l as usize;
        match &mut data {
            Xfer::Read(b) => mem.read(pa, &mut b[at..at + l]).map_err(|_| NakCode::RemoteOperationalError)?,
            Xfer::Write(b) => mem.write(pa, &b[at..at + l]).map_err(|_| NakCode::RemoteOperationalError)?,
        }
        at += l;
    }
    Ok(())
}

pub(super) fn sgl_capacity(sgl: &[Sge]) -> u64 {
    sgl.iter().map(|s| s.length as u64).sum()
}
