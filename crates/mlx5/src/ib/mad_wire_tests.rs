//! QP0/QP1 MADs between two firmwares over an in-process fabric
//! (`mad_wire.rs`): sent by the firmware's send queue, carried as UD
//! packets, delivered into the other port's special QP receive queue (one
//! to the own LID through the port's loopback); malformed or refused
//! packets to QPN 0/1 dropped and counted; a port that is not ACTIVE
//! carries SMPs only.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::datapath::cqe::op;
use crate::ib::mad_wire::{parse_mad_packet, MadDrop};
use crate::test_support::*;
use vrnic_fabric::{Endpoint, InProcNet, RxMeta};
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::packet::{self, Headers};
use vrnic_wire::{deth, reth};

const QP0_ST: u64 = 7;
pub(super) const QP1_ST: u64 = 8;

/// Two ports (LIDs 1 and 2) on an in-process fabric, each with a special QP
/// of `st` in RTS (Q_Key as ib_mad sets it) and one 296-byte receive posted.
pub(super) fn special_pair(st: u64) -> (Arc<InProcNet>, Side, Side) {
    use ifc::rst2init_qp_in::qpc as q;
    let net = crate::test_support::two_port_net();
    let mut sides = [side_at(1, &net, 0, QP_BUF, st), side_at(2, &net, 1, QP_BUF, st)];
    for s in &mut sides {
        let mut i = transition_in(ifc::MLX5_CMD_OP_RST2INIT_QP, s.qpn);
        q::q_key.set(&mut i, if st == QP1_ST { 0x8001_0000 } else { 0 });
        q::mtu.set(&mut i, 1);
        s.t.ok(&i, 16);
        s.t.ok(&transition_in(ifc::MLX5_CMD_OP_INIT2RTR_QP, s.qpn), 16);
        s.t.ok(&transition_in(ifc::MLX5_CMD_OP_RTR2RTS_QP, s.qpn), 16);
        s.t.mem.put(QP_BUF, &data_seg(296, s.key, DATA));
        s.t.mem.put(QP_DBR, &1u32.to_be_bytes());
    }
    let [a, b] = sides;
    (net, a, b)
}

/// Posts one 256-byte MAD send on `s`'s special QP to `dlid`/`dqpn`.
pub(super) fn send_mad(s: &mut Side, dlid: u16, dqpn: u32, qkey: u32, mad: &[u8]) {
    s.t.mem.put(DATA + 0x1000, mad);
    let mut w = [0u8; 80];
    w[..16].copy_from_slice(&ctrl_seg(0x0a, 0, s.qpn, 5));
    w[16..20].copy_from_slice(&qkey.to_be_bytes());
    w[24..28].copy_from_slice(&dqpn.to_be_bytes());
    w[16 + 0x0e..16 + 0x10].copy_from_slice(&dlid.to_be_bytes());
    w[64..80].copy_from_slice(&data_seg(256, s.key, DATA + 0x1000));
    s.t.mem.put(QP_BUF + 16 * 16, &w);
    s.t.mem.put(QP_DBR + 4, &1u32.to_be_bytes());
    s.t.fw.send_doorbell(s.qpn);
}

pub(super) fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes(b[o..o + 4].try_into().unwrap())
}

fn crosses(st: u64, dqpn: u32, qkey: u32) {
    let (net, mut a, mut b) = special_pair(st);
    let mad: Vec<u8> = (0..256).map(|x| (x * 7) as u8).collect();
    send_mad(&mut a, 2, dqpn, qkey, &mad);
    // The sender's WQE completes at once (UD), and the MAD left on the fabric.
    assert_eq!(a.t.mem.get(a.cq_buf, 64)[0x3f] >> 4, op::REQ);
    assert_eq!(a.t.mem.get(DATA, 40 + 256), vec![0u8; 296], "nothing delivered locally");
    pump(&net, &mut a, &mut b);
    assert_eq!(b.t.mem.get(DATA + 40, 256), mad, "the MAD after the GRH area");
    let c = b.t.mem.get(b.cq_buf, 64);
    assert_eq!(c[0x3f] >> 4, op::RESP_SEND);
    assert_eq!(be32(&c, 0x2c), 296, "GRH + MAD");
    assert_eq!(be32(&c, 0x18) & 0xff_ffff, dqpn, "source QP: the sender's special QP");
    assert_eq!(be32(&c, 0x18) >> 28 & 1, 0, "no GRH");
    assert_eq!(u16::from_be_bytes([c[0x16], c[0x17]]), 1, "source LID");
    // mlx5_ib looks QP1's P_Key up in the table (ib_cm's BTH P_Key, rdma_cm compares it with the path's)
    let pkey = if dqpn == 1 { 0xffff } else { 0 };
    assert_eq!(be32(&c, 0x24), pkey, "imm_inval_pkey: QP1's P_Key");
    // Counted once each: by the fabric, not again as a local delivery.
    let (ca, cb) = (&a.t.fw.counters, &b.t.fw.counters);
    assert_eq!((ca.mad_wire_xmit.load(Relaxed), ca.xmit_pkts.load(Relaxed)), (1, 0));
    assert_eq!((cb.mad_wire_rcv.load(Relaxed), cb.rcv_pkts.load(Relaxed), cb.mad_wire_drops.load(Relaxed)), (1, 0, 0));
}

