//! The congestion-control commands through the real command transport, with
//! the byte offsets of `mlx5_ifc.h` written out by hand (not through
//! the generated `ifc.rs`): what ib/cong.c writes and reads, the caps that make
//! mlx5_ib use them, bad input, and the InfiniBand personality.

use std::sync::Arc;

use crate::cmd::{status, syndrome};
use crate::ifc;
use crate::test_support::{cmd, Bench};
use vrnic_cc::{CcConfig, CcControl, CcCounter};

/// The 32-bit big-endian word at byte `at`.
fn dw(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

fn put(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn eth() -> (Bench, Arc<CcControl>) {
    let mut t = Bench::eth();
    t.up();
    let cc = t.fw.port.roce_test().cc().clone();
    (t, cc)
}

/// QUERY_CONG_PARAMS of `node`: the 256-byte block (output bytes 0x10..0x110).
fn query_params(t: &mut Bench, node: u8) -> Vec<u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_QUERY_CONG_PARAMS, 0, 0x10);
    i[0x0b] = node;
    let o = t.ok(&i, 0x110);
    o[0x10..0x110].to_vec()
}

/// A MODIFY_CONG_PARAMS input as `mlx5_ib_set_cc_params` builds it: node at
/// byte 0x0b (low nibble), `field_select` at 0x0c, the block at 0x20.
fn modify_in(node: u8, select: u32, block: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut i = cmd(ifc::MLX5_CMD_OP_MODIFY_CONG_PARAMS, 0, 0x120);
    i[0x0b] = node;
    put(&mut i, 0x0c, select);
    block(&mut i[0x20..0x120]);
    i
}

fn status_in(opcode: u32, prio: u8, node: u8, enable: bool) -> Vec<u8> {
    let mut i = cmd(opcode, 0, 0x10);
    i[0x0b] = (prio << 4) | node;
    if enable {
        i[0x0c] = 0x80;
    }
    i
}

#[test]
fn the_ethernet_general_page_allows_cc_query_and_modify_and_infiniband_does_not() {
    let (mut t, _) = eth();
    let o = t.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
    // cmd_hca_cap DW11 (byte 0x2c): bit 30 cc_query_allowed, bit 29 cc_modify_allowed.
    assert_eq!(dw(&o[16..], 0x2c) & (3 << 29), 3 << 29);
    let mut ib = Bench::new();
    ib.up();
    let o = ib.ok(&cmd(ifc::MLX5_CMD_OP_QUERY_HCA_CAP, 1, 16), ifc::query_hca_cap_out::SIZE);
    assert_eq!(dw(&o[16..], 0x2c) & (3 << 29), 0, "no CC on an InfiniBand port");
}

#[test]
fn query_params_reads_the_connectx_defaults_at_the_ifc_offsets() {
    let (mut t, _) = eth();
    let rp = query_params(&mut t, 1);
    // (byte, value): clamp_tgt_rate_after_time_inc is 0x0c bit 23; the rest are whole words.
    let want_rp = [
        (0x0c, 1 << 23),
        (0x14, 300),
        (0x18, 32767),
        (0x1c, 1),
        (0x24, 5),
        (0x28, 50),
        (0x2c, 11),
        (0x30, 50),
        (0x34, 1),
        (0x58, 1019),
        (0x5c, 1),
        (0x60, 4),
        (0x68, 1023),
    ];
    for (at, v) in want_rp {
        assert_eq!(dw(&rp, at), v, "rp word {at:#x}");
    }
    let nonzero: Vec<usize> = (0..64).map(|w| w * 4).filter(|&at| dw(&rp, at) != 0).collect();
    assert_eq!(nonzero, want_rp.map(|(at, _)| at).to_vec(), "nothing else in the RP block");
    let np = query_params(&mut t, 2);
    // min_time_between_cnps 4 µs at 0x14; 0x18: cnp_dscp 48 in [13:8], cnp_prio_mode 0 (bit 3), cnp_802p_prio 6 in [2:0].
    assert_eq!(dw(&np, 0x14), 4);
    assert_eq!(dw(&np, 0x18), (48 << 8) | 6);
    assert_eq!((0..64).filter(|&w| dw(&np, w * 4) != 0).count(), 2);
    assert!(query_params(&mut t, 3).iter().all(|&b| b == 0), "general: rtt_resp_dscp not set");
}

