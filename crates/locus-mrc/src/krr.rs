//! KRR: the stack model of K-LRU (Yang, Wang, Wang, ICPP'21; kRedis; docs/models.md §6), with the
//! backward O(k log d) update, the sizeArray for byte distances (varKRR), GET/SET/DEL with holes,
//! and SHARDS-style spatial sampling with `_adj`.
//!
//! ```text
//!  stack S[1..=M] (S[1] = top)        pos: id -> index      ids: key -> id
//!  access of x at d:  L = d (or the topmost hole h < d: the hole drops to d and the chain starts
//!  at h);  while L > 1 { L' = ⌈(L−1)·U^{1/k}⌉;  S[L] = S[L'];  L = L' };  S[1] = x
//!  sizeArray A[j] = Σ size(S[1..=b_j]) at boundaries b_j ≈ 1.2^j; a step L' → L adds
//!  size(x) − size(S[L']) to every A[j] with L' ≤ b_j ≤ L − 1.
//! ```
//! `k = K^exponent`: 1.4 models textbook K-LRU, about 1.9 Redis's pooled sampler (docs/models.md §6.6).
//!
//! A caller that samples with a falling rate (a [`crate::sampling::AdaptiveFilter`] shared by
//! several profilers) sets the rate in force with [`Krr::set_sample_rate`] and removes the keys
//! the filter drops with [`Krr::forget`]: each sampled GET then weighs `R₀/R` and is recorded at
//! distance `d·R₀/R` with the `R` of its time (SHARDS fixed size, the libCacheSim form, in the
//! sampled units of the first rate `R₀`, so that a rate that never falls records exactly what a
//! fixed rate does).

use crate::hist::Hist;
use crate::profiler::{dist_sub_bits, metric_weight, mrc_from_hist, unit_weight};
use crate::sampling::{SpatialFilter, U64Map};
use crate::{Metric, Mrc, MrcError, Op, Profiler, Unit};
use locus_common::Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, OnceLock};

/// The exponent for textbook K-LRU (the reference code's `K_EXP`).
pub const EXPONENT_TEXTBOOK: f64 = 1.4;
/// The exponent measured best for Redis's 16-entry eviction pool.
pub const EXPONENT_REDIS_POOL: f64 = 1.9;

/// KRR settings.
#[derive(Debug, Clone, Copy)]
pub struct KrrConfig {
    /// K, the number of keys sampled per eviction (1 = random replacement).
    pub k: u32,
    /// `k_eff = K^exponent`.
    pub exponent: f64,
    /// Spatial sampling rate (1.0 = every key).
    pub rate: f64,
    /// Capacity unit (bytes uses the sizeArray).
    pub unit: Unit,
    /// Miss-ratio metric.
    pub metric: Metric,
    /// Seed of the hash filter and of the update's random draws.
    pub seed: u64,
    /// Apply `_adj` when sampling.
    pub adjust: bool,
}

impl KrrConfig {
    /// Textbook K-LRU settings without sampling.
    pub fn new(k: u32) -> Self {
        Self {
            k,
            exponent: EXPONENT_TEXTBOOK,
            rate: 1.0,
            unit: Unit::Objects,
            metric: Metric::Requests,
            seed: 0,
            adjust: true,
        }
    }
}

/// Prefix sums of sizes along the stack at geometric boundaries (docs/models.md §6.7).
#[derive(Debug, Clone)]
struct SizeArray {
    bnd: Vec<u32>,
    pre: Vec<i64>,
    total: i64,
    next_pow: f64,
}

const SIZE_BASE: f64 = 1.2;

/// Grid cells of the `U^(1/k)` inverse-CDF table.
const RATIO_STEPS: usize = 4096;

impl SizeArray {
    fn new() -> Self {
        Self {
            bnd: Vec::new(),
            pre: Vec::new(),
            total: 0,
            next_pow: 1.0,
        }
    }

    /// Makes sure some boundary is ≥ `len`.
    fn cover(&mut self, len: u32) {
        while self.bnd.last().is_none_or(|&b| b < len) {
            let last = self.bnd.last().copied().unwrap_or(0);
            let mut b = self.next_pow.floor() as u32;
            while (b as f64) <= last as f64 && self.next_pow < 1e12 {
                self.next_pow *= SIZE_BASE;
                b = self.next_pow.floor() as u32;
            }
            let b = b.max(last + 1);
            self.bnd.push(b);
            self.pre.push(self.total);
        }
    }

