//! Work-queue element codecs (`struct mlx5_wqe_ctrl_seg`, `mlx5_av`,
//! `mlx5_wqe_raddr_seg`, `mlx5_wqe_atomic_seg`, `mlx5_wqe_data_seg`, inline
//! segments). WQEs are copied out of guest memory first and parsed from the
//! copy; every length and count is checked against the copy.

use thiserror::Error;

/// Bytes of a WQE basic block.
pub const WQEBB: usize = 64;
/// Bytes of a data segment (DS).
pub const DS: usize = 16;
/// `MLX5_INVALID_LKEY`: receive scatter-list terminator.
pub const INVALID_LKEY: u32 = 0x100;
/// `MLX5_INLINE_SEG`.
pub const INLINE_SEG: u32 = 0x8000_0000;
/// `MLX5_WQE_CTRL_CQ_UPDATE`.
pub const CTRL_CQ_UPDATE: u8 = 0x08;
/// `MLX5_WQE_CTRL_SOLICITED`.
pub const CTRL_SOLICITED: u8 = 0x02;
/// Longest WQE the device accepts: 16 WQEBBs (`max_wqe_sz_sq` 1024).
pub const MAX_WQEBBS: usize = 16;

/// `MLX5_WQE_CTRL_*` fence modes (`fm_ce_se[7:5]`, `MLX5_FENCE_MODE_*`).
pub mod fence {
    pub const NONE: u8 = 0;
    pub const INITIATOR_SMALL: u8 = 1;
    pub const FENCE: u8 = 2;
    pub const STRONG_ORDERING: u8 = 3;
    pub const SMALL_AND_FENCE: u8 = 4;
}

/// `MLX5_OPCODE_*` (include/linux/mlx5/qp.h, rdma-core mlx5dv.h): every
/// send opcode a driver can write. Which ones the device executes on which
/// QP type is [`super::sq_ops::classify`]'s to say.
pub mod opcode {
    pub const NOP: u8 = 0x00;
    pub const SEND_INVAL: u8 = 0x01;
    pub const RDMA_WRITE: u8 = 0x08;
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    pub const SEND: u8 = 0x0a;
    pub const SEND_IMM: u8 = 0x0b;
    /// `MLX5_OPCODE_LSO` (kernel) / `MLX5_OPCODE_TSO` (rdma-core).
    pub const TSO: u8 = 0x0e;
    pub const RDMA_READ: u8 = 0x10;
    pub const ATOMIC_CS: u8 = 0x11;
    pub const ATOMIC_FA: u8 = 0x12;
    pub const ATOMIC_MASKED_CS: u8 = 0x14;
    pub const ATOMIC_MASKED_FA: u8 = 0x15;
    pub const BIND_MW: u8 = 0x18;
    pub const FMR: u8 = 0x19;
    pub const LOCAL_INVAL: u8 = 0x1b;
    pub const CONFIG_CMD: u8 = 0x1f;
    pub const SET_PSV: u8 = 0x20;
    pub const GET_PSV: u8 = 0x21;
    pub const CHECK_PSV: u8 = 0x22;
    pub const DUMP: u8 = 0x23;
    pub const UMR: u8 = 0x25;
    pub const RGET_PSV: u8 = 0x26;
    pub const RCHECK_PSV: u8 = 0x27;
    pub const TAG_MATCHING: u8 = 0x28;
    pub const ENHANCED_MPSW: u8 = 0x29;
    pub const FLOW_TBL_ACCESS: u8 = 0x2c;
    pub const ACCESS_ASO: u8 = 0x2d;
    pub const MMO: u8 = 0x2f;
}

/// A malformed WQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum WqeError {
    #[error("ds count {0} invalid")]
    BadDs(u8),
    #[error("segment runs past the WQE")]
    Truncated,
    #[error("inline data too long")]
    InlineTooLong,
}

pub(super) fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
pub(super) fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
pub(super) fn be64(b: &[u8], o: usize) -> u64 {
    u64::from_be_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// `struct mlx5_wqe_ctrl_seg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtrlSeg {
    pub opmod: u8,
    pub wqe_index: u16,
    pub opcode: u8,
    pub qpn: u32,
    pub ds: u8,
    pub fm_ce_se: u8,
    /// Immediate (network order kept as a BE32 value) or invalidate rkey.
    pub imm: u32,
}

impl CtrlSeg {
    /// `wr_id` layout of the engine's send WRs: WQE opcode and the WQE's index.
    pub fn send_wr_id(&self) -> u64 {
        ((self.opcode as u64) << 32) | self.wqe_index as u64
    }

    pub fn parse(b: &[u8; 16]) -> CtrlSeg {
        let a = be32(b, 0);
        let q = be32(b, 4);
        CtrlSeg {
            opmod: (a >> 24) as u8,
            wqe_index: (a >> 8) as u16,
            opcode: a as u8,
            qpn: q >> 8,
            ds: (q & 0x3f) as u8,
            fm_ce_se: b[11],
            imm: be32(b, 12),
        }
    }

