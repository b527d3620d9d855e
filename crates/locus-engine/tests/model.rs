//! Model-based tests: the engine against a naive `HashMap`, with several tenants.

mod common;

use std::collections::HashMap;

use common::*;
use locus_common::Rng;
use locus_engine::{Engine, Expire, Policy, SetCond, SetOptions, TenantId};

/// (tenant, key) -> (value, expiry)
type Model = HashMap<(u32, Vec<u8>), (Vec<u8>, Option<u64>)>;

fn live<'a>(m: &'a Model, now: u64, t: TenantId, k: &[u8]) -> Option<&'a Vec<u8>> {
    m.get(&(t.0, k.to_vec()))
        .filter(|(_, exp)| exp.is_none_or(|at| at > now))
        .map(|(v, _)| v)
}

/// Runs `ops` random operations. With `roomy`, nothing is ever evicted and the engine must agree
/// with the model exactly (values and hit counts); otherwise every value the engine returns must
/// be the model's current value for that tenant (evictions only remove).
fn run(seed: u64, ops: usize, roomy: bool, policy: Policy) {
    let pages = if roomy { 4096 } else { 24 };
    let (mut e, clock) = engine_with(small_logical(pages, seed));
    let tenants: Vec<TenantId> = (0..3)
        .map(|i| tenant(&mut e, &format!("t{i}"), policy))
        .collect();
    let mut m: Model = HashMap::new();
    let mut rng = Rng::new(seed ^ 0xABCD);
    let mut hits = [0u64; 3];
    for step in 0..ops {
        let ti = rng.below(3) as usize;
        let t = tenants[ti];
        let k = key(rng.below(150));
        let now = e.now_ms();
        match rng.below(100) {
            0..=34 => {
                let got = e.get(t, &k).map(<[u8]>::to_vec);
                let want = live(&m, now, t, &k).cloned();
                if roomy {
                    assert_eq!(got, want, "step {step}: GET {t:?}");
                } else if let Some(g) = &got {
                    assert_eq!(
                        Some(g),
                        want.as_ref(),
                        "step {step}: stale or foreign value"
                    );
                }
                if got.is_some() {
                    hits[ti] += 1;
                }
            }
            35..=69 => {
                let len = rng.below(400) as usize + 1;
                // The value names its tenant, so a leak between tenants would show.
                let mut v = format!("{ti}/{step}/").into_bytes();
                v.resize(len.max(v.len()), b'.');
                let expire = match rng.below(4) {
                    0 => Expire::AtMs(now + rng.below(5_000) + 1),
                    1 => Expire::Keep,
                    _ => Expire::Persist,
                };
                let cond = match rng.below(6) {
                    0 => SetCond::IfAbsent,
                    1 => SetCond::IfPresent,
                    _ => SetCond::Always,
                };
                let present = live(&m, now, t, &k).is_some();
                let r = e.set(t, &k, &v, SetOptions { expire, cond });
                let should = match cond {
                    SetCond::Always => true,
                    SetCond::IfAbsent => !present,
                    SetCond::IfPresent => present,
                };
                if roomy {
                    assert_eq!(r, Ok(should), "step {step}: SET result");
                }
                match r {
                    Ok(true) => {
                        let old_exp = m
                            .get(&(t.0, k.clone()))
                            .filter(|_| present)
                            .and_then(|(_, x)| *x);
                        let mut exp = match expire {
                            Expire::Keep => old_exp,
                            Expire::Persist => None,
                            Expire::AtMs(at) => Some(at),
                        };
                        if !roomy {
                            // KEEPTTL of a key the model still has but the engine evicted.
                            exp = e.expire_at(t, &k).flatten();
                        } else {
                            assert_eq!(e.expire_at(t, &k), Some(exp), "step {step}: TTL");
                        }
                        m.insert((t.0, k.clone()), (v, exp));
                    }
                    Ok(false) => {}
                    Err(err) => panic!("step {step}: {err}"),
                }
            }
            70..=79 => {
                let existed = e.delete(t, &k);
                let was = live(&m, now, t, &k).is_some();
                if roomy {
                    assert_eq!(existed, was, "step {step}: DEL");
                }
                m.remove(&(t.0, k.clone()));
            }
            80..=86 => {
                let at = if rng.below(3) == 0 {
                    None
                } else {
                    Some(now + rng.below(3_000) + 1)
                };
                let ok = e.set_expire(t, &k, at);
                let was = live(&m, now, t, &k).is_some();
                if roomy {
                    assert_eq!(ok, was, "step {step}: EXPIRE");
                }
                if ok {
                    if let Some(entry) = m.get_mut(&(t.0, k.clone())) {
                        entry.1 = at;
                    }
                } else {
                    m.remove(&(t.0, k.clone()));
                }
            }
            87..=92 => clock.advance_ms(rng.below(800)),
            93..=95 => {
                e.run_active_expire(20);
            }
            _ => {
                let ex = e.exists(t, &k);
                if roomy {
                    assert_eq!(ex, live(&m, now, t, &k).is_some(), "step {step}: EXISTS");
                } else if ex {
                    assert!(
                        live(&m, now, t, &k).is_some(),
                        "step {step}: EXISTS of a dead key"
                    );
                }
            }
        }
        if step % 500 == 0 {
            e.check_invariants();
        }
        assert!(e.stats().pages_used <= pages);
    }
    e.check_invariants();
    if roomy {
        for (i, &t) in tenants.iter().enumerate() {
            assert_eq!(e.tenant_stats(t).hits, hits[i], "hit counts agree");
            assert_eq!(e.tenant_stats(t).evictions, 0);
        }
        // Every live model key is in the engine, with its value, and scan finds exactly them.
        let now = e.now_ms();
        for &t in &tenants {
            let mut keys = Vec::new();
            let mut c = 0;
            loop {
                c = e.scan(t, c, 7, &mut keys);
                if c == 0 {
                    break;
                }
            }
            keys.sort();
            keys.dedup();
            let mut want: Vec<Vec<u8>> = m
                .iter()
                .filter(|((mt, _), (_, exp))| *mt == t.0 && exp.is_none_or(|at| at > now))
                .map(|((_, k), _)| k.clone())
                .collect();
            want.sort();
            assert_eq!(keys, want, "scan of {t:?}");
        }
    }
}

