//! HCA lifecycle: ENABLE/DISABLE/INIT/TEARDOWN_HCA, ISSI, the driver's
//! version string, QUERY_ADAPTER and NOP.

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::hca::HcaCx;
use crate::ifc;

pub fn enable_hca(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::enable_hca_in::function_id) != 0 || r.get(ifc::enable_hca_in::embedded_cpu_function) != 0 {
        return Err(fail!(status::BAD_PARAM, ENABLE_HCA_BAD_PARAM));
    }
    cx.hca.enabled = true;
    Ok(out(ifc::enable_hca_out::SIZE))
}

pub fn disable_hca(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::disable_hca_in::function_id) != 0 {
        return Err(fail!(status::BAD_PARAM, DISABLE_HCA_BAD_PARAM));
    }
    cx.hca.enabled = false;
    cx.hca.initialized = false;
    Ok(out(ifc::disable_hca_out::SIZE))
}

pub fn query_issi(cx: &mut HcaCx<'_>, _r: &Req<'_>) -> CmdResult {
    let mut o = out(ifc::query_issi_out::SIZE);
    ifc::query_issi_out::current_issi.set(&mut o, cx.hca.issi as u64);
    // ISSI 0 and 1: mlx5_core sets 1, and mlx5_ib then creates SRQs as RMPs and XRC SRQs with
    // CREATE_XRC_SRQ (which carries the user index XRC receive CQEs name). Both command sets stay open.
    ifc::query_issi_out::supported_issi_dw0.set(&mut o, 0b11);
    Ok(o)
}

pub fn set_issi(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    let issi = r.get(ifc::set_issi_in::current_issi);
    if issi > 1 {
        return Err(fail!(status::BAD_PARAM, SET_ISSI_BAD_PARAM));
    }
    cx.hca.issi = issi as u8;
    Ok(out(ifc::set_issi_out::SIZE))
}

pub fn init_hca(cx: &mut HcaCx<'_>, _r: &Req<'_>) -> CmdResult {
    if cx.hca.initialized {
        return Err(fail!(status::BAD_SYS_STATE, INIT_HCA_BAD_SYS_STATE));
    }
    cx.hca.initialized = true;
    cx.hca.fast_teardown_prepared = false;
    Ok(out(ifc::init_hca_out::SIZE))
}

pub fn teardown_hca(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    let profile = r.get(ifc::teardown_hca_in::profile);
    if profile > 2 {
        return Err(fail!(status::BAD_PARAM, TEARDOWN_HCA_BAD_PARAM));
    }
    // Graceful (0), force (1) and prepare-fast-teardown (2) all end the HCA. After 2 the driver
    // sets `nic_interface` to DISABLED and polls until it reads back DISABLED: that write drops
    // every object ([`crate::Firmware::nic_interface_disabled`]).
    cx.hca.initialized = false;
    cx.hca.fast_teardown_prepared = profile == ifc::MLX5_TEARDOWN_HCA_IN_PROFILE_PREPARE_FAST_TEARDOWN as u64;
    let mut o = out(ifc::teardown_hca_out::SIZE);
    ifc::teardown_hca_out::state.set(&mut o, 0);
    Ok(o)
}

pub fn set_driver_version(cx: &mut HcaCx<'_>, r: &Req<'_>) -> CmdResult {
    if let Some(b) = ifc::set_driver_version_in::driver_version.bytes(r.input) {
        let s: String = b
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| if c.is_ascii_graphic() || c == b' ' { c as char } else { '?' })
            .collect();
        tracing::info!(driver = %s, "SET_DRIVER_VERSION");
        cx.hca.driver_version = s;
    }
    Ok(out(ifc::set_driver_version_out::SIZE))
}

pub fn query_adapter(cx: &mut HcaCx<'_>, _r: &Req<'_>) -> CmdResult {
    use ifc::query_adapter_out::query_adapter_struct as q;
    let mut o = out(ifc::query_adapter_out::SIZE);
    q::ieee_vendor_id.set(&mut o, cx.cfg.vendor_id as u64);
    q::vsd_vendor_id.set(&mut o, 0x15b3);
    if let Some(psid) = q::vsd_contd_psid.bytes_mut(&mut o) {
        let b = cx.hca.board_id.as_bytes();
        let n = b.len().min(psid.len());
        psid[..n].copy_from_slice(&b[..n]);
    }
    Ok(o)
}

pub fn nop(_cx: &mut HcaCx<'_>, _r: &Req<'_>) -> CmdResult {
    Ok(out(16))
}