#[test]
fn modify_params_copies_only_the_selected_fields() {
    let (mut t, cc) = eth();
    let g = cc.generation();
    // debugfs rp_ai_rate = 42: mask bit 7; other words of the block carry junk the device must ignore.
    let i = modify_in(1, 1 << 7, |b| {
        put(b, 0x24, 42);
        put(b, 0x28, 999);
        put(b, 0x14, 7);
    });
    t.ok(&i, 16);
    let rp = query_params(&mut t, 1);
    assert_eq!((dw(&rp, 0x24), dw(&rp, 0x28), dw(&rp, 0x14)), (42, 50, 300));
    assert_eq!(cc.config().rp.rpg_ai_rate, 42, "the port's CcControl is what the command wrote");
    assert_ne!(cc.generation(), g);
    // rp_clamp_tgt_rate = 1 (bit 1, 0x0c bit 27): clamp_tgt_rate_after_time_inc (bit 2) stays 1.
    t.ok(&modify_in(1, 1 << 1, |b| put(b, 0x0c, 1 << 27)), 16);
    assert_eq!(dw(&query_params(&mut t, 1), 0x0c), (1 << 27) | (1 << 23));
    // rp_gd (bit 16, 0x2c) and rp_initial_alpha_value (bit 15, 0x68) together.
    t.ok(
        &modify_in(1, (1 << 16) | (1 << 15), |b| {
            put(b, 0x2c, 9);
            put(b, 0x68, 512);
        }),
        16,
    );
    let c = cc.config().rp;
    assert_eq!((c.rpg_gd, c.initial_alpha_value, c.rpg_ai_rate, c.clamp_tgt_rate), (9, 512, 42, true));
    // Every RP field by its own bit, read back by the query: the whole table maps both ways.
    for (bit, at, v) in [
        (3, 0x14, 301),
        (4, 0x18, 1000),
        (5, 0x1c, 31),
        (6, 0x20, 25000),
        (8, 0x28, 60),
        (9, 0x30, 100),
        (10, 0x34, 2),
        (11, 0x54, 100),
        (12, 0x58, 1000),
        (13, 0x5c, 3),
        (14, 0x60, 8),
    ] {
        t.ok(&modify_in(1, 1 << bit, |b| put(b, at, v)), 16);
        assert_eq!(dw(&query_params(&mut t, 1), at), v, "bit {bit} → word {at:#x}");
    }
}

#[test]
fn np_cnp_prio_is_written_with_its_mode_under_bit_4() {
    let (mut t, cc) = eth();
    // debugfs np_cnp_prio = 3: cnp_prio_mode = 0, cnp_802p_prio = 3, mask bit 4.
    t.ok(&modify_in(2, 1 << 4, |b| put(b, 0x18, 3)), 16);
    assert_eq!(dw(&query_params(&mut t, 2), 0x18), (48 << 8) | 3);
    // np_cnp_prio_mode = 1 (bit 3 of the word), same mask bit: the priority field goes with it.
    t.ok(&modify_in(2, 1 << 4, |b| put(b, 0x18, 1 << 3)), 16);
    assert_eq!(dw(&query_params(&mut t, 2), 0x18), (48 << 8) | (1 << 3));
    // np_cnp_dscp = 26 (bit 3, [13:8]) and np_min_time_between_cnps = 50 (bit 2).
    t.ok(
        &modify_in(2, (1 << 3) | (1 << 2), |b| {
            put(b, 0x18, 26 << 8);
            put(b, 0x14, 50);
        }),
        16,
    );
    let np = cc.config().np;
    assert_eq!((np.cnp_dscp, np.cnp_prio_mode, np.min_time_between_cnps), (26, true, 50));
    // The general node (bit 0): rtt_resp_dscp_valid 0x10 bit 15, rtt_resp_dscp 0x10 [5:0].
    t.ok(&modify_in(3, 1, |b| put(b, 0x10, (1 << 15) | 26)), 16);
    assert_eq!(dw(&query_params(&mut t, 3), 0x10), (1 << 15) | 26);
    assert_eq!(cc.config().np, np, "node 3 is not node 2");
}

#[test]
fn bad_params_commands_fail_with_bad_param_and_change_nothing() {
    let (mut t, cc) = eth();
    let before = cc.config();
    let bad = [
        (modify_in(0, 1 << 7, |_| ()), syndrome::CONG_PARAMS_BAD_PROTOCOL),
        (modify_in(4, 1 << 7, |_| ()), syndrome::CONG_PARAMS_BAD_PROTOCOL),
        // RP has no bit 0 (and none above 16); NP has no bit 1.
        (modify_in(1, 1, |_| ()), syndrome::MODIFY_CONG_PARAMS_BAD_FIELD_SELECT),
        (modify_in(1, 1 << 17, |_| ()), syndrome::MODIFY_CONG_PARAMS_BAD_FIELD_SELECT),
        (modify_in(2, 1 << 1, |_| ()), syndrome::MODIFY_CONG_PARAMS_BAD_FIELD_SELECT),
        // rpg_min_dec_fac 101 % with a good rpg_ai_rate beside it: neither is taken.
        (
            modify_in(1, (1 << 9) | (1 << 7), |b| {
                put(b, 0x30, 101);
                put(b, 0x24, 77);
            }),
            syndrome::MODIFY_CONG_PARAMS_BAD_VALUE,
        ),
        (modify_in(1, 1 << 5, |b| put(b, 0x1c, 0)), syndrome::MODIFY_CONG_PARAMS_BAD_VALUE),
        (modify_in(1, 1 << 12, |b| put(b, 0x58, 1024)), syndrome::MODIFY_CONG_PARAMS_BAD_VALUE),
        (modify_in(1, 1 << 15, |b| put(b, 0x68, u32::MAX)), syndrome::MODIFY_CONG_PARAMS_BAD_VALUE),
        (modify_in(1, 1 << 16, |b| put(b, 0x2c, 16)), syndrome::MODIFY_CONG_PARAMS_BAD_VALUE),
    ];
    for (i, syn) in bad {
        assert_eq!(t.fails(&i, 16), (status::BAD_PARAM, syn), "field_select {:#x}", dw(&i, 0x0c));
    }
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_CONG_PARAMS, 0, 0x10);
    q[0x0b] = 5;
    assert_eq!(t.fails(&q, 0x110), (status::BAD_PARAM, syndrome::CONG_PARAMS_BAD_PROTOCOL));
    // A MODIFY shorter than its block.
    let short = &modify_in(1, 1 << 7, |_| ())[..0x40];
    assert_eq!(t.fails(short, 16).0, status::BAD_INP_LEN);
    assert_eq!(cc.config(), before);
}

