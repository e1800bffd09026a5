//! What the fabric's tests share: a recording handler and packet builders.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{PacketHandler, RxMeta};
use vrnic_wire::bth::{self, Opcode};
use vrnic_wire::packet::{self, Headers};

/// Records what it receives.
#[derive(Default)]
pub(super) struct Rec(pub(super) Mutex<Vec<(RxMeta, Vec<u8>)>>);
impl PacketHandler for Rec {
    fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
        self.0.lock().unwrap().push((*meta, pkt.to_vec()));
    }
}

pub(super) fn send_only(dqp: u32, psn: u32, payload: &[u8]) -> Vec<u8> {
    let h = Headers::new(bth::Repr { opcode: Opcode(0x04), dest_qp: dqp, psn, ack_req: true, ..Default::default() });
    let mut v = Vec::new();
    packet::emit(&h, payload, &mut v).unwrap();
    v
}

pub(super) fn wait_for(cond: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}
