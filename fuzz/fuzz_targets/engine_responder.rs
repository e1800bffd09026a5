//! The engine's receive path (responder and requester side) fed arbitrary
//! packets from the peer: `[u16 LE len][BTH..ICRC]` records.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = vrnic_fuzz::Responder::new();
    for p in vrnic_fuzz::records(data) {
        r.feed(p);
    }
});
