//! `locus mrc`: miss ratio curves from a trace, several models and K values in one pass.
//!
//! The pipeline is `locus_sim::profile` (library code, with its accuracy tests); this file
//! turns options into a [`ProfileSpec`], shows progress, and writes the curves as CSV, JSON,
//! SVG or PNG, and the models' errors against the exact curve with `--mae`.

use anyhow::{Context, Result};
use locus_mrc::{Metric, ModelSettings, Unit};
use locus_sim::profile::{self, Curve, MiniSettings, ProfileSpec};
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

/// The profiling spec the options describe.
fn spec(args: &Args) -> Result<ProfileSpec> {
    let models = profile::parse_models(&args.model)?;
    let base = ModelSettings {
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
    };
    let mini = MiniSettings {
        policy: args
            .policy
            .parse()
            .map_err(|e| anyhow::anyhow!("--policy: {e}"))?,
        evpool: args.evpool,
        sizes: args.mini_sizes,
    };
    Ok(ProfileSpec {
        models,
        ks: args.k.clone(),
        base,
        mini,
        per_tenant: args.per_tenant,
        points: args.points,
        max_capacity: args.max_capacity,
        limit: args.limit,
    })
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

/// Runs `locus mrc`.
pub fn run(args: Args) -> Result<()> {
    let spec = spec(&args)?;
    if let Some(p) = &args.plot {
        locus_plot::Format::from_path(p).with_context(|| format!("--plot {}", p.display()))?;
    }
    if args.mae && !spec.models.contains(&locus_mrc::ModelKind::Exact) {
        anyhow::bail!("--mae compares against the exact curve: add exact to --model");
    }
    // Every model/option combination is checked before the trace is read.
    spec.validate()?;
    let opts = read_options(&args)?;
    let mut progress = Progress::new();
    let start = Instant::now();
    let out = profile::profile(&args.file, &opts, &spec, &mut |n| progress.tick(n))?;
    progress.done();
    let elapsed = start.elapsed().as_secs_f64();
    for (what, count) in &out.warnings {
        eprintln!("locus mrc: warning: {what} ({count} times)");
    }
    let curves = out.curves;
    eprintln!(
        "locus mrc: {} requests in {elapsed:.2} s ({:.1} M req/s), {} curve(s)",
        out.requests,
        out.requests as f64 / elapsed.max(1e-9) / 1e6,
        curves.len()
    );
    if args.mae {
        for (c, e) in profile::errors_vs_exact(&curves)? {
            eprintln!(
                "locus mrc: MAE {:<28} tenant {:<4} vs exact LRU: {:.4} (worst {:.4} at {})",
                c.name, c.tenant, e.mae, e.max, e.max_at
            );
        }
    }
    let wrote_any = args.csv.is_some() || args.json.is_some() || args.plot.is_some();
    match &args.csv {
        Some(p) => write_out(p, &profile::csv_text(&curves))?,
        None if !wrote_any => write_out(Path::new("-"), &profile::csv_text(&curves))?,
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
        // a b c b a d a, repeated: exact distances known (docs/models.md §1).
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
