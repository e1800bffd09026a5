//! Stable command syndromes: every site that fails a command has its own
//! named code, so a failure in the guest's dmesg (`... status bad
//! parameter(0x3), syndrome (0x7e030021)`) names the site that refused it.
//!
//! A code is `0x7e00_0000 | domain << 16 | index`: the domain byte says
//! which command domain refused (00 command core, 01 `hca/`, 02 `events/`,
//! 03 `rdma/`, 04 `ib/`, 05 the data path's CQ resize, 06 `eth/` vport, registers and queues, 08 `eth/` steering, 09 `roce/`, 0a `devx/`: user contexts and the uid rules) and the index is fixed
//! here once given. The values are literals: moving or editing code never
//! renumbers them. A new site appends a new name with the next free index of
//! its domain; a removed site's index is not reused. Names are
//! `<HANDLER>_<STATUS>` (`_ENGINE`: the engine refused, its error picks the
//! status), numbered `_2`, `_3` where one handler fails the same way twice,
//! in source order at the time the scheme was introduced.

/// Declares the syndromes and [`ALL`], the table the uniqueness test reads.
macro_rules! syndromes {
    ($($(#[$doc:meta])* $name:ident = $value:literal;)*) => {
        $($(#[$doc])* pub const $name: u32 = $value;)*
        /// Every syndrome, by name.
        pub const ALL: &[(&str, u32)] = &[$((stringify!($name), $name),)*];
    };
}

syndromes! {
    // 00: the command core (dispatch, request helpers).
    /// No row for the opcode (BAD_OP).
    DISPATCH_UNKNOWN_OPCODE = 0x7e00_0001;
    /// The row's phase is not reached yet: before ENABLE_HCA (BAD_SYS_STATE).
    DISPATCH_WRONG_PHASE = 0x7e00_0002;
    /// The input is shorter than the command's layout (BAD_INP_LEN).
    REQ_SHORT_INPUT = 0x7e00_0003;
    /// A sub-structure ends past the input (BAD_INP_LEN).
    REQ_SHORT_SUBSTRUCT = 0x7e00_0004;
    /// A page count whose byte size overflows (BAD_INP_LEN).
    REQ_PAS_OVERFLOW = 0x7e00_0005;
    /// A page list ends past the input (BAD_INP_LEN).
    REQ_SHORT_PAS = 0x7e00_0006;
    /// A row of a domain the port's link layer does not have (INT_ERR: the
    /// link layer picks the domains, so no such row is in the table).
    DISPATCH_WRONG_LINK_LAYER = 0x7e00_0007;
    // 01: hca/
    ENABLE_HCA_BAD_PARAM = 0x7e01_0001;
    DISABLE_HCA_BAD_PARAM = 0x7e01_0002;
    SET_ISSI_BAD_PARAM = 0x7e01_0003;
    INIT_HCA_BAD_SYS_STATE = 0x7e01_0004;
    TEARDOWN_HCA_BAD_PARAM = 0x7e01_0005;
    QUERY_PAGES_BAD_PARAM = 0x7e01_0006;
    MANAGE_PAGES_LIM = 0x7e01_0007;
    MANAGE_PAGES_BAD_PARAM = 0x7e01_0008;
    QUERY_HCA_CAP_BAD_PARAM = 0x7e01_0009;
    QUERY_HCA_CAP_BAD_PARAM_2 = 0x7e01_000a;
    QUERY_HCA_CAP_INT_ERR = 0x7e01_000b;
    SET_HCA_CAP_BAD_PARAM = 0x7e01_000c;
    SET_HCA_CAP_BAD_PARAM_2 = 0x7e01_000d;
    SET_HCA_CAP_BAD_PARAM_3 = 0x7e01_000e;
    SET_HCA_CAP_BAD_PARAM_4 = 0x7e01_000f;
    SET_HCA_CAP_BAD_PARAM_5 = 0x7e01_0010;
    SET_HCA_CAP_BAD_PARAM_6 = 0x7e01_0011;
    SET_HCA_CAP_BAD_PARAM_7 = 0x7e01_0012;
    ALLOC_UAR_ENGINE = 0x7e01_0013;
    DEALLOC_UAR_ENGINE = 0x7e01_0014;
    ACCESS_REG_BAD_PARAM = 0x7e01_0015;
    ACCESS_REG_BAD_INP_LEN = 0x7e01_0016;
    ACCESS_REG_BAD_PARAM_2 = 0x7e01_0017;
    ACCESS_REG_BAD_PARAM_3 = 0x7e01_0018;
    // 02: events/
    CREATE_EQ_BAD_PARAM = 0x7e02_0001;
    CREATE_EQ_BAD_PARAM_2 = 0x7e02_0002;
    CREATE_EQ_BAD_RES = 0x7e02_0003;
    CREATE_EQ_BAD_PARAM_3 = 0x7e02_0004;
    CREATE_EQ_ENGINE = 0x7e02_0005;
    DESTROY_EQ_ENGINE = 0x7e02_0006;
    QUERY_EQ_BAD_RES = 0x7e02_0007;
    QUERY_EQ_BAD_RES_2 = 0x7e02_0008;
    QUERY_EQ_INT_ERR = 0x7e02_0009;
    // 03: rdma/
    ALLOC_PD_ENGINE = 0x7e03_0001;
    DEALLOC_PD_ENGINE = 0x7e03_0002;
    ALLOC_XRCD_ENGINE = 0x7e03_0003;
    DEALLOC_XRCD_ENGINE = 0x7e03_0004;
    CREATE_MKEY_BAD_PARAM = 0x7e03_0005;
    CREATE_MKEY_BAD_PARAM_2 = 0x7e03_0006;
    CREATE_MKEY_BAD_PARAM_3 = 0x7e03_0007;
    CREATE_MKEY_BAD_PARAM_4 = 0x7e03_0008;
    CREATE_MKEY_BAD_PARAM_5 = 0x7e03_0009;
    CREATE_MKEY_BAD_PARAM_6 = 0x7e03_000a;
    CREATE_MKEY_BAD_PARAM_7 = 0x7e03_000b;
    CREATE_MKEY_BAD_PARAM_8 = 0x7e03_000c;
    CREATE_MKEY_BAD_PARAM_9 = 0x7e03_000d;
    CREATE_MKEY_BAD_PARAM_10 = 0x7e03_000e;
    CREATE_MKEY_BAD_PARAM_11 = 0x7e03_000f;
    CREATE_MKEY_ENGINE = 0x7e03_0010;
    DESTROY_MKEY_ENGINE = 0x7e03_0011;
    QUERY_MKEY_BAD_RES = 0x7e03_0012;
    QUERY_MKEY_INT_ERR = 0x7e03_0013;
    CREATE_CQ_BAD_PARAM = 0x7e03_0014;
    CREATE_CQ_BAD_PARAM_2 = 0x7e03_0015;
    CREATE_CQ_BAD_PARAM_3 = 0x7e03_0016;
    CREATE_CQ_BAD_RES = 0x7e03_0017;
    CREATE_CQ_BAD_PARAM_4 = 0x7e03_0018;
    CREATE_CQ_ENGINE = 0x7e03_0019;
    DESTROY_CQ_ENGINE = 0x7e03_001a;
    QUERY_CQ_BAD_RES = 0x7e03_001b;
    QUERY_CQ_BAD_RES_2 = 0x7e03_001c;
    QUERY_CQ_INT_ERR = 0x7e03_001d;
    MODIFY_CQ_BAD_RES = 0x7e03_001e;
    MODIFY_CQ_BAD_PARAM = 0x7e03_001f;
    CREATE_SRQ_BAD_PARAM = 0x7e03_0020;
    CREATE_SRQ_ENGINE = 0x7e03_0021;
    DESTROY_SRQ_ENGINE = 0x7e03_0022;
    QUERY_SRQ_BAD_RES = 0x7e03_0023;
    QUERY_SRQ_BAD_RES_2 = 0x7e03_0024;
    QUERY_SRQ_INT_ERR = 0x7e03_0025;
    ARM_RQ_BAD_PARAM = 0x7e03_0026;
    ARM_RQ_BAD_RES = 0x7e03_0027;
    ARM_RQ_BAD_PARAM_2 = 0x7e03_0028;
    CREATE_QP_BAD_PARAM = 0x7e03_0029;
    CREATE_QP_BAD_PARAM_2 = 0x7e03_002a;
    CREATE_QP_BAD_PARAM_3 = 0x7e03_002b;
    CREATE_QP_BAD_RES = 0x7e03_002c;
    CREATE_QP_ENGINE = 0x7e03_002d;
    DESTROY_QP_ENGINE = 0x7e03_002e;
    MODIFY_QP_BAD_OP = 0x7e03_002f;
    MODIFY_QP_BAD_RES = 0x7e03_0030;
    MODIFY_QP_BAD_PARAM = 0x7e03_0031;
    MODIFY_QP_ENGINE = 0x7e03_0032;
    QUERY_QP_BAD_PARAM = 0x7e03_0033;
    QUERY_QP_BAD_RES = 0x7e03_0034;
    QUERY_QP_BAD_RES_2 = 0x7e03_0035;
    QUERY_QP_INT_ERR = 0x7e03_0036;
    MCG_BAD_INP_LEN = 0x7e03_0037;
    ATTACH_TO_MCG_BAD_RES = 0x7e03_0038;
    ATTACH_TO_MCG_BAD_PARAM = 0x7e03_0039;
    ATTACH_TO_MCG_LIM = 0x7e03_003a;
    DETACH_FROM_MCG_BAD_RES = 0x7e03_003b;
    DETACH_FROM_MCG_BAD_PARAM = 0x7e03_003c;
    ALLOC_MEMIC_BAD_OP = 0x7e03_003d;
    ALLOC_MEMIC_BAD_PARAM = 0x7e03_003e;
    ALLOC_MEMIC_BAD_PARAM_2 = 0x7e03_003f;
    ALLOC_MEMIC_NO_RES = 0x7e03_0040;
    DEALLOC_MEMIC_BAD_PARAM = 0x7e03_0041;
    // rdma/ XRC and the ISSI 1 SRQ commands (indices from 0x80: other branches append after 0x41).
    DESTROY_SRQ_BAD_RES = 0x7e03_0080;
    CREATE_RMP_BAD_PARAM = 0x7e03_0081;
    CREATE_RMP_ENGINE = 0x7e03_0082;
    DESTROY_RMP_BAD_RES = 0x7e03_0083;
    DESTROY_RMP_ENGINE = 0x7e03_0084;
    QUERY_RMP_BAD_RES = 0x7e03_0085;
    QUERY_RMP_INT_ERR = 0x7e03_0086;
    MODIFY_RMP_BAD_RES = 0x7e03_0087;
    MODIFY_RMP_BAD_PARAM = 0x7e03_0088;
    MODIFY_RMP_BAD_PARAM_2 = 0x7e03_0089;
    CREATE_XRC_SRQ_BAD_PARAM = 0x7e03_008a;
    CREATE_XRC_SRQ_ENGINE = 0x7e03_008b;
    DESTROY_XRC_SRQ_BAD_RES = 0x7e03_008c;
    DESTROY_XRC_SRQ_ENGINE = 0x7e03_008d;
    QUERY_XRC_SRQ_BAD_RES = 0x7e03_008e;
    QUERY_XRC_SRQ_INT_ERR = 0x7e03_008f;
    ARM_XRC_SRQ_BAD_PARAM = 0x7e03_0090;
    ARM_XRC_SRQ_BAD_RES = 0x7e03_0091;
    ARM_XRC_SRQ_BAD_PARAM_2 = 0x7e03_0092;
    MODIFY_RMP_BAD_RES_2 = 0x7e03_0093;
    /// CREATE_CQ: a `*_umem_id` naming no umem of the caller's (BAD_RES).
    CREATE_CQ_UMEM = 0x7e03_0094;
    /// CREATE_CQ: a umem range outside the umem, a split doorbell record, or read-only pages the
    /// device would write (BAD_PARAM).
    CREATE_CQ_UMEM_RANGE = 0x7e03_0095;
    /// CREATE_QP: a `*_umem_id` naming no umem of the caller's (BAD_RES).
    CREATE_QP_UMEM = 0x7e03_0096;
    /// CREATE_QP: a umem range outside the umem or a split doorbell record (BAD_PARAM).
    CREATE_QP_UMEM_RANGE = 0x7e03_0097;
    /// CREATE_MKEY: a KLM/KSM key whose `translations_octword_size` exceeds `log_max_klm_list_size`, or
    /// more entries supplied than it holds (BAD_PARAM).
    CREATE_MKEY_INDIRECT_SIZE = 0x7e03_0098;
    /// CREATE_MKEY: a KSM key whose entry size (`log_page_size`) is out of range (BAD_PARAM).
    CREATE_MKEY_KSM_SIZE = 0x7e03_0099;
    // 04: ib/
    MAD_IFC_BAD_PARAM = 0x7e04_0001;
    MAD_IFC_BAD_INP_LEN = 0x7e04_0002;
    MAD_IFC_BAD_INP_LEN_2 = 0x7e04_0003;
    MAD_IFC_INT_ERR = 0x7e04_0004;
    QUERY_HCA_VPORT_CONTEXT_BAD_PARAM = 0x7e04_0005;
    QUERY_HCA_VPORT_CONTEXT_BAD_PARAM_2 = 0x7e04_0006;
    QUERY_VPORT_STATE_BAD_PARAM = 0x7e04_0007;
    // 05: cq_resize.rs
    RESIZE_CQ_BAD_PARAM = 0x7e05_0001;
    RESIZE_CQ_BAD_RES = 0x7e05_0002;
    RESIZE_CQ_BAD_PARAM_2 = 0x7e05_0003;
    RESIZE_CQ_BAD_RES_2 = 0x7e05_0004;
    RESIZE_CQ_BAD_RES_STATE = 0x7e05_0005;
    RESIZE_CQ_BAD_RES_STATE_2 = 0x7e05_0006;
    RESIZE_CQ_BAD_PARAM_3 = 0x7e05_0007;
    RESIZE_CQ_BAD_RES_3 = 0x7e05_0008;
    RESIZE_CQ_INT_ERR = 0x7e05_0009;
    RESIZE_CQ_BAD_RES_STATE_3 = 0x7e05_000a;
    RESIZE_CQ_BAD_RES_4 = 0x7e05_000b;
    RESIZE_CQ_BAD_RES_5 = 0x7e05_000c;
    /// MODIFY_CQ resize of a CQ into a umem (`cq_umem_valid`): not executed (BAD_PARAM).
    RESIZE_CQ_UMEM = 0x7e05_000d;
    // 06: eth/ vport, port registers, queues (eth-cmd).
    QUERY_NIC_VPORT_CONTEXT_BAD_PARAM = 0x7e06_0001;
    QUERY_NIC_VPORT_CONTEXT_BAD_PARAM_2 = 0x7e06_0002;
    MODIFY_NIC_VPORT_CONTEXT_BAD_PARAM = 0x7e06_0003;
    MODIFY_NIC_VPORT_CONTEXT_BAD_PARAM_2 = 0x7e06_0004;
    MODIFY_NIC_VPORT_CONTEXT_BAD_PARAM_3 = 0x7e06_0005;
    MODIFY_NIC_VPORT_CONTEXT_BAD_PARAM_4 = 0x7e06_0006;
    ETH_QUERY_VPORT_STATE_BAD_PARAM = 0x7e06_0007;
    ETH_QUERY_VPORT_STATE_BAD_PARAM_2 = 0x7e06_0008;
    MODIFY_VPORT_STATE_BAD_PARAM = 0x7e06_0009;
    MODIFY_VPORT_STATE_BAD_PARAM_2 = 0x7e06_000a;
    QUERY_VPORT_COUNTER_BAD_PARAM = 0x7e06_000b;
    ETH_REG_BAD_INP_LEN = 0x7e06_000c;
    ETH_REG_BAD_LOCAL_PORT = 0x7e06_000d;
    ETH_REG_PAOS_BAD_STATUS = 0x7e06_000e;
    ETH_REG_PMTU_BAD_MTU = 0x7e06_000f;
    ETH_REG_PTYS_BAD_MASK = 0x7e06_0010;
    ETH_REG_PTYS_BAD_ADMIN = 0x7e06_0011;
    ETH_REG_PPCNT_BAD_GROUP = 0x7e06_0012;
    ETH_REG_NODE_DESC_WRITE = 0x7e06_0013;
    ALLOC_TRANSPORT_DOMAIN_LIM = 0x7e06_0014;
    DEALLOC_TRANSPORT_DOMAIN_BUSY = 0x7e06_0015;
    DEALLOC_TRANSPORT_DOMAIN_BAD_RES = 0x7e06_0016;
    CREATE_TIS_BAD_TD = 0x7e06_0017;
    CREATE_TIS_LIM = 0x7e06_0018;
    DESTROY_TIS_BUSY = 0x7e06_0019;
    DESTROY_TIS_BAD_RES = 0x7e06_001a;
    ALLOC_Q_COUNTER_LIM = 0x7e06_001b;
    DEALLOC_Q_COUNTER_BUSY = 0x7e06_001c;
    DEALLOC_Q_COUNTER_BAD_RES = 0x7e06_001d;
    QUERY_Q_COUNTER_BAD_PARAM = 0x7e06_001e;
    QUERY_Q_COUNTER_BAD_RES = 0x7e06_001f;
    ETH_WQ_BAD_TYPE = 0x7e06_0020;
    ETH_WQ_BAD_SIZE = 0x7e06_0021;
    ETH_WQ_UMEM = 0x7e06_0022;
    ETH_WQ_ENGINE = 0x7e06_0023;
    ETH_WQ_BAD_CQ = 0x7e06_0024;
    CREATE_SQ_BAD_PARAM = 0x7e06_0025;
    CREATE_SQ_BAD_TIS = 0x7e06_0026;
    CREATE_RQ_BAD_PARAM = 0x7e06_0027;
    CREATE_RQ_BAD_COUNTER = 0x7e06_0028;
    ETH_MODIFY_Q_BAD_STATE = 0x7e06_0029;
    ETH_MODIFY_Q_BAD_TRANSITION = 0x7e06_002a;
    ETH_MODIFY_Q_ENGINE = 0x7e06_002b;
    MODIFY_SQ_BAD_RES = 0x7e06_002c;
    MODIFY_SQ_BAD_CUR_STATE = 0x7e06_002d;
    MODIFY_SQ_BAD_BITMASK = 0x7e06_002e;
    MODIFY_RQ_BAD_RES = 0x7e06_002f;
    MODIFY_RQ_BAD_CUR_STATE = 0x7e06_0030;
    MODIFY_RQ_BAD_BITMASK = 0x7e06_0031;
    MODIFY_RQ_BAD_COUNTER = 0x7e06_0032;
    ETH_DESTROY_Q_ENGINE = 0x7e06_0033;
    DESTROY_SQ_BAD_RES = 0x7e06_0034;
    DESTROY_RQ_BAD_RES = 0x7e06_0035;
    QUERY_SQ_BAD_RES = 0x7e06_0036;
    QUERY_RQ_BAD_RES = 0x7e06_0037;
    QUERY_HCA_VPORT_PKEY_BAD_PARAM = 0x7e06_0038;
    QUERY_HCA_VPORT_PKEY_BAD_PARAM_2 = 0x7e06_0039;
    QUERY_HCA_VPORT_PKEY_BAD_PARAM_3 = 0x7e06_003a;
    ETH_REG_PPCNT_WRITE = 0x7e06_003b;
    /// ACCESS_REG QCAM: a write, or a group other than 0 (BAD_PARAM).
    ETH_REG_QCAM_BAD_GROUP = 0x7e06_0050;
    /// ACCESS_REG QPTS: a trust state other than PCP (1) or DSCP (2) (BAD_PARAM).
    ETH_REG_QPTS_BAD_TRUST = 0x7e06_0051;
    /// ACCESS_REG QPDPM: an entry to update with a priority past 7 (BAD_PARAM).
    ETH_REG_QPDPM_BAD_PRIO = 0x7e06_0052;
    /// ACCESS_REG QETCR: an ETS group past 7 or a bandwidth share past 100% (BAD_PARAM).
    ETH_REG_QETCR_BAD_TC = 0x7e06_0053;
    /// CREATE_SQ/CREATE_RQ: a `wq_umem_id`/`dbr_umem_id` range that leaves its umem, or a doorbell
    /// record split over two pages (BAD_PARAM).
    ETH_WQ_UMEM_RANGE = 0x7e06_0054;
    // 08: eth/ steering, TIRs, RQTs (eth-rx).
    /// flow table bad miss id (BAD_PARAM).
    FLOW_TABLE_BAD_MISS_ID = 0x7e08_0001;
    /// flow table bad miss action (BAD_PARAM).
    FLOW_TABLE_BAD_MISS_ACTION = 0x7e08_0002;
    /// create flow table bad size (BAD_PARAM).
    CREATE_FLOW_TABLE_BAD_SIZE = 0x7e08_0003;
    /// create flow table lim (LIM).
    CREATE_FLOW_TABLE_LIM = 0x7e08_0004;
    /// destroy flow table in use (BAD_RES_STATE).
    DESTROY_FLOW_TABLE_IN_USE = 0x7e08_0005;
    /// modify flow table bad select (BAD_PARAM).
    MODIFY_FLOW_TABLE_BAD_SELECT = 0x7e08_0006;
    /// modify flow table self miss (BAD_PARAM).
    MODIFY_FLOW_TABLE_SELF_MISS = 0x7e08_0007;
    /// set flow table root bad id (BAD_PARAM).
    SET_FLOW_TABLE_ROOT_BAD_ID = 0x7e08_0008;
    /// flow short match param (BAD_INP_LEN).
    FLOW_SHORT_MATCH_PARAM = 0x7e08_0009;
    /// create flow group lim (LIM).
    CREATE_FLOW_GROUP_LIM = 0x7e08_000a;
    /// create flow group bad range (BAD_PARAM).
    CREATE_FLOW_GROUP_BAD_RANGE = 0x7e08_000b;
    /// create flow group overlap (BAD_PARAM).
    CREATE_FLOW_GROUP_OVERLAP = 0x7e08_000c;
    /// destroy flow group bad id (BAD_PARAM).
    DESTROY_FLOW_GROUP_BAD_ID = 0x7e08_000d;
    /// destroy flow group in use (BAD_RES_STATE).
    DESTROY_FLOW_GROUP_IN_USE = 0x7e08_000e;
    /// set fte extended dest (BAD_PARAM).
    SET_FTE_EXTENDED_DEST = 0x7e08_000f;
    /// set fte too many dest (BAD_PARAM).
    SET_FTE_TOO_MANY_DEST = 0x7e08_0010;
    /// set fte short dest (BAD_INP_LEN).
    SET_FTE_SHORT_DEST = 0x7e08_0011;
    /// set fte dest vs action (BAD_PARAM).
    SET_FTE_DEST_VS_ACTION = 0x7e08_0012;
    /// set fte bad dest id (BAD_PARAM).
    SET_FTE_BAD_DEST_ID = 0x7e08_0013;
    /// set fte bad dest type (BAD_PARAM).
    SET_FTE_BAD_DEST_TYPE = 0x7e08_0014;
    /// set fte bad action (BAD_PARAM).
    SET_FTE_BAD_ACTION = 0x7e08_0015;
    /// set fte self dest (BAD_PARAM).
    SET_FTE_SELF_DEST = 0x7e08_0016;
    /// set fte bad index (BAD_PARAM).
    SET_FTE_BAD_INDEX = 0x7e08_0017;
    /// set fte no entry (BAD_PARAM).
    SET_FTE_NO_ENTRY = 0x7e08_0018;
    /// set fte bad op mod (BAD_PARAM).
    SET_FTE_BAD_OP_MOD = 0x7e08_0019;
    /// set fte bad group (BAD_PARAM).
    SET_FTE_BAD_GROUP = 0x7e08_001a;
    /// set fte outside group (BAD_PARAM).
    SET_FTE_OUTSIDE_GROUP = 0x7e08_001b;
    /// set fte exists (BAD_RES_STATE).
    SET_FTE_EXISTS = 0x7e08_001c;
    /// set fte lim (LIM).
    SET_FTE_LIM = 0x7e08_001d;
    /// delete fte no entry (BAD_PARAM).
    DELETE_FTE_NO_ENTRY = 0x7e08_001e;
    /// create flow table bad type (BAD_PARAM).
    CREATE_FLOW_TABLE_BAD_TYPE = 0x7e08_001f;
    /// destroy flow table bad type (BAD_PARAM).
    DESTROY_FLOW_TABLE_BAD_TYPE = 0x7e08_0020;
    /// destroy flow table bad id (BAD_PARAM).
    DESTROY_FLOW_TABLE_BAD_ID = 0x7e08_0021;
    /// modify flow table bad type (BAD_PARAM).
    MODIFY_FLOW_TABLE_BAD_TYPE = 0x7e08_0022;
    /// modify flow table bad id (BAD_PARAM).
    MODIFY_FLOW_TABLE_BAD_ID = 0x7e08_0023;
    /// set flow table root bad type (BAD_PARAM).
    SET_FLOW_TABLE_ROOT_BAD_TYPE = 0x7e08_0024;
    /// create flow group bad type (BAD_PARAM).
    CREATE_FLOW_GROUP_BAD_TYPE = 0x7e08_0025;
    /// create flow group bad table (BAD_PARAM).
    CREATE_FLOW_GROUP_BAD_TABLE = 0x7e08_0026;
    /// destroy flow group bad type (BAD_PARAM).
    DESTROY_FLOW_GROUP_BAD_TYPE = 0x7e08_0027;
    /// destroy flow group bad table (BAD_PARAM).
    DESTROY_FLOW_GROUP_BAD_TABLE = 0x7e08_0028;
    /// set fte bad type (BAD_PARAM).
    SET_FTE_BAD_TYPE = 0x7e08_0029;
    /// set fte bad table (BAD_PARAM).
    SET_FTE_BAD_TABLE = 0x7e08_002a;
    /// delete fte bad type (BAD_PARAM).
    DELETE_FTE_BAD_TYPE = 0x7e08_002b;
    /// delete fte bad table (BAD_PARAM).
    DELETE_FTE_BAD_TABLE = 0x7e08_002c;
    /// tir bad hash (BAD_PARAM).
    TIR_BAD_HASH = 0x7e08_002d;
    /// tir lro (BAD_PARAM).
    TIR_LRO = 0x7e08_002e;
    /// create tir bad rqn (BAD_PARAM).
    CREATE_TIR_BAD_RQN = 0x7e08_002f;
    /// create tir bad rqt (BAD_PARAM).
    CREATE_TIR_BAD_RQT = 0x7e08_0030;
    /// create tir bad disp (BAD_PARAM).
    CREATE_TIR_BAD_DISP = 0x7e08_0031;
    /// create tir lim (LIM).
    CREATE_TIR_LIM = 0x7e08_0032;
    /// modify tir bad bitmask (BAD_PARAM).
    MODIFY_TIR_BAD_BITMASK = 0x7e08_0033;
    /// modify tir bad tirn (BAD_PARAM).
    MODIFY_TIR_BAD_TIRN = 0x7e08_0034;
    /// destroy tir bad tirn (BAD_PARAM).
    DESTROY_TIR_BAD_TIRN = 0x7e08_0035;
    /// rqt bad size (BAD_PARAM).
    RQT_BAD_SIZE = 0x7e08_0036;
    /// rqt short list (BAD_INP_LEN).
    RQT_SHORT_LIST = 0x7e08_0037;
    /// rqt bad rqn (BAD_PARAM).
    RQT_BAD_RQN = 0x7e08_0038;
    /// create rqt bad max (BAD_PARAM).
    CREATE_RQT_BAD_MAX = 0x7e08_0039;
    /// create rqt lim (LIM).
    CREATE_RQT_LIM = 0x7e08_003a;
    /// modify rqt bad rqtn (BAD_PARAM).
    MODIFY_RQT_BAD_RQTN = 0x7e08_003b;
    /// destroy rqt bad rqtn (BAD_PARAM).
    DESTROY_RQT_BAD_RQTN = 0x7e08_003c;
    // 09: roce/ (GID table) and the RoCE checks of other domains (mroce).
    /// SET/QUERY_ROCE_ADDRESS: `roce_address_index` past `roce_address_table_size` (BAD_PARAM).
    ROCE_ADDRESS_BAD_INDEX = 0x7e09_0001;
    /// SET/QUERY_ROCE_ADDRESS: `vhca_port_num` other than 0 or 1 (BAD_PARAM).
    ROCE_ADDRESS_BAD_PORT = 0x7e09_0002;
    /// SET_ROCE_ADDRESS: `roce_version` neither 0 (v1) nor 2 (v2) (BAD_PARAM).
    SET_ROCE_ADDRESS_BAD_VERSION = 0x7e09_0003;
    /// SET_ROCE_ADDRESS: `roce_l3_type` neither 0 (IPv4) nor 1 (IPv6) (BAD_PARAM).
    SET_ROCE_ADDRESS_BAD_L3_TYPE = 0x7e09_0004;
    /// INIT2RTR/RTR2RTS/...: the address path's `src_addr_index` past the GID table (BAD_PARAM).
    MODIFY_QP_BAD_SRC_ADDR_INDEX = 0x7e09_0005;
    /// MAD_IFC on a RoCE port: port other than 1 (BAD_PARAM).
    ROCE_MAD_IFC_BAD_PORT = 0x7e09_0006;
    /// MAD_IFC on a RoCE port: the MAD is not in the input (BAD_INP_LEN).
    ROCE_MAD_IFC_BAD_INP_LEN = 0x7e09_0007;
    /// MAD_IFC on a RoCE port: not a PerfMgt MAD (RoCE has no SMA) (BAD_PARAM).
    ROCE_MAD_IFC_NOT_PMA = 0x7e09_0008;
    // roce/ congestion control (indices from 0x20: other branches append after 0x08).
    /// QUERY/MODIFY_CONG_STATUS: `cong_protocol` neither 1 (RP) nor 2 (NP) (BAD_PARAM).
    CONG_STATUS_BAD_PROTOCOL = 0x7e09_0020;
    /// QUERY/MODIFY_CONG_STATUS: `priority` above 7 (BAD_PARAM).
    CONG_STATUS_BAD_PRIORITY = 0x7e09_0021;
    /// QUERY/MODIFY_CONG_PARAMS: `cong_protocol` not 1 (RP), 2 (NP) or 3 (general) (BAD_PARAM).
    CONG_PARAMS_BAD_PROTOCOL = 0x7e09_0022;
    /// MODIFY_CONG_PARAMS: a `field_select` bit that names no field of the node (BAD_PARAM).
    MODIFY_CONG_PARAMS_BAD_FIELD_SELECT = 0x7e09_0023;
    /// MODIFY_CONG_PARAMS: a selected field's value out of its range (BAD_PARAM).
    MODIFY_CONG_PARAMS_BAD_VALUE = 0x7e09_0024;
    // 0a: devx/ (user contexts, the uid every command and object carries).
    /// A command whose header uid is neither 0, 0xffff nor a live user context (BAD_PARAM).
    UID_UNKNOWN = 0x7e0a_0001;
    /// A command a user context may not issue (lifecycle, pages, capabilities, EQs, registers) (BAD_PARAM).
    UID_KERNEL_ONLY = 0x7e0a_0002;
    /// Modify, query or destroy of an object another user context owns (BAD_RES: to it, that object does not exist).
    UID_NOT_OWNER = 0x7e0a_0003;
    /// A create that names another user context's object, or the kernel's PD (BAD_RES).
    UID_FOREIGN_REFERENCE = 0x7e0a_0004;
    /// CREATE_UCTX: every user context is in use (`log_max_uctx`) (LIM).
    CREATE_UCTX_LIM = 0x7e0a_0005;
    /// CREATE_UCTX: a `cap` bit the device's `uctx_cap` does not offer (BAD_PARAM).
    CREATE_UCTX_BAD_CAP = 0x7e0a_0006;
    /// DESTROY_UCTX: no such user context (BAD_PARAM).
    DESTROY_UCTX_BAD_UID = 0x7e0a_0007;
    /// DESTROY_UCTX: the context still owns objects (BAD_RES_STATE).
    DESTROY_UCTX_BUSY = 0x7e0a_0008;
    /// CREATE_UMEM with the kernel's uid: the device offers no `umem_uid_0` (BAD_PARAM).
    CREATE_UMEM_KERNEL_UID = 0x7e0a_0009;
    /// CREATE_UMEM: a page size, page offset or MTT count out of range (BAD_PARAM).
    CREATE_UMEM_BAD_PARAM = 0x7e0a_000a;
    /// CREATE_UMEM: more MTT entries than one umem may have (LIM).
    CREATE_UMEM_LIM = 0x7e0a_000b;
    /// CREATE_UMEM: an MTT entry not aligned to the page size or without the read bit (BAD_PARAM).
    CREATE_UMEM_BAD_MTT = 0x7e0a_000c;
    /// CREATE_UMEM: every umem id or the umems' MTT budget is in use (LIM).
    CREATE_UMEM_LIM_2 = 0x7e0a_000d;
    /// DESTROY_UMEM: no such umem (BAD_RES).
    DESTROY_UMEM_BAD_RES = 0x7e0a_000e;
    /// DESTROY_UMEM: a queue or doorbell record still lies in it (BAD_RES_STATE).
    DESTROY_UMEM_BUSY = 0x7e0a_000f;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn syndromes_are_unique_and_in_their_range() {
        let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
        for &(name, v) in ALL {
            if let Some(other) = seen.insert(v, name) {
                panic!("{name} and {other} share syndrome {v:#x}");
            }
            assert_eq!(v >> 24, 0x7e, "{name}: {v:#x}");
            assert!(v & 0xffff != 0, "{name}: index 0 is unused");
        }
        assert!(ALL.len() > 100);
        assert_eq!(DISPATCH_UNKNOWN_OPCODE, 0x7e00_0001);
    }
}
