//! RoCE congestion notification: CNPs and ECN-marked packets from the network, and the DCQCN state machines
//! they drive.
//!
//! - Wire: `CnpRepr::parse` (BTH through ICRC), and over the same bytes as an Ethernet frame `roce::parse`,
//!   `congestion::frame_ecn`, `mark_ce` (the ICRC, which masks the ECN bits, must still verify and the frame
//!   parse the same but for CE), `CnpRepr::reply_frame` + `roce::emit` of the answering CNP.
//! - The engine (`Engine::receive` on a RoCEv2 port whose `CcControl` settings come from the input): a CNP
//!   for one of its RC/UC/UD QPs feeds the reaction point (`cnp_receive`: a `Limiter` that paces the
//!   requester, its timers), a packet arriving with ECN = CE the notification point (`ecn_receive`: the
//!   CNP it sends back), with sends posted so the limiter paces them; time from the input.
//! - The state machines alone, with arbitrary parameters (the guest writes them with MODIFY_CONG_PARAMS) and
//!   events at arbitrary times: `Limiter` (`Rp` + `Pacer`), `Np`, `Pacer`; the rate stays within
//!   [1, line rate], alpha within [0, 1024], the NP sends at most one CNP per QP per
//!   `min_time_between_cnps`, a pacer lets `bytes` through at the time it names.
//!
//! Input: a configuration record (the line rate, the port's `CcConfig`), then
//! `[u16 LE len][op][delta ns u32][args..]` records (see `Cc::step`).
#![no_main]
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use libfuzzer_sys::fuzz_target;
use vrnic_cc::{CcConfig, CcControl, CongStatistics, Limiter, Np, NpParams, Pacer, RpParams};
use vrnic_engine::{SendWr, Sge, WrOpcode};
use vrnic_fabric::{Dest, Endpoint, NetHdr, PacketSink, RxMeta};
use vrnic_fuzz::{records, Bytes, Responder};
use vrnic_wire::congestion::{self, CnpRepr, Ecn};
use vrnic_wire::{grh, roce};

/// The RoCE port under the engine: packets go nowhere, CNPs are counted, the congestion settings are the input's.
struct CcPort {
    cc: Arc<CcControl>,
    line: u64,
    cnps: Mutex<Vec<(u32, u8, u8)>>,
}

impl PacketSink for CcPort {
    fn send(&self, _: &Dest, _: &mut [u8]) {}
    fn cc(&self) -> Option<&Arc<CcControl>> {
        Some(&self.cc)
    }
    fn line_rate_bps(&self) -> u64 {
        self.line
    }
    fn send_cnp(&self, _: &RxMeta, dest_qp: u32, dscp: u8, prio: u8) -> bool {
        assert!(dest_qp <= 0xff_ffff && dscp < 64 && prio < 8, "CNP to {dest_qp:#x} dscp {dscp} prio {prio}");
        let mut c = self.cnps.lock().unwrap();
        c.push((dest_qp, dscp, prio));
        c.len() % 3 != 0
    }
}

fn rp_params(b: &mut Bytes) -> RpParams {
    RpParams {
        clamp_tgt_rate: b.bool(),
        clamp_tgt_rate_after_time_inc: b.bool(),
        rpg_time_reset: b.u32(),
        rpg_byte_reset: b.u32(),
        rpg_threshold: b.u32(),
        rpg_max_rate: b.u32(),
        rpg_ai_rate: b.u32(),
        rpg_hai_rate: b.u32(),
        rpg_gd: b.u32(),
        rpg_min_dec_fac: b.u32(),
        rpg_min_rate: b.u32(),
        rate_to_set_on_first_cnp: b.u32(),
        dce_tcp_g: b.u32(),
        dce_tcp_rtt: b.u32(),
        rate_reduce_monitor_period: b.u32(),
        initial_alpha_value: b.u32(),
    }
}

fn np_params(b: &mut Bytes) -> NpParams {
    NpParams { min_time_between_cnps: b.u32(), cnp_dscp: b.u8(), cnp_prio_mode: b.bool(), cnp_802p_prio: b.u8() }
}

/// Parameters: mostly the defaults with one field from the input (so the machines run), or all from the input.
fn some_rp_params(b: &mut Bytes) -> RpParams {
    if b.bool() {
        return rp_params(b);
    }
    let mut p = RpParams::default();
    let v = b.u32() % 4096;
    match b.u8() % 8 {
        0 => p.rpg_time_reset = v,
        1 => p.rpg_byte_reset = v,
        2 => p.rpg_max_rate = v * 100,
        3 => p.rpg_min_rate = v * 100,
        4 => p.rate_to_set_on_first_cnp = v * 100,
        5 => p.dce_tcp_rtt = v,
        6 => p.rate_reduce_monitor_period = v,
        _ => p.rpg_gd = v % 64,
    }
    p
}

