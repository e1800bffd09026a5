//! Control socket tests: the commands, and that `stats` carries every field
//! of every counter struct at the path the harness and docs read.

use super::*;
use vmm_sys_util::eventfd::EventFd;
use vrnic_vfio::protocol::vfio::*;

#[test]
fn raise_and_stats() {
    let h = ControlHandles {
        irqs: Arc::new(Interrupts::new(64)),
        dma: Arc::new(DmaSpace::default()),
        server: Arc::default(),
        device: Arc::default(),
        doorbells: Arc::default(),
        poller: None,
        fw: None,
        qos: Arc::default(),
        eth_link: None,
        cc: None,
        subnet: None,
    };
    assert_eq!(h.execute("raise 1"), "ok pending");
    let e = EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK).unwrap();
    h.irqs
        .set_irqs(
            VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
            VFIO_PCI_MSIX_IRQ_INDEX,
            2,
            1,
            vec![e.try_clone().unwrap()],
            &[],
        )
        .unwrap();
    assert_eq!(h.execute("raise 2"), "ok delivered");
    assert_eq!(e.read().unwrap_or(0), 1);
    assert!(h.execute("raise 64").starts_with("err"));
    assert!(h.execute("raise x").starts_with("err"));
    assert!(h.execute("bogus").starts_with("err"));
    assert_eq!(h.execute("link down"), "err no firmware");
    assert_eq!(h.execute("cc off"), "err no RoCE port");
    let s: serde_json::Value = serde_json::from_str(&h.execute("stats")).unwrap();
    assert_eq!(s["irq"]["raised"], 2);
    assert_eq!(s["irq"]["delivered"], 1, "vector 1 has no eventfd and stays pending");
}

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;

use serde_json::Value;

use vrnic_engine::mem::FlatMem;
use vrnic_engine::Limits;
use vrnic_mlx5::ib::port::PortConfig;
use vrnic_mlx5::link::LinkLayer;

/// Handles with everything present: firmware (an InfiniBand port with a
/// fabric, or an Ethernet port with RoCE), a poller, an Ethernet link, an IB stage.
fn full_handles(link: LinkLayer) -> (ControlHandles, Arc<vrnic_fabric::PortCounters>) {
    let irqs = Arc::new(Interrupts::new(64));
    let wire = Arc::new(vrnic_fabric::PortCounters::default());
    let cc = vrnic_cc::CcControl::new(vrnic_cc::CcConfig::connectx_default());
    let b = vrnic_mlx5::builder::FirmwareBuilder::new(
        Arc::new(FlatMem::new(1 << 20)),
        irqs.clone(),
        PortConfig::new(1, 2, 3, 0x1017),
        Limits::default(),
    )
    .link(link);
    let b = match link {
        LinkLayer::Ib => b.fabric(vrnic_mlx5::builder::FabricIo {
            io: Default::default(),
            waker: None,
            counters: Some(wire.clone()),
        }),
        LinkLayer::Eth => b.roce(Arc::new(vrnic_fabric::roce::RoceGids::new(4)), Arc::default()).cc(cc.clone()),
    };
    let fw = b.build().unwrap();
    // An IB stage with SM roles whose master (LID 1) runs the SA.
    let stage = vrnic_subnet::IbStage::new(vrnic_subnet::StageConfig {
        own: vrnic_subnet::PortRecord::derived(1),
        peers: vec![2],
        switch_lid: None,
        sm: vrnic_subnet::SmMode::Roles { priority: 0, timing: Default::default() },
    });
    let h = ControlHandles {
        irqs,
        dma: Arc::new(DmaSpace::default()),
        server: Arc::default(),
        device: Arc::default(),
        doorbells: Arc::default(),
        poller: Some(Arc::default()),
        fw: Some(Arc::new(Mutex::new(fw))),
        qos: Arc::default(),
        eth_link: Some(Arc::default()),
        cc: Some(cc),
        subnet: Some(Arc::new(stage)),
    };
    (h, wire)
}

