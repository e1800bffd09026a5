//! Checksum and segmentation offloads on Ethernet frames (owner: eth-wire):
//! what a NIC does to a frame on transmit (IPv4 header checksum, TCP/UDP
//! checksums, TCP and UDP segmentation) and checks on receive.
//!
//! API contract (the mlx5 Ethernet TX/RX paths are written against it):

use thiserror::Error;

use super::codec::{rd16, rd32, wr16, wr32};
use super::ether::{self, FrameInfo, Lengths, IPPROTO_TCP, IPPROTO_UDP, L3, L4};

/// A frame the offload cannot process.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OffloadError {
    #[error("no IPv4/IPv6 header to offload")]
    NotIp,
    #[error("no TCP/UDP header to offload")]
    NotL4,
    #[error("headers inconsistent with the frame")]
    Malformed,
    #[error("bad segment size")]
    BadMss,
}

/// One's-complement sum of `data` added to `initial` (not folded).
///
/// `data` is read as big-endian 16-bit words, an odd last byte padded with
/// zero; so sums of pieces chain only when every piece but the last has an
/// even length. Carries past 32 bits are folded back (end-around carry), so
/// the result is the same one's-complement sum whatever the length.
pub fn ones_sum(data: &[u8], initial: u32) -> u32 {
    let mut sum = u64::from(initial);
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum >> 32 != 0 {
        sum = (sum & 0xffff_ffff) + (sum >> 32);
    }
    sum as u32
}

