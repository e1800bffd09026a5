//! Writes the seed corpora (`cargo run --example seeds` in fuzz/): real
//! commands, WQEs, vfio-user messages, and packets captured from two engines
//! talking to each other.

use std::path::Path;
use std::sync::{Arc, Mutex};

use vrnic_engine::*;
use vrnic_mlx5::ifc;
use vrnic_vfio::protocol::{self, Command, Header};
use vrnic_fabric::{Dest, PacketSink};
use vrnic_wire::ip::PseudoHeader;
use vrnic_wire::{icrc, roce, RocePacket};
use vrnic_fuzz::*;

#[derive(Default)]
struct Rec(Mutex<Vec<Vec<u8>>>);
impl PacketSink for Rec {
    fn send(&self, _: &Dest, pkt: &mut [u8]) {
        self.0.lock().unwrap().push(pkt.to_vec());
    }
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    let d = Path::new("corpus").join(target);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(format!("seed-{name}")), bytes).unwrap();
}

fn packets() -> Vec<Vec<u8>> {
    let ra = Arc::new(Rec::default());
    let rb = Arc::new(Rec::default());
    let mut a = Responder::with_sink(ra.clone());
    let mut b = Responder::with_sink(rb.clone());
    let (rc, ud) = (a.qps[0], a.qps[2]);
    let sge = |addr, len| Sge { addr, length: len, lkey: a.key };
    let mut ops = vec![
        SendWr::new(1, WrOpcode::Send, vec![sge(0x8000, 100)]),
        SendWr::new(2, WrOpcode::Send, vec![sge(0x8000, 3000)]),
        SendWr::new(3, WrOpcode::Write, vec![sge(0x8000, 2000)]),
        SendWr::new(4, WrOpcode::Read, vec![sge(0x9000, 1500)]),
        SendWr::new(5, WrOpcode::SendImm, vec![sge(0x8000, 8)]),
        SendWr::new(6, WrOpcode::WriteImm, vec![sge(0x8000, 8)]),
    ];
    for w in &mut ops[2..4] {
        w.remote_addr = 0x10000;
        w.rkey = b.key;
    }
    ops[5].remote_addr = 0x10000;
    ops[5].rkey = b.key;
    for w in ops {
        a.eng.post_send(rc, w).unwrap();
    }
    let mut at = SendWr::new(7, WrOpcode::FetchAdd, vec![sge(0xa000, 8)]);
    at.remote_addr = 0x20000;
    at.rkey = b.key;
    let _ = a.eng.post_send(rc, at);
    let mut u = SendWr::new(8, WrOpcode::Send, vec![sge(0x8000, 64)]);
    u.ud = Some(UdDest { av: AddressVector { dlid: 2, ..Default::default() }, remote_qpn: ud, remote_qkey: 0x1234 });
    let _ = a.eng.post_send(a.qps[2], u);
    a.eng.flush_acks();
    let sent: Vec<_> = ra.0.lock().unwrap().clone();
    for p in &sent {
        b.feed(p);
    }
    let mut all = sent;
    all.extend(rb.0.lock().unwrap().iter().cloned());
    all
}

fn vfio_msg(id: u16, cmd: Command, payload: &[u8]) -> Vec<u8> {
    let h = Header { id, command: cmd as u16, size: (16 + payload.len()) as u32, flags: 0, error_reply: 0 };
    let mut v = h.emit().to_vec();
    v.extend_from_slice(payload);
    v
}

