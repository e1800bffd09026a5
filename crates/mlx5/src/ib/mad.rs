//! The subnet-management agent (SMA) and performance-management agent the
//! ConnectX firmware implements behind `MAD_IFC`: SMPs answered from the
//! port's configured identity, PerfMgt counters from the port's real counters.
//! An SM configures the port with SubnSet(PortInfo): LID, MasterSMLID, the
//! port state INIT → ARMED → ACTIVE, ClientReregister, MTU, timeouts
//! (`wire::smp_portinfo`); what the driver must hear of it comes back as
//! PORT_CHANGE sub_types ([`MadReply::events`]).
//!
//! MAD layout (IBTA 13.4): 24-byte common header (base_version, mgmt_class,
//! class_version, method, status, class_specific, tid, attr_id, attr_mod),
//! SMP/PMA data at offset 64.

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(test)]
use super::port::DEFAULT_CAP_MASK;
use super::port::{FwPortCounters, PortConfig};
use vrnic_wire::smp_portinfo::{self as pi, field as pif};

const DATA: usize = 64;

// The MAD header's constants have one owner, `wire::mad`; re-exported here
// for the firmware's MAD_IFC and PMA handlers.
use vrnic_wire::mad::Packet as MadHeader;
pub use vrnic_wire::mad::{
    ATTR_CLASS_PORT_INFO, MAD_SIZE, METHOD_GET, METHOD_GET_RESP, METHOD_SET, MGMT_CLASS_PERF_MGMT,
    MGMT_CLASS_SUBN_DIRECTED_ROUTE, MGMT_CLASS_SUBN_LID_ROUTED, STATUS_BAD_VERSION, STATUS_INVALID_FIELD,
    STATUS_UNSUP_METH_ATTR,
};
use vrnic_wire::sa_node::NodeInfo;

pub const ATTR_NODE_DESC: u16 = 0x0010;
pub const ATTR_NODE_INFO: u16 = 0x0011;
pub const ATTR_GUID_INFO: u16 = 0x0014;
pub const ATTR_PORT_INFO: u16 = 0x0015;
pub const ATTR_PKEY_TABLE: u16 = 0x0016;
pub const ATTR_PORT_COUNTERS: u16 = 0x0012;
pub const ATTR_PORT_COUNTERS_EXT: u16 = 0x001d;
pub const ATTR_EXT_PORT_INFO: u16 = 0xff90;

fn put16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_be_bytes());
}
fn put32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_be_bytes());
}
fn put64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_be_bytes());
}
fn get16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
#[cfg(test)]
fn get32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

/// PORT_CHANGE sub_types (PRM; mlx5_ib `handle_port_change`).
pub mod port_event {
    pub const DOWN: u8 = 1;
    pub const ACTIVE: u8 = 4;
    pub const LID: u8 = 6;
    pub const GUID: u8 = 8;
    pub const CLIENT_REREG: u8 = 9;
}

/// Outcome of processing one MAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadReply {
    pub mad: [u8; MAD_SIZE],
    /// MAD-level status written into the response.
    pub status: u16,
    /// PORT_CHANGE sub_types a SubnSet(PortInfo) raises, in order.
    pub events: Vec<u8>,
}

/// The SMA behind MAD_IFC: [`process`], and a SubnSet(PortInfo) changes
/// `port` first ([`set_port_info`]); its answer is the PortInfo after the
/// Set. Never panics on any input.
pub fn process_set(req: &[u8; MAD_SIZE], port_num: u8, port: &mut PortConfig, counters: &FwPortCounters) -> MadReply {
    let h = MadHeader::new_unchecked(&req[..]);
    let smp = matches!(h.mgmt_class(), MGMT_CLASS_SUBN_LID_ROUTED | MGMT_CLASS_SUBN_DIRECTED_ROUTE);
    let is_set = smp
        && h.base_version() == 1
        && h.class_version() == 1
        && h.method() == METHOD_SET
        && h.attr_id() == ATTR_PORT_INFO
        && port_info_in_range(h.attr_mod(), port_num);
    let mut events = Vec::new();
    let status = if is_set {
        let mut d = [0u8; 64];
        d.copy_from_slice(&req[DATA..DATA + 64]);
        set_port_info(port, &d, &mut events)
    } else {
        0
    };
    let mut r = process(req, port_num, port, counters);
    if status != 0 {
        r.status = status;
        put16(&mut r.mad, 4, status);
    }
    r.events = events;
    r
}

