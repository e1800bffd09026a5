//! UMR (user-mode memory registration): the send path of mlx5_ib's REG_UMR
//! QP. A UMR WQE (`MLX5_OPCODE_UMR`) is a control segment whose immediate
//! names the mkey, a `struct mlx5_wqe_umr_ctrl_seg` (flags, `mkey_mask`,
//! translation size and offset), a `struct mlx5_mkey_seg` (the mkc layout)
//! and, for a translation update, either the entries inline or a
//! `struct mlx5_wqe_data_seg` pointing at them in guest memory.
//!
//! Each WQE is copied out, parsed, applied to a copy of the mkey and the
//! copy replaces the engine's key in one step: the data path sees the old
//! key or the new one, never a mix. Every WQE completes: a REQ CQE if
//! signaled, or an error CQE with the syndrome a ConnectX reports
//! (malformed or unimplemented: LOCAL_QP_OP_ERR; key, state or lkey
//! violations: LOCAL_PROT_ERR; translation outside the key:
//! LOCAL_LENGTH_ERR), after which the QP is in ERR and the driver's
//! `mlx5r_umr_recover` resets it.
//!
//! The same WQE on an RC QP is a fast registration (the kernel ULPs'
//! `IB_WR_REG_MR` and `IB_WR_LOCAL_INV`, which mlx5_ib posts as UMR):
//! [`Firmware::umr_on_qp`] executes it when the SQ fetches it, on keys of the
//! QP's own PD only and without moving a key to another PD, and its
//! completion goes through the engine in SQ order.

use std::sync::atomic::Ordering;

use thiserror::Error;
use tracing::warn;

use super::cqe::syndrome;
use super::wqe::{self, be16, be32, be64, opcode, CtrlSeg, DS};
use crate::datapath::fw_sq::drain_fw_sq;
use crate::firmware::Firmware;
use crate::ifc::mkc;
use vrnic_engine::verbs::{SendWr, WcStatus, WrOpcode};
use vrnic_engine::{Access, IndirectEntry, Mkey, Translation};

/// `MLX5_OPCODE_UMR`.
pub const OPCODE_UMR: u8 = 0x25;

/// `struct mlx5_wqe_umr_ctrl_seg` flags (`MLX5_UMR_*`).
pub mod flag {
    pub const TRANSLATION_OFFSET_EN: u8 = 1 << 4;
    /// Fail if the mkey is not free.
    pub const CHECK_NOT_FREE: u8 = 1 << 5;
    /// Fail if the mkey is free.
    pub const CHECK_FREE: u8 = 2 << 5;
    pub const INLINE: u8 = 1 << 7;
    /// `MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN`: the key's `qpn` must be the posting QP's, or 0xffffff (any QP).
    pub const CHECK_QPN: u8 = 1 << 3;
    /// The free-state check field (bits 6:5).
    pub const CHECK_MASK: u8 = 3 << 5;
}

/// `MLX5_MKEY_MASK_*`: which mkey fields a UMR writes.
pub mod mask {
    pub const LEN: u64 = 1 << 0;
    pub const PAGE_SIZE: u64 = 1 << 1;
    pub const START_ADDR: u64 = 1 << 6;
    pub const PD: u64 = 1 << 7;
    pub const EN_RINVAL: u64 = 1 << 8;
    pub const EN_SIGERR: u64 = 1 << 9;
    pub const BSF_EN: u64 = 1 << 12;
    pub const KEY: u64 = 1 << 13;
    pub const QPN: u64 = 1 << 14;
    pub const LR: u64 = 1 << 17;
    pub const LW: u64 = 1 << 18;
    pub const RR: u64 = 1 << 19;
    pub const RW: u64 = 1 << 20;
    pub const A: u64 = 1 << 21;
    pub const SMALL_FENCE: u64 = 1 << 23;
    pub const RELAXED_ORDERING_WRITE: u64 = 1 << 25;
    pub const FREE: u64 = 1 << 29;
    pub const RELAXED_ORDERING_READ: u64 = 1 << 47;
    /// The fields this device updates (relaxed ordering and signature
    /// fields are not offered).
    pub const SUPPORTED: u64 =
        LEN | PAGE_SIZE | START_ADDR | PD | EN_RINVAL | KEY | QPN | LR | LW | RR | RW | A | SMALL_FENCE | FREE;
}