/// Folds a sum to 16 bits (not inverted).
pub fn fold(sum: u32) -> u16 {
    let mut s = sum;
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Offset of the IPv4 header checksum in the header.
const IPV4_CSUM: usize = 10;
/// Offset of the checksum in the TCP header.
const TCP_CSUM: usize = 16;
/// Offset of the checksum in the UDP header.
const UDP_CSUM: usize = 6;
pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_PSH: u8 = 0x08;
pub const TCP_ACK: u8 = 0x10;
pub const TCP_CWR: u8 = 0x80;
/// The most segments one LSO super-frame may produce (Linux `GSO_MAX_SEGS`).
pub const MAX_SEGMENTS: usize = 65535;

/// The pseudo-header sum of an L4 segment of `l4_len` bytes.
fn pseudo_sum(l3: &L3, l4_len: usize) -> u32 {
    match *l3 {
        L3::Ipv4 { src, dst, protocol, .. } => {
            let s = ones_sum(&dst, ones_sum(&src, 0));
            s + u32::from(protocol) + (l4_len as u32 & 0xffff)
        }
        L3::Ipv6 { src, dst, next_header, .. } => {
            let s = ones_sum(&dst, ones_sum(&src, 0));
            ones_sum(&(l4_len as u32).to_be_bytes(), s) + u32::from(next_header)
        }
        L3::None => 0,
    }
}

/// The frame's L4 segment (`l4_offset` to the end of the L3 packet) and
/// where its checksum field is, when the frame has a whole, unfragmented
/// TCP/UDP segment; the error says why not.
fn l4_range(frame: &[u8], info: &FrameInfo) -> Result<(usize, usize, usize), OffloadError> {
    let (l4_hdr, csum) = match info.l4 {
        L4::Tcp { header_len, .. } => (header_len, TCP_CSUM),
        L4::Udp { .. } => (8, UDP_CSUM),
        L4::None => {
            let protocol = match info.l3 {
                L3::Ipv4 { protocol, frag: false, .. } => protocol,
                L3::Ipv6 { next_header, .. } => next_header,
                _ => return Err(OffloadError::NotL4),
            };
            return Err(match protocol {
                IPPROTO_TCP | IPPROTO_UDP => OffloadError::Malformed,
                _ => OffloadError::NotL4,
            });
        }
    };
    if let L3::Ipv4 { frag: true, .. } = info.l3 {
        // A fragment's checksum covers the whole datagram: not computable here.
        return Err(OffloadError::NotL4);
    }
    let start = info.l4_offset;
    let end = info.l3_end().ok_or(OffloadError::NotIp)?;
    if start.saturating_add(l4_hdr) > end || end > frame.len() {
        return Err(OffloadError::Malformed);
    }
    Ok((start, end, start + csum))
}

/// `frame` has no IP header: `NotIp`, or `Malformed` when its EtherType says IP.
fn no_ip(info: &FrameInfo) -> OffloadError {
    match info.ethertype {
        ether::ETHERTYPE_IPV4 | ether::ETHERTYPE_IPV6 => OffloadError::Malformed,
        _ => OffloadError::NotIp,
    }
}

/// Transmit checksum offload in place: `l3` rewrites the IPv4 header
/// checksum, `l4` the TCP/UDP checksum over pseudo-header and segment
/// (whatever the field held; UDP 0 becomes 0xffff).
///
/// The L4 segment runs to the end of the L3 packet as the IP header gives it
/// (IPv4 `total_len`, IPv6 40 + `payload_len`), so Ethernet padding is not
/// summed. `l3` on IPv6 has nothing to do. Neither flag: nothing is checked.
/// A fragment (IPv4 MF or offset) has no L4 checksum to compute: `NotL4`.
pub fn fill_checksums(frame: &mut [u8], l3: bool, l4: bool) -> Result<(), OffloadError> {
    if !l3 && !l4 {
        return Ok(());
    }
    let info = ether::parse(frame).map_err(|_| OffloadError::NotIp)?;
    if info.l3 == L3::None {
        return Err(no_ip(&info));
    }
    // Validate the L4 side before writing anything.
    let l4_at = if l4 { Some(l4_range(frame, &info)?) } else { None };
    if let (true, L3::Ipv4 { header_len, .. }) = (l3, info.l3) {
        let h = info.l3_offset;
        wr16(frame, h + IPV4_CSUM, 0);
        let c = !fold(ones_sum(&frame[h..h + header_len], 0));
        wr16(frame, h + IPV4_CSUM, c);
    }
    if let Some((start, end, csum_at)) = l4_at {
        wr16(frame, csum_at, 0);
        let sum = ones_sum(&frame[start..end], pseudo_sum(&info.l3, end - start));
        let mut c = !fold(sum);
        if c == 0 && matches!(info.l4, L4::Udp { .. }) {
            c = 0xffff;
        }
        wr16(frame, csum_at, c);
    }
    Ok(())
}

/// LSO: `frame` is headers (`header_len` bytes: L2 through TCP, or through
/// the UDP header for UDP GSO) followed by the payload; returns the frames of
/// `ceil(payload / mss)` segments with IPv4 total length/ID+i/checksum, IPv6
/// payload length, TCP sequence/flags (FIN, PSH on the last; CWR on the
/// first) or UDP length, and L4 checksums fixed up.
///
/// The length fields of the super-frame's headers are ignored (they may hold
/// the super-frame's length, or 0 for BIG TCP). An empty payload gives one
/// frame of headers. `mss == 0`, more than [`MAX_SEGMENTS`] segments, or a
/// segment too long for its IP length field: `BadMss`; `header_len` not
/// ending exactly at the end of the TCP/UDP header, or an IPv4 fragment:
/// `Malformed`. Frames are not padded to the Ethernet minimum.
pub fn segment(frame: &[u8], header_len: usize, mss: u16) -> Result<Vec<Vec<u8>>, OffloadError> {
    if mss == 0 {
        return Err(OffloadError::BadMss);
    }
    let hdrs = frame.get(..header_len).ok_or(OffloadError::Malformed)?;
    let info = ether::walk(hdrs, Lengths::FromFrame).map_err(|_| OffloadError::Malformed)?;
    if info.l3 == L3::None {
        return Err(no_ip(&info));
    }
    if let L3::Ipv4 { frag: true, .. } = info.l3 {
        return Err(OffloadError::Malformed);
    }
    if info.l4 == L4::None {
        return Err(match info.l3 {
            L3::Ipv4 { protocol: IPPROTO_TCP | IPPROTO_UDP, .. }
            | L3::Ipv6 { next_header: IPPROTO_TCP | IPPROTO_UDP, .. } => OffloadError::Malformed,
            _ => OffloadError::NotL4,
        });
    }
    if info.l4_offset + info.l4_header_len() != header_len {
        return Err(OffloadError::Malformed);
    }
    let payload = &frame[header_len..];
    let mss = usize::from(mss);
    let count = payload.len().div_ceil(mss).max(1);
    if count > MAX_SEGMENTS {
        return Err(OffloadError::BadMss);
    }
    let l3 = info.l3_offset;
    let l4 = info.l4_offset;
    let l3_hdr_to_payload = header_len - l3;
    let longest = mss.min(payload.len());
    let ip_len_field = |seg: usize| match info.l3 {
        L3::Ipv6 { .. } => l3_hdr_to_payload + seg - 40,
        _ => l3_hdr_to_payload + seg,
    };
    if ip_len_field(longest) > 0xffff {
        return Err(OffloadError::BadMss);
    }
    let ip_id = rd16(hdrs, l3 + 4);
    let seq = rd32(hdrs, l4 + 4);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let start = i * mss;
        let chunk = &payload[start..(start + mss).min(payload.len())];
        let mut f = Vec::with_capacity(header_len + chunk.len());
        f.extend_from_slice(hdrs);
        f.extend_from_slice(chunk);
        match info.l3 {
            L3::Ipv4 { .. } => {
                wr16(&mut f, l3 + 2, ip_len_field(chunk.len()) as u16);
                wr16(&mut f, l3 + 4, ip_id.wrapping_add(i as u16));
            }
            _ => wr16(&mut f, l3 + 4, ip_len_field(chunk.len()) as u16),
        }
        match info.l4 {
            L4::Tcp { flags, .. } => {
                wr32(&mut f, l4 + 4, seq.wrapping_add(start as u32));
                let mut flags = flags;
                if i + 1 != count {
                    flags &= !(TCP_FIN | TCP_PSH);
                }
                if i != 0 {
                    flags &= !TCP_CWR;
                }
                f[l4 + 13] = flags;
            }
            _ => wr16(&mut f, l4 + 4, (8 + chunk.len()) as u16),
        }
        fill_checksums(&mut f, true, true)?;
        out.push(f);
    }
    Ok(out)
}
/// What the receive side checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxChecksum {
    /// One's-complement sum (folded, not inverted) from the L3 header to the
    /// end of the L3 packet (no padding): the mlx5 CQE `check_sum`.
    pub sum: u16,
    /// The IPv4 header checksum verified (IPv6: always true).
    pub l3_ok: bool,
    /// The TCP/UDP checksum verified (UDP checksum 0 over IPv4 counts as ok,
    /// over IPv6 as bad); false without a whole unfragmented TCP/UDP segment.
    pub l4_ok: bool,
}

