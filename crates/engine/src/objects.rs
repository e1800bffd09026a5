//! Verbs objects: PD, XRCD, UAR, EQ, CQ, SRQ, MKEY and QP, with the state and
//! attributes the transports act on (the QP itself is `qp.rs`). Nothing here
//! knows mlx5 byte layouts.

use super::verbs::AddressVector;

/// Access rights of a memory key / QP (IBTA access flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access(pub u8);

impl Access {
    pub const LOCAL_READ: Access = Access(0);
    pub const LOCAL_WRITE: Access = Access(1 << 0);
    pub const REMOTE_READ: Access = Access(1 << 1);
    pub const REMOTE_WRITE: Access = Access(1 << 2);
    pub const REMOTE_ATOMIC: Access = Access(1 << 3);

    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, o: Access) -> Access {
        Access(self.0 | o.0)
    }
}

/// Protection domain.
#[derive(Debug, Clone, Default)]
pub struct Pd {
    /// User context id (0 = kernel), for object ownership checks.
    pub uid: u16,
}

/// XRC domain.
#[derive(Debug, Clone, Default)]
pub struct Xrcd {
    pub uid: u16,
}

/// Completion queue.
#[derive(Debug, Clone)]
pub struct Cq {
    pub log_size: u8,
    /// Completions produced so far (wraps at 2^32).
    pub producer: u32,
    /// Consumer index last reported by the driver.
    pub consumer: u32,
    /// A completion found the queue full.
    pub overrun: bool,
    /// Moderation: period (µs) and count, as set by the driver.
    pub period: u16,
    pub max_count: u16,
}

impl Cq {
    /// An empty, unarmed CQ of 2^`log_size` entries.
    pub fn new(log_size: u8) -> Cq {
        Cq { log_size, producer: 0, consumer: 0, overrun: false, period: 0, max_count: 0 }
    }

    pub fn entries(&self) -> u32 {
        1u32 << self.log_size
    }

    /// Whether one more completion fits, given the driver's consumer index.
    pub fn has_room(&self) -> bool {
        self.producer.wrapping_sub(self.consumer) < self.entries()
    }
}

/// Shared receive queue.
#[derive(Debug, Clone)]
pub struct Srq {
    pub pd: u32,
    pub log_size: u8,
    /// XRC SRQs report completions to this CQ.
    pub cqn: Option<u32>,
    pub xrcd: Option<u32>,
    /// Limit (LWM): an event fires when fewer WQEs remain; 0 = disarmed.
    pub limit: u16,
    pub uid: u16,
    /// Posted receive WQEs, oldest first.
    pub wqes: std::collections::VecDeque<super::verbs::RecvWr>,
}

/// How a memory key translates addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Translation {
    /// Virtual address == guest physical address.
    Physical,
    /// Pages of `1 << page_shift` bytes; `pages[i]` is the guest physical address of page i.
    Mtt { page_shift: u8, pages: Vec<u64> },
    /// On-device memory (MEMIC): virtual address `start` is device-memory
    /// offset `base`; addresses come out tagged with [`DEVICE_MEMORY`].
    DeviceMemory { base: u64 },
}

/// Tag of addresses in on-device memory rather than guest memory.
pub const DEVICE_MEMORY: u64 = 1 << 63;

/// Memory key (MR).
#[derive(Debug, Clone)]
pub struct Mkey {
    /// The low 8 bits of the key the driver chose (`mkey_7_0`).
    pub variant: u8,
    pub pd: u32,
    pub access: Access,
    /// First virtual address covered.
    pub start: u64,
    pub length: u64,
    /// Covers the whole 64-bit space (`length64`).
    pub whole_space: bool,
    pub translation: Translation,
    /// Free (`MLX5_MKEY_STATUS_FREE`): exists but does not translate.
    pub free: bool,
    pub uid: u16,
}

