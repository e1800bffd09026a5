//! Transport test harness: two engines (two device instances) joined by
//! an in-process network with a manual clock, plain memory as guest memory,
//! results checked byte for byte.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use super::*;
pub use vrnic_fabric::fault::{FaultConfig, FaultRates, OpClass, Rng};
use vrnic_fabric::{Endpoint, InProcNet, PacketHandler, PacketSink};
pub use vrnic_sys::clock::{Clock, ManualClock};

pub const BASE: u64 = 0x1000_0000;

/// Guest memory: one flat range at BASE.
pub struct FakeMem {
    bytes: Mutex<Vec<u8>>,
}

impl FakeMem {
    pub fn new(size: usize) -> FakeMem {
        FakeMem { bytes: Mutex::new(vec![0; size]) }
    }
    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, MemFault> {
        let n = self.bytes.lock().unwrap().len() as u64;
        let off = addr.checked_sub(BASE).ok_or(MemFault { addr })?;
        if off.checked_add(len as u64).is_none_or(|e| e > n) {
            return Err(MemFault { addr });
        }
        Ok(off as usize..off as usize + len)
    }
    pub fn get(&self, addr: u64, len: usize) -> Vec<u8> {
        let r = self.range(addr, len).unwrap();
        self.bytes.lock().unwrap()[r].to_vec()
    }
    pub fn set(&self, addr: u64, data: &[u8]) {
        let r = self.range(addr, data.len()).unwrap();
        self.bytes.lock().unwrap()[r].copy_from_slice(data);
    }
}

impl GuestMemory for FakeMem {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let r = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.bytes.lock().unwrap()[r]);
        Ok(())
    }
    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
        let r = self.range(addr, buf.len())?;
        self.bytes.lock().unwrap()[r].copy_from_slice(buf);
        Ok(())
    }
    fn compare_and_swap_u64(&self, addr: u64, expected: u64, new: u64) -> Result<u64, MemFault> {
        if addr % 8 != 0 {
            return Err(MemFault { addr });
        }
        let r = self.range(addr, 8)?;
        let mut b = self.bytes.lock().unwrap();
        let old = u64::from_le_bytes(b[r.clone()].try_into().unwrap());
        if old == expected {
            b[r].copy_from_slice(&new.to_le_bytes());
        }
        Ok(old)
    }
    fn fetch_add_u64(&self, addr: u64, add: u64) -> Result<u64, MemFault> {
        if addr % 8 != 0 {
            return Err(MemFault { addr });
        }
        let r = self.range(addr, 8)?;
        let mut b = self.bytes.lock().unwrap();
        let old = u64::from_le_bytes(b[r.clone()].try_into().unwrap());
        b[r].copy_from_slice(&old.wrapping_add(add).to_le_bytes());
        Ok(old)
    }
}

/// Records completions per CQ and events, checking indices are dense.
#[derive(Default)]
pub struct Recorder {
    pub cqes: Mutex<HashMap<u32, Vec<Completion>>>,
    pub events: Mutex<Vec<Event>>,
    /// Atomic results big-endian (as a personality may choose).
    pub atomic_be: std::sync::atomic::AtomicBool,
}

impl CompletionSink for Recorder {
    fn complete(&self, cqn: u32, index: u32, c: &Completion) {
        let mut m = self.cqes.lock().unwrap();
        let v = m.entry(cqn).or_default();
        assert_eq!(index as usize, v.len(), "CQ indices are dense");
        v.push(*c);
    }
    fn event(&self, ev: Event) {
        self.events.lock().unwrap().push(ev);
    }
    fn atomic_result(&self, orig: u64) -> [u8; 8] {
        if self.atomic_be.load(std::sync::atomic::Ordering::Relaxed) {
            orig.to_be_bytes()
        } else {
            orig.to_le_bytes()
        }
    }
}

impl Recorder {
    pub fn take(&self, cqn: u32) -> Vec<Completion> {
        self.cqes.lock().unwrap().get(&cqn).cloned().unwrap_or_default()
    }
}

/// One device instance: engine, memory, completions, a PD/EQ/CQ and one
/// all-access key over all memory.
pub struct Node {
    pub eng: SharedEngine,
    pub mem: Arc<FakeMem>,
    pub rec: Arc<Recorder>,
    pub pd: u32,
    pub cq: u32,
    pub key: u32,
}

pub const ALL: Access =
    Access(Access::LOCAL_WRITE.0 | Access::REMOTE_READ.0 | Access::REMOTE_WRITE.0 | Access::REMOTE_ATOMIC.0);

impl Node {
    pub fn new(lid: u16, mem_size: usize, packets: Arc<dyn PacketSink>, clock: Arc<dyn Clock>) -> Node {
        let mem = Arc::new(FakeMem::new(mem_size));
        let rec = Arc::new(Recorder::default());
        let mut e = Engine::new(Limits::default());
        e.attach(Io { mem: mem.clone(), packets, completions: rec.clone(), clock, local: endpoint(lid) });
        let pd = e.alloc_pd(0).unwrap();
        let cq = e.create_cq(20).unwrap();
        let idx = e
            .create_mkey(Mkey {
                variant: 0x11,
                pd,
                access: ALL,
                start: BASE,
                length: mem_size as u64,
                whole_space: false,
                translation: Translation::Physical,
                free: false,
                uid: 0,
            })
            .unwrap();
        Node { eng: SharedEngine::new(e), mem, rec, pd, cq, key: Mkey::key(idx, 0x11) }
    }

