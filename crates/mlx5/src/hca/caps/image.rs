//! The capability pages QUERY_HCA_CAP returns, as data.
//!
//! [`GENERAL_CAPS`] is the `cmd_hca_cap` personality of the model doc's Appendix B: an InfiniBand-only
//! HCA (`port_type` IB, one port), RC/UC/UD/XRC (ISSI is QUERY_ISSI's/SET_ISSI's, not a capability:
//! `hca/lifecycle.rs`), BlueFlame off (`bf` = 0, `log_bf_reg_size` 9), no page requests
//! (`page_request_disable`), UMR as a ConnectX-5 offers it (translation, page size and atomic access
//! modifiable, extended translation offsets, indirect (KLM and KSM) mkeys: `mlx5_ib`'s MR cache is used;
//! [`crate::datapath::umr`] executes the WQEs), CQE version 1, one UAR per page.
//! Appendix B of the model doc predates UMR: its dump and field list are quoted below with
//! `umr_modify_entity_size_disabled`/`umr_modify_atomic_disabled`/`umr_indirect_mkey_disabled` (DW16 bits
//! 24/23/22) cleared and `umr_extended_translation_offset` (DW8 bit 7) set. Every field not in the table is 0,
//! which keeps the driver away from everything we do not emulate: `hca_cap_2`, `eth_net_offloads`,
//! `ipoib_*_offloads`, `pg` (ODP), `atomic`, `roce`, `nic_flow_table`, `eswitch_manager`,
//! `vport_group_manager`, `qos`, `debug`, `pcam_reg`/`mcam_reg`/`qcam_reg`, `device_memory`,
//! `event_cap`, `tls_*`, `ipsec_offload`, `crypto`, `general_obj_types`, `adv_virtualization`,
//! `port_selection_cap`, `driver_version`, `max_qp_cnt` (no Q counters), `log_max_transport_domain`,
//! `log_max_uctx`, `dump_fill_mkey`/`null_mkey`/`terminate_scatter_list_mkey`, `cmdif_checksum`,
//! `uar_4k`, `gid_table_size`, `pkey_table_size` (0 = 128 entries), `stat_rate_support`.
//!
//! Return the same image for MAX (op_mod 0) and, until SET_HCA_CAP, CUR (op_mod 1).
//!
//! Phase 2 (atomics): set `cmd_hca_cap.atomic` = 1 ([`general_caps_image_with_atomic`]) and answer
//! MLX5_CAP_ATOMIC (type 3) with [`atomic_caps_image`]; the driver then SET_HCA_CAPs
//! `atomic_req_8B_endianness_mode` = 1 (host endianness) on the atomic page.

use crate::fields::Field;
use crate::ifc::{self, atomic_caps, cmd_hca_cap, hca_cap_union};
use vrnic_engine::Limits;

/// Capability types the firmware answers QUERY_HCA_CAP for.
pub const CAP_GENERAL: u16 = 0x0;
pub const CAP_ATOMIC: u16 = 0x3;
pub const CAP_DEV_MEM: u16 = 0xf;

/// Bytes of a capability area.
pub const CAP_AREA: usize = 0x1000;

