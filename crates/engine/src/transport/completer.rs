//! The completer: ACKs and NAKs, read responses and atomic ACKs arriving
//! at the requester, and send completions.

use super::super::instance::Engine;
use super::super::objects::{Access, QpState};
use super::super::verbs::*;
use super::demux::count_drop;
use super::state::{deliver, MIN_CWND, WINDOW_PSNS};
use super::timers::RNR_TIMER_US;
use super::xfer::{sgl_xfer, Xfer};
use crate::personality::Personality;
use vrnic_wire::aeth::{NakCode, Syndrome};
use vrnic_wire::bth::Opcode;
use vrnic_wire::packet::RocePacket;
use vrnic_wire::psn;

pub(super) fn nak_status(c: NakCode) -> WcStatus {
    match c {
        NakCode::InvalidRequest | NakCode::InvalidRdRequest | NakCode::PsnSequenceError => WcStatus::RemInvReqErr,
        NakCode::RemoteAccessError => WcStatus::RemAccessErr,
        NakCode::RemoteOperationalError => WcStatus::RemOpErr,
    }
}

impl<P: Personality> Engine<P> {
    /// Removes the oldest send WR; returns its completion (with its CQ) when
    /// one is due: signaled, or any error.
    fn take_front(&mut self, qpn: u32, status: WcStatus, extra: Option<u32>) -> Option<(Option<u32>, Completion)> {
        let qp = self.qps.obj_mut(qpn)?;
        let e = qp.rt.sq.pop_front()?;
        if qp.rt.cur == 0 {
            // The cursor was inside the completed entry: it moves to the next one's start.
            qp.rt.cur_pkt = 0;
        } else {
            qp.rt.cur -= 1;
        }
        if status == WcStatus::Success && !(e.wr.signaled || qp.sq_sig_all) {
            return None;
        }
        let mut c = Completion::new(e.wr.wr_id, qpn, WcOpcode::of(e.wr.opcode), status);
        c.byte_len = if status == WcStatus::Success { extra.unwrap_or(e.len) } else { 0 };
        c.src_qp = qp.attrs.dest_qpn;
        Some((qp.send_cq, c))
    }

    /// Completes the oldest send WR (signaled, or any error) and removes it.
    pub(super) fn complete_front(&mut self, qpn: u32, status: WcStatus, extra: Option<u32>) {
        if let Some((cq, c)) = self.take_front(qpn, status, extra) {
            deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
        }
    }

    /// The oldest send WR fails with `status`; the QP enters ERR.
    pub(super) fn fail_front(&mut self, qpn: u32, status: WcStatus) {
        let err = self.take_front(qpn, status, None);
        self.qp_fatal(qpn, err);
    }

    /// ACK (explicit or implied) of every PSN up to and including `p`.
    pub(super) fn ack_upto(&mut self, qpn: u32, p: u32) {
        loop {
            let Some(qp) = self.qps.obj_mut(qpn) else { return };
            let Some(e) = qp.rt.sq.front() else { break };
            // Not sent yet: told by its PSNs (never sent: not below max_sent),
            // not by the cursor, which a go-back rewinds over entries the
            // peer may have received already (their late ACK completes
            // them). A NOP, which has no PSN, is reached by the cursor.
            let unsent = match e.npkts {
                0 => qp.rt.cur == 0 && qp.rt.cur_pkt == 0,
                _ => !psn::lt(e.first_psn, qp.rt.max_sent),
            };
            if unsent && !e.wr.opcode.is_read_or_atomic() {
                break;
            }
            if !psn::le(e.last_psn(), p) {
                break;
            }
            if e.wr.opcode.is_read_or_atomic() {
                // Responses lost (a later PSN is acknowledged): read again.
                let again = psn::add(e.first_psn, e.resp_pkts);
                if qp.rt.goback_psn != Some(again) {
                    qp.rt.goback_psn = Some(again);
                    self.seek(qpn, again);
                }
                break;
            }
            self.complete_front(qpn, WcStatus::Success, None);
        }
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let mut na = psn::add(p, 1);
        if let Some(e) = qp.rt.sq.front() {
            if e.wr.opcode.is_read_or_atomic() {
                let r = psn::add(e.first_psn, e.resp_pkts);
                if psn::lt(r, na) {
                    na = r;
                }
            }
        }
        if psn::lt(qp.rt.unacked, na) {
            let newly = psn::diff(na, qp.rt.unacked) as u32;
            qp.rt.cwnd = (qp.rt.cwnd + newly).min(WINDOW_PSNS);
            qp.rt.unacked = na;
            qp.rt.retry_left = qp.attrs.retry_cnt;
            qp.rt.rnr_left = qp.attrs.rnr_retry;
            qp.rt.rx_held_since = None;
            // The cursor never points before what is acknowledged.
            let rt = &qp.rt;
            let behind = match rt.sq.get(rt.cur) {
                Some(c) if !c.wr.opcode.is_read_or_atomic() => psn::lt(psn::add(c.first_psn, rt.cur_pkt), na),
                _ => false,
            };
            if behind {
                self.seek(qpn, na);
            }
            self.arm_ack_timer(qpn, true);
        }
    }

