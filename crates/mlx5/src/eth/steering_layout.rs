//! Layouts of the NIC-RX steering, TIR and RQT commands (owner: eth-rx),
//! named as in `mlx5_ifc.h` (the generated `ifc.rs` does not carry these
//! structures). Offsets are bit offsets from the start of the command input
//! (MSB of byte 0 = 0), as [`Field`] expects.

#![allow(non_upper_case_globals)]

use crate::fields::Field;

/// Byte offset as a field position.
const fn at(byte: u32, bit: u32, width: u32) -> Field {
    Field::new(byte * 8 + bit, width)
}

/// Fields every flow-steering command shares (`*_flow_*_in`).
pub mod ft_in {
    use super::*;
    pub const table_type: Field = at(0x10, 0, 8);
    pub const table_id: Field = at(0x14, 8, 24);
}

/// `create_flow_table_in` / `modify_flow_table_in`: `flow_table_context` at 0x18.
pub mod flow_table_context {
    use super::*;
    pub const table_miss_action: Field = at(0x18, 4, 4);
    pub const level: Field = at(0x19, 0, 8);
    pub const log_size: Field = at(0x1b, 0, 8);
    pub const table_miss_id: Field = at(0x1c, 8, 24);
    /// `modify_flow_table_in.modify_field_select`.
    pub const modify_field_select: Field = at(0x0e, 0, 16);
    /// `MLX5_MODIFY_FLOW_TABLE_MISS_TABLE_ID`.
    pub const SELECT_MISS_TABLE_ID: u64 = 1;
    /// `create_flow_table_out.table_id`.
    pub const out_table_id: Field = at(0x08, 8, 24);
}

/// `create_flow_group_in` / `destroy_flow_group_in`.
pub mod flow_group {
    use super::*;
    pub const start_flow_index: Field = at(0x1c, 0, 32);
    pub const end_flow_index: Field = at(0x24, 0, 32);
    pub const match_criteria_enable: Field = at(0x3f, 0, 8);
    /// `match_criteria` (`fte_match_param`, 512 bytes).
    pub const MATCH_CRITERIA: usize = 0x40;
    /// `destroy_flow_group_in.group_id`.
    pub const group_id: Field = at(0x18, 0, 32);
    /// `create_flow_group_out.group_id`.
    pub const out_group_id: Field = at(0x08, 8, 24);
}

/// `set_fte_in` / `delete_fte_in`; `flow_context` at input byte 0x40.
pub mod fte {
    use super::*;
    pub const modify_enable_mask: Field = at(0x1b, 0, 8);
    pub const flow_index: Field = at(0x20, 0, 32);
    /// Input byte of `flow_context`.
    pub const FLOW_CONTEXT: u32 = 0x40;
    pub const group_id: Field = at(FLOW_CONTEXT + 0x04, 0, 32);
    pub const flow_tag: Field = at(FLOW_CONTEXT + 0x08, 8, 24);
    pub const action: Field = at(FLOW_CONTEXT + 0x0c, 16, 16);
    pub const extended_destination: Field = at(FLOW_CONTEXT + 0x10, 0, 1);
    pub const destination_list_size: Field = at(FLOW_CONTEXT + 0x10, 8, 24);
    pub const flow_counter_list_size: Field = at(FLOW_CONTEXT + 0x14, 8, 24);
    /// Input byte of `flow_context.match_value`.
    pub const MATCH_VALUE: usize = (FLOW_CONTEXT + 0x40) as usize;
    /// Input byte of `flow_context.destination[0]` (8 bytes each).
    pub const DESTINATION: usize = (FLOW_CONTEXT + 0x300) as usize;
}

/// `MLX5_FLOW_CONTEXT_ACTION_*`.
pub mod action {
    pub const ALLOW: u32 = 0x1;
    pub const DROP: u32 = 0x2;
    pub const FWD_DEST: u32 = 0x4;
    pub const COUNT: u32 = 0x8;
}

/// `MLX5_IFC_FLOW_DESTINATION_TYPE_*`.
pub mod dest_type {
    pub const FLOW_TABLE: u8 = 0x1;
    pub const TIR: u8 = 0x2;
}

/// `create_tir_in` / `modify_tir_in`: `tirc` at input byte 0x20.
pub mod tirc {
    use super::*;
    const C: u32 = 0x20;
    pub const disp_type: Field = at(C + 0x04, 0, 4);
    pub const lro_enable_mask: Field = at(C + 0x10, 28, 4);
    pub const inline_rqn: Field = at(C + 0x1c, 8, 24);
    pub const rx_hash_symmetric: Field = at(C + 0x20, 0, 1);
    pub const indirect_table: Field = at(C + 0x20, 8, 24);
    pub const rx_hash_fn: Field = at(C + 0x24, 0, 4);
    pub const self_lb_block: Field = at(C + 0x24, 6, 2);
    pub const transport_domain: Field = at(C + 0x24, 8, 24);
    /// Input byte of `rx_hash_toeplitz_key` (40 bytes).
    pub const TOEPLITZ_KEY: usize = (C + 0x28) as usize;
    /// `rx_hash_field_selector_outer`.
    pub const l3_prot_type: Field = at(C + 0x50, 0, 1);
    pub const l4_prot_type: Field = at(C + 0x50, 1, 1);
    pub const selected_fields: Field = at(C + 0x50, 2, 30);
    /// `create_tir_out.tirn`, `modify_tir_in.tirn`, `destroy_tir_in.tirn`.
    pub const tirn: Field = at(0x08, 8, 24);
    /// `modify_tir_in.bitmask` (`modify_tir_bitmask`, DW at 0x14).
    pub const bitmask_lro: Field = at(0x17, 7, 1);
    pub const bitmask_hash: Field = at(0x17, 5, 1);
    pub const bitmask_self_lb_en: Field = at(0x17, 3, 1);
    /// Input size up to the end of `tirc`.
    pub const SIZE: usize = 0x20 + 0xf0;
}

/// `create_rqt_in` / `modify_rqt_in`: `rqtc` at input byte 0x20.
pub mod rqtc {
    use super::*;
    pub const rqt_max_size: Field = at(0x20 + 0x14, 16, 16);
    pub const rqt_actual_size: Field = at(0x20 + 0x18, 16, 16);
    /// Input byte of `rq_num[0]` (4 bytes each, RQN in bits 23:0).
    pub const RQ_NUM: usize = 0x20 + 0xf0;
    /// `create_rqt_out.rqtn`, `modify_rqt_in.rqtn`, `destroy_rqt_in.rqtn`.
    pub const rqtn: Field = at(0x08, 8, 24);
    /// `modify_rqt_in.bitmask.rqn_list`.
    pub const bitmask_rqn_list: Field = at(0x17, 7, 1);
}
