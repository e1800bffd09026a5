//! TIRs and RQTs: from a steering destination to an RQ (owner: eth-rx).
//!
//! A direct TIR names its RQ (`inline_rqn`); an indirect one an RQT, whose
//! entry `hash % rqt_actual_size` is the RQ ([`super::rss`] computes the hash).

use super::queues::is_eth_rq;
use super::rss::{self, RxHash};
use super::rx_dispatch::next_id;
pub use super::rx_dispatch::{Disp, RqChoice, Rqt, RxDispatch, Tir, MAX_RQTS, MAX_RQT_SIZE, MAX_TIRS};
use super::EthCx;
use crate::cmd::dispatch::{command, Command};
use crate::cmd::req::{fail, out, CmdErr, CmdResult, Req};
use crate::cmd::status;
use crate::firmware::Firmware;
use crate::ifc::create_rqt_in::rqt_context as rqtc;
use crate::ifc::create_tir_in::ctx as tirc;
use crate::ifc::{self, modify_rqt_in, modify_tir_in};

// CREATE and MODIFY_TIR share [`hash_of`] and [`no_lro`], CREATE and MODIFY_RQT [`rq_list`]: they read
// the CREATE command's context, which MODIFY has at the same place.
const _: () = {
    assert!(ifc::create_tir_in::ctx.bit_off == modify_tir_in::ctx.bit_off);
    assert!(ifc::create_rqt_in::rqt_context.bit_off == modify_rqt_in::ctx.bit_off);
};

/// The hash settings of a `tirc`.
fn hash_of(r: &Req<'_>) -> Result<RxHash, CmdErr> {
    let k = tirc::rx_hash_toeplitz_key.region();
    let key: [u8; 40] = r.input[k.byte_off()..k.byte_end()].try_into().expect("40 bytes");
    let h = RxHash {
        func: r.get(tirc::rx_hash_fn) as u8,
        symmetric: r.get(tirc::rx_hash_symmetric) != 0,
        key,
        l3_ipv6: r.get(tirc::rx_hash_field_selector_outer::l3_prot_type) != 0,
        l4_udp: r.get(tirc::rx_hash_field_selector_outer::l4_prot_type) != 0,
        fields: r.get(tirc::rx_hash_field_selector_outer::selected_fields) as u32,
    };
    if h.func > rss::FN_TOEPLITZ || h.fields & !rss::FIELDS_SUPPORTED != 0 {
        return Err(fail!(status::BAD_PARAM, TIR_BAD_HASH));
    }
    Ok(h)
}

fn no_lro(r: &Req<'_>) -> Result<(), CmdErr> {
    // LRO is not advertised: a TIR cannot enable it.
    if r.get(tirc::packet_merge_mask) != 0 {
        return Err(fail!(status::BAD_PARAM, TIR_LRO));
    }
    Ok(())
}

pub fn create_tir(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(ifc::create_tir_in::SIZE)?;
    no_lro(r)?;
    let disp = match r.get(tirc::disp_type) {
        0 => {
            let rqn = r.get(tirc::inline_rqn) as u32;
            if !is_eth_rq(&cx.core.engine, rqn) {
                return Err(fail!(status::BAD_PARAM, CREATE_TIR_BAD_RQN));
            }
            Disp::Direct(rqn)
        }
        1 => {
            let rqtn = r.get(tirc::indirect_table) as u32;
            if !cx.eth.dispatch.rqts.contains_key(&rqtn) {
                return Err(fail!(status::BAD_PARAM, CREATE_TIR_BAD_RQT));
            }
            Disp::Indirect(rqtn)
        }
        _ => return Err(fail!(status::BAD_PARAM, CREATE_TIR_BAD_DISP)),
    };
    let tir = Tir {
        disp,
        hash: hash_of(r)?,
        self_lb_block: r.get(tirc::self_lb_block) as u8,
        transport_domain: r.get(tirc::transport_domain) as u32,
    };
    let d = &mut cx.eth.dispatch;
    if d.tirs.len() >= MAX_TIRS {
        return Err(fail!(status::LIM, CREATE_TIR_LIM));
    }
    let tirs = &d.tirs;
    let n = next_id(&mut d.next_tir, |n| tirs.contains_key(&n));
    d.tirs.insert(n, tir);
    let mut o = out(0x10);
    ifc::create_tir_out::tirn.set(&mut o, n as u64);
    Ok(o)
}

