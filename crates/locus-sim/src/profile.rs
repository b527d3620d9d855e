//! Miss ratio curves of a trace, several models and K values in one pass: the pipeline behind
//! `locus mrc`, here so that it is library code with its own tests (the CLI parses options,
//! shows progress and writes files).
//!
//! ```text
//!  locus_trace::open(FILE) ──► Request ──► (key, size, op) ──► every profiler of the request's
//!                                                              tenant slot (one per model × K)
//!  end of trace: capacities = N points on (0, max working set] per tenant
//!             ──► Curve per profiler, plus "<model>-min" (kRedis's merge over K, with argmin K)
//! ```
//!
//! It lives in `locus-sim` because it needs the trace readers (`locus-trace`), the models
//! (`locus-mrc`) and the engine's miniature simulation (`locus-engine`), as the simulator does.
//!
//! `mini` simulates fixed capacities chosen up front: with [`ProfileSpec::max_capacity`] they
//! span (0, max]; otherwise a first pass over the file measures each tenant's working set
//! (SHARDS at the spec's rate, exact without one), so `mini` cannot read stdin without a
//! maximum.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use locus_engine::Policy;
use locus_engine::minisim::{MiniSim, MiniSimConfig};
use locus_mrc::{
    ErrorStats, Metric, ModelKind, ModelSettings, Mrc, MrcError, Op, Profiler, Unit, build,
    even_capacities,
};
use locus_trace::{ReadOptions, Request, TraceError};

/// The slot key of the whole trace when curves are not per tenant.
const ALL: u32 = u32::MAX;

/// What can go wrong profiling a trace.
#[derive(thiserror::Error, Debug)]
pub enum ProfileError {
    /// An option or combination of options that cannot work.
    #[error("{0}")]
    Invalid(String),
    /// A model refused its settings, or a curve could not be made.
    #[error(transparent)]
    Mrc(#[from] MrcError),
    /// The miniature simulation refused its settings.
    #[error(transparent)]
    Mini(#[from] locus_engine::minisim::MiniSimError),
    /// The trace could not be opened or read.
    #[error("{what} {path}: {source}")]
    Trace {
        /// `opening` or `reading`.
        what: &'static str,
        /// The trace.
        path: String,
        /// The cause.
        source: Box<TraceError>,
    },
}

/// What `mini` (miniature simulation of the engine) needs besides the shared settings.
#[derive(Debug, Clone, Copy)]
pub struct MiniSettings {
    /// The engine policy to simulate.
    pub policy: Policy,
    /// Eviction pool size (16 = Redis, 0 = textbook K-LRU).
    pub evpool: u32,
    /// Simulated capacities (one scaled engine each); curves interpolate between.
    pub sizes: usize,
}

impl Default for MiniSettings {
    fn default() -> Self {
        MiniSettings {
            policy: Policy::AllkeysLru,
            evpool: 16,
            sizes: 20,
        }
    }
}

/// What to profile.
#[derive(Debug, Clone)]
pub struct ProfileSpec {
    /// Models, without repeats.
    pub models: Vec<ModelKind>,
    /// K values of the K-dependent models (one curve each, and a merged "-min" with several).
    pub ks: Vec<u32>,
    /// Unit, metric, sampling rate, fixed size, KRR exponent, seed (`k` is set per slot).
    pub base: ModelSettings,
    /// `mini`'s own settings.
    pub mini: MiniSettings,
    /// One curve per tenant (the trace's tenant field) instead of one for the whole trace.
    pub per_tenant: bool,
    /// Capacities per curve, evenly spaced up to the largest working set (or `max_capacity`).
    pub points: usize,
    /// Largest capacity instead of the measured working set.
    pub max_capacity: Option<f64>,
    /// Stop after this many requests.
    pub limit: Option<u64>,
}

impl ProfileSpec {
    /// A spec for `models` with the defaults of `locus mrc` (K = 5, 100 points, objects,
    /// request miss ratio, no sampling).
    pub fn new(models: Vec<ModelKind>) -> Self {
        ProfileSpec {
            models,
            ks: vec![5],
            base: ModelSettings::default(),
            mini: MiniSettings::default(),
            per_tenant: false,
            points: 100,
            max_capacity: None,
            limit: None,
        }
    }

    /// Checks every option and model combination (before any trace is read).
    ///
    /// # Errors
    /// [`ProfileError::Invalid`] or a model's own [`MrcError`].
    pub fn validate(&self) -> Result<(), ProfileError> {
        let invalid = |s: &str| Err(ProfileError::Invalid(s.to_string()));
        if self.models.is_empty() {
            return invalid("no model given (--model exact,shards,…)");
        }
        if self.points == 0 {
            return invalid("--points must be at least 1");
        }
        if self.ks.is_empty() {
            return invalid("--k needs at least one value");
        }
        if let Some(m) = self.max_capacity.filter(|m| !(m.is_finite() && *m > 0.0)) {
            return Err(ProfileError::Invalid(format!(
                "--max-capacity must be a positive number, got {m}"
            )));
        }
        if self.mini.sizes == 0 {
            return invalid("--mini-sizes must be at least 1");
        }
        build_slots(self, 1.0).map(|_| ())
    }

    fn has_mini(&self) -> bool {
        self.models.contains(&ModelKind::Mini)
    }
}

/// Model names (`exact,shards,…`) parsed, repeats dropped.
///
/// # Errors
/// An unknown name, or none.
pub fn parse_models(names: &[String]) -> Result<Vec<ModelKind>, ProfileError> {
    let mut out = Vec::new();
    for n in names {
        let m: ModelKind = n.parse()?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(ProfileError::Invalid(
            "no model given (--model exact,shards,…)".into(),
        ));
    }
    Ok(out)
}

/// One finished curve.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Curve {
    /// Model name (`krr`, or `krr-min` for a merge over K).
    pub model: String,
    /// K, for K-dependent models.
    pub k: Option<u32>,
    /// Tenant id, or `all`.
    pub tenant: String,
    /// The profiler's own name.
    pub name: String,
    /// Capacity unit.
    pub unit: Unit,
    /// Miss ratio metric.
    pub metric: Metric,
    /// For merged curves: the K achieving the minimum at each point.
    pub argmin_k: Option<Vec<u32>>,
    /// `(capacity, miss ratio)`.
    pub points: Vec<(f64, f64)>,
}

/// The result of a pass.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Requests read.
    pub requests: u64,
    /// Every curve, tenant by tenant.
    pub curves: Vec<Curve>,
    /// The reader's warnings: (what, how many times).
    pub warnings: Vec<(String, u64)>,
}

