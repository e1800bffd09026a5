//! The RNIC queue engine: verbs objects (PD, XRCD, CQ, SRQ, MKEY, QP) and,
//! on top of them, the RC/UC/UD/XRC transports. It knows nothing of mlx5
//! byte layouts or sockets: the personality creates and modifies objects
//! through this API and keeps its own context of each (buffer addresses,
//! page lists, doorbell records) in the engine's entry for that object
//! ([`personality`]); packets leave through a [`vrnic_packet::PacketSink`].

#![forbid(unsafe_code)]

pub mod instance;
pub mod mem;
pub mod mkey;
pub mod objects;
pub mod personality;
pub mod qp;
pub mod table;
pub mod transport;
pub mod types;
pub mod verbs;

#[cfg(test)]
mod cc_tests;
#[cfg(test)]
mod errors_tests;
#[cfg(test)]
mod grh_tests;
#[cfg(test)]
mod loss_tests;
#[cfg(test)]
mod nop_tests;
#[cfg(test)]
mod pkey_tests;
#[cfg(test)]
mod rc_tests;
#[cfg(test)]
mod responder_tests;
#[cfg(test)]
mod scale_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod ud_uc_tests;
#[cfg(test)]
mod xrc_tests;

pub use instance::{Engine, Limits, ObjectCounts, QpCreate, SrqCreate};
pub use mkey::*;
pub use objects::*;
pub use personality::{Personality, Slot};
pub use qp::Qp;
pub use table::Table;
pub use transport::{consumes_recv, Io, QpCounters, Runtime, SharedEngine};
pub use types::{EngineError, GuestMemory, Kind, MemFault};
pub use verbs::*;

#[cfg(test)]
mod tests {
    use super::*;

    fn engine_with_cq() -> (Engine, u32, u32) {
        let mut e = Engine::new(Limits::default());
        let pd = e.alloc_pd(0).unwrap();
        let cq = e.create_cq(6).unwrap();
        (e, pd, cq)
    }

    fn rc(pd: u32, cq: u32) -> QpCreate {
        QpCreate {
            qp_type: QpType::Rc,
            pd,
            send_cq: Some(cq),
            recv_cq: Some(cq),
            srq: None,
            xrcd: None,
            log_sq_size: 6,
            log_rq_size: 6,
            sq_sig_all: false,
            uid: 0,
        }
    }

    #[test]
    fn qp_state_machine_legal_and_illegal() {
        let (mut e, pd, cq) = engine_with_cq();
        let q = e.create_qp(rc(pd, cq)).unwrap();
        assert!(q >= 0x100);
        assert!(matches!(
            e.modify_qp(q, QpTransition::InitToRtr, &QpAttrUpdate::default()),
            Err(EngineError::QpState { .. })
        ));
        assert_eq!(e.qps.obj(q).unwrap().state, QpState::Reset, "illegal transition leaves the QP alone");
        e.modify_qp(
            q,
            QpTransition::RstToInit,
            &QpAttrUpdate { pkey_index: Some(0), port: Some(1), ..Default::default() },
        )
        .unwrap();
        e.modify_qp(q, QpTransition::InitToInit, &QpAttrUpdate::default()).unwrap();
        let up =
            QpAttrUpdate { dest_qpn: Some(0x123), rq_psn: Some(77), path_mtu: Some(Mtu(1024)), ..Default::default() };
        e.modify_qp(q, QpTransition::InitToRtr, &up).unwrap();
        e.modify_qp(
            q,
            QpTransition::RtrToRts,
            &QpAttrUpdate { sq_psn: Some(5), retry_cnt: Some(7), ..Default::default() },
        )
        .unwrap();
        e.modify_qp(q, QpTransition::RtsToRts, &QpAttrUpdate::default()).unwrap();
        let qp = e.qps.obj(q).unwrap();
        assert_eq!(
            (qp.state, qp.attrs.dest_qpn, qp.attrs.rq_psn, qp.attrs.sq_psn, qp.attrs.path_mtu),
            (QpState::Rts, 0x123, 77, 5, Mtu(1024))
        );
        assert!(matches!(
            e.modify_qp(q, QpTransition::RtsToRts, &QpAttrUpdate { retry_cnt: Some(8), ..Default::default() }),
            Err(EngineError::BadParam(_))
        ));
        assert!(matches!(
            e.modify_qp(q, QpTransition::SqerrToRts, &QpAttrUpdate::default()),
            Err(EngineError::QpState { .. })
        ));
        e.modify_qp(q, QpTransition::ToErr, &QpAttrUpdate::default()).unwrap();
        assert!(matches!(
            e.modify_qp(q, QpTransition::RtsToRts, &QpAttrUpdate::default()),
            Err(EngineError::QpState { .. })
        ));
        e.modify_qp(q, QpTransition::ToRst, &QpAttrUpdate::default()).unwrap();
        assert_eq!(e.qps.obj(q).unwrap().attrs, QpAttrs::default());
        assert!(matches!(
            e.modify_qp(0x999, QpTransition::ToRst, &QpAttrUpdate::default()),
            Err(EngineError::NoSuch(Kind::Qp, 0x999))
        ));
    }

    #[test]
    fn references_are_checked() {
        let (mut e, pd, cq) = engine_with_cq();
        assert!(matches!(
            e.create_qp(QpCreate { send_cq: Some(99), ..rc(pd, cq) }),
            Err(EngineError::NoSuch(Kind::Cq, 99))
        ));
        assert!(matches!(e.create_qp(QpCreate { pd: 99, ..rc(pd, cq) }), Err(EngineError::NoSuch(Kind::Pd, 99))));
        let q = e.create_qp(rc(pd, cq)).unwrap();
        assert_eq!(e.destroy_cq(cq), Err(EngineError::Busy(Kind::Cq, cq)));
        e.destroy_qp(q).unwrap();
        e.destroy_cq(cq).unwrap();
        assert!(matches!(e.create_cq(30), Err(EngineError::BadParam(_))));
    }

    #[test]
    fn limits_and_keys() {
        let mut e = Engine::new(Limits { pds: 2, ..Limits::default() });
        let pd = e.alloc_pd(0).unwrap();
        e.alloc_pd(0).unwrap();
        assert_eq!(e.alloc_pd(0), Err(EngineError::Limit(Kind::Pd)));
        let idx = e
            .create_mkey(Mkey {
                variant: 0x5a,
                pd,
                access: Access::LOCAL_WRITE,
                start: 0,
                length: 0x1000,
                whole_space: false,
                translation: Translation::Physical,
                free: false,
                uid: 0,
            })
            .unwrap();
        assert!(e.lookup_key(Mkey::key(idx, 0x5a)).is_some());
        assert!(e.lookup_key(Mkey::key(idx, 0x5b)).is_none(), "variant must match");
        // No key below FIRST_MKEY_INDEX: a repeat block's op word (0x400) is never a key.
        assert_eq!(idx, FIRST_MKEY_INDEX);
        assert!(e.lookup_key(0x400).is_none());
        e.reset();
        assert!(e.pds.is_empty() && e.mkeys.is_empty());
    }
}
