//! Miniature simulation and the K-LRU ground truth against oracles (docs/models.md §§6, 7, 10).
//!
//! * R = 1 with `allkeys-exact-lru` equals exact LRU stack distances (objects and bytes, with
//!   SET and DEL), point for point.
//! * Sampled mini K-LRU stays within an MAE bound of the full-size engine simulation.
//! * KRR (locus-mrc) with `k = K^e` against the engine's textbook K-LRU (evpool 0) and Redis-pool
//!   K-LRU (evpool 16): the bounds are pinned just above the measured MAE.
//!
//! Bigger runs are `#[ignore]` (`cargo test --release -p locus-engine --test minisim -- --ignored
//! --nocapture` prints the tables).

use locus_common::Rng;
use locus_engine::Policy;
use locus_engine::minisim::{
    KlruConfig, MiniSim, MiniSimConfig, MiniSimError, simulate, simulate_klru,
};
use locus_mrc::{ExactLru, Krr, KrrConfig, Metric, Mrc, Op, Profiler, Unit};

type Trace = Vec<(u64, u32, Op)>;

/// Zipf(alpha) over `n` keys, GET only, key ids scrambled so popularity is not in id order.
fn zipf(n: u64, alpha: f64, len: usize, seed: u64) -> Trace {
    let mut cdf = Vec::with_capacity(n as usize);
    let mut acc = 0.0;
    for i in 1..=n {
        acc += 1.0 / (i as f64).powf(alpha);
        cdf.push(acc);
    }
    let mut rng = Rng::new(seed);
    (0..len)
        .map(|_| {
            let u = rng.next_f64() * acc;
            let r = cdf.partition_point(|&c| c < u) as u64;
            let key = r.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5bd1_e995;
            (key, 100, Op::Get)
        })
        .collect()
}

/// A 50/50 mix of a loop over `loop_n` keys and Zipf(0.8) over `zipf_n` other keys (docs/models.md
/// 6.11's hardest trace for KRR).
fn loop_mix(loop_n: u64, zipf_n: u64, len: usize, seed: u64) -> Trace {
    let z = zipf(zipf_n, 0.8, len, seed ^ 1);
    let mut rng = Rng::new(seed);
    let mut next = 0u64;
    z.into_iter()
        .map(|(k, s, op)| {
            if rng.next_f64() < 0.5 {
                next = (next + 1) % loop_n;
                (1 << 60 | next, s, op)
            } else {
                (k, s, op)
            }
        })
        .collect()
}

