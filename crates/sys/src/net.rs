//! The UDP socket edges of the fabric: socket options, GRO receive
//! (`recvmsg` with its control message) and GSO batches (`sendmmsg` with
//! `UDP_SEGMENT`), and the kernel's socket-address layout.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// `SOL_UDP` options (linux/udp.h): send one buffer as equal-sized
/// datagrams (GSO), receive such runs as one buffer (GRO).
pub const UDP_SEGMENT: libc::c_int = 103;
pub const UDP_GRO: libc::c_int = 104;

/// Reads one datagram, or one GRO aggregate of equal-sized datagrams from
/// one sender, from a non-blocking UDP socket: (length, sender, segment
/// size; the last segment may be shorter).
pub fn recv_gro(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, usize)> {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut ctl = [0u64; 8];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: msghdr is plain data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&ctl);
    // SAFETY: every pointer in msg refers to a live local or to `buf`, with
    // its true length; the kernel writes within them.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    let mut seg = n;
    // SAFETY: the CMSG_* walk stays inside msg_control/msg_controllen,
    // which the kernel filled; the UDP_GRO payload is one int.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                if v > 0 {
                    seg = v as usize;
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let addr = sockaddr_to(&from).ok_or_else(|| io::Error::other("sender address family"))?;
    Ok((n, addr, seg.max(1)))
}

/// The socket address the kernel wrote, if IPv4 or IPv6.
fn sockaddr_to(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: libc::sockaddr_in = unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::from((Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes()), u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: libc::sockaddr_in6 = unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// The socket address `addr` in the kernel's layout.
fn sockaddr_of(addr: &SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
        }
    }
    ss
}

/// The socket's receive buffer as the kernel reports it (SO_RCVBUF: twice
/// what was asked, the kernel's allowance for its own overhead).
pub fn socket_receive_buffer(sock: &UdpSocket) -> Option<usize> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into a live local int.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0 && v > 0).then_some(v as usize)
}

/// SO_MEMINFO's indices (`SK_MEMINFO_*`, linux/sock_diag.h): memory the
/// receive queue holds, the receive buffer's size, the drop count; and how
/// many values the kernel fills.
const SK_MEMINFO_RMEM_ALLOC: usize = 0;
const SK_MEMINFO_RCVBUF: usize = 1;
const SK_MEMINFO_DROPS: usize = 8;
const SK_MEMINFO_VARS: usize = 9;

/// A socket's receive side as SO_MEMINFO reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SocketMemory {
    /// Bytes the datagrams waiting in the receive queue take (their
    /// `truesize`: payload and the kernel's overhead).
    pub rmem_alloc: u32,
    /// The receive buffer's size (what `rmem_alloc` may reach).
    pub rcvbuf: u32,
    /// Datagrams dropped at this socket since it was opened (a full receive
    /// buffer, mostly).
    pub drops: u32,
}

/// The socket's [`SocketMemory`] (one `getsockopt(SO_MEMINFO)`).
pub fn socket_memory(fd: RawFd) -> Option<SocketMemory> {
    let mut v = [0u32; SK_MEMINFO_VARS];
    let mut len = std::mem::size_of_val(&v) as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into a live local array.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_MEMINFO, v.as_mut_ptr().cast(), &mut len) };
    (r == 0 && len as usize > SK_MEMINFO_DROPS * 4).then_some(SocketMemory {
        rmem_alloc: v[SK_MEMINFO_RMEM_ALLOC],
        rcvbuf: v[SK_MEMINFO_RCVBUF],
        drops: v[SK_MEMINFO_DROPS],
    })
}

/// Datagrams the kernel dropped at this socket since it was opened:
/// [`SocketMemory::drops`].
pub fn socket_drops(fd: RawFd) -> Option<u32> {
    socket_memory(fd).map(|m| m.drops)
}

fn setsockopt_int(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: libc::c_int) -> bool {
    // SAFETY: setsockopt reads sizeof(int) bytes from a live local.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// Sets SO_RCVBUF and SO_SNDBUF to `bytes` (the FORCE variants first, which
/// pass the system cap when privileged); best effort.
pub fn set_socket_buffers(sock: &UdpSocket, bytes: usize) {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for (opt, force) in [(libc::SO_RCVBUF, libc::SO_RCVBUFFORCE), (libc::SO_SNDBUF, libc::SO_SNDBUFFORCE)] {
        for o in [force, opt] {
            if setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, o, v) {
                break;
            }
        }
    }
}

