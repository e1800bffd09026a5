//! HCA lifecycle and infrastructure commands: ENABLE/DISABLE/INIT/TEARDOWN,
//! ISSI, pages, capabilities, adapter query, UARs, EQs, registers, MAD_IFC,
//! vport queries.

use super::cmd::status;
use super::fields::Field;
use super::firmware::{eng, fail, out, page_offset_bytes, pages_for, CmdResult, Firmware, Req, CAP_AREA, CAP_GENERAL};
use super::datapath::EqCtx;
use super::ifc::{self, cmd_hca_cap};
use super::mad;

pub fn enable_hca(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::enable_hca_in::function_id) != 0 || r.get(ifc::enable_hca_in::embedded_cpu_function) != 0 {
        return Err(fail!(status::BAD_PARAM));
    }
    fw.enabled = true;
    Ok(out(ifc::enable_hca_out::SIZE))
}

pub fn disable_hca(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::disable_hca_in::function_id) != 0 {
        return Err(fail!(status::BAD_PARAM));
    }
    fw.enabled = false;
    fw.initialized = false;
    Ok(out(ifc::disable_hca_out::SIZE))
}

pub fn query_issi(_fw: &mut Firmware, _r: &Req<'_>) -> CmdResult {
    let mut o = out(ifc::query_issi_out::SIZE);
    ifc::query_issi_out::current_issi.set(&mut o, 0);
    // Only ISSI 0: SRQs through CREATE_SRQ, no SET_ISSI.
    ifc::query_issi_out::supported_issi_dw0.set(&mut o, 1);
    Ok(o)
}

pub fn set_issi(_fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::set_issi_in::current_issi) != 0 {
        return Err(fail!(status::BAD_PARAM));
    }
    Ok(out(ifc::set_issi_out::SIZE))
}

pub fn query_pages(_fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    if !(1..=3).contains(&r.op_mod) {
        return Err(fail!(status::BAD_PARAM));
    }
    let mut o = out(ifc::query_pages_out::SIZE);
    ifc::query_pages_out::function_id.set(&mut o, r.get(ifc::query_pages_in::function_id));
    // The emulated device needs no host memory.
    ifc::query_pages_out::num_pages.set(&mut o, 0);
    Ok(o)
}

/// Upper bound on pages the driver may hand over.
const MAX_PAGES: usize = 1 << 16;

pub fn manage_pages(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::manage_pages_in::input_num_entries) as usize;
    match r.op_mod {
        // ALLOCATION_FAIL: the driver could not give pages; nothing to do.
        0 => Ok(out(ifc::manage_pages_out::SIZE)),
        // ALLOCATION_SUCCESS: keep the pages (we never touch them).
        1 => {
            if fw.pages.len() + n > MAX_PAGES {
                return Err(fail!(status::LIM));
            }
            let pas = r.pas(ifc::manage_pages_in::pas, n)?;
            fw.pages.extend(pas);
            Ok(out(ifc::manage_pages_out::SIZE))
        }
        // HCA_RETURN_PAGES: give back up to n pages.
        2 => {
            let room = r.outlen.saturating_sub(ifc::manage_pages_out::SIZE) / 8;
            let k = n.min(fw.pages.len()).min(room);
            let mut o = out(ifc::manage_pages_out::SIZE + k * 8);
            ifc::manage_pages_out::output_num_entries.set(&mut o, k as u64);
            for i in 0..k {
                let p = fw.pages.pop().unwrap_or(0);
                ifc::manage_pages_out::pas.elem(i as u32).set(&mut o, p);
            }
            Ok(o)
        }
        _ => Err(fail!(status::BAD_PARAM)),
    }
}

pub fn query_hca_cap(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::query_hca_cap_in::other_function) != 0 {
        return Err(fail!(status::BAD_PARAM));
    }
    let cap_type = r.op_mod >> 1;
    let current = r.op_mod & 1 == 1;
    let table = if current { &fw.caps_cur } else { &fw.caps_max };
    let page = table.get(&cap_type).ok_or(fail!(status::BAD_PARAM))?;
    let mut o = out(ifc::query_hca_cap_out::SIZE);
    let range = ifc::query_hca_cap_out::capability.byte_range().ok_or(fail!(status::INT_ERR))?;
    o[range].copy_from_slice(&page[..CAP_AREA]);
    Ok(o)
}