/// One capability value: header name, field, value.
pub type CapValue = (&'static str, Field, u64);

macro_rules! caps {
    ($m:ident: $($f:ident = $v:expr),* $(,)?) => {
        &[$((stringify!($f), $m::$f, $v as u64)),*]
    };
}

/// Appendix B of the model doc: the general capabilities (`cmd_hca_cap`, MLX5_CAP_GENERAL).
/// Entries with value 0 are listed only where the model doc names them explicitly.
pub const GENERAL_CAPS: &[CapValue] = caps!(cmd_hca_cap:
    page_request_disable = 1,
    log_max_srq_sz = 15,
    log_max_qp_sz = 15,
    log_max_qp = 16,
    log_max_srq = 16,
    log_max_cq_sz = 22,
    log_max_cq = 16,
    log_max_eq_sz = 22,
    log_max_mkey = 20,
    log_max_eq = 5,
    log_max_klm_list_size = 16,
    log_max_ra_req_qp = 4,
    log_max_ra_res_qp = 4,
    local_ca_ack_delay = 16,
    port_type = ifc::MLX5_CAP_PORT_TYPE_IB,
    num_ports = 1,
    log_max_msg = 30,
    cqe_version = 1,
    umr_extended_translation_offset = 1,
    cq_oi = 1,
    xrc = 1,
    ud = 1,
    uc = 1,
    rc = 1,
    log_pg_sz = 12,
    bf = 0,
    log_bf_reg_size = 9,
    max_wqe_sz_sq = 1024,
    max_wqe_sz_rq = 512,
    log_max_pd = 20,
    log_max_xrcd = 16,
    num_of_uars_per_page = 1,
);

/// Phase 2: the ATOMIC capability page (`atomic_caps`, MLX5_CAP_ATOMIC = 3): 8-byte compare-and-swap
/// and fetch-and-add on QPs, requester endianness selectable (mode 1 = host endianness).
pub const ATOMIC_CAPS: &[CapValue] = caps!(atomic_caps:
    supported_atomic_req_8B_endianness_mode_1 = 1,
    atomic_operations = ifc::MLX5_ATOMIC_OPS_CMP_SWAP | ifc::MLX5_ATOMIC_OPS_FETCH_ADD,
    atomic_size_qp = ifc::MLX5_ATOMIC_CAPS_ATOMIC_SIZE_QP_8_BYTES,
);

/// Size of one capability page as QUERY_HCA_CAP returns it (`hca_cap_union`, 0x1000 bytes).
pub const CAP_PAGE_SIZE: usize = hca_cap_union::SIZE;

/// A zeroed capability page with `values` written in.
pub fn build(values: &[CapValue]) -> Vec<u8> {
    let mut page = vec![0u8; CAP_PAGE_SIZE];
    for &(_, field, v) in values {
        field.set(&mut page, v);
    }
    page
}

/// The general capability page (MLX5_CAP_GENERAL), Appendix B.
pub fn general_caps_image() -> Vec<u8> {
    build(GENERAL_CAPS)
}

/// Phase 2: the general page with `atomic` = 1, which makes the driver query [`atomic_caps_image`].
pub fn general_caps_image_with_atomic() -> Vec<u8> {
    let mut page = general_caps_image();
    cmd_hca_cap::atomic.set(&mut page, 1);
    page
}

/// Phase 2: the ATOMIC capability page (MLX5_CAP_ATOMIC).
pub fn atomic_caps_image() -> Vec<u8> {
    build(ATOMIC_CAPS)
}

/// The general capability page with the object limits of this instance.
pub fn general_caps(l: &Limits) -> Vec<u8> {
    use ifc::cmd_hca_cap as c;
    // 8-byte compare-and-swap and fetch-and-add are offered (ATOMIC page).
    let mut page = general_caps_image_with_atomic();
    let log2 = |n: usize| (usize::BITS - 1 - n.max(1).leading_zeros()) as u64;
    c::log_max_qp.set(&mut page, log2(l.qps));
    c::log_max_cq.set(&mut page, log2(l.cqs));
    c::log_max_srq.set(&mut page, log2(l.srqs));
    c::log_max_mkey.set(&mut page, log2(l.mkeys));
    c::log_max_pd.set(&mut page, log2(l.pds));
    c::log_max_xrcd.set(&mut page, log2(l.xrcds));
    c::log_max_eq.set(&mut page, log2(l.eqs));
    c::log_max_cq_sz.set(&mut page, l.log_max_cq_size as u64);
    c::log_max_qp_sz.set(&mut page, l.log_max_qp_size as u64);
    c::log_max_srq_sz.set(&mut page, l.log_max_qp_size as u64);
    c::log_max_eq_sz.set(&mut page, l.log_max_eq_size as u64);
    c::log_max_ra_req_qp.set(&mut page, l.log_max_rd_atomic.min(7) as u64);
    c::log_max_ra_res_qp.set(&mut page, l.log_max_rd_atomic.min(7) as u64);
    // DevX user contexts where the instance has them (devx/): none by default.
    if l.uctxs > 0 {
        c::log_max_uctx.set(&mut page, log2(l.uctxs));
        c::uctx_cap.set(&mut page, crate::devx::state::UCTX_CAP as u64);
    }
    // MODIFY_CQ resize (mlx5_ib answers ibv_resize_cq with ENOSYS without it).
    c::cq_resize.set(&mut page, 1);
    // TEARDOWN_HCA's PREPARE_FAST_TEARDOWN: mlx5_core's shutdown (power-off, kexec) ends the
    // function in one command instead of destroying every object (a ConnectX-5 has it).
    c::fast_teardown.set(&mut page, 1);
    // The free-running internal timer that stamps CQEs (clock.rs).
    c::device_frequency_khz.set(&mut page, crate::clock::DEVICE_FREQUENCY_KHZ as u64);
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appendix B hex dump, with the UMR fields of the module doc.
    const APPENDIX_B_DUMP: &str = "
  000: 02000000 00000000 00000000 00000000
  010: 0f0f0010 00100000 00160010 16140005
  020: 00000090 00000000 00040004 00000000
  030: 00000000 00100001 1e000000 00000001
  040: 00000000 8000000f 0000000c 00090000
  050: 00000400 00000200 00000000 00000000
  060: 00000000 00140010 00000000 00000000
  070: 00000000 00000000 00000000 00000000
  080: 00000000 00000000 00000000 00000000
  090: 00000000 00000000 00000000 00000000
  0a0: 00000000 00000001 00000000 00000000
  0b0: 00000000 00000000 00000000 00000000
  0c0: 00000000 00000000 00000000 00000000
  0d0: 00000000 00000000 00000000 00000000
  0e0: 00000000 00000000 00000000 00000000
  0f0: 00000000 00000000 00000000 00000000";

    /// Appendix B "Fields set" paragraph (backquotes dropped), with the UMR fields of the module doc.
    const APPENDIX_B_FIELDS: &str = "page_request_disable=1, log_max_srq_sz=15, log_max_qp_sz=15, log_max_qp=16, \
        log_max_srq=16, log_max_cq_sz=22, log_max_cq=16, log_max_eq_sz=22, log_max_mkey=20, log_max_eq=5, \
        log_max_klm_list_size=16, log_max_ra_req_qp=4, log_max_ra_res_qp=4, local_ca_ack_delay=16, \
        port_type=0 (IB), num_ports=1, log_max_msg=30, cqe_version=1, umr_extended_translation_offset=1, \
        cq_oi=1, xrc=ud=uc=rc=1, log_pg_sz=12, bf=0, log_bf_reg_size=9, \
        max_wqe_sz_sq=1024, max_wqe_sz_rq=512, log_max_pd=20, log_max_xrcd=16, num_of_uars_per_page=1";

    fn parse_dump(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for line in s.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (addr, words) = line.split_once(':').unwrap();
            assert_eq!(usize::from_str_radix(addr, 16).unwrap(), out.len());
            for w in words.split_whitespace() {
                out.extend_from_slice(&u32::from_str_radix(w, 16).unwrap().to_be_bytes());
            }
        }
        out
    }

    /// (name, value) pairs of the "Fields set" paragraph; `a=b=c=1` sets all of them.
    fn parse_fields(s: &str) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for item in s.split(',') {
            let item = item.split('(').next().unwrap().trim();
            let parts: Vec<&str> = item.split('=').map(str::trim).collect();
            let v: u64 = parts.last().unwrap().parse().unwrap();
            for name in &parts[..parts.len() - 1] {
                out.push((name.to_string(), v));
            }
        }
        out
    }

    fn field(name: &str) -> Field {
        cmd_hca_cap::FIELDS
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not a cmd_hca_cap field"))
            .1
    }

    #[test]
    fn general_caps_match_appendix_b_dump() {
        let page = general_caps_image();
        assert_eq!(page.len(), 0x1000);
        let dump = parse_dump(APPENDIX_B_DUMP);
        assert_eq!(dump.len(), 256);
        for (i, (got, want)) in page[..256].iter().zip(&dump).enumerate() {
            assert_eq!(got, want, "cmd_hca_cap byte 0x{i:03x}");
        }
        assert!(page[256..].iter().all(|&b| b == 0), "capability area past cmd_hca_cap must be 0");
    }

    #[test]
    fn general_caps_match_appendix_b_fields() {
        let page = general_caps_image();
        let want = parse_fields(APPENDIX_B_FIELDS);
        assert_eq!(want.len(), 32);
        // every field Appendix B lists has its value...
        for (name, v) in &want {
            assert_eq!(field(name).get(&page), *v, "cmd_hca_cap.{name}");
        }
        // ...the table is exactly that list (same names, same values)...
        let mut table: Vec<(String, u64)> = GENERAL_CAPS.iter().map(|&(n, _, v)| (n.to_string(), v)).collect();
        let mut listed = want.clone();
        table.sort();
        listed.sort();
        assert_eq!(table, listed);
        for &(name, f, _) in GENERAL_CAPS {
            assert_eq!(f, field(name), "{name}");
        }
        // ...and every other named field of cmd_hca_cap is 0.
        for &(name, f) in cmd_hca_cap::FIELDS {
            if !want.iter().any(|(n, _)| n == name) {
                assert_eq!(f.get(&page), 0, "cmd_hca_cap.{name} must stay 0");
            }
        }
    }

    #[test]
    fn gated_caps_are_off() {
        // The capability bits that would make mlx5_core/mlx5_ib query pages or use features we do not
        // emulate (mlx5_query_hca_caps, handle_hca_cap*, mlx5_ib_stage_*).
        let page = general_caps_image();
        for f in [
            cmd_hca_cap::hca_cap_2,
            cmd_hca_cap::port_selection_cap,
            cmd_hca_cap::eth_net_offloads,
            cmd_hca_cap::ipoib_enhanced_offloads,
            cmd_hca_cap::ipoib_basic_offloads,
            cmd_hca_cap::pg,
            cmd_hca_cap::atomic,
            cmd_hca_cap::roce,
            cmd_hca_cap::nic_flow_table,
            cmd_hca_cap::eswitch_manager,
            cmd_hca_cap::vport_group_manager,
            cmd_hca_cap::qos,
            cmd_hca_cap::debug,
            cmd_hca_cap::pcam_reg,
            cmd_hca_cap::mcam_reg,
            cmd_hca_cap::qcam_reg,
            cmd_hca_cap::device_memory,
            cmd_hca_cap::event_cap,
            cmd_hca_cap::tls_tx,
            cmd_hca_cap::tls_rx,
            cmd_hca_cap::general_obj_types,
            cmd_hca_cap::ipsec_offload,
            cmd_hca_cap::crypto,
            cmd_hca_cap::adv_virtualization,
            cmd_hca_cap::driver_version,
            cmd_hca_cap::max_qp_cnt,
            cmd_hca_cap::log_max_transport_domain,
            cmd_hca_cap::log_max_uctx,
            cmd_hca_cap::bf,
            cmd_hca_cap::uar_4k,
            cmd_hca_cap::cmdif_checksum,
        ] {
            assert_eq!(f.get(&page), 0, "{f:?}");
        }
        assert_eq!(cmd_hca_cap::port_type.get(&page), ifc::MLX5_CAP_PORT_TYPE_IB as u64);
        assert_eq!(cmd_hca_cap::xrc.get(&page), 1);
        assert_eq!(cmd_hca_cap::page_request_disable.get(&page), 1);
    }

    #[test]
    fn atomic_page_phase2() {
        let page = atomic_caps_image();
        assert_eq!(page.len(), 0x1000);
        // Appendix B: atomic_operations = 0x3 @DW4[15:0], atomic_size_qp = 0x8 @DW5[15:0],
        // supported_atomic_req_8B_endianness_mode_1 @DW2 bit 25
        assert_eq!(&page[0x10..0x14], &[0, 0, 0, 3]);
        assert_eq!(&page[0x14..0x18], &[0, 0, 0, 8]);
        assert_eq!(&page[0x08..0x0c], &[0x02, 0, 0, 0]);
        let nonzero = page.iter().enumerate().filter(|(_, &b)| b != 0).map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(nonzero, vec![0x08, 0x13, 0x17]);
        let with = general_caps_image_with_atomic();
        let base = general_caps_image();
        assert_eq!(cmd_hca_cap::atomic.get(&with), 1);
        let diff = with.iter().zip(&base).filter(|(a, b)| a != b).count();
        assert_eq!(diff, 1);
    }

    #[test]
    fn read_atomic_depth_follows_the_limits() {
        use ifc::cmd_hca_cap as c;
        let page = general_caps(&Limits::default());
        assert_eq!(c::log_max_ra_req_qp.get(&page), 7, "128 outstanding, as rxe");
        assert_eq!(c::log_max_ra_res_qp.get(&page), 7);
        let page = general_caps(&Limits { log_max_rd_atomic: 4, ..Limits::default() });
        assert_eq!((c::log_max_ra_req_qp.get(&page), c::log_max_ra_res_qp.get(&page)), (4, 4), "ConnectX-5's 16");
        // The responder keeps an atomic result for every atomic the requester may have outstanding.
        assert!(vrnic_engine::transport::ATOMIC_REPLAY >= 1 << Limits::default().log_max_rd_atomic);
    }
}
