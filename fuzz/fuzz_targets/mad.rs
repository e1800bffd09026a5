//! MADs from the InfiniBand fabric and from the guest's special QPs, through the real dispatch.
//!
//! Three servers (LIDs 1..=3) on an in-process fabric, each an IB stage (`vrnic_subnet::stage::IbStage`: the
//! modeled switch's directed routes and SMA, and with the built-in SM the SA with RMPP on the master's port,
//! SMInfo, the SM roles' polls and takeover, the MasterSMLID update of each CA) in front of a CA whose SMA/PMA
//! is the firmware's MAD_IFC agent (`vrnic_mlx5::ib::mad::process_set`) behind the firmware's QP0/QP1 check
//! (`vrnic_mlx5::ib::mad_wire::parse_mad_packet`); server 1's CA is also a real firmware's IB data path
//! (`FwHandler`: `rdma_receive`, `receive_mad`). Server 1 also receives raw UDP datagrams through a fabric
//! port's receive checks (`vrnic_fabric::Port::accept`: flow control packets `credit::Fcp` when the
//! configuration turns link-level flow control on, GRH envelope, ICRC, DGID).
//!
//! Input: one configuration byte (built-in SM off / static / elected; the switch configured or powered on;
//! flow control), then `[u16 LE len][op][args..]` records (see [`Op`]). The same MAD bytes also go to a
//! standalone SA (`Sa::handle`, `Sa::tick`), switch (`Switch::dr_step`, `Switch::answer`), SMInfo agent, the
//! firmware's SMA, and every MAD codec of `vrnic_wire` (MAD header, RMPP, SA header and records, SMP, SMInfo,
//! ClassPortInfo, NodeInfo, PortInfo, SwitchInfo), which must round-trip what they parse. No CM MAD is parsed anywhere in
//! the device (CM travels as an opaque MAD from QP1 to QP1).
#![no_main]
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use libfuzzer_sys::fuzz_target;
use vrnic_engine::mem::FlatMem;
use vrnic_fabric::fault::FaultConfig;
use vrnic_fabric::{Dest, Endpoint, InProcNet, Link, PacketHandler, PacketSink, Peer, Port, Route, RxMeta};
use vrnic_fuzz::{mad256, records, Bytes};
use vrnic_mlx5::datapath::rx::FwHandler;
use vrnic_mlx5::ib::mad::process_set;
use vrnic_mlx5::ib::mad_wire::parse_mad_packet;
use vrnic_mlx5::ib::port::{FwPortCounters, PortConfig};
use vrnic_subnet::sa::{Sa, SaConfig};
use vrnic_subnet::sm_info::{is_sm_info, SmInfoAgent};
use vrnic_subnet::sm_role::SmTiming;
use vrnic_subnet::switch::{Switch, SwitchConfig, SwitchStart};
use vrnic_subnet::{IbStage, MadSource, PortRecord, SmMode, StageConfig, Subnet};
use vrnic_sys::clock::{Clock, ManualClock};
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::ext::deth;
use vrnic_wire::ip::PseudoHeader;
use vrnic_wire::packet::{self, Headers};
use vrnic_wire::*;

const SERVERS: u16 = 3;

/// What one record does (its first byte, modulo the count).
#[derive(Clone, Copy)]
enum Op {
    /// `[k][dlid u16][packet]`: CA k sends a raw packet (BTH onward) to `dlid` through its stage.
    CaSendRaw,
    /// `[k][slid u16][packet]`: stage k receives a raw packet from the fabric.
    FabricRaw,
    /// `[k][dlid u16][qps][pkey u16][mad]`: CA k sends a 256-byte MAD from QP0/1 to QP0/1 of `dlid`.
    CaSendMad,
    /// `[k][slid u16][qps][pkey u16][mad]`: stage k receives that MAD from the fabric.
    FabricMad,
    /// `[src][fill icrc][datagram]`: a datagram from a peer (or a stranger) into server 1's port checks.
    Datagram,
    /// `[delta us u32][link]`: time passes, every stage polls; bit k of `link` takes stage k's link down.
    Tick,
    /// `[src lid u16][mad]`: the standalone SA answers it (and runs its RMPP timer).
    Sa,
    /// `[in port][mad]`: the standalone switch routes and answers it.
    Switch,
    /// `[mad]`: the SMInfo agent answers it.
    SmInfo,
    /// `[port][mad]`: the firmware's SMA/PMA (MAD_IFC) answers it.
    Sma,
}

