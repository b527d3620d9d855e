//! Trace-driven experiments on the Locus engine: memory controllers compared on the same requests
//! with a virtual clock (issue #4).
//!
//! An experiment file ([`experiment`], reference in `experiments/README.md`) names the tenants
//! (trace files or generators, rates, miss penalties, hit times), the memory and the controllers
//! to compare. Every controller gets its own [`locus_engine::Engine`] and replays the same request
//! stream ([`workload`]) through the production data path ([`run`]): GET, and on a miss the
//! virtual clock advances by the miss penalty before the SET, so the engine's pRedis-style monitor
//! measures the penalty as a server would. Nothing here re-implements a policy: controllers are
//! built by name from `locus-control`'s registry ([`locus_control::build_with`]), the same table
//! the server builds from; the two offline optima (`oracle` per tenant, `slab-oracle` per size
//! class) plan through the registry's [`locus_control::Offline`] hook, which the simulator
//! answers with exact LRU curves of the whole run from a first pass ([`exact`]) and
//! `locus-control`'s own planners.
//!
//! ```text
//!  EXPERIMENT.toml ─► Experiment ─┬─ job: controller A ─ Workload ─► Engine + A ─► RunResult ─┐
//!                                 ├─ job: controller B ─ Workload ─► Engine + B ─► RunResult ─┼─► Report
//!                                 └─ job: oracle ─ exact pass ─ plan ─► Engine + Oracle ──────┘  table, CSV,
//!   jobs run on min(cores, jobs) threads (std::thread::scope); every run is deterministic       JSON, plots
//! ```
//!
//! Components: [`experiment`] (file format, validation with key paths, golden scaling),
//! [`workload`] (generators, traces, phases, interleaving), [`run`] (one controller's replay, the
//! speed references), [`exact`] (exact curves and the oracles' plans), [`report`] (table, CSV,
//! JSON), [`seeds`] (several seeds: mean ± sd, min/max per figure), [`plot`] (allocation, K and hit
//! ratio over time, SVG and PNG via `locus-plot`), [`sweep`] (`[sweep]`: memory as fractions of
//! the working set, the headline per controller as table, CSV and plot), [`dumpload`] (pRedis's automatic dump/load of
//! periodic tenants, carried out on the engine), [`profile`] (the pipeline behind `locus mrc`:
//! several models and K in one pass over a trace), [`predict`] (LAMA's prediction of the default
//! memcached's allocation and miss ratio, equation 6).
//!
//! Non-goals: no network (driving a live server from a trace is `locus replay`, in the
//! `locus-replay` crate), no policy logic of its own.

pub mod dumpload;
pub mod exact;
pub mod experiment;
pub mod plot;
pub mod predict;
pub mod profile;
pub mod report;
pub mod run;
pub mod seeds;
pub mod sweep;
pub mod workload;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use locus_common::VirtualClock;
use locus_control::{self as control, ControlError, Controller, Settings};
use serde::Serialize;

pub use experiment::{Experiment, Memory};
pub use run::{IntervalRow, PhaseResult, RunResult, TenantResult};

/// Everything that can go wrong in a simulation.
#[derive(thiserror::Error, Debug)]
pub enum SimError {
    /// A file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// The file.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The experiment is not valid TOML, has an unknown key or a value of the wrong type.
    #[error("{what}: {message}")]
    Parse {
        /// The file.
        what: String,
        /// The TOML error (with line and column).
        message: String,
    },
    /// The experiment has invalid values.
    #[error("{what}: invalid experiment:\n  {}", problems.join("\n  "))]
    Invalid {
        /// The file.
        what: String,
        /// Every problem, each starting with its key path.
        problems: Vec<String>,
    },
    /// A trace could not be opened or read.
    #[error("{what}: {source:#}")]
    Trace {
        /// The trace.
        what: String,
        /// The cause.
        source: locus_trace::TraceError,
    },
    /// The request stream cannot be built or replayed.
    #[error("{what}: {message}")]
    Workload {
        /// What.
        what: String,
        /// Why.
        message: String,
    },
    /// The engine refused its configuration.
    #[error("engine: {0}")]
    Engine(#[from] locus_engine::EngineError),
    /// A controller could not be built.
    #[error("controller '{label}': {source}")]
    Control {
        /// The controller entry's label.
        label: String,
        /// The cause.
        source: ControlError,
    },
    /// A plot could not be drawn or written.
    #[error("{what}: {message}")]
    Plot {
        /// The file.
        what: String,
        /// Why.
        message: String,
    },
    /// A curve could not be built.
    #[error("exact curves: {0}")]
    Mrc(#[from] locus_mrc::MrcError),
}

/// How to run an experiment.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Worker threads (0: available cores).
    pub threads: usize,
    /// Only these controller labels (empty: all).
    pub only: Vec<String>,
    /// Whether each run's controller profiles on a thread of its own.
    pub offload: Offload,
}

/// Whether controllers profile on a thread of their own ([`locus_engine::ControlConfig::offload`]).
/// Results are the same either way, bit for bit; only where the work runs differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Offload {
    /// When a core is free for it: at most half the cores run replays.
    #[default]
    Auto,
    /// Always.
    On,
    /// Never: the profilers run on the replay thread.
    Off,
}