    fn first_at_least(&self, p: u32) -> usize {
        self.bnd.partition_point(|&b| b < p)
    }

    /// Adds `delta` to every boundary in `[lo, hi]`.
    #[inline]
    fn add_range(&mut self, lo: u32, hi: u32, delta: i64) {
        if delta == 0 {
            return;
        }
        let mut j = self.first_at_least(lo);
        while j < self.bnd.len() && self.bnd[j] <= hi {
            self.pre[j] += delta;
            j += 1;
        }
    }

    /// Adds `delta` to every boundary ≥ `lo` (and to the total).
    fn add_from(&mut self, lo: u32, delta: i64) {
        let j = self.first_at_least(lo);
        for p in &mut self.pre[j..] {
            *p += delta;
        }
        self.total += delta;
    }

    /// Interpolated bytes of `S[1..=d]`.
    fn prefix(&self, d: u32) -> f64 {
        let j = self.bnd.partition_point(|&b| b <= d);
        if j == 0 {
            return 0.0;
        }
        let j = j - 1;
        if self.bnd[j] == d || j + 1 >= self.bnd.len() {
            return self.pre[j] as f64;
        }
        let (b0, b1) = (self.bnd[j] as f64, self.bnd[j + 1] as f64);
        let (a0, a1) = (self.pre[j] as f64, self.pre[j + 1] as f64);
        a0 + (a1 - a0) * (d as f64 - b0) / (b1 - b0)
    }
}

/// The `U^(1/k)` grid of one `k`, and each cell-of-16's smallest value.
#[derive(Debug)]
struct RatioTable {
    at: Vec<f64>,
    cell_min: Vec<f64>,
}