/// One profiler and what it stands for.
struct Slot {
    model: ModelKind,
    k: Option<u32>,
    profiler: Box<dyn Profiler>,
}

/// A miniature simulation of `mini.policy` at `mini.sizes` capacities up to `max`.
fn build_mini(
    base: &ModelSettings,
    mini: &MiniSettings,
    max: f64,
) -> Result<Box<dyn Profiler>, ProfileError> {
    let caps = even_capacities(max.max(1.0), mini.sizes);
    let cfg = MiniSimConfig {
        unit: base.unit,
        metric: base.metric,
        policy: mini.policy,
        samples: base.k,
        evpool_size: mini.evpool,
        seed: base.seed,
        ..MiniSimConfig::new(base.rate.unwrap_or(1.0), caps)
    };
    Ok(Box::new(MiniSim::new(cfg)?))
}

/// The profilers of one tenant (one per model, and per K for K-dependent models); `mini_max` is
/// the largest capacity `mini` simulates for this tenant.
fn build_slots(spec: &ProfileSpec, mini_max: f64) -> Result<Vec<Slot>, ProfileError> {
    let models = &spec.models;
    let mut slots = Vec::new();
    for &m in models {
        // Options that only apply to some models are ignored by the others when several models
        // run together; alone, a model rejects what it cannot use.
        let mut s = spec.base;
        if models.len() > 1 {
            if m != ModelKind::Shards {
                s.fixed_size = None;
            } else if s.fixed_size.is_some() {
                s.rate = None;
            }
            if m == ModelKind::Exact {
                s.rate = None;
            }
        }
        if m == ModelKind::Mini {
            if s.fixed_size.is_some() {
                return Err(ProfileError::Invalid(
                    "--fixed-size does not apply to model mini".into(),
                ));
            }
            for &k in &spec.ks {
                s.k = k;
                let profiler = build_mini(&s, &spec.mini, mini_max)?;
                slots.push(Slot {
                    model: m,
                    k: Some(k),
                    profiler,
                });
            }
        } else if m.uses_k() {
            for &k in &spec.ks {
                s.k = k;
                let profiler = build(m, &s)?;
                slots.push(Slot {
                    model: m,
                    k: Some(k),
                    profiler,
                });
            }
        } else {
            slots.push(Slot {
                model: m,
                k: None,
                profiler: build(m, &s)?,
            });
        }
    }
    Ok(slots)
}

