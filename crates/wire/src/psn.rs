//! 24-bit packet sequence number arithmetic (IBTA 9.7.1): every comparison
//! is the sign of the 24-bit difference, valid within ±2^23.

/// PSNs are 24 bits.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// `a + n` modulo 2^24.
#[inline]
pub fn add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - n` modulo 2^24.
#[inline]
pub fn sub(a: u32, n: u32) -> u32 {
    a.wrapping_sub(n) & PSN_MASK
}

/// Signed distance `a - b` in the 24-bit circle (−2^23 ..= 2^23−1).
#[inline]
pub fn diff(a: u32, b: u32) -> i32 {
    (a.wrapping_sub(b) << 8) as i32 >> 8
}

/// `a` comes before `b`.
#[inline]
pub fn lt(a: u32, b: u32) -> bool {
    diff(a, b) < 0
}

/// `a` comes before or is `b`.
#[inline]
pub fn le(a: u32, b: u32) -> bool {
    diff(a, b) <= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_2_24() {
        assert_eq!(add(PSN_MASK, 1), 0);
        assert_eq!(add(PSN_MASK - 1, 5), 3);
        assert_eq!(sub(2, 5), PSN_MASK - 2);
        assert_eq!(diff(0, PSN_MASK), 1);
        assert_eq!(diff(PSN_MASK, 0), -1);
        assert!(lt(PSN_MASK, 0));
        assert!(le(5, 5));
        assert!(!lt(5, 5));
        // The window edge: exactly half the circle apart reads as "behind".
        assert_eq!(diff(1 << 23, 0), -(1 << 23));
        assert_eq!(diff((1 << 23) - 1, 0), (1 << 23) - 1);
    }

    /// Model check against i64 arithmetic: for any base and any offset in
    /// the valid window, add/diff/lt agree with the unwrapped integers.
    #[test]
    fn model_matches_unwrapped_integers() {
        // xorshift so the test needs no extra crate and is reproducible.
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let bases = [0u32, 1, PSN_MASK, PSN_MASK - 1, 1 << 23, (1 << 23) - 1];
        for i in 0..20_000 {
            let base = if i < bases.len() * 100 { bases[i % bases.len()] } else { next() as u32 & PSN_MASK };
            let off_a = (next() % (1 << 22)) as i64 - (1 << 21);
            let off_b = (next() % (1 << 22)) as i64 - (1 << 21);
            let a = (base as i64 + off_a).rem_euclid(1 << 24) as u32;
            let b = (base as i64 + off_b).rem_euclid(1 << 24) as u32;
            assert_eq!(diff(a, b) as i64, off_a - off_b, "a={a:#x} b={b:#x}");
            assert_eq!(lt(a, b), off_a < off_b);
            assert_eq!(le(a, b), off_a <= off_b);
            let n = (next() % (1 << 23)) as u32;
            assert_eq!(diff(add(a, n), a), n as i32);
            assert_eq!(sub(add(a, n), n), a);
        }
    }
}
