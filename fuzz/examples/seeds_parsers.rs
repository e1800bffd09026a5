//! Writes the seed corpora of the parser targets (`cargo run --example seeds_parsers` in fuzz/): `mad` (SA
//! queries with an RMPP ACK, SMPs over directed routes, SMInfo, PerfMgt, a flow control packet), `eth_rx`
//! (TCP/UDP over IPv4/IPv6, tagged, RoCEv2; send and LSO WQEs; a command), `pause_pfc` (PAUSE, PFC, tagged
//! data), `cnp` (CNPs, ECN-marked packets of the engine seeds, a CNP frame) and `control_socket` (every
//! command). `cnp` reads the `engine_responder` seeds (written by `seeds`).

use std::path::Path;

use vrnic_fuzz::frame;
use vrnic_mlx5::ifc;
use vrnic_subnet::test_support::{request, TID};
use vrnic_subnet::PortRecord;
use vrnic_wire::congestion::CnpRepr;
use vrnic_wire::ether_build::{build_tcp_ipv4, build_tcp_ipv6, build_udp_ipv4, build_udp_ipv6, push_vlan, TcpFields};
use vrnic_wire::mad::{METHOD_GET, METHOD_GET_TABLE, METHOD_SET};
use vrnic_wire::pfc::Repr as Pfc;
use vrnic_wire::rmpp::{self, Repr as Rmpp};
use vrnic_wire::{roce, sa, sa_mcmember, sa_node, sa_path, smp, smp_sminfo};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let d = Path::new("corpus").join(target);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(format!("seed-{name}")), bytes).unwrap();
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// A directed-route SubnGet along `path` as a CA's kernel sends it (hop pointer 1).
fn dr_get(attr: u16, path: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    (m[0], m[1], m[2], m[3]) = (1, 0x81, 1, METHOD_GET);
    m[8..16].copy_from_slice(&0x77u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    (m[6], m[7]) = (1, (path.len() - 1) as u8);
    m[32..36].fill(0xff);
    m[128..128 + path.len()].copy_from_slice(path);
    m
}

/// A LID-routed Get of `class` (SMP 0x01, PerfMgt 0x04).
fn lr_get(class: u8, attr: u16) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    (m[0], m[1], m[2], m[3]) = (1, class, 1, METHOD_GET);
    m[8..16].copy_from_slice(&0x99u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m
}

fn mad_seeds() {
    let gid = |l: u16| PortRecord::derived(l).gid();
    let mut path = [0u8; 64];
    path[sa_path::field::DGID].copy_from_slice(&gid(1));
    path[sa_path::field::SGID].copy_from_slice(&gid(2));
    path[sa_path::field::REVERSIBLE_NUMB_PATH] = 0x81;
    let path_q = request(METHOD_GET_TABLE, sa::ATTR_PATH_RECORD, sa_path::mask::DGID | sa_path::mask::SGID, &path);
    let mut node = [0u8; 108];
    node[..2].copy_from_slice(&2u16.to_be_bytes());
    let node_q = request(METHOD_GET, sa::ATTR_NODE_RECORD, sa_node::mask::LID, &node);
    let all_nodes = request(METHOD_GET_TABLE, sa::ATTR_NODE_RECORD, 0, &[]);
    let mut join = [0u8; 52];
    let j = sa_mcmember::Repr {
        mgid: sa_mcmember::ipoib_broadcast_mgid(0xffff),
        port_gid: gid(2),
        join_state: 1,
        ..Default::default()
    };
    j.emit(&mut sa_mcmember::Packet::new_unchecked(&mut join[..]));
    let join_q = request(
        METHOD_SET,
        sa::ATTR_MCMEMBER_RECORD,
        sa_mcmember::mask::MGID | sa_mcmember::mask::PORT_GID | sa_mcmember::mask::JOIN_STATE,
        &join,
    );
    let cpi = request(METHOD_GET, sa::ATTR_CLASS_PORT_INFO, 0, &[]);
    // The kernel's RMPP ACK of the GetTable answer's first segment (window 1 + 8).
    let mut ack = all_nodes.clone();
    Rmpp::ack(1, 9).emit(&mut rmpp::Packet::new_unchecked(&mut ack[24..]));
    let sminfo = smp_sminfo::smp(METHOD_GET, TID, 0, None);
    let dr_node = dr_get(smp::ATTR_NODE_INFO, &[0, 1]);
    let dr_far = dr_get(smp::ATTR_NODE_INFO, &[0, 1, 2]);
    let lr_port = lr_get(0x01, smp::ATTR_PORT_INFO);
    let lr_switch = lr_get(0x01, smp::ATTR_SWITCH_INFO);
    let pma = lr_get(0x04, 0x0012);
    // Records: op 2 = a CA sends a MAD: [k][dlid][qps: src | dest << 1][pkey][mad].
    let send = |k: u8, dlid: u16, qps: u8, m: &[u8]| cat(&[&[2, k], &dlid.to_le_bytes(), &[qps], &[0xff, 0xff], m]);
    let recv = |k: u8, slid: u16, qps: u8, m: &[u8]| cat(&[&[3, k], &slid.to_le_bytes(), &[qps], &[0xff, 0xff], m]);
    let tick = |us: u32| cat(&[&[5], &us.to_le_bytes(), &[0]]);
    let sa_rec = |m: &[u8]| cat(&[&[6], &2u16.to_le_bytes(), m]);
    let sa_session = vec![
        send(1, 1, 3, &path_q),
        send(1, 1, 3, &node_q),
        send(1, 1, 3, &all_nodes),
        send(1, 1, 3, &ack),
        send(2, 1, 3, &join_q),
        send(2, 1, 3, &cpi),
        tick(2_000_000),
    ];
    // Cfg 1: the static SM at LID 1 (runs the SA).
    write("mad", "sa-session", &cat(&[&[1], &frame(&sa_session)]));
    let smp_session = vec![
        send(0, 0xffff, 0, &dr_node),
        send(0, 0xffff, 0, &dr_far),
        send(1, 1, 0, &sminfo),
        send(0, 3, 0, &lr_switch),
        send(0, 2, 0, &lr_port),
        send(0, 2, 3, &pma),
        recv(0, 2, 0, &lr_port),
        tick(3_000_000),
    ];
    // Cfg 2: SM roles (polls, elections), the switch configured.
    write("mad", "smp-session", &cat(&[&[2], &frame(&smp_session)]));
    write("mad", "smp-off", &cat(&[&[4], &frame(&smp_session)]));
    // One record of each standalone op.
    let mut pi_set = lr_port.clone();
    pi_set[3] = METHOD_SET;
    pi_set[64 + 32] = 0x02; // PortState ARMED
    let standalone = vec![
        sa_rec(&path_q),
        sa_rec(&join_q),
        cat(&[&[7, 1], &dr_far]),
        cat(&[&[8], &sminfo]),
        cat(&[&[9, 1], &pi_set]),
        cat(&[&[9, 1], &pma]),
    ];
    write("mad", "standalone", &cat(&[&[1], &frame(&standalone)]));
    // A datagram from LID 2 into server 1's port, its ICRC filled (op 4: [src][fill][datagram]).
    let mut pkt = Vec::new();
    let mut h = vrnic_wire::Headers::new(vrnic_wire::bth::Repr {
        opcode: vrnic_wire::Opcode::new(vrnic_wire::Opcode::UD, vrnic_wire::Opcode::SEND_ONLY),
        pkey: 0xffff,
        dest_qp: 1,
        ..Default::default()
    });
    h.deth = Some(vrnic_wire::deth::Repr { qkey: vrnic_wire::deth::GSI_QKEY, src_qp: 1 });
    vrnic_wire::packet::emit(&h, &path_q, &mut pkt).unwrap();
    write(
        "mad",
        "datagram",
        &cat(&[&[1], &frame(&[cat(&[&[4, 1, 1], &pkt]), cat(&[&[1, 0], &2u16.to_le_bytes(), &pkt])])]),
    );
    // With link-level flow control (cfg bit 3): a flow control packet from LID 2 asking for credit, then the MAD.
    let mut fcp = vec![0xfe, 1, 0, 0];
    fcp.extend(0u32.to_be_bytes());
    fcp.extend(64u32.to_be_bytes());
    fcp.extend(b"VRFC");
    write("mad", "credit", &cat(&[&[1 | 8], &frame(&[cat(&[&[4, 1, 0], &fcp]), cat(&[&[4, 1, 1], &pkt])])]));
}

const OWN: [u8; 6] = [0x02, 0, 0, 0, 0x22, 0x22];
const PEER: [u8; 6] = [0x02, 0, 0, 0, 0x33, 0x33];

fn eth_frames() -> Vec<Vec<u8>> {
    let v6a = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let v6b = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let tcp4 = build_tcp_ipv4(OWN, PEER, [10, 0, 0, 3], [10, 0, 0, 2], TcpFields::new(40000, 80, 0x18), &[0x5a; 100]);
    let udp6 = build_udp_ipv6(OWN, PEER, v6b, v6a, 5000, 4791, &[1; 64]);
    let udp4 = build_udp_ipv4([0xff; 6], PEER, [10, 0, 0, 3], [10, 0, 0, 255], 68, 67, &[0; 300]);
    let tcp6 = build_tcp_ipv6(OWN, PEER, v6b, v6a, TcpFields::new(1, 2, 0x10), &[7; 1400]);
    let tagged = push_vlan(&tcp4, 0x8100, (3 << 13) | 5);
    let qinq = push_vlan(&tagged, 0x88a8, 7);
    let mut arp = vec![0xff; 6];
    arp.extend(PEER);
    arp.extend([0x08, 0x06]);
    arp.resize(60, 0);
    // A RoCEv2 SEND to the port's IPv4 GID, ICRC right.
    let mut bth = Vec::new();
    let mut h = vrnic_wire::Headers::new(vrnic_wire::bth::Repr {
        opcode: vrnic_wire::Opcode::new(vrnic_wire::Opcode::RC, vrnic_wire::Opcode::SEND_ONLY),
        pkey: 0xffff,
        dest_qp: 0x11,
        ..Default::default()
    });
    h.bth.ack_req = true;
    vrnic_wire::packet::emit(&h, &[0xab; 32], &mut bth).unwrap();
    let r = roce::FrameRepr {
        dmac: OWN,
        smac: PEER,
        vlan: None,
        net: roce::NetHdr::RoceV2Ipv4,
        grh: vrnic_wire::grh::Repr {
            traffic_class: 2,
            hop_limit: 64,
            sgid: roce::v4_mapped([10, 0, 0, 3]),
            dgid: roce::v4_mapped([10, 0, 0, 2]),
            ..Default::default()
        },
        udp_sport: 0xc000,
    };
    let mut rocev2 = Vec::new();
    roce::emit(&r, &bth, &mut rocev2).unwrap();
    vec![tcp4, udp6, udp4, tcp6, tagged, qinq, arp, rocev2]
}

fn eth_seeds() {
    // Config: flags (RQ 0 keeps tags, RSS over IPv4 TCP, RoCE on, table 1 misses to table 0), MTU, key, fields
    // (src/dst IP, ports), DSCP map, criteria enable (outer), mask (ip_protocol), values (TCP, UDP).
    let flags: u16 = 1 | 32 | 128;
    let key: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x6d).collect();
    let dscp: Vec<u8> = (0..64u8).map(|d| d >> 3).collect();
    let mut mask = [0u8; 128];
    mask[0x10] = 0xff;
    let (mut tcp, mut udp) = ([0u8; 128], [0u8; 128]);
    tcp[0x10] = 6;
    udp[0x10] = 17;
    let cfg =
        cat(&[&flags.to_le_bytes(), &0u16.to_le_bytes(), &key, &0xfu32.to_le_bytes(), &dscp, &[1], &mask, &tcp, &udp]);
    let frames = eth_frames();
    // Records: [flags (bit 0: fix the RoCE ICRC, 1: lossless, 2: flush, 3: poll; 4..: offloads)][mss][frame].
    let mut recs = vec![cfg.clone()];
    for (i, f) in frames.iter().enumerate() {
        let fl = [0x30u8, 0x12, 0x04, 0x38, 0x08, 0x00, 0x02, 0x09][i];
        recs.push(cat(&[&[fl], &1000u16.to_le_bytes(), f]));
    }
    write("eth_rx", "all", &frame(&recs));
    for (i, f) in frames.iter().enumerate() {
        write("eth_rx", &format!("frame{i}"), &frame(&[cfg.clone(), cat(&[&[0x39], &536u16.to_le_bytes(), f])]));
    }
    // Transmit (0xfe): a send with 18 inline bytes and checksum offload, an LSO send of 54 inline bytes, each
    // with a data segment the harness points at the frame data (lkey 0x4b455921); the frames loop back to RX.
    let send = |opcode: u8, cs: u8, mss: u16, f: &[u8], ihs: usize| {
        let extra = ihs.saturating_sub(2).div_ceil(16);
        let ds = 2 + extra + 1;
        let mut w = vec![0u8; (ds * 16).div_ceil(64) * 64];
        w[3] = opcode;
        w[7] = ds as u8;
        w[11] = 0x08;
        w[0x14] = cs;
        w[0x16..0x18].copy_from_slice(&mss.to_be_bytes());
        w[0x1c..0x1e].copy_from_slice(&(ihs as u16).to_be_bytes());
        w[0x1e..0x1e + ihs].copy_from_slice(&f[..ihs]);
        let at = (2 + extra) * 16;
        w[at..at + 4].copy_from_slice(&((f.len() - ihs) as u32).to_be_bytes());
        w[at + 4..at + 8].copy_from_slice(&0x4b45_5921u32.to_be_bytes());
        cat(&[&[0xfe, (w.len() / 64 - 1) as u8], &w, &f[ihs..]])
    };
    let tcp4 = &frames[0];
    let big = build_tcp_ipv4(PEER, OWN, [10, 0, 0, 2], [10, 0, 0, 3], TcpFields::new(80, 40000, 0x18), &[0x77; 3000]);
    // A command (0xff): MODIFY_NIC_VPORT_CONTEXT, MTU 1500 and promiscuous.
    let mut vport = vrnic_fuzz::cmd(ifc::MLX5_CMD_OP_MODIFY_NIC_VPORT_CONTEXT, ifc::modify_nic_vport_context_in::SIZE);
    {
        use ifc::modify_nic_vport_context_in as v;
        v::field_select::mtu.set(&mut vport, 1);
        v::nic_vport_context::mtu.set(&mut vport, 1522);
        v::field_select::promisc.set(&mut vport, 1);
        v::nic_vport_context::promisc_all.set(&mut vport, 1);
    }
    let tx = vec![
        cfg.clone(),
        send(0x0a, 0xc0, 0, tcp4, 18),
        send(0x0e, 0xc0, 1000, &big, 54),
        cat(&[&[0xff], &0x100u32.to_le_bytes(), &vport]),
        send(0x0a, 0x00, 0, &frames[1], 18),
        cat(&[&[0x08], &0u16.to_le_bytes(), &frames[3]]),
    ];
    write("eth_rx", "transmit", &frame(&tx));
}

