//! A frame from the link into an RQ (owner: eth-rx).

use std::sync::{Arc, Mutex};

use crate::fabric::ether::FrameHandler;
use crate::mlx5::firmware::Firmware;

/// The Ethernet link's frame handler: the firmware's RX path.
pub struct EthRx(pub Arc<Mutex<Firmware>>);

impl FrameHandler for EthRx {
    fn receive_frame(&self, frame: &[u8]) {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        guard.datapath().eth_receive(frame);
    }
}

impl Firmware {
    /// One received frame: steering, RQ, CQE (to be built; dropped for now).
    pub(in crate::mlx5) fn eth_receive(&mut self, _frame: &[u8]) {}
}
