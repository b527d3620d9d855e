//! Memory sweeps (`[sweep]`, issue 16): the same experiment at several memory sizes, given as
//! fractions of the run's working set, each under every seed, with the headline metric per
//! controller as a table, CSV and a plot (the papers' "gain as memory shrinks" figures).
//!
//! ```text
//!  Experiment ─► working_set_bytes (one pass: distinct items per tenant × class, packed per page)
//!       │
//!       └─► for f in [sweep] memory: exp with memory = f × working set ─► simulate_seeds ─┐
//!                                                                                       ├─► SweepReport
//!  table() / csv() / write_dir() (sweep.csv, sweep.json, sweep.svg/png)  ◄───────────────┘
//! ```
//!
//! The working set is what the engine would need to hold every item the run requests at once:
//! per tenant and size class, the distinct keys (sized at their first request) packed
//! `⌊page / chunk⌋` to a page, summed over classes, in bytes of pages. Items larger than a page
//! are never cached and do not count.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use locus_common::VirtualClock;
use serde::Serialize;

use crate::experiment::Memory;
use crate::run::{MAX_KEY_BYTES, build_engine};
use crate::seeds::{SeedReport, simulate_seeds};
use crate::workload::{Item, Workload};
use crate::{Experiment, Options, SimError};

/// Most points of a sweep.
pub const MAX_POINTS: usize = 32;

/// Bytes of pages that hold every distinct item of the run at once (see the module docs).
///
/// # Errors
/// Trace errors; engine configuration errors (the probe engine that gives chunk sizes).
pub fn working_set_bytes(exp: &Experiment) -> Result<u64, SimError> {
    let (probe, per_page) = probe_classes(exp)?;
    let mut seen: HashSet<(usize, u64)> = HashSet::new();
    let mut items = vec![vec![0u64; per_page.len()]; exp.tenants.len()];
    let mut wl = Workload::open(exp)?;
    let mut it = Item::default();
    while wl.next(&mut it)? {
        if !seen.insert((it.tenant, it.req.key)) {
            continue;
        }
        let klen = (it.req.key_size as usize).clamp(8, MAX_KEY_BYTES);
        let value = it.req.value_size.min(u32::MAX as u64) as usize;
        if let Some(c) = probe.class_for(klen, value) {
            items[it.tenant][c.0 as usize] += 1;
        }
    }
    let pages: u64 = items
        .iter()
        .flat_map(|t| t.iter().zip(&per_page).map(|(n, per)| n.div_ceil(*per)))
        .sum();
    Ok(pages * exp.page_size)
}

/// A probe engine of `exp` (its size classes, for `class_for`) and each class's items per page.
///
/// # Errors
/// Engine configuration errors.
pub(crate) fn probe_classes(
    exp: &Experiment,
) -> Result<(locus_engine::Engine, Vec<u64>), SimError> {
    let clock = VirtualClock::new(0);
    let probe = build_engine(exp, exp.page_size, &clock)?;
    let per_page = probe
        .size_classes()
        .iter()
        .map(|(_, chunk)| (exp.page_size / u64::from((*chunk).max(1))).max(1))
        .collect();
    Ok((probe, per_page))
}

/// One memory size of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    /// Fraction of the working set.
    pub fraction: f64,
    /// `maxmemory` of the runs (bytes of pages).
    pub maxmemory: u64,
    /// Pages of memory.
    pub pages: u64,
    /// Every controller under every seed at this size.
    pub seeds: SeedReport,
}

/// What a sweep produced.
#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    /// Experiment name.
    pub name: String,
    /// The headline metric (`mean_latency_us` or `miss_ratio`).
    pub metric: String,
    /// Bytes of pages of the working set (of the first seed's requests).
    pub working_set_bytes: u64,
    /// Page size (bytes).
    pub page_size: u64,
    /// One point per fraction, in the file's order.
    pub points: Vec<SweepPoint>,
}

/// `maxmemory` for `fraction` of a working set of `ws` bytes: whole pages, nearest to the
/// fraction, at least one page per tenant.
pub fn memory_for(exp: &Experiment, ws: u64, fraction: f64) -> u64 {
    let pages = (fraction * ws as f64 / exp.page_size as f64).round() as u64;
    pages.max(exp.tenants.len() as u64) * exp.page_size
}