/// Uniform keys with GET/SET (and DEL if `del`), sizes in 8..2000: random per access, or fixed
/// per key when `fixed_sizes`.
fn mixed_ops(n: u64, len: usize, seed: u64, del: bool, fixed_sizes: bool) -> Trace {
    let mut rng = Rng::new(seed);
    (0..len)
        .map(|_| {
            let key = rng.below(n);
            let size = if fixed_sizes {
                8 + (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32 % 1993
            } else {
                8 + rng.below(1993) as u32
            };
            let op = match rng.below(100) {
                0..80 => Op::Get,
                80..95 => Op::Set,
                _ if del => Op::Del,
                _ => Op::Get,
            };
            (key, size, op)
        })
        .collect()
}

fn feed(p: &mut dyn Profiler, trace: &Trace) {
    for &(k, s, op) in trace {
        p.access(k, s, op);
    }
}

fn mae(a: &Mrc, b: &Mrc, caps: &[f64]) -> (f64, f64) {
    let e = a.error_vs(b, caps).expect("same unit and metric");
    (e.mae, e.max)
}

fn distinct(trace: &Trace) -> usize {
    let mut keys: Vec<u64> = trace.iter().map(|t| t.0).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

/// `n` capacities evenly spread over 5%..=70% of `ws`.
fn spread(ws: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (ws * (0.05 + 0.65 * i as f64 / (n - 1) as f64)).round())
        .collect()
}

#[test]
fn r1_exact_lru_equals_exact_stack_distances_objects() {
    let trace = mixed_ops(400, 20_000, 11, true, false);
    let caps: Vec<f64> = vec![1.0, 2.0, 5.0, 10.0, 50.0, 100.0, 200.0, 300.0, 399.0, 450.0];
    let mut exact = ExactLru::new(Unit::Objects, Metric::Requests);
    feed(&mut exact, &trace);
    let cfg = MiniSimConfig {
        policy: Policy::AllkeysExactLru,
        ..MiniSimConfig::new(1.0, caps.clone())
    };
    let mut mini = MiniSim::new(cfg).unwrap();
    feed(&mut mini, &trace);
    let (a, b) = (exact.mrc(&caps).unwrap(), mini.mrc(&caps).unwrap());
    for (p, q) in a.points().iter().zip(b.points()) {
        assert!((p.1 - q.1).abs() < 1e-12, "exact {p:?} vs mini {q:?}");
    }
    assert_eq!(mini.accesses(), trace.len() as u64);
    assert!((mini.working_set() - exact.working_set()).abs() < 1e-9);
}

#[test]
fn r1_exact_lru_equals_exact_stack_distances_bytes() {
    // Byte stack distances are exact for an LRU cache when sizes do not change and nothing is
    // deleted (ExactLru models a DEL as a hole of the old size, exact only in objects).
    let trace = mixed_ops(300, 20_000, 12, false, true);
    let caps: Vec<f64> = vec![1_000.0, 5_000.0, 20_000.0, 60_000.0, 150_000.0, 300_000.0];
    for metric in [Metric::Requests, Metric::Bytes] {
        let mut exact = ExactLru::new(Unit::Bytes, metric);
        feed(&mut exact, &trace);
        let cfg = MiniSimConfig {
            policy: Policy::AllkeysExactLru,
            unit: Unit::Bytes,
            metric,
            ..MiniSimConfig::new(1.0, caps.clone())
        };
        let mut mini = MiniSim::new(cfg).unwrap();
        feed(&mut mini, &trace);
        let (a, b) = (exact.mrc(&caps).unwrap(), mini.mrc(&caps).unwrap());
        // ExactLru keeps byte distances in log buckets with 1/4096 relative precision, so a
        // distance within ~0.03% of a capacity may land on the other side: allow 1e-3.
        let mut worst = 0.0f64;
        for (p, q) in a.points().iter().zip(b.points()) {
            worst = worst.max((p.1 - q.1).abs());
            assert!(
                (p.1 - q.1).abs() < 1e-3,
                "{metric:?}: exact {p:?} vs mini {q:?}"
            );
        }
        eprintln!("bytes/{metric:?}: worst |exact - mini| = {worst:.2e}");
        assert_eq!(mini.too_large(), 0);
    }
}

#[test]
fn bad_settings_are_typed_errors() {
    assert!(matches!(
        MiniSim::new(MiniSimConfig::new(0.0, vec![10.0])),
        Err(MiniSimError::Model(_))
    ));
    assert!(matches!(
        MiniSim::new(MiniSimConfig::new(0.1, vec![])),
        Err(MiniSimError::NoCapacities)
    ));
    assert!(matches!(
        MiniSim::new(MiniSimConfig::new(0.1, vec![10.0, 5.0])),
        Err(MiniSimError::Model(_))
    ));
    assert!(matches!(
        MiniSim::new(MiniSimConfig::new(0.1, vec![f64::NAN])),
        Err(MiniSimError::Model(_))
    ));
    let k0 = MiniSimConfig {
        samples: 0,
        ..MiniSimConfig::new(0.5, vec![100.0])
    };
    assert!(matches!(MiniSim::new(k0), Err(MiniSimError::Engine { .. })));
    let mut ok = MiniSim::new(MiniSimConfig::new(0.5, vec![100.0])).unwrap();
    assert!(ok.mrc(&[3.0, 2.0]).is_err());
    assert!(ok.decay(1.5).is_err());
    // Objects larger than a mini page always miss and are counted, never panic.
    let big = MiniSimConfig {
        unit: Unit::Bytes,
        ..MiniSimConfig::new(1.0, vec![1e6])
    };
    let mut big = MiniSim::new(big).unwrap();
    for _ in 0..3 {
        big.access(1, 1 << 20, Op::Get);
    }
    assert_eq!(big.too_large(), 3);
    big.access(2, u32::MAX, Op::Set);
    big.access(2, u32::MAX, Op::Get);
    assert_eq!(big.too_large(), 5);
    assert_eq!(big.mrc(&[1e6]).unwrap().points()[0].1, 1.0);
    // noeviction cannot fill beyond its capacity: counted as failures, no panic.
    let noev = MiniSimConfig {
        policy: Policy::NoEviction,
        ..MiniSimConfig::new(1.0, vec![10.0])
    };
    let mut noev = MiniSim::new(noev).unwrap();
    for k in 0..100 {
        noev.access(k, 8, Op::Get);
    }
    assert_eq!(noev.fill_failures(), 90);
    ok.access(7, 8, Op::Get);
    ok.decay(0.0).unwrap();
}

#[test]
fn interpolates_between_simulated_capacities_and_decays() {
    let trace = zipf(2_000, 0.9, 30_000, 5);
    let caps = vec![100.0, 400.0, 1_600.0];
    let mut mini = MiniSim::new(MiniSimConfig::new(1.0, caps.clone())).unwrap();
    feed(&mut mini, &trace);
    let sim = mini.simulated_mrc().unwrap();
    let p = sim.points().to_vec();
    assert!(p[0].1 > p[1].1 && p[1].1 > p[2].1, "{p:?}");
    let q = mini.mrc(&[0.0, 50.0, 250.0, 1_600.0, 5_000.0]).unwrap();
    let q = q.points();
    assert_eq!(q[0].1, 1.0);
    assert!((q[1].1 - (1.0 + p[0].1) / 2.0).abs() < 1e-12);
    assert!((q[2].1 - (p[0].1 + p[1].1) / 2.0).abs() < 1e-12);
    assert_eq!(q[3].1, p[2].1);
    assert_eq!(q[4].1, p[2].1);
    // Halving the history halves misses and N alike: the curve is unchanged.
    mini.decay(0.5).unwrap();
    assert_eq!(mini.simulated_mrc().unwrap().points(), sim.points());
    assert!(
        mini.name()
            .starts_with("mini(R=1,allkeys-lru,K=5,evpool=16")
    );
}

/// Mini K-LRU at rate `r` against the full-size engine simulation; returns (MAE, worst).
fn mini_vs_full(trace: &Trace, r: f64, caps: &[f64], evpool: u32, seeds: &[u64]) -> (f64, f64) {
    let truth = simulate_klru(trace.iter().copied(), &KlruConfig::new(5, evpool), caps).unwrap();
    let (mut sum, mut worst) = (0.0, 0.0f64);
    for &seed in seeds {
        let start = std::time::Instant::now();
        let cfg = MiniSimConfig {
            evpool_size: evpool,
            seed,
            ..MiniSimConfig::new(r, caps.to_vec())
        };
        let mut mini = MiniSim::new(cfg).unwrap();
        feed(&mut mini, trace);
        let (m, w) = mae(&mini.mrc(caps).unwrap(), &truth, caps);
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "mini R={r} evpool={evpool} seed={seed}: MAE {m:.4} worst {w:.4} ({:.1} M req/s, {} sizes)",
            trace.len() as f64 / secs / 1e6,
            caps.len()
        );
        sum += m;
        worst = worst.max(w);
    }
    (sum / seeds.len() as f64, worst)
}

