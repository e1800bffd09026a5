//! The congestion-control settings of one port, shared between their one
//! writer (the mlx5 congestion commands, `mlx5/roce/cong.rs`, and the
//! server's configuration) and the RoCE data path that reads them (ECT on
//! transmit, the notification point on receive, the reaction point on a
//! CNP). The counters the data path adds to live here too, so that
//! QUERY_CONG_STATISTICS reads one place.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

use super::params::{NpParams, RpParams};
use super::stats::CongStatistics;

/// The enable bits (bit `p` = 802.1p priority `p`) and the parameters of
/// the two DCQCN nodes, as QUERY/MODIFY_CONG_STATUS and _PARAMS name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcConfig {
    /// Reaction point (`cong_protocol` 1) enabled, per priority.
    pub rp_enabled: u8,
    /// Notification point (`cong_protocol` 2) enabled, per priority.
    pub np_enabled: u8,
    pub rp: RpParams,
    pub np: NpParams,
}

impl CcConfig {
    /// A ConnectX's defaults: both nodes enabled on every priority.
    pub fn connectx_default() -> CcConfig {
        CcConfig { rp_enabled: 0xff, np_enabled: 0xff, rp: RpParams::default(), np: NpParams::default() }
    }

    /// Everything off (the state of a port built without congestion control).
    pub fn disabled() -> CcConfig {
        CcConfig { rp_enabled: 0, np_enabled: 0, ..CcConfig::connectx_default() }
    }

    pub fn rp_on(&self, prio: u8) -> bool {
        self.rp_enabled & (1 << (prio & 7)) != 0
    }

    pub fn np_on(&self, prio: u8) -> bool {
        self.np_enabled & (1 << (prio & 7)) != 0
    }
}

/// One port's congestion-control state: the configuration (copied out by
/// readers; a change bumps `generation` so the data path can notice it
/// without taking the lock per packet) and the live counters.
#[derive(Debug)]
pub struct CcControl {
    config: RwLock<CcConfig>,
    generation: AtomicU64,
    /// `config.rp_enabled`, for the transmit path's per-frame ECT decision
    /// (no lock, no copy of the parameters per frame).
    rp_enabled: AtomicU8,
    /// The link's shaped rate (bits/s; 0: none): the port's
    /// `--eth-rate-mbps` / `[eth] link_rate_mbps`, set where the port is
    /// built. The reaction points' line rate is the lower of it and the
    /// advertised port speed ([`CcControl::rp_line_rate`]).
    link_rate_bps: AtomicU64,
    np_ecn_marked_roce_packets: AtomicU64,
    np_cnp_sent: AtomicU64,
    rp_cnp_handled: AtomicU64,
    rp_cnp_ignored: AtomicU64,
}

/// Which counter [`CcControl::count`] adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcCounter {
    NpEcnMarkedRocePackets,
    NpCnpSent,
    RpCnpHandled,
    RpCnpIgnored,
}

impl CcControl {
    pub fn new(config: CcConfig) -> Arc<CcControl> {
        Arc::new(CcControl {
            rp_enabled: AtomicU8::new(config.rp_enabled),
            config: RwLock::new(config),
            generation: AtomicU64::new(0),
            link_rate_bps: AtomicU64::new(0),
            np_ecn_marked_roce_packets: AtomicU64::new(0),
            np_cnp_sent: AtomicU64::new(0),
            rp_cnp_handled: AtomicU64::new(0),
            rp_cnp_ignored: AtomicU64::new(0),
        })
    }

