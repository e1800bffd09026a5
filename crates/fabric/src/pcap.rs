//! A pcap (libpcap 2.4, Ethernet link type) writer for RoCEv2 traffic: each
//! packet becomes an Ethernet/IPv4/UDP frame around the RoCE bytes as they
//! travelled, ICRC included, so `tshark -r FILE` decodes BTH and friends.
//! A packet with a GRH becomes an Ethernet/IPv6/UDP frame (RoCEv2 over IPv6).
//! An Ethernet link's frames are written as they are ([`PcapWriter::write_ether`]).

use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::time::{SystemTime, UNIX_EPOCH};

use vrnic_wire::ip::PseudoHeader;

const LINKTYPE_ETHERNET: u32 = 1;
const SNAPLEN: u32 = 65_535;

/// A locally administered MAC derived from an IPv4 address: 02:00:a:b:c:d.
pub fn mac_for(ip: Ipv4Addr) -> [u8; 6] {
    let o = ip.octets();
    [0x02, 0x00, o[0], o[1], o[2], o[3]]
}

/// Default cap on a capture file: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Writes frames until the file would exceed its byte cap, then drops (and
/// counts) every further frame, so a long run cannot fill the disk.
pub struct PcapWriter<W: Write> {
    w: W,
    frame: Vec<u8>,
    written: u64,
    max_bytes: u64,
    dropped: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header; the file may grow to [`DEFAULT_MAX_BYTES`].
    pub fn new(w: W) -> io::Result<PcapWriter<W>> {
        Self::with_limit(w, DEFAULT_MAX_BYTES)
    }

    /// Writes the global header; frames that would take the file past
    /// `max_bytes` (header included) are dropped.
    pub fn with_limit(mut w: W, max_bytes: u64) -> io::Result<PcapWriter<W>> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        h.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        h.extend_from_slice(&SNAPLEN.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        w.write_all(&h)?;
        Ok(PcapWriter { w, frame: Vec::with_capacity(9000), written: h.len() as u64, max_bytes, dropped: 0 })
    }

    /// Appends one frame: Ethernet + `ph` + `roce` (BTH through ICRC), stamped
    /// now. `Ok(false)`: the frame was dropped because of the size cap.
    pub fn write_roce(&mut self, ph: &PseudoHeader, roce: &[u8]) -> io::Result<bool> {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        self.write_roce_at(t.as_secs() as u32, t.subsec_micros(), ph, roce)
    }

    pub fn write_roce_at(&mut self, secs: u32, usecs: u32, ph: &PseudoHeader, roce: &[u8]) -> io::Result<bool> {
        let mut h = [0u8; PseudoHeader::LEN];
        ph.emit(&mut h);
        self.write_frame_at(secs, usecs, (mac_for(ph.ip.src), mac_for(ph.ip.dst)), 0x0800, &h, roce)
    }

    /// Appends one RoCEv2-over-IPv6 frame: Ethernet + the 48 IPv6/UDP
    /// header bytes `ip6_udp` + `roce`, stamped now (see [`vrnic_wire::grh`]).
    pub fn write_roce6(&mut self, ip6_udp: &[u8; vrnic_wire::grh::IPV6_UDP_LEN], roce: &[u8]) -> io::Result<bool> {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let mac = |g: &[u8]| [0x02, 0x00, g[12], g[13], g[14], g[15]];
        let macs = (mac(&ip6_udp[8..24]), mac(&ip6_udp[24..40]));
        self.write_frame_at(t.as_secs() as u32, t.subsec_micros(), macs, 0x86dd, ip6_udp, roce)
    }

    /// Appends one whole Ethernet frame (an Ethernet link's traffic, no
    /// FCS) as it is, stamped now.
    pub fn write_ether(&mut self, frame: &[u8]) -> io::Result<bool> {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        self.write_ether_at(t.as_secs() as u32, t.subsec_micros(), frame)
    }

    pub fn write_ether_at(&mut self, secs: u32, usecs: u32, frame: &[u8]) -> io::Result<bool> {
        let need = 16 + frame.len() as u64;
        if self.written.saturating_add(need) > self.max_bytes {
            self.dropped += 1;
            return Ok(false);
        }
        self.record(secs, usecs, frame)
    }

