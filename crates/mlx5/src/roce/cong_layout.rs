//! Byte layouts of the congestion-control commands (`mlx5_ifc.h`; not in
//! the generated `ifc.rs`): QUERY/MODIFY_CONG_STATUS, QUERY/MODIFY_CONG_PARAMS
//! and QUERY_CONG_STATISTICS, and the three 256-byte
//! `congestion_parameters` blocks (`cong_control_r_roce_ecn_rp`,
//! `_ecn_np`, `_general`). Command fields are absolute bit offsets in the
//! command's input or output; block fields are relative to the block
//! (`/work/shared/mlx5-ethernet-roce.md` §5.1–§5.2).

use crate::fields::Field;

/// `cong_protocol` values (`mlx5_ib_cong_node_type`, ib/cong.c).
pub const NODE_RP: u64 = 1;
pub const NODE_NP: u64 = 2;
pub const NODE_GENERAL: u64 = 3;

/// `query_cong_status_in` / `modify_cong_status_in` (same words) and
/// `query_cong_status_out` (`enable`, `tag_enable` at the same place).
#[allow(non_upper_case_globals)]
pub mod cong_status {
    use super::Field;
    pub const priority: Field = Field::new(0x58, 0x4);
    pub const cong_protocol: Field = Field::new(0x5c, 0x4);
    pub const enable: Field = Field::new(0x60, 0x1);
    pub const tag_enable: Field = Field::new(0x61, 0x1);
    /// Input of both commands and output of QUERY_CONG_STATUS.
    pub const SIZE: usize = 0x10;
}

/// `query_cong_params_in`, `modify_cong_params_in`, `query_cong_params_out`.
#[allow(non_upper_case_globals)]
pub mod cong_params {
    use super::Field;
    pub const cong_protocol: Field = Field::new(0x5c, 0x4);
    /// `modify_cong_params_in.field_select` (`field_select_r_roce_rp`: one
    /// bit per field, the numbering of ib/cong.c's `MLX5_IB_*_ATTR`).
    pub const field_select: Field = Field::new(0x60, 0x20);
    /// `modify_cong_params_in.congestion_parameters` (byte 0x20).
    pub const modify_parameters: Field = Field::new(0x100, 0x800);
    /// `query_cong_params_out.congestion_parameters` (byte 0x10).
    pub const query_parameters: Field = Field::new(0x80, 0x800);
    pub const QUERY_IN_SIZE: usize = 0x10;
    pub const MODIFY_IN_SIZE: usize = 0x120;
    pub const QUERY_OUT_SIZE: usize = 0x110;
    /// The parameter block.
    pub const BLOCK_SIZE: usize = 0x100;
}

/// `query_cong_statistics_in` / `_out` (64-bit counters are `_high`/`_low` word pairs).
#[allow(non_upper_case_globals)]
pub mod cong_statistics {
    use super::Field;
    pub const clear: Field = Field::new(0x40, 0x1);
    pub const IN_SIZE: usize = 0x10;
    pub const rp_cur_flows: Field = Field::new(0x80, 0x20);
    pub const sum_flows: Field = Field::new(0xa0, 0x20);
    pub const rp_cnp_ignored: Field = Field::new(0xc0, 0x40);
    pub const rp_cnp_handled: Field = Field::new(0x100, 0x40);
    pub const time_stamp: Field = Field::new(0x240, 0x40);
    pub const accumulators_period: Field = Field::new(0x280, 0x20);
    pub const np_ecn_marked_roce_packets: Field = Field::new(0x2a0, 0x40);
    pub const np_cnp_sent: Field = Field::new(0x2e0, 0x40);
    pub const OUT_SIZE: usize = 0x110;
}

/// `cong_control_r_roce_ecn_rp` (node 1), offsets in the block.
#[allow(non_upper_case_globals)]
pub mod ecn_rp {
    use super::Field;
    pub const clamp_tgt_rate: Field = Field::new(0x64, 0x1);
    pub const clamp_tgt_rate_after_time_inc: Field = Field::new(0x68, 0x1);
    pub const rpg_time_reset: Field = Field::new(0xa0, 0x20);
    pub const rpg_byte_reset: Field = Field::new(0xc0, 0x20);
    pub const rpg_threshold: Field = Field::new(0xe0, 0x20);
    pub const rpg_max_rate: Field = Field::new(0x100, 0x20);
    pub const rpg_ai_rate: Field = Field::new(0x120, 0x20);
    pub const rpg_hai_rate: Field = Field::new(0x140, 0x20);
    pub const rpg_gd: Field = Field::new(0x160, 0x20);
    pub const rpg_min_dec_fac: Field = Field::new(0x180, 0x20);
    pub const rpg_min_rate: Field = Field::new(0x1a0, 0x20);
    pub const rate_to_set_on_first_cnp: Field = Field::new(0x2a0, 0x20);
    pub const dce_tcp_g: Field = Field::new(0x2c0, 0x20);
    pub const dce_tcp_rtt: Field = Field::new(0x2e0, 0x20);
    pub const rate_reduce_monitor_period: Field = Field::new(0x300, 0x20);
    pub const initial_alpha_value: Field = Field::new(0x340, 0x20);
}

/// `cong_control_r_roce_ecn_np` (node 2), offsets in the block.
#[allow(non_upper_case_globals)]
pub mod ecn_np {
    use super::Field;
    pub const min_time_between_cnps: Field = Field::new(0xa0, 0x20);
    pub const cnp_dscp: Field = Field::new(0xd2, 0x6);
    pub const cnp_prio_mode: Field = Field::new(0xdc, 0x1);
    pub const cnp_802p_prio: Field = Field::new(0xdd, 0x3);
}

/// `cong_control_r_roce_general` (node 3), offsets in the block.
#[allow(non_upper_case_globals)]
pub mod general {
    use super::Field;
    pub const rtt_resp_dscp_valid: Field = Field::new(0x90, 0x1);
    pub const rtt_resp_dscp: Field = Field::new(0x9a, 0x6);
}