fn to_op(op: locus_trace::Op) -> Op {
    match op {
        locus_trace::Op::Get => Op::Get,
        locus_trace::Op::Set => Op::Set,
        locus_trace::Op::Delete => Op::Del,
    }
}

/// Reads `path` request by request, `f(tenant slot, request)` for each, up to the spec's limit;
/// returns the requests read and the reader's warnings.
fn each_request(
    path: &Path,
    opts: &ReadOptions,
    spec: &ProfileSpec,
    mut f: impl FnMut(u32, &Request) -> Result<(), ProfileError>,
) -> Result<(u64, Vec<(String, u64)>), ProfileError> {
    let shown = || path.display().to_string();
    let mut reader = locus_trace::open(path, opts).map_err(|source| ProfileError::Trace {
        what: "opening",
        path: shown(),
        source: Box::new(source),
    })?;
    let mut req = Request::default();
    let limit = spec.limit.unwrap_or(u64::MAX);
    let mut n = 0u64;
    while n < limit
        && reader
            .read_into(&mut req)
            .map_err(|source| ProfileError::Trace {
                what: "reading",
                path: shown(),
                source: Box::new(source),
            })?
    {
        n += 1;
        f(if spec.per_tenant { req.tenant } else { ALL }, &req)?;
    }
    let warnings = reader
        .warnings()
        .iter()
        .map(|w| (w.what.clone(), w.count))
        .collect();
    Ok((n, warnings))
}

/// First pass for `mini` without a maximum capacity: each tenant slot's working set, measured
/// by SHARDS at the spec's rate (exact without one).
fn working_sets(
    path: &Path,
    opts: &ReadOptions,
    spec: &ProfileSpec,
) -> Result<BTreeMap<u32, f64>, ProfileError> {
    if path == Path::new("-") {
        return Err(ProfileError::Invalid(
            "--model mini reading stdin needs --max-capacity (its capacities are fixed up front)"
                .into(),
        ));
    }
    let s = ModelSettings {
        fixed_size: None,
        ..spec.base
    };
    let mut profs: BTreeMap<u32, Box<dyn Profiler>> = BTreeMap::new();
    each_request(path, opts, spec, |t, req| {
        let p = match profs.get_mut(&t) {
            Some(p) => p,
            None => profs.entry(t).or_insert(build(ModelKind::Shards, &s)?),
        };
        p.access(
            req.key,
            u32::try_from(req.size()).unwrap_or(u32::MAX),
            to_op(req.op),
        );
        Ok(())
    })?;
    Ok(profs
        .into_iter()
        .map(|(t, p)| (t, p.working_set()))
        .collect())
}

