//! Miniature simulation (Waldspurger et al., ATC'17; docs/models.md §7) on the production
//! engine, and the full-size K-LRU ground truth built from the same code.
//!
//! [`MiniSim`] implements [`locus_mrc::Profiler`]: it hash-samples the key stream at rate `R`
//! (the same `hash_u64(key, seed) mod 2^24 < T` filter as SHARDS and KRR,
//! [`locus_mrc::sampling::SpatialFilter`]) and replays the sampled requests on one small
//! [`Engine`] per capacity `C_j`, scaled to `C_j·R`. Each mini engine runs the real policy code
//! (any [`Policy`], its K, Redis's eviction pool or textbook K-LRU) with a
//! [`VirtualClock`] and a seeded RNG, so a run is reproducible.
//!
//! ```text
//!  (key, size, op) ──► N += w(GET) ──► hash(key) mod 2^24 < T ? ──no──► done (no allocation)
//!                                               │ yes: key = key.to_le_bytes()
//!                                               ▼
//!              ┌── Engine(C_1·R) ── GET hit? / miss → misses_1 += w, SET (demand fill)
//!              ├── Engine(C_2·R) ── ...
//!              └── Engine(C_n·R) ── ...
//!  mr_j = misses_j / (N·R)  (`_adj`, clamped ≤ 1)   or   misses_j / Ns  (plain)
//!  mrc(c) = linear interpolation over (0, 1), (C_1, mr_1), …, (C_n, mr_n); flat beyond C_n
//! ```
//!
//! Capacity in each mini engine:
//! * **objects**: `max_items = round(C·R)`; values are empty (an 8-byte key, one 48-byte chunk),
//!   and `maxmemory` is set so that pages never bind.
//! * **bytes**: [`Engine::set_max_item_bytes`]`(round(C·R))`, a cap on the sum of key + value
//!   bytes. The value stored is `size − 8` zero bytes, so key + value equals the trace's size
//!   (sizes below 8 count as 8) and the cap means exactly `Σ sizes ≤ C·R`, the byte capacity of
//!   the byte stack distance (docs/models.md §0.2). Pages (`maxmemory`) would not do: a page belongs
//!   to one size class, so a cache of a few dozen small pages wastes up to a page per class in
//!   use, and the chunk charged includes a 16-byte header and class rounding. `maxmemory` is
//!   set so pages never bind. Objects larger than a page (`page_size`, 64 KiB by default) cannot
//!   be stored: they always miss and are counted in [`MiniSim::too_large`].
//!
//! Keys are the trace's `u64` id as 8 little-endian bytes. In byte mode a GET that hits an object
//! stored with another size rewrites it with the GET's size (the stack models do the same: the
//! trace's size is the object's current size). Volatile policies and `noeviction`
//! see no TTLs here, so they cannot evict: a fill that needs memory fails (counted as a miss,
//! [`MiniSim::fill_failures`]), as Redis would answer OOM.
//!
//! Memory: the mini engines hold `Σ_j C_j·R` objects (bytes mode: that many bytes of values,
//! plus up to one partly used page per size class in use).

use std::sync::Arc;

use locus_common::VirtualClock;
use locus_mrc::sampling::{SpatialFilter, U64Map};
use locus_mrc::{Metric, Mrc, MrcError, Op, Profiler, Unit};

use crate::config::{EngineConfig, LruClockMode, TenantConfig};
use crate::{Engine, EngineError, Policy, SetOptions, TenantId};

/// Default page size of the mini engines in byte mode (the largest storable object is a little
/// under it).
pub const DEFAULT_MINI_PAGE_SIZE: u64 = 64 << 10;
/// Page size of the mini engines in object mode (values are empty).
const OBJECT_PAGE_SIZE: u64 = 16 << 10;
/// Engine-charged bytes per object in object mode, rounded up generously (one 48-byte chunk).
const OBJECT_CHUNK_BOUND: u64 = 64;
/// Length of a mini key: the `u64` id in little-endian.
const KEY_LEN: u32 = 8;

