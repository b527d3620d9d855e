//! Golden numbers: every `experiments/*.toml`, scaled down by its `[golden]` table, must give the
//! hit ratios (per controller, per tenant, 4 decimals; per steady-state window for experiments
//! with `steady`) and the best-to-worst ordering recorded in `tests/golden/<name>.json`.
//!
//! Runs are deterministic (seeded generators, virtual clock, seeded engine), so any difference is
//! a behaviour change: review it, then regenerate the files deliberately with
//!
//! ```text
//! LOCUS_BLESS=1 cargo test --release -p locus-sim --test golden
//! ```
//! (In a debug build the check is `#[ignore]`d: it takes minutes there and seconds in release,
//! where `scripts/test.sh` runs it.)
//! and commit the diff of `tests/golden/` with the change that caused it. `LOCUS_GOLDEN=a,b`
//! checks (or blesses) only the experiments of those names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use locus_sim::experiment::Experiment;
use locus_sim::{Options, Report, simulate};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// The golden summary of a report.
fn summary(r: &Report) -> Value {
    let mut hit = BTreeMap::new();
    for run in &r.runs {
        let mut t: BTreeMap<String, f64> = run
            .tenants
            .iter()
            .map(|t| (t.name.clone(), round4(t.hit_ratio)))
            .collect();
        t.insert("overall".into(), round4(run.overall.hit_ratio));
        hit.insert(run.label.clone(), t);
    }
    let failed: Vec<&str> = r.failed.iter().map(|(l, _)| l.as_str()).collect();
    let mut v = json!({
        "experiment": r.name,
        "metric": r.metric,
        "ordering": r.ordering,
        "hit_ratio": hit,
        "failed": failed,
    });
    // Experiments with `steady` also record each steady-state window's overall hit ratio.
    if r.runs.iter().any(|run| !run.steady.is_empty()) {
        let steady: BTreeMap<String, BTreeMap<String, f64>> = r
            .runs
            .iter()
            .map(|run| {
                let w = run
                    .steady
                    .iter()
                    .map(|w| (w.name.clone(), round4(w.overall.hit_ratio)))
                    .collect();
                (run.label.clone(), w)
            })
            .collect();
        v["steady_hit_ratio"] = json!(steady);
    }
    v
}

/// Lines that differ between two summaries (keys in order).
fn differences(want: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let p = format!("{path}.{k}");
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => differences(x, y, &p, out),
                    (x, y) => out.push(format!("{p}: golden {x:?}, now {y:?}")),
                }
            }
        }
        (a, b) if a != b => out.push(format!("{path}: golden {a}, now {b}")),
        _ => {}
    }
}

/// Whether every trace file `file` names exists; a missing one under `../shared` is a loud skip
/// of that experiment (locus_testdata), a missing one elsewhere is left to the loader's error.
fn shared_traces_present(file: &Path) -> bool {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let doc: toml::Table = match text.parse() {
        Ok(d) => d,
        Err(_) => return true, // the loader reports the syntax error
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let tenants = doc.get("tenant").and_then(|t| t.as_array());
    let paths = tenants
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("trace")?.get("path")?.as_str());
    for p in paths {
        let path = dir.join(p);
        if p.contains("shared/") && !path.exists() {
            let test = format!(
                "experiments_match_their_golden_numbers[{}]",
                file.file_stem().and_then(|s| s.to_str()).unwrap_or("?")
            );
            return locus_testdata::require(&test, &path).is_some();
        }
    }
    true
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "three minutes in a debug build: scripts/test.sh runs it in release (cargo test --release -p locus-sim --test golden)"
)]
fn experiments_match_their_golden_numbers() {
    let dir = root().join("experiments");
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("LOCUS_BLESS").is_some_and(|v| v == "1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no experiments in {}", dir.display());
    if let Ok(only) = std::env::var("LOCUS_GOLDEN") {
        let names: Vec<&str> = only.split(',').map(str::trim).collect();
        files.retain(|p| {
            p.file_stem()
                .and_then(|s| s.to_str())
                .is_some_and(|s| names.contains(&s))
        });
        assert!(!files.is_empty(), "LOCUS_GOLDEN={only}: no such experiment");
    }
    let mut problems = Vec::new();
    for file in &files {
        if !shared_traces_present(file) {
            continue;
        }
        let exp = match Experiment::load(file) {
            Ok(e) => e,
            Err(e) => {
                problems.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        if exp.golden.is_none() {
            problems.push(format!(
                "{}: no [golden] table (scale and/or requests for the scaled-down run)",
                file.display()
            ));
            continue;
        }
        let scaled = exp.golden_scaled();
        let started = std::time::Instant::now();
        let report = match simulate(&scaled, &Options::default(), &|_, _| {}) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        eprintln!(
            "golden {}: {} runs in {:.1} s, ordering {:?}",
            exp.name,
            report.runs.len(),
            started.elapsed().as_secs_f64(),
            report.ordering
        );
        let got = summary(&report);
        let path = golden_dir.join(format!("{}.json", exp.name));
        if bless {
            std::fs::create_dir_all(&golden_dir).unwrap();
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&path, text).unwrap();
            eprintln!("blessed {}", path.display());
            continue;
        }
        let want: Value = match std::fs::read_to_string(&path) {
            Ok(t) => serde_json::from_str(&t).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            Err(_) => {
                problems.push(format!(
                    "{}: no golden file {} (run with LOCUS_BLESS=1 and review it)",
                    file.display(),
                    path.display()
                ));
                continue;
            }
        };
        let mut diff = Vec::new();
        differences(&want, &got, &exp.name, &mut diff);
        if !diff.is_empty() {
            problems.push(format!(
                "{} differs from {}:\n    {}",
                file.display(),
                path.display(),
                diff.join("\n    ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "golden check failed (LOCUS_BLESS=1 regenerates after review):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn differences_name_the_changed_value() {
    let a = json!({"hit_ratio": {"shared": {"a": 0.5}}, "ordering": ["x", "y"]});
    let b = json!({"hit_ratio": {"shared": {"a": 0.6}}, "ordering": ["y", "x"]});
    let mut d = Vec::new();
    differences(&a, &b, "e", &mut d);
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(
        d[0].starts_with("e.hit_ratio.shared.a: golden 0.5, now 0.6"),
        "{d:?}"
    );
    let mut none = Vec::new();
    differences(&a, &a, "e", &mut none);
    assert!(none.is_empty());
}
