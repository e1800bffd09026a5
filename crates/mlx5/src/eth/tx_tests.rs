//! Ethernet transmit through send WQEs in a fake guest memory: an SQ (an
//! engine `RawPacket` QP with its `QpCtx`, in RDY = engine RTS), a CQ, a PA
//! mkey, and a capturing link.

use std::sync::{Arc, Mutex};

use crate::datapath::cqe::{op, syndrome};
use crate::datapath::wqe::{opcode, CTRL_CQ_UPDATE};
use crate::rdma::state::QpCtx;
use crate::test_support::{ctrl_seg, data_seg, Bench};
use vrnic_engine::{QpCreate, QpState, QpType};
use vrnic_fabric::ether::FrameSink;

use super::eth_seg::{self, EthWqeError, CS_L3, CS_L4};
use super::tx::MIN_FRAME;
use super::tx_state::MAX_SW_MTU;

const EQ_BUF: u64 = 0x100000;
const CQ_BUF: u64 = 0x120000; // 64 x 64 B
const SQ_BUF: u64 = 0x200000; // 16 x 64 B
const SQ_DBR: u64 = 0x280000;
const DATA: u64 = 0x300000;
const SQ_ENTRIES: u32 = 16;

/// A link that keeps what it is given.
#[derive(Default)]
struct Capture(Mutex<Vec<Vec<u8>>>);

impl FrameSink for Capture {
    fn send_frame(&self, frame: &[u8]) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

struct Tx {
    t: Bench,
    sqn: u32,
    key: u32,
    link: Arc<Capture>,
    /// Next WQE index (WQEBBs) and CQEs read so far.
    pc: u16,
}

impl Tx {
    fn new() -> Tx {
        let mut t = Bench::eth();
        let uar = t.up();
        let eqn = t.eq(uar, 1, 0, EQ_BUF);
        let pd = t.pd();
        let cqn = t.cq(uar, eqn, CQ_BUF);
        let key = t.mkey(pd, &[], 0x5a);
        let sqn =
            t.fw.core
                .engine
                .create_qp(QpCreate {
                    qp_type: QpType::RawPacket,
                    pd,
                    send_cq: Some(cqn),
                    recv_cq: None,
                    srq: None,
                    xrcd: None,
                    log_sq_size: 4,
                    log_rq_size: 0,
                    sq_sig_all: false,
                    uid: 0,
                })
                .unwrap();
        // RDY (engine RTS), as eth-cmd's MODIFY_SQ RST->RDY leaves it.
        t.fw.core.engine.qp_mut(sqn).unwrap().state = QpState::Rts;
        t.fw.core.engine.qp_mut(sqn).expect("qp").ext = QpCtx {
            created: Vec::new(),
            qpc: Vec::new(),
            pas: vec![SQ_BUF],
            st: 0,
            uar,
            user_index: 0,
            dbr_addr: SQ_DBR,
            log_page_size: 0,
            page_offset: 0,
            rq_stride: 0,
            rq_entries: 0,
            sq_entries: SQ_ENTRIES,
            mcast: Default::default(),
            sq_ci: 0,
            rq_ci: 0,
            rq_flush_until: 0,
            umems: Vec::new(),
        };
        let link = Arc::new(Capture::default());
        t.fw.port.eth_test().link = Some(link.clone());
        Tx { t, sqn, key, link, pc: 0 }
    }

    /// Writes WQE `w` at the producer index (wrapping the ring), returns its index.
    fn post(&mut self, w: &[u8]) -> u16 {
        let idx = self.pc;
        for (k, bb) in w.chunks(64).enumerate() {
            let slot = (idx as u64 + k as u64) % SQ_ENTRIES as u64;
            self.t.mem.put(SQ_BUF + slot * 64, bb);
        }
        self.pc = self.pc.wrapping_add(w.len().div_ceil(64) as u16);
        idx
    }

    /// DBR[1] = the producer counter, then the doorbell.
    fn ring(&mut self) {
        self.t.mem.put(SQ_DBR + 4, &(self.pc as u32).to_be_bytes());
        self.t.fw.send_doorbell(self.sqn);
    }

    fn frames(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.link.0.lock().unwrap())
    }

