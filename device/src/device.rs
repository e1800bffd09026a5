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

use tracing::info;

use crate::config::{Config, DoorbellMode};
use crate::uar_poller::{PollerStats, UarPoller};
use vrnic_engine::Limits;
use vrnic_fabric::ether::{EtherCounters, EtherLink};
use vrnic_fabric::roce::{RoceGids, RocePort};
use vrnic_fabric::{LoopbackPump, PacketHandler, RxMeta, UdpFabric};
use vrnic_mlx5::builder::{FabricIo, FirmwareBuilder};
use vrnic_mlx5::datapath::FwHandler;
use vrnic_mlx5::eth::rx::EthRx;
use vrnic_mlx5::firmware::Firmware;
use vrnic_mlx5::hca::caps::roce::ROCE_ADDRESS_TABLE_SIZE;
use vrnic_mlx5::ib::port::PortConfig;
use vrnic_mlx5::link::LinkLayer;
use vrnic_mlx5::uar::BurstKick;
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
    /// The InfiniBand port's RoCEv2-over-UDP fabric (None on Ethernet).
    fabric: Option<UdpFabric>,
    /// The InfiniBand port's IB stage, between the firmware and the fabric
    /// port: the modeled switch and the built-in SM (None on Ethernet).
    stage: Option<Arc<IbStage>>,
    /// An Ethernet port's RoCE port (the engine's packet path there).
    roce: Option<Arc<RocePort>>,
    /// An Ethernet port's link (its worker stops when the device is dropped).
    ether: Option<EtherLink>,
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

/// Poll mode: the fabric's handler kicks the UAR poller into a spin window
/// after a burst that changed what the guest sees ([`BurstKick`]): the
/// guest usually answers with a doorbell. A burst that came from this
/// device itself (loopback) kicks as local, whichever thread delivered it
/// (the doorbell's own pump, or the fabric worker when the pump found it
/// busy): the answering doorbell follows within microseconds.
struct Kicking {
    handler: FwHandler,
    kick: BurstKick,
}

impl PacketHandler for Kicking {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        self.kick.note(pkt, meta.local);
        self.handler.receive(meta, pkt);
    }

    fn flush(&self) {
        self.handler.flush();
        self.kick.flush();
    }

    fn poll(&self, now_ns: u64) -> Option<u64> {
        self.handler.poll(now_ns)
    }
}

