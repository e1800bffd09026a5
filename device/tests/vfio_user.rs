//! Host-side tests of the vfio-user server without QEMU: a client speaks the
//! protocol over a real unix socket, with a memfd as guest RAM. Two peers are
//! used: the independent `vfio_user` crate's `Client` for the ordinary flow,
//! and a raw byte-level client for malformed input.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use vmm_sys_util::eventfd::EventFd;
use vrnic::config::{Config, DoorbellMode};
use vrnic::device::DeviceStats;
use vrnic_mlx5::DoorbellStats;
use vrnic_pci::MSIX_VECTORS;
use vrnic_sys::{memfd, SharedMem};

fn eventfd() -> std::io::Result<EventFd> {
    EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK)
}

/// The eventfd as a descriptor to pass along with a message.
fn borrowed(e: &EventFd) -> std::os::fd::BorrowedFd<'_> {
    // SAFETY: the descriptor stays open while `e`, which the borrow ties it to, lives.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(e.as_raw_fd()) }
}
use vrnic::Vrnic;
use vrnic_vfio::protocol::{vfio::*, Header, FLAGS_ERROR, FLAGS_NO_REPLY, FLAGS_TYPE_REPLY, HEADER_SIZE};
use vrnic_vfio::socket::{recv_exact_with_fds, send_with_fds};
use vrnic_vfio::{DmaError, DmaSpace, Interrupts, Server, ServerOptions, ServerStats};

struct Harness {
    path: PathBuf,
    irqs: Arc<Interrupts>,
    dma: Arc<DmaSpace>,
    stats: Arc<ServerStats>,
    device: Arc<DeviceStats>,
    doorbells: Arc<DoorbellStats>,
    _dir: TempDir,
}

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(tag: &str) -> TempDir {
    let p = std::env::temp_dir().join(format!("vrnic-test-{}-{}-{}", tag, std::process::id(), rand_u32()));
    std::fs::create_dir_all(&p).unwrap();
    TempDir(p)
}

fn rand_u32() -> u32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    t.subsec_nanos() ^ (t.as_secs() as u32).rotate_left(7)
}

fn start(mode: DoorbellMode) -> Harness {
    let dir = tempdir("srv");
    let path = dir.0.join("vrnic.sock");
    let mut c = Config::default();
    c.doorbell.mode = mode;
    let irqs = Arc::new(Interrupts::new(MSIX_VECTORS));
    let dma = Arc::new(DmaSpace::new(64));
    let dev = Vrnic::new(&c, irqs.clone(), dma.clone()).unwrap();
    let device = dev.stats.clone();
    let doorbells = dev.doorbell_stats();
    let mut server = Server::bind(&path, dev, dma.clone(), irqs.clone(), ServerOptions::default()).unwrap();
    let stats = server.stats.clone();
    std::thread::spawn(move || server.run());
    Harness { path, irqs, dma, stats, device, doorbells, _dir: dir }
}

/// A byte-level client.
struct Raw {
    s: UnixStream,
    id: u16,
}

struct Msg {
    hdr: Header,
    payload: Vec<u8>,
    fds: Vec<OwnedFd>,
}