pub fn modify_tir(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(modify_tir_in::SIZE)?;
    let known =
        [modify_tir_in::bitmask::packet_merge, modify_tir_in::bitmask::hash, modify_tir_in::bitmask::self_lb_en];
    let mask = u32::from_be_bytes(r.input[0x14..0x18].try_into().expect("4 bytes"));
    let known_bits = known.iter().fold(0u32, |m, f| m | (1 << (0x18 * 8 - 1 - f.bit_off)));
    if mask & !known_bits != 0 || r.input[0x10..0x14] != [0; 4] {
        return Err(fail!(status::BAD_PARAM, MODIFY_TIR_BAD_BITMASK));
    }
    if r.get(modify_tir_in::bitmask::packet_merge) != 0 {
        no_lro(r)?;
    }
    let hash = if r.get(modify_tir_in::bitmask::hash) != 0 { Some(hash_of(r)?) } else { None };
    let n = r.get(modify_tir_in::tirn) as u32;
    let Some(tir) = cx.eth.dispatch.tirs.get_mut(&n) else {
        return Err(fail!(status::BAD_PARAM, MODIFY_TIR_BAD_TIRN));
    };
    if let Some(h) = hash {
        tir.hash = h;
    }
    if r.get(modify_tir_in::bitmask::self_lb_en) != 0 {
        tir.self_lb_block = r.get(modify_tir_in::ctx::self_lb_block) as u8;
    }
    Ok(out(0x10))
}

pub fn destroy_tir(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(0x0c)?;
    let n = r.get(ifc::destroy_tir_in::tirn) as u32;
    if cx.eth.dispatch.tirs.remove(&n).is_none() {
        return Err(fail!(status::BAD_PARAM, DESTROY_TIR_BAD_TIRN));
    }
    Ok(out(0x10))
}

/// The RQ list of an `rqtc`: `rqt_actual_size` entries, each an existing RQ.
fn rq_list(cx: &EthCx<'_>, r: &Req<'_>, max: u16) -> Result<Vec<u32>, CmdErr> {
    let n = r.get(rqtc::rqt_actual_size) as usize;
    if n == 0 || n > max as usize {
        return Err(fail!(status::BAD_PARAM, RQT_BAD_SIZE));
    }
    let at = rqtc::rq_num.byte_off();
    let list = r.input.get(at..at + n * 4).ok_or(fail!(status::BAD_INP_LEN, RQT_SHORT_LIST))?;
    let rqns: Vec<u32> = list.chunks_exact(4).map(|c| u32::from_be_bytes([0, c[1], c[2], c[3]])).collect();
    if !rqns.iter().all(|&q| is_eth_rq(&cx.core.engine, q)) {
        return Err(fail!(status::BAD_PARAM, RQT_BAD_RQN));
    }
    Ok(rqns)
}

pub fn create_rqt(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(ifc::create_rqt_in::SIZE)?;
    let max = r.get(rqtc::rqt_max_size) as usize;
    if max == 0 || max > MAX_RQT_SIZE {
        return Err(fail!(status::BAD_PARAM, CREATE_RQT_BAD_MAX));
    }
    let rqns = rq_list(cx, r, max as u16)?;
    let d = &mut cx.eth.dispatch;
    if d.rqts.len() >= MAX_RQTS {
        return Err(fail!(status::LIM, CREATE_RQT_LIM));
    }
    let rqts = &d.rqts;
    let n = next_id(&mut d.next_rqt, |n| rqts.contains_key(&n));
    d.rqts.insert(n, Rqt { max_size: max as u16, rqns });
    let mut o = out(0x10);
    ifc::create_rqt_out::rqtn.set(&mut o, n as u64);
    Ok(o)
}

pub fn modify_rqt(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(modify_rqt_in::SIZE)?;
    let n = r.get(modify_rqt_in::rqtn) as u32;
    let Some(max) = cx.eth.dispatch.rqts.get(&n).map(|q| q.max_size) else {
        return Err(fail!(status::BAD_PARAM, MODIFY_RQT_BAD_RQTN));
    };
    if r.get(modify_rqt_in::bitmask::rqn_list) == 0 {
        return Ok(out(0x10));
    }
    let rqns = rq_list(cx, r, max)?;
    if let Some(q) = cx.eth.dispatch.rqts.get_mut(&n) {
        q.rqns = rqns;
    }
    Ok(out(0x10))
}

pub fn destroy_rqt(cx: &mut EthCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(0x0c)?;
    let n = r.get(ifc::destroy_rqt_in::rqtn) as u32;
    if cx.eth.dispatch.rqts.remove(&n).is_none() {
        return Err(fail!(status::BAD_PARAM, DESTROY_RQT_BAD_RQTN));
    }
    Ok(out(0x10))
}

/// The TIR and RQT commands.
pub static COMMANDS: &[Command<Firmware>] = &[
    command!(MLX5_CMD_OP_CREATE_TIR, Enabled, eth_cx => create_tir),
    command!(MLX5_CMD_OP_MODIFY_TIR, Enabled, eth_cx => modify_tir),
    command!(MLX5_CMD_OP_DESTROY_TIR, Enabled, eth_cx => destroy_tir),
    command!(MLX5_CMD_OP_CREATE_RQT, Enabled, eth_cx => create_rqt),
    command!(MLX5_CMD_OP_MODIFY_RQT, Enabled, eth_cx => modify_rqt),
    command!(MLX5_CMD_OP_DESTROY_RQT, Enabled, eth_cx => destroy_rqt),
];