/// Bytes of `struct mlx5_wqe_umr_ctrl_seg`.
pub const UMR_CTRL_SIZE: usize = 48;
/// Bytes of `struct mlx5_mkey_seg`.
pub const MKEY_SEG_SIZE: usize = 64;
/// Bytes of one MTT entry (`struct mlx5_mtt`).
pub const MTT_SIZE: usize = 8;
/// Bytes of one KLM entry (`struct mlx5_klm`).
pub const KLM_SIZE: usize = 16;
/// Translation entries are written in units of 64 bytes
/// (`MLX5_UMR_FLEX_ALIGNMENT`): a key's table is that much at least.
pub const XLT_ALIGN_OCTOWORDS: u64 = 4;
/// Most MTT entries one key may hold (2^21: 8 GiB of 4 KiB pages).
pub const MAX_MTT_ENTRIES: u64 = 1 << 21;
/// Bytes of one KSM entry (`struct mlx5_ksm`: reserved, key, address).
pub const KSM_SIZE: usize = 16;
/// Most KLM or KSM entries one indirect key may hold (`log_max_klm_list_size`).
pub const MAX_INDIRECT_ENTRIES: u64 = 1 << 16;

/// Why a UMR WQE is not executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum UmrError {
    #[error("opcode {0:#x} not executed on the REG_UMR QP")]
    Opcode(u8),
    #[error("malformed WQE: {0}")]
    Wqe(#[from] wqe::WqeError),
    #[error("UMR control flags {0:#x} not implemented")]
    Flags(u8),
    #[error("mkey mask bits {0:#x} not implemented")]
    Mask(u64),
    #[error("no mkey {0:#x}")]
    BadKey(u32),
    #[error("mkey {0:#x} is not UMR-enabled")]
    NotUmrEnabled(u32),
    #[error("mkey free state check failed")]
    FreeState,
    #[error("mkey {0:#x} is bound to another QP")]
    QpnCheck(u32),
    #[error("no PD {0}")]
    BadPd(u32),
    #[error("log page size {0} out of range")]
    PageSize(u64),
    #[error("translation update on a key that is not MTT-, KLM- or KSM-mapped")]
    NotMtt,
    #[error("translation entries {0}..{1} past the key's {2}")]
    XltBounds(u64, u64, u64),
    #[error("translation entries from {0} leave a gap after the {1} written so far")]
    XltGap(u64, u64),
    #[error("start + length overflows")]
    Length,
    #[error("repeat block: {0}")]
    RepeatBlock(&'static str),
    #[error("translation pointer: {0}")]
    Pointer(&'static str),
}

impl UmrError {
    /// The CQE syndrome a ConnectX reports for this failure.
    pub fn syndrome(self) -> u8 {
        match self {
            UmrError::Opcode(_) | UmrError::Wqe(_) | UmrError::Flags(_) | UmrError::Mask(_) => {
                syndrome::LOCAL_QP_OP_ERR
            }
            UmrError::PageSize(_) | UmrError::NotMtt | UmrError::XltGap(..) | UmrError::RepeatBlock(_) => {
                syndrome::LOCAL_QP_OP_ERR
            }
            UmrError::BadKey(_)
            | UmrError::NotUmrEnabled(_)
            | UmrError::FreeState
            | UmrError::QpnCheck(_)
            | UmrError::BadPd(_) => syndrome::LOCAL_PROT_ERR,
            UmrError::Pointer(_) => syndrome::LOCAL_PROT_ERR,
            UmrError::XltBounds(..) | UmrError::Length => syndrome::LOCAL_LENGTH_ERR,
        }
    }
}

/// `struct mlx5_wqe_umr_ctrl_seg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UmrCtrl {
    pub flags: u8,
    /// Translation size in 16-byte units.
    pub xlt_octowords: u16,
    /// Translation offset in 16-byte units (bits 47:16 only with
    /// `TRANSLATION_OFFSET_EN`).
    pub xlt_offset: u64,
    pub mkey_mask: u64,
}

impl UmrCtrl {
    pub fn parse(b: &[u8]) -> Result<UmrCtrl, UmrError> {
        if b.len() < UMR_CTRL_SIZE {
            return Err(wqe::WqeError::Truncated.into());
        }
        let flags = b[0];
        let lo = be16(b, 6) as u64;
        let hi = be32(b, 16) as u64;
        let xlt_offset = if flags & flag::TRANSLATION_OFFSET_EN != 0 { (hi << 16) | lo } else { lo };
        Ok(UmrCtrl { flags, xlt_octowords: be16(b, 4), xlt_offset, mkey_mask: be64(b, 8) })
    }
}

/// Where a UMR's translation entries are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Xlt {
    None,
    /// Copied from the WQE.
    Inline(Vec<u8>),
    /// A `mlx5_wqe_data_seg`: `len` bytes at `addr` through `lkey`.
    Pointer {
        addr: u64,
        len: u32,
        lkey: u32,
    },
}

