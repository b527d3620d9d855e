//! `locus simulate EXPERIMENT.toml`: compare memory controllers on a trace-driven experiment.
//!
//! ```text
//!  EXPERIMENT.toml ─► locus_sim::Experiment ─► locus_sim::simulate (one engine per controller,
//!                                               in parallel) ─► table on stdout
//!                                                             ─► --out DIR: CSV, JSON, plots
//! ```
//! This file only parses options, shows progress on stderr (when it is a terminal) and writes
//! the outputs; everything else is `locus-sim`.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Result, bail};
use locus_sim::{Experiment, Options, report};

/// Arguments of `locus simulate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The experiment file (format: experiments/README.md).
    pub experiment: PathBuf,
    /// Write summary.csv, intervals.csv, report.json and plots into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only these controller labels (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Worker threads (default: available cores, at most one per controller).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Run each controller's profiling on a thread of its own: auto (when a core is free for it,
    /// i.e. at most half the cores replay), on or off. Results are identical either way.
    #[arg(long, default_value = "auto")]
    pub offload: locus_sim::Offload,
    /// Run the scaled-down version of the experiment's [golden] table (what the golden test runs).
    #[arg(long)]
    pub golden: bool,
    /// Override the total number of requests (generated workloads; caps traces).
    #[arg(long)]
    pub requests: Option<String>,
    /// Run every controller under N seeds (the experiment's `seed`, `seed + 1`, …) and report
    /// each figure as mean ± sd and min/max (overrides the experiment's `seeds` key).
    #[arg(long)]
    pub seeds: Option<u32>,
    /// Run a memory sweep at these fractions of the working set (`0.25,0.5,0.75`), replacing the
    /// experiment's `[sweep]`; `none` runs the single memory size of a file that has one.
    #[arg(long)]
    pub sweep: Option<String>,
    /// Print the report as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Validate the experiment and print what would run, without running it.
    #[arg(long)]
    pub check: bool,
    /// Speed references instead of a simulation: the request stream read alone, and replayed on
    /// a bare engine (GET, SET on a miss; no controller, clock or accounting), in requests/s.
    #[arg(long)]
    pub raw: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Progress lines on stderr: requests per controller label, redrawn at most 5 times a second.
struct Progress {
    on: bool,
    total: Option<u64>,
    state: Mutex<(BTreeMap<String, u64>, Instant)>,
}

impl Progress {
    fn tick(&self, label: &str, n: u64) {
        if !self.on {
            return;
        }
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        st.0.insert(label.to_string(), n);
        if st.1.elapsed().as_millis() < 200 {
            return;
        }
        st.1 = Instant::now();
        let parts: Vec<String> =
            st.0.iter()
                .map(|(l, n)| match self.total {
                    Some(t) if t > 0 => format!("{l} {:.0}%", 100.0 * *n as f64 / t as f64),
                    _ => format!("{l} {n}"),
                })
                .collect();
        let mut line = parts.join("  ");
        line.truncate(110);
        eprint!("\r{line:110}\r");
        let _ = std::io::stderr().flush();
    }

    fn done(&self) {
        if self.on {
            eprint!("\r{:110}\r", "");
        }
    }
}