#[test]
fn cc_on_off_flips_both_nodes_on_every_priority_and_keeps_the_parameters() {
    use vrnic_cc::CcConfig;
    let (h, _) = full_handles(LinkLayer::Eth);
    let cc = h.cc.clone().unwrap();
    assert_eq!(h.execute("cc"), "ok cc rp=0xff np=0xff");
    let mut c = cc.config();
    c.rp.rpg_ai_rate = 17;
    cc.set_config(c);
    let g = cc.generation();
    assert_eq!(h.execute("cc off"), "ok cc off");
    assert_eq!(cc.config(), CcConfig { rp_enabled: 0, np_enabled: 0, ..c });
    assert_ne!(cc.generation(), g, "the data path sees the change");
    assert_eq!(h.execute("cc"), "ok cc rp=0x00 np=0x00");
    assert_eq!(h.execute("cc on"), "ok cc on");
    assert_eq!(cc.config(), c);
    assert!(h.execute("cc maybe").starts_with("err unknown command"));
    assert!(h.execute("help").contains("cc [on|off]"));
    // stats: firmware.roce.congestion, the masks and the counters QUERY_CONG_STATISTICS reads.
    cc.count(vrnic_cc::CcCounter::NpCnpSent, 3);
    assert_eq!(h.execute("cc off"), "ok cc off");
    let s: Value = serde_json::from_str(&h.execute("stats")).unwrap();
    let t = &s["firmware"]["roce"]["congestion"];
    assert_eq!((t["np_cnp_sent"].as_u64(), t["rp_cnp_handled"].as_u64()), (Some(3), Some(0)));
    assert_eq!((t["rp_enabled"].as_u64(), t["np_enabled"].as_u64()), (Some(0), Some(0)));
}