    /// A packet of the requester's responses (ACK/NAK, read response, atomic ACK).
    pub(super) fn requester_rx(&mut self, qpn: u32, p: &RocePacket) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        if !qp.qp_type.is_reliable() || !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            count_drop(&mut self.rt.drops.bad_state);
            return;
        }
        let h = &p.headers;
        let ps = h.bth.psn;
        // Responses must be for PSNs in flight.
        if psn::lt(ps, qp.rt.unacked) || !psn::lt(ps, qp.rt.max_sent) {
            count!(self.rt, qp, duplicates);
            return;
        }
        let op = h.bth.opcode.op();
        if h.bth.opcode.is_read_response() {
            self.rx_read_response(qpn, p);
        } else if op == Opcode::ATOMIC_ACKNOWLEDGE {
            self.rx_atomic_ack(qpn, p);
        } else if let Some(a) = h.aeth {
            match a.syndrome {
                Syndrome::Ack { .. } => self.ack_upto(qpn, ps),
                Syndrome::RnrNak { timer } => {
                    self.ack_upto(qpn, psn::sub(ps, 1));
                    let Some(qp) = self.qps.obj_mut(qpn) else { return };
                    count!(self.rt, qp, rnr_nak_received);
                    if qp.attrs.rnr_retry != 7 {
                        if qp.rt.rnr_left == 0 {
                            self.fail_front(qpn, WcStatus::RnrRetryExcErr);
                            return;
                        }
                        qp.rt.rnr_left -= 1;
                    }
                    qp.rt.rnr_wait = true;
                    self.seek(qpn, ps);
                    let at = self.rt.io.clock.now_ns() + RNR_TIMER_US[(timer & 31) as usize] * 1000;
                    self.arm_timer(qpn, at);
                    return;
                }
                Syndrome::Nak(NakCode::PsnSequenceError) => {
                    self.ack_upto(qpn, psn::sub(ps, 1));
                    let Some(qp) = self.qps.obj_mut(qpn) else { return };
                    count!(self.rt, qp, nak_seq_received);
                    qp.rt.cwnd = (qp.rt.cwnd / 2).max(MIN_CWND);
                    self.seek(qpn, ps);
                }
                Syndrome::Nak(code) => {
                    self.ack_upto(qpn, psn::sub(ps, 1));
                    let Some(qp) = self.qps.obj_mut(qpn) else { return };
                    count!(self.rt, qp, nak_error_received);
                    self.fail_front(qpn, nak_status(code));
                    return;
                }
            }
        }
        self.progress(qpn);
    }

    /// Completes send/write WRs before entry `idx` (implicitly acknowledged by
    /// a response to it). False if a READ/atomic before it is still open.
    pub(super) fn complete_before(&mut self, qpn: u32, target_first: u32) -> bool {
        loop {
            let Some(qp) = self.qps.obj_mut(qpn) else { return false };
            let Some(e) = qp.rt.sq.front() else { return false };
            if e.first_psn == target_first {
                return true;
            }
            if e.wr.opcode.is_read_or_atomic() || !psn::lt(e.last_psn(), target_first) {
                return false;
            }
            self.complete_front(qpn, WcStatus::Success, None);
        }
    }

    pub(super) fn rx_read_response(&mut self, qpn: u32, p: &RocePacket) {
        let ps = p.headers.bth.psn;
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let Some(first) = qp.rt.sq.iter().find(|e| e.covers(ps)).map(|e| e.first_psn) else { return };
        if !self.complete_before(qpn, first) {
            return;
        }
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let mtu = qp.attrs.path_mtu.0 as u32;
        let pd = qp.pd;
        let e = &qp.rt.sq[0];
        if e.wr.opcode != WrOpcode::Read {
            return;
        }
        let expected = psn::add(e.first_psn, e.resp_pkts);
        if ps != expected {
            if psn::lt(expected, ps) && qp.rt.goback_psn != Some(expected) {
                // A response went missing: ask again from it.
                qp.rt.goback_psn = Some(expected);
                count!(self.rt, qp, out_of_sequence);
                self.seek(qpn, expected);
            }
            return;
        }
        let op = p.headers.bth.opcode.op();
        let off = e.resp_pkts * mtu;
        let remaining = e.len - off.min(e.len);
        let last = op == Opcode::READ_RESPONSE_LAST || op == Opcode::READ_RESPONSE_ONLY;
        // A READ re-issued from the middle is a new request whose responses
        // start with FIRST again; responses to the older request may still
        // arrive. Either carries the same bytes for the same PSN, so only the
        // lengths are checked.
        let len_ok =
            if last { p.payload.len() as u32 == remaining } else { p.payload.len() as u32 == mtu && remaining > mtu };
        if !len_ok {
            return; // malformed response: ignore, the timer recovers
        }
        if let Err(err) = sgl_xfer(
            &self.mkeys,
            &*self.rt.io.mem,
            pd,
            &e.wr.sgl,
            off as u64,
            Xfer::Write(p.payload),
            Access::LOCAL_WRITE,
        ) {
            self.fail_front(qpn, err.local_status());
            return;
        }
        qp.rt.sq[0].resp_pkts += 1;
        qp.rt.goback_psn = None;
        if last {
            let len = qp.rt.sq[0].len;
            let lp = qp.rt.sq[0].last_psn();
            self.complete_front(qpn, WcStatus::Success, Some(len));
            self.ack_upto(qpn, lp);
        } else {
            self.ack_upto(qpn, psn::sub(ps, 0));
            if let Some(qp) = self.qps.obj_mut(qpn) {
                qp.rt.unacked = psn::add(ps, 1);
            }
        }
    }

    pub(super) fn rx_atomic_ack(&mut self, qpn: u32, p: &RocePacket) {
        let ps = p.headers.bth.psn;
        let Some(orig) = p.headers.atomic_ack_eth.map(|a| a.orig) else { return };
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let Some(first) = qp.rt.sq.iter().find(|e| e.covers(ps)).map(|e| e.first_psn) else { return };
        if first != ps || !self.complete_before(qpn, first) {
            return;
        }
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let e = &qp.rt.sq[0];
        if !e.wr.opcode.is_atomic() {
            return;
        }
        // The byte order the original value lands in is the personality's.
        let bytes = self.rt.io.completions.atomic_result(orig);
        if let Err(err) =
            sgl_xfer(&self.mkeys, &*self.rt.io.mem, qp.pd, &e.wr.sgl, 0, Xfer::Write(&bytes), Access::LOCAL_WRITE)
        {
            self.fail_front(qpn, err.local_status());
            return;
        }
        self.complete_front(qpn, WcStatus::Success, Some(8));
        self.ack_upto(qpn, ps);
    }
}
