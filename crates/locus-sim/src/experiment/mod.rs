//! The experiment file: parsing (serde, unknown keys rejected) and validation (every problem
//! reported with its key path), then the validated [`Experiment`] the runner uses.
//!
//! The format reference with a commented example is `experiments/README.md`.

mod file;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use locus_common::parse_count;
use locus_common::{ByteSize, setting_text, settings_from_toml};
use locus_engine::control::Interval;
use locus_engine::{ClassMode, LruClockMode, Policy};
use locus_trace::{CsvOptions, Format};
use serde::Deserialize;

use crate::SimError;

/// Default page size of simulations (finer than the server's 1 MiB so that small experiments
/// partition at a useful granularity).
pub const DEFAULT_PAGE_SIZE: u64 = 64 << 10;
/// Default relative request rate of a tenant (requests per second for generated timestamps).
pub const DEFAULT_RATE: f64 = 1000.0;

pub use file::generator_config;
use file::{RawExperiment, validate};

// ------------------------------------------------------------------------------------------------
// The validated experiment.

/// How much memory the engine gets.
#[derive(Clone, Debug, PartialEq)]
pub enum Memory {
    /// `maxmemory` in bytes of pages.
    Bytes(u64),
    /// Room for this many objects: `maxmemory` = objects × the chunk of a reference item (rounded
    /// up to pages, plus one page per tenant for partly filled pages). The reference item is
    /// `item_size` when given, else the median request size of the first 10 000 requests.
    Objects {
        /// Object count.
        objects: u64,
        /// Key + value bytes of the reference item.
        item_size: Option<u64>,
    },
}

/// A miss penalty model (µs).
#[derive(Clone, Debug, PartialEq)]
pub enum Penalty {
    /// Always this many µs.
    Constant(f64),
    /// Exponential with this mean.
    Exponential {
        /// Mean µs.
        mean: f64,
    },
    /// Uniform in `[min, max]`.
    Uniform {
        /// Smallest µs.
        min: f64,
        /// Largest µs.
        max: f64,
    },
    /// The trace's penalty column (`Request::penalty_us`); `default` when a request has none.
    Trace {
        /// Used when the request carries no penalty.
        default: Option<f64>,
    },
}

impl Penalty {
    /// The model's mean (µs), when it is known before the run.
    pub fn mean(&self) -> Option<f64> {
        match *self {
            Penalty::Constant(c) => Some(c),
            Penalty::Exponential { mean } => Some(mean),
            Penalty::Uniform { min, max } => Some((min + max) / 2.0),
            Penalty::Trace { .. } => None,
        }
    }

    /// The penalty for a draw `u` in `[0, 1)` and the request's own column value.
    #[inline]
    pub fn draw(&self, u: f64, column: Option<u32>) -> Option<f64> {
        match *self {
            Penalty::Constant(c) => Some(c),
            Penalty::Exponential { mean } => Some(-mean * (1.0 - u).ln()),
            Penalty::Uniform { min, max } => Some(min + (max - min) * u),
            Penalty::Trace { default } => column.map(f64::from).or(default),
        }
    }
}

/// Where a trace tenant's requests come from.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSpec {
    /// The file (relative paths are relative to the experiment file).
    pub path: PathBuf,
    /// Format name, detected when absent.
    pub format: Option<Format>,
    /// Generic CSV options (libCacheSim style).
    pub csv: Option<String>,
    /// Volume / LUN / disk as the tenant column.
    pub volume_as_tenant: bool,
    /// Value size for formats without sizes.
    pub default_size: u64,
    /// Stop after this many requests of the file.
    pub limit: Option<u64>,
    /// Only the requests whose tenant column has this value (several tenants may read one file).
    pub select: Option<u32>,
}

impl TraceSpec {
    /// The reader options.
    ///
    /// # Errors
    /// Invalid CSV options (validated before, so not expected).
    pub fn read_options(&self) -> Result<locus_trace::ReadOptions, SimError> {
        let csv = match &self.csv {
            Some(s) => s.parse::<CsvOptions>().map_err(|e| SimError::Trace {
                what: self.path.display().to_string(),
                source: e,
            })?,
            None => CsvOptions::default(),
        };
        Ok(locus_trace::ReadOptions {
            format: self.format,
            csv,
            default_size: self.default_size,
            volume_as_tenant: self.volume_as_tenant,
            ..locus_trace::ReadOptions::default()
        })
    }