impl RatioTable {
    fn new(k_eff: f64) -> Self {
        let at: Vec<f64> = (0..=RATIO_STEPS)
            .map(|i| (i as f64 / RATIO_STEPS as f64).powf(1.0 / k_eff))
            .collect();
        // Cell c covers draws with grid index 16c..16c+15, interpolating up to index 16c+16.
        let cell_min = (0..RATIO_STEPS / 16)
            .map(|c| {
                at[16 * c..=16 * c + 16]
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        Self { at, cell_min }
    }

    /// The table for `k_eff`, built once per process (every pool profiles the same few K).
    fn shared(k_eff: f64) -> Arc<Self> {
        type Tables = Vec<(u64, Arc<RatioTable>)>;
        static TABLES: OnceLock<Mutex<Tables>> = OnceLock::new();
        let mut tables = TABLES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let key = k_eff.to_bits();
        if let Some((_, t)) = tables.iter().find(|(k, _)| *k == key) {
            return Arc::clone(t);
        }
        let t = Arc::new(Self::new(k_eff));
        tables.push((key, Arc::clone(&t)));
        t
    }
}

/// The KRR profiler for one K.
pub struct Krr {
    cfg: KrrConfig,
    inv_k: f64,
    /// `ratio[i] = (i/RATIO_STEPS)^(1/k)`: the inverse CDF of `U^(1/k)` on a grid (see
    /// [`Krr::next_position`]), shared by every profiler with the same `k`.
    ratio: Arc<RatioTable>,
    filter: SpatialFilter,
    rng: Rng,
    ids: U64Map<u32>,
    stack: Vec<u32>, // stack[0] unused
    pos: Vec<u32>,
    size: Vec<u32>,
    is_hole: Vec<bool>,
    free_ids: Vec<u32>,
    holes: BinaryHeap<Reverse<u32>>,
    /// The caller's first and current rates, once [`Krr::set_sample_rate`] was called (the
    /// filter is then unused).
    external_rate: Option<(f64, f64)>,
    sizes: Option<SizeArray>,
    hist: Hist,
    full_weight: f64,
    sampled_weight: f64,
    accesses: u64,
    peak: f64,
}

impl Krr {
    /// A KRR profiler.
    ///
    /// # Errors
    /// [`MrcError::InvalidK`], [`MrcError::InvalidExponent`] or [`MrcError::InvalidRate`].
    pub fn new(cfg: KrrConfig) -> Result<Self, MrcError> {
        if cfg.k == 0 || cfg.k > 1024 {
            return Err(MrcError::InvalidK { k: cfg.k });
        }
        if !(cfg.exponent.is_finite() && cfg.exponent > 0.0) {
            return Err(MrcError::InvalidExponent {
                exponent: cfg.exponent,
            });
        }
        let k_eff = (cfg.k as f64).powf(cfg.exponent);
        let ratio = RatioTable::shared(k_eff);
        Ok(Self {
            inv_k: 1.0 / k_eff,
            ratio,
            filter: SpatialFilter::new(cfg.rate, cfg.seed)?,
            rng: Rng::new(cfg.seed ^ 0x004B_5252_u64),
            ids: U64Map::default(),
            stack: vec![0],
            pos: Vec::new(),
            size: Vec::new(),
            is_hole: Vec::new(),
            free_ids: Vec::new(),
            holes: BinaryHeap::new(),
            external_rate: None,
            sizes: (cfg.unit == Unit::Bytes).then(SizeArray::new),
            hist: Hist::new(dist_sub_bits(cfg.unit)),
            full_weight: 0.0,
            sampled_weight: 0.0,
            accesses: 0,
            peak: 0.0,
            cfg,
        })
    }

    /// The effective exponent `k = K^exponent` used in the update.
    pub fn k_eff(&self) -> f64 {
        1.0 / self.inv_k
    }

    fn len(&self) -> u32 {
        (self.stack.len() - 1) as u32
    }

    /// The sampling rate: the caller's (see [`Krr::set_sample_rate`]) or the filter's.
    pub fn rate(&self) -> f64 {
        match self.external_rate {
            Some((_, r)) => r,
            None => self.filter.rate(),
        }
    }

    /// From now on the caller samples (through [`Profiler::access_filtered`]) at `rate`, which may
    /// change at any time; samples are weighted by the rate of their time. Once called, the
    /// profiler's own filter is ignored.
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] unless `rate ∈ (0, 1]`.
    pub fn set_sample_rate(&mut self, rate: f64) -> Result<(), MrcError> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(MrcError::InvalidRate { rate });
        }
        let first = self.external_rate.map_or(rate, |(r0, _)| r0);
        self.external_rate = Some((first, rate));
        Ok(())
    }

    /// Removes `key` from the stack as a DEL would, without counting an access (a key dropped
    /// from the caller's sample).
    pub fn forget(&mut self, key: u64) {
        self.remove(key);
    }

    fn remove(&mut self, key: u64) {
        if let Some(id) = self.ids.remove(&key) {
            self.is_hole[id as usize] = true;
            self.holes.push(Reverse(self.pos[id as usize]));
            self.trim();
        }
    }

    fn new_id(&mut self, size: u32) -> u32 {
        if let Some(id) = self.free_ids.pop() {
            self.size[id as usize] = size;
            self.is_hole[id as usize] = false;
            id
        } else {
            let id = self.pos.len() as u32;
            self.pos.push(0);
            self.size.push(size);
            self.is_hole.push(false);
            id
        }
    }

    /// The topmost hole above position `d`, if any (drops stale heap entries).
    fn top_hole(&mut self, d: u32) -> Option<u32> {
        while let Some(&Reverse(h)) = self.holes.peek() {
            let live =
                (h as usize) < self.stack.len() && self.is_hole[self.stack[h as usize] as usize];
            if !live {
                self.holes.pop();
                continue;
            }
            return (h < d).then_some(h);
        }
        None
    }

    /// The next position of the backward chain from `l > 1`: `⌈(L−1)·U^{1/k}⌉` clamped to
    /// `1..=L−1`, `U` uniform on (0, 1].
    ///
    /// `U^{1/k}` is exact for K = 1 and in the lowest 16 grid cells (where the function is steep;
    /// 0.4% of draws), elsewhere linear interpolation on a 4096-cell grid, whose absolute error is
    /// below 3e-5 (checked numerically for k from 2.6 to 338). This replaces a libm `pow` on the
    /// chain's hot path by a table lookup. Most steps of a large k land on `L−1` whatever the
    /// interpolation gives: when `(L−1)` times the smallest table value of the draw's cell of 16
    /// already exceeds `L−2`, the answer is `L−1` without reading the (larger, colder) table.
    #[inline]
    fn next_position(&mut self, l: u32) -> u32 {
        let u = self.rng.next_f64_nonzero();
        let lm1 = (l - 1) as f64;
        let scaled = if self.inv_k == 1.0 {
            u
        } else {
            let x = u * RATIO_STEPS as f64;
            let i = x as usize;
            if i < 16 {
                u.powf(self.inv_k)
            } else if i >= RATIO_STEPS {
                1.0
            } else {
                // The interpolated value is at least the cell's minimum, and rounding is
                // monotone, so `(L−1)·value > L−2` too: the ceiling below is `L−1`.
                if lm1 * self.ratio.cell_min[i >> 4] > (l - 2) as f64 {
                    return l - 1;
                }
                let f = x - i as f64;
                let r = &self.ratio.at;
                r[i] + f * (r[i + 1] - r[i])
            }
        };
        // ⌈(L−1)·U^{1/k}⌉ in 1..=L−1 (by hand: `f64::ceil` is a libm call without SSE4.1).
        let x = lm1 * scaled;
        let mut lp = x as u32;
        if (lp as f64) < x {
            lp += 1;
        }
        lp.clamp(1, l - 1)
    }

    /// Moves `x` (at position `d`) to the top with the backward cyclic update.
    fn update(&mut self, x: u32, d: u32) {
        let sx = self.size[x as usize] as i64;
        let mut l = d;
        if let Some(h) = self.top_hole(d) {
            self.holes.pop();
            let hid = self.stack[h as usize];
            if let Some(sa) = self.sizes.as_mut() {
                sa.add_range(h, d - 1, sx - self.size[hid as usize] as i64);
            }
            self.stack[d as usize] = hid;
            self.pos[hid as usize] = d;
            self.holes.push(Reverse(d));
            l = h;
        }
        // Each step adds to the sizeArray boundaries in [L', L−1]; L only decreases, so one
        // cursor walks the boundaries down instead of a search per step. `cursor` = the first
        // boundary ≥ L.
        let mut cursor = self.sizes.as_ref().map_or(0, |sa| sa.first_at_least(l));
        while l > 1 {
            let lp = self.next_position(l);
            let y = self.stack[lp as usize];
            if let Some(sa) = self.sizes.as_mut() {
                let delta = sx - self.size[y as usize] as i64;
                while cursor > 0 && sa.bnd[cursor - 1] >= lp {
                    cursor -= 1;
                    sa.pre[cursor] += delta;
                }
            }
            self.stack[l as usize] = y;
            self.pos[y as usize] = l;
            l = lp;
        }
        self.stack[1] = x;
        self.pos[x as usize] = 1;
        self.trim();
    }

    /// Removes holes from the bottom of the stack.
    fn trim(&mut self) {
        while self.stack.len() > 1 {
            let id = *self.stack.last().unwrap_or(&0);
            if !self.is_hole[id as usize] {
                break;
            }
            let p = self.len();
            self.stack.pop();
            if let Some(sa) = self.sizes.as_mut() {
                sa.add_from(p, -(self.size[id as usize] as i64));
            }
            self.is_hole[id as usize] = false;
            self.free_ids.push(id);
        }
    }

    fn sampled_access(&mut self, key: u64, size: u32, op: Op, mw: f64) {
        let w = unit_weight(self.cfg.unit, size);
        if op == Op::Del {
            self.remove(key);
            return;
        }
        let (x, d, dist) = match self.ids.get(&key) {
            Some(&id) => {
                let d = self.pos[id as usize];
                let old = self.size[id as usize];
                if let Some(sa) = self.sizes.as_mut().filter(|_| old != w) {
                    sa.add_from(d, w as i64 - old as i64);
                }
                self.size[id as usize] = w;
                let dist = match &self.sizes {
                    Some(sa) => sa.prefix(d).round().max(1.0) as u64,
                    None => d as u64,
                };
                (id, d, Some(dist))
            }
            None => {
                let id = self.new_id(w);
                self.ids.insert(key, id);
                self.stack.push(id);
                let d = self.len();
                self.pos[id as usize] = d;
                if let Some(sa) = self.sizes.as_mut() {
                    sa.cover(d);
                    sa.add_from(d, w as i64);
                }
                (id, d, None)
            }
        };
        if op == Op::Get {
            // A caller's rate: weight R₀/R at distance d·R₀/R (sampled units of the first rate).
            let scale = match self.external_rate {
                Some((r0, r)) if r != r0 => r0 / r,
                _ => 1.0,
            };
            let w = mw * scale;
            self.sampled_weight += w;
            match dist {
                Some(v) if scale == 1.0 => self.hist.add(v, w),
                Some(v) => self.hist.add((v as f64 * scale).round() as u64, w),
                None => self.hist.inf += w,
            }
        }
        self.update(x, d);
        let footprint = match &self.sizes {
            Some(sa) => sa.total as f64,
            None => self.ids.len() as f64,
        };
        self.peak = self.peak.max(footprint / self.rate());
    }
}

