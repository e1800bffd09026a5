//! One device instance's engine: its limits and every verbs object.

use super::mkey::*;
use super::objects::*;
use super::personality::{Personality, Slot};
use super::qp::Qp;
use super::table::Table;
use super::transport::state::{EngineDrops, QpCounters, Runtime};
use super::types::{EngineError, Kind};

/// Per-instance object limits (advertised through the capabilities).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub pds: usize,
    pub xrcds: usize,
    pub eqs: usize,
    pub cqs: usize,
    pub srqs: usize,
    pub mkeys: usize,
    pub qps: usize,
    pub log_max_cq_size: u8,
    pub log_max_qp_size: u8,
    pub log_max_eq_size: u8,
    /// log2 of the RDMA reads and atomics one QP may have outstanding as
    /// requester and hold as responder (`max_qp_rd_atom`, at most 7: the
    /// QPC's `log_sra_max`/`log_rra_max` are 3 bits).
    pub log_max_rd_atomic: u8,
    /// UAR index range `[first, last]`.
    pub uar_first: u32,
    pub uar_last: u32,
    /// User contexts (mlx5 DevX `CREATE_UCTX`): each gets a uid its objects carry. 0: none
    /// (`log_max_uctx` = 0, no DevX).
    pub uctxs: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            pds: 1 << 20,
            xrcds: 1 << 16,
            eqs: 32,
            cqs: 1 << 16,
            srqs: 1 << 16,
            mkeys: 1 << 20,
            qps: 1 << 16,
            log_max_cq_size: 22,
            log_max_qp_size: 15,
            log_max_eq_size: 22,
            log_max_rd_atomic: 7,
            uar_first: 4,
            uar_last: 8191,
            uctxs: 0,
        }
    }
}

/// Every verbs object of one device instance, each entry with the
/// personality's context of it ([`Slot`]). Other crates reach the tables
/// through the methods below.
pub struct Engine<P: Personality = ()> {
    pub(crate) limits: Limits,
    pub(crate) pds: Table<Pd>,
    pub(crate) xrcds: Table<Xrcd>,
    pub(crate) cqs: Table<Slot<Cq, P::Cq>>,
    pub(crate) srqs: Table<Slot<Srq, P::Srq>>,
    /// Keyed by the 24-bit mkey index.
    pub(crate) mkeys: Table<Slot<Mkey, P::Mkey>>,
    pub(crate) qps: Table<Slot<Qp, P::Qp>>,
    /// Transports: I/O, timers, counters.
    pub(crate) rt: Runtime,
}

/// Creation parameters of an SRQ.
#[derive(Debug, Clone, Copy)]
pub struct SrqCreate {
    pub pd: u32,
    pub log_size: u8,
    pub cqn: Option<u32>,
    pub xrcd: Option<u32>,
    pub uid: u16,
}

/// Creation parameters of a QP.
#[derive(Debug, Clone)]
pub struct QpCreate {
    pub qp_type: QpType,
    pub pd: u32,
    pub send_cq: Option<u32>,
    pub recv_cq: Option<u32>,
    pub srq: Option<u32>,
    pub xrcd: Option<u32>,
    pub log_sq_size: u8,
    pub log_rq_size: u8,
    pub sq_sig_all: bool,
    pub uid: u16,
}

impl Engine {
    /// An engine without a personality (tests, benches).
    pub fn new(limits: Limits) -> Engine {
        Engine::with_limits(limits)
    }
}

impl<P: Personality> Engine<P> {
    /// An engine whose objects carry `P`'s contexts.
    pub fn with_limits(limits: Limits) -> Engine<P> {
        Engine {
            limits,
            pds: Table::new(1, 0x00ff_ffff, limits.pds),
            xrcds: Table::new(1, 0x00ff_ffff, limits.xrcds),
            cqs: Table::new(1, 0x00ff_fffe, limits.cqs),
            srqs: Table::new(1, 0x00ff_fffe, limits.srqs),
            // From FIRST_MKEY_INDEX: the keys below it are reserved values.
            mkeys: Table::new(FIRST_MKEY_INDEX, 0x00ff_fffe, limits.mkeys),
            // QPN 0/1 are the special QPs' wire numbers; hand out from 0x100.
            qps: Table::new(0x100, 0x00ff_fffe, limits.qps),
            rt: Runtime::default(),
        }
    }