    /// One frame: Ethernet (`macs`: source, destination) + `net` + `roce`.
    fn write_frame_at(
        &mut self,
        secs: u32,
        usecs: u32,
        macs: ([u8; 6], [u8; 6]),
        ethertype: u16,
        net: &[u8],
        roce: &[u8],
    ) -> io::Result<bool> {
        let need = 16 + 14 + net.len() as u64 + roce.len() as u64;
        if self.written.saturating_add(need) > self.max_bytes {
            self.dropped += 1;
            return Ok(false);
        }
        let f = &mut self.frame;
        f.clear();
        f.extend_from_slice(&macs.1);
        f.extend_from_slice(&macs.0);
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(net);
        f.extend_from_slice(roce);
        let f = std::mem::take(&mut self.frame);
        let r = self.record(secs, usecs, &f);
        self.frame = f;
        r
    }

    /// One record: its header and the frame (cut at the snap length).
    fn record(&mut self, secs: u32, usecs: u32, f: &[u8]) -> io::Result<bool> {
        let len = f.len() as u32;
        let cap = len.min(SNAPLEN);
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&secs.to_le_bytes());
        rec[4..8].copy_from_slice(&usecs.to_le_bytes());
        rec[8..12].copy_from_slice(&cap.to_le_bytes());
        rec[12..16].copy_from_slice(&len.to_le_bytes());
        self.w.write_all(&rec)?;
        self.w.write_all(&f[..cap as usize])?;
        self.written += 16 + u64::from(cap);
        Ok(true)
    }

    /// Bytes in the file so far (global header included).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Frames dropped because of the size cap.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    pub fn into_inner(self) -> W {
        self.w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vrnic_wire::{icrc, ip::PseudoHeader, packet};

    /// Byte-level check of the file layout; decoding by tshark is tested in
    /// the fabric tests (when tshark is installed).
    #[test]
    fn file_layout() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let mut roce = Vec::new();
        packet::emit(&packet::cnp_headers(0x118), &[], &mut roce).unwrap();
        let ph = PseudoHeader::canonical(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 0x118, roce.len());
        icrc::fill(&ph, &mut roce);
        w.write_roce_at(1, 2, &ph, &roce).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 1);
        let frame_len = u32::from_le_bytes(b[32..36].try_into().unwrap()) as usize;
        assert_eq!(frame_len, 14 + 28 + 32);
        assert_eq!(b.len(), 24 + 16 + frame_len);
        let frame = &b[40..];
        assert_eq!(&frame[0..6], &[2, 0, 10, 0, 0, 2]);
        assert_eq!(&frame[12..14], &[0x08, 0x00]);
        // The frame's own headers validate the ICRC it carries.
        let (ph2, payload) = PseudoHeader::parse(&frame[14..]).unwrap();
        assert_eq!(ph2, ph);
        icrc::verify(&ph2, payload).unwrap();
    }

    /// Past its byte cap the writer drops whole frames, counts them, and the
    /// file stays a valid capture no larger than the cap.
    #[test]
    fn size_cap_drops_frames_and_counts_them() {
        let mut roce = Vec::new();
        packet::emit(&packet::cnp_headers(0x118), &[], &mut roce).unwrap();
        let ph = PseudoHeader::canonical(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 0x118, roce.len());
        icrc::fill(&ph, &mut roce);
        let record = 16 + 14 + 28 + roce.len();
        let cap = 24 + 3 * record + record / 2;
        let mut w = PcapWriter::with_limit(Vec::new(), cap as u64).unwrap();
        let kept: Vec<bool> = (0..10).map(|i| w.write_roce_at(i, 0, &ph, &roce).unwrap()).collect();
        assert_eq!(kept.iter().filter(|&&k| k).count(), 3);
        assert!(kept[..3].iter().all(|&k| k) && kept[3..].iter().all(|&k| !k));
        assert_eq!(w.dropped(), 7);
        assert_eq!(w.written(), (24 + 3 * record) as u64);
        let b = w.into_inner();
        assert_eq!(b.len(), 24 + 3 * record);
        assert!(b.len() <= cap);
        // Every record is whole: the last one's header announces what follows.
        let last = 24 + 2 * record;
        assert_eq!(u32::from_le_bytes(b[last + 8..last + 12].try_into().unwrap()) as usize, record - 16);
    }
}
