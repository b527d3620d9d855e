//! Outputs of a simulation: a text table, CSV files, JSON and plots.
//!
//! ```text
//!  Report ─► table()                    (stdout)
//!         ─► write_dir(DIR): summary.csv     one row per controller × tenant (+ overall)
//!                            intervals.csv   one row per controller × decision × tenant
//!                            phases.csv      one row per controller × phase × tenant (phases)
//!                            steady.csv      one row per controller × steady window × tenant (steady)
//!                            curves.csv      the MRCs each controller used at its last decision
//!                            oracle_curves.csv (when the oracle ran)
//!                            report.json     everything above
//!                            plots           (see `plot_files`)
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::{PhaseResult, Report, RunResult, SimError, TenantResult};

fn fmt_opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |x| x.to_string())
}

/// Appends `rows` as aligned columns (the first row a header, underlined): the first two
/// columns (controller, tenant) left-aligned, the figures right-aligned.
pub(crate) fn grid<const N: usize>(out: &mut String, rows: &[[String; N]]) {
    let mut widths = [0usize; N];
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    for (i, row) in rows.iter().enumerate() {
        let mut l = String::new();
        for (j, (c, w)) in row.iter().zip(widths).enumerate() {
            if j < 2 {
                let _ = write!(l, "{c:<w$}  ");
            } else {
                let _ = write!(l, "{c:>w$}  ");
            }
        }
        let _ = writeln!(out, "{}", l.trim_end());
        if i == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * (N - 1);
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
    }
}

/// The result table (controllers × tenants, then the overall row of each controller).
pub fn table(r: &Report) -> String {
    let mut rows: Vec<[String; 10]> = vec![[
        "controller".into(),
        "tenant".into(),
        "gets".into(),
        "hit%".into(),
        "misses".into(),
        "miss_cost_s".into(),
        "latency_us".into(),
        "pages".into(),
        "target".into(),
        "K".into(),
    ]];
    let line = |run: &RunResult, t: &TenantResult| -> [String; 10] {
        [
            run.label.clone(),
            t.name.clone(),
            t.gets.to_string(),
            format!("{:.2}", 100.0 * t.hit_ratio),
            t.misses.to_string(),
            format!("{:.3}", t.miss_cost_us / 1e6),
            format!("{:.1}", t.mean_latency_us),
            t.final_pages.to_string(),
            fmt_opt(t.final_target),
            if t.name == "overall" {
                "-".into()
            } else {
                t.final_samples.to_string()
            },
        ]
    };
    for run in &r.runs {
        for t in &run.tenants {
            rows.push(line(run, t));
        }
        rows.push(line(run, &run.overall));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment {}: {} tenant(s), {} bytes = {} pages of {} bytes",
        r.name,
        r.tenants.len(),
        r.maxmemory,
        r.pages_total,
        r.page_size
    );
    grid(&mut out, &rows);
    tier_table(&mut out, r);
    if r.runs.iter().any(|run| !run.phases.is_empty()) {
        let _ = writeln!(out, "per phase (overall hit% / modelled latency µs):");
        span_grid(&mut out, r, |run| &run.phases, |_, _| None);
    }
    if r.runs.iter().any(|run| !run.steady.is_empty()) {
        let _ = writeln!(
            out,
            "steady state, the last {:.0}% of the run and of each phase (overall hit% / modelled \
             latency µs / share of the oracle's gain):",
            100.0 * r.steady.unwrap_or(0.0)
        );
        span_grid(
            &mut out,
            r,
            |run| &run.steady,
            |span, label| r.steady_gain_of(span, label),
        );
    }
    for run in &r.runs {
        let _ = writeln!(
            out,
            "{}: {} requests in {:.2} s ({:.0} req/s{}{}), {} decisions",
            run.label,
            run.requests,
            run.wall_secs,
            run.requests_per_sec,
            run.replay_cpu_secs
                .map(|c| format!(", replay thread {c:.2} CPU s"))
                .unwrap_or_default(),
            if run.offload {
                ", controller offloaded"
            } else {
                ""
            },
            run.intervals.len()
        );
        if run.skipped > 0 {
            let _ = writeln!(
                out,
                "{}: {} trace requests skipped (tenant column matched no tenant)",
                run.label, run.skipped
            );
        }
    }
    let metric = if r.metric == "mean_latency_us" {
        "modelled mean latency"
    } else {
        "miss ratio"
    };
    let _ = writeln!(out, "best to worst by {metric}: {}", r.ordering.join(" < "));
    for (label, g) in &r.oracle_gain {
        let _ = writeln!(out, "{label}: {:.1}% of the oracle's gain", 100.0 * g);
    }
    for (label, e) in &r.failed {
        let _ = writeln!(out, "FAILED {label}: {e}");
    }
    out
}