    /// Device reset: every object is gone.
    pub fn reset(&mut self) {
        self.pds.clear();
        self.xrcds.clear();
        self.cqs.clear();
        self.srqs.clear();
        self.mkeys.clear();
        self.qps.clear();
        self.qps.set_limit(self.limits.qps);
        self.rt.reset();
    }

    /// The driver sized the QP context table (SET_HCA_CAP `log_max_qp`):
    /// creates beyond `qps` are refused, as firmware refuses them past the
    /// table it was told to size. Never above the device's own limit; a reset
    /// restores that.
    pub fn set_qp_limit(&mut self, qps: usize) {
        self.qps.set_limit(qps.min(self.limits.qps));
    }

    pub fn alloc_pd(&mut self, uid: u16) -> Result<u32, EngineError> {
        self.pds.alloc_with(|_| Pd { uid }).ok_or(EngineError::Limit(Kind::Pd))
    }

    pub fn dealloc_pd(&mut self, pdn: u32) -> Result<(), EngineError> {
        self.pds.remove(pdn).map(|_| ()).ok_or(EngineError::NoSuch(Kind::Pd, pdn))
    }

    pub fn alloc_xrcd(&mut self, uid: u16) -> Result<u32, EngineError> {
        self.xrcds.alloc_with(|_| Xrcd { uid }).ok_or(EngineError::Limit(Kind::Xrcd))
    }

    pub fn dealloc_xrcd(&mut self, n: u32) -> Result<(), EngineError> {
        self.xrcds.remove(n).map(|_| ()).ok_or(EngineError::NoSuch(Kind::Xrcd, n))
    }

    /// Translation entries held by all keys (the device memory their MTT, KLM and KSM tables take).
    pub fn mtt_entries(&self) -> usize {
        self.mkeys
            .iter()
            .map(|(_, k)| match &k.translation {
                Translation::Mtt { pages, .. } => pages.len(),
                Translation::Klm { entries } | Translation::Ksm { entries, .. } => entries.len(),
                _ => 0,
            })
            .sum()
    }

    pub fn create_cq(&mut self, log_size: u8) -> Result<u32, EngineError> {
        self.create_cq_with(log_size, P::Cq::default())
    }

    /// A CQ whose entry holds the personality's context `ext`.
    pub fn create_cq_with(&mut self, log_size: u8, ext: P::Cq) -> Result<u32, EngineError> {
        if log_size > self.limits.log_max_cq_size {
            return Err(EngineError::BadParam("cq size"));
        }
        self.cqs.alloc_with(|_| Slot::with(Cq::new(log_size), ext)).ok_or(EngineError::Limit(Kind::Cq))
    }

    pub fn destroy_cq(&mut self, cqn: u32) -> Result<(), EngineError> {
        if !self.cqs.contains(cqn) {
            return Err(EngineError::NoSuch(Kind::Cq, cqn));
        }
        let used_by_qp = self.qps.iter().any(|(_, q)| q.send_cq == Some(cqn) || q.recv_cq == Some(cqn));
        let used_by_srq = self.srqs.iter().any(|(_, s)| s.cqn == Some(cqn));
        if used_by_qp || used_by_srq {
            return Err(EngineError::Busy(Kind::Cq, cqn));
        }
        self.cqs.remove(cqn);
        Ok(())
    }

    pub fn create_srq(
        &mut self,
        pd: u32,
        log_size: u8,
        cqn: Option<u32>,
        xrcd: Option<u32>,
        uid: u16,
    ) -> Result<u32, EngineError> {
        self.create_srq_with(SrqCreate { pd, log_size, cqn, xrcd, uid }, P::Srq::default())
    }