/// Fields of `cmd_hca_cap` the driver may set (SET_HCA_CAP); everything
/// else it writes back is ignored, as firmware does.
const SETTABLE_GENERAL: &[Field] = &[
    cmd_hca_cap::pkey_table_size,
    cmd_hca_cap::log_max_qp,
    cmd_hca_cap::cmdif_checksum,
    cmd_hca_cap::log_uar_page_sz,
    cmd_hca_cap::uar_4k,
    cmd_hca_cap::cache_line_128byte,
    cmd_hca_cap::num_vhca_ports,
    cmd_hca_cap::release_all_pages,
    cmd_hca_cap::mkey_by_name,
];

pub fn set_hca_cap(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let cap_type = r.op_mod >> 1;
    if r.op_mod & 1 != 0 || r.get(ifc::set_hca_cap_in::other_function) != 0 {
        return Err(fail!(status::BAD_PARAM));
    }
    let new = r.sub(ifc::set_hca_cap_in::capability)?;
    let max = fw.caps_max.get(&cap_type).ok_or(fail!(status::BAD_PARAM))?.clone();
    let cur = fw.caps_cur.get_mut(&cap_type).ok_or(fail!(status::BAD_PARAM))?;
    if cap_type == CAP_GENERAL {
        for &f in SETTABLE_GENERAL {
            let v = f.get(&new);
            let m = f.get(&max);
            // Feature bits can only be set where MAX has them; sizes only up to MAX.
            let ok = if f == cmd_hca_cap::log_max_qp { v <= m } else if f.bits == 1 { v == 0 || m != 0 } else { true };
            if !ok {
                return Err(fail!(status::BAD_PARAM));
            }
            f.set(cur, v);
        }
        if cmd_hca_cap::uar_4k.get(cur) != 0 || cmd_hca_cap::log_uar_page_sz.get(cur) != 0 {
            // Only 4 KiB UAR pages exist here.
            return Err(fail!(status::BAD_PARAM));
        }
    } else if cap_type == super::firmware::CAP_ATOMIC {
        use ifc::atomic_caps as a;
        let mode = a::atomic_req_8B_endianness_mode.get(&new);
        if mode > 1 || (mode == 1 && a::supported_atomic_req_8B_endianness_mode_1.get(&max) == 0) {
            return Err(fail!(status::BAD_PARAM));
        }
        a::atomic_req_8B_endianness_mode.set(cur, mode);
        fw.engine.rt.atomic_reply_be = mode == 0;
    } else if cap_type == super::firmware::CAP_DEV_MEM {
        // Nothing on the DEV_MEM page is settable.
    } else {
        return Err(fail!(status::BAD_PARAM));
    }
    Ok(out(ifc::set_hca_cap_out::SIZE))
}

pub fn init_hca(fw: &mut Firmware, _r: &Req<'_>) -> CmdResult {
    if fw.initialized {
        return Err(fail!(status::BAD_SYS_STATE));
    }
    fw.initialized = true;
    Ok(out(ifc::init_hca_out::SIZE))
}

pub fn teardown_hca(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let profile = r.get(ifc::teardown_hca_in::profile);
    if profile > 2 {
        return Err(fail!(status::BAD_PARAM));
    }
    // Graceful (0), force (1) and prepare-fast-teardown (2) all end the HCA.
    fw.initialized = false;
    let mut o = out(ifc::teardown_hca_out::SIZE);
    ifc::teardown_hca_out::state.set(&mut o, 0);
    Ok(o)
}

pub fn set_driver_version(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    if let Some(b) = ifc::set_driver_version_in::driver_version.bytes(r.input) {
        let s: String = b.iter().take_while(|&&c| c != 0).map(|&c| if c.is_ascii_graphic() || c == b' ' { c as char } else { '?' }).collect();
        tracing::info!(driver = %s, "SET_DRIVER_VERSION");
        fw.driver_version = s;
    }
    Ok(out(ifc::set_driver_version_out::SIZE))
}

pub fn query_adapter(fw: &mut Firmware, _r: &Req<'_>) -> CmdResult {
    use ifc::query_adapter_out::query_adapter_struct as q;
    let mut o = out(ifc::query_adapter_out::SIZE);
    q::ieee_vendor_id.set(&mut o, fw.port.vendor_id as u64);
    q::vsd_vendor_id.set(&mut o, 0x15b3);
    if let Some(psid) = q::vsd_contd_psid.bytes_mut(&mut o) {
        let b = fw.board_id.as_bytes();
        let n = b.len().min(psid.len());
        psid[..n].copy_from_slice(&b[..n]);
    }
    Ok(o)
}

