//! QP0 (SMI) and QP1 (GSI) on the InfiniBand fabric. The firmware executes
//! the special QPs' send queues and owns their receive queues
//! (`datagram.rs`); a MAD leaves through the engine's datagram send
//! (`Engine::send_datagram`: BTH + DETH, the same packet path a UD QP's
//! sends take) into the IB stage and the fabric port (`vrnic_subnet::stage`
//! takes what is the switch's or the SM's), and one arriving from the
//! fabric is checked here and delivered to this port's QP0/QP1 receive
//! queue. ib_mad then answers it (an SMP through MAD_IFC's SMA, a PerfMgt
//! Get through mlx5_ib's PMA) and sends the response back through the same
//! QP.
//!
//! The fabric carries what its packets carry: BTH onward (plus a GRH when
//! the address vector is global), routed by LID; there is no LRH, so the SL
//! (SL 15 / VL15 for SMPs) does not travel and a received MAD's CQE has SL 0.
//! Q_Key rules (IBTA 10.2.5, 13.5.3): QP0 ignores the Q_Key (sent as 0), QP1
//! only takes 0x80010000. Untrusted input: anything else addressed to QPN 0
//! or 1 is counted in `mad_wire_drops` (and PortRcvErrors) and dropped. A
//! port that is not ACTIVE takes SMPs only (INIT, ARMED: IBTA 7.2; QP1 in
//! ARMED too), a DOWN one nothing.

use std::sync::atomic::Ordering;

use tracing::debug;

use super::datagram::{Datagram, GSI_QKEY};
use super::mad::MAD_SIZE;
use crate::datapath::cqe::syndrome;
use crate::firmware::Firmware;
use vrnic_engine::transport::{pkey_matches, PKEY_TABLE};
use vrnic_engine::verbs::{OutDatagram, WcStatus};
use vrnic_engine::AddressVector;
use vrnic_fabric::RxMeta;
use vrnic_wire::bth::Opcode;
use vrnic_wire::packet::RocePacket;

/// Why a QP0/QP1 packet from the fabric was dropped (debug log only; all
/// are counted alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MadDrop {
    #[error("destination QP {0:#x} is not QP0 or QP1")]
    NotSpecialQp(u32),
    #[error("not a UD SEND_ONLY packet")]
    NotUdSend,
    #[error("headers do not parse")]
    Malformed,
    #[error("MAD of {0} bytes (want {MAD_SIZE})")]
    BadLength(usize),
    #[error("QP1 Q_Key {0:#x} is not the GSI Q_Key")]
    BadQkey(u32),
    #[error("P_Key {0:#06x} matches no table entry")]
    BadPkey(u16),
}

/// Checks one packet to QPN 0 or 1 from the fabric and turns it into the
/// datagram the special QP receives. Never panics on any input.
pub fn parse_mad_packet(meta: &RxMeta, pkt: &[u8]) -> Result<(u32, Datagram), MadDrop> {
    let p = RocePacket::parse(pkt).map_err(|_| MadDrop::Malformed)?;
    let h = p.headers;
    let imm = match h.bth.opcode {
        o if o == Opcode::new(Opcode::UD, Opcode::SEND_ONLY) => None,
        o if o == Opcode::new(Opcode::UD, Opcode::SEND_ONLY_IMM) => h.immdt.map(|i| u32::from_be_bytes(i.imm)),
        _ => return Err(MadDrop::NotUdSend),
    };
    let d = h.deth.ok_or(MadDrop::Malformed)?;
    let dqpn = h.bth.dest_qp;
    if dqpn > 1 {
        return Err(MadDrop::NotSpecialQp(dqpn));
    }
    if p.payload.len() != MAD_SIZE {
        return Err(MadDrop::BadLength(p.payload.len()));
    }
    if dqpn == 1 {
        if d.qkey != GSI_QKEY {
            return Err(MadDrop::BadQkey(d.qkey));
        }
        if !PKEY_TABLE.iter().any(|&k| pkey_matches(k, h.bth.pkey)) {
            return Err(MadDrop::BadPkey(h.bth.pkey));
        }
    }
    let dg = Datagram {
        src_qpn: d.src_qp,
        slid: meta.src.lid,
        sl: 0,
        qkey: d.qkey,
        solicited: h.bth.solicited,
        imm,
        data: p.payload.to_vec(),
        grh: meta.grh.map(|g| g.to_bytes()),
        on_wire: true,
    };
    Ok((dqpn, dg))
}

impl Firmware {
    /// A QP0/QP1 packet from the fabric (InfiniBand port): into the special
    /// QP's receive queue, or a counted drop.
    pub(crate) fn receive_mad(&mut self, meta: &RxMeta, pkt: &[u8]) {
        let c = &self.counters;
        match parse_mad_packet(meta, pkt) {
            Ok((dqpn, dg)) => {
                c.mad_wire_rcv.fetch_add(1, Ordering::Relaxed);
                let state = self.cfg.port_state;
                if state != 1 && (dqpn == 0 || state >= 3) {
                    self.deliver_local(dqpn, dg);
                }
            }
            Err(e) => {
                debug!(slid = meta.src.lid, "QP0/QP1 packet from the fabric dropped: {e}");
                c.mad_wire_drops.fetch_add(1, Ordering::Relaxed);
                c.rcv_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Sends a special QP's datagram out of the port (the IB stage, then the fabric).
    pub(super) fn send_mad(&mut self, av: &AddressVector, dqpn: u32, dg: &Datagram) -> Result<(), u8> {
        let d = OutDatagram {
            av,
            src_qp: dg.src_qpn,
            dest_qp: dqpn,
            // QP0 ignores the Q_Key; a GSI sender names QP1's.
            qkey: if dg.src_qpn == 0 { 0 } else { dg.qkey },
            pkey: PKEY_TABLE[0],
            solicited: dg.solicited,
            imm: dg.imm,
            payload: &dg.data,
        };
        match self.core.engine.send_datagram(&d) {
            Ok(()) => {
                self.counters.mad_wire_xmit.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(WcStatus::LocLenErr) => Err(syndrome::LOCAL_LENGTH_ERR),
            Err(_) => Err(syndrome::LOCAL_QP_OP_ERR),
        }
    }
}
