//! The requester: the send cursor, the window, READ/atomic limits and
//! fences, and building request packets.

use super::super::instance::Engine;
use super::super::objects::QpState;
use super::super::verbs::*;
use super::gather::gather;
use super::state::{
    av_dest, transport_bits, wire_qpn, Runtime, SqEntry, ACK_EVERY, LINK_QUANTUM, MIN_CWND, WINDOW_PSNS,
};
use crate::personality::Personality;
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::packet::{self, Headers};
use vrnic_wire::{atomic_eth, deth, ieth, immdt, psn, reth, xrceth};

impl<P: Personality> Engine<P> {
    // -------------------------------------------------------------- requester

    /// Points the send cursor at PSN `p`.
    pub(super) fn seek(&mut self, qpn: u32, p: u32) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        let rt = &mut qp.rt;
        // A NOP (no PSN of its own) at `p` is where sending resumes.
        match rt.sq.iter().position(|e| e.covers(p) || (e.npkts == 0 && e.first_psn == p)) {
            Some(i) => {
                rt.cur = i;
                let e = &rt.sq[i];
                rt.cur_pkt = if e.wr.opcode.is_read_or_atomic() { 0 } else { psn::diff(p, e.first_psn) as u32 };
            }
            None => {
                // Past every entry (or before the first): resend from the front.
                let front_after = rt.sq.front().is_some_and(|e| psn::lt(p, e.first_psn));
                rt.cur = if front_after { 0 } else { rt.sq.len() };
                rt.cur_pkt = 0;
            }
        }
    }

    /// The links that held senders have credit again: the QPs waiting for
    /// them go on in the order they stopped, each for [`LINK_QUANTUM`]
    /// packets before it goes to the back of the line (a QP the link stops
    /// again waits there too), round after round while the link has credit.
    pub fn tx_ready(&mut self) {
        loop {
            let waiting = std::mem::take(&mut self.rt.link_waiters);
            if waiting.is_empty() {
                return;
            }
            let mut another_round = false;
            for qpn in waiting {
                match self.qps.obj_mut(qpn) {
                    Some(qp) if qp.rt.link_wait => qp.rt.link_wait = false,
                    _ => continue,
                }
                self.rt.quantum = Some(LINK_QUANTUM);
                self.rt.quantum_spent = false;
                self.progress(qpn);
                self.rt.quantum = None;
                another_round |= std::mem::take(&mut self.rt.quantum_spent);
            }
            if !another_round {
                return;
            }
        }
    }

    /// QP `qpn` waits for the link (`tx_ready`), at the back of the line.
    fn wait_for_link(&mut self, qpn: u32) {
        let Some(qp) = self.qps.obj_mut(qpn) else { return };
        if !qp.rt.link_wait {
            qp.rt.link_wait = true;
            count!(self.rt, qp, link_waits);
            self.rt.link_waiters.push_back(qpn);
        }
    }

    /// Sends whatever the window, limits and fences allow.
    pub(super) fn progress(&mut self, qpn: u32) {
        loop {
            let Some(qp) = self.qps.obj_mut(qpn) else { return };
            if qp.state != QpState::Rts || qp.rt.rnr_wait || qp.rt.link_wait {
                return;
            }
            let rt = &qp.rt;
            let Some(e) = rt.sq.get(rt.cur) else { return };
            if let Some(st) = e.err {
                if rt.cur == 0 {
                    self.fail_front(qpn, st);
                }
                return;
            }
            if e.wr.opcode == WrOpcode::Nop {
                // Completes in order: once every earlier WR has completed.
                if rt.cur != 0 {
                    return;
                }
                self.complete_front(qpn, WcStatus::Success, None);
                continue;
            }
            if qp.qp_type.is_reliable() {
                let p = if e.wr.opcode.is_read_or_atomic() {
                    psn::add(e.first_psn, e.resp_pkts)
                } else {
                    psn::add(e.first_psn, rt.cur_pkt)
                };
                if psn::diff(p, rt.unacked) >= rt.cwnd.clamp(MIN_CWND, WINDOW_PSNS) as i32 {
                    return;
                }
                if rt.cur_pkt == 0 {
                    let earlier_rd = rt.sq.iter().take(rt.cur).filter(|x| x.wr.opcode.is_read_or_atomic()).count();
                    if e.wr.fence && earlier_rd > 0 {
                        return;
                    }
                    if e.wr.opcode.is_read_or_atomic() && earlier_rd >= qp.attrs.max_rd_atomic.max(1) as usize {
                        return;
                    }
                }
            }
            if let Some(q) = self.rt.quantum {
                if q == 0 {
                    self.rt.quantum_spent = true;
                    return self.wait_for_link(qpn);
                }
                self.rt.quantum = Some(q - 1);
            }
            if !self.send_one(qpn) {
                return;
            }
        }
    }

    /// Sends the packet at the cursor and advances it. False if nothing was sent.
    pub(super) fn send_one(&mut self, qpn: u32) -> bool {
        let Some(qp) = self.qps.obj_mut(qpn) else { return false };
        let Some(tb) = transport_bits(qp.qp_type) else { return false };
        let mtu = qp.attrs.path_mtu.0 as u32;
        let pd = qp.pd;
        let qp_type = qp.qp_type;
        let reliable = qp_type.is_reliable();
        let my_qpn = wire_qpn(qpn, qp_type);
        let cur = qp.rt.cur;
        let cur_pkt = qp.rt.cur_pkt;
        let e = &qp.rt.sq[cur];
        let (dest, dqpn) = match &e.wr.ud {
            Some(u) if tb == Opcode::UD => (av_dest(&u.av, &*self.rt.io.packets), u.remote_qpn),
            _ => (av_dest(&qp.attrs.av, &*self.rt.io.packets), qp.attrs.dest_qpn),
        };
        let Some(dest) = dest else {
            // A global AV whose sgid_index names no GID: not sent.
            qp.rt.sq[cur].err = Some(WcStatus::LocQpOpErr);
            if cur == 0 {
                self.fail_front(qpn, WcStatus::LocQpOpErr);
            }
            return false;
        };
        // Link-level flow control: a link with no credit toward the peer holds
        // the requester (the QP waits in line for `tx_ready`) instead of
        // queueing packet after packet.
        if !self.rt.io.packets.ready(&dest) {
            self.wait_for_link(qpn);
            return false;
        }
        let qkey = qp.attrs.qkey;
        let Request { h, off, plen, last_pkt, psn_sent, psn_end } =
            request(e, cur_pkt, Wire { tb, mtu, reliable, dqpn, my_qpn, qkey });
        let Runtime { io, buf, totals, .. } = &mut self.rt;
        let range = match packet::build(&h, plen as usize, buf) {
            Ok(r) => r,
            Err(_) => return false,
        };
        // A rate-limited QP (RoCE congestion control) waits for its pacer:
        // the limiter's timer sends the packet (one branch when unlimited).
        if let Some(l) = qp.rt.limiter.as_deref_mut() {
            if let Err(at) = l.admit(io.clock.now_ns(), buf.len() as u64 + super::congestion::FRAME_OVERHEAD) {
                self.queue_timer(qpn, at);
                return false;
            }
        }
        let gathered = gather(&self.mkeys, &*io.mem, pd, &e.wr, off as u64, &mut buf[range]);
        if let Err(err) = gathered {
            let st = err.local_status();
            qp.rt.sq[cur].err = Some(st);
            if cur == 0 {
                self.fail_front(qpn, st);
            }
            return false;
        }
        io.packets.send(&dest, buf);
        qp.rt.counters.tx_packets += 1;
        qp.rt.counters.tx_bytes += buf.len() as u64;
        totals.tx_packets += 1;
        totals.tx_bytes += buf.len() as u64;
        let rt = &mut qp.rt;
        if reliable {
            if psn::lt(psn_sent, rt.max_sent) {
                rt.counters.retransmissions += 1;
                totals.retransmissions += 1;
            }
            if psn::lt(rt.max_sent, psn_end) {
                rt.max_sent = psn_end;
            }
        }
        if last_pkt {
            rt.cur += 1;
            rt.cur_pkt = 0;
        } else {
            rt.cur_pkt += 1;
        }
        if reliable {
            self.arm_ack_timer(qpn, false);
        } else if last_pkt {
            // UC/UD: complete once the last packet is out.
            self.complete_front(qpn, WcStatus::Success, None);
        }
        true
    }
}

