//! The vfio-user server loop: one client at a time, messages handled in
//! order on the control thread, every error answered with its real errno,
//! unknown commands read in full and refused so the stream stays in sync.

use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use thiserror::Error;
use tracing::{debug, info, trace, warn};

use super::device::VfioDevice;
use super::dma::DmaSpace;
use super::irq::Interrupts;
use super::protocol::{self, Command, Header, HEADER_SIZE};
use super::socket::{recv_exact_with_fds, send_with_fds};
use super::uapi::*;
use vrnic_sys::host::{Idle, IdleStrategy, SocketSpin, Wake};

/// Tunables advertised in VERSION.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// `max_msg_fds`.
    pub max_msg_fds: u32,
    /// `max_data_xfer_size`: largest region read/write payload.
    pub max_data_xfer_size: u32,
    /// `max_dma_maps`.
    pub max_dma_maps: u32,
    /// Advertise `write_multiple` (REGION_WRITE_MULTI batches of posted writes).
    pub write_multiple: bool,
    /// After a message, keep checking the socket this long before blocking
    /// in recvmsg (0: always block). Saves the wake-up of the next doorbell.
    pub spin_us: u32,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_msg_fds: 16,
            max_data_xfer_size: 1 << 20,
            max_dma_maps: 4096,
            write_multiple: true,
            spin_us: 0,
        }
    }
}

/// Counters exported to the control socket.
#[derive(Default, Debug, serde::Serialize)]
pub struct ServerStats {
    pub connections: AtomicU64,
    pub messages: AtomicU64,
    pub errors: AtomicU64,
    pub region_reads: AtomicU64,
    pub region_writes: AtomicU64,
    pub posted_writes: AtomicU64,
    pub resets: AtomicU64,
    pub connected: AtomicBool,
    /// Trap-mode socket spins that found the next message / ran out.
    pub spin_hits: AtomicU64,
    pub spin_misses: AtomicU64,
}

