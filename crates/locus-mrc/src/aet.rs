//! AET (Hu et al., USENIX ATC'16; docs/models.md §3) with reference sampling, and the shared
//! kinetic-equation solver that EAET (docs/models.md §4) also uses.
//!
//! A block at age `t` moves down the LRU stack at speed `v(t)`, the fraction of references with
//! reuse time greater than `t` (minus, for EAET, deletions above it). It leaves a cache of size `c`
//! at `AET(c)`, the smallest `T` with `Σ_{t<T} v(t) ≥ c`, and `mr(c)` is the share of reads with
//! reuse time `> AET(c)`.
//!
//! Reference sampling: each access is chosen with probability `r`; the chosen access's key is
//! remembered with its time, and at the key's next access the *forward* reuse time is recorded and
//! the key released. Samples still pending count as cold. Keys are never sampled by hash here:
//! docs/models.md measured MAE 0.04–0.17 for that.
//!
//! A fixed budget of pending samples ([`Aet::with_budget`], the reference-sampling counterpart
//! of SHARDS's fixed-size mode): the rate starts at its upper bound (1 = every reference) and
//! halves whenever the pending table outgrows the budget; each pending sample then stays with
//! probability ½ (by a hash of its key and time, so the survivors are a sample at the new rate)
//! and the histograms are halved, so what was counted before weighs as if sampled at the new
//! rate. At rate 1 every key has exactly one pending sample (its last access), so the rate
//! stays 1 while the key set fits the budget and falls as it outgrows it: a tenant of 50 keys
//! is profiled from every reference, one of 100 M keys through about `budget` pending samples.

use crate::hist::{Hist, bucket_range};
use crate::profiler::check_capacities;
use crate::sampling::{PendingFilter, RefSampler, U64Map};
use crate::{Metric, Mrc, MrcError, Op, Profiler, Unit};

/// Sub-bucket bits for reuse-time histograms (relative resolution 1/4096).
pub(crate) const RT_SUB_BITS: u32 = 12;

/// The kinetic solver input: reuse-time histograms over one bucketing.
pub(crate) struct Kinetic<'a> {
    /// Weight moving down the stack, by reuse time (AET: references; EAET: bytes).
    pub access: &'a Hist,
    /// Weight deleted, by reuse time (EAET only).
    pub delete: Option<&'a Hist>,
    /// Reads (or read bytes), by reuse time: the miss-ratio numerator.
    pub read: &'a Hist,
    /// Cold weight in the `access` units.
    pub cold: f64,
    /// Cold reads in the `read` units.
    pub cold_reads: f64,
}

impl Kinetic<'_> {
    /// Miss ratios at ascending capacities (in clock units: references or bytes).
    pub fn solve(&self, capacities: &[f64]) -> Vec<f64> {
        let sb = self.access.sub_bits();
        let del_at = |i: usize| self.delete.map_or(0.0, |d| d.at(i));
        let slots = self
            .access
            .slots()
            .max(self.read.slots())
            .max(self.delete.map_or(0, Hist::slots));
        let acc_total: f64 = (0..slots).map(|i| self.access.at(i)).sum();
        let del_total: f64 = (0..slots).map(del_at).sum();
        let n = self.cold + acc_total + del_total;
        let reads_total = self.cold_reads + (0..slots).map(|i| self.read.at(i)).sum::<f64>();
        if n <= 0.0 || reads_total <= 0.0 {
            return vec![1.0; capacities.len()];
        }
        // First find AET(c) for every capacity, then the reads with reuse time > AET(c).
        let mut aet: Vec<f64> = Vec::with_capacity(capacities.len());
        let mut ci = 0;
        // State at the start of the current segment.
        let mut acc_after = self.cold + acc_total; // weight with reuse time >= t (incl. cold)
        let mut del_before = 0.0; // deleted weight with reuse time < t
        let mut integral = 0.0; // Σ_{t' < t} v(t')
        let mut t: u64 = 0; // next time step to integrate
        // Answers the capacities reached inside a linear segment of `len` steps starting at `t0`
        // with speed `v0 + s·j` (clamped at 0): AET(c) = t0 + the smallest m with I ≥ c.
        let answer = |aet: &mut Vec<f64>,
                      ci: &mut usize,
                      integral: &mut f64,
                      t0: u64,
                      len: u64,
                      v0: f64,
                      s: f64| {
            let sum = |m: u64| -> f64 {
                // Σ_{j<m} max(0, v0 + s·j); v is non-increasing, so stop where it turns negative.
                let m = if s < 0.0 && v0 + s * (m as f64 - 1.0) < 0.0 {
                    if v0 <= 0.0 {
                        0
                    } else {
                        ((v0 / -s).floor() as u64 + 1).min(m)
                    }
                } else {
                    m
                };
                let mf = m as f64;
                mf * v0 + s * mf * (mf - 1.0) / 2.0
            };
            let full = sum(len);
            while *ci < capacities.len() && *integral + full >= capacities[*ci] {
                let c = capacities[*ci];
                let (mut lo, mut hi) = (0u64, len);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if *integral + sum(mid) >= c {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                aet.push((t0 + lo) as f64);
                *ci += 1;
            }
            *integral += full;
        };
        for i in 0..slots {
            let (a, d) = (self.access.at(i), del_at(i));
            if a == 0.0 && d == 0.0 {
                continue;
            }
            let (lo, hi) = bucket_range(i, sb);
            // Gap [t, lo): constant speed.
            if lo > t {
                let v = ((acc_after - del_before) / n).max(0.0);
                answer(&mut aet, &mut ci, &mut integral, t, lo - t, v, 0.0);
            }
            // Bucket [lo, hi]: weights spread uniformly, speed linear in t.
            let w = (hi - lo + 1) as f64;
            let v0 = (acc_after - a + a * (w - 1.0) / w - del_before) / n;
            let s = -(a + d) / (w * n);
            answer(&mut aet, &mut ci, &mut integral, lo, hi - lo + 1, v0, s);
            acc_after -= a;
            del_before += d;
            t = hi + 1;
        }
        // Beyond the last reuse time the speed is constant; whether or not the cache ever fills,
        // only cold reads miss.
        let read_finite = reads_total - self.cold_reads;
        let hits = self.read.weight_at_most(&aet);
        let mut out: Vec<f64> = hits
            .iter()
            .map(|h| ((reads_total - h) / reads_total).clamp(0.0, 1.0))
            .collect();
        out.resize(capacities.len(), (reads_total - read_finite) / reads_total);
        out
    }
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    time: u64,
}

