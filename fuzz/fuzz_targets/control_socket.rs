//! The control socket's command lines (`vrnic::control::ControlHandles::execute`: `raise`, `link`, `cc`,
//! `stats`, `qps`, `help`), fed as the socket's reader splits them (`BufRead::lines`, blank lines skipped, the
//! connection ends at bytes that are not UTF-8), against handles with everything present: an InfiniBand
//! firmware with its fabric counters and IB stage (SM roles), or an Ethernet firmware with RoCE congestion
//! control and link counters, or none (the first byte picks). Every reply is one line (`ok ...`, `err ...`, or
//! the `stats` or `qps` JSON object, which must parse).
#![no_main]
use std::io::BufRead;
use std::sync::{Arc, Mutex};

use libfuzzer_sys::fuzz_target;
use vrnic::control::ControlHandles;
use vrnic_cc::{CcConfig, CcControl};
use vrnic_engine::mem::FlatMem;
use vrnic_engine::Limits;
use vrnic_fabric::roce::RoceGids;
use vrnic_mlx5::builder::{FabricIo, FirmwareBuilder};
use vrnic_mlx5::ib::port::PortConfig;
use vrnic_mlx5::link::LinkLayer;
use vrnic_subnet::sm_role::SmTiming;
use vrnic_subnet::{IbStage, PortRecord, SmMode, StageConfig};
use vrnic_vfio::{DmaSpace, Interrupts};

fn handles(kind: u8) -> ControlHandles {
    let irqs = Arc::new(Interrupts::new(64));
    let link = if kind & 1 == 0 { LinkLayer::Ib } else { LinkLayer::Eth };
    let cc = CcControl::new(CcConfig::connectx_default());
    let b = FirmwareBuilder::new(
        Arc::new(FlatMem::new(1 << 16)),
        irqs.clone(),
        PortConfig::new(1, 2, 3, 0x1017),
        Limits::default(),
    )
    .link(link);
    let b = match link {
        LinkLayer::Ib => b.fabric(FabricIo { io: Default::default(), waker: None, counters: Some(Arc::default()) }),
        LinkLayer::Eth => b.roce(Arc::new(RoceGids::new(4)), Arc::default()).cc(cc.clone()),
    };
    let fw = b.build().expect("command table");
    let stage = IbStage::new(StageConfig {
        own: PortRecord::derived(1),
        peers: vec![2],
        switch_lid: None,
        sm: SmMode::Roles { priority: 0, timing: SmTiming::default() },
    });
    let full = kind & 2 == 0;
    ControlHandles {
        irqs,
        dma: Arc::new(DmaSpace::default()),
        server: Arc::default(),
        device: Arc::default(),
        doorbells: Arc::default(),
        poller: full.then(Arc::default),
        fw: full.then(|| Arc::new(Mutex::new(fw))),
        qos: Arc::default(),
        eth_link: (full && link == LinkLayer::Eth).then(Arc::default),
        cc: (full && link == LinkLayer::Eth).then_some(cc),
        subnet: (full && link == LinkLayer::Ib).then(|| Arc::new(stage)),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, bytes)) = data.split_first() else { return };
    let h = handles(kind);
    // As `control::serve` reads a connection.
    for line in bytes.lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let reply = h.execute(&line);
        assert!(!reply.contains('\n'), "one reply line: {reply:?}");
        if reply.starts_with('{') {
            serde_json::from_str::<serde_json::Value>(&reply).expect("stats is JSON");
        } else {
            assert!(reply.starts_with("ok") || reply.starts_with("err "), "{reply:?}");
        }
    }
});
