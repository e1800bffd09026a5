//! A send's local data, gathered for one packet: inline bytes and SGL
//! entries in message order ([`SendWr::order`]). Pure SGL and pure inline
//! take their direct paths; a mix walks the runs.

use super::super::mkey::Mkey;
use super::super::objects::Access;
use super::super::table::Table;
use super::super::types::GuestMemory;
use super::super::verbs::{Run, SendWr};
use super::xfer::{sgl_capacity, sgl_xfer, Xfer, XferError};
use crate::personality::Slot;

/// Fills `out` with the bytes at message offset `off` of `wr`'s data.
pub(super) fn gather(
    mkeys: &Table<Slot<Mkey, impl Sized>>,
    mem: &dyn GuestMemory,
    pd: u32,
    wr: &SendWr,
    off: u64,
    out: &mut [u8],
) -> Result<(), XferError> {
    let Some(inline) = &wr.inline else {
        return sgl_xfer(mkeys, mem, pd, &wr.sgl, off, Xfer::Read(out), Access::LOCAL_READ);
    };
    if wr.sgl.is_empty() {
        let d = usize::try_from(off)
            .ok()
            .and_then(|o| inline.get(o..o.checked_add(out.len())?))
            .ok_or(XferError::ShortSgl)?;
        out.copy_from_slice(d);
        return Ok(());
    }
    let prefix = [Run::Inline(inline.len() as u32), Run::Sges(wr.sgl.len() as u32)];
    let runs = if wr.order.is_empty() { &prefix[..] } else { &wr.order[..] };
    // `pos`: message offset of the run; `at`: message offset of out[done].
    let (mut pos, mut ib, mut si, mut done) = (0u64, 0usize, 0usize, 0usize);
    for run in runs {
        if done == out.len() {
            break;
        }
        let at = off + done as u64;
        match *run {
            Run::Inline(n) => {
                let end = ib.checked_add(n as usize).ok_or(XferError::ShortSgl)?;
                let d = inline.get(ib..end).ok_or(XferError::ShortSgl)?;
                ib = end;
                if at < pos + d.len() as u64 {
                    let from = (at - pos) as usize;
                    let k = (d.len() - from).min(out.len() - done);
                    out[done..done + k].copy_from_slice(&d[from..from + k]);
                    done += k;
                }
                pos += d.len() as u64;
            }
            Run::Sges(n) => {
                let end = si.checked_add(n as usize).ok_or(XferError::ShortSgl)?;
                let sges = wr.sgl.get(si..end).ok_or(XferError::ShortSgl)?;
                si = end;
                let len = sgl_capacity(sges);
                if at < pos + len {
                    let k = (len - (at - pos)).min((out.len() - done) as u64) as usize;
                    let dst = &mut out[done..done + k];
                    sgl_xfer(mkeys, mem, pd, sges, at - pos, Xfer::Read(dst), Access::LOCAL_READ)?;
                    done += k;
                }
                pos += len;
            }
        }
    }
    if done == out.len() {
        Ok(())
    } else {
        Err(XferError::ShortSgl)
    }
}
