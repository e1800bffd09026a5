//! One end port as the subnet database knows it: identity (LID, GUIDs,
//! node description and type), state, MTU, rate and P_Keys.

use super::select::{MTU_2048, RATE_40_GBPS};

/// The default subnet prefix fe80::/64.
pub const DEFAULT_GID_PREFIX: u64 = 0xfe80_0000_0000_0000;
/// The default (full-member) P_Key.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// PortState values (PortInfo).
pub const PORT_STATE_DOWN: u8 = 1;
pub const PORT_STATE_ACTIVE: u8 = 4;

/// A CA port on the subnet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRecord {
    pub lid: u16,
    pub port_num: u8,
    pub port_guid: u64,
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub gid_prefix: u64,
    /// NodeType (1 = CA).
    pub node_type: u8,
    pub node_desc: String,
    /// PortInfo PortState (4 = ACTIVE).
    pub state: u8,
    /// Largest MTU (IB enum) the port runs.
    pub mtu: u8,
    /// Link rate (IB enum).
    pub rate: u8,
    /// P_Key table (bit 15 = full member).
    pub pkeys: Vec<u16>,
    pub cap_mask: u32,
    pub vendor_id: u32,
    pub device_id: u16,
}

impl PortRecord {
    /// An ACTIVE CA port 1 with the ConnectX-5 identity vrnic presents:
    /// MTU 2048, 40 Gb/s (4x QDR), the default P_Key.
    pub fn new(lid: u16, port_guid: u64, node_guid: u64) -> PortRecord {
        PortRecord {
            lid,
            port_num: 1,
            port_guid,
            node_guid,
            sys_image_guid: node_guid,
            gid_prefix: DEFAULT_GID_PREFIX,
            node_type: 1,
            node_desc: format!("vrnic lid {lid}"),
            state: PORT_STATE_ACTIVE,
            mtu: MTU_2048,
            rate: RATE_40_GBPS,
            pkeys: vec![DEFAULT_PKEY],
            cap_mask: 0x0251_0848,
            vendor_id: 0x0002c9,
            device_id: 0x1017,
        }
    }

    /// The identity a vrnic port has when its configuration names none
    /// ([`derived_node_guid`], port GUID = node GUID + 1,
    /// [`derived_node_desc`]): how every server knows its peers.
    pub fn derived(lid: u16) -> PortRecord {
        let g = derived_node_guid(lid);
        let mut p = PortRecord::new(lid, g.wrapping_add(1), g);
        p.node_desc = derived_node_desc(lid);
        p
    }

    /// The port GID: subnet prefix | port GUID.
    pub fn gid(&self) -> [u8; 16] {
        gid(self.gid_prefix, self.port_guid)
    }

    /// Whether the port's table holds `pkey` (the membership bit ignored).
    pub fn has_pkey(&self, pkey: u16) -> bool {
        pkey & 0x7fff != 0 && self.pkeys.iter().any(|&k| k & 0x7fff == pkey & 0x7fff)
    }

    pub fn is_active(&self) -> bool {
        self.state == PORT_STATE_ACTIVE
    }
}

/// The node GUID of a port whose configuration names none: the ConnectX
/// OUI-based prefix 0x0002c903_00a0 with the LID in bits 8..24, so LID 1
/// is 0x0002c90300a00100 (port GUID ...0101).
pub fn derived_node_guid(lid: u16) -> u64 {
    0x0002_c903_00a0_0000 | (lid as u64) << 8
}

/// The NodeDescription of a port whose configuration names none.
pub fn derived_node_desc(lid: u16) -> String {
    format!("vrnic emulated ConnectX-5 lid {lid}")
}

/// A GID from its prefix and interface ID.
pub fn gid(prefix: u64, guid: u64) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&prefix.to_be_bytes());
    g[8..].copy_from_slice(&guid.to_be_bytes());
    g
}