fn main() {
    // Packets: engine_responder records, roce_parse single packets + datagrams.
    let pkts = packets();
    assert!(pkts.len() > 5, "captured {} packets", pkts.len());
    write("engine_responder", "session", &frame(&pkts));
    for (i, p) in pkts.iter().enumerate() {
        write("engine_responder", &format!("pkt{i}"), &frame(std::slice::from_ref(p)));
        write("roce_parse", &format!("bth{i}"), p);
        let r = RocePacket::parse(p).expect("engine packets parse");
        let ph = PseudoHeader::canonical([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), r.headers.bth.dest_qp, p.len());
        let mut roce = p.clone();
        icrc::fill(&ph, &mut roce);
        let mut d = [0u8; PseudoHeader::LEN];
        ph.emit(&mut d);
        let mut dg = d.to_vec();
        dg.extend_from_slice(&roce);
        write("roce_parse", &format!("udp{i}"), &dg);
    }
    // RoCE Ethernet frames (wire::roce): v2 over IPv4 and IPv6, v1, tagged and not.
    for (i, p) in pkts.iter().take(4).enumerate() {
        for (j, net) in
            [roce::NetHdr::RoceV2Ipv4, roce::NetHdr::RoceV2Ipv6, roce::NetHdr::RoceV1].into_iter().enumerate()
        {
            let r = roce::FrameRepr {
                dmac: [2, 0, 0, 0, 0, 2],
                smac: [2, 0, 0, 0, 0, 1],
                vlan: (i % 2 == 1).then_some(0x2005),
                net,
                grh: vrnic_wire::grh::Repr {
                    traffic_class: 2,
                    hop_limit: 64,
                    sgid: roce::v4_mapped([10, 0, 0, 1]),
                    dgid: roce::v4_mapped([10, 0, 0, 2]),
                    ..Default::default()
                },
                udp_sport: 0xc000 | i as u16,
            };
            let mut f = Vec::new();
            roce::emit(&r, p, &mut f).expect("engine packets frame");
            write("roce_parse", &format!("frame{i}-{j}"), &f);
        }
    }

    // WQEs: ctrl + data segment, RDMA with raddr, UD with an AV, inline, recv.
    let ctrl = |op: u8, ds: u8| {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&((7u32 << 8) | op as u32).to_be_bytes());
        b[4..8].copy_from_slice(&((0x12u32 << 8) | ds as u32).to_be_bytes());
        b[11] = 0x08;
        b
    };
    let data = |len: u32, key: u32, addr: u64| {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&len.to_be_bytes());
        b[4..8].copy_from_slice(&key.to_be_bytes());
        b[8..16].copy_from_slice(&addr.to_be_bytes());
        b
    };
    let mut send = ctrl(0x0a, 2).to_vec();
    send.extend(data(100, 0x1111, 0x8000));
    write("wqe_decode", "send", &send);
    let mut wr = ctrl(0x08, 3).to_vec();
    wr.extend(data(0x3344, 0x2222, 0x10000)); // raddr seg: raddr, rkey
    wr.extend(data(64, 0x1111, 0x8000));
    write("wqe_decode", "write", &wr);
    let mut ud = ctrl(0x0a, 6).to_vec();
    let mut av = [0u8; 48];
    av[8..12].copy_from_slice(&(0x8000_0000u32 | 3).to_be_bytes());
    av[12..16].copy_from_slice(&0x1234u32.to_be_bytes());
    ud.extend(av);
    ud.extend(data(64, 0x1111, 0x8000));
    write("wqe_decode", "ud", &ud);
    let mut inl = ctrl(0x0a, 3).to_vec();
    inl.extend((0x8000_0000u32 | 12).to_be_bytes());
    inl.extend([0xab; 28]);
    write("wqe_decode", "inline", &inl);
    let mut rq = data(4096, 0x1111, 0x8000).to_vec();
    rq.extend(data(0, 0x100, 0));
    write("wqe_decode", "recv", &rq);

    // Commands (records of outlen + input).
    let rec = |outlen: u32, input: Vec<u8>| {
        let mut v = outlen.to_le_bytes().to_vec();
        v.extend(input);
        v
    };
    let mut eq = cmd(ifc::MLX5_CMD_OP_CREATE_EQ, ifc::create_eq_in::SIZE + 8);
    ifc::create_eq_in::eq_context_entry::log_eq_size.set(&mut eq, 6);
    ifc::create_eq_in::eq_context_entry::uar_page.set(&mut eq, 1);
    ifc::create_eq_in::pas.elem(0).set(&mut eq, 0x10000);
    let mut cq = cmd(ifc::MLX5_CMD_OP_CREATE_CQ, ifc::create_cq_in::SIZE + 8);
    ifc::create_cq_in::cq_context::log_cq_size.set(&mut cq, 6);
    ifc::create_cq_in::cq_context::uar_page.set(&mut cq, 1);
    ifc::create_cq_in::cq_context::dbr_addr.set(&mut cq, 0x20000);
    ifc::create_cq_in::pas.elem(0).set(&mut cq, 0x21000);
    let mut qp = cmd(ifc::MLX5_CMD_OP_CREATE_QP, ifc::create_qp_in::SIZE + 16);
    ifc::create_qp_in::qpc::pd.set(&mut qp, 1);
    ifc::create_qp_in::qpc::uar_page.set(&mut qp, 1);
    ifc::create_qp_in::qpc::log_rq_size.set(&mut qp, 4);
    ifc::create_qp_in::qpc::log_sq_size.set(&mut qp, 4);
    ifc::create_qp_in::qpc::cqn_snd.set(&mut qp, 1);
    ifc::create_qp_in::qpc::cqn_rcv.set(&mut qp, 1);
    ifc::create_qp_in::pas.elem(0).set(&mut qp, 0x30000);
    let mut cap = cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 16);
    ifc::mbox_in::op_mod.set(&mut cap, 1);
    let cmds = vec![
        rec(16, cmd(ifc::MLX5_CMD_OP_ALLOC_UAR, 16)),
        rec(16, cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 16)),
        rec(0x1010, cap),
        rec(16, eq.clone()),
        rec(16, cq.clone()),
        rec(16, qp.clone()),
        rec(16, cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, ifc::create_mkey_in::SIZE + 16)),
        rec(16, cmd(ifc::MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN, 16)),
        rec(0x100, cmd(ifc::MLX5_CMD_OP_QUERY_VPORT_STATE, 16)),
    ];
    write("command_inputs", "bringup", &frame(&cmds));
    for (i, c) in cmds.iter().enumerate() {
        write("command_inputs", &format!("cmd{i}"), &frame(std::slice::from_ref(c)));
    }

    // Command queue memory: slot 0 ALLOC_PD inline, slot 1 CREATE_EQ with an
    // input chain of two blocks and a one-block output chain.
    let mut mem = vec![0u8; 0x4000];
    let entry = |mem: &mut Vec<u8>, slot: usize, input: &[u8], in_ptr: u64, outlen: u32, out_ptr: u64| {
        let e = &mut mem[slot * 64..slot * 64 + 64];
        e[0] = 7;
        e[4..8].copy_from_slice(&(input.len() as u32).to_be_bytes());
        e[8..16].copy_from_slice(&in_ptr.to_be_bytes());
        let n = input.len().min(16);
        e[16..16 + n].copy_from_slice(&input[..n]);
        e[0x30..0x38].copy_from_slice(&out_ptr.to_be_bytes());
        e[0x38..0x3c].copy_from_slice(&outlen.to_be_bytes());
        e[0x3c] = 0x5a;
        e[0x3f] = 1;
    };
    let block = |mem: &mut Vec<u8>, at: usize, data: &[u8], next: u64, num: u32| {
        mem[at..at + data.len()].copy_from_slice(data);
        mem[at + 0x230..at + 0x238].copy_from_slice(&next.to_be_bytes());
        mem[at + 0x238..at + 0x23c].copy_from_slice(&num.to_be_bytes());
        mem[at + 0x23d] = 0x5a;
    };
    entry(&mut mem, 0, &cmd(ifc::MLX5_CMD_OP_ALLOC_PD, 16), 0, 16, 0);
    let tail = &eq[16..];
    entry(&mut mem, 1, &eq, 0x1000, 600, 0x3000);
    block(&mut mem, 0x1000, &tail[..512.min(tail.len())], if tail.len() > 512 { 0x2000 } else { 0 }, 0);
    if tail.len() > 512 {
        block(&mut mem, 0x2000, &tail[512..], 0, 1);
    }
    block(&mut mem, 0x3000, &[], 0, 0);
    write("command_interface", "pd-and-eq", &mem);

    // vfio-user: VERSION, GET_INFO, REGION_INFO, config read, BAR0 write, DMA_MAP with an fd, SET_IRQS.
    let m = |f: u8, v: Vec<u8>| {
        let mut r = vec![f];
        r.extend(v);
        r
    };
    let ver = protocol::Version { major: 0, minor: 2, capabilities: Some(vrnic_fuzz_caps()) }.emit();
    let ra = |off: u64, region: u32, count: u32| protocol::RegionAccess { offset: off, region, count }.emit().to_vec();
    let mut w = ra(0x0, 0, 4);
    w.extend(0x0000_0001u32.to_le_bytes());
    let mut dma = Vec::new();
    for v in [32u32, 3] {
        dma.extend(v.to_le_bytes());
    }
    for v in [0u64, 0x100000, 0x100000] {
        dma.extend(v.to_le_bytes());
    }
    let mut irq = Vec::new();
    for v in [20u32 + 4, 0x24, 2, 0, 1] {
        irq.extend(v.to_le_bytes());
    }
    let msgs = vec![
        m(0, vfio_msg(1, Command::Version, &ver)),
        m(0, vfio_msg(2, Command::DeviceGetInfo, &[16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])),
        m(0, vfio_msg(3, Command::DeviceGetRegionInfo, &[32, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])),
        m(0, vfio_msg(4, Command::RegionRead, &ra(0, 7, 64))),
        m(0, vfio_msg(5, Command::RegionWrite, &w)),
        m(1, vfio_msg(6, Command::DmaMap, &dma)),
        m(2, vfio_msg(7, Command::DeviceSetIrqs, &irq)),
        m(0, vfio_msg(8, Command::RegionRead, &ra(0, 0, 16))),
        m(0, vfio_msg(9, Command::DeviceReset, &[])),
    ];
    write("vfio_messages", "session", &frame(&msgs));
    println!("seeds written: {} packets", pkts.len());
}

fn vrnic_fuzz_caps() -> vrnic_fuzz::Json {
    vrnic_fuzz::caps()
}
