//! What the engine's packets ride, by the port's link layer: an InfiniBand
//! port's RoCEv2-over-UDP fabric with the IB stage (the modeled switch and
//! the built-in SM) between it and the firmware, or an Ethernet port's link
//! (the netdev's frames) with its RoCE port. Built before the firmware (which
//! sends through it), started after (its workers deliver into it).

use std::io;
use std::sync::{Arc, Mutex};

use tracing::info;

use crate::config::Config;
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
use vrnic_mlx5::Kick;
use vrnic_subnet::IbStage;
use vrnic_sys::clock::MonotonicClock;

pub enum Wire {
    /// InfiniBand: the fabric port, and the IB stage the engine sends
    /// through and the fabric delivers through.
    Ib { fabric: UdpFabric, stage: Arc<IbStage> },
    /// Ethernet: the link (its worker hands received frames to the RX path
    /// and runs the engine's timers) and RoCE on it.
    Eth { link: EtherLink, roce: Arc<RocePort> },
}

impl Wire {
    /// Opens the port's wire: binds the fabric's socket (InfiniBand) or
    /// opens the link (Ethernet); nothing runs yet.
    pub fn open(config: &Config, link: LinkLayer, clock: &Arc<MonotonicClock>) -> io::Result<Wire> {
        match link {
            LinkLayer::Ib => {
                let stage = Arc::new(ib_stage(config));
                let fabric = UdpFabric::bind(&config.fabric, config.identity.lid, clock.clone())?;
                // The engine sends through the IB stage, which sends through the fabric port.
                stage.connect(fabric.sink());
                info!(addr = %fabric.local_addr().map(|a| a.to_string()).unwrap_or_default(), peers = config.fabric.peers.len(), "RoCEv2 fabric bound");
                log_stage(config, &stage);
                Ok(Wire::Ib { fabric, stage })
            }
            LinkLayer::Eth => {
                if !config.fabric.peers.is_empty() {
                    info!("[fabric] ignored on an Ethernet port: RoCE travels on the Ethernet link");
                }
                let link = EtherLink::open_with_clock(&config.eth, clock.clone())?;
                let gids = Arc::new(RoceGids::new(ROCE_ADDRESS_TABLE_SIZE));
                let roce = Arc::new(RocePort::new(gids, link.sink(), link.waker()));
                roce.cc().set_config(config.port.congestion.cc_config());
                // The reaction points' line rate: the link's shaper, when it is below the port speed.
                roce.cc().set_link_rate_bps(config.eth.link_rate_mbps.saturating_mul(1_000_000));
                Ok(Wire::Eth { link, roce })
            }
        }
    }

    /// The SM LID the port starts with: the one its IB stage names (the
    /// roles' master at start, or the static one); the configured one on
    /// Ethernet.
    pub fn sm_lid(&self, config: &Config) -> u16 {
        match self {
            Wire::Ib { stage, .. } => stage.sm_lid(),
            Wire::Eth { .. } => config.sm_lid(),
        }
    }

    /// Gives the firmware its packet path: the engine's I/O (packets, clock,
    /// the local endpoint) and, on Ethernet, the link's frame sink and the
    /// RoCE port's GID table, counters and congestion control.
    pub fn connect_firmware(
        &self,
        builder: FirmwareBuilder,
        config: &Config,
        port: &PortConfig,
        memory: Arc<dyn vrnic_engine::GuestMemory>,
        clock: Arc<MonotonicClock>,
    ) -> io::Result<FirmwareBuilder> {
        Ok(match self {
            Wire::Ib { fabric, stage } => {
                // GRHs: SGIDs from, and DGIDs checked against, the GID table the guest sees.
                fabric.port().set_gid_table(port.gid_table());
                let local = config.fabric.local_endpoint(config.identity.lid).map_err(io::Error::other)?;
                let packets: Arc<dyn vrnic_fabric::PacketSink> = stage.clone();
                let io = vrnic_engine::Io { mem: memory, packets, clock, local, ..Default::default() };
                let waker = fabric.waker();
                let counters = Some(fabric.counters());
                builder.fabric(FabricIo { io, waker: Some(Arc::new(move || waker.wake())), counters })
            }
            Wire::Eth { link, roce } => {
                let io = vrnic_engine::Io { mem: memory, packets: roce.clone(), clock, ..Default::default() };
                builder
                    .frames(link.sink())
                    .roce(roce.gids().clone(), roce.counters())
                    .cc(roce.cc().clone())
                    .fabric(FabricIo { io, waker: Some(link.waker()), counters: None })
            }
        })
    }

    /// What delivers a doorbell's loopback traffic on its own thread
    /// (`[fabric] inline_loopback`, InfiniBand).
    pub fn loopback_pump(&self, config: &Config) -> Option<LoopbackPump> {
        match self {
            Wire::Ib { fabric, .. } if config.fabric.inline_loopback => Some(fabric.loopback_pump()),
            _ => None,
        }
    }

    /// Starts the wire's worker, delivering into the firmware (`kick`: poll
    /// mode's poller, woken after a burst the guest will answer).
    pub fn start(&mut self, config: &Config, fw: &Arc<Mutex<Firmware>>, kick: Option<Arc<dyn Kick>>) -> io::Result<()> {
        match self {
            Wire::Ib { fabric, stage } => {
                let handler = FwHandler(fw.clone());
                let ca: Arc<dyn PacketHandler> = match kick {
                    Some(kick) => Arc::new(Kicking { handler, kick: BurstKick::new(kick) }),
                    None => Arc::new(handler),
                };
                // The fabric port delivers through the IB stage, which hands the CA what is not the subnet's.
                stage.attach(ca);
                fabric.start(stage.clone())
            }
            Wire::Eth { link, roce } => {
                link.start(Arc::new(EthRx::new(fw.clone(), Some(roce.clone()), kick)))?;
                info!(backend = %config.eth.backend, addr = %link.local_addr().map(|a| a.to_string()).unwrap_or_default(), carrier = link.carrier(), "Ethernet link open");
                Ok(())
            }
        }
    }

    /// The fabric's UDP address (InfiniBand).
    pub fn fabric_addr(&self) -> Option<std::net::SocketAddr> {
        match self {
            Wire::Ib { fabric, .. } => fabric.local_addr().ok(),
            Wire::Eth { .. } => None,
        }
    }

    /// The IB stage (InfiniBand).
    pub fn stage(&self) -> Option<Arc<IbStage>> {
        match self {
            Wire::Ib { stage, .. } => Some(stage.clone()),
            Wire::Eth { .. } => None,
        }
    }

    /// The Ethernet link's counters (Ethernet).
    pub fn ether_counters(&self) -> Option<Arc<EtherCounters>> {
        match self {
            Wire::Eth { link, .. } => Some(link.counters()),
            Wire::Ib { .. } => None,
        }
    }

    /// The Ethernet link's local address (a UDP cable's; Ethernet).
    pub fn ether_addr(&self) -> Option<std::net::SocketAddr> {
        match self {
            Wire::Eth { link, .. } => link.local_addr(),
            Wire::Ib { .. } => None,
        }
    }

    /// The RoCE port (Ethernet).
    pub fn roce_port(&self) -> Option<Arc<RocePort>> {
        match self {
            Wire::Eth { roce, .. } => Some(roce.clone()),
            Wire::Ib { .. } => None,
        }
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

    fn tx_ready(&self) {
        self.handler.tx_ready();
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

fn log_stage(config: &Config, s: &IbStage) {
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
