//! One device instance's engine: its limits and every verbs object.

use super::objects::*;
use super::qp::Qp;
use super::table::Table;
use super::transport::state::Runtime;
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
        }
    }
}

/// Every verbs object of one device instance.
pub struct Engine {
    pub limits: Limits,
    pub pds: Table<Pd>,
    pub xrcds: Table<Xrcd>,
    pub cqs: Table<Cq>,
    pub srqs: Table<Srq>,
    /// Keyed by the 24-bit mkey index.
    pub mkeys: Table<Mkey>,
    pub qps: Table<Qp>,
    /// Transports: I/O, timers, counters.
    pub rt: Runtime,
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
    pub fn new(limits: Limits) -> Engine {
        Engine {
            limits,
            pds: Table::new(1, 0x00ff_ffff, limits.pds),
            xrcds: Table::new(1, 0x00ff_ffff, limits.xrcds),
            cqs: Table::new(1, 0x00ff_fffe, limits.cqs),
            srqs: Table::new(1, 0x00ff_fffe, limits.srqs),
            // Index 1 is never handed out: with key byte 0 it would be lkey
            // 0x100, `MLX5_INVALID_LKEY`, which ends a receive scatter list.
            mkeys: Table::new(2, 0x00ff_fffe, limits.mkeys),
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
        self.rt.reset();
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

    /// Translation entries held by all keys (the device memory their MTTs take).
    pub fn mtt_entries(&self) -> usize {
        self.mkeys
            .iter()
            .map(|(_, k)| if let Translation::Mtt { pages, .. } = &k.translation { pages.len() } else { 0 })
            .sum()
    }

    pub fn create_cq(&mut self, log_size: u8) -> Result<u32, EngineError> {
        if log_size > self.limits.log_max_cq_size {
            return Err(EngineError::BadParam("cq size"));
        }
        self.cqs.alloc_with(|_| Cq::new(log_size)).ok_or(EngineError::Limit(Kind::Cq))
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
            .alloc_with(|_| Srq { pd, log_size, cqn, xrcd, limit: 0, uid, wqes: Default::default() })
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
        if !self.pds.contains(mkey.pd) {
            return Err(EngineError::NoSuch(Kind::Pd, mkey.pd));
        }
        if let Translation::Mtt { page_shift, .. } = &mkey.translation {
            if !(12..=30).contains(page_shift) {
                return Err(EngineError::BadParam("mkey page size"));
            }
        }
        self.mkeys.alloc_with(|_| mkey).ok_or(EngineError::Limit(Kind::Mkey))
    }

    pub fn destroy_mkey(&mut self, index: u32) -> Result<(), EngineError> {
        self.mkeys.remove(index).map(|_| ()).ok_or(EngineError::NoSuch(Kind::Mkey, index))
    }

    /// Looks a 32-bit key up: the index must exist and the variant match.
    pub fn lookup_key(&self, key: u32) -> Option<&Mkey> {
        self.mkeys.get(key >> 8).filter(|m| m.variant == key as u8)
    }

    pub fn create_qp(&mut self, c: QpCreate) -> Result<u32, EngineError> {
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
            .alloc_with(|_| Qp {
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
        let qp = self.qps.get_mut(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
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
        let qp = self.qps.get_mut(qpn).ok_or(EngineError::NoSuch(Kind::Qp, qpn))?;
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
