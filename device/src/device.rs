//! The vrnic PCIe function: config space, the BAR map and its backing
//! memory, wired to the mlx5 personality. This is the [`VfioDevice`] the
//! vfio-user server serves.
//!
//! Backing memory: one memfd holds BAR0 (at file offset 0) followed by BAR4
//! (at file offset `bar0_size`). In `poll` mode the UAR part of BAR0 and all
//! of BAR4 are handed to QEMU as sparse mmap areas of that fd; in `trap`
//! mode nothing is mappable and the server reads/writes the same memory on
//! the guest's behalf.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::{Config, DoorbellMode};
use crate::uar_poller::{PollerStats, UarPoller};
use vrnic_engine::Limits;
use vrnic_fabric::ether::EtherCounters;
use vrnic_fabric::roce::RocePort;
use vrnic_fabric::LoopbackPump;
use vrnic_mlx5::builder::FirmwareBuilder;
use vrnic_mlx5::firmware::Firmware;
use vrnic_mlx5::hca::state::UarHook;
use vrnic_mlx5::ib::port::PortConfig;
use vrnic_mlx5::uar::{arm_page, Doorbell, UAR_PAGE};
use vrnic_mlx5::{DoorbellSink, DoorbellStats, InitSegment, Kick};
use vrnic_pci::*;
use vrnic_subnet::IbStage;
use vrnic_sys::clock::MonotonicClock;
use vrnic_sys::{memfd, SharedMem};
use vrnic_vfio::{DmaSpace, Interrupts};

/// Counters exported to the control socket.
#[derive(Default, Debug, serde::Serialize)]
pub struct DeviceStats {
    pub config_reads: AtomicU64,
    pub config_writes: AtomicU64,
    pub bar_reads: AtomicU64,
    pub bar_writes: AtomicU64,
    pub cmd_doorbells: AtomicU64,
    pub resets: AtomicU64,
    pub flrs: AtomicU64,
    /// Fast teardowns (TEARDOWN_HCA PREPARE_FAST_TEARDOWN, then `nic_interface` = DISABLED).
    pub fast_teardowns: AtomicU64,
}

/// The device model behind one vfio-user socket.
pub struct Vrnic {
    cfg: ConfigSpace,
    bars: BarLayout,
    mode: DoorbellMode,
    watch_uars: u32,
    mem_fd: OwnedFd,
    mem: Arc<SharedMem>,
    init: InitSegment,
    msix_table: Vec<u8>,
    irqs: Arc<Interrupts>,
    dma: Arc<DmaSpace>,
    doorbells: Arc<DoorbellStats>,
    sink: Arc<dyn DoorbellSink>,
    poller: Option<UarPoller>,
    fw: Arc<Mutex<Firmware>>,
    /// The engine's packet path: the IB fabric and stage, or the Ethernet
    /// link and its RoCE port (its worker stops when the device is dropped).
    wire: Wire,
    pub stats: Arc<DeviceStats>,
}

/// What the engine and the firmware see as memory: guest RAM through the
/// DMA mappings, and on-device memory (the MEMIC window, tagged with
/// [`vrnic_engine::DEVICE_MEMORY`]) in the device's own backing file.
pub struct DeviceMemory {
    dma: Arc<DmaSpace>,
    mem: Arc<SharedMem>,
    /// File offset and size of the device-memory window.
    base: u64,
    size: u64,
}

impl DeviceMemory {
    /// The file offset of a tagged device-memory access, if inside the window.
    fn dm(&self, addr: u64, len: usize) -> Option<usize> {
        let off = addr & !vrnic_engine::DEVICE_MEMORY;
        (off.checked_add(len as u64)? <= self.size).then(|| (self.base + off) as usize)
    }
}