struct Cc {
    r: Responder,
    port: Arc<CcPort>,
    now: u64,
    limiter: Limiter,
    rp: RpParams,
    np: Np,
    /// When the NP last sent a CNP for each QP (for the rate-limit check).
    np_last: std::collections::HashMap<u32, u64>,
    pacer: Pacer,
}

impl Cc {
    fn new(b: &mut Bytes) -> Cc {
        let line = match b.u8() % 4 {
            0 => 100_000_000_000,
            1 => 25_000_000_000,
            2 => 1_000_000_000,
            _ => 1 + b.u32() as u64,
        };
        let cfg = CcConfig { rp_enabled: b.u8(), np_enabled: b.u8(), rp: some_rp_params(b), np: np_params(b) };
        let cc = CcControl::new(cfg);
        cc.set_link_rate_bps(b.u32() as u64 * 1000);
        let port = Arc::new(CcPort { cc, line, cnps: Mutex::default() });
        let r = Responder::with_sink(port.clone());
        Cc {
            r,
            port,
            now: 0,
            limiter: Limiter::new(0, line, cfg.rp),
            rp: cfg.rp,
            np: Np::new(cfg.np, cfg.np_enabled & 1 != 0),
            np_last: Default::default(),
            pacer: Pacer::new(0, line, 4 * 4200),
        }
    }

    /// RoCEv2 metadata for a packet from the peer with traffic class `tc` at priority `prio`.
    fn meta(tc: u8, prio: u8, v6: bool) -> RxMeta {
        let g = grh::Repr {
            traffic_class: tc,
            hop_limit: 64,
            sgid: roce::v4_mapped([10, 0, 0, 2]),
            dgid: roce::v4_mapped([10, 0, 0, 1]),
            ..Default::default()
        };
        RxMeta {
            src: Endpoint::v4(2, Ipv4Addr::new(10, 0, 0, 2)),
            local: false,
            grh: Some(g),
            net: if v6 { NetHdr::RoceV2Ipv6 } else { NetHdr::RoceV2Ipv4 },
            vlan: None,
            smac: [2, 0, 0, 0, 0, 2],
            prio,
        }
    }

    fn check_limits(&self) {
        for &q in &self.r.qps {
            if let Some(rate) = self.r.eng.qp_rate(q) {
                let line = self.port.cc.rp_line_rate(self.port.line).max(1);
                assert!((1..=line).contains(&rate), "QP {q:#x} paced at {rate} on a {line} b/s line");
            }
        }
        let rate = self.limiter.rate();
        assert!((1..=self.port.line.max(1)).contains(&rate), "limiter at {rate}");
        let rp = self.limiter.rp();
        assert!(rp.rate() <= self.port.line.max(1) && rp.rate() >= 1 && rp.alpha() <= 1024, "{rp:?}");
    }

