//! MCMemberRecord (IBTA 15.2.5.17), 52 bytes (stride 56): a multicast
//! group's parameters and one member's JoinState. Layout and ComponentMask
//! bits as in the kernel's sa_query.c `mcmember_rec_table` / ib_sa.h.

use super::codec::{rd16, rd32, wr16, wr32, Result};
use super::sa::comp;

/// ComponentMask bits (`IB_SA_MCMEMBER_REC_*`).
pub mod mask {
    use super::comp;
    pub const MGID: u64 = comp(0);
    pub const PORT_GID: u64 = comp(1);
    pub const QKEY: u64 = comp(2);
    pub const MLID: u64 = comp(3);
    pub const MTU_SELECTOR: u64 = comp(4);
    pub const MTU: u64 = comp(5);
    pub const TRAFFIC_CLASS: u64 = comp(6);
    pub const PKEY: u64 = comp(7);
    pub const RATE_SELECTOR: u64 = comp(8);
    pub const RATE: u64 = comp(9);
    pub const PACKET_LIFE_TIME_SELECTOR: u64 = comp(10);
    pub const PACKET_LIFE_TIME: u64 = comp(11);
    pub const SL: u64 = comp(12);
    pub const FLOW_LABEL: u64 = comp(13);
    pub const HOP_LIMIT: u64 = comp(14);
    pub const SCOPE: u64 = comp(15);
    pub const JOIN_STATE: u64 = comp(16);
    pub const PROXY_JOIN: u64 = comp(17);
}

/// JoinState bits.
pub const JOIN_FULL_MEMBER: u8 = 0x1;
pub const JOIN_NON_MEMBER: u8 = 0x2;
pub const JOIN_SEND_ONLY_NON_MEMBER: u8 = 0x4;
/// SendOnlyFullMember (IBTA 1.3 A15); ipoib uses it for send-only groups.
pub const JOIN_SEND_ONLY_FULL_MEMBER: u8 = 0x8;

pub mod field {
    use core::ops::Range;
    pub const MGID: Range<usize> = 0..16;
    pub const PORT_GID: Range<usize> = 16..32;
    pub const QKEY: Range<usize> = 32..36;
    pub const MLID: Range<usize> = 36..38;
    pub const MTU: usize = 38;
    pub const TCLASS: usize = 39;
    pub const PKEY: Range<usize> = 40..42;
    pub const RATE: usize = 42;
    pub const PACKET_LIFE_TIME: usize = 43;
    /// SL (4) | FlowLabel (20) | HopLimit (8).
    pub const SL_FLOW_HOP: Range<usize> = 44..48;
    /// Scope (4) | JoinState (4).
    pub const SCOPE_JOIN: usize = 48;
    /// ProxyJoin (1) | reserved (23).
    pub const PROXY_JOIN: usize = 49;
    pub const HEADER_LEN: usize = 52;
}

