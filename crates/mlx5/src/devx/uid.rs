//! The uid rules: who may issue a command, and which objects a command of one uid may touch.
//!
//! From what Linux 6.12's mlx5_ib sends (drivers/infiniband/hw/mlx5/devx.c, qp.c, srq_cmd.c):
//! - Uid 0 is the kernel: it may do anything, to any object (it queries user QPs with uid 0 and
//!   points its own steering at DevX objects). 0xffff (`MLX5_SHARED_RESOURCE_UID`) marks what the
//!   kernel creates for every context to share (completion EQs, Q counters) and is the kernel too.
//! - A user context's uid issues only what mlx5_ib forwards for a process ([`user_command`]): the
//!   DevX general queries, object creates, modifies, queries and destroys, and the verbs commands
//!   mlx5_ib sends on the process's behalf; never the function's lifecycle, pages, capabilities,
//!   EQs or registers.
//! - It may modify, query or destroy only its own objects ([`may_act_on`]).
//! - A create of uid U may name its own objects and the shared ones; also the kernel's CQs, SRQs
//!   and XRC domains, because mlx5_ib itself points user QPs at them (`devr->c0`, `s0`, `s1`,
//!   `xrcdn0/1` in `create_user_qp`); but never the kernel's PDs (the UMR PD's keys reach any
//!   physical address) and never another user's objects ([`may_reference`]).
//! - What a uid may not see answers as if it did not exist (BAD_RES).

use crate::fields::Field;
use crate::ifc;

/// The kernel's uid.
pub const KERNEL_UID: u16 = 0;
/// `MLX5_SHARED_RESOURCE_UID`: the kernel's objects every context may use.
pub const SHARED_UID: u16 = ifc::MLX5_SHARED_RESOURCE_UID as u16;

/// The objects the rules name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pd,
    Xrcd,
    Cq,
    /// SRQs, RMPs and XRC SRQs (one number space).
    Srq,
    Qp,
    /// By the 24-bit mkey index.
    Mkey,
    Uar,
    /// Registered memory (CREATE_UMEM): only ever its own process's.
    Umem,
}

/// Whether `uid` is the kernel's (0 or the shared uid).
pub fn is_kernel(uid: u16) -> bool {
    uid == KERNEL_UID || uid == SHARED_UID
}

/// Whether a command of `caller` may modify, query or destroy an object of `owner`.
pub fn may_act_on(caller: u16, owner: u16) -> bool {
    is_kernel(caller) || caller == owner
}

/// Whether a create of `caller` may name an object of `owner` of `kind`.
pub fn may_reference(caller: u16, owner: u16, kind: Kind) -> bool {
    if is_kernel(caller) || owner == caller || owner == SHARED_UID {
        return true;
    }
    owner == KERNEL_UID && matches!(kind, Kind::Cq | Kind::Srq | Kind::Xrcd)
}