/// Errors that end a connection (as opposed to error replies).
#[derive(Debug, Error)]
pub enum ServerError {
    #[error("socket {0} is in use by a live server")]
    InUse(PathBuf),
    #[error("socket io: {0}")]
    Io(#[from] io::Error),
}

/// A request failure, answered with an errno.
#[derive(Debug)]
struct Errno(i32, String);

impl<E: std::fmt::Display> From<(i32, E)> for Errno {
    fn from((e, m): (i32, E)) -> Self {
        Errno(e, m.to_string())
    }
}

fn einval(m: impl std::fmt::Display) -> Errno {
    Errno(libc::EINVAL, m.to_string())
}

/// A reply: payload bytes and an optional fd to pass along.
struct Reply {
    payload: Vec<u8>,
    fd: Option<OwnedFd>,
}

impl Reply {
    fn empty() -> Self {
        Reply { payload: Vec::new(), fd: None }
    }
    fn bytes(b: &[u8]) -> Self {
        Reply { payload: b.to_vec(), fd: None }
    }
}

/// The vfio-user server for one device.
pub struct Server<D: VfioDevice> {
    listener: UnixListener,
    path: PathBuf,
    device: D,
    dma: Arc<DmaSpace>,
    irqs: Arc<Interrupts>,
    opts: ServerOptions,
    pub stats: Arc<ServerStats>,
    /// Per-connection: VERSION done.
    negotiated: bool,
    /// Per-connection: the client's max_data_xfer_size.
    client_max_xfer: u32,
    /// When to spin on the socket; opened here, before the seccomp filter.
    spin: SocketSpin,
}

impl<D: VfioDevice> Server<D> {
    /// Binds `path`, replacing a stale socket file left by a dead server.
    pub fn bind(
        path: &Path,
        device: D,
        dma: Arc<DmaSpace>,
        irqs: Arc<Interrupts>,
        opts: ServerOptions,
    ) -> Result<Self, ServerError> {
        if let Ok(md) = std::fs::symlink_metadata(path) {
            if md.file_type().is_socket() && UnixStream::connect(path).is_ok() {
                return Err(ServerError::InUse(path.to_path_buf()));
            }
            info!(path = %path.display(), "replacing stale socket file");
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        Ok(Server {
            listener,
            path: path.to_path_buf(),
            device,
            dma,
            irqs,
            stats: Arc::new(ServerStats::default()),
            negotiated: false,
            client_max_xfer: 1 << 20,
            spin: SocketSpin::new(Duration::from_micros(opts.spin_us as u64)),
            opts,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn device(&self) -> &D {
        &self.device
    }

    /// Serves clients forever, one at a time.
    pub fn run(&mut self) -> Result<(), ServerError> {
        loop {
            let (stream, _) = self.listener.accept()?;
            self.serve(stream);
        }
    }

    /// Serves one client until it disconnects, then drops all guest state.
    pub fn serve(&mut self, stream: UnixStream) {
        self.stats.connections.fetch_add(1, Ordering::Relaxed);
        self.stats.connected.store(true, Ordering::Relaxed);
        info!("client connected");
        self.negotiated = false;
        self.client_max_xfer = 1 << 20;
        match self.serve_inner(&stream) {
            Ok(()) => info!("client disconnected"),
            Err(e) => warn!("client connection ended: {e}"),
        }
        // Guest state goes with the client: mappings, eventfds, device state;
        // `connected` turns false only once all of it is gone.
        let bytes = self.end_connection();
        debug!(unmapped = bytes, "guest state dropped");
        self.stats.connected.store(false, Ordering::Relaxed);
    }

    fn serve_inner(&mut self, stream: &UnixStream) -> io::Result<()> {
        let max_msg = self.opts.max_data_xfer_size as usize + 4096;
        self.spin.restart();
        loop {
            let mut hb = [0u8; HEADER_SIZE];
            // A message already queued (doorbells in a burst) is taken at
            // once; only an empty socket is spun on or slept on.
            let got = match recv_exact_with_fds(stream, &mut hb, true) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
                r => Some(r?),
            };
            let got = match got {
                Some(g) => g,
                None => {
                    if let (Idle::Spin { up_to }, _) = self.spin.on_idle() {
                        let found = crate::socket::wait_readable_spinning(stream, up_to);
                        let c = if found.is_some() { &self.stats.spin_hits } else { &self.stats.spin_misses };
                        c.fetch_add(1, Ordering::Relaxed);
                        self.spin.on_wake(found.map_or(Wake::Timeout { late: Duration::ZERO }, |after| Wake::Event {
                            after,
                            local: false,
                        }));
                    }
                    recv_exact_with_fds(stream, &mut hb, false)?
                }
            };
            let (fds, truncated) = match got {
                None => return Ok(()),
                Some(x) => x,
            };
            let hdr = Header::parse(&hb);
            self.stats.messages.fetch_add(1, Ordering::Relaxed);
            let name = Command::from_u16(hdr.command).map(Command::name).unwrap_or("UNKNOWN");
            trace!(
                id = hdr.id,
                cmd = name,
                command = hdr.command,
                size = hdr.size,
                flags = hdr.flags,
                fds = fds.len(),
                "vfio-user message"
            );

            let result: Result<Option<Reply>, Errno> = if hdr.size < HEADER_SIZE as u32 {
                // Nothing follows that we could skip: treat as header-only.
                Err(einval(format!("message size {} below header", hdr.size)))
            } else if hdr.size as usize > max_msg {
                discard(stream, hdr.size as usize - HEADER_SIZE)?;
                Err(Errno(libc::E2BIG, format!("message size {}", hdr.size)))
            } else {
                let mut payload = vec![0u8; hdr.size as usize - HEADER_SIZE];
                stream_read_exact(stream, &mut payload)?;
                if hdr.msg_type() != protocol::FLAGS_TYPE_COMMAND {
                    // We never send requests, so a reply from the client is bogus.
                    warn!(id = hdr.id, "unexpected reply from client ignored");
                    continue;
                }
                if truncated {
                    Err(einval("too many fds"))
                } else {
                    self.dispatch(&hdr, &payload, fds)
                }
            };
            if let Some((bytes, fd)) = self.answer(&hdr, name, result) {
                let fds: Vec<_> = fd.as_ref().map(|f| f.as_fd()).into_iter().collect();
                send_with_fds(stream, &[&bytes], &fds)?;
            }
        }
    }

    /// Turns a request's outcome into the bytes to send back (header and
    /// payload) and the fd to pass along; None when no reply goes out.
    fn answer(
        &mut self,
        hdr: &Header,
        name: &str,
        result: Result<Option<Reply>, Errno>,
    ) -> Option<(Vec<u8>, Option<OwnedFd>)> {
        match result {
            Ok(None) => None,
            Ok(Some(reply)) if !hdr.no_reply() => {
                let mut bytes = hdr.reply(reply.payload.len()).emit().to_vec();
                bytes.extend_from_slice(&reply.payload);
                Some((bytes, reply.fd))
            }
            Ok(Some(_)) => None,
            Err(Errno(errno, msg)) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                debug!(id = hdr.id, cmd = name, errno, "request failed: {msg}");
                (!hdr.no_reply()).then(|| (hdr.error(errno).emit().to_vec(), None))
            }
        }
    }

    /// Handles one whole message (header and payload, `fds` as received with
    /// it) exactly as [`Server::serve`] does one read from the socket, without
    /// a socket: for fuzzing and tests. Returns the reply bytes and fd; None
    /// when nothing is sent back, or when `msg` is shorter than its header
    /// says (on a socket: a connection that ends mid-message).
    pub fn handle_message(&mut self, msg: &[u8], fds: Vec<OwnedFd>) -> Option<(Vec<u8>, Option<OwnedFd>)> {
        let hb: &[u8; HEADER_SIZE] = msg.get(..HEADER_SIZE)?.try_into().ok()?;
        let hdr = Header::parse(hb);
        self.stats.messages.fetch_add(1, Ordering::Relaxed);
        let name = Command::from_u16(hdr.command).map(Command::name).unwrap_or("UNKNOWN");
        let max_msg = self.opts.max_data_xfer_size as usize + 4096;
        let truncated = fds.len() > self.opts.max_msg_fds as usize;
        let result = if hdr.size < HEADER_SIZE as u32 {
            Err(einval(format!("message size {} below header", hdr.size)))
        } else if hdr.size as usize > max_msg {
            Err(Errno(libc::E2BIG, format!("message size {}", hdr.size)))
        } else {
            let payload = msg.get(HEADER_SIZE..hdr.size as usize)?;
            if hdr.msg_type() != protocol::FLAGS_TYPE_COMMAND {
                return None;
            }
            if truncated {
                Err(einval("too many fds"))
            } else {
                self.dispatch(&hdr, payload, fds)
            }
        };
        self.answer(&hdr, name, result)
    }

    /// Drops all guest state as a client disconnect does (DMA mappings,
    /// eventfds, device state) and expects VERSION again.
    pub fn end_connection(&mut self) -> u64 {
        self.negotiated = false;
        self.client_max_xfer = 1 << 20;
        let bytes = self.dma.clear();
        self.irqs.clear();
        self.device.disconnect();
        bytes
    }

    fn dispatch(&mut self, hdr: &Header, p: &[u8], fds: Vec<OwnedFd>) -> Result<Option<Reply>, Errno> {
        let cmd = Command::from_u16(hdr.command);
        if !self.negotiated && cmd != Some(Command::Version) {
            return Err(einval("VERSION must come first"));
        }
        // Only DMA_MAP and SET_IRQS carry descriptors.
        if !fds.is_empty() && !matches!(cmd, Some(Command::DmaMap) | Some(Command::DeviceSetIrqs)) {
            return Err(einval("unexpected fds"));
        }
        let pe = |e: protocol::ParseError| Errno(e.errno(), e.to_string());
        match cmd {
            Some(Command::Version) => self.version(p).map(Some),
            Some(Command::DmaMap) => {
                let m = protocol::DmaMap::parse(p).map_err(pe)?;
                if fds.len() > 1 {
                    return Err(einval("more than one fd"));
                }
                let readable = m.flags & VFIO_DMA_MAP_FLAG_READ != 0;
                let writable = m.flags & VFIO_DMA_MAP_FLAG_WRITE != 0;
                debug!(iova = m.iova, size = m.size, offset = m.offset, fd = !fds.is_empty(), "DMA_MAP");
                self.dma
                    .map(m.iova, m.size, m.offset, readable, writable, fds.into_iter().next())
                    .map_err(|e| Errno(e.errno(), e.to_string()))?;
                Ok(Some(Reply::empty()))
            }
            Some(Command::DmaUnmap) => {
                let mut m = protocol::DmaUnmap::parse(p).map_err(pe)?;
                if m.flags & VFIO_DMA_UNMAP_FLAG_GET_DIRTY_BITMAP != 0 {
                    return Err(Errno(libc::ENOTSUP, "dirty bitmap".into()));
                }
                if m.flags & !VFIO_DMA_UNMAP_FLAG_ALL != 0 {
                    return Err(einval("unmap flags"));
                }
                let bytes = if m.flags & VFIO_DMA_UNMAP_FLAG_ALL != 0 {
                    if m.iova != 0 || m.size != 0 {
                        return Err(einval("unmap all with a range"));
                    }
                    self.dma.clear()
                } else {
                    self.dma.unmap(m.iova, m.size).map_err(|e| Errno(e.errno(), e.to_string()))?
                };
                debug!(iova = m.iova, size = m.size, bytes, "DMA_UNMAP");
                m.argsz = protocol::DmaUnmap::SIZE as u32;
                m.size = bytes;
                Ok(Some(Reply::bytes(&m.emit())))
            }
            Some(Command::DeviceGetInfo) => {
                protocol::DeviceInfo::parse(p).map_err(pe)?;
                let info = protocol::DeviceInfo {
                    argsz: protocol::DeviceInfo::SIZE as u32,
                    flags: VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET,
                    num_regions: VFIO_PCI_NUM_REGIONS,
                    num_irqs: VFIO_PCI_NUM_IRQS,
                };
                Ok(Some(Reply::bytes(&info.emit())))
            }
            Some(Command::DeviceGetRegionInfo) => self.region_info(p).map(Some),
            Some(Command::DeviceGetIrqInfo) => {
                let q = protocol::IrqInfo::parse(p).map_err(pe)?;
                let flags = self.irqs.info_flags(q.index).ok_or_else(|| einval(format!("irq index {}", q.index)))?;
                let count = self.irqs.count(q.index).unwrap_or(0);
                let info = protocol::IrqInfo { argsz: protocol::IrqInfo::SIZE as u32, flags, index: q.index, count };
                Ok(Some(Reply::bytes(&info.emit())))
            }
            Some(Command::DeviceSetIrqs) => {
                let s = protocol::IrqSet::parse(p).map_err(pe)?;
                debug!(index = s.index, start = s.start, count = s.count, flags = s.flags, fds = fds.len(), "SET_IRQS");
                self.irqs
                    .set_irqs(
                        s.flags,
                        s.index,
                        s.start,
                        s.count,
                        fds.into_iter().map(super::irq::eventfd_from).collect(),
                        &p[protocol::IrqSet::SIZE..],
                    )
                    .map_err(|e| Errno(e.errno(), e.to_string()))?;
                Ok(Some(Reply::empty()))
            }
            Some(Command::RegionRead) => {
                let a = protocol::RegionAccess::parse(p).map_err(pe)?;
                if p.len() != protocol::RegionAccess::SIZE {
                    return Err(einval("region read with data"));
                }
                if a.count > self.opts.max_data_xfer_size.min(self.client_max_xfer) {
                    return Err(einval(format!("read of {} bytes", a.count)));
                }
                self.check_range(a.region, a.offset, a.count as usize)?;
                let mut out = a.emit().to_vec();
                out.resize(protocol::RegionAccess::SIZE + a.count as usize, 0);
                self.device
                    .region_read(a.region, a.offset, &mut out[protocol::RegionAccess::SIZE..])
                    .map_err(|e| Errno(e.errno(), e.to_string()))?;
                self.stats.region_reads.fetch_add(1, Ordering::Relaxed);
                trace!(region = a.region, offset = a.offset, count = a.count, data = ?&out[16..16 + (a.count as usize).min(8)], "region read");
                Ok(Some(Reply { payload: out, fd: None }))
            }
            Some(Command::RegionWrite) => {
                let a = protocol::RegionAccess::parse(p).map_err(pe)?;
                let data = &p[protocol::RegionAccess::SIZE..];
                if data.len() != a.count as usize {
                    return Err(einval(format!("write count {} with {} data bytes", a.count, data.len())));
                }
                self.region_write(a.region, a.offset, data, hdr.no_reply())?;
                Ok(Some(Reply::bytes(
                    &protocol::RegionAccess { offset: a.offset, region: a.region, count: a.count }.emit(),
                )))
            }
            Some(Command::RegionWriteMulti) => {
                let wrs = protocol::parse_write_multi(p).map_err(pe)?;
                for w in wrs {
                    if w.count as usize > w.data.len() {
                        return Err(einval("multi-write entry too long"));
                    }
                    self.region_write(w.region, w.offset, &w.data[..w.count as usize], true)?;
                }
                Ok(Some(Reply::empty()))
            }
            Some(Command::DeviceReset) => {
                info!("DEVICE_RESET");
                self.stats.resets.fetch_add(1, Ordering::Relaxed);
                self.irqs.reset();
                self.device.reset();
                Ok(Some(Reply::empty()))
            }
            Some(c) => Err(Errno(libc::ENOTSUP, format!("{} not supported", c.name()))),
            None => Err(Errno(libc::ENOTSUP, format!("unknown command {}", hdr.command))),
        }
    }

    fn version(&mut self, p: &[u8]) -> Result<Reply, Errno> {
        let v = protocol::Version::parse(p).map_err(|e| Errno(e.errno(), e.to_string()))?;
        if v.major != protocol::VERSION_MAJOR {
            return Err(Errno(libc::ENOTSUP, format!("version {}.{}", v.major, v.minor)));
        }
        if let Some(caps) = v.capabilities.as_ref().and_then(|c| c.get("capabilities")) {
            if let Some(x) = caps.get("max_data_xfer_size").and_then(|x| x.as_u64()) {
                self.client_max_xfer = x.clamp(4096, u32::MAX as u64) as u32;
            }
        }
        info!(major = v.major, minor = v.minor, caps = ?v.capabilities, "VERSION");
        self.negotiated = true;
        let reply = protocol::Version {
            major: protocol::VERSION_MAJOR,
            minor: v.minor.min(protocol::VERSION_MINOR),
            capabilities: Some(json!({
                "capabilities": {
                    "max_msg_fds": self.opts.max_msg_fds,
                    "max_data_xfer_size": self.opts.max_data_xfer_size,
                    "pgsizes": 4096,
                    "max_dma_maps": self.opts.max_dma_maps,
                    "write_multiple": self.opts.write_multiple,
                }
            })),
        };
        Ok(Reply { payload: reply.emit(), fd: None })
    }

    fn region_info(&self, p: &[u8]) -> Result<Reply, Errno> {
        let q = protocol::RegionInfo::parse(p).map_err(|e| Errno(e.errno(), e.to_string()))?;
        if q.index >= VFIO_PCI_NUM_REGIONS {
            return Err(einval(format!("region {}", q.index)));
        }
        let r = self.device.region(q.index);
        let mut info = protocol::RegionInfo {
            argsz: protocol::RegionInfo::SIZE as u32,
            index: q.index,
            size: r.size,
            ..Default::default()
        };
        if r.readable {
            info.flags |= VFIO_REGION_INFO_FLAG_READ;
        }
        if r.writable {
            info.flags |= VFIO_REGION_INFO_FLAG_WRITE;
        }
        let mut caps = Vec::new();
        let mut fd = None;
        if let (Some(m), Some(f)) = (&r.mmap, self.device.region_fd()) {
            info.flags |= VFIO_REGION_INFO_FLAG_MMAP | VFIO_REGION_INFO_FLAG_CAPS;
            info.offset = m.file_offset;
            caps = protocol::emit_sparse_mmap_cap(&m.areas);
            fd = Some(f.try_clone_to_owned().map_err(|e| Errno(e.raw_os_error().unwrap_or(libc::EIO), e.to_string()))?);
        }
        let needed = (protocol::RegionInfo::SIZE + caps.len()) as u32;
        let mut out;
        if q.argsz >= needed {
            info.argsz = needed;
            if !caps.is_empty() {
                info.cap_offset = protocol::RegionInfo::SIZE as u32;
            }
            out = info.emit().to_vec();
            out.extend_from_slice(&caps);
        } else {
            // Too small for the capability chain: say how much is needed and
            // where the chain will start (QEMU rejects CAPS with cap_offset 0).
            // The fd comes with the full reply only.
            info.argsz = needed;
            if !caps.is_empty() {
                info.cap_offset = protocol::RegionInfo::SIZE as u32;
            }
            out = info.emit().to_vec();
            fd = None;
        }
        Ok(Reply { payload: out, fd })
    }

    fn check_range(&self, region: u32, offset: u64, count: usize) -> Result<(), Errno> {
        if region >= VFIO_PCI_NUM_REGIONS {
            return Err(einval(format!("region {region}")));
        }
        let size = self.device.region(region).size;
        match offset.checked_add(count as u64) {
            Some(end) if end <= size && count > 0 => Ok(()),
            _ => Err(einval(format!("access {offset:#x}+{count} outside region {region} of {size:#x}"))),
        }
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8], posted: bool) -> Result<(), Errno> {
        if data.len() > self.opts.max_data_xfer_size as usize {
            return Err(einval("write too large"));
        }
        self.check_range(region, offset, data.len())?;
        trace!(region, offset, count = data.len(), posted, data = ?&data[..data.len().min(8)], "region write");
        self.device.region_write(region, offset, data).map_err(|e| Errno(e.errno(), e.to_string()))?;
        self.stats.region_writes.fetch_add(1, Ordering::Relaxed);
        if posted {
            self.stats.posted_writes.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

fn stream_read_exact(stream: &UnixStream, buf: &mut [u8]) -> io::Result<()> {
    (&*stream).read_exact(buf)
}

fn discard(stream: &UnixStream, mut n: usize) -> io::Result<()> {
    let mut sink = [0u8; 8192];
    while n > 0 {
        let k = n.min(sink.len());
        stream_read_exact(stream, &mut sink[..k])?;
        n -= k;
    }
    Ok(())
}