    /// Two specs read the same stream when everything but the selector agrees.
    pub fn same_stream(&self, other: &TraceSpec) -> bool {
        self.path == other.path
            && self.format == other.format
            && self.csv == other.csv
            && self.volume_as_tenant == other.volume_as_tenant
            && self.default_size == other.default_size
            && self.limit == other.limit
    }
}

/// Where a tenant's requests come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A `locus_trace::generate` tenant: its options as `key = value` strings (the syntax of
    /// `locus trace generate --tenant`).
    Generator(BTreeMap<String, String>),
    /// A trace file.
    Trace(TraceSpec),
}

/// One tenant of the experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Tenant {
    /// Name (the engine's tenant name).
    pub name: String,
    /// Relative request rate (req/s of generated timestamps; the weight of rate interleaving).
    pub rate: f64,
    /// Its requests.
    pub source: Source,
    /// Miss penalty model.
    pub penalty: Penalty,
    /// Time of a hit (µs), added to the modelled latency of every GET.
    pub hit_us: f64,
    /// Give the engine the penalty's mean as the operator's hint instead of letting it measure.
    pub penalty_hint: bool,
    /// Eviction policy of its pool.
    pub policy: Policy,
    /// K (`maxmemory-samples`).
    pub samples: u32,
    /// Eviction pool size (16 = Redis, 0 = textbook K-LRU).
    pub evpool_size: u32,
    /// pRedis's dump/load of this tenant (`dump_load`: auto, never, or a schedule).
    pub dump_load: locus_control::DumpLoadMode,
}

/// A controller to run.
#[derive(Clone, Debug, PartialEq)]
pub struct ControllerRun {
    /// Unique label in the reports (the name unless given).
    pub label: String,
    /// Registry name (`locus_control::NAMES`).
    pub name: String,
    /// Its settings as strings.
    pub settings: Vec<(String, String)>,
    /// Eviction policy of every tenant in this run (overrides the tenants' `policy`).
    pub policy: Option<Policy>,
    /// K of every tenant in this run.
    pub samples: Option<u32>,
    /// Eviction pool size of every tenant in this run.
    pub evpool_size: Option<u32>,
    /// `dump_load` of every tenant in this run (overrides the tenants' `dump_load`).
    pub dump_load: Option<locus_control::DumpLoadMode>,
    /// How this run uses the experiment's `[tier]` (`None`: as written there).
    pub tier: Option<TierRun>,
    /// How this run divides the fast tier between tenants (`fast_partition`; `None`: free
    /// competition).
    pub fast_partition: Option<FastPartition>,
}

/// How the fast tier is divided between tenants (section 5.1.5), as fast-tier byte targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastPartition {
    /// No targets: tenants compete for the fast tier.
    Free,
    /// The fast tier split equally.
    Equal,
    /// Targets from each tenant's exact LRU miss ratio curve of the whole run and the DP
    /// partition (the oracle's planner) over the fast tier's pages.
    Mrc,
    /// Online: the run's controller sets the targets at each decision from what it has
    /// profiled so far (`kredis`: its KRR curves and DP over the fast tier's pages). Free
    /// competition until its first targets, and throughout under a controller that sets none.
    Controller,
}

impl std::str::FromStr for FastPartition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "free" => Ok(FastPartition::Free),
            "equal" => Ok(FastPartition::Equal),
            "mrc" => Ok(FastPartition::Mrc),
            "controller" => Ok(FastPartition::Controller),
            _ => Err(format!("'{s}' is not one of free, equal, mrc, controller")),
        }
    }
}

/// `[tier]`: the engine's memory tiers (sdTMM) and the simulator's tier timing.
#[derive(Clone, Debug, PartialEq)]
pub struct TierSettings {
    /// The engine's tier configuration (every key of [`locus_engine::TierConfig`]).
    pub engine: locus_engine::TierConfig,
    /// A slow-tier hit's time (`slow_hit_time`); `None`: twice each tenant's `hit_time`, the
    /// ratio the dissertation measured between its two NUMA nodes (section 5.2.1).
    pub slow_hit_us: Option<f64>,
    /// Modelled time of one promotion or demotion (`move_time`); `None`: one slow-tier hit
    /// time (the copy reads or writes the slow tier once).
    pub move_us: Option<f64>,
}

/// How one controller entry runs the tiers (`tier = "..."` in a `[[controller]]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierRun {
    /// No tiers: all of `memory` is fast (the dissertation's over-provisioned allDRAM).
    AllFast,
    /// sdTMM: promotion by reuse time.
    Sdtmm,
    /// naiveTMM: promotion by last access.
    Naive,
    /// Demotion only, no promotion ("sdTMM-demotion", section 5.2.5).
    DemotionOnly,
}

