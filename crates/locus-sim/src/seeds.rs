//! Several seeds per experiment (`seeds` key, `locus simulate --seeds N`, issue 16): every
//! controller runs once per seed `seed, seed + 1, …`, and each figure of the result table is
//! reported as mean ± sd (sample standard deviation) with its min and max, so a margin can be
//! read against the spread instead of against one draw.
//!
//! ```text
//!  Experiment ─► for s in 0..N: simulate(exp with seed + s) ─► Report_s ─┐
//!                                                                       ├─► SeedReport: per label × tenant
//!                                                                       │   hit ratio, misses, miss cost,
//!                                                                       │   mean latency, share of the
//!                                                                       │   oracle's gain: Stat {mean, sd, min, max}
//!  table() / csv() / JSON (serde)  ◄─────────────────────────────────────┘
//! ```
//! A seed changes the generators, the interleaving, the penalty draws and the engine's random
//! choices (K-LRU samples); a trace replays the same requests under every seed. The oracle plans
//! again for each seed (its curves are of that seed's requests).

use std::fmt::Write as _;

use serde::Serialize;

use crate::{Experiment, Options, Report, SimError, simulate};

/// Mean, sample standard deviation, min and max of one figure over the seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (`n − 1` in the denominator; 0 for one value).
    pub sd: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Values.
    pub n: usize,
}

impl Stat {
    /// The statistics of `values` (all zero when empty).
    pub fn of(values: &[f64]) -> Stat {
        let n = values.len();
        if n == 0 {
            return Stat::default();
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Stat {
            mean,
            sd,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n,
        }
    }
}

/// One controller × tenant (or `overall`) over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct SeedRow {
    /// Controller label.
    pub label: String,
    /// Tenant name or `overall`.
    pub tenant: String,
    /// Hit ratio (0..1).
    pub hit_ratio: Stat,
    /// GET misses.
    pub misses: Stat,
    /// Σ miss penalties (µs).
    pub miss_cost_us: Stat,
    /// Modelled mean GET latency (µs).
    pub mean_latency_us: Stat,
    /// Share of the oracle's gain over the baseline (overall rows of experiments with a
    /// `baseline` and an oracle).
    pub oracle_gain: Option<Stat>,
    /// Fast-tier hit ratio (experiments with `[tier]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_hit_ratio: Option<Stat>,
    /// Modelled GET throughput per second (experiments with `[tier]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gets_per_sec: Option<Stat>,
}

/// What several seeds of an experiment produced.
#[derive(Clone, Debug, Serialize)]
pub struct SeedReport {
    /// Experiment name.
    pub name: String,
    /// The headline metric (as [`Report::metric`]).
    pub metric: String,
    /// The seeds, in run order.
    pub seeds: Vec<u64>,
    /// Labels from best to worst by the mean of the headline metric.
    pub ordering: Vec<String>,
    /// Per label (experiment order), its tenants then `overall`.
    pub rows: Vec<SeedRow>,
    /// Runs that failed: (seed, label, error).
    pub failed: Vec<(u64, String, String)>,
}

/// Runs `exp` under `n` seeds (`exp.seed`, `exp.seed + 1`, …) and gathers each figure's
/// statistics. Returns the summary and every seed's report (the first is the run of `exp.seed`,
/// identical to [`simulate`]'s).
///
/// # Errors
/// As [`simulate`], for the first seed that fails as a whole.
pub fn simulate_seeds(
    exp: &Experiment,
    opts: &Options,
    n: u32,
    progress: &(dyn Fn(&str, u64) + Sync),
) -> Result<(SeedReport, Vec<Report>), SimError> {
    let mut reports = Vec::with_capacity(n as usize);
    let mut seeds = Vec::with_capacity(n as usize);
    for i in 0..u64::from(n.max(1)) {
        let mut e = exp.clone();
        e.seed = exp.seed.wrapping_add(i);
        seeds.push(e.seed);
        reports.push(simulate(&e, opts, progress)?);
    }
    Ok((summarise(&seeds, &reports), reports))
}