pub fn nop(_fw: &mut Firmware, _r: &Req<'_>) -> CmdResult {
    Ok(out(16))
}

pub fn alloc_uar(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let n = eng!(fw.engine.alloc_uar(r.uid))?;
    if let Some(h) = &fw.on_uar {
        h(n, true);
    }
    let mut o = out(ifc::alloc_uar_out::SIZE);
    ifc::alloc_uar_out::uar.set(&mut o, n as u64);
    Ok(o)
}

pub fn dealloc_uar(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let n = r.get(ifc::dealloc_uar_in::uar) as u32;
    eng!(fw.engine.dealloc_uar(n))?;
    if let Some(h) = &fw.on_uar {
        h(n, false);
    }
    Ok(out(ifc::dealloc_uar_out::SIZE))
}

pub fn create_eq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::create_eq_in::eq_context_entry as e;
    r.need(ifc::create_eq_in::SIZE)?;
    let log_size = e::log_eq_size.get(r.input) as u8;
    let uar = e::uar_page.get(r.input) as u32;
    let vector = e::intr.get(r.input) as u32;
    let log_page_size = e::log_page_size.get(r.input) as u8;
    if log_page_size > 18 {
        return Err(fail!(status::BAD_PARAM));
    }
    let page_offset = page_offset_bytes(e::page_offset.get(r.input), log_page_size);
    if vector >= crate::pci::MSIX_VECTORS {
        return Err(fail!(status::BAD_PARAM));
    }
    if !fw.engine.uars.contains(uar) {
        return Err(fail!(status::BAD_RES));
    }
    if log_size > fw.engine.limits.log_max_eq_size {
        return Err(fail!(status::BAD_PARAM));
    }
    let npages = pages_for(64u64 << log_size, log_page_size, page_offset);
    let pas = r.pas(ifc::create_eq_in::pas, npages)?;
    let mut event_bitmask = [0u64; 4];
    for (i, w) in event_bitmask.iter_mut().enumerate() {
        *w = ifc::create_eq_in::event_bitmask.elem(i as u32).get(r.input);
    }
    let eqc = r.sub(ifc::create_eq_in::eq_context_entry)?;
    let eqn = eng!(fw.engine.create_eq(log_size, uar, vector as u16))?;
    fw.eqs.insert(eqn, EqCtx { eqc, pas, log_size, log_page_size, page_offset, event_bitmask });
    let mut o = out(ifc::create_eq_out::SIZE);
    ifc::create_eq_out::eq_number.set(&mut o, eqn as u64);
    Ok(o)
}

pub fn destroy_eq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let eqn = r.get(ifc::destroy_eq_in::eq_number) as u32;
    eng!(fw.engine.destroy_eq(eqn))?;
    fw.eqs.remove(&eqn);
    Ok(out(ifc::destroy_eq_out::SIZE))
}

pub fn query_eq(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::query_eq_out::eq_context_entry as e;
    let eqn = r.get(ifc::query_eq_in::eq_number) as u32;
    let ctx = fw.eqs.get(&eqn).ok_or(fail!(status::BAD_RES))?;
    let eq = fw.engine.eqs.get(eqn).ok_or(fail!(status::BAD_RES))?;
    let mut o = out(ifc::query_eq_out::SIZE);
    let range = ifc::query_eq_out::eq_context_entry.byte_range().ok_or(fail!(status::INT_ERR))?;
    o[range].copy_from_slice(&ctx.eqc);
    e::consumer_counter.set(&mut o, (eq.consumer & 0x00ff_ffff) as u64);
    e::producer_counter.set(&mut o, (eq.producer & 0x00ff_ffff) as u64);
    Ok(o)
}