#[test]
fn mini_r01_tracks_full_klru_small() {
    // 20 k keys, capacities 2 k .. 14 k: scaled caches of 200 .. 1,400 objects.
    let trace = zipf(20_000, 0.8, 60_000, 21);
    let caps = vec![2_000.0, 5_000.0, 9_000.0, 14_000.0];
    let (m, w) = mini_vs_full(&trace, 0.1, &caps, 16, &[1]);
    // Measured (seeded, deterministic): MAE 0.0095, worst 0.0158.
    assert!(m < 0.012 && w < 0.02, "MAE {m} worst {w}");
}

/// The engine's K-LRU at `caps`, one curve per K.
fn truths(trace: &Trace, ks: &[u32], evpool: u32, caps: &[f64]) -> Vec<(u32, Mrc)> {
    ks.iter()
        .map(|&k| {
            let m = simulate_klru(trace.iter().copied(), &KlruConfig::new(k, evpool), caps);
            (k, m.unwrap())
        })
        .collect()
}

/// KRR with `k = K^exponent` against the engine's K-LRU; returns (MAE, worst) over the Ks.
fn krr_vs_engine(trace: &Trace, truths: &[(u32, Mrc)], exponent: f64, caps: &[f64]) -> (f64, f64) {
    let (mut sum, mut worst, mut n) = (0.0, 0.0f64, 0);
    for (k, truth) in truths {
        let k = *k;
        let mut krr = Krr::new(KrrConfig {
            exponent,
            ..KrrConfig::new(k)
        })
        .unwrap();
        feed(&mut krr, trace);
        let (m, w) = mae(&krr.mrc(caps).unwrap(), truth, caps);
        sum += m;
        worst = worst.max(w);
        n += 1;
    }
    (sum / n as f64, worst)
}

