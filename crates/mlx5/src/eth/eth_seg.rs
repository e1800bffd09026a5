//! The Ethernet send WQE (`struct mlx5e_tx_wqe`) after its control segment:
//! the eth segment (`struct mlx5_wqe_eth_seg`: checksum flags, LSO `mss`,
//! the inlined headers) and the data segments. Parsed from a copy of the
//! whole WQE; `ds` bounds everything.

use thiserror::Error;

use crate::datapath::wqe::{CtrlSeg, DS, INLINE_SEG};

/// `MLX5_ETH_WQE_L3_CSUM`.
pub const CS_L3: u8 = 0x40;
/// `MLX5_ETH_WQE_L4_CSUM`.
pub const CS_L4: u8 = 0x80;
/// `MLX5_ETH_WQE_L3_INNER_CSUM | MLX5_ETH_WQE_L4_INNER_CSUM` (tunnels: not advertised).
pub const CS_INNER: u8 = 0x30;
/// Byte offset of the eth segment in the WQE.
const ETH_SEG: usize = 0x10;
/// Byte offset of `inline_hdr.start`.
const INLINE_START: usize = 0x1e;
/// Inline bytes that fit in the eth segment itself (`MLX5E_INL_HDR_START_SZ`).
const INLINE_IN_SEG: usize = 2;
/// `inline_hdr.sz`: the header size bits.
const IHS_MASK: u16 = 0x3ff;
/// `insert.type` `MLX5_ETH_WQE_INSERT_VLAN` (VLAN insertion: `wqe_vlan_insert` not advertised).
const INSERT_VLAN: u16 = 0x8000;

/// A send WQE the device cannot execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EthWqeError {
    #[error("ds count {0} too small or past the WQE")]
    BadDs(u8),
    #[error("inline headers run past the ds count")]
    InlinePastDs,
    #[error("VLAN insertion not supported")]
    VlanInsert,
    #[error("software parser / tunnel offload not supported")]
    Tunnel,
    #[error("inline data segment not supported")]
    InlineDataSeg,
}

/// One data segment (`struct mlx5_wqe_data_seg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSeg {
    pub len: u32,
    pub lkey: u32,
    pub addr: u64,
}

/// A parsed Ethernet send WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthSend {
    /// `cs_flags` L3 (IPv4 header checksum).
    pub csum_l3: bool,
    /// `cs_flags` L4 (TCP/UDP checksum).
    pub csum_l4: bool,
    /// LSO segment payload size (0: none).
    pub mss: u16,
    /// The inlined first bytes of the frame (`ihs` of them).
    pub inline: Vec<u8>,
    /// The rest of the frame, in order.
    pub data: Vec<DataSeg>,
}

impl EthSend {
    /// Bytes of the frame before any offload (inline + data), saturating.
    pub fn len(&self) -> u64 {
        self.data.iter().fold(self.inline.len() as u64, |n, d| n.saturating_add(d.len as u64))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

/// Parses a SEND or LSO WQE `w` (the whole WQE as copied, control segment
/// first) whose control segment is `ctrl`: the eth segment, its inline
/// headers (`ceil((ihs − 2) / 16)` more units) and `ds` − 2 − that many
/// data segments.
pub fn parse(w: &[u8], ctrl: &CtrlSeg) -> Result<EthSend, EthWqeError> {
    let ds = ctrl.ds as usize;
    if ds < 2 || ds * DS > w.len() {
        return Err(EthWqeError::BadDs(ctrl.ds));
    }
    let w = &w[..ds * DS];
    let swp = &w[ETH_SEG..ETH_SEG + 4];
    let cs_flags = w[ETH_SEG + 4];
    let swp_flags = w[ETH_SEG + 5];
    if swp.iter().any(|&b| b != 0) || swp_flags != 0 || cs_flags & CS_INNER != 0 {
        return Err(EthWqeError::Tunnel);
    }
    let mss = be16(w, ETH_SEG + 6);
    let sz = be16(w, ETH_SEG + 0xc);
    if sz & INSERT_VLAN != 0 {
        return Err(EthWqeError::VlanInsert);
    }
    let ihs = (sz & IHS_MASK) as usize;
    let extra = ihs.saturating_sub(INLINE_IN_SEG).div_ceil(DS);
    let data_start = 2 + extra;
    if data_start > ds {
        return Err(EthWqeError::InlinePastDs);
    }
    let inline = w[INLINE_START..INLINE_START + ihs].to_vec();
    let data = w[data_start * DS..]
        .chunks_exact(DS)
        .map(|d| {
            let len = be32(d, 0);
            if len & INLINE_SEG != 0 {
                return Err(EthWqeError::InlineDataSeg);
            }
            Ok(DataSeg { len, lkey: be32(d, 4), addr: u64::from_be_bytes(d[8..16].try_into().expect("8 bytes")) })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EthSend { csum_l3: cs_flags & CS_L3 != 0, csum_l4: cs_flags & CS_L4 != 0, mss, inline, data })
}