/// Receive checksum verification of a parsed frame.
///
/// `sum` covers `l3_offset` to the end of the L3 packet (the whole rest of
/// the frame when there is no IP header), clipped to the frame: the CQE
/// writes it big-endian. `info` should be `parse(frame)`; one that does not
/// match the frame gives false checks, never a panic.
pub fn rx_checksum(frame: &[u8], info: &FrameInfo) -> RxChecksum {
    let l3_start = info.l3_offset.min(frame.len());
    let l3_end = info.l3_end().unwrap_or(frame.len()).clamp(l3_start, frame.len());
    let sum = fold(ones_sum(&frame[l3_start..l3_end], 0));
    let l3_ok = match info.l3 {
        L3::Ipv4 { header_len, .. } => {
            frame.get(l3_start..l3_start.saturating_add(header_len)).is_some_and(|h| fold(ones_sum(h, 0)) == 0xffff)
        }
        L3::Ipv6 { .. } => true,
        L3::None => false,
    };
    let l4_ok = match l4_range(frame, info) {
        Ok((start, end, csum_at)) => {
            let verified = || fold(ones_sum(&frame[start..end], pseudo_sum(&info.l3, end - start))) == 0xffff;
            match (info.l3, info.l4, rd16(frame, csum_at)) {
                // UDP checksum 0: none sent (IPv4), invalid (IPv6, RFC 8200 §8.1).
                (L3::Ipv4 { .. }, L4::Udp { .. }, 0) => true,
                (_, L4::Udp { .. }, 0) => false,
                _ => verified(),
            }
        }
        Err(_) => false,
    };
    RxChecksum { sum, l3_ok, l4_ok }
}

/// The Toeplitz hash of `input` with a 40-byte key (Microsoft RSS).
///
/// For each set bit of `input` (most significant first) the hash takes the
/// XOR of the 32 key bits starting at that bit position; key bits past the
/// 320th read as zero (inputs over 36 bytes).
pub fn toeplitz(key: &[u8; 40], input: &[u8]) -> u32 {
    let key_bit = |n: usize| key.get(n / 8).map_or(0, |b| u32::from(b >> (7 - n % 8)) & 1);
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    let mut hash = 0;
    for (i, byte) in input.iter().enumerate() {
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                hash ^= window;
            }
            window = (window << 1) | key_bit(32 + i * 8 + bit);
        }
    }
    hash
}

#[cfg(test)]
#[path = "offload_tests.rs"]
mod tests;