/// Every counter struct of the crate: its name, where `stats` puts it, and
/// the struct serialized on its own.
fn counter_structs(
    h: &ControlHandles,
    wire: &vrnic_fabric::PortCounters,
) -> Vec<(&'static str, &'static [&'static str], Value)> {
    fn v<T: serde::Serialize>(t: &T) -> Value {
        serde_json::to_value(t).unwrap()
    }
    let fw = h.fw.as_ref().unwrap().lock().unwrap();
    let mut out: Vec<(&'static str, &'static [&'static str], Value)> = vec![
        ("FwStats", &["firmware"][..], v(&**fw.stats())),
        ("FwPortCounters", &["firmware", "port_counters"], v(fw.port_counters())),
        ("QpCounters", &["firmware", "engine"], v(&fw.engine().counters())),
        ("EngineDrops", &["firmware", "engine_drops"], v(fw.engine().drops())),
        ("ServerStats", &["server"], v(&*h.server)),
        ("DmaStats", &["dma"], v(&h.dma.stats)),
        ("IrqStats", &["irq"], v(&h.irqs.stats)),
        ("DeviceStats", &["device"], v(&*h.device)),
        ("DoorbellStats", &["doorbells"], v(&*h.doorbells)),
        ("PollerStats", &["doorbells", "poller"], v(&**h.poller.as_ref().unwrap())),
        ("QosStats", &["cpu_latency_qos"], v(&*h.qos)),
        ("EtherCounters", &["eth_link"], {
            // its per-priority counters are listed on their own below
            let mut e = v(&**h.eth_link.as_ref().unwrap());
            e.as_object_mut().unwrap().remove("prio");
            e
        }),
        ("PrioCounters", &["eth_link", "prio", "0"], v(&h.eth_link.as_ref().unwrap().prio[0])),
        ("PrioCounters", &["eth_link", "prio", "7"], v(&h.eth_link.as_ref().unwrap().prio[7])),
        ("StageCounters", &["subnet"], v(&h.subnet.as_ref().unwrap().view().counters)),
        ("SaStats", &["subnet", "sa"], v(&h.subnet.as_ref().unwrap().view().sa.unwrap())),
        ("SmStats", &["subnet", "sm"], v(&h.subnet.as_ref().unwrap().view().sm.unwrap().stats)),
    ];
    match fw.link_layer() {
        // The wire port's counters (fabric/counters.rs) are serialized through their snapshot.
        LinkLayer::Ib => out.push(("PortCounters", &["firmware", "fabric"], v(&wire.snapshot()))),
        LinkLayer::Eth => {
            let rx = fw.eth_rx_stats().unwrap();
            out.extend([
                ("VportCounters", &["firmware", "vport_counters"][..], v(&**fw.vport_counters().unwrap())),
                ("RxCounters", &["firmware", "eth_rx"], v(rx.frames)),
                ("SteeringDrops", &["firmware", "eth_rx", "steering"], v(rx.steering)),
                (
                    "RqCounters",
                    &["firmware", "eth_rx", "queues", "256"],
                    v(&rx.queues.get(&256).copied().unwrap_or_default()),
                ),
                ("SqTxCounters", &["firmware", "eth_tx"], v(&fw.eth_tx().unwrap().totals)),
                ("RoceCounters", &["firmware", "roce"], v(&**fw.roce_counters().unwrap())),
                ("CongStatistics", &["firmware", "roce", "congestion"], v(&h.cc.as_ref().unwrap().statistics())),
            ]);
        }
    }
    out
}

/// Makes every counter nonzero, each a different number, so a field read
/// from the wrong place or not at all cannot pass for a zero.
fn bump_all(h: &ControlHandles, wire: &vrnic_fabric::PortCounters) {
    let mut n = 0u64;
    let mut next = || {
        n += 1;
        n
    };
    let s = &h.server;
    for c in [
        &s.connections,
        &s.messages,
        &s.errors,
        &s.region_reads,
        &s.region_writes,
        &s.posted_writes,
        &s.resets,
        &s.spin_hits,
        &s.spin_misses,
    ] {
        c.store(next(), Relaxed);
    }
    s.connected.store(true, Relaxed);
    let d = &h.dma.stats;
    for c in [&d.maps, &d.unmaps, &d.faults] {
        c.store(next(), Relaxed);
    }
    let i = &h.irqs.stats;
    for c in [&i.raised, &i.delivered, &i.set_irqs] {
        c.store(next(), Relaxed);
    }
    let d = &h.device;
    for c in [
        &d.config_reads,
        &d.config_writes,
        &d.bar_reads,
        &d.bar_writes,
        &d.cmd_doorbells,
        &d.resets,
        &d.flrs,
        &d.fast_teardowns,
    ] {
        c.store(next(), Relaxed);
    }
    let d = &h.doorbells;
    for c in [&d.cq_arm, &d.eq_update, &d.send, &d.ignored, &d.last_send] {
        c.store(next(), Relaxed);
    }
    let p = h.poller.as_ref().unwrap();
    for c in [
        &p.scans,
        &p.hit_scans,
        &p.naps,
        &p.nap_us,
        &p.nap_late_us,
        &p.kicks_taken,
        &p.local_kicks,
        &p.busy_spin_won,
        &p.busy_spin_lost,
    ] {
        c.store(next(), Relaxed);
    }
    h.qos.held.store(true, Relaxed);
    h.qos.holds.store(next(), Relaxed);
    let e = h.eth_link.as_ref().unwrap();
    for c in [
        &e.tx_frames,
        &e.tx_bytes,
        &e.tx_full,
        &e.tx_errors,
        &e.tx_no_link,
        &e.tx_bad_length,
        &e.rx_frames,
        &e.rx_bytes,
        &e.rx_runts,
        &e.rx_giants,
        &e.rx_undersize,
        &e.rx_foreign,
        &e.rx_own,
        &e.rx_errors,
        &e.rx_socket_drops,
        &e.fault_dropped,
        &e.fault_duplicated,
        &e.fault_reordered,
        &e.fault_delayed,
        &e.fault_corrupted,
        &e.fault_ce_marked,
        &e.pcap_dropped,
        &e.rx_mac_control_malformed,
        &e.rx_pause_ignored,
        &e.tx_shaper_delayed,
        &e.tx_shaper_dropped,
    ] {
        c.store(next(), Relaxed);
    }
    for p in &e.prio {
        for c in [
            &p.rx_frames,
            &p.rx_octets,
            &p.tx_frames,
            &p.tx_octets,
            &p.rx_pause,
            &p.rx_pause_duration_ns,
            &p.rx_pause_transition,
            &p.tx_pause,
            &p.tx_pause_dropped,
            &p.tx_pause_duration_ns,
            &p.tx_pause_transition,
            &p.rx_held,
            &p.rx_discards,
        ] {
            c.store(next(), Relaxed);
        }
    }
    let cc = h.cc.as_ref().unwrap();
    for c in [
        vrnic_cc::CcCounter::NpEcnMarkedRocePackets,
        vrnic_cc::CcCounter::NpCnpSent,
        vrnic_cc::CcCounter::RpCnpHandled,
        vrnic_cc::CcCounter::RpCnpIgnored,
    ] {
        cc.count(c, next());
    }
    let snap = serde_json::to_value(wire.snapshot()).unwrap();
    h.subnet.as_ref().unwrap().with_counters_mut(|c, sa, sm| {
        for c in [
            &mut c.dr_smp_routed,
            &mut c.dr_smp_drops,
            &mut c.switch_smp_answered,
            &mut c.sm_info_answered,
            &mut c.sm_info_drops,
            &mut c.port_updates,
            &mut c.port_update_errors,
            &mut c.mads_sent,
        ] {
            *c = next();
        }
        let sa = sa.unwrap();
        for c in [&mut sa.requests, &mut sa.dropped, &mut sa.errors, &mut sa.rmpp_segments] {
            *c = next();
        }
        let sm = sm.unwrap();
        for c in [
            &mut sm.polls,
            &mut sm.answers,
            &mut sm.misses,
            &mut sm.peers_lost,
            &mut sm.takeovers,
            &mut sm.master_changes,
            &mut sm.stale_answers,
        ] {
            *c = next();
        }
    });
    let mut fw = h.fw.as_ref().unwrap().lock().unwrap();
    let f = fw.stats();
    for c in [
        &f.commands,
        &f.failed,
        &f.eqes,
        &f.interrupts,
        &f.umr_wqes,
        &f.umr_errors,
        &f.cq_moder_holds,
        &f.cq_moder_changes,
    ] {
        c.store(next(), Relaxed);
    }
    if let Some(v) = fw.vport_counters().cloned() {
        for c in [
            &v.rx_unicast_packets,
            &v.rx_unicast_octets,
            &v.rx_multicast_packets,
            &v.rx_multicast_octets,
            &v.rx_broadcast_packets,
            &v.rx_broadcast_octets,
            &v.tx_unicast_packets,
            &v.tx_unicast_octets,
            &v.tx_multicast_packets,
            &v.tx_multicast_octets,
            &v.tx_broadcast_packets,
            &v.tx_broadcast_octets,
            &v.rx_errors,
            &v.tx_errors,
        ] {
            c.store(next(), Relaxed);
        }
    }
    if let Some(r) = fw.roce_counters().cloned() {
        for c in [
            &r.tx_packets,
            &r.tx_bytes,
            &r.tx_no_gid,
            &r.tx_errors,
            &r.loopback_packets,
            &r.loopback_dropped,
            &r.rx_packets,
            &r.rx_bytes,
            &r.rx_icrc_errors,
            &r.rx_malformed,
            &r.rx_not_ours,
            &r.cnp_sent,
            &r.cnp_received,
        ] {
            c.store(next(), Relaxed);
        }
    }
    let c = fw.port_counters();
    for c in [
        &c.xmit_data_words,
        &c.rcv_data_words,
        &c.xmit_pkts,
        &c.rcv_pkts,
        &c.rcv_errors,
        &c.xmit_discards,
        &c.unicast_xmit,
        &c.unicast_rcv,
        &c.multicast_xmit,
        &c.multicast_rcv,
        &c.mad_wire_xmit,
        &c.mad_wire_rcv,
        &c.mad_wire_drops,
        &c.mcast_delivered,
        &c.mcast_drops,
    ] {
        c.store(next(), Relaxed);
    }
    let t = fw.engine_mut().counters_mut().0;
    for c in [
        &mut t.tx_packets,
        &mut t.tx_bytes,
        &mut t.rx_packets,
        &mut t.rx_bytes,
        &mut t.retransmissions,
        &mut t.timeouts,
        &mut t.duplicates,
        &mut t.out_of_sequence,
        &mut t.nak_seq_sent,
        &mut t.nak_seq_received,
        &mut t.nak_inv_req_sent,
        &mut t.nak_access_sent,
        &mut t.nak_op_sent,
        &mut t.nak_error_received,
        &mut t.rnr_nak_sent,
        &mut t.rnr_nak_received,
        &mut t.cnp_sent,
        &mut t.cnp_received,
        &mut t.ecn_marked,
        &mut t.qkey_violations,
        &mut t.no_recv_drops,
        &mut t.xrc_bad_srq,
        &mut t.link_waits,
        &mut t.link_held_timeouts,
        &mut t.rx_held_timeouts,
    ] {
        *c = next();
    }
    if let Some(tx) = fw.eth_tx_mut() {
        let t = &mut tx.totals;
        for c in [
            &mut t.packets,
            &mut t.bytes,
            &mut t.tso_wqes,
            &mut t.tso_packets,
            &mut t.tso_bytes,
            &mut t.csum_offloads,
            &mut t.nops,
            &mut t.drops,
            &mut t.oversize,
            &mut t.offload_errors,
            &mut t.no_link,
            &mut t.runts,
            &mut t.loopback,
        ] {
            *c = next();
        }
    }
    let d = fw.engine_mut().counters_mut().1;
    for c in [&mut d.malformed, &mut d.no_qp, &mut d.bad_state, &mut d.bad_transport, &mut d.bad_pkey] {
        *c = next();
    }
    if let Some((rx, st, qs)) = fw.eth_rx_counters_mut() {
        let q = qs.entry(256).or_default();
        for c in [
            &mut rx.runts,
            &mut rx.giants,
            &mut rx.no_tir,
            &mut rx.rq_not_ready,
            &mut rx.too_long,
            &mut rx.wqe_errors,
            &mut rx.cq_overruns,
            &mut rx.delivered,
            &mut st.no_root,
            &mut st.miss,
            &mut st.rule,
            &mut st.bad_chain,
            &mut q.packets,
            &mut q.bytes,
            &mut q.drops,
            &mut q.out_of_buffer,
        ] {
            *c = next();
        }
    }
    drop(fw);
    // The wire counters come from a macro; set them by name through the snapshot's keys.
    let names: Vec<String> = snap.as_object().unwrap().keys().cloned().collect();
    for name in names {
        wire_counter(wire, &name).store(next(), Relaxed);
    }
}

/// A wire port counter by its field name.
fn wire_counter<'a>(w: &'a vrnic_fabric::PortCounters, name: &str) -> &'a std::sync::atomic::AtomicU64 {
    match name {
        "tx_packets" => &w.tx_packets,
        "tx_bytes" => &w.tx_bytes,
        "rx_packets" => &w.rx_packets,
        "rx_bytes" => &w.rx_bytes,
        "rx_icrc_errors" => &w.rx_icrc_errors,
        "rx_malformed" => &w.rx_malformed,
        "rx_unknown_peer" => &w.rx_unknown_peer,
        "rx_dgid_mismatch" => &w.rx_dgid_mismatch,
        "tx_grh_packets" => &w.tx_grh_packets,
        "rx_grh_packets" => &w.rx_grh_packets,
        "rx_socket_passes" => &w.rx_socket_passes,
        "rx_socket_datagrams" => &w.rx_socket_datagrams,
        "rx_socket_reads" => &w.rx_socket_reads,
        "tx_socket_calls" => &w.tx_socket_calls,
        "tx_socket_datagrams" => &w.tx_socket_datagrams,
        "tx_no_route" => &w.tx_no_route,
        "tx_mcast_packets" => &w.tx_mcast_packets,
        "tx_mcast_no_grh" => &w.tx_mcast_no_grh,
        "rx_mcast_packets" => &w.rx_mcast_packets,
        "tx_errors" => &w.tx_errors,
        "fault_dropped" => &w.fault_dropped,
        "fault_duplicated" => &w.fault_duplicated,
        "fault_reordered" => &w.fault_reordered,
        "fault_delayed" => &w.fault_delayed,
        "fault_corrupted" => &w.fault_corrupted,
        "fault_ce_marked" => &w.fault_ce_marked,
        "cnp_sent" => &w.cnp_sent,
        "cnp_received" => &w.cnp_received,
        "pcap_dropped" => &w.pcap_dropped,
        "fc_packets_sent" => &w.fc_packets_sent,
        "fc_packets_received" => &w.fc_packets_received,
        "fc_held" => &w.fc_held,
        "fc_blocked" => &w.fc_blocked,
        "fc_discards" => &w.fc_discards,
        "rx_socket_drops" => &w.rx_socket_drops,
        other => panic!("wire counter {other} has no arm here: add it"),
    }
}

fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| &v[*k])
}

/// Numbers that are not zero appear once each, so equal values mean the same counter.
fn all_nonzero_and_distinct(structs: &[(&str, &[&str], Value)]) {
    let mut seen = BTreeMap::new();
    for (name, path, v) in structs {
        for (k, x) in v.as_object().unwrap_or_else(|| panic!("{name} does not serialize as an object")) {
            if x.is_boolean() {
                assert_eq!(x, true, "{name}.{k}");
                continue;
            }
            let x = x.as_u64().unwrap_or_else(|| panic!("{name}.{k} = {x} is not a counter"));
            assert_ne!(x, 0, "{name}.{k} not set by bump_all: add it there");
            if let Some(prev) = seen.insert(x, format!("{}.{k}", path.join("."))) {
                panic!("{name}.{k} and {prev} both {x}");
            }
        }
    }
}

#[test]
fn every_counter_field_is_in_stats() {
    for link in [LinkLayer::Ib, LinkLayer::Eth] {
        let (h, wire) = full_handles(link);
        bump_all(&h, &wire);
        let structs = counter_structs(&h, &wire);
        all_nonzero_and_distinct(&structs);
        let stats: Value = serde_json::from_str(&h.execute("stats")).unwrap();
        let mut fields = 0;
        for (name, path, v) in &structs {
            let obj = v.as_object().unwrap();
            assert!(!obj.is_empty(), "{name} has no field");
            let there = at(&stats, path);
            assert!(there.is_object(), "{link:?}: stats has no object at {} for {name}: {stats}", path.join("."));
            for (k, x) in obj {
                assert_eq!(&there[k], x, "{link:?}: stats {}.{k} (from {name})", path.join("."));
                fields += 1;
            }
        }
        assert!(fields > 100, "{link:?}: only {fields} fields checked");
    }
}