/// The IB stage of this port (docs/ib-fabric.md): the modeled switch, and
/// the built-in SM unless `[sm] enabled = false`: SM roles between this port
/// and its `[fabric]` peers, or a static SM where `--sm-lid` names one or
/// `[sm] failover = false` (the lowest LID).
fn ib_stage(config: &Config) -> IbStage {
    use vrnic_subnet::sm_role::SmTiming;
    use vrnic_subnet::{PortRecord, SmMode, StageConfig};
    let lid = config.identity.lid;
    let mut own = PortRecord::new(lid, config.port_guid(), config.node_guid());
    own.sys_image_guid = config.sys_image_guid();
    own.node_desc = config.node_desc();
    let peers = config.fabric.peers.iter().filter_map(|p| p.lid).filter(|&l| l != lid && l != 0).collect();
    let sm = if !config.sm.enabled {
        SmMode::Off
    } else if config.sm.failover && config.identity.sm_lid == 0 {
        let timing = SmTiming { period_ns: config.sm.poll_ms * 1_000_000, max_misses: config.sm.poll_misses };
        SmMode::Roles { priority: config.sm.priority, timing }
    } else {
        SmMode::Static { sm_lid: config.sm_lid() }
    };
    let switch_lid = (config.identity.switch_lid != 0).then_some(config.identity.switch_lid);
    IbStage::new(StageConfig { own, peers, switch_lid, sm })
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
        let doorbells = Arc::new(DoorbellStats::default());
        // UAR pages end where the MEMIC window starts.
        let limits = Limits {
            uar_first: FIRST_UAR_PAGE as u32,
            uar_last: (bars.memic_offset() / UAR_PAGE - 1) as u32,
            log_max_rd_atomic: config.log_max_rd_atomic(),
            ..Limits::default()
        };
        let mut port =
            PortConfig::new(config.node_guid(), config.port_guid(), config.identity.lid, config.identity.device_id);
        port.revision = config.identity.revision as u32;
        port.sys_image_guid = config.sys_image_guid();
        port.node_desc = config.node_desc();
        port.sm_sl = config.identity.sm_sl;
        let link_layer = config.link_layer().map_err(io::Error::other)?;
        // InfiniBand: the IB stage. The port starts with the SM LID its SM
        // names (the roles' master at start, or the static one); without the
        // built-in SM it starts unconfigured, for the guest's SM.
        let stage = (link_layer == LinkLayer::Ib).then(|| Arc::new(ib_stage(config)));
        port.sm_lid = stage.as_ref().map_or(config.sm_lid(), |s| s.sm_lid());
        if !config.sm.enabled {
            port = port.unconfigured();
        }
        let memory =
            Arc::new(DeviceMemory { dma: dma.clone(), mem: mem.clone(), base: bars.memic_offset(), size: bars.bar4 });
        let first_mappable = MAPPABLE_START / UAR_PAGE;
        let first_watched = first_mappable + config.doorbell.watch_uars as u64;
        let watched: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(Vec::new()));
        let mut builder = FirmwareBuilder::new(memory.clone(), irqs.clone(), port.clone(), limits)
            .memic(bars.memic_offset(), bars.bar4)
            .link(link_layer)
            .mac(config.mac().map_err(io::Error::other)?)
            .trace(config.logging.trace);
        // An Ethernet port's link: the firmware sends frames into it, its
        // worker (started below) hands received frames to the RX path.
        // One clock for the engine's timers and the link worker's deadlines.
        let clock = Arc::new(MonotonicClock::default());
        let mut ether = match link_layer {
            LinkLayer::Eth => Some(EtherLink::open_with_clock(&config.eth, clock.clone())?),
            LinkLayer::Ib => None,
        };
        if let Some(l) = &ether {
            builder = builder.frames(l.sink());
        }
        if config.doorbell.mode == DoorbellMode::Poll {
            let (pages, mem) = (watched.clone(), mem.clone());
            // Poll mode: an allocated UAR page gets its sentinels and is
            // watched before ALLOC_UAR completes.
            builder = builder.on_uar(Arc::new(move |uar: u32, alive: bool| {
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
            }));
        }
        // The engine's packet path. InfiniBand: the RoCEv2-over-UDP fabric,
        // whose worker delivers received packets and runs the engine's
        // timers. Ethernet: the link's RoCE port (frames from the GID table
        // the driver programs, on the same link as the netdev's frames); the
        // link's worker delivers (EthRx) and runs the timers.
        let (mut fabric, roce, fabric_io) = match &ether {
            Some(l) => {
                if !config.fabric.peers.is_empty() {
                    info!("[fabric] ignored on an Ethernet port: RoCE travels on the Ethernet link");
                }
                let gids = Arc::new(RoceGids::new(ROCE_ADDRESS_TABLE_SIZE));
                let waker = l.waker();
                let port = Arc::new(RocePort::new(gids.clone(), l.sink(), waker.clone()));
                port.cc().set_config(config.port.congestion.cc_config());
                // The reaction points' line rate: the link's shaper, when it is below the port speed.
                port.cc().set_link_rate_bps(config.eth.link_rate_mbps.saturating_mul(1_000_000));
                builder = builder.roce(gids, port.counters()).cc(port.cc().clone());
                let io = vrnic_engine::Io { mem: memory.clone(), packets: port.clone(), clock, ..Default::default() };
                (None, Some(port), FabricIo { io, waker: Some(waker), counters: None })
            }
            None => {
                let fabric = UdpFabric::bind(&config.fabric, config.identity.lid, clock.clone())?;
                // GRHs: SGIDs from, and DGIDs checked against, the GID table the guest sees.
                fabric.port().set_gid_table(port.gid_table());
                let local = config.fabric.local_endpoint(config.identity.lid).map_err(io::Error::other)?;
                let waker = fabric.waker();
                // The engine sends through the IB stage, which sends through the fabric port.
                let packets: Arc<dyn vrnic_fabric::PacketSink> = match &stage {
                    Some(s) => {
                        s.connect(fabric.sink());
                        s.clone()
                    }
                    None => fabric.sink(),
                };
                let io = vrnic_engine::Io { mem: memory.clone(), packets, clock, local, ..Default::default() };
                let counters = Some(fabric.counters());
                info!(addr = %fabric.local_addr().map(|a| a.to_string()).unwrap_or_default(), peers = config.fabric.peers.len(), "RoCEv2 fabric bound");
                (Some(fabric), None, FabricIo { io, waker: Some(Arc::new(move || waker.wake())), counters })
            }
        };
        if let Some(s) = &stage {
            let v = s.view();
            let guid = s.with_switch(|w| w.node_guid());
            info!(lid = v.switch.lid, ports = v.switch.num_ports, guid = %format!("{guid:#018x}"), configured = config.sm.enabled, "the modeled switch");
            let lid = config.identity.lid;
            match (&v.sm, &v.sa) {
                _ if !config.sm.enabled => info!(lid, "no built-in SM: the port starts INIT, for an SM in a guest"),
                (Some(r), _) => info!(
                    lid,
                    master = r.master_lid,
                    priority = r.priority,
                    poll_ms = r.period_ms,
                    runs_sa = v.sa.is_some(),
                    "SM roles: polling the other servers' SMs"
                ),
                (None, Some(_)) => info!(lid, "this port is the SM LID: it runs the SA"),
                (None, None) => info!(lid, sm_lid = v.sm_lid, "the SM runs on another server"),
            }
        }
        let firmware = builder.fabric(fabric_io).build().map_err(io::Error::other)?;
        let fw = Arc::new(Mutex::new(firmware));
        let pump = || fabric.as_ref().filter(|_| config.fabric.inline_loopback).map(|f| f.loopback_pump());
        let fw_sink = |scan_page| FwSink { fw: fw.clone(), stats: doorbells.clone(), pump: pump(), scan_page };
        let sink: Arc<dyn DoorbellSink> = Arc::new(fw_sink(false));
        let poller = match config.doorbell.mode {
            DoorbellMode::Poll => Some(UarPoller::start_with(mem.clone(), Arc::new(fw_sink(true)), watched)),
            DoorbellMode::Trap => None,
        };
        let kick: Option<Arc<dyn Kick>> =
            poller.as_ref().and_then(|p| p.kick_handle()).map(|k| Arc::new(k) as Arc<dyn Kick>);
        if let Some(l) = &mut ether {
            l.start(Arc::new(EthRx::new(fw.clone(), roce.clone(), kick.clone())))?;
            info!(backend = %config.eth.backend, addr = %l.local_addr().map(|a| a.to_string()).unwrap_or_default(), carrier = l.carrier(), roce = roce.is_some(), "Ethernet link open");
        }
        if let Some(f) = &mut fabric {
            let handler = FwHandler(fw.clone());
            let ca: Arc<dyn PacketHandler> = match kick {
                Some(kick) => Arc::new(Kicking { handler, kick: BurstKick::new(kick) }),
                None => Arc::new(handler),
            };
            // The fabric port delivers through the IB stage, which hands the CA what is not the subnet's.
            match &stage {
                Some(s) => {
                    s.attach(ca);
                    f.start(s.clone())?;
                }
                None => f.start(ca)?,
            }
        }
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
            fabric,
            stage,
            ether,
            roce,
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
        self.fabric.as_ref().and_then(|f| f.local_addr().ok())
    }

    /// The InfiniBand port's IB stage (`None` on Ethernet).
    pub fn subnet(&self) -> Option<Arc<IbStage>> {
        self.stage.clone()
    }

    /// An Ethernet port's link counters (`None` on InfiniBand).
    pub fn ether_counters(&self) -> Option<Arc<EtherCounters>> {
        self.ether.as_ref().map(|l| l.counters())
    }

    /// An Ethernet port's RoCE port (`None` on InfiniBand).
    pub fn roce_port(&self) -> Option<Arc<RocePort>> {
        self.roce.clone()
    }

    /// An Ethernet link's UDP address (`None` on InfiniBand and for other media).
    pub fn ether_addr(&self) -> Option<std::net::SocketAddr> {
        self.ether.as_ref().and_then(|l| l.local_addr())
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
