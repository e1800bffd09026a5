//! The IB stage: the subnet's services on the fabric side of one CA port.
//!
//! It sits between the CA and its fabric port, in both directions: the
//! engine sends through it ([`PacketSink`], wrapping the port's sink) and
//! the port delivers through it ([`PacketHandler`], wrapping the CA's
//! handler). What is the subnet's it takes, under its own lock (never the
//! CA's): a QP0 SMP this CA sends into the modeled switch (a directed route
//! past hop 0, an SMP to the switch's LID), and, with the built-in SM on,
//! a SubnAdm MAD for the SA of the master SM's port, an SMInfo SMP for the
//! SM, the SM roles' polls and answers between servers. Everything else
//! passes unchanged. What it answers leaves through the port like any
//! packet: to another LID over the fabric, to this CA's own LID through
//! the port's loopback (the CA receives it as from the fabric).
//!
//! The CA keeps its own SMA (NodeInfo, PortInfo, ... of its port, answered
//! by its firmware); the stage configures it as an SM does, with SMPs: when
//! the master SM changes it sets the CA's PortInfo.MasterSMLID and
//! ClientReregister (SubnGet then SubnSet, retried until the CA took it).
//! With the built-in SM off ([`SmMode::Off`]) the stage is the switch
//! alone, powered up unconfigured: an SM in a guest (OpenSM) sweeps the
//! fabric through it and sets it up. docs/ib-fabric.md.

mod config;
mod mad;
mod services;
#[cfg(test)]
#[path = "stage_tests.rs"]
mod tests;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use vrnic_cc::CcControl;
use vrnic_packet::{Dest, PacketHandler, PacketSink, RxMeta};

pub use config::{SmMode, StageConfig, StageCounters};
use services::Services;
pub use services::{Out, SmView, PORT_UPDATE_RETRY_NS, SA_TICK_NS};

use crate::sa::{Sa, SaStats};

/// This server's copy of the modeled switch, as `stats` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SwitchView {
    /// The LID the fabric reaches it at, and port 0's LID as an SM set it.
    pub lid: u16,
    pub port0_lid: u16,
    pub num_ports: u8,
    /// PortState of ports 0..=N.
    pub port_states: Vec<u8>,
    pub linear_fdb_top: u16,
    /// SubnSets its SMA applied.
    pub sets: u64,
}

/// The stage's state and counters (`stats` → `subnet`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct StageView {
    /// This CA's fabric LID, and the SM LID its port started with.
    pub lid: u16,
    pub sm_lid: u16,
    pub link_up: bool,
    pub switch: SwitchView,
    #[serde(flatten)]
    pub counters: StageCounters,
    /// The SA's counters (`null` unless this port is the master SM's).
    pub sa: Option<SaStats>,
    /// The SM roles (`null` without them).
    pub sm: Option<SmView>,
}

/// The IB stage of one CA port (see the module doc).
pub struct IbStage {
    /// The fabric port's sink: where everything the stage passes or sends goes.
    port: OnceLock<Arc<dyn PacketSink>>,
    /// The CA's handler: where everything the stage does not take arrives.
    ca: OnceLock<Arc<dyn PacketHandler>>,
    services: Mutex<Services>,
}

impl IbStage {
    /// A stage for the CA port `cfg.own`; [`IbStage::connect`] names the
    /// fabric port in front of which it sits, [`IbStage::attach`] the CA
    /// behind it (until then what would go there is dropped).
    pub fn new(cfg: StageConfig) -> IbStage {
        IbStage { port: OnceLock::new(), ca: OnceLock::new(), services: Mutex::new(Services::new(&cfg)) }
    }

    /// The fabric port's sink (only the first call counts).
    pub fn connect(&self, port: Arc<dyn PacketSink>) -> bool {
        self.port.set(port).is_ok()
    }

    /// The handler of the CA behind the stage (only the first call counts).
    pub fn attach(&self, ca: Arc<dyn PacketHandler>) -> bool {
        self.ca.set(ca).is_ok()
    }

    fn lock(&self) -> MutexGuard<'_, Services> {
        self.services.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The MasterSMLID the CA port starts with: the static SM's, the SM
    /// roles' master at start; 0 with the built-in SM off.
    pub fn sm_lid(&self) -> u16 {
        self.lock().sm_lid
    }

    /// The CA port's link came up or went down (`link up|down`): while it is
    /// down the SM on it hears nothing and sends nothing.
    pub fn set_link(&self, up: bool) {
        self.lock().link_up = up;
    }

