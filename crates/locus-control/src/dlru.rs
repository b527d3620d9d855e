//! `dlru`: Dynamic LRU (Y. Wang's dissertation, chapter 3; MemSys'20). Per pool, one miniature
//! K-LRU cache per candidate K runs on a hash-sampled copy of the pool's stream; every interval
//! the K with the least estimated miss penalty `P_K = M_K · (p + OH_K)` (Eq. 3.2) becomes the
//! pool's `maxmemory-samples` for the next interval.
//!
//! ```text
//!  Access(pool, key_hash) ──► GETs_i += 1 ──► hash(key) mod 2^24 < T_i ? ──no──► done
//!                                                  │ yes (R_i = T_i / 2^24: 1 while the pool's
//!                                                  │ sampled keys fit `sample_keys`, then falling)
//!                     distinct_i ∪= {key}          ▼
//!          ┌── mini Engine K=1  (max_items = C_i·R) ── GET miss? M_1 += 1, then fill
//!          ├── mini Engine K=2  ...
//!  pool i ─┼── mini Engine K=5  ...                     (the production eviction code: same
//!          ├── mini Engine K=10 ...                      evpool size as the pool, seeded RNG)
//!          └── mini Engine K=16 ...
//!  decide: C_i = the pool's capacity in objects (target, or its size when full, or what it can
//!          still grow to); resize every mini cache to C_i·R (a shrink evicts at once);
//!          |distinct_i| < 256 ? K = 5 : K = argmin_K M_K · (p_i + OH_1 · ratio_K)
//! ```
//!
//! * Sampling adapts to the working set (SHARDS fixed size): each pool samples at most
//!   `sample_keys` (4096) distinct keys, at a rate no higher than `rate` (1); a key dropped when
//!   the pool's threshold falls is deleted from its mini caches, and the `_adj` denominator sums
//!   the rate in force at each GET. A pool sampled at rate 1 is simulated exactly and trusted
//!   whatever its size; below that, `min_distinct` sampled keys are needed. (The dissertation's
//!   fixed `R = 1/200` left a tenant of a few thousand keys with a few dozen samples.)
//! * `p_i` is the pool's measured mean miss latency (`PoolState::penalty_us`: GET miss → SET of
//!   the same key, or the operator's hint); `default_penalty_us` when nothing is known yet.
//! * `OH_K = overhead_us · ratio_K`, where the ratios are the dissertation's Table 3.1 (machine
//!   A: 1.00, 1.64, 2.37, 3.18, 4.31 for K = 1, 2, 5, 10, 16; interpolated for other K). The
//!   absolute `OH_1` cannot be measured in a virtual-time simulation, so it is a setting. As in
//!   the paper it only decides between K with (nearly) equal miss counts, where it prefers the
//!   smaller K; ties go to the smaller K too.
//! * The mini caches are built at a pool's first access without a cap and are cut to `C_i·R` at
//!   the first decision (a K-LRU shrink, as the paper's "remove the overflow items"), so the
//!   first decision already compares warm caches. Counters are per interval; the caches persist.
//! * Each decision records, per pool, a one-point curve per K (`mini K=…` at `C_i`), the chosen K,
//!   the capacity, the distinct sampled keys and `M_K / (GETs·R)` (the `_adj` miss ratio) and
//!   `P_K` as notes.
//!
//! DLRU never sets targets: memory stays as the engine divides it (free competition unless
//! another mechanism sets budgets); it only chooses K. A pool not seen yet gets `default_k`, so
//! `ks = "K"` with `default_k = "K"` is a fixed-K baseline in the same experiment.

use std::sync::Arc;

use locus_common::VirtualClock;
use locus_mrc::sampling::{AdaptiveFilter, U64Hasher};
use locus_mrc::{Metric, Mrc, Unit};
use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use locus_engine::config::{EngineConfig, LruClockMode, TenantConfig};
use locus_engine::control::{
    Access, AccessKind, ControlError, ControlView, Controller, CurveRecord, Decision, PoolState,
    Settings,
};
use locus_engine::{Engine, Policy, PoolId, SetOptions, TenantId};

