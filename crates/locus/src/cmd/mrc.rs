//! `locus mrc`: miss ratio curves from a trace, several models and K values in one pass.
//!
//! ```text
//!  locus_trace::open(FILE) ──► Request ──► (key, size, op) ──► every profiler of the request's
//!                                                              tenant (one per model × K)
//!  end of trace: capacities = N points on (0, max working set] per tenant
//!             ──► CSV rows `model,k,tenant,capacity,unit,miss_ratio`, JSON, SVG or PNG plot
//! ```
//! The models live in `locus-mrc`; miniature simulation (`mini`) lives in `locus-engine` because it
//! runs the engine's own policies; plots are drawn by `locus-plot`. This file only parses options,
//! reads the trace, shows progress and writes the outputs.
//!
//! `mini` simulates fixed capacities chosen up front: with `--max-capacity` they span
//! (0, max]; otherwise a first pass over the file measures each tenant's working set (SHARDS at
//! `--sample`, exact without it), so `mini` cannot read stdin without `--max-capacity`.

use anyhow::{Context, Result, bail};
use locus_engine::Policy;
use locus_engine::minisim::{MiniSim, MiniSimConfig};
use locus_mrc::{
    Metric, ModelKind, ModelSettings, Mrc, MrcError, Op, Profiler, Unit, build, even_capacities,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `locus mrc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Trace file ("-" for stdin). Format and compression are detected unless given.
    pub file: PathBuf,
    /// Models, comma-separated: exact, shards, aet, eaet, footprint, krr, mini.
    #[arg(long, value_delimiter = ',', default_value = "exact")]
    pub model: Vec<String>,
    /// K values for KRR (one curve per K; with several, also the merged minimum curve "krr-min").
    #[arg(long, value_delimiter = ',', default_value = "5")]
    pub k: Vec<u32>,
    /// KRR exponent: k_eff = K^exponent (1.4 textbook K-LRU, about 1.9 for Redis's eviction pool).
    #[arg(long, default_value_t = locus_mrc::EXPONENT_TEXTBOOK)]
    pub exponent: f64,
    /// Sampling rate R in (0, 1]: spatial for shards/krr/footprint, reference sampling for aet/eaet.
    #[arg(long)]
    pub sample: Option<f64>,
    /// Fixed-size SHARDS: at most this many sampled keys (shards only; with other models,
    /// --sample still applies to them).
    #[arg(long)]
    pub fixed_size: Option<usize>,
    /// Capacity in bytes (object sizes from the trace) instead of objects.
    #[arg(long)]
    pub bytes: bool,
    /// Byte miss ratio (missed GET bytes / GET bytes) instead of the request miss ratio.
    #[arg(long)]
    pub byte_miss_ratio: bool,
    /// One curve per tenant (the trace's tenant field) instead of one for the whole trace.
    #[arg(long)]
    pub per_tenant: bool,
    /// Number of capacities per curve, evenly spaced up to the largest working set.
    #[arg(long, default_value_t = 100)]
    pub points: usize,
    /// Largest capacity (objects, or bytes with --bytes) instead of the measured working set.
    #[arg(long)]
    pub max_capacity: Option<f64>,
    /// Seed for sampling hashes and random draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Trace format (see `locus trace`); detected from the name or content when absent.
    #[arg(long)]
    pub format: Option<String>,
    /// Generic CSV columns, libCacheSim style: "obj-id-col=5,obj-size-col=4,has-header=true".
    #[arg(long)]
    pub csv_options: Option<String>,
    /// Use the volume / LUN / disk id of block traces (tencent, systor, msr) as the tenant.
    #[arg(long)]
    pub volume_as_tenant: bool,
    /// Stop after this many requests.
    #[arg(long)]
    pub limit: Option<u64>,
    /// Write the curves as CSV (`model,k,tenant,capacity,unit,miss_ratio`); "-" for stdout.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write the curves as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a plot of every curve; the format follows the name: .svg or .png.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Plot the capacity axis on a log-10 scale (capacity 0 is left out).
    #[arg(long, requires = "plot")]
    pub log_x: bool,
    /// Print each curve's mean absolute error against the exact curve (needs `exact` among the
    /// models).
    #[arg(long)]
    pub mae: bool,
    /// mini: the engine policy to simulate (Redis names, plus allkeys-exact-lru).
    #[arg(long, default_value = "allkeys-lru")]
    pub policy: String,
    /// mini: eviction pool size (16 = Redis, 0 = textbook K-LRU).
    #[arg(long, default_value_t = 16)]
    pub evpool: u32,
    /// mini: number of simulated capacities (one scaled engine each); curves interpolate between.
    #[arg(long, default_value_t = 20)]
    pub mini_sizes: usize,
}

/// What `mini` needs besides the shared settings.
#[derive(Debug, Clone)]
struct MiniSettings {
    policy: Policy,
    evpool: u32,
    sizes: usize,
}

/// One profiler and what it stands for.
struct Slot {
    model: ModelKind,
    k: Option<u32>,
    profiler: Box<dyn Profiler>,
}

/// One finished curve.
#[derive(serde::Serialize)]
struct Curve {
    model: String,
    k: Option<u32>,
    tenant: String,
    name: String,
    unit: Unit,
    metric: Metric,
    /// For merged curves: the K achieving the minimum at each point.
    argmin_k: Option<Vec<u32>>,
    points: Vec<(f64, f64)>,
}

fn parse_models(names: &[String]) -> Result<Vec<ModelKind>> {
    let mut out = Vec::new();
    for n in names {
        let m: ModelKind = n.parse()?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        bail!("no model given (--model exact,shards,…)");
    }
    Ok(out)
}

fn settings(args: &Args) -> ModelSettings {
    ModelSettings {
        unit: if args.bytes {
            Unit::Bytes
        } else {
            Unit::Objects
        },
        metric: if args.byte_miss_ratio {
            Metric::Bytes
        } else {
            Metric::Requests
        },
        rate: args.sample,
        fixed_size: args.fixed_size,
        k: 5,
        exponent: args.exponent,
        seed: args.seed,
    }
}

/// A miniature simulation of `mini.policy` at `mini.sizes` capacities up to `max`.
fn build_mini(base: &ModelSettings, mini: &MiniSettings, max: f64) -> Result<Box<dyn Profiler>> {
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

/// Builds the profilers of one tenant (one per model, and per K for K-dependent models).
/// `mini_max` is the largest capacity `mini` simulates for this tenant.
fn build_slots(
    models: &[ModelKind],
    ks: &[u32],
    base: &ModelSettings,
    mini: &MiniSettings,
    mini_max: f64,
) -> Result<Vec<Slot>> {
    let mut slots = Vec::new();
    for &m in models {
        // Options that only apply to some models are ignored by the others when several models
        // run together; alone, a model rejects what it cannot use.
        let mut s = *base;
        let alone = models.len() == 1;
        if !alone {
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
                bail!("--fixed-size does not apply to model mini");
            }
            for &k in ks {
                s.k = k;
                slots.push(Slot {
                    model: m,
                    k: Some(k),
                    profiler: build_mini(&s, mini, mini_max)?,
                });
            }
        } else if m.uses_k() {
            for &k in ks {
                s.k = k;
                slots.push(Slot {
                    model: m,
                    k: Some(k),
                    profiler: build(m, &s).map_err(explain)?,
                });
            }
        } else {
            slots.push(Slot {
                model: m,
                k: None,
                profiler: build(m, &s).map_err(explain)?,
            });
        }
    }
    Ok(slots)
}

fn explain(e: MrcError) -> anyhow::Error {
    e.into()
}

/// Trace reading options from the arguments.
fn read_options(args: &Args) -> Result<locus_trace::ReadOptions> {
    let mut opts = locus_trace::ReadOptions::default();
    if let Some(f) = &args.format {
        opts.format = Some(
            f.parse()
                .map_err(|e| anyhow::anyhow!("--format {f}: {e}"))?,
        );
    }
    if let Some(c) = &args.csv_options {
        opts.csv = c
            .parse()
            .map_err(|e| anyhow::anyhow!("--csv-options {c}: {e}"))?;
    }
    opts.volume_as_tenant = args.volume_as_tenant;
    Ok(opts)
}

fn to_op(op: locus_trace::Op) -> Op {
    match op {
        locus_trace::Op::Get => Op::Get,
        locus_trace::Op::Set => Op::Set,
        locus_trace::Op::Delete => Op::Del,
    }
}

/// First pass for `mini` without `--max-capacity`: each tenant's working set (key `u32::MAX` =
/// the whole trace), measured by SHARDS at `--sample` (exact without sampling).
fn working_sets(args: &Args, base: &ModelSettings) -> Result<BTreeMap<u32, f64>> {
    if args.file == Path::new("-") {
        bail!(
            "--model mini reading stdin needs --max-capacity (its capacities are fixed up front)"
        );
    }
    let s = ModelSettings {
        fixed_size: None,
        ..*base
    };
    let mut reader = locus_trace::open(&args.file, &read_options(args)?)
        .with_context(|| format!("opening {}", args.file.display()))?;
    let mut req = locus_trace::Request::default();
    let mut profs: BTreeMap<u32, Box<dyn Profiler>> = BTreeMap::new();
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut n = 0u64;
    while n < limit
        && reader
            .read_into(&mut req)
            .with_context(|| format!("reading {}", args.file.display()))?
    {
        n += 1;
        let t = if args.per_tenant {
            req.tenant
        } else {
            u32::MAX
        };
        let p = match profs.get_mut(&t) {
            Some(p) => p,
            None => profs
                .entry(t)
                .or_insert(build(ModelKind::Shards, &s).map_err(explain)?),
        };
        let size = u32::try_from(req.size()).unwrap_or(u32::MAX);
        p.access(req.key, size, to_op(req.op));
    }
    Ok(profs
        .into_iter()
        .map(|(t, p)| (t, p.working_set()))
        .collect())
}

/// Progress on stderr when it is a terminal: requests so far and throughput.
struct Progress {
    on: bool,
    start: Instant,
    next: u64,
}

impl Progress {
    const STEP: u64 = 1 << 20;

    fn new() -> Self {
        Self {
            on: std::io::stderr().is_terminal(),
            start: Instant::now(),
            next: Self::STEP,
        }
    }

    #[inline]
    fn tick(&mut self, n: u64) {
        if self.on && n >= self.next {
            self.next += Self::STEP;
            let secs = self.start.elapsed().as_secs_f64().max(1e-9);
            let bar_pos = ((n / Self::STEP) % 20) as usize;
            let mut bar = [b' '; 20];
            bar[bar_pos] = b'#';
            eprint!(
                "\r[{}] {:>8.1} M requests  {:>6.1} M req/s",
                String::from_utf8_lossy(&bar),
                n as f64 / 1e6,
                n as f64 / secs / 1e6
            );
        }
    }

    fn done(&self) {
        if self.on {
            eprint!("\r{:70}\r", "");
        }
    }
}

/// Runs `locus mrc`.
pub fn run(args: Args) -> Result<()> {
    let models = parse_models(&args.model)?;
    if args.points == 0 {
        bail!("--points must be at least 1");
    }
    if args.k.is_empty() {
        bail!("--k needs at least one value");
    }
    if let Some(m) = args.max_capacity.filter(|m| !(m.is_finite() && *m > 0.0)) {
        bail!("--max-capacity must be a positive number, got {m}");
    }
    if let Some(p) = &args.plot {
        locus_plot::Format::from_path(p).with_context(|| format!("--plot {}", p.display()))?;
    }
    if args.mae && !models.contains(&ModelKind::Exact) {
        bail!("--mae compares against the exact curve: add exact to --model");
    }
    let base = settings(&args);
    let mini = MiniSettings {
        policy: args
            .policy
            .parse()
            .map_err(|e| anyhow::anyhow!("--policy: {e}"))?,
        evpool: args.evpool,
        sizes: args.mini_sizes,
    };
    if mini.sizes == 0 {
        bail!("--mini-sizes must be at least 1");
    }
    // Validate every model/option combination before reading the trace.
    build_slots(&models, &args.k, &base, &mini, 1.0)?;
    let has_mini = models.contains(&ModelKind::Mini);
    // mini's capacities are fixed up front: from --max-capacity or a first pass.
    let ws = match args.max_capacity {
        _ if !has_mini => BTreeMap::new(),
        Some(_) => BTreeMap::new(),
        None => working_sets(&args, &base)?,
    };
    let mini_max = |t: u32| -> f64 {
        args.max_capacity
            .or_else(|| ws.get(&t).copied())
            .unwrap_or(1.0)
    };

    let opts = read_options(&args)?;
    let mut reader = locus_trace::open(&args.file, &opts)
        .with_context(|| format!("opening {}", args.file.display()))?;

    let mut tenants: BTreeMap<u32, Vec<Slot>> = BTreeMap::new();
    let mut req = locus_trace::Request::default();
    let mut n: u64 = 0;
    let mut progress = Progress::new();
    let start = Instant::now();
    let limit = args.limit.unwrap_or(u64::MAX);
    // The common case (one tenant) keeps its profilers out of the map.
    let mut all = if args.per_tenant {
        Vec::new()
    } else {
        build_slots(&models, &args.k, &base, &mini, mini_max(u32::MAX))?
    };
    while n < limit
        && reader
            .read_into(&mut req)
            .with_context(|| format!("reading {}", args.file.display()))?
    {
        n += 1;
        let op = to_op(req.op);
        let size = u32::try_from(req.size()).unwrap_or(u32::MAX);
        let slots = if args.per_tenant {
            match tenants.get_mut(&req.tenant) {
                Some(s) => s,
                None => tenants.entry(req.tenant).or_insert(build_slots(
                    &models,
                    &args.k,
                    &base,
                    &mini,
                    mini_max(req.tenant),
                )?),
            }
        } else {
            &mut all
        };
        for s in slots.iter_mut() {
            s.profiler.access(req.key, size, op);
        }
        progress.tick(n);
    }
    progress.done();
    let elapsed = start.elapsed().as_secs_f64();
    for w in reader.warnings() {
        eprintln!("locus mrc: warning: {} ({} times)", w.what, w.count);
    }
    if n == 0 {
        bail!("{}: the trace has no requests", args.file.display());
    }
    if !args.per_tenant {
        tenants.insert(u32::MAX, all);
    }

    let mut curves = Vec::new();
    for (tenant, slots) in &tenants {
        let tenant_name = if *tenant == u32::MAX {
            "all".to_string()
        } else {
            tenant.to_string()
        };
        // With mini, everyone uses mini's range (its curve is flat beyond what it simulated).
        let max = args.max_capacity.unwrap_or_else(|| {
            if has_mini {
                mini_max(*tenant)
            } else {
                slots
                    .iter()
                    .map(|s| s.profiler.working_set())
                    .fold(0.0, f64::max)
            }
        });
        let caps = even_capacities(max.max(1.0), args.points);
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
        for &model in &models {
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

    eprintln!(
        "locus mrc: {n} requests in {elapsed:.2} s ({:.1} M req/s), {} curve(s)",
        n as f64 / elapsed.max(1e-9) / 1e6,
        curves.len()
    );
    if args.mae {
        print_mae(&curves)?;
    }
    let wrote_any = args.csv.is_some() || args.json.is_some() || args.plot.is_some();
    match &args.csv {
        Some(p) => write_out(p, &csv_text(&curves))?,
        None if !wrote_any => write_out(Path::new("-"), &csv_text(&curves))?,
        None => {}
    }
    if let Some(p) = &args.json {
        let text = serde_json::to_string_pretty(&curves)?;
        write_out(p, &text)?;
    }
    if let Some(p) = &args.plot {
        plot(&curves, &args.file, args.log_x).save(p)?;
    }
    Ok(())
}

fn write_out(path: &Path, text: &str) -> Result<()> {
    if path == Path::new("-") {
        std::io::stdout().lock().write_all(text.as_bytes())?;
        return Ok(());
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn csv_text(curves: &[Curve]) -> String {
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

fn print_mae(curves: &[Curve]) -> Result<()> {
    for c in curves {
        if c.model == "exact" {
            continue;
        }
        let Some(truth) = curves
            .iter()
            .find(|t| t.model == "exact" && t.tenant == c.tenant)
        else {
            continue;
        };
        let t = Mrc::new(truth.unit, truth.metric, truth.points.clone())?;
        let m = Mrc::new(c.unit, c.metric, c.points.clone())?;
        let e = m.error_vs(&t, &[])?;
        eprintln!(
            "locus mrc: MAE {:<28} tenant {:<4} vs exact LRU: {:.4} (worst {:.4} at {})",
            c.name, c.tenant, e.mae, e.max, e.max_at
        );
    }
    Ok(())
}

/// The curves as a chart: one series per curve starting at (0, 1) (an empty cache misses every
/// request), capacity axis from 0 (or the smallest capacity with `log_x`) to the largest.
fn plot(curves: &[Curve], file: &Path, log_x: bool) -> locus_plot::Chart {
    let (unit, metric) = curves
        .first()
        .map_or((Unit::Objects, Metric::Requests), |c| (c.unit, c.metric));
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut chart = locus_plot::Chart::new(
        format!("Miss ratio curve: {name}"),
        format!("cache capacity ({unit})"),
        match metric {
            Metric::Requests => "miss ratio",
            Metric::Bytes => "byte miss ratio",
        },
    );
    chart.log_x = log_x;
    chart.y_range = Some((0.0, 1.0));
    for c in curves {
        let label = match (c.k, c.tenant.as_str()) {
            (Some(k), "all") => format!("{} K={k}", c.model),
            (Some(k), t) => format!("{} K={k} t{t}", c.model),
            (None, "all") => c.name.clone(),
            (None, t) => format!("{} t{t}", c.name),
        };
        let mut points = if log_x { Vec::new() } else { vec![(0.0, 1.0)] };
        points.extend(c.points.iter().copied().filter(|p| !log_x || p.0 > 0.0));
        chart.add_series(label, points);
    }
    let caps = curves.iter().flat_map(|c| c.points.iter().map(|p| p.0));
    let xmax = caps.clone().fold(0.0, f64::max);
    let xmin = caps.filter(|&x| x > 0.0).fold(f64::INFINITY, f64::min);
    if log_x && xmin < xmax {
        chart.x_range = Some((xmin, xmax));
    } else if !log_x && xmax > 0.0 {
        chart.x_range = Some((0.0, xmax));
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(line: &[&str]) -> Args {
        let mut v = vec!["mrc"];
        v.extend_from_slice(line);
        Cli::try_parse_from(v).unwrap().args
    }

    #[test]
    fn one_pass_writes_csv_json_and_svg() {
        let dir = std::env::temp_dir().join(format!("locus-mrc-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.txt");
        // a b c b a d a, repeated: exact distances known (MODELS.md 1).
        std::fs::write(&trace, "1\n2\n3\n2\n1\n4\n1\n".repeat(3)).unwrap();
        let csv = dir.join("out.csv");
        let json = dir.join("out.json");
        let svg = dir.join("out.svg");
        let a = args(&[
            trace.to_str().unwrap(),
            "--model",
            "exact,shards,krr",
            "--k",
            "1,16",
            "--points",
            "4",
            "--csv",
            csv.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ]);
        run(a).unwrap();
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("model,k,tenant,capacity,unit,miss_ratio")
        );
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        // exact, shards, krr K=1, krr K=16, krr-min: 4 points each.
        assert_eq!(rows.len(), 5 * 4);
        let exact: Vec<_> = rows.iter().filter(|r| r[0] == "exact").collect();
        let shards: Vec<_> = rows.iter().filter(|r| r[0] == "shards").collect();
        for (e, s) in exact.iter().zip(&shards) {
            assert_eq!(e[3..], s[3..], "SHARDS without --sample is exact");
        }
        // 21 GETs, 4 cold; at capacity 4 only the cold ones miss.
        assert_eq!(exact[3][3], "4");
        assert_eq!(exact[3][5], format!("{:.6}", 4.0 / 21.0));
        assert!(
            rows.iter()
                .any(|r| r[0] == "krr-min" && (r[1] == "1" || r[1] == "16"))
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(j.as_array().unwrap().len(), 5);
        let s = std::fs::read_to_string(&svg).unwrap();
        // One clipped polyline per curve (grid lines and the legend are not clipped).
        assert!(s.starts_with("<svg") && s.matches(r#"clip-path="url(#plot-area)""#).count() == 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mini_with_exact_lru_matches_exact_and_runs_k_lru() {
        let dir = std::env::temp_dir().join(format!("locus-mrc-mini-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.txt");
        std::fs::write(&trace, "1\n2\n3\n2\n1\n4\n1\n".repeat(3)).unwrap();
        let csv = dir.join("out.csv");
        let a = args(&[
            trace.to_str().unwrap(),
            "--model",
            "exact,mini",
            "--policy",
            "allkeys-exact-lru",
            "--points",
            "4",
            "--mini-sizes",
            "4",
            "--csv",
            csv.to_str().unwrap(),
        ]);
        run(a).unwrap();
        let text = std::fs::read_to_string(&csv).unwrap();
        let rows: Vec<Vec<&str>> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect())
            .collect();
        let exact: Vec<_> = rows.iter().filter(|r| r[0] == "exact").collect();
        let mini: Vec<_> = rows.iter().filter(|r| r[0] == "mini").collect();
        assert_eq!((exact.len(), mini.len()), (4, 4));
        for (e, m) in exact.iter().zip(&mini) {
            assert_eq!(e[3..], m[3..], "R = 1 exact-LRU mini equals exact");
        }
        // K-LRU (Redis pool and textbook) over fixed capacities, several K: one curve per K
        // plus the merged minimum.
        for evpool in ["16", "0"] {
            let a = args(&[
                trace.to_str().unwrap(),
                "--model",
                "mini",
                "--k",
                "1,5",
                "--evpool",
                evpool,
                "--max-capacity",
                "3",
                "--points",
                "3",
                "--csv",
                csv.to_str().unwrap(),
            ]);
            run(a).unwrap();
            let text = std::fs::read_to_string(&csv).unwrap();
            assert_eq!(text.lines().count(), 1 + 3 * 3, "{text}");
            assert!(text.contains("mini-min,"), "{text}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Width and height from a PNG's IHDR chunk (bytes 16..24), after checking the signature.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n") && &bytes[12..16] == b"IHDR");
        let be =
            |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        (be(16), be(20))
    }

    #[test]
    fn plot_writes_png_and_svg_by_extension() {
        let dir = std::env::temp_dir().join(format!("locus-mrc-png-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.txt");
        std::fs::write(&trace, "1\n2\n3\n2\n1\n4\n1\n".repeat(3)).unwrap();
        for (name, log) in [("a.png", false), ("b.PNG", true), ("c.svg", true)] {
            let out = dir.join(name);
            let mut line = vec![
                trace.to_str().unwrap(),
                "--model",
                "exact,krr",
                "--points",
                "4",
                "--plot",
                out.to_str().unwrap(),
            ];
            if log {
                line.push("--log-x");
            }
            run(args(&line)).unwrap();
            let bytes = std::fs::read(&out).unwrap();
            if name.ends_with(".svg") {
                let s = String::from_utf8(bytes).unwrap();
                assert_eq!(
                    s.matches(r#"clip-path="url(#plot-area)""#).count(),
                    2,
                    "{s}"
                );
                assert!(s.contains(">krr K=5</text>"), "{s}");
            } else {
                assert_eq!(
                    png_size(&bytes),
                    (locus_plot::DEFAULT_WIDTH, locus_plot::DEFAULT_HEIGHT)
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--model mini --sample 1` (no sampling) is the engine's full-size K-LRU: it must equal
    /// `minisim::simulate_klru` point for point, bit for bit, for both eviction variants, with
    /// capacities given (`--max-capacity`) or measured by the first pass (as bench/accuracy.sh
    /// computes its K-LRU ground truth).
    #[test]
    fn mini_at_rate_1_equals_simulate_klru() {
        use locus_engine::minisim::{KlruConfig, simulate_klru};
        let dir = std::env::temp_dir().join(format!("locus-mrc-klru-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.txt");
        // 20,000 GETs over 1,500 keys, skewed (a squared uniform draw) so capacities matter.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let keys: Vec<u64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                1 + (u * u * 1500.0) as u64
            })
            .collect();
        let text: String = keys.iter().map(|k| format!("{k}\n")).collect();
        std::fs::write(&trace, text).unwrap();
        let unique = keys.iter().collect::<std::collections::HashSet<_>>().len();
        let json = dir.join("out.json");
        for evpool in [0u32, 16] {
            for max in [Some("900"), None] {
                let ev = evpool.to_string();
                let mut line = vec![
                    trace.to_str().unwrap(),
                    "--model",
                    "mini",
                    "--sample",
                    "1",
                    "--k",
                    "5",
                    "--evpool",
                    &ev,
                    "--points",
                    "12",
                    "--mini-sizes",
                    "12",
                    "--json",
                    json.to_str().unwrap(),
                ];
                if let Some(m) = max {
                    line.extend(["--max-capacity", m]);
                }
                run(args(&line)).unwrap();
                let j: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
                let pts: Vec<(f64, f64)> = serde_json::from_value(j[0]["points"].clone()).unwrap();
                let caps: Vec<f64> = pts.iter().map(|p| p.0).collect();
                let top = max.map_or(unique as f64, |m| m.parse().unwrap());
                assert_eq!(
                    caps,
                    even_capacities(top, 12),
                    "evpool {evpool}, max {max:?}"
                );
                let truth = simulate_klru(
                    keys.iter().map(|&k| (k, 1, Op::Get)),
                    &KlruConfig::new(5, evpool),
                    &caps,
                )
                .unwrap();
                assert_eq!(pts, truth.points(), "evpool {evpool}, max {max:?}");
                // Not a flat curve: the comparison means something.
                assert!(pts[0].1 > pts[11].1 + 0.1, "{pts:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `n` GETs of Zipf(`alpha`) over `keys` keys (inverse CDF, xorshift draws), one id a line.
    fn zipf_trace(path: &Path, alpha: f64, keys: u64, n: usize, seed: u64) {
        let mut cdf = Vec::with_capacity(keys as usize);
        let mut sum = 0.0;
        for i in 1..=keys {
            sum += 1.0 / (i as f64).powf(alpha);
            cdf.push(sum);
        }
        let mut x = seed | 1;
        let mut text = String::with_capacity(n * 8);
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64 * sum;
            // Scatter ranks over ids so the hot keys are not the small integers.
            let rank = cdf.partition_point(|&c| c < u) as u64;
            let _ = writeln!(text, "{}", rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16);
        }
        std::fs::write(path, text).unwrap();
    }

    /// The first curve `locus mrc` writes for this command line (through --json).
    fn curve(line: &[&str], json: &Path) -> Vec<(f64, f64)> {
        let mut v = line.to_vec();
        v.extend(["--json", json.to_str().unwrap()]);
        run(args(&v)).unwrap();
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        serde_json::from_value(j[0]["points"].clone()).unwrap()
    }

    /// MAE of `est` against `truth` on the same capacities.
    fn mae_same_caps(truth: &[(f64, f64)], est: &[(f64, f64)]) -> f64 {
        assert_eq!(truth.len(), est.len());
        truth
            .iter()
            .zip(est)
            .map(|(t, e)| {
                assert_eq!(t.0, e.0);
                (t.1 - e.1).abs()
            })
            .sum::<f64>()
            / truth.len() as f64
    }

    /// bench/accuracy.sh's K-LRU pipeline on a trace small enough for the suite: truth =
    /// `mini --sample 1` (textbook and Redis-pool K-LRU at 10 sizes); models = KRR at the
    /// exponent of each variant and miniature simulation, sampled at R, on the same capacities.
    /// Returns (KRR MAE, mini MAE) per evpool 0 and 16.
    fn klru_pipeline(trace: &Path, rate: &str, points: &str, json: &Path) -> Vec<(f64, f64)> {
        let t = trace.to_str().unwrap();
        let mut out = Vec::new();
        for (ev, x) in [("0", "1.4"), ("16", "1.9")] {
            let common = ["--k", "5", "--points", points, "--mini-sizes", points];
            let mut line = vec![t, "--model", "mini", "--sample", "1", "--evpool", ev];
            line.extend(common);
            let truth = curve(&line, json);
            let cap = truth.last().unwrap().0.to_string();
            let mut line = vec![t, "--model", "krr", "--exponent", x, "--sample", rate];
            line.extend(common);
            line.extend(["--max-capacity", &cap]);
            let krr = curve(&line, json);
            let mut line = vec![t, "--model", "mini", "--evpool", ev, "--sample", rate];
            line.extend(common);
            line.extend(["--max-capacity", &cap]);
            let mini = curve(&line, json);
            let (k, m) = (mae_same_caps(&truth, &krr), mae_same_caps(&truth, &mini));
            eprintln!("evpool {ev}: KRR x={x} MAE {k:.4}, mini MAE {m:.4} (R = {rate})");
            out.push((k, m));
        }
        out
    }

    #[test]
    fn krr_and_mini_track_the_engine_klru_small() {
        let dir = std::env::temp_dir().join(format!("locus-mrc-acc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("zipf.txt");
        // 8,000 keys at R = 0.1: ~800 sampled keys, the sample size of R = 0.01 on 80 k keys.
        zipf_trace(&trace, 0.9, 8_000, 60_000, 7);
        let got = klru_pipeline(&trace, "0.1", "10", &dir.join("c.json"));
        // Measured (deterministic: fixed trace and seed 0): evpool 0 KRR 0.0074, mini 0.0076;
        // evpool 16 KRR 0.0082, mini 0.0067. The bound is the table's goal.
        for ((k, m), ev) in got.into_iter().zip([0, 16]) {
            assert!(k <= 0.01, "evpool {ev}: KRR MAE {k}");
            assert!(m <= 0.01, "evpool {ev}: mini MAE {m}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The goal of BENCHMARKS.md's accuracy table, MAE <= 0.01 at R = 0.01, for KRR (at each
    /// K-LRU variant's exponent) and mini against the engine's K-LRU, on a trace with enough
    /// keys for R = 0.01 (200 k keys: ~2,000 sampled).
    #[test]
    #[ignore = "slow: 2 M requests simulated at 20 sizes twice; run with --release -- --ignored"]
    fn slow_krr_and_mini_at_one_percent_vs_engine_klru() {
        let dir = std::env::temp_dir().join(format!("locus-mrc-acc1-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("zipf.txt");
        zipf_trace(&trace, 0.9, 200_000, 2_000_000, 11);
        let got = klru_pipeline(&trace, "0.01", "20", &dir.join("c.json"));
        // Measured (release, 554 s on the loaded machine): evpool 0 KRR x=1.4 0.0068, mini
        // 0.0068; evpool 16 KRR x=1.9 0.0064, mini 0.0063.
        for ((k, m), ev) in got.into_iter().zip([0, 16]) {
            assert!(k <= 0.01, "evpool {ev}: KRR MAE {k}");
            assert!(m <= 0.01, "evpool {ev}: mini MAE {m}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_options_are_clear_errors() {
        let e = run(args(&["x.txt", "--model", "lru"])).unwrap_err();
        assert!(e.to_string().contains("unknown model"), "{e}");
        let e = run(args(&["-", "--model", "mini"])).unwrap_err();
        assert!(e.to_string().contains("--max-capacity"), "{e}");
        let e = run(args(&["x.txt", "--model", "mini", "--policy", "lru"])).unwrap_err();
        assert!(e.to_string().contains("--policy"), "{e}");
        let e = run(args(&["x.txt", "--model", "mini", "--k", "0"])).unwrap_err();
        assert!(e.to_string().contains("samples"), "{e}");
        let e = run(args(&["x.txt", "--plot", "a.gif"])).unwrap_err();
        assert!(
            format!("{e:#}").contains("must end in .svg or .png"),
            "{e:#}"
        );
        let e = run(args(&["x.txt", "--model", "shards", "--sample", "0"])).unwrap_err();
        assert!(e.to_string().contains("sampling rate"), "{e}");
    }
}
