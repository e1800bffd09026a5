//! PathRecord (IBTA 15.2.5.16), 64 bytes: the SA's answer to "how do I reach
//! that port" (LIDs, GIDs, P_Key, SL, MTU, rate, packet lifetime). Layout and
//! ComponentMask bits as in the kernel's sa_query.c `path_rec_table`.

use super::codec::{rd16, rd32, rd64, wr16, wr32, wr64, Result};
use super::sa::comp;

/// ComponentMask bits (`IB_SA_PATH_REC_*`): ServiceID spans bits 0 and 1.
pub mod mask {
    use super::comp;
    pub const SERVICE_ID: u64 = comp(0) | comp(1);
    pub const DGID: u64 = comp(2);
    pub const SGID: u64 = comp(3);
    pub const DLID: u64 = comp(4);
    pub const SLID: u64 = comp(5);
    pub const RAW_TRAFFIC: u64 = comp(6);
    pub const FLOW_LABEL: u64 = comp(8);
    pub const HOP_LIMIT: u64 = comp(9);
    pub const TRAFFIC_CLASS: u64 = comp(10);
    pub const REVERSIBLE: u64 = comp(11);
    pub const NUMB_PATH: u64 = comp(12);
    pub const PKEY: u64 = comp(13);
    pub const QOS_CLASS: u64 = comp(14);
    pub const SL: u64 = comp(15);
    pub const MTU_SELECTOR: u64 = comp(16);
    pub const MTU: u64 = comp(17);
    pub const RATE_SELECTOR: u64 = comp(18);
    pub const RATE: u64 = comp(19);
    pub const PACKET_LIFE_TIME_SELECTOR: u64 = comp(20);
    pub const PACKET_LIFE_TIME: u64 = comp(21);
    pub const PREFERENCE: u64 = comp(22);
}

pub mod field {
    use core::ops::Range;
    pub const SERVICE_ID: Range<usize> = 0..8;
    pub const DGID: Range<usize> = 8..24;
    pub const SGID: Range<usize> = 24..40;
    pub const DLID: Range<usize> = 40..42;
    pub const SLID: Range<usize> = 42..44;
    /// RawTraffic (1) | reserved (3) | FlowLabel (20) | HopLimit (8).
    pub const FLOW: Range<usize> = 44..48;
    pub const TCLASS: usize = 48;
    /// Reversible (1) | NumbPath (7).
    pub const REVERSIBLE_NUMB_PATH: usize = 49;
    pub const PKEY: Range<usize> = 50..52;
    /// QoSClass (12) | SL (4).
    pub const QOS_SL: Range<usize> = 52..54;
    /// Selector (2) | value (6), for MTU, rate and PacketLifeTime.
    pub const MTU: usize = 54;
    pub const RATE: usize = 55;
    pub const PACKET_LIFE_TIME: usize = 56;
    pub const PREFERENCE: usize = 57;
    pub const HEADER_LEN: usize = 64;
}

fixed_view!("PathRecord");