/// A parsed UMR WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UmrWqe {
    /// The key being modified (the control segment's immediate).
    pub mkey: u32,
    pub ctrl: UmrCtrl,
    /// The `mlx5_mkey_seg`, read with the mkc accessors.
    pub seg: [u8; MKEY_SEG_SIZE],
    pub xlt: Xlt,
}

/// Parses a whole UMR WQE `w` (control segment first) of `ctrl.ds` DSes.
pub fn parse_umr(w: &[u8], ctrl: &CtrlSeg) -> Result<UmrWqe, UmrError> {
    let len = ctrl.ds as usize * DS;
    if len > w.len() {
        return Err(wqe::WqeError::BadDs(ctrl.ds).into());
    }
    let w = &w[..len];
    let base = DS + UMR_CTRL_SIZE + MKEY_SEG_SIZE;
    if len < base {
        return Err(wqe::WqeError::BadDs(ctrl.ds).into());
    }
    let u = UmrCtrl::parse(&w[DS..])?;
    let known = flag::TRANSLATION_OFFSET_EN | flag::CHECK_MASK | flag::INLINE | flag::CHECK_QPN;
    if u.flags & !known != 0 || u.flags & flag::CHECK_MASK == flag::CHECK_MASK {
        return Err(UmrError::Flags(u.flags));
    }
    if u.mkey_mask & !mask::SUPPORTED != 0 {
        return Err(UmrError::Mask(u.mkey_mask & !mask::SUPPORTED));
    }
    let mut seg = [0u8; MKEY_SEG_SIZE];
    seg.copy_from_slice(&w[DS + UMR_CTRL_SIZE..base]);
    let n = u.xlt_octowords as usize * 16;
    let xlt = if n == 0 {
        Xlt::None
    } else if u.flags & flag::INLINE != 0 {
        if base + n > len {
            return Err(wqe::WqeError::Truncated.into());
        }
        Xlt::Inline(w[base..base + n].to_vec())
    } else {
        if base + DS > len {
            return Err(wqe::WqeError::Truncated.into());
        }
        let d = &w[base..base + DS];
        Xlt::Pointer { len: be32(d, 0) & 0x7fff_ffff, lkey: be32(d, 4), addr: be64(d, 8) }
    };
    Ok(UmrWqe { mkey: ctrl.imm, ctrl: u, seg, xlt })
}

/// Decodes KLM entries (`struct mlx5_klm`, 16 bytes each: byte count, key, address).
pub fn parse_klms(b: &[u8]) -> Vec<IndirectEntry> {
    b.chunks_exact(KLM_SIZE)
        .map(|e| IndirectEntry { len: be32(e, 0) as u64, key: be32(e, 4), va: be64(e, 8) })
        .collect()
}