/// Problems building a miniature simulation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MiniSimError {
    /// The sampling rate, capacity list or another profiler-level setting is invalid.
    #[error(transparent)]
    Model(#[from] MrcError),
    /// A mini engine rejected its configuration.
    #[error("mini engine for capacity {capacity}: {source}")]
    Engine {
        /// The full-size capacity whose mini engine failed.
        capacity: f64,
        /// The engine's error.
        source: EngineError,
    },
    /// No capacity to simulate.
    #[error("miniature simulation needs at least one capacity")]
    NoCapacities,
}

/// Settings of a miniature simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct MiniSimConfig {
    /// Spatial sampling rate `R` in (0, 1] (effective rate `⌊R·2^24⌋ / 2^24`).
    pub rate: f64,
    /// The full-size capacities `C_j` to simulate (in `unit`, finite, ≥ 0, increasing). A
    /// capacity whose scaled size rounds to 0 is a cache that holds nothing.
    pub capacities: Vec<f64>,
    /// Capacity unit: objects (`max_items`) or bytes (sum of key + value bytes).
    pub unit: Unit,
    /// Miss-ratio metric: requests or bytes (GETs weighted by their size).
    pub metric: Metric,
    /// The engine policy every mini cache runs.
    pub policy: Policy,
    /// `maxmemory-samples` K (not scaled).
    pub samples: u32,
    /// Eviction pool size: 16 = Redis, 0 = textbook K-LRU.
    pub evpool_size: u32,
    /// Recency clock; `Logical` (the default) is the papers' exact semantics.
    pub lru_clock: LruClockMode,
    /// Virtual microseconds per request of the full stream (matters for the Redis clock mode
    /// and LFU decay only).
    pub us_per_access: u64,
    /// Seed of the hash filter and of the engines' RNGs.
    pub seed: u64,
    /// Apply `_adj`: `misses / (N·R)` instead of `misses / Ns`.
    pub adjust: bool,
    /// Page size of the mini engines in byte mode (bounds the largest storable object).
    pub page_size: u64,
}

impl MiniSimConfig {
    /// Redis-pool `allkeys-lru` with K = 5, logical clock, `_adj`, object capacities.
    pub fn new(rate: f64, capacities: Vec<f64>) -> Self {
        Self {
            rate,
            capacities,
            unit: Unit::Objects,
            metric: Metric::Requests,
            policy: Policy::AllkeysLru,
            samples: crate::config::DEFAULT_SAMPLES,
            evpool_size: crate::config::DEFAULT_EVPOOL_SIZE,
            lru_clock: LruClockMode::Logical,
            us_per_access: 100,
            seed: 0,
            adjust: true,
            page_size: DEFAULT_MINI_PAGE_SIZE,
        }
    }
}

/// One scaled cache.
struct Mini {
    capacity: f64,
    scaled: u64,
    /// `None` when the scaled capacity is 0: every GET misses.
    engine: Option<(Engine, TenantId)>,
    misses: f64,
}

/// Miniature simulation of the engine's policies (see the module documentation).
pub struct MiniSim {
    cfg: MiniSimConfig,
    filter: SpatialFilter,
    clock: VirtualClock,
    minis: Vec<Mini>,
    value: Vec<u8>,
    accesses: u64,
    /// Weight of GETs in the full stream (`N`).
    gets: f64,
    /// Weight of sampled GETs (`Ns`).
    sampled_gets: f64,
    live: U64Map<u32>,
    live_bytes: u64,
    peak_objects: u64,
    peak_bytes: u64,
    too_large: u64,
    fill_failures: u64,
}

impl std::fmt::Debug for MiniSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniSim")
            .field("cfg", &self.cfg)
            .field("accesses", &self.accesses)
            .finish_non_exhaustive()
    }
}

fn weight(metric: Metric, size: u32) -> f64 {
    match metric {
        Metric::Requests => 1.0,
        Metric::Bytes => f64::from(size.max(1)),
    }
}

