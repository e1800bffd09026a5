//! Layouts of the Ethernet commands and registers that the generated
//! `ifc.rs` does not carry yet (names and offsets from Linux 6.12's
//! `mlx5_ifc.h`, bit offsets as its `reserved_at_<bit>` names count them).
//! The shared structures (`wq`, `nic_vport_context`, `paos_reg` …) come
//! from `ifc.rs`. Regenerating `ifc.rs` with these structs listed in
//! `tools/mlx5/ifcgen.py` makes this file redundant.

#![allow(non_upper_case_globals)]

use crate::fields::Field;

/// `mlx5_ifc_sqc_bits` (0x30 bytes, then `wq`).
pub mod sqc {
    use super::Field;
    pub const SIZE: usize = 0x30;
    pub const min_wqe_inline_mode: Field = Field::new(0x5, 0x3);
    pub const state: Field = Field::new(0x8, 0x4);
    pub const user_index: Field = Field::new(0x28, 0x18);
    pub const cqn: Field = Field::new(0x48, 0x18);
    pub const tis_lst_sz: Field = Field::new(0x100, 0x10);
    pub const tis_num_0: Field = Field::new(0x168, 0x18);
}

/// `mlx5_ifc_rqc_bits` (0x30 bytes, then `wq`).
pub mod rqc {
    use super::Field;
    pub const SIZE: usize = 0x30;
    pub const vsd: Field = Field::new(0x3, 0x1);
    pub const mem_rq_type: Field = Field::new(0x4, 0x4);
    pub const state: Field = Field::new(0x8, 0x4);
    pub const user_index: Field = Field::new(0x28, 0x18);
    pub const cqn: Field = Field::new(0x48, 0x18);
    pub const counter_set_id: Field = Field::new(0x60, 0x8);
}

/// `MLX5_SQC_STATE_*` / `MLX5_RQC_STATE_*`.
pub const Q_STATE_RST: u64 = 0;
pub const Q_STATE_RDY: u64 = 1;
pub const Q_STATE_ERR: u64 = 3;

/// `MLX5_WQ_TYPE_CYCLIC`, `MLX5_RQC_MEM_RQ_TYPE_MEMORY_RQ_INLINE`.
pub const WQ_TYPE_CYCLIC: u64 = 1;
pub const MEM_RQ_TYPE_INLINE: u64 = 0;

/// Byte offset of the queue context in CREATE/MODIFY_{SQ,RQ}_in and
/// QUERY_{SQ,RQ}_out (`ctx` at bit 0x100), and of its `wq`.
pub const Q_CTX: usize = 0x20;
pub const Q_WQ: usize = Q_CTX + sqc::SIZE;
/// The `pas` list after the `wq` (`wq.pas` at wq byte 0xc0).
pub const Q_PAS: usize = Q_WQ + 0xc0;
/// Size of CREATE_{SQ,RQ}_in without the page list, and of QUERY_*_out.
pub const Q_CMD_SIZE: usize = Q_PAS;

/// `{create,query}_{sq,rq}_out.{sqn,rqn}`, `destroy_*_in.*n`,
/// `create_tis_out.tisn`, `destroy_tis_in.tisn`, `alloc_transport_domain_out.transport_domain`,
/// `dealloc_transport_domain_in.transport_domain`: all 24 bits at bit 0x48.
pub const OBJ_NUM: Field = Field::new(0x48, 0x18);
/// `modify_{sq,rq}_in.{sq,rq}_state` (the current state) and `.modify_bitmask`.
pub const MODIFY_Q_STATE: Field = Field::new(0x40, 0x4);
pub const MODIFY_Q_BITMASK: Field = Field::new(0x80, 0x40);
/// `MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_*`.
pub const MODIFY_RQ_VSD: u64 = 1 << 1;
pub const MODIFY_RQ_SCATTER_FCS: u64 = 1 << 2;
pub const MODIFY_RQ_COUNTER_SET_ID: u64 = 1 << 3;

/// `mlx5_ifc_tisc_bits` at byte 0x20 of `create_tis_in`.
pub mod tisc {
    use super::Field;
    pub const CTX: usize = 0x20;
    pub const prio: Field = Field::new(0x100 + 0xc, 0x4);
    pub const transport_domain: Field = Field::new(0x100 + 0x128, 0x18);
    /// `create_tis_in` (ctx 0xa0 bytes).
    pub const CREATE_SIZE: usize = CTX + 0xa0;
}

/// `mlx5_ifc_modify_nic_vport_context_in_bits`.
pub mod modify_nic_vport_context_in {
    use super::Field;
    pub const other_vport: Field = Field::new(0x40, 0x1);
    pub const vport_number: Field = Field::new(0x50, 0x10);
    /// `field_select` (`mlx5_ifc_modify_nic_vport_field_select_bits`, at bit 0x60).
    pub const fs_disable_uc_local_lb: Field = Field::new(0x74, 0x1);
    pub const fs_disable_mc_local_lb: Field = Field::new(0x75, 0x1);
    pub const fs_node_guid: Field = Field::new(0x76, 0x1);
    pub const fs_port_guid: Field = Field::new(0x77, 0x1);
    pub const fs_min_inline: Field = Field::new(0x78, 0x1);
    pub const fs_mtu: Field = Field::new(0x79, 0x1);
    pub const fs_change_event: Field = Field::new(0x7a, 0x1);
    pub const fs_promisc: Field = Field::new(0x7b, 0x1);
    pub const fs_permanent_address: Field = Field::new(0x7c, 0x1);
    pub const fs_addresses_list: Field = Field::new(0x7d, 0x1);
    pub const fs_roce_en: Field = Field::new(0x7e, 0x1);
    /// `nic_vport_context` (the ifc module's offsets are relative to it).
    pub const CTX_BIT: u32 = 0x800;
    pub const SIZE: usize = 0x200;
}

