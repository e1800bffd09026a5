//! Every command's input layout: `[u16 LE len][u32 LE outlen][input]`
//! records executed in order by a brought-up firmware (no transport).
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use vrnic_engine::mem::FlatMem;
use vrnic_mlx5::cmd::CommandHandler;

fuzz_target!(|data: &[u8]| {
    let mem = Arc::new(FlatMem::new(vrnic_fuzz::MEM));
    let mut fw = vrnic_fuzz::firmware(mem);
    for r in vrnic_fuzz::records(data) {
        if r.len() < 4 {
            continue;
        }
        // Output sizes the transport accepts: 8 bytes to 8 MiB.
        let outlen = (u32::from_le_bytes(r[..4].try_into().unwrap()) as usize).clamp(8, vrnic_mlx5::cmd::MAX_MSG);
        let o = fw.execute(&r[4..], outlen);
        assert!(o.out.len() >= 16 || o.status != 0, "short output");
    }
});
