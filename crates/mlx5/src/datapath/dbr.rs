//! Doorbell records: the big-endian counters a driver keeps in host memory
//! for each queue (RQ/SQ producer counters, the CQ consumer index and arm
//! word), read by the device as copies.

use vrnic_engine::GuestMemory;

/// The big-endian 32-bit word at guest address `a` (None: outside guest memory).
pub(crate) fn be32_at(mem: &dyn GuestMemory, a: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    mem.read(a, &mut b).ok()?;
    Some(u32::from_be_bytes(b))
}
