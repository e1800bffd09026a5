//! UAR (doorbell) pages: decoding the stores the driver makes into them, and
//! the two ways the device learns about those stores.
//!
//! * `trap`: UAR pages are not mappable; every store arrives as a (posted)
//!   REGION_WRITE and is decoded on the spot.
//! * `poll`: UAR pages are served from shared memory the guest stores into
//!   directly; a poller (the device's `vrnic-uar-poll` thread) scans the
//!   doorbell slots of the armed pages ([`scan_page`]). Each slot holds a
//!   sentinel (all ones) that the scan swaps back in atomically when it
//!   consumes a store, so a store is seen exactly once ([`arm_page`]).
//!
//! Layout of a 4 KiB UAR page (mlx5 `MLX5_CQ_DOORBELL`, `MLX5_EQ_DOORBELL_OFFSET`,
//! `MLX5_BF_OFFSET`): 0x20 CQ arm (8 bytes), 0x40 EQ update+arm, 0x48 EQ
//! update (4 bytes each), 0x800-0xfff send doorbells / BlueFlame (8-byte slots;
//! drivers ring at the start of each 256-byte bfreg half, which is all the poller watches).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use vrnic_sys::SharedMem;

pub const MLX5_CQ_DOORBELL: u64 = 0x20;
pub const MLX5_EQ_DOORBELL_ARM: u64 = 0x40;
pub const MLX5_EQ_DOORBELL_NO_ARM: u64 = 0x48;
pub const MLX5_BF_OFFSET: u64 = 0x800;
pub const UAR_PAGE: u64 = 4096;
/// Half of a bfreg (`bf_reg_size / 2`, the caps' `log_bf_reg_size` 9 ⇒ 512-byte
/// bfregs): drivers ring a send doorbell at the start of a half, the kernel
/// alternating `+0`/`+0x100` of its bfreg (`bf->offset ^= buf_size`),
/// libmlx5 always at `+0x800` (BlueFlame is off).
pub const BF_HALF: u64 = 0x100;

/// The page offsets where a driver rings a send doorbell: 0x800, 0x900, … 0xf00.
/// The poller watches these; a trapped store elsewhere in 0x800..0x1000 is
/// still decoded (`Doorbell::decode`), but no driver makes one with BlueFlame off.
pub fn send_doorbell_offsets() -> impl Iterator<Item = u64> {
    (MLX5_BF_OFFSET..UAR_PAGE).step_by(BF_HALF as usize)
}

/// A decoded doorbell store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doorbell {
    /// CQ arm: `sn<<28 | cmd | ci` then `cqn` (two big-endian dwords).
    CqArm { uar: u64, cqn: u32, sn: u8, solicited: bool, ci: u32 },
    /// EQ consumer-index update, with or without arming.
    EqUpdate { uar: u64, eqn: u8, ci: u32, arm: bool },
    /// Send doorbell: the first 8 bytes of the last WQE's control segment.
    Send { uar: u64, offset: u64, opmod_idx_opcode: u32, qpn_ds: u32 },
}

