//! What goes in and out of the engine: abstract work requests (the mlx5
//! layer decodes WQEs into these), abstract completions and events (it
//! encodes them into CQEs and EQEs), and the sinks they go to.

use serde::Serialize;
use vrnic_wire::roce::NetHdr;

/// One scatter/gather element: `length` bytes at `addr` through key `lkey`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// Send work request operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrOpcode {
    /// No operation: sends nothing, completes in order (a signaled NOP
    /// completes successfully once every earlier WR has).
    Nop,
    Send,
    SendImm,
    /// SEND with invalidate of the remote key `invalidate_rkey`.
    SendInv,
    Write,
    WriteImm,
    Read,
    CmpSwap,
    FetchAdd,
}

impl WrOpcode {
    pub fn is_read_or_atomic(self) -> bool {
        matches!(self, WrOpcode::Read | WrOpcode::CmpSwap | WrOpcode::FetchAdd)
    }
    pub fn is_atomic(self) -> bool {
        matches!(self, WrOpcode::CmpSwap | WrOpcode::FetchAdd)
    }
}

/// Destination of a UD send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdDest {
    pub av: AddressVector,
    pub remote_qpn: u32,
    /// Used as is unless its top bit is set, then the QP's own Q_Key is used.
    pub remote_qkey: u32,
}

/// One datagram of a QP whose send queue the engine does not run (QP0 and
/// QP1 on an InfiniBand port, which the firmware executes): what goes on
/// the wire as a UD SEND_ONLY(_IMM) with a DETH (`Engine::send_datagram`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutDatagram<'a> {
    pub av: &'a AddressVector,
    /// DETH source QP: 0 (SMI) or 1 (GSI) for the special QPs.
    pub src_qp: u32,
    pub dest_qp: u32,
    /// DETH Q_Key as sent (the receiver's QP0 ignores it).
    pub qkey: u32,
    /// BTH P_Key.
    pub pkey: u16,
    pub solicited: bool,
    pub imm: Option<u32>,
    pub payload: &'a [u8],
}

/// A send work request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWr {
    /// Opaque to the engine (the mlx5 layer puts its WQE counter here).
    pub wr_id: u64,
    pub opcode: WrOpcode,
    /// The local data read through lkeys (or, for READ and atomics, written).
    pub sgl: Vec<Sge>,
    /// Data carried in the WR itself (copied out of the WQE): it comes
    /// before the SGL's data unless `order` says otherwise.
    pub inline: Option<Vec<u8>>,
    /// Where `inline` and `sgl` interleave (a WQE may mix inline and data
    /// segments in any order): the message is these runs, in order. Empty:
    /// all of `inline`, then all of `sgl` (pure inline, pure SGL, or an
    /// inline header before pointers).
    pub order: Vec<Run>,
    pub remote_addr: u64,
    pub rkey: u32,
    /// Immediate data (host value; travels big-endian).
    pub imm: u32,
    pub invalidate_rkey: u32,
    pub compare: u64,
    pub swap_add: u64,
    pub signaled: bool,
    pub solicited: bool,
    /// Wait for every earlier RDMA READ / atomic to complete first.
    pub fence: bool,
    pub ud: Option<UdDest>,
    /// XRC initiator: the remote XRC SRQ the message is for (its XRCETH).
    pub xrc_srqn: u32,
    /// The WQE could not be decoded: complete in order with this status.
    pub local_error: Option<WcStatus>,
}

impl SendWr {
    /// A plain SEND of `sgl` (unsignaled unless changed).
    pub fn new(wr_id: u64, opcode: WrOpcode, sgl: Vec<Sge>) -> SendWr {
        SendWr {
            wr_id,
            opcode,
            sgl,
            inline: None,
            order: Vec::new(),
            remote_addr: 0,
            rkey: 0,
            imm: 0,
            invalidate_rkey: 0,
            compare: 0,
            swap_add: 0,
            signaled: true,
            solicited: false,
            fence: false,
            ud: None,
            xrc_srqn: 0,
            local_error: None,
        }
    }

    /// Bytes the message carries (the read length for READ, 8 for atomics).
    pub fn length(&self) -> u64 {
        let inline = self.inline.as_ref().map_or(0, |d| d.len() as u64);
        self.sgl.iter().fold(inline, |n, s| n + s.length as u64)
    }
}

/// One run of a [`SendWr`]'s data when inline bytes and SGL entries interleave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// The next this many bytes of `inline`.
    Inline(u32),
    /// The next this many entries of `sgl`.
    Sges(u32),
}

/// A receive work request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecvWr {
    pub wr_id: u64,
    pub sgl: Vec<Sge>,
}

/// Completion status (IBTA names; the mlx5 layer maps them to syndromes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum WcStatus {
    Success,
    LocLenErr,
    LocQpOpErr,
    LocProtErr,
    WrFlushErr,
    RemInvReqErr,
    RemAccessErr,
    RemOpErr,
    RetryExcErr,
    RnrRetryExcErr,
}

