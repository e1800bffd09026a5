//! NOP work requests in the transport: no PSN, in-order completion, also
//! when the requests around them are lost, reordered and retransmitted.

use super::test_support::{Pair, BASE};
use super::*;
use vrnic_fabric::fault::{FaultConfig, FaultRates};

fn nop(wr_id: u64, signaled: bool) -> SendWr {
    SendWr { signaled, ..SendWr::new(wr_id, WrOpcode::Nop, Vec::new()) }
}

/// Writes and reads with NOPs between them (signaled and not) over a lossy
/// link: every signaled WR completes successfully in posting order, the
/// data is right (no PSN taken by a NOP, so none is missing on the wire),
/// and the unsignaled NOPs write no completion.
#[test]
#[cfg_attr(miri, ignore = "hundreds of packets with loss and timers: too slow under Miri")]
fn nops_between_writes_and_reads_under_loss() {
    let rates = FaultRates { drop: 0.1, reorder: 0.05, duplicate: 0.02, ..Default::default() };
    let f = |seed| FaultConfig { seed, tx: rates.clone(), rx: FaultRates::default() };
    let p = Pair::new(1 << 22, &[f(11), f(12)]);
    let (qa, _qb) = p.qps(QpType::Rc, 1024);
    let mut want = Vec::new();
    for i in 0..90u64 {
        let at = BASE + i * 4096;
        let wr = match i % 3 {
            0 => {
                p.a.mem.set(at, &[i as u8; 3000]);
                SendWr { remote_addr: at, rkey: p.b.key, ..SendWr::new(i, WrOpcode::Write, vec![p.a.sge(at, 3000)]) }
            }
            1 => nop(i, i % 2 == 1),
            _ => {
                p.b.mem.set(at, &[!(i as u8); 2000]);
                SendWr { remote_addr: at, rkey: p.b.key, ..SendWr::new(i, WrOpcode::Read, vec![p.a.sge(at, 2000)]) }
            }
        };
        if wr.signaled {
            want.push((i, if wr.opcode == WrOpcode::Nop { WcOpcode::Nop } else { WcOpcode::of(wr.opcode) }));
        }
        p.a.eng.lock().post_send(qa, wr).unwrap();
    }
    let ok = p.run(|p| p.a.cqes().len() == want.len());
    assert!(ok, "stalled after {} of {} completions", p.a.cqes().len(), want.len());
    p.settle();
    let got: Vec<(u64, WcOpcode)> =
        p.a.cqes()
            .iter()
            .map(|c| {
                assert_eq!(c.status, WcStatus::Success, "wr {}", c.wr_id);
                (c.wr_id, c.opcode)
            })
            .collect();
    assert_eq!(got, want, "in posting order, unsignaled NOPs silent");
    for i in (0..90u64).step_by(3) {
        assert_eq!(p.b.mem.get(BASE + i * 4096, 3000), vec![i as u8; 3000], "write {i}");
        assert_eq!(p.a.mem.get(BASE + (i + 2) * 4096, 2000), vec![!((i + 2) as u8); 2000], "read {}", i + 2);
    }
    assert!(p.a.eng.lock().counters().retransmissions > 0);
    assert_eq!(p.a.eng.lock().qps.obj(qa).unwrap().state, QpState::Rts);
}

/// A NOP alone on an idle QP completes at once (signaled), or silently.
#[test]
fn nop_on_an_idle_qp() {
    let p = Pair::new(1 << 16, &[Default::default(), Default::default()]);
    let (qa, _) = p.qps(QpType::Rc, 1024);
    p.a.eng.lock().post_send(qa, nop(1, false)).unwrap();
    p.a.eng.lock().post_send(qa, nop(2, true)).unwrap();
    let c = p.a.cqes();
    assert_eq!(
        c.iter().map(|c| (c.wr_id, c.status, c.opcode)).collect::<Vec<_>>(),
        vec![(2, WcStatus::Success, WcOpcode::Nop)]
    );
    assert!(p.net.pending() == 0, "nothing on the wire");
}
