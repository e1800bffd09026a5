//! The command transport: the input is the guest memory (command queue at
//! 0, mailbox chains anywhere in it); every slot is run through `run_slot`
//! with the real firmware, as a `cmd_dbell` write of all ones would.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use vrnic_engine::mem::FlatMem;
use vrnic_mlx5::cmd;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    bytes.resize(bytes.len().max(4096), 0);
    let mem = Arc::new(FlatMem::from_bytes(bytes));
    let mut fw = vrnic_fuzz::firmware(mem.clone());
    for slot in 0..cmd::NUM_SLOTS {
        let _ = cmd::run_slot(&*mem, 0, slot, &mut fw);
    }
    let _ = fw.doorbell(0, u32::MAX);
});