/// The statistics of several reports of one experiment (one per seed).
pub fn summarise(seeds: &[u64], reports: &[Report]) -> SeedReport {
    let first = &reports[0];
    let mut rows = Vec::new();
    let mut headline: Vec<(String, f64)> = Vec::new();
    for run in &first.runs {
        let runs: Vec<_> = reports
            .iter()
            .filter_map(|r| r.runs.iter().find(|x| x.label == run.label))
            .collect();
        let mut names: Vec<String> = run.tenants.iter().map(|t| t.name.clone()).collect();
        names.push("overall".into());
        for (i, tenant) in names.iter().enumerate() {
            let results: Vec<_> = runs
                .iter()
                .map(|r| r.tenants.get(i).unwrap_or(&r.overall))
                .collect();
            let stat = |f: &dyn Fn(&crate::TenantResult) -> f64| {
                Stat::of(&results.iter().map(|t| f(t)).collect::<Vec<_>>())
            };
            let overall = i == run.tenants.len();
            let gains: Vec<f64> = reports
                .iter()
                .filter_map(|r| {
                    r.oracle_gain
                        .iter()
                        .find(|(l, _)| *l == run.label)
                        .map(|x| x.1)
                })
                .collect();
            rows.push(SeedRow {
                label: run.label.clone(),
                tenant: tenant.clone(),
                hit_ratio: stat(&|t| t.hit_ratio),
                misses: stat(&|t| t.misses as f64),
                miss_cost_us: stat(&|t| t.miss_cost_us),
                mean_latency_us: stat(&|t| t.mean_latency_us),
                oracle_gain: (overall && !gains.is_empty()).then(|| Stat::of(&gains)),
                fast_hit_ratio: results[0]
                    .tier
                    .is_some()
                    .then(|| stat(&|t| t.tier.as_ref().map_or(0.0, |x| x.fast_hit_ratio))),
                gets_per_sec: results[0]
                    .tier
                    .is_some()
                    .then(|| stat(&|t| t.tier.as_ref().map_or(0.0, |x| x.gets_per_sec))),
            });
            if overall {
                let h: Vec<f64> = runs.iter().map(|r| first.headline(r)).collect();
                headline.push((run.label.clone(), Stat::of(&h).mean));
            }
        }
    }
    headline.sort_by(|a, b| a.1.total_cmp(&b.1));
    let failed = seeds
        .iter()
        .zip(reports)
        .flat_map(|(s, r)| r.failed.iter().map(|(l, e)| (*s, l.clone(), e.clone())))
        .collect();
    SeedReport {
        name: first.name.clone(),
        metric: first.metric.clone(),
        seeds: seeds.to_vec(),
        ordering: headline.into_iter().map(|(l, _)| l).collect(),
        rows,
        failed,
    }
}

/// `mean ± sd [min, max]` with `digits` decimals after scaling by `scale`.
fn cell(s: &Stat, scale: f64, digits: usize) -> String {
    format!(
        "{:.d$} ± {:.d$} [{:.d$}, {:.d$}]",
        s.mean * scale,
        s.sd * scale,
        s.min * scale,
        s.max * scale,
        d = digits
    )
}