/// Runs the sweep of `exp` (its `[sweep]` table): every fraction under `seeds` seeds.
///
/// # Errors
/// [`SimError::Invalid`] when there is nothing to sweep; as [`simulate_seeds`] otherwise.
pub fn simulate_sweep(
    exp: &Experiment,
    opts: &Options,
    seeds: u32,
    progress: &(dyn Fn(&str, u64) + Sync),
) -> Result<SweepReport, SimError> {
    let fractions = exp
        .sweep
        .as_ref()
        .map(|s| s.memory.clone())
        .unwrap_or_default();
    if fractions.is_empty() {
        return Err(SimError::Invalid {
            what: exp.name.clone(),
            problems: vec!["sweep.memory: no fractions to sweep".into()],
        });
    }
    let ws = working_set_bytes(exp)?;
    let mut points = Vec::with_capacity(fractions.len());
    let mut metric = String::new();
    for &f in &fractions {
        let mut e = exp.clone();
        e.sweep = None;
        let bytes = memory_for(exp, ws, f);
        e.memory = Memory::Bytes(bytes);
        let (summary, _) = simulate_seeds(&e, opts, seeds, progress)?;
        metric.clone_from(&summary.metric);
        points.push(SweepPoint {
            fraction: f,
            maxmemory: bytes,
            pages: bytes / exp.page_size,
            seeds: summary,
        });
    }
    Ok(SweepReport {
        name: exp.name.clone(),
        metric,
        working_set_bytes: ws,
        page_size: exp.page_size,
        points,
    })
}

/// The headline of a seed row's statistics: (mean, min, max) of the mean latency (µs) or of the
/// miss ratio (%).
fn headline(metric: &str, row: &crate::seeds::SeedRow) -> (f64, f64, f64) {
    if metric == "mean_latency_us" {
        let s = &row.mean_latency_us;
        (s.mean, s.min, s.max)
    } else {
        let s = &row.hit_ratio;
        (
            100.0 * (1.0 - s.mean),
            100.0 * (1.0 - s.max),
            100.0 * (1.0 - s.min),
        )
    }
}

/// Controller labels of a sweep, in the experiment's order.
fn labels(r: &SweepReport) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &r.points {
        for row in p.seeds.rows.iter().filter(|x| x.tenant == "overall") {
            if !out.contains(&row.label) {
                out.push(row.label.clone());
            }
        }
    }
    out
}

fn overall<'a>(p: &'a SweepPoint, label: &str) -> Option<&'a crate::seeds::SeedRow> {
    p.seeds
        .rows
        .iter()
        .find(|x| x.label == label && x.tenant == "overall")
}

/// The sweep as a Markdown table: one row per controller, one column per memory size, each cell
/// the headline's mean and [min, max] over the seeds.
pub fn table(r: &SweepReport) -> String {
    let unit = if r.metric == "mean_latency_us" {
        "mean latency µs"
    } else {
        "miss %"
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment {}: working set {} bytes ({} pages); {unit}, mean [min, max] over seeds {:?}",
        r.name,
        r.working_set_bytes,
        r.working_set_bytes / r.page_size.max(1),
        r.points
            .first()
            .map(|p| p.seeds.seeds.clone())
            .unwrap_or_default()
    );
    let _ = write!(out, "\n| controller |");
    for p in &r.points {
        let _ = write!(out, " {:.0}% ({} pages) |", p.fraction * 100.0, p.pages);
    }
    let _ = write!(out, "\n|---|");
    for _ in &r.points {
        let _ = write!(out, "---|");
    }
    out.push('\n');
    for label in labels(r) {
        let _ = write!(out, "| {label} |");
        for p in &r.points {
            match overall(p, &label) {
                Some(row) => {
                    let (m, lo, hi) = headline(&r.metric, row);
                    let _ = write!(out, " {m:.2} [{lo:.2}, {hi:.2}] |");
                }
                None => out.push_str(" — |"),
            }
        }
        out.push('\n');
    }
    for p in &r.points {
        let _ = writeln!(
            out,
            "{:.0}%: best to worst {}",
            p.fraction * 100.0,
            p.seeds.ordering.join(" < ")
        );
        for (s, l, e) in &p.seeds.failed {
            let _ = writeln!(out, "  seed {s}: {l} FAILED: {e}");
        }
    }
    out
}

/// `fraction,maxmemory,pages,controller,tenant,hit_ratio_mean,hit_ratio_sd,hit_ratio_min,
/// hit_ratio_max,mean_latency_us_mean,mean_latency_us_sd,mean_latency_us_min,mean_latency_us_max`
/// (every tenant and `overall`).
pub fn csv(r: &SweepReport) -> String {
    let mut out = String::from(
        "fraction,maxmemory,pages,controller,tenant,hit_ratio_mean,hit_ratio_sd,hit_ratio_min,\
         hit_ratio_max,mean_latency_us_mean,mean_latency_us_sd,mean_latency_us_min,\
         mean_latency_us_max\n",
    );
    for p in &r.points {
        for row in &p.seeds.rows {
            let (h, l) = (&row.hit_ratio, &row.mean_latency_us);
            let _ = writeln!(
                out,
                "{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.3},{:.3},{:.3},{:.3}",
                p.fraction,
                p.maxmemory,
                p.pages,
                row.label,
                row.tenant,
                h.mean,
                h.sd,
                h.min,
                h.max,
                l.mean,
                l.sd,
                l.min,
                l.max
            );
        }
    }
    out
}