    fn step(&mut self, b: &mut Bytes) {
        let op = b.u8();
        self.now = self.now.saturating_add(b.u32() as u64);
        self.r.clock.set(self.now);
        match op % 11 {
            // A packet (BTH onward) from the peer with the input's ToS and priority.
            0 => {
                let (tc, prio) = (b.u8(), b.u8());
                self.r.eng.receive(&Cc::meta(tc, prio, prio & 0x80 != 0), b.rest());
                self.r.eng.flush_acks();
            }
            // A CNP to one of the QPs (or any QPN), BECN and P_Key from the input.
            1 => {
                let (which, prio, pkey, becn) = (b.u8(), b.u8(), b.u16(), b.bool());
                let qpn = self.r.qps.get(which as usize % 4).copied().unwrap_or(b.u32());
                let mut pkt = Vec::new();
                CnpRepr { dest_qp: qpn & 0xff_ffff, pkey, becn }.emit(&mut pkt).expect("a CNP emits");
                assert_eq!(CnpRepr::parse(&pkt), Ok(CnpRepr { dest_qp: qpn & 0xff_ffff, pkey, becn }));
                self.r.eng.receive(&Cc::meta(0xc2, prio, false), &pkt);
            }
            // Sends on the RC/UC/UD QPs: the requester asks the limiter.
            2 => {
                let (which, len) = (b.u8(), b.u16() as u32);
                let q = self.r.qps[which as usize % self.r.qps.len()];
                let mut w =
                    SendWr::new(self.now, WrOpcode::Send, vec![Sge { addr: 0x8000, length: len, lkey: self.r.key }]);
                if which & 0x80 != 0 {
                    w = SendWr::new(
                        self.now,
                        WrOpcode::Write,
                        vec![Sge { addr: 0x8000, length: len, lkey: self.r.key }],
                    );
                    w.remote_addr = 0x10000;
                    w.rkey = self.r.key;
                }
                let _ = self.r.eng.post_send(q, w);
            }
            // The engine's timers (limiter wake-ups, retransmissions).
            3 => {
                let _ = self.r.eng.poll_timers();
                self.r.eng.flush_acks();
            }
            // The guest changes the congestion settings (MODIFY_CONG_STATUS/PARAMS).
            4 => {
                let cfg = CcConfig { rp_enabled: b.u8(), np_enabled: b.u8(), rp: some_rp_params(b), np: np_params(b) };
                self.port.cc.set_config(cfg);
            }
            // The reaction point alone: a CNP, a packet to admit, its timers, new parameters.
            5 => {
                let _ = self.limiter.on_cnp(self.now, self.rp);
                let _ = self.limiter.next_wake();
            }
            6 => {
                let bytes = b.u32() as u64;
                if let Err(at) = self.limiter.admit(self.now, bytes) {
                    assert!(at > self.now, "a packet waits until later");
                }
                if !self.limiter.advance(self.now, self.rp) {
                    assert!(!self.limiter.rp().limited(), "the limiter goes only at line rate");
                }
            }
            7 => self.rp = some_rp_params(b),
            // The notification point alone.
            8 => {
                let (qpn, src_qp, ecn, prio) = (b.u32() % 8, b.u32(), b.u8(), b.u8());
                if b.bool() {
                    self.np.params = np_params(b);
                    self.np.enabled = b.bool();
                }
                let ecn = Ecn::from_tos(ecn);
                let mut st = CongStatistics::default();
                if let Some(c) = self.np.on_packet(self.now, qpn, src_qp, ecn, prio, &mut st) {
                    assert!(ecn == Ecn::Ce && self.np.enabled);
                    assert!(c.dest_qp <= 0xff_ffff && c.dscp < 64 && c.prio < 8, "{c:?}");
                    let gap = self.np.params.min_time_between_cnps as u64 * 1000;
                    if let Some(&t) = self.np_last.get(&qpn) {
                        assert!(self.now >= t.saturating_add(gap), "two CNPs for QP {qpn} within {gap} ns");
                    }
                    self.np_last.insert(qpn, self.now);
                }
                if b.bool() {
                    self.np.forget(qpn);
                    self.np_last.remove(&qpn);
                }
            }
            // The bytes as a CNP and as a RoCE frame.
            9 => wire(b.rest()),
            // A pacer alone: the time it names for `bytes`, it lets them through.
            _ => {
                let (rate, bytes) = (b.u64(), b.u32() as u64);
                if rate != 0 {
                    self.pacer.set_rate(self.now, rate);
                }
                let at = self.pacer.next_send_at(self.now, bytes);
                assert!(at >= self.now);
                if at < u64::MAX / 2 {
                    assert!(self.pacer.try_send(at, bytes), "{bytes} bytes at {at}, as named");
                }
            }
        }
        self.check_limits();
    }
}

/// The wire side: a CNP, a RoCE frame, its ECN marking and the CNP that answers it.
fn wire(data: &[u8]) {
    if let Ok(c) = CnpRepr::parse(data) {
        let mut out = Vec::new();
        c.emit(&mut out).expect("a parsed CNP emits");
        assert_eq!(CnpRepr::parse(&out), Ok(c), "CNP round trip");
    }
    let Ok(Some(mut p)) = roce::parse(data) else { return };
    let icrc_ok = roce::verify_icrc(data, &p).is_ok();
    let ecn = congestion::frame_ecn(&p);
    let mut f = data.to_vec();
    if let Ok(marked) = congestion::mark_ce(&mut f, &mut p) {
        assert_eq!(marked, ecn.is_some_and(|e| e.is_capable()));
        let q = roce::parse(&f).expect("a marked frame parses").expect("as RoCE");
        if marked {
            assert_eq!(congestion::frame_ecn(&q), Some(Ecn::Ce));
        }
        assert_eq!(roce::verify_icrc(&f, &q).is_ok(), icrc_ok, "the ICRC does not cover the ECN bits");
    }
    let reply = CnpRepr::reply_frame(&p.repr, data.len() as u8, data[0]);
    let mut cnp = Vec::new();
    CnpRepr::to_qp(p.repr.grh.flow_label).emit(&mut cnp).expect("a CNP emits");
    let mut frame = Vec::new();
    if roce::emit(&reply, &cnp, &mut frame).is_ok() {
        let q = roce::parse(&frame).expect("the CNP frame parses").expect("as RoCE");
        roce::verify_icrc(&frame, &q).expect("the CNP's ICRC");
        CnpRepr::parse(&frame[q.roce.clone()]).expect("as a CNP");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut recs = records(data).into_iter();
    let Some(cfg) = recs.next() else { return };
    let mut cc = Cc::new(&mut Bytes(cfg));
    for r in recs {
        cc.step(&mut Bytes(r));
    }
});