/// Runs `locus simulate`.
///
/// # Errors
/// An invalid experiment, a failing controller (after the others were reported), or an output
/// that cannot be written.
pub fn run(args: Args) -> Result<()> {
    let mut exp = Experiment::load(&args.experiment)?;
    if args.golden {
        exp = exp.golden_scaled();
    }
    if let Some(r) = &args.requests {
        let Some(n) = locus_sim::experiment::parse_count(r) else {
            bail!("--requests {r}: expected a count (100000, 1e6, 2M)");
        };
        if exp.phases.is_empty() {
            exp.requests = Some(n);
        } else {
            let total = exp.total_requests().unwrap_or(1).max(1);
            for p in &mut exp.phases {
                p.requests = ((p.requests as f64 * n as f64 / total as f64).round() as u64).max(1);
            }
        }
    }
    if let Some(list) = &args.sweep {
        exp.sweep = if list.trim() == "none" {
            None
        } else {
            let mut memory = Vec::new();
            for f in list.split(',') {
                match f.trim().parse::<f64>() {
                    Ok(x) if x > 0.0 && x <= 4.0 => memory.push(x),
                    _ => bail!(
                        "--sweep {list}: '{f}' is not a fraction of the working set in (0, 4]"
                    ),
                }
            }
            Some(locus_sim::experiment::Sweep { memory })
        };
    }
    for l in &args.only {
        if !exp.controllers.iter().any(|c| &c.label == l) {
            bail!(
                "--only {l}: no controller with that label in {}",
                args.experiment.display()
            );
        }
    }
    if args.check {
        let mem = locus_sim::resolve_memory(&exp)?;
        println!(
            "{}: valid; {} tenant(s), {} controller(s), {} bytes of memory ({} pages), {} requests",
            exp.name,
            exp.tenants.len(),
            exp.controllers.len(),
            mem,
            mem / exp.page_size,
            exp.total_requests()
                .map_or_else(|| "all".to_string(), |n| n.to_string())
        );
        return Ok(());
    }
    if args.raw {
        let mem = locus_sim::resolve_memory(&exp)?;
        let rates = locus_sim::run::raw_rates(&exp, mem)?;
        let ((n, read_s), (m, raw_s)) = (rates.read, rates.bare);
        println!(
            "read-only {n} requests in {read_s:.3} s: {:.0} req/s",
            n as f64 / read_s.max(1e-9)
        );
        println!(
            "bare-engine {m} requests in {raw_s:.3} s: {:.0} req/s",
            m as f64 / raw_s.max(1e-9)
        );
        return Ok(());
    }
    let progress = Progress {
        on: !args.quiet && std::io::stderr().is_terminal(),
        total: exp.total_requests(),
        state: Mutex::new((BTreeMap::new(), Instant::now())),
    };
    let opts = Options {
        threads: args.threads,
        only: args.only.clone(),
        offload: args.offload,
    };
    let seeds = args.seeds.unwrap_or(exp.seeds);
    if !(1..=locus_sim::experiment::MAX_SEEDS).contains(&seeds) {
        bail!(
            "--seeds {seeds}: expected 1..={}",
            locus_sim::experiment::MAX_SEEDS
        );
    }
    if exp.sweep.is_some() {
        return run_sweep(&args, &exp, &opts, seeds, &progress);
    }
    if seeds > 1 {
        return run_seeds(&args, &exp, &opts, seeds, &progress);
    }
    let rep = locus_sim::simulate(&exp, &opts, &|l, n| progress.tick(l, n))?;
    progress.done();
    emit(
        &args,
        &rep,
        || report::table(&rep),
        |dir| report::write_dir(&rep, dir),
    )?;
    failures(rep.failed.iter().map(|(l, _)| l.clone()).collect())
}

/// `--seeds N` (or the `seeds` key) with N > 1: every controller under N seeds, the statistics
/// table (or JSON), and with `--out` the first seed's files plus `seeds.csv` and `seeds.json`.
fn run_seeds(
    args: &Args,
    exp: &Experiment,
    opts: &Options,
    n: u32,
    progress: &Progress,
) -> Result<()> {
    let (summary, reports) =
        locus_sim::seeds::simulate_seeds(exp, opts, n, &|l, k| progress.tick(l, k))?;
    progress.done();
    emit(
        args,
        &summary,
        || locus_sim::seeds::table(&summary),
        |dir| locus_sim::seeds::write_dir(&summary, &reports[0], dir),
    )?;
    failures(
        summary
            .failed
            .iter()
            .map(|(s, l, _)| format!("{l} (seed {s})"))
            .collect(),
    )
}

/// A `[sweep]` (or `--sweep`): every fraction of the working set under every seed, the table
/// (or JSON), and with `--out` `sweep.csv`, `sweep.json` and the plot.
fn run_sweep(
    args: &Args,
    exp: &Experiment,
    opts: &Options,
    n: u32,
    progress: &Progress,
) -> Result<()> {
    let r = locus_sim::sweep::simulate_sweep(exp, opts, n, &|l, k| progress.tick(l, k))?;
    progress.done();
    emit(
        args,
        &r,
        || locus_sim::sweep::table(&r),
        |dir| locus_sim::sweep::write_dir(&r, dir),
    )?;
    failures(
        r.points
            .iter()
            .flat_map(|p| {
                p.seeds
                    .failed
                    .iter()
                    .map(move |(s, l, _)| format!("{l} (seed {s}, {:.0}%)", p.fraction * 100.0))
            })
            .collect(),
    )
}

/// Prints `value` as JSON (`--json`) or `table()`, then with `--out` writes the files `write`
/// makes and names them on stderr (unless `--quiet`).
fn emit<T: serde::Serialize>(
    args: &Args,
    value: &T,
    table: impl FnOnce() -> String,
    write: impl FnOnce(&std::path::Path) -> Result<Vec<std::path::PathBuf>, locus_sim::SimError>,
) -> Result<()> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{}", table());
    }
    if let Some(dir) = &args.out {
        let files = write(dir)?;
        if !args.quiet {
            for f in files {
                eprintln!("wrote {}", f.display());
            }
        }
    }
    Ok(())
}

/// An error naming the failed runs, if any (after the others were reported).
fn failures(failed: Vec<String>) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    bail!(
        "{} controller run(s) failed: {}",
        failed.len(),
        failed.join(", ")
    )
}
