//! Accuracy regression tests: each model's MAE against exact LRU (or, for KRR, a textbook K-LRU
//! simulator) on small synthetic traces and a small shared trace. The `#[ignore]`d tests are the
//! larger checks (`cargo test --release -p locus-mrc -- --ignored`).
//!
//! Bounds are set a little above what was measured (the measured values are in the comments and
//! in the crate's report); a model change that makes a curve worse fails here.

mod common;

use common::*;
use locus_mrc::{
    Aet, Eaet, Footprint, Krr, KrrConfig, Metric, Mrc, Profiler, Shards, ShardsConfig, ShardsMode,
    Unit,
};

fn shards(rate: f64, seed: u64) -> Shards {
    Shards::new(ShardsConfig {
        mode: ShardsMode::FixedRate(rate),
        unit: Unit::Objects,
        metric: Metric::Requests,
        seed,
        adjust: true,
    })
    .unwrap()
}

fn mae(p: &mut dyn Profiler, trace: &[Acc], truth: &Mrc) -> f64 {
    feed(p, trace);
    let m = p.mrc(&truth.capacities()).unwrap();
    let e = m.error_vs(truth, &[]).unwrap();
    eprintln!(
        "  {:<32} MAE {:.4}  worst {:.4} at {}",
        p.name(),
        e.mae,
        e.max,
        e.max_at
    );
    e.mae
}

/// Mean MAE over three seeds (the sampled models' error depends on which keys fall in the sample).
fn mae3(mk: impl Fn(u64) -> Box<dyn Profiler>, trace: &[Acc], truth: &Mrc) -> f64 {
    (1..=3)
        .map(|s| mae(mk(s).as_mut(), trace, truth))
        .sum::<f64>()
        / 3.0
}

fn check_lru_models(label: &str, trace: &[Acc], rate: f64, bounds: [f64; 4]) {
    let ws = distinct(trace) as f64;
    let caps = test_caps(ws);
    let truth = exact_curve(trace, Unit::Objects, &caps);
    eprintln!("{label}: {} requests, {ws} keys, R = {rate}", trace.len());
    let s = mae3(|seed| Box::new(shards(rate, seed)), trace, &truth);
    let a = mae3(
        |seed| Box::new(Aet::new(rate, Metric::Requests, seed).unwrap()),
        trace,
        &truth,
    );
    let e = mae3(
        |seed| Box::new(Eaet::new(rate, Unit::Objects, Metric::Requests, seed).unwrap()),
        trace,
        &truth,
    );
    let f = mae3(
        |seed| Box::new(Footprint::new(rate, seed).unwrap()),
        trace,
        &truth,
    );
    eprintln!("{label}: mean MAE shards {s:.4} aet {a:.4} eaet {e:.4} footprint {f:.4}");
    assert!(s <= bounds[0], "{label}: SHARDS MAE {s}");
    assert!(a <= bounds[1], "{label}: AET MAE {a}");
    assert!(e <= bounds[2], "{label}: EAET MAE {e}");
    assert!(f <= bounds[3], "{label}: footprint MAE {f}");
}

#[test]
fn unsampled_models_on_zipf() {
    let trace = zipf(0.8, 10_000, 100_000, 7, |_| 1);
    check_lru_models("zipf0.8 R=1", &trace, 1.0, [1e-12, 0.006, 0.006, 0.001]);
}

#[test]
fn sampled_models_on_zipf() {
    let trace = zipf(0.8, 20_000, 200_000, 8, |_| 1);
    check_lru_models("zipf0.8 R=0.1", &trace, 0.1, [0.015, 0.01, 0.01, 0.015]);
}

#[test]
fn models_on_a_loop() {
    // A loop is every approximate model's worst case: one cliff at the loop length.
    let trace = looping(3_000, 60_000);
    check_lru_models("loop3000 R=1", &trace, 1.0, [1e-12, 1e-9, 1e-9, 1e-9]);
}

#[test]
fn models_on_phases() {
    let trace = phased(0.9, 10_000, 150_000, 30_000, 9);
    check_lru_models("phased R=0.1", &trace, 0.1, [0.01, 0.01, 0.01, 0.01]);
}

#[test]
fn eaet_bytes_against_exact_bytes() {
    let trace = zipf(0.8, 10_000, 150_000, 10, |k| 50 + (k % 1000) as u32 * 5);
    let mut e = locus_mrc::ExactLru::new(Unit::Bytes, Metric::Requests);
    feed(&mut e, &trace);
    let caps = test_caps(e.working_set());
    let truth = e.mrc(&caps).unwrap();
    let m = mae(
        &mut Eaet::new(1.0, Unit::Bytes, Metric::Requests, 1).unwrap(),
        &trace,
        &truth,
    );
    assert!(m < 0.01, "{m}");
    let s = mae3(
        |seed| {
            Box::new(
                Shards::new(ShardsConfig {
                    mode: ShardsMode::FixedRate(0.1),
                    unit: Unit::Bytes,
                    metric: Metric::Requests,
                    seed,
                    adjust: true,
                })
                .unwrap(),
            )
        },
        &trace,
        &truth,
    );
    // 10 k keys at R = 0.1 leave ~1,000 sampled keys: measured 0.020 (3 seeds).
    assert!(s < 0.03, "{s}");
}