impl std::str::FromStr for Offload {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(Offload::Auto),
            "on" | "true" | "yes" => Ok(Offload::On),
            "off" | "false" | "no" => Ok(Offload::Off),
            _ => Err(format!("offload '{s}': expected auto, on or off")),
        }
    }
}

/// What a whole experiment produced.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Experiment name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// `maxmemory` the engines got (bytes).
    pub maxmemory: u64,
    /// Page size (bytes).
    pub page_size: u64,
    /// Pages of memory.
    pub pages_total: u64,
    /// Tenant names.
    pub tenants: Vec<String>,
    /// The headline metric: `mean_latency_us` when some tenant has a miss penalty, else
    /// `miss_ratio`.
    pub metric: String,
    /// Controller labels from best to worst by the headline metric.
    pub ordering: Vec<String>,
    /// Successful runs, in the experiment's order.
    pub runs: Vec<RunResult>,
    /// Runs that failed: (label, error).
    pub failed: Vec<(String, String)>,
    /// Share of the oracle's gain over the baseline per label (needs `baseline` and `oracle`).
    pub oracle_gain: Vec<(String, f64)>,
    /// The experiment's `steady` fraction (steady-state windows), if any.
    pub steady: Option<f64>,
    /// The same share in each steady-state window (experiment key `steady`): (window name,
    /// (label, share) per run).
    pub steady_gain: Vec<(String, Vec<(String, f64)>)>,
    /// The oracle's curves and partitions (when it ran).
    pub oracle: Option<exact::OracleCurves>,
    /// The slab oracle's per-class plan (when it ran).
    pub slab_oracle: Option<Vec<exact::ClassPlan>>,
    /// Its plan per phase (`per_phase = true`), else empty.
    pub slab_oracle_phases: Vec<Vec<exact::ClassPlan>>,
}

impl Report {
    /// The headline value of a run (lower is better).
    pub fn headline(&self, r: &RunResult) -> f64 {
        self.headline_of(&r.overall)
    }

    /// The share of the oracle's gain of run `label` in steady-state window `window`.
    pub fn steady_gain_of(&self, window: &str, label: &str) -> Option<f64> {
        self.steady_gain
            .iter()
            .find(|(w, _)| w == window)
            .and_then(|(_, g)| g.iter().find(|(l, _)| l == label))
            .map(|(_, x)| *x)
    }

    /// The headline value of a result (lower is better).
    pub fn headline_of(&self, t: &TenantResult) -> f64 {
        if self.metric == "mean_latency_us" {
            t.mean_latency_us
        } else {
            1.0 - t.hit_ratio
        }
    }
}

/// `maxmemory` for the experiment: bytes as given, or room for the object count.
///
/// # Errors
/// The reference item cannot be measured (trace errors) or is larger than a page.
pub fn resolve_memory(exp: &Experiment) -> Result<u64, SimError> {
    let pages = |b: u64| b.div_ceil(exp.page_size) * exp.page_size;
    match exp.memory {
        Memory::Bytes(b) => Ok(b),
        Memory::Objects { objects, item_size } => {
            let item = match item_size {
                Some(s) => s,
                None => {
                    let mut wl = workload::Workload::open(exp)?;
                    let mut it = workload::Item::default();
                    let mut sizes = Vec::new();
                    while sizes.len() < 10_000 && wl.next(&mut it)? {
                        let klen = (it.req.key_size as u64).clamp(8, run::MAX_KEY_BYTES as u64);
                        sizes.push(klen + it.req.value_size);
                    }
                    sizes.sort_unstable();
                    sizes.get(sizes.len() / 2).copied().unwrap_or(9)
                }
            };
            let clock = VirtualClock::new(0);
            let probe = run::build_engine(exp, exp.page_size, &clock)?;
            let class = probe
                .class_for(0, item as usize)
                .ok_or_else(|| SimError::Workload {
                    what: "memory.objects".into(),
                    message: format!("the reference item ({item} bytes) is larger than a page"),
                })?;
            let chunk = probe
                .size_classes()
                .iter()
                .find(|(c, _)| *c == class)
                .map(|(_, b)| u64::from(*b))
                .unwrap_or(item);
            // One page per tenant for the partly filled page of its class.
            Ok(pages(objects * chunk) + exp.tenants.len() as u64 * exp.page_size)
        }
    }
}

