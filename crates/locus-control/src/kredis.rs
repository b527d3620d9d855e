//! `kredis`: locality- and latency-aware partitioning for K-LRU (Y. Wang's dissertation,
//! chapter 4; IEEE TCC'23). Per pool, KRR profiles the pool's K-LRU miss-ratio curve for several
//! K; the curves are merged by minimum into the mMRC (Eq. 4.1, the argmin K kept per size); a DP
//! over pages minimises the total miss latency `Σ mMRC_i(C_i) · a_i · p_i` (Eq. 4.3); each pool
//! gets its page target and, as K, the argmin of its mMRC at that target.
//!
//! ```text
//!  Access(pool i, key, size, op) ──► a_i += 1 (GETs) ──► KRR K=1 ┐ (spatially sampled at R_i,
//!                                                        KRR K=5 │  k_eff = K^e, `_adj`,
//!                                                        KRR K=8 │  byte capacities: varKRR)
//!                                                        KRR K=16┘
//!  decide:  MRC_K,i(u·g·ρ_i), u = 0..=U    (g pages per unit, ρ_i = pool i's item bytes/page)
//!           mMRC_i = min_K MRC_K,i, argmin K_i(u)
//!           cost_i[u] = mMRC_i(u) · a_i · p_i           (locus_alloc::miss_cost, MissLatency)
//!           units = locus_alloc::solve_dp(costs, U, floors, caps, max_move)
//!           target_i = units_i · g pages (pages left by rounding go to the costliest pool)
//!           K_i = argmin K of mMRC_i at target_i;  decay every histogram by `decay`
//! ```
//!
//! * Sampling adapts to the working set (SHARDS fixed size): each pool samples at most
//!   `sample_keys` (4096) distinct keys at a rate no higher than `rate` (1), so a pool of 50 keys
//!   is profiled whole and one of 100 M keys through 4096; the keys a falling threshold drops
//!   are forgotten by every K's profiler, and each sample weighs `1/R_i` of its time.
//! * `p_i` is the pool's mean miss latency (`PoolState::penalty_us`: the operator's hint or the
//!   measured GET miss → SET gap); `default_penalty_us` while unknown. `a_i` is its GETs in the
//!   interval.
//! * The KRR exponent (docs/models.md §6.6): `auto` uses 1.9 for pools with Redis's eviction pool and
//!   1.4 for textbook K-LRU (`evpool_size` 0); the profilers are rebuilt once if the first
//!   decision finds a textbook pool.
//! * Ablation switches (the dissertation's Figures 4.4 and 4.6): `partition = false` keeps free
//!   competition and only chooses K per pool at its current size ("single pool"); `model = eaet`
//!   partitions on EAET's exact-LRU curve (pRedis's model) and `model = none` on access rate ×
//!   penalty alone (no locality model); `dynamic_k = false` profiles and sets only `fixed_k`
//!   (kRedis's "varKRR with K = 5" step).
//! * Targets: the DP assumes a page holds `headroom` (5%) less than measured, because a
//!   spatially sampled curve places a working-set cliff a few percent early or late (a loop
//!   whose target lands exactly on the cliff then misses almost always); and the targets in
//!   force are kept unless the new plan is predicted `min_gain` (0.5%) better. A pool's curve
//!   is read `growth` (one) intervals of its footprint growth to the left: a KRR curve is flat
//!   past the largest reuse distance it has seen, so without this a tenant still adding keys
//!   (a static Zipf's tail) gets a target at its present footprint and evicts its own keys as it
//!   grows into it before the next decision (experiments/kredis.md). No targets are
//!   set while an active pool has not shown a single reuse yet (at most 10 decisions; a pool
//!   that has already requested more than twice the distinct keys all of memory holds is not
//!   waited for: a stream of distinct keys never shows one), and DP
//!   units that save nothing stay unspent (their pages go to the largest rate × penalty stake)
//!   instead of falling to pool 0 by the tie rule.
//! * On a tiered engine (sdTMM, dissertation section 5.1.5) the same DP runs a second time
//!   with the fast tier's pages (`ControlView::fast_pages`) as the memory, no floors, and each
//!   pool's largest-K curve (the fast tier demotes its exact LRU tail): each pool's fast-tier page target (`Decision::fast_pages`, notes
//!   `poolN.fast_target`), which the engine's demotion worker enforces. `model = none` splits
//!   the fast tier by rate × penalty; `partition = false` sets no fast targets either.
//! * Every decision records the curves used (each K's and the mMRC, at most 48 points each),
//!   and per pool its target, K, GETs, penalty and predicted miss ratio as notes.

use std::fmt;

use locus_alloc::{DpProblem, Objective, miss_cost, solve_dp};
use locus_mrc::sampling::{AdaptiveFilter, U64Map};
use locus_mrc::{
    EXPONENT_REDIS_POOL, EXPONENT_TEXTBOOK, Eaet, Krr, KrrConfig, Metric, Mrc, Op, Profiler, Unit,
};

use locus_engine::PoolId;
use locus_engine::control::{
    Access, AccessKind, ControlError, ControlView, Controller, CurveRecord, Decision, PoolState,
    Settings,
};

/// The K kRedis profiles by default (section 4.1.4).
pub const KREDIS_KS: &[u32] = &[1, 5, 8, 16];
/// Decisions that may wait for every active pool to show a reuse before partitioning.
const WARMUP_DECISIONS: u64 = 10;
/// Points kept per recorded curve.
const RECORD_POINTS: usize = 48;

/// Which model drives the partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KredisModel {
    /// KRR per K, merged by minimum (kRedis).
    Krr,
    /// EAET's exact-LRU curve (pRedis's model); K stays `fixed_k`.
    Eaet,
    /// No locality model: targets proportional to access rate × miss penalty.
    None,
}