impl Profiler for Krr {
    fn name(&self) -> String {
        format!(
            "krr(K={},exp={},R={:.4})",
            self.cfg.k,
            self.cfg.exponent,
            self.rate()
        )
    }
    fn unit(&self) -> Unit {
        self.cfg.unit
    }
    fn metric(&self) -> Metric {
        self.cfg.metric
    }

    #[inline]
    fn access(&mut self, key: u64, size: u32, op: Op) {
        let sampled = self.filter.sampled(key);
        self.access_filtered(key, size, op, sampled);
    }

    #[inline]
    fn access_filtered(&mut self, key: u64, size: u32, op: Op, sampled: bool) {
        debug_assert!(self.external_rate.is_some() || sampled == self.filter.sampled(key));
        self.accesses += 1;
        let mw = metric_weight(self.cfg.metric, size);
        if op == Op::Get {
            self.full_weight += mw;
        }
        if sampled {
            self.sampled_access(key, size, op, mw);
        }
    }

    fn accesses(&self) -> u64 {
        self.accesses
    }

    fn working_set(&self) -> f64 {
        self.peak
    }

    fn decay(&mut self, factor: f64) -> Result<(), MrcError> {
        crate::profiler::check_decay("krr", factor)?;
        self.hist.scale(factor);
        self.full_weight *= factor;
        self.sampled_weight *= factor;
        Ok(())
    }

