//! Table-driven dispatch: each command domain (hca/, events/, rdma/, ib/, eth/, roce/)
//! exports its own `COMMANDS` rows; the link layer picks the domains and
//! [`CommandTable::new`] joins their rows into one lookup by opcode.
//!
//! A row names its opcode with the `mlx5_ifc.h` constant (`MLX5_CMD_OP_*`,
//! the log name is that constant less its prefix) and the lifecycle
//! [`Phase`] from which the command is accepted: the gate is a column of the
//! table, not a list of names in the dispatcher.
//!
//! The table is generic over the state its handlers act on, so this module
//! imports none of them.

use std::collections::BTreeMap;

use thiserror::Error;

use super::req::{CmdResult, Req};

/// How far the function's bring-up has gone, and so which commands it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// From reset on: the bring-up commands mlx5_core issues before
    /// ENABLE_HCA (ISSI, boot pages, ENABLE/DISABLE_HCA itself).
    Boot,
    /// Once ENABLE_HCA has enabled the function: everything else.
    Enabled,
}

/// A command handler acting on the state `S` (the firmware).
pub type Handler<S> = fn(&mut S, &Req<'_>) -> CmdResult;

/// One row of a domain's command table.
pub struct Command<S> {
    pub opcode: u16,
    /// The `mlx5_ifc.h` constant, e.g. `MLX5_CMD_OP_CREATE_CQ`.
    pub ifc_name: &'static str,
    /// The first phase in which the command is accepted.
    pub phase: Phase,
    pub handler: Handler<S>,
}

impl<S> Command<S> {
    /// The opcode's name for logs: the `mlx5_ifc.h` constant less `MLX5_CMD_OP_`.
    pub fn name(&self) -> &'static str {
        self.ifc_name.strip_prefix("MLX5_CMD_OP_").unwrap_or(self.ifc_name)
    }
}

/// A row of a `COMMANDS` table. `command!(MLX5_CMD_OP_CREATE_CQ, Enabled, rdma_cx => cq::create_cq)`:
/// the handler runs on the narrow context the firmware's `rdma_cx()` lends (the domain's own state and
/// what it may read or write of the others', split borrows of the firmware);
/// `command!(MLX5_CMD_OP_ACCESS_REG, Enabled, access_reg::access_reg)`: a device-wide command,
/// on the whole state `S` (ACCESS_REG dispatches to registers that run on their own contexts).
macro_rules! command {
    ($op:ident, $phase:ident, $cx:ident => $handler:path) => {
        $crate::cmd::dispatch::Command {
            opcode: $crate::ifc::$op as u16,
            ifc_name: stringify!($op),
            phase: $crate::cmd::dispatch::Phase::$phase,
            handler: |fw, r| $handler(&mut fw.$cx()?, r),
        }
    };
    ($op:ident, $phase:ident, $handler:path) => {
        $crate::cmd::dispatch::Command {
            opcode: $crate::ifc::$op as u16,
            ifc_name: stringify!($op),
            phase: $crate::cmd::dispatch::Phase::$phase,
            handler: $handler,
        }
    };
}
pub(crate) use command;

/// Two domains claim the same opcode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("opcode {opcode:#x} is in the command table twice ({first} and {second})")]
pub struct DuplicateOpcode {
    pub opcode: u16,
    pub first: &'static str,
    pub second: &'static str,
}

/// Every command a device instance executes, by opcode.
pub struct CommandTable<S: 'static> {
    rows: BTreeMap<u16, &'static Command<S>>,
}

impl<S> CommandTable<S> {
    /// Joins the domains' tables; an opcode in two rows is an error.
    pub fn new(tables: &[&'static [Command<S>]]) -> Result<CommandTable<S>, DuplicateOpcode> {
        let mut rows: BTreeMap<u16, &'static Command<S>> = BTreeMap::new();
        for row in tables.iter().flat_map(|t| t.iter()) {
            if let Some(prev) = rows.insert(row.opcode, row) {
                return Err(DuplicateOpcode { opcode: row.opcode, first: prev.ifc_name, second: row.ifc_name });
            }
        }
        Ok(CommandTable { rows })
    }

    /// The row of `opcode`.
    pub fn get(&self, opcode: u16) -> Option<&'static Command<S>> {
        self.rows.get(&opcode).copied()
    }

    /// The name of an opcode, for logs.
    pub fn name(&self, opcode: u16) -> &'static str {
        self.get(opcode).map(|c| c.name()).unwrap_or("UNKNOWN")
    }

    /// The rows, by opcode.
    pub fn iter(&self) -> impl Iterator<Item = &'static Command<S>> + '_ {
        self.rows.values().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::req::out;

    fn nop(_: &mut (), _: &Req<'_>) -> CmdResult {
        Ok(out(16))
    }

    static A: &[Command<()>] = &[command!(MLX5_CMD_OP_NOP, Boot, nop), command!(MLX5_CMD_OP_ENABLE_HCA, Boot, nop)];
    static B: &[Command<()>] = &[command!(MLX5_CMD_OP_CREATE_CQ, Enabled, nop)];
    static CLASH: &[Command<()>] = &[command!(MLX5_CMD_OP_NOP, Enabled, nop)];

    #[test]
    fn tables_join_and_duplicates_are_refused() {
        let t = CommandTable::new(&[A, B]).expect("distinct opcodes");
        assert_eq!(t.iter().count(), 3);
        assert_eq!(t.name(0x104), "ENABLE_HCA");
        assert_eq!(t.get(0x400).map(|c| c.phase), Some(Phase::Enabled));
        assert_eq!(t.name(0xffff), "UNKNOWN");
        let e = CommandTable::new(&[A, CLASH]).err().expect("NOP twice");
        assert_eq!(e, DuplicateOpcode { opcode: 0x80d, first: "MLX5_CMD_OP_NOP", second: "MLX5_CMD_OP_NOP" });
        assert!(Phase::Boot < Phase::Enabled);
    }
}
