//! The vfio-user server's message handling: records of
//! `[u16 LE len][fd byte][header + payload]`; fd byte bit 0 attaches a
//! 1 MiB memfd, bit 1 an eventfd, bit 2 sixteen more eventfds (too many).
//! Each input is one connection (guest state dropped at the end).
#![no_main]
use std::cell::RefCell;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use vrnic_vfio::server::{Server, ServerOptions};
use vrnic_vfio::{DmaSpace, Interrupts};
use vrnic::{Config, Vrnic};

thread_local! {
    static SERVER: RefCell<Server<Vrnic>> = RefCell::new({
        let path = std::env::temp_dir().join(format!("vrnic-fuzz-{}.sock", std::process::id()));
        let irqs = Arc::new(Interrupts::new(64));
        let dma = Arc::new(DmaSpace::new(64));
        let dev = Vrnic::new(&Config::default(), irqs.clone(), dma.clone()).unwrap();
        let s = Server::bind(&path, dev, dma, irqs, ServerOptions::default()).unwrap();
        let _ = std::fs::remove_file(&path);
        s
    });
}

fn memfd() -> OwnedFd {
    // SAFETY: plain syscalls; the fd is owned from here on.
    unsafe {
        let fd = libc::memfd_create(c"fuzz".as_ptr(), 0);
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, 1 << 20), 0);
        OwnedFd::from_raw_fd(fd)
    }
}

fn eventfd() -> OwnedFd {
    // SAFETY: as above.
    unsafe {
        let fd = libc::eventfd(0, libc::EFD_NONBLOCK);
        assert!(fd >= 0);
        OwnedFd::from_raw_fd(fd)
    }
}

fuzz_target!(|data: &[u8]| {
    SERVER.with(|s| {
        let mut s = s.borrow_mut();
        for r in vrnic_fuzz::records(data) {
            let Some((&f, msg)) = r.split_first() else { continue };
            let mut fds = Vec::new();
            if f & 1 != 0 {
                fds.push(memfd());
            }
            if f & 2 != 0 {
                fds.push(eventfd());
            }
            if f & 4 != 0 {
                fds.extend((0..16).map(|_| eventfd()));
            }
            let _ = s.handle_message(msg, fds);
        }
        s.end_connection();
    });
});