/// Why a memory access through a key failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyFault {
    #[error("no such key")]
    BadKey,
    #[error("key in another protection domain")]
    WrongPd,
    #[error("access right missing")]
    Access,
    #[error("range outside the key")]
    Bounds,
}

impl Mkey {
    /// The 32-bit key: 24-bit index, 8-bit variant.
    pub fn key(index: u32, variant: u8) -> u32 {
        (index << 8) | variant as u32
    }

    /// Translates `[va, va+len)` into guest physical chunks, checking rights
    /// and bounds first. A zero-length access is valid anywhere in the key.
    pub fn translate(&self, va: u64, len: u64, pd: u32, need: Access) -> Result<Vec<(u64, u64)>, KeyFault> {
        if self.free {
            return Err(KeyFault::BadKey);
        }
        if self.pd != pd {
            return Err(KeyFault::WrongPd);
        }
        if !self.access.contains(need) {
            return Err(KeyFault::Access);
        }
        let end = va.checked_add(len).ok_or(KeyFault::Bounds)?;
        if !self.whole_space {
            let kend = self.start.checked_add(self.length).ok_or(KeyFault::Bounds)?;
            if va < self.start || end > kend {
                return Err(KeyFault::Bounds);
            }
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        match &self.translation {
            Translation::Physical => Ok(vec![(va, len)]),
            Translation::DeviceMemory { base } => Ok(vec![(DEVICE_MEMORY | (base + (va - self.start)), len)]),
            Translation::Mtt { page_shift, pages } => {
                let ps = 1u64 << page_shift;
                // Offset of the region's first byte inside its first page.
                let base = self.start & !(ps - 1);
                let mut out: Vec<(u64, u64)> = Vec::new();
                let mut at = va;
                while at < end {
                    let idx = ((at - base) >> page_shift) as usize;
                    let page = *pages.get(idx).ok_or(KeyFault::Bounds)?;
                    let off = (at - base) & (ps - 1);
                    let n = (ps - off).min(end - at);
                    // A guest-supplied page address near the top of the space
                    // translates nowhere (no wrap-around).
                    let pa = page.checked_add(off).filter(|a| a.checked_add(n).is_some()).ok_or(KeyFault::Bounds)?;
                    match out.last_mut() {
                        Some((p, l)) if *p + *l == pa => *l += n,
                        _ => out.push((pa, n)),
                    }
                    at += n;
                }
                Ok(out)
            }
        }
    }
}

/// QP transport service type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpType {
    Rc,
    Uc,
    Ud,
    /// QP0 (subnet management).
    Smi,
    /// QP1 (general services).
    Gsi,
    XrcInitiator,
    XrcTarget,
    /// Memory-registration QP (mlx5 REG_UMR); no wire traffic.
    RegUmr,
    /// A raw Ethernet send or receive queue (mlx5 SQ/RQ objects of the
    /// Ethernet port): its number comes from the QP space (a send doorbell
    /// names only a number) and the engine runs no transport for it.
    RawPacket,
}

impl QpType {
    /// RC and both ends of XRC: PSN-sequenced and acknowledged, with reads and atomics.
    pub fn is_reliable(self) -> bool {
        matches!(self, QpType::Rc | QpType::XrcInitiator | QpType::XrcTarget)
    }
}

/// IBTA QP states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QpState {
    #[default]
    Reset,
    Init,
    Rtr,
    Rts,
    Sqd,
    Sqe,
    Err,
}

/// Path MTU in bytes (IBTA enum 1..5 = 256..4096).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mtu(pub u16);

impl Mtu {
    pub fn from_ib_enum(v: u8) -> Option<Mtu> {
        match v {
            1 => Some(Mtu(256)),
            2 => Some(Mtu(512)),
            3 => Some(Mtu(1024)),
            4 => Some(Mtu(2048)),
            5 => Some(Mtu(4096)),
            _ => None,
        }
    }
    pub fn ib_enum(self) -> u8 {
        match self.0 {
            256 => 1,
            512 => 2,
            1024 => 3,
            2048 => 4,
            _ => 5,
        }
    }
}