const OPS: [Op; 10] = [
    Op::CaSendRaw,
    Op::FabricRaw,
    Op::CaSendMad,
    Op::FabricMad,
    Op::Datagram,
    Op::Tick,
    Op::Sa,
    Op::Switch,
    Op::SmInfo,
    Op::Sma,
];

fn ep(lid: u16) -> Endpoint {
    Endpoint::v4(lid, Ipv4Addr::new(10, 0, (lid >> 8) as u8, lid as u8))
}

/// A UD SEND_ONLY from special QP `src_qp` to QP `dest_qp` carrying `mad`, as the firmware sends it.
fn mad_packet(src_qp: u32, dest_qp: u32, pkey: u16, mad: &[u8]) -> Vec<u8> {
    let mut h = Headers::new(bth::Repr {
        opcode: Opcode::new(Opcode::UD, Opcode::SEND_ONLY),
        pkey,
        dest_qp,
        ..Default::default()
    });
    h.deth = Some(deth::Repr { qkey: if src_qp == 1 { deth::GSI_QKEY } else { 0 }, src_qp });
    let mut out = Vec::new();
    packet::emit(&h, mad, &mut out).expect("a MAD packet emits");
    out
}

/// The CA behind a stage: the firmware's SMA/PMA answers SMPs and PerfMgt requests, as ib_mad does with MAD_IFC.
struct Ca {
    stage: OnceLock<Weak<IbStage>>,
    sma: Mutex<PortConfig>,
    counters: FwPortCounters,
}

impl PacketHandler for Ca {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        let Ok((qpn, dg)) = parse_mad_packet(meta, pkt) else { return };
        assert!(qpn <= 1 && dg.data.len() == 256, "only whole MADs to QP0/QP1");
        let (class, method) = (dg.data[1], dg.data[3]);
        let smp = qpn == 0 && matches!(class, 0x01 | 0x81);
        if !(smp || qpn == 1 && class == 0x04) || !matches!(method, 0x01 | 0x02) {
            return;
        }
        let mut r = process_set(&mad256(&dg.data), 1, &mut self.sma.lock().unwrap(), &self.counters);
        assert_eq!(r.mad[3], mad::METHOD_GET_RESP);
        if class == 0x81 {
            r.mad[4] |= 0x80;
        }
        let Some(stage) = self.stage.get().and_then(Weak::upgrade) else { return };
        let mut p = mad_packet(qpn, dg.src_qpn, 0xffff, &r.mad);
        stage.send(&Dest { lid: meta.src.lid, ..Dest::default() }, &mut p);
    }
}

/// Server 1's CA: the SMA model above and the real firmware's IB data path (`FwHandler`: `rdma_receive`, the
/// QP0/QP1 check and delivery of `mad_wire`).
struct Both(Arc<Ca>, FwHandler);

impl PacketHandler for Both {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        self.1.receive(meta, pkt);
        self.0.receive(meta, pkt);
    }
    fn flush(&self) {
        self.1.flush();
    }
    fn poll(&self, now_ns: u64) -> Option<u64> {
        self.1.poll(now_ns)
    }
}

struct NoLink;
impl Link for NoLink {
    fn transmit(&self, _: Route, _: &[u8]) {}
}

