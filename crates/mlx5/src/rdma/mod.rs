//! The RDMA object domain, shared by every link layer: PDs, XRC domains,
//! memory keys, CQs, SRQs, QPs, multicast groups and on-device memory. The
//! objects live in the engine; [`state`] keeps their mlx5 contexts.

pub mod cq;
pub mod mcg;
pub mod memic;
pub mod mkey;
pub mod pd;
pub mod qp;
pub mod srq;
pub mod srq_issi1;
pub mod state;

use crate::cmd::dispatch::{command, Command};
use crate::firmware::Firmware;

/// The RDMA domain's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_ALLOC_PD, Enabled, pd::alloc_pd),
    command!(MLX5_CMD_OP_DEALLOC_PD, Enabled, pd::dealloc_pd),
    command!(MLX5_CMD_OP_ALLOC_XRCD, Enabled, pd::alloc_xrcd),
    command!(MLX5_CMD_OP_DEALLOC_XRCD, Enabled, pd::dealloc_xrcd),
    command!(MLX5_CMD_OP_CREATE_MKEY, Enabled, mkey::create_mkey),
    command!(MLX5_CMD_OP_QUERY_MKEY, Enabled, mkey::query_mkey),
    command!(MLX5_CMD_OP_DESTROY_MKEY, Enabled, mkey::destroy_mkey),
    command!(MLX5_CMD_OP_CREATE_CQ, Enabled, cq::create_cq),
    command!(MLX5_CMD_OP_DESTROY_CQ, Enabled, cq::destroy_cq),
    command!(MLX5_CMD_OP_QUERY_CQ, Enabled, cq::query_cq),
    command!(MLX5_CMD_OP_MODIFY_CQ, Enabled, cq::modify_cq),
    command!(MLX5_CMD_OP_CREATE_SRQ, Enabled, srq::create_srq),
    command!(MLX5_CMD_OP_DESTROY_SRQ, Enabled, srq::destroy_srq),
    command!(MLX5_CMD_OP_QUERY_SRQ, Enabled, srq::query_srq),
    command!(MLX5_CMD_OP_ARM_RQ, Enabled, srq::arm_rq),
    command!(MLX5_CMD_OP_CREATE_RMP, Enabled, srq_issi1::create_rmp),
    command!(MLX5_CMD_OP_MODIFY_RMP, Enabled, srq_issi1::modify_rmp),
    command!(MLX5_CMD_OP_QUERY_RMP, Enabled, srq_issi1::query_rmp),
    command!(MLX5_CMD_OP_DESTROY_RMP, Enabled, srq_issi1::destroy_rmp),
    command!(MLX5_CMD_OP_CREATE_XRC_SRQ, Enabled, srq_issi1::create_xrc_srq),
    command!(MLX5_CMD_OP_DESTROY_XRC_SRQ, Enabled, srq_issi1::destroy_xrc_srq),
    command!(MLX5_CMD_OP_QUERY_XRC_SRQ, Enabled, srq_issi1::query_xrc_srq),
    command!(MLX5_CMD_OP_ARM_XRC_SRQ, Enabled, srq_issi1::arm_xrc_srq),
    command!(MLX5_CMD_OP_CREATE_QP, Enabled, qp::create_qp),
    command!(MLX5_CMD_OP_DESTROY_QP, Enabled, qp::destroy_qp),
    command!(MLX5_CMD_OP_RST2INIT_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_INIT2INIT_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_INIT2RTR_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_RTR2RTS_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_RTS2RTS_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_SQERR2RTS_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_SQD_RTS_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_2ERR_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_2RST_QP, Enabled, qp::modify_qp),
    command!(MLX5_CMD_OP_QUERY_QP, Enabled, qp::query_qp),
    command!(MLX5_CMD_OP_ATTACH_TO_MCG, Enabled, mcg::attach_to_mcg),
    command!(MLX5_CMD_OP_DETACH_FROM_MCG, Enabled, mcg::detach_from_mcg),
    command!(MLX5_CMD_OP_ALLOC_MEMIC, Enabled, memic::alloc_memic),
    command!(MLX5_CMD_OP_DEALLOC_MEMIC, Enabled, memic::dealloc_memic),
];
