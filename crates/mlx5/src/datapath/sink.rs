//! The engine's completion sink ([`QueueSink`]): what the engine reports
//! while the firmware holds it is queued here and written by
//! `Core::drain` ([`super::cq`]). A leaf the core can hold.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::ctx::expand_ci;
use vrnic_engine::verbs::{Completion, CompletionSink, Event};
use vrnic_engine::GuestMemory;

/// What the engine reported, waiting to be written.
#[derive(Debug, Clone, Copy)]
pub enum Pending {
    Complete { cqn: u32, index: u32, c: Completion },
    Event(Event),
}

/// The engine's completion sink: a queue the firmware drains (the engine
/// calls it while the firmware holds the engine). It also knows each CQ's
/// doorbell record, to read the driver's consumer index when the engine
/// finds a CQ full by its last known count (reading it for every packet and
/// doorbell instead cost ~13% of the data path).
pub struct QueueSink {
    q: Mutex<Vec<Pending>>,
    mem: Arc<dyn GuestMemory>,
    cq_dbrs: Mutex<HashMap<u32, u64>>,
    /// Requester atomic results big-endian (`atomic_req_8B_endianness_mode`
    /// 0, the device default) rather than in host order (mode 1).
    atomic_be: std::sync::atomic::AtomicBool,
}

impl QueueSink {
    pub fn new(mem: Arc<dyn GuestMemory>) -> QueueSink {
        QueueSink {
            q: Mutex::new(Vec::new()),
            mem,
            cq_dbrs: Mutex::new(Default::default()),
            atomic_be: Default::default(),
        }
    }

    /// Selects the byte order of requester atomic results (true: big-endian).
    pub fn set_atomic_reply_be(&self, be: bool) {
        self.atomic_be.store(be, std::sync::atomic::Ordering::Relaxed);
    }

    pub(super) fn take(&self) -> Vec<Pending> {
        std::mem::take(&mut *self.q.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// CQ `cqn` keeps its consumer index at `dbr_addr` (None: forget it).
    pub fn cq_dbr(&self, cqn: u32, dbr_addr: Option<u64>) {
        let mut m = self.cq_dbrs.lock().unwrap_or_else(|e| e.into_inner());
        match dbr_addr {
            Some(a) => m.insert(cqn, a),
            None => m.remove(&cqn),
        };
    }

    pub fn forget_cqs(&self) {
        self.cq_dbrs.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl CompletionSink for QueueSink {
    fn atomic_result(&self, orig: u64) -> [u8; 8] {
        if self.atomic_be.load(std::sync::atomic::Ordering::Relaxed) {
            orig.to_be_bytes()
        } else {
            orig.to_le_bytes()
        }
    }

    fn complete(&self, cqn: u32, index: u32, c: &Completion) {
        self.q.lock().unwrap_or_else(|e| e.into_inner()).push(Pending::Complete { cqn, index, c: *c });
    }
    fn event(&self, ev: Event) {
        self.q.lock().unwrap_or_else(|e| e.into_inner()).push(Pending::Event(ev));
    }
    fn consumer(&self, cqn: u32, producer: u32) -> Option<u32> {
        let a = *self.cq_dbrs.lock().unwrap_or_else(|e| e.into_inner()).get(&cqn)?;
        super::dbr::be32_at(&*self.mem, a).map(|ci| expand_ci(producer, ci))
    }
}
