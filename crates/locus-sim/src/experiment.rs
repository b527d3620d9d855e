//! The experiment file: parsing (serde, unknown keys rejected) and validation (every problem
//! reported with its key path), then the validated [`Experiment`] the runner uses.
//!
//! The format reference with a commented example is `experiments/README.md`.

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

// ------------------------------------------------------------------------------------------------
// The file as written (serde).

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExperiment {
    name: String,
    #[serde(default)]
    description: String,
    memory: toml::Value,
    page_size: Option<toml::Value>,
    #[serde(default)]
    seed: u64,
    requests: Option<toml::Value>,
    interval: Option<toml::Value>,
    max_moves: Option<u32>,
    lru_clock: Option<String>,
    class_mode: Option<String>,
    interleave: Option<String>,
    baseline: Option<String>,
    steady: Option<f64>,
    #[serde(default, rename = "controller")]
    controllers: Vec<RawController>,
    #[serde(default, rename = "tenant")]
    tenants: Vec<RawTenant>,
    #[serde(default, rename = "phase")]
    phases: Vec<RawPhase>,
    golden: Option<RawGolden>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawController {
    name: String,
    label: Option<String>,
    policy: Option<String>,
    samples: Option<u32>,
    evpool_size: Option<u32>,
    #[serde(default)]
    settings: toml::Table,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTenant {
    name: String,
    rate: Option<f64>,
    generator: Option<toml::Value>,
    trace: Option<RawTrace>,
    penalty: Option<toml::Value>,
    hit_time: Option<toml::Value>,
    #[serde(default)]
    penalty_hint: bool,
    policy: Option<String>,
    samples: Option<u32>,
    evpool_size: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    path: String,
    format: Option<String>,
    csv: Option<String>,
    #[serde(default)]
    volume_as_tenant: bool,
    default_size: Option<toml::Value>,
    limit: Option<toml::Value>,
    tenant: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    requests: toml::Value,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "tenant")]
    tenants: BTreeMap<String, toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGolden {
    scale: Option<f64>,
    requests: Option<toml::Value>,
    memory: Option<toml::Value>,
    interval: Option<toml::Value>,
}

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
    /// Directory relative trace paths are resolved against.
    pub dir: PathBuf,
}

// ------------------------------------------------------------------------------------------------
// Parsing helpers.

/// Problems collected while validating, each with its key path.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, path: &str, msg: impl std::fmt::Display) {
        self.0.push(format!("{path}: {msg}"));
    }
}

fn count_value(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        toml::Value::Float(f) if f.is_finite() && *f >= 0.0 && f.fract() == 0.0 => Ok(*f as u64),
        toml::Value::String(s) => {
            parse_count(s).ok_or_else(|| format!("'{s}' is not a count (100000, 1e6, 200k, 2M)"))
        }
        other => Err(format!(
            "expected a count (100000, \"1e6\", \"2M\"), got {other}"
        )),
    }
}

fn bytes_value(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        toml::Value::String(s) => s
            .parse::<ByteSize>()
            .map(|b| b.0)
            .map_err(|e| e.to_string()),
        other => Err(format!("expected a size (65536, \"64MiB\"), got {other}")),
    }
}

fn micros_value(v: &toml::Value) -> Result<f64, String> {
    let us = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => {
            let t = s.trim();
            // A bare number is µs here (penalties are small); a unit makes it explicit.
            match t.parse::<f64>() {
                Ok(x) => x,
                Err(_) => locus_common::parse_duration(t)
                    .map(|d| d.as_secs_f64() * 1e6)
                    .map_err(|e| e.to_string())?,
            }
        }
        other => return Err(format!("expected µs (200, \"1.5ms\"), got {other}")),
    };
    if us.is_finite() && us >= 0.0 {
        Ok(us)
    } else {
        Err(format!("{us} µs: must be finite and >= 0"))
    }
}