/// The candidate K of the dissertation (section 3.1.1).
pub const DLRU_KS: &[u32] = &[1, 2, 5, 10, 16];
/// Eviction-overhead ratios `OH_K / OH_1` for K = 1, 2, 5, 10, 16 (Table 3.1, machine A).
pub const DLRU_OVERHEAD_RATIOS: &[(u32, f64)] =
    &[(1, 1.00), (2, 1.64), (5, 2.37), (10, 3.18), (16, 4.31)];

/// Page size of the mini engines (values are empty: one 48-byte chunk per key).
const MINI_PAGE_SIZE: u64 = 16 << 10;
/// Bytes of pages reserved per mini object (a 48-byte chunk, rounded up generously).
const MINI_BYTES_PER_OBJECT: u64 = 128;

/// Settings of [`Dlru`] (the controller's `settings` table).
#[derive(Clone, Debug, PartialEq)]
pub struct DlruConfig {
    /// `ks`: the candidate K, increasing, each in 1..=64.
    pub ks: Vec<u32>,
    /// `overhead_ratios`: `OH_K / OH_1` per candidate K (default: Table 3.1, interpolated).
    pub overhead_ratios: Vec<f64>,
    /// `overhead_us`: `OH_1`, the eviction overhead of 1-LRU per miss, in µs.
    pub overhead_us: f64,
    /// `rate`: highest spatial sampling rate `R` of the mini caches, in (0, 1].
    pub rate: f64,
    /// `sample_keys`: most distinct keys sampled per pool (the rate falls to keep to it).
    pub sample_keys: u64,
    /// `min_distinct`: fewest distinct sampled keys in an interval to trust the mini caches.
    pub min_distinct: u64,
    /// `default_k`: K used when the mini caches are not trusted.
    pub default_k: u32,
    /// `default_penalty_us`: miss latency assumed while the pool's is unknown (0).
    pub default_penalty_us: f64,
    /// `max_mini_items`: largest mini cache, in objects (bounds memory).
    pub max_mini_items: u64,
    /// `lru_clock`: recency clock of the mini caches, `logical` or `redis` (follows the engine
    /// clock of the accesses).
    pub lru_clock: LruClockMode,
    /// `seed`: seed of the hash filter and of the mini engines' RNGs.
    pub seed: u64,
}

impl Default for DlruConfig {
    fn default() -> Self {
        DlruConfig {
            ks: DLRU_KS.to_vec(),
            overhead_ratios: DLRU_KS.iter().map(|&k| overhead_ratio(k)).collect(),
            overhead_us: 1.0,
            rate: 1.0,
            sample_keys: 4096,
            min_distinct: 256,
            default_k: 5,
            default_penalty_us: 100.0,
            max_mini_items: 1 << 20,
            lru_clock: LruClockMode::Logical,
            seed: 0,
        }
    }
}

/// `OH_K / OH_1` from Table 3.1, linearly interpolated between the measured K and extrapolated
/// beyond 16 with the last segment's slope.
pub fn overhead_ratio(k: u32) -> f64 {
    let t = DLRU_OVERHEAD_RATIOS;
    let k = f64::from(k.max(1));
    for w in t.windows(2) {
        let ((k0, r0), (k1, r1)) = ((f64::from(w[0].0), w[0].1), (f64::from(w[1].0), w[1].1));
        if k <= k1 {
            return r0 + (r1 - r0) * (k - k0) / (k1 - k0);
        }
    }
    let n = t.len();
    let ((k0, r0), (k1, r1)) = (
        (f64::from(t[n - 2].0), t[n - 2].1),
        (f64::from(t[n - 1].0), t[n - 1].1),
    );
    r1 + (r1 - r0) * (k - k1) / (k1 - k0)
}

fn bad(key: &str, value: String, expected: &str) -> ControlError {
    ControlError::BadSetting {
        controller: "dlru".into(),
        key: key.into(),
        value,
        expected: expected.into(),
    }
}