/// Runs every controller of `exp` (in parallel) and gathers the report.
///
/// `progress(label, requests)` is called from the worker threads.
///
/// # Errors
/// Only errors that stop every run (memory resolution). A failing controller is reported in
/// [`Report::failed`] and the others go on.
pub fn simulate(
    exp: &Experiment,
    opts: &Options,
    progress: &(dyn Fn(&str, u64) + Sync),
) -> Result<Report, SimError> {
    let maxmemory = resolve_memory(exp)?;
    let jobs: Vec<&experiment::ControllerRun> = exp
        .controllers
        .iter()
        .filter(|c| opts.only.is_empty() || opts.only.contains(&c.label))
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if opts.threads == 0 {
        cores
    } else {
        opts.threads
    }
    .clamp(1, jobs.len().max(1));
    let offload = match opts.offload {
        Offload::Auto => 2 * threads <= cores,
        Offload::On => true,
        Offload::Off => false,
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<RunResult, SimError>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let oracle_curves: Mutex<Option<exact::OracleCurves>> = Mutex::new(None);
    let slab_plan: Mutex<Option<Vec<exact::ClassPlan>>> = Mutex::new(None);
    let slab_phase_plans: Mutex<Vec<Vec<exact::ClassPlan>>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else {
                        break;
                    };
                    let label = job.label.clone();
                    let report = |n: u64| progress(&label, n);
                    let r = run_job(
                        exp,
                        maxmemory,
                        job,
                        offload,
                        &report,
                        &Planned {
                            oracle: &oracle_curves,
                            slab: &slab_plan,
                            slab_phases: &slab_phase_plans,
                        },
                    );
                    results.lock().expect("no worker panics holding the lock")[i] = Some(r);
                }
            });
        }
    });
    let mut runs = Vec::new();
    let mut failed = Vec::new();
    let results = results.into_inner().expect("workers joined");
    for (job, r) in jobs.iter().zip(results) {
        match r {
            Some(Ok(run)) => runs.push(run),
            Some(Err(e)) => failed.push((job.label.clone(), e.to_string())),
            None => failed.push((job.label.clone(), "not run".into())),
        }
    }
    let with_penalty = exp
        .tenants
        .iter()
        .any(|t| t.penalty.mean().is_none_or(|m| m > 0.0));
    let mut report = Report {
        name: exp.name.clone(),
        description: exp.description.clone(),
        maxmemory,
        page_size: exp.page_size,
        pages_total: maxmemory / exp.page_size,
        tenants: exp.tenants.iter().map(|t| t.name.clone()).collect(),
        metric: if with_penalty {
            "mean_latency_us"
        } else {
            "miss_ratio"
        }
        .into(),
        ordering: Vec::new(),
        runs,
        failed,
        oracle_gain: Vec::new(),
        steady: exp.steady,
        steady_gain: Vec::new(),
        oracle: oracle_curves.into_inner().expect("workers joined"),
        slab_oracle: slab_plan.into_inner().expect("workers joined"),
        slab_oracle_phases: slab_phase_plans.into_inner().expect("workers joined"),
    };
    let mut order: Vec<(f64, String)> = report
        .runs
        .iter()
        .map(|r| (report.headline(r), r.label.clone()))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    report.ordering = order.into_iter().map(|(_, l)| l).collect();
    if let Some(base) = &exp.baseline {
        let find = |pred: &dyn Fn(&RunResult) -> bool| report.runs.iter().find(|r| pred(r));
        if let (Some(b), Some(o)) = (
            find(&|r| &r.label == base),
            find(&|r| r.controller == "oracle")
                .or_else(|| find(&|r| r.controller == "slab-oracle")),
        ) {
            // (baseline − run) / (baseline − oracle) on the headline of the row `row` picks
            // (the whole run, or one steady-state window); none when the oracle gains nothing.
            let shares = |row: &dyn Fn(&RunResult) -> Option<&TenantResult>| {
                let (hb, ho) = (report.headline_of(row(b)?), report.headline_of(row(o)?));
                ((hb - ho).abs() > 1e-12).then(|| {
                    report
                        .runs
                        .iter()
                        .filter_map(|r| {
                            let h = report.headline_of(row(r)?);
                            Some((r.label.clone(), (hb - h) / (hb - ho)))
                        })
                        .collect::<Vec<_>>()
                })
            };
            let whole = shares(&|r| Some(&r.overall));
            let steady: Vec<_> = (o.steady.iter().enumerate())
                .filter_map(|(i, w)| {
                    let s = shares(&|r| r.steady.get(i).map(|w| &w.overall))?;
                    Some((w.name.clone(), s))
                })
                .collect();
            report.oracle_gain = whole.unwrap_or_default();
            report.steady_gain = steady;
        }
    }
    Ok(report)
}

