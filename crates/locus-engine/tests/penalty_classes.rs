//! Property test of pRedis(auto)'s per-key penalty classes: arbitrary operation sequences on a
//! tenant with classes (beside one without) keep every invariant (a key in exactly one of its
//! tenant's pools, accounting, budget), never return a value other than the last one written,
//! keep the tenants' keyspaces apart, keep at most `cap` class pools, and, with memory to spare,
//! lose nothing when keys move between class pools.

mod common;

use std::collections::{HashMap, HashSet};

use common::*;
use locus_engine::{Engine, EngineConfig, Expire, SetOptions, TenantConfig, TenantId};
use proptest::prelude::*;

/// Gaps a fill may take (µs): five different pRedis classes.
const GAPS: [u64; 5] = [20, 200, 900, 4_000, 50_000];
const CAP: u8 = 2;

#[derive(Debug, Clone)]
enum Op {
    /// GET miss, the backend takes a gap, SET (a measured fill).
    Fill {
        t: usize,
        k: u8,
        gap: u8,
        len: u16,
    },
    /// A SET with no miss before it.
    Set {
        t: usize,
        k: u8,
        len: u16,
    },
    Get {
        t: usize,
        k: u8,
    },
    Del {
        t: usize,
        k: u8,
    },
    Rename {
        t: usize,
        a: u8,
        b: u8,
    },
    Expire {
        t: usize,
        k: u8,
        ms: u16,
    },
    Advance(u16),
    Flush(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let t = 0usize..2;
    prop_oneof![
        6 => (t.clone(), 0u8..40, 0u8..5, 1u16..3000)
            .prop_map(|(t, k, gap, len)| Op::Fill { t, k, gap, len }),
        2 => (t.clone(), 0u8..40, 1u16..3000).prop_map(|(t, k, len)| Op::Set { t, k, len }),
        3 => (t.clone(), 0u8..40).prop_map(|(t, k)| Op::Get { t, k }),
        1 => (t.clone(), 0u8..40).prop_map(|(t, k)| Op::Del { t, k }),
        1 => (t.clone(), 0u8..40, 0u8..40).prop_map(|(t, a, b)| Op::Rename { t, a, b }),
        1 => (t.clone(), 0u8..40, 1u16..500).prop_map(|(t, k, ms)| Op::Expire { t, k, ms }),
        1 => (0u16..300).prop_map(Op::Advance),
        1 => (0usize..2).prop_map(Op::Flush),
    ]
}

fn key(k: u8) -> Vec<u8> {
    format!("key:{k}").into_bytes()
}

fn value(k: u8, len: u16, n: u64) -> Vec<u8> {
    let mut v = format!("{k}:{n}:").into_bytes();
    v.resize(usize::from(len).max(v.len()), b'x');
    v
}

fn scan_all(e: &mut Engine, t: TenantId) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cursor = 0;
    loop {
        cursor = e.scan(t, cursor, 7, &mut out);
        if cursor == 0 {
            break;
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Runs `ops`; `exact`: memory for everything (no eviction), so the model must match exactly.
fn run(ops: &[Op], cfg: EngineConfig, exact: bool) {
    let (mut e, clock) = engine_with(cfg);
    let ts = [
        e.add_tenant(TenantConfig::new("classed")).unwrap(),
        e.add_tenant(TenantConfig::new("plain")).unwrap(),
    ];
    e.set_penalty_classes(ts[0], CAP).unwrap();
    let mut model: [HashMap<Vec<u8>, Vec<u8>>; 2] = [HashMap::new(), HashMap::new()];
    let mut ever: [HashSet<Vec<u8>>; 2] = [HashSet::new(), HashSet::new()];
    let mut n = 0u64;
    let mut filled = false;
    for o in ops {
        n += 1;
        match *o {
            Op::Fill { t, k, gap, len } => {
                // Only a GET that missed makes the SET after it a measured fill.
                let missed = e.get(ts[t], &key(k)).is_none();
                clock.advance_us(GAPS[usize::from(gap)]);
                let v = value(k, len, n);
                if e.set(ts[t], &key(k), &v, SetOptions::default()).is_ok() {
                    model[t].insert(key(k), v);
                    ever[t].insert(key(k));
                    filled |= t == 0 && missed;
                }
            }
            Op::Set { t, k, len } => {
                let v = value(k, len, n);
                let opts = SetOptions {
                    expire: Expire::Keep,
                    ..SetOptions::default()
                };
                if e.set(ts[t], &key(k), &v, opts).is_ok() {
                    model[t].insert(key(k), v);
                    ever[t].insert(key(k));
                }
            }
            Op::Get { t, k } => {
                let got = e.get(ts[t], &key(k)).map(<[u8]>::to_vec);
                match (&got, model[t].get(&key(k))) {
                    (Some(g), Some(m)) => assert_eq!(g, m, "stale value"),
                    (Some(_), None) => panic!("a value never written (or deleted)"),
                    (None, _) => {
                        assert!(!exact || !model[t].contains_key(&key(k)), "lost {k}");
                        model[t].remove(&key(k));
                    }
                }
            }
            Op::Del { t, k } => {
                e.delete(ts[t], &key(k));
                model[t].remove(&key(k));
            }
            Op::Rename { t, a, b } => {
                if e.rename(ts[t], &key(a), &key(b), false).is_ok() {
                    if let Some(v) = model[t].remove(&key(a)) {
                        model[t].insert(key(b), v);
                        ever[t].insert(key(b));
                    } else if a != b {
                        panic!("renamed a key the model does not hold");
                    }
                } else if !exact {
                    model[t].remove(&key(a));
                }
            }
            Op::Expire { t, k, ms } => {
                e.set_expire(ts[t], &key(k), Some(e.now_ms() + u64::from(ms)));
            }
            Op::Advance(ms) => clock.advance_ms(u64::from(ms)),
            Op::Flush(t) => {
                e.flush(ts[t]);
                model[t].clear();
            }
        }
        e.check_invariants();
        let st = e.stats();
        assert!(st.pages_used <= st.pages_total);
        assert!(e.pools_of(ts[0]).len() <= 1 + usize::from(CAP));
        assert_eq!(e.pools_of(ts[1]).len(), 1);
        assert_eq!(e.tenant_ids(), ts.to_vec(), "class pools are not tenants");
        for (i, &t) in ts.iter().enumerate() {
            // DBSIZE counts keys past their TTL until something removes them (as Redis); an
            // access removes them, so SCAN and DBSIZE can be compared.
            for k in &ever[i] {
                e.exists(t, k);
            }
            let keys = scan_all(&mut e, t);
            assert_eq!(keys.len() as u64, e.len(t), "SCAN and DBSIZE agree");
            for k in &keys {
                assert!(ever[i].contains(k), "a key of another tenant");
            }
            // Keys the model holds that expired or were evicted are gone from both.
            let present: HashSet<&Vec<u8>> = keys.iter().collect();
            if exact {
                for k in model[i].keys() {
                    if !present.contains(k) {
                        // Only a passed TTL may remove a key when memory is plentiful.
                        assert!(e.expire_at(t, k).is_none());
                    }
                }
            }
            model[i].retain(|k, _| present.contains(k));
            for (k, v) in &model[i] {
                assert_eq!(e.peek(t, k), Some(&v[..]), "value of {k:?}");
            }
        }
        let pools = e.class_pools(ts[0]);
        let items: u64 = pools.iter().map(|p| p.stats.items).sum();
        assert_eq!(
            items,
            e.len(ts[0]),
            "the class pools hold the tenant's keys"
        );
    }
    if filled {
        assert!(
            e.pools_of(ts[0]).len() > 1,
            "a measured fill makes a class pool"
        );
    }
}

/// A fill whose GET hit measures no penalty, so it makes no class pool (a case proptest found:
/// the check expected one).
#[test]
fn a_fill_after_a_hit_measures_nothing() {
    let ops = [
        Op::Set {
            t: 0,
            k: 25,
            len: 1,
        },
        Op::Fill {
            t: 0,
            k: 25,
            gap: 0,
            len: 1,
        },
    ];
    run(&ops, small(24), false);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn classes_under_memory_pressure_keep_every_invariant(ops in prop::collection::vec(op(), 1..250)) {
        // 24 pages of 4 KiB: evictions all the time.
        run(&ops, small(24), false);
    }

    #[test]
    fn classes_with_memory_to_spare_lose_nothing(ops in prop::collection::vec(op(), 1..250)) {
        run(&ops, small(4096), true);
    }
}
