//! Hostile input: random bytes and mutated valid requests never panic the
//! SA, and every answer is a well-formed response MAD.

use super::test_support::*;
use vrnic_wire::mad::{self, MAD_SIZE};
use vrnic_wire::rmpp;
use vrnic_wire::sa;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn check_answers(out: &[Vec<u8>]) {
    for m in out {
        assert_eq!(m.len(), MAD_SIZE);
        let h = hdr(m);
        assert_eq!((h.base_version, h.mgmt_class), (1, mad::MGMT_CLASS_SUBN_ADM));
        let r = rmpp_of(m);
        assert!(h.is_response() || r.rmpp_type == rmpp::TYPE_ABORT, "{h:?} {r:?}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "tens of thousands of SA requests: minutes under the interpreter")]
fn random_and_mutated_requests_never_panic() {
    let mut sa = sa_with(4);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let attrs = [
        sa::ATTR_CLASS_PORT_INFO,
        sa::ATTR_NODE_RECORD,
        sa::ATTR_PORT_INFO_RECORD,
        sa::ATTR_PATH_RECORD,
        sa::ATTR_MCMEMBER_RECORD,
        sa::ATTR_SERVICE_RECORD,
        sa::ATTR_INFORM_INFO,
    ];
    let methods = [mad::METHOD_GET, mad::METHOD_SET, mad::METHOD_GET_TABLE, mad::METHOD_DELETE, 0x14, 0x92];
    for i in 0..30_000u32 {
        let len = if i % 7 == 0 { rng.below(300) as usize } else { MAD_SIZE };
        let mut m: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if i % 3 != 0 && len >= 56 {
            // Mostly-valid: a real header over random records and masks.
            let base = request(
                methods[rng.below(methods.len() as u64) as usize],
                attrs[rng.below(attrs.len() as u64) as usize],
                rng.next(),
                &[],
            );
            m[..36].copy_from_slice(&base[..36]);
            if rng.below(4) == 0 {
                m[24..36].fill(0);
                m[24 + rng.below(12) as usize] = rng.next() as u8;
            }
            let at = 56 + rng.below(40) as usize;
            if rng.below(2) == 0 && at + 16 <= m.len() {
                // A real GID of the subnet, so joins and paths get further.
                let g = port(1 + rng.below(4) as u16).gid();
                m[at..at + 16].copy_from_slice(&g);
            }
        }
        let src = from(rng.below(6) as u16);
        check_answers(&sa.handle(&m, src));
        if i % 1000 == 0 {
            for (_, m) in sa.tick() {
                check_answers(&[m]);
            }
        }
    }
    assert!(sa.stats().requests >= 30_000);
    assert!(sa.transfers_in_flight() <= super::rmpp::MAX_TRANSFERS);
    assert!(sa.subnet.groups.len() <= super::mcast::MAX_GROUPS);
}
