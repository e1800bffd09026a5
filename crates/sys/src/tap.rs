//! The TAP edge of the Ethernet link: open (create or attach) a TAP
//! interface through `/dev/net/tun` and bring it up. Frames are then plain
//! `read`/`write` calls on the returned file.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

/// `linux/if_tun.h`: `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `struct ifreq` with the flags member of its union (40 bytes on Linux).
#[repr(C)]
struct IfReqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn ifreq(name: &str) -> io::Result<IfReqFlags> {
    let b = name.as_bytes();
    if b.is_empty() || b.len() >= libc::IFNAMSIZ || b.contains(&0) || b.contains(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {name:?}")));
    }
    let mut r = IfReqFlags { name: [0; libc::IFNAMSIZ], flags: 0, _pad: [0; 22] };
    for (d, s) in r.name.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    Ok(r)
}

/// Opens the TAP interface `name` (`IFF_TAP | IFF_NO_PI`: whole Ethernet
/// frames, no packet-information header), creating it if it does not exist
/// (needs CAP_NET_ADMIN; attaching to an existing persistent TAP owned by
/// this user does not), non-blocking. Returns the file frames are read
/// from and written to.
pub fn open_tap(name: &str) -> io::Result<File> {
    let mut req = ifreq(name)?;
    req.flags = IFF_TAP | IFF_NO_PI;
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    // SAFETY: TUNSETIFF reads and writes one ifreq, a live local of the
    // kernel's layout and size.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReqFlags) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(f)
}

/// Sets `IFF_UP` on interface `name` (SIOCGIFFLAGS/SIOCSIFFLAGS on a
/// throwaway socket; needs CAP_NET_ADMIN unless already up).
pub fn set_up(name: &str) -> io::Result<()> {
    let mut req = ifreq(name)?;
    // SAFETY: socket() takes no pointers; the fd is owned right away.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `s` is a fresh fd nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(s) };
    // SAFETY: SIOCGIFFLAGS fills the flags of one live ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut req as *mut IfReqFlags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    if req.flags & libc::IFF_UP as libc::c_short != 0 {
        return Ok(());
    }
    req.flags |= libc::IFF_UP as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads one live ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS as _, &mut req as *mut IfReqFlags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ifreq_layout_and_names() {
        assert_eq!(std::mem::size_of::<super::IfReqFlags>(), 40);
        assert!(super::ifreq("vrnic0").is_ok());
        for bad in ["", "a/b", "0123456789abcdef", "a\0b"] {
            assert!(super::ifreq(bad).is_err(), "{bad:?}");
        }
    }
}