/// The object a command modifies, queries or destroys, and the input field naming it.
pub fn acts_on(opcode: u16) -> Option<(Kind, Field)> {
    use ifc::*;
    let op = opcode as u32;
    Some(match op {
        MLX5_CMD_OP_DEALLOC_PD => (Kind::Pd, dealloc_pd_in::pd),
        MLX5_CMD_OP_DEALLOC_XRCD => (Kind::Xrcd, dealloc_xrcd_in::xrcd),
        MLX5_CMD_OP_DESTROY_CQ => (Kind::Cq, destroy_cq_in::cqn),
        MLX5_CMD_OP_QUERY_CQ => (Kind::Cq, query_cq_in::cqn),
        MLX5_CMD_OP_MODIFY_CQ => (Kind::Cq, modify_cq_in::cqn),
        MLX5_CMD_OP_DESTROY_SRQ => (Kind::Srq, destroy_srq_in::srqn),
        MLX5_CMD_OP_QUERY_SRQ => (Kind::Srq, query_srq_in::srqn),
        MLX5_CMD_OP_ARM_RQ => (Kind::Srq, arm_rq_in::srq_number),
        MLX5_CMD_OP_DESTROY_RMP => (Kind::Srq, destroy_rmp_in::rmpn),
        MLX5_CMD_OP_QUERY_RMP => (Kind::Srq, query_rmp_in::rmpn),
        MLX5_CMD_OP_MODIFY_RMP => (Kind::Srq, modify_rmp_in::rmpn),
        MLX5_CMD_OP_DESTROY_XRC_SRQ => (Kind::Srq, destroy_xrc_srq_in::xrc_srqn),
        MLX5_CMD_OP_QUERY_XRC_SRQ => (Kind::Srq, query_xrc_srq_in::xrc_srqn),
        MLX5_CMD_OP_ARM_XRC_SRQ => (Kind::Srq, arm_xrc_srq_in::xrc_srqn),
        MLX5_CMD_OP_DESTROY_QP => (Kind::Qp, destroy_qp_in::qpn),
        MLX5_CMD_OP_QUERY_QP => (Kind::Qp, query_qp_in::qpn),
        MLX5_CMD_OP_RST2INIT_QP => (Kind::Qp, rst2init_qp_in::qpn),
        MLX5_CMD_OP_INIT2INIT_QP => (Kind::Qp, init2init_qp_in::qpn),
        MLX5_CMD_OP_INIT2RTR_QP => (Kind::Qp, init2rtr_qp_in::qpn),
        MLX5_CMD_OP_RTR2RTS_QP => (Kind::Qp, rtr2rts_qp_in::qpn),
        MLX5_CMD_OP_RTS2RTS_QP => (Kind::Qp, rts2rts_qp_in::qpn),
        MLX5_CMD_OP_SQERR2RTS_QP => (Kind::Qp, sqerr2rts_qp_in::qpn),
        MLX5_CMD_OP_SQD_RTS_QP => (Kind::Qp, sqd2rts_qp_in::qpn),
        MLX5_CMD_OP_2ERR_QP => (Kind::Qp, qp_2err_in::qpn),
        MLX5_CMD_OP_2RST_QP => (Kind::Qp, qp_2rst_in::qpn),
        MLX5_CMD_OP_ATTACH_TO_MCG => (Kind::Qp, attach_to_mcg_in::qpn),
        MLX5_CMD_OP_DETACH_FROM_MCG => (Kind::Qp, detach_from_mcg_in::qpn),
        MLX5_CMD_OP_DESTROY_MKEY => (Kind::Mkey, destroy_mkey_in::mkey_index),
        MLX5_CMD_OP_QUERY_MKEY => (Kind::Mkey, query_mkey_in::mkey_index),
        MLX5_CMD_OP_DEALLOC_UAR => (Kind::Uar, dealloc_uar_in::uar),
        MLX5_CMD_OP_DESTROY_UMEM => (Kind::Umem, destroy_umem_in::umem_id),
        _ => return None,
    })
}

