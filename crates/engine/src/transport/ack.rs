//! Responses without payload from the responder: ACKs (coalesced to one
//! per receive burst), NAKs and atomic ACKs.

use super::super::instance::Engine;
use super::super::objects::QpType;
use super::state::{resp_dest, QpCounters, Runtime};
use crate::personality::Personality;
use vrnic_packet::Dest;
use vrnic_wire::aeth::{self, NakCode, Syndrome};
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::packet::{self, Headers};
use vrnic_wire::{atomic_ack_eth, psn};

/// The transport bits of a responder's responses: XRC for an XRC target, RC otherwise.
pub(super) fn response_bits(t: QpType) -> u8 {
    if t == QpType::XrcTarget {
        Opcode::XRC
    } else {
        Opcode::RC
    }
}

/// Builds and sends a packet without payload (ACK, NAK, atomic ACK),
/// counting it for the QP and the engine.
pub(super) fn send_header_only(rt: &mut Runtime, qc: &mut QpCounters, h: &Headers, dest: &Dest) {
    qc.tx_packets += 1;
    rt.totals.tx_packets += 1;
    if packet::build(h, 0, &mut rt.buf).is_ok() {
        rt.io.packets.send(dest, &mut rt.buf);
        rt.totals.tx_bytes += rt.buf.len() as u64;
        qc.tx_bytes += rt.buf.len() as u64;
    }
}

impl<P: Personality> Engine<P> {
    /// Sends an ACKNOWLEDGE with `syndrome` for PSN `p` on QP `qpn`.
    pub(super) fn send_ack(&mut self, qpn: u32, syndrome: Syndrome, p: u32) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let mut h = Headers::new(bth::Repr {
            opcode: Opcode::new(response_bits(qp.qp_type), Opcode::ACKNOWLEDGE),
            dest_qp: qp.attrs.dest_qpn,
            psn: p,
            ..Default::default()
        });
        h.aeth = Some(aeth::Repr { syndrome, msn: qp.rt.msn & psn::PSN_MASK });
        let dest = resp_dest(&qp.attrs.av, &*self.rt.io.packets);
        match syndrome {
            Syndrome::Nak(NakCode::PsnSequenceError) => count!(self.rt, qp, nak_seq_sent),
            Syndrome::Nak(NakCode::RemoteAccessError) => count!(self.rt, qp, nak_access_sent),
            Syndrome::Nak(NakCode::RemoteOperationalError) => count!(self.rt, qp, nak_op_sent),
            Syndrome::Nak(_) => count!(self.rt, qp, nak_inv_req_sent),
            Syndrome::RnrNak { .. } => count!(self.rt, qp, rnr_nak_sent),
            Syndrome::Ack { .. } => {}
        }
        send_header_only(&mut self.rt, &mut qp.rt.counters, &h, &dest);
    }

    /// Sends the coalesced ACKs (end of a receive burst).
    pub fn flush_acks(&mut self) {
        let q = std::mem::take(&mut self.rt.ack_queue);
        for qpn in &q {
            let Some(qp) = self.qps.obj_mut(*qpn) else { continue };
            if !qp.rt.ack_pending || !qp.qp_type.is_reliable() {
                continue;
            }
            qp.rt.ack_pending = false;
            let p = psn::sub(qp.rt.epsn, 1);
            self.send_ack(*qpn, Syndrome::Ack { credits: aeth::CREDITS_UNLIMITED }, p);
        }
        let mut q = q;
        q.clear();
        if self.rt.ack_queue.is_empty() {
            self.rt.ack_queue = q;
        }
    }

    pub(super) fn want_ack(&mut self, qpn: u32) {
        if let Some(qp) = self.qps.obj_mut(qpn) {
            if !qp.rt.ack_pending {
                qp.rt.ack_pending = true;
                self.rt.ack_queue.push(qpn);
            }
        }
    }

    pub(super) fn send_atomic_ack(&mut self, qpn: u32, ps: u32, orig: u64) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let mut h = Headers::new(bth::Repr {
            opcode: Opcode::new(response_bits(qp.qp_type), Opcode::ATOMIC_ACKNOWLEDGE),
            dest_qp: qp.attrs.dest_qpn,
            psn: ps,
            ..Default::default()
        });
        h.aeth = Some(aeth::Repr {
            syndrome: Syndrome::Ack { credits: aeth::CREDITS_UNLIMITED },
            msn: qp.rt.msn & psn::PSN_MASK,
        });
        h.atomic_ack_eth = Some(atomic_ack_eth::Repr { orig });
        let dest = resp_dest(&qp.attrs.av, &*self.rt.io.packets);
        send_header_only(&mut self.rt, &mut qp.rt.counters, &h, &dest);
    }
}