/// The KRR exponent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KrrExponent {
    /// 1.9 for pools with Redis's eviction pool, 1.4 for textbook K-LRU.
    Auto,
    /// This exponent for every pool.
    Fixed(f64),
}

/// Settings of [`Kredis`] (the controller's `settings` table).
#[derive(Clone, Debug, PartialEq)]
pub struct KredisConfig {
    /// `ks`: the K profiled and merged (each in 1..=64, increasing).
    pub ks: Vec<u32>,
    /// `exponent`: `auto` or a number > 0 (`k_eff = K^exponent`).
    pub exponent: KrrExponent,
    /// `rate`: highest spatial sampling rate of KRR (the highest reference sampling rate of
    /// EAET), in (0, 1].
    pub rate: f64,
    /// `sample_keys`: most distinct keys KRR samples per pool (its rate falls to keep to it);
    /// with `model = "eaet"`, most pending EAET samples per pool, likewise.
    pub sample_keys: u64,
    /// `measured_rate`: with `rate` < 1, count each pool's distinct keys (HyperLogLog, 16 KiB a
    /// pool) and scale its KRR curves by the rate its sample really has (`distinct.rs`);
    /// `false` = the nominal rate.
    pub measured_rate: bool,
    /// `unit`: `bytes` (varKRR, the paper) or `objects`.
    pub unit: Unit,
    /// `objective`: `latency` (Eq. 4.3), `misses` or `hits` (Eq. 4.4).
    pub objective: Objective,
    /// `granularity`: pages per DP unit; 0 = the smallest that keeps units ≤ `max_units`.
    pub granularity: u64,
    /// `max_units`: DP size bound when `granularity` is 0.
    pub max_units: u64,
    /// `max_move`: most pages a target may move per interval (0 = unbounded).
    pub max_move: u64,
    /// `default_penalty_us`: miss latency assumed while a pool's is unknown.
    pub default_penalty_us: f64,
    /// `decay`: factor applied to the histograms after each decision (0 = per-interval curves).
    pub decay: f64,
    /// `headroom`: the DP assumes a page holds this fraction less than measured, so a target
    /// does not sit exactly on a curve's cliff that sampling places a few percent early.
    pub headroom: f64,
    /// `growth`: intervals of a pool's footprint growth its curve is moved by, so that a target
    /// leaves room for the keys the pool will add before the next decision (a KRR curve is flat
    /// past the largest reuse distance seen, and a tenant still adding keys evicts its own when it
    /// grows into a target set at its present footprint); 0 = off.
    pub growth: f64,
    /// `min_gain`: keep the targets in force unless the new plan's predicted cost is lower by
    /// at least this fraction (every page that moves evicts what it holds).
    pub min_gain: f64,
    /// `k_min_gain`: a pool keeps its K unless the argmin K's predicted miss ratio at its size
    /// is lower by more than this fraction of the current K's (taken as at least 0.1, so the
    /// smallest switch is 0.1 · `k_min_gain` in absolute miss ratio); 0 = always the argmin.
    pub k_min_gain: f64,
    /// `min_gets`: fewest GETs (all pools) in an interval to re-partition.
    pub min_gets: u64,
    /// `partition`: set page targets (multi-pool); `false` = K only (single shared pool).
    pub partition: bool,
    /// `model`: `krr`, `eaet` or `none`.
    pub model: KredisModel,
    /// `dynamic_k`: choose K per pool from the mMRC; `false` = always `fixed_k`.
    pub dynamic_k: bool,
    /// `fixed_k`: K when `dynamic_k` is false or the model has no K.
    pub fixed_k: u32,
    /// `seed`: seed of the sampling hash and KRR's draws.
    pub seed: u64,
}

impl Default for KredisConfig {
    fn default() -> Self {
        KredisConfig {
            ks: KREDIS_KS.to_vec(),
            exponent: KrrExponent::Auto,
            rate: 1.0,
            sample_keys: 4096,
            measured_rate: true,
            unit: Unit::Bytes,
            objective: Objective::MissLatency,
            granularity: 0,
            max_units: 1024,
            max_move: 0,
            default_penalty_us: 1000.0,
            decay: 0.5,
            headroom: 0.05,
            growth: 1.0,
            min_gain: 0.005,
            k_min_gain: 0.1,
            min_gets: 1000,
            partition: true,
            model: KredisModel::Krr,
            dynamic_k: true,
            fixed_k: 5,
            seed: 0,
        }
    }
}

fn bad(key: &str, value: String, expected: &str) -> ControlError {
    ControlError::BadSetting {
        controller: "kredis".into(),
        key: key.into(),
        value,
        expected: expected.into(),
    }
}

fn check_k(key: &str, k: u32) -> Result<u32, ControlError> {
    if (1..=locus_engine::config::MAX_SAMPLES).contains(&k) {
        Ok(k)
    } else {
        Err(bad(key, k.to_string(), "K in 1..=64"))
    }
}