impl std::str::FromStr for TierRun {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all-fast" | "alldram" => Ok(TierRun::AllFast),
            "sdtmm" => Ok(TierRun::Sdtmm),
            "naive" => Ok(TierRun::Naive),
            "demotion-only" => Ok(TierRun::DemotionOnly),
            _ => Err(format!(
                "'{s}' is not one of all-fast, sdtmm, naive, demotion-only"
            )),
        }
    }
}

/// Settings of the simulator's `oracle` entry (it computes its curves itself).
#[derive(Clone, Debug, PartialEq)]
pub struct OracleSettings {
    /// What the partition minimises (`misses`, `latency`, `hits`); default: `latency` when some
    /// tenant has a miss penalty, else `misses`.
    pub objective: Option<locus_alloc::Objective>,
    /// Pages per DP unit (0 = automatic).
    pub step: u64,
    /// One partition per phase instead of one for the whole run.
    pub per_phase: bool,
}

/// An offline planner that plans nothing: validating an experiment builds each controller once
/// to check its settings, without computing the oracles' exact curves.
struct SettingsOnly;

impl locus_control::Offline for SettingsOnly {
    fn pool_plans(
        &self,
        _objective: Option<locus_alloc::Objective>,
        _step: u64,
        _per_phase: bool,
    ) -> Result<Vec<Vec<u64>>, locus_control::ControlError> {
        Ok(vec![Vec::new()])
    }

    fn class_plans(
        &self,
        _per_phase: bool,
    ) -> Result<Vec<locus_control::SlabPlan>, locus_control::ControlError> {
        Ok(vec![Vec::new()])
    }
}

/// A phase of a generated workload: the generator options of some tenants change.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Label.
    pub name: String,
    /// Requests in this phase.
    pub requests: u64,
    /// Option overrides per tenant index.
    pub overrides: BTreeMap<usize, BTreeMap<String, String>>,
    /// Request rate overrides per tenant index (a tenant's `rate` in this phase).
    pub rates: BTreeMap<usize, f64>,
}

/// How requests of several streams are merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interleave {
    /// Pick the next stream at random, weighted by its rate (seeded).
    Rate,
    /// Merge by the streams' own timestamps (each stream starts at time 0).
    Time,
}

/// The scaled-down version the golden test runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Golden {
    /// Factor applied to requests, memory, key counts and phase lengths.
    pub scale: f64,
    /// Total requests (after scaling; overrides it).
    pub requests: Option<u64>,
    /// Memory override.
    pub memory: Option<Memory>,
    /// Interval override.
    pub interval: Option<Interval>,
}

/// A memory sweep (`[sweep]`, [`crate::sweep`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// Memory sizes as fractions of the run's working set ([`crate::sweep::working_set_bytes`]).
    pub memory: Vec<f64>,
}

/// Most seeds per experiment (`seeds`, `--seeds`).
pub const MAX_SEEDS: u32 = 1000;

/// A validated experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Experiment {
    /// Name (file stem of the golden file).
    pub name: String,
    /// Free text.
    pub description: String,
    /// Engine memory.
    pub memory: Memory,
    /// Page size in bytes.
    pub page_size: u64,
    /// Seed of the engine, the generators, the interleaving and the penalty draws.
    pub seed: u64,
    /// Runs per controller for `locus simulate` (`seeds` key, `--seeds`): seeds `seed`,
    /// `seed + 1`, …; 1 = the single run (see [`crate::seeds`]).
    pub seeds: u32,
    /// Total requests (generators need it unless phases give it; caps traces).
    pub requests: Option<u64>,
    /// Controller decision interval.
    pub interval: Interval,
    /// Page moves per interval.
    pub max_moves: u32,
    /// Recency clock (logical by default: idle times in accesses, as the papers simulate).
    pub lru_clock: LruClockMode,
    /// How size classes get pages (auto = Redis-like, manual = memcached-like, random-slab =
    /// Twemcache); slab controllers may set their own.
    pub class_mode: ClassMode,
    /// Stream merging.
    pub interleave: Interleave,
    /// Controller label the "share of the oracle's gain" is measured from.
    pub baseline: Option<String>,
    /// Steady-state window: the last fraction of the run and of each phase whose GETs are
    /// also reported on their own (`RunResult::steady`).
    pub steady: Option<f64>,
    /// Controllers to compare.
    pub controllers: Vec<ControllerRun>,
    /// Tenants.
    pub tenants: Vec<Tenant>,
    /// Phases of the generated workload (empty: one phase of `requests`).
    pub phases: Vec<Phase>,
    /// Golden-test scaling.
    pub golden: Option<Golden>,
    /// Memory sweep (`locus simulate` runs it instead of the single memory size).
    pub sweep: Option<Sweep>,
    /// The dump/load detector's knobs (`[dump_load]`).
    pub dump_load: locus_control::DumpLoadConfig,
    /// Memory tiers (`[tier]`), if any.
    pub tier: Option<TierSettings>,
    /// Directory relative trace paths are resolved against.
    pub dir: PathBuf,
}