/// `op` of `struct mlx5_wqe_umr_repeat_block_seg`: where a KLM holds its key, a repeat block says what it is.
/// No key has this value (the device hands out mkey indices from [`vrnic_engine::FIRST_MKEY_INDEX`] up).
pub const REPEAT_BLOCK_OP: u32 = 0x400;

/// A KLM key's translation written as one repeat block (`mlx5dv_wr_mr_interleaved`: `struct
/// mlx5_wqe_umr_repeat_block_seg` {byte count, op, repeat count, entry count}, then that many `struct
/// mlx5_wqe_umr_repeat_ent_seg` {stride, byte count, key, address}): `repeat_count` times, each entry's bytes, the
/// r-th time at its address plus r strides. Returns the KLM entries it stands for, or None when `xlt` does not
/// start with a repeat block.
pub fn parse_repeat_block(xlt: &[u8]) -> Option<Result<Vec<IndirectEntry>, UmrError>> {
    if xlt.len() < KLM_SIZE || be32(xlt, 4) != REPEAT_BLOCK_OP {
        return None;
    }
    Some(expand_repeat_block(xlt))
}

fn expand_repeat_block(xlt: &[u8]) -> Result<Vec<IndirectEntry>, UmrError> {
    let (total, repeat, n) = (be32(xlt, 0) as u64, be32(xlt, 8) as u64, be16(xlt, 14) as usize);
    let raw = xlt.get(KLM_SIZE..KLM_SIZE * (n + 1)).ok_or(UmrError::RepeatBlock("entries past the translation"))?;
    if n == 0 || repeat == 0 {
        return Err(UmrError::RepeatBlock("no entries or no repeats"));
    }
    if repeat.saturating_mul(n as u64) > MAX_INDIRECT_ENTRIES {
        return Err(UmrError::RepeatBlock("more entries than a key holds"));
    }
    // (stride, byte count, key, address)
    let ents: Vec<(u64, u64, u32, u64)> =
        raw.chunks_exact(KLM_SIZE).map(|e| (be16(e, 0) as u64, be16(e, 2) as u64, be32(e, 4), be64(e, 8))).collect();
    if ents.iter().map(|e| e.1).sum::<u64>() != total {
        return Err(UmrError::RepeatBlock("byte count is not the entries' sum"));
    }
    let mut out = Vec::with_capacity(repeat as usize * n);
    for r in 0..repeat {
        for &(stride, len, key, va) in &ents {
            let va = va.checked_add(r * stride).ok_or(UmrError::RepeatBlock("address overflows"))?;
            out.push(IndirectEntry { len, key, va });
        }
    }
    Ok(out)
}

/// Decodes KSM entries (`struct mlx5_ksm`, 16 bytes each: reserved, key, address); their size is the key's.
pub fn parse_ksms(b: &[u8]) -> Vec<IndirectEntry> {
    b.chunks_exact(KSM_SIZE).map(|e| IndirectEntry { len: 0, key: be32(e, 4), va: be64(e, 8) }).collect()
}

/// KLM or KSM entries a key created with `translations_octword_size` may hold (one octoword each).
pub fn indirect_capacity(octowords: u64) -> u64 {
    octowords.next_multiple_of(XLT_ALIGN_OCTOWORDS).min(MAX_INDIRECT_ENTRIES)
}

/// Writes `new` into a translation table at entry `first`: tables are written from 0 up, in chunks (mlx5_ib's
/// update_mr_pas), so a write past the end of what is there would make the device hold entries nobody supplied.
fn write_entries<T: Copy + Default>(table: &mut Vec<T>, first: u64, new: &[T], capacity: u64) -> Result<(), UmrError> {
    let end = first.saturating_add(new.len() as u64);
    if end > capacity {
        return Err(UmrError::XltBounds(first, end, capacity));
    }
    if first > table.len() as u64 {
        return Err(UmrError::XltGap(first, table.len() as u64));
    }
    if table.len() < end as usize {
        table.resize(end as usize, T::default());
    }
    table[first as usize..end as usize].copy_from_slice(new);
    Ok(())
}

