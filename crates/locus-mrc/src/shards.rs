//! SHARDS (Waldspurger et al., FAST'15; docs/models.md §2): exact LRU on a hash-sampled sub-stream,
//! distances scaled by `1/R`, with the `_adj` vertical-shift correction (docs/models.md §0.5).
//!
//! * Fixed rate: sample iff `hash mod 2^24 < T`; a sampled distance `d_s` hits a full cache `c` iff
//!   `d_s ≤ c·R`.
//! * Fixed size: track at most `s_max` sampled keys; when over, lower `T` to the largest tracked
//!   hash and drop every key with that hash. Each sample carries weight `1/R` at the rate in force
//!   when it was taken (the libCacheSim form), recorded at distance `d_s/R`.

use crate::hist::Hist;
use crate::profiler::{dist_sub_bits, metric_weight, mrc_from_hist, unit_weight};
use crate::sampling::{AdaptiveFilter, SAMPLE_MODULUS, SpatialFilter};
use crate::stack::ExactStack;
use crate::{Metric, Mrc, MrcError, Op, Profiler, Unit};
use locus_common::hash::hash_u64;

/// How SHARDS bounds its sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShardsMode {
    /// A fixed sampling rate `R ∈ (0, 1]`.
    FixedRate(f64),
    /// At most this many distinct sampled keys (starting at `R = 1`).
    FixedSize(usize),
}

/// SHARDS settings.
#[derive(Debug, Clone, Copy)]
pub struct ShardsConfig {
    /// Rate or size bound.
    pub mode: ShardsMode,
    /// Capacity unit.
    pub unit: Unit,
    /// Miss-ratio metric.
    pub metric: Metric,
    /// Hash seed of the spatial filter.
    pub seed: u64,
    /// Apply `_adj` (always, except to measure what it buys).
    pub adjust: bool,
}

/// The SHARDS profiler.
pub struct Shards {
    cfg: ShardsConfig,
    seed: u64,
    threshold: u64,
    stack: ExactStack,
    hist: Hist,
    /// Fixed size: the key sample (its threshold replaces `threshold`).
    fixed: Option<AdaptiveFilter>,
    /// Keys the last access dropped from the fixed-size sample (scratch).
    dropped: Vec<u64>,
    /// Metric weight of every GET in the full stream (the `N` of `_adj`).
    full_weight: f64,
    /// Sum of recorded sample weights (the `Ns` of `_adj`, in the same units as `full_weight·R`).
    sampled_weight: f64,
    accesses: u64,
    peak: f64,
}

impl Shards {
    /// A SHARDS profiler.
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] or [`MrcError::InvalidFixedSize`] for a bad bound.
    pub fn new(cfg: ShardsConfig) -> Result<Self, MrcError> {
        let (threshold, fixed) = match cfg.mode {
            ShardsMode::FixedRate(r) => (SpatialFilter::new(r, cfg.seed)?.threshold(), None),
            ShardsMode::FixedSize(s) => {
                (SAMPLE_MODULUS, Some(AdaptiveFilter::new(1.0, s, cfg.seed)?))
            }
        };
        let sub_bits = match cfg.mode {
            ShardsMode::FixedRate(_) => dist_sub_bits(cfg.unit),
            ShardsMode::FixedSize(_) => 12,
        };
        Ok(Self {
            seed: cfg.seed,
            cfg,
            threshold,
            stack: ExactStack::new(),
            hist: Hist::new(sub_bits),
            fixed,
            dropped: Vec::new(),
            full_weight: 0.0,
            sampled_weight: 0.0,
            accesses: 0,
            peak: 0.0,
        })
    }

    /// The current sampling rate `T/P`.
    pub fn rate(&self) -> f64 {
        match &self.fixed {
            Some(f) => f.rate(),
            None => self.threshold as f64 / SAMPLE_MODULUS as f64,
        }
    }

    /// Whether this access is sampled; a fixed-size sample admits the key (not on DEL) and the
    /// keys it drops are forgotten by the stack.
    #[inline]
    fn sampled(&mut self, key: u64, op: Op) -> bool {
        let Some(fx) = self.fixed.as_mut() else {
            return (hash_u64(key, self.seed) & (SAMPLE_MODULUS - 1)) < self.threshold;
        };
        if op == Op::Del {
            return fx.passes(key);
        }
        let sampled = fx.offer(key, &mut self.dropped);
        for k in self.dropped.drain(..) {
            self.stack.forget(k);
        }
        sampled
    }
}

impl Profiler for Shards {
    fn name(&self) -> String {
        let adj = if self.cfg.adjust { ",adj" } else { "" };
        match self.cfg.mode {
            ShardsMode::FixedRate(r) => format!("shards(R={r}{adj})"),
            ShardsMode::FixedSize(s) => format!("shards(size={s}{adj})"),
        }
    }
    fn unit(&self) -> Unit {
        self.cfg.unit
    }
    fn metric(&self) -> Metric {
        self.cfg.metric
    }

