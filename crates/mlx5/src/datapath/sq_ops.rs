//! What the device executes of a send WQE's control segment, per QP type.
//!
//! Every one of the 256 `MLX5_OPCODE_*` values is either executed or
//! refused; a refused WQE completes with an error CQE (`LOCAL_QP_OP_ERR`, the
//! syndrome a ConnectX reports for a WQE it cannot execute) and moves the QP
//! to ERR, so the driver's own recovery runs. Nothing is skipped silently.
//!
//! Executed (matching what `caps.rs` advertises: 8-byte CS/FA atomics only,
//! no memory windows (`imaicl` 0), no masked atomics, no TSO/LSO offloads,
//! no signature, no tag matching):
//!
//! | QP type      | opcodes                                                                 |
//! |--------------|-------------------------------------------------------------------------|
//! | RC, XRC INI  | NOP, SEND, SEND_IMM, SEND_INVAL, RDMA_WRITE(_IMM), RDMA_READ, ATOMIC_CS/FA |
//! | UC           | NOP, SEND, SEND_IMM, RDMA_WRITE(_IMM)                                   |
//! | UD, QP0, QP1 | NOP, SEND, SEND_IMM                                                     |
//! | XRC TGT, others | none: the device has no send path for them                           |
//!
//! `UMR` (0x25) on a REG_UMR QP is the UMR engine's (`send_doorbell`'s own
//! arm); on an RC QP it is a fast registration (`IB_WR_REG_MR`,
//! `IB_WR_LOCAL_INV`) that `sync_sq` hands to the UMR engine
//! (`umr_on_qp`) before this table is consulted; on any other QP it is
//! refused here. `LOCAL_INVAL` (0x1b), `FMR`
//! (0x19) and `BIND_MW` (0x18) are refused: they are ConnectX-3 (mlx4)
//! opcodes that rdma-core's mlx5dv.h still lists; a ConnectX-4/5 invalidates
//! and binds through UMR (mlx5_ib and libmlx5 post IB_WR_LOCAL_INV,
//! IB_WR_REG_MR and IBV_WR_BIND_MW as `MLX5_OPCODE_UMR`; the kernel's
//! include/linux/mlx5/qp.h has no LOCAL_INVAL), and memory windows are not
//! advertised (`imaicl` 0).
//!
//! A control segment must also carry `opmod` 0 (only TSO, UMR, PSV and
//! masked atomics use it) and a defined fence mode (0..=4); the fence modes
//! are all honoured as a fence (wait for earlier READs/atomics), which is at
//! least as strong as each of them for the opcodes executed. `ce` and `se`
//! are honoured as given.

use thiserror::Error;

use super::cqe::syndrome;
use super::wqe::{fence, opcode, CtrlSeg};
use vrnic_engine::verbs::WrOpcode;
use vrnic_engine::QpType;

/// Why a send WQE is not executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Refused {
    #[error("opcode {0:#04x} is not executed on this QP type")]
    Opcode(u8),
    #[error("opmod {0:#04x} is not implemented")]
    Opmod(u8),
    #[error("fence mode {0} is reserved")]
    FenceMode(u8),
    #[error("the QP type has no send path")]
    NoSendPath,
}

impl Refused {
    /// The CQE syndrome of a refused WQE.
    pub fn syndrome(self) -> u8 {
        syndrome::LOCAL_QP_OP_ERR
    }
}

/// The operation a send WQE with control segment `c` performs on a QP of
/// type `t`, or why it is refused.
pub fn classify(t: QpType, c: &CtrlSeg) -> Result<WrOpcode, Refused> {
    let op = match c.opcode {
        opcode::NOP => WrOpcode::Nop,
        opcode::SEND => WrOpcode::Send,
        opcode::SEND_IMM => WrOpcode::SendImm,
        opcode::SEND_INVAL => WrOpcode::SendInv,
        opcode::RDMA_WRITE => WrOpcode::Write,
        opcode::RDMA_WRITE_IMM => WrOpcode::WriteImm,
        opcode::RDMA_READ => WrOpcode::Read,
        opcode::ATOMIC_CS => WrOpcode::CmpSwap,
        opcode::ATOMIC_FA => WrOpcode::FetchAdd,
        o => return Err(if has_send_path(t) { Refused::Opcode(o) } else { Refused::NoSendPath }),
    };
    let allowed = match t {
        QpType::Rc | QpType::XrcInitiator => true,
        QpType::Uc => {
            matches!(op, WrOpcode::Nop | WrOpcode::Send | WrOpcode::SendImm | WrOpcode::Write | WrOpcode::WriteImm)
        }
        QpType::Ud | QpType::Smi | QpType::Gsi => matches!(op, WrOpcode::Nop | WrOpcode::Send | WrOpcode::SendImm),
        QpType::XrcTarget | QpType::RegUmr | QpType::RawPacket => return Err(Refused::NoSendPath),
    };
    if !allowed {
        return Err(Refused::Opcode(c.opcode));
    }
    if c.opmod != 0 {
        return Err(Refused::Opmod(c.opmod));
    }
    if c.fence_mode() > fence::SMALL_AND_FENCE {
        return Err(Refused::FenceMode(c.fence_mode()));
    }
    Ok(op)
}

