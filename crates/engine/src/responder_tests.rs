//! The responder's step sequence: request packets injected into b's engine,
//! the steps each went through (`Runtime::resp_trace`), what b answered
//! (captured in a's place) and what it counted.

use std::sync::Mutex;

use super::test_support::*;
use super::transport::RespStep::{self, *};
use super::*;
use vrnic_fabric::{PacketHandler, RxMeta};
use vrnic_wire::aeth::{NakCode, Syndrome};
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::packet::{self, Headers, RocePacket};
use vrnic_wire::{psn, reth};

/// b's expected PSN after `Pair::qps` (see `conn`).
const EPSN: u32 = 0xfffff0;

/// Stands in for a: keeps every packet b sends it.
#[derive(Default)]
struct Capture(Mutex<Vec<Vec<u8>>>);

impl PacketHandler for Capture {
    fn receive(&self, _: &RxMeta, pkt: &[u8]) {
        self.0.lock().unwrap().push(pkt.to_vec());
    }
}

impl Capture {
    /// The headers and payload of every captured packet, oldest first; forgets them.
    fn take(&self) -> Vec<(Headers, Vec<u8>)> {
        let v = std::mem::take(&mut *self.0.lock().unwrap());
        v.iter()
            .map(|b| {
                let p = RocePacket::parse(b).unwrap();
                (p.headers, p.payload.to_vec())
            })
            .collect()
    }
}

struct Rig {
    p: Pair,
    qb: u32,
    cap: Capture,
}

impl Rig {
    fn new(t: QpType) -> Rig {
        let p = Pair::new(1 << 16, &[]);
        let (_qa, qb) = p.qps(t, 1024);
        Rig { p, qb, cap: Capture::default() }
    }

    /// Injects a request with `op` (RC or UC by the QP), PSN `psn`, the
    /// given extension headers and payload into b; returns the steps it took
    /// and what b sent back.
    fn inject(
        &self,
        op: u8,
        psn: u32,
        fill: impl FnOnce(&mut Headers),
        payload: &[u8],
    ) -> (Vec<RespStep>, Vec<(Headers, Vec<u8>)>) {
        let tb = match self.p.b.eng.lock().qps.obj(self.qb).unwrap().qp_type {
            QpType::Uc => Opcode::UC,
            _ => Opcode::RC,
        };
        let mut h = Headers::new(bth::Repr {
            opcode: Opcode::new(tb, op),
            dest_qp: self.qb,
            psn,
            pkey: 0xffff,
            ack_req: true,
            ..Default::default()
        });
        fill(&mut h);
        let mut out = Vec::new();
        packet::emit(&h, payload, &mut out).unwrap();
        let mut e = self.p.b.eng.lock();
        e.receive(&RxMeta::ib(endpoint(1), false), &out);
        e.flush_acks();
        let trace = e.rt.resp_trace.clone();
        drop(e);
        self.p.net.pump(&[&self.cap as &dyn PacketHandler, &self.p.b.eng], 1000);
        (trace, self.cap.take())
    }

    fn counters(&self) -> QpCounters {
        self.p.b.eng.lock().qp_counters(self.qb).unwrap()
    }

    fn reth(&self, va: u64, rkey: u32, len: u32) -> impl FnOnce(&mut Headers) {
        move |h: &mut Headers| h.reth = Some(reth::Repr { va, rkey, dma_len: len })
    }
}

fn nak_of(answers: &[(Headers, Vec<u8>)]) -> Vec<(u32, Syndrome)> {
    answers.iter().filter_map(|(h, _)| h.aeth.map(|a| (h.bth.psn, a.syndrome))).collect()
}

const EXECUTED: [RespStep; 7] = [CheckPsn, CheckOp, CheckResources, CheckRkey, Execute, Acknowledge { psns: 1 }, Done];

#[test]
fn psn_sequence_error_naks_once_per_gap() {
    let r = Rig::new(QpType::Rc);
    let w = r.reth(BASE + 0x100, r.p.b.key, 4);
    let (trace, answers) = r.inject(Opcode::WRITE_ONLY, psn::add(EPSN, 3), w, b"gap!");
    assert_eq!(trace, [CheckPsn, OutOfSequence, Done]);
    assert_eq!(nak_of(&answers), [(EPSN, Syndrome::Nak(NakCode::PsnSequenceError))], "the NAK names the expected PSN");
    assert_eq!(r.p.b.mem.get(BASE + 0x100, 4), [0; 4], "nothing out of sequence lands");
    // The next packet of the same gap: counted, not NAKed again.
    let w = r.reth(BASE + 0x100, r.p.b.key, 4);
    let (trace, answers) = r.inject(Opcode::WRITE_ONLY, psn::add(EPSN, 4), w, b"gap!");
    assert_eq!(trace, [CheckPsn, OutOfSequence, Done]);
    assert!(answers.is_empty(), "{answers:?}");
    let c = r.counters();
    assert_eq!((c.out_of_sequence, c.nak_seq_sent), (2, 1));
    // The expected PSN executes and is acknowledged; the gap is closed.
    let w = r.reth(BASE + 0x100, r.p.b.key, 4);
    let (trace, answers) = r.inject(Opcode::WRITE_ONLY, EPSN, w, b"here");
    assert_eq!(trace, EXECUTED);
    assert_eq!(r.p.b.mem.get(BASE + 0x100, 4), b"here");
    assert!(matches!(nak_of(&answers)[..], [(EPSN, Syndrome::Ack { .. })]), "{answers:?}");
}