impl Doorbell {
    /// Decodes a store of `data` at `page_off` in UAR page `uar`; None for
    /// stores that are not doorbells (wrong offset or width).
    pub fn decode(uar: u64, page_off: u64, data: &[u8]) -> Option<Doorbell> {
        let dw = |i: usize| u32::from_be_bytes(data[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
        match (page_off, data.len()) {
            (MLX5_CQ_DOORBELL, 8) => {
                let a = dw(0);
                Some(Doorbell::CqArm {
                    uar,
                    cqn: dw(1) & 0x00ff_ffff,
                    sn: ((a >> 28) & 0x3) as u8,
                    solicited: a & (1 << 24) != 0,
                    ci: a & 0x00ff_ffff,
                })
            }
            (MLX5_EQ_DOORBELL_ARM, 4) | (MLX5_EQ_DOORBELL_NO_ARM, 4) => {
                let v = dw(0);
                Some(Doorbell::EqUpdate {
                    uar,
                    eqn: (v >> 24) as u8,
                    ci: v & 0x00ff_ffff,
                    arm: page_off == MLX5_EQ_DOORBELL_ARM,
                })
            }
            (o, 8) if (MLX5_BF_OFFSET..UAR_PAGE).contains(&o) && o % 8 == 0 => {
                Some(Doorbell::Send { uar, offset: o, opmod_idx_opcode: dw(0), qpn_ds: dw(1) })
            }
            _ => None,
        }
    }
}

/// Where decoded doorbells go (the data path; counters until it exists).
pub trait DoorbellSink: Send + Sync {
    fn doorbell(&self, db: Doorbell);
}

/// Doorbell counters, also the sink used before a data path is attached.
#[derive(Default, Debug, serde::Serialize)]
pub struct DoorbellStats {
    pub cq_arm: AtomicU64,
    pub eq_update: AtomicU64,
    pub send: AtomicU64,
    pub ignored: AtomicU64,
    /// The last send doorbell seen (qpn_ds << 32 | opmod_idx_opcode), for tests.
    pub last_send: AtomicU64,
}

impl DoorbellStats {
    /// Every decoded doorbell so far (send, CQ arm, EQ update).
    pub fn total(&self) -> u64 {
        [&self.send, &self.cq_arm, &self.eq_update].iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

impl DoorbellSink for DoorbellStats {
    fn doorbell(&self, db: Doorbell) {
        tracing::trace!(?db, "doorbell");
        match db {
            Doorbell::CqArm { .. } => self.cq_arm.fetch_add(1, Ordering::Relaxed),
            Doorbell::EqUpdate { .. } => self.eq_update.fetch_add(1, Ordering::Relaxed),
            Doorbell::Send { opmod_idx_opcode, qpn_ds, .. } => {
                self.last_send.store(((qpn_ds as u64) << 32) | opmod_idx_opcode as u64, Ordering::Relaxed);
                self.send.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

/// Sentinel left in every watched slot; a doorbell never has all bits set
/// (a CQ arm's cqn, an EQ number 0xff with ci 0xffffff, a send with qpn
/// 0xffffff are all outside what the device hands out).
pub const SENTINEL64: u64 = u64::MAX;
pub const SENTINEL32: u32 = u32::MAX;

/// Wakes a napping poller into its spin window: something just happened
/// that makes a doorbell likely soon (the device kicks it when the fabric
/// delivers packets into the guest, which the guest then answers). `local`:
/// the data was delivered inside this device (loopback), so the answering
/// doorbell comes within microseconds.
pub trait Kick: Send + Sync {
    fn kick(&self, local: bool);
}

/// A poller kick that waits for the end of a burst of received packets:
/// it kicks once if one of them changed what the guest sees (data, a
/// completion). RDMA READ and atomic requests are answered by the device
/// alone and kick nothing. A packet from this device itself (loopback)
/// makes the kick local.
pub struct BurstKick {
    kick: Arc<dyn Kick>,
    pending: AtomicBool,
    pending_local: AtomicBool,
}

impl BurstKick {
    pub fn new(kick: Arc<dyn Kick>) -> BurstKick {
        BurstKick { kick, pending: AtomicBool::new(false), pending_local: AtomicBool::new(false) }
    }

    /// Notes one received packet (BTH onward).
    pub fn note(&self, pkt: &[u8], local: bool) {
        if let Ok(b) = vrnic_wire::bth::Packet::new_checked(pkt) {
            let op = b.opcode();
            // RDMA READ request (0x0c) or an atomic request.
            if !(op.op() == 0x0c || op.is_atomic()) {
                if local {
                    self.pending_local.store(true, Ordering::Relaxed);
                }
                self.pending.store(true, Ordering::Relaxed);
            }
        }
    }

    /// End of the burst: kicks if a noted packet asked for it.
    pub fn flush(&self) {
        if self.pending.swap(false, Ordering::Relaxed) {
            self.kick.kick(self.pending_local.swap(false, Ordering::Relaxed));
        }
    }
}

/// Writes sentinels into every doorbell slot of UAR page `uar`.
pub fn arm_page(mem: &SharedMem, uar: u64) {
    let base = (uar * UAR_PAGE) as usize;
    mem.swap_u64(base + MLX5_CQ_DOORBELL as usize, SENTINEL64);
    mem.swap_u32(base + MLX5_EQ_DOORBELL_ARM as usize, SENTINEL32);
    mem.swap_u32(base + MLX5_EQ_DOORBELL_NO_ARM as usize, SENTINEL32);
    let mut o = MLX5_BF_OFFSET;
    while o < UAR_PAGE {
        mem.swap_u64(base + o as usize, SENTINEL64);
        o += 8;
    }
}

/// One pass over a page; returns how many doorbells it consumed.
pub fn scan_page(mem: &SharedMem, uar: u64, sink: &dyn DoorbellSink) -> usize {
    let base = (uar * UAR_PAGE) as usize;
    let mut n = 0;
    let take64 = |off: u64, n: &mut usize| {
        let at = base + off as usize;
        if mem.load_u64(at).is_some_and(|v| v != SENTINEL64) {
            if let Some(v) = mem.swap_u64(at, SENTINEL64) {
                if let Some(db) = Doorbell::decode(uar, off, &v.to_ne_bytes()) {
                    sink.doorbell(db);
                }
                *n += 1;
            }
        }
    };
    take64(MLX5_CQ_DOORBELL, &mut n);
    for o in send_doorbell_offsets() {
        take64(o, &mut n);
    }
    for off in [MLX5_EQ_DOORBELL_ARM, MLX5_EQ_DOORBELL_NO_ARM] {
        // Load first: a swap on every pass would write the line each time.
        if mem.load_u32(base + off as usize).is_none_or(|v| v == SENTINEL32) {
            continue;
        }
        if let Some(v) = mem.swap_u32(base + off as usize, SENTINEL32) {
            if v != SENTINEL32 {
                if let Some(db) = Doorbell::decode(uar, off, &v.to_ne_bytes()) {
                    sink.doorbell(db);
                }
                n += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_each_kind() {
        let mut cq = [0u8; 8];
        cq[..4].copy_from_slice(&((2u32 << 28) | (1 << 24) | 0x123).to_be_bytes());
        cq[4..].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(
            Doorbell::decode(4, 0x20, &cq),
            Some(Doorbell::CqArm { uar: 4, cqn: 7, sn: 2, solicited: true, ci: 0x123 })
        );
        let eq = ((5u32 << 24) | 9).to_be_bytes();
        assert_eq!(Doorbell::decode(4, 0x40, &eq), Some(Doorbell::EqUpdate { uar: 4, eqn: 5, ci: 9, arm: true }));
        assert_eq!(Doorbell::decode(4, 0x48, &eq), Some(Doorbell::EqUpdate { uar: 4, eqn: 5, ci: 9, arm: false }));
        let mut s = [0u8; 8];
        s[..4].copy_from_slice(&0x0001_000au32.to_be_bytes());
        s[4..].copy_from_slice(&0x0000_4203u32.to_be_bytes());
        assert_eq!(
            Doorbell::decode(4, 0x900, &s),
            Some(Doorbell::Send { uar: 4, offset: 0x900, opmod_idx_opcode: 0x1000a, qpn_ds: 0x4203 })
        );
        assert_eq!(Doorbell::decode(4, 0x904, &s), None);
        assert_eq!(Doorbell::decode(4, 0x20, &s[..4]), None);
        assert_eq!(Doorbell::decode(4, 0x100, &s), None);
    }
}