/// Profiles the trace at `path` ("-" for stdin) as `spec` says; `progress(requests)` is called
/// after every request.
///
/// # Errors
/// An invalid spec, a trace that cannot be read or has no requests, a model error.
pub fn profile(
    path: &Path,
    opts: &ReadOptions,
    spec: &ProfileSpec,
    progress: &mut dyn FnMut(u64),
) -> Result<Profile, ProfileError> {
    spec.validate()?;
    let has_mini = spec.has_mini();
    // mini's capacities are fixed up front: from max_capacity or a first pass.
    let ws = match spec.max_capacity {
        None if has_mini => working_sets(path, opts, spec)?,
        _ => BTreeMap::new(),
    };
    let mini_max = |t: u32| -> f64 {
        spec.max_capacity
            .or_else(|| ws.get(&t).copied())
            .unwrap_or(1.0)
    };
    let mut tenants: BTreeMap<u32, Vec<Slot>> = BTreeMap::new();
    // The common case (one slot for the whole trace) keeps its profilers out of the map.
    let mut all = if spec.per_tenant {
        Vec::new()
    } else {
        build_slots(spec, mini_max(ALL))?
    };
    let mut n = 0;
    let (requests, warnings) = each_request(path, opts, spec, |t, req| {
        let slots = if spec.per_tenant {
            match tenants.get_mut(&t) {
                Some(s) => s,
                None => tenants.entry(t).or_insert(build_slots(spec, mini_max(t))?),
            }
        } else {
            &mut all
        };
        let size = u32::try_from(req.size()).unwrap_or(u32::MAX);
        let op = to_op(req.op);
        for s in slots.iter_mut() {
            s.profiler.access(req.key, size, op);
        }
        n += 1;
        progress(n);
        Ok(())
    })?;
    if requests == 0 {
        return Err(ProfileError::Invalid(format!(
            "{}: the trace has no requests",
            path.display()
        )));
    }
    if !spec.per_tenant {
        tenants.insert(ALL, all);
    }
    let mut curves = Vec::new();
    for (&tenant, slots) in &tenants {
        let tenant_name = if tenant == ALL {
            "all".to_string()
        } else {
            tenant.to_string()
        };
        // With mini, everyone uses mini's range (its curve is flat beyond what it simulated).
        let max = spec.max_capacity.unwrap_or_else(|| {
            if has_mini {
                mini_max(tenant)
            } else {
                slots
                    .iter()
                    .map(|s| s.profiler.working_set())
                    .fold(0.0, f64::max)
            }
        });
        let caps = even_capacities(max.max(1.0), spec.points);
        for s in slots {
            let m = s.profiler.mrc(&caps)?;
            curves.push(Curve {
                model: s.model.name().to_string(),
                k: s.k,
                tenant: tenant_name.clone(),
                name: s.profiler.name(),
                unit: m.unit(),
                metric: m.metric(),
                argmin_k: None,
                points: m.points().to_vec(),
            });
        }
        // kRedis's merged curve over the K values of each K-dependent model.
        for &model in &spec.models {
            let per_k: Vec<(u32, Mrc)> = slots
                .iter()
                .filter(|s| s.model == model && s.k.is_some())
                .map(|s| Ok((s.k.unwrap_or(0), s.profiler.mrc(&caps)?)))
                .collect::<Result<_, MrcError>>()?;
            if per_k.len() > 1 {
                let refs: Vec<(u32, &Mrc)> = per_k.iter().map(|(k, m)| (*k, m)).collect();
                let merged = Mrc::merge_min(&refs)?;
                curves.push(Curve {
                    model: format!("{}-min", model.name()),
                    k: None,
                    tenant: tenant_name.clone(),
                    name: format!("{}-min", model.name()),
                    unit: merged.mrc.unit(),
                    metric: merged.mrc.metric(),
                    argmin_k: Some(merged.argmin.clone()),
                    points: merged.mrc.points().to_vec(),
                });
            }
        }
    }
    Ok(Profile {
        requests,
        curves,
        warnings,
    })
}

/// The curves as CSV: `model,k,tenant,capacity,unit,miss_ratio` (k: the argmin K of a merge).
pub fn csv_text(curves: &[Curve]) -> String {
    let mut s = String::from("model,k,tenant,capacity,unit,miss_ratio\n");
    for c in curves {
        for (i, (cap, mr)) in c.points.iter().enumerate() {
            let k = match (&c.argmin_k, c.k) {
                (Some(a), _) => a[i].to_string(),
                (None, Some(k)) => k.to_string(),
                (None, None) => String::new(),
            };
            let _ = writeln!(s, "{},{k},{},{cap},{},{mr:.6}", c.model, c.tenant, c.unit);
        }
    }
    s
}

/// Each non-exact curve's error against the exact curve of its tenant (curves without an exact
/// one beside them are left out).
///
/// # Errors
/// Curves of different kinds.
pub fn errors_vs_exact(curves: &[Curve]) -> Result<Vec<(&Curve, ErrorStats)>, ProfileError> {
    let mut out = Vec::new();
    for c in curves.iter().filter(|c| c.model != "exact") {
        let Some(truth) = curves
            .iter()
            .find(|t| t.model == "exact" && t.tenant == c.tenant)
        else {
            continue;
        };
        let t = Mrc::new(truth.unit, truth.metric, truth.points.clone())?;
        let m = Mrc::new(c.unit, c.metric, c.points.clone())?;
        out.push((c, m.error_vs(&t, &[])?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