struct World {
    clock: Arc<ManualClock>,
    net: Arc<InProcNet>,
    stages: Vec<Arc<IbStage>>,
    _cas: Vec<Arc<Ca>>,
    /// Server 1's receive checks on a real (not in-process) port: ICRC and DGID are checked.
    port: Port,
    sa: Sa,
    switch: Switch,
    agent: SmInfoAgent,
    sma: PortConfig,
    counters: FwPortCounters,
}

impl World {
    fn new(cfg: u8) -> World {
        let sm = match cfg % 3 {
            0 => SmMode::Off,
            1 => SmMode::Static { sm_lid: 1 },
            _ => SmMode::Roles { priority: cfg >> 4, timing: SmTiming::default() },
        };
        let clock = Arc::new(ManualClock::default());
        let eps: Vec<Endpoint> = (1..=SERVERS).map(ep).collect();
        let net = InProcNet::new(&eps, &[], clock.clone());
        let lids: Vec<u16> = (1..=SERVERS).collect();
        let mut stages = Vec::new();
        let mut cas = Vec::new();
        for (i, &lid) in lids.iter().enumerate() {
            let peers = lids.iter().copied().filter(|&l| l != lid).collect();
            let stage =
                Arc::new(IbStage::new(StageConfig { own: PortRecord::derived(lid), peers, switch_lid: None, sm }));
            stage.connect(net.sink(i));
            let ca = Arc::new(Ca {
                stage: OnceLock::new(),
                sma: Mutex::new(PortConfig::new(0x1000 + lid as u64, 0x2000 + lid as u64, lid, 0x1017)),
                counters: FwPortCounters::default(),
            });
            let _ = ca.stage.set(Arc::downgrade(&stage));
            if i == 0 {
                let fw = vrnic_fuzz::firmware(Arc::new(FlatMem::new(vrnic_fuzz::MEM)));
                stage.attach(Arc::new(Both(ca.clone(), FwHandler(Arc::new(Mutex::new(fw))))));
            } else {
                stage.attach(ca.clone());
            }
            stages.push(stage);
            cas.push(ca);
        }
        let peers = (2..=SERVERS).map(|l| Peer { ep: ep(l), udp: None, index: l as usize - 1 }).collect();
        let mut port = Port::new(ep(1), peers, &FaultConfig::default(), None, clock.clone()).expect("no pcap, no I/O");
        if cfg & 8 != 0 {
            // Link-level flow control: datagrams from peers may be flow control packets (`credit::Fcp`).
            port.enable_flow_control(1 << 16, clock.clone());
        }
        port.set_gid_table(vec![PortRecord::derived(1).gid()]);
        let mut subnet = Subnet::new(1);
        for l in 1..=4 {
            subnet.add_port(PortRecord::derived(l)).expect("distinct LIDs");
        }
        let start = if cfg & 4 != 0 { SwitchStart::PowerOn } else { SwitchStart::Configured };
        World {
            clock,
            net,
            stages,
            _cas: cas,
            port,
            sa: Sa::new(subnet, SaConfig::default()),
            switch: Switch::new([3, 1, 2], 1, SwitchConfig { start, ..SwitchConfig::default() }),
            agent: SmInfoAgent::new(0x0002_c903_0000_0011, cfg >> 4),
            sma: PortConfig::new(0x1111, 0x2222, 3, 0x1017),
            counters: FwPortCounters::default(),
        }
    }

    fn pump(&self) {
        let hs: Vec<&dyn PacketHandler> = self.stages.iter().map(|s| &**s as &dyn PacketHandler).collect();
        self.net.pump(&hs, 2_000);
    }

    fn stage(&self, k: u8) -> &IbStage {
        &self.stages[k as usize % self.stages.len()]
    }