    /// WQEBBs this WQE occupies.
    pub fn wqebbs(&self) -> usize {
        (self.ds as usize).div_ceil(4).max(1)
    }

    pub fn signaled(&self) -> bool {
        self.fm_ce_se & CTRL_CQ_UPDATE != 0
    }

    pub fn solicited(&self) -> bool {
        self.fm_ce_se & CTRL_SOLICITED != 0
    }

    /// The fence mode (`fm_ce_se[7:5]`, [`fence`]).
    pub fn fence_mode(&self) -> u8 {
        self.fm_ce_se >> 5
    }
}

/// `struct mlx5_av` as the UD datagram segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramSeg {
    pub qkey: u32,
    /// qkey bit31: use the QP's Q_Key.
    pub use_qp_qkey: bool,
    pub dqpn: u32,
    pub sl: u8,
    pub stat_rate: u8,
    pub src_path_bits: u8,
    pub rlid: u16,
    pub grh: bool,
    pub sgid_index: u8,
    pub tclass: u8,
    pub hop_limit: u8,
    pub flow_label: u32,
    pub rgid: [u8; 16],
    /// RoCE: destination MAC (0x14).
    pub rmac: [u8; 6],
    /// RoCEv2: UDP source port (the IB `rlid` slot, 0x0e).
    pub udp_sport: u16,
    /// RoCE: priority (`stat_rate_sl` bits 3:1).
    pub pcp: u8,
}

impl DatagramSeg {
    pub const SIZE: usize = 48;

    pub fn parse(b: &[u8]) -> Result<DatagramSeg, WqeError> {
        if b.len() < Self::SIZE {
            return Err(WqeError::Truncated);
        }
        let k = be32(b, 0);
        let g = be32(b, 0x1c);
        let mut rgid = [0u8; 16];
        rgid.copy_from_slice(&b[0x20..0x30]);
        Ok(DatagramSeg {
            qkey: k,
            use_qp_qkey: k & 0x8000_0000 != 0,
            dqpn: be32(b, 8) & 0x00ff_ffff,
            sl: b[0x0c] & 0xf,
            stat_rate: b[0x0c] >> 4,
            src_path_bits: b[0x0d] & 0x7f,
            rlid: be16(b, 0x0e),
            grh: g & (1 << 30) != 0,
            sgid_index: ((g >> 20) & 0xff) as u8,
            tclass: b[0x1a],
            hop_limit: b[0x1b],
            flow_label: g & 0xf_ffff,
            rgid,
            rmac: [b[0x14], b[0x15], b[0x16], b[0x17], b[0x18], b[0x19]],
            udp_sport: be16(b, 0x0e),
            pcp: (b[0x0c] >> 1) & 7,
        })
    }
}

/// One gather/scatter entry (a `mlx5_wqe_data_seg`): the engine's.
pub use vrnic_engine::verbs::Sge;

/// One data or inline segment of a send WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// `mlx5_wqe_data_seg`: bytes read through an lkey.
    Sge(Sge),
    /// `mlx5_wqe_inline_seg`: bytes carried in the WQE itself.
    Inline(Vec<u8>),
}

/// The local data of a send WQE: its data and inline segments in WQE order
/// (mlx5 lets a WQE mix them: UCX sends an inline header, then pointers).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Payload(pub Vec<Piece>);

impl Payload {
    /// Only data segments.
    pub fn gather(sges: Vec<Sge>) -> Payload {
        Payload(sges.into_iter().map(Piece::Sge).collect())
    }

    /// One inline segment.
    pub fn inline(d: Vec<u8>) -> Payload {
        Payload(vec![Piece::Inline(d)])
    }