fn interval_value(v: &toml::Value) -> Result<Interval, String> {
    match v {
        toml::Value::Integer(i) if *i > 0 => Ok(Interval::Requests(*i as u64)),
        toml::Value::String(s) => match parse_count(s) {
            Some(n) if n > 0 => Ok(Interval::Requests(n)),
            _ => s.parse::<Interval>(),
        },
        other => Err(format!(
            "expected a request count (100000, \"100k\") or a duration (\"1s\"), got {other}"
        )),
    }
}

fn memory_value(v: &toml::Value) -> Result<Memory, String> {
    match v {
        toml::Value::Table(t) => {
            let mut objects = None;
            let mut item_size = None;
            for (k, x) in t {
                match k.as_str() {
                    "objects" => {
                        objects = Some(count_value(x).map_err(|e| format!("objects: {e}"))?)
                    }
                    "item_size" => {
                        item_size = Some(bytes_value(x).map_err(|e| format!("item_size: {e}"))?)
                    }
                    other => {
                        return Err(format!(
                            "unknown key '{other}' (a memory table has objects, item_size)"
                        ));
                    }
                }
            }
            match objects {
                Some(0) => Err("objects: must be at least 1".into()),
                Some(objects) => Ok(Memory::Objects { objects, item_size }),
                None => Err("a memory table needs objects = N".into()),
            }
        }
        other => bytes_value(other).map(Memory::Bytes),
    }
}

/// Generator options from a string (`"pattern=zipf,alpha=0.9"`) or a table; keys normalised to
/// the dashed form the generator parses.
fn generator_options(v: &toml::Value) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    match v {
        toml::Value::String(s) => {
            for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (k, val) = part
                    .split_once('=')
                    .ok_or_else(|| format!("option '{part}' is not key=value"))?;
                out.insert(k.trim().replace('_', "-"), val.trim().to_string());
            }
        }
        toml::Value::Table(t) => {
            for (k, val) in t {
                let text = setting_text(val).map_err(|e| format!("{k}: {e}"))?;
                out.insert(k.replace('_', "-"), text);
            }
        }
        other => return Err(format!("expected a table or an option string, got {other}")),
    }
    for reserved in ["tenant", "id", "rate"] {
        if out.contains_key(reserved) {
            return Err(format!(
                "'{reserved}' is set by the tenant entry, not in its generator options"
            ));
        }
    }
    Ok(out)
}

/// Builds the generator's tenant config from options (checks them too).
pub fn generator_config(
    opts: &BTreeMap<String, String>,
    tenant: u32,
    rate: f64,
) -> Result<locus_trace::generate::TenantConfig, String> {
    let s: Vec<String> = opts.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut cfg: locus_trace::generate::TenantConfig = s
        .join(",")
        .parse()
        .map_err(|e: locus_trace::TraceError| format!("{e:#}"))?;
    cfg.tenant = tenant;
    cfg.rate = rate;
    Ok(cfg)
}