    /// An SRQ whose entry holds the personality's context `ext`.
    pub fn create_srq_with(&mut self, c: SrqCreate, ext: P::Srq) -> Result<u32, EngineError> {
        let SrqCreate { pd, log_size, cqn, xrcd, uid } = c;
        if !self.pds.contains(pd) {
            return Err(EngineError::NoSuch(Kind::Pd, pd));
        }
        if log_size > self.limits.log_max_qp_size {
            return Err(EngineError::BadParam("srq size"));
        }
        if let Some(c) = cqn {
            if !self.cqs.contains(c) {
                return Err(EngineError::NoSuch(Kind::Cq, c));
            }
        }
        if let Some(x) = xrcd {
            if !self.xrcds.contains(x) {
                return Err(EngineError::NoSuch(Kind::Xrcd, x));
            }
        }
        self.srqs
            .alloc_with(|_| Slot::with(Srq { pd, log_size, cqn, xrcd, limit: 0, uid, wqes: Default::default() }, ext))
            .ok_or(EngineError::Limit(Kind::Srq))
    }

    pub fn destroy_srq(&mut self, srqn: u32) -> Result<(), EngineError> {
        if !self.srqs.contains(srqn) {
            return Err(EngineError::NoSuch(Kind::Srq, srqn));
        }
        if self.qps.iter().any(|(_, q)| q.srq == Some(srqn)) {
            return Err(EngineError::Busy(Kind::Srq, srqn));
        }
        self.srqs.remove(srqn);
        Ok(())
    }

    /// Creates a memory key; returns its 24-bit index (key = index << 8 | variant).
    pub fn create_mkey(&mut self, mkey: Mkey) -> Result<u32, EngineError> {
        self.create_mkey_with(mkey, P::Mkey::default())
    }

    /// A memory key whose entry holds the personality's context `ext`.
    pub fn create_mkey_with(&mut self, mkey: Mkey, ext: P::Mkey) -> Result<u32, EngineError> {
        if !self.pds.contains(mkey.pd) {
            return Err(EngineError::NoSuch(Kind::Pd, mkey.pd));
        }
        if let Translation::Mtt { page_shift, .. } = &mkey.translation {
            if !(12..=30).contains(page_shift) {
                return Err(EngineError::BadParam("mkey page size"));
            }
        }
        self.mkeys.alloc_with(|_| Slot::with(mkey, ext)).ok_or(EngineError::Limit(Kind::Mkey))
    }

    pub fn destroy_mkey(&mut self, index: u32) -> Result<(), EngineError> {
        self.mkeys.remove(index).map(|_| ()).ok_or(EngineError::NoSuch(Kind::Mkey, index))
    }

    /// Looks a 32-bit key up: the index must exist and the variant match.
    pub fn lookup_key(&self, key: u32) -> Option<&Mkey> {
        self.mkeys.obj(key >> 8).filter(|m| m.variant == key as u8)
    }

    /// Translates `[va, va+len)` through 32-bit key `key` for PD `pd` with
    /// rights `need`; an indirect key through the keys it names.
    pub fn translate_key(
        &self,
        key: u32,
        va: u64,
        len: u64,
        pd: u32,
        need: Access,
    ) -> Result<Vec<(u64, u64)>, KeyFault> {
        let k = self.lookup_key(key).ok_or(KeyFault::BadKey)?;
        k.translate_via(va, len, pd, need, &|k| self.lookup_key(k))
    }

    pub fn create_qp(&mut self, c: QpCreate) -> Result<u32, EngineError> {
        self.create_qp_with(c, P::Qp::default())
    }

    /// A QP whose entry holds the personality's context `ext`.
    pub fn create_qp_with(&mut self, c: QpCreate, ext: P::Qp) -> Result<u32, EngineError> {
        // The driver leaves qpc.pd 0 for its REG_UMR QP; XRC targets have no PD; mlx5e's drop RQ (a
        // raw-packet queue that never receives) names none either.
        let no_pd =
            matches!(c.qp_type, QpType::XrcTarget | QpType::RegUmr) || (c.qp_type == QpType::RawPacket && c.pd == 0);
        let needs_pd = !no_pd;
        if needs_pd && !self.pds.contains(c.pd) {
            return Err(EngineError::NoSuch(Kind::Pd, c.pd));
        }
        for cq in [c.send_cq, c.recv_cq].into_iter().flatten() {
            if !self.cqs.contains(cq) {
                return Err(EngineError::NoSuch(Kind::Cq, cq));
            }
        }
        if let Some(s) = c.srq {
            if !self.srqs.contains(s) {
                return Err(EngineError::NoSuch(Kind::Srq, s));
            }
        }
        if let Some(x) = c.xrcd {
            if !self.xrcds.contains(x) {
                return Err(EngineError::NoSuch(Kind::Xrcd, x));
            }
        }
        if c.log_sq_size > self.limits.log_max_qp_size || c.log_rq_size > self.limits.log_max_qp_size {
            return Err(EngineError::BadParam("qp size"));
        }
        let attrs = QpAttrs::default();
        self.qps
            .alloc_with(|_| {
                Slot::with(
                    Qp {
                        qp_type: c.qp_type,
                        state: QpState::Reset,
                        pd: c.pd,
                        send_cq: c.send_cq,
                        recv_cq: c.recv_cq,
                        srq: c.srq,
                        xrcd: c.xrcd,
                        log_sq_size: c.log_sq_size,
                        log_rq_size: c.log_rq_size,
                        attrs,
                        sq_sig_all: c.sq_sig_all,
                        uid: c.uid,
                        rt: Default::default(),
                    },
                    ext,
                )
            })
            .ok_or(EngineError::Limit(Kind::Qp))
    }

