//! Shared set-up for the fuzz targets and the seed generator: a brought-up
//! firmware, an engine with connected QPs, and the input framing.

use std::net::Ipv4Addr;
use std::sync::Arc;

use vrnic_engine::mem::FlatMem;
use vrnic_engine::*;
use vrnic_mlx5::cmd::CommandHandler;
use vrnic_mlx5::builder::FirmwareBuilder;
use vrnic_mlx5::firmware::Firmware;
use vrnic_mlx5::ifc;
use vrnic_mlx5::ib::port::PortConfig;
use vrnic_vfio::Interrupts;
use vrnic_sys::clock::ManualClock;
use vrnic_fabric::{Dest, Endpoint, PacketSink, RxMeta};

/// Splits `data` into records of `[u16 LE length][bytes]` (the last record
/// takes what is left when short).
pub fn records(mut data: &[u8]) -> Vec<&[u8]> {
    let mut v = Vec::new();
    while data.len() >= 2 {
        let n = (u16::from_le_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
        v.push(&data[2..2 + n]);
        data = &data[2 + n..];
    }
    v
}

/// The inverse of [`records`].
pub fn frame(recs: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    for r in recs {
        v.extend_from_slice(&(r.len() as u16).to_le_bytes());
        v.extend_from_slice(r);
    }
    v
}

/// A zeroed command input with its opcode.
pub fn cmd(opcode: u32, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len.max(16)];
    ifc::mbox_in::opcode.set(&mut v, opcode as u64);
    v
}

/// A firmware over `mem` after ENABLE_HCA and INIT_HCA.
pub fn firmware(mem: Arc<FlatMem>) -> Firmware {
    let irqs = Arc::new(Interrupts::new(64));
    let port = PortConfig::new(0x1111, 0x2222, 3, 0x1017);
    // With user contexts, so that the uid gate and the DevX commands (umems) are reached too.
    let limits = Limits { uctxs: 4, ..Limits::default() };
    let mut fw = FirmwareBuilder::new(mem, irqs, port, limits).build().expect("command table");
    fw.execute(&cmd(ifc::MLX5_CMD_OP_ENABLE_HCA, 16), 16);
    fw.execute(&cmd(ifc::MLX5_CMD_OP_INIT_HCA, 32), 16);
    fw
}

/// Packets the engine sends go nowhere.
pub struct Drop;
impl PacketSink for Drop {
    fn send(&self, _: &Dest, _: &mut [u8]) {}
}

pub const MEM: usize = 256 << 10;
pub const PEER_QPN: u32 = 0x77;

/// An engine with one RC, one UC and one UD QP in RTS towards LID 2 (RC and
/// UC to the QP of the same number, so two of them talk to each other), receives posted, and a key over all of its memory.
pub struct Responder {
    pub eng: Engine,
    pub clock: Arc<ManualClock>,
    pub key: u32,
    pub qps: Vec<u32>,
}

pub fn endpoint(lid: u16) -> Endpoint {
    Endpoint::v4(lid, Ipv4Addr::new(10, 0, 0, lid as u8))
}

impl Responder {
    pub fn new() -> Responder {
        Responder::with_sink(Arc::new(Drop))
    }

    /// As [`Responder::new`] with the engine's packets going to `packets`.
    pub fn with_sink(packets: Arc<dyn PacketSink>) -> Responder {
        let mem = Arc::new(FlatMem::new(MEM));
        let clock = Arc::new(ManualClock::default());
        let mut e = Engine::new(Limits::default());
        e.attach(Io { mem, packets, completions: Arc::new(NullSink), clock: clock.clone(), local: endpoint(1) });
        let pd = e.alloc_pd(0).unwrap();
        let cq = e.create_cq(8).unwrap();
        let all = Access(Access::LOCAL_WRITE.0 | Access::REMOTE_READ.0 | Access::REMOTE_WRITE.0 | Access::REMOTE_ATOMIC.0);
        let idx = e
            .create_mkey(Mkey { variant: 0x11, pd, access: all, start: 0, length: MEM as u64, whole_space: false, translation: Translation::Physical, free: false, uid: 0 })
            .unwrap();
        let key = Mkey::key(idx, 0x11);
        let mut qps = Vec::new();
        for t in [QpType::Rc, QpType::Uc, QpType::Ud] {
            let q = e
                .create_qp(QpCreate { qp_type: t, pd, send_cq: Some(cq), recv_cq: Some(cq), srq: None, xrcd: None, log_sq_size: 4, log_rq_size: 4, sq_sig_all: false, uid: 0 })
                .unwrap();
            e.modify_qp(q, QpTransition::RstToInit, &QpAttrUpdate { access: Some(all), qkey: Some(0x1234), ..Default::default() }).unwrap();
            let attrs = QpAttrUpdate {
                dest_qpn: Some(if t == QpType::Ud { PEER_QPN } else { q }),
                rq_psn: Some(0x100),
                sq_psn: Some(0x100),
                path_mtu: Some(Mtu(1024)),
                timeout: Some(10),
                retry_cnt: Some(7),
                rnr_retry: Some(7),
                min_rnr_timer: Some(1),
                max_rd_atomic: Some(4),
                max_dest_rd_atomic: Some(4),
                av: Some(AddressVector { dlid: 2, ..Default::default() }),
                ..Default::default()
            };
            e.modify_qp(q, QpTransition::InitToRtr, &attrs).unwrap();
            e.modify_qp(q, QpTransition::RtrToRts, &attrs).unwrap();
            for i in 0..4u64 {
                e.post_recv(q, RecvWr { wr_id: i, sgl: vec![Sge { addr: 0x1000 * (i + 1), length: 0x1000, lkey: key }] }).unwrap();
            }
            qps.push(q);
        }
        Responder { eng: e, clock, key, qps }
    }

    /// One packet from the peer (LID 2), then whatever timers are due.
    pub fn feed(&mut self, pkt: &[u8]) {
        self.eng.receive(&RxMeta::ib(endpoint(2), false), pkt);
        self.eng.flush_acks();
        self.clock.advance(1_000_000);
        self.eng.poll_timers();
    }
}

impl Default for Responder {
    fn default() -> Self {
        Responder::new()
    }
}

pub use vrnic_json::Value as Json;
mod vrnic_json {
    pub use serde_json::Value;
}

/// The capabilities QEMU sends with VERSION.
pub fn caps() -> Json {
    serde_json::json!({"capabilities": {"max_msg_fds": 8, "max_data_xfer_size": 1048576, "migration": {"pgsize": 4096}}})
}

/// A cursor over fuzz input: fixed-size reads past the end read zeros.
pub struct Bytes<'a>(pub &'a [u8]);

impl<'a> Bytes<'a> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Up to `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.0.len())
    }
    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let t = self.take(N);
        a[..t.len()].copy_from_slice(t);
        a
    }
    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 != 0
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }
}

/// `bytes` as a 256-byte MAD: truncated or zero-padded.
pub fn mad256(bytes: &[u8]) -> [u8; 256] {
    let mut m = [0u8; 256];
    let n = bytes.len().min(256);
    m[..n].copy_from_slice(&bytes[..n]);
    m
}
