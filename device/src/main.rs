//! `vrnic`: the vfio-user server process.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use tracing::{error, info};

use vrnic::config::{Config, Congestion, DoorbellMode};
use vrnic::control::{self, ControlHandles};
use vrnic::Vrnic;
use vrnic_pci::MSIX_VECTORS;
use vrnic_sys::seccomp::SeccompMode;
use vrnic_vfio::{DmaSpace, Interrupts, Server, ServerOptions};

/// An emulated ConnectX (mlx5) RDMA NIC for QEMU, served over vfio-user.
///
/// Attach it with
///   -object memory-backend-memfd,id=mem,size=1G,share=on -machine q35,memory-backend=mem
///   -device pcie-root-port,id=rp0,chassis=1,slot=1
///   -device '{"driver":"vfio-user-pci","bus":"rp0","socket":{"type":"unix","path":"PATH"}}'
///
/// Command-line flags override the config file.
#[derive(Parser, Debug)]
#[command(name = "vrnic", version, verbatim_doc_comment)]
struct Args {
    /// Unix socket QEMU connects to (a stale socket file is replaced).
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,

    /// Keep the privileges the server was started with. By default, once its
    /// sockets and files are open, it sets no_new_privs, drops every
    /// capability in every thread and installs the seccomp filter (see
    /// --seccomp and docs/security.md).
    #[arg(long)]
    keep_privileges: bool,

    /// After start-up, also switch to this user (and its primary group).
    #[arg(long, value_name = "USER")]
    user: Option<String>,

    /// Seccomp syscall allow-list installed on every thread after start-up:
    /// `enforce` (default: any other syscall kills the server with SIGSYS),
    /// `log` (allowed, and logged by the kernel) or `off`. With
    /// --keep-privileges the default is `off`; given explicitly, the filter
    /// is installed all the same (and sets no_new_privs).
    #[arg(long, value_enum, value_name = "MODE")]
    seccomp: Option<SeccompMode>,

    /// TOML config file (identity, BAR sizes, doorbell mode, logging); see docs/configuration.md.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// How doorbells reach the device: `trap` (every UAR store is a posted
    /// write on the socket; nothing mappable) or `poll` (UAR pages and device
    /// memory mapped into the guest, a server thread polls the doorbell slots).
    #[arg(long, value_enum)]
    doorbell: Option<DoorbellMode>,

    /// Firmware version reported in the init segment, MAJOR.MINOR.SUBMINOR (default 16.35.2000).
    #[arg(long, value_name = "VER")]
    fw_version: Option<String>,

    /// PCI device id (default 0x1017, ConnectX-5). Hex with 0x or decimal.
    #[arg(long, value_name = "ID", value_parser = parse_u16)]
    device_id: Option<u16>,

    /// PCI revision id.
    #[arg(long, value_name = "REV", value_parser = parse_u8)]
    revision: Option<u8>,

    /// Port LID.
    #[arg(long, value_name = "LID", value_parser = parse_u16)]
    lid: Option<u16>,

    /// Port GUID (GID 0 is fe80::/64 + this GUID), hex, e.g. 0x0002c90300a0b0c1 (default: node GUID + 1).
    #[arg(long, value_name = "GUID")]
    port_guid: Option<String>,

    /// Node GUID, hex (default: derived from the LID, 0x0002c90300a0LLLL00 with LLLL the LID).
    #[arg(long, value_name = "GUID")]
    node_guid: Option<String>,

    /// System image GUID, hex (default: the node GUID).
    #[arg(long, value_name = "GUID")]
    sys_image_guid: Option<String>,

    /// NodeDescription the SMA answers, up to 64 bytes (default: "vrnic emulated ConnectX-5 lid LID").
    #[arg(long, value_name = "TEXT")]
    node_desc: Option<String>,

    /// PortInfo.MasterSMLID (default: the lowest LID among this port and its --peer LIDs).
    #[arg(long, value_name = "LID", value_parser = parse_u16)]
    sm_lid: Option<u16>,

    /// PortInfo.MasterSMSL, 0..=15 (default 0).
    #[arg(long, value_name = "SL", value_parser = parse_u8)]
    sm_sl: Option<u8>,

    /// vrnic's built-in SM: on (default) or off. Off: no SA, SMInfo or SM roles;
    /// the port starts INIT without a LID and the modeled switch unconfigured,
    /// for an SM in a guest (OpenSM) to sweep and configure.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    sm: Option<bool>,