fn pause_seeds() {
    // Config: 100G, PFC on every priority, global pause on, PFC transmit on priority 3, 0xffff quanta, PCP
    // trust, DSCP map d >> 3, buffers on all but priority 3.
    let dscp: Vec<u8> = (0..64u8).map(|d| d >> 3).collect();
    let cfg = cat(&[&[0, 0xff, 1, 0x08], &0xffffu16.to_le_bytes(), &[0], &dscp, &[0xf7]]);
    let smac = [2, 0, 0, 0, 0, 2];
    let pause = Pfc::Pause { quanta: 0x100 }.to_frame(smac);
    let pfc = Pfc::Pfc { enable: 0x28, quanta: [0, 0, 0, 0xffff, 0, 0x40, 0, 0] }.to_frame(smac);
    let xon = Pfc::Pfc { enable: 0x08, quanta: [0; 8] }.to_frame(smac);
    let data = build_udp_ipv4(OWN, PEER, [10, 0, 0, 3], [10, 0, 0, 2], 1, 2, &[0; 40]);
    let prio3 = push_vlan(&data, 0x8100, 3 << 13);
    let prio5 = push_vlan(&data, 0x8100, 5 << 13);
    // Records: [op][delta ns u32][args].
    let op = |op: u8, ns: u32, rest: &[u8]| cat(&[&[op], &ns.to_le_bytes(), rest]);
    let session = vec![
        op(0, 0, &pause),
        op(2, 100, &data),
        op(0, 10, &pfc),
        op(2, 10, &prio5),
        op(2, 10, &prio3),
        op(0, 10, &prio3),
        op(0, 10, &prio3),
        op(3, 1_000, &[]),
        op(6, 10, &[0xff]),
        op(3, 300_000, &[]),
        op(0, 10, &xon),
        op(5, 10, &[0, 0, 0, 0, 0, 1, 0, 0]),
        op(1, 10, &cat(&[&[1, 0x08], &0x1000u16.to_le_bytes()])),
        op(4, 10, &[0x0f, 0, 0x00]),
        op(3, 5_000_000, &[]),
    ];
    write("pause_pfc", "session", &frame(&std::iter::once(cfg.clone()).chain(session).collect::<Vec<_>>()));
    for (name, f) in [("pause", &pause), ("pfc", &pfc), ("xon", &xon), ("tagged", &prio3)] {
        write("pause_pfc", name, &frame(&[cfg.clone(), op(0, 0, f), op(3, 1_000_000, &[])]));
    }
}

