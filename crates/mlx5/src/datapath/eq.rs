//! Event queues: the EQE writer ([`Core::post_eqe`]), the EQ doorbell
//! (consumer index and re-arm), and the events the data path raises
//! (completion, CQ error, QP/SRQ events, port change).
//!
//! An EQ is all mlx5's: its buffer, counts, arming and vector are one
//! [`super::ctx::EqCtx`], numbered by CREATE_EQ (the engine knows no EQs).

use std::sync::atomic::Ordering;

use tracing::{debug, warn};

use super::ctx::expand_ci;
use crate::core::Core;
use crate::firmware::Firmware;
use crate::ifc;
use crate::queue_buf::buf_addr;
use vrnic_engine::verbs::Event;

/// Bytes of an EQE.
const EQE_SIZE: u64 = 64;

impl Core {
    /// Writes one EQE into EQ `eqn` and raises its vector if armed.
    pub fn post_eqe(&mut self, eqn: u32, event_type: u8, sub_type: u8, data: &[u8; 28]) -> bool {
        let Some(eq) = self.eqs.get_mut(eqn) else { return false };
        let nent = 1u32 << eq.log_size;
        if eq.producer.wrapping_sub(eq.consumer) >= nent {
            warn!(eqn, "EQ overrun: event {event_type:#x} dropped");
            return false;
        }
        let idx = eq.producer & (nent - 1);
        let owner = ((eq.producer >> eq.log_size) & 1) as u8;
        let Some(addr) = buf_addr(&eq.pas, eq.log_page_size, eq.page_offset, idx as u64 * EQE_SIZE) else {
            warn!(eqn, "EQE address outside the EQ's pages");
            return false;
        };
        let mut eqe = [0u8; EQE_SIZE as usize];
        eqe[1] = event_type;
        eqe[3] = sub_type;
        eqe[0x20..0x20 + 28].copy_from_slice(data);
        // Body first, then the owner byte.
        if self.mem.write(addr, &eqe[..63]).is_err() {
            warn!(eqn, addr, "EQE write outside guest memory");
            return false;
        }
        std::sync::atomic::fence(Ordering::Release);
        if self.mem.write(addr + 63, &[owner]).is_err() {
            return false;
        }
        eq.producer = eq.producer.wrapping_add(1);
        self.stats.eqes.fetch_add(1, Ordering::Relaxed);
        if eq.armed {
            eq.armed = false;
            let v = eq.vector;
            self.stats.interrupts.fetch_add(1, Ordering::Relaxed);
            let _ = self.irqs.raise(v);
        }
        true
    }

    /// EQ doorbell: new consumer index (24 bits, widened as the CQs' are),
    /// optionally re-arm.
    pub(super) fn update_eq(&mut self, eqn: u32, ci: u32, arm: bool) {
        let Some(eq) = self.eqs.get_mut(eqn) else {
            debug!(eqn, "doorbell for a nonexistent EQ ignored");
            return;
        };
        eq.consumer = expand_ci(eq.producer, ci);
        if arm {
            if eq.producer != eq.consumer {
                // Unconsumed events: interrupt at once.
                eq.armed = false;
                let v = eq.vector;
                self.stats.interrupts.fetch_add(1, Ordering::Relaxed);
                let _ = self.irqs.raise(v);
            } else {
                eq.armed = true;
            }
        }
    }

    /// The EQs whose event bitmask asks for events of type `ty`.
    pub(crate) fn eqs_for(&self, ty: u32) -> Vec<u32> {
        self.eqs.iter().filter(|(_, e)| e.event_bitmask[0] & (1u64 << ty) != 0).map(|(n, _)| n).collect()
    }

    /// An asynchronous event the engine reported, as EQEs.
    pub(super) fn engine_event(&mut self, ev: Event) {
        let qp_event = |core: &mut Core, ty: u32, n: u32, srq: bool| {
            let mut data = [0u8; 28];
            ifc::qp_events::r#type.set(&mut data, srq as u64);
            ifc::qp_events::qpn_rqn_sqn.set(&mut data, n as u64);
            for eqn in core.eqs_for(ty) {
                core.post_eqe(eqn, ty as u8, 0, &data);
            }
        };
        match ev {
            Event::CqError { cqn } => {
                warn!(cqn, "CQ overrun");
                let mut data = [0u8; 28];
                ifc::cq_error::cqn.set(&mut data, cqn as u64);
                ifc::cq_error::syndrome.set(&mut data, 1);
                for eqn in self.eqs_for(ifc::MLX5_EVENT_TYPE_CQ_ERROR) {
                    self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_CQ_ERROR as u8, 0, &data);
                }
            }
            Event::SrqLimit { srqn } => qp_event(self, ifc::MLX5_EVENT_TYPE_SRQ_RQ_LIMIT, srqn, true),
            Event::LastWqeReached { qpn } => qp_event(self, ifc::MLX5_EVENT_TYPE_SRQ_LAST_WQE, qpn, false),
            Event::CommEstablished { qpn } => qp_event(self, ifc::MLX5_EVENT_TYPE_COMM_EST, qpn, false),
            Event::QpFatal { qpn } => debug!(qpn, "QP entered ERR after an error completion"),
        }
    }

    /// PORT_CHANGE with `sub_type` (1 DOWN, 4 ACTIVE, 5 INITIALIZED, 6 LID,
    /// 8 GUID, 9 CLIENT_REREG) for port 1, to every EQ that asked for it.
    pub(crate) fn port_event(&mut self, sub_type: u8) {
        let mut data = [0u8; 28];
        ifc::port_state_change_event::port_num.set(&mut data, 1);
        for eqn in self.eqs_for(ifc::MLX5_EVENT_TYPE_PORT_CHANGE) {
            self.post_eqe(eqn, ifc::MLX5_EVENT_TYPE_PORT_CHANGE as u8, sub_type, &data);
        }
    }
}

impl Firmware {
    /// The IB port's cable in or out (`ib::port::PortConfig::set_link`):
    /// PORT_CHANGE (sub_type 4 ACTIVE, 5 INITIALIZED, 1 DOWN) to every EQ
    /// that asked for it.
    pub fn port_change(&mut self, active: bool) {
        let sub = self.cfg.set_link(active);
        self.core.port_event(sub);
    }
}
