//! Oracle tests: `stats` reproduces `shared/traces/stats.json` for every shared trace
//! (request count, unique keys, exact LRU miss ratios by objects and by bytes, to 4 decimals).
//!
//! The traces live beside the repository (`../shared/traces` from the workspace root). Small
//! traces run in the normal suite; the large ones (ARC P2/P3/P6/OLTP, cache2k orm-night) in
//! `oracle_large_traces_slow`, which is `#[ignore]`d and run by CI with `--release -- --ignored`.

use std::path::PathBuf;

use locus_trace::{CsvOptions, Format, ReadOptions, open, stats};
use serde_json::Value;

const LARGE: [&str; 5] = [
    "arc_P2.lis.zst",
    "arc_P3.lis.zst",
    "arc_P6.lis.zst",
    "arc_OLTP.lis.zst",
    "cache2k_orm-night.trace.xz",
];

fn traces_dir(test: &str) -> Option<PathBuf> {
    locus_testdata::trace(test, "stats.json").map(|_| locus_testdata::traces_dir())
}

/// The reader options for a trace named in stats.json.
fn options(file: &str, format: &str) -> ReadOptions {
    let mut o = ReadOptions::with_format(format.parse::<Format>().expect("known format"));
    if format == "csv" {
        // libCacheSim's columns for cloudPhysicsIO.csv (see the traces README).
        o.csv =
            "time-col=2,obj-id-col=5,obj-size-col=4,op-col=3,has-header=true,obj-id-is-num=true"
                .parse::<CsvOptions>()
                .unwrap();
    }
    let _ = file;
    o
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 0.00005 + 1e-9
}

fn check(dir: &std::path::Path, entry: &Value) -> Vec<String> {
    let file = entry["file"].as_str().unwrap();
    let format = entry["format"].as_str().unwrap();
    let path = dir.join(file);
    let opts = options(file, format);
    let s = match stats::compute(&mut || open(&path, &opts)) {
        Ok(s) => s,
        Err(e) => return vec![format!("{file}: {e}")],
    };
    let mut bad = Vec::new();
    for (what, got, want) in [
        ("requests", s.requests, entry["requests"].as_u64().unwrap()),
        (
            "unique_keys",
            s.unique_keys,
            entry["unique_keys"].as_u64().unwrap(),
        ),
    ] {
        if got != want {
            bad.push(format!("{file}: {what} {got} != {want}"));
        }
    }
    for (what, got) in [
        ("one_hit_wonder_ratio", s.one_hit_wonder_ratio),
        ("top1pct_key_request_share", s.top1pct_key_request_share),
        ("compulsory_miss_ratio", s.compulsory_miss_ratio),
    ] {
        let want = entry[what].as_f64().unwrap();
        if !close(got, want) {
            bad.push(format!("{file}: {what} {got:.4} != {want}"));
        }
    }
    let repaired = !s.warnings.is_empty();
    let compare = |bad: &mut Vec<String>, unit: &str, want: &Value, got: &[stats::MissPoint]| {
        let want: Vec<(String, f64)> = want
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
            .collect();
        assert_eq!(want.len(), 3);
        for ((label, w), g) in want.iter().zip(got) {
            // Labels look like "10%(4897 objs)" / "1%(3042135 B)": check the capacity too.
            let cap: u64 = label
                .split('(')
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap();
            // A reader that repaired records (bigcache objectSize -1 read as 0) may shift the
            // byte footprint, hence the byte capacity, by a few bytes; nothing else may differ.
            let cap_ok = cap == g.capacity
                || (unit == "bytes" && repaired && cap.abs_diff(g.capacity) * 1_000_000 <= cap);
            if !cap_ok || !close(g.miss_ratio, *w) {
                bad.push(format!(
                    "{file}: LRU {unit} {label}: got capacity {} miss ratio {:.4}, want {w}",
                    g.capacity, g.miss_ratio
                ));
            }
        }
    };
    compare(
        &mut bad,
        "objects",
        &entry["lru_miss_ratio_unit_size"],
        &s.lru_miss_ratio_objects,
    );
    match (entry.get("lru_miss_ratio_bytes"), &s.lru_miss_ratio_bytes) {
        (Some(want), Some(got)) => compare(&mut bad, "bytes", want, got),
        (None, None) => {}
        (w, g) => bad.push(format!(
            "{file}: byte ratios present in oracle: {}, computed: {}",
            w.is_some(),
            g.is_some()
        )),
    }
    eprintln!(
        "{file}: {} requests, {} keys, objects {:?}, bytes {:?}",
        s.requests,
        s.unique_keys,
        s.lru_miss_ratio_objects
            .iter()
            .map(|p| p.miss_ratio)
            .collect::<Vec<_>>(),
        s.lru_miss_ratio_bytes
            .as_ref()
            .map(|b| b.iter().map(|p| p.miss_ratio).collect::<Vec<_>>())
    );
    bad
}

fn run(test: &str, large: bool) {
    let Some(dir) = traces_dir(test) else { return };
    let oracle: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    let mut bad = Vec::new();
    let mut checked = 0;
    for entry in oracle.as_array().unwrap() {
        let file = entry["file"].as_str().unwrap();
        if LARGE.contains(&file) != large {
            continue;
        }
        checked += 1;
        bad.extend(check(&dir, entry));
    }
    assert!(checked > 0);
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn oracle_small_traces() {
    run("oracle_small_traces", false);
}

#[test]
#[ignore = "slow: 35 M requests; run with cargo test --release -- --ignored"]
fn oracle_large_traces_slow() {
    run("oracle_large_traces_slow", true);
}
