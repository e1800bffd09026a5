//! The Ethernet transmit side's state (owner: eth-tx): per-SQ and vport
//! TX counters and the MTU transmit checks against. A leaf file: `EthPort`
//! holds it without importing the transmit path ([`super::tx`]).

use std::collections::BTreeMap;

use serde::Serialize;

/// Largest software MTU the port accepts (PMTU `max_mtu`).
pub const MAX_SW_MTU: usize = 9000;
/// Ethernet header plus one VLAN tag.
const L2_OVERHEAD: usize = 14 + 4;
/// `MLX5E_HW2SW_MTU`: the vport MTU counts L2 header, one VLAN tag and FCS.
const HW_MTU_OVERHEAD: usize = 14 + 4 + 4;

/// Transmit counters of one SQ (and their sum over all SQs, `stats`'s `firmware.eth_tx`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SqTxCounters {
    /// Frames handed to the link and their bytes (padding included).
    pub packets: u64,
    pub bytes: u64,
    /// LSO WQEs executed, and the frames and bytes they produced.
    pub tso_wqes: u64,
    pub tso_packets: u64,
    pub tso_bytes: u64,
    /// SEND WQEs with checksum offload.
    pub csum_offloads: u64,
    /// NOP WQEs.
    pub nops: u64,
    /// Frames dropped (any reason below).
    pub drops: u64,
    /// Plain SEND frames longer than the MTU plus L2 header and a VLAN tag.
    pub oversize: u64,
    /// Frames the checksum/LSO offload refused (headers it cannot parse).
    pub offload_errors: u64,
    /// Frames with no link to send them on.
    pub no_link: u64,
    /// Frames shorter than an Ethernet header.
    pub runts: u64,
    /// Frames looped back to this port (self-loopback, see `tx.rs`).
    pub loopback: u64,
}

/// The transmit side's state: counters and the MTU it checks against.
#[derive(Debug, Default)]
pub struct EthTx {
    /// Per-SQ counters, by SQN (created at the first WQE, dropped by [`EthTx::remove_sq`]).
    pub sqs: BTreeMap<u32, SqTxCounters>,
    /// Every SQ's counters summed since the last reset (destroyed SQs included).
    pub totals: SqTxCounters,
}

impl EthTx {
    /// Longest plain SEND frame (no FCS) the port transmits, for the vport
    /// MTU as the driver writes it (`MLX5E_SW2HW_MTU`: L2 header, VLAN tag
    /// and FCS included; 0 until written: [`MAX_SW_MTU`] applies).
    pub fn max_frame(hw_mtu: u16) -> usize {
        match hw_mtu as usize {
            0 => MAX_SW_MTU + L2_OVERHEAD,
            m => m.saturating_sub(HW_MTU_OVERHEAD) + L2_OVERHEAD,
        }
    }

    /// An SQ's counters (zeros if it never sent).
    pub fn sq(&self, sqn: u32) -> SqTxCounters {
        self.sqs.get(&sqn).copied().unwrap_or_default()
    }

    /// Forgets a destroyed SQ's counters.
    pub fn remove_sq(&mut self, sqn: u32) {
        self.sqs.remove(&sqn);
    }

    /// Applies `f` to SQ `sqn`'s counters and to the totals.
    pub(super) fn bump(&mut self, sqn: u32, f: impl Fn(&mut SqTxCounters)) {
        f(self.sqs.entry(sqn).or_default());
        f(&mut self.totals);
    }
}
