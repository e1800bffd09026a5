//! The responder: PSN checks, duplicates, receive consumption, RDMA
//! WRITE/READ/atomics with key checks, atomic replay, coalesced ACKs, NAKs.

use super::super::objects::{Access, QpType};
use super::super::verbs::*;
use super::super::Engine;
use super::xfer::{key_xfer, lookup_key, sgl_capacity, sgl_xfer, Xfer};
use super::{deliver, resp_dest, send_header_only, RecvInProgress, Runtime, WriteInProgress, ATOMIC_REPLAY, MAX_MSG};
use crate::wire::aeth::{self, NakCode, Syndrome};
use crate::wire::bth::{self, Opcode};
use crate::wire::fabric::RxMeta;
use crate::wire::packet::{self, Headers, RocePacket};
use crate::wire::{atomic_ack_eth, psn, reth};

/// Outcome of an in-sequence request at the responder.
pub(super) enum Resp {
    /// Done; the PSN advances by `psns`.
    Ok { psns: u32 },
    /// No receive WQE.
    Rnr,
    /// Error: NAK (RC) and, if given, a receive completion with that status.
    Nak(NakCode, Option<WcStatus>),
    /// UC: drop the message silently.
    Drop,
}

impl Engine {
    // -------------------------------------------------------------- responder

    /// Sends an ACKNOWLEDGE with `syndrome` for PSN `p` on QP `qpn`.
    pub(super) fn send_ack(&mut self, qpn: u32, syndrome: Syndrome, p: u32) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let mut h = Headers::new(bth::Repr { opcode: Opcode::new(Opcode::RC, Opcode::ACKNOWLEDGE), dest_qp: qp.attrs.dest_qpn, psn: p, ..Default::default() });
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
            let Some(qp) = self.qps.get_mut(*qpn) else { continue };
            if !qp.rt.ack_pending || qp.qp_type != QpType::Rc {
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
        if let Some(qp) = self.qps.get_mut(qpn) {
            if !qp.rt.ack_pending {
                qp.rt.ack_pending = true;
                self.rt.ack_queue.push(qpn);
            }
        }
    }

    /// Takes a receive WQE from the QP's RQ or SRQ.
    pub(super) fn take_recv(&mut self, qpn: u32) -> Option<(RecvWr, bool)> {
        let qp = self.qps.get_mut(qpn)?;
        match qp.srq {
            None => qp.rt.rq.pop_front().map(|w| (w, false)),
            Some(s) => {
                let srq = self.srqs.get_mut(s)?;
                let w = srq.wqes.pop_front()?;
                if srq.limit > 0 && srq.wqes.len() < srq.limit as usize {
                    srq.limit = 0;
                    self.rt.io.completions.event(Event::SrqLimit { srqn: s });
                }
                Some((w, true))
            }
        }
    }

    pub(super) fn has_recv(&self, qpn: u32) -> bool {
        let Some(qp) = self.qps.get(qpn) else { return false };
        match qp.srq {
            None => !qp.rt.rq.is_empty(),
            Some(s) => self.srqs.get(s).is_some_and(|q| !q.wqes.is_empty()),
        }
    }