/// The plot: the headline's mean per controller against the fraction of the working set.
pub fn chart(r: &SweepReport) -> locus_plot::Chart {
    let y = if r.metric == "mean_latency_us" {
        "mean latency (us)"
    } else {
        "miss ratio (%)"
    };
    let mut chart = locus_plot::Chart::new(
        format!("{}: {} by memory", r.name, y),
        "memory (fraction of the working set)",
        y,
    );
    for label in labels(r) {
        let points = r
            .points
            .iter()
            .filter_map(|p| overall(p, &label).map(|row| (p.fraction, headline(&r.metric, row).0)))
            .collect();
        chart.add_series(&label, points);
    }
    chart
}

/// Writes `sweep.csv`, `sweep.json`, `sweep.svg` and `sweep.png` into `dir`; returns the paths.
///
/// # Errors
/// [`SimError::Io`] or [`SimError::Plot`] when a file cannot be written.
pub fn write_dir(r: &SweepReport, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    std::fs::create_dir_all(dir).map_err(|e| SimError::Io {
        what: dir.display().to_string(),
        source: e,
    })?;
    let mut files = Vec::new();
    let json = serde_json::to_string_pretty(r).map_err(|e| SimError::Io {
        what: "sweep.json".into(),
        source: std::io::Error::other(e),
    })?;
    for (name, text) in [("sweep.csv", csv(r)), ("sweep.json", json)] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| SimError::Io {
            what: path.display().to_string(),
            source: e,
        })?;
        files.push(path);
    }
    files.extend(crate::plot::save_svg_png(&chart(r), dir, "sweep")?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(text: &str) -> Experiment {
        Experiment::parse(text, "t.toml", Path::new(".")).unwrap()
    }

    const LOOP: &str = r#"
name = "sweep-loop"
memory = "1MiB"
page_size = "4KiB"
requests = "40k"
interval = "5k"
[[controller]]
name = "shared"
[[tenant]]
name = "loop"
generator = { pattern = "loop", keys = 2000, value_size = 100 }
[sweep]
memory = [0.5, 1.1]
"#;

    #[test]
    fn the_working_set_packs_distinct_items_per_page() {
        let e = exp(LOOP);
        let clock = VirtualClock::new(0);
        let probe = build_engine(&e, e.page_size, &clock).unwrap();
        let class = probe.class_for(8, 100).unwrap();
        let chunk = probe
            .size_classes()
            .iter()
            .find(|(c, _)| *c == class)
            .unwrap()
            .1;
        let per_page = 4096 / u64::from(chunk);
        assert_eq!(
            working_set_bytes(&e).unwrap(),
            2000u64.div_ceil(per_page) * 4096
        );
    }

    #[test]
    fn a_sweep_runs_each_fraction_and_a_loop_hits_only_when_it_fits() {
        let e = exp(LOOP);
        let r = simulate_sweep(&e, &Options::default(), 2, &|_, _| {}).unwrap();
        let ws = r.working_set_bytes;
        assert_eq!(r.points.len(), 2);
        for p in &r.points {
            assert_eq!(p.maxmemory, memory_for(&e, ws, p.fraction));
            assert_eq!(p.seeds.seeds, vec![0, 1]);
        }
        let hit = |i: usize| overall(&r.points[i], "shared").unwrap().hit_ratio.mean;
        // LRU over a loop larger than memory keeps nothing; with 10% spare it hits after the
        // first pass (40k requests, 2000 keys: 95% of them are reuses).
        assert!(hit(0) < 0.05, "half the loop: {}", hit(0));
        assert!(hit(1) > 0.9, "all of it: {}", hit(1));
        let t = table(&r);
        assert!(t.contains("| shared |"), "{t}");
        assert_eq!(csv(&r).lines().count(), 1 + 2 * 2);
    }

    #[test]
    fn an_experiment_without_a_sweep_is_refused() {
        let mut e = exp(LOOP);
        e.sweep = None;
        let err = simulate_sweep(&e, &Options::default(), 1, &|_, _| {}).unwrap_err();
        assert!(err.to_string().contains("sweep.memory"), "{err}");
    }
}
