//! The responder's execute step ([`RespStep::Execute`]): SEND into the
//! receive WQE, RDMA WRITE through the R_Key, READ responses, atomics with
//! their replay record.
//! Every request reaching here passed the PSN, opcode, resource and R_Key
//! checks of `responder.rs`.

use super::super::instance::Engine;
use super::super::objects::Access;
use super::super::verbs::*;
use super::ack::response_bits;
use super::responder::{Req, RespStep};
use super::rq::{take_from_srq, take_recv};
use super::state::{deliver, resp_dest, Runtime, WriteInProgress, ATOMIC_REPLAY};
use super::xfer::{key_xfer, sgl_xfer, Xfer};
use crate::personality::Personality;
use vrnic_wire::aeth::{self, NakCode, Syndrome};
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::packet::{self, Headers};
use vrnic_wire::{atomic_eth, psn, reth};

const INVALID: RespStep = RespStep::Nak(NakCode::InvalidRequest, None);

impl<P: Personality> Engine<P> {
    /// A SEND packet: its payload into the receive WQE taken at the first.
    pub(super) fn exec_send(&mut self, req: &Req) -> RespStep {
        let (qpn, p) = (req.qpn, req.p);
        let h = &p.headers;
        let op = req.op;
        let Some(qp) = self.qps.obj_mut(qpn) else { return RespStep::Drop };
        let mtu = qp.attrs.path_mtu.0 as usize;
        if !op.is_last() && p.payload.len() != mtu {
            return INVALID;
        }
        let pd = req.pd;
        let Some(r) = qp.rt.recv.as_mut() else { return RespStep::Drop };
        if r.off as u64 + p.payload.len() as u64 > r.capacity {
            return RespStep::Nak(NakCode::InvalidRequest, Some(WcStatus::LocLenErr));
        }
        if let Err(err) = sgl_xfer(
            &self.mkeys,
            &*self.rt.io.mem,
            pd,
            &r.wr.sgl,
            r.off as u64,
            Xfer::Write(p.payload),
            Access::LOCAL_WRITE,
        ) {
            return RespStep::Nak(err.recv_nak(), Some(err.local_status()));
        }
        r.off += p.payload.len() as u32;
        if op.is_last() {
            let mut inv = None;
            if let Some(ie) = h.ieth {
                let ok = self
                    .mkeys
                    .get_mut(ie.rkey >> 8)
                    .filter(|m| m.variant == ie.rkey as u8 && m.pd == pd)
                    .map(|m| m.free = true);
                if ok.is_none() {
                    return RespStep::Nak(NakCode::InvalidRequest, Some(WcStatus::RemInvReqErr));
                }
                inv = Some(ie.rkey);
            }
            let Some(qp) = self.qps.obj_mut(qpn) else { return RespStep::Drop };
            let Some(r) = qp.rt.recv.take() else { return RespStep::Drop };
            qp.rt.msn = qp.rt.msn.wrapping_add(1);
            let c =
                Completion { srqn: r.xrc_srq, ..Completion::new(r.wr.wr_id, qpn, WcOpcode::Recv, WcStatus::Success) };
            self.complete_recv(req, c, r.off, inv);
        }
        RespStep::Acknowledge { psns: 1 }
    }

    /// Fills in a connected QP's receive completion `c` (length, immediate,
    /// invalidated key, the peer QP and LID, solicited) from the last packet's
    /// headers and delivers it to the QP's receive CQ (XRC: the XRC SRQ's CQ).
    fn complete_recv(&mut self, req: &Req, mut c: Completion, byte_len: u32, inv: Option<u32>) {
        let Some(qp) = self.qps.obj(req.qpn) else { return };
        let h = &req.p.headers;
        c.byte_len = byte_len;
        c.imm = h.immdt.map(|i| u32::from_be_bytes(i.imm));
        c.invalidated_rkey = inv;
        c.src_qp = qp.attrs.dest_qpn;
        c.slid = req.meta.src.lid;
        c.solicited = h.bth.solicited;
        let cq = match c.srqn {
            Some(s) => self.srqs.obj(s).and_then(|s| s.cqn),
            None => qp.recv_cq,
        };
        deliver(&mut self.cqs, &*self.rt.io.completions, cq, c);
    }