fn krr_vs_sim(label: &str, trace: &[Acc], ks: &[u32], bound: f64) {
    let ws = distinct(trace) as f64;
    let caps: Vec<f64> = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7]
        .iter()
        .map(|f| (ws * f).round())
        .collect();
    for &k in ks {
        let sim: Vec<(f64, f64)> = caps
            .iter()
            .map(|&c| (c, klru_sim(trace, c as usize, k, 1)))
            .collect();
        let truth = Mrc::new(Unit::Objects, Metric::Requests, sim).unwrap();
        let m = mae(&mut Krr::new(KrrConfig::new(k)).unwrap(), trace, &truth);
        eprintln!("{label} K={k}: KRR (K^1.4) MAE {m:.4}");
        assert!(m <= bound, "{label} K={k}: {m}");
    }
}

#[test]
fn krr_matches_textbook_klru_on_zipf() {
    let trace = zipf(0.9, 10_000, 120_000, 11, |_| 1);
    krr_vs_sim("zipf0.9", &trace, &[1, 2, 5, 16], 0.005);
}

#[test]
fn krr_matches_textbook_klru_on_loop_plus_zipf() {
    let trace = loop_zipf(2_000, 0.8, 8_000, 120_000, 12);
    krr_vs_sim("loop+zipf", &trace, &[1, 5, 16], 0.012);
}

/// The shared CloudPhysics trace (113,872 requests), one decimal id per line. Its exact LRU miss
/// ratios are in `traces/stats.json`, computed by an independent script.
fn cloudphysics() -> Option<Vec<Acc>> {
    let path = locus_testdata::trace(
        "shared_trace_exact_matches_the_oracle_and_models_stay_close",
        "cloudPhysicsIO.txt",
    )?;
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(
        text.lines()
            .filter_map(|l| l.trim().parse::<u64>().ok())
            .map(|key| Acc {
                key,
                size: 1,
                op: locus_mrc::Op::Get,
            })
            .collect(),
    )
}

#[test]
fn shared_trace_exact_matches_the_oracle_and_models_stay_close() {
    let Some(trace) = cloudphysics() else { return };
    assert_eq!(trace.len(), 113_872);
    // stats.json: 0.1% (48 objs) 0.9030, 1% (489) 0.8380, 10% (4897) 0.8049.
    let caps = [48.0, 489.0, 4897.0];
    let m = exact_curve(&trace, Unit::Objects, &caps);
    for ((_, got), want) in m.points().iter().zip([0.9030, 0.8380, 0.8049]) {
        assert!((got - want).abs() < 0.00005, "{got} vs {want}");
    }
    let caps = test_caps(distinct(&trace) as f64);
    let truth = exact_curve(&trace, Unit::Objects, &caps);
    let a = mae(
        &mut Aet::new(1.0, Metric::Requests, 1).unwrap(),
        &trace,
        &truth,
    );
    let f = mae(&mut Footprint::new(1.0, 1).unwrap(), &trace, &truth);
    let s = mae3(|seed| Box::new(shards(0.1, seed)), &trace, &truth);
    assert!(
        a < 0.01 && f < 0.01 && s < 0.02,
        "aet {a} footprint {f} shards {s}"
    );
}

#[test]
#[ignore = "slow: 1 M keys, 10 M requests; run with --release -- --ignored"]
fn slow_sampled_models_at_one_percent_on_a_large_zipf() {
    let trace = zipf(0.8, 1_000_000, 10_000_000, 21, |_| 1);
    check_lru_models(
        "zipf0.8 1M keys R=0.01",
        &trace,
        0.01,
        [0.01, 0.01, 0.01, 0.01],
    );
}