/// The objects a create names (whether or not the object type uses each: mlx5_ib fills them all).
pub fn references(opcode: u16) -> &'static [(Kind, Field)] {
    use ifc::*;
    match opcode as u32 {
        MLX5_CMD_OP_CREATE_QP => &[
            (Kind::Umem, create_qp_in::wq_umem_id),
            (Kind::Umem, rdma_core::create_qp_in::dbr_umem_id),
            (Kind::Pd, create_qp_in::qpc::pd),
            (Kind::Cq, create_qp_in::qpc::cqn_snd),
            (Kind::Cq, create_qp_in::qpc::cqn_rcv),
            (Kind::Srq, create_qp_in::qpc::srqn_rmpn_xrqn),
            (Kind::Xrcd, create_qp_in::qpc::xrcd),
        ],
        MLX5_CMD_OP_CREATE_CQ => {
            &[(Kind::Umem, rdma_core::create_cq_in::cq_umem_id), (Kind::Umem, rdma_core::create_cq_in::dbr_umem_id)]
        }
        MLX5_CMD_OP_CREATE_SRQ => &[
            (Kind::Pd, create_srq_in::srq_context_entry::pd),
            (Kind::Cq, create_srq_in::srq_context_entry::cqn),
            (Kind::Xrcd, create_srq_in::srq_context_entry::xrcd),
        ],
        MLX5_CMD_OP_CREATE_XRC_SRQ => &[
            (Kind::Pd, create_xrc_srq_in::xrc_srq_context_entry::pd),
            (Kind::Cq, create_xrc_srq_in::xrc_srq_context_entry::cqn),
            (Kind::Xrcd, create_xrc_srq_in::xrc_srq_context_entry::xrcd),
        ],
        MLX5_CMD_OP_CREATE_RMP => &[
            (Kind::Pd, create_rmp_in::ctx::wq::pd),
            (Kind::Umem, create_rmp_in::ctx::wq::wq_umem_id),
            (Kind::Umem, create_rmp_in::ctx::wq::dbr_umem_id),
        ],
        MLX5_CMD_OP_CREATE_SQ => &[
            (Kind::Pd, create_sq_in::ctx::wq::pd),
            (Kind::Umem, create_sq_in::ctx::wq::wq_umem_id),
            (Kind::Umem, create_sq_in::ctx::wq::dbr_umem_id),
        ],
        MLX5_CMD_OP_CREATE_RQ => &[
            (Kind::Pd, create_rq_in::ctx::wq::pd),
            (Kind::Umem, create_rq_in::ctx::wq::wq_umem_id),
            (Kind::Umem, create_rq_in::ctx::wq::dbr_umem_id),
        ],
        MLX5_CMD_OP_CREATE_MKEY => &[(Kind::Pd, create_mkey_in::memory_key_mkey_entry::pd)],
        _ => &[],
    }
}

