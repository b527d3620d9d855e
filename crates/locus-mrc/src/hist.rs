//! Log-linear histograms over `u64` values (distances, reuse times).
//!
//! Values below `2^(sub_bits+1)` have a bucket each (exact). Above, every octave `[2^e, 2^(e+1))`
//! is split into `2^sub_bits` equal buckets, so a bucket's width is at most `2^-sub_bits` of its
//! values (HdrHistogram's layout; docs/models.md §0.4 uses the same idea with 256 buckets per octave).
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

/// `acc` plus the weights, added in order; runs of empty buckets are skipped eight at a time
/// (most of a sampled histogram is empty). Adding only the non-zero weights gives the same sum,
/// bit for bit, as adding every one.
fn sum_nonzero(mut acc: f64, ws: &[f64]) -> f64 {
    let mut chunks = ws.chunks_exact(8);
    for c in &mut chunks {
        if c.iter().any(|&w| w != 0.0) {
            for &w in c {
                if w != 0.0 {
                    acc += w;
                }
            }
        }
    }
    for &w in chunks.remainder() {
        if w != 0.0 {
            acc += w;
        }
    }
    acc
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
        sum_nonzero(0.0, &self.buckets[..self.used])
    }

    /// Non-empty buckets as `(lo, hi, weight)`, values increasing.
    #[cfg(test)]
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
        self.weight_at_most_and_total(xs).0
    }

    /// [`Hist::weight_at_most`] and [`Hist::finite_total`] in one pass over the buckets (the
    /// total continues the same running sum, so both are what the separate calls give).
    pub fn weight_at_most_and_total(&self, xs: &[f64]) -> (Vec<f64>, f64) {
        let b = &self.buckets[..self.used];
        let mut out = Vec::with_capacity(xs.len());
        let mut next = 0; // first bucket not yet in `below`
        let mut below = 0.0; // weight of the buckets entirely <= the current x
        for &x in xs {
            // floor without the libm call (the baseline x86-64 target has no SSE4.1 `roundsd`):
            // truncation is floor for the non-negative values below 2^53 capacities are.
            let xf = if (0.0..9_007_199_254_740_992.0).contains(&x) {
                (x as u64) as f64
            } else {
                x.floor()
            };
            // The bucket holding xf; it is entirely <= xf only when xf is its top.
            let end = if xf < 0.0 {
                0
            } else {
                let j = bucket_of(xf as u64, self.sub_bits);
                let (_, hi) = bucket_range(j, self.sub_bits);
                if (hi as f64) <= xf { j + 1 } else { j }
            }
            .min(b.len());
            if next < end {
                below = sum_nonzero(below, &b[next..end]);
                next = end;
            }
            // The bucket holding xf, values spread uniformly over it.
            let mut part = 0.0;
            if let Some(&w) = b.get(end).filter(|&&w| w != 0.0) {
                let (lo, hi) = bucket_range(end, self.sub_bits);
                if (lo as f64) <= xf {
                    part = w * (xf - lo as f64 + 1.0) / ((hi - lo + 1) as f64);
                }
            }
            out.push(below + part);
        }
        let total = sum_nonzero(below, &b[next..]);
        (out, total)
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

    /// `weight_at_most` one non-empty bucket at a time (the definition).
    fn weight_at_most_reference(h: &Hist, xs: &[f64]) -> Vec<f64> {
        let mut out = Vec::new();
        let mut it = h.iter().peekable();
        let mut below = 0.0;
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

    #[test]
    fn weight_at_most_equals_the_bucket_by_bucket_sums() {
        let mut rng = locus_common::Rng::new(5);
        for sub_bits in [0, 3, 12] {
            let mut h = Hist::new(sub_bits);
            for _ in 0..3000 {
                // Sparse, spread over many octaves, some negative (`_adj`) weights.
                let bits = rng.below(30);
                let v = rng.below(1 << bits);
                let w = if rng.below(10) == 0 {
                    -0.25
                } else {
                    1.0 + rng.below(7) as f64
                };
                h.add(v, w);
            }
            let mut xs: Vec<f64> = (0..500)
                .map(|_| rng.below(1 << 31) as f64 * 0.73 - 5.0)
                .collect();
            xs.extend([0.0, 1.0, 2.0, 255.0, 256.0, 4095.5, 1e300]);
            xs.sort_by(f64::total_cmp);
            let got = h.weight_at_most(&xs);
            let want = weight_at_most_reference(&h, &xs);
            let whole: f64 = h.iter().map(|(_, _, w)| w).fold(0.0, |a, w| a + w);
            for k in [0, 1, xs.len() / 2, xs.len()] {
                let (_, total) = h.weight_at_most_and_total(&xs[..k]);
                assert_eq!(total.to_bits(), h.finite_total().to_bits());
                assert_eq!(total.to_bits(), whole.to_bits());
            }
            for ((x, g), w) in xs.iter().zip(&got).zip(&want) {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "sub_bits {sub_bits} at {x}: {g} vs {w}"
                );
            }
        }
    }

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