/// What the next request packet of a QP is framed with.
struct Wire {
    /// The transport's BTH opcode bits (RC, UC, UD, XRC).
    tb: u8,
    mtu: u32,
    reliable: bool,
    dqpn: u32,
    /// The QPN the packet carries as its source (DETH).
    my_qpn: u32,
    /// The QP's own Q_Key (a UD WR's Q_Key with its high bit set asks for it).
    qkey: u32,
}

/// The request packet number `cur_pkt` of send-queue entry `e`: its headers,
/// where its payload sits in the message, whether it is the message's last,
/// its PSN and one past the PSNs it accounts for.
struct Request {
    h: Headers,
    off: u32,
    plen: u32,
    last_pkt: bool,
    psn_sent: u32,
    psn_end: u32,
}

fn request(e: &SqEntry, cur_pkt: u32, w: Wire) -> Request {
    let op = e.wr.opcode;
    let mut bth = bth::Repr { dest_qp: w.dqpn, ..Default::default() };
    let mut r = if op.is_read_or_atomic() {
        // The next READ request resumes after the responses received so far.
        let psn_sent = psn::add(e.first_psn, e.resp_pkts);
        bth.psn = psn_sent;
        bth.ack_req = true;
        let h = if op == WrOpcode::Read {
            let done = e.resp_pkts as u64 * w.mtu as u64;
            bth.opcode = Opcode::new(w.tb, Opcode::READ_REQUEST);
            let mut h = Headers::new(bth);
            h.reth = Some(reth::Repr {
                va: e.wr.remote_addr.wrapping_add(done),
                rkey: e.wr.rkey,
                dma_len: (e.len as u64).saturating_sub(done) as u32,
            });
            h
        } else {
            bth.opcode = Opcode::new(w.tb, if op == WrOpcode::CmpSwap { Opcode::CMP_SWAP } else { Opcode::FETCH_ADD });
            let mut h = Headers::new(bth);
            h.atomic_eth = Some(atomic_eth::Repr {
                va: e.wr.remote_addr,
                rkey: e.wr.rkey,
                swap_add: e.wr.swap_add,
                compare: e.wr.compare,
            });
            h
        };
        Request { h, off: 0, plen: 0, last_pkt: true, psn_sent, psn_end: psn::add(e.first_psn, e.npkts) }
    } else {
        let (n, i) = (e.npkts, cur_pkt);
        let (first, last) = (i == 0, i + 1 == n);
        let psn_sent = psn::add(e.first_psn, i);
        bth.psn = psn_sent;
        bth.opcode = Opcode::new(w.tb, send_write_opcode(op, n == 1, first, last));
        bth.solicited = last && e.wr.solicited;
        bth.ack_req = w.reliable && (last || (i + 1) % ACK_EVERY == 0);
        let mut h = Headers::new(bth);
        let is_send = matches!(op, WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv);
        if !is_send && first {
            h.reth = Some(reth::Repr { va: e.wr.remote_addr, rkey: e.wr.rkey, dma_len: e.len });
        }
        if last && matches!(op, WrOpcode::SendImm | WrOpcode::WriteImm) {
            h.immdt = Some(immdt::Repr { imm: e.wr.imm.to_be_bytes() });
        }
        if last && op == WrOpcode::SendInv {
            h.ieth = Some(ieth::Repr { rkey: e.wr.invalidate_rkey });
        }
        if w.tb == Opcode::UD {
            let u = e.wr.ud.unwrap_or_default();
            let qkey = if u.remote_qkey & 0x8000_0000 != 0 { w.qkey } else { u.remote_qkey };
            h.deth = Some(deth::Repr { qkey, src_qp: w.my_qpn });
        }
        let off = i * w.mtu;
        Request { h, off, plen: (e.len - off).min(w.mtu), last_pkt: last, psn_sent, psn_end: psn::add(psn_sent, 1) }
    };
    if w.tb == Opcode::XRC {
        // Every XRC request names the remote XRC SRQ (IBTA 9.3.6).
        r.h.xrceth = Some(xrceth::Repr { xrc_srq: e.wr.xrc_srqn });
    }
    r
}

