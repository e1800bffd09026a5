//! Anonymous memory files: the device's BAR memory, shared with QEMU.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

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

/// Zeroes `len` bytes of `fd` from 0 by punching a hole (for every mapping
/// of it, and the pages are freed); false where the filesystem cannot.
pub fn punch_hole(fd: &OwnedFd, len: u64) -> bool {
    let Ok(len) = libc::off_t::try_from(len) else { return false };
    // SAFETY: plain syscall on an fd the caller owns; no memory is passed.
    let r = unsafe { libc::fallocate(fd.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, 0, len) };
    r == 0
}
