//! A UDP link's send batch: datagrams gathered while a thread batches
//! (see `UdpShared::batched`), planned into GSO runs and sent with one
//! `sendmmsg` ([`vrnic_sys::net::MmsgBatch`]).

use std::net::{SocketAddr, UdpSocket};

use super::buf::BufPool;
use super::counters::{bump, PortCounters};
use vrnic_sys::net::MmsgBatch;

/// Datagrams waiting for one `sendmmsg`, with the scratch it needs.
/// Consecutive datagrams to one peer of one size (the last may be shorter)
/// go as one GSO message (`UDP_SEGMENT`): the kernel's UDP/IP path is then
/// crossed once for the run, and a receiver with GRO gets it in one read.
pub(super) struct TxQueue {
    pub(super) pkts: Vec<(SocketAddr, Vec<u8>)>,
    /// Per message: its first datagram and how many it carries.
    pub(super) msgs: Vec<(usize, usize)>,
    pub(super) batch: MmsgBatch,
    /// GSO only for segments below this size (a path whose MTU refused a
    /// GSO segment lowers it; the datagrams then go one by one).
    pub(super) gso_below: usize,
}

impl Default for TxQueue {
    fn default() -> TxQueue {
        TxQueue { pkts: Vec::new(), msgs: Vec::new(), batch: MmsgBatch::default(), gso_below: usize::MAX }
    }
}

/// Most datagrams and bytes one GSO message carries.
const GSO_MAX_SEGS: usize = 64;
const GSO_MAX_BYTES: usize = 65000;

impl TxQueue {
    pub(super) fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.pkts.len()
    }

    pub(super) fn push(&mut self, addr: SocketAddr, bytes: Vec<u8>) {
        self.pkts.push((addr, bytes));
    }

    /// Splits the queue into messages: GSO runs and single datagrams.
    pub(super) fn plan(&mut self) {
        self.msgs.clear();
        let n = self.pkts.len();
        let mut i = 0;
        while i < n {
            let (addr, seg) = (self.pkts[i].0, self.pkts[i].1.len());
            let mut j = i + 1;
            let mut bytes = seg;
            if seg > 0 && seg < self.gso_below {
                while j < n && j - i < GSO_MAX_SEGS && self.pkts[j].0 == addr {
                    let l = self.pkts[j].1.len();
                    if l == 0 || l > seg || bytes + l > GSO_MAX_BYTES {
                        break;
                    }
                    bytes += l;
                    j += 1;
                    if l < seg {
                        break; // a shorter one ends the run
                    }
                }
            }
            self.msgs.push((i, j - i));
            i = j;
        }
    }

    /// Sends everything queued, in order, and recycles the buffers.
    pub(super) fn send(&mut self, sock: &UdpSocket, c: &PortCounters, spare: &BufPool) {
        self.plan();
        let TxQueue { pkts, msgs, batch, gso_below } = self;
        batch.send(sock, pkts, msgs, &mut |m, r| {
            bump(&c.tx_socket_calls, 1);
            match r {
                Ok(sent) => {
                    let datagrams: usize = msgs[m..m + sent].iter().map(|m| m.1).sum();
                    bump(&c.tx_socket_datagrams, datagrams as u64);
                }
                Err(err) => {
                    let (first, count) = msgs[m];
                    if count > 1 && err.raw_os_error() == Some(libc::EINVAL) {
                        // The path refused this segment size (MTU) for GSO:
                        // these go one by one, and so will runs this size or
                        // larger.
                        *gso_below = (*gso_below).min(pkts[first].1.len());
                        for (addr, bytes) in &pkts[first..first + count] {
                            bump(&c.tx_socket_calls, 1);
                            match sock.send_to(bytes, addr) {
                                Ok(_) => bump(&c.tx_socket_datagrams, 1),
                                Err(_) => bump(&c.tx_errors, 1),
                            }
                        }
                    } else {
                        // The message failed (full buffer, unreachable peer):
                        // lost, as with sendto; the engine retransmits.
                        bump(&c.tx_errors, count as u64);
                    }
                }
            }
        });
        for (_, b) in pkts.drain(..) {
            spare.give(b);
        }
    }
}
