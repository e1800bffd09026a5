//! An SQ's WQEs to frames on the link (owner: eth-tx).
//!
//! A send doorbell on an SQ (an engine QP of type `RawPacket`) runs the
//! firmware's SQ loop (`drain_fw_sq`: every WQE up to DBR[1] in order, a REQ
//! CQE for each CQ_UPDATE WQE, the first failing WQE an error CQE, the SQ to
//! ERR and the rest flushed) with [`Firmware::eth_tx_wqe`] executing each WQE:
//!
//! - NOP: no frame (a signaled NOP still completes: mlx5e kicks NAPI so);
//! - SEND: frame = inline headers ‖ data segments gathered through their
//!   lkeys; `cs_flags` → IPv4/TCP/UDP checksums; padded to 60 bytes;
//! - LSO: the `ihs` inline bytes are the headers, the data the payload, cut
//!   into `mss`-sized frames by `wire::offload::segment`;
//! - any other opcode, a malformed WQE, a bad lkey or an address outside
//!   the key: an error CQE (LOCAL_QP_OP_ERR, LOCAL_PROT_ERR, LOCAL_LENGTH_ERR).
//!
//! A frame whose headers the offloads cannot process, a plain SEND longer
//! than the MTU allows, a runt (< 14 bytes) or no link: the frame is dropped and counted, the
//! WQE completes normally (hardware does not fail a WQE on header content).
//! Frames go out on the link, and through the vport's local loopback
//! (`loopback.rs`: broadcast/multicast also, unicast to the port's own MAC
//! instead, to the TIRs the transport-domain and `self_lb_block` rules allow).

use tracing::{debug, warn};

use super::eth_seg::{self, DataSeg, EthSend};
use super::tx_state::EthTx;
use super::EthCx;
use crate::core::Core;
use crate::datapath::cqe::syndrome;
use crate::datapath::fw_sq::drain_fw_sq;
use crate::datapath::fw_sq::HasCore;
use crate::datapath::wqe::{opcode, CtrlSeg};
use crate::firmware::Firmware;
use vrnic_engine::{Access, QpType};
use vrnic_wire::offload;

/// Shortest frame on the wire without FCS (`ETH_ZLEN`): shorter ones are zero padded.
pub const MIN_FRAME: usize = 60;
/// Most bytes one WQE may gather (an LSO super-frame is at most 64 KiB, 256 KiB with headroom).
pub const MAX_WQE_BYTES: u64 = 256 << 10;
/// Ethernet header.
const ETH_HLEN: usize = 14;

impl Firmware {
    /// A send doorbell on an Ethernet SQ (see [`EthCx::drain_sq`]).
    pub(crate) fn drain_eth_sq(&mut self, sqn: u32) {
        if let Ok(mut cx) = self.eth_cx() {
            cx.drain_sq(sqn);
        }
    }
}

impl HasCore for EthCx<'_> {
    fn core(&mut self) -> &mut Core {
        self.core
    }
}