    #[inline]
    fn access(&mut self, key: u64, size: u32, op: Op) {
        self.accesses += 1;
        let mw = metric_weight(self.cfg.metric, size);
        if op == Op::Get {
            self.full_weight += mw;
        }
        if !self.sampled(key, op) {
            return;
        }
        let r = self.rate();
        let fixed_size = self.fixed.is_some();
        match op {
            Op::Get => {
                // Fixed rate: weight 1, unscaled distance (evaluated at c·R). Fixed size: weight 1/R
                // at distance d/R (the rate changes over time).
                let (w, scale) = if fixed_size {
                    (mw / r, 1.0 / r)
                } else {
                    (mw, 1.0)
                };
                self.sampled_weight += w;
                match self.stack.access(key, unit_weight(self.cfg.unit, size)) {
                    Some(d) => self.hist.add((d as f64 * scale).round() as u64, w),
                    None => self.hist.inf += w,
                }
            }
            Op::Set => {
                self.stack.access(key, unit_weight(self.cfg.unit, size));
            }
            Op::Del => {
                self.stack.delete(key);
            }
        }
        self.peak = self.peak.max(self.stack.total() as f64 / r);
    }

    fn accesses(&self) -> u64 {
        self.accesses
    }

    fn working_set(&self) -> f64 {
        self.peak
    }

    fn decay(&mut self, factor: f64) -> Result<(), MrcError> {
        crate::profiler::check_decay("shards", factor)?;
        self.hist.scale(factor);
        self.full_weight *= factor;
        self.sampled_weight *= factor;
        Ok(())
    }

    fn mrc(&self, capacities: &[f64]) -> Result<Mrc, MrcError> {
        let (expected, scale) = match self.cfg.mode {
            ShardsMode::FixedRate(_) => (self.full_weight * self.rate(), self.rate()),
            ShardsMode::FixedSize(_) => (self.full_weight, 1.0),
        };
        let zero = if self.cfg.adjust {
            expected - self.sampled_weight
        } else {
            0.0
        };
        mrc_from_hist(
            &self.hist,
            zero,
            scale,
            self.cfg.unit,
            self.cfg.metric,
            capacities,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adj_worked_example() {
        // docs/models.md §2: a b c d a b c d a c with a and c sampled (R = 0.5): _adj gives mr(4) = 0.4.
        // Find a seed and two keys with the right hashes for R = 0.5.
        let seed = 11;
        let f = SpatialFilter::new(0.5, seed).unwrap();
        let ins: Vec<u64> = (0..).filter(|&k| f.sampled(k)).take(2).collect();
        let outs: Vec<u64> = (0..).filter(|&k| !f.sampled(k)).take(2).collect();
        let (a, c, b, d) = (ins[0], ins[1], outs[0], outs[1]);
        let trace = [a, b, c, d, a, b, c, d, a, c];
        let mk = |adjust| {
            let mut s = Shards::new(ShardsConfig {
                mode: ShardsMode::FixedRate(0.5),
                unit: Unit::Objects,
                metric: Metric::Requests,
                seed,
                adjust,
            })
            .unwrap();
            for &k in &trace {
                s.access(k, 1, Op::Get);
            }
            s
        };
        let m = mk(true).mrc(&[3.0, 4.0]).unwrap();
        assert!((m.points()[1].1 - 0.4).abs() < 1e-12, "{m:?}");
        // sampled distances scaled: inf inf 4 4 4 4 -> at c=3 nothing hits: (6 - 0 ... ) with adj -1.
        assert!((m.points()[0].1 - 1.0).abs() < 1e-12, "{m:?}");
        let m = mk(false).mrc(&[4.0]).unwrap();
        assert!((m.points()[0].1 - 2.0 / 6.0).abs() < 1e-12, "{m:?}");
    }

    #[test]
    fn fixed_size_keeps_at_most_s_max_keys_and_lowers_the_rate() {
        let mut s = Shards::new(ShardsConfig {
            mode: ShardsMode::FixedSize(100),
            unit: Unit::Objects,
            metric: Metric::Requests,
            seed: 1,
            adjust: true,
        })
        .unwrap();
        for t in 0..100_000u64 {
            s.access(t % 5000, 1, Op::Get);
        }
        assert!(s.fixed.as_ref().unwrap().tracked() <= 100);
        assert!(s.stack.len() <= 100);
        // About 100 of 5000 keys sampled: R near 0.02.
        assert!((0.01..0.04).contains(&s.rate()), "{}", s.rate());
        // Loop of 5000: miss everything below 5000, hit above (cold misses 5%).
        let m = s.mrc(&[2000.0, 8000.0]).unwrap();
        assert!(m.points()[0].1 > 0.9, "{m:?}");
        assert!(m.points()[1].1 < 0.1, "{m:?}");
        assert!(
            Shards::new(ShardsConfig {
                mode: ShardsMode::FixedSize(0),
                unit: Unit::Objects,
                metric: Metric::Requests,
                seed: 1,
                adjust: true,
            })
            .is_err()
        );
    }
}
