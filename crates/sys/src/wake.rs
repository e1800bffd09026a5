//! A wake-up one thread sends another that waits on a socket: an eventfd,
//! and a `ppoll` over the socket and the eventfd together. A wake sent
//! before the wait is not lost (the eventfd's counter stays set until
//! [`EventFd::drain`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A non-blocking, close-on-exec eventfd.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd takes no pointers; a non-negative result is a new
        // fd that nothing else owns.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Makes the eventfd readable (a waiter wakes at once). Never blocks: a
    /// saturated counter (EAGAIN) is readable already.
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an fd this struct owns.
        let _ = unsafe { libc::write(self.fd(), (&one as *const u64).cast(), 8) };
    }

    /// Clears the counter; whether a wake was pending.
    pub fn drain(&self) -> bool {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64 from an fd this
        // struct owns; non-blocking, so EAGAIN when nothing is pending.
        let r = unsafe { libc::read(self.fd(), (&mut v as *mut u64).cast(), 8) };
        r == 8 && v != 0
    }
}

/// Waits until `fd` (if any) or `wake` is readable, or `timeout` passes.
/// Returns (fd readable, wake readable); both false on timeout or a signal.
/// An fd in error counts as readable (the next read says which).
pub fn wait_readable_or_woken(fd: Option<RawFd>, wake: &EventFd, timeout: Duration) -> io::Result<(bool, bool)> {
    let mut p = [
        libc::pollfd { fd: fd.unwrap_or(-1), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: wake.fd(), events: libc::POLLIN, revents: 0 },
    ];
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: ppoll reads two live pollfds (and writes their revents) and
    // one live timespec; a negative fd is ignored by the kernel; no signal
    // mask is passed.
    let r = unsafe { libc::ppoll(p.as_mut_ptr(), p.len() as libc::nfds_t, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok((false, false)) } else { Err(e) };
    }
    Ok((p[0].revents != 0, p[1].revents != 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    #[cfg_attr(miri, ignore = "ppoll is not supported by Miri")]
    fn wake_before_and_during_a_wait() {
        let e = Arc::new(EventFd::new().unwrap());
        // Nothing pending: the wait times out.
        assert_eq!(wait_readable_or_woken(None, &e, Duration::from_millis(5)).unwrap(), (false, false));
        assert!(!e.drain());
        // A wake before the wait is kept.
        e.wake();
        e.wake();
        let t0 = Instant::now();
        assert_eq!(wait_readable_or_woken(None, &e, Duration::from_secs(10)).unwrap(), (false, true));
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(e.drain());
        assert!(!e.drain(), "drained");
        // A wake from another thread ends a long wait.
        let e2 = e.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            e2.wake();
        });
        let t0 = Instant::now();
        assert_eq!(wait_readable_or_woken(None, &e, Duration::from_secs(10)).unwrap(), (false, true));
        assert!(t0.elapsed() < Duration::from_secs(5));
        t.join().unwrap();
        // A readable socket is reported as such.
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.send_to(b"x", s.local_addr().unwrap()).unwrap();
        e.drain();
        assert_eq!(wait_readable_or_woken(Some(s.as_raw_fd()), &e, Duration::from_secs(10)).unwrap(), (true, false));
    }
}