    /// Posts an Ethernet send WQE at the producer index.
    fn send(&mut self, op: u8, eth: (u8, u16), inline: &[u8], data: &[[u8; 16]], signaled: bool) -> u16 {
        let w = wqe(op, self.pc, self.sqn, eth, inline, data, signaled);
        self.post(&w)
    }

    /// CQE `n` of the CQ: (opcode, syndrome (error CQEs; else 0), wqe_counter, qpn).
    fn cqe(&self, n: u64) -> (u8, u8, u16, u32) {
        let e = self.t.mem.get(CQ_BUF + n * 64, 64);
        let qpn = u32::from_be_bytes(e[0x38..0x3c].try_into().unwrap()) & 0xff_ffff;
        let opc = e[0x3f] >> 4;
        let syn = if opc == op::REQ_ERR { e[0x37] } else { 0 };
        (opc, syn, u16::from_be_bytes([e[0x3c], e[0x3d]]), qpn)
    }

    fn no_cqe(&self, n: u64) -> bool {
        self.t.mem.get(CQ_BUF + n * 64, 64)[0x3f] == 0xf1
    }

    fn data(&self, at: u64, b: &[u8]) {
        self.t.mem.put(DATA + at, b);
    }

    fn state(&self) -> QpState {
        self.t.fw.core.engine.qp(self.sqn).unwrap().state
    }
}

/// An Ethernet send WQE: ctrl, eth segment (`cs_flags`, `mss`) with `inline` headers, `data` segments.
fn wqe(op: u8, idx: u16, sqn: u32, (cs, mss): (u8, u16), inline: &[u8], data: &[[u8; 16]], signaled: bool) -> Vec<u8> {
    let extra = inline.len().saturating_sub(2).div_ceil(16);
    let ds = 2 + extra + data.len();
    let mut w = vec![0u8; ds * 16];
    w[..16].copy_from_slice(&ctrl_seg(op, idx, sqn, ds as u8));
    if !signaled {
        w[11] &= !CTRL_CQ_UPDATE;
    }
    w[0x14] = cs;
    w[0x16..0x18].copy_from_slice(&mss.to_be_bytes());
    w[0x1c..0x1e].copy_from_slice(&(inline.len() as u16).to_be_bytes());
    w[0x1e..0x1e + inline.len()].copy_from_slice(inline);
    for (k, d) in data.iter().enumerate() {
        let at = (2 + extra + k) * 16;
        w[at..at + 16].copy_from_slice(d);
    }
    w
}

fn nop(idx: u16, sqn: u32, signaled: bool) -> Vec<u8> {
    let mut w = vec![0u8; 64];
    w[..16].copy_from_slice(&ctrl_seg(opcode::NOP, idx, sqn, 1));
    if !signaled {
        w[11] &= !CTRL_CQ_UPDATE;
    }
    w
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// One's-complement checksum (inverted) of `b` plus `init`.
fn csum(b: &[u8], init: u32) -> u16 {
    let mut s = init;
    for c in b.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An IPv4 frame (unicast) with L4 protocol `proto`, L4 header `l4` and payload.
fn ipv4_frame(proto: u8, l4: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let tot = (20 + l4.len() + payload.len()) as u16;
    let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, proto, 0xde, 0xad, 10, 0, 0, 1, 10, 0, 0, 2];
    ip[2..4].copy_from_slice(&tot.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(l4);
    f.extend_from_slice(payload);
    f
}

/// Pseudo-header sum of an IPv4 frame's L4 segment (IHL 5).
fn pseudo(f: &[u8], l4_len: usize) -> u32 {
    let mut s = 0u32;
    for c in f[26..34].chunks(2) {
        s += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    s + f[23] as u32 + l4_len as u32
}

#[test]
fn nop_with_cq_update_completes_without_a_frame() {
    let mut x = Tx::new();
    let sqn = x.sqn;
    x.post(&nop(0, sqn, true));
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ, 0, 0, sqn), "REQ CQE, wqe_counter 0, qpn = SQN");
    assert!(x.no_cqe(1));
    assert!(x.frames().is_empty(), "a NOP sends nothing");
    assert_eq!(x.t.fw.port.eth_test().tx.sq(sqn).nops, 1);
}

#[test]
fn send_inline_only_data_only_and_both() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    let f = pattern(64, 1);
    x.post(&wqe(opcode::SEND, 0, sqn, (0, 0), &f, &[], true));
    let g = pattern(100, 2);
    x.data(0, &g);
    x.send(opcode::SEND, (0, 0), &[], &[data_seg(100, key, DATA)], true);
    let h = pattern(90, 3);
    x.data(0x1000, &h[14..]);
    x.send(opcode::SEND, (0, 0), &h[..14], &[data_seg(76, key, DATA + 0x1000)], true);
    x.ring();
    assert_eq!(x.frames(), vec![f, g, h]);
    for n in 0..3 {
        assert_eq!(x.cqe(n), (op::REQ, 0, [0, 2, 3][n as usize], sqn), "inline 64 B takes two WQEBBs");
    }
    let c = x.t.fw.port.eth_test().tx.sq(sqn);
    assert_eq!((c.packets, c.bytes), (3, 64 + 100 + 90));
    let v = &x.t.fw.port.eth_test().vport.counters;
    let get = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        (get(&v.tx_unicast_packets), get(&v.tx_multicast_packets), get(&v.tx_multicast_octets)),
        (1, 2, 64 + 90),
        "by the group bit"
    );
}