/// Decodes MTT entries (8 bytes each): the page address, the low
/// present/read/write bits (`MLX5_IB_MTT_*`) cleared.
pub fn parse_mtts(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(MTT_SIZE).map(|e| be64(e, 0) & !0xfff).collect()
}

/// MTT entries a key created with `translations_octword_size` may hold.
pub fn mtt_capacity(octowords: u64) -> u64 {
    (octowords.next_multiple_of(XLT_ALIGN_OCTOWORDS) * 2).min(MAX_MTT_ENTRIES)
}

/// Applies UMR `u` with translation bytes `xlt` to a copy of key `old`
/// (whose mkc is `old_mkc`); `pd_exists` says whether a PD may be named.
/// Returns the new key and mkc, or why nothing changes.
pub fn apply(
    old: &Mkey,
    old_mkc: &[u8],
    u: &UmrWqe,
    xlt: &[u8],
    pd_exists: impl Fn(u32) -> bool,
) -> Result<(Mkey, Vec<u8>), UmrError> {
    let m = u.ctrl.mkey_mask;
    let s = &u.seg[..];
    match u.ctrl.flags & flag::CHECK_MASK {
        flag::CHECK_NOT_FREE if !old.free => return Err(UmrError::FreeState),
        flag::CHECK_FREE if old.free => return Err(UmrError::FreeState),
        _ => {}
    }
    let mut k = old.clone();
    let mut c = old_mkc.to_vec();
    c.resize(mkc::SIZE, 0);
    let copy = |c: &mut Vec<u8>, f: crate::fields::Field| f.set(c, f.get(s));
    if m & mask::FREE != 0 {
        k.free = mkc::free.get_bool(s);
        copy(&mut c, mkc::free);
    }
    if m & mask::KEY != 0 {
        k.variant = mkc::mkey_7_0.get(s) as u8;
        copy(&mut c, mkc::mkey_7_0);
    }
    if m & mask::QPN != 0 {
        copy(&mut c, mkc::qpn);
    }
    if m & mask::PD != 0 {
        let pd = mkc::pd.get(s) as u32;
        if !pd_exists(pd) {
            return Err(UmrError::BadPd(pd));
        }
        k.pd = pd;
        copy(&mut c, mkc::pd);
    }
    let rights = [
        (mask::LW, mkc::lw, Access::LOCAL_WRITE),
        (mask::RR, mkc::rr, Access::REMOTE_READ),
        (mask::RW, mkc::rw, Access::REMOTE_WRITE),
        (mask::A, mkc::a, Access::REMOTE_ATOMIC),
    ];
    for (bit, field, right) in rights {
        if m & bit != 0 {
            k.access = if field.get_bool(s) { Access(k.access.0 | right.0) } else { Access(k.access.0 & !right.0) };
            copy(&mut c, field);
        }
    }
    if m & mask::LR != 0 {
        copy(&mut c, mkc::lr);
    }
    if m & mask::EN_RINVAL != 0 {
        copy(&mut c, mkc::en_rinval);
    }
    let translation_mask = mask::START_ADDR | mask::LEN | mask::PAGE_SIZE;
    let table = matches!(k.translation, Translation::Mtt { .. } | Translation::Klm { .. } | Translation::Ksm { .. });
    if (m & translation_mask != 0 || !xlt.is_empty()) && !table {
        return Err(UmrError::NotMtt);
    }
    if m & mask::START_ADDR != 0 {
        k.start = mkc::start_addr.get(s);
        copy(&mut c, mkc::start_addr);
    }
    if m & mask::LEN != 0 {
        k.length = mkc::len.get(s);
        k.whole_space = mkc::length64.get_bool(s);
        copy(&mut c, mkc::len);
        copy(&mut c, mkc::length64);
    }
    let octowords = mkc::translations_octword_size.get(&c);
    // The page size: an MTT key's page, a KSM key's entry size; a KLM key's is kept in its mkc only.
    let page_size = if m & mask::PAGE_SIZE != 0 {
        let lps = mkc::log_page_size.get(s);
        if !(12..=30).contains(&lps) {
            return Err(UmrError::PageSize(lps));
        }
        copy(&mut c, mkc::log_page_size);
        Some(lps as u8)
    } else {
        None
    };
    let room = indirect_capacity(octowords);
    match &mut k.translation {
        Translation::Klm { entries } if !xlt.is_empty() => match parse_repeat_block(xlt) {
            // A repeat block describes the whole key, from its first entry.
            Some(block) => {
                if u.ctrl.xlt_offset != 0 || xlt.len() as u64 > room * KLM_SIZE as u64 {
                    return Err(UmrError::RepeatBlock("not the key's whole table"));
                }
                *entries = block?;
            }
            None => write_entries(entries, u.ctrl.xlt_offset, &parse_klms(xlt), room)?,
        },
        Translation::Ksm { entry_shift, entries } => {
            *entry_shift = page_size.unwrap_or(*entry_shift);
            if !xlt.is_empty() {
                write_entries(entries, u.ctrl.xlt_offset, &parse_ksms(xlt), room)?;
            }
        }
        _ => {}
    }
    let capacity = mtt_capacity(octowords);
    if let Translation::Mtt { page_shift, pages } = &mut k.translation {
        *page_shift = page_size.unwrap_or(*page_shift);
        if !xlt.is_empty() {
            write_entries(pages, u.ctrl.xlt_offset.saturating_mul(2), &parse_mtts(xlt), capacity)?;
        }
        // An enabled key must fit its table (pages never written do not translate).
        if !k.free && !k.whole_space {
            let ps = 1u64 << *page_shift;
            let end = k.start.checked_add(k.length).ok_or(UmrError::Length)?;
            let needed = (end - (k.start & !(ps - 1))).div_ceil(ps);
            if needed > capacity {
                return Err(UmrError::XltBounds(0, needed, capacity));
            }
        }
    } else if !k.whole_space && k.start.checked_add(k.length).is_none() {
        return Err(UmrError::Length);
    }
    Ok((k, c))
}