/// The Ethernet port's transmit path.
impl EthCx<'_> {
    /// A send doorbell on an Ethernet SQ: its WQEs up to DBR[1] through the
    /// firmware's SQ loop. A doorbell on an RQ (no send queue) is ignored.
    pub(crate) fn drain_sq(&mut self, sqn: u32) {
        if self.core.engine.qp(sqn).map(|e| &e.ext).is_none_or(|ctx| ctx.sq_entries == 0) {
            debug!(sqn, "send doorbell on a raw packet queue without a send queue ignored");
            return;
        }
        drain_fw_sq(self, sqn, |cx, sqn, w, ctrl| cx.tx_wqe(sqn, w, ctrl));
    }

    /// Executes one Ethernet send WQE `w` (whole, as copied); `Err` is the
    /// error CQE's syndrome.
    pub(crate) fn tx_wqe(&mut self, sqn: u32, w: &[u8], ctrl: &CtrlSeg) -> Result<(), u8> {
        match ctrl.opcode {
            opcode::NOP => {
                self.eth.tx.bump(sqn, |c| c.nops += 1);
                Ok(())
            }
            opcode::SEND | opcode::TSO => {
                let s = eth_seg::parse(w, ctrl).map_err(|e| {
                    warn!(sqn, wqe = ctrl.wqe_index, ds = ctrl.ds, "Ethernet send WQE not executed: {e}");
                    syndrome::LOCAL_QP_OP_ERR
                })?;
                let frame = self.eth_gather(sqn, &s)?;
                if ctrl.opcode == opcode::TSO {
                    self.eth_lso(sqn, &s, frame);
                } else {
                    self.eth_send(sqn, &s, frame);
                }
                Ok(())
            }
            op => {
                warn!(sqn, opcode = op, wqe = ctrl.wqe_index, "send opcode not executed on an Ethernet SQ");
                Err(syndrome::LOCAL_QP_OP_ERR)
            }
        }
    }

    /// The frame a WQE describes: inline bytes ‖ its data segments read
    /// through their lkeys (in the SQ's PD).
    fn eth_gather(&self, sqn: u32, s: &EthSend) -> Result<Vec<u8>, u8> {
        let total = s.len();
        if total > MAX_WQE_BYTES {
            warn!(sqn, total, "Ethernet send WQE too long");
            return Err(syndrome::LOCAL_LENGTH_ERR);
        }
        let pd = match self.core.engine.qp(sqn) {
            Some(q) if q.qp_type == QpType::RawPacket => q.pd,
            _ => return Err(syndrome::LOCAL_QP_OP_ERR),
        };
        let mut out = Vec::with_capacity(total as usize);
        out.extend_from_slice(&s.inline);
        for d in &s.data {
            self.eth_read_seg(d, pd, &mut out).inspect_err(|_| {
                warn!(sqn, lkey = d.lkey, addr = d.addr, len = d.len, "Ethernet send data segment refused");
            })?;
        }
        Ok(out)
    }

    fn eth_read_seg(&self, d: &DataSeg, pd: u32, out: &mut Vec<u8>) -> Result<(), u8> {
        if d.len == 0 {
            return Ok(());
        }
        let chunks = (self.core.engine)
            .translate_key(d.lkey, d.addr, d.len as u64, pd, Access::LOCAL_READ)
            .map_err(|_| syndrome::LOCAL_PROT_ERR)?;
        for (pa, n) in chunks {
            let start = out.len();
            out.resize(start + n as usize, 0);
            self.core.mem.read(pa, &mut out[start..]).map_err(|_| syndrome::LOCAL_PROT_ERR)?;
        }
        Ok(())
    }

    /// A plain SEND: checksums, MTU check, padding, out.
    fn eth_send(&mut self, sqn: u32, s: &EthSend, mut frame: Vec<u8>) {
        if frame.len() < ETH_HLEN {
            debug!(sqn, len = frame.len(), "frame shorter than an Ethernet header dropped");
            self.eth.tx.bump(sqn, |c| {
                c.runts += 1;
                c.drops += 1;
            });
            return;
        }
        if s.csum_l3 || s.csum_l4 {
            self.eth.tx.bump(sqn, |c| c.csum_offloads += 1);
            if let Err(e) = offload::fill_checksums(&mut frame, s.csum_l3, s.csum_l4) {
                debug!(sqn, "checksum offload refused the frame: {e}");
                self.eth.tx.bump(sqn, |c| {
                    c.offload_errors += 1;
                    c.drops += 1;
                });
                return;
            }
        }
        if frame.len() > EthTx::max_frame(self.eth.vport.mtu) {
            debug!(sqn, len = frame.len(), "frame longer than the MTU dropped");
            self.eth.tx.bump(sqn, |c| {
                c.oversize += 1;
                c.drops += 1;
            });
            return;
        }
        self.eth_transmit(sqn, frame);
    }

    /// An LSO WQE: the inline bytes are the headers of every segment.
    fn eth_lso(&mut self, sqn: u32, s: &EthSend, frame: Vec<u8>) {
        self.eth.tx.bump(sqn, |c| c.tso_wqes += 1);
        let segs = match offload::segment(&frame, s.inline.len(), s.mss) {
            Ok(v) => v,
            Err(e) => {
                debug!(sqn, mss = s.mss, ihs = s.inline.len(), "LSO refused the frame: {e}");
                self.eth.tx.bump(sqn, |c| {
                    c.offload_errors += 1;
                    c.drops += 1;
                });
                return;
            }
        };
        for f in segs {
            let n = f.len().max(MIN_FRAME) as u64;
            if self.eth_transmit(sqn, f) {
                self.eth.tx.bump(sqn, |c| {
                    c.tso_packets += 1;
                    c.tso_bytes += n;
                });
            }
        }
    }

    /// Pads a frame to [`MIN_FRAME`] and hands it to the link; false when
    /// there is none (counted).
    fn eth_transmit(&mut self, sqn: u32, mut frame: Vec<u8>) -> bool {
        if frame.len() < MIN_FRAME {
            frame.resize(MIN_FRAME, 0);
        }
        let route = self.loopback(sqn, &frame);
        if route.looped {
            self.eth.tx.bump(sqn, |c| c.loopback += 1);
        }
        if !route.wire {
            self.eth.tx.bump(sqn, |c| {
                c.packets += 1;
                c.bytes += frame.len() as u64;
            });
            self.eth.vport.counters.count_tx(&frame);
            return true;
        }
        let Some(link) = self.eth.link.clone() else {
            self.eth.tx.bump(sqn, |c| {
                c.no_link += 1;
                c.drops += 1;
            });
            return false;
        };
        link.send_frame(&frame);
        self.eth.tx.bump(sqn, |c| {
            c.packets += 1;
            c.bytes += frame.len() as u64;
        });
        self.eth.vport.counters.count_tx(&frame);
        true
    }
}

impl Firmware {
    /// The Ethernet transmit counters (the control socket's `stats`; `None` on an InfiniBand port).
    pub fn eth_tx(&self) -> Option<&EthTx> {
        self.port.eth().map(|e| &e.tx)
    }

    /// The Ethernet transmit counters, to set them in tests of other layers.
    #[doc(hidden)]
    pub fn eth_tx_mut(&mut self) -> Option<&mut EthTx> {
        self.port.eth_mut().map(|e| &mut e.tx)
    }
}
