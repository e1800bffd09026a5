//! A decoded command (`Req`), its failure (`CmdErr`) and the helpers every
//! handler shares: input fields, length checks, page lists, output buffers.

use thiserror::Error;

use super::status;
use crate::fields::{Array, Field};
use vrnic_engine::EngineError;

/// A command failure: status and syndrome ([`super::syndrome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("command failed: status {status:#x}, syndrome {syndrome:#x}")]
pub struct CmdErr {
    pub status: u8,
    pub syndrome: u32,
}

/// Builds a [`CmdErr`] from a status and the name of a constant of
/// [`super::syndrome`]: `fail!(status::BAD_PARAM, CREATE_CQ_BAD_PARAM)`.
macro_rules! fail {
    ($status:expr, $syndrome:ident) => {
        $crate::cmd::req::CmdErr { status: $status, syndrome: $crate::cmd::syndrome::$syndrome }
    };
}
pub(crate) use fail;

/// Maps an engine error onto a command status, with the named syndrome:
/// `eng!(fw.core.engine.alloc_pd(uid), ALLOC_PD_ENGINE)?`.
macro_rules! eng {
    ($e:expr, $syndrome:ident) => {
        $e.map_err(|engine_err| $crate::cmd::req::engine_failure(engine_err, $crate::cmd::syndrome::$syndrome))
    };
}
pub(crate) use eng;

/// The command status an engine error answers with.
pub fn engine_failure(e: EngineError, syndrome: u32) -> CmdErr {
    let status = match e {
        EngineError::Limit(_) => status::LIM,
        EngineError::NoSuch(..) => status::BAD_RES,
        EngineError::Busy(..) => status::BAD_RES_STATE,
        EngineError::QpState { .. } => status::BAD_QP_STATE,
        EngineError::BadParam(_) => status::BAD_PARAM,
    };
    CmdErr { status, syndrome }
}

pub type CmdResult = Result<Vec<u8>, CmdErr>;

/// A decoded command header plus its input.
pub struct Req<'a> {
    pub opcode: u16,
    pub op_mod: u16,
    pub uid: u16,
    pub input: &'a [u8],
    pub outlen: usize,
}

impl Req<'_> {
    /// A field of the input (0 when the input is too short).
    pub fn get(&self, f: Field) -> u64 {
        f.get(self.input)
    }

    /// Fails with `err` when the command names another vport (`other`, its
    /// `other_vport` bit): only the function's own vport (0) exists.
    pub fn own_vport(&self, other: Field, err: CmdErr) -> Result<(), CmdErr> {
        if self.get(other) != 0 {
            Err(err)
        } else {
            Ok(())
        }
    }

    /// Fails with BAD_INP_LEN unless the input holds `n` bytes.
    pub fn need(&self, n: usize) -> Result<(), CmdErr> {
        if self.input.len() < n {
            Err(fail!(status::BAD_INP_LEN, REQ_SHORT_INPUT))
        } else {
            Ok(())
        }
    }

    /// The bytes of a byte-aligned sub-structure.
    pub fn sub(&self, f: Field) -> Result<Vec<u8>, CmdErr> {
        f.bytes(self.input).map(|b| b.to_vec()).ok_or(fail!(status::BAD_INP_LEN, REQ_SHORT_SUBSTRUCT))
    }

    /// Reads `n` 64-bit page addresses of a `pas[]` array (low 12 bits masked).
    pub fn pas(&self, a: Array, n: usize) -> Result<Vec<u64>, CmdErr> {
        Ok(self.entries(a, n)?.into_iter().map(|e| e & !0xfff).collect())
    }

    /// `n` 64-bit entries of array `a`, whole (an MTT entry's permission bits with its address).
    pub fn entries(&self, a: Array, n: usize) -> Result<Vec<u64>, CmdErr> {
        let start = (a.bit_off / 8) as usize;
        let end =
            n.checked_mul(8).and_then(|b| b.checked_add(start)).ok_or(fail!(status::BAD_INP_LEN, REQ_PAS_OVERFLOW))?;
        let bytes = self.input.get(start..end).ok_or(fail!(status::BAD_INP_LEN, REQ_SHORT_PAS))?;
        Ok(bytes.chunks_exact(8).map(|c| u64::from_be_bytes(c.try_into().expect("8 bytes"))).collect())
    }
}

/// An output buffer of `size` bytes.
pub fn out(size: usize) -> Vec<u8> {
    vec![0u8; size.max(16)]
}