/// Answers one MAD for `port` (1-based) from what the port holds (a Set is
/// answered as a Get would be). Never panics on any input.
pub fn process(req: &[u8; MAD_SIZE], port_num: u8, port: &PortConfig, counters: &FwPortCounters) -> MadReply {
    let mut r = *req;
    let h = MadHeader::new_unchecked(&req[..]);
    let (class, method, attr, attr_mod) = (h.mgmt_class(), h.method(), h.attr_id(), h.attr_mod());
    // Response header: echo TID/attribute, method GetResp, clear status.
    r[3] = METHOD_GET_RESP;
    put16(&mut r, 4, 0);
    let status = match class {
        MGMT_CLASS_SUBN_LID_ROUTED | MGMT_CLASS_SUBN_DIRECTED_ROUTE => {
            if h.base_version() != 1 || h.class_version() != 1 {
                STATUS_BAD_VERSION
            } else if method != METHOD_GET && method != METHOD_SET {
                STATUS_UNSUP_METH_ATTR
            } else {
                r[DATA..DATA + 64].fill(0);
                smp(&mut r[DATA..DATA + 64], attr, attr_mod, port_num, port)
            }
        }
        MGMT_CLASS_PERF_MGMT => {
            if method != METHOD_GET && method != METHOD_SET {
                STATUS_UNSUP_METH_ATTR
            } else {
                pma(&mut r[DATA..], req, method, attr, port_num, counters)
            }
        }
        _ => STATUS_UNSUP_METH_ATTR,
    };
    put16(&mut r, 4, status);
    MadReply { mad: r, status, events: Vec::new() }
}

/// Whether a PortInfo attribute modifier names this port (0 or its
/// number; bit 31 is OpenSM's SMSupportsExtendedSpeeds).
fn port_info_in_range(attr_mod: u32, port_num: u8) -> bool {
    let m = attr_mod & 0x7fff_ffff;
    m == 0 || m == port_num as u32 || m == 1
}

/// SubnSet(PortInfo) (IBTA 14.2.5.6): the RW components, then the
/// PortState/PortPhysicalState transition; an invalid transition changes
/// nothing (status 0x1C). What the driver must learn is pushed to `events`:
/// LID, GID prefix, ACTIVE or DOWN, CLIENT_REREG (an SM LID change alone
/// raises none: ib_sa re-reads it on CLIENT_REREG, which a new SM sets).
fn set_port_info(p: &mut PortConfig, req: &[u8; 64], events: &mut Vec<u8>) -> u16 {
    let (rs, rp) = pi::requested_state(req);
    let Ok((state, phys)) = pi::state_after(p.port_state, p.phys_state, rs, rp) else {
        return STATUS_INVALID_FIELD;
    };
    pi::merge_set(&mut p.port_info, req);
    let img = &p.port_info;
    let lid = pi::get(img, pif::LID) as u16;
    let prefix = pi::get(img, pif::GID_PREFIX);
    if lid != p.lid {
        events.push(port_event::LID);
    }
    if prefix != p.gid_prefix {
        events.push(port_event::GUID);
    }
    p.lid = lid;
    p.gid_prefix = prefix;
    p.sm_lid = pi::get(img, pif::MASTER_SM_LID) as u16;
    p.sm_sl = img[pif::MTU_SMSL] & 0xf;
    if state != p.port_state {
        if state == pi::PORT_STATE_ACTIVE {
            events.push(port_event::ACTIVE);
        } else if matches!(p.port_state, pi::PORT_STATE_ARMED | pi::PORT_STATE_ACTIVE) || state == pi::PORT_STATE_DOWN {
            events.push(port_event::DOWN);
        }
    }
    (p.port_state, p.phys_state) = (state, phys);
    if pi::client_rereg(req) {
        events.push(port_event::CLIENT_REREG);
    }
    0
}

