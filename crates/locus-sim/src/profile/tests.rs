//! The pipeline's accuracy: `mini` without sampling is the engine's own K-LRU, and KRR and
//! sampled `mini` track it within BENCHMARKS.md's accuracy goal.

use std::path::{Path, PathBuf};

use locus_engine::minisim::{KlruConfig, simulate_klru};

use super::*;

/// A temporary directory removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("locus-profile-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(trace: &Path, spec: &ProfileSpec) -> Vec<Curve> {
    profile(trace, &ReadOptions::default(), spec, &mut |_| {})
        .unwrap()
        .curves
}

fn spec(models: &[ModelKind], edit: impl FnOnce(&mut ProfileSpec)) -> ProfileSpec {
    let mut s = ProfileSpec::new(models.to_vec());
    edit(&mut s);
    s
}

#[test]
fn mini_with_exact_lru_matches_exact_and_runs_k_lru() {
    let dir = Dir::new("mini");
    let trace = dir.0.join("t.txt");
    std::fs::write(&trace, "1\n2\n3\n2\n1\n4\n1\n".repeat(3)).unwrap();
    let curves = run(
        &trace,
        &spec(&[ModelKind::Exact, ModelKind::Mini], |s| {
            s.mini.policy = Policy::AllkeysExactLru;
            s.points = 4;
            s.mini.sizes = 4;
        }),
    );
    let exact: Vec<_> = curves.iter().filter(|c| c.model == "exact").collect();
    let mini: Vec<_> = curves.iter().filter(|c| c.model == "mini").collect();
    assert_eq!((exact.len(), mini.len()), (1, 1));
    assert_eq!(exact[0].points.len(), 4);
    assert_eq!(
        exact[0].points, mini[0].points,
        "R = 1 exact-LRU mini equals exact"
    );
    // K-LRU (Redis pool and textbook) over fixed capacities, several K: one curve per K plus
    // the merged minimum.
    for evpool in [16, 0] {
        let curves = run(
            &trace,
            &spec(&[ModelKind::Mini], |s| {
                s.ks = vec![1, 5];
                s.mini.evpool = evpool;
                s.max_capacity = Some(3.0);
                s.points = 3;
            }),
        );
        let names: Vec<&str> = curves.iter().map(|c| c.model.as_str()).collect();
        assert_eq!(names, ["mini", "mini", "mini-min"]);
        assert!(curves.iter().all(|c| c.points.len() == 3));
        assert_eq!(curves[2].argmin_k.as_ref().map(Vec::len), Some(3));
    }
}

/// `mini` at rate 1 (no sampling) is the engine's full-size K-LRU: it must equal
/// `minisim::simulate_klru` point for point, bit for bit, for both eviction variants, with
/// capacities given or measured by the first pass (as bench/accuracy.sh computes its ground
/// truth).
#[test]
fn mini_at_rate_1_equals_simulate_klru() {
    let dir = Dir::new("klru");
    let trace = dir.0.join("t.txt");
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
    for evpool in [0u32, 16] {
        for max in [Some(900.0), None] {
            let curves = run(
                &trace,
                &spec(&[ModelKind::Mini], |s| {
                    s.base.rate = Some(1.0);
                    s.mini.evpool = evpool;
                    s.points = 12;
                    s.mini.sizes = 12;
                    s.max_capacity = max;
                }),
            );
            let pts = &curves[0].points;
            let caps: Vec<f64> = pts.iter().map(|p| p.0).collect();
            let top = max.unwrap_or(unique as f64);
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
            assert_eq!(
                pts.as_slice(),
                truth.points(),
                "evpool {evpool}, max {max:?}"
            );
            // Not a flat curve: the comparison means something.
            assert!(pts[0].1 > pts[11].1 + 0.1, "{pts:?}");
        }
    }
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

/// bench/accuracy.sh's K-LRU pipeline on a trace small enough for the suite: truth = `mini` at
/// rate 1 (textbook and Redis-pool K-LRU at `points` sizes); models = KRR at the exponent of
/// each variant and miniature simulation, sampled at `rate`, on the same capacities. Returns
/// (KRR MAE, mini MAE) for evpool 0 and 16.
fn klru_pipeline(trace: &Path, rate: f64, points: usize) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for (evpool, exponent) in [(0, 1.4), (16, 1.9)] {
        let common = |s: &mut ProfileSpec| {
            s.points = points;
            s.mini.sizes = points;
            s.mini.evpool = evpool;
        };
        let truth = run(
            trace,
            &spec(&[ModelKind::Mini], |s| {
                common(s);
                s.base.rate = Some(1.0);
            }),
        )
        .remove(0)
        .points;
        let cap = truth.last().unwrap().0;
        let sampled = |model| {
            run(
                trace,
                &spec(&[model], |s| {
                    common(s);
                    s.base.rate = Some(rate);
                    s.base.exponent = exponent;
                    s.max_capacity = Some(cap);
                }),
            )
            .remove(0)
            .points
        };
        let (krr, mini) = (sampled(ModelKind::Krr), sampled(ModelKind::Mini));
        let (k, m) = (mae_same_caps(&truth, &krr), mae_same_caps(&truth, &mini));
        eprintln!("evpool {evpool}: KRR x={exponent} MAE {k:.4}, mini MAE {m:.4} (R = {rate})");
        out.push((k, m));
    }
    out
}

