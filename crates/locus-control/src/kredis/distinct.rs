//! A HyperLogLog count of a pool's distinct keys (Flajolet et al., 2007), beside its spatial
//! sample, so that kRedis can scale its KRR curves by the sample's *measured* rate.
//!
//! Why: a spatial sample at rate `R` of a set of `N` keys holds `Binomial(N, R)` of them, so
//! every sampled reuse distance, divided by `R`, is off by the sample's relative error, about
//! `1/√(N·R)`: at `R` = 0.05 a 13k-key loop is sampled through some 650 keys, ±4% per standard
//! deviation, and its cliff lands that much early or late (experiments/kredis.md, fifteen
//! tenants: a 4096 µs loop put 8% early, its target below the real cliff, 70% hits instead of
//! 100%). The ratio `sampled keys / distinct keys` is the rate the sample really has; with
//! 2^14 registers the count's relative error is 1.04/128 ≈ 0.8%, below the sample's whenever
//! the sample has fewer than about 15,000·(1 − R) keys.
//!
//! 16 KiB per pool, kept only by pools whose configured `rate` is below 1 (a pool sampled through
//! its key budget alone has at least `sample_keys` keys, ±1.6% at the default); one mix, one
//! `leading_zeros` and one compare per access.

/// Register index bits (`m = 2^P` registers).
const P: u32 = 14;
/// Registers.
const M: usize = 1 << P;

/// The relative standard error of [`Distinct::estimate`] (`1.04/√m`).
pub(super) const RELATIVE_ERROR: f64 = 1.04 / 128.0;

/// A HyperLogLog sketch of 64-bit key hashes.
#[derive(Clone)]
pub(super) struct Distinct {
    regs: Box<[u8]>,
}

impl Distinct {
    pub(super) fn new() -> Self {
        Distinct {
            regs: vec![0u8; M].into_boxed_slice(),
        }
    }

    /// Counts `key_hash` (the engine's key hash; mixed again here so that the register bits do
    /// not follow the sampling hash's).
    #[inline]
    pub(super) fn add(&mut self, key_hash: u64) {
        let x = mix(key_hash);
        let idx = (x >> (64 - P)) as usize;
        // The remaining 50 bits, with a guard bit so a zero tail still gives a finite rank.
        let rest = (x << P) | (1 << (P - 1));
        let rank = (rest.leading_zeros() + 1) as u8;
        if rank > self.regs[idx] {
            self.regs[idx] = rank;
        }
    }

    /// The estimated number of distinct keys added (linear counting while registers are empty,
    /// as the paper's small-range correction).
    pub(super) fn estimate(&self) -> f64 {
        let m = M as f64;
        let mut sum = 0.0;
        let mut zeros = 0u32;
        for &r in self.regs.iter() {
            sum += f64::from(-i32::from(r)).exp2();
            if r == 0 {
                zeros += 1;
            }
        }
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let raw = alpha * m * m / sum;
        if raw <= 2.5 * m && zeros > 0 {
            m * (m / f64::from(zeros)).ln()
        } else {
            raw
        }
    }
}

/// SplitMix64's finaliser.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within four standard errors at several sizes, small ones (linear counting) included, and
    /// repeated keys counted once.
    #[test]
    fn counts_distinct_keys_within_its_error() {
        for &n in &[10u64, 1_000, 13_028, 100_000, 1_000_000] {
            let mut d = Distinct::new();
            for _ in 0..2 {
                for k in 0..n {
                    d.add(locus_common::hash::hash_u64(k, 7));
                }
            }
            let e = d.estimate();
            let rel = (e - n as f64).abs() / n as f64;
            assert!(rel < 4.0 * RELATIVE_ERROR, "n = {n}: estimate {e:.0}");
        }
    }
}
