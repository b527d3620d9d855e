//! Zipf sampling in O(1) per draw by rejection inversion (W. Hörmann and G. Derflinger,
//! "Rejection-inversion to generate variates from monotone discrete distributions", ACM TOMACS
//! 1996). No table of n probabilities: fine for n in the billions, and cheap to rebuild when n
//! grows (YCSB inserts).
//!
//! The one Zipf sampler of Locus: the trace generator's key streams and the tests' synthetic
//! workloads draw from it. Its stream is part of the generator's output (and so of the
//! simulator's golden numbers): a change to the arithmetic here moves them.

use crate::Rng;

/// Draws ranks `1..=n` with `P(k) ∝ k^-s`.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

/// `ln(1 + x) / x`, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

/// `(e^x − 1) / x`, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0)
    }
}

impl Zipf {
    /// A sampler over `1..=n` with exponent `s ≥ 0` (`s = 0` is uniform).
    ///
    /// # Panics
    /// If `n == 0` or `s` is negative or not finite (callers validate configuration first).
    pub fn new(n: u64, s: f64) -> Self {
        assert!(n > 0 && s.is_finite() && s >= 0.0, "Zipf::new({n}, {s})");
        let mut z = Self {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(n as f64 + 0.5);
        z.cut = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    /// Number of ranks.
    pub fn n(&self) -> u64 {
        self.n as u64
    }

    /// The density `x^-s`.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// An antiderivative of `h`: `(x^(1−s) − 1)/(1 − s)`, or `ln x` when `s = 1`.
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }

    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        (helper1(t) * y).exp()
    }

    /// Draws a rank in `1..=n` (rank 1 the most popular), using one or more `rng.next_f64()`.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.next_f64() * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_follow_the_power_law() {
        for &(n, s) in &[
            (10u64, 0.99f64),
            (1000, 0.8),
            (50, 1.0),
            (20, 1.5),
            (7, 0.0),
        ] {
            let z = Zipf::new(n, s);
            let mut rng = Rng::new(11);
            let draws = 400_000;
            let mut counts = vec![0u64; n as usize + 1];
            for _ in 0..draws {
                let k = z.sample(&mut rng);
                assert!((1..=n).contains(&k));
                counts[k as usize] += 1;
            }
            let norm: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
            for k in 1..=n.min(5) {
                let p = (k as f64).powf(-s) / norm;
                let got = counts[k as usize] as f64 / draws as f64;
                let sd = (p * (1.0 - p) / draws as f64).sqrt();
                assert!(
                    (got - p).abs() < 5.0 * sd + 1e-4,
                    "n={n} s={s} k={k}: {got} vs {p}"
                );
            }
        }
    }
}