fn penalty_value(v: &toml::Value) -> Result<Penalty, String> {
    match v {
        toml::Value::String(s) if s.trim() == "trace" => Ok(Penalty::Trace { default: None }),
        toml::Value::Table(t) => {
            let dist = t
                .get("dist")
                .and_then(toml::Value::as_str)
                .unwrap_or("constant");
            let get = |k: &str| -> Result<Option<f64>, String> {
                t.get(k)
                    .map(|x| micros_value(x).map_err(|e| format!("{k}: {e}")))
                    .transpose()
            };
            let allowed: &[&str] = match dist {
                "constant" => &["dist", "mean"],
                "exponential" => &["dist", "mean"],
                "uniform" => &["dist", "mean", "min", "max"],
                "trace" => &["dist", "default"],
                other => {
                    return Err(format!(
                        "dist: unknown distribution '{other}' (constant, exponential, uniform, trace)"
                    ));
                }
            };
            if let Some(k) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
                return Err(format!(
                    "unknown key '{k}' for dist = \"{dist}\" (keys: {})",
                    allowed.join(", ")
                ));
            }
            match dist {
                "constant" => Ok(Penalty::Constant(get("mean")?.ok_or("needs mean")?)),
                "exponential" => Ok(Penalty::Exponential {
                    mean: get("mean")?.ok_or("needs mean")?,
                }),
                "uniform" => match (get("min")?, get("max")?, get("mean")?) {
                    (Some(min), Some(max), None) if min <= max => Ok(Penalty::Uniform { min, max }),
                    (Some(min), Some(max), None) => Err(format!("min {min} > max {max}")),
                    (None, None, Some(mean)) => Ok(Penalty::Uniform {
                        min: 0.0,
                        max: 2.0 * mean,
                    }),
                    _ => Err(
                        "uniform needs either min and max, or mean (uniform on [0, 2·mean])".into(),
                    ),
                },
                _ => Ok(Penalty::Trace {
                    default: get("default")?,
                }),
            }
        }
        other => micros_value(other).map(Penalty::Constant),
    }
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

