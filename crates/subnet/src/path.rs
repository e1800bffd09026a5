//! PathRecords from the database (IBTA 15.2.5.16): every (source,
//! destination) pair of ACTIVE ports the request's SGID/SLID and DGID/DLID
//! allow, one path each (the fabric is a full mesh of LIDs: no hops), with
//! the P_Key, SL, MTU, rate and packet lifetime the request's selectors
//! accept. Multicast DGIDs get no paths (ERR_NO_RECORDS).

use super::db::Subnet;
use super::error::SaError;
use super::port::PortRecord;
use super::select::{life_satisfies, min_rate, pick_mtu, pick_rate, SELECTOR_EXACTLY, SELECTOR_GREATER};
use vrnic_wire::sa_path::{mask, Repr as PathRecord};

/// The SA's path parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathPolicy {
    /// SL of every path.
    pub sl: u8,
    /// PacketLifeTime offered (OpenSM's default `packet_life_time` 0x12).
    pub packet_life_time: u8,
}

impl Default for PathPolicy {
    fn default() -> PathPolicy {
        PathPolicy { sl: 0, packet_life_time: 0x12 }
    }
}

/// End ports matching a GID and/or LID component; all ACTIVE ports if the
/// mask names neither. A GID or LID not on the subnet: an error.
fn ends<'a>(
    s: &'a Subnet,
    gid_bit: bool,
    gid: &[u8; 16],
    lid_bit: bool,
    lid: u16,
) -> Result<Vec<&'a PortRecord>, SaError> {
    let mut v: Vec<&PortRecord> = match (gid_bit, lid_bit) {
        (true, _) => vec![s.port_by_gid(gid).ok_or(SaError::InvalidGid)?],
        (false, true) => s.port(lid).into_iter().collect(),
        (false, false) => s.ports().collect(),
    };
    if gid_bit && lid_bit {
        v.retain(|p| p.lid == lid);
    }
    v.retain(|p| p.is_active());
    Ok(v)
}

/// The P_Key of a path: the requested one if both ports hold it, else the
/// first full-member key of the source both hold.
fn path_pkey(r: &PathRecord, m: u64, a: &PortRecord, b: &PortRecord) -> Option<u16> {
    if m & mask::PKEY != 0 {
        return (a.has_pkey(r.pkey) && b.has_pkey(r.pkey)).then_some(r.pkey);
    }
    let common: Vec<u16> = a.pkeys.iter().copied().filter(|&k| b.has_pkey(k)).collect();
    common.iter().copied().find(|k| k & 0x8000 != 0).or(common.first().copied())
}

fn one_path(r: &PathRecord, m: u64, src: &PortRecord, dst: &PortRecord, pol: &PathPolicy) -> Option<PathRecord> {
    if m & mask::RAW_TRAFFIC != 0 && r.raw_traffic {
        return None;
    }
    if m & mask::SL != 0 && r.sl != pol.sl {
        return None;
    }
    let pkey = path_pkey(r, m, src, dst)?;
    let sel = |bit: u64, s: u8| if m & bit != 0 { s } else { SELECTOR_EXACTLY };
    let limit_mtu = src.mtu.min(dst.mtu);
    let mtu = if m & mask::MTU != 0 {
        pick_mtu(limit_mtu, sel(mask::MTU_SELECTOR, r.mtu_selector), r.mtu)?
    } else {
        limit_mtu
    };
    let limit_rate = min_rate(src.rate, dst.rate);
    let rate = if m & mask::RATE != 0 {
        pick_rate(limit_rate, sel(mask::RATE_SELECTOR, r.rate_selector), r.rate)?
    } else {
        limit_rate
    };
    let mut life = pol.packet_life_time;
    if m & mask::PACKET_LIFE_TIME != 0 {
        let s = sel(mask::PACKET_LIFE_TIME_SELECTOR, r.packet_life_time_selector);
        // A longer lifetime than the fabric's is always safe to promise.
        if s == SELECTOR_EXACTLY && r.packet_life_time >= life && r.packet_life_time < 64 {
            life = r.packet_life_time;
        } else if s == SELECTOR_GREATER && r.packet_life_time >= life && r.packet_life_time < 63 {
            life = r.packet_life_time + 1;
        }
        if !life_satisfies(life, s, r.packet_life_time) {
            return None;
        }
    }
    Some(PathRecord {
        service_id: if m & mask::SERVICE_ID != 0 { r.service_id } else { 0 },
        dgid: dst.gid(),
        sgid: src.gid(),
        dlid: dst.lid,
        slid: src.lid,
        raw_traffic: false,
        flow_label: if m & mask::FLOW_LABEL != 0 { r.flow_label } else { 0 },
        hop_limit: if m & mask::HOP_LIMIT != 0 { r.hop_limit } else { 0 },
        traffic_class: if m & mask::TRAFFIC_CLASS != 0 { r.traffic_class } else { 0 },
        reversible: true,
        numb_path: 1,
        pkey,
        qos_class: if m & mask::QOS_CLASS != 0 { r.qos_class } else { 0 },
        sl: pol.sl,
        mtu_selector: SELECTOR_EXACTLY,
        mtu,
        rate_selector: SELECTOR_EXACTLY,
        rate,
        packet_life_time_selector: SELECTOR_EXACTLY,
        packet_life_time: life,
        preference: 0,
    })
}

/// The paths a PathRecord query asks for, at most `limit` (more: an error,
/// so a world query on a large subnet cannot allocate without bound).
pub fn query(s: &Subnet, r: &PathRecord, m: u64, pol: &PathPolicy, limit: usize) -> Result<Vec<PathRecord>, SaError> {
    if (m & mask::DGID != 0 && r.dgid[0] == 0xff) || (m & mask::SGID != 0 && r.sgid[0] == 0xff) {
        return Ok(Vec::new());
    }
    let srcs = ends(s, m & mask::SGID != 0, &r.sgid, m & mask::SLID != 0, r.slid)?;
    let dsts = ends(s, m & mask::DGID != 0, &r.dgid, m & mask::DLID != 0, r.dlid)?;
    let mut out = Vec::new();
    for src in &srcs {
        for dst in &dsts {
            if let Some(p) = one_path(r, m, src, dst, pol) {
                if out.len() == limit {
                    return Err(SaError::NoResources);
                }
                out.push(p);
            }
        }
    }
    Ok(out)
}