impl vrnic_engine::GuestMemory for DeviceMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), vrnic_engine::MemFault> {
        if addr & vrnic_engine::DEVICE_MEMORY != 0 {
            let ok = self.dm(addr, buf.len()).is_some_and(|o| self.mem.read(o, buf));
            return if ok { Ok(()) } else { Err(vrnic_engine::MemFault { addr }) };
        }
        self.dma.read(addr, buf).map_err(|_| vrnic_engine::MemFault { addr })
    }
    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), vrnic_engine::MemFault> {
        if addr & vrnic_engine::DEVICE_MEMORY != 0 {
            let ok = self.dm(addr, buf.len()).is_some_and(|o| self.mem.write(o, buf));
            return if ok { Ok(()) } else { Err(vrnic_engine::MemFault { addr }) };
        }
        self.dma.write(addr, buf).map_err(|_| vrnic_engine::MemFault { addr })
    }
    fn compare_and_swap_u64(&self, addr: u64, expected: u64, new: u64) -> Result<u64, vrnic_engine::MemFault> {
        if addr & vrnic_engine::DEVICE_MEMORY != 0 {
            return self
                .dm(addr, 8)
                .and_then(|o| self.mem.compare_and_swap_u64(o, expected, new))
                .ok_or(vrnic_engine::MemFault { addr });
        }
        self.dma.compare_and_swap_u64(addr, expected, new).map_err(|_| vrnic_engine::MemFault { addr })
    }
    fn fetch_add_u64(&self, addr: u64, add: u64) -> Result<u64, vrnic_engine::MemFault> {
        if addr & vrnic_engine::DEVICE_MEMORY != 0 {
            return self
                .dm(addr, 8)
                .and_then(|o| self.mem.fetch_add_u64(o, add))
                .ok_or(vrnic_engine::MemFault { addr });
        }
        self.dma.fetch_add_u64(addr, add).map_err(|_| vrnic_engine::MemFault { addr })
    }
}

/// Hands decoded doorbells to the firmware (which routes them:
/// `Firmware::uar_doorbell`), and counts every one. In poll mode a store is
/// a hint and the doorbell records of its page are the truth (`scan_page`).
/// With `fabric.inline_loopback` (default), the doorbell runs inside the
/// fabric's [`LoopbackPump`], so traffic to this port's own QPs is delivered
/// on the doorbell's thread instead of the fabric worker's.
struct FwSink {
    fw: Arc<Mutex<Firmware>>,
    stats: Arc<DoorbellStats>,
    pump: Option<LoopbackPump>,
    scan_page: bool,
}

impl DoorbellSink for FwSink {
    fn doorbell(&self, db: Doorbell) {
        self.stats.doorbell(db);
        pumped(self.pump.as_ref(), || lock(&self.fw).uar_doorbell(db, self.scan_page))
    }
}

/// Runs a doorbell inside the loopback pump when there is one.
fn pumped(pump: Option<&LoopbackPump>, body: impl FnOnce()) {
    match pump {
        Some(p) => p.run(body),
        None => body(),
    }
}

/// The object limits of a device with these BARs: UAR pages end where the
/// MEMIC window starts.
fn limits(config: &Config, bars: &BarLayout) -> Limits {
    Limits {
        uar_first: FIRST_UAR_PAGE as u32,
        uar_last: (bars.memic_offset() / UAR_PAGE - 1) as u32,
        log_max_rd_atomic: config.log_max_rd_atomic(),
        ..Limits::default()
    }
}

/// The port's identity and initial state; without the built-in SM it starts
/// unconfigured, for an SM in a guest.
fn port_config(config: &Config, sm_lid: u16) -> PortConfig {
    let mut port =
        PortConfig::new(config.node_guid(), config.port_guid(), config.identity.lid, config.identity.device_id);
    port.revision = config.identity.revision as u32;
    port.sys_image_guid = config.sys_image_guid();
    port.node_desc = config.node_desc();
    port.sm_sl = config.identity.sm_sl;
    port.sm_lid = sm_lid;
    if config.sm.enabled {
        port
    } else {
        port.unconfigured()
    }
}