    /// A QP of `t` taken to RTS towards (`peer_lid`, `peer_qpn`) once `connect` is called.
    pub fn create_qp(&self, t: QpType, srq: Option<u32>) -> u32 {
        let mut e = self.eng.lock();
        let q = e
            .create_qp(QpCreate {
                qp_type: t,
                pd: self.pd,
                send_cq: Some(self.cq),
                recv_cq: Some(self.cq),
                srq,
                xrcd: None,
                log_sq_size: 14,
                log_rq_size: 14,
                sq_sig_all: false,
                uid: 0,
            })
            .unwrap();
        e.modify_qp(
            q,
            QpTransition::RstToInit,
            &QpAttrUpdate { access: Some(ALL), qkey: Some(0x1234), ..Default::default() },
        )
        .unwrap();
        q
    }

    pub fn connect(&self, qpn: u32, attrs: QpAttrUpdate) {
        let mut e = self.eng.lock();
        e.modify_qp(qpn, QpTransition::InitToRtr, &attrs).unwrap();
        e.modify_qp(qpn, QpTransition::RtrToRts, &attrs).unwrap();
    }

    pub fn sge(&self, addr: u64, len: u32) -> Sge {
        Sge { addr, length: len, lkey: self.key }
    }

    pub fn cqes(&self) -> Vec<Completion> {
        self.rec.take(self.cq)
    }
}

/// GID 0 of a port with GUID `guid`: the fe80::/64 subnet prefix + the GUID.
pub fn gid0(guid: u64) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
    g[8..].copy_from_slice(&guid.to_be_bytes());
    g
}

pub fn endpoint(lid: u16) -> Endpoint {
    Endpoint::v4(lid, Ipv4Addr::new(10, 0, 0, lid as u8))
}

/// Attributes for one side of a connection.
pub fn conn(peer_lid: u16, peer_qpn: u32, mtu: u16) -> QpAttrUpdate {
    QpAttrUpdate {
        dest_qpn: Some(peer_qpn),
        rq_psn: Some(0xfffff0),
        sq_psn: Some(0xfffff0),
        path_mtu: Some(Mtu(mtu)),
        timeout: Some(10),
        retry_cnt: Some(7),
        rnr_retry: Some(7),
        min_rnr_timer: Some(1),
        max_rd_atomic: Some(4),
        max_dest_rd_atomic: Some(4),
        av: Some(AddressVector { dlid: peer_lid, ..Default::default() }),
        ..Default::default()
    }
}

/// Two engines on an in-process network with a manual clock.
pub struct Pair {
    pub net: Arc<InProcNet>,
    pub clock: Arc<ManualClock>,
    pub a: Node,
    pub b: Node,
}

impl Pair {
    pub fn new(mem: usize, faults: &[FaultConfig]) -> Pair {
        Pair::build(mem, faults, |_, _| {})
    }

    /// [`Pair::new`] with `setup` run on the net before the engines take
    /// their sinks (a bounded receive buffer, flow control).
    pub fn build(
        mem: usize,
        faults: &[FaultConfig],
        setup: impl FnOnce(&mut Arc<InProcNet>, &Arc<ManualClock>),
    ) -> Pair {
        let clock = Arc::new(ManualClock::default());
        let mut net = InProcNet::new(&[endpoint(1), endpoint(2)], faults, clock.clone());
        setup(&mut net, &clock);
        net.port(0).set_gid_table(vec![gid0(0xa1), gid0(0)]);
        net.port(1).set_gid_table(vec![gid0(0xb1)]);
        let a = Node::new(1, mem, net.sink(0), clock.clone());
        let b = Node::new(2, mem, net.sink(1), clock.clone());
        Pair { net, clock, a, b }
    }

    /// Two QPs of type `t`, connected with path MTU `mtu`: (a's, b's).
    pub fn qps(&self, t: QpType, mtu: u16) -> (u32, u32) {
        let qa = self.a.create_qp(t, None);
        let qb = self.b.create_qp(t, None);
        self.a.connect(qa, conn(2, qb, mtu));
        self.b.connect(qb, conn(1, qa, mtu));
        (qa, qb)
    }

    /// Delivers packets and runs timers (advancing virtual time when idle)
    /// until `done` or nothing can happen any more. False if it stalled.
    pub fn run(&self, mut done: impl FnMut(&Pair) -> bool) -> bool {
        for _ in 0..10_000_000 {
            if done(self) {
                return true;
            }
            let n = self.net.pump(&[&self.a.eng as &dyn PacketHandler, &self.b.eng], 100_000);
            let ta = self.a.eng.lock().poll_timers();
            let tb = self.b.eng.lock().poll_timers();
            if n == 0 && self.net.pending() == 0 {
                if done(self) {
                    return true;
                }
                let next = [ta, tb, self.net.next_due()].into_iter().flatten().min();
                match next {
                    Some(t) => self.clock.set(t),
                    None => return false,
                }
            }
        }
        false
    }

    pub fn settle(&self) {
        self.run(|_| false);
    }
}

/// Message contents that differ per message and per position.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let k = r.next_u64() | 1;
    let mut v = Vec::with_capacity(len + 8);
    let mut i = 0u64;
    while v.len() < len {
        v.extend_from_slice(&(i.wrapping_mul(k) ^ seed).to_le_bytes());
        i += 1;
    }
    v.truncate(len);
    v
}

pub fn send(wr_id: u64, op: WrOpcode, sgl: Vec<Sge>) -> SendWr {
    SendWr::new(wr_id, op, sgl)
}
