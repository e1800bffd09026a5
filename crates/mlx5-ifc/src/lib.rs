//! The `mlx5_ifc.h` layouts the device uses, as generated field accessors
//! (`ifc.rs`, from `tools/mlx5/ifcgen.py`) over the [`fields`] runtime. A
//! crate of its own so that an edit of the personality does not recompile
//! thirteen thousand generated lines.

#![forbid(unsafe_code)]

pub mod fields;
#[rustfmt::skip]
mod ifc;
/// What only rdma-core's header names (DevX umem references of CQs and QPs).
#[allow(non_upper_case_globals)]
pub mod rdma_core;

pub use ifc::*;