    pub fn len(&self) -> u64 {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Sge(s) => s.length as u64,
                Piece::Inline(d) => d.len() as u64,
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Parses the data and inline segments that fill `b` (whole DS units), in
/// order. An inline segment (`byte_count` with [`INLINE_SEG`], then the
/// bytes) takes `align16(4 + n)` bytes; a data segment takes 16. An inline
/// count that runs past the WQE is refused.
pub fn parse_payload(b: &[u8]) -> Result<Payload, WqeError> {
    let mut pieces = Vec::with_capacity(b.len() / DS);
    let mut at = 0usize;
    while at < b.len() {
        let seg = &b[at..];
        if seg.len() < DS {
            return Err(WqeError::Truncated);
        }
        let word = be32(seg, 0);
        if word & INLINE_SEG != 0 {
            let n = (word & !INLINE_SEG) as usize;
            if n > seg.len() - 4 {
                return Err(WqeError::InlineTooLong);
            }
            pieces.push(Piece::Inline(seg[4..4 + n].to_vec()));
            at += (4 + n).next_multiple_of(DS);
        } else {
            pieces.push(Piece::Sge(Sge { length: word, lkey: be32(seg, 4), addr: be64(seg, 8) }));
            at += DS;
        }
    }
    Ok(Payload(pieces))
}

/// Parses a receive WQE's scatter list (stops at the `INVALID_LKEY` terminator).
pub fn parse_recv(b: &[u8]) -> Vec<Sge> {
    let mut v = Vec::new();
    for seg in b.chunks_exact(DS) {
        let lkey = be32(seg, 4);
        if lkey == INVALID_LKEY {
            break;
        }
        v.push(Sge { length: be32(seg, 0) & !INLINE_SEG, lkey, addr: be64(seg, 8) });
    }
    v
}

/// A decoded UD send WQE (special QPs and UD QPs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdSend {
    pub ctrl: CtrlSeg,
    pub av: DatagramSeg,
    pub payload: Payload,
}

/// Decodes a UD send WQE from its bytes (`ds * 16` of them, ctrl included).
pub fn parse_ud_send(w: &[u8]) -> Result<UdSend, WqeError> {
    let ctrl = CtrlSeg::parse(w.get(..16).ok_or(WqeError::Truncated)?.try_into().map_err(|_| WqeError::Truncated)?);
    let n = ctrl.ds as usize * DS;
    if ctrl.ds < 4 || n > w.len() {
        return Err(WqeError::BadDs(ctrl.ds));
    }
    let av = DatagramSeg::parse(&w[16..n])?;
    let payload = parse_payload(&w[16 + DatagramSeg::SIZE..n])?;
    Ok(UdSend { ctrl, av, payload })
}

/// `mlx5_wqe_raddr_seg`: remote address and key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaddrSeg {
    pub raddr: u64,
    pub rkey: u32,
}

/// `mlx5_wqe_atomic_seg`: swap/add and compare operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicSeg {
    pub swap_add: u64,
    pub compare: u64,
}

/// Any decoded send WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWqe {
    pub ctrl: CtrlSeg,
    /// UD: the address vector.
    pub av: Option<DatagramSeg>,
    /// XRC initiator: `mlx5_wqe_xrc_seg.xrc_srqn`, the remote XRC SRQ.
    pub xrc_srqn: Option<u32>,
    /// RDMA and atomics: the remote address.
    pub raddr: Option<RaddrSeg>,
    pub atomic: Option<AtomicSeg>,
    pub payload: Payload,
}

/// Decodes a send WQE (`ds * 16` bytes, ctrl included) for a datagram
/// (`ud` = true) or connected QP. Unknown opcodes are the caller's to refuse.
pub fn parse_send(w: &[u8], ud: bool) -> Result<SendWqe, WqeError> {
    parse_send_of(w, ud, false)
}

/// [`parse_send`] for an XRC initiator: a `mlx5_wqe_xrc_seg` (16 bytes, the
/// XRC SRQ number in its first big-endian word, 24 bits) follows the control
/// segment, then the segments of an RC WQE.
pub fn parse_send_xrc(w: &[u8]) -> Result<SendWqe, WqeError> {
    parse_send_of(w, false, true)
}

fn parse_send_of(w: &[u8], ud: bool, xrc: bool) -> Result<SendWqe, WqeError> {
    let ctrl = CtrlSeg::parse(w.get(..16).ok_or(WqeError::Truncated)?.try_into().map_err(|_| WqeError::Truncated)?);
    let n = ctrl.ds as usize * DS;
    if ctrl.ds == 0 || n > w.len() {
        return Err(WqeError::BadDs(ctrl.ds));
    }
    let body = &w[16..n];
    let mut at = 0usize;
    let mut take = |len: usize| -> Result<&[u8], WqeError> {
        let s = body.get(at..at + len).ok_or(WqeError::Truncated)?;
        at += len;
        Ok(s)
    };
    let av = if ud { Some(DatagramSeg::parse(take(DatagramSeg::SIZE)?)?) } else { None };
    let xrc_srqn = if xrc { Some(be32(take(DS)?, 0) & 0x00ff_ffff) } else { None };
    let mut raddr = None;
    let mut atomic = None;
    match ctrl.opcode {
        opcode::RDMA_WRITE | opcode::RDMA_WRITE_IMM | opcode::RDMA_READ | opcode::ATOMIC_CS | opcode::ATOMIC_FA
            if !ud =>
        {
            let r = take(DS)?;
            raddr = Some(RaddrSeg { raddr: be64(r, 0), rkey: be32(r, 8) });
            if matches!(ctrl.opcode, opcode::ATOMIC_CS | opcode::ATOMIC_FA) {
                let a = take(DS)?;
                atomic = Some(AtomicSeg { swap_add: be64(a, 0), compare: be64(a, 8) });
            }
        }
        _ => {}
    }
    let payload = parse_payload(&body[at..])?;
    Ok(SendWqe { ctrl, av, xrc_srqn, raddr, atomic, payload })
}

#[cfg(test)]
#[path = "wqe_tests.rs"]
mod tests;