/// QP types whose send WQEs the device executes (the rest error-complete every WQE).
pub fn has_send_path(t: QpType) -> bool {
    matches!(t, QpType::Rc | QpType::XrcInitiator | QpType::Uc | QpType::Ud | QpType::Smi | QpType::Gsi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctrl(op: u8) -> CtrlSeg {
        CtrlSeg { opmod: 0, wqe_index: 0, opcode: op, qpn: 0, ds: 1, fm_ce_se: 0x08, imm: 0 }
    }

    /// Every opcode value on every QP type: executed exactly where the
    /// table in the module doc says, refused with LOCAL_QP_OP_ERR elsewhere.
    #[test]
    fn every_opcode_on_every_qp_type() {
        use opcode::*;
        let rc = [NOP, SEND, SEND_IMM, SEND_INVAL, RDMA_WRITE, RDMA_WRITE_IMM, RDMA_READ, ATOMIC_CS, ATOMIC_FA];
        let uc = [NOP, SEND, SEND_IMM, RDMA_WRITE, RDMA_WRITE_IMM];
        let ud = [NOP, SEND, SEND_IMM];
        let types: [(QpType, &[u8]); 8] = [
            (QpType::Rc, &rc),
            (QpType::Uc, &uc),
            (QpType::Ud, &ud),
            (QpType::Smi, &ud),
            (QpType::Gsi, &ud),
            (QpType::XrcInitiator, &rc),
            (QpType::XrcTarget, &[]),
            (QpType::RegUmr, &[]),
        ];
        for (t, executed) in types {
            let mut n = 0;
            for op in 0..=255u8 {
                let r = classify(t, &ctrl(op));
                if executed.contains(&op) {
                    assert!(r.is_ok(), "{t:?} opcode {op:#04x}: executed");
                    n += 1;
                } else {
                    let e = r.expect_err("refused");
                    assert_eq!(e.syndrome(), syndrome::LOCAL_QP_OP_ERR, "{t:?} {op:#04x}");
                    let want = if has_send_path(t) { Refused::Opcode(op) } else { Refused::NoSendPath };
                    assert_eq!(e, want, "{t:?} opcode {op:#04x}");
                }
            }
            assert_eq!(n, executed.len(), "{t:?}");
        }
        // The named ones the issue lists, refused on RC.
        for op in [
            TSO,
            ATOMIC_MASKED_CS,
            ATOMIC_MASKED_FA,
            BIND_MW,
            LOCAL_INVAL,
            SET_PSV,
            UMR,
            CONFIG_CMD,
            TAG_MATCHING,
            0x07,
            0xff,
        ] {
            assert_eq!(classify(QpType::Rc, &ctrl(op)), Err(Refused::Opcode(op)));
        }
    }

    #[test]
    fn opmod_and_fence_modes() {
        let mut c = ctrl(opcode::SEND);
        for fm in 0..8u8 {
            c.fm_ce_se = (fm << 5) | 0x08 | 0x02;
            let want = if fm <= fence::SMALL_AND_FENCE { Ok(WrOpcode::Send) } else { Err(Refused::FenceMode(fm)) };
            assert_eq!(classify(QpType::Rc, &c), want, "fence mode {fm}");
        }
        c.fm_ce_se = 0;
        assert_eq!(classify(QpType::Ud, &c), Ok(WrOpcode::Send), "unsignaled is fine");
        for opmod in 1..=255u8 {
            c.opmod = opmod;
            assert_eq!(classify(QpType::Rc, &c), Err(Refused::Opmod(opmod)));
        }
    }
}