fn validate(raw: RawExperiment, dir: &Path) -> Result<Experiment, Vec<String>> {
    let mut p = Problems::default();
    if raw.name.trim().is_empty()
        || !raw
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        p.add(
            "name",
            "must be non-empty and use only letters, digits, '-', '_', '.'",
        );
    }
    let memory_ok = memory_value(&raw.memory).map_err(|e| p.add("memory", e));
    let memory = memory_ok.clone().unwrap_or(Memory::Bytes(0));
    let page_size = match &raw.page_size {
        None => DEFAULT_PAGE_SIZE,
        Some(v) => bytes_value(v).unwrap_or_else(|e| {
            p.add("page_size", e);
            DEFAULT_PAGE_SIZE
        }),
    };
    if !(locus_engine::config::MIN_PAGE_SIZE..=locus_engine::config::MAX_PAGE_SIZE)
        .contains(&page_size)
    {
        p.add("page_size", format!("{page_size} is outside 4KiB..=1GiB"));
    }
    if let Ok(Memory::Bytes(b)) = memory_ok
        && b < page_size
    {
        p.add(
            "memory",
            format!("{b} bytes is less than one page ({page_size})"),
        );
    }
    let requests = raw
        .requests
        .as_ref()
        .and_then(|v| count_value(v).map_err(|e| p.add("requests", e)).ok());
    let interval = match &raw.interval {
        None => Interval::default(),
        Some(v) => interval_value(v).unwrap_or_else(|e| {
            p.add("interval", e);
            Interval::default()
        }),
    };
    let lru_clock = match raw.lru_clock.as_deref() {
        None | Some("logical") => LruClockMode::Logical,
        Some("redis") => LruClockMode::Redis,
        Some(o) => {
            p.add("lru_clock", format!("'{o}': expected logical or redis"));
            LruClockMode::Logical
        }
    };
    let class_mode = match raw.class_mode.as_deref() {
        None | Some("auto") => ClassMode::Auto,
        Some("manual") => ClassMode::Manual,
        Some("random-slab") => ClassMode::RandomSlab,
        Some(o) => {
            p.add(
                "class_mode",
                format!("'{o}': expected auto, manual or random-slab"),
            );
            ClassMode::Auto
        }
    };
    let interleave = match raw.interleave.as_deref() {
        None | Some("rate") => Interleave::Rate,
        Some("time") => Interleave::Time,
        Some(o) => {
            p.add("interleave", format!("'{o}': expected rate or time"));
            Interleave::Rate
        }
    };

    // Controllers.
    let mut controllers = Vec::new();
    if raw.controllers.is_empty() {
        p.add("controller", "at least one [[controller]] is needed");
    }
    for (i, c) in raw.controllers.iter().enumerate() {
        let path = format!("controller[{i}]");
        let label = c.label.clone().unwrap_or_else(|| c.name.clone());
        if controllers.iter().any(|x: &ControllerRun| x.label == label) {
            p.add(
                &format!("{path}.label"),
                format!("'{label}' is used twice (give each run a distinct label)"),
            );
        }
        let (settings, settings_ok) = match settings_from_toml(&c.settings) {
            Ok(settings) => (settings, true),
            Err(bad) => {
                for e in bad {
                    p.add(&format!("{path}.settings.{}", e.key), e.reason);
                }
                (Vec::new(), false)
            }
        };
        // Build once to report unknown names and bad settings now, not in a worker thread
        // (the oracles' plans are not made here: `SettingsOnly` plans nothing).
        let s = locus_control::Settings::new(&c.name, settings.clone());
        match locus_control::build_with(&c.name, s, &SettingsOnly) {
            Ok(_) => {}
            Err(locus_control::ControlError::NotAvailable { .. }) => {
                // Registered but not in this build: reported when the run starts.
            }
            Err(e @ locus_control::ControlError::UnknownController { .. }) => {
                p.add(&format!("{path}.name"), e)
            }
            Err(e) if settings_ok => p.add(&format!("{path}.settings"), e),
            Err(_) => {
                // The settings that have no text form are reported above; the controller saw none.
            }
        }
        let policy = c.policy.as_ref().and_then(|s| {
            s.parse::<Policy>()
                .map_err(|e| p.add(&format!("{path}.policy"), e))
                .ok()
        });
        if let Some(k) = c.samples
            && !(1..=locus_engine::config::MAX_SAMPLES).contains(&k)
        {
            p.add(
                &format!("{path}.samples"),
                format!("{k} is outside 1..={}", locus_engine::config::MAX_SAMPLES),
            );
        }
        if let Some(e) = c.evpool_size
            && e > locus_engine::config::MAX_EVPOOL_SIZE
        {
            p.add(
                &format!("{path}.evpool_size"),
                format!(
                    "{e} is outside 0..={}",
                    locus_engine::config::MAX_EVPOOL_SIZE
                ),
            );
        }
        controllers.push(ControllerRun {
            label,
            name: c.name.clone(),
            settings,
            policy,
            samples: c.samples,
            evpool_size: c.evpool_size,
        });
    }
    if let Some(f) = raw.steady
        && !(f > 0.0 && f <= 1.0)
    {
        p.add("steady", format!("{f} is not a fraction in (0, 1]"));
    }
    if let Some(b) = &raw.baseline
        && !controllers.iter().any(|c| &c.label == b)
    {
        p.add(
            "baseline",
            format!("'{b}' is not the label of a controller"),
        );
    }

    // Tenants.
    let mut tenants: Vec<Tenant> = Vec::new();
    if raw.tenants.is_empty() {
        p.add("tenant", "at least one [[tenant]] is needed");
    }
    for (i, t) in raw.tenants.iter().enumerate() {
        let path = format!("tenant[{i}]");
        if t.name.is_empty() {
            p.add(&format!("{path}.name"), "must not be empty");
        }
        if tenants.iter().any(|x| x.name == t.name) {
            p.add(
                &format!("{path}.name"),
                format!("'{}' is used twice", t.name),
            );
        }
        let rate = t.rate.unwrap_or(DEFAULT_RATE);
        if !(rate.is_finite() && rate > 0.0) {
            p.add(&format!("{path}.rate"), format!("{rate}: must be > 0"));
        }
        let source = match (&t.generator, &t.trace) {
            (Some(g), None) => match generator_options(g) {
                Ok(o) => {
                    if let Err(e) = generator_config(&o, i as u32, rate.max(1e-9)) {
                        p.add(&format!("{path}.generator"), e);
                    }
                    Source::Generator(o)
                }
                Err(e) => {
                    p.add(&format!("{path}.generator"), e);
                    Source::Generator(BTreeMap::new())
                }
            },
            (None, Some(tr)) => {
                let format = tr.format.as_ref().and_then(|f| {
                    f.parse::<Format>()
                        .map_err(|e| p.add(&format!("{path}.trace.format"), format!("{e:#}")))
                        .ok()
                });
                if let Some(c) = &tr.csv
                    && let Err(e) = c.parse::<CsvOptions>()
                {
                    p.add(&format!("{path}.trace.csv"), format!("{e:#}"));
                }
                let default_size = tr.default_size.as_ref().map_or(1, |v| {
                    bytes_value(v).unwrap_or_else(|e| {
                        p.add(&format!("{path}.trace.default_size"), e);
                        1
                    })
                });
                let limit = tr.limit.as_ref().and_then(|v| {
                    count_value(v)
                        .map_err(|e| p.add(&format!("{path}.trace.limit"), e))
                        .ok()
                });
                let file = PathBuf::from(&tr.path);
                let file = if file.is_absolute() || tr.path == "-" {
                    file
                } else {
                    dir.join(file)
                };
                if tr.path != "-" && !file.exists() {
                    p.add(
                        &format!("{path}.trace.path"),
                        format!("{} does not exist", file.display()),
                    );
                }
                Source::Trace(TraceSpec {
                    path: file,
                    format,
                    csv: tr.csv.clone(),
                    volume_as_tenant: tr.volume_as_tenant,
                    default_size,
                    limit,
                    select: tr.tenant,
                })
            }
            (Some(_), Some(_)) => {
                p.add(&path, "give either generator or trace, not both");
                Source::Generator(BTreeMap::new())
            }
            (None, None) => {
                p.add(&path, "needs a generator or a trace");
                Source::Generator(BTreeMap::new())
            }
        };
        let penalty = match &t.penalty {
            None => Penalty::Constant(0.0),
            Some(v) => penalty_value(v).unwrap_or_else(|e| {
                p.add(&format!("{path}.penalty"), e);
                Penalty::Constant(0.0)
            }),
        };
        let hit_us = t.hit_time.as_ref().map_or(0.0, |v| {
            micros_value(v).unwrap_or_else(|e| {
                p.add(&format!("{path}.hit_time"), e);
                0.0
            })
        });
        if t.penalty_hint && penalty.mean().is_none() {
            p.add(
                &format!("{path}.penalty_hint"),
                "a trace-column penalty has no mean known up front to hint",
            );
        }
        let policy = match &t.policy {
            None => Policy::AllkeysLru,
            Some(s) => s.parse().unwrap_or_else(|e| {
                p.add(&format!("{path}.policy"), e);
                Policy::AllkeysLru
            }),
        };
        let mut cfg = locus_engine::TenantConfig::new(&t.name);
        cfg.policy = policy;
        cfg.samples = t.samples.unwrap_or(cfg.samples);
        cfg.evpool_size = t.evpool_size.unwrap_or(cfg.evpool_size);
        if let Err(errs) = cfg.validate() {
            for e in errs {
                p.add(&path, e);
            }
        }
        tenants.push(Tenant {
            name: t.name.clone(),
            rate,
            source,
            penalty,
            hit_us,
            penalty_hint: t.penalty_hint,
            policy,
            samples: cfg.samples,
            evpool_size: cfg.evpool_size,
        });
    }
    // Several tenants reading one file must each select a tenant-column value.
    for (i, a) in tenants.iter().enumerate() {
        if let Source::Trace(ta) = &a.source {
            for b in tenants.iter().skip(i + 1) {
                if let Source::Trace(tb) = &b.source
                    && ta.same_stream(tb)
                    && (ta.select.is_none() || tb.select.is_none() || ta.select == tb.select)
                {
                    p.add(
                        &format!("tenant[{i}].trace.tenant"),
                        format!(
                            "tenants '{}' and '{}' read the same trace: give each a distinct trace.tenant value",
                            a.name, b.name
                        ),
                    );
                }
            }
        }
    }

    // Phases.
    let mut phases = Vec::new();
    let has_generators = tenants
        .iter()
        .any(|t| matches!(t.source, Source::Generator(_)));
    for (i, ph) in raw.phases.iter().enumerate() {
        let path = format!("phase[{i}]");
        let req = count_value(&ph.requests).unwrap_or_else(|e| {
            p.add(&format!("{path}.requests"), e);
            1
        });
        if req == 0 {
            p.add(&format!("{path}.requests"), "must be at least 1");
        }
        let mut overrides = BTreeMap::new();
        for (tname, table) in &ph.tenants {
            let Some(ti) = tenants.iter().position(|t| &t.name == tname) else {
                p.add(&format!("{path}.tenant.{tname}"), "no tenant of that name");
                continue;
            };
            let Source::Generator(base) = &tenants[ti].source else {
                p.add(
                    &format!("{path}.tenant.{tname}"),
                    "phases change generated tenants only (this one reads a trace)",
                );
                continue;
            };
            match generator_options(&toml::Value::Table(table.clone())) {
                Ok(o) => {
                    let mut merged = base.clone();
                    merged.extend(o.clone());
                    if let Err(e) = generator_config(&merged, ti as u32, tenants[ti].rate) {
                        p.add(&format!("{path}.tenant.{tname}"), e);
                    }
                    overrides.insert(ti, o);
                }
                Err(e) => p.add(&format!("{path}.tenant.{tname}"), e),
            }
        }
        phases.push(Phase {
            name: ph.name.clone().unwrap_or_else(|| format!("phase{i}")),
            requests: req,
            overrides,
        });
    }
    if !phases.is_empty() && !has_generators {
        p.add("phase", "phases need at least one generated tenant");
    }
    if has_generators && phases.is_empty() && requests.is_none() {
        p.add(
            "requests",
            "generated tenants need a request count (requests = \"1M\") or [[phase]] entries",
        );
    }
    if !phases.is_empty() && requests.is_some() {
        p.add(
            "requests",
            "with [[phase]] entries the total is the sum of their requests; remove requests",
        );
    }

    // Golden.
    let golden = raw.golden.as_ref().map(|g| {
        let scale = g.scale.unwrap_or(1.0);
        if !(scale.is_finite() && scale > 0.0 && scale <= 1.0) {
            p.add("golden.scale", format!("{scale}: must be in (0, 1]"));
        }
        Golden {
            scale,
            requests: g
                .requests
                .as_ref()
                .and_then(|v| count_value(v).map_err(|e| p.add("golden.requests", e)).ok()),
            memory: g
                .memory
                .as_ref()
                .and_then(|v| memory_value(v).map_err(|e| p.add("golden.memory", e)).ok()),
            interval: g.interval.as_ref().and_then(|v| {
                interval_value(v)
                    .map_err(|e| p.add("golden.interval", e))
                    .ok()
            }),
        }
    });

    if !p.0.is_empty() {
        return Err(p.0);
    }
    Ok(Experiment {
        name: raw.name,
        description: raw.description,
        memory,
        page_size,
        seed: raw.seed,
        requests,
        interval,
        max_moves: raw.max_moves.unwrap_or(64),
        lru_clock,
        class_mode,
        interleave,
        baseline: raw.baseline,
        steady: raw.steady,
        controllers,
        tenants,
        phases,
        golden,
        dir: dir.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Experiment, SimError> {
        Experiment::parse(s, "test.toml", Path::new("."))
    }

    const OK: &str = r#"
name = "t"
memory = "4MiB"
requests = "10k"
interval = "1k"
[[controller]]
name = "shared"
[[controller]]
name = "static"
settings = { shares = [1, 3] }
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = 0.9, keys = "10k", value_size = 100 }
penalty = { dist = "exponential", mean = "1ms" }
hit_time = 5
[[tenant]]
name = "b"
rate = 500
generator = "pattern=loop,keys=2000"
penalty = 200
"#;

    #[test]
    fn parses_a_full_experiment() {
        let e = parse(OK).unwrap();
        assert_eq!(e.memory, Memory::Bytes(4 << 20));
        assert_eq!(e.requests, Some(10_000));
        assert_eq!(e.interval, Interval::Requests(1000));
        assert_eq!(
            e.controllers[1].settings,
            vec![("shares".into(), "1,3".into())]
        );
        assert_eq!(e.tenants[0].penalty, Penalty::Exponential { mean: 1000.0 });
        assert_eq!(e.tenants[0].hit_us, 5.0);
        assert_eq!(e.tenants[1].rate, 500.0);
        assert_eq!(e.lru_clock, LruClockMode::Logical);
        let Source::Generator(o) = &e.tenants[0].source else {
            panic!()
        };
        assert_eq!(o.get("value-size").map(String::as_str), Some("100"));
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let bad = r#"
name = "t"
memory = "4XB"
interval = "soon"
[[controller]]
name = "nope"
[[controller]]
name = "static"
settings = { sharez = "1" }
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = -1 }
penalty = { dist = "gamma", mean = 1 }
[[tenant]]
name = "a"
trace = { path = "/does/not/exist" }
"#;
        let Err(SimError::Invalid { problems, .. }) = parse(bad) else {
            panic!("expected Invalid");
        };
        let joined = problems.join("\n");
        for key in [
            "memory:",
            "interval:",
            "controller[0].name:",
            "controller[1].settings:",
            "tenant[0].generator:",
            "tenant[0].penalty:",
            "tenant[1].name:",
            "tenant[1].trace.path:",
            "requests:",
        ] {
            assert!(joined.contains(key), "missing {key} in\n{joined}");
        }
    }

    #[test]
    fn nested_settings_are_rejected_with_their_key() {
        let text = OK
            .replace(
                "settings = { shares = [1, 3] }",
                "settings = { shares = [[1], [3]] }",
            )
            .replace("keys = \"10k\"", "keys = { n = 1 }");
        let Err(SimError::Invalid { problems, .. }) = parse(&text) else {
            panic!("expected Invalid");
        };
        let joined = problems.join("\n");
        for needle in [
            "controller[1].settings.shares: nested arrays and tables are not allowed in a list",
            "tenant[0].generator: keys: a table is not a setting value",
        ] {
            assert!(joined.contains(needle), "missing {needle} in\n{joined}");
        }
        assert_eq!(problems.len(), 2, "{joined}");
    }

    #[test]
    fn unknown_keys_are_rejected_by_serde() {
        let e = parse(&OK.replace("hit_time = 5", "hit_tme = 5")).unwrap_err();
        assert!(e.to_string().contains("hit_tme"), "{e}");
    }

    #[test]
    fn golden_scaling() {
        let text = format!("{OK}\n[golden]\nscale = 0.1\n");
        let e = parse(&text).unwrap().golden_scaled();
        assert_eq!(e.requests, Some(1000));
        assert_eq!(e.memory, Memory::Bytes((4u64 << 20) / 10));
        let Source::Generator(o) = &e.tenants[0].source else {
            panic!()
        };
        assert_eq!(o["keys"], "1000");
    }

    #[test]
    fn counts_and_penalties() {
        assert_eq!(parse_count("2M"), Some(2_000_000));
        assert_eq!(parse_count("1e6"), Some(1_000_000));
        assert_eq!(parse_count("1_000"), Some(1000));
        assert_eq!(parse_count("x"), None);
        let u = Penalty::Uniform {
            min: 100.0,
            max: 300.0,
        };
        assert_eq!(u.draw(0.5, None), Some(200.0));
        assert_eq!(
            Penalty::Trace { default: Some(7.0) }.draw(0.1, None),
            Some(7.0)
        );
        assert_eq!(
            Penalty::Trace { default: None }.draw(0.1, Some(9)),
            Some(9.0)
        );
    }
}
