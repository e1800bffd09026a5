//! The DevX domain: user contexts and the uid every command and object carries.
//!
//! mlx5_ib gives each process that opens the device with DevX a user context (CREATE_UCTX); the
//! kernel then stamps that context's uid into every command it sends for the process (its PDs,
//! CQs, QPs, SRQs, UARs, and the raw DevX commands the process builds itself). The device keeps
//! the uid of each object and holds every command to the rules in [`uid`]: a process reaches
//! only its own objects and the ones the kernel shares. [`gate`] applies them before a command's
//! handler runs.
//!
//! A context's registered memory is its umems ([`umem`]): the queues it builds itself may lie
//! there. The contexts and umems are executed whatever the capabilities say, but offered
//! (`log_max_uctx`) only where [`vrnic_engine::Limits::uctxs`] is not 0; DevX's event channels and
//! general objects are still to come.

pub mod gate;
pub mod state;
pub mod uctx;
pub mod uid;
pub mod umem;
pub mod umem_cmd;

use crate::cmd::dispatch::{command, Command};
use crate::cmd::req::CmdErr;
use crate::firmware::Firmware;
use crate::hca::state::Hca;
use state::Uctxs;
use umem::Umems;
use vrnic_engine::Limits;

/// What the DevX commands borrow: the contexts and their umems, and (read-only) the tables whose
/// objects a context may own or a umem may hold, to refuse DESTROY_UCTX and DESTROY_UMEM while
/// something still uses them.
pub struct DevxCx<'a> {
    pub uctxs: &'a mut Uctxs,
    pub umems: &'a mut Umems,
    pub owners: Owners<'a>,
    pub limits: &'a Limits,
}

/// The object tables, for counting what a uid owns.
pub struct Owners<'a> {
    pub engine: &'a crate::core::MlxEngine,
    pub hca: &'a Hca,
}

impl Owners<'_> {
    /// Objects of every kind that user context `uid` owns.
    pub fn count(&self, uid: u16) -> usize {
        self.engine.owned_by(uid)
            + self.engine.cqs().filter(|(_, c)| c.ext.uid == uid).count()
            + self.hca.uars_owned_by(uid)
    }

    /// Objects whose queue or doorbell record lies in umem `id`.
    pub fn umem_users(&self, id: u32) -> usize {
        self.engine.qps().filter(|(_, q)| q.ext.umems.contains(&id)).count()
            + self.engine.cqs().filter(|(_, c)| c.ext.umems.contains(&id)).count()
    }
}

impl Firmware {
    /// The context the DevX commands run on.
    pub(crate) fn devx_cx(&mut self) -> Result<DevxCx<'_>, CmdErr> {
        let limits = self.core.engine.limits();
        Ok(DevxCx {
            uctxs: &mut self.uctxs,
            umems: &mut self.umems,
            owners: Owners { engine: &self.core.engine, hca: &self.hca },
            limits,
        })
    }
}

/// The DevX domain's commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_CREATE_UCTX, Enabled, devx_cx => uctx::create_uctx),
    command!(MLX5_CMD_OP_DESTROY_UCTX, Enabled, devx_cx => uctx::destroy_uctx),
    command!(MLX5_CMD_OP_CREATE_UMEM, Enabled, devx_cx => umem_cmd::create_umem),
    command!(MLX5_CMD_OP_DESTROY_UMEM, Enabled, devx_cx => umem_cmd::destroy_umem),
];

#[cfg(test)]
mod uid_tests;
#[cfg(test)]
mod umem_tests;