#[test]
fn duplicate_read_is_executed_again() {
    let r = Rig::new(QpType::Rc);
    r.p.b.mem.set(BASE + 0x2000, &[1; 1500]);
    let rd = || r.reth(BASE + 0x2000, r.p.b.key, 1500);
    let (trace, answers) = r.inject(Opcode::READ_REQUEST, EPSN, rd(), b"");
    assert_eq!(trace, [CheckPsn, CheckOp, CheckResources, CheckRkey, Execute, Acknowledge { psns: 2 }, Done]);
    let ops: Vec<(u8, u32, usize)> = answers.iter().map(|(h, p)| (h.bth.opcode.op(), h.bth.psn, p.len())).collect();
    assert_eq!(ops, [(Opcode::READ_RESPONSE_FIRST, EPSN, 1024), (Opcode::READ_RESPONSE_LAST, psn::add(EPSN, 1), 476)]);
    // The requester asks again (its responses were lost); memory changed meanwhile.
    r.p.b.mem.set(BASE + 0x2000, &[2; 1500]);
    let (trace, answers) = r.inject(Opcode::READ_REQUEST, EPSN, rd(), b"");
    assert_eq!(trace, [CheckPsn, Duplicate, CheckResources, CheckRkey, Execute, Done]);
    assert_eq!(answers.len(), 2);
    assert!(answers.iter().all(|(_, p)| p.iter().all(|&b| b == 2)), "a duplicate READ reads memory again");
    assert_eq!(r.counters().duplicates, 1);
    // The expected PSN did not move back: the PSN after the READ is next.
    let w = r.reth(BASE + 0x100, r.p.b.key, 2);
    assert_eq!(r.inject(Opcode::WRITE_ONLY, psn::add(EPSN, 2), w, b"ok").0, EXECUTED);
    // A duplicate READ that fails its R_Key check is dropped quietly (never NAKed).
    let (trace, answers) = r.inject(Opcode::READ_REQUEST, EPSN, r.reth(BASE + 0x2000, r.p.b.key ^ 1, 1500), b"");
    assert_eq!(trace, [CheckPsn, Duplicate, CheckResources, CheckRkey, Done]);
    assert!(answers.is_empty(), "{answers:?}");
}

#[test]
fn rkey_violation_naks_and_the_qp_enters_err() {
    let r = Rig::new(QpType::Rc);
    let w = r.reth(BASE + 0x100, r.p.b.key ^ 0xff, 4);
    let (trace, answers) = r.inject(Opcode::WRITE_ONLY, EPSN, w, b"nope");
    assert_eq!(
        trace,
        [CheckPsn, CheckOp, CheckResources, CheckRkey, Nak(NakCode::RemoteAccessError, None), Error(None), Done]
    );
    assert_eq!(nak_of(&answers), [(EPSN, Syndrome::Nak(NakCode::RemoteAccessError))]);
    assert_eq!(r.p.b.mem.get(BASE + 0x100, 4), [0; 4]);
    assert_eq!(r.counters().nak_access_sent, 1);
    assert_eq!(r.p.b.eng.lock().qps.obj(r.qb).unwrap().state, QpState::Err);
    assert!(r.p.b.rec.events.lock().unwrap().contains(&Event::QpFatal { qpn: r.qb }));
    // Out of the key's range: the same NAK.
    let r = Rig::new(QpType::Rc);
    let w = r.reth(BASE + (1 << 16) - 2, r.p.b.key, 4);
    let (trace, _) = r.inject(Opcode::WRITE_ONLY, EPSN, w, b"edge");
    assert_eq!(trace[3..5], [CheckRkey, Nak(NakCode::RemoteAccessError, None)]);
}

#[test]
fn opcode_out_of_order_is_an_invalid_request() {
    let r = Rig::new(QpType::Rc);
    // A WRITE_MIDDLE with no WRITE in progress.
    let (trace, answers) = r.inject(Opcode::WRITE_MIDDLE, EPSN, |_| {}, &[0; 1024]);
    assert_eq!(trace, [CheckPsn, CheckOp, Nak(NakCode::InvalidRequest, None), Error(None), Done]);
    assert_eq!(nak_of(&answers), [(EPSN, Syndrome::Nak(NakCode::InvalidRequest))]);
    assert_eq!(r.counters().nak_inv_req_sent, 1);
}

#[test]
fn send_without_receive_wqe_rnr_naks_on_rc_and_drops_on_uc() {
    let r = Rig::new(QpType::Rc);
    let (trace, answers) = r.inject(Opcode::SEND_ONLY, EPSN, |_| {}, b"hi");
    assert_eq!(trace, [CheckPsn, CheckOp, CheckResources, Rnr, Done]);
    assert!(matches!(nak_of(&answers)[..], [(EPSN, Syndrome::RnrNak { .. })]), "{answers:?}");
    assert_eq!(r.counters().rnr_nak_sent, 1);
    // Posted now: the retried SEND lands.
    r.p.b.eng.lock().post_recv(r.qb, RecvWr { wr_id: 7, sgl: vec![r.p.b.sge(BASE + 0x300, 16)] }).unwrap();
    assert_eq!(r.inject(Opcode::SEND_ONLY, EPSN, |_| {}, b"hi").0, EXECUTED);
    assert_eq!(r.p.b.mem.get(BASE + 0x300, 2), b"hi");

    let u = Rig::new(QpType::Uc);
    let (trace, answers) = u.inject(Opcode::SEND_ONLY, EPSN, |_| {}, b"hi");
    assert_eq!(trace, [CheckPsn, CheckOp, CheckResources, Rnr, Drop, UcDrop, Done]);
    assert!(answers.is_empty(), "UC answers nothing");
    assert_eq!(u.counters().no_recv_drops, 1);
    assert_eq!(u.p.b.eng.lock().qps.obj(u.qb).unwrap().state, QpState::Rts, "a UC drop is not an error");
}