fixed_view!("MCMemberRecord");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Repr {
    pub mgid: [u8; 16],
    pub port_gid: [u8; 16],
    pub qkey: u32,
    pub mlid: u16,
    pub mtu_selector: u8,
    pub mtu: u8,
    pub traffic_class: u8,
    pub pkey: u16,
    pub rate_selector: u8,
    pub rate: u8,
    pub packet_life_time_selector: u8,
    pub packet_life_time: u8,
    pub sl: u8,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub scope: u8,
    pub join_state: u8,
    pub proxy_join: bool,
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let sfh = rd32(b, field::SL_FLOW_HOP.start);
        Ok(Repr {
            mgid: b[field::MGID].try_into().unwrap_or_default(),
            port_gid: b[field::PORT_GID].try_into().unwrap_or_default(),
            qkey: rd32(b, field::QKEY.start),
            mlid: rd16(b, field::MLID.start),
            mtu_selector: b[field::MTU] >> 6,
            mtu: b[field::MTU] & 0x3f,
            traffic_class: b[field::TCLASS],
            pkey: rd16(b, field::PKEY.start),
            rate_selector: b[field::RATE] >> 6,
            rate: b[field::RATE] & 0x3f,
            packet_life_time_selector: b[field::PACKET_LIFE_TIME] >> 6,
            packet_life_time: b[field::PACKET_LIFE_TIME] & 0x3f,
            sl: (sfh >> 28) as u8,
            flow_label: (sfh >> 8) & 0xf_ffff,
            hop_limit: sfh as u8,
            scope: b[field::SCOPE_JOIN] >> 4,
            join_state: b[field::SCOPE_JOIN] & 0xf,
            proxy_join: b[field::PROXY_JOIN] & 0x80 != 0,
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.buffer.as_mut()[..field::HEADER_LEN];
        b.fill(0);
        b[field::MGID].copy_from_slice(&self.mgid);
        b[field::PORT_GID].copy_from_slice(&self.port_gid);
        wr32(b, field::QKEY.start, self.qkey);
        wr16(b, field::MLID.start, self.mlid);
        b[field::MTU] = self.mtu_selector << 6 | (self.mtu & 0x3f);
        b[field::TCLASS] = self.traffic_class;
        wr16(b, field::PKEY.start, self.pkey);
        b[field::RATE] = self.rate_selector << 6 | (self.rate & 0x3f);
        b[field::PACKET_LIFE_TIME] = self.packet_life_time_selector << 6 | (self.packet_life_time & 0x3f);
        let sfh = ((self.sl & 0xf) as u32) << 28 | (self.flow_label & 0xf_ffff) << 8 | self.hop_limit as u32;
        wr32(b, field::SL_FLOW_HOP.start, sfh);
        b[field::SCOPE_JOIN] = self.scope << 4 | (self.join_state & 0xf);
        b[field::PROXY_JOIN] = (self.proxy_join as u8) << 7;
    }
}

/// The IPoIB broadcast group's MGID for a P_Key (RFC 4391 §4:
/// ff12:401b:PPPP::ffff:ffff, link-local scope 2, the full-member bit set
/// in the P_Key as ipoib_ib_dev_flush/ipoib_mcast_join's broadcast does).
pub fn ipoib_broadcast_mgid(pkey: u16) -> [u8; 16] {
    let p = (pkey | 0x8000).to_be_bytes();
    [0xff, 0x12, 0x40, 0x1b, p[0], p[1], 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The broadcast join ipoib sends (ipoib_multicast.c ipoib_mcast_join,
    /// hand-assembled): MGID ff12:401b:ffff::ffff:ffff, PortGID
    /// fe80::2:c903:0:1, JoinState FullMember, everything else zero.
    #[test]
    fn ipoib_broadcast_join_bytes() {
        let mut b = [0u8; 52];
        b[0..16].copy_from_slice(&[0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        b[16..18].copy_from_slice(&[0xfe, 0x80]);
        b[24..32].copy_from_slice(&0x0002_c903_0000_0001u64.to_be_bytes());
        b[48] = 0x01;
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r.mgid, ipoib_broadcast_mgid(0xffff));
        assert_eq!(r.join_state, JOIN_FULL_MEMBER);
        assert_eq!(r.scope, 0);
        let mut out = [0u8; 52];
        r.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
    }

    #[test]
    fn group_parameters_round_trip() {
        let r = Repr {
            mgid: ipoib_broadcast_mgid(0x7fff),
            qkey: 0x0000_0b1b,
            mlid: 0xc000,
            mtu_selector: 2,
            mtu: 4,
            pkey: 0xffff,
            rate_selector: 2,
            rate: 3,
            packet_life_time_selector: 2,
            packet_life_time: 0x12,
            sl: 5,
            flow_label: 0xabcde,
            hop_limit: 0xff,
            scope: 2,
            join_state: JOIN_SEND_ONLY_FULL_MEMBER,
            proxy_join: true,
            ..Repr::default()
        };
        let mut b = [0u8; 52];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[32..38], &[0, 0, 0x0b, 0x1b, 0xc0, 0x00]);
        assert_eq!(b[38], 0x84, "MTU selector exactly, 2048");
        assert_eq!(&b[44..48], &[0x5a, 0xbc, 0xde, 0xff]);
        assert_eq!((b[48], b[49]), (0x28, 0x80));
        assert_eq!(r.mgid[4..6], [0xff, 0xff], "the full-member bit is set in the MGID's P_Key");
        assert_eq!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
    }
}