/// Poll mode: an allocated UAR page gets its sentinels and is watched
/// before ALLOC_UAR completes.
fn watch_allocated_uars(config: &Config, mem: &Arc<SharedMem>, watched: &Arc<Mutex<Vec<u64>>>) -> UarHook {
    let first_mappable = MAPPABLE_START / UAR_PAGE;
    let first_watched = first_mappable + config.doorbell.watch_uars as u64;
    let (pages, mem) = (watched.clone(), mem.clone());
    Arc::new(move |uar: u32, alive: bool| {
        let uar = uar as u64;
        let mut p = pages.lock().unwrap_or_else(|e| e.into_inner());
        if uar < first_mappable {
            // Trapped page: its stores arrive as region writes.
        } else if alive {
            arm_page(&mem, uar);
            if !p.contains(&uar) {
                p.push(uar);
            }
        } else if uar >= first_watched {
            p.retain(|&x| x != uar);
        }
    })
}

fn lock(fw: &Mutex<Firmware>) -> MutexGuard<'_, Firmware> {
    fw.lock().unwrap_or_else(|e| e.into_inner())
}

impl Vrnic {
    /// Builds the function from a validated config.
    pub fn new(config: &Config, irqs: Arc<Interrupts>, dma: Arc<DmaSpace>) -> io::Result<Vrnic> {
        let bars = config.bar_layout();
        bars.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let fw_version = config.fw_version().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        // BAR4 aliases BAR0's last bytes (the MEMIC window): one file of BAR0's size.
        let total = bars.bar0;
        let mem_fd = memfd("vrnic-bars", total)?;
        let mem = Arc::new(SharedMem::map(&mem_fd, total as usize)?);
        let memory =
            Arc::new(DeviceMemory { dma: dma.clone(), mem: mem.clone(), base: bars.memic_offset(), size: bars.bar4 });
        let link_layer = config.link_layer().map_err(io::Error::other)?;
        // One clock for the engine's timers and the link worker's deadlines.
        let clock = Arc::new(MonotonicClock::default());
        let mut wire = Wire::open(config, link_layer, &clock)?;
        let port = port_config(config, wire.sm_lid(config));
        let watched: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(Vec::new()));
        let mut builder = FirmwareBuilder::new(memory.clone(), irqs.clone(), port.clone(), limits(config, &bars))
            .memic(bars.memic_offset(), bars.bar4)
            .link(link_layer)
            .mac(config.mac().map_err(io::Error::other)?)
            .trace(config.logging.trace);
        builder = wire.connect_firmware(builder, config, &port, memory, clock)?;
        if config.doorbell.mode == DoorbellMode::Poll {
            builder = builder.on_uar(watch_allocated_uars(config, &mem, &watched));
        }
        let fw = Arc::new(Mutex::new(builder.build().map_err(io::Error::other)?));
        let doorbells = Arc::new(DoorbellStats::default());
        let fw_sink = |scan_page| FwSink {
            fw: fw.clone(),
            stats: doorbells.clone(),
            pump: wire.loopback_pump(config),
            scan_page,
        };
        let sink: Arc<dyn DoorbellSink> = Arc::new(fw_sink(false));
        let poller = match config.doorbell.mode {
            DoorbellMode::Poll => Some(UarPoller::start_with(mem.clone(), Arc::new(fw_sink(true)), watched)),
            DoorbellMode::Trap => None,
        };
        let kick = poller.as_ref().and_then(|p| p.kick_handle()).map(|k| Arc::new(k) as Arc<dyn Kick>);
        wire.start(config, &fw, kick)?;
        let mut d = Vrnic {
            cfg: ConfigSpace::new(config.pci_identity(), bars),
            bars,
            mode: config.doorbell.mode,
            watch_uars: config.doorbell.watch_uars,
            mem_fd,
            mem,
            init: InitSegment::new(fw_version, config.identity.device_id as u32),
            msix_table: vec![0; (MSIX_VECTORS * 16) as usize],
            irqs,
            dma,
            doorbells,
            sink,
            poller,
            fw,
            wire,
            stats: Arc::new(DeviceStats::default()),
        };
        d.reset_state();
        Ok(d)
    }

    pub fn doorbell_stats(&self) -> Arc<DoorbellStats> {
        self.doorbells.clone()
    }

    /// The UAR poller's counters (poll mode only).
    pub fn poller_stats(&self) -> Option<Arc<PollerStats>> {
        self.poller.as_ref().map(|p| p.stats.clone())
    }

    pub fn interrupts(&self) -> Arc<Interrupts> {
        self.irqs.clone()
    }

    pub fn dma(&self) -> Arc<DmaSpace> {
        self.dma.clone()
    }

    /// The fabric's UDP address.
    pub fn fabric_addr(&self) -> Option<std::net::SocketAddr> {
        self.wire.fabric_addr()
    }

    /// The InfiniBand port's IB stage (`None` on Ethernet).
    pub fn subnet(&self) -> Option<Arc<IbStage>> {
        self.wire.stage()
    }

    /// An Ethernet port's link counters (`None` on InfiniBand).
    pub fn ether_counters(&self) -> Option<Arc<EtherCounters>> {
        self.wire.ether_counters()
    }

    /// An Ethernet port's RoCE port (`None` on InfiniBand).
    pub fn roce_port(&self) -> Option<Arc<RocePort>> {
        self.wire.roce_port()
    }

    /// An Ethernet link's UDP address (`None` on InfiniBand and for other media).
    pub fn ether_addr(&self) -> Option<std::net::SocketAddr> {
        self.wire.ether_addr()
    }

    /// The firmware (command interface, objects, event queues).
    pub fn firmware(&self) -> Arc<Mutex<Firmware>> {
        self.fw.clone()
    }

    pub fn mode(&self) -> DoorbellMode {
        self.mode
    }

    pub fn config_space(&self) -> &ConfigSpace {
        &self.cfg
    }

    pub fn init_segment(&self) -> &InitSegment {
        &self.init
    }

    fn num_uars(&self) -> u64 {
        self.bars.memic_offset() / UAR_PAGE - FIRST_UAR_PAGE
    }

    /// Drops every byte of device memory and register state.
    fn reset_state(&mut self) {
        self.cfg.reset();
        self.init.reset();
        lock(&self.fw).reset();
        self.msix_table.iter_mut().for_each(|b| *b = 0);
        self.clear_device_memory();
    }

    /// The driver wrote `nic_interface` = DISABLED: after a prepared fast teardown the firmware
    /// dropped every object, and the device memory (doorbell pages, MEMIC) goes with them. PCI
    /// state (config space, the MSI-X table) stays, as on a ConnectX: the driver frees its vectors
    /// and disables the function itself.
    fn nic_interface_disabled(&mut self) {
        if lock(&self.fw).nic_interface_disabled() {
            tracing::info!("fast teardown: every object dropped");
            self.stats.fast_teardowns.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.clear_device_memory();
        }
    }

    /// Zeroes BAR memory and re-arms the watched doorbell pages (poll mode).
    fn clear_device_memory(&mut self) {
        // Punching a hole zeroes the range for every mapping of the memfd
        // (ours and QEMU's) and frees the pages.
        if !vrnic_sys::punch_hole(&self.mem_fd, self.mem.len() as u64) {
            self.mem.fill(0, self.mem.len(), 0);
        }
        if let Some(p) = &self.poller {
            p.unwatch_all();
            let first_mappable = MAPPABLE_START / UAR_PAGE;
            for i in 0..(self.watch_uars as u64).min(self.num_uars().saturating_sub(TRAPPED_UARS)) {
                let uar = first_mappable + i;
                arm_page(&self.mem, uar);
                p.watch(uar);
            }
        }
    }
}

