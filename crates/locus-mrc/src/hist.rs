//! Log-linear histograms over `u64` values (distances, reuse times).
//!
//! Values below `2^(sub_bits+1)` have a bucket each (exact). Above, every octave `[2^e, 2^(e+1))`
//! is split into `2^sub_bits` equal buckets, so a bucket's width is at most `2^-sub_bits` of its
//! values (HdrHistogram's layout; MODELS.md 0.4 uses the same idea with 256 buckets per octave).
//! Weights are `f64`: sampled profilers add `1/R`, and `_adj` may subtract.
//!
//! ```text
//!  index: 0 1 2 … 2^(b+1)-1 | 2^(b+1) … 3·2^b-1 | 3·2^b … 4·2^b-1 | …
//!  width: 1 1 1 …     1     |    2    …    2    |    4   …    4   | …
//! ```

/// Bucket index of `v` with `sub_bits` sub-buckets per octave.
#[inline]
pub(crate) fn bucket_of(v: u64, sub_bits: u32) -> usize {
    let top = 1u64 << (sub_bits + 1);
    if v < top {
        v as usize
    } else {
        let e = 63 - v.leading_zeros();
        let shift = e - sub_bits;
        (((shift as u64 + 1) << sub_bits) + ((v >> shift) - (1u64 << sub_bits))) as usize
    }
}

/// Inclusive value range `[lo, hi]` of bucket `i`.
#[inline]
pub(crate) fn bucket_range(i: usize, sub_bits: u32) -> (u64, u64) {
    let i = i as u64;
    if i < (1u64 << (sub_bits + 1)) {
        (i, i)
    } else {
        let shift = (i >> sub_bits) - 1;
        let m = (i & ((1u64 << sub_bits) - 1)) + (1u64 << sub_bits);
        let lo = m << shift;
        let hi = lo + ((1u64 << shift) - 1);
        (lo, hi)
    }
}

/// A weighted histogram of `u64` values plus an infinity (cold) counter.
#[derive(Debug, Clone)]
pub(crate) struct Hist {
    sub_bits: u32,
    buckets: Vec<f64>,
    /// One past the highest bucket ever added to: the buckets beyond are 0 (`grow` doubles the
    /// vector, so up to half of it), and the whole-histogram passes stop here.
    used: usize,
    /// Weight of infinite values (cold misses).
    pub inf: f64,
}

impl Hist {
    pub fn new(sub_bits: u32) -> Self {
        Self {
            sub_bits,
            buckets: Vec::new(),
            used: 0,
            inf: 0.0,
        }
    }

    #[inline]
    pub fn add(&mut self, v: u64, w: f64) {
        let i = bucket_of(v, self.sub_bits);
        if i >= self.used {
            if i >= self.buckets.len() {
                self.grow(i);
            }
            self.used = i + 1;
        }
        self.buckets[i] += w;
    }

    #[cold]
    fn grow(&mut self, i: usize) {
        let n = (i + 1).max(self.buckets.len() * 2).max(64);
        self.buckets.resize(n, 0.0);
    }

    /// Sum of finite weights.
    pub fn finite_total(&self) -> f64 {
        self.buckets[..self.used].iter().sum()
    }

    /// Non-empty buckets as `(lo, hi, weight)`, values increasing.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, f64)> + '_ {
        self.buckets[..self.used]
            .iter()
            .enumerate()
            .filter(|(_, w)| **w != 0.0)
            .map(|(i, &w)| {
                let (lo, hi) = bucket_range(i, self.sub_bits);
                (lo, hi, w)
            })
    }

    /// For each threshold `x` (ascending), the weight of values `v ≤ x` (values spread uniformly
    /// over their bucket).
    pub fn weight_at_most(&self, xs: &[f64]) -> Vec<f64> {
        let mut out = Vec::with_capacity(xs.len());
        let mut it = self.iter().peekable();
        let mut below = 0.0; // weight of buckets entirely <= current x
        for &x in xs {
            let xf = x.floor();
            while let Some(&(_, hi, w)) = it.peek() {
                if (hi as f64) <= xf {
                    below += w;
                    it.next();
                } else {
                    break;
                }
            }
            let mut part = 0.0;
            if let Some(&(lo, hi, w)) = it.peek().filter(|b| (b.0 as f64) <= xf) {
                part = w * (xf - lo as f64 + 1.0) / ((hi - lo + 1) as f64);
            }
            out.push(below + part);
        }
        out
    }
}

impl Hist {
    /// Multiplies every weight by `f` (interval decay).
    pub fn scale(&mut self, f: f64) {
        for b in &mut self.buckets[..self.used] {
            *b *= f;
        }
        self.inf *= f;
    }

    /// Number of bucket slots in use (indices beyond are empty).
    pub fn slots(&self) -> usize {
        self.used
    }

    /// Weight of bucket `i` (0 beyond the allocated range).
    #[inline]
    pub fn at(&self, i: usize) -> f64 {
        self.buckets.get(i).copied().unwrap_or(0.0)
    }

    /// The sub-bucket bits.
    pub fn sub_bits(&self) -> u32 {
        self.sub_bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_line() {
        for sb in [2u32, 4, 8] {
            let mut expect_lo = 0u64;
            for i in 0..(2000usize).min((40usize) << sb) {
                let (lo, hi) = bucket_range(i, sb);
                assert_eq!(lo, expect_lo, "sb={sb} i={i}");
                assert!(hi >= lo);
                assert_eq!(bucket_of(lo, sb), i);
                assert_eq!(bucket_of(hi, sb), i);
                assert!((hi - lo + 1) as f64 <= (lo as f64 / (1u64 << sb) as f64).max(1.0));
                expect_lo = hi + 1;
            }
        }
        assert_eq!(bucket_of(u64::MAX, 12), bucket_of(u64::MAX - 5, 12));
    }

    #[test]
    fn weight_at_most_interpolates_inside_buckets() {
        let mut h = Hist::new(1); // exact below 4, then width 2 for [4,8), 4 for [8,16)
        h.add(1, 1.0);
        h.add(3, 2.0);
        h.add(8, 4.0); // bucket [8, 11]
        let w = h.weight_at_most(&[0.0, 1.0, 2.5, 3.0, 8.0, 9.0, 11.0, 100.0]);
        assert_eq!(w, vec![0.0, 1.0, 1.0, 3.0, 4.0, 5.0, 7.0, 7.0]);
    }
}