/// Every counter struct in the source (a struct named `*Stats`, `*Counters`
/// or `*Drops`, or one with a `pub …: AtomicU64` field) is in [`counter_structs`],
/// so a new one cannot be left out of `stats`.
#[test]
#[cfg_attr(miri, ignore = "reads the source tree (no files under Miri)")]
fn every_counter_struct_is_listed() {
    // A struct listed for either link layer (a port is one or the other).
    let mut listed = BTreeMap::<&str, usize>::new();
    for link in [LinkLayer::Ib, LinkLayer::Eth] {
        let (h, wire) = full_handles(link);
        let mut here = BTreeMap::<&str, usize>::new();
        for (name, _, _) in counter_structs(&h, &wire) {
            *here.entry(name).or_default() += 1;
        }
        for (name, n) in here {
            let e = listed.entry(name).or_default();
            *e = (*e).max(n);
        }
    }
    let mut found = BTreeMap::<String, Vec<String>>::new();
    // this crate's sources and every layer crate's (crates/*/src)
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src")];
    for e in std::fs::read_dir(root.join("../crates")).unwrap() {
        dirs.push(e.unwrap().path().join("src"));
    }
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("mlx5-ifc/src/ifc.rs") {
                for name in counter_structs_in(&std::fs::read_to_string(&p).unwrap()) {
                    found.entry(name).or_default().push(p.display().to_string());
                }
            }
        }
    }
    assert!(found.len() >= 10, "the scan found only {found:?}");
    for (name, files) in &found {
        let n = listed.get(name.as_str()).copied().unwrap_or(0);
        assert!(
            n >= files.len(),
            "counter struct {name} ({files:?}) is not in counter_structs (and so maybe not in stats)"
        );
    }
}