fn smp(d: &mut [u8], attr: u16, attr_mod: u32, port_num: u8, p: &PortConfig) -> u16 {
    match attr {
        ATTR_NODE_DESC => {
            let s = p.node_desc.as_bytes();
            let n = s.len().min(64);
            d[..n].copy_from_slice(&s[..n]);
            0
        }
        ATTR_NODE_INFO => {
            let info = NodeInfo {
                base_version: 1,
                class_version: 1,
                node_type: 1, // channel adapter
                num_ports: 1,
                sys_image_guid: p.sys_image_guid,
                node_guid: p.node_guid,
                port_guid: p.port_guid,
                partition_cap: p.pkey_table_len,
                device_id: p.device_id,
                revision: p.revision,
                local_port_num: port_num.max(1),
                vendor_id: p.vendor_id,
            };
            let mut b = [0u8; 40];
            info.write(&mut b);
            d[..40].copy_from_slice(&b);
            0
        }
        ATTR_GUID_INFO => {
            if attr_mod * 8 >= p.gid_table_len as u32 {
                return STATUS_INVALID_FIELD;
            }
            if attr_mod == 0 {
                put64(d, 0, p.port_guid);
            }
            0
        }
        ATTR_PORT_INFO => {
            if !port_info_in_range(attr_mod, port_num) {
                return STATUS_INVALID_FIELD;
            }
            // What an SM set (M_Key, LMC, NeighborMTU, VLs, timeouts, ...), then
            // the port's own fields and the read-only components.
            for ((o, b), m) in d.iter_mut().zip(p.port_info).zip(pi::RW) {
                *o = b & m;
            }
            put64(d, 8, p.gid_prefix);
            put16(d, 16, p.lid);
            put16(d, 18, p.sm_lid);
            put32(d, 20, p.cap_mask);
            d[28] = 1; // LocalPortNum
            d[30] = 3; // LinkWidthSupported 1x|4x
            d[31] = 2; // LinkWidthActive 4x
            d[32] = (7 << 4) | (p.port_state & 0xf); // LinkSpeedSupported SDR|DDR|QDR, PortState
            d[33] |= p.phys_state << 4; // PortPhysicalState (LinkDownDefaultState: Polling at power-on)
            d[35] |= 4 << 4; // LinkSpeedActive QDR
            d[36] = (d[36] & 0xf0) | (p.sm_sl & 0xf); // NeighborMTU, MasterSMSL
            d[37] = 1 << 4; // VLCap VL0
            d[41] |= 5; // MTUCap 4096
            d[50] = p.gid_table_len;
            d[52] = 16; // RespTimeValue
            0
        }
        ATTR_PKEY_TABLE => {
            if attr_mod * 32 >= p.pkey_table_len as u32 {
                return STATUS_INVALID_FIELD;
            }
            if attr_mod == 0 {
                put16(d, 0, 0xffff);
            }
            0
        }
        // MlnxExtendedPortInfo: no FDR10, every field zero.
        ATTR_EXT_PORT_INFO if attr_mod <= 1 || attr_mod == port_num as u32 => 0,
        ATTR_EXT_PORT_INFO => STATUS_INVALID_FIELD,
        _ => STATUS_UNSUP_METH_ATTR,
    }
}

fn sat(v: u64, bits: u32) -> u64 {
    v.min((1u64 << bits) - 1)
}