/// The seed table: per label × tenant, hit %, misses and mean latency as `mean ± sd [min, max]`,
/// then the ordering by the mean headline and each label's share of the oracle's gain.
pub fn table(r: &SeedReport) -> String {
    let mut rows: Vec<[String; 5]> = vec![[
        "controller".into(),
        "tenant".into(),
        "hit% mean ± sd [min, max]".into(),
        "misses mean ± sd [min, max]".into(),
        "latency_us mean ± sd [min, max]".into(),
    ]];
    for row in &r.rows {
        rows.push([
            row.label.clone(),
            row.tenant.clone(),
            cell(&row.hit_ratio, 100.0, 2),
            cell(&row.misses, 1.0, 0),
            cell(&row.mean_latency_us, 1.0, 2),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment {}: {} seeds ({})",
        r.name,
        r.seeds.len(),
        r.seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    crate::report::grid(&mut out, &rows);
    if r.rows.iter().any(|x| x.fast_hit_ratio.is_some()) {
        let mut tiers: Vec<[String; 4]> = vec![[
            "controller".into(),
            "tenant".into(),
            "fast_hit% mean ± sd [min, max]".into(),
            "modelled gets/s mean ± sd [min, max]".into(),
        ]];
        for row in &r.rows {
            if let (Some(f), Some(g)) = (&row.fast_hit_ratio, &row.gets_per_sec) {
                tiers.push([
                    row.label.clone(),
                    row.tenant.clone(),
                    cell(f, 100.0, 2),
                    cell(g, 1.0, 0),
                ]);
            }
        }
        let _ = writeln!(out, "memory tiers:");
        crate::report::grid(&mut out, &tiers);
    }
    let metric = if r.metric == "mean_latency_us" {
        "modelled mean latency"
    } else {
        "miss ratio"
    };
    let _ = writeln!(
        out,
        "best to worst by mean {metric}: {}",
        r.ordering.join(" < ")
    );
    for row in r.rows.iter().filter(|x| x.oracle_gain.is_some()) {
        if let Some(g) = &row.oracle_gain {
            let _ = writeln!(
                out,
                "{}: {} % of the oracle's gain",
                row.label,
                cell(g, 100.0, 1)
            );
        }
    }
    for (s, l, e) in &r.failed {
        let _ = writeln!(out, "seed {s}: {l} FAILED: {e}");
    }
    out
}

/// Writes the first seed's outputs ([`crate::report::write_dir`]) and `seeds.csv`, `seeds.json`
/// into `dir`; returns the paths.
///
/// # Errors
/// [`SimError::Io`] when a file cannot be written.
pub fn write_dir(
    r: &SeedReport,
    first: &Report,
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, SimError> {
    let mut files = crate::report::write_dir(first, dir)?;
    files.push(crate::report::write(dir.join("seeds.csv"), &csv(r))?);
    let json = serde_json::to_string_pretty(r).map_err(|e| SimError::Workload {
        what: "seeds.json".into(),
        message: e.to_string(),
    })?;
    files.push(crate::report::write(dir.join("seeds.json"), &json)?);
    Ok(files)
}

/// `seeds.csv`: one row per label × tenant, each figure's mean, sd, min and max.
pub fn csv(r: &SeedReport) -> String {
    let mut out = String::from("controller,tenant,seeds");
    for f in [
        "hit_ratio",
        "misses",
        "miss_cost_us",
        "mean_latency_us",
        "oracle_gain",
    ] {
        for s in ["mean", "sd", "min", "max"] {
            let _ = write!(out, ",{f}_{s}");
        }
    }
    out.push('\n');
    for row in &r.rows {
        let _ = write!(out, "{},{},{}", row.label, row.tenant, row.hit_ratio.n);
        for s in [
            Some(&row.hit_ratio),
            Some(&row.misses),
            Some(&row.miss_cost_us),
            Some(&row.mean_latency_us),
            row.oracle_gain.as_ref(),
        ] {
            match s {
                Some(s) => {
                    let _ = write!(out, ",{},{},{},{}", s.mean, s.sd, s.min, s.max);
                }
                None => out.push_str(",,,,"),
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_is_the_sample_statistics() {
        let s = Stat::of(&[1.0, 2.0, 3.0, 6.0]);
        assert_eq!(s.mean, 3.0);
        assert!((s.sd - (14.0f64 / 3.0).sqrt()).abs() < 1e-12, "{s:?}");
        assert_eq!((s.min, s.max, s.n), (1.0, 6.0, 4));
        assert_eq!(Stat::of(&[5.0]).sd, 0.0);
        assert_eq!(Stat::of(&[]), Stat::default());
    }
}
