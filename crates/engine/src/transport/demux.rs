//! Receive demultiplexing: parse, find the QP, check transport, state and
//! P_Key, answer congestion marks (IB: FECN; RoCE: ECN, `congestion.rs`), and hand the packet to the requester
//! side (responses) or the responder / UD receive (requests).

use super::super::instance::Engine;
use super::super::objects::{QpState, QpType};
use super::super::verbs::*;
use super::state::{transport_bits, Runtime};
use crate::personality::Personality;
use vrnic_packet::{Dest, NetHdr, RxMeta};
use vrnic_wire::bth::Opcode;
use vrnic_wire::congestion::CnpRepr;
use vrnic_wire::packet::{self, RocePacket};

/// The port's P_Key table: the single default partition, full membership
/// (what the SMA's P_KeyTable reports).
pub const PKEY_TABLE: [u16; 1] = [0xffff];

/// Whether a received packet (starting at its BTH) may take a receive WQE,
/// so the owner of the receive queue should hand over newly posted ones first.
pub fn consumes_recv(pkt: &[u8]) -> bool {
    pkt.first().is_some_and(|&op| vrnic_wire::bth::Opcode(op).consumes_recv())
}

/// IBTA 10.9.3 P_Key match: same partition number (low 15 bits, not the
/// invalid 0), and at least one side a full member.
pub fn pkey_matches(mine: u16, theirs: u16) -> bool {
    mine & 0x7fff == theirs & 0x7fff && mine & 0x7fff != 0 && (mine | theirs) & 0x8000 != 0
}

impl<P: Personality> Engine<P> {
    /// Handles one received packet (BTH through ICRC, ICRC already checked).
    pub fn receive(&mut self, meta: &RxMeta, bytes: &[u8]) {
        let Ok(p) = RocePacket::parse(bytes) else {
            count_drop(&mut self.rt.drops.malformed);
            return;
        };
        let h = p.headers;
        let dq = h.bth.dest_qp;
        if h.bth.opcode == Opcode::CNP {
            // Never completes anything: the reaction point's (`congestion.rs`).
            if CnpRepr::parse(bytes).is_err() {
                count_drop(&mut self.rt.drops.malformed);
                return;
            }
            self.cnp_receive(meta, dq, bytes.len());
            return;
        }
        let qpn = match dq {
            1 => self.qps.iter().find(|(_, q)| q.qp_type == QpType::Gsi).map(|(n, _)| n),
            0 => self.qps.iter().find(|(_, q)| q.qp_type == QpType::Smi).map(|(n, _)| n),
            n => self.qps.contains(n).then_some(n),
        };
        let Some(qpn) = qpn else {
            count_drop(&mut self.rt.drops.no_qp);
            return;
        };
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        count!(self.rt, qp, rx_packets);
        count!(self.rt, qp, rx_bytes, bytes.len() as u64);
        // An XRC initiator only sends requests, an XRC target only answers them.
        let wrong_end = match qp.qp_type {
            QpType::XrcInitiator => h.bth.opcode.is_request(),
            QpType::XrcTarget => !h.bth.opcode.is_request(),
            _ => false,
        };
        if transport_bits(qp.qp_type) != Some(h.bth.opcode.0 & 0xe0) || wrong_end {
            count_drop(&mut self.rt.drops.bad_transport);
            return;
        }
        if !matches!(qp.state, QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe) {
            count_drop(&mut self.rt.drops.bad_state);
            return;
        }
        let pkey_ok = match qp.qp_type {
            QpType::Smi => true,
            QpType::Gsi => PKEY_TABLE.iter().any(|&k| pkey_matches(k, h.bth.pkey)),
            _ => PKEY_TABLE.get(usize::from(qp.attrs.pkey_index)).is_some_and(|&k| pkey_matches(k, h.bth.pkey)),
        };
        if !pkey_ok {
            count_drop(&mut self.rt.drops.bad_pkey);
            return;
        }
        // The flow's source QP, where a congestion notification goes.
        let src_qp = match h.deth {
            Some(d) => d.src_qp,
            None => qp.attrs.dest_qpn,
        };
        if meta.net != NetHdr::Ib {
            // RoCE: ECN = CE in the IP header (the notification point).
            self.ecn_receive(qpn, meta, src_qp);
        } else if h.bth.fecn {
            // InfiniBand: FECN (congestion experienced): notify the sender's QP.
            count!(self.rt, qp, ecn_marked);
            count!(self.rt, qp, cnp_sent);
            let dest = Dest { lid: meta.src.lid, grh: meta.grh.map(|g| g.reply()), ..Default::default() };
            let Runtime { io, buf, .. } = &mut self.rt;
            if packet::build(&packet::cnp_headers(src_qp), 0, buf).is_ok() {
                io.packets.send(&dest, buf);
            }
        }
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        if h.bth.opcode.is_request() {
            if qp.state == QpState::Rtr && !qp.rt.comm_est {
                qp.rt.comm_est = true;
                self.rt.io.completions.event(Event::CommEstablished { qpn });
            }
            match qp.qp_type {
                QpType::Ud | QpType::Gsi | QpType::Smi => self.ud_receive(qpn, meta, &p),
                _ => self.responder(qpn, meta, &p),
            }
        } else {
            self.requester_rx(qpn, &p);
        }
    }
}

pub(super) fn count_drop(c: &mut u64) {
    *c += 1;
}