#[test]
fn send_gathers_three_data_segments_in_order() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    let f = pattern(300, 9);
    x.data(0x2000, &f[..100]);
    x.data(0x100, &f[100..250]);
    x.data(0x3ff0, &f[250..]);
    let segs = [data_seg(100, key, DATA + 0x2000), data_seg(150, key, DATA + 0x100), data_seg(50, key, DATA + 0x3ff0)];
    x.post(&wqe(opcode::SEND, 0, sqn, (0, 0), &[], &segs, true));
    x.ring();
    assert_eq!(x.frames(), vec![f]);
}

#[test]
fn short_frame_is_padded_to_60_bytes() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    let mut f = pattern(42, 5);
    f[0] = 0xff; // broadcast
    f[1..6].copy_from_slice(&[0xff; 5]);
    x.data(0, &f);
    x.post(&wqe(opcode::SEND, 0, sqn, (0, 0), &[], &[data_seg(42, key, DATA)], true));
    x.ring();
    let out = x.frames();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].len(), MIN_FRAME);
    assert_eq!(&out[0][..42], &f[..]);
    assert!(out[0][42..].iter().all(|&b| b == 0), "zero padding");
    let v = &x.t.fw.port.eth_test().vport.counters;
    assert_eq!(v.tx_broadcast_packets.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(v.tx_broadcast_octets.load(std::sync::atomic::Ordering::Relaxed), 60);
}

#[test]
fn batch_signaled_on_the_last_gives_one_cqe() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    x.data(0, &pattern(80, 7));
    for i in 0..4u16 {
        x.post(&wqe(opcode::SEND, i, sqn, (0, 0), &[], &[data_seg(80, key, DATA)], i == 3));
    }
    x.ring();
    assert_eq!(x.frames().len(), 4);
    assert_eq!(x.cqe(0), (op::REQ, 0, 3, sqn), "one CQE: the last WQE's counter");
    assert!(x.no_cqe(1));
    assert_eq!(x.t.fw.core.engine.qp(sqn).unwrap().ext.sq_ci, 4);
}

#[test]
fn a_wqe_wrapping_the_ring_is_read_whole() {
    let mut x = Tx::new();
    let sqn = x.sqn;
    for i in 0..15u16 {
        x.post(&nop(i, sqn, false));
    }
    x.ring();
    assert_eq!(x.t.fw.core.engine.qp(sqn).unwrap().ext.sq_ci, 15, "the NOPs consumed, without CQEs");
    assert!(x.no_cqe(0));
    let f = pattern(98, 11);
    let w = wqe(opcode::SEND, 15, sqn, (0, 0), &f, &[], true);
    assert_eq!(w.len(), 128, "two WQEBBs: slot 15 and slot 0");
    x.post(&w);
    x.ring();
    assert_eq!(x.frames(), vec![f]);
    assert_eq!(x.cqe(0), (op::REQ, 0, 15, sqn));
    assert_eq!(x.t.fw.core.engine.qp(sqn).unwrap().ext.sq_ci, 17);
}

