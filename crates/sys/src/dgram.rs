//! The Ethernet link's socket edges beyond what `std` offers: a UDP
//! socket bound with `SO_REUSEADDR` (several multicast hub members on one
//! host share the group's port), the multicast send interface, and a
//! single-fd `ppoll` with a timeout (the link worker's wait).

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// An IPv4 UDP socket with `SO_REUSEADDR` bound to `addr`, non-blocking.
pub fn bind_reuse_v4(addr: SocketAddrV4) -> io::Result<UdpSocket> {
    // SAFETY: socket() takes no pointers.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0) };
    check(fd)?;
    // SAFETY: `fd` is a fresh fd nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let one: libc::c_int = 1;
    // SAFETY: setsockopt reads sizeof(int) bytes from a live local.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(addr.ip().octets()) },
        sin_zero: [0; 8],
    };
    // SAFETY: bind reads one live sockaddr_in of the size given.
    check(unsafe {
        libc::bind(
            fd,
            (&sin as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    Ok(UdpSocket::from(owned))
}

/// `IP_MULTICAST_IF`: multicast leaves through the interface that has `ip`.
pub fn set_multicast_if_v4(sock: &UdpSocket, ip: Ipv4Addr) -> io::Result<()> {
    let a = libc::in_addr { s_addr: u32::from_ne_bytes(ip.octets()) };
    // SAFETY: setsockopt reads one live in_addr of the size given.
    check(unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MULTICAST_IF,
            (&a as *const libc::in_addr).cast(),
            std::mem::size_of::<libc::in_addr>() as libc::socklen_t,
        )
    })
}

/// Waits until `fd` is readable or `timeout` passes: `Ok(true)` when
/// readable (or in error: the next read says which), `Ok(false)` on
/// timeout or a signal.
pub fn wait_readable(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: ppoll reads one live pollfd (and writes its revents) and one
    // live timespec; no signal mask is passed.
    let r = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
    }
    Ok(r > 0)
}