impl MiniSim {
    /// Builds the mini engines.
    ///
    /// # Errors
    /// [`MiniSimError::Model`] for a bad rate or capacity list, [`MiniSimError::NoCapacities`],
    /// [`MiniSimError::Engine`] when the engine rejects a setting (K outside 1..=64, pool size,
    /// page size, a scaled capacity too large to address).
    pub fn new(cfg: MiniSimConfig) -> Result<Self, MiniSimError> {
        let filter = SpatialFilter::new(cfg.rate, cfg.seed)?;
        if cfg.capacities.is_empty() {
            return Err(MiniSimError::NoCapacities);
        }
        // Validates the list (finite, ≥ 0, increasing) with the curve type's own rules.
        Mrc::new(
            cfg.unit,
            cfg.metric,
            cfg.capacities.iter().map(|&c| (c, 1.0)).collect(),
        )?;
        let clock = VirtualClock::new(0);
        let r = filter.rate();
        let mut minis = Vec::with_capacity(cfg.capacities.len());
        for (j, &capacity) in cfg.capacities.iter().enumerate() {
            let scaled = (capacity * r).round() as u64;
            let engine = if scaled == 0 {
                None
            } else {
                let seed = cfg
                    .seed
                    .wrapping_add((j as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                Some(
                    build_engine(&cfg, scaled, seed, &clock)
                        .map_err(|source| MiniSimError::Engine { capacity, source })?,
                )
            };
            minis.push(Mini {
                capacity,
                scaled,
                engine,
                misses: 0.0,
            });
        }
        Ok(Self {
            cfg,
            filter,
            clock,
            minis,
            value: Vec::new(),
            accesses: 0,
            gets: 0.0,
            sampled_gets: 0.0,
            live: U64Map::default(),
            live_bytes: 0,
            peak_objects: 0,
            peak_bytes: 0,
            too_large: 0,
            fill_failures: 0,
        })
    }

    /// The settings.
    pub fn config(&self) -> &MiniSimConfig {
        &self.cfg
    }

    /// The effective sampling rate `T / 2^24`.
    pub fn rate(&self) -> f64 {
        self.filter.rate()
    }

    /// `(full-size capacity, scaled capacity)` of every mini cache. docs/models.md §7 advises keeping
    /// scaled caches at ≥ ~100 objects; smaller ones round visibly.
    pub fn scaled_capacities(&self) -> Vec<(f64, u64)> {
        self.minis.iter().map(|m| (m.capacity, m.scaled)).collect()
    }

    /// Sampled accesses whose object could not be stored because it is larger than a page.
    pub fn too_large(&self) -> u64 {
        self.too_large
    }

    /// Fills (demand fill or SET) that failed because the policy may not evict
    /// (`noeviction`, volatile policies without TTL keys), summed over the mini caches.
    pub fn fill_failures(&self) -> u64 {
        self.fill_failures
    }

    /// The simulated points `(C_j, miss ratio)` (with `_adj` if configured, clamped to [0, 1]).
    pub fn points(&self) -> Vec<(f64, f64)> {
        let r = self.filter.rate();
        self.minis
            .iter()
            .map(|m| {
                let denom = if self.cfg.adjust {
                    self.gets * r
                } else {
                    self.sampled_gets
                };
                let mr = if denom > 0.0 { m.misses / denom } else { 1.0 };
                (m.capacity, mr.clamp(0.0, 1.0))
            })
            .collect()
    }

    /// The curve at exactly the simulated capacities.
    ///
    /// # Errors
    /// None in practice (the capacities were checked at construction); typed for safety.
    pub fn simulated_mrc(&self) -> Result<Mrc, MrcError> {
        Mrc::new(self.cfg.unit, self.cfg.metric, self.points())
    }

    fn track_live(&mut self, key: u64, size: u32, op: Op) {
        let size = size.max(KEY_LEN);
        match op {
            Op::Get | Op::Set => {
                let old = self.live.insert(key, size);
                self.live_bytes = self.live_bytes + u64::from(size) - old.map_or(0, u64::from);
            }
            Op::Del => {
                if let Some(old) = self.live.remove(&key) {
                    self.live_bytes -= u64::from(old);
                }
            }
        }
        self.peak_objects = self.peak_objects.max(self.live.len() as u64);
        self.peak_bytes = self.peak_bytes.max(self.live_bytes);
    }
}

/// One mini engine with one tenant, its capacity enforced by an item or item-bytes cap and its
/// page budget set so pages never bind.
fn build_engine(
    cfg: &MiniSimConfig,
    scaled: u64,
    seed: u64,
    clock: &VirtualClock,
) -> Result<(Engine, TenantId), EngineError> {
    let (page_size, maxmemory, max_items) = match cfg.unit {
        Unit::Objects => {
            let bytes = scaled
                .saturating_add(2)
                .saturating_mul(OBJECT_CHUNK_BOUND * 2);
            (
                OBJECT_PAGE_SIZE,
                (bytes / OBJECT_PAGE_SIZE + 8) * OBJECT_PAGE_SIZE,
                Some(scaled),
            )
        }
        Unit::Bytes => {
            // Each object has key + value ≥ 8 bytes and costs at most
            // max(48, 1.08·(16 + key + value)) + slack ≤ ~9.3× its bytes in chunks, plus up to a
            // partly used page per size class (< 256 classes for any page size).
            let p = cfg.page_size;
            let bytes = scaled.saturating_mul(10);
            (p, (bytes / p.max(1) + 260).saturating_mul(p), None)
        }
    };
    let ecfg = EngineConfig {
        maxmemory,
        page_size,
        max_items,
        lru_clock: cfg.lru_clock,
        seed,
        ..EngineConfig::default()
    };
    let mut engine = Engine::new(ecfg, Arc::new(clock.clone()))?;
    let t = engine.add_tenant(TenantConfig {
        policy: cfg.policy,
        samples: cfg.samples,
        evpool_size: cfg.evpool_size,
        ..TenantConfig::new("mini")
    })?;
    if cfg.unit == Unit::Bytes {
        engine.set_max_item_bytes(Some(scaled))?;
    }
    Ok((engine, t))
}

impl Profiler for MiniSim {
    fn name(&self) -> String {
        format!(
            "mini(R={},{},K={},evpool={}{})",
            self.cfg.rate,
            self.cfg.policy,
            self.cfg.samples,
            self.cfg.evpool_size,
            if self.cfg.adjust { ",adj" } else { "" }
        )
    }

    fn unit(&self) -> Unit {
        self.cfg.unit
    }

    fn metric(&self) -> Metric {
        self.cfg.metric
    }

    fn access(&mut self, key: u64, size: u32, op: Op) {
        self.accesses += 1;
        if self.cfg.us_per_access > 0 {
            self.clock.advance_us(self.cfg.us_per_access);
        }
        let w = weight(self.cfg.metric, size);
        if op == Op::Get {
            self.gets += w;
        }
        if !self.filter.sampled(key) {
            return;
        }
        if op == Op::Get {
            self.sampled_gets += w;
        }
        self.track_live(key, size, op);
        let kb = key.to_le_bytes();
        let vlen = match self.cfg.unit {
            Unit::Objects => 0,
            Unit::Bytes => size.saturating_sub(KEY_LEN) as usize,
        };
        // Key + value + the engine's 16-byte header must fit a page; larger objects are never
        // stored (and the value buffer never grows for them).
        let storable = match self.cfg.unit {
            Unit::Objects => true,
            Unit::Bytes => vlen as u64 + u64::from(KEY_LEN) + 16 <= self.cfg.page_size,
        };
        if storable && self.value.len() < vlen {
            self.value.resize(vlen, 0);
        }
        let value = if storable {
            &self.value[..vlen]
        } else {
            &[][..]
        };
        let mut too_large = !storable && op != Op::Del;
        for m in &mut self.minis {
            let Some((engine, t)) = &mut m.engine else {
                if op == Op::Get {
                    m.misses += w;
                }
                continue;
            };
            let fill = match op {
                Op::Get => match engine.get(*t, &kb) {
                    // A hit whose size differs from the trace's (the object changed outside
                    // the trace): store the new size, as the stack models do.
                    Some(v) => v.len() != vlen,
                    None => {
                        m.misses += w;
                        true
                    }
                },
                Op::Set => true,
                Op::Del => {
                    engine.delete(*t, &kb);
                    false
                }
            };
            if fill && storable {
                match engine.set(*t, &kb, value, SetOptions::default()) {
                    Ok(_) => {}
                    Err(EngineError::ItemTooLarge { .. }) => too_large = true,
                    Err(_) => self.fill_failures += 1,
                }
            }
        }
        if too_large {
            self.too_large += 1;
        }
    }

    fn accesses(&self) -> u64 {
        self.accesses
    }

    fn working_set(&self) -> f64 {
        let peak = match self.cfg.unit {
            Unit::Objects => self.peak_objects as f64,
            Unit::Bytes => self.peak_bytes as f64,
        };
        peak / self.filter.rate()
    }

    fn mrc(&self, capacities: &[f64]) -> Result<Mrc, MrcError> {
        let sim = self.simulated_mrc()?;
        let points = capacities
            .iter()
            .map(|&c| (c, sim.miss_ratio(c)))
            .collect::<Vec<_>>();
        // Mrc::new rejects non-finite, negative and non-increasing capacities.
        Mrc::new(self.cfg.unit, self.cfg.metric, points)
    }

    fn decay(&mut self, factor: f64) -> Result<(), MrcError> {
        if !(0.0..=1.0).contains(&factor) {
            return Err(MrcError::InvalidDecay {
                model: "mini".into(),
                factor,
                reason: "the factor must be in [0, 1]".into(),
            });
        }
        self.gets *= factor;
        self.sampled_gets *= factor;
        for m in &mut self.minis {
            m.misses *= factor;
        }
        Ok(())
    }
}

/// Settings of a full-size (unsampled) K-LRU simulation: the ground truth KRR and miniature
/// simulation are measured against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KlruConfig {
    /// K, `maxmemory-samples`.
    pub samples: u32,
    /// 0 = textbook K-LRU (evict the oldest of K distinct samples), 16 = Redis's eviction pool.
    pub evpool_size: u32,
    /// Capacity unit.
    pub unit: Unit,
    /// Miss-ratio metric.
    pub metric: Metric,
    /// Seed of the engines' RNGs.
    pub seed: u64,
}

impl KlruConfig {
    /// Object capacities, request miss ratio, seed 0.
    pub fn new(samples: u32, evpool_size: u32) -> Self {
        Self {
            samples,
            evpool_size,
            unit: Unit::Objects,
            metric: Metric::Requests,
            seed: 0,
        }
    }
}

/// Replays `accesses` on full-size engines (no sampling) at every capacity with `cfg` (any
/// policy), and returns the curve at exactly those capacities.
///
/// # Errors
/// As [`MiniSim::new`].
pub fn simulate<I>(accesses: I, mut cfg: MiniSimConfig) -> Result<Mrc, MiniSimError>
where
    I: IntoIterator<Item = (u64, u32, Op)>,
{
    cfg.rate = 1.0;
    let mut sim = MiniSim::new(cfg)?;
    for (key, size, op) in accesses {
        sim.access(key, size, op);
    }
    Ok(sim.simulated_mrc()?)
}

/// The engine's own `allkeys-lru` (logical clock) simulated at full size at `capacities`:
/// textbook K-LRU with `evpool_size` 0, Redis's approximated LRU with 16.
///
/// # Errors
/// As [`MiniSim::new`].
pub fn simulate_klru<I>(
    accesses: I,
    cfg: &KlruConfig,
    capacities: &[f64],
) -> Result<Mrc, MiniSimError>
where
    I: IntoIterator<Item = (u64, u32, Op)>,
{
    let mcfg = MiniSimConfig {
        unit: cfg.unit,
        metric: cfg.metric,
        policy: Policy::AllkeysLru,
        samples: cfg.samples,
        evpool_size: cfg.evpool_size,
        seed: cfg.seed,
        ..MiniSimConfig::new(1.0, capacities.to_vec())
    };
    simulate(accesses, mcfg)
}