    fn step(&mut self, op: Op, b: &mut Bytes) {
        match op {
            Op::CaSendRaw | Op::FabricRaw => {
                let (k, lid) = (b.u8(), b.u16());
                let mut pkt = b.rest().to_vec();
                self.send_or_receive(op, k, lid, &mut pkt);
            }
            Op::CaSendMad | Op::FabricMad => {
                let (k, lid, qps, pkey) = (b.u8(), b.u16(), b.u8(), b.u16());
                let m = mad256(b.rest());
                codecs(&m);
                let mut pkt = mad_packet((qps & 1) as u32, (qps >> 1 & 1) as u32, pkey | 0x7fff, &m);
                let op = if matches!(op, Op::CaSendMad) { Op::CaSendRaw } else { Op::FabricRaw };
                self.send_or_receive(op, k, lid, &mut pkt);
            }
            Op::Datagram => {
                let (src, fill) = (b.u8(), b.bool());
                let src = if src < 4 { ep(1 + src as u16 % SERVERS) } else { ep(src as u16 * 7) };
                let mut pkt = b.rest().to_vec();
                if fill {
                    fill_icrc(&mut pkt, src, ep(1));
                }
                let stage = &self.stages[0];
                self.port.accept(src, &mut pkt, &NoLink, &mut |meta, bytes| stage.receive(meta, bytes));
                let _ = self.port.release_due(&NoLink, &mut |meta, bytes| stage.receive(meta, bytes));
            }
            Op::Tick => {
                let (delta, link) = (b.u32(), b.u8());
                self.clock.advance(delta as u64 * 1_000);
                let now = self.clock.now_ns();
                for (i, s) in self.stages.iter().enumerate() {
                    s.set_link(link & (1 << i) == 0);
                    let _ = s.poll(now);
                }
                for (_, m) in self.sa.tick() {
                    check_sa_answer(&m);
                }
            }
            Op::Sa => {
                let lid = b.u16();
                let m = b.rest();
                codecs(m);
                for a in self.sa.handle(m, MadSource { lid, qpn: 1 }) {
                    check_sa_answer(&a);
                }
            }
            Op::Switch => {
                let in_port = b.u8() % 6;
                let m = b.rest();
                codecs(m);
                if let Ok(o) = self.switch.dr_step(m, in_port) {
                    assert!(self.switch.lid_at(o.port).is_some(), "routed to a cabled port");
                    assert_eq!(o.mad.len(), 256);
                }
                let _ = self.switch.answer(m, in_port);
            }
            Op::SmInfo => {
                let m = b.rest();
                codecs(m);
                let asks = is_sm_info(m);
                let a = self.agent.handle(m);
                assert_eq!(a.is_some(), asks, "answers exactly the SMInfo requests");
                if let Some(a) = a {
                    assert_eq!(a.len(), 256);
                }
                let _ = smp_sminfo::parse_smp(m);
            }
            Op::Sma => {
                let port_num = b.u8() % 3;
                let m = mad256(b.rest());
                codecs(&m);
                let r = process_set(&m, port_num, &mut self.sma, &self.counters);
                assert_eq!(r.mad[3], mad::METHOD_GET_RESP);
            }
        }
    }

    fn send_or_receive(&self, op: Op, k: u8, lid: u16, pkt: &mut [u8]) {
        let s = self.stage(k);
        if matches!(op, Op::CaSendRaw) {
            s.send(&Dest { lid, ..Dest::default() }, pkt);
        } else {
            let src = ep(lid);
            let meta = RxMeta::ib(src, false);
            let _ = parse_mad_packet(&meta, pkt);
            s.receive(&meta, pkt);
        }
    }
}

/// Makes the datagram's ICRC right for a packet from `src` to `dst` (with or without a GRH envelope).
fn fill_icrc(pkt: &mut [u8], src: Endpoint, dst: Endpoint) {
    let Ok((g, roce)) = grh::unframe(pkt) else { return };
    let at = pkt.len() - roce.len();
    let roce = &mut pkt[at..];
    match g {
        Some(g) => grh::fill_icrc(&g, roce),
        None if roce.len() >= bth::field::HEADER_LEN => {
            let qp = u32::from_be_bytes([0, roce[5], roce[6], roce[7]]);
            let len = roce.len();
            icrc::fill(&PseudoHeader::canonical(src.ip(), dst.ip(), qp, len), roce);
        }
        None => {}
    }
}

