//! `locus trace`: statistics, synthetic generation and format conversion (see `locus-trace`).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use locus_trace::{
    Compression, CsvOptions, Format, ReadOptions, Request, RequestReader, create,
    generate::{Generator, GeneratorConfig, TenantConfig},
    open, stats,
};

/// Subcommands of `locus trace`.
#[derive(Debug, clap::Subcommand)]
pub enum TraceCommand {
    /// Statistics of a trace: requests, keys, one-hit wonders, sizes, op mix, footprint and exact
    /// LRU miss ratios at 0.1%/1%/10% of the unique keys (and of the bytes when sizes vary).
    Stats(StatsArgs),
    /// Generate a seeded synthetic trace (Zipf, uniform, loop, moving hot set, YCSB A-F,
    /// multi-tenant mixes).
    Generate(GenerateArgs),
    /// Convert a trace to the Locus CSV or to libCacheSim oracleGeneral.
    Convert(ConvertArgs),
}

/// How to read an input trace.
#[derive(Debug, clap::Args)]
pub struct InputArgs {
    /// Trace format (default: detected from the file name or first line). One of: oracle-general,
    /// vscsi, csv, locus-csv, txt, arc-lis, adaptsize, int32-be, int32-le, int64-be, int64-le,
    /// uint32-be, uint32-le, uint64-be, uint64-le, msr, systor, tencent-block, twitter,
    /// cachelib-kvcache, cachelib-bigcache, cachelib-blockchunk.
    #[arg(long, short = 'f')]
    format: Option<String>,
    /// Columns of a generic CSV (--format csv), libCacheSim style, e.g.
    /// "obj-id-col=5,obj-size-col=4,time-col=2,has-header=true,obj-id-is-num=true".
    #[arg(long)]
    csv: Option<String>,
    /// Compression (default: from the extension, else the magic bytes): none, zstd, xz, gzip, bzip2.
    #[arg(long)]
    compression: Option<String>,
    /// Size of each request for formats without sizes.
    #[arg(long, default_value_t = 1)]
    default_size: u64,
    /// Use the volume (Tencent), LUN (SYSTOR) or disk (MSR) as the tenant.
    #[arg(long)]
    volume_as_tenant: bool,
    /// Reject records that would otherwise be repaired with a counted warning.
    #[arg(long)]
    strict: bool,
}

impl InputArgs {
    fn options(&self) -> anyhow::Result<ReadOptions> {
        let mut o = ReadOptions {
            default_size: self.default_size,
            volume_as_tenant: self.volume_as_tenant,
            strict: self.strict,
            ..ReadOptions::default()
        };
        if let Some(f) = &self.format {
            o.format = Some(f.parse::<Format>()?);
        }
        if let Some(c) = &self.csv {
            o.csv = c.parse::<CsvOptions>()?;
            o.format.get_or_insert(Format::Csv);
        }
        if let Some(c) = &self.compression {
            o.compression = Some(c.parse::<Compression>()?);
        }
        Ok(o)
    }
}

/// Arguments of `locus trace stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// The trace file (`-` for stdin; byte miss ratios then need a second pass and are skipped).
    file: PathBuf,
    #[command(flatten)]
    input: InputArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Arguments of `locus trace generate`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// A tenant (repeat for a multi-tenant mix), comma-separated key=value: pattern=zipf|uniform|
    /// loop|ycsb-a..ycsb-f, alpha=0.99, keys=1e6, phase=N (hot set moves every N requests),
    /// rate=1000 (req/s), key-size=DIST, value-size=DIST (N, uniform:MIN:MAX,
    /// lognormal:MEDIAN:SIGMA, pareto:MIN:ALPHA), get=,set=,delete= (op shares),
    /// penalty-us=N, tenant=ID. Default: one Zipf(0.99) tenant over 100000 keys.
    #[arg(long = "tenant", short = 't')]
    tenants: Vec<String>,
    /// Number of requests.
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    requests: u64,
    /// Seed (same seed, same trace).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Output file (.zst/.xz/.gz/.bz2 compress).
    #[arg(long, short = 'o')]
    out: PathBuf,
    /// Output format: locus-csv (default) or oracle-general.
    #[arg(long)]
    to: Option<String>,
}

/// Arguments of `locus trace convert`.
#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// Input trace.
    input: PathBuf,
    /// Output file (.zst/.xz/.gz/.bz2 compress).
    output: PathBuf,
    #[command(flatten)]
    read: InputArgs,
    /// Output format: locus-csv or oracle-general (default: oracle-general when the output name
    /// contains "oracleGeneral", else locus-csv).
    #[arg(long)]
    to: Option<String>,
}

/// Runs `locus trace …`.
pub fn run(cmd: TraceCommand) -> anyhow::Result<()> {
    match cmd {
        TraceCommand::Stats(a) => run_stats(a),
        TraceCommand::Generate(a) => run_generate(a),
        TraceCommand::Convert(a) => run_convert(a),
    }
}