    /// SMInfo Priority of this server's SM, 0..=15 (default 0): the highest live one is master, ties: the lowest LID.
    #[arg(long, value_name = "N", value_parser = parse_u8)]
    sm_priority: Option<u8>,

    /// SMInfo poll period between the servers' SMs in ms (default 1000).
    #[arg(long, value_name = "MS", value_parser = parse_u64)]
    sm_poll_ms: Option<u64>,

    /// Missed SMInfo polls in a row that make a server's SM dead (default 3).
    #[arg(long, value_name = "N")]
    sm_poll_misses: Option<u32>,

    /// On-device memory (BAR4) size in bytes, power of two (default 1 MiB).
    #[arg(long, value_name = "BYTES", value_parser = parse_u64)]
    device_memory: Option<u64>,

    /// Link layer of the port: ib (default) or eth (the mlx5e netdev).
    #[arg(long, value_name = "ib|eth")]
    link_layer: Option<String>,

    /// Ethernet MAC address (default: derived from the port GUID).
    #[arg(long, value_name = "MAC")]
    mac: Option<String>,

    /// RoCE congestion control at start-up (Ethernet port): dcqcn (default,
    /// ConnectX defaults) or off; the control socket's `cc on|off` flips it.
    #[arg(long, value_enum)]
    congestion: Option<Congestion>,

    /// UDP port of this instance's RoCEv2 socket (default: [fabric] port, else ephemeral).
    #[arg(long, value_name = "PORT")]
    fabric_port: Option<u16>,

    /// Address the RoCEv2 socket binds (default 127.0.0.1).
    #[arg(long, value_name = "ADDR")]
    fabric_bind: Option<String>,

    /// Link-level flow control toward the fabric's peers: on (default) or off
    /// (a sender no longer holds what the peer's socket has no room for:
    /// for comparisons only; every peer must agree). `[fabric] flow_control`.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    fabric_flow_control: Option<bool>,

    /// A peer device instance: LID=HOST:PORT (repeatable).
    #[arg(long, value_name = "LID=HOST:PORT")]
    peer: Vec<String>,

    /// The Ethernet port's link (with --link-layer eth): `none`, `tap:NAME`
    /// (created if missing, brought up), `udp:local=IP:PORT,remote=IP:PORT`
    /// (QEMU `-netdev dgram` framing) or `udp:mcast=GROUP:PORT[,local=IP]` (a hub).
    #[arg(long, value_name = "SPEC")]
    eth: Option<String>,

    /// The Ethernet link's transmit line rate in Mb/s (a token-bucket
    /// shaper after the PAUSE/PFC gate; burst: the larger of two 9 KiB
    /// frames and 1 ms at the rate); 0 = unlimited. Overrides `[eth] link_rate_mbps`.
    #[arg(long, value_name = "N")]
    eth_rate_mbps: Option<u64>,

    /// Write every packet sent and received to this pcap file (Wireshark
    /// decodes it): RoCEv2 packets on an InfiniBand port, the Ethernet
    /// link's frames on an Ethernet port.
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,

    /// Cap on the pcap file in MiB (default 1024); later packets are counted, not written.
    #[arg(long, value_name = "MIB")]
    pcap_max_mib: Option<u64>,

    /// Fault injection, e.g. `tx:drop=0.05,rx:corrupt=0.01,seed=7` (on an
    /// Ethernet port: on its link's frames; corrupt flips a payload bit;
    /// `rx:ce_every=N` marks every Nth ECN-capable RoCEv2 frame CE).
    #[arg(long, value_name = "SPEC")]
    faults: Option<String>,

    /// Control socket for test hooks and counters (`raise <vector>`, `link up|down`, `stats`).
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,

    /// Hold a 0 µs CPU latency request (/dev/cpu_dma_latency) while
    /// doorbells flow (default true; see docs/architecture.md).
    #[arg(long, value_name = "BOOL")]
    cpu_latency_qos: Option<bool>,

    /// RDMA reads/atomics a QP may have outstanding, power of two up to 128 (default 128; ConnectX-5 reports 16).
    #[arg(long, value_name = "N")]
    max_rd_atomic: Option<u32>,

    /// Log every vfio-user message and every BAR access.
    #[arg(long)]
    trace: bool,

    /// Log level: error, warn, info, debug, trace (default info).
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
}