/// What a completion completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WcOpcode {
    Send,
    RdmaWrite,
    RdmaRead,
    CompSwap,
    FetchAdd,
    /// A completed NOP (mlx5 `MLX5_OPCODE_NOP`; no IBTA counterpart).
    Nop,
    Recv,
    /// A receive consumed by RDMA WRITE with immediate.
    RecvRdmaWithImm,
}

impl WcOpcode {
    pub fn of(op: WrOpcode) -> WcOpcode {
        match op {
            WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv => WcOpcode::Send,
            WrOpcode::Write | WrOpcode::WriteImm => WcOpcode::RdmaWrite,
            WrOpcode::Read => WcOpcode::RdmaRead,
            WrOpcode::CmpSwap => WcOpcode::CompSwap,
            WrOpcode::FetchAdd => WcOpcode::FetchAdd,
            WrOpcode::Nop => WcOpcode::Nop,
        }
    }
    pub fn is_recv(self) -> bool {
        matches!(self, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm)
    }
}

/// An abstract completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub wr_id: u64,
    pub status: WcStatus,
    pub opcode: WcOpcode,
    pub byte_len: u32,
    pub qpn: u32,
    pub imm: Option<u32>,
    pub invalidated_rkey: Option<u32>,
    /// UD: the sender's QP number; RC/UC: the connected QP.
    pub src_qp: u32,
    pub slid: u16,
    /// UD: the packet carried a GRH, which the receive buffer's first 40
    /// bytes (the GRH area every UD receive reserves) now hold.
    pub grh: bool,
    /// The message asked for a solicited event.
    pub solicited: bool,
    /// UD: the network header the packet came with (CQE `roce_packet_type`).
    pub net: NetHdr,
    /// UD on RoCE: the 802.1Q TCI of a tagged frame (CQE `vlan_info`).
    pub vlan: Option<u16>,
    /// XRC target: the XRC SRQ whose receive WQE this completes (the CQE names it).
    pub srqn: Option<u32>,
}

impl Completion {
    pub fn new(wr_id: u64, qpn: u32, opcode: WcOpcode, status: WcStatus) -> Completion {
        Completion {
            wr_id,
            status,
            opcode,
            byte_len: 0,
            qpn,
            imm: None,
            invalidated_rkey: None,
            src_qp: 0,
            slid: 0,
            grh: false,
            solicited: false,
            net: NetHdr::Ib,
            vlan: None,
            srqn: None,
        }
    }
}

/// Events the engine reports (the mlx5 layer turns them into EQEs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A completion found the CQ full; it was dropped.
    CqError { cqn: u32 },
    /// The SRQ fell below its armed limit (the limit is now disarmed).
    SrqLimit { srqn: u32 },
    /// A QP on an SRQ entered the error state.
    LastWqeReached { qpn: u32 },
    /// The first packet arrived while the QP was in RTR.
    CommEstablished { qpn: u32 },
    /// The QP entered ERR because of an error completion.
    QpFatal { qpn: u32 },
}

/// Where completions and events go.
pub trait CompletionSink: Send + Sync {
    /// Completion number `index` (the CQ's producer count) of CQ `cqn`.
    fn complete(&self, cqn: u32, index: u32, c: &Completion);
    fn event(&self, ev: Event);
    /// The driver's consumer count of CQ `cqn` read now, as a full count
    /// near `producer`; asked when the CQ looks full by the last known
    /// count (the driver may have consumed since). None: not known.
    fn consumer(&self, _cqn: u32, _producer: u32) -> Option<u32> {
        None
    }
    /// The 8 bytes an atomic's original value `orig` lands as in the
    /// requester's buffer: the byte order is the personality's choice (the
    /// engine only knows the number). Default: little-endian host order.
    fn atomic_result(&self, orig: u64) -> [u8; 8] {
        orig.to_le_bytes()
    }
}

/// A sink that drops everything (an engine not yet attached).
pub struct NullSink;

impl CompletionSink for NullSink {
    fn complete(&self, _: u32, _: u32, _: &Completion) {}
    fn event(&self, _: Event) {}
}

impl vrnic_packet::PacketSink for NullSink {
    fn send(&self, _: &vrnic_packet::Dest, _: &mut [u8]) {}
}

/// Address vector: where a connected QP's packets go (or a UD WR's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressVector {
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub grh: bool,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub flow_label: u32,
    pub dgid: [u8; 16],
    pub port: u8,
    /// RoCE: the destination MAC (the path's `rmac`, the AV's `rmac`).
    pub dmac: [u8; 6],
    /// RoCEv2: the UDP source port (path/AV `udp_sport`; 0: the port picks one).
    pub udp_sport: u16,
    /// RoCE: the 802.1p priority of tagged frames (path `eth_prio`, AV `sl` bits 3:1).
    pub pcp: u8,
}