impl Firmware {
    /// Send doorbell of the REG_UMR QP: executes every WQE up to the
    /// doorbell record, in order; an ERR QP flushes them. `umr_wqes` counts
    /// the WQEs executed, `umr_errors` those fetched and refused.
    pub(super) fn drain_umr_sq(&mut self, qpn: u32) {
        drain_fw_sq(self, qpn, |fw, qpn, w, ctrl| match fw.execute_umr(qpn, w, ctrl, None) {
            Ok(()) => {
                fw.core.stats.umr_wqes.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                warn!(qpn, mkey = ctrl.imm, error = %e, "UMR WQE not executed");
                fw.core.stats.umr_errors.fetch_add(1, Ordering::Relaxed);
                Err(e.syndrome())
            }
        });
    }

    /// A UMR WQE fetched from RC QP `qpn`'s send queue (fast registration):
    /// executed now, in SQ order; the returned work request completes it in
    /// order through the engine (a NOP carrying the UMR opcode, or an error
    /// completion with the UMR's syndrome, which moves the QP to ERR).
    pub(super) fn umr_on_qp(&mut self, qpn: u32, w: &[u8], ctrl: &CtrlSeg) -> SendWr {
        let pd = self.core.engine.qp(qpn).map(|q| q.pd);
        let mut wr = SendWr::new(ctrl.send_wr_id(), WrOpcode::Nop, Vec::new());
        wr.signaled = ctrl.signaled();
        let r = match pd {
            Some(pd) => self.execute_umr(qpn, w, ctrl, Some(pd)),
            None => Err(UmrError::Opcode(ctrl.opcode)),
        };
        match r {
            Ok(()) => {
                self.core.stats.umr_wqes.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                warn!(qpn, mkey = ctrl.imm, error = %e, "UMR WQE on an RC QP not executed");
                self.core.stats.umr_errors.fetch_add(1, Ordering::Relaxed);
                wr.signaled = true;
                wr.local_error = Some(match e.syndrome() {
                    syndrome::LOCAL_PROT_ERR => WcStatus::LocProtErr,
                    syndrome::LOCAL_LENGTH_ERR => WcStatus::LocLenErr,
                    _ => WcStatus::LocQpOpErr,
                });
            }
        }
        wr
    }

