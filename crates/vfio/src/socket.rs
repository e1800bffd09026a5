//! Unix-socket I/O with file descriptors (SCM_RIGHTS), the only place the
//! vfio-user transport touches `sendmsg`/`recvmsg`.
//!
//! Sending goes through vmm-sys-util's `ScmSocket`. Receiving stays ours:
//! `ScmSocket::recv_with_fds` cannot take `MSG_DONTWAIT` (the server's
//! first, non-blocking look for a queued message) or `MSG_CMSG_CLOEXEC`,
//! and on `MSG_CTRUNC` (more descriptors than `max_msg_fds`) it returns
//! ENOBUFS without the byte count, where the server must still read the
//! rest of that message and refuse it to keep the stream in sync.

use std::io::{self, Read, Write};
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use vmm_sys_util::sock_ctrl_msg::ScmSocket;

/// Upper bound on descriptors accepted in one message (our advertised
/// `max_msg_fds`).
pub const MAX_FDS: usize = 16;

/// Spins up to `limit` until `stream` has data (a non-blocking peek), so
/// the blocking read that follows does not sleep and wait for a wake-up.
/// Returns how long it waited if data (or an error/EOF) came, None if the
/// limit passed first.
pub fn wait_readable_spinning(stream: &UnixStream, limit: std::time::Duration) -> Option<std::time::Duration> {
    let t = std::time::Instant::now();
    let mut b = [0u8; 1];
    loop {
        // SAFETY: recv into a live one-byte local buffer.
        let r =
            unsafe { libc::recv(stream.as_raw_fd(), b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        if r != -1 || io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock {
            return Some(t.elapsed());
        }
        if t.elapsed() >= limit {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// Receives into `buf` (fills it completely, or returns `UnexpectedEof` on a
/// clean close before the first byte with `Ok(None)`), collecting any
/// descriptors that arrive with the first segment.
///
/// Returns `Ok(None)` when the peer closed the connection before sending
/// anything, `Ok(Some(fds))` once `buf` is full.
/// With `nonblocking`, a read that finds nothing fails with `WouldBlock`
/// (once the first bytes came, the rest is waited for).
pub fn recv_exact_with_fds(
    stream: &UnixStream,
    buf: &mut [u8],
    nonblocking: bool,
) -> io::Result<Option<(Vec<OwnedFd>, bool)>> {
    let fd = stream.as_raw_fd();
    let mut cmsg = [0u64; (MAX_FDS * 4 + 64) / 8];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: msghdr is plain old data; all-zero is a valid empty value.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr().cast();
    msg.msg_controllen = mem::size_of_val(&cmsg) as _;
    let n = loop {
        // SAFETY: msg points at a live iovec over `buf` and a live control
        // buffer of the stated length; the kernel writes within those bounds.
        let r = unsafe {
            libc::recvmsg(fd, &mut msg, libc::MSG_CMSG_CLOEXEC | if nonblocking { libc::MSG_DONTWAIT } else { 0 })
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        break r as usize;
    };
    let truncated = msg.msg_flags & libc::MSG_CTRUNC != 0;
    let mut fds = Vec::new();
    // SAFETY: the CMSG_* macros walk the control buffer the kernel just
    // filled, bounded by msg_controllen; each SCM_RIGHTS payload is an array
    // of fresh descriptors that we now own.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const RawFd;
                let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..len / mem::size_of::<RawFd>() {
                    let raw = std::ptr::read_unaligned(data.add(i));
                    fds.push(OwnedFd::from_raw_fd(raw));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if n == 0 {
        if buf.is_empty() {
            return Ok(Some((fds, truncated)));
        }
        return Ok(None);
    }
    if n < buf.len() {
        (&*stream).read_exact(&mut buf[n..])?;
    }
    Ok(Some((fds, truncated)))
}

/// Sends all of `bufs` as one message, with `fds` attached to its first byte
/// (vmm-sys-util's [`ScmSocket::send_with_fds`] builds the SCM_RIGHTS message).
pub fn send_with_fds(stream: &UnixStream, bufs: &[&[u8]], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    let mut all = Vec::with_capacity(bufs.iter().map(|b| b.len()).sum());
    for b in bufs {
        all.extend_from_slice(b);
    }
    if fds.is_empty() {
        return (&*stream).write_all(&all);
    }
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let sent = loop {
        match stream.send_with_fds(&[&all[..]], &raw) {
            Err(e) if e.errno() == libc::EINTR => continue,
            Err(e) => return Err(io::Error::from_raw_os_error(e.errno())),
            Ok(n) => break n,
        }
    };
    // The descriptors went with the first chunk; send the rest plainly.
    (&*stream).write_all(&all[sent..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A non-blocking receive on an empty socket says WouldBlock and takes
    /// nothing; once a message is queued it returns it whole, with its fd.
    #[test]
    #[cfg_attr(miri, ignore = "socketpair and recvmsg are not supported by Miri")]
    fn nonblocking_receive_takes_only_what_is_queued() {
        let (a, b) = UnixStream::pair().unwrap();
        let mut buf = [0u8; 8];
        let e = recv_exact_with_fds(&b, &mut buf, true).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        let f = std::fs::File::open("/dev/null").unwrap();
        send_with_fds(&a, &[&[1, 2, 3, 4], &[5, 6, 7, 8]], &[f.as_fd()]).unwrap();
        let (fds, truncated) = recv_exact_with_fds(&b, &mut buf, true).unwrap().expect("message");
        assert_eq!(buf, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!((fds.len(), truncated), (1, false));
        assert_eq!(recv_exact_with_fds(&b, &mut buf, true).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        drop(a);
        assert!(recv_exact_with_fds(&b, &mut buf, true).unwrap().is_none(), "closed peer: None");
    }
}