// ------------------------------------------------------------------------------------------------

impl Experiment {
    /// Reads and validates an experiment file.
    ///
    /// # Errors
    /// [`SimError::Io`], [`SimError::Parse`] (TOML syntax, unknown keys, wrong types: the TOML
    /// error shows the line), [`SimError::Invalid`] with every problem found, each with its key
    /// path.
    pub fn load(path: &Path) -> Result<Experiment, SimError> {
        let text = std::fs::read_to_string(path).map_err(|e| SimError::Io {
            what: path.display().to_string(),
            source: e,
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, &path.display().to_string(), &dir)
    }

    /// Parses and validates experiment text; `dir` resolves relative trace paths.
    ///
    /// # Errors
    /// As [`Experiment::load`].
    pub fn parse(text: &str, source: &str, dir: &Path) -> Result<Experiment, SimError> {
        let raw: RawExperiment = toml::from_str(text).map_err(|e| SimError::Parse {
            what: source.to_string(),
            message: e.to_string(),
        })?;
        validate(raw, dir).map_err(|problems| SimError::Invalid {
            what: source.to_string(),
            problems,
        })
    }

    /// The experiment as the golden test runs it (scaled down by its `[golden]` table; unchanged
    /// without one).
    pub fn golden_scaled(&self) -> Experiment {
        let Some(g) = &self.golden else {
            return self.clone();
        };
        let mut e = self.clone();
        let s = g.scale;
        let scale = |x: u64| ((x as f64 * s).round() as u64).max(1);
        if s != 1.0 {
            e.memory = match e.memory {
                Memory::Bytes(b) => Memory::Bytes(scale(b).max(e.page_size)),
                Memory::Objects { objects, item_size } => Memory::Objects {
                    objects: scale(objects),
                    item_size,
                },
            };
            e.requests = e.requests.map(scale);
            for p in &mut e.phases {
                p.requests = scale(p.requests);
                for o in p.overrides.values_mut() {
                    scale_options(o, s);
                }
            }
            for t in &mut e.tenants {
                if let Source::Generator(o) = &mut t.source {
                    scale_options(o, s);
                }
            }
            if let Interval::Requests(n) = e.interval {
                e.interval = Interval::Requests(scale(n));
            }
        }
        if let Some(n) = g.requests {
            if e.phases.is_empty() {
                e.requests = Some(n);
            } else {
                let total: u64 = e.phases.iter().map(|p| p.requests).sum();
                for p in &mut e.phases {
                    p.requests =
                        ((p.requests as f64 * n as f64 / total as f64).round() as u64).max(1);
                }
                e.requests = e.requests.map(|_| n);
            }
        }
        if let Some(m) = &g.memory {
            e.memory = m.clone();
        }
        if let Some(i) = g.interval {
            e.interval = i;
        }
        e.golden = None;
        e
    }

    /// Total requests the run reads: `requests`, else the sum of the phases when every tenant
    /// is generated; `None`: until every source ends (phases count generated requests only).
    pub fn total_requests(&self) -> Option<u64> {
        let all_generated = self
            .tenants
            .iter()
            .all(|t| matches!(t.source, Source::Generator(_)));
        if self.phases.is_empty() || !all_generated {
            self.requests
        } else {
            Some(self.phases.iter().map(|p| p.requests).sum())
        }
    }
}

/// Scales key counts, key offsets and phase lengths of generator options.
fn scale_options(o: &mut BTreeMap<String, String>, s: f64) {
    for k in ["keys", "n", "records", "phase", "phase-len", "key-offset"] {
        if let Some(v) = o.get_mut(k)
            && let Some(n) = parse_count(v)
        {
            *v = ((n as f64 * s).round() as u64).max(1).to_string();
        }
    }
}
