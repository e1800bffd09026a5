//! Verbs objects: PD, XRCD, UAR, EQ, CQ, SRQ and QP (memory keys: `mkey.rs`), with the state and
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
