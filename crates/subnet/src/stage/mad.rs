//! The stage's view of a QP0/QP1 packet: a UD SEND_ONLY (BTH, DETH) whose
//! payload is exactly one 256-byte MAD, as the CA's firmware sends it and
//! the fabric carries it (no LRH: the SLID is the sending port's, from the
//! fabric). Anything else is not the stage's and passes by.

use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::ext::deth;
use vrnic_wire::mad::MAD_SIZE;
use vrnic_wire::packet::{self, Headers, RocePacket};

/// The default partition's full-member P_Key: what the special QPs send.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// A MAD on its way to or from a special QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MadPacket<'a> {
    pub dest_qp: u32,
    pub src_qp: u32,
    pub qkey: u32,
    pub pkey: u16,
    pub mad: &'a [u8],
}

impl MadPacket<'_> {
    /// The MAD's management class.
    pub fn class(&self) -> u8 {
        self.mad[1]
    }

    /// Whether QP1 would take it (IBTA 13.5.3: the GSI Q_Key, a P_Key of the
    /// default partition, which is the port's only one).
    pub fn gsi_keys_ok(&self) -> bool {
        self.qkey == deth::GSI_QKEY && self.pkey & 0x7fff == 0x7fff
    }
}

/// The BTH destination QP of a packet, if it has a BTH.
pub fn dest_qp(pkt: &[u8]) -> Option<u32> {
    bth::Packet::new_checked(pkt).ok().map(|b| b.dest_qp())
}

/// A packet to QP0 or QP1 that carries one whole MAD; `None` for anything
/// else (the stage lets it pass). Never panics on any input.
pub fn parse(pkt: &[u8]) -> Option<MadPacket<'_>> {
    let p = RocePacket::parse(pkt).ok()?;
    let h = p.headers;
    if h.bth.opcode != Opcode::new(Opcode::UD, Opcode::SEND_ONLY) || h.bth.dest_qp > 1 {
        return None;
    }
    let d = h.deth?;
    if p.payload.len() != MAD_SIZE {
        return None;
    }
    Some(MadPacket { dest_qp: h.bth.dest_qp, src_qp: d.src_qp, qkey: d.qkey, pkey: h.bth.pkey, mad: p.payload })
}

/// A UD SEND_ONLY from special QP `src_qp` to QP `dest_qp` carrying `mad`
/// (Q_Key: the GSI one from QP1, 0 from QP0, which ignores it), with the
/// ICRC slot the fabric fills.
pub fn build(src_qp: u32, dest_qp: u32, mad: &[u8], out: &mut Vec<u8>) -> bool {
    let mut h = Headers::new(bth::Repr {
        opcode: Opcode::new(Opcode::UD, Opcode::SEND_ONLY),
        pkey: DEFAULT_PKEY,
        dest_qp,
        ..Default::default()
    });
    h.deth = Some(deth::Repr { qkey: if src_qp == 1 { deth::GSI_QKEY } else { 0 }, src_qp });
    packet::emit(&h, mad, out).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_packets_parse_and_others_pass_by() {
        let mad: Vec<u8> = (0..256).map(|i| i as u8).collect();
        let mut p = Vec::new();
        assert!(build(1, 1, &mad, &mut p));
        let m = parse(&p).unwrap();
        assert_eq!((m.dest_qp, m.src_qp, m.qkey, m.pkey, m.mad), (1, 1, deth::GSI_QKEY, 0xffff, &mad[..]));
        assert!(m.gsi_keys_ok());
        assert!(build(0, 0, &mad, &mut p));
        assert_eq!(parse(&p).map(|m| (m.qkey, m.class())), Some((0, 1)));
        assert!(build(0, 7, &mad, &mut p));
        assert_eq!(parse(&p), None, "not a special QP");
        assert!(build(0, 0, &mad[..100], &mut p));
        assert_eq!(parse(&p), None, "not a whole MAD");
        for junk in [&[][..], &[0x64, 0, 0xff, 0xff, 0, 0, 0, 1][..], &[0xff; 300][..]] {
            assert_eq!(parse(junk), None);
        }
        assert_eq!(dest_qp(&[0x64, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0]), Some(1));
        assert_eq!(dest_qp(&[0x64]), None);
    }
}