/// `mlx5_ifc_modify_vport_state_in_bits`.
pub mod modify_vport_state_in {
    use super::Field;
    pub const other_vport: Field = Field::new(0x40, 0x1);
    pub const admin_state: Field = Field::new(0x78, 0x4);
}

/// `mlx5_ifc_query_vport_counter_{in,out}_bits`: `traffic_counter`s
/// (packets, octets: 64 bits each) from bit 0x80.
pub mod query_vport_counter {
    use super::Field;
    pub const in_other_vport: Field = Field::new(0x40, 0x1);
    pub const in_clear: Field = Field::new(0xc0, 0x1);
    pub const OUT_SIZE: usize = 0x210;
    /// Byte offsets of the traffic counters in the output.
    pub const RECEIVED_ERRORS: usize = 0x10;
    pub const TRANSMIT_ERRORS: usize = 0x20;
    pub const RECEIVED_ETH_BROADCAST: usize = 0x70;
    pub const TRANSMITTED_ETH_BROADCAST: usize = 0x80;
    pub const RECEIVED_ETH_UNICAST: usize = 0x90;
    pub const TRANSMITTED_ETH_UNICAST: usize = 0xa0;
    pub const RECEIVED_ETH_MULTICAST: usize = 0xb0;
    pub const TRANSMITTED_ETH_MULTICAST: usize = 0xc0;
}

/// PFCC (0x5007, 32 bytes): the fields of global pause and PFC.
pub mod pfcc_reg {
    use super::Field;
    pub const SIZE: usize = 0x20;
    pub const local_port: Field = Field::new(0x8, 0x8);
    pub const prio_mask_tx: Field = Field::new(0x28, 0x8);
    pub const prio_mask_rx: Field = Field::new(0x38, 0x8);
    pub const pptx: Field = Field::new(0x40, 0x1);
    pub const aptx: Field = Field::new(0x41, 0x1);
    pub const pptx_mask_n: Field = Field::new(0x42, 0x1);
    pub const pfctx: Field = Field::new(0x48, 0x8);
    pub const pprx: Field = Field::new(0x60, 0x1);
    pub const aprx: Field = Field::new(0x61, 0x1);
    pub const pprx_mask_n: Field = Field::new(0x62, 0x1);
    pub const pfcrx: Field = Field::new(0x68, 0x8);
}

/// QCAM (0x4019, 72 bytes): groups in DW0; `qos_access_reg_cap_mask` (128 bits at byte 0x08), bit n
/// (from the mask's least significant bit) = register 0x4000 + n.
pub mod qcam {
    use super::Field;
    pub const SIZE: usize = 0x48;
    pub const feature_group: Field = Field::new(0x8, 0x8);
    pub const access_reg_group: Field = Field::new(0x18, 0x8);
    /// The mask bit of register 0x4000 + `n` (n < 128).
    pub const fn reg_bit(n: u32) -> Field {
        Field::new(0x40 + 0x7f - n, 1)
    }
}

/// QPTS (0x4002, 8 bytes).
pub mod qpts {
    use super::Field;
    pub const SIZE: usize = 0x8;
    pub const local_port: Field = Field::new(0x8, 0x8);
    pub const trust_state: Field = Field::new(0x3d, 0x3);
}

/// QPDPM (0x4013, 132 bytes): 64 16-bit entries `qpdpm_dscp_reg` from byte 0x04.
pub mod qpdpm {
    use super::Field;
    pub const SIZE: usize = 0x84;
    pub const local_port: Field = Field::new(0x8, 0x8);
    pub const fn e(dscp: usize) -> Field {
        Field::new(0x20 + 0x10 * dscp as u32, 1)
    }
    pub const fn prio(dscp: usize) -> Field {
        Field::new(0x20 + 0x10 * dscp as u32 + 0xc, 4)
    }
}

/// QTCT (0x400a, 8 bytes).
pub mod qtct {
    use super::Field;
    pub const SIZE: usize = 0x8;
    pub const port_number: Field = Field::new(0x8, 0x8);
    pub const prio: Field = Field::new(0x1d, 0x3);
    pub const tclass: Field = Field::new(0x3d, 0x3);
}

/// QETCR (0x4005, 80 bytes): `ets_tcn_config_reg tc_configuration[8]` (8 bytes each) from byte 0x08,
/// `ets_global_config_reg` at byte 0x48.
pub mod qetcr {
    use super::Field;
    pub const SIZE: usize = 0x50;
    pub const port_number: Field = Field::new(0x8, 0x8);
    const fn tc(i: usize, off: u32, bits: u32) -> Field {
        Field::new(0x40 + 0x40 * i as u32 + off, bits)
    }
    pub const fn g(i: usize) -> Field {
        tc(i, 0, 1)
    }
    pub const fn b(i: usize) -> Field {
        tc(i, 1, 1)
    }
    pub const fn r(i: usize) -> Field {
        tc(i, 2, 1)
    }
    pub const fn group(i: usize) -> Field {
        tc(i, 0xc, 4)
    }
    pub const fn bw_allocation(i: usize) -> Field {
        tc(i, 0x19, 7)
    }
    pub const fn max_bw_units(i: usize) -> Field {
        tc(i, 0x2c, 4)
    }
    pub const fn max_bw_value(i: usize) -> Field {
        tc(i, 0x38, 8)
    }
    pub const global_r: Field = Field::new(0x240 + 2, 1);
    pub const global_max_bw_units: Field = Field::new(0x240 + 0x2c, 4);
    pub const global_max_bw_value: Field = Field::new(0x240 + 0x38, 8);
}

/// NODE_DESC (0x6001): a 64-byte string.
pub const NODE_DESC_SIZE: usize = 0x40;