/// Where the runs that plan from the exact first pass leave their plans for the report.
struct Planned<'a> {
    oracle: &'a Mutex<Option<exact::OracleCurves>>,
    slab: &'a Mutex<Option<Vec<exact::ClassPlan>>>,
    slab_phases: &'a Mutex<Vec<Vec<exact::ClassPlan>>>,
}

fn run_job(
    exp: &Experiment,
    maxmemory: u64,
    job: &experiment::ControllerRun,
    offload: bool,
    progress: &(dyn Fn(u64) + Sync),
    planned: &Planned<'_>,
) -> Result<RunResult, SimError> {
    let offline = ExactPlanner {
        exp,
        maxmemory,
        planned,
        failure: Mutex::new(None),
    };
    let settings = Settings::new(&job.name, job.settings.clone());
    let built = control::build_with(&job.name, settings, &offline).map_err(|source| {
        // A trace or engine error met while planning is reported as itself.
        match offline
            .failure
            .lock()
            .expect("no panics holding the lock")
            .take()
        {
            Some(e) => e,
            None => SimError::Control {
                label: job.label.clone(),
                source,
            },
        }
    })?;
    // Phase 0 runs `built.controller`; each later phase installs its own plan's controller.
    let mut schedule: Vec<Option<Box<dyn Controller>>> = Vec::new();
    if !built.phases.is_empty() {
        schedule.push(None);
        schedule.extend(built.phases.into_iter().map(Some));
    }
    run::run(
        exp,
        maxmemory,
        job,
        built.controller,
        schedule,
        offload,
        progress,
    )
}

/// The simulator's [`control::Offline`] planner: the oracles' plans from the exact curves of the
/// whole run (or of each phase), left in [`Planned`] for the report.
struct ExactPlanner<'a> {
    exp: &'a Experiment,
    maxmemory: u64,
    planned: &'a Planned<'a>,
    /// The trace or engine error that stopped a plan (the registry only carries ControlErrors).
    failure: Mutex<Option<SimError>>,
}

impl ExactPlanner<'_> {
    fn fail(&self, e: SimError) -> ControlError {
        let why = e.to_string();
        *self.failure.lock().expect("no panics holding the lock") = Some(e);
        ControlError::NotAvailable {
            name: "oracle".into(),
            why,
        }
    }
}

impl control::Offline for ExactPlanner<'_> {
    fn pool_plans(
        &self,
        objective: Option<locus_alloc::Objective>,
        step: u64,
        per_phase: bool,
    ) -> Result<Vec<Vec<u64>>, ControlError> {
        let (exp, maxmemory) = (self.exp, self.maxmemory);
        let settings = experiment::OracleSettings {
            objective,
            step,
            per_phase,
        };
        let mut curves = exact::exact_curves(exp, maxmemory).map_err(|e| self.fail(e))?;
        let plan = exact::plan_oracle(exp, &curves, &settings)?;
        let plans = if per_phase && !plan.phase_pages.is_empty() {
            plan.phase_pages.clone()
        } else {
            vec![plan.pages.clone()]
        };
        curves.plan = Some(plan);
        *self
            .planned
            .oracle
            .lock()
            .expect("no worker panics holding the lock") = Some(curves);
        Ok(plans)
    }

    fn class_plans(&self, per_phase: bool) -> Result<Vec<control::SlabPlan>, ControlError> {
        let exp = self.exp;
        let (plan, phase_plans) =
            exact::slab_plans(exp, self.maxmemory, per_phase).map_err(|e| self.fail(e))?;
        let targets = |plan: &[exact::ClassPlan]| -> Vec<_> {
            plan.iter()
                .map(|c| {
                    let pool = exp.tenants.iter().position(|t| t.name == c.tenant);
                    (
                        locus_engine::PoolId(pool.unwrap_or(0) as u32),
                        locus_engine::ClassId(c.class),
                        c.pages,
                    )
                })
                .collect()
        };
        let plans: Vec<_> = if phase_plans.is_empty() {
            vec![targets(&plan)]
        } else {
            phase_plans.iter().map(|p| targets(p)).collect()
        };
        *self
            .planned
            .slab
            .lock()
            .expect("no worker panics holding the lock") = Some(plan);
        if !phase_plans.is_empty() {
            *self
                .planned
                .slab_phases
                .lock()
                .expect("no worker panics holding the lock") = phase_plans;
        }
        Ok(plans)
    }
}