/// Every SA answer is a whole SubnAdm MAD, a response or an RMPP ABORT.
fn check_sa_answer(m: &[u8]) {
    assert_eq!(m.len(), 256);
    let h = mad::Repr::parse(&mad::Packet::new_checked(m).unwrap()).unwrap();
    assert_eq!((h.base_version, h.mgmt_class), (1, mad::MGMT_CLASS_SUBN_ADM));
    let r = rmpp::Repr::parse(&rmpp::Packet::new_checked(&m[24..]).unwrap()).unwrap();
    assert!(h.is_response() || r.rmpp_type == rmpp::TYPE_ABORT, "{h:?} {r:?}");
}

/// What a codec parses it emits, and that parses the same (reserved bytes kept from the input).
macro_rules! round_trip {
    ($buf:expr, $($m:ident),*) => {$(
        if let Ok(p) = $m::Packet::new_checked($buf) {
            if let Ok(r) = $m::Repr::parse(&p) {
                let mut b = $buf.to_vec();
                r.emit(&mut $m::Packet::new_unchecked(&mut b[..]));
                let again = $m::Repr::parse(&$m::Packet::new_unchecked(&b[..]));
                assert_eq!(again.as_ref().ok(), Some(&r), stringify!($m));
            }
        }
    )*};
}

/// Every MAD codec over the bytes, at the offsets a MAD carries them.
fn codecs(m: &[u8]) {
    let at = |o: usize| m.get(o..).unwrap_or_default();
    round_trip!(m, mad);
    round_trip!(at(24), rmpp);
    if let Ok(p) = rmpp::Packet::new_checked(at(24)) {
        let _ = rmpp::Repr::parse_strict(&p);
    }
    round_trip!(at(36), sa);
    let data = at(sa::DATA_OFFSET);
    round_trip!(data, sa_path, sa_node, sa_portinfo, sa_mcmember, sa_service, sa_inform, class_port_info);
    if let Ok(s) = smp::check(m) {
        let _ = (s.status(), s.direction(), s.hop_ptr(), s.hop_cnt(), s.m_key(), s.dr_slid(), s.dr_dlid());
        for i in 0..=64 {
            let _ = (s.initial_path(i), s.return_path(i));
        }
        let d = s.data();
        round_trip!(d, smp_sminfo, class_port_info);
        if let Some(b) = d.get(..20) {
            let _ = smp::SwitchInfo::read(b.try_into().unwrap());
        }
        if let Some(b) = d.get(..40) {
            let _ = sa_node::NodeInfo::read(b.try_into().unwrap());
        }
        if let Some(b) = d.get(..64) {
            let req: [u8; 64] = b.try_into().unwrap();
            let _ = sa_portinfo::PortInfo::read(&req);
            let (state, phys) = smp_portinfo::requested_state(&req);
            let _ = smp_portinfo::state_after(req[32] & 0xf, req[33] >> 4, state, phys);
            let _ = smp_portinfo::client_rereg(&req);
            let mut image = [0u8; 64];
            smp_portinfo::merge_set(&mut image, &req);
        }
    }
    let _ = smp_sminfo::parse_smp(m);
}

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, data)) = data.split_first() else { return };
    let mut w = World::new(cfg);
    for r in records(data) {
        let mut b = Bytes(r);
        let op = OPS[b.u8() as usize % OPS.len()];
        w.step(op, &mut b);
        w.pump();
    }
    // Everything still due: SM polls, RMPP resends.
    w.clock.advance(10_000_000_000);
    let now = w.clock.now_ns();
    for s in &w.stages {
        let _ = s.poll(now);
    }
    w.pump();
});