impl DlruConfig {
    /// Reads every setting (defaults as [`DlruConfig::default`]).
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] for an unparsable or out-of-range value.
    pub fn from_settings(s: &mut Settings) -> Result<Self, ControlError> {
        let d = DlruConfig::default();
        let ks = s.u32_list("ks", &d.ks)?;
        if ks
            .iter()
            .any(|&k| k == 0 || k > locus_engine::config::MAX_SAMPLES)
            || ks.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(bad(
                "ks",
                format!("{ks:?}"),
                "increasing K values in 1..=64",
            ));
        }
        let default_ratios: Vec<f64> = ks.iter().map(|&k| overhead_ratio(k)).collect();
        let overhead_ratios = s.f64_list("overhead_ratios", &default_ratios)?;
        if overhead_ratios.len() != ks.len() || overhead_ratios.iter().any(|r| *r < 0.0) {
            return Err(bad(
                "overhead_ratios",
                format!("{overhead_ratios:?}"),
                "one non-negative ratio per K in `ks`",
            ));
        }
        let overhead_us = s.f64("overhead_us", d.overhead_us)?;
        if overhead_us < 0.0 {
            return Err(bad("overhead_us", overhead_us.to_string(), "≥ 0 µs"));
        }
        let (rate, sample_keys) =
            crate::checks::read_adaptive_sampling("dlru", s, d.rate, d.sample_keys)?;
        let min_distinct = s.u64("min_distinct", d.min_distinct)?;
        let default_k = s.u32("default_k", d.default_k)?;
        if default_k == 0 || default_k > locus_engine::config::MAX_SAMPLES {
            return Err(bad("default_k", default_k.to_string(), "K in 1..=64"));
        }
        let default_penalty_us = s.f64("default_penalty_us", d.default_penalty_us)?;
        if default_penalty_us < 0.0 {
            return Err(bad(
                "default_penalty_us",
                default_penalty_us.to_string(),
                "≥ 0 µs",
            ));
        }
        let max_mini_items = s.u64("max_mini_items", d.max_mini_items)?;
        if max_mini_items == 0 || max_mini_items > 1 << 32 {
            return Err(bad(
                "max_mini_items",
                max_mini_items.to_string(),
                "1 ..= 2^32 objects",
            ));
        }
        let clock = s.string("lru_clock", "logical")?;
        let lru_clock = match clock.trim() {
            "logical" => LruClockMode::Logical,
            "redis" => LruClockMode::Redis,
            _ => return Err(bad("lru_clock", clock, "logical or redis")),
        };
        let seed = s.u64("seed", d.seed)?;
        Ok(DlruConfig {
            ks,
            overhead_ratios,
            overhead_us,
            rate,
            sample_keys,
            min_distinct,
            default_k,
            default_penalty_us,
            max_mini_items,
            lru_clock,
            seed,
        })
    }
}

/// One miniature K-LRU cache.
struct MiniK {
    k: u32,
    engine: Engine,
    tenant: TenantId,
    /// GET misses in the current interval.
    misses: u64,
}

/// The mini caches and interval counters of one pool.
struct PoolMini {
    minis: Vec<MiniK>,
    /// The pool's key sample.
    filter: AdaptiveFilter,
    clock: VirtualClock,
    /// Mini capacity in force (`None` before the first decision: uncapped).
    scaled: Option<u64>,
    evpool_size: u32,
    /// Distinct sampled keys this interval.
    distinct: HashSet<u64, BuildHasherDefault<U64Hasher>>,
    /// GETs of the pool this interval (all, sampled or not).
    gets: u64,
    /// Sampled GETs this interval.
    sampled_gets: u64,
    /// Σ over this interval's GETs of the rate in force (the expected sampled GETs).
    expected_gets: f64,
    /// Fills the mini engines refused (should stay 0).
    fill_failures: u64,
    /// The pool's cumulative eviction count at the last decision.
    last_evictions: u64,
    /// K chosen last.
    chosen: Option<u32>,
}

/// The `dlru` controller (see the module documentation).
pub struct Dlru {
    cfg: DlruConfig,
    pools: Vec<Option<PoolMini>>,
    /// Keys dropped from a sample by the last access (scratch).
    dropped: Vec<u64>,
}

impl std::fmt::Debug for Dlru {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dlru")
            .field("cfg", &self.cfg)
            .field("pools", &self.pools.iter().filter(|p| p.is_some()).count())
            .finish_non_exhaustive()
    }
}