#[test]
#[ignore = "slow: KRR at R = 0.01 vs K-LRU simulation, 1 M keys, 10 M requests"]
fn slow_krr_sampled_vs_simulation() {
    // With 1 M keys, R = 0.01 keeps ~10 k sampled keys (at 200 k keys one seed measured 0.024:
    // too few keys, the same sampling error SHARDS has).
    let trace = zipf(0.9, 1_000_000, 10_000_000, 22, |_| 1);
    let ws = distinct(&trace) as f64;
    let caps: Vec<f64> = [0.05, 0.1, 0.2, 0.5]
        .iter()
        .map(|f| (ws * f).round())
        .collect();
    for k in [1u32, 5] {
        let sim: Vec<(f64, f64)> = caps
            .iter()
            .map(|&c| (c, klru_sim(&trace, c as usize, k, 1)))
            .collect();
        let truth = Mrc::new(Unit::Objects, Metric::Requests, sim).unwrap();
        let m = mae3(
            |seed| {
                Box::new(
                    Krr::new(KrrConfig {
                        rate: 0.01,
                        seed,
                        ..KrrConfig::new(k)
                    })
                    .unwrap(),
                )
            },
            &trace,
            &truth,
        );
        eprintln!("KRR K={k} R=0.01: mean MAE {m:.4}");
        assert!(m <= 0.01, "K={k}: {m}");
    }
}

#[test]
fn fixed_size_shards_on_zipf() {
    let trace = zipf(0.8, 20_000, 200_000, 13, |_| 1);
    let caps = test_caps(distinct(&trace) as f64);
    let truth = exact_curve(&trace, Unit::Objects, &caps);
    let m = mae3(
        |seed| {
            Box::new(
                Shards::new(ShardsConfig {
                    mode: ShardsMode::FixedSize(2_000),
                    unit: Unit::Objects,
                    metric: Metric::Requests,
                    seed,
                    adjust: true,
                })
                .unwrap(),
            )
        },
        &trace,
        &truth,
    );
    eprintln!("fixed-size SHARDS s_max=2000: mean MAE {m:.4}");
    assert!(m <= 0.015, "{m}");
}

/// AET with a budget of pending samples (mPart's profiler): on 20k keys a budget of 2,000 takes
/// the rate from 1 to 1/16 (measured MAE 0.0056 over three seeds, within the 0.01 bound of
/// fixed-rate sampling at 10% above); on 50 keys the rate stays 1 and the curve is unsampled
/// AET's.
#[test]
fn budgeted_aet_on_zipf_and_on_fifty_keys() {
    let trace = zipf(0.8, 20_000, 200_000, 13, |_| 1);
    let caps = test_caps(distinct(&trace) as f64);
    let truth = exact_curve(&trace, Unit::Objects, &caps);
    let m = mae3(
        |seed| Box::new(Aet::with_budget(1.0, 2_000, Metric::Requests, seed).unwrap()),
        &trace,
        &truth,
    );
    let mut a = Aet::with_budget(1.0, 2_000, Metric::Requests, 1).unwrap();
    feed(&mut a, &trace);
    eprintln!(
        "budgeted AET (2000 pending): mean MAE {m:.4}, rate {} with {} pending",
        a.rate(),
        a.pending()
    );
    assert!(m <= 0.01, "{m}");
    assert!(a.pending() <= 2_000 && a.rate() < 0.2, "{}", a.rate());

    let small = zipf(0.8, 50, 20_000, 14, |_| 1);
    let caps = [1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 40.0];
    let truth = exact_curve(&small, Unit::Objects, &caps);
    let mut a = Aet::with_budget(1.0, 2_000, Metric::Requests, 1).unwrap();
    let e = mae(&mut a, &small, &truth);
    let whole = mae(
        &mut Aet::new(1.0, Metric::Requests, 1).unwrap(),
        &small,
        &truth,
    );
    assert_eq!(a.rate(), 1.0);
    assert!(a.pending() <= 50);
    // AET's own error on 50 keys (0.0104), not the sampling's.
    assert!((e - whole).abs() < 1e-12 && e <= 0.015, "{e} vs {whole}");
}

/// Zipf with bounded per-key sizes, a share of SETs that change the size and a share of DELs.
fn mixed_ops(seed: u64) -> Vec<Acc> {
    let mut rng = locus_common::Rng::new(seed);
    let mut size: std::collections::HashMap<u64, u32> = Default::default();
    zipf(0.8, 10_000, 150_000, seed, |_| 1)
        .into_iter()
        .map(|mut a| {
            let s = size.entry(a.key).or_insert(100 + (a.key % 900) as u32);
            match rng.below(100) {
                0..=9 => {
                    *s = 100 + rng.below(900) as u32;
                    a.op = locus_mrc::Op::Set;
                }
                10..=12 => a.op = locus_mrc::Op::Del,
                _ => {}
            }
            a.size = *s;
            a
        })
        .collect()
}

/// The exact byte-LRU stack of `trace` (holes and all), the capacities tested, and the true
/// curve at them from a byte-LRU simulator (SETs that change sizes, DELs).
fn byte_lru_truth(trace: &[Acc]) -> (locus_mrc::ExactLru, Vec<f64>, Mrc) {
    let mut ex = locus_mrc::ExactLru::new(Unit::Bytes, Metric::Requests);
    feed(&mut ex, trace);
    let caps = test_caps(ex.working_set());
    let sim: Vec<(f64, f64)> = caps
        .iter()
        .map(|&c| (c, byte_lru_sim(trace, c as u64)))
        .collect();
    (
        ex,
        caps,
        Mrc::new(Unit::Bytes, Metric::Requests, sim).unwrap(),
    )
}