/// The AET profiler (object capacities, request or byte miss ratio).
///
/// Every GET and SET is a reference; a DEL makes a pending sample's next access cold (its reuse is
/// cut). The miss ratio counts every reference (AET looks at the key sequence only).
pub struct Aet {
    metric: Metric,
    sampler: RefSampler,
    filter: PendingFilter,
    pending: U64Map<(Pending, f64)>,
    rt: Hist,
    read: Hist,
    cold: f64,
    cold_reads: f64,
    time: u64,
    accesses: u64,
    distinct_estimate: f64,
    sampled: u64,
    sampled_cold: u64,
    /// Most pending samples (`None`: a fixed rate).
    budget: Option<usize>,
    seed: u64,
}

pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

impl Aet {
    /// An AET profiler with reference-sampling rate `rate` (1.0 = every reference).
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] unless `rate ∈ (0, 1]`.
    pub fn new(rate: f64, metric: Metric, seed: u64) -> Result<Self, MrcError> {
        Ok(Self {
            metric,
            sampler: RefSampler::new(rate, seed)?,
            filter: PendingFilter::new(),
            pending: U64Map::default(),
            rt: Hist::new(RT_SUB_BITS),
            read: Hist::new(RT_SUB_BITS),
            cold: 0.0,
            cold_reads: 0.0,
            time: 0,
            accesses: 0,
            distinct_estimate: 0.0,
            sampled: 0,
            sampled_cold: 0,
            budget: None,
            seed,
        })
    }

    /// An AET profiler that keeps at most `budget` pending samples: its rate starts at
    /// `max_rate` and halves whenever the pending table outgrows `budget` (see the module
    /// documentation). Memory: about 40 bytes per pending sample (table entry and filter bits).
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] unless `max_rate ∈ (0, 1]`; [`MrcError::InvalidFixedSize`] for a
    /// zero budget.
    pub fn with_budget(
        max_rate: f64,
        budget: usize,
        metric: Metric,
        seed: u64,
    ) -> Result<Self, MrcError> {
        if budget == 0 {
            return Err(MrcError::InvalidFixedSize { size: budget });
        }
        let mut a = Self::new(max_rate, metric, seed)?;
        a.budget = Some(budget);
        Ok(a)
    }

    /// The current reference-sampling rate.
    pub fn rate(&self) -> f64 {
        self.sampler.rate()
    }

    /// Samples counted so far at the current rate (scaled down with it): what a curve is built
    /// from.
    pub fn samples(&self) -> u64 {
        self.sampled
    }

    /// Pending samples (the table's size; at most the budget after each access).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Halves the rate: each pending sample stays with probability ½ (by a hash of its key and
    /// time), the histograms and counts are halved.
    #[cold]
    fn halve(&mut self) {
        let rate = self.sampler.rate() / 2.0;
        let salt = self.seed ^ rate.to_bits();
        self.pending
            .retain(|k, (p, _)| mix64(k ^ mix64(p.time ^ salt)) & 1 == 0);
        self.rebuild_filter();
        self.rt.scale(0.5);
        self.read.scale(0.5);
        self.cold *= 0.5;
        self.cold_reads *= 0.5;
        self.sampled /= 2;
        self.sampled_cold /= 2;
        self.sampler = RefSampler::new(rate, salt).expect("half of a valid rate is valid");
    }

    #[cold]
    fn rebuild_filter(&mut self) {
        self.filter
            .rebuild(self.pending.len(), self.pending.keys().map(|&k| mix64(k)));
    }

    #[cold]
    fn settle(&mut self, key: u64, op: Op) {
        if let Some((p, w)) = self.pending.remove(&key) {
            if self.filter.remove(self.pending.len()) {
                self.rebuild_filter();
            }
            if op == Op::Del {
                self.cold += 1.0;
                self.cold_reads += w;
                self.sampled_cold += 1;
            } else {
                let rt = self.time - p.time;
                self.rt.add(rt, 1.0);
                self.read.add(rt, w);
            }
        }
    }
}