pub fn access_reg(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let reg = r.get(ifc::access_register_in::register_id) as u32;
    let write = r.op_mod == 0; // MLX5_ACCESS_REG_SUMMARY_CTRL_ID write = 0, read = 1
    if r.op_mod > 1 {
        return Err(fail!(status::BAD_PARAM));
    }
    let data_off = ifc::access_register_in::SIZE;
    let data = r.input.get(data_off..).unwrap_or(&[]);
    let out_len = r.outlen.max(ifc::access_register_out::SIZE);
    let mut o = out(out_len);
    match reg {
        ifc::MLX5_REG_HOST_ENDIANNESS => {
            // Accept and echo (`he`: 0 = little-endian host).
            let n = data.len().min(o.len() - 16);
            o[16..16 + n].copy_from_slice(&data[..n]);
        }
        ifc::MLX5_REG_PCAP => {
            // byte 1: local_port; bytes 4..8: PortInfo CapabilityMask (caps_127_96).
            if data.len() < 8 {
                return Err(fail!(status::BAD_INP_LEN));
            }
            if data[1] != 1 {
                return Err(fail!(status::BAD_PARAM));
            }
            if write {
                let mask = u32::from_be_bytes(data[4..8].try_into().expect("4 bytes"));
                // Never let the driver claim to be an SM (bit 1).
                fw.port.cap_mask = mask & !(1 << 1);
            }
            if o.len() >= 24 {
                o[17] = 1;
                o[20..24].copy_from_slice(&fw.port.cap_mask.to_be_bytes());
            }
        }
        _ => return Err(fail!(status::BAD_PARAM)),
    }
    Ok(o)
}

pub fn mad_ifc(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let port = r.get(ifc::mad_ifc_in::port) as u8;
    if port != 1 {
        return Err(fail!(status::BAD_PARAM));
    }
    let mad_in = ifc::mad_ifc_in::mad.bytes(r.input).ok_or(fail!(status::BAD_INP_LEN))?;
    let req: [u8; mad::MAD_SIZE] = mad_in.try_into().map_err(|_| fail!(status::BAD_INP_LEN))?;
    // PerfMgt answers from the port's real totals (fabric + local MADs).
    let now = fw.port_totals();
    let view = mad::PortCounters::default();
    {
        use std::sync::atomic::Ordering::Relaxed;
        let d = |i: usize| now[i].saturating_sub(fw.pma_base[i]);
        view.xmit_data_words.store(d(0), Relaxed);
        view.rcv_data_words.store(d(1), Relaxed);
        view.xmit_pkts.store(d(2), Relaxed);
        view.rcv_pkts.store(d(3), Relaxed);
        view.rcv_errors.store(d(4), Relaxed);
        view.xmit_discards.store(d(5), Relaxed);
        view.unicast_xmit.store(d(2), Relaxed);
        view.unicast_rcv.store(d(3), Relaxed);
    }
    let reply = mad::process(&req, port, &fw.port, &view);
    let is_clear = req[1] == mad::MGMT_CLASS_PERF_MGMT && req[3] == mad::METHOD_SET && req[66..68] != [0, 0];
    if is_clear && reply.status == 0 {
        fw.pma_base = now;
    }
    let mut o = out(ifc::mad_ifc_out::SIZE);
    let range = ifc::mad_ifc_out::response_mad_packet.byte_range().ok_or(fail!(status::INT_ERR))?;
    o[range].copy_from_slice(&reply.mad);
    Ok(o)
}

pub fn query_hca_vport_context(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    use ifc::query_hca_vport_context_out::hca_vport_context as c;
    if r.get(ifc::query_hca_vport_context_in::other_vport) != 0 || r.get(ifc::query_hca_vport_context_in::vport_number) != 0 {
        return Err(fail!(status::BAD_PARAM));
    }
    let pn = r.get(ifc::query_hca_vport_context_in::port_num);
    if pn > 1 {
        return Err(fail!(status::BAD_PARAM));
    }
    let p = &fw.port;
    let mut o = out(ifc::query_hca_vport_context_out::SIZE);
    c::has_smi.set(&mut o, 1);
    c::grh_required.set(&mut o, 0);
    c::port_physical_state.set(&mut o, p.phys_state as u64);
    c::port_state.set(&mut o, p.port_state as u64);
    c::vport_state.set(&mut o, p.port_state as u64);
    c::system_image_guid.set(&mut o, p.sys_image_guid);
    c::port_guid.set(&mut o, p.port_guid);
    c::node_guid.set(&mut o, p.node_guid);
    c::cap_mask1.set(&mut o, p.cap_mask as u64);
    c::lid.set(&mut o, p.lid as u64);
    c::sm_lid.set(&mut o, p.sm_lid as u64);
    c::subnet_timeout.set(&mut o, 18);
    Ok(o)
}

pub fn query_vport_state(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    if r.get(ifc::query_vport_state_in::other_vport) != 0 {
        return Err(fail!(status::BAD_PARAM));
    }
    let up = if fw.port.port_state == 4 { 1 } else { 0 };
    let mut o = out(ifc::query_vport_state_out::SIZE);
    ifc::query_vport_state_out::admin_state.set(&mut o, 1);
    ifc::query_vport_state_out::state.set(&mut o, up);
    Ok(o)
}