/// Names of the brace structs in `src` that hold counters.
fn counter_structs_in(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = src.lines();
    while let Some(l) = lines.next() {
        let t = l.trim_start();
        let Some(rest) = ["pub struct ", "pub(crate) struct ", "struct "].iter().find_map(|p| t.strip_prefix(p)) else {
            continue;
        };
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() || !t.ends_with('{') {
            continue;
        }
        let indent = l.len() - t.len();
        let mut atomic = false;
        for b in lines.by_ref() {
            let bt = b.trim_start();
            if bt == "}" && b.len() - bt.len() == indent {
                break;
            }
            atomic |= bt.starts_with("pub ") && bt.trim_end().ends_with(": AtomicU64,");
        }
        if atomic || ["Stats", "Counters", "Drops"].iter().any(|s| name.ends_with(s)) {
            out.push(name);
        }
    }
    out
}

/// The paths the guest harness (`guest-tests/run`), the README and the docs read.
#[test]
fn stats_paths_the_harness_reads_are_stable() {
    let (h, wire) = full_handles(LinkLayer::Ib);
    bump_all(&h, &wire);
    let text = h.execute("stats");
    let s: Value = serde_json::from_str(&text).unwrap();
    let has = |s: &Value, text: &str, p: &str| {
        let v = at(s, &p.split('.').collect::<Vec<_>>());
        assert!(v.is_u64() || v.is_boolean(), "stats has no {p}: {text}");
    };
    for p in [
        "firmware.umr_wqes",
        "firmware.umr_errors",
        "firmware.commands",
        "firmware.port_state",
        "firmware.objects.mkey",
        "firmware.objects.mtt_entries",
        "firmware.fabric.tx_packets",
        "firmware.fabric.rx_packets",
        "firmware.fabric.tx_grh_packets",
        "firmware.fabric.rx_grh_packets",
        "firmware.fabric.tx_no_route",
        "firmware.fabric.rx_dgid_mismatch",
        "firmware.fabric.rx_unknown_peer",
        "firmware.engine.rx_packets",
        "firmware.port_counters.rcv_pkts",
        "doorbells.poller.busy_spin_won",
        "doorbells.poller.busy_spin_lost",
        "doorbells.send",
        "cpu_latency_qos.held",
        "cpu_latency_qos.holds",
        "eth_link.tx_frames",
        "eth_link.rx_frames",
        "eth_link.rx_runts",
        "eth_link.rx_giants",
        "server.spin_hits",
        "dma.mappings",
        "irq.raised",
        "subnet.dr_smp_routed",
        "subnet.switch.sets",
        "subnet.sa.requests",
        "subnet.sm.master_lid",
        "subnet.sm.takeovers",
        "subnet.sm.polls",
    ] {
        has(&s, &text, p);
    }
    // The harness's peer-loss check takes the first `"rx_packets": N` of the reply text
    // and its GRH check the last: keys are sorted (serde_json's map), so the engine's
    // total comes before the fabric port's (an IB port has no RoCE counters).
    let find = |k: &str| text.match_indices(k).map(|(i, _)| i).collect::<Vec<_>>();
    let rx = find("\"rx_packets\":");
    assert_eq!(rx.len(), 2, "{text}");
    assert!(s["firmware"]["roce"].is_null() && s["firmware"]["eth_rx"].is_null(), "{text}");
    let first: u64 = text[rx[0] + 13..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap();
    assert_eq!(first, s["firmware"]["engine"]["rx_packets"]);
    let last: u64 = text[rx[1] + 13..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap();
    assert_eq!(last, s["firmware"]["fabric"]["rx_packets"]);
    // An Ethernet port: its RoCE congestion control, no fabric.
    let (h, wire) = full_handles(LinkLayer::Eth);
    bump_all(&h, &wire);
    let text = h.execute("stats");
    let s: Value = serde_json::from_str(&text).unwrap();
    for p in [
        "firmware.roce.congestion.np_cnp_sent",
        "firmware.roce.congestion.rp_cnp_handled",
        "firmware.roce.congestion.rp_enabled",
        "firmware.roce.rx_packets",
        "firmware.vport_counters.rx_unicast_packets",
    ] {
        has(&s, &text, p);
    }
    assert!(s["firmware"]["fabric"].is_null(), "{text}");
}

#[test]
fn stats_without_firmware_or_poller_are_null() {
    let (mut h, _) = full_handles(LinkLayer::Ib);
    h.fw = None;
    h.poller = None;
    let s: Value = serde_json::from_str(&h.execute("stats")).unwrap();
    assert!(s["firmware"].is_null() && s["doorbells"]["poller"].is_null(), "{s}");
    assert_eq!(s["doorbells"]["send"], 0);
}

/// `qps`: a row of counters for every QP the engine holds.
#[test]
fn qps_lists_every_qp_with_its_counters() {
    use vrnic_engine::{QpCreate, QpType};
    let (h, _) = full_handles(LinkLayer::Eth);
    let v: Value = serde_json::from_str(&h.execute("qps")).unwrap();
    let before = v["qps"].as_array().map(Vec::len).unwrap();
    let qpn = {
        let mut fw = h.fw.as_ref().unwrap().lock().unwrap();
        let e = fw.engine_mut();
        let pd = e.alloc_pd(0).unwrap();
        let cq = e.create_cq(6).unwrap();
        let c = QpCreate {
            qp_type: QpType::Rc,
            pd,
            send_cq: Some(cq),
            recv_cq: Some(cq),
            srq: None,
            xrcd: None,
            log_sq_size: 6,
            log_rq_size: 6,
            sq_sig_all: false,
            uid: 0,
        };
        e.create_qp(c).unwrap()
    };
    let v: Value = serde_json::from_str(&h.execute("qps")).unwrap();
    let rows = v["qps"].as_array().unwrap();
    assert_eq!(rows.len(), before + 1);
    let zeros = serde_json::json!([qpn, 0, 0, 0, 0]);
    assert!(rows.contains(&zeros), "{rows:?}");
    assert!(h.execute("help").contains("qps"));
}