impl KredisConfig {
    /// Reads every setting (defaults as [`KredisConfig::default`]).
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] for an unparsable or out-of-range value.
    pub fn from_settings(s: &mut Settings) -> Result<Self, ControlError> {
        let d = KredisConfig::default();
        let ks = s.u32_list("ks", &d.ks)?;
        for &k in &ks {
            check_k("ks", k)?;
        }
        if ks.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("ks", format!("{ks:?}"), "increasing K values"));
        }
        let e = s.string("exponent", "auto")?;
        let exponent = match e.trim() {
            "auto" => KrrExponent::Auto,
            x => match x.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => KrrExponent::Fixed(v),
                _ => return Err(bad("exponent", e, "auto or a number > 0")),
            },
        };
        let (rate, sample_keys) =
            crate::checks::read_adaptive_sampling("kredis", s, d.rate, d.sample_keys)?;
        let measured_rate = s.bool("measured_rate", d.measured_rate)?;
        let u = s.string("unit", "bytes")?;
        let unit = match u.trim() {
            "bytes" => Unit::Bytes,
            "objects" => Unit::Objects,
            _ => return Err(bad("unit", u, "bytes or objects")),
        };
        let o = s.string("objective", d.objective.name())?;
        let objective = o
            .parse::<Objective>()
            .map_err(|_| bad("objective", o.clone(), "latency, misses or hits"))?;
        let granularity = s.u64("granularity", d.granularity)?;
        let max_units = s.u64("max_units", d.max_units)?;
        if !(1..=1 << 16).contains(&max_units) {
            return Err(bad("max_units", max_units.to_string(), "1 ..= 65536"));
        }
        let max_move = s.u64("max_move", d.max_move)?;
        let default_penalty_us = s.f64("default_penalty_us", d.default_penalty_us)?;
        if default_penalty_us < 0.0 {
            return Err(bad(
                "default_penalty_us",
                default_penalty_us.to_string(),
                "≥ 0 µs",
            ));
        }
        let decay = s.f64("decay", d.decay)?;
        if !(0.0..=1.0).contains(&decay) {
            return Err(bad("decay", decay.to_string(), "a factor in [0, 1]"));
        }
        let headroom = s.f64("headroom", d.headroom)?;
        if !(0.0..0.5).contains(&headroom) {
            return Err(bad(
                "headroom",
                headroom.to_string(),
                "a fraction in [0, 0.5)",
            ));
        }
        let growth = s.f64("growth", d.growth)?;
        if !(0.0..=100.0).contains(&growth) {
            return Err(bad(
                "growth",
                growth.to_string(),
                "a number of intervals in [0, 100]",
            ));
        }
        let min_gain = s.f64("min_gain", d.min_gain)?;
        if !(0.0..=1.0).contains(&min_gain) {
            return Err(bad(
                "min_gain",
                min_gain.to_string(),
                "a fraction in [0, 1]",
            ));
        }
        let k_min_gain = s.f64("k_min_gain", d.k_min_gain)?;
        if !(0.0..=1.0).contains(&k_min_gain) {
            return Err(bad(
                "k_min_gain",
                k_min_gain.to_string(),
                "a fraction in [0, 1]",
            ));
        }
        let min_gets = s.u64("min_gets", d.min_gets)?;
        let partition = s.bool("partition", d.partition)?;
        let m = s.string("model", "krr")?;
        let model = match m.trim() {
            "krr" => KredisModel::Krr,
            "eaet" => KredisModel::Eaet,
            "none" => KredisModel::None,
            _ => return Err(bad("model", m, "krr, eaet or none")),
        };
        let dynamic_k = s.bool("dynamic_k", d.dynamic_k)?;
        let fixed_k = check_k("fixed_k", s.u32("fixed_k", d.fixed_k)?)?;
        let seed = s.u64("seed", d.seed)?;
        Ok(KredisConfig {
            ks,
            exponent,
            rate,
            sample_keys,
            measured_rate,
            unit,
            objective,
            granularity,
            max_units,
            max_move,
            default_penalty_us,
            decay,
            headroom,
            growth,
            min_gain,
            k_min_gain,
            min_gets,
            partition,
            model,
            dynamic_k,
            fixed_k,
            seed,
        })
    }

    /// The K whose curves are built: `ks`, or only `fixed_k` without dynamic K.
    fn profiled_ks(&self) -> Vec<u32> {
        if self.dynamic_k && self.model == KredisModel::Krr {
            self.ks.clone()
        } else {
            vec![self.fixed_k]
        }
    }
}

/// The profilers and interval counters of one pool.
struct PoolModel {
    /// `(K, profiler)`; one entry labelled `fixed_k` for EAET; empty for `model = none`.
    profilers: Vec<(u32, PoolProfiler)>,
    /// The pool's key sample (every K's KRR follows it).
    filter: AdaptiveFilter,
    /// The filter's rate the profilers were last told.
    rate: f64,
    /// The KRR exponent the profilers were built with.
    exponent: f64,
    /// Whether `exponent` came from `auto` with the Redis-pool guess.
    auto_guess: bool,
    /// Last size of each sampled key (a GET miss carries no size).
    sizes: U64Map<u32>,
    /// Mean item size of the pool at the last decision (size of unknown keys).
    mean_size: u32,
    /// GETs this interval.
    gets: u64,
    /// Distinct keys of the pool (all of them, not only the sample's), when `rate` < 1: the
    /// sample's measured rate scales its curves ([`measured_scale`]).
    distinct: Option<Distinct>,
    /// The pool's distinct keys (model estimate) at the last decision (`growth`).
    last_keys: f64,
}

/// The `kredis` controller (see the module documentation).
pub struct Kredis {
    cfg: KredisConfig,
    pools: Vec<Option<PoolModel>>,
    /// Keys dropped from a sample by the last access (scratch).
    dropped: Vec<u64>,
}

impl fmt::Debug for Kredis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kredis")
            .field("cfg", &self.cfg)
            .field("pools", &self.pools.iter().filter(|p| p.is_some()).count())
            .finish_non_exhaustive()
    }
}

/// One profiler of a pool: KRR by its concrete type, so that the data path's per-K call is a direct,
/// inlined call rather than a virtual one (four K per access); anything else boxed. Dereferences
/// to the [`Profiler`] for everything else.
enum PoolProfiler {
    Krr(Box<Krr>),
    Other(Box<dyn Profiler>),
}

impl PoolProfiler {
    /// Follows the pool's sample rate (KRR; EAET samples references at its own rate).
    fn set_sample_rate(&mut self, rate: f64) {
        if let PoolProfiler::Krr(k) = self {
            // The rate comes from a valid filter.
            let _ = k.set_sample_rate(rate);
        }
    }

