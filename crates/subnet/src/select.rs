//! The SA's selectors (IBTA 15.2.5.16: "greater than", "less than",
//! "exactly", "largest available") over the IB MTU, rate and
//! PacketLifeTime enums, and the enums' orderings (the rate codes are not
//! ordered by speed).

pub const SELECTOR_GREATER: u8 = 0;
pub const SELECTOR_LESS: u8 = 1;
pub const SELECTOR_EXACTLY: u8 = 2;
pub const SELECTOR_LARGEST: u8 = 3;

/// IB MTU enum: 1 = 256 … 5 = 4096.
pub const MTU_256: u8 = 1;
pub const MTU_2048: u8 = 4;
pub const MTU_4096: u8 = 5;

/// IB rate enum values vrnic uses: 3 = 10 Gb/s (4x SDR), 7 = 40 Gb/s (4x QDR).
pub const RATE_10_GBPS: u8 = 3;
pub const RATE_40_GBPS: u8 = 7;

/// Bytes of an MTU code; None for a code IBTA does not define.
pub fn mtu_bytes(code: u8) -> Option<u32> {
    match code {
        1..=5 => Some(128 << code),
        _ => None,
    }
}

/// Mb/s of a rate code (IBTA table 205 and ib_verbs.h `ib_rate`); None for
/// codes not defined.
pub fn rate_mbps(code: u8) -> Option<u32> {
    Some(match code {
        2 => 2_500,
        3 => 10_000,
        4 => 30_000,
        5 => 5_000,
        6 => 20_000,
        7 => 40_000,
        8 => 60_000,
        9 => 80_000,
        10 => 120_000,
        11 => 14_000,
        12 => 56_000,
        13 => 112_000,
        14 => 168_000,
        15 => 25_000,
        16 => 100_000,
        17 => 200_000,
        18 => 300_000,
        19 => 28_000,
        20 => 50_000,
        21 => 400_000,
        22 => 600_000,
        _ => return None,
    })
}

/// Whether `offered` satisfies `selector`/`wanted` on a scale where `key`
/// orders values. "Largest available" accepts the offer (the SA offers
/// the largest it has). An undefined `wanted` satisfies nothing.
fn satisfies(offered: u8, selector: u8, wanted: u8, key: fn(u8) -> Option<u32>) -> bool {
    let (Some(o), Some(w)) = (key(offered), key(wanted)) else {
        return selector == SELECTOR_LARGEST && key(offered).is_some();
    };
    match selector {
        SELECTOR_GREATER => o > w,
        SELECTOR_LESS => o < w,
        SELECTOR_EXACTLY => o == w,
        _ => true,
    }
}

pub fn mtu_satisfies(offered: u8, selector: u8, wanted: u8) -> bool {
    satisfies(offered, selector, wanted, mtu_bytes)
}

pub fn rate_satisfies(offered: u8, selector: u8, wanted: u8) -> bool {
    satisfies(offered, selector, wanted, rate_mbps)
}

/// PacketLifeTime is a plain exponent (4.096 us * 2^v), 0..=63.
pub fn life_satisfies(offered: u8, selector: u8, wanted: u8) -> bool {
    satisfies(offered, selector, wanted, |v| (v < 64).then_some(v as u32))
}

/// The slower of two rate codes.
pub fn min_rate(a: u8, b: u8) -> u8 {
    match (rate_mbps(a), rate_mbps(b)) {
        (Some(x), Some(y)) if y < x => b,
        (Some(_), _) => a,
        _ => b,
    }
}

/// The largest MTU code ≤ `limit` that satisfies the selector, for a
/// group created by a join.
pub fn pick_mtu(limit: u8, selector: u8, wanted: u8) -> Option<u8> {
    (MTU_256..=limit).rev().find(|&m| mtu_satisfies(m, selector, wanted))
}

/// The fastest rate code no faster than `limit` that satisfies the
/// selector.
pub fn pick_rate(limit: u8, selector: u8, wanted: u8) -> Option<u8> {
    let cap = rate_mbps(limit)?;
    (2u8..=22)
        .filter(|&r| rate_mbps(r).is_some_and(|m| m <= cap) && rate_satisfies(r, selector, wanted))
        .max_by_key(|&r| rate_mbps(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert!(mtu_satisfies(MTU_2048, SELECTOR_EXACTLY, MTU_2048));
        assert!(!mtu_satisfies(MTU_2048, SELECTOR_GREATER, MTU_2048));
        assert!(mtu_satisfies(MTU_2048, SELECTOR_LESS, MTU_4096));
        assert!(mtu_satisfies(MTU_2048, SELECTOR_LARGEST, 0));
        assert!(!mtu_satisfies(MTU_2048, SELECTOR_EXACTLY, 9));
        // 5 Gb/s (code 5) is slower than 30 Gb/s (code 4): codes are not ordered.
        assert!(rate_satisfies(5, SELECTOR_LESS, 4));
        assert!(!rate_satisfies(5, SELECTOR_GREATER, 4));
        assert_eq!(min_rate(RATE_40_GBPS, 5), 5);
        assert_eq!(min_rate(RATE_40_GBPS, 99), RATE_40_GBPS, "an undefined code is ignored");
        assert_eq!(pick_mtu(MTU_4096, SELECTOR_LESS, MTU_4096), Some(MTU_2048));
        assert_eq!(pick_mtu(MTU_2048, SELECTOR_GREATER, MTU_2048), None);
        assert_eq!(pick_rate(RATE_40_GBPS, SELECTOR_EXACTLY, RATE_10_GBPS), Some(RATE_10_GBPS));
        assert_eq!(pick_rate(RATE_40_GBPS, SELECTOR_LARGEST, 0), Some(RATE_40_GBPS));
        assert_eq!(pick_rate(RATE_10_GBPS, SELECTOR_GREATER, RATE_10_GBPS), None);
        assert!(life_satisfies(0x12, SELECTOR_LESS, 0x13));
    }
}
