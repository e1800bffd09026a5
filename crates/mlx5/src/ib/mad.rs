//! The subnet-management agent (SMA) and performance-management agent the
//! ConnectX firmware implements behind `MAD_IFC`: SMPs answered from the
//! port's configured identity, PerfMgt counters from the port's real counters.
//!
//! MAD layout (IBTA 13.4): 24-byte common header (base_version, mgmt_class,
//! class_version, method, status, class_specific, tid, attr_id, attr_mod),
//! SMP/PMA data at offset 64.

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(test)]
use super::port::DEFAULT_CAP_MASK;
use super::port::{PortConfig, PortCounters};

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

/// Outcome of processing one MAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadReply {
    pub mad: [u8; MAD_SIZE],
    /// MAD-level status written into the response.
    pub status: u16,
}

/// Answers one MAD for `port` (1-based). Never panics on any input.
pub fn process(req: &[u8; MAD_SIZE], port_num: u8, port: &PortConfig, counters: &PortCounters) -> MadReply {
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
    MadReply { mad: r, status }
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
            if attr_mod != 0 && attr_mod != port_num as u32 && attr_mod != 1 {
                return STATUS_INVALID_FIELD;
            }
            put64(d, 8, p.gid_prefix);
            put16(d, 16, p.lid);
            put16(d, 18, p.sm_lid);
            put32(d, 20, p.cap_mask);
            d[28] = 1; // LocalPortNum
            d[29] = 3; // LinkWidthEnabled 1x|4x
            d[30] = 3; // LinkWidthSupported
            d[31] = 2; // LinkWidthActive 4x
            d[32] = (7 << 4) | (p.port_state & 0xf); // LinkSpeedSupported SDR|DDR|QDR, PortState
            d[33] = (p.phys_state << 4) | 2; // PortPhysicalState, LinkDownDefaultState polling
            d[34] = 0; // M_KeyProtect, LMC 0
            d[35] = (4 << 4) | 7; // LinkSpeedActive QDR, LinkSpeedEnabled
            d[36] = (5 << 4) | (p.sm_sl & 0xf); // NeighborMTU 4096, MasterSMSL
            d[37] = 1 << 4; // VLCap VL0
            d[41] = 5; // InitTypeReply 0, MTUCap 4096
            d[42] = 0x1f; // HOQLife
            d[43] = 1 << 4; // OperationalVLs 1
            d[50] = p.gid_table_len;
            d[51] = 18; // SubnetTimeOut
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
        // ExtendedPortInfo (Mellanox) and everything else: not supported.
        _ => STATUS_UNSUP_METH_ATTR,
    }
}

fn sat(v: u64, bits: u32) -> u64 {
    v.min((1u64 << bits) - 1)
}

fn pma(d: &mut [u8], req: &[u8; MAD_SIZE], method: u8, attr: u16, port_num: u8, c: &PortCounters) -> u16 {
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
        let r = process(&req(1, METHOD_GET, ATTR_NODE_INFO, 0), 1, &port(), &PortCounters::default());
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
        let r = process(&req(0x81, METHOD_GET, ATTR_PORT_INFO, 1), 1, &port(), &PortCounters::default());
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
        let c = PortCounters::default();
        let g = process(&req(1, METHOD_GET, ATTR_GUID_INFO, 0), 1, &p, &c);
        assert_eq!(&g.mad[64..72], &p.port_guid.to_be_bytes());
        assert_eq!(process(&req(1, METHOD_GET, ATTR_GUID_INFO, 1), 1, &p, &c).status, STATUS_INVALID_FIELD);
        let k = process(&req(1, METHOD_GET, ATTR_PKEY_TABLE, 0), 1, &p, &c);
        assert_eq!(get16(&k.mad, 64), 0xffff);
        assert_eq!(get16(&k.mad, 66), 0);
        let e = process(&req(1, METHOD_GET, ATTR_EXT_PORT_INFO, 1), 1, &p, &c);
        assert_eq!(e.status, STATUS_UNSUP_METH_ATTR);
        assert_eq!(get16(&e.mad, 4), STATUS_UNSUP_METH_ATTR, "status in the MAD header");
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
        let c = PortCounters::default();
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
}