    /// RC/UC request packets.
    pub(super) fn responder(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let h = &p.headers;
        let ps = h.bth.psn;
        let op = h.bth.opcode;
        let rc = qp.qp_type == QpType::Rc;
        let d = psn::diff(ps, qp.rt.epsn);
        if rc {
            if d < 0 {
                count!(self.rt, qp, duplicates);
                self.duplicate(qpn, p);
                return;
            }
            if d > 0 {
                count!(self.rt, qp, out_of_sequence);
                if !qp.rt.nak_seq_sent && !qp.rt.rnr_nak_sent {
                    qp.rt.nak_seq_sent = true;
                    let e = qp.rt.epsn;
                    self.send_ack(qpn, Syndrome::Nak(NakCode::PsnSequenceError), e);
                }
                return;
            }
            qp.rt.nak_seq_sent = false;
            qp.rt.rnr_nak_sent = false;
        } else {
            if d != 0 {
                count!(self.rt, qp, out_of_sequence);
                // A packet went missing: the message in progress is dropped whole.
                if let Some(r) = qp.rt.recv.take() {
                    self.untake(qpn, r);
                }
                let Some(qp) = self.qps.get_mut(qpn) else { return };
                qp.rt.write = None;
                qp.rt.uc_dropping = !op.is_first();
            }
            let Some(qp) = self.qps.get_mut(qpn) else { return };
            qp.rt.epsn = ps;
            if qp.rt.uc_dropping && !op.is_first() {
                qp.rt.epsn = psn::add(ps, 1);
                return;
            }
            qp.rt.uc_dropping = false;
        }
        let r = if op.is_send() {
            self.resp_send(qpn, meta, p)
        } else if op.is_write() {
            self.resp_write(qpn, meta, p)
        } else if op.op() == Opcode::READ_REQUEST {
            let Some(rh) = h.reth else { return };
            self.resp_read(qpn, ps, rh)
        } else if op.is_atomic() {
            self.resp_atomic(qpn, p)
        } else {
            Resp::Nak(NakCode::InvalidRequest, None)
        };
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        match r {
            Resp::Ok { psns } => {
                qp.rt.epsn = psn::add(ps, psns);
                if rc && h.bth.ack_req && (op.is_send() || op.is_write()) {
                    self.want_ack(qpn);
                }
            }
            Resp::Rnr if rc => {
                qp.rt.rnr_nak_sent = true;
                let t = qp.attrs.min_rnr_timer;
                self.send_ack(qpn, Syndrome::RnrNak { timer: t }, ps);
            }
            Resp::Rnr | Resp::Drop => {
                count!(self.rt, qp, no_recv_drops);
                qp.rt.uc_dropping = true;
                qp.rt.epsn = psn::add(ps, 1);
                qp.rt.write = None;
            }
            Resp::Nak(code, recv_status) => {
                if !rc && recv_status.is_none() {
                    qp.rt.uc_dropping = true;
                    qp.rt.epsn = psn::add(ps, 1);
                    qp.rt.write = None;
                    return;
                }
                if rc {
                    self.send_ack(qpn, Syndrome::Nak(code), ps);
                }
                // The responder QP goes to ERR, with a receive completion
                // for the WQE the failed message used.
                let Some(qp) = self.qps.get_mut(qpn) else { return };
                if let Some(st) = recv_status {
                    if let Some(rp) = qp.rt.recv.take() {
                        let mut c = Completion::new(rp.wr.wr_id, qpn, WcOpcode::Recv, st);
                        c.src_qp = qp.attrs.dest_qpn;
                        let cq = qp.recv_cq;
                        deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
                    }
                }
                self.rt.io.completions.event(Event::QpFatal { qpn });
                self.enter_error(qpn);
            }
        }
    }

    /// Puts a taken receive WQE back (UC message abandoned).
    pub(super) fn untake(&mut self, qpn: u32, r: RecvInProgress) {
        if r.from_srq {
            let Some(s) = self.qps.get(qpn).and_then(|q| q.srq) else { return };
            if let Some(srq) = self.srqs.get_mut(s) {
                srq.wqes.push_front(r.wr);
            }
        } else if let Some(qp) = self.qps.get_mut(qpn) {
            qp.rt.rq.push_front(r.wr);
        }
    }