#[test]
fn eaet_eq5_with_sets_and_deletes_against_a_byte_lru_simulator() {
    let trace = mixed_ops(14);
    let (ex, caps, truth) = byte_lru_truth(&trace);
    let e = mae(
        &mut Eaet::new(1.0, Unit::Bytes, Metric::Requests, 1).unwrap(),
        &trace,
        &truth,
    );
    let x = ex.mrc(&caps).unwrap().error_vs(&truth, &[]).unwrap().mae;
    eprintln!("SET/DEL mix: EAET MAE {e:.4}, exact byte stack (holes) MAE {x:.4}");
    assert!(e <= 0.01, "{e}");
    assert!(x <= 0.001, "{x}");
}

/// EAET with a budget of pending samples (pRedis's and kRedis-EAET's profiler with
/// `sample_keys`): on the SET/DEL mix of 10k keys a budget of 1,000 brings the rate below 1/4 and
/// keeps the byte curve within the 0.01 bound unsampled EAET meets above; on 50 keys the rate
/// stays 1 and the curve is unsampled EAET's, exactly.
#[test]
fn budgeted_eaet_on_the_set_del_mix_and_on_fifty_keys() {
    let trace = mixed_ops(14);
    let (_, _, truth) = byte_lru_truth(&trace);
    let m = mae3(
        |seed| {
            Box::new(Eaet::with_budget(1.0, 1_000, Unit::Bytes, Metric::Requests, seed).unwrap())
        },
        &trace,
        &truth,
    );
    let mut e = Eaet::with_budget(1.0, 1_000, Unit::Bytes, Metric::Requests, 1).unwrap();
    feed(&mut e, &trace);
    eprintln!(
        "budgeted EAET (1000 pending): mean MAE {m:.4}, rate {} with {} pending",
        e.rate(),
        e.pending()
    );
    assert!(m <= 0.01, "{m}");
    assert!(e.pending() <= 1_000 && e.rate() < 0.25, "{}", e.rate());
    // A floor (predis's: the paper's 1%) stops the halving: the rate stays at or above it and
    // the pending samples outgrow the budget instead.
    let mut f = Eaet::with_budget(1.0, 1_000, Unit::Bytes, Metric::Requests, 1).unwrap();
    f.set_min_rate(0.3);
    feed(&mut f, &trace);
    assert_eq!(f.rate(), 0.5, "halved once, not to 0.25");
    assert!(f.pending() > 1_000, "{}", f.pending());

    let small = zipf(0.8, 50, 20_000, 14, |k| 100 + (k % 400) as u32);
    let mut ex = locus_mrc::ExactLru::new(Unit::Bytes, Metric::Requests);
    feed(&mut ex, &small);
    let caps = test_caps(ex.working_set());
    let truth = ex.mrc(&caps).unwrap();
    let mut b = Eaet::with_budget(1.0, 1_000, Unit::Bytes, Metric::Requests, 1).unwrap();
    let got = mae(&mut b, &small, &truth);
    let whole = mae(
        &mut Eaet::new(1.0, Unit::Bytes, Metric::Requests, 1).unwrap(),
        &small,
        &truth,
    );
    assert_eq!(b.rate(), 1.0);
    assert!(b.pending() <= 50);
    assert!((got - whole).abs() < 1e-12, "{got} vs {whole}");
}

#[test]
fn var_krr_matches_a_byte_klru_simulator() {
    let trace = zipf(0.9, 8_000, 100_000, 15, |k| 50 + (k % 950) as u32);
    let mut ex = locus_mrc::ExactLru::new(Unit::Bytes, Metric::Requests);
    feed(&mut ex, &trace);
    let ws = ex.working_set();
    let caps: Vec<f64> = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7]
        .iter()
        .map(|f| (ws * f).round())
        .collect();
    for k in [1u32, 5] {
        let sim: Vec<(f64, f64)> = caps
            .iter()
            .map(|&c| (c, klru_bytes_sim(&trace, c as u64, k, 1)))
            .collect();
        let truth = Mrc::new(Unit::Bytes, Metric::Requests, sim).unwrap();
        let m = mae(
            &mut Krr::new(KrrConfig {
                unit: Unit::Bytes,
                ..KrrConfig::new(k)
            })
            .unwrap(),
            &trace,
            &truth,
        );
        eprintln!("varKRR K={k}: MAE {m:.4}");
        assert!(m <= 0.005, "K={k}: {m}");
    }
}