fn run_stats(a: StatsArgs) -> anyhow::Result<()> {
    let opts = a.input.options()?;
    let mut opened = 0;
    let file = a.file.clone();
    let s = stats::compute(&mut || {
        opened += 1;
        if opened > 1 && file.as_os_str() == "-" {
            return Err(locus_trace::TraceError::Options(
                "stdin cannot be read twice".into(),
            ));
        }
        open(&file, &opts)
    })?;
    let text = if a.json {
        serde_json::to_string_pretty(&s)? + "\n"
    } else {
        format_stats(&s)
    };
    write_stdout(&text)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

fn format_stats(s: &stats::TraceStats) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let fmt = s.format.as_deref().unwrap_or("-");
    let _ = writeln!(o, "trace              {} ({fmt})", s.source);
    let _ = writeln!(o, "records            {}", s.records);
    let _ = writeln!(o, "requests           {}", s.requests);
    let _ = writeln!(o, "unique keys        {}", s.unique_keys);
    let _ = writeln!(
        o,
        "one-hit wonders    {:.4} of keys",
        s.one_hit_wonder_ratio
    );
    let _ = writeln!(
        o,
        "top 1% keys        {:.4} of requests",
        s.top1pct_key_request_share
    );
    let _ = writeln!(o, "compulsory misses  {:.4}", s.compulsory_miss_ratio);
    let _ = writeln!(
        o,
        "ops                get {}  set {}  delete {}",
        s.ops.get, s.ops.set, s.ops.delete
    );
    let _ = writeln!(o, "tenants            {}", s.tenants);
    if let (Some(min), Some(max), Some(mean)) = (s.size_min, s.size_max, s.size_mean) {
        let _ = writeln!(o, "size (B)           min {min}  mean {mean:.0}  max {max}");
        let hist: Vec<String> = s
            .size_histogram
            .iter()
            .map(|b| format!("{}+:{}", b.lower, b.requests))
            .collect();
        let _ = writeln!(o, "size histogram     {}", hist.join(" "));
    }
    if let Some(f) = s.footprint_bytes {
        let _ = writeln!(o, "footprint (B)      {f}");
    }
    if let Some(c) = s.keys_with_changing_size {
        let _ = writeln!(o, "keys changing size {c}");
    }
    let row = |o: &mut String, label: &str, unit: &str, pts: &[stats::MissPoint]| {
        let cells: Vec<String> = pts
            .iter()
            .map(|p| {
                format!(
                    "{:.4} @{}% ({} {unit})",
                    p.miss_ratio,
                    p.fraction * 100.0,
                    p.capacity
                )
            })
            .collect();
        let _ = writeln!(o, "{label} {}", cells.join("  "));
    };
    row(
        &mut o,
        "LRU miss (objects)",
        "objs",
        &s.lru_miss_ratio_objects,
    );
    if let Some(b) = &s.lru_miss_ratio_bytes {
        row(&mut o, "LRU miss (bytes)  ", "B", b);
    }
    for w in &s.warnings {
        let _ = writeln!(
            o,
            "warning            {} ({} records, first at {})",
            w.what, w.count, w.first
        );
    }
    o
}

fn out_format(to: Option<&str>, out: &Path) -> anyhow::Result<Format> {
    let f = match to {
        Some(t) => t.parse::<Format>()?,
        None if out
            .to_string_lossy()
            .to_ascii_lowercase()
            .contains("oraclegeneral") =>
        {
            Format::OracleGeneral
        }
        None => Format::LocusCsv,
    };
    if !matches!(f, Format::LocusCsv | Format::OracleGeneral) {
        bail!("cannot write {f}: the output format must be locus-csv or oracle-general");
    }
    Ok(f)
}

fn copy(r: &mut dyn RequestReader, out: &Path, format: Format) -> anyhow::Result<u64> {
    let mut w = create(out, format)?;
    let mut req = Request::default();
    while r.read_into(&mut req)? {
        w.write(&req)?;
    }
    Ok(w.finish()?)
}

fn run_generate(a: GenerateArgs) -> anyhow::Result<()> {
    let specs = if a.tenants.is_empty() {
        vec![String::new()]
    } else {
        a.tenants
    };
    let tenants = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut t: TenantConfig = s.parse().with_context(|| format!("--tenant {s:?}"))?;
            if !s.contains("tenant=") && !s.contains("id=") {
                t.tenant = i as u32;
            }
            Ok(t)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut g = Generator::new(GeneratorConfig {
        requests: a.requests,
        seed: a.seed,
        tenants,
    })?;
    let format = out_format(a.to.as_deref(), &a.out)?;
    let n = copy(&mut g, &a.out, format)?;
    eprintln!("wrote {n} requests to {} ({format})", a.out.display());
    Ok(())
}

fn run_convert(a: ConvertArgs) -> anyhow::Result<()> {
    let opts = a.read.options()?;
    let mut r = open(&a.input, &opts)?;
    let format = out_format(a.to.as_deref(), &a.output)?;
    let n = copy(&mut *r, &a.output, format)?;
    for w in r.warnings() {
        eprintln!(
            "warning: {} ({} records, first at {})",
            w.what, w.count, w.first
        );
    }
    eprintln!("wrote {n} requests to {} ({format})", a.output.display());
    Ok(())
}