impl Raw {
    fn connect(h: &Harness) -> Raw {
        let s = UnixStream::connect(&h.path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { s, id: 0 }
    }

    fn negotiated(h: &Harness) -> Raw {
        let mut r = Raw::connect(h);
        let mut p = vec![0, 0, 1, 0];
        p.extend_from_slice(br#"{"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576}}"#);
        p.push(0);
        let m = r.call(1, &p, &[], 0);
        assert_eq!(m.hdr.flags & FLAGS_ERROR, 0);
        r
    }

    fn send(&mut self, cmd: u16, payload: &[u8], fds: &[BorrowedFd<'_>], flags: u32) {
        self.id = self.id.wrapping_add(1);
        let h = Header { id: self.id, command: cmd, size: (HEADER_SIZE + payload.len()) as u32, flags, error_reply: 0 };
        send_with_fds(&self.s, &[&h.emit(), payload], fds).unwrap();
    }

    fn recv(&mut self) -> Msg {
        let mut hb = [0u8; HEADER_SIZE];
        let (fds, _) = recv_exact_with_fds(&self.s, &mut hb, false).unwrap().expect("server closed");
        let hdr = Header::parse(&hb);
        let mut payload = vec![0u8; hdr.size as usize - HEADER_SIZE];
        (&self.s).read_exact(&mut payload).unwrap();
        Msg { hdr, payload, fds }
    }

    fn call(&mut self, cmd: u16, payload: &[u8], fds: &[BorrowedFd<'_>], flags: u32) -> Msg {
        self.send(cmd, payload, fds, flags);
        let m = self.recv();
        assert_eq!(m.hdr.id, self.id, "reply matches request");
        assert_eq!(m.hdr.command, cmd);
        assert_eq!(m.hdr.flags & 0xf, FLAGS_TYPE_REPLY);
        m
    }

    /// Calls and returns the errno (0 on success).
    fn errno(&mut self, cmd: u16, payload: &[u8], fds: &[BorrowedFd<'_>]) -> u32 {
        let m = self.call(cmd, payload, fds, 0);
        if m.hdr.flags & FLAGS_ERROR != 0 {
            assert_eq!(m.payload.len(), 0);
            m.hdr.error_reply
        } else {
            0
        }
    }

    fn region_read(&mut self, region: u32, offset: u64, count: u32) -> Result<Vec<u8>, u32> {
        let m = self.call(9, &access(offset, region, count), &[], 0);
        if m.hdr.flags & FLAGS_ERROR != 0 {
            return Err(m.hdr.error_reply);
        }
        assert_eq!(m.payload.len(), 16 + count as usize);
        Ok(m.payload[16..].to_vec())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> u32 {
        let mut p = access(offset, region, data.len() as u32).to_vec();
        p.extend_from_slice(data);
        self.errno(10, &p, &[])
    }
}

fn access(offset: u64, region: u32, count: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&offset.to_le_bytes());
    b[8..12].copy_from_slice(&region.to_le_bytes());
    b[12..16].copy_from_slice(&count.to_le_bytes());
    b
}

fn dma_map_args(iova: u64, size: u64, offset: u64, flags: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&32u32.to_le_bytes());
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    b.extend_from_slice(&iova.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b
}

fn dma_unmap_args(iova: u64, size: u64, flags: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&24u32.to_le_bytes());
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(&iova.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b
}

fn set_irqs_args(flags: u32, index: u32, start: u32, count: u32) -> Vec<u8> {
    [20u32, flags, index, start, count].iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

const RW: u32 = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
const EFD_TRIGGER: u32 = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;

#[test]
fn independent_client_sees_regions_config_and_irqs() {
    let h = start(DoorbellMode::Poll);
    let mut c = vfio_user::Client::new(&h.path).unwrap();
    // Regions: BAR0 32 MiB with a sparse mmap area and an fd, BAR2, BAR4, config.
    let (size, flags, areas, bar_file) = {
        let r0 = c.region(0).unwrap();
        let areas: Vec<(u64, u64)> = r0.sparse_areas.iter().map(|a| (a.offset, a.size)).collect();
        (r0.size, r0.flags, areas, r0.file_offset.as_ref().map(|f| f.file().try_clone().unwrap()))
    };
    assert_eq!(size, 32 << 20);
    assert_ne!(flags & VFIO_REGION_INFO_FLAG_MMAP, 0);
    assert!(bar_file.is_some(), "poll mode sends the region fd");
    assert_eq!(areas, vec![(0x6000, (32 << 20) - 0x6000)], "init segment and the kernel's 2 UAR pages stay trapped");
    assert_eq!(c.region(2).unwrap().size, 16 << 10);
    assert_eq!(c.region(4).unwrap().size, 1 << 20);
    assert_eq!(c.region(7).unwrap().size, 4096);
    assert_eq!(c.region(1).unwrap().size, 0);

    // Config space identity and BAR sizing.
    let mut id = [0u8; 4];
    c.region_read(7, 0, &mut id).unwrap();
    assert_eq!(u32::from_le_bytes(id), 0x1017_15b3);
    c.region_write(7, 0x10, &[0xff; 4]).unwrap();
    c.region_write(7, 0x14, &[0xff; 4]).unwrap();
    let mut lo = [0u8; 4];
    c.region_read(7, 0x10, &mut lo).unwrap();
    assert_eq!(u32::from_le_bytes(lo), 0xfe00_000c, "32 MiB 64-bit prefetchable");

    // IRQ info and an interrupt arriving on an eventfd.
    let msix = c.get_irq_info(VFIO_PCI_MSIX_IRQ_INDEX).unwrap();
    assert_eq!(msix.count, 64);
    assert_eq!(c.get_irq_info(VFIO_PCI_ERR_IRQ_INDEX).unwrap().count, 1);
    assert_eq!(c.get_irq_info(VFIO_PCI_REQ_IRQ_INDEX).unwrap().count, 1);
    assert_eq!(c.get_irq_info(VFIO_PCI_INTX_IRQ_INDEX).unwrap().count, 0);
    let e = eventfd().unwrap();
    c.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, EFD_TRIGGER, 5, 1, &[e.as_raw_fd()]).unwrap();
    h.irqs.raise(5).unwrap();
    assert_eq!(e.read().unwrap_or(0), 1);

    // Map BAR0's UAR area from the fd the server sent, as QEMU does, and ring
    // a send doorbell with a plain store: the polling thread must see it.
    let bar = SharedMem::map(&OwnedFd::from(bar_file.unwrap()), 32 << 20).unwrap();
    let mut db = [0u8; 8];
    db[..4].copy_from_slice(&0x0000_0108u32.to_be_bytes());
    db[4..].copy_from_slice(&0x0000_4201u32.to_be_bytes());
    assert!(bar.write(0x6000 + 0x800, &db));
    wait_until("polled doorbell", || h.doorbells.send.load(Ordering::Relaxed) == 1);
    assert_eq!(h.doorbells.last_send.load(Ordering::Relaxed), (0x4201u64 << 32) | 0x108);
}

#[test]
fn dma_map_unmap_and_device_initiated_access() {
    let h = start(DoorbellMode::Trap);
    let ram = memfd("guest-ram", 4 << 20).unwrap();
    let guest = SharedMem::map(&ram, 4 << 20).unwrap();
    let mut c = vfio_user::Client::new(&h.path).unwrap();
    // RAM at 0 (1 MiB of it) and at 4 GiB (3 MiB), like a q35 split.
    c.dma_map(0, 0, 1 << 20, ram.as_raw_fd()).unwrap();
    c.dma_map(1 << 20, 1 << 32, 3 << 20, ram.as_raw_fd()).unwrap();
    assert_eq!(h.dma.len(), 2);

    // Device writes land in guest RAM, guest writes are seen by the device.
    h.dma.write(0x1000, b"from device").unwrap();
    let mut b = [0u8; 11];
    assert!(guest.read(0x1000, &mut b));
    assert_eq!(&b, b"from device");
    assert!(guest.write((1 << 20) + 0x10, b"from guest!"));
    let mut d = [0u8; 11];
    h.dma.read((1 << 32) + 0x10, &mut d).unwrap();
    assert_eq!(&d, b"from guest!");
    // Never a byte outside what was mapped.
    assert!(matches!(h.dma.read((1 << 20) - 4, &mut d), Err(DmaError::NotMapped { .. })));
    assert!(matches!(h.dma.read((1 << 32) + (3 << 20) - 4, &mut d), Err(DmaError::NotMapped { .. })));

    c.dma_unmap(1 << 32, 3 << 20).unwrap();
    assert_eq!(h.dma.len(), 1);
    assert!(matches!(h.dma.read((1 << 32) + 0x10, &mut d), Err(DmaError::NotMapped { .. })));
}

#[test]
fn reset_drops_device_state() {
    let h = start(DoorbellMode::Trap);
    let mut c = vfio_user::Client::new(&h.path).unwrap();
    c.region_write(0, 0x14, &0x0012_3000u32.to_be_bytes()).unwrap();
    let mut v = [0u8; 4];
    c.region_read(0, 0x14, &mut v).unwrap();
    assert_eq!(u32::from_be_bytes(v), 0x0012_3056, "nic_interface FULL_DRIVER after the driver's write");
    c.region_write(4, 0x40, b"dm").unwrap();
    c.reset().unwrap();
    c.region_read(0, 0x14, &mut v).unwrap();
    assert_eq!(u32::from_be_bytes(v), 0x0000_0156, "address cleared, nic_interface DISABLED");
    let mut m = [0u8; 2];
    c.region_read(4, 0x40, &mut m).unwrap();
    assert_eq!(m, [0, 0]);
    assert_eq!(h.stats.resets.load(Ordering::Relaxed), 1);
}

#[test]
fn disconnect_drops_guest_state_and_reconnect_works() {
    let h = start(DoorbellMode::Trap);
    let ram = memfd("guest-ram", 1 << 20).unwrap();
    {
        let mut c = vfio_user::Client::new(&h.path).unwrap();
        c.dma_map(0, 0x10_0000, 1 << 20, ram.as_raw_fd()).unwrap();
        let e = eventfd().unwrap();
        c.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, EFD_TRIGGER, 0, 1, &[e.as_raw_fd()]).unwrap();
        assert_eq!(h.dma.len(), 1);
    }
    wait_until("disconnect cleanup", || h.dma.is_empty() && !h.stats.connected.load(Ordering::Relaxed));
    assert_eq!(h.irqs.raise(0), Ok(vrnic_vfio::Raised::Pending), "eventfds dropped");
    // A new client (QEMU restarted) is served by the same server.
    let mut c = vfio_user::Client::new(&h.path).unwrap();
    let mut id = [0u8; 2];
    c.region_read(7, 0, &mut id).unwrap();
    assert_eq!(u16::from_le_bytes(id), 0x15b3);
    c.dma_map(0, 0x10_0000, 1 << 20, ram.as_raw_fd()).unwrap();
    assert_eq!(h.stats.connections.load(Ordering::Relaxed), 2);
}

#[test]
fn malformed_messages_get_errors_and_the_stream_stays_in_sync() {
    let h = start(DoorbellMode::Trap);
    let mut r = Raw::connect(&h);
    // Anything before VERSION is refused.
    assert_eq!(r.errno(4, &[16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[]), libc::EINVAL as u32);
    // Bad JSON in VERSION.
    assert_eq!(r.errno(1, b"\0\0\x01\0{nope\0", &[]), libc::EINVAL as u32);
    // Unsupported major version.
    assert_eq!(r.errno(1, b"\x07\0\x01\0\0", &[]), libc::ENOTSUP as u32);
    drop(r);

    let mut r = Raw::negotiated(&h);
    // Unknown command with a payload: read, discarded, ENOTSUP.
    assert_eq!(r.errno(99, &[0xab; 300], &[]), libc::ENOTSUP as u32);
    // Known but unsupported (DIRTY_PAGES, DEVICE_FEATURE) likewise.
    assert_eq!(r.errno(14, &[0; 40], &[]), libc::ENOTSUP as u32);
    assert_eq!(r.errno(16, &[0; 12], &[]), libc::ENOTSUP as u32);
    // Short argument blocks.
    assert_eq!(r.errno(5, &[32, 0, 0, 0], &[]), libc::EINVAL as u32);
    assert_eq!(r.errno(2, &[0; 8], &[]), libc::EINVAL as u32);
    // argsz too small.
    assert_eq!(r.errno(4, &[4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[]), libc::EINVAL as u32);
    // Region index out of range, access past a BAR's end, zero-length access.
    let mut ri = [0u8; 32];
    ri[0..4].copy_from_slice(&32u32.to_le_bytes());
    ri[8..12].copy_from_slice(&9u32.to_le_bytes());
    assert_eq!(r.errno(5, &ri, &[]), libc::EINVAL as u32);
    assert_eq!(r.region_read(0, (32 << 20) - 2, 4), Err(libc::EINVAL as u32));
    assert_eq!(r.region_read(4, u64::MAX - 1, 4), Err(libc::EINVAL as u32));
    assert_eq!(r.region_read(1, 0, 4), Err(libc::EINVAL as u32), "BAR1 is the upper half of BAR0");
    assert_eq!(r.region_read(7, 0, 0), Err(libc::EINVAL as u32));
    assert_eq!(r.region_read(7, 0, 2 << 20), Err(libc::EINVAL as u32), "over max_data_xfer_size");
    assert_eq!(r.region_write(2, 16 << 10, &[1]), libc::EINVAL as u32);
    // Write whose count disagrees with the data sent.
    let mut p = access(0x10, 7, 8).to_vec();
    p.extend_from_slice(&[0; 4]);
    assert_eq!(r.errno(10, &p, &[]), libc::EINVAL as u32);
    // Header claims less than a header: error, treated as header-only.
    r.id += 1;
    let bad = Header { id: r.id, command: 4, size: 8, flags: 0, error_reply: 0 };
    (&r.s).write_all(&bad.emit()).unwrap();
    let m = r.recv();
    assert_eq!((m.hdr.flags & FLAGS_ERROR, m.hdr.error_reply), (FLAGS_ERROR, libc::EINVAL as u32));
    // Oversized message: discarded in full, E2BIG.
    r.id += 1;
    let big = vec![0u8; (1 << 20) + 8192];
    let hb = Header { id: r.id, command: 10, size: (HEADER_SIZE + big.len()) as u32, flags: 0, error_reply: 0 };
    let s2 = r.s.try_clone().unwrap();
    let w = std::thread::spawn(move || {
        (&s2).write_all(&hb.emit()).unwrap();
        (&s2).write_all(&big).unwrap();
    });
    let m = r.recv();
    w.join().unwrap();
    assert_eq!(m.hdr.error_reply, libc::E2BIG as u32);
    // Descriptors on a command that takes none are refused (and closed).
    let e = eventfd().unwrap();
    assert_eq!(r.errno(13, &[], &[borrowed(&e)]), libc::EINVAL as u32);
    // After all that the stream is still in sync.
    assert_eq!(r.region_read(7, 0, 4).unwrap(), vec![0xb3, 0x15, 0x17, 0x10]);
    assert!(h.stats.errors.load(Ordering::Relaxed) >= 18);
}

#[test]
fn malformed_dma_and_irq_requests() {
    let h = start(DoorbellMode::Trap);
    let mut r = Raw::negotiated(&h);
    let ram = memfd("ram", 1 << 20).unwrap();
    assert_eq!(r.errno(2, &dma_map_args(0x10_0000, 1 << 20, 0, RW), &[ram.as_fd()]), 0);
    // Overlap.
    assert_eq!(r.errno(2, &dma_map_args(0x18_0000, 1 << 20, 0, RW), &[ram.as_fd()]), libc::EEXIST as u32);
    // Misaligned, zero-sized, wrapping.
    assert_eq!(r.errno(2, &dma_map_args(0x40_0800, 0x1000, 0, RW), &[ram.as_fd()]), libc::EINVAL as u32);
    assert_eq!(r.errno(2, &dma_map_args(0x40_0000, 0, 0, RW), &[ram.as_fd()]), libc::EINVAL as u32);
    assert_eq!(r.errno(2, &dma_map_args(u64::MAX - 0xfff, 0x2000, 0, RW), &[ram.as_fd()]), libc::EINVAL as u32);
    // Offset beyond the fd: mmap itself may succeed lazily, but two fds are refused.
    let ram2 = memfd("ram2", 1 << 20).unwrap();
    assert_eq!(r.errno(2, &dma_map_args(0x80_0000, 0x1000, 0, RW), &[ram.as_fd(), ram2.as_fd()]), libc::EINVAL as u32);
    // No fd (a ROM range): accepted, but the device cannot reach it.
    assert_eq!(r.errno(2, &dma_map_args(0xc_0000, 0x4_0000, 0, VFIO_DMA_MAP_FLAG_READ), &[]), 0);
    let mut b = [0u8; 4];
    assert_eq!(h.dma.read(0xc_0000, &mut b), Err(DmaError::NoFd(0xc_0000)));
    // Unmap that would split a mapping.
    assert_eq!(r.errno(3, &dma_unmap_args(0x10_0000, 0x1000, 0), &[]), libc::EINVAL as u32);
    // Dirty bitmap: not supported.
    assert_eq!(
        r.errno(3, &dma_unmap_args(0x10_0000, 1 << 20, VFIO_DMA_UNMAP_FLAG_GET_DIRTY_BITMAP), &[]),
        libc::ENOTSUP as u32
    );
    // Unmap all.
    let m = r.call(3, &dma_unmap_args(0, 0, VFIO_DMA_UNMAP_FLAG_ALL), &[], 0);
    assert_eq!(m.hdr.flags & FLAGS_ERROR, 0);
    assert_eq!(u64::from_le_bytes(m.payload[16..24].try_into().unwrap()), (1 << 20) + 0x4_0000);
    assert!(h.dma.is_empty());

    // SET_IRQS: bad index, range past the end, contradictory flags, more fds than count.
    let e1 = eventfd().unwrap();
    let e2 = eventfd().unwrap();
    assert_eq!(r.errno(8, &set_irqs_args(EFD_TRIGGER, 7, 0, 1), &[borrowed(&e1)]), libc::EINVAL as u32);
    assert_eq!(r.errno(8, &set_irqs_args(EFD_TRIGGER, 2, 63, 2), &[]), libc::EINVAL as u32);
    assert_eq!(r.errno(8, &set_irqs_args(EFD_TRIGGER | VFIO_IRQ_SET_DATA_BOOL, 2, 0, 1), &[]), libc::EINVAL as u32);
    assert_eq!(r.errno(8, &set_irqs_args(EFD_TRIGGER, 2, 0, 1), &[borrowed(&e1), borrowed(&e2)]), libc::EINVAL as u32);
    // count larger than the fds sent: the rest are de-assigned.
    assert_eq!(r.errno(8, &set_irqs_args(EFD_TRIGGER, 2, 10, 4), &[borrowed(&e1), borrowed(&e2)]), 0);
    h.irqs.raise(11).unwrap();
    assert_eq!(e2.read().unwrap_or(0), 1);
    assert_eq!(h.irqs.raise(12), Ok(vrnic_vfio::Raised::Pending));
    // fd -1 (no fd): de-assign vector 10.
    assert_eq!(r.errno(8, &set_irqs_args(EFD_TRIGGER, 2, 10, 1), &[]), 0);
    assert_eq!(h.irqs.raise(10), Ok(vrnic_vfio::Raised::Pending));
    // Masking through SET_IRQS holds delivery until unmask.
    assert_eq!(r.errno(8, &set_irqs_args(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_MASK, 2, 11, 1), &[]), 0);
    h.irqs.raise(11).unwrap();
    assert_eq!(e2.read().unwrap_or(0), 0);
    assert_eq!(r.errno(8, &set_irqs_args(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_UNMASK, 2, 11, 1), &[]), 0);
    assert_eq!(e2.read().unwrap_or(0), 1);
}

#[test]
fn posted_writes_and_write_multi_reach_the_doorbells() {
    let h = start(DoorbellMode::Trap);
    let mut r = Raw::negotiated(&h);
    // A posted send doorbell (NO_REPLY): no reply comes back.
    let mut p = access(0x4000 + 0x800, 0, 8).to_vec();
    p.extend_from_slice(&[0, 0, 0x01, 0x08, 0, 0, 0x42, 0x01]);
    r.send(10, &p, &[], FLAGS_NO_REPLY);
    // A batch of two posted writes: CQ arm and EQ update.
    let mut multi = 2u64.to_le_bytes().to_vec();
    let mut one = |off: u64, count: u32, data: &[u8]| {
        multi.extend_from_slice(&off.to_le_bytes());
        multi.extend_from_slice(&0u32.to_le_bytes());
        multi.extend_from_slice(&count.to_le_bytes());
        let mut d = [0u8; 8];
        d[..data.len()].copy_from_slice(data);
        multi.extend_from_slice(&d);
    };
    one(0x4000 + 0x20, 8, &[0, 0, 0, 1, 0, 0, 0, 3]);
    one(0x4000 + 0x40, 4, &[2, 0, 0, 5]);
    r.send(15, &multi, &[], FLAGS_NO_REPLY);
    // The next request's reply is the first thing on the wire.
    assert_eq!(r.region_read(7, 0, 2).unwrap(), vec![0xb3, 0x15]);
    assert_eq!(h.doorbells.send.load(Ordering::Relaxed), 1);
    assert_eq!(h.doorbells.cq_arm.load(Ordering::Relaxed), 1);
    assert_eq!(h.doorbells.eq_update.load(Ordering::Relaxed), 1);
    assert_eq!(h.stats.posted_writes.load(Ordering::Relaxed), 3);
    // A multi-write entry claiming more than 8 bytes is refused.
    let mut bad = 1u64.to_le_bytes().to_vec();
    bad.extend_from_slice(&0x4000u64.to_le_bytes());
    bad.extend_from_slice(&0u32.to_le_bytes());
    bad.extend_from_slice(&9u32.to_le_bytes());
    bad.extend_from_slice(&[0; 8]);
    assert_eq!(r.errno(15, &bad, &[]), libc::EINVAL as u32);
    assert!(h.device.bar_writes.load(Ordering::Relaxed) >= 3);
}

#[test]
fn region_info_argsz_negotiation() {
    let h = start(DoorbellMode::Poll);
    let mut r = Raw::negotiated(&h);
    let mut q = [0u8; 32];
    q[0..4].copy_from_slice(&32u32.to_le_bytes());
    let m = r.call(5, &q, &[], 0);
    assert_eq!(m.payload.len(), 32, "no room for caps: base info only");
    let need = u32::from_le_bytes(m.payload[0..4].try_into().unwrap());
    assert_eq!(need, 32 + 32, "sparse cap with one area");
    let flags = u32::from_le_bytes(m.payload[4..8].try_into().unwrap());
    assert_ne!(flags & VFIO_REGION_INFO_FLAG_CAPS, 0);
    assert_eq!(
        u32::from_le_bytes(m.payload[12..16].try_into().unwrap()),
        32,
        "QEMU needs a valid cap_offset even when truncated"
    );
    assert!(m.fds.is_empty(), "the fd comes with the full reply");
    q[0..4].copy_from_slice(&need.to_le_bytes());
    let m = r.call(5, &q, &[], 0);
    assert_eq!(m.payload.len(), need as usize);
    assert_eq!(m.fds.len(), 1, "region fd comes with the reply");
    let flags = u32::from_le_bytes(m.payload[4..8].try_into().unwrap());
    assert_eq!(
        flags & (VFIO_REGION_INFO_FLAG_MMAP | VFIO_REGION_INFO_FLAG_CAPS),
        VFIO_REGION_INFO_FLAG_MMAP | VFIO_REGION_INFO_FLAG_CAPS
    );
    assert_eq!(u32::from_le_bytes(m.payload[12..16].try_into().unwrap()), 32, "cap_offset");
    // Trap mode: nothing mappable, no fd.
    let h = start(DoorbellMode::Trap);
    let mut r = Raw::negotiated(&h);
    q[0..4].copy_from_slice(&64u32.to_le_bytes());
    for idx in 0..9u32 {
        q[8..12].copy_from_slice(&idx.to_le_bytes());
        let m = r.call(5, &q, &[], 0);
        assert!(m.fds.is_empty());
        let flags = u32::from_le_bytes(m.payload[4..8].try_into().unwrap());
        assert_eq!(flags & VFIO_REGION_INFO_FLAG_MMAP, 0, "region {idx}");
    }
}

#[test]
fn client_vanishing_mid_message_is_survived() {
    let h = start(DoorbellMode::Trap);
    // Half a header, then gone.
    {
        let s = UnixStream::connect(&h.path).unwrap();
        (&s).write_all(&[1, 0, 1, 0, 40]).unwrap();
    }
    // A header announcing a payload that never comes.
    {
        let mut r = Raw::negotiated(&h);
        r.id += 1;
        let hb = Header { id: r.id, command: 10, size: 64, flags: 0, error_reply: 0 };
        (&r.s).write_all(&hb.emit()).unwrap();
    }
    wait_until("both connections served", || {
        h.stats.connections.load(Ordering::Relaxed) >= 2 && !h.stats.connected.load(Ordering::Relaxed)
    });
    let mut r = Raw::negotiated(&h);
    assert_eq!(r.region_read(7, 2, 2).unwrap(), vec![0x17, 0x10]);
}

#[test]
fn stale_socket_is_replaced_and_live_one_is_not() {
    let dir = tempdir("stale");
    let path = dir.0.join("s.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap()); // leaves the file behind
    assert!(path.exists());
    let mk = || {
        let irqs = Arc::new(Interrupts::new(64));
        let dma = Arc::new(DmaSpace::default());
        (Vrnic::new(&Config::default(), irqs.clone(), dma.clone()).unwrap(), dma, irqs)
    };
    let (d, dma, irqs) = mk();
    let mut s = Server::bind(&path, d, dma, irqs, ServerOptions::default()).unwrap();
    std::thread::spawn(move || s.run());
    let (d, dma, irqs) = mk();
    assert!(matches!(
        Server::bind(&path, d, dma, irqs, ServerOptions::default()),
        Err(vrnic_vfio::server::ServerError::InUse(_))
    ));
}

#[test]
fn flr_through_config_space_resets_the_device() {
    let h = start(DoorbellMode::Trap);
    let mut r = Raw::negotiated(&h);
    assert_eq!(r.region_write(0, 0x14, &0x0000_1000u32.to_be_bytes()), 0);
    assert_eq!(r.region_read(0, 0x14, 4).unwrap(), vec![0, 0, 0x10, 0x56]);
    assert_eq!(r.region_write(7, 0x68, &[0x00, 0x80]), 0);
    assert_eq!(r.region_read(0, 0x14, 4).unwrap(), vec![0, 0, 0x01, 0x56]);
    assert_eq!(h.device.flrs.load(Ordering::Relaxed), 1);
}
