//! Property tests: exact LRU against a brute-force stack, SHARDS at R = 1 against exact, byte
//! distances against a byte-capacity LRU simulator.

mod common;

use common::*;
use locus_mrc::{ExactLru, Metric, Op, Profiler, Shards, ShardsConfig, ShardsMode, Unit};
use proptest::prelude::*;

fn arb_trace(keys: u64, len: usize, with_ops: bool) -> impl Strategy<Value = Vec<Acc>> {
    prop::collection::vec((0..keys, 1u32..200, 0u8..10), 1..len).prop_map(move |v| {
        v.into_iter()
            .map(|(key, size, o)| Acc {
                key,
                size,
                op: if !with_ops {
                    Op::Get
                } else {
                    match o {
                        0 => Op::Del,
                        1 => Op::Set,
                        _ => Op::Get,
                    }
                },
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn exact_lru_equals_brute_force_stack(trace in arb_trace(40, 400, true)) {
        let d = brute_distances(&trace);
        prop_assume!(!d.is_empty());
        let caps: Vec<f64> = (1..=45).map(|c| c as f64).collect();
        let mut p = ExactLru::new(Unit::Objects, Metric::Requests);
        feed(&mut p, &trace);
        let m = p.mrc(&caps).unwrap();
        for (c, got) in m.points() {
            let want = mr_from_distances(&d, *c as u64);
            prop_assert!((got - want).abs() < 1e-12, "c={} got={} want={}", c, got, want);
        }
    }

    #[test]
    fn exact_lru_with_deletes_equals_an_lru_cache_simulation(trace in arb_trace(30, 300, true)) {
        prop_assume!(trace.iter().any(|a| a.op == Op::Get));
        let trace: Vec<Acc> = trace.into_iter().map(|mut a| { a.size = 1; a }).collect();
        let caps: Vec<f64> = (1..=32).map(|c| c as f64).collect();
        let m = exact_curve(&trace, Unit::Objects, &caps);
        for (c, got) in m.points() {
            let want = byte_lru_sim(&trace, *c as u64);
            prop_assert!((got - want).abs() < 1e-12, "c={} got={} want={}", c, got, want);
        }
    }

    #[test]
    fn shards_at_rate_one_equals_exact(trace in arb_trace(60, 500, true), bytes in any::<bool>()) {
        let unit = if bytes { Unit::Bytes } else { Unit::Objects };
        let mut e = ExactLru::new(unit, Metric::Requests);
        let mut s = Shards::new(ShardsConfig {
            mode: ShardsMode::FixedRate(1.0), unit, metric: Metric::Requests, seed: 3, adjust: true,
        }).unwrap();
        feed(&mut e, &trace);
        feed(&mut s, &trace);
        let caps: Vec<f64> = (1..=100).map(|c| (c * if bytes { 97 } else { 1 }) as f64).collect();
        prop_assert_eq!(e.mrc(&caps).unwrap(), s.mrc(&caps).unwrap());
    }

    #[test]
    fn byte_distances_match_a_byte_lru_simulator(trace in arb_trace(30, 300, false)) {
        prop_assume!(trace.iter().any(|a| a.op == Op::Get));
        let caps = [50.0, 120.0, 300.0, 700.0, 1500.0, 4000.0];
        // Fixed sizes per key (the exactness claim is for sizes that do not change), and no object
        // larger than the smallest cache (the simulator refuses those; the stack model cannot).
        let trace: Vec<Acc> = trace.into_iter().map(|mut a| { a.size = 1 + (a.key as u32 * 37) % 50; a }).collect();
        let m = exact_curve(&trace, Unit::Bytes, &caps);
        for (c, got) in m.points() {
            let want = byte_lru_sim(&trace, *c as u64);
            prop_assert!((got - want).abs() < 1e-12, "c={} got={} want={} {:?}", c, got, want, trace);
        }
    }
}
