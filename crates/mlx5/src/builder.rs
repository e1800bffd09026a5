//! Builds a [`Firmware`] from everything it needs, in one place: guest
//! memory, interrupts, object limits, the port's identity, the link layer
//! (which selects the command domains), the MEMIC window and the fabric the
//! engine sends through. The result is at power-on state.

use std::sync::Arc;

use super::cmd::dispatch::DuplicateOpcode;
use super::core::{Core, FwStats, MlxEngine};
use super::datapath::ctx::EQN_LAST;
use super::datapath::QueueSink;
use super::devx::state::Uctxs;
use super::eth::state::EthPort;
use super::firmware::Firmware;
use super::hca::state::Hca;
use super::hca::state::UarHook;
use super::ib::port::{FwPortCounters, IbPort, PortConfig};
use super::link::LinkLayer;
use super::port::Port;
use super::rdma::state::RdmaObjects;
use super::roce::state::RoceState;
use vrnic_cc::CcControl;
use vrnic_engine::table::Table;
use vrnic_engine::Io;
use vrnic_engine::{GuestMemory, Limits};
use vrnic_fabric::ether::FrameSink;
use vrnic_fabric::roce::{RoceCounters, RoceGids};
use vrnic_vfio::Interrupts;

/// The fabric the engine sends through, and what it reports.
pub struct FabricIo {
    /// The engine's I/O: packets, clock, local endpoint (its `completions`
    /// are replaced by the firmware's completion queue sink).
    pub io: Io,
    /// Wakes the fabric's worker when the engine has work for it.
    pub waker: Option<Arc<dyn Fn() + Send + Sync>>,
    /// The fabric port's packet counters, for PerfMgt and `stats`.
    pub counters: Option<Arc<vrnic_fabric::counters::PortCounters>>,
}

/// Collects a firmware's parts; [`FirmwareBuilder::build`] assembles it.
pub struct FirmwareBuilder {
    mem: Arc<dyn GuestMemory>,
    irqs: Arc<Interrupts>,
    port: PortConfig,
    limits: Limits,
    link: LinkLayer,
    memic: Option<(u64, u64)>,
    trace: bool,
    on_uar: Option<UarHook>,
    fabric: Option<FabricIo>,
    frames: Option<Arc<dyn FrameSink>>,
    mac: [u8; 6],
    roce: Option<(Arc<RoceGids>, Arc<RoceCounters>)>,
    cc: Option<Arc<CcControl>>,
}

impl FirmwareBuilder {
    pub fn new(mem: Arc<dyn GuestMemory>, irqs: Arc<Interrupts>, port: PortConfig, limits: Limits) -> FirmwareBuilder {
        FirmwareBuilder {
            mem,
            irqs,
            port,
            limits,
            link: LinkLayer::Ib,
            memic: None,
            trace: false,
            on_uar: None,
            fabric: None,
            frames: None,
            mac: [0x02, 0, 0, 0, 0, 1],
            roce: None,
            cc: None,
        }
    }

    /// The port's link layer (default InfiniBand).
    pub fn link(mut self, link: LinkLayer) -> FirmwareBuilder {
        self.link = link;
        self
    }

    /// On-device memory: BAR0 offset and size of the MEMIC window.
    pub fn memic(mut self, offset: u64, size: u64) -> FirmwareBuilder {
        self.memic = Some((offset, size));
        self
    }

    /// Log one line per command.
    pub fn trace(mut self, trace: bool) -> FirmwareBuilder {
        self.trace = trace;
        self
    }

    /// Called with (UAR index, allocated?) before ALLOC_UAR / DEALLOC_UAR
    /// complete (poll mode watches the page before the driver knows it).
    pub fn on_uar(mut self, hook: UarHook) -> FirmwareBuilder {
        self.on_uar = Some(hook);
        self
    }

    /// The fabric the engine sends through (none: packets go nowhere).
    pub fn fabric(mut self, fabric: FabricIo) -> FirmwareBuilder {
        self.fabric = Some(fabric);
        self
    }

    /// The Ethernet port's MAC address (NIC vport `permanent_address`).
    pub fn mac(mut self, mac: [u8; 6]) -> FirmwareBuilder {
        self.mac = mac;
        self
    }

    /// Where the Ethernet port's transmitted frames go.
    pub fn frames(mut self, sink: Arc<dyn FrameSink>) -> FirmwareBuilder {
        self.frames = Some(sink);
        self
    }

    /// The RoCE port's GID table (SET_ROCE_ADDRESS programs it, the port
    /// frames and accepts by it) and its counters (none: a private table).
    pub fn roce(mut self, gids: Arc<RoceGids>, counters: Arc<RoceCounters>) -> FirmwareBuilder {
        self.roce = Some((gids, counters));
        self
    }

    /// The RoCE port's congestion control (the congestion commands write
    /// it; none: a private one).
    pub fn cc(mut self, cc: Arc<CcControl>) -> FirmwareBuilder {
        self.cc = Some(cc);
        self
    }

    /// The firmware at power-on state.
    pub fn build(self) -> Result<Firmware, DuplicateOpcode> {
        let commands = self.link.commands()?;
        let pending = Arc::new(QueueSink::new(self.mem.clone()));
        let mut engine = MlxEngine::with_limits(self.limits);
        let (io, waker, wire_counters) = match self.fabric {
            Some(f) => (Io { mem: self.mem.clone(), completions: pending.clone(), ..f.io }, f.waker, f.counters),
            None => (Io { mem: self.mem.clone(), completions: pending.clone(), ..Default::default() }, None, None),
        };
        engine.attach(io);
        engine.set_waker(waker);
        let hca = Hca::new(engine.limits(), self.memic, self.link, self.on_uar);
        let port = match self.link {
            LinkLayer::Ib => Port::Ib(IbPort::new(wire_counters)),
            LinkLayer::Eth => {
                Port::Eth { eth: EthPort::new(self.mac, self.frames), roce: RoceState::new(self.roce, self.cc) }
            }
        };
        let core = Core {
            engine,
            mem: self.mem,
            irqs: self.irqs,
            stats: Arc::new(FwStats::default()),
            eqs: Table::new(0, EQN_LAST, self.limits.eqs),
            cq_due: Default::default(),
            pending,
            entered_err: Vec::new(),
        };
        let mut fw = Firmware {
            core,
            hca,
            rdma: RdmaObjects::default(),
            cfg: self.port,
            counters: Arc::new(FwPortCounters::default()),
            port,
            trace: self.trace,
            commands,
            uctxs: Uctxs::new(self.limits.uctxs),
            umems: Default::default(),
        };
        fw.reset();
        Ok(fw)
    }
}
