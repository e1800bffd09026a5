//! [`Classifier`]: the 802.1p priority of a frame on the Ethernet port
//! (owner: eth-link), one function for every frame the port sends or
//! receives — mlx5e's and RoCE's alike — and for what keys off it: PFC
//! (`pfc.rs`, `pfc_tx.rs`), the per-priority counters, RoCE congestion
//! control's per-priority enables (through `FrameSink::priority`).
//!
//! - PCP trust (power-on): the PCP of the outer VLAN tag, 0 untagged.
//! - DSCP trust (QPTS; `dcb app add … dscp-prio`): an IPv4/IPv6 frame's
//!   priority is the DSCP → priority map's (QPDPM) entry for its DSCP; a
//!   frame without IP keeps its PCP (0 untagged). A ConnectX transmits by the
//!   same rule: mlx5e turns the SQs' minimum inline mode to IP under DSCP
//!   trust (`mlx5e_set_trust_state`) so that the device can read the DSCP.
//!
//! mlx5 hands the map over on QPTS/QPDPM writes and resets
//! (`EthPort::apply_prio_map`). Lock-free: a frame read while the map
//! changes sees either entry.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use vrnic_wire::pfc::{frame_dscp, frame_priority, is_tagged, PRIORITIES};

/// DSCP codepoints.
pub const NUM_DSCP: usize = 64;

/// The trust state and the DSCP → priority map (QPTS, QPDPM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrioMap {
    /// QPTS trust DSCP (false: trust PCP).
    pub trust_dscp: bool,
    /// QPDPM: the priority of each DSCP (< 8).
    pub dscp2prio: [u8; NUM_DSCP],
}

impl Default for PrioMap {
    /// Power-on: PCP trust; DSCP d → priority d >> 3.
    fn default() -> PrioMap {
        PrioMap { trust_dscp: false, dscp2prio: std::array::from_fn(|d| (d >> 3) as u8) }
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct Classifier {
    trust_dscp: AtomicBool,
    dscp2prio: [AtomicU8; NUM_DSCP],
}

impl Default for Classifier {
    fn default() -> Classifier {
        let c = Classifier { trust_dscp: AtomicBool::new(false), dscp2prio: std::array::from_fn(|_| AtomicU8::new(0)) };
        c.set(&PrioMap::default());
        c
    }
}

impl Classifier {
    pub fn set(&self, m: &PrioMap) {
        for (a, p) in self.dscp2prio.iter().zip(m.dscp2prio) {
            a.store(p & 7, Ordering::Relaxed);
        }
        self.trust_dscp.store(m.trust_dscp, Ordering::Relaxed);
    }

    pub fn map(&self) -> PrioMap {
        PrioMap {
            trust_dscp: self.trust_dscp.load(Ordering::Relaxed),
            dscp2prio: std::array::from_fn(|d| self.dscp2prio[d].load(Ordering::Relaxed)),
        }
    }

    /// The priority of a frame with VLAN PCP `pcp` (`None`: untagged) and
    /// DSCP `dscp` (`None`: not IP).
    pub fn priority(&self, pcp: Option<u8>, dscp: Option<u8>) -> u8 {
        match dscp {
            Some(d) if self.trust_dscp.load(Ordering::Relaxed) => {
                self.dscp2prio[(d & 63) as usize].load(Ordering::Relaxed) & 7
            }
            _ => pcp.unwrap_or(0) & 7,
        }
    }

    /// The priority of a whole Ethernet frame (< [`PRIORITIES`]).
    pub fn frame_priority(&self, frame: &[u8]) -> usize {
        let pcp = is_tagged(frame).then(|| frame_priority(frame));
        let dscp = if self.trust_dscp.load(Ordering::Relaxed) { frame_dscp(frame) } else { None };
        (self.priority(pcp, dscp) as usize).min(PRIORITIES - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip_frame(tag: Option<u8>, dscp: u8) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        if let Some(pcp) = tag {
            f.extend_from_slice(&[0x81, 0x00, pcp << 5, 3]);
        }
        f.extend_from_slice(&[0x08, 0x00, 0x45, dscp << 2]);
        f.resize(f.len() + 60, 0);
        f
    }

    #[test]
    fn pcp_trust_goes_by_the_tag_dscp_trust_by_the_map() {
        let c = Classifier::default();
        assert_eq!(c.frame_priority(&ip_frame(Some(5), 26)), 5, "power-on: PCP trust");
        assert_eq!(c.frame_priority(&ip_frame(None, 26)), 0, "untagged: 0");
        let mut m = PrioMap { trust_dscp: true, ..PrioMap::default() };
        m.dscp2prio[26] = 3;
        m.dscp2prio[0] = 6;
        c.set(&m);
        assert_eq!(c.map(), m);
        assert_eq!(c.frame_priority(&ip_frame(Some(5), 26)), 3, "DSCP trust: the map, not the PCP");
        assert_eq!(c.frame_priority(&ip_frame(None, 26)), 3);
        assert_eq!(c.frame_priority(&ip_frame(None, 0)), 6);
        assert_eq!(c.frame_priority(&ip_frame(None, 8)), 1, "the other entries keep d >> 3");
        let mut arp = ip_frame(Some(4), 0);
        arp[16..18].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(c.frame_priority(&arp), 4, "no IP: the PCP");
        arp.drain(12..16);
        assert_eq!(c.frame_priority(&arp), 0, "no IP, untagged: 0");
        assert_eq!(c.priority(Some(2), Some(26)), 3);
        assert_eq!(c.priority(Some(2), None), 2);
        c.set(&PrioMap::default());
        assert_eq!(c.priority(Some(2), Some(26)), 2, "back to PCP trust");
    }
}