fn cnp_seeds() {
    // Config: 100G, RP and NP on every priority, default RP parameters (rpg_time_reset 300), NP: 4 us, DSCP 48,
    // priority 6, no shaping.
    let cfg =
        cat(&[&[0, 0xff, 0xff, 0], &300u32.to_le_bytes(), &[0], &4u32.to_le_bytes(), &[48, 0, 6], &0u32.to_le_bytes()]);
    let op = |op: u8, ns: u32, rest: &[u8]| cat(&[&[op], &ns.to_le_bytes(), rest]);
    let mut recs = vec![
        cfg.clone(),
        op(2, 0, &cat(&[&[0], &4000u16.to_le_bytes()])),
        op(1, 1_000, &cat(&[&[0, 3], &0xffffu16.to_le_bytes(), &[1]])),
        op(2, 1_000, &cat(&[&[0x80], &8000u16.to_le_bytes()])),
        op(3, 50_000, &[]),
        op(1, 5_000, &cat(&[&[1, 3], &0xffffu16.to_le_bytes(), &[1]])),
        op(3, 400_000, &[]),
        op(5, 0, &[]),
        op(6, 10, &4096u32.to_le_bytes()),
        op(8, 10, &cat(&[&1u32.to_le_bytes(), &7u32.to_le_bytes(), &[3, 0, 0, 0]])),
        op(8, 10, &cat(&[&1u32.to_le_bytes(), &7u32.to_le_bytes(), &[3, 0, 0, 0]])),
        op(10, 10, &cat(&[&25_000_000_000u64.to_le_bytes(), &9000u32.to_le_bytes()])),
        op(4, 10, &cat(&[&[0x0f, 0xf0, 1], &[0; 62], &[0; 7]])),
    ];
    // The engine's packets (the responder seeds), arriving ECN-marked (ToS CE) at priority 3.
    let mut files: Vec<_> = std::fs::read_dir("corpus/engine_responder")
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    for p in files.iter().filter(|p| p.to_string_lossy().contains("seed-pkt")) {
        let f = std::fs::read(p).unwrap();
        if f.len() > 2 {
            recs.push(op(0, 1_000, &cat(&[&[0x03, 3], &f[2..]])));
        }
    }
    write("cnp", "session", &frame(&recs));
    // A CNP as BTH..ICRC, and in a RoCEv2 frame (op 9: the wire side).
    let mut cnp = Vec::new();
    CnpRepr::to_qp(0x11).emit(&mut cnp).unwrap();
    let r = roce::FrameRepr {
        dmac: OWN,
        smac: PEER,
        vlan: Some(6 << 13 | 5),
        net: roce::NetHdr::RoceV2Ipv4,
        grh: vrnic_wire::grh::Repr {
            traffic_class: 0xc2,
            hop_limit: 64,
            sgid: roce::v4_mapped([10, 0, 0, 3]),
            dgid: roce::v4_mapped([10, 0, 0, 2]),
            ..Default::default()
        },
        udp_sport: 0,
    };
    let mut f = Vec::new();
    roce::emit(&r, &cnp, &mut f).unwrap();
    write("cnp", "wire", &frame(&[cfg.clone(), op(9, 0, &cnp), op(9, 0, &f), op(0, 0, &cat(&[&[0xc3, 6], &cnp]))]));
}

fn control_seeds() {
    let lines = [
        "help\n",
        "stats\nqps\n",
        "link down\nstats\nlink up\n",
        "cc\ncc off\ncc\ncc on\r\n",
        "raise 3\nraise 64\nraise x\n",
        "\n  \nbogus command\nlink sideways\n",
    ];
    for (kind, name) in [(0u8, "ib"), (1, "eth"), (2, "none")] {
        for (i, l) in lines.iter().enumerate() {
            write("control_socket", &format!("{name}{i}"), &cat(&[&[kind], l.as_bytes()]));
        }
    }
}

fn main() {
    mad_seeds();
    eth_seeds();
    pause_seeds();
    cnp_seeds();
    control_seeds();
    println!("parser seeds written");
}