    pub(super) fn resp_send(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) -> Resp {
        let h = &p.headers;
        let op = h.bth.opcode;
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        let mtu = qp.attrs.path_mtu.0 as usize;
        if op.is_first() {
            if qp.rt.recv.is_some() || qp.rt.write.is_some() {
                return Resp::Nak(NakCode::InvalidRequest, None);
            }
            let Some((wr, from_srq)) = self.take_recv(qpn) else { return Resp::Rnr };
            let capacity = sgl_capacity(&wr.sgl);
            let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
            qp.rt.recv = Some(RecvInProgress { wr, from_srq, off: 0, capacity });
        } else if qp.rt.recv.is_none() {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        if !op.is_last() && p.payload.len() != mtu {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        let pd = qp.pd;
        let Some(r) = qp.rt.recv.as_mut() else { return Resp::Drop };
        if r.off as u64 + p.payload.len() as u64 > r.capacity {
            return Resp::Nak(NakCode::InvalidRequest, Some(WcStatus::LocLenErr));
        }
        if sgl_xfer(&self.mkeys, &*self.rt.io.mem, pd, &r.wr.sgl, r.off as u64, Xfer::Write(p.payload), Access::LOCAL_WRITE).is_err() {
            return Resp::Nak(NakCode::RemoteOperationalError, Some(WcStatus::LocProtErr));
        }
        r.off += p.payload.len() as u32;
        if op.is_last() {
            let mut inv = None;
            if let Some(ie) = h.ieth {
                let ok = self.mkeys.get_mut(ie.rkey >> 8).filter(|m| m.variant == ie.rkey as u8 && m.pd == pd).map(|m| m.free = true);
                if ok.is_none() {
                    return Resp::Nak(NakCode::InvalidRequest, Some(WcStatus::RemInvReqErr));
                }
                inv = Some(ie.rkey);
            }
            let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
            let Some(r) = qp.rt.recv.take() else { return Resp::Drop };
            qp.rt.msn = qp.rt.msn.wrapping_add(1);
            self.complete_recv(qpn, meta, h, Completion::new(r.wr.wr_id, qpn, WcOpcode::Recv, WcStatus::Success), r.off, inv);
        }
        Resp::Ok { psns: 1 }
    }

    /// Fills in a connected QP's receive completion `c` (length, immediate,
    /// invalidated key, the peer QP and LID, solicited) from the last packet's
    /// headers and delivers it to the QP's receive CQ.
    pub(super) fn complete_recv(&mut self, qpn: u32, meta: &RxMeta, h: &Headers, mut c: Completion, byte_len: u32, inv: Option<u32>) {
        let Some(qp) = self.qps.get(qpn) else { return };
        c.byte_len = byte_len;
        c.imm = h.immdt.map(|i| u32::from_be_bytes(i.imm));
        c.invalidated_rkey = inv;
        c.src_qp = qp.attrs.dest_qpn;
        c.slid = meta.src.lid;
        c.solicited = h.bth.solicited;
        let cq = qp.recv_cq;
        deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
    }

    pub(super) fn resp_write(&mut self, qpn: u32, meta: &RxMeta, p: &RocePacket) -> Resp {
        let h = &p.headers;
        let op = h.bth.opcode;
        let with_imm = h.immdt.is_some();
        // A WRITE with immediate needs a receive WQE: check before touching anything.
        if with_imm && !self.has_recv(qpn) {
            return Resp::Rnr;
        }
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        let mtu = qp.attrs.path_mtu.0 as usize;
        let pd = qp.pd;
        if op.is_first() {
            if qp.rt.recv.is_some() || qp.rt.write.is_some() {
                return Resp::Nak(NakCode::InvalidRequest, None);
            }
            let Some(rh) = h.reth else { return Resp::Nak(NakCode::InvalidRequest, None) };
            if rh.dma_len > 0 {
                let ok = qp.attrs.access.contains(Access::REMOTE_WRITE)
                    && lookup_key(&self.mkeys, rh.rkey).is_some_and(|k| k.translate(rh.va, rh.dma_len as u64, pd, Access::REMOTE_WRITE).is_ok());
                if !ok {
                    return Resp::Nak(NakCode::RemoteAccessError, None);
                }
            }
            qp.rt.write = Some(WriteInProgress { va: rh.va, rkey: rh.rkey, len: rh.dma_len, off: 0 });
        }
        let Some(w) = qp.rt.write else { return Resp::Nak(NakCode::InvalidRequest, None) };
        if (!op.is_last() && p.payload.len() != mtu) || w.off as u64 + p.payload.len() as u64 > w.len as u64 {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        if !p.payload.is_empty() {
            if let Err(code) = key_xfer(&self.mkeys, &*self.rt.io.mem, pd, w.rkey, w.va.wrapping_add(w.off as u64), Xfer::Write(p.payload), Access::REMOTE_WRITE) {
                return Resp::Nak(code, None);
            }
        }
        let off = w.off + p.payload.len() as u32;
        if let Some(w) = qp.rt.write.as_mut() {
            w.off = off;
        }
        if op.is_last() {
            if off != w.len {
                return Resp::Nak(NakCode::InvalidRequest, None);
            }
            qp.rt.write = None;
            qp.rt.msn = qp.rt.msn.wrapping_add(1);
            if with_imm {
                let Some((wr, _)) = self.take_recv(qpn) else { return Resp::Rnr };
                self.complete_recv(qpn, meta, h, Completion::new(wr.wr_id, qpn, WcOpcode::RecvRdmaWithImm, WcStatus::Success), w.len, None);
            }
        }
        Resp::Ok { psns: 1 }
    }

    /// Answers an RDMA READ request (fresh or duplicate) from PSN `ps`.
    pub(super) fn resp_read(&mut self, qpn: u32, ps: u32, rh: reth::Repr) -> Resp {
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        let pd = qp.pd;
        let mtu = qp.attrs.path_mtu.0 as u32;
        if rh.dma_len as u64 > MAX_MSG {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        if rh.dma_len > 0 {
            let ok = qp.attrs.access.contains(Access::REMOTE_READ)
                && lookup_key(&self.mkeys, rh.rkey).is_some_and(|k| k.translate(rh.va, rh.dma_len as u64, pd, Access::REMOTE_READ).is_ok());
            if !ok {
                return Resp::Nak(NakCode::RemoteAccessError, None);
            }
        }
        let n = rh.dma_len.div_ceil(mtu).max(1);
        let msn = qp.rt.msn.wrapping_add(1);
        let dest = resp_dest(&qp.attrs.av, &*self.rt.io.packets);
        let dqpn = qp.attrs.dest_qpn;
        for i in 0..n {
            let off = i * mtu;
            let plen = (rh.dma_len - off.min(rh.dma_len)).min(mtu);
            let code = match (n == 1, i == 0, i + 1 == n) {
                (true, _, _) => Opcode::READ_RESPONSE_ONLY,
                (false, true, _) => Opcode::READ_RESPONSE_FIRST,
                (false, _, true) => Opcode::READ_RESPONSE_LAST,
                _ => Opcode::READ_RESPONSE_MIDDLE,
            };
            let mut h = Headers::new(bth::Repr { opcode: Opcode::new(Opcode::RC, code), dest_qp: dqpn, psn: psn::add(ps, i), ..Default::default() });
            if code != Opcode::READ_RESPONSE_MIDDLE {
                h.aeth = Some(aeth::Repr { syndrome: Syndrome::Ack { credits: aeth::CREDITS_UNLIMITED }, msn: msn & psn::PSN_MASK });
            }
            let Runtime { io, buf, totals, .. } = &mut self.rt;
            let Ok(range) = packet::build(&h, plen as usize, buf) else { return Resp::Drop };
            if plen > 0 {
                if let Err(code) = key_xfer(&self.mkeys, &*io.mem, pd, rh.rkey, rh.va.wrapping_add(off as u64), Xfer::Read(&mut buf[range]), Access::REMOTE_READ) {
                    return Resp::Nak(code, None);
                }
            }
            io.packets.send(&dest, buf);
            totals.tx_packets += 1;
            totals.tx_bytes += buf.len() as u64;
            qp.rt.counters.tx_packets += 1;
            qp.rt.counters.tx_bytes += buf.len() as u64;
        }
        if psn::diff(ps, qp.rt.epsn) >= 0 {
            qp.rt.msn = msn;
        }
        Resp::Ok { psns: n }
    }

    pub(super) fn resp_atomic(&mut self, qpn: u32, p: &RocePacket) -> Resp {
        let Some(a) = p.headers.atomic_eth else { return Resp::Nak(NakCode::InvalidRequest, None) };
        let ps = p.headers.bth.psn;
        let Some(qp) = self.qps.get_mut(qpn) else { return Resp::Drop };
        if a.va % 8 != 0 {
            return Resp::Nak(NakCode::InvalidRequest, None);
        }
        if !qp.attrs.access.contains(Access::REMOTE_ATOMIC) {
            return Resp::Nak(NakCode::RemoteAccessError, None);
        }
        let Some(key) = lookup_key(&self.mkeys, a.rkey) else { return Resp::Nak(NakCode::RemoteAccessError, None) };
        let Ok(chunks) = key.translate(a.va, 8, qp.pd, Access::REMOTE_ATOMIC) else { return Resp::Nak(NakCode::RemoteAccessError, None) };
        let Some(&(pa, 8)) = chunks.first() else { return Resp::Nak(NakCode::InvalidRequest, None) };
        let mem = &*self.rt.io.mem;
        let r = if p.headers.bth.opcode.op() == Opcode::CMP_SWAP { mem.compare_and_swap_u64(pa, a.compare, a.swap_add) } else { mem.fetch_add_u64(pa, a.swap_add) };
        let Ok(orig) = r else { return Resp::Nak(NakCode::RemoteOperationalError, None) };
        qp.rt.msn = qp.rt.msn.wrapping_add(1);
        if qp.rt.replay.len() >= ATOMIC_REPLAY {
            qp.rt.replay.pop_front();
        }
        qp.rt.replay.push_back((ps, orig));
        self.send_atomic_ack(qpn, ps, orig);
        Resp::Ok { psns: 1 }
    }

    pub(super) fn send_atomic_ack(&mut self, qpn: u32, ps: u32, orig: u64) {
        let Some(qp) = self.qps.get_mut(qpn) else { return };
        let mut h = Headers::new(bth::Repr { opcode: Opcode::new(Opcode::RC, Opcode::ATOMIC_ACKNOWLEDGE), dest_qp: qp.attrs.dest_qpn, psn: ps, ..Default::default() });
        h.aeth = Some(aeth::Repr { syndrome: Syndrome::Ack { credits: aeth::CREDITS_UNLIMITED }, msn: qp.rt.msn & psn::PSN_MASK });
        h.atomic_ack_eth = Some(atomic_ack_eth::Repr { orig });
        let dest = resp_dest(&qp.attrs.av, &*self.rt.io.packets);
        send_header_only(&mut self.rt, &mut qp.rt.counters, &h, &dest);
    }

    /// An RC request with a PSN already seen.
    pub(super) fn duplicate(&mut self, qpn: u32, p: &RocePacket) {
        let h = &p.headers;
        let op = h.bth.opcode;
        if op.op() == Opcode::READ_REQUEST {
            if let Some(rh) = h.reth {
                // Read again (memory may have changed: so does hardware).
                let _ = self.resp_read(qpn, h.bth.psn, rh);
            }
        } else if op.is_atomic() {
            let Some(qp) = self.qps.get(qpn) else { return };
            if let Some(&(_, orig)) = qp.rt.replay.iter().find(|(ps, _)| *ps == h.bth.psn) {
                self.send_atomic_ack(qpn, h.bth.psn, orig);
            }
        } else {
            self.want_ack(qpn);
        }
    }
}