/// With `[tier]`: per run and tenant, the fast-tier hit rate, slow hits, moves, evictions by tier
/// and the modelled GET throughput, and per phase the fast-tier hit rate.
fn tier_table(out: &mut String, r: &Report) {
    if !r.runs.iter().any(|run| run.overall.tier.is_some()) {
        return;
    }
    let mut rows: Vec<[String; 9]> = vec![[
        "controller".into(),
        "tenant".into(),
        "fast_hit%".into(),
        "slow_hits".into(),
        "promotions".into(),
        "demotions".into(),
        "fast_evict".into(),
        "slow_evict".into(),
        "gets/s".into(),
    ]];
    for run in &r.runs {
        for t in run.tenants.iter().chain(std::iter::once(&run.overall)) {
            let Some(tr) = &t.tier else { continue };
            rows.push([
                run.label.clone(),
                t.name.clone(),
                format!("{:.2}", 100.0 * tr.fast_hit_ratio),
                tr.slow_hits.to_string(),
                tr.promotions.to_string(),
                tr.demotions.to_string(),
                tr.fast_evictions.total().to_string(),
                tr.slow_evictions.total().to_string(),
                format!("{:.0}", tr.gets_per_sec),
            ]);
        }
    }
    let _ = writeln!(
        out,
        "memory tiers (modelled: gets/s = GETs / (hit times + miss penalties + moves)):"
    );
    grid(out, &rows);
    if r.runs.iter().any(|run| !run.phases.is_empty()) {
        let _ = writeln!(out, "fast-tier hit% per phase (overall):");
        for run in &r.runs {
            let cells: Vec<String> = run
                .phases
                .iter()
                .map(|ph| {
                    let f = ph.overall.tier.as_ref().map_or(0.0, |t| t.fast_hit_ratio);
                    format!("{} {:.2}", ph.name, 100.0 * f)
                })
                .collect();
            let _ = writeln!(out, "  {}: {}", run.label, cells.join(", "));
        }
    }
}

/// One row per run, one column per span (phase or steady window): "hit% / latency[ / gain%]".
fn span_grid(
    out: &mut String,
    r: &Report,
    spans: impl Fn(&RunResult) -> &Vec<PhaseResult>,
    gain: impl Fn(&str, &str) -> Option<f64>,
) {
    let mut grid: Vec<Vec<String>> = vec![
        std::iter::once("controller".to_string())
            .chain(spans(&r.runs[0]).iter().map(|p| p.name.clone()))
            .collect(),
    ];
    for run in &r.runs {
        grid.push(
            std::iter::once(run.label.clone())
                .chain(spans(run).iter().map(|p| {
                    let mut cell = format!(
                        "{:.2}% / {:.1}",
                        100.0 * p.overall.hit_ratio,
                        p.overall.mean_latency_us
                    );
                    if let Some(g) = gain(&p.name, &run.label) {
                        let _ = write!(cell, " / {:.1}%", 100.0 * g);
                    }
                    cell
                }))
                .collect(),
        );
    }
    let cols = grid.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            grid.iter()
                .filter_map(|row| row.get(c))
                .map(|x| x.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &grid {
        let mut l = String::new();
        for (c, cell) in row.iter().enumerate() {
            let w = widths[c];
            if c == 0 {
                let _ = write!(l, "{cell:<w$}");
            } else {
                let _ = write!(l, "  {cell:>w$}");
            }
        }
        let _ = writeln!(out, "{l}");
    }
}

/// `summary.csv`.
pub fn summary_csv(r: &Report) -> String {
    let mut s = String::from(
        "controller,name,tenant,gets,hits,misses,hit_ratio,miss_cost_us,mean_latency_us,final_pages,final_target,final_samples,engine_penalty_us,evictions,too_large\n",
    );
    for run in &r.runs {
        for t in run.tenants.iter().chain(std::iter::once(&run.overall)) {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{:.6},{:.1},{:.3},{},{},{},{:.1},{},{}",
                run.label,
                run.controller,
                t.name,
                t.gets,
                t.hits,
                t.misses,
                t.hit_ratio,
                t.miss_cost_us,
                t.mean_latency_us,
                t.final_pages,
                t.final_target.map_or(String::new(), |x| x.to_string()),
                if t.name == "overall" {
                    String::new()
                } else {
                    t.final_samples.to_string()
                },
                t.engine_penalty_us,
                t.evictions,
                t.too_large
            );
        }
    }
    s
}

/// One `label,window,tenant,gets,hits,misses,hit_ratio,miss_cost_us,mean_latency_us` row (no
/// newline) of `steady.csv` and `phases.csv`.
fn window_row(out: &mut String, label: &str, window: &str, t: &TenantResult) {
    let _ = write!(
        out,
        "{},{},{},{},{},{},{:.6},{:.1},{:.3}",
        label,
        window,
        t.name,
        t.gets,
        t.hits,
        t.misses,
        t.hit_ratio,
        t.miss_cost_us,
        t.mean_latency_us
    );
}