    fn mrc(&self, capacities: &[f64]) -> Result<Mrc, MrcError> {
        // Sampled units of the fixed rate, or of the caller's first rate: evaluated at c·R₀.
        let r0 = match self.external_rate {
            Some((r0, _)) => r0,
            None => self.filter.rate(),
        };
        let expected = self.full_weight * r0;
        let zero = if self.cfg.adjust && self.rate() < 1.0 {
            expected - self.sampled_weight
        } else {
            0.0
        };
        mrc_from_hist(
            &self.hist,
            zero,
            r0,
            self.cfg.unit,
            self.cfg.metric,
            capacities,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A caller's falling rate (an adaptive key budget, as kRedis feeds KRR) gives the curve of
    /// the unsampled profiler within a few points, for a working set far above the budget, in
    /// objects and in bytes.
    #[test]
    fn a_callers_falling_rate_follows_the_full_curve() {
        use crate::sampling::AdaptiveFilter;
        for unit in [Unit::Objects, Unit::Bytes] {
            let mut full = krr(5, EXPONENT_REDIS_POOL, unit);
            let mut sampled = krr(5, EXPONENT_REDIS_POOL, unit);
            let mut filter = AdaptiveFilter::new(1.0, 2000, 9).unwrap();
            let mut dropped = Vec::new();
            let zipf = locus_common::Zipf::new(50_000, 0.9);
            let mut rng = Rng::new(4);
            for _ in 0..400_000 {
                let key = zipf.sample(&mut rng);
                let size = 50 + (key % 7) as u32 * 40;
                full.access(key, size, Op::Get);
                let hit = filter.offer(key, &mut dropped);
                for k in dropped.drain(..) {
                    sampled.forget(k);
                }
                sampled.set_sample_rate(filter.rate()).unwrap();
                sampled.access_filtered(key, size, Op::Get, hit);
            }
            assert!(filter.rate() < 0.06, "{}", filter.rate());
            let top = full.working_set();
            let caps: Vec<f64> = (1..=40).map(|i| top * i as f64 / 40.0).collect();
            let truth = full.mrc(&caps).unwrap();
            let err = sampled.mrc(&caps).unwrap().error_vs(&truth, &caps).unwrap();
            assert!(err.mae < 0.02, "{unit:?}: {err:?}");
            assert!(sampled.set_sample_rate(0.0).is_err());
        }
    }

    fn krr(k: u32, exponent: f64, unit: Unit) -> Krr {
        Krr::new(KrrConfig {
            exponent,
            unit,
            ..KrrConfig::new(k)
        })
        .unwrap()
    }

    #[test]
    fn backward_update_matches_the_linear_rule_distribution() {
        // docs/models.md §6.4: d = 5, K = 2 (k_eff = 2): eight outcomes with known probabilities.
        let want = [
            ("XABCD", 0.1823),
            ("XABDC", 0.2344),
            ("XACBD", 0.1458),
            ("XACDB", 0.1875),
            ("XBACD", 0.0608),
            ("XBADC", 0.0781),
            ("XBCAD", 0.0486),
            ("XBCDA", 0.0625),
        ];
        let mut counts = std::collections::HashMap::new();
        let runs = 100_000;
        let mut p = krr(2, 1.0, Unit::Objects);
        for run in 0..runs {
            // Build stack A B C D X (A on top) by accessing X D C B A (cold keys, fresh ids per run).
            p.ids.clear();
            p.stack.truncate(1);
            p.pos.clear();
            p.size.clear();
            p.is_hole.clear();
            p.free_ids.clear();
            let names = [b'X', b'D', b'C', b'B', b'A'];
            for &n in &names {
                let id = p.new_id(1);
                p.ids.insert(n as u64, id);
                p.stack.insert(1, id);
            }
            for (i, &id) in p.stack.clone().iter().enumerate().skip(1) {
                p.pos[id as usize] = i as u32;
            }
            let _ = run;
            let x = p.ids[&(b'X' as u64)];
            p.update(x, 5);
            let mut s = String::new();
            for &id in &p.stack[1..] {
                let name = p
                    .ids
                    .iter()
                    .find(|(_, v)| **v == id)
                    .map(|(k, _)| *k as u8)
                    .unwrap();
                s.push(name as char);
            }
            *counts.entry(s).or_insert(0u32) += 1;
        }
        for (s, prob) in want {
            let got = counts.get(s).copied().unwrap_or(0) as f64 / runs as f64;
            assert!((got - prob).abs() < 0.005, "{s}: {got} vs {prob}");
        }
    }

    #[test]
    fn k1_keeps_sizes_consistent_and_holes_trim() {
        let mut p = krr(3, EXPONENT_TEXTBOOK, Unit::Bytes);
        let mut rng = Rng::new(5);
        for _ in 0..3000 {
            let key = rng.below(200);
            let op = match rng.below(10) {
                0 => Op::Del,
                1 => Op::Set,
                _ => Op::Get,
            };
            p.access(key, 1 + rng.below(100) as u32, op);
            // Brute-force prefix sums at the boundaries (holes keep their size).
            let sa = p.sizes.as_ref().unwrap();
            let mut acc = 0i64;
            let mut j = 0;
            for pos in 1..=p.len() {
                acc += p.size[p.stack[pos as usize] as usize] as i64;
                while j < sa.bnd.len() && sa.bnd[j] == pos {
                    assert_eq!(sa.pre[j], acc, "boundary {pos}");
                    j += 1;
                }
            }
            for k in j..sa.bnd.len() {
                assert_eq!(sa.pre[k], acc);
            }
            assert_eq!(sa.total, acc);
            if p.len() > 0 {
                let bottom = p.stack[p.len() as usize];
                assert!(!p.is_hole[bottom as usize]);
            }
            for (&_, &id) in &p.ids {
                assert_eq!(p.stack[p.pos[id as usize] as usize], id);
            }
        }
    }

    #[test]
    fn large_k_approaches_lru_and_k1_is_random() {
        // Loop of 6 keys, cache of 5: LRU misses everything, random replacement ~1/3 (docs/models.md §6.11).
        let mut lru_like = krr(64, 1.4, Unit::Objects);
        let mut random = krr(1, 1.4, Unit::Objects);
        for t in 0..60_000u64 {
            lru_like.access(t % 6, 1, Op::Get);
            random.access(t % 6, 1, Op::Get);
        }
        let m = lru_like.mrc(&[5.0]).unwrap().points()[0].1;
        assert!(m > 0.99, "{m}");
        let m = random.mrc(&[5.0]).unwrap().points()[0].1;
        assert!((m - 0.333).abs() < 0.02, "{m}");
        assert!(Krr::new(KrrConfig::new(0)).is_err());
    }
}