impl Profiler for Aet {
    fn name(&self) -> String {
        match self.budget {
            Some(b) => format!("aet(r={}, budget={b})", self.sampler.rate()),
            None => format!("aet(r={})", self.sampler.rate()),
        }
    }
    fn unit(&self) -> Unit {
        Unit::Objects
    }
    fn metric(&self) -> Metric {
        self.metric
    }

    #[inline]
    fn access(&mut self, key: u64, size: u32, op: Op) {
        self.accesses += 1;
        let h = mix64(key);
        if op != Op::Del {
            self.time += 1;
        }
        if self.filter.maybe(h) {
            self.settle(key, op);
        }
        if op == Op::Del {
            return;
        }
        if self.sampler.choose() {
            let w = crate::profiler::metric_weight(self.metric, size);
            self.pending.insert(key, (Pending { time: self.time }, w));
            if self.filter.insert(h, self.pending.len()) {
                self.rebuild_filter();
            }
            self.sampled += 1;
            if let Some(b) = self.budget {
                while self.pending.len() > b && self.sampler.rate() > f64::MIN_POSITIVE {
                    self.halve();
                }
            }
        }
    }

    fn accesses(&self) -> u64 {
        self.accesses
    }

    fn working_set(&self) -> f64 {
        // Each reference is a first access with probability cold/N; the distinct keys are about
        // that share of all references.
        if self.sampled == 0 {
            return self.distinct_estimate;
        }
        let cold = (self.sampled_cold as usize + self.pending.len()) as f64;
        cold / self.sampled as f64 * self.time as f64
    }

    fn decay(&mut self, factor: f64) -> Result<(), MrcError> {
        crate::profiler::check_decay("aet", factor)?;
        self.rt.scale(factor);
        self.read.scale(factor);
        self.cold *= factor;
        self.cold_reads *= factor;
        Ok(())
    }

    fn mrc(&self, capacities: &[f64]) -> Result<Mrc, MrcError> {
        check_capacities(capacities)?;
        // Pending samples have no next access in the window: cold.
        let pend_w: f64 = self.pending.values().map(|(_, w)| *w).sum();
        let k = Kinetic {
            access: &self.rt,
            delete: None,
            read: &self.read,
            cold: self.cold + self.pending.len() as f64,
            cold_reads: self.cold_reads + pend_w,
        };
        let m = k.solve(capacities);
        Mrc::new(
            Unit::Objects,
            self.metric,
            capacities.iter().copied().zip(m).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(keys: &str) -> Aet {
        let mut a = Aet::new(1.0, Metric::Requests, 1).unwrap();
        for k in keys.bytes() {
            a.access(k as u64, 1, Op::Get);
        }
        a
    }

    #[test]
    fn cyclic_example_is_exact() {
        let a = run(&"abc".repeat(50));
        let m = a.mrc(&[2.0, 3.0, 4.0]).unwrap();
        let got: Vec<f64> = m.points().iter().map(|p| p.1).collect();
        assert!((got[0] - 1.0).abs() < 1e-12, "{got:?}");
        assert!((got[1] - 0.02).abs() < 1e-12, "{got:?}");
        assert!((got[2] - 0.02).abs() < 1e-12, "{got:?}");
        assert!((a.working_set() - 3.0).abs() < 1e-9);
    }

    #[test]
    fn mpart_table1_example() {
        // a b c d a a d b: mr(1..4) = .875 .75 .625 .625 (forward reuse times = backward here).
        let a = run("abcdaadb");
        let m = a.mrc(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        let want = [0.875, 0.75, 0.625, 0.625];
        for (p, w) in m.points().iter().zip(want) {
            assert!((p.1 - w).abs() < 1e-12, "{m:?}");
        }
    }

    #[test]
    fn del_cuts_a_pending_reuse() {
        let mut a = Aet::new(1.0, Metric::Requests, 1).unwrap();
        a.access(1, 1, Op::Get);
        a.access(1, 1, Op::Del);
        a.access(1, 1, Op::Get);
        // Two references, both cold (the first's successor is a DEL, the second is pending).
        let m = a.mrc(&[1.0, 100.0]).unwrap();
        assert_eq!(m.points()[1].1, 1.0);
    }
}