    /// Forgets a key dropped from the pool's sample (KRR).
    fn forget(&mut self, key: u64) {
        if let PoolProfiler::Krr(k) = self {
            k.forget(key);
        }
    }

    /// [`Profiler::access_filtered`], statically dispatched for KRR.
    #[inline]
    fn access_filtered(&mut self, key: u64, size: u32, op: Op, sampled: bool) {
        match self {
            PoolProfiler::Krr(k) => k.access_filtered(key, size, op, sampled),
            PoolProfiler::Other(p) => p.access_filtered(key, size, op, sampled),
        }
    }
}

impl std::ops::Deref for PoolProfiler {
    type Target = dyn Profiler;
    fn deref(&self) -> &(dyn Profiler + 'static) {
        match self {
            PoolProfiler::Krr(k) => k.as_ref(),
            PoolProfiler::Other(p) => p.as_ref(),
        }
    }
}

impl std::ops::DerefMut for PoolProfiler {
    fn deref_mut(&mut self) -> &mut (dyn Profiler + 'static) {
        match self {
            PoolProfiler::Krr(k) => k.as_mut(),
            PoolProfiler::Other(p) => p.as_mut(),
        }
    }
}

/// Builds one pool's profilers.
/// Builds one pool's profilers; KRR follows the pool's sample, now at `rate`.
fn build_profilers(
    cfg: &KredisConfig,
    pool: PoolId,
    exponent: f64,
    rate: f64,
) -> Vec<(u32, PoolProfiler)> {
    let mut out: Vec<(u32, PoolProfiler)> = Vec::new();
    match cfg.model {
        KredisModel::Krr => {
            for k in cfg.profiled_ks() {
                // One hash seed for every K and pool: each pool's curves share one sample.
                let krr = Krr::new(KrrConfig {
                    k,
                    exponent,
                    rate: cfg.rate,
                    unit: cfg.unit,
                    metric: Metric::Requests,
                    seed: cfg.seed,
                    adjust: true,
                });
                // The settings were validated; a failure would be a bug, and the pool then
                // simply has no curve for this K.
                if let Ok(mut krr) = krr {
                    let _ = krr.set_sample_rate(rate);
                    out.push((k, PoolProfiler::Krr(Box::new(krr))));
                }
            }
        }
        KredisModel::Eaet => {
            let seed = cfg.seed ^ (u64::from(pool.0) << 32);
            // The same budget as KRR's keys: pending samples, the rate falling from `rate`.
            let budget = cfg.sample_keys as usize;
            if let Ok(e) = Eaet::with_budget(cfg.rate, budget, cfg.unit, Metric::Requests, seed) {
                out.push((cfg.fixed_k, PoolProfiler::Other(Box::new(e))));
            }
        }
        KredisModel::None => {}
    }
    out
}