#[test]
fn bad_lkey_is_a_protection_error_and_the_rest_flush() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    x.data(0, &pattern(80, 1));
    x.post(&wqe(opcode::SEND, 0, sqn, (0, 0), &[], &[data_seg(80, key ^ 0x100, DATA)], false));
    x.post(&wqe(opcode::SEND, 1, sqn, (0, 0), &[], &[data_seg(80, key, DATA)], true));
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ_ERR, syndrome::LOCAL_PROT_ERR, 0, sqn));
    assert_eq!(x.cqe(1), (op::REQ_ERR, syndrome::WR_FLUSH_ERR, 1, sqn), "the next WQE flushed");
    assert!(x.no_cqe(2));
    assert_eq!(x.state(), QpState::Err);
    assert!(x.frames().is_empty(), "nothing sent");
}

#[test]
fn address_outside_guest_memory_is_a_protection_error() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    x.post(&wqe(opcode::SEND, 0, sqn, (0, 0), &[], &[data_seg(80, key, 0x7fff_ffff_0000)], false));
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ_ERR, syndrome::LOCAL_PROT_ERR, 0, sqn), "an unsignaled failure still completes");
    assert_eq!(x.state(), QpState::Err);
}

#[test]
fn malformed_wqes_complete_with_errors() {
    // ds = 0: the SQ loop refuses it.
    let mut x = Tx::new();
    let sqn = x.sqn;
    let mut w = wqe(opcode::SEND, 0, sqn, (0, 0), &[], &[], true);
    w[7] = 0;
    x.post(&w);
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR, 0, sqn));
    // ds = 1: no room for the eth segment.
    let mut x = Tx::new();
    let sqn = x.sqn;
    let mut w = wqe(opcode::SEND, 0, sqn, (0, 0), &[], &[], true);
    w[7] = 1;
    x.post(&w);
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR, 0, sqn));
    // More bytes than one WQE may gather.
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    x.post(&wqe(opcode::SEND, 0, sqn, (0, 0), &[], &[data_seg(1 << 20, key, 0)], true));
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ_ERR, syndrome::LOCAL_LENGTH_ERR, 0, sqn));
    assert!(x.frames().is_empty());
}

#[test]
fn unknown_opcode_is_an_error_cqe() {
    let mut x = Tx::new();
    let sqn = x.sqn;
    let mut w = nop(0, sqn, false);
    w[3] = opcode::RDMA_WRITE;
    x.post(&w);
    x.post(&nop(1, sqn, true));
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ_ERR, syndrome::LOCAL_QP_OP_ERR, 0, sqn));
    assert_eq!(x.cqe(1), (op::REQ_ERR, syndrome::WR_FLUSH_ERR, 1, sqn));
    assert_eq!(x.state(), QpState::Err);
}

#[test]
fn no_link_and_oversize_frames_are_counted_drops_that_complete() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    let big = MAX_SW_MTU + 18 + 1;
    x.post(&wqe(opcode::SEND, 0, sqn, (0, 0), &[], &[data_seg(big as u32, key, DATA)], true));
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ, 0, 0, sqn), "dropped, not failed");
    assert_eq!(x.t.fw.port.eth_test().tx.sq(sqn).oversize, 1);
    x.t.fw.port.eth_test().link = None;
    let i = x.send(opcode::SEND, (0, 0), &[], &[data_seg(60, key, DATA)], true);
    assert_eq!(i, 1);
    x.ring();
    assert_eq!(x.cqe(1), (op::REQ, 0, 1, sqn));
    let c = x.t.fw.port.eth_test().tx.sq(sqn);
    assert_eq!((c.no_link, c.drops, c.packets), (1, 2, 0));
    assert_eq!(x.t.fw.port.eth_test().tx.totals, c, "one SQ: the totals are its counters");
    assert_eq!(x.state(), QpState::Rts);
    assert!(x.frames().is_empty());
}

