//! NodeRecord (IBTA 15.2.5.2), 108 bytes (stride 112): a LID, the node's
//! NodeInfo (IBTA 14.2.5.3, 40 bytes) and its NodeDescription (64 bytes).
//! ComponentMask bits as infiniband-diags' ib_types.h `IB_NR_COMPMASK_*`.

use super::codec::{rd16, rd32, rd64, wr16, wr32, wr64, Result};
use super::sa::comp;

pub mod mask {
    use super::comp;
    pub const LID: u64 = comp(0);
    pub const BASE_VERSION: u64 = comp(2);
    pub const CLASS_VERSION: u64 = comp(3);
    pub const NODE_TYPE: u64 = comp(4);
    pub const NUM_PORTS: u64 = comp(5);
    pub const SYS_IMAGE_GUID: u64 = comp(6);
    pub const NODE_GUID: u64 = comp(7);
    pub const PORT_GUID: u64 = comp(8);
    pub const PARTITION_CAP: u64 = comp(9);
    pub const DEVICE_ID: u64 = comp(10);
    pub const REVISION: u64 = comp(11);
    pub const LOCAL_PORT_NUM: u64 = comp(12);
    pub const VENDOR_ID: u64 = comp(13);
    pub const NODE_DESC: u64 = comp(14);
}

/// NodeType values.
pub const NODE_TYPE_CA: u8 = 1;
pub const NODE_TYPE_SWITCH: u8 = 2;
pub const NODE_TYPE_ROUTER: u8 = 3;

pub mod field {
    use core::ops::Range;
    pub const LID: Range<usize> = 0..2;
    /// NodeInfo, 40 bytes.
    pub const NODE_INFO: Range<usize> = 4..44;
    pub const NODE_DESC: Range<usize> = 44..108;
    pub const HEADER_LEN: usize = 108;
}

fixed_view!("NodeRecord");

/// NodeInfo (IBTA 14.2.5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeInfo {
    pub base_version: u8,
    pub class_version: u8,
    pub node_type: u8,
    pub num_ports: u8,
    pub sys_image_guid: u64,
    pub node_guid: u64,
    pub port_guid: u64,
    pub partition_cap: u16,
    pub device_id: u16,
    pub revision: u32,
    pub local_port_num: u8,
    /// 24 bits.
    pub vendor_id: u32,
}

impl NodeInfo {
    pub const LEN: usize = 40;

    /// Reads a NodeInfo from 40 bytes.
    pub fn read(b: &[u8; 40]) -> NodeInfo {
        let pv = rd32(b, 36);
        NodeInfo {
            base_version: b[0],
            class_version: b[1],
            node_type: b[2],
            num_ports: b[3],
            sys_image_guid: rd64(b, 4),
            node_guid: rd64(b, 12),
            port_guid: rd64(b, 20),
            partition_cap: rd16(b, 28),
            device_id: rd16(b, 30),
            revision: rd32(b, 32),
            local_port_num: (pv >> 24) as u8,
            vendor_id: pv & 0xff_ffff,
        }
    }

    pub fn write(&self, b: &mut [u8; 40]) {
        b[0] = self.base_version;
        b[1] = self.class_version;
        b[2] = self.node_type;
        b[3] = self.num_ports;
        wr64(b, 4, self.sys_image_guid);
        wr64(b, 12, self.node_guid);
        wr64(b, 20, self.port_guid);
        wr16(b, 28, self.partition_cap);
        wr16(b, 30, self.device_id);
        wr32(b, 32, self.revision);
        wr32(b, 36, (self.local_port_num as u32) << 24 | (self.vendor_id & 0xff_ffff));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub lid: u16,
    pub node_info: NodeInfo,
    /// NodeDescription: 64 bytes, NUL padded (not necessarily UTF-8).
    pub node_desc: [u8; 64],
}

impl Default for Repr {
    fn default() -> Repr {
        Repr { lid: 0, node_info: NodeInfo::default(), node_desc: [0; 64] }
    }
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let mut ni = [0u8; 40];
        ni.copy_from_slice(&b[field::NODE_INFO]);
        let mut node_desc = [0u8; 64];
        node_desc.copy_from_slice(&b[field::NODE_DESC]);
        Ok(Repr { lid: rd16(b, field::LID.start), node_info: NodeInfo::read(&ni), node_desc })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.buffer.as_mut()[..field::HEADER_LEN];
        b.fill(0);
        wr16(b, field::LID.start, self.lid);
        let mut ni = [0u8; 40];
        self.node_info.write(&mut ni);
        b[field::NODE_INFO].copy_from_slice(&ni);
        b[field::NODE_DESC].copy_from_slice(&self.node_desc);
    }
}

/// A NodeDescription field from a string (truncated to 64 bytes).
pub fn node_desc_bytes(s: &str) -> [u8; 64] {
    let mut d = [0u8; 64];
    let n = s.len().min(64);
    d[..n].copy_from_slice(&s.as_bytes()[..n]);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_record_layout() {
        let r = Repr {
            lid: 3,
            node_info: NodeInfo {
                base_version: 1,
                class_version: 1,
                node_type: NODE_TYPE_CA,
                num_ports: 1,
                sys_image_guid: 0x0002_c903_0000_0300,
                node_guid: 0x0002_c903_0000_0300,
                port_guid: 0x0002_c903_0000_0301,
                partition_cap: 16,
                device_id: 0x1017,
                revision: 0,
                local_port_num: 1,
                vendor_id: 0x0002c9,
            },
            node_desc: node_desc_bytes("vrnic mlx5_0"),
        };
        let mut b = [0u8; 108];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[0..4], &[0, 3, 0, 0]);
        assert_eq!(&b[4..8], &[1, 1, 1, 1]);
        assert_eq!(&b[16..24], &0x0002_c903_0000_0300u64.to_be_bytes(), "NodeGUID at NodeInfo+12");
        assert_eq!(&b[40..44], &[1, 0x00, 0x02, 0xc9], "LocalPortNum | VendorID");
        assert_eq!(&b[44..56], b"vrnic mlx5_0");
        assert_eq!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
    }
}