/// QP attributes (IBTA names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QpAttrs {
    pub pkey_index: u16,
    pub port: u8,
    pub qkey: u32,
    pub access: Access,
    pub path_mtu: Mtu,
    pub dest_qpn: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    /// Local ACK timeout exponent: 4.096 µs × 2^timeout (0 = infinite).
    pub timeout: u8,
    pub retry_cnt: u8,
    /// 7 = retry forever.
    pub rnr_retry: u8,
    /// RNR NAK timer code advertised to the requester.
    pub min_rnr_timer: u8,
    /// Outstanding RDMA READ/atomic as initiator.
    pub max_rd_atomic: u8,
    /// ... and as responder.
    pub max_dest_rd_atomic: u8,
    pub av: AddressVector,
}

impl Default for QpAttrs {
    fn default() -> Self {
        QpAttrs {
            pkey_index: 0,
            port: 1,
            qkey: 0,
            access: Access::default(),
            path_mtu: Mtu(4096),
            dest_qpn: 0,
            rq_psn: 0,
            sq_psn: 0,
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            min_rnr_timer: 0,
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            av: AddressVector::default(),
        }
    }
}

/// A change of attributes: only the `Some` fields are applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QpAttrUpdate {
    pub pkey_index: Option<u16>,
    pub port: Option<u8>,
    pub qkey: Option<u32>,
    pub access: Option<Access>,
    pub path_mtu: Option<Mtu>,
    pub dest_qpn: Option<u32>,
    pub rq_psn: Option<u32>,
    pub sq_psn: Option<u32>,
    pub timeout: Option<u8>,
    pub retry_cnt: Option<u8>,
    pub rnr_retry: Option<u8>,
    pub min_rnr_timer: Option<u8>,
    pub max_rd_atomic: Option<u8>,
    pub max_dest_rd_atomic: Option<u8>,
    pub av: Option<AddressVector>,
}

impl QpAttrs {
    pub fn apply(&mut self, u: &QpAttrUpdate) {
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = u.$f { self.$f = v; } )* };
        }
        set!(
            pkey_index,
            port,
            qkey,
            access,
            path_mtu,
            dest_qpn,
            rq_psn,
            sq_psn,
            timeout,
            retry_cnt,
            rnr_retry,
            min_rnr_timer,
            max_rd_atomic,
            max_dest_rd_atomic,
            av
        );
        self.rq_psn &= 0x00ff_ffff;
        self.sq_psn &= 0x00ff_ffff;
        self.dest_qpn &= 0x00ff_ffff;
    }
}

/// A QP state transition as the driver names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpTransition {
    RstToInit,
    InitToInit,
    InitToRtr,
    RtrToRts,
    RtsToRts,
    SqerrToRts,
    SqdToRts,
    RtsToSqd,
    ToErr,
    ToRst,
}

impl QpTransition {
    /// The state the QP must be in, None for "any".
    pub fn from_state(self) -> Option<QpState> {
        use QpTransition::*;
        Some(match self {
            RstToInit => QpState::Reset,
            InitToInit | InitToRtr => QpState::Init,
            RtrToRts => QpState::Rtr,
            RtsToRts | RtsToSqd => QpState::Rts,
            SqerrToRts => QpState::Sqe,
            SqdToRts => QpState::Sqd,
            ToErr | ToRst => return None,
        })
    }