    pub fn config(&self) -> CcConfig {
        *self.config.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the configuration (the one writer: the congestion commands
    /// or the server's configuration).
    pub fn set_config(&self, c: CcConfig) {
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = c;
        self.rp_enabled.store(c.rp_enabled, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Whether the reaction point is on for priority `prio` (the current
    /// configuration's [`CcConfig::rp_on`]).
    pub fn rp_on(&self, prio: u8) -> bool {
        self.rp_enabled.load(Ordering::Relaxed) & (1 << (prio & 7)) != 0
    }

    /// The link's shaped rate (bits/s; 0: not shaped).
    pub fn set_link_rate_bps(&self, bps: u64) {
        self.link_rate_bps.store(bps, Ordering::Relaxed);
    }

    /// A reaction point's line rate on a port advertising `port_bps`: the
    /// lower of it and the link's shaped rate, when set. DCQCN's "line
    /// rate" (`rate_to_set_on_first_cnp` 0, `rpg_max_rate` 0, the release
    /// of a limiter) is what the QP can really send at.
    pub fn rp_line_rate(&self, port_bps: u64) -> u64 {
        match self.link_rate_bps.load(Ordering::Relaxed) {
            0 => port_bps,
            l => l.min(port_bps),
        }
    }

    /// Changes each time [`CcControl::set_config`] runs.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn count(&self, c: CcCounter, n: u64) {
        let a = match c {
            CcCounter::NpEcnMarkedRocePackets => &self.np_ecn_marked_roce_packets,
            CcCounter::NpCnpSent => &self.np_cnp_sent,
            CcCounter::RpCnpHandled => &self.rp_cnp_handled,
            CcCounter::RpCnpIgnored => &self.rp_cnp_ignored,
        };
        a.fetch_add(n, Ordering::Relaxed);
    }

    pub fn statistics(&self) -> CongStatistics {
        CongStatistics {
            np_ecn_marked_roce_packets: self.np_ecn_marked_roce_packets.load(Ordering::Relaxed),
            np_cnp_sent: self.np_cnp_sent.load(Ordering::Relaxed),
            rp_cnp_handled: self.rp_cnp_handled.load(Ordering::Relaxed),
            rp_cnp_ignored: self.rp_cnp_ignored.load(Ordering::Relaxed),
        }
    }

    /// QUERY_CONG_STATISTICS with `clear`: returns the values and zeroes them.
    pub fn take_statistics(&self) -> CongStatistics {
        CongStatistics {
            np_ecn_marked_roce_packets: self.np_ecn_marked_roce_packets.swap(0, Ordering::Relaxed),
            np_cnp_sent: self.np_cnp_sent.swap(0, Ordering::Relaxed),
            rp_cnp_handled: self.rp_cnp_handled.swap(0, Ordering::Relaxed),
            rp_cnp_ignored: self.rp_cnp_ignored.swap(0, Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enables_are_per_priority_and_changes_bump_the_generation() {
        let c = CcControl::new(CcConfig::disabled());
        assert!(!c.config().rp_on(3));
        let g = c.generation();
        c.set_config(CcConfig { rp_enabled: 1 << 3, ..CcConfig::disabled() });
        assert!(c.config().rp_on(3) && !c.config().rp_on(2) && !c.config().np_on(3));
        assert!(c.rp_on(3) && !c.rp_on(2), "the lock-free mirror follows");
        assert_ne!(c.generation(), g);
        assert!(CcConfig::connectx_default().np_on(7));
    }

    #[test]
    fn the_rp_line_rate_is_the_lower_of_the_port_and_the_link_shaper() {
        let c = CcControl::new(CcConfig::connectx_default());
        assert_eq!(c.rp_line_rate(100_000_000_000), 100_000_000_000, "no shaper");
        c.set_link_rate_bps(50_000_000);
        assert_eq!(c.rp_line_rate(100_000_000_000), 50_000_000);
        assert_eq!(c.rp_line_rate(10_000_000), 10_000_000, "a shaper above the port's speed changes nothing");
    }

    #[test]
    fn counters_add_and_clear() {
        let c = CcControl::new(CcConfig::connectx_default());
        c.count(CcCounter::NpCnpSent, 2);
        c.count(CcCounter::RpCnpIgnored, 1);
        assert_eq!(c.statistics().np_cnp_sent, 2);
        assert_eq!(c.take_statistics().rp_cnp_ignored, 1);
        assert_eq!(c.statistics(), CongStatistics::default());
    }
}