fn parse_num(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("not a number: {s:?}"))
}
fn parse_u64(s: &str) -> Result<u64, String> {
    parse_num(s)
}
fn parse_u16(s: &str) -> Result<u16, String> {
    u16::try_from(parse_num(s)?).map_err(|_| format!("{s} does not fit 16 bits"))
}
fn parse_u8(s: &str) -> Result<u8, String> {
    u8::try_from(parse_num(s)?).map_err(|_| format!("{s} does not fit 8 bits"))
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{s}: on or off")),
    }
}

fn build_config(a: &Args) -> Result<Config, String> {
    let mut c = match &a.config {
        Some(p) => Config::load(p).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    if let Some(m) = a.doorbell {
        c.doorbell.mode = m;
    }
    if let Some(v) = &a.fw_version {
        c.identity.fw_version = v.clone();
    }
    if let Some(v) = a.device_id {
        c.identity.device_id = v;
    }
    if let Some(v) = a.revision {
        c.identity.revision = v;
    }
    if let Some(v) = a.lid {
        c.identity.lid = v;
    }
    if let Some(v) = &a.port_guid {
        c.identity.port_guid = v.clone();
    }
    if let Some(v) = &a.node_guid {
        c.identity.node_guid = v.clone();
    }
    if let Some(v) = &a.sys_image_guid {
        c.identity.sys_image_guid = v.clone();
    }
    if let Some(v) = &a.node_desc {
        c.identity.node_desc = v.clone();
    }
    if let Some(v) = a.sm_lid {
        c.identity.sm_lid = v;
    }
    if let Some(v) = a.sm_sl {
        c.identity.sm_sl = v;
    }
    if let Some(v) = a.sm {
        c.sm.enabled = v;
    }
    if let Some(v) = a.sm_priority {
        c.sm.priority = v;
    }
    if let Some(v) = a.sm_poll_ms {
        c.sm.poll_ms = v;
    }
    if let Some(v) = a.sm_poll_misses {
        c.sm.poll_misses = v;
    }
    if let Some(v) = a.device_memory {
        c.bars.device_memory_size = v;
    }
    if let Some(v) = a.cpu_latency_qos {
        c.doorbell.cpu_latency_qos = v;
    }
    if let Some(v) = a.max_rd_atomic {
        c.identity.max_rd_atomic = v;
    }
    if a.trace {
        c.logging.trace = true;
    }
    if let Some(l) = &a.log_level {
        c.logging.level = l.clone();
    }
    if let Some(l) = &a.link_layer {
        c.port.link_layer = l.clone();
    }
    if let Some(m) = &a.mac {
        c.port.mac = m.clone();
    }
    if let Some(cc) = a.congestion {
        c.port.congestion = cc;
    }
    if let Some(p) = a.fabric_port {
        c.fabric.port = p;
    }
    if let Some(b) = &a.fabric_bind {
        c.fabric.bind = b.clone();
    }
    if let Some(v) = a.fabric_flow_control {
        c.fabric.flow_control = v;
    }
    for p in &a.peer {
        let (lid, addr) = p.split_once('=').ok_or_else(|| format!("--peer {p:?}: want LID=HOST:PORT"))?;
        let lid = parse_u16(lid)?;
        c.fabric.peers.push(vrnic_fabric::PeerConfig { lid: Some(lid), gid: None, addr: addr.to_string() });
    }
    if let Some(e) = &a.eth {
        c.eth.parse_cli(e)?;
    }
    if let Some(r) = a.eth_rate_mbps {
        c.eth.link_rate_mbps = r;
    }
    // Capture and faults belong to the port's own link: the RoCEv2 fabric
    // on InfiniBand, the Ethernet link on Ethernet.
    let eth = c.link_layer().map_err(|e| e.to_string())? == vrnic_mlx5::link::LinkLayer::Eth;
    if let Some(p) = &a.pcap {
        if eth {
            c.eth.pcap = Some(p.clone());
        } else {
            c.fabric.pcap = Some(p.clone());
        }
    }
    if let Some(m) = a.pcap_max_mib {
        let max = m.saturating_mul(1 << 20);
        if eth {
            c.eth.pcap_max_bytes = max;
        } else {
            c.fabric.pcap_max_bytes = max;
        }
    }
    if let Some(f) = &a.faults {
        let f = vrnic_fabric::fault::FaultConfig::parse_cli(f)?;
        if eth {
            c.eth.faults = f;
        } else {
            c.fabric.faults = f;
        }
    }
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Before any thread exists, so every thread inherits no_new_privs and
    // knows to drop its capabilities when it starts.
    if !args.keep_privileges {
        let r =
            if args.user.is_some() { vrnic_sys::privs::set_no_new_privs() } else { vrnic_sys::privs::request_drop() };
        if let Err(e) = r {
            eprintln!("vrnic: {e}");
            return ExitCode::FAILURE;
        }
    }
    let config = match build_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("vrnic: {e}");
            return ExitCode::from(2);
        }
    };
    let level = if config.logging.trace {
        tracing::Level::TRACE
    } else {
        config.logging.level.parse().unwrap_or(tracing::Level::INFO)
    };
    use std::io::IsTerminal;
    let ansi = std::io::stderr().is_terminal();
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(ansi)
        .init();

    let irqs = Arc::new(Interrupts::new(MSIX_VECTORS));
    let dma = Arc::new(DmaSpace::default());
    let device = match Vrnic::new(&config, irqs.clone(), dma.clone()) {
        Ok(d) => d,
        Err(e) => {
            error!("device setup failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let device_stats = device.stats.clone();
    let doorbells = device.doorbell_stats();
    let poller = device.poller_stats();
    let eth_link = device.ether_counters();
    let cc = device.roce_port().map(|p| p.cc().clone());
    let subnet = device.subnet();
    // Opened before privileges are dropped; the thread is a long-lived one.
    let qos = Arc::new(vrnic_sys::host::qos::QosStats::default());
    if config.doorbell.cpu_latency_qos {
        let d = doorbells.clone();
        vrnic_sys::host::qos::spawn(move || d.total(), qos.clone());
    }
    let fw = device.firmware();
    let mut server = match Server::bind(
        &args.socket,
        device,
        dma.clone(),
        irqs.clone(),
        ServerOptions {
            // Poll mode keeps doorbells off the socket: nothing to spin for.
            spin_us: if config.doorbell.mode == DoorbellMode::Trap { config.doorbell.trap_spin_us } else { 0 },
            ..ServerOptions::default()
        },
    ) {
        Ok(s) => s,
        Err(e) => {
            error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(p) = &args.control {
        let h = ControlHandles {
            irqs,
            dma,
            server: server.stats.clone(),
            device: device_stats,
            doorbells,
            poller,
            fw: Some(fw),
            qos,
            eth_link,
            cc,
            subnet,
        };
        if let Err(e) = control::spawn(p, h) {
            error!("control socket {}: {e}", p.display());
            return ExitCode::FAILURE;
        }
    }
    info!(
        socket = %args.socket.display(),
        doorbell = ?config.doorbell.mode,
        fw = %config.identity.fw_version,
        device_id = format_args!("{:#06x}", config.identity.device_id),
        lid = config.identity.lid,
        node_guid = format_args!("{:#018x}", config.node_guid()),
        sm_lid = config.sm_lid(),
        "vrnic listening"
    );
    if let Some(u) = &args.user {
        if let Err(e) = vrnic_sys::privs::switch_user(u) {
            error!("--user {u}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if !args.keep_privileges {
        if let Err(e) = vrnic_sys::privs::drop_caps() {
            error!("dropping capabilities: {e}");
            return ExitCode::FAILURE;
        }
    }
    let seccomp = args.seccomp.unwrap_or(if args.keep_privileges { SeccompMode::Off } else { SeccompMode::Enforce });
    if seccomp != SeccompMode::Off {
        // Every long-lived thread has dropped its capabilities and set
        // itself up; from here on all of them run under the allow-list.
        let r = vrnic_sys::privs::wait_for_threads(std::time::Duration::from_secs(10))
            .map_err(|e| e.to_string())
            .and_then(|()| vrnic_sys::seccomp::install_all_threads(seccomp).map_err(|e| e.to_string()));
        if let Err(e) = r {
            error!("{e}");
            return ExitCode::FAILURE;
        }
        let refused: Vec<&str> = vrnic_sys::seccomp::REFUSED.iter().map(|r| r.name).collect();
        info!(mode = ?seccomp, allowed = vrnic_sys::seccomp::allowed_names().len(), ?refused, "seccomp filter installed");
    }
    match server.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            ExitCode::FAILURE
        }
    }
}