/// Whether a user context's uid may issue `opcode`: what mlx5_ib forwards for a process (devx.c
/// `devx_is_general_cmd`, `devx_is_obj_create_cmd`, `_modify_`, `_query_`, the destroys it builds,
/// UMEM) and what it sends itself with the process's uid (UARs, transport domains, multicast).
pub fn user_command(opcode: u16) -> bool {
    use ifc::*;
    let op = opcode as u32;
    // DevX general commands: the vendor range [GENERAL_START, GENERAL_END) is forwarded whole.
    if (0xb00..0xd00).contains(&op) {
        return true;
    }
    matches!(
        op,
        // general queries
        MLX5_CMD_OP_QUERY_HCA_CAP
            | MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT
            | MLX5_CMD_OP_QUERY_ESW_VPORT_CONTEXT
            | MLX5_CMD_OP_QUERY_VPORT_STATE
            | MLX5_CMD_OP_QUERY_ADAPTER
            | MLX5_CMD_OP_QUERY_ISSI
            | MLX5_CMD_OP_QUERY_NIC_VPORT_CONTEXT
            | MLX5_CMD_OP_QUERY_ROCE_ADDRESS
            | MLX5_CMD_OP_QUERY_VNIC_ENV
            | MLX5_CMD_OP_QUERY_VPORT_COUNTER
            | MLX5_CMD_OP_GET_DROPPED_PACKET_LOG
            | MLX5_CMD_OP_NOP
            | MLX5_CMD_OP_QUERY_CONG_STATUS
            | MLX5_CMD_OP_QUERY_CONG_PARAMS
            | MLX5_CMD_OP_QUERY_CONG_STATISTICS
            | MLX5_CMD_OP_QUERY_LAG
            | MLX5_CMD_OP_QUERY_ESW_FUNCTIONS
            // creates and their destroys
            | MLX5_CMD_OP_CREATE_GENERAL_OBJECT
            | MLX5_CMD_OP_DESTROY_GENERAL_OBJECT
            | MLX5_CMD_OP_CREATE_MKEY
            | MLX5_CMD_OP_DESTROY_MKEY
            | MLX5_CMD_OP_CREATE_CQ
            | MLX5_CMD_OP_DESTROY_CQ
            | MLX5_CMD_OP_ALLOC_PD
            | MLX5_CMD_OP_DEALLOC_PD
            | MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN
            | MLX5_CMD_OP_DEALLOC_TRANSPORT_DOMAIN
            | MLX5_CMD_OP_CREATE_RMP
            | MLX5_CMD_OP_DESTROY_RMP
            | MLX5_CMD_OP_CREATE_SQ
            | MLX5_CMD_OP_DESTROY_SQ
            | MLX5_CMD_OP_CREATE_RQ
            | MLX5_CMD_OP_DESTROY_RQ
            | MLX5_CMD_OP_CREATE_RQT
            | MLX5_CMD_OP_DESTROY_RQT
            | MLX5_CMD_OP_CREATE_TIR
            | MLX5_CMD_OP_DESTROY_TIR
            | MLX5_CMD_OP_CREATE_TIS
            | MLX5_CMD_OP_DESTROY_TIS
            | MLX5_CMD_OP_ALLOC_Q_COUNTER
            | MLX5_CMD_OP_DEALLOC_Q_COUNTER
            | MLX5_CMD_OP_CREATE_FLOW_TABLE
            | MLX5_CMD_OP_DESTROY_FLOW_TABLE
            | MLX5_CMD_OP_CREATE_FLOW_GROUP
            | MLX5_CMD_OP_DESTROY_FLOW_GROUP
            | MLX5_CMD_OP_ALLOC_FLOW_COUNTER
            | MLX5_CMD_OP_DEALLOC_FLOW_COUNTER
            | MLX5_CMD_OP_ALLOC_PACKET_REFORMAT_CONTEXT
            | MLX5_CMD_OP_DEALLOC_PACKET_REFORMAT_CONTEXT
            | MLX5_CMD_OP_ALLOC_MODIFY_HEADER_CONTEXT
            | MLX5_CMD_OP_DEALLOC_MODIFY_HEADER_CONTEXT
            | MLX5_CMD_OP_CREATE_SCHEDULING_ELEMENT
            | MLX5_CMD_OP_DESTROY_SCHEDULING_ELEMENT
            | MLX5_CMD_OP_ADD_VXLAN_UDP_DPORT
            | MLX5_CMD_OP_DELETE_VXLAN_UDP_DPORT
            | MLX5_CMD_OP_SET_L2_TABLE_ENTRY
            | MLX5_CMD_OP_DELETE_L2_TABLE_ENTRY
            | MLX5_CMD_OP_CREATE_QP
            | MLX5_CMD_OP_DESTROY_QP
            | MLX5_CMD_OP_CREATE_SRQ
            | MLX5_CMD_OP_DESTROY_SRQ
            | MLX5_CMD_OP_CREATE_XRC_SRQ
            | MLX5_CMD_OP_DESTROY_XRC_SRQ
            | MLX5_CMD_OP_CREATE_DCT
            | MLX5_CMD_OP_DESTROY_DCT
            | MLX5_CMD_OP_DRAIN_DCT
            | MLX5_CMD_OP_CREATE_XRQ
            | MLX5_CMD_OP_DESTROY_XRQ
            | MLX5_CMD_OP_ATTACH_TO_MCG
            | MLX5_CMD_OP_DETACH_FROM_MCG
            | MLX5_CMD_OP_ALLOC_XRCD
            | MLX5_CMD_OP_DEALLOC_XRCD
            | MLX5_CMD_OP_SET_FLOW_TABLE_ENTRY
            | MLX5_CMD_OP_DELETE_FLOW_TABLE_ENTRY
            | MLX5_CMD_OP_CREATE_PSV
            | MLX5_CMD_OP_DESTROY_PSV
            | MLX5_CMD_OP_CREATE_UMEM
            | MLX5_CMD_OP_DESTROY_UMEM
            | MLX5_CMD_OP_ALLOC_UAR
            | MLX5_CMD_OP_DEALLOC_UAR
            // modifies
            | MLX5_CMD_OP_MODIFY_GENERAL_OBJECT
            | MLX5_CMD_OP_MODIFY_CQ
            | MLX5_CMD_OP_MODIFY_RMP
            | MLX5_CMD_OP_MODIFY_SQ
            | MLX5_CMD_OP_MODIFY_RQ
            | MLX5_CMD_OP_MODIFY_RQT
            | MLX5_CMD_OP_MODIFY_TIR
            | MLX5_CMD_OP_MODIFY_TIS
            | MLX5_CMD_OP_MODIFY_FLOW_TABLE
            | MLX5_CMD_OP_MODIFY_SCHEDULING_ELEMENT
            | MLX5_CMD_OP_RST2INIT_QP
            | MLX5_CMD_OP_INIT2RTR_QP
            | MLX5_CMD_OP_INIT2INIT_QP
            | MLX5_CMD_OP_RTR2RTS_QP
            | MLX5_CMD_OP_RTS2RTS_QP
            | MLX5_CMD_OP_SQERR2RTS_QP
            | MLX5_CMD_OP_SQD_RTS_QP
            | MLX5_CMD_OP_2ERR_QP
            | MLX5_CMD_OP_2RST_QP
            | MLX5_CMD_OP_ARM_XRC_SRQ
            | MLX5_CMD_OP_ARM_RQ
            | MLX5_CMD_OP_ARM_DCT_FOR_KEY_VIOLATION
            | MLX5_CMD_OP_ARM_XRQ
            | MLX5_CMD_OP_SET_XRQ_DC_PARAMS_ENTRY
            | MLX5_CMD_OP_RELEASE_XRQ_ERROR
            | MLX5_CMD_OP_MODIFY_XRQ
            // queries
            | MLX5_CMD_OP_QUERY_GENERAL_OBJECT
            | MLX5_CMD_OP_QUERY_MKEY
            | MLX5_CMD_OP_QUERY_CQ
            | MLX5_CMD_OP_QUERY_RMP
            | MLX5_CMD_OP_QUERY_SQ
            | MLX5_CMD_OP_QUERY_RQ
            | MLX5_CMD_OP_QUERY_RQT
            | MLX5_CMD_OP_QUERY_TIR
            | MLX5_CMD_OP_QUERY_TIS
            | MLX5_CMD_OP_QUERY_Q_COUNTER
            | MLX5_CMD_OP_QUERY_FLOW_TABLE
            | MLX5_CMD_OP_QUERY_FLOW_GROUP
            | MLX5_CMD_OP_QUERY_FLOW_TABLE_ENTRY
            | MLX5_CMD_OP_QUERY_FLOW_COUNTER
            | MLX5_CMD_OP_QUERY_MODIFY_HEADER_CONTEXT
            | MLX5_CMD_OP_QUERY_SCHEDULING_ELEMENT
            | MLX5_CMD_OP_QUERY_L2_TABLE_ENTRY
            | MLX5_CMD_OP_QUERY_QP
            | MLX5_CMD_OP_QUERY_SRQ
            | MLX5_CMD_OP_QUERY_XRC_SRQ
            | MLX5_CMD_OP_QUERY_DCT
            | MLX5_CMD_OP_QUERY_XRQ
            | MLX5_CMD_OP_QUERY_XRQ_DC_PARAMS_ENTRY
            | MLX5_CMD_OP_QUERY_XRQ_ERROR_PARAMS
            | MLX5_CMD_OP_QUERY_PACKET_REFORMAT_CONTEXT
    )
}