#[test]
fn krr_and_mini_track_the_engine_klru_small() {
    let dir = Dir::new("acc");
    let trace = dir.0.join("zipf.txt");
    // 8,000 keys at R = 0.1: ~800 sampled keys, the sample size of R = 0.01 on 80 k keys.
    zipf_trace(&trace, 0.9, 8_000, 60_000, 7);
    let got = klru_pipeline(&trace, 0.1, 10);
    // Measured (deterministic: fixed trace and seed 0): evpool 0 KRR 0.0074, mini 0.0076;
    // evpool 16 KRR 0.0082, mini 0.0067. The bound is the table's goal.
    for ((k, m), ev) in got.into_iter().zip([0, 16]) {
        assert!(k <= 0.01, "evpool {ev}: KRR MAE {k}");
        assert!(m <= 0.01, "evpool {ev}: mini MAE {m}");
    }
}

/// The goal of BENCHMARKS.md's accuracy table, MAE <= 0.01 at R = 0.01, for KRR (at each K-LRU
/// variant's exponent) and mini against the engine's K-LRU, on a trace with enough keys for
/// R = 0.01 (200 k keys: ~2,000 sampled).
#[test]
#[ignore = "slow: 2 M requests simulated at 20 sizes twice; run with --release -- --ignored"]
fn slow_krr_and_mini_at_one_percent_vs_engine_klru() {
    let dir = Dir::new("acc1");
    let trace = dir.0.join("zipf.txt");
    zipf_trace(&trace, 0.9, 200_000, 2_000_000, 11);
    let got = klru_pipeline(&trace, 0.01, 20);
    // Measured (release, 554 s on the loaded machine): evpool 0 KRR x=1.4 0.0068, mini 0.0068;
    // evpool 16 KRR x=1.9 0.0064, mini 0.0063.
    for ((k, m), ev) in got.into_iter().zip([0, 16]) {
        assert!(k <= 0.01, "evpool {ev}: KRR MAE {k}");
        assert!(m <= 0.01, "evpool {ev}: mini MAE {m}");
    }
}

#[test]
fn bad_specs_are_clear_errors() {
    let bad = |s: ProfileSpec| s.validate().unwrap_err().to_string();
    assert!(bad(spec(&[ModelKind::Mini], |s| s.ks = vec![0])).contains("samples"));
    assert!(bad(spec(&[ModelKind::Exact], |s| s.points = 0)).contains("--points"));
    assert!(bad(spec(&[ModelKind::Exact], |s| s.max_capacity = Some(-1.0))).contains("positive"));
    assert!(
        bad(spec(&[ModelKind::Mini], |s| s.base.fixed_size = Some(10))).contains("--fixed-size")
    );
    let e = profile(
        Path::new("-"),
        &ReadOptions::default(),
        &ProfileSpec::new(vec![ModelKind::Mini]),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("--max-capacity"), "{e}");
}