#[test]
fn cong_status_enables_one_node_on_one_priority() {
    let (mut t, cc) = eth();
    let q = |t: &mut Bench, prio: u8, node: u8| {
        let o = t.ok(&status_in(ifc::MLX5_CMD_OP_QUERY_CONG_STATUS, prio, node, false), 0x10);
        // enable: output 0x0c bit 31; tag_enable (bit 30) is always 0.
        assert_eq!(dw(&o, 0x0c) & !(1 << 31), 0);
        o[0x0c] >> 7 == 1
    };
    assert!(q(&mut t, 3, 1) && q(&mut t, 3, 2), "ConnectX default: both nodes on");
    t.ok(&status_in(ifc::MLX5_CMD_OP_MODIFY_CONG_STATUS, 5, 2, false), 16);
    assert_eq!(cc.config().np_enabled, 0xdf);
    assert_eq!(cc.config().rp_enabled, 0xff);
    assert!(!q(&mut t, 5, 2) && q(&mut t, 5, 1) && q(&mut t, 4, 2));
    cc.set_config(CcConfig::disabled());
    t.ok(&status_in(ifc::MLX5_CMD_OP_MODIFY_CONG_STATUS, 7, 1, true), 16);
    assert_eq!((cc.config().rp_enabled, cc.config().np_enabled), (0x80, 0));
    for (prio, node, syn) in [
        (8, 1, syndrome::CONG_STATUS_BAD_PRIORITY),
        (15, 2, syndrome::CONG_STATUS_BAD_PRIORITY),
        (0, 0, syndrome::CONG_STATUS_BAD_PROTOCOL),
        (0, 3, syndrome::CONG_STATUS_BAD_PROTOCOL),
    ] {
        for op in [ifc::MLX5_CMD_OP_QUERY_CONG_STATUS, ifc::MLX5_CMD_OP_MODIFY_CONG_STATUS] {
            assert_eq!(t.fails(&status_in(op, prio, node, true), 0x10), (status::BAD_PARAM, syn));
        }
    }
    assert_eq!((cc.config().rp_enabled, cc.config().np_enabled), (0x80, 0));
}

#[test]
fn cong_statistics_reads_the_port_counters_and_clear_zeroes_them() {
    let (mut t, cc) = eth();
    cc.count(CcCounter::RpCnpIgnored, 1);
    cc.count(CcCounter::RpCnpHandled, 2);
    cc.count(CcCounter::NpEcnMarkedRocePackets, 0x1_0000_0003);
    cc.count(CcCounter::NpCnpSent, 4);
    let q = |t: &mut Bench, clear: bool| {
        let mut i = cmd(ifc::MLX5_CMD_OP_QUERY_CONG_STATISTICS, 0, 0x10);
        if clear {
            i[0x08] = 0x80;
        }
        let o = t.ok(&i, 0x110);
        let q64 = |at: usize| ((dw(&o, at) as u64) << 32) | dw(&o, at + 4) as u64;
        // §5.2: rp_cnp_ignored 0x18, rp_cnp_handled 0x20, np_ecn_marked_roce_packets 0x54, np_cnp_sent 0x5c.
        [q64(0x18), q64(0x20), q64(0x54), q64(0x5c)]
    };
    assert_eq!(q(&mut t, false), [1, 2, 0x1_0000_0003, 4]);
    assert_eq!(q(&mut t, false), [1, 2, 0x1_0000_0003, 4], "a plain read keeps them");
    assert_eq!(q(&mut t, true), [1, 2, 0x1_0000_0003, 4]);
    assert_eq!(q(&mut t, false), [0; 4]);
}

#[test]
fn an_infiniband_port_refuses_the_cong_commands_as_unknown() {
    let mut t = Bench::new();
    t.up();
    for op in [
        ifc::MLX5_CMD_OP_QUERY_CONG_STATUS,
        ifc::MLX5_CMD_OP_MODIFY_CONG_STATUS,
        ifc::MLX5_CMD_OP_QUERY_CONG_PARAMS,
        ifc::MLX5_CMD_OP_MODIFY_CONG_PARAMS,
        ifc::MLX5_CMD_OP_QUERY_CONG_STATISTICS,
    ] {
        assert_eq!(t.fails(&cmd(op, 0, 0x120), 0x110), (status::BAD_OP, syndrome::DISPATCH_UNKNOWN_OPCODE));
    }
}
