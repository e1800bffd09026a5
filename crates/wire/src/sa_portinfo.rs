//! PortInfoRecord (IBTA 15.2.5.3), 68 bytes (stride 72): EndportLID,
//! PortNum, Options and the port's PortInfo (IBTA 14.2.5.6, 64 bytes).
//! ComponentMask bits as ib_types.h `IB_PIR_COMPMASK_*`.

use super::codec::{rd16, rd32, rd64, wr16, wr32, wr64, Result};
use super::sa::comp;

pub mod mask {
    use super::comp;
    pub const LID: u64 = comp(0);
    pub const PORT_NUM: u64 = comp(1);
    pub const OPTIONS: u64 = comp(2);
    pub const MKEY: u64 = comp(3);
    pub const GID_PREFIX: u64 = comp(4);
    pub const BASE_LID: u64 = comp(5);
    pub const SM_LID: u64 = comp(6);
    pub const CAP_MASK: u64 = comp(7);
}

/// PortInfo CapabilityMask: IsSM.
pub const CAP_IS_SM: u32 = 1 << 1;

pub mod field {
    use core::ops::Range;
    pub const LID: Range<usize> = 0..2;
    pub const PORT_NUM: usize = 2;
    pub const OPTIONS: usize = 3;
    pub const PORT_INFO: Range<usize> = 4..68;
    pub const HEADER_LEN: usize = 68;
}

fixed_view!("PortInfoRecord");

/// The PortInfo fields the SA reports (the rest are zero: M_Key, leases,
/// VL arbitration, violation counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortInfo {
    pub gid_prefix: u64,
    pub lid: u16,
    pub master_sm_lid: u16,
    pub cap_mask: u32,
    pub local_port_num: u8,
    pub link_width_enabled: u8,
    pub link_width_supported: u8,
    pub link_width_active: u8,
    pub link_speed_supported: u8,
    pub port_state: u8,
    pub phys_state: u8,
    pub lmc: u8,
    pub link_speed_active: u8,
    pub link_speed_enabled: u8,
    pub neighbor_mtu: u8,
    pub master_sm_sl: u8,
    pub vl_cap: u8,
    pub mtu_cap: u8,
    pub operational_vls: u8,
    pub guid_cap: u8,
    pub subnet_timeout: u8,
    pub resp_time_value: u8,
}

impl PortInfo {
    pub const LEN: usize = 64;

    pub fn read(b: &[u8; 64]) -> PortInfo {
        PortInfo {
            gid_prefix: rd64(b, 8),
            lid: rd16(b, 16),
            master_sm_lid: rd16(b, 18),
            cap_mask: rd32(b, 20),
            local_port_num: b[28],
            link_width_enabled: b[29],
            link_width_supported: b[30],
            link_width_active: b[31],
            link_speed_supported: b[32] >> 4,
            port_state: b[32] & 0xf,
            phys_state: b[33] >> 4,
            lmc: b[34] & 0x7,
            link_speed_active: b[35] >> 4,
            link_speed_enabled: b[35] & 0xf,
            neighbor_mtu: b[36] >> 4,
            master_sm_sl: b[36] & 0xf,
            vl_cap: b[37] >> 4,
            mtu_cap: b[41] & 0xf,
            operational_vls: b[43] >> 4,
            guid_cap: b[50],
            subnet_timeout: b[51] & 0x1f,
            resp_time_value: b[52] & 0x1f,
        }
    }

    pub fn write(&self, b: &mut [u8; 64]) {
        b.fill(0);
        wr64(b, 8, self.gid_prefix);
        wr16(b, 16, self.lid);
        wr16(b, 18, self.master_sm_lid);
        wr32(b, 20, self.cap_mask);
        b[28] = self.local_port_num;
        b[29] = self.link_width_enabled;
        b[30] = self.link_width_supported;
        b[31] = self.link_width_active;
        b[32] = self.link_speed_supported << 4 | (self.port_state & 0xf);
        b[33] = self.phys_state << 4 | 2; // LinkDownDefaultState: Polling
        b[34] = self.lmc & 0x7;
        b[35] = self.link_speed_active << 4 | (self.link_speed_enabled & 0xf);
        b[36] = self.neighbor_mtu << 4 | (self.master_sm_sl & 0xf);
        b[37] = self.vl_cap << 4;
        b[41] = self.mtu_cap & 0xf;
        b[43] = self.operational_vls << 4;
        b[50] = self.guid_cap;
        b[51] = self.subnet_timeout & 0x1f;
        b[52] = self.resp_time_value & 0x1f;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub lid: u16,
    pub port_num: u8,
    pub options: u8,
    pub port_info: PortInfo,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let mut pi = [0u8; 64];
        pi.copy_from_slice(&b[field::PORT_INFO]);
        Ok(Repr {
            lid: rd16(b, field::LID.start),
            port_num: b[field::PORT_NUM],
            options: b[field::OPTIONS],
            port_info: PortInfo::read(&pi),
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.buffer.as_mut()[..field::HEADER_LEN];
        wr16(b, field::LID.start, self.lid);
        b[field::PORT_NUM] = self.port_num;
        b[field::OPTIONS] = self.options;
        let mut pi = [0u8; 64];
        self.port_info.write(&mut pi);
        b[field::PORT_INFO].copy_from_slice(&pi);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_info_record_layout() {
        let r = Repr {
            lid: 2,
            port_num: 1,
            options: 0,
            port_info: PortInfo {
                gid_prefix: 0xfe80_0000_0000_0000,
                lid: 2,
                master_sm_lid: 1,
                cap_mask: 0x0251_0848,
                local_port_num: 1,
                link_width_enabled: 3,
                link_width_supported: 3,
                link_width_active: 2,
                link_speed_supported: 7,
                port_state: 4,
                phys_state: 5,
                link_speed_active: 4,
                link_speed_enabled: 7,
                neighbor_mtu: 4,
                vl_cap: 1,
                mtu_cap: 5,
                operational_vls: 1,
                guid_cap: 8,
                subnet_timeout: 18,
                resp_time_value: 16,
                ..PortInfo::default()
            },
        };
        let mut b = [0u8; 68];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[0..4], &[0, 2, 1, 0]);
        assert_eq!(&b[12..14], &[0xfe, 0x80], "GIDPrefix at PortInfo+8");
        assert_eq!(&b[20..24], &[0, 2, 0, 1], "LID, MasterSMLID");
        assert_eq!(b[4 + 32], 0x74, "LinkSpeedSupported | PortState ACTIVE");
        assert_eq!(b[4 + 36], 0x40, "NeighborMTU 2048");
        assert_eq!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
    }
}
