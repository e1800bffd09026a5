//! Test helpers: a small subnet, SA request MADs, and a model of the
//! kernel's RMPP receiver (mad_rmpp.c) to reassemble GetTable answers.

use super::port::PortRecord;
use super::sa::{Sa, SaConfig};
use super::source::MadSource;
use super::Subnet;
use vrnic_wire::mad::{self, MAD_SIZE};
use vrnic_wire::rmpp::{self, Repr as RmppHeader};
use vrnic_wire::sa;

pub fn guid(lid: u16) -> u64 {
    0x0002_c903_0000_0000 | (lid as u64) << 4 | 1
}

pub fn port(lid: u16) -> PortRecord {
    PortRecord::new(lid, guid(lid), guid(lid) & !0xf)
}

/// An SA over ports with LIDs 1..=n (the SM at LID 1).
pub fn sa_with(n: u16) -> Sa {
    let mut s = Subnet::new(1);
    for l in 1..=n {
        s.add_port(port(l)).unwrap();
    }
    Sa::new(s, SaConfig::default())
}

pub fn from(lid: u16) -> MadSource {
    MadSource { lid, qpn: 1 }
}

pub const TID: u64 = 0x0000_0007_0000_0042;

/// A SubnAdm request MAD with `rec` as its data.
pub fn request(method: u8, attr: u16, comp_mask: u64, rec: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; MAD_SIZE];
    let h = mad::Repr {
        base_version: 1,
        mgmt_class: mad::MGMT_CLASS_SUBN_ADM,
        class_version: sa::CLASS_VERSION,
        method,
        tid: TID,
        attr_id: attr,
        ..mad::Repr::default()
    };
    h.emit(&mut mad::Packet::new_unchecked(&mut m[..]));
    m[24] = rmpp::VERSION;
    let sah = sa::Repr { sm_key: 0, attr_offset: 0, comp_mask };
    sah.emit(&mut sa::Packet::new_unchecked(&mut m[36..]));
    m[sa::DATA_OFFSET..sa::DATA_OFFSET + rec.len()].copy_from_slice(rec);
    m
}

pub fn hdr(m: &[u8]) -> mad::Repr {
    mad::Repr::parse(&mad::Packet::new_checked(m).unwrap()).unwrap()
}

pub fn rmpp_of(m: &[u8]) -> RmppHeader {
    RmppHeader::parse(&rmpp::Packet::new_checked(&m[24..]).unwrap()).unwrap()
}

pub fn sa_hdr(m: &[u8]) -> sa::Repr {
    sa::Repr::parse(&sa::Packet::new_checked(&m[36..]).unwrap()).unwrap()
}

/// The one answer to a single-MAD request.
pub fn one(out: Vec<Vec<u8>>) -> Vec<u8> {
    assert_eq!(out.len(), 1, "one answer");
    assert_eq!(out[0].len(), MAD_SIZE);
    out.into_iter().next().unwrap()
}

/// The kernel's RMPP receiver in front of `sa`: takes the first answer to a
/// GetTable, ACKs as mad_rmpp.c does (segment 1 with window 1 + `window`,
/// then each filled window, then the last segment) and returns the
/// reassembled records (`mad_len - 56` bytes, get_mad_len) and the number
/// of ACKs sent.
pub fn receive_table(sa: &mut Sa, first: Vec<Vec<u8>>, src: MadSource, window: u32) -> (Vec<u8>, u32) {
    let mut pending = first;
    let mut segs: Vec<Vec<u8>> = Vec::new();
    let mut newwin = 1u32;
    let mut acks = 0;
    loop {
        let mut next = Vec::new();
        for m in pending.drain(..) {
            let h = hdr(&m);
            assert_eq!(h.method, mad::METHOD_GET_TABLE_RESP);
            assert_eq!(h.status, 0);
            let r = rmpp_of(&m);
            assert!(r.is_active() && r.rmpp_type == rmpp::TYPE_DATA);
            assert_eq!(r.seg_num as usize, segs.len() + 1, "in order, no duplicates");
            assert!(r.seg_num <= newwin, "never beyond the window");
            if r.seg_num == 1 {
                assert!(r.flags & rmpp::FLAG_FIRST != 0);
            }
            let last = r.flags & rmpp::FLAG_LAST != 0;
            segs.push(m);
            let seg = segs.len() as u32;
            if last || seg == newwin {
                if !last {
                    newwin += window;
                }
                acks += 1;
                let mut ack = segs[0].clone();
                ack[3] ^= mad::METHOD_RESP;
                RmppHeader::ack(seg, newwin).emit(&mut rmpp::Packet::new_unchecked(&mut ack[24..]));
                next.extend(sa.handle(&ack, src));
                if last {
                    assert!(next.is_empty(), "nothing after the final ACK");
                    let pad = rmpp::SEGMENT_PAYLOAD as u32 - rmpp_of(segs.last().unwrap()).paylen_newwin;
                    let mut data: Vec<u8> = segs.iter().flat_map(|s| s[sa::DATA_OFFSET..].to_vec()).collect();
                    data.truncate(data.len() - pad as usize);
                    if segs.len() > 1 {
                        let total = rmpp_of(&segs[0]).paylen_newwin;
                        assert_eq!(total, segs.len() as u32 * 220 - pad, "first segment's PayloadLength");
                    }
                    return (data, acks);
                }
            }
        }
        assert!(!next.is_empty(), "the transfer stalled at segment {}", segs.len());
        pending = next;
    }
}