impl Dlru {
    /// A controller with these settings.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] when the sampling rate is invalid.
    pub fn new(cfg: DlruConfig) -> Result<Self, ControlError> {
        AdaptiveFilter::new(cfg.rate, cfg.sample_keys as usize, cfg.seed)
            .map_err(|e| bad("rate", cfg.rate.to_string(), &e.to_string()))?;
        Ok(Dlru {
            cfg,
            pools: Vec::new(),
            dropped: Vec::new(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &DlruConfig {
        &self.cfg
    }

    /// `OH_K` in µs for the candidate at index `i`.
    fn overhead(&self, i: usize) -> f64 {
        self.cfg.overhead_us * self.cfg.overhead_ratios[i]
    }

    fn pool_mut(&mut self, pool: PoolId) -> Option<&mut PoolMini> {
        let i = pool.0 as usize;
        if self.pools.len() <= i {
            self.pools.resize_with(i + 1, || None);
        }
        if self.pools[i].is_none() {
            self.pools[i] = build_pool(&self.cfg, pool);
        }
        self.pools[i].as_mut()
    }

    /// The capacity in objects the pool is expected to have next interval (see the module doc).
    fn capacity_objects(view: &ControlView<'_>, p: &PoolState, evicted: bool) -> Option<f64> {
        if p.items == 0 {
            return None;
        }
        let density = if p.pages > 0 {
            p.items as f64 / p.pages as f64
        } else {
            return Some(p.items as f64);
        };
        let cap_pages = |pages: u64| match p.max_pages {
            Some(m) => pages.min(m),
            None => pages,
        };
        if let Some(t) = p.target_pages {
            return Some(cap_pages(t.max(p.min_pages)) as f64 * density);
        }
        if evicted {
            // Full: it holds what it can (pages, an item cap, or free competition).
            return Some(p.items as f64);
        }
        let free = view.pages_total.saturating_sub(view.pages_used);
        Some(cap_pages(p.pages + free) as f64 * density)
    }
}

fn build_pool(cfg: &DlruConfig, pool: PoolId) -> Option<PoolMini> {
    let clock = VirtualClock::new(0);
    // Validated at build; one hash seed for every pool.
    let filter = AdaptiveFilter::new(cfg.rate, cfg.sample_keys as usize, cfg.seed).ok()?;
    let mut minis = Vec::with_capacity(cfg.ks.len());
    for (j, &k) in cfg.ks.iter().enumerate() {
        let seed = cfg
            .seed
            .wrapping_add(u64::from(pool.0).wrapping_mul(0xD1B5_4A32_D192_ED03))
            .wrapping_add((j as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let bytes = cfg
            .max_mini_items
            .saturating_add(2)
            .saturating_mul(MINI_BYTES_PER_OBJECT);
        let ecfg = EngineConfig {
            maxmemory: (bytes / MINI_PAGE_SIZE + 8) * MINI_PAGE_SIZE,
            page_size: MINI_PAGE_SIZE,
            max_items: None,
            lru_clock: cfg.lru_clock,
            seed,
            ..EngineConfig::default()
        };
        // Settings were validated, so a failure here is a bug; the pool then runs without a model
        // (and always falls back to the default K) rather than taking the data path down.
        let mut engine = Engine::new(ecfg, Arc::new(clock.clone())).ok()?;
        let tenant = engine
            .add_tenant(TenantConfig {
                policy: Policy::AllkeysLru,
                samples: k,
                max_items: Some(cfg.max_mini_items),
                ..TenantConfig::new("mini")
            })
            .ok()?;
        minis.push(MiniK {
            k,
            engine,
            tenant,
            misses: 0,
        });
    }
    Some(PoolMini {
        minis,
        filter,
        clock,
        scaled: None,
        evpool_size: locus_engine::config::DEFAULT_EVPOOL_SIZE,
        distinct: HashSet::default(),
        gets: 0,
        sampled_gets: 0,
        expected_gets: 0.0,
        fill_failures: 0,
        last_evictions: 0,
        chosen: None,
    })
}

impl Controller for Dlru {
    fn name(&self) -> &'static str {
        "dlru"
    }

    fn on_access(&mut self, a: &Access) {
        let is_get = matches!(a.kind, AccessKind::GetHit | AccessKind::GetMiss);
        let lru_redis = self.cfg.lru_clock == LruClockMode::Redis;
        let mut dropped = std::mem::take(&mut self.dropped);
        let Some(pm) = self.pool_mut(a.pool) else {
            return;
        };
        if is_get {
            pm.gets += 1;
            pm.expected_gets += pm.filter.rate();
        }
        // A DEL never admits a key to the sample.
        let sampled = if a.kind == AccessKind::Delete {
            pm.filter.passes(a.key_hash)
        } else {
            pm.filter.offer(a.key_hash, &mut dropped)
        };
        for k in dropped.drain(..) {
            pm.distinct.remove(&k);
            let key = k.to_le_bytes();
            for m in &mut pm.minis {
                m.engine.delete(m.tenant, &key);
            }
        }
        self.dropped = dropped;
        if !sampled {
            return;
        }
        let Some(Some(pm)) = self.pools.get_mut(a.pool.0 as usize) else {
            return;
        };
        if lru_redis {
            pm.clock.set_us(a.now_us);
        }
        pm.distinct.insert(a.key_hash);
        if is_get {
            pm.sampled_gets += 1;
        }
        let key = a.key_hash.to_le_bytes();
        for m in &mut pm.minis {
            let fill = match a.kind {
                AccessKind::GetHit | AccessKind::GetMiss => {
                    if m.engine.get(m.tenant, &key).is_some() {
                        false
                    } else {
                        m.misses += 1;
                        true
                    }
                }
                AccessKind::Set => true,
                AccessKind::Delete => {
                    m.engine.delete(m.tenant, &key);
                    false
                }
            };
            if fill
                && m.engine
                    .set(m.tenant, &key, &[], SetOptions::default())
                    .is_err()
            {
                pm.fill_failures += 1;
            }
        }
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let mut d = Decision::default();
        for p in view.pools {
            let i = p.pool.0 as usize;
            let Some(Some(pm)) = self.pools.get(i) else {
                // No access yet (the decision at start): the default K, so that a one-candidate
                // `dlru` is an exact fixed-K run from the first request.
                d.notes.push((format!("pool{i}.fallback"), 1.0));
                d.notes
                    .push((format!("pool{i}.k"), f64::from(self.cfg.default_k)));
                if p.samples != self.cfg.default_k {
                    d.samples.push((p.pool, self.cfg.default_k));
                }
                continue;
            };
            let evicted = p.evictions > pm.last_evictions;
            let cap = Self::capacity_objects(view, p, evicted);
            let penalty = if p.penalty_us > 0.0 {
                p.penalty_us
            } else {
                self.cfg.default_penalty_us
            };
            let overheads: Vec<f64> = (0..self.cfg.ks.len()).map(|j| self.overhead(j)).collect();
            let min_distinct = self.cfg.min_distinct;
            let default_k = self.cfg.default_k;
            let max_mini = self.cfg.max_mini_items;
            let Some(Some(pm)) = self.pools.get_mut(i) else {
                continue;
            };
            let prefix = format!("pool{i}");
            let distinct = pm.distinct.len() as u64;
            let r = pm.filter.rate();
            // At rate 1 the mini caches are the pool itself, simulated exactly.
            let enough = distinct >= min_distinct || (r >= 1.0 && distinct > 0);
            let trusted = enough && pm.scaled.is_some() && cap.is_some();
            // The choice from this interval's miss counts (equal caches: ties to the smaller K).
            let denom = pm.expected_gets;
            let mut best: Option<(f64, u32)> = None;
            for (j, m) in pm.minis.iter().enumerate() {
                let cost = m.misses as f64 * (penalty + overheads[j]);
                let mr = if denom > 0.0 {
                    (m.misses as f64 / denom).min(1.0)
                } else {
                    1.0
                };
                d.notes.push((format!("{prefix}.mr.k{}", m.k), mr));
                d.notes.push((format!("{prefix}.cost.k{}", m.k), cost));
                let point = cap.filter(|&c| c > 0.0).map(|c| vec![(c, mr)]);
                if let Some(Ok(mrc)) = point.map(|v| Mrc::new(Unit::Objects, Metric::Requests, v)) {
                    d.curves.push(CurveRecord {
                        pool: p.pool,
                        label: format!("mini K={}", m.k),
                        mrc,
                    });
                }
                if best.is_none_or(|(b, _)| cost < b) {
                    best = Some((cost, m.k));
                }
            }
            let k = match best {
                Some((_, k)) if trusted => k,
                _ => default_k,
            };
            d.notes.push((format!("{prefix}.k"), f64::from(k)));
            d.notes
                .push((format!("{prefix}.distinct"), distinct as f64));
            d.notes.push((
                format!("{prefix}.fallback"),
                if trusted { 0.0 } else { 1.0 },
            ));
            d.notes.push((format!("{prefix}.penalty_us"), penalty));
            d.notes
                .push((format!("{prefix}.sampled_gets"), pm.sampled_gets as f64));
            d.notes.push((format!("{prefix}.rate"), r));
            if p.samples != k {
                d.samples.push((p.pool, k));
            }
            pm.chosen = Some(k);

            // Resize the mini caches to the capacity of the next interval.
            if let Some(c) = cap {
                let scaled = ((c * r).round() as u64).clamp(1, max_mini);
                d.notes.push((format!("{prefix}.capacity"), c));
                d.notes
                    .push((format!("{prefix}.mini_capacity"), scaled as f64));
                if pm.scaled != Some(scaled) {
                    for m in &mut pm.minis {
                        // Cannot fail: the cap is ≥ 1.
                        let _ = m.engine.set_tenant_max_items(m.tenant, Some(scaled));
                    }
                    pm.scaled = Some(scaled);
                }
            }
            if pm.evpool_size != p.evpool_size {
                for m in &mut pm.minis {
                    let _ = m.engine.set_evpool_size(m.tenant, p.evpool_size);
                }
                pm.evpool_size = p.evpool_size;
            }
            if pm.fill_failures > 0 {
                d.notes
                    .push((format!("{prefix}.fill_failures"), pm.fill_failures as f64));
            }
            pm.last_evictions = p.evictions;
            pm.distinct.clear();
            pm.gets = 0;
            pm.sampled_gets = 0;
            pm.expected_gets = 0.0;
            for m in &mut pm.minis {
                m.misses = 0;
            }
        }
        d
    }
}

/// Builds the controller from its settings.
pub(crate) fn build(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let cfg = DlruConfig::from_settings(&mut s)?;
    s.finish()?;
    Ok(Box::new(Dlru::new(cfg)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_common::Rng;
    use locus_engine::control::{ControlConfig, Interval};

    /// A one-tenant engine holding at most `max_items` objects, logical LRU clock.
    fn engine(max_items: u64) -> (Engine, VirtualClock, TenantId) {
        let clock = VirtualClock::new(0);
        let mut e = Engine::new(
            EngineConfig {
                maxmemory: 64 << 20,
                page_size: 64 << 10,
                max_items: Some(max_items),
                lru_clock: LruClockMode::Logical,
                seed: 7,
                ..EngineConfig::default()
            },
            Arc::new(clock.clone()),
        )
        .unwrap();
        let t = e.add_tenant(TenantConfig::new("t")).unwrap();
        e.set_penalty_hint(t, Some(100.0));
        (e, clock, t)
    }

    fn dlru(pairs: &[(&str, &str)], interval: u64) -> (Box<dyn Controller>, ControlConfig) {
        let s = Settings::new(
            "dlru",
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        );
        (
            build(s).unwrap(),
            ControlConfig {
                interval: Interval::Requests(interval),
                ..ControlConfig::default()
            },
        )
    }

    /// GET each key; a miss is followed by a SET (demand fill), as the papers' clients do.
    fn drive(e: &mut Engine, clock: &VirtualClock, t: TenantId, keys: impl Iterator<Item = u64>) {
        for k in keys {
            clock.advance_us(10);
            let key = format!("key:{k}");
            if e.get(t, key.as_bytes()).is_none() {
                e.set(t, key.as_bytes(), &[7u8; 24], SetOptions::default())
                    .unwrap();
            }
        }
    }

    /// Zipf(`alpha`) ranks over `n` keys by inverse CDF.
    fn zipf(n: u64, alpha: f64, count: usize, seed: u64) -> Vec<u64> {
        let mut cdf = Vec::with_capacity(n as usize);
        let mut acc = 0.0;
        for i in 1..=n {
            acc += 1.0 / (i as f64).powf(alpha);
            cdf.push(acc);
        }
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let u = rng.next_f64() * acc;
                cdf.partition_point(|&c| c < u) as u64
            })
            .collect()
    }

    fn note(r: &locus_engine::control::IntervalRecord, name: &str) -> f64 {
        r.notes
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("note {name} missing in {:?}", r.notes))
            .1
    }

    #[test]
    fn settings_are_typed_and_unknown_keys_rejected() {
        let s = Settings::new("dlru", [("ks".to_string(), "1,5,3".to_string())]);
        assert!(matches!(build(s), Err(ControlError::BadSetting { key, .. }) if key == "ks"));
        let s = Settings::new("dlru", [("rate".to_string(), "0".to_string())]);
        assert!(matches!(build(s), Err(ControlError::BadSetting { key, .. }) if key == "rate"));
        let s = Settings::new(
            "dlru",
            [
                ("ks".to_string(), "1,16".to_string()),
                ("overhead_ratios".to_string(), "1".to_string()),
            ],
        );
        assert!(
            matches!(build(s), Err(ControlError::BadSetting { key, .. }) if key == "overhead_ratios")
        );
        let s = Settings::new("dlru", [("sampels".to_string(), "5".to_string())]);
        assert!(
            matches!(build(s), Err(ControlError::UnknownSetting { key, .. }) if key == "sampels")
        );
        let d = DlruConfig::default();
        assert_eq!(d.ks, vec![1, 2, 5, 10, 16]);
        assert_eq!(d.overhead_ratios, vec![1.0, 1.64, 2.37, 3.18, 4.31]);
        assert!((overhead_ratio(8) - (2.37 + 0.81 * 3.0 / 5.0)).abs() < 1e-12);
        assert!(overhead_ratio(32) > 4.31);
    }

    #[test]
    fn picks_random_eviction_on_a_loop_larger_than_the_cache() {
        // A 4000-key loop in a 2000-object cache: LRU always evicts the key needed next
        // (miss ratio 1), random eviction keeps a fraction of the loop.
        let (mut e, clock, t) = engine(2000);
        let (ctl, cfg) = dlru(&[("rate", "0.1"), ("min_distinct", "100")], 40_000);
        e.set_controller(ctl, cfg);
        drive(&mut e, &clock, t, (0..200_000u64).map(|i| i % 4000));
        let recs = e.control_records();
        assert!(recs.len() >= 4, "{} decisions", recs.len());
        let last = recs.last().unwrap();
        assert_eq!(note(last, "pool0.fallback"), 0.0);
        let (mr1, mr16) = (note(last, "pool0.mr.k1"), note(last, "pool0.mr.k16"));
        assert!(mr16 > 0.9 && mr1 < mr16 - 0.2, "mr1 {mr1} mr16 {mr16}");
        assert!(last.samples[0] <= 2, "chose K={}", last.samples[0]);
        // The first decision has not seen capped mini caches yet: default K.
        assert_eq!(note(&recs[0], "pool0.fallback"), 1.0);
        assert_eq!(recs[0].samples[0], 5);
    }

    /// GETs (with demand fills) of `keys`; returns the hits among the last `count_last`.
    fn hits(
        e: &mut Engine,
        clock: &VirtualClock,
        t: TenantId,
        keys: &[u64],
        count_last: usize,
    ) -> u64 {
        let mut hits = 0;
        for (i, &k) in keys.iter().enumerate() {
            clock.advance_us(10);
            let key = format!("key:{k}");
            if e.get(t, key.as_bytes()).is_some() {
                hits += u64::from(i + count_last >= keys.len());
            } else {
                e.set(t, key.as_bytes(), &[7u8; 24], SetOptions::default())
                    .unwrap();
            }
        }
        hits
    }

    /// Issue 16's user case: a loop of 6,000 keys in room for 5,000. At the dissertation's fixed
    /// R = 1/200 the pool had ~30 sampled keys, fell back to K = 5 and got 20% hits where random
    /// eviction gets ~70%. With the key budget the pool is sampled densely, the mini caches are
    /// trusted, and dlru must come within 5% of the best fixed K's hits.
    #[test]
    fn a_small_loop_is_profiled_and_dlru_matches_the_best_fixed_k() {
        let keys: Vec<u64> = (0..240_000u64).map(|i| i % 6000).collect();
        let measured = 120_000;
        let run = |pairs: &[(&str, &str)]| {
            let (mut e, clock, t) = engine(5000);
            let (ctl, cfg) = dlru(pairs, 20_000);
            e.set_controller(ctl, cfg);
            let h = hits(&mut e, &clock, t, &keys, measured);
            (h, e.control_records().last().unwrap().clone())
        };
        let (dyn_hits, last) = run(&[]);
        assert_eq!(note(&last, "pool0.fallback"), 0.0);
        assert!(note(&last, "pool0.distinct") >= 256.0);
        let mut best = (0, 0);
        for k in DLRU_KS {
            let ks = k.to_string();
            let (h, _) = run(&[("ks", &ks), ("default_k", &ks)]);
            if h > best.0 {
                best = (h, *k);
            }
        }
        assert!(
            dyn_hits as f64 >= 0.95 * best.0 as f64,
            "dlru {dyn_hits} hits (K={}) vs fixed K={} {} hits of {measured}",
            last.samples[0],
            best.1,
            best.0
        );
        assert!(
            best.0 as f64 > 0.5 * measured as f64,
            "best fixed K: {best:?}"
        );
    }

    #[test]
    fn picks_a_large_k_on_zipf() {
        let (mut e, clock, t) = engine(2000);
        let (ctl, cfg) = dlru(&[("rate", "0.1"), ("min_distinct", "100")], 40_000);
        e.set_controller(ctl, cfg);
        drive(&mut e, &clock, t, zipf(40_000, 0.9, 200_000, 3).into_iter());
        let recs = e.control_records();
        let last = recs.last().unwrap();
        let (mr1, mr16) = (note(last, "pool0.mr.k1"), note(last, "pool0.mr.k16"));
        assert!(mr1 > mr16 + 0.02, "mr1 {mr1} mr16 {mr16}");
        // Every trusted decision avoids random eviction.
        for r in recs.iter().skip(1) {
            assert!(
                r.samples[0] >= 5,
                "interval {} chose K={}",
                r.interval,
                r.samples[0]
            );
        }
        assert!(last.curves.iter().any(|c| c.label == "mini K=16"));
    }

    #[test]
    fn equal_miss_counts_prefer_the_cheapest_k_and_few_keys_fall_back() {
        // 500 keys in a 2000-object cache: no evictions, equal (zero) misses for every K, so
        // the eviction overhead decides: K = 1.
        let (mut e, clock, t) = engine(2000);
        let (ctl, cfg) = dlru(&[("rate", "1"), ("min_distinct", "256")], 20_000);
        e.set_controller(ctl, cfg);
        drive(&mut e, &clock, t, zipf(500, 0.5, 80_000, 5).into_iter());
        let last = e.control_records().last().unwrap().clone();
        assert_eq!(note(&last, "pool0.fallback"), 0.0);
        assert_eq!(last.samples[0], 1);

        // At R = 0.01 the same stream has ~5 distinct sampled keys: too few, default K.
        let (mut e, clock, t) = engine(2000);
        let (ctl, cfg) = dlru(&[("rate", "0.01"), ("default_k", "10")], 20_000);
        e.set_controller(ctl, cfg);
        drive(&mut e, &clock, t, zipf(500, 0.5, 80_000, 5).into_iter());
        let last = e.control_records().last().unwrap().clone();
        assert_eq!(note(&last, "pool0.fallback"), 1.0);
        assert_eq!(last.samples[0], 10);
    }
}