/// Lets runs of equal-sized datagrams from one peer arrive as one buffer
/// ([`recv_gro`] reports the segment size); where the kernel lacks
/// `UDP_GRO` they arrive one by one.
pub fn enable_udp_gro(sock: &UdpSocket) {
    let _ = setsockopt_int(sock.as_raw_fd(), libc::SOL_UDP, UDP_GRO, 1);
}

/// The scratch one `sendmmsg` of GSO messages needs (kept between calls so
/// a batch allocates nothing).
#[derive(Default)]
pub struct MmsgBatch {
    addrs: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    ctls: Vec<[u64; 3]>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers in `iovs`/`hdrs` are scratch, rebuilt by every
// `send` from what it borrows and never dereferenced outside it.
unsafe impl Send for MmsgBatch {}

impl MmsgBatch {
    /// Sends `msgs` in order: message `m` is `msgs[m] = (first, count)`, the
    /// datagrams `pkts[first..first + count]` to `pkts[first].0`, sent as one
    /// GSO message (segment size: the first datagram's length) when
    /// `count > 1`. After each `sendmmsg` call `each(m, result)` reports,
    /// for the first message `m` of that call, how many messages the kernel
    /// took, or the error that refused message `m` (which is then skipped).
    pub fn send(
        &mut self,
        sock: &UdpSocket,
        pkts: &[(SocketAddr, Vec<u8>)],
        msgs: &[(usize, usize)],
        each: &mut dyn FnMut(usize, io::Result<usize>),
    ) {
        self.addrs.clear();
        self.iovs.clear();
        self.ctls.clear();
        self.hdrs.clear();
        for (_, bytes) in pkts {
            self.iovs.push(libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() });
        }
        for &(first, _) in msgs {
            self.addrs.push(sockaddr_of(&pkts[first].0));
            self.ctls.push([0u64; 3]);
        }
        for (m, &(first, count)) in msgs.iter().enumerate() {
            let addr_len = match pkts[first].0 {
                SocketAddr::V4(_) => std::mem::size_of::<libc::sockaddr_in>(),
                SocketAddr::V6(_) => std::mem::size_of::<libc::sockaddr_in6>(),
            };
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_name = (&mut self.addrs[m] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = addr_len as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut self.iovs[first];
            h.msg_hdr.msg_iovlen = count;
            if count > 1 {
                let seg = pkts[first].1.len() as u16;
                let ctl = &mut self.ctls[m];
                h.msg_hdr.msg_control = ctl.as_mut_ptr().cast();
                // SAFETY: CMSG_SPACE/CMSG_LEN are arithmetic; the header and
                // its u16 fit the 24 aligned bytes of `ctl` (CMSG_SPACE(2)),
                // which CMSG_FIRSTHDR returns the start of.
                unsafe {
                    h.msg_hdr.msg_controllen = libc::CMSG_SPACE(2) as usize;
                    let cm = libc::CMSG_FIRSTHDR(&h.msg_hdr);
                    (*cm).cmsg_level = libc::SOL_UDP;
                    (*cm).cmsg_type = UDP_SEGMENT;
                    (*cm).cmsg_len = libc::CMSG_LEN(2) as usize;
                    std::ptr::write_unaligned(libc::CMSG_DATA(cm) as *mut u16, seg);
                }
            }
            self.hdrs.push(h);
        }
        let total = msgs.len();
        let mut done = 0;
        while done < total {
            // SAFETY: hdrs[done..] point into addrs/iovs/ctls and the packet
            // buffers of `pkts`, which live and stay unmoved for the call
            // (borrowed by this function); the kernel only reads them and
            // writes each msg_len.
            let r = unsafe {
                libc::sendmmsg(sock.as_raw_fd(), self.hdrs[done..].as_mut_ptr(), (total - done) as libc::c_uint, 0)
            };
            if r > 0 {
                each(done, Ok(r as usize));
                done += r as usize;
            } else {
                each(done, Err(io::Error::last_os_error()));
                done += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket address survives the kernel layout both ways.
    #[test]
    fn sockaddr_round_trip() {
        for a in ["127.0.0.1:4791", "[::1]:9", "[fe80::1%3]:65535"] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(sockaddr_to(&sockaddr_of(&a)), Some(a));
        }
    }
}