    pub fn to_state(self) -> QpState {
        use QpTransition::*;
        match self {
            RstToInit | InitToInit => QpState::Init,
            InitToRtr => QpState::Rtr,
            RtrToRts | RtsToRts | SqerrToRts | SqdToRts => QpState::Rts,
            RtsToSqd => QpState::Sqd,
            ToErr => QpState::Err,
            ToRst => QpState::Reset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkey(tr: Translation, start: u64, length: u64) -> Mkey {
        Mkey {
            variant: 0x42,
            pd: 1,
            access: Access::LOCAL_WRITE | Access::REMOTE_READ,
            start,
            length,
            whole_space: false,
            translation: tr,
            free: false,
            uid: 0,
        }
    }

    #[test]
    fn mtt_translation_crosses_pages_and_checks_bounds() {
        // Region at VA 0x1800, length 0x2000, 4 KiB pages: pages cover 0x1000..0x4000.
        let k = mkey(Translation::Mtt { page_shift: 12, pages: vec![0xa000, 0x5000, 0x6000] }, 0x1800, 0x2000);
        assert_eq!(k.translate(0x1800, 0x10, 1, Access::REMOTE_READ), Ok(vec![(0xa800, 0x10)]));
        // Crosses page 0 → 1 (discontiguous), then 1 → 2 (contiguous, merged).
        assert_eq!(k.translate(0x1ff0, 0x1020, 1, Access::LOCAL_WRITE), Ok(vec![(0xaff0, 0x10), (0x5000, 0x1010)]));
        assert_eq!(k.translate(0x17ff, 1, 1, Access::LOCAL_READ), Err(KeyFault::Bounds));
        assert_eq!(k.translate(0x37ff, 2, 1, Access::LOCAL_READ), Err(KeyFault::Bounds));
        assert_eq!(k.translate(u64::MAX, 2, 1, Access::LOCAL_READ), Err(KeyFault::Bounds));
        assert_eq!(k.translate(0x1800, 1, 2, Access::LOCAL_READ), Err(KeyFault::WrongPd));
        assert_eq!(k.translate(0x1800, 1, 1, Access::REMOTE_WRITE), Err(KeyFault::Access));
        assert_eq!(k.translate(0x1800, 0, 1, Access::LOCAL_READ), Ok(vec![]));
    }

    #[test]
    fn mtt_shorter_than_length_is_a_bounds_fault_not_a_panic() {
        let k = mkey(Translation::Mtt { page_shift: 12, pages: vec![0x1000] }, 0, 0x3000);
        assert_eq!(k.translate(0x2000, 8, 1, Access::LOCAL_READ), Err(KeyFault::Bounds));
    }

    /// Fuzz finding (umr_wqe): a guest-written MTT entry at the top of the
    /// address space made the translation overflow instead of failing.
    #[test]
    fn mtt_page_at_the_top_of_the_space_is_a_bounds_fault() {
        let top: u64 = !0xfff;
        let k = mkey(Translation::Mtt { page_shift: 12, pages: vec![top, 0x5000] }, 0, 0x2000);
        assert_eq!(
            k.translate(0xff0, 0x20, 1, Access::LOCAL_READ),
            Err(KeyFault::Bounds),
            "runs past the end of the space"
        );
        assert_eq!(
            k.translate(0x10, 0x10, 1, Access::LOCAL_READ),
            Ok(vec![(top + 0x10, 0x10)]),
            "inside the last page"
        );
        assert_eq!(k.translate(0x1000, 0x10, 1, Access::LOCAL_READ), Ok(vec![(0x5000, 0x10)]));
    }

    #[test]
    fn physical_and_whole_space() {
        let mut k = mkey(Translation::Physical, 0, 0);
        k.whole_space = true;
        assert_eq!(k.translate(0x1234_5678, 8, 1, Access::LOCAL_READ), Ok(vec![(0x1234_5678, 8)]));
        k.free = true;
        assert_eq!(k.translate(0, 8, 1, Access::LOCAL_READ), Err(KeyFault::BadKey));
    }

    #[test]
    fn attr_update_masks_24_bit_fields() {
        let mut a = QpAttrs::default();
        a.apply(&QpAttrUpdate {
            rq_psn: Some(0x1ff_ffff),
            dest_qpn: Some(0xfff_0012),
            qkey: Some(7),
            ..Default::default()
        });
        assert_eq!((a.rq_psn, a.dest_qpn, a.qkey, a.sq_psn), (0xff_ffff, 0xff_0012, 7, 0));
    }
}
