//! Send/receive WQE decoding: arbitrary bytes as a WQE (up to 16 WQEBBs),
//! also as an Ethernet send WQE.
#![no_main]
use libfuzzer_sys::fuzz_target;
use vrnic_mlx5::datapath::wqe;

fuzz_target!(|data: &[u8]| {
    if data.len() >= 16 {
        let c = wqe::CtrlSeg::parse(data[..16].try_into().unwrap());
        let _ = (c.wqebbs(), c.signaled(), c.solicited());
        let _ = vrnic_mlx5::eth::eth_seg::parse(data, &c);
    }
    let _ = wqe::parse_send(data, false);
    let _ = wqe::parse_send(data, true);
    let _ = wqe::parse_ud_send(data);
    let _ = wqe::parse_recv(data);
    let _ = wqe::parse_payload(data);
    let _ = wqe::DatagramSeg::parse(data);
});