    /// State and counters for `stats`.
    pub fn view(&self) -> StageView {
        let s = self.lock();
        let sw = &s.switch;
        StageView {
            lid: s.lid,
            sm_lid: s.sm_lid,
            link_up: s.link_up,
            switch: SwitchView {
                lid: sw.lid(),
                port0_lid: sw.port0_lid(),
                num_ports: sw.num_ports(),
                port_states: (0..=sw.num_ports()).filter_map(|p| sw.port_state(p)).collect(),
                linear_fdb_top: sw.linear_fdb_top(),
                sets: sw.sets(),
            },
            counters: s.c,
            sa: s.sa.as_ref().map(|a| a.stats()),
            sm: s.sm_view(),
        }
    }

    /// The counters, to set them in tests of other layers (`stats`).
    #[doc(hidden)]
    pub fn with_counters_mut(
        &self,
        f: impl FnOnce(&mut StageCounters, Option<&mut SaStats>, Option<&mut crate::sm_role::SmStats>),
    ) {
        let mut s = self.lock();
        let s = &mut *s;
        f(&mut s.c, s.sa.as_mut().map(|a| a.stats_mut()), s.roles.as_mut().map(|r| r.stats_mut()));
    }

    /// Runs `f` on the modeled switch (tests, diagnostics).
    pub fn with_switch<R>(&self, f: impl FnOnce(&crate::switch::Switch) -> R) -> R {
        f(&self.lock().switch)
    }

    /// Runs `f` on the SA, where this port runs it.
    pub fn with_sa<R>(&self, f: impl FnOnce(&mut Sa) -> R) -> Option<R> {
        self.lock().sa.as_mut().map(f)
    }

    /// Sends what the services produced, through the fabric port.
    fn emit(&self, out: Vec<Out>) {
        let Some(port) = self.port.get().filter(|_| !out.is_empty()) else { return };
        let mut buf = Vec::with_capacity(320);
        let mut sent = 0;
        for o in out {
            if mad::build(o.src_qp, o.dest_qp, &o.mad, &mut buf) {
                port.send(&Dest { lid: o.to, ..Dest::default() }, &mut buf);
                sent += 1;
            }
        }
        self.lock().c.mads_sent += sent;
    }
}

/// The CA's sends: a QP0 SMP that enters the switch is taken, the rest
/// goes to the fabric port.
impl PacketSink for IbStage {
    fn send(&self, dest: &Dest, pkt: &mut [u8]) {
        if mad::dest_qp(pkt) == Some(0) {
            if let Some(m) = mad::parse(pkt) {
                let mut out = Vec::new();
                let taken = self.lock().take_sent(dest.lid, &m, &mut out);
                self.emit(out);
                if taken {
                    return;
                }
            }
        }
        if let Some(p) = self.port.get() {
            p.send(dest, pkt)
        }
    }
    fn ready(&self, dest: &Dest) -> bool {
        self.port.get().is_none_or(|p| p.ready(dest))
    }
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.port.get()?.gid(index)
    }
    fn all_global(&self) -> bool {
        self.port.get().is_some_and(|p| p.all_global())
    }
    fn cc(&self) -> Option<&Arc<CcControl>> {
        self.port.get()?.cc()
    }
    fn line_rate_bps(&self) -> u64 {
        self.port.get().map_or(vrnic_packet::LINE_RATE_BPS, |p| p.line_rate_bps())
    }
    fn send_cnp(&self, meta: &RxMeta, dest_qp: u32, dscp: u8, prio: u8) -> bool {
        self.port.get().is_some_and(|p| p.send_cnp(meta, dest_qp, dscp, prio))
    }
}

/// What the port delivers: the built-in SM's MADs are taken, the rest goes
/// to the CA.
impl PacketHandler for IbStage {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        if matches!(mad::dest_qp(pkt), Some(0 | 1)) {
            if let Some(m) = mad::parse(pkt) {
                let mut out = Vec::new();
                let taken = self.lock().take_received(meta.src.lid, &m, &mut out);
                self.emit(out);
                if taken {
                    return;
                }
            }
        }
        if let Some(ca) = self.ca.get() {
            ca.receive(meta, pkt);
        }
    }

    fn flush(&self) {
        if let Some(ca) = self.ca.get() {
            ca.flush();
        }
    }

    fn tx_ready(&self) {
        if let Some(ca) = self.ca.get() {
            ca.tx_ready();
        }
    }

    fn poll(&self, now_ns: u64) -> Option<u64> {
        let mut out = Vec::new();
        let next = self.lock().poll(now_ns, &mut out);
        self.emit(out);
        let ca = self.ca.get().and_then(|c| c.poll(now_ns));
        [next, ca].into_iter().flatten().min()
    }
}