#[test]
fn agrees_with_hashmap_when_nothing_is_evicted() {
    for seed in 0..4 {
        run(seed, 6_000, true, Policy::AllkeysLru);
    }
    run(9, 4_000, true, Policy::AllkeysLfu);
    run(10, 4_000, true, Policy::AllkeysExactLru);
}

#[test]
fn never_returns_stale_or_foreign_values_under_eviction() {
    for (i, p) in Policy::ALL
        .into_iter()
        .filter(|p| *p != Policy::NoEviction && !p.is_volatile())
        .enumerate()
    {
        run(100 + i as u64, 6_000, false, p);
    }
}

#[test]
fn tenants_never_see_each_others_keys() {
    let (mut e, _c) = engine_with(small(64));
    let a = tenant(&mut e, "a", Policy::AllkeysLru);
    let b = tenant(&mut e, "b", Policy::AllkeysLru);
    e.set(a, b"shared-name", b"from-a", SetOptions::default())
        .unwrap();
    assert_eq!(e.get(b, b"shared-name"), None);
    assert!(!e.exists(b, b"shared-name"));
    assert!(!e.delete(b, b"shared-name"));
    assert_eq!(e.len(b), 0);
    let mut out = Vec::new();
    assert_eq!(e.scan(b, 0, 100, &mut out), 0);
    assert!(out.is_empty());
    assert_eq!(e.random_key(b), None);
    e.set(b, b"shared-name", b"from-b", SetOptions::default())
        .unwrap();
    assert_eq!(e.get(a, b"shared-name"), Some(&b"from-a"[..]));
    assert_eq!(e.get(b, b"shared-name"), Some(&b"from-b"[..]));
    e.flush(a);
    assert_eq!(e.get(b, b"shared-name"), Some(&b"from-b"[..]));
    let _ = Engine::new; // keep the import used in every configuration
}