#[test]
fn a_doorbell_on_a_queue_without_a_send_queue_is_ignored() {
    let mut x = Tx::new();
    let sqn = x.sqn;
    x.t.fw.core.engine.qp_mut(sqn).map(|e| &mut e.ext).unwrap().sq_entries = 0;
    x.t.mem.put(SQ_DBR + 4, &1u32.to_be_bytes());
    x.t.fw.send_doorbell(sqn);
    assert!(x.no_cqe(0));
    assert_eq!(x.state(), QpState::Rts);
}

#[test]
fn checksum_offload_fills_ipv4_and_udp_checksums() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    let payload = pattern(37, 4);
    let udp = [0x30, 0x39, 0x00, 0x35, 0, (8 + payload.len()) as u8, 0xaa, 0xbb];
    let f = ipv4_frame(17, &udp, &payload);
    x.data(0, &f);
    x.post(&wqe(opcode::SEND, 0, sqn, (CS_L3 | CS_L4, 0), &[], &[data_seg(f.len() as u32, key, DATA)], true));
    x.ring();
    let out = x.frames().pop().unwrap();
    assert_eq!(out.len(), f.len());
    assert_eq!(csum(&out[14..34], 0), 0, "IPv4 header checksum valid");
    assert_ne!(&out[24..26], &[0xde, 0xad]);
    let l4 = &out[34..];
    assert_eq!(csum(l4, pseudo(&out, l4.len())), 0, "UDP checksum valid");
    assert_eq!(x.t.fw.port.eth_test().tx.sq(sqn).csum_offloads, 1);
}

#[test]
fn lso_cuts_a_tcp_frame_into_mss_segments() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    let payload = pattern(250, 8);
    let mut tcp = [0u8; 20];
    tcp[0..4].copy_from_slice(&[0x30, 0x39, 0x00, 0x50]);
    tcp[4..8].copy_from_slice(&1000u32.to_be_bytes());
    tcp[12] = 0x50;
    tcp[13] = 0x18; // PSH|ACK
    let f = ipv4_frame(6, &tcp, &payload);
    x.data(0, &f[54..]);
    x.post(&wqe(opcode::TSO, 0, sqn, (CS_L3 | CS_L4, 100), &f[..54], &[data_seg(250, key, DATA)], true));
    x.ring();
    let out = x.frames();
    assert_eq!(out.len(), 3, "ceil(250 / 100) segments");
    for (i, s) in out.iter().enumerate() {
        let n = [100, 100, 50][i];
        assert_eq!(s.len(), 54 + n);
        assert_eq!(&s[54..], &payload[i * 100..i * 100 + n]);
        assert_eq!(u16::from_be_bytes([s[16], s[17]]) as usize, 40 + n, "IPv4 tot_len");
        assert_eq!(u16::from_be_bytes([s[18], s[19]]), 0x1234 + i as u16, "IPv4 id + i");
        assert_eq!(csum(&s[14..34], 0), 0);
        assert_eq!(u32::from_be_bytes(s[38..42].try_into().unwrap()), 1000 + 100 * i as u32, "TCP seq");
        assert_eq!(s[47] & 0x08 != 0, i == 2, "PSH on the last only");
        assert_eq!(csum(&s[34..], pseudo(s, 20 + n)), 0, "TCP checksum valid");
    }
    assert_eq!(x.cqe(0), (op::REQ, 0, 0, sqn));
    let c = x.t.fw.port.eth_test().tx.sq(sqn);
    assert_eq!((c.tso_wqes, c.tso_packets, c.tso_bytes, c.packets), (1, 3, 3 * 54 + 250, 3));
}

#[test]
fn lso_with_headers_the_offload_refuses_is_dropped_not_failed() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    // An ARP-typed frame: no IP header to segment.
    let mut hdr = pattern(54, 1);
    hdr[12..14].copy_from_slice(&[0x08, 0x06]);
    x.data(0, &pattern(200, 2));
    x.post(&wqe(opcode::TSO, 0, sqn, (CS_L3 | CS_L4, 100), &hdr, &[data_seg(200, key, DATA)], true));
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ, 0, 0, sqn));
    assert!(x.frames().is_empty());
    let c = x.t.fw.port.eth_test().tx.sq(sqn);
    assert_eq!((c.offload_errors, c.drops), (1, 1));
}