impl Kredis {
    /// A controller with these settings.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] when the sampling rate is invalid.
    pub fn new(cfg: KredisConfig) -> Result<Self, ControlError> {
        AdaptiveFilter::new(cfg.rate, cfg.sample_keys as usize, cfg.seed)
            .map_err(|e| bad("rate", cfg.rate.to_string(), &e.to_string()))?;
        Ok(Kredis {
            cfg,
            pools: Vec::new(),
            dropped: Vec::new(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &KredisConfig {
        &self.cfg
    }

    fn pool_mut(&mut self, pool: PoolId) -> &mut PoolModel {
        let i = pool.0 as usize;
        if self.pools.len() <= i {
            self.pools.resize_with(i + 1, || None);
        }
        let cfg = &self.cfg;
        self.pools[i].get_or_insert_with(|| {
            let (exponent, auto_guess) = match cfg.exponent {
                KrrExponent::Auto => (EXPONENT_REDIS_POOL, true),
                KrrExponent::Fixed(e) => (e, false),
            };
            // Validated at build; one hash seed for every pool.
            let filter = AdaptiveFilter::new(cfg.rate, cfg.sample_keys as usize, cfg.seed)
                .unwrap_or_else(|_| unreachable!("sampling settings validated at build"));
            let rate = filter.rate();
            PoolModel {
                profilers: build_profilers(cfg, pool, exponent, rate),
                filter,
                rate,
                exponent,
                auto_guess,
                sizes: U64Map::default(),
                mean_size: 64,
                gets: 0,
                distinct: (cfg.measured_rate && cfg.rate < 1.0).then(Distinct::new),
                last_keys: 0.0,
            }
        })
    }
}

/// Model units (bytes or objects) per page of pool `p`, from what it holds; the whole cache's
/// density for a pool with too few pages to tell.
fn density(unit: Unit, p: &PoolState, pools: &[PoolState], page_size: u64) -> f64 {
    let per = |q: &PoolState| match unit {
        Unit::Bytes => q.item_bytes as f64,
        Unit::Objects => q.items as f64,
    };
    if p.pages >= 4 && per(p) > 0.0 {
        return per(p) / p.pages as f64;
    }
    let pages: u64 = pools.iter().map(|q| q.pages).sum();
    let held: f64 = pools.iter().map(per).sum();
    if pages > 0 && held > 0.0 {
        return held / pages as f64;
    }
    match unit {
        Unit::Bytes => page_size as f64,
        Unit::Objects => (page_size / 64).max(1) as f64,
    }
}

/// The factor between the rate a pool's sample really has and the rate it was drawn at:
/// `tracked / (distinct · R)`, from the pool's distinct-key count, when that count is the more
/// precise of the two (the sample's relative error, `√((1 − R)/tracked)`, above the count's);
/// else 1. See [`distinct`] for why: a 5% sample of a 13k-key loop puts its cliff ±4% off.
fn measured_scale(pm: &PoolModel) -> f64 {
    let Some(d) = &pm.distinct else {
        return 1.0;
    };
    let r = pm.filter.rate();
    let tracked = pm.filter.tracked() as f64;
    if r >= 1.0 || tracked < 1.0 {
        return 1.0;
    }
    if ((1.0 - r) / tracked).sqrt() <= distinct::RELATIVE_ERROR {
        return 1.0;
    }
    let n = d.estimate();
    if n < 1.0 {
        return 1.0;
    }
    // Bounded: a factor past 2 either way is not a sampling error but a broken count.
    (tracked / (n * r)).clamp(0.5, 2.0)
}

/// `m` with its capacities divided by `scale` (the curve of the profiler evaluated at `c · scale`,
/// as a curve of `c`).
fn stretch(m: &Mrc, scale: f64) -> Option<Mrc> {
    let pts = m.points().iter().map(|&(c, r)| (c / scale, r)).collect();
    Mrc::new(m.unit(), m.metric(), pts).ok()
}

/// At most `n` points of `m` (evenly spaced, always the last).
fn thin(m: &Mrc, n: usize) -> Mrc {
    let p = m.points();
    if p.len() <= n {
        return m.clone();
    }
    let step = p.len().div_ceil(n);
    let mut pts: Vec<(f64, f64)> = p.iter().step_by(step).copied().collect();
    if pts.last() != p.last() {
        pts.push(p[p.len() - 1]);
    }
    Mrc::new(m.unit(), m.metric(), pts).unwrap_or_else(|_| m.clone())
}

impl Controller for Kredis {
    fn name(&self) -> &'static str {
        "kredis"
    }

    fn on_access(&mut self, a: &Access) {
        let mut dropped = std::mem::take(&mut self.dropped);
        let pm = self.pool_mut(a.pool);
        let op = match a.kind {
            AccessKind::GetHit | AccessKind::GetMiss => {
                pm.gets += 1;
                Op::Get
            }
            AccessKind::Set => Op::Set,
            AccessKind::Delete => Op::Del,
        };
        if let (Some(d), false) = (pm.distinct.as_mut(), op == Op::Del) {
            d.add(a.key_hash);
        }
        // A DEL never admits a key to the sample.
        let sampled = if op == Op::Del {
            pm.filter.passes(a.key_hash)
        } else {
            pm.filter.offer(a.key_hash, &mut dropped)
        };
        if !dropped.is_empty() {
            for k in dropped.drain(..) {
                pm.sizes.remove(&k);
                for (_, prof) in &mut pm.profilers {
                    prof.forget(k);
                }
            }
            pm.rate = pm.filter.rate();
            for (_, prof) in &mut pm.profilers {
                prof.set_sample_rate(pm.rate);
            }
        }
        let size = if a.size > 0 {
            if sampled {
                pm.sizes.insert(a.key_hash, a.size);
            }
            a.size
        } else if sampled {
            let s = pm.sizes.get(&a.key_hash).copied().unwrap_or(pm.mean_size);
            if op == Op::Del {
                pm.sizes.remove(&a.key_hash);
            }
            s
        } else {
            pm.mean_size
        };
        // The KRR profilers follow the pool's sample: one hash for all of them.
        for (_, prof) in &mut pm.profilers {
            prof.access_filtered(a.key_hash, size, op, sampled);
        }
        self.dropped = dropped;
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let mut d = Decision::default();
        let cfg = self.cfg.clone();
        let n = view.pools.len();
        if n == 0 || view.pages_total == 0 {
            return d;
        }
        // Rebuild profilers guessed for Redis's pool when the pool turns out textbook K-LRU.
        for p in view.pools {
            let i = p.pool.0 as usize;
            if let Some(Some(pm)) = self.pools.get_mut(i) {
                if let Some(mean) = p.item_bytes.checked_div(p.items) {
                    pm.mean_size = mean.clamp(1, u64::from(u32::MAX)) as u32;
                }
                if pm.auto_guess && p.evpool_size == 0 && pm.exponent != EXPONENT_TEXTBOOK {
                    pm.exponent = EXPONENT_TEXTBOOK;
                    pm.profilers = build_profilers(&cfg, p.pool, EXPONENT_TEXTBOOK, pm.rate);
                    d.notes.push((format!("pool{i}.rebuilt_textbook"), 1.0));
                }
            }
        }

        let g = if cfg.granularity > 0 {
            cfg.granularity
        } else {
            view.pages_total.div_ceil(cfg.max_units).max(1)
        };
        let units = view.pages_total / g;
        d.notes.push(("granularity_pages".into(), g as f64));

        let mut gets = vec![0u64; n];
        let mut penalty = vec![cfg.default_penalty_us; n];
        let mut rho = vec![0.0; n];
        let mut beyond_memory = vec![false; n];
        // Whether a pool's curves show any reuse: some K's curve falls between no memory and all
        // of it. (Not "its miss ratio at all of memory is below 1": SHARDS's `_adj` moves a
        // sampled curve's level by the sample's count error, so a loop in its first pass, no
        // reuse at all, shows 0.92 at every size when its sample is 8% short.)
        let mut reused = vec![false; n];
        // Each pool's footprint growth since the last decision, in model units (`growth`), and
        // its distinct keys now.
        let mut grown = vec![0.0_f64; n];
        let mut new_keys = vec![f64::NAN; n];
        let mut mr: Vec<Vec<f64>> = vec![vec![1.0; units as usize + 1]; n];
        let mut merged: Vec<Option<locus_mrc::MergedMrc>> = vec![None; n];
        // Each K's curve per pool (for the K hysteresis).
        let mut k_curves: Vec<Vec<(u32, Mrc)>> = vec![Vec::new(); n];
        // The curve of the largest K per pool: the fast tier's (see `fast_targets`).
        let mut lru_like: Vec<Option<Mrc>> = vec![None; n];
        for p in view.pools {
            let i = p.pool.0 as usize;
            if i >= n {
                continue;
            }
            if p.penalty_us > 0.0 {
                penalty[i] = p.penalty_us;
            }
            let dens = density(cfg.unit, p, view.pools, view.page_size);
            rho[i] = dens * (1.0 - cfg.headroom);
            let Some(Some(pm)) = self.pools.get(i) else {
                continue;
            };
            // Distinct keys seen, in model units: more than twice what all of memory holds, and
            // still no reuse, is not a loop in its first pass that a share could serve (up to
            // twice the memory, K = 1 still keeps part of a loop; the four-tenant files' 40k-key
            // loops in 40k objects of memory are waited for, as before).
            let scale = measured_scale(pm);
            let keys = pm.filter.tracked() as f64 / (pm.filter.rate() * scale);
            let footprint = match cfg.unit {
                Unit::Bytes => keys * f64::from(pm.mean_size),
                Unit::Objects => keys,
            };
            beyond_memory[i] = footprint > 2.0 * view.pages_total as f64 * dens;
            let last = if cfg.unit == Unit::Bytes {
                pm.last_keys * f64::from(pm.mean_size)
            } else {
                pm.last_keys
            };
            grown[i] = (footprint - last).max(0.0);
            new_keys[i] = keys;
            gets[i] = pm.gets;
            if pm.profilers.is_empty() {
                continue;
            }
            let caps: Vec<f64> = (0..=units).map(|u| (u * g) as f64 * rho[i]).collect();
            // KRR places a sampled distance d at d / R; the sample's measured rate is R · scale,
            // so the curve at c is the profiler's at c · scale, moved back to c.
            let scaled: Vec<f64> = caps.iter().map(|c| c * scale).collect();
            let curves: Vec<(u32, Mrc)> = pm
                .profilers
                .iter()
                .filter_map(|(k, prof)| {
                    let m = prof.mrc(&scaled).ok()?;
                    Some((*k, if scale == 1.0 { m } else { stretch(&m, scale)? }))
                })
                .collect();
            // Raw points (not the curve's interpolation from (0, 1)): just above no memory,
            // where only `_adj`'s correction counts, and at all of memory.
            let all = scaled.last().copied().unwrap_or(0.0);
            reused[i] = pm.profilers.iter().any(|(_, prof)| {
                prof.mrc(&[f64::MIN_POSITIVE, all.max(1.0)])
                    .is_ok_and(|m| m.points()[1].1 < m.points()[0].1 - 0.001)
            });
            lru_like[i] = curves
                .iter()
                .max_by_key(|(k, _)| *k)
                .map(|(_, m)| m.clone());
            let refs: Vec<(u32, &Mrc)> = curves.iter().map(|(k, m)| (*k, m)).collect();
            let Ok(mm) = Mrc::merge_min(&refs) else {
                continue;
            };
            mr[i] = if cfg.growth > 0.0 && grown[i] > 0.0 {
                let shift = cfg.growth * grown[i];
                let shifted: Vec<f64> = caps.iter().map(|c| (c - shift).max(0.0)).collect();
                mm.mrc.miss_ratios(&shifted)
            } else {
                mm.mrc.miss_ratios(&caps)
            };
            let label = match cfg.model {
                KredisModel::Eaet => "eaet".to_string(),
                _ => "krr K=".to_string(),
            };
            for (k, m) in &curves {
                d.curves.push(CurveRecord {
                    pool: p.pool,
                    label: if cfg.model == KredisModel::Eaet {
                        label.clone()
                    } else {
                        format!("{label}{k}")
                    },
                    mrc: thin(m, RECORD_POINTS),
                });
            }
            if curves.len() > 1 {
                d.curves.push(CurveRecord {
                    pool: p.pool,
                    label: "mmrc".into(),
                    mrc: thin(&mm.mrc, RECORD_POINTS),
                });
            }
            merged[i] = Some(mm);
            k_curves[i] = curves;
        }

        for (i, &k) in new_keys.iter().enumerate() {
            if let (true, Some(Some(pm))) = (k.is_finite(), self.pools.get_mut(i)) {
                pm.last_keys = k;
            }
        }

        // Targets.
        let total_gets: u64 = gets.iter().sum();
        // Warm-up: while a pool with GETs has not shown a single reuse (its curve is 1 at every
        // size, e.g. a loop in its first pass), its value is unknown, not zero; partitioning now
        // would take its pages away. Wait, for at most WARMUP_DECISIONS decisions.
        // A pool that has shown no reuse among more than twice the distinct keys all of memory
        // holds is not waited for (a stream of distinct keys never shows one).
        let blind = (0..n).any(|i| gets[i] > 0 && !beyond_memory[i] && !reused[i]);
        let warming = blind && view.interval < WARMUP_DECISIONS && cfg.model != KredisModel::None;
        if warming {
            d.notes.push(("warming_up".into(), 1.0));
        }
        let planning = cfg.partition && total_gets >= cfg.min_gets && !warming;
        if planning {
            d.fast_pages = fast_targets(&cfg, view, &lru_like, &rho, &gets, &penalty, &mut d.notes);
        }
        let targets: Option<Vec<u64>> = if !planning {
            None
        } else if cfg.model == KredisModel::None {
            Some(proportional_targets(
                view.pools,
                view.pages_total,
                &gets,
                &penalty,
                true,
            ))
        } else {
            let mut costs: Vec<Vec<f64>> = (0..n)
                .map(|i| miss_cost(&mr[i], gets[i] as f64, penalty[i], cfg.objective))
                .collect();
            spend_only_savings(&mut costs, units);
            let floors: Vec<u64> = view.pools.iter().map(|p| floors_of(p, g, units)).collect();
            let caps: Vec<Option<u64>> = view
                .pools
                .iter()
                .map(|p| p.max_pages.map(|m| (m / g).max(floors_of(p, g, units))))
                .collect();
            let (current, max_move) = if cfg.max_move > 0 {
                (
                    Some(view.pools.iter().map(|p| p.pages / g).collect()),
                    Some(cfg.max_move.div_ceil(g)),
                )
            } else {
                (None, None)
            };
            let problem = DpProblem {
                costs,
                total: units,
                floors,
                caps,
                current,
                max_move,
            };
            match solve_dp(&problem) {
                Ok(a) if keep_current(view, &problem.costs, g, units, a.cost, cfg.min_gain) => {
                    d.notes.push(("objective".into(), a.cost));
                    d.notes.push(("kept_targets".into(), 1.0));
                    None
                }
                Ok(a) => {
                    d.notes.push(("objective".into(), a.cost));
                    let mut t: Vec<u64> = a.units.iter().map(|u| u * g).collect();
                    give_leftover(&mut t, view.pages_total, view.pools, &gets, &penalty);
                    Some(t)
                }
                Err(_) => {
                    // Cannot happen with the inputs built above (finite costs, floors ≤ caps
                    // as the tenant configuration validated); keep the targets in force.
                    d.notes.push(("dp_error".into(), 1.0));
                    None
                }
            }
        };

        // K per pool, at the size each pool will have.
        for p in view.pools {
            let i = p.pool.0 as usize;
            let pages = match &targets {
                Some(t) => t[i],
                None => p.target_pages.unwrap_or(p.pages),
            };
            let size = pages as f64 * rho[i];
            let k = match (&merged[i], cfg.dynamic_k && cfg.model == KredisModel::Krr) {
                (Some(mm), true) => {
                    let best = mm.best_label_at(size).unwrap_or(cfg.fixed_k);
                    settle_k(&k_curves[i], p.samples, best, size, cfg.k_min_gain)
                }
                _ => cfg.fixed_k,
            };
            if p.samples != k {
                d.samples.push((p.pool, k));
            }
            let prefix = format!("pool{i}");
            d.notes.push((format!("{prefix}.k"), f64::from(k)));
            d.notes.push((format!("{prefix}.gets"), gets[i] as f64));
            d.notes.push((format!("{prefix}.penalty_us"), penalty[i]));
            d.notes.push((format!("{prefix}.units_per_page"), rho[i]));
            if let Some(Some(pm)) = self.pools.get(i) {
                d.notes.push((format!("{prefix}.rate"), pm.filter.rate()));
                d.notes
                    .push((format!("{prefix}.sampled_keys"), pm.filter.tracked() as f64));
            }
            // The target in force after this decision (new, or kept).
            if let Some(t) = targets.as_ref().map(|t| t[i]).or(p.target_pages) {
                d.notes.push((format!("{prefix}.target"), t as f64));
            }
            if let Some(mm) = &merged[i] {
                d.notes
                    .push((format!("{prefix}.mr_predicted"), mm.mrc.miss_ratio(size)));
            }
        }
        d.pool_pages = targets;

        // Next interval.
        for pm in self.pools.iter_mut().flatten() {
            pm.gets = 0;
            for (_, prof) in &mut pm.profilers {
                // `decay` was validated to lie in [0, 1].
                let _ = prof.decay(cfg.decay);
            }
        }
        d
    }
}

/// The K a pool runs next: `best` (the argmin of its mMRC at `size`) only if its curve predicts a
/// miss ratio lower than the current K's by more than `k_min_gain` of the current one (of at
/// least 0.1); else the current K. The curves of several K are close wherever K matters little
/// (a stationary Zipf tenant's K = 5, 8 and 16 differ by a few thousandths), and their sampled
/// estimates cross from one decision to the next: without a margin K flaps at every decision,
/// each flap a different eviction policy for the pool and a different curve for the next
/// decision. The floor of 0.1 makes the smallest switch 0.1 · `k_min_gain` (0.01 at the
/// default), KRR's typical error against a simulated K-LRU (docs/models.md §10: MAE 0.002–0.008), so
/// a switch is never made on a difference the model cannot resolve. A phase change that makes
/// another K much better (a loop that no longer fits: K = 1 against LRU's misses) clears it.
fn settle_k(curves: &[(u32, Mrc)], current: u32, best: u32, size: f64, k_min_gain: f64) -> u32 {
    if best == current {
        return best;
    }
    let at = |k: u32| {
        curves
            .iter()
            .find(|(c, _)| *c == k)
            .map(|(_, m)| m.miss_ratio(size))
    };
    match (at(current), at(best)) {
        (Some(cur), Some(b)) if cur - b <= k_min_gain * cur.max(0.1) => current,
        _ => best,
    }
}

/// A pool's floor in DP units.
fn floors_of(p: &PoolState, g: u64, units: u64) -> u64 {
    p.min_pages.div_ceil(g).min(units)
}

/// Whether the targets in force are within `min_gain` of the plan's cost `best` on the same
/// cost curves (then moving pages is not worth the evictions).
fn keep_current(
    view: &ControlView<'_>,
    costs: &[Vec<f64>],
    g: u64,
    units: u64,
    best: f64,
    min_gain: f64,
) -> bool {
    let mut keep = 0.0;
    for (p, c) in view.pools.iter().zip(costs) {
        let Some(t) = p.target_pages else {
            return false;
        };
        let u = ((t / g).min(units) as usize).min(c.len().saturating_sub(1));
        keep += c.get(u).copied().unwrap_or(0.0);
    }
    keep - best <= min_gain * keep.abs()
}

/// `model = none`: `total` pages in proportion to GETs × penalty (the pools' floors first when
/// `floors`; caps respected).
fn proportional_targets(
    pools: &[PoolState],
    total: u64,
    gets: &[u64],
    penalty: &[f64],
    floors: bool,
) -> Vec<u64> {
    let n = pools.len();
    let w: Vec<f64> = (0..n).map(|i| gets[i] as f64 * penalty[i]).collect();
    let sum: f64 = w.iter().sum();
    let mut t: Vec<u64> = (0..n)
        .map(|i| {
            let share = if sum > 0.0 {
                (total as f64 * w[i] / sum).floor() as u64
            } else {
                total / n as u64
            };
            let p = &pools[i];
            let share = if floors {
                share.max(p.min_pages)
            } else {
                share
            };
            p.max_pages.map_or(share, |m| share.min(m))
        })
        .collect();
    let sum: u64 = t.iter().sum();
    if sum > total {
        // Floors pushed the sum over: scale down proportionally.
        for x in &mut t {
            *x = (*x as u128 * total as u128 / sum as u128) as u64;
        }
    }
    t
}

/// Makes a DP unit that saves nothing (a flat curve: no reuse seen yet, or beyond the working
/// set) cost a hair, so the DP leaves it unspent instead of breaking the tie towards pool 0;
/// unspent pages then go to the largest stake ([`give_leftover`]).
fn spend_only_savings(costs: &mut [Vec<f64>], units: u64) {
    let scale = costs
        .iter()
        .flat_map(|c| c.iter())
        .fold(0.0_f64, |m, &x| m.max(x.abs()));
    let eps = 1e-6 * scale / units.max(1) as f64;
    for c in costs {
        for (u, x) in c.iter_mut().enumerate() {
            *x += eps * u as f64;
        }
    }
}

/// Gives the pages of `total` that targets `t` leave over (unit rounding, unspent units) to the
/// pool with the largest stake (rate × penalty) that has no cap in the way.
fn give_leftover(t: &mut [u64], total: u64, pools: &[PoolState], gets: &[u64], penalty: &[f64]) {
    let left = total.saturating_sub(t.iter().sum());
    if left == 0 {
        return;
    }
    let best = (0..t.len())
        .filter(|&i| pools[i].max_pages.is_none_or(|m| t[i] + left <= m))
        .max_by(|&a, &b| (gets[a] as f64 * penalty[a]).total_cmp(&(gets[b] as f64 * penalty[b])));
    if let Some(b) = best {
        t[b] += left;
    }
}

/// Fast-tier page targets on a tiered engine (sdTMM's multi-tenant partitioning, dissertation
/// section 5.1.5): the DP of the page targets over each pool's profiled curves and the same
/// objective, with the fast tier's pages as the memory (a pool's fast-tier hits are the hits its
/// curve predicts at its fast share; what misses there is served from the slow tier or
/// missed). The curve is the largest profiled K's, `lru`, not the mMRC: the demotion worker
/// takes the tail of an exact LRU list, so a pool's fast share behaves as an LRU cache, where a
/// loop longer than the share never hits (a K = 1 curve would credit it with random hits). No
/// floors
/// (tenant floors are about all memory), the tenant caps kept. `None` untiered.
fn fast_targets(
    cfg: &KredisConfig,
    view: &ControlView<'_>,
    lru: &[Option<Mrc>],
    rho: &[f64],
    gets: &[u64],
    penalty: &[f64],
    notes: &mut Vec<(String, f64)>,
) -> Option<Vec<u64>> {
    let fast = view.fast_pages.filter(|&f| f > 0)?;
    let n = view.pools.len();
    let t = if cfg.model == KredisModel::None {
        proportional_targets(view.pools, fast, gets, penalty, false)
    } else {
        let g = if cfg.granularity > 0 {
            cfg.granularity
        } else {
            fast.div_ceil(cfg.max_units).max(1)
        };
        let units = fast / g;
        let mut costs: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                let caps: Vec<f64> = (0..=units).map(|u| (u * g) as f64 * rho[i]).collect();
                let mr = lru[i]
                    .as_ref()
                    .map_or_else(|| vec![1.0; caps.len()], |m| m.miss_ratios(&caps));
                miss_cost(&mr, gets[i] as f64, penalty[i], cfg.objective)
            })
            .collect();
        spend_only_savings(&mut costs, units);
        let problem = DpProblem {
            costs,
            total: units,
            floors: vec![0; n],
            caps: view
                .pools
                .iter()
                .map(|p| p.max_pages.map(|m| m / g))
                .collect(),
            current: None,
            max_move: None,
        };
        let Ok(a) = solve_dp(&problem) else {
            // Cannot happen with these inputs (finite costs, no floors); keep the targets.
            notes.push(("fast_dp_error".into(), 1.0));
            return None;
        };
        notes.push(("fast_objective".into(), a.cost));
        let mut t: Vec<u64> = a.units.iter().map(|u| u * g).collect();
        // Pages no curve values (past every working set, or unit rounding) go to the pool whose
        // fast share serves the most GETs: a sampled curve places a working set's edge a few
        // percent early or late, and that pool's hits are the ones an early edge would lose.
        // (Left unassigned they would sit empty: the demotion worker keeps every pool within
        // its target.)
        let left = fast.saturating_sub(t.iter().sum());
        let served = |i: usize| {
            let size = (t[i] as f64) * rho[i];
            let mr = lru[i].as_ref().map_or(1.0, |m| m.miss_ratio(size));
            gets[i] as f64 * (1.0 - mr)
        };
        let best = (0..n)
            .filter(|&i| view.pools[i].max_pages.is_none_or(|m| t[i] + left <= m))
            .max_by(|&a, &b| served(a).total_cmp(&served(b)));
        if let (Some(b), true) = (best, left > 0) {
            t[b] += left;
        }
        t
    };
    for (i, x) in t.iter().enumerate() {
        notes.push((format!("pool{i}.fast_target"), *x as f64));
    }
    Some(t)
}

/// Builds the controller from its settings.
pub(crate) fn build(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let cfg = KredisConfig::from_settings(&mut s)?;
    s.finish()?;
    Ok(Box::new(Kredis::new(cfg)?))
}

mod distinct;
use distinct::Distinct;

#[cfg(test)]
mod tests;
