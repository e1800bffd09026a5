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
use crate::cmd::req::CmdErr;
use crate::core::Core;
use crate::devx::umem::Umems;
use crate::firmware::Firmware;
use crate::hca::state::Hca;
use crate::ib::port::PortConfig;
use crate::roce::state::RoceState;
use state::RdmaObjects;

/// What the RDMA object commands borrow: the core (the engine's objects and
/// their contexts, CQ writes), the HCA (UAR pages, the MEMIC window), their
/// own state, the port's identity and, on an Ethernet port, its RoCE state
/// (the source GID table a QP's address names, the Q counter sets a QP's
/// counts retire into).
pub struct RdmaCx<'a> {
    pub core: &'a mut Core,
    pub hca: &'a Hca,
    pub rdma: &'a mut RdmaObjects,
    pub cfg: &'a PortConfig,
    pub roce: Option<&'a mut RoceState>,
    /// The DevX umems a process's CQs and QPs may lie in.
    pub umems: &'a Umems,
}

impl Firmware {
    /// The context the RDMA object commands run on.
    pub(crate) fn rdma_cx(&mut self) -> Result<RdmaCx<'_>, CmdErr> {
        let roce = self.port.roce_mut();
        Ok(RdmaCx {
            core: &mut self.core,
            hca: &self.hca,
            rdma: &mut self.rdma,
            cfg: &self.cfg,
            roce,
            umems: &self.umems,
        })
    }
}

impl RdmaCx<'_> {
    /// Entries of the port's GID table (the RoCE address table on an Ethernet port).
    pub fn gid_table_len(&self) -> usize {
        self.roce.as_ref().map_or(self.cfg.gid_table_len as usize, |r| r.gids().len())
    }

    /// QP `qpn`'s counters are about to go (2RST, DESTROY_QP): its Q counter set (RoCE) keeps them.
    pub fn retire_counters(&mut self, qpn: u32) {
        if let Some(r) = self.roce.as_mut() {
            r.q_sets().retire(&self.core.engine, qpn);
        }
    }
}

/// The RDMA domain's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_ALLOC_PD, Enabled, rdma_cx => pd::alloc_pd),
    command!(MLX5_CMD_OP_DEALLOC_PD, Enabled, rdma_cx => pd::dealloc_pd),
    command!(MLX5_CMD_OP_ALLOC_XRCD, Enabled, rdma_cx => pd::alloc_xrcd),
    command!(MLX5_CMD_OP_DEALLOC_XRCD, Enabled, rdma_cx => pd::dealloc_xrcd),
    command!(MLX5_CMD_OP_CREATE_MKEY, Enabled, rdma_cx => mkey::create_mkey),
    command!(MLX5_CMD_OP_QUERY_MKEY, Enabled, rdma_cx => mkey::query_mkey),
    command!(MLX5_CMD_OP_DESTROY_MKEY, Enabled, rdma_cx => mkey::destroy_mkey),
    command!(MLX5_CMD_OP_CREATE_CQ, Enabled, rdma_cx => cq::create_cq),
    command!(MLX5_CMD_OP_DESTROY_CQ, Enabled, rdma_cx => cq::destroy_cq),
    command!(MLX5_CMD_OP_QUERY_CQ, Enabled, rdma_cx => cq::query_cq),
    command!(MLX5_CMD_OP_MODIFY_CQ, Enabled, rdma_cx => cq::modify_cq),
    command!(MLX5_CMD_OP_CREATE_SRQ, Enabled, rdma_cx => srq::create_srq),
    command!(MLX5_CMD_OP_DESTROY_SRQ, Enabled, rdma_cx => srq::destroy_srq),
    command!(MLX5_CMD_OP_QUERY_SRQ, Enabled, rdma_cx => srq::query_srq),
    command!(MLX5_CMD_OP_ARM_RQ, Enabled, rdma_cx => srq::arm_rq),
    command!(MLX5_CMD_OP_CREATE_RMP, Enabled, rdma_cx => srq_issi1::create_rmp),
    command!(MLX5_CMD_OP_MODIFY_RMP, Enabled, rdma_cx => srq_issi1::modify_rmp),
    command!(MLX5_CMD_OP_QUERY_RMP, Enabled, rdma_cx => srq_issi1::query_rmp),
    command!(MLX5_CMD_OP_DESTROY_RMP, Enabled, rdma_cx => srq_issi1::destroy_rmp),
    command!(MLX5_CMD_OP_CREATE_XRC_SRQ, Enabled, rdma_cx => srq_issi1::create_xrc_srq),
    command!(MLX5_CMD_OP_DESTROY_XRC_SRQ, Enabled, rdma_cx => srq_issi1::destroy_xrc_srq),
    command!(MLX5_CMD_OP_QUERY_XRC_SRQ, Enabled, rdma_cx => srq_issi1::query_xrc_srq),
    command!(MLX5_CMD_OP_ARM_XRC_SRQ, Enabled, rdma_cx => srq_issi1::arm_xrc_srq),
    command!(MLX5_CMD_OP_CREATE_QP, Enabled, rdma_cx => qp::create_qp),
    command!(MLX5_CMD_OP_DESTROY_QP, Enabled, rdma_cx => qp::destroy_qp),
    command!(MLX5_CMD_OP_RST2INIT_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_INIT2INIT_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_INIT2RTR_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_RTR2RTS_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_RTS2RTS_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_SQERR2RTS_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_SQD_RTS_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_2ERR_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_2RST_QP, Enabled, rdma_cx => qp::modify_qp),
    command!(MLX5_CMD_OP_QUERY_QP, Enabled, rdma_cx => qp::query_qp),
    command!(MLX5_CMD_OP_ATTACH_TO_MCG, Enabled, rdma_cx => mcg::attach_to_mcg),
    command!(MLX5_CMD_OP_DETACH_FROM_MCG, Enabled, rdma_cx => mcg::detach_from_mcg),
    command!(MLX5_CMD_OP_ALLOC_MEMIC, Enabled, rdma_cx => memic::alloc_memic),
    command!(MLX5_CMD_OP_DEALLOC_MEMIC, Enabled, rdma_cx => memic::dealloc_memic),
];

#[cfg(test)]
mod qp_tests;
#[cfg(test)]
mod xrc_tests;