    /// An RDMA WRITE packet: its payload through the R_Key of the first.
    pub(super) fn exec_write(&mut self, req: &Req) -> RespStep {
        let (qpn, p) = (req.qpn, req.p);
        let h = &p.headers;
        let op = req.op;
        let Some(qp) = self.qps.obj_mut(qpn) else { return RespStep::Drop };
        let mtu = qp.attrs.path_mtu.0 as usize;
        let pd = req.pd;
        if op.is_first() {
            let Some(rh) = h.reth else { return INVALID };
            qp.rt.write = Some(WriteInProgress { va: rh.va, rkey: rh.rkey, len: rh.dma_len, off: 0 });
        }
        let Some(w) = qp.rt.write else { return INVALID };
        if (!op.is_last() && p.payload.len() != mtu) || w.off as u64 + p.payload.len() as u64 > w.len as u64 {
            return INVALID;
        }
        if !p.payload.is_empty() {
            if let Err(err) = key_xfer(
                &self.mkeys,
                &*self.rt.io.mem,
                pd,
                w.rkey,
                w.va.wrapping_add(w.off as u64),
                Xfer::Write(p.payload),
                Access::REMOTE_WRITE,
            ) {
                return RespStep::Nak(err.remote_nak(), None);
            }
        }
        let off = w.off + p.payload.len() as u32;
        if let Some(w) = qp.rt.write.as_mut() {
            w.off = off;
        }
        if op.is_last() {
            if off != w.len {
                return INVALID;
            }
            qp.rt.write = None;
            qp.rt.msn = qp.rt.msn.wrapping_add(1);
            if h.immdt.is_some() {
                let sink = &*self.rt.io.completions;
                let taken = match req.xrc_srq {
                    Some(s) => take_from_srq(&mut self.srqs, s, sink),
                    None => take_recv(qp, &mut self.srqs, sink).map(|(w, _)| w),
                };
                let Some(wr) = taken else { return RespStep::Rnr };
                let c = Completion {
                    srqn: req.xrc_srq,
                    ..Completion::new(wr.wr_id, qpn, WcOpcode::RecvRdmaWithImm, WcStatus::Success)
                };
                self.complete_recv(req, c, w.len, None);
            }
        }
        RespStep::Acknowledge { psns: 1 }
    }

    /// Answers an RDMA READ request (fresh or duplicate) from PSN `ps`.
    pub(super) fn exec_read(&mut self, qpn: u32, ps: u32, rh: reth::Repr, pd: u32) -> RespStep {
        let Some(qp) = self.qps.obj_mut(qpn) else { return RespStep::Drop };
        let mtu = qp.attrs.path_mtu.0 as u32;
        let n = rh.dma_len.div_ceil(mtu).max(1);
        let msn = qp.rt.msn.wrapping_add(1);
        let dest = resp_dest(&qp.attrs.av, &*self.rt.io.packets);
        let dqpn = qp.attrs.dest_qpn;
        let tb = response_bits(qp.qp_type);
        for i in 0..n {
            let off = i * mtu;
            let plen = (rh.dma_len - off.min(rh.dma_len)).min(mtu);
            let code = match (n == 1, i == 0, i + 1 == n) {
                (true, _, _) => Opcode::READ_RESPONSE_ONLY,
                (false, true, _) => Opcode::READ_RESPONSE_FIRST,
                (false, _, true) => Opcode::READ_RESPONSE_LAST,
                _ => Opcode::READ_RESPONSE_MIDDLE,
            };
            let mut h = Headers::new(bth::Repr {
                opcode: Opcode::new(tb, code),
                dest_qp: dqpn,
                psn: psn::add(ps, i),
                ..Default::default()
            });
            if code != Opcode::READ_RESPONSE_MIDDLE {
                h.aeth = Some(aeth::Repr {
                    syndrome: Syndrome::Ack { credits: aeth::CREDITS_UNLIMITED },
                    msn: msn & psn::PSN_MASK,
                });
            }
            let Runtime { io, buf, totals, .. } = &mut self.rt;
            let Ok(range) = packet::build(&h, plen as usize, buf) else { return RespStep::Drop };
            if plen > 0 {
                if let Err(err) = key_xfer(
                    &self.mkeys,
                    &*io.mem,
                    pd,
                    rh.rkey,
                    rh.va.wrapping_add(off as u64),
                    Xfer::Read(&mut buf[range]),
                    Access::REMOTE_READ,
                ) {
                    return RespStep::Nak(err.remote_nak(), None);
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
        RespStep::Acknowledge { psns: n }
    }

    /// An atomic at the address [`RespStep::CheckRkey`] translated; its
    /// original value is kept for a duplicate of the request.
    pub(super) fn exec_atomic(&mut self, req: &Req, a: atomic_eth::Repr) -> RespStep {
        let (qpn, ps, pa) = (req.qpn, req.ps, req.atomic_pa);
        let Some(qp) = self.qps.obj_mut(qpn) else { return RespStep::Drop };
        let mem = &*self.rt.io.mem;
        let r = if req.op.op() == Opcode::CMP_SWAP {
            mem.compare_and_swap_u64(pa, a.compare, a.swap_add)
        } else {
            mem.fetch_add_u64(pa, a.swap_add)
        };
        let Ok(orig) = r else { return RespStep::Nak(NakCode::RemoteOperationalError, None) };
        qp.rt.msn = qp.rt.msn.wrapping_add(1);
        if qp.rt.replay.len() >= ATOMIC_REPLAY {
            qp.rt.replay.pop_front();
        }
        qp.rt.replay.push_back((ps, orig));
        self.send_atomic_ack(qpn, ps, orig);
        RespStep::Acknowledge { psns: 1 }
    }
}