/// `steady.csv` (empty string without `steady`): one row per controller × steady-state window ×
/// tenant (and `overall`), with the window's share of the oracle's gain on the overall row.
pub fn steady_csv(r: &Report) -> String {
    if r.runs.iter().all(|run| run.steady.is_empty()) {
        return String::new();
    }
    let mut out = String::from(
        "controller,window,tenant,gets,hits,misses,hit_ratio,miss_cost_us,mean_latency_us,oracle_gain\n",
    );
    for run in &r.runs {
        for w in &run.steady {
            let gain = r
                .steady_gain_of(&w.name, &run.label)
                .map(|x| format!("{x:.6}"))
                .unwrap_or_default();
            for t in w.tenants.iter().chain(std::iter::once(&w.overall)) {
                window_row(&mut out, &run.label, &w.name, t);
                let gain = if t.name == "overall" {
                    gain.as_str()
                } else {
                    ""
                };
                let _ = writeln!(out, ",{gain}");
            }
        }
    }
    out
}

/// `phases.csv` (empty string without phases).
pub fn phases_csv(r: &Report) -> String {
    if r.runs.iter().all(|run| run.phases.is_empty()) {
        return String::new();
    }
    let mut s = String::from(
        "controller,phase,tenant,gets,hits,misses,hit_ratio,miss_cost_us,mean_latency_us\n",
    );
    for run in &r.runs {
        for p in &run.phases {
            for t in p.tenants.iter().chain(std::iter::once(&p.overall)) {
                window_row(&mut s, &run.label, &p.name, t);
                s.push('\n');
            }
        }
    }
    s
}

/// `curves.csv`: the curves each controller used at its last decision that reported any (empty
/// string when none did).
pub fn curves_csv(r: &Report) -> String {
    if r.runs.iter().all(|run| run.last_curves.is_empty()) {
        return String::new();
    }
    let mut s = String::from("controller,at_request,tenant,label,unit,capacity,miss_ratio\n");
    for run in &r.runs {
        for c in &run.last_curves {
            let tenant = r.tenants.get(c.pool as usize).map_or("?", String::as_str);
            for (cap, m) in c.mrc.points() {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{:.6}",
                    run.label,
                    c.at_request,
                    tenant,
                    c.label.replace(',', ";"),
                    c.mrc.unit(),
                    cap,
                    m
                );
            }
        }
    }
    s
}

/// `intervals.csv`.
pub fn intervals_csv(r: &Report) -> String {
    let mut s = String::from(
        "controller,interval,at_request,at_us,tenant,pages,target,samples,hit_ratio,penalty_us,moves\n",
    );
    for run in &r.runs {
        for row in &run.intervals {
            for (i, name) in r.tenants.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{:.1},{}",
                    run.label,
                    row.interval,
                    row.at_request,
                    row.at_us,
                    name,
                    row.pages.get(i).copied().unwrap_or(0),
                    row.targets
                        .get(i)
                        .copied()
                        .flatten()
                        .map_or(String::new(), |x| x.to_string()),
                    row.samples.get(i).copied().unwrap_or(0),
                    row.hit_ratio
                        .get(i)
                        .copied()
                        .flatten()
                        .map_or(String::new(), |x| format!("{x:.6}")),
                    row.penalty_us.get(i).copied().unwrap_or(0.0),
                    row.moves
                );
            }
        }
    }
    s
}

/// `oracle_curves.csv` (empty string without the oracle).
pub fn oracle_csv(r: &Report) -> String {
    let Some(o) = &r.oracle else {
        return String::new();
    };
    let mut s = String::from("span,tenant,pages,capacity_bytes,miss_ratio\n");
    for span in std::iter::once(&o.whole).chain(&o.phases) {
        for t in &span.tenants {
            for (c, m) in t.mrc.points() {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{:.6}",
                    span.name,
                    t.tenant,
                    (*c as u64) / o.page_size,
                    *c as u64,
                    m
                );
            }
        }
    }
    s
}

pub(crate) fn write(path: PathBuf, text: &str) -> Result<PathBuf, SimError> {
    std::fs::write(&path, text).map_err(|e| SimError::Io {
        what: path.display().to_string(),
        source: e,
    })?;
    Ok(path)
}

/// Writes the CSV, JSON and plot files into `dir` (created if needed); returns the paths.
///
/// # Errors
/// [`SimError::Io`] when a file cannot be written.
pub fn write_dir(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    std::fs::create_dir_all(dir).map_err(|e| SimError::Io {
        what: dir.display().to_string(),
        source: e,
    })?;
    let mut files = vec![
        write(dir.join("summary.csv"), &summary_csv(r))?,
        write(dir.join("intervals.csv"), &intervals_csv(r))?,
    ];
    if r.runs.iter().any(|run| !run.phases.is_empty()) {
        files.push(write(dir.join("phases.csv"), &phases_csv(r))?);
    }
    if r.runs.iter().any(|run| !run.steady.is_empty()) {
        files.push(write(dir.join("steady.csv"), &steady_csv(r))?);
    }
    if r.runs.iter().any(|run| !run.last_curves.is_empty()) {
        files.push(write(dir.join("curves.csv"), &curves_csv(r))?);
    }
    if r.oracle.is_some() {
        files.push(write(dir.join("oracle_curves.csv"), &oracle_csv(r))?);
    }
    let json = serde_json::to_string_pretty(r).map_err(|e| SimError::Workload {
        what: "report.json".into(),
        message: e.to_string(),
    })?;
    files.push(write(dir.join("report.json"), &json)?);
    files.extend(crate::plot::write_plots(r, dir)?);
    Ok(files)
}