#[test]
fn eth_segment_parse_errors() {
    use crate::datapath::wqe::CtrlSeg;
    let parse = |w: &[u8]| eth_seg::parse(w, &CtrlSeg::parse(w[..16].try_into().unwrap()));
    let w = wqe(opcode::SEND, 0, 0x100, (0, 0), &pattern(40, 0), &[], true);
    assert_eq!(parse(&w).unwrap().inline, pattern(40, 0));
    // ihs says 40 but ds leaves room for fewer inline units.
    let mut v = w.clone();
    v[7] = 3;
    assert_eq!(parse(&v), Err(EthWqeError::InlinePastDs));
    // ds past the copy.
    let mut v = w.clone();
    v[7] = 9;
    assert_eq!(parse(&v), Err(EthWqeError::BadDs(9)));
    // VLAN insertion (not advertised).
    let mut v = wqe(opcode::SEND, 0, 0x100, (0, 0), &[], &[data_seg(1, 1, 0)], true);
    v[0x1c] = 0x80;
    assert_eq!(parse(&v), Err(EthWqeError::VlanInsert));
    // Inner checksum flags (tunnels: not advertised).
    let v = wqe(opcode::SEND, 0, 0x100, (0x30, 0), &[], &[data_seg(1, 1, 0)], true);
    assert_eq!(parse(&v), Err(EthWqeError::Tunnel));
    // An inline data segment.
    let v = wqe(opcode::SEND, 0, 0x100, (0, 0), &[], &[data_seg(0x8000_0004, 1, 0)], true);
    assert_eq!(parse(&v), Err(EthWqeError::InlineDataSeg));
}

#[test]
fn an_sq_in_rst_sends_nothing_until_rdy() {
    let mut x = Tx::new();
    let sqn = x.sqn;
    x.t.fw.core.engine.qp_mut(sqn).unwrap().state = QpState::Reset;
    x.post(&nop(0, sqn, true));
    x.ring();
    assert!(x.no_cqe(0), "RST: the doorbell waits");
    x.t.fw.core.engine.qp_mut(sqn).unwrap().state = QpState::Rts;
    x.ring();
    assert_eq!(x.cqe(0), (op::REQ, 0, 0, sqn), "RDY: the WQE posted before runs");
}

/// mlx5e's VLAN path: the 18-byte tagged L2 header inline (one extra unit), the rest gathered.
#[test]
fn vlan_header_inline_then_data() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    let mut f = pattern(200, 6);
    f[0] = 0x02;
    f[12..16].copy_from_slice(&[0x81, 0x00, 0x00, 0x07]);
    x.data(0x500, &f[18..]);
    let w = wqe(opcode::SEND, 0, sqn, (0, 0), &f[..18], &[data_seg(182, key, DATA + 0x500)], true);
    assert_eq!(w[7], 4, "ctrl + eth + one inline unit + one data segment");
    x.post(&w);
    x.ring();
    assert_eq!(x.frames(), vec![f]);
}

/// UDP GSO (`ihs` = transport offset + 8): one datagram per `mss`, each with its UDP length and checksum.
#[test]
fn lso_of_udp_gso_gives_datagrams() {
    let mut x = Tx::new();
    let (sqn, key) = (x.sqn, x.key);
    let payload = pattern(300, 12);
    let udp = [0x30, 0x39, 0x12, 0x67, 0, 0, 0, 0];
    let f = ipv4_frame(17, &udp, &payload);
    x.data(0, &f[42..]);
    x.post(&wqe(opcode::TSO, 0, sqn, (CS_L3 | CS_L4, 200), &f[..42], &[data_seg(300, key, DATA)], true));
    x.ring();
    let out = x.frames();
    assert_eq!(out.len(), 2);
    for (i, s) in out.iter().enumerate() {
        let n = [200, 100][i];
        assert_eq!(s.len(), 42 + n);
        assert_eq!(&s[42..], &payload[i * 200..i * 200 + n]);
        assert_eq!(u16::from_be_bytes([s[38], s[39]]) as usize, 8 + n, "UDP length");
        assert_eq!(csum(&s[14..34], 0), 0);
        assert_eq!(csum(&s[34..], pseudo(s, 8 + n)), 0, "UDP checksum valid");
    }
}