/// PathRecord fields. Selectors are 2 bits, values 6 bits (the IB enums).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub service_id: u64,
    pub dgid: [u8; 16],
    pub sgid: [u8; 16],
    pub dlid: u16,
    pub slid: u16,
    pub raw_traffic: bool,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub reversible: bool,
    pub numb_path: u8,
    pub pkey: u16,
    pub qos_class: u16,
    pub sl: u8,
    pub mtu_selector: u8,
    pub mtu: u8,
    pub rate_selector: u8,
    pub rate: u8,
    pub packet_life_time_selector: u8,
    pub packet_life_time: u8,
    pub preference: u8,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let flow = rd32(b, field::FLOW.start);
        let qos_sl = rd16(b, field::QOS_SL.start);
        Ok(Repr {
            service_id: rd64(b, field::SERVICE_ID.start),
            dgid: b[field::DGID].try_into().unwrap_or_default(),
            sgid: b[field::SGID].try_into().unwrap_or_default(),
            dlid: rd16(b, field::DLID.start),
            slid: rd16(b, field::SLID.start),
            raw_traffic: flow & 0x8000_0000 != 0,
            flow_label: (flow >> 8) & 0xf_ffff,
            hop_limit: flow as u8,
            traffic_class: b[field::TCLASS],
            reversible: b[field::REVERSIBLE_NUMB_PATH] & 0x80 != 0,
            numb_path: b[field::REVERSIBLE_NUMB_PATH] & 0x7f,
            pkey: rd16(b, field::PKEY.start),
            qos_class: qos_sl >> 4,
            sl: (qos_sl & 0xf) as u8,
            mtu_selector: b[field::MTU] >> 6,
            mtu: b[field::MTU] & 0x3f,
            rate_selector: b[field::RATE] >> 6,
            rate: b[field::RATE] & 0x3f,
            packet_life_time_selector: b[field::PACKET_LIFE_TIME] >> 6,
            packet_life_time: b[field::PACKET_LIFE_TIME] & 0x3f,
            preference: b[field::PREFERENCE],
        })
    }

    /// Writes all 64 bytes (reserved ones zero); `p` must be checked.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.buffer.as_mut()[..field::HEADER_LEN];
        b.fill(0);
        wr64(b, field::SERVICE_ID.start, self.service_id);
        b[field::DGID].copy_from_slice(&self.dgid);
        b[field::SGID].copy_from_slice(&self.sgid);
        wr16(b, field::DLID.start, self.dlid);
        wr16(b, field::SLID.start, self.slid);
        let flow = (self.raw_traffic as u32) << 31 | (self.flow_label & 0xf_ffff) << 8 | self.hop_limit as u32;
        wr32(b, field::FLOW.start, flow);
        b[field::TCLASS] = self.traffic_class;
        b[field::REVERSIBLE_NUMB_PATH] = (self.reversible as u8) << 7 | (self.numb_path & 0x7f);
        wr16(b, field::PKEY.start, self.pkey);
        wr16(b, field::QOS_SL.start, (self.qos_class & 0xfff) << 4 | (self.sl & 0xf) as u16);
        b[field::MTU] = self.mtu_selector << 6 | (self.mtu & 0x3f);
        b[field::RATE] = self.rate_selector << 6 | (self.rate & 0x3f);
        b[field::PACKET_LIFE_TIME] = self.packet_life_time_selector << 6 | (self.packet_life_time & 0x3f);
        b[field::PREFERENCE] = self.preference;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PathRecord response as OpenSM sends it between LID 1 and LID 2
    /// (hand-assembled from IBTA 15.2.5.16: MTU 2048 exactly, 40 Gb/s
    /// exactly, lifetime 0x12 exactly, reversible, P_Key 0xffff, SL 0).
    #[test]
    fn path_record_bytes() {
        let mut b = [0u8; 64];
        b[8..16].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
        b[16..24].copy_from_slice(&0x0002_c903_0000_0002u64.to_be_bytes());
        b[24..32].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
        b[32..40].copy_from_slice(&0x0002_c903_0000_0001u64.to_be_bytes());
        b[40..44].copy_from_slice(&[0, 2, 0, 1]);
        b[44..48].copy_from_slice(&[0x00, 0x12, 0x34, 0x40]); // flow 0x1234, hop 64
        b[48] = 0;
        b[49] = 0x81;
        b[50..52].copy_from_slice(&[0xff, 0xff]);
        b[52..54].copy_from_slice(&[0x00, 0x03]);
        b[54] = 0x84;
        b[55] = 0x87;
        b[56] = 0x92;
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!((r.slid, r.dlid), (1, 2));
        assert_eq!(r.sgid[8..], 0x0002_c903_0000_0001u64.to_be_bytes());
        assert_eq!((r.flow_label, r.hop_limit, r.raw_traffic), (0x1234, 64, false));
        assert!(r.reversible);
        assert_eq!(r.numb_path, 1);
        assert_eq!(r.pkey, 0xffff);
        assert_eq!(r.sl, 3);
        assert_eq!((r.mtu_selector, r.mtu), (2, 4));
        assert_eq!((r.rate_selector, r.rate), (2, 7));
        assert_eq!((r.packet_life_time_selector, r.packet_life_time), (2, 0x12));
        let mut out = [0xeeu8; 64];
        r.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
        assert!(Packet::new_checked(&b[..63]).is_err());
    }

    #[test]
    fn mask_bits_match_ib_sa_h() {
        assert_eq!(mask::SERVICE_ID, 0x3);
        assert_eq!(mask::PKEY, 1 << 13);
        assert_eq!(mask::PACKET_LIFE_TIME, 1 << 21);
    }
}