#[test]
fn qp1_mad_crosses_the_fabric() {
    crosses(QP1_ST, 1, 0x8001_0000);
}

#[test]
fn qp0_smp_crosses_the_fabric_whatever_its_qkey() {
    crosses(QP0_ST, 0, 0x1234_5678);
}

#[test]
fn mad_to_own_lid_loops_back_through_the_port() {
    let (net, mut a, mut b) = special_pair(QP1_ST);
    let mad = [0x5au8; 256];
    send_mad(&mut a, 1, 1, 0x8001_0000, &mad);
    assert_eq!(a.t.mem.get(DATA + 40, 256), vec![0u8; 256], "it left the port (where the IB stage sees it)");
    pump(&net, &mut a, &mut b);
    assert_eq!(a.t.mem.get(DATA + 40, 256), mad.to_vec());
    let c = &a.t.fw.counters;
    assert_eq!((c.mad_wire_xmit.load(Relaxed), c.mad_wire_rcv.load(Relaxed), c.xmit_pkts.load(Relaxed)), (1, 1, 0));
    assert_eq!(u16::from_be_bytes(a.t.mem.get(a.cq_buf + 64, 64)[0x16..0x18].try_into().unwrap()), 1, "from LID 1");
    assert_eq!(b.t.fw.counters.mad_wire_rcv.load(Relaxed), 0);
}

#[test]
fn dlid_0_stays_in_the_port() {
    let (net, mut a, mut b) = special_pair(QP1_ST);
    send_mad(&mut a, 0, 1, 0x8001_0000, &[7u8; 256]);
    assert_eq!(a.t.mem.get(DATA + 40, 256), vec![7u8; 256]);
    let c = &a.t.fw.counters;
    assert_eq!((c.mad_wire_xmit.load(Relaxed), c.xmit_pkts.load(Relaxed), c.rcv_pkts.load(Relaxed)), (0, 1, 1));
    pump(&net, &mut a, &mut b);
    assert_eq!(net.port(0).counters.tx_packets.load(Relaxed), 0, "nothing on the fabric");
}

#[test]
fn a_port_before_the_sm_configured_it_carries_smps_only() {
    for (st, dqpn, passes) in [(QP0_ST, 0, true), (QP1_ST, 1, false)] {
        let (net, mut a, mut b) = special_pair(st);
        for s in [&mut a, &mut b] {
            s.t.fw.cfg = s.t.fw.cfg.clone().unconfigured();
        }
        send_mad(&mut a, 2, dqpn, 0x8001_0000, &[9u8; 256]);
        pump(&net, &mut a, &mut b);
        let got = b.t.mem.get(DATA + 40, 256) == vec![9u8; 256];
        assert_eq!(got, passes, "QP{dqpn} in INIT");
        assert_eq!(net.port(0).counters.tx_packets.load(Relaxed), passes as u64, "QP1 does not even leave");
        // A DOWN port: nothing either way.
        let (net, mut a, mut b) = special_pair(st);
        b.t.fw.port_change(false);
        send_mad(&mut a, 2, dqpn, 0x8001_0000, &[8u8; 256]);
        send_mad(&mut b, 1, dqpn, 0x8001_0000, &[8u8; 256]);
        pump(&net, &mut a, &mut b);
        assert_eq!(b.t.mem.get(DATA + 40, 256), vec![0u8; 256], "QP{dqpn} to a DOWN port");
        assert_eq!(b.t.fw.counters.mad_wire_rcv.load(Relaxed), 1, "it arrived and was dropped");
        assert_eq!(net.port(1).counters.tx_packets.load(Relaxed), 0, "a DOWN port sends nothing");
    }
}