    /// Executes one UMR WQE posted by QP `qpn`: on the REG_UMR QP (`qp_pd` None: any key), or
    /// on a QP of PD `qp_pd` (only that PD's keys, and the PD stays).
    fn execute_umr(&mut self, qpn: u32, w: &[u8], ctrl: &CtrlSeg, qp_pd: Option<u32>) -> Result<(), UmrError> {
        match ctrl.opcode {
            opcode::NOP => return Ok(()),
            OPCODE_UMR => {}
            o => return Err(UmrError::Opcode(o)),
        }
        let u = parse_umr(w, ctrl)?;
        let index = u.mkey >> 8;
        let old = self.core.engine.mkey(index).ok_or(UmrError::BadKey(u.mkey))?;
        if let Some(pd) = qp_pd {
            if old.pd != pd {
                return Err(UmrError::BadKey(u.mkey));
            }
            if u.ctrl.mkey_mask & mask::PD != 0 {
                return Err(UmrError::Mask(mask::PD));
            }
        }
        if u.ctrl.mkey_mask & mask::KEY == 0 && old.variant != u.mkey as u8 {
            return Err(UmrError::BadKey(u.mkey));
        }
        let old_mkc = self.core.engine.mkey(index).map(|e| &e.ext).ok_or(UmrError::BadKey(u.mkey))?;
        if !mkc::umr_en.get_bool(&old_mkc.mkc) {
            return Err(UmrError::NotUmrEnabled(u.mkey));
        }
        let bound = mkc::qpn.get(&old_mkc.mkc) as u32;
        if u.ctrl.flags & flag::CHECK_QPN != 0 && bound != 0xff_ffff && bound != qpn {
            return Err(UmrError::QpnCheck(u.mkey));
        }
        let xlt = match &u.xlt {
            Xlt::None => Vec::new(),
            Xlt::Inline(b) => b.clone(),
            &Xlt::Pointer { addr, len, lkey } => {
                let n = u.ctrl.xlt_octowords as u64 * 16;
                if (len as u64) < n {
                    return Err(UmrError::XltBounds(0, n, len as u64));
                }
                self.read_through_key(lkey, addr, n)?
            }
        };
        let engine = &self.core.engine;
        let (new, new_mkc) = apply(old, &old_mkc.mkc, &u, &xlt, |pd| engine.pd_exists(pd))?;
        if let Some(k) = self.core.engine.mkey_mut(index) {
            let (key, ctx) = k.parts_mut();
            *key = new;
            ctx.mkc = new_mkc;
        }
        Ok(())
    }

    /// Copies `n` bytes at `addr` through local key `lkey` (the kernel's
    /// DMA key of the UMR PD).
    fn read_through_key(&self, lkey: u32, addr: u64, n: u64) -> Result<Vec<u8>, UmrError> {
        let engine = &self.core.engine;
        let key = engine.lookup_key(lkey).ok_or(UmrError::Pointer("no such lkey"))?;
        let chunks = key
            .translate_via(addr, n, key.pd, Access::LOCAL_READ, &|k| engine.lookup_key(k))
            .map_err(|_| UmrError::Pointer("lkey does not cover it"))?;
        let mut out = Vec::with_capacity(n as usize);
        for (pa, len) in chunks {
            let at = out.len();
            out.resize(at + len as usize, 0);
            self.core.mem.read(pa, &mut out[at..]).map_err(|_| UmrError::Pointer("outside guest memory"))?;
        }
        Ok(out)
    }
}

#[cfg(test)]
#[path = "umr_tests.rs"]
mod tests;
