//! The uid gate every command passes before its handler ([`crate::firmware::Firmware`]'s
//! dispatch): the header uid names the kernel or a live user context, a user context issues only
//! user commands, acts only on its own objects and names only what [`uid::may_reference`] allows.
//! An object that does not exist is left to the handler, which fails the command its own way.

use super::uid::{self, Kind};
use crate::cmd::req::{fail, CmdErr, Req};
use crate::cmd::status;
use crate::firmware::Firmware;

impl Firmware {
    /// The uid that owns object `n` of `kind`, if it exists.
    pub(crate) fn owner(&self, kind: Kind, n: u32) -> Option<u16> {
        let e = &self.core.engine;
        match kind {
            Kind::Pd => e.pd_uid(n),
            Kind::Xrcd => e.xrcd_uid(n),
            Kind::Cq => e.cq(n).map(|c| c.ext.uid),
            Kind::Srq => e.srq(n).map(|s| s.uid),
            Kind::Qp => e.qp(n).map(|q| q.uid),
            Kind::Mkey => e.mkey(n & 0x00ff_ffff).map(|m| m.uid),
            Kind::Uar => self.hca.uar_owner(n),
            Kind::Umem => self.umems.get(n).map(|u| u.uid),
        }
    }

    /// Admits the command `r` under the uid rules, or refuses it with its syndrome.
    pub(crate) fn admit(&self, r: &Req<'_>) -> Result<(), CmdErr> {
        let caller = r.uid;
        if !uid::is_kernel(caller) {
            if !self.uctxs.contains(caller) {
                return Err(fail!(status::BAD_PARAM, UID_UNKNOWN));
            }
            if !uid::user_command(r.opcode) {
                return Err(fail!(status::BAD_PARAM, UID_KERNEL_ONLY));
            }
        }
        if let Some((kind, f)) = uid::acts_on(r.opcode) {
            if let Some(owner) = self.owner(kind, r.get(f) as u32) {
                if !uid::may_act_on(caller, owner) {
                    return Err(fail!(status::BAD_RES, UID_NOT_OWNER));
                }
            }
        }
        for &(kind, f) in uid::references(r.opcode) {
            if let Some(owner) = self.owner(kind, r.get(f) as u32) {
                if !uid::may_reference(caller, owner, kind) {
                    return Err(fail!(status::BAD_RES, UID_FOREIGN_REFERENCE));
                }
            }
        }
        Ok(())
    }
}