/// A UD SEND_ONLY packet to `dqpn` with `payload`, as the fabric delivers it.
fn ud_packet(dqpn: u32, qkey: u32, payload: &[u8]) -> Vec<u8> {
    let mut h = Headers::new(bth::Repr {
        opcode: Opcode::new(Opcode::UD, Opcode::SEND_ONLY),
        dest_qp: dqpn,
        ..Default::default()
    });
    h.deth = Some(deth::Repr { qkey, src_qp: 1 });
    let mut out = Vec::new();
    packet::emit(&h, payload, &mut out).unwrap();
    out
}

#[test]
fn bad_mad_packets_are_refused() {
    let meta = RxMeta::ib(Endpoint::v4(2, std::net::Ipv4Addr::LOCALHOST), false);
    let mad = [1u8; 256];
    let (q, dg) = parse_mad_packet(&meta, &ud_packet(1, 0x8001_0000, &mad)).unwrap();
    assert_eq!((q, dg.src_qpn, dg.slid, dg.data.len(), dg.on_wire), (1, 1, 2, 256, true));
    assert_eq!(parse_mad_packet(&meta, &ud_packet(0, 0xdead_beef, &mad)).map(|(q, _)| q), Ok(0), "QP0: any Q_Key");
    assert_eq!(parse_mad_packet(&meta, &ud_packet(1, 7, &mad)).err(), Some(MadDrop::BadQkey(7)));
    assert_eq!(parse_mad_packet(&meta, &ud_packet(5, 7, &mad)).err(), Some(MadDrop::NotSpecialQp(5)));
    assert_eq!(parse_mad_packet(&meta, &ud_packet(1, 0x8001_0000, &mad[..100])).err(), Some(MadDrop::BadLength(100)));
    let mut bad_pkey = ud_packet(1, 0x8001_0000, &mad);
    bad_pkey[2..4].copy_from_slice(&0x0001u16.to_be_bytes());
    assert_eq!(parse_mad_packet(&meta, &bad_pkey).err(), Some(MadDrop::BadPkey(1)));
    // An RC packet to QP 1, and bytes that are not a packet at all.
    let mut rc = Headers::new(bth::Repr {
        opcode: Opcode::new(Opcode::RC, Opcode::WRITE_ONLY),
        dest_qp: 1,
        ..Default::default()
    });
    rc.reth = Some(reth::Repr { va: 0, rkey: 0, dma_len: 256 });
    let mut out = Vec::new();
    packet::emit(&rc, &mad, &mut out).unwrap();
    assert_eq!(parse_mad_packet(&meta, &out).err(), Some(MadDrop::NotUdSend));
    for junk in [&[][..], &[0x64, 0, 0xff, 0xff, 0, 0, 0, 1][..], &[0xff; 300][..]] {
        assert!(parse_mad_packet(&meta, junk).is_err());
    }
    // Every single-byte change of a good packet parses to a MAD for QP0/QP1 or is refused; none panics.
    let good = ud_packet(1, 0x8001_0000, &mad);
    // (Under Miri every 17th byte: a few hundred parses rather than thousands.)
    for i in (0..good.len()).step_by(if cfg!(miri) { 17 } else { 1 }) {
        for v in [0u8, 0x01, 0x64, 0x80, 0xff] {
            let mut p = good.clone();
            p[i] = v;
            if let Ok((q, dg)) = parse_mad_packet(&meta, &p) {
                assert!(q <= 1 && dg.data.len() == 256, "byte {i} = {v:#x}");
            }
            for n in [i, i + 1] {
                let _ = parse_mad_packet(&meta, &p[..n.min(p.len())]);
            }
        }
    }
}

#[test]
fn bad_mad_packets_from_the_fabric_are_counted_drops() {
    let (_net, mut a, _b) = special_pair(QP1_ST);
    let meta = RxMeta::ib(Endpoint::v4(2, std::net::Ipv4Addr::LOCALHOST), false);
    let good = ud_packet(1, 0x8001_0000, &[3u8; 256]);
    {
        let mut dp = a.t.fw.datapath();
        dp.rdma_receive(&meta, &ud_packet(1, 0x1111, &[3u8; 256]));
        dp.rdma_receive(&meta, &good[..good.len() - 8]);
        dp.rdma_receive(&meta, &[0x64, 0, 0]);
        dp.rdma_receive(&meta, &good);
    }
    let c = &a.t.fw.counters;
    assert_eq!((c.mad_wire_drops.load(Relaxed), c.rcv_errors.load(Relaxed), c.mad_wire_rcv.load(Relaxed)), (2, 2, 1));
    assert_eq!(a.t.mem.get(DATA + 40, 256), vec![3u8; 256], "the good one delivered");
}
