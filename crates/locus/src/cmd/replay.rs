//! `locus replay INPUT --target URL`: drive a live server as a look-aside application does.
//!
//! ```text
//!  INPUT (trace file | experiment .toml) ─► locus_replay::run ─► table on stdout
//!                                            (progress on stderr) ─► --out DIR: CSV, JSON, PNG
//! ```
//! This file only turns flags into a `ReplayConfig`; everything else is `locus-replay`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Result, bail};
use locus_replay::{BackendSpec, Input, Pacing, ReplayConfig, Target, TenantMap, Warmup};

/// Arguments of `locus replay`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A trace file (any format `locus trace` reads; its tenant column gives the tenants) or an
    /// experiment file (`.toml`: its tenants' generators or traces; its controllers are ignored).
    pub input: PathBuf,
    /// The server: redis://HOST:PORT, memcached://HOST:PORT, `null` (in-process, every GET
    /// hits at once: the harness's own ceiling) or `fake` (in-process hash map).
    #[arg(long)]
    pub target: String,
    /// How tenants reach their keyspace: none (keys prefixed t<i>:), port:P0,P1.., db[:D0,D1..],
    /// user:NAME=PASS,.., prefix:P0,P1..
    #[arg(long, default_value = "none")]
    pub tenants: String,
    /// Connections per tenant (one request in flight each).
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
    /// Open loop at this many requests per second in total (default: closed loop).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Stop after this many requests (1e6, 2M).
    #[arg(long)]
    pub requests: Option<String>,
    /// Stop after this long (30s, 5m).
    #[arg(long)]
    pub duration: Option<String>,
    /// Requests (100000) or time (10s) at the start that are sent but not measured.
    #[arg(long, default_value = "0")]
    pub warmup: String,
    /// What a miss costs, for every tenant: none, delay:DUR, delay:exp:MEAN,
    /// delay:uniform:MIN:MAX, delay:trace[:DEFAULT], delay:model (the experiment's penalty),
    /// pg:pk, pg:agg:ROWS, pg:two:FRACTION:ROWS; `I=SPEC` for tenant I only (repeatable).
    /// Default: delay:model for experiments, delay:trace for traces.
    #[arg(long)]
    pub backend: Vec<String>,
    /// Rows per tenant in the PostgreSQL backend (a key reads row key % rows).
    #[arg(long, default_value = "100000")]
    pub pg_rows: String,
    /// Directory of PostgreSQL's initdb and postgres (default: PATH, then /usr/lib/postgresql).
    #[arg(long)]
    pub pg_bin: Option<PathBuf>,
    /// Use this running PostgreSQL (libpq key=value string) instead of starting one.
    #[arg(long)]
    pub pg_url: Option<String>,
    /// Where the private PostgreSQL data directory is created (default: the temp directory).
    #[arg(long)]
    pub pg_tmp: Option<PathBuf>,
    /// Largest value stored (bigger trace sizes are clamped).
    #[arg(long, default_value = "1MiB")]
    pub max_value: String,
    /// AUTH USER:PASSWORD for the connection that samples the server's INFO.
    #[arg(long)]
    pub info_auth: Option<String>,
    /// Do not sample the server's statistics during the run.
    #[arg(long)]
    pub no_info: bool,
    /// Seed of the delay draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Runtime worker threads (0 = available cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Write summary.csv, series.csv, server.csv, report.json and plots into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the report as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

fn config(args: &Args) -> Result<ReplayConfig> {
    let is_exp = args.input.extension().is_some_and(|e| e == "toml");
    let input = if is_exp {
        Input::Experiment(args.input.clone())
    } else {
        Input::Trace(args.input.clone())
    };
    let mut cfg = ReplayConfig::new(input, args.target.parse::<Target>()?);
    cfg.tenants = args.tenants.parse::<TenantMap>()?;
    cfg.connections = args.connections;
    cfg.pacing = args.rate.map_or(Pacing::Closed, Pacing::Open);
    if let Some(r) = &args.requests {
        let Some(n) = locus_common::parse_count(r) else {
            bail!("--requests {r}: expected a count (100000, 1e6, 2M)");
        };
        cfg.requests = Some(n);
    }
    if let Some(d) = &args.duration {
        cfg.duration =
            Some(locus_common::parse_duration(d).map_err(|e| anyhow::anyhow!("--duration: {e}"))?);
    }
    cfg.warmup = args.warmup.parse::<Warmup>()?;
    for b in &args.backend {
        match b.split_once('=') {
            Some((i, spec)) if i.chars().all(|c| c.is_ascii_digit()) => {
                let Ok(i) = i.parse::<usize>() else {
                    bail!("--backend {b}: tenant index out of range");
                };
                cfg.tenant_backends.push((i, spec.parse::<BackendSpec>()?));
            }
            _ => cfg.backend = Some(b.parse::<BackendSpec>()?),
        }
    }
    let Some(rows) = locus_common::parse_count(&args.pg_rows) else {
        bail!("--pg-rows {}: expected a count", args.pg_rows);
    };
    cfg.pg.rows = rows;
    cfg.pg.bin_dir = args.pg_bin.clone();
    cfg.pg.url = args.pg_url.clone();
    cfg.pg.tmp_parent = args.pg_tmp.clone();
    cfg.max_value = args
        .max_value
        .parse::<locus_common::ByteSize>()
        .map_err(|e| anyhow::anyhow!("--max-value: {e}"))?
        .0;
    if let Some(a) = &args.info_auth {
        let Some((u, p)) = a.split_once(':') else {
            bail!("--info-auth {a}: expected USER:PASSWORD");
        };
        cfg.info_auth = Some((u.into(), p.into()));
    }
    if args.no_info {
        cfg.info_interval = std::time::Duration::ZERO;
    }
    cfg.seed = args.seed;
    cfg.threads = args.threads;
    cfg.validate()?;
    Ok(cfg)
}

/// Runs `locus replay`.
///
/// # Errors
/// Invalid flags, an unreachable target or backend, a malformed input, a failed connection,
/// an interruption, or an output that cannot be written.
pub fn run(args: Args) -> Result<()> {
    let cfg = config(&args)?;
    let show = !args.quiet && std::io::stderr().is_terminal();
    let progress = |p: &locus_replay::Progress| {
        if !show {
            return;
        }
        let pct = p.total.filter(|&t| t > 0).map_or(String::new(), |t| {
            format!(" ({:.0}%)", 100.0 * p.done as f64 / t as f64)
        });
        eprint!(
            "\r{:<100}\r",
            format!(
                "replay {:>5.0}s  {} requests{pct}  {} req/s  hit {:.1}%  p99 {:.2} ms",
                p.elapsed,
                p.done,
                p.last_second,
                100.0 * p.hit_ratio,
                p.p99_us as f64 / 1000.0
            )
        );
        let _ = std::io::stderr().flush();
    };
    let rep = locus_replay::run(&cfg, &progress);
    if show {
        eprint!("\r{:100}\r", "");
    }
    let rep = rep?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        print!("{}", rep.table());
    }
    if let Some(dir) = &args.out {
        for f in rep.write_dir(dir)? {
            if !args.quiet {
                eprintln!("wrote {}", f.display());
            }
        }
    }
    Ok(())
}