#[test]
fn krr_matches_engine_klru_small() {
    let zipf_t = zipf(2_000, 0.9, 40_000, 31);
    let loop_t = loop_mix(400, 1_600, 40_000, 32);
    for (name, trace) in [("zipf", &zipf_t), ("loop", &loop_t)] {
        let caps = spread(distinct(trace) as f64, 6);
        let (tm, tw) = krr_vs_engine(trace, &truths(trace, &[5], 0, &caps), 1.4, &caps);
        let (pm, pw) = krr_vs_engine(trace, &truths(trace, &[5], 16, &caps), 1.9, &caps);
        eprintln!(
            "{name}: textbook K^1.4 MAE {tm:.4} worst {tw:.4}; pool K^1.9 MAE {pm:.4} worst {pw:.4}"
        );
        // Measured (seeded, deterministic): zipf 0.0007/0.0015 and 0.0011/0.0026; loop
        // 0.0043/0.0123 and 0.0087/0.0455 (MAE/worst, textbook and pool).
        let (tb, pb) = if name == "zipf" {
            ((0.0015, 0.004), (0.002, 0.005))
        } else {
            ((0.006, 0.02), (0.012, 0.06))
        };
        assert!(tm < tb.0 && tw < tb.1, "{name} textbook {tm} {tw}");
        assert!(pm < pb.0 && pw < pb.1, "{name} pool {pm} {pw}");
    }
}

#[test]
#[ignore = "large: run with --release -- --ignored"]
fn mini_vs_full_klru_large() {
    // 200 k keys, 2 M requests, 20 capacities from 10 k to 140 k objects (≥ 100 objects per mini
    // cache at R = 0.01).
    let trace = zipf(200_000, 0.8, 2_000_000, 41);
    let caps = spread(200_000.0, 20);
    for evpool in [0, 16] {
        for r in [0.1, 0.01] {
            let (m, w) = mini_vs_full(&trace, r, &caps, evpool, &[1, 2, 3]);
            eprintln!("LARGE mini R={r} evpool={evpool}: mean MAE {m:.4} worst {w:.4}");
            // Measured (3 hash seeds): R = 0.1 mean MAE 0.0036, worst 0.0091 (evpool 0) and
            // 0.0036/0.0098 (16); R = 0.01 0.0095/0.0468 and 0.0093/0.0498.
            let bound = if r >= 0.1 {
                (0.005, 0.012)
            } else {
                (0.012, 0.055)
            };
            assert!(m < bound.0 && w < bound.1, "R={r} evpool={evpool}: {m} {w}");
        }
    }
}

