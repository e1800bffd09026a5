//! The RoCEv2 invariant CRC: CRC-32 (zlib's) over eight 0xFF bytes standing in
//! for the LRH, the IPv4 and UDP headers with their variant fields set to
//! ones (TOS, TTL, IPv4 checksum, UDP checksum), the BTH with byte 4 (FECN,
//! BECN, reserved) set to ones, and everything after it up to the ICRC. The
//! result travels least-significant byte first.

use super::codec::{Error, Result};
use super::ip::PseudoHeader;

/// Bytes of the ICRC trailer.
pub const LEN: usize = 4;

/// ICRC of `roce` (BTH through pad, without the ICRC) behind the 28 IPv4+UDP
/// header bytes `ip_udp` as they are (or would be) on the wire.
pub fn compute(ip_udp: &[u8; PseudoHeader::LEN], roce: &[u8]) -> u32 {
    let mut h = ip_udp.to_owned();
    h[1] = 0xff; // TOS (DSCP + ECN)
    h[8] = 0xff; // TTL
    h[10] = 0xff; // IPv4 header checksum
    h[11] = 0xff;
    h[26] = 0xff; // UDP checksum
    h[27] = 0xff;
    compute_over(&h, roce)
}

/// ICRC of `roce` (BTH through pad) behind network headers `masked` whose
/// variant fields the caller has already set to ones (IPv4 or IPv6, + UDP).
pub fn compute_over(masked: &[u8], roce: &[u8]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(&[0xff; 8]);
    c.update(masked);
    if roce.len() > 4 {
        c.update(&roce[..4]);
        c.update(&[0xff]);
        c.update(&roce[5..]);
    } else {
        c.update(roce);
    }
    c.finalize()
}

/// ICRC of a packet under a pseudo-header.
pub fn compute_for(ph: &PseudoHeader, roce: &[u8]) -> u32 {
    let mut h = [0u8; PseudoHeader::LEN];
    ph.emit(&mut h);
    compute(&h, roce)
}

/// Writes the ICRC into the last four bytes of `pkt` (BTH through ICRC).
pub fn fill(ph: &PseudoHeader, pkt: &mut [u8]) {
    if pkt.len() < LEN {
        return;
    }
    let n = pkt.len() - LEN;
    let c = compute_for(ph, &pkt[..n]);
    pkt[n..].copy_from_slice(&c.to_le_bytes());
}

/// Checks the ICRC trailer of `pkt` (BTH through ICRC).
pub fn verify(ph: &PseudoHeader, pkt: &[u8]) -> Result<()> {
    if pkt.len() < LEN + super::bth::field::HEADER_LEN {
        return Err(Error::Truncated("ICRC"));
    }
    let n = pkt.len() - LEN;
    let want = u32::from_le_bytes([pkt[n], pkt[n + 1], pkt[n + 2], pkt[n + 3]]);
    if compute_for(ph, &pkt[..n]) == want {
        Ok(())
    } else {
        Err(Error::Icrc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::udp;
    use std::net::Ipv4Addr;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Vector 1 of the anchors doc: a CNP captured from a ConnectX-4 Lx.
    /// (The doc's hex groups BTH bytes 0-7 and then the 4 PSN bytes with
    /// the 16 reserved bytes; the frame is 74 bytes.)
    #[test]
    fn vector1_connectx4_cnp() {
        let f = hex("e41d2dab2bc27cfe90643b32080045c2003c718c400040119161 0a0011010a001201 000012b700280000
             8100ffff40000118 00000000 00000000000000000000000000000000 82fd002a");
        assert_eq!(f.len(), 74);
        let (ph, roce) = PseudoHeader::parse(&f[14..]).unwrap();
        assert_eq!(ph.ip.src, Ipv4Addr::new(10, 0, 17, 1));
        assert_eq!(ph.udp.dst_port, 4791);
        assert_eq!(roce.len(), 32);
        let hdr: [u8; 28] = f[14..42].try_into().unwrap();
        assert_eq!(compute(&hdr, &roce[..28]).to_le_bytes(), [0x82, 0xfd, 0x00, 0x2a]);
        verify(&ph, roce).unwrap();
        // Variant fields do not matter: change TTL, TOS/ECN and BECN.
        let mut g = f.clone();
        g[15] = 0x03;
        g[22] = 1;
        g[42 + 4] = 0x80;
        let hdr: [u8; 28] = g[14..42].try_into().unwrap();
        assert_eq!(compute(&hdr, &g[42..70]), u32::from_le_bytes([0x82, 0xfd, 0x00, 0x2a]));
        // Invariant fields do: the DestQP and a payload byte.
        let mut g = f.clone();
        g[49] ^= 1;
        assert_eq!(verify(&ph, &g[42..]), Err(Error::Icrc));
        let mut g = f.clone();
        g[60] ^= 0x10;
        assert_eq!(verify(&ph, &g[42..]), Err(Error::Icrc));
    }

    /// Vector 2 of the anchors doc: UC SEND_ONLY built from its fields.
    #[test]
    fn vector2_uc_send_only() {
        let ph = PseudoHeader {
            ip: crate::ip::anchor_vector2_ipv4(),
            udp: udp::Repr { src_port: 49152, dst_port: 4791, payload_len: 36 },
        };
        let mut pkt = vec![0x24, 0x60, 0xff, 0xff, 0, 0, 0, 211, 0, 0, 0, 0];
        pkt[9..12].copy_from_slice(&13571856u32.to_be_bytes()[1..]);
        pkt.extend_from_slice(b"F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P\x00\x00");
        pkt.extend_from_slice(&[0; 4]);
        fill(&ph, &mut pkt);
        assert_eq!(&pkt[pkt.len() - 4..], &[0x78, 0xf3, 0x53, 0xf3]);
        verify(&ph, &pkt).unwrap();
        assert_eq!(verify(&ph, &pkt[..10]), Err(Error::Truncated("ICRC")));
    }
}
