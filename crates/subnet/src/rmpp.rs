//! The SA's RMPP sender (IBTA 13.6, as the kernel's ib_mad receiver in
//! mad_rmpp.c drives it): a GetTableResp larger than one MAD is cut into
//! 200-byte segments, each behind a copy of the 56-byte header; segment 1
//! goes out alone (window 1), and each ACK(segment, NewWindowLast) releases
//! the segments up to its window. The kernel ACKs segment 1 with window
//! 1 + (receive queue / 8), then each time its window fills, then the last
//! segment. STOP/ABORT end a transfer; [`RmppSender::tick`] resends an
//! unacknowledged window and gives a silent receiver up.

use super::source::MadSource;
use vrnic_wire::mad::{self, MAD_SIZE};
use vrnic_wire::rmpp::{self, Repr as RmppHeader};
use vrnic_wire::sa;

/// Transfers in flight at most (the oldest is dropped for a new one).
pub const MAX_TRANSFERS: usize = 16;
/// Ticks without progress before the window is resent.
pub const RESEND_AFTER_TICKS: u32 = 2;
/// Ticks without progress before the transfer is dropped.
pub const GIVE_UP_TICKS: u32 = 10;

#[derive(Debug)]
struct Transfer {
    dest: MadSource,
    tid: u64,
    /// Whole MADs, segment 1 first.
    segments: Vec<Vec<u8>>,
    last_ack: u32,
    window_last: u32,
    sent: u32,
    idle_ticks: u32,
}

impl Transfer {
    fn count(&self) -> u32 {
        self.segments.len() as u32
    }

    /// Sends what the window allows beyond what was sent.
    fn advance(&mut self) -> Vec<Vec<u8>> {
        let upto = self.window_last.min(self.count());
        let out = (self.sent + 1..=upto).map(|s| self.segments[s as usize - 1].clone()).collect();
        self.sent = self.sent.max(upto);
        out
    }
}

/// Cuts `data` (records) into RMPP DATA segments behind `header` (the
/// response's first 56 bytes; its RMPP header is overwritten).
pub fn segment(header: &[u8; sa::DATA_OFFSET], data: &[u8]) -> Vec<Vec<u8>> {
    let count = data.len().div_ceil(sa::DATA_LEN).max(1);
    let pad = (count * sa::DATA_LEN - data.len()) as u32;
    (0..count)
        .map(|i| {
            let mut m = vec![0u8; MAD_SIZE];
            m[..sa::DATA_OFFSET].copy_from_slice(header);
            let rh = RmppHeader::data(i as u32 + 1, count as u32, pad);
            rh.emit(&mut rmpp::Packet::new_unchecked(&mut m[mad::field::HEADER_LEN..]));
            let chunk = &data[(i * sa::DATA_LEN).min(data.len())..((i + 1) * sa::DATA_LEN).min(data.len())];
            m[sa::DATA_OFFSET..sa::DATA_OFFSET + chunk.len()].copy_from_slice(chunk);
            m
        })
        .collect()
}

/// A reply to an RMPP control MAD: the header echoed with the response bit
/// flipped (ib_mad's nack_recv), the given RMPP header.
fn control_reply(req: &[u8; MAD_SIZE], rh: RmppHeader) -> Vec<u8> {
    let mut m = vec![0u8; MAD_SIZE];
    m[..sa::DATA_OFFSET].copy_from_slice(&req[..sa::DATA_OFFSET]);
    m[mad::field::METHOD] ^= mad::METHOD_RESP;
    rh.emit(&mut rmpp::Packet::new_unchecked(&mut m[mad::field::HEADER_LEN..]));
    m
}

/// An ABORT answering `req` (any MAD with a full header).
pub fn abort_reply(req: &[u8; MAD_SIZE], status: u8) -> Vec<u8> {
    control_reply(req, RmppHeader::abort(status))
}

#[derive(Debug, Default)]
pub struct RmppSender {
    transfers: Vec<Transfer>,
}

impl RmppSender {
    pub fn new() -> RmppSender {
        RmppSender::default()
    }

    /// Transfers in flight.
    pub fn in_flight(&self) -> usize {
        self.transfers.len()
    }

    fn find(&self, dest: MadSource, tid: u64) -> Option<usize> {
        self.transfers.iter().position(|t| t.dest == dest && t.tid == tid)
    }

    /// Starts sending `segments` to `dest`: returns segment 1. A repeated
    /// request (same source and TID) restarts its transfer.
    pub fn start(&mut self, dest: MadSource, tid: u64, segments: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        if let Some(i) = self.find(dest, tid) {
            self.transfers.remove(i);
        }
        let mut t = Transfer { dest, tid, segments, last_ack: 0, window_last: 1, sent: 0, idle_ticks: 0 };
        let out = t.advance();
        if t.count() > 1 {
            if self.transfers.len() >= MAX_TRANSFERS {
                self.transfers.remove(0);
            }
            self.transfers.push(t);
        }
        out
    }

    /// An ACK from `src` (its RMPP header `rh`; `req` the whole MAD).
    /// Returns the segments it releases, or an ABORT for a bad ACK (as
    /// ib_mad's process_rmpp_ack checks them).
    pub fn on_ack(&mut self, src: MadSource, req: &[u8; MAD_SIZE], rh: &RmppHeader) -> Vec<Vec<u8>> {
        let tid = mad::Packet::new_unchecked(&req[..]).tid();
        let at = self.find(src, tid);
        let bad = |this: &mut RmppSender, status| {
            if let Some(i) = at {
                this.transfers.remove(i);
            }
            vec![abort_reply(req, status)]
        };
        if rh.status != rmpp::STATUS_NORMAL {
            return bad(self, rmpp::STATUS_BAD_STATUS);
        }
        if rh.paylen_newwin < rh.seg_num {
            return bad(self, rmpp::STATUS_W2S);
        }
        let Some(i) = at else {
            return Vec::new(); // an ACK of a one-MAD or finished transfer
        };
        let t = &mut self.transfers[i];
        if rh.seg_num > t.count() || rh.seg_num > t.window_last.max(t.sent) {
            return bad(self, rmpp::STATUS_S2B);
        }
        if rh.paylen_newwin < t.window_last || rh.seg_num < t.last_ack {
            return Vec::new(); // old ACK
        }
        if rh.seg_num > t.last_ack {
            t.last_ack = rh.seg_num;
            t.idle_ticks = 0;
        }
        t.window_last = rh.paylen_newwin;
        if t.last_ack == t.count() {
            self.transfers.remove(i);
            return Vec::new();
        }
        t.advance()
    }

    /// A STOP or ABORT from the receiver ends its transfer.
    pub fn cancel(&mut self, src: MadSource, tid: u64) {
        if let Some(i) = self.find(src, tid) {
            self.transfers.remove(i);
        }
    }

    /// Called about once a second: resends the unacknowledged part of a
    /// window that made no progress for [`RESEND_AFTER_TICKS`]; drops a
    /// transfer silent for [`GIVE_UP_TICKS`].
    pub fn tick(&mut self) -> Vec<(MadSource, Vec<u8>)> {
        let mut out = Vec::new();
        for t in &mut self.transfers {
            t.idle_ticks += 1;
            if t.idle_ticks >= RESEND_AFTER_TICKS && t.idle_ticks < GIVE_UP_TICKS {
                for s in t.last_ack + 1..=t.sent {
                    out.push((t.dest, t.segments[s as usize - 1].clone()));
                }
            }
        }
        self.transfers.retain(|t| t.idle_ticks < GIVE_UP_TICKS);
        out
    }
}