/// The BTH opcode (less the transport bits) of a SEND or WRITE packet: the
/// message's only, first, middle or last.
fn send_write_opcode(op: WrOpcode, only: bool, first: bool, last: bool) -> u8 {
    let imm = matches!(op, WrOpcode::SendImm | WrOpcode::WriteImm);
    match op {
        WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv => match (only, first, last) {
            (true, _, _) if op == WrOpcode::SendInv => Opcode::SEND_ONLY_INV,
            (true, _, _) if imm => Opcode::SEND_ONLY_IMM,
            (true, _, _) => Opcode::SEND_ONLY,
            (false, true, _) => Opcode::SEND_FIRST,
            (false, _, true) if op == WrOpcode::SendInv => Opcode::SEND_LAST_INV,
            (false, _, true) if imm => Opcode::SEND_LAST_IMM,
            (false, _, true) => Opcode::SEND_LAST,
            (false, false, false) => Opcode::SEND_MIDDLE,
        },
        _ => match (only, first, last) {
            (true, _, _) if imm => Opcode::WRITE_ONLY_IMM,
            (true, _, _) => Opcode::WRITE_ONLY,
            (false, true, _) => Opcode::WRITE_FIRST,
            (false, _, true) if imm => Opcode::WRITE_LAST_IMM,
            (false, _, true) => Opcode::WRITE_LAST,
            (false, false, false) => Opcode::WRITE_MIDDLE,
        },
    }
}