mod regions;
mod wire;

use wire::Wire;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use vrnic_vfio::uapi::VFIO_PCI_CONFIG_REGION_INDEX as CFG;
    use vrnic_vfio::{SparseArea, VfioDevice};

    fn dev(mode: DoorbellMode) -> Vrnic {
        let mut c = Config::default();
        c.doorbell.mode = mode;
        Vrnic::new(&c, Arc::new(Interrupts::new(MSIX_VECTORS)), Arc::new(DmaSpace::default())).unwrap()
    }

    #[test]
    #[cfg_attr(miri, ignore = "Vrnic::new needs memfd_create and mmap of an fd, which Miri does not support")]
    fn regions_by_mode() {
        let t = dev(DoorbellMode::Trap);
        assert!((0..9).all(|i| t.region(i).mmap.is_none()), "trap exposes nothing mappable");
        assert!(t.region_fd().is_none());
        assert_eq!(t.region(0).size, 32 << 20);
        assert_eq!(t.region(1).size, 0);
        let p = dev(DoorbellMode::Poll);
        let m = p.region(0).mmap.unwrap();
        assert_eq!(m.areas, vec![SparseArea { offset: 0x6000, size: (32 << 20) - 0x6000 }]);
        assert_eq!(p.region(4).mmap.unwrap().file_offset, 31 << 20, "BAR4 is BAR0's MEMIC window");
        assert!(p.region(2).mmap.is_none(), "MSI-X stays trapped");
        assert!(p.region_fd().is_some());
    }

    #[test]
    #[cfg_attr(miri, ignore = "Vrnic::new needs memfd_create and mmap of an fd, which Miri does not support")]
    fn trap_doorbell_and_device_memory() {
        let mut d = dev(DoorbellMode::Trap);
        let mut s = [0u8; 8];
        s[4..].copy_from_slice(&0x0000_0203u32.to_be_bytes());
        d.region_write(0, 5 * 4096 + 0x800, &s).unwrap();
        assert_eq!(d.doorbells.send.load(Ordering::Relaxed), 1);
        d.region_write(4, 0x100, &[1, 2, 3]).unwrap();
        let mut b = [0u8; 3];
        d.region_read(4, 0x100, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3]);
        assert!(d.region_read(4, (1 << 20) - 2, &mut b).is_err());
        d.reset();
        d.region_read(4, 0x100, &mut b).unwrap();
        assert_eq!(b, [0, 0, 0], "reset clears device memory");
    }

    #[test]
    #[cfg_attr(miri, ignore = "Vrnic::new needs memfd_create and mmap of an fd, which Miri does not support")]
    fn init_segment_through_bar0_and_flr() {
        let mut d = dev(DoorbellMode::Trap);
        let mut b = [0u8; 8];
        d.region_read(0, 0, &mut b).unwrap();
        assert_eq!(&b[..4], &[0x00, 0x23, 0x00, 0x10]);
        assert_eq!(&b[4..], &[0x00, 0x05, 0x07, 0xd0]);
        d.region_write(0, 0x14, &0x0000_1000u32.to_be_bytes()).unwrap();
        assert_eq!(d.init_segment().nic_interface(), 0);
        d.region_write(0, 0x18, &1u32.to_be_bytes()).unwrap();
        assert_eq!(d.stats.cmd_doorbells.load(Ordering::Relaxed), 1);
        // DISABLED without a prepared fast teardown (mlx5_firmware_reset's flows) drops nothing.
        d.region_write(4, 0x100, &[9]).unwrap();
        d.region_write(0, 0x14, &0x0000_1100u32.to_be_bytes()).unwrap();
        assert_eq!(d.init_segment().nic_interface(), 1);
        assert_eq!(d.stats.fast_teardowns.load(Ordering::Relaxed), 0);
        let mut m = [0u8; 1];
        d.region_read(4, 0x100, &mut m).unwrap();
        assert_eq!(m, [9]);
        d.region_write(0, 0x14, &0x0000_1000u32.to_be_bytes()).unwrap();
        // FLR through the PCIe capability resets the init segment.
        d.region_write(CFG, (CAP_PCIE + 8) as u64, &[0x00, 0x80]).unwrap();
        assert_eq!(d.init_segment().nic_interface(), 1);
        assert_eq!(d.stats.flrs.load(Ordering::Relaxed), 1);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Vrnic::new needs memfd_create and mmap of an fd, which Miri does not support")]
    fn device_memory_is_bar4_and_the_memic_window() {
        use vrnic_engine::{GuestMemory, DEVICE_MEMORY};
        let mut d = dev(DoorbellMode::Trap);
        // A store into BAR0's MEMIC window is device memory, not a doorbell.
        d.region_write(0, (31 << 20) + 0x800, &[7; 8]).unwrap();
        assert_eq!(d.doorbells.send.load(Ordering::Relaxed), 0);
        let mut b = [0u8; 8];
        d.region_read(4, 0x800, &mut b).unwrap();
        assert_eq!(b, [7; 8], "BAR4 aliases the window");
        // The engine reaches it through tagged addresses, bounds-checked.
        let m = DeviceMemory { dma: d.dma.clone(), mem: d.mem.clone(), base: 31 << 20, size: 1 << 20 };
        m.read(DEVICE_MEMORY | 0x800, &mut b).unwrap();
        assert_eq!(b, [7; 8]);
        m.write(DEVICE_MEMORY | 0x1000, &5u64.to_ne_bytes()).unwrap();
        assert_eq!(m.fetch_add_u64(DEVICE_MEMORY | 0x1000, 2), Ok(5));
        assert_eq!(m.compare_and_swap_u64(DEVICE_MEMORY | 0x1000, 7, 1), Ok(7));
        assert!(m.read(DEVICE_MEMORY | ((1 << 20) - 4), &mut b).is_err(), "past the window");
        assert!(m.read(0x1000, &mut b).is_err(), "no guest memory mapped");
    }

    /// An Ethernet port opens its configured link and feeds the firmware's
    /// RX path from it; an InfiniBand port has none.
    #[test]
    #[cfg_attr(miri, ignore = "Vrnic::new needs memfd_create and mmap of an fd, which Miri does not support")]
    fn ethernet_port_gets_its_link() {
        assert!(dev(DoorbellMode::Trap).ether_counters().is_none());
        assert!(dev(DoorbellMode::Trap).roce_port().is_none());
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut c = Config::default();
        c.port.link_layer = "eth".into();
        c.port.congestion = crate::config::Congestion::Off;
        c.eth.parse_cli(&format!("udp:local=127.0.0.1:0,remote={}", peer.local_addr().unwrap())).unwrap();
        let d = Vrnic::new(&c, Arc::new(Interrupts::new(MSIX_VECTORS)), Arc::new(DmaSpace::default())).unwrap();
        let counters = d.ether_counters().unwrap();
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x88, 0xb5]);
        f.resize(60, 0);
        peer.send_to(&f, d.ether_addr().unwrap()).unwrap();
        let t0 = std::time::Instant::now();
        while counters.rx_frames.load(Ordering::Relaxed) == 0 && t0.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(counters.rx_frames.load(Ordering::Relaxed), 1, "handed to the firmware");
        // RoCE rides the link: a RoCE port, no UDP fabric; the firmware's GID table is the port's.
        let port = d.roce_port().expect("an Ethernet port is a RoCE port");
        assert!(d.fabric_addr().is_none(), "no RoCEv2 fabric socket on an Ethernet port");
        assert_eq!(port.gids().len(), vrnic_mlx5::hca::caps::roce::ROCE_ADDRESS_TABLE_SIZE);
        assert!(lock(&d.fw).roce_counters().is_some_and(|c| Arc::ptr_eq(c, &port.counters())));
        // Congestion control: the knob's settings, on the one CcControl the commands and the data path share.
        assert_eq!(port.cc().config(), vrnic_cc::CcConfig::disabled());
        assert!(lock(&d.fw).roce_cc().is_some_and(|cc| Arc::ptr_eq(cc, port.cc())));
        drop(d); // stops the link's worker (else the join hangs)
    }

    #[test]
    #[cfg_attr(miri, ignore = "Vrnic::new needs memfd_create and mmap of an fd, which Miri does not support")]
    fn pba_reflects_pending_vectors() {
        let mut d = dev(DoorbellMode::Trap);
        d.irqs.raise(9).unwrap(); // no eventfd: pending
        let mut b = [0u8; 8];
        d.region_read(2, MSIX_PBA_OFFSET, &mut b).unwrap();
        assert_eq!(u64::from_le_bytes(b), 1 << 9);
    }
}