fn pma(d: &mut [u8], req: &[u8; MAD_SIZE], method: u8, attr: u16, port_num: u8, c: &FwPortCounters) -> u16 {
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    match attr {
        ATTR_CLASS_PORT_INFO if method == METHOD_GET => {
            d[..192].fill(0);
            d[0] = 1; // BaseVersion
            d[1] = 1; // ClassVersion
                      // CapabilityMask: PortCountersExt supported (IB_PMA_CLASS_CAP_EXT_WIDTH).
            put16(d, 2, 1 << 9);
            0
        }
        ATTR_PORT_COUNTERS => {
            if method == METHOD_SET {
                // Set with a CounterSelect clears counters (we clear them all).
                if get16(req, DATA + 2) != 0 {
                    c.reset();
                }
            }
            let port_select = req[DATA + 1];
            d[..192].fill(0);
            d[1] = port_select;
            put16(d, 8, sat(l(&c.rcv_errors), 16) as u16);
            put16(d, 14, sat(l(&c.xmit_discards), 16) as u16);
            put32(d, 24, sat(l(&c.xmit_data_words), 32) as u32);
            put32(d, 28, sat(l(&c.rcv_data_words), 32) as u32);
            put32(d, 32, sat(l(&c.xmit_pkts), 32) as u32);
            put32(d, 36, sat(l(&c.rcv_pkts), 32) as u32);
            let _ = port_num;
            0
        }
        ATTR_PORT_COUNTERS_EXT => {
            if method == METHOD_SET && get16(req, DATA + 2) != 0 {
                c.reset();
            }
            let port_select = req[DATA + 1];
            d[..192].fill(0);
            d[1] = port_select;
            put64(d, 8, l(&c.xmit_data_words));
            put64(d, 16, l(&c.rcv_data_words));
            put64(d, 24, l(&c.xmit_pkts));
            put64(d, 32, l(&c.rcv_pkts));
            put64(d, 40, l(&c.unicast_xmit));
            put64(d, 48, l(&c.unicast_rcv));
            put64(d, 56, l(&c.multicast_xmit));
            put64(d, 64, l(&c.multicast_rcv));
            0
        }
        _ => STATUS_UNSUP_METH_ATTR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(class: u8, method: u8, attr: u16, attr_mod: u32) -> [u8; MAD_SIZE] {
        let mut m = [0u8; MAD_SIZE];
        m[0] = 1;
        m[1] = class;
        m[2] = 1;
        m[3] = method;
        put64(&mut m, 8, 0x1122_3344_5566_7788);
        put16(&mut m, 16, attr);
        put32(&mut m, 20, attr_mod);
        m
    }

    fn port() -> PortConfig {
        PortConfig::new(0x0002_c903_00a0_b0c0, 0x0002_c903_00a0_b0c1, 7, 0x1017)
    }

    #[test]
    fn node_info_as_mlx5_ib_reads_it() {
        let r = process(&req(1, METHOD_GET, ATTR_NODE_INFO, 0), 1, &port(), &FwPortCounters::default());
        assert_eq!(r.status, 0);
        let m = r.mad;
        assert_eq!(m[3], METHOD_GET_RESP);
        assert_eq!(&m[8..16], &0x1122_3344_5566_7788u64.to_be_bytes(), "TID echoed");
        let d = &m[64..];
        assert_eq!((d[0], d[1], d[2], d[3]), (1, 1, 1, 1));
        assert_eq!(&d[12..20], &0x0002_c903_00a0_b0c0u64.to_be_bytes(), "node GUID @12");
        assert_eq!(get16(d, 28), 16, "PartitionCap");
        assert_eq!(get16(d, 30), 0x1017);
        assert_eq!(get32(d, 36) & 0xffffff, 0x0002c9, "vendor id as the driver masks it");
    }

    #[test]
    fn port_info_active_without_an_sm() {
        let r = process(&req(0x81, METHOD_GET, ATTR_PORT_INFO, 1), 1, &port(), &FwPortCounters::default());
        let d = &r.mad[64..];
        assert_eq!(get16(d, 16), 7, "LID");
        assert_eq!(d[32] & 0xf, 4, "ACTIVE");
        assert_eq!(d[33] >> 4, 5, "LinkUp");
        assert_eq!(d[31] & 0xf, 2, "4x");
        assert_eq!(d[36] >> 4, 5, "MTU 4096");
        assert_eq!(d[36] & 0xf, 0, "MasterSMSL");
        assert_eq!(d[41] & 0xf, 5, "MTUCap 4096");
        assert_eq!(get32(d, 20), DEFAULT_CAP_MASK);
        assert_eq!(get32(d, 20) & (1 << 1), 0, "never claims to be an SM");
        assert_eq!(d[50], 8, "GUIDCap");
    }

    #[test]
    fn tables_and_unsupported_attributes() {
        let p = port();
        let c = FwPortCounters::default();
        let g = process(&req(1, METHOD_GET, ATTR_GUID_INFO, 0), 1, &p, &c);
        assert_eq!(&g.mad[64..72], &p.port_guid.to_be_bytes());
        assert_eq!(process(&req(1, METHOD_GET, ATTR_GUID_INFO, 1), 1, &p, &c).status, STATUS_INVALID_FIELD);
        let k = process(&req(1, METHOD_GET, ATTR_PKEY_TABLE, 0), 1, &p, &c);
        assert_eq!(get16(&k.mad, 64), 0xffff);
        assert_eq!(get16(&k.mad, 66), 0);
        let e = process(&req(1, METHOD_GET, ATTR_EXT_PORT_INFO, 1), 1, &p, &c);
        assert_eq!((e.status, &e.mad[64..128]), (0, &[0u8; 64][..]), "MlnxExtPortInfo: no FDR10");
        let e = process(&req(1, METHOD_GET, ATTR_EXT_PORT_INFO, 7), 1, &p, &c);
        assert_eq!(e.status, STATUS_INVALID_FIELD);
        assert_eq!(get16(&e.mad, 4), STATUS_INVALID_FIELD, "status in the MAD header");
        assert_eq!(process(&req(1, METHOD_GET, 0x0017, 0), 1, &p, &c).status, STATUS_UNSUP_METH_ATTR);
        let d = process(&req(1, METHOD_GET, ATTR_NODE_DESC, 0), 1, &p, &c);
        assert!(d.mad[64..128].starts_with(b"vrnic"));
        assert_eq!(process(&req(1, 0x06, ATTR_NODE_INFO, 0), 1, &p, &c).status, STATUS_UNSUP_METH_ATTR);
        assert_eq!(process(&req(0x42, METHOD_GET, 1, 0), 1, &p, &c).status, STATUS_UNSUP_METH_ATTR);
        let mut bad = req(1, METHOD_GET, ATTR_NODE_INFO, 0);
        bad[2] = 9;
        assert_eq!(process(&bad, 1, &p, &c).status, STATUS_BAD_VERSION);
    }

    #[test]
    fn perf_counters_come_from_the_port() {
        let p = port();
        let c = FwPortCounters::default();
        c.xmit_pkts.store(3, Ordering::Relaxed);
        c.rcv_data_words.store(1 << 40, Ordering::Relaxed);
        let r = process(&req(4, METHOD_GET, ATTR_PORT_COUNTERS, 0), 1, &p, &c);
        assert_eq!(r.status, 0);
        assert_eq!(get32(&r.mad, 64 + 32), 3);
        assert_eq!(get32(&r.mad, 64 + 28), u32::MAX, "32-bit counters saturate");
        let x = process(&req(4, METHOD_GET, ATTR_PORT_COUNTERS_EXT, 0), 1, &p, &c);
        assert_eq!(u64::from_be_bytes(x.mad[64 + 16..64 + 24].try_into().unwrap()), 1 << 40);
        let mut clr = req(4, METHOD_SET, ATTR_PORT_COUNTERS, 0);
        put16(&mut clr, 66, 0xffff);
        process(&clr, 1, &p, &c);
        assert_eq!(c.xmit_pkts.load(Ordering::Relaxed), 0);
        let cpi = process(&req(4, METHOD_GET, ATTR_CLASS_PORT_INFO, 0), 1, &p, &c);
        assert_eq!(get16(&cpi.mad, 66) & (1 << 9), 1 << 9);
    }

    /// A SubnSet(PortInfo) carrying `pi` (as OpenSM sends it: its last Get, changed).
    fn set_pi(pi: &[u8]) -> [u8; MAD_SIZE] {
        let mut m = req(0x81, METHOD_SET, ATTR_PORT_INFO, 1);
        m[64..128].copy_from_slice(pi);
        m
    }

    #[test]
    fn an_sm_brings_an_unconfigured_port_up() {
        let mut p = port().unconfigured();
        let c = FwPortCounters::default();
        let g = process_set(&req(0x81, METHOD_GET, ATTR_PORT_INFO, 1), 1, &mut p, &c);
        let mut pi = g.mad[64..128].to_vec();
        assert_eq!((get16(&pi, 16), get16(&pi, 18), pi[32] & 0xf, pi[33] >> 4), (0, 0, 2, 5), "INIT, LinkUp");
        assert!(g.events.is_empty());
        // The lid manager: LID 2, SM LID 1, LMC 0, SubnetTimeOut 18 and ClientReregister, state unchanged.
        pi[16..18].copy_from_slice(&2u16.to_be_bytes());
        pi[18..20].copy_from_slice(&1u16.to_be_bytes());
        (pi[32], pi[33], pi[51]) = (pi[32] & 0xf0, 0x02, 0x80 | 18);
        let r = process_set(&set_pi(&pi), 1, &mut p, &c);
        assert_eq!(r.status, 0);
        assert_eq!(r.mad[3], METHOD_GET_RESP);
        assert_eq!((get16(&r.mad, 64 + 16), get16(&r.mad, 64 + 18), r.mad[64 + 51]), (2, 1, 18), "rereg reads 0");
        assert_eq!((p.lid, p.sm_lid), (2, 1));
        assert_eq!(r.events, vec![port_event::LID, port_event::CLIENT_REREG]);
        // ACTIVE straight from INIT is refused and changes nothing, ARMED then ACTIVE are taken.
        let mut bad = pi.clone();
        (bad[32], bad[16]) = ((bad[32] & 0xf0) | 4, 0x77);
        let r = process_set(&set_pi(&bad), 1, &mut p, &c);
        assert_eq!(
            (r.status, get16(&r.mad, 4), p.port_state, p.lid),
            (STATUS_INVALID_FIELD, STATUS_INVALID_FIELD, 2, 2)
        );
        pi[51] = 18;
        pi[32] = (pi[32] & 0xf0) | 3;
        pi[36] = (4 << 4) | 1; // NeighborMTU 2048, MasterSMSL 1
        let r = process_set(&set_pi(&pi), 1, &mut p, &c);
        assert_eq!((r.status, p.port_state, r.events.len()), (0, 3, 0), "ARMED, no event");
        pi[32] = (pi[32] & 0xf0) | 4;
        let r = process_set(&set_pi(&pi), 1, &mut p, &c);
        assert_eq!((p.port_state, r.events.clone()), (4, vec![port_event::ACTIVE]));
        let d = &r.mad[64..];
        assert_eq!((d[36], p.sm_sl, d[32] & 0xf, d[41] & 0xf), (0x41, 1, 4, 5), "NeighborMTU kept, MTUCap read-only");
        // A read-only component is not taken: CapabilityMask, LinkWidthActive.
        let mut ro = pi.clone();
        (ro[20], ro[31]) = (0xff, 0x01);
        let r = process_set(&set_pi(&ro), 1, &mut p, &c);
        assert_eq!((get32(&r.mad[64..], 20), r.mad[64 + 31]), (DEFAULT_CAP_MASK, 2));
        // Disable, then Polling: DOWN, then INIT again.
        let mut dis = pi.clone();
        (dis[32], dis[33]) = (dis[32] & 0xf0, 0x32);
        let r = process_set(&set_pi(&dis), 1, &mut p, &c);
        assert_eq!((p.port_state, p.phys_state, r.events.clone()), (1, 3, vec![port_event::DOWN]));
        dis[33] = 0x22;
        process_set(&set_pi(&dis), 1, &mut p, &c);
        assert_eq!((p.port_state, p.phys_state), (2, 5));
        // process (read-only, the RoCE PMA's) answers a Set as a Get.
        let before = p.clone();
        let r = process(&set_pi(&bad), 1, &p, &c);
        assert_eq!((r.status, p.lid), (0, before.lid));
    }

    #[test]
    fn random_sets_never_panic() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut p = port().unconfigured();
        let c = FwPortCounters::default();
        for i in 0..if cfg!(miri) { 200 } else { 5_000 } {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut m = set_pi(&[0u8; 64]);
            for k in 0..8 {
                m[(x >> (k * 8)) as usize % 256] = (x >> (k * 3)) as u8;
            }
            if i % 3 == 0 {
                m[1] = 0x01;
            }
            let r = process_set(&m, 1, &mut p, &c);
            assert!(r.events.len() <= 4);
            assert!(p.port_state <= 4 && p.phys_state <= 5);
        }
    }
}