    pub fn destroy_qp(&mut self, qpn: u32) -> Result<(), EngineError> {
        self.qps.remove(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
        self.rt.forget_qp(qpn);
        Ok(())
    }

    /// Sets the state of a raw-packet QP (an Ethernet SQ or RQ) directly: such a queue has no transport
    /// and its MODIFY_SQ/MODIFY_RQ name the target state, not a verbs transition. Reset clears its
    /// transport state; no other side effect (the caller flushes). Returns the previous state.
    pub fn set_raw_state(&mut self, qpn: u32, state: QpState) -> Result<QpState, EngineError> {
        let qp = self.qps.obj_mut(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
        if qp.qp_type != QpType::RawPacket {
            return Err(EngineError::BadParam("not a raw packet QP"));
        }
        let from = qp.state;
        qp.state = state;
        if state == QpState::Reset {
            qp.rt = Default::default();
        }
        Ok(from)
    }

    /// Applies a state transition with its attribute update. Illegal
    /// transitions leave the QP untouched.
    pub fn modify_qp(&mut self, qpn: u32, t: QpTransition, update: &QpAttrUpdate) -> Result<QpState, EngineError> {
        let qp = self.qps.obj_mut(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
        if let Some(from) = t.from_state() {
            if qp.state != from {
                return Err(EngineError::QpState { qpn, state: qp.state, transition: t });
            }
        }
        if let Some(m) = update.path_mtu {
            if Mtu::from_ib_enum(m.ib_enum()) != Some(m) {
                return Err(EngineError::BadParam("path mtu"));
            }
        }
        if update.retry_cnt.is_some_and(|v| v > 7) || update.rnr_retry.is_some_and(|v| v > 7) {
            return Err(EngineError::BadParam("retry count"));
        }
        if update.timeout.is_some_and(|v| v > 31) || update.min_rnr_timer.is_some_and(|v| v > 31) {
            return Err(EngineError::BadParam("timer"));
        }
        match t {
            QpTransition::ToRst => qp.attrs = QpAttrs::default(),
            _ => qp.attrs.apply(update),
        }
        let from = qp.state;
        qp.state = t.to_state();
        let to = qp.state;
        self.on_transition(qpn, to, from);
        Ok(to)
    }
}

/// How many objects of each kind an engine holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ObjectCounts {
    pub pds: usize,
    pub xrcds: usize,
    pub cqs: usize,
    pub srqs: usize,
    pub mkeys: usize,
    pub qps: usize,
}

/// The tables, for the personality (each entry with its context) and the
/// control socket.
impl<P: Personality> Engine<P> {
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn counts(&self) -> ObjectCounts {
        ObjectCounts {
            pds: self.pds.len(),
            xrcds: self.xrcds.len(),
            cqs: self.cqs.len(),
            srqs: self.srqs.len(),
            mkeys: self.mkeys.len(),
            qps: self.qps.len(),
        }
    }

    pub fn pd_exists(&self, pdn: u32) -> bool {
        self.pds.contains(pdn)
    }

    /// The uid (user context) PD `pdn` belongs to.
    pub fn pd_uid(&self, pdn: u32) -> Option<u16> {
        self.pds.get(pdn).map(|p| p.uid)
    }

    /// The uid XRC domain `n` belongs to.
    pub fn xrcd_uid(&self, n: u32) -> Option<u16> {
        self.xrcds.get(n).map(|x| x.uid)
    }

    /// PDs, XRC domains, SRQs, memory keys and QPs of user context `uid` (CQs keep their uid in
    /// the personality's context).
    pub fn owned_by(&self, uid: u16) -> usize {
        self.pds.iter().filter(|(_, p)| p.uid == uid).count()
            + self.xrcds.iter().filter(|(_, x)| x.uid == uid).count()
            + self.srqs.iter().filter(|(_, s)| s.uid == uid).count()
            + self.mkeys.iter().filter(|(_, m)| m.uid == uid).count()
            + self.qps.iter().filter(|(_, q)| q.uid == uid).count()
    }

    pub fn qp(&self, qpn: u32) -> Option<&Slot<Qp, P::Qp>> {
        self.qps.get(qpn)
    }

    pub fn qp_mut(&mut self, qpn: u32) -> Option<&mut Slot<Qp, P::Qp>> {
        self.qps.get_mut(qpn)
    }

    pub fn qps(&self) -> impl Iterator<Item = (u32, &Slot<Qp, P::Qp>)> {
        self.qps.iter()
    }

    pub fn qps_mut(&mut self) -> impl Iterator<Item = (u32, &mut Slot<Qp, P::Qp>)> {
        self.qps.iter_mut()
    }

    pub fn cq(&self, cqn: u32) -> Option<&Slot<Cq, P::Cq>> {
        self.cqs.get(cqn)
    }

    pub fn cq_mut(&mut self, cqn: u32) -> Option<&mut Slot<Cq, P::Cq>> {
        self.cqs.get_mut(cqn)
    }

    pub fn cqs(&self) -> impl Iterator<Item = (u32, &Slot<Cq, P::Cq>)> {
        self.cqs.iter()
    }

    pub fn srq(&self, srqn: u32) -> Option<&Slot<Srq, P::Srq>> {
        self.srqs.get(srqn)
    }

    pub fn srq_mut(&mut self, srqn: u32) -> Option<&mut Slot<Srq, P::Srq>> {
        self.srqs.get_mut(srqn)
    }

    pub fn srqs(&self) -> impl Iterator<Item = (u32, &Slot<Srq, P::Srq>)> {
        self.srqs.iter()
    }

    /// A memory key by its 24-bit index (any variant).
    pub fn mkey(&self, index: u32) -> Option<&Slot<Mkey, P::Mkey>> {
        self.mkeys.get(index)
    }

    pub fn mkey_mut(&mut self, index: u32) -> Option<&mut Slot<Mkey, P::Mkey>> {
        self.mkeys.get_mut(index)
    }

    pub fn mkeys(&self) -> impl Iterator<Item = (u32, &Slot<Mkey, P::Mkey>)> {
        self.mkeys.iter()
    }

    /// The engine clock (ns).
    pub fn now_ns(&self) -> u64 {
        self.rt.io.clock.now_ns()
    }

    /// Whether a fabric worker runs the engine's timers (without one the
    /// caller drives them).
    pub fn has_waker(&self) -> bool {
        self.rt.waker.is_some()
    }

    /// Wakes the fabric's worker (timers changed).
    pub fn wake(&self) {
        if let Some(w) = &self.rt.waker {
            w();
        }
    }

    /// Sets what wakes the fabric's worker.
    pub fn set_waker(&mut self, waker: Option<std::sync::Arc<dyn Fn() + Send + Sync>>) {
        self.rt.waker = waker;
    }

    /// Received packets the engine could hand to no QP.
    pub fn drops(&self) -> &EngineDrops {
        &self.rt.drops
    }

    /// The runtime's counters, writable (tests of other layers set them).
    #[doc(hidden)]
    pub fn counters_mut(&mut self) -> (&mut QpCounters, &mut EngineDrops) {
        (&mut self.rt.totals, &mut self.rt.drops)
    }

    /// Replaces the engine clock (tests of other layers).
    #[doc(hidden)]
    pub fn set_clock(&mut self, clock: std::sync::Arc<dyn vrnic_sys::clock::Clock>) {
        self.rt.io.clock = clock;
    }
}