#[test]
#[ignore = "large: run with --release -- --ignored"]
fn krr_exponent_fit_large() {
    let zipf_t = zipf(10_000, 0.9, 200_000, 51);
    let loop_t = loop_mix(2_000, 8_000, 200_000, 52);
    let ks = [2, 5, 16];
    for (name, trace) in [("zipf", &zipf_t), ("loop+zipf", &loop_t)] {
        let caps = spread(distinct(trace) as f64, 20);
        for evpool in [0, 16] {
            let truth = truths(trace, &ks, evpool, &caps);
            let mut best = (f64::INFINITY, 0.0);
            let mut at_default = (0.0, 0.0);
            let default = if evpool == 0 { 1.4 } else { 1.9 };
            for e in [1.0, 1.4, 1.6, 1.8, 1.9, 2.0] {
                let (m, w) = krr_vs_engine(trace, &truth, e, &caps);
                eprintln!("FIT {name} evpool={evpool} e={e}: MAE {m:.4} worst {w:.4}");
                if m < best.0 {
                    best = (m, e);
                }
                if e == default {
                    at_default = (m, w);
                }
            }
            eprintln!(
                "FIT {name} evpool={evpool}: best e={} (MAE {:.4})",
                best.1, best.0
            );
            // Measured: textbook best at 1.4 on both traces (zipf 0.0005/0.0017, loop+zipf
            // 0.0041/0.0405); pool best at 2.0 (zipf, 0.0005; 1.9 gives 0.0006/0.0031) and
            // 1.9 (loop+zipf, 0.0070/0.0556).
            if evpool == 0 {
                assert_eq!(best.1, 1.4, "{name}: textbook best exponent");
            } else {
                assert!(best.1 >= 1.8, "{name}: pool best exponent {}", best.1);
            }
            let bound = match (name, evpool) {
                ("zipf", 0) => (0.001, 0.003),
                ("zipf", _) => (0.001, 0.005),
                (_, 0) => (0.005, 0.05),
                _ => (0.008, 0.065),
            };
            assert!(
                at_default.0 < bound.0 && at_default.1 < bound.1,
                "{name} evpool={evpool} e={default}: {at_default:?}"
            );
        }
    }
}

#[test]
fn simulate_runs_any_policy() {
    let trace = zipf(1_000, 0.9, 20_000, 61);
    let caps = vec![100.0, 300.0];
    for policy in [
        Policy::AllkeysLfu,
        Policy::AllkeysRandom,
        Policy::AllkeysExactLru,
    ] {
        let cfg = MiniSimConfig {
            policy,
            ..MiniSimConfig::new(0.5, caps.clone())
        };
        let m = simulate(trace.iter().copied(), cfg).unwrap();
        let p = m.points();
        assert!(p[0].1 > p[1].1 && p[1].1 > 0.0, "{policy}: {p:?}");
    }
}

#[test]
fn item_bytes_cap_bounds_key_plus_value_bytes() {
    use locus_engine::{Engine, EngineConfig, SetOptions, TenantConfig};
    use std::sync::Arc;
    let clock = Arc::new(locus_common::VirtualClock::new(0));
    let mut e = Engine::new(EngineConfig::default(), clock).unwrap();
    let t = e
        .add_tenant(TenantConfig {
            policy: Policy::AllkeysExactLru,
            ..TenantConfig::new("a")
        })
        .unwrap();
    assert!(e.set_max_item_bytes(Some(0)).is_err());
    e.set_max_item_bytes(Some(100)).unwrap();
    // Keys of 8 bytes + values of 32: 40 bytes each, two fit.
    for k in 0u64..5 {
        e.set(t, &k.to_le_bytes(), &[0; 32], SetOptions::default())
            .unwrap();
        e.check_invariants();
    }
    assert_eq!(e.len(t), 2);
    assert!(e.exists(t, &4u64.to_le_bytes()) && e.exists(t, &3u64.to_le_bytes()));
    // Growing a value past the cap evicts the least recent other key.
    e.set(t, &4u64.to_le_bytes(), &[0; 80], SetOptions::default())
        .unwrap();
    assert_eq!(e.len(t), 1);
    // An object larger than the cap does not stay.
    e.set(t, &9u64.to_le_bytes(), &[0; 200], SetOptions::default())
        .unwrap();
    assert!(!e.exists(t, &9u64.to_le_bytes()));
    e.check_invariants();
    // Lowering the cap evicts at once.
    e.set(t, &1u64.to_le_bytes(), &[0; 10], SetOptions::default())
        .unwrap();
    e.set(t, &2u64.to_le_bytes(), &[0; 10], SetOptions::default())
        .unwrap();
    e.set_max_item_bytes(Some(20)).unwrap();
    assert_eq!(e.len(t), 1);
    assert_eq!(e.max_item_bytes(), Some(20));
    e.check_invariants();
}
