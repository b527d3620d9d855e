//! One suite every policy must pass: data path, TTL, and behaviour when memory is full.

mod common;

use common::*;
use locus_engine::{EngineError, Expire, Policy, SetCond, SetOptions};

fn opts(expire: Expire) -> SetOptions {
    SetOptions {
        expire,
        cond: SetCond::Always,
    }
}

fn data_path(policy: Policy) {
    let (mut e, clock) = engine_with(small(256));
    let t = tenant(&mut e, "a", policy);
    assert_eq!(e.get(t, b"k"), None);
    assert!(e.set(t, b"k", b"v1", SetOptions::default()).unwrap());
    assert_eq!(e.get(t, b"k"), Some(&b"v1"[..]));
    // Overwrite in the same class and in a different class.
    e.set(t, b"k", b"v2", SetOptions::default()).unwrap();
    assert_eq!(e.get(t, b"k"), Some(&b"v2"[..]));
    let big = vec![7u8; 1500];
    e.set(t, b"k", &big, SetOptions::default()).unwrap();
    assert_eq!(e.get(t, b"k"), Some(&big[..]));
    assert_eq!(e.len(t), 1);
    // NX / XX.
    let nx = SetOptions {
        cond: SetCond::IfAbsent,
        ..SetOptions::default()
    };
    let xx = SetOptions {
        cond: SetCond::IfPresent,
        ..SetOptions::default()
    };
    assert!(!e.set(t, b"k", b"no", nx).unwrap());
    assert!(!e.set(t, b"new", b"no", xx).unwrap());
    assert!(e.set(t, b"new", b"yes", nx).unwrap());
    assert!(e.set(t, b"new", b"yes2", xx).unwrap());
    assert_eq!(e.peek(t, b"new"), Some(&b"yes2"[..]));
    // Delete.
    assert!(e.delete(t, b"new"));
    assert!(!e.delete(t, b"new"));
    assert!(!e.exists(t, b"new"));
    // TTL: set, keep, persist, lazy expiry.
    let now = e.now_ms();
    e.set(t, b"ttl", b"x", opts(Expire::AtMs(now + 1000)))
        .unwrap();
    assert_eq!(e.expire_at(t, b"ttl"), Some(Some(now + 1000)));
    e.set(t, b"ttl", b"y", opts(Expire::Keep)).unwrap();
    assert_eq!(e.expire_at(t, b"ttl"), Some(Some(now + 1000)));
    e.set(t, b"ttl", b"z", SetOptions::default()).unwrap();
    assert_eq!(
        e.expire_at(t, b"ttl"),
        Some(None),
        "plain SET clears the TTL"
    );
    assert!(e.set_expire(t, b"ttl", Some(now + 500)));
    assert!(!e.set_expire(t, b"missing", Some(now + 500)));
    clock.advance_ms(499);
    assert_eq!(e.get(t, b"ttl"), Some(&b"z"[..]));
    clock.advance_ms(1);
    assert_eq!(e.get(t, b"ttl"), None);
    assert_eq!(e.expire_at(t, b"ttl"), None);
    assert_eq!(e.tenant_stats(t).expired, 1);
    // Persist.
    e.set(t, b"p", b"1", opts(Expire::AtMs(e.now_ms() + 10)))
        .unwrap();
    assert!(e.set_expire(t, b"p", None));
    clock.advance_ms(100);
    assert!(e.exists(t, b"p"));
    // Expiry in the past deletes.
    e.set(t, b"past", b"1", opts(Expire::AtMs(1))).unwrap();
    assert!(!e.exists(t, b"past"));
    // Active expiry.
    let now = e.now_ms();
    for i in 0..50 {
        e.set(t, &key(i), b"v", opts(Expire::AtMs(now + 10)))
            .unwrap();
    }
    clock.advance_ms(20);
    let mut n = 0;
    for _ in 0..100 {
        n += e.run_active_expire(20);
    }
    assert_eq!(n, 50, "every expired key is eventually swept");
    // Scan returns every key exactly once here (no concurrent changes).
    for i in 0..300 {
        e.set(
            t,
            &key(i),
            &val(i, (i % 200) as usize + 1),
            SetOptions::default(),
        )
        .unwrap();
    }
    let mut out = Vec::new();
    let mut cursor = 0;
    loop {
        cursor = e.scan(t, cursor, 10, &mut out);
        if cursor == 0 {
            break;
        }
    }
    out.sort();
    out.dedup();
    assert_eq!(out.len() as u64, e.len(t));
    // Rename keeps TTL; RENAMENX.
    let now = e.now_ms();
    e.set(t, b"src", b"val", opts(Expire::AtMs(now + 9999)))
        .unwrap();
    assert!(e.rename(t, b"src", b"dst", false).unwrap());
    assert_eq!(e.get(t, b"dst"), Some(&b"val"[..]));
    assert_eq!(e.expire_at(t, b"dst"), Some(Some(now + 9999)));
    assert!(!e.exists(t, b"src"));
    assert!(!e.rename(t, b"dst", &key(1), true).unwrap());
    assert_eq!(
        e.rename(t, b"nope", b"x", false),
        Err(EngineError::NoSuchKey)
    );
    // Random key, object info, flush.
    assert!(e.random_key(t).is_some());
    let info = e.object_info(t, b"dst").unwrap();
    assert_eq!(info.value_len, 3);
    assert!(info.charged_bytes >= 16 + 3 + 3);
    e.flush(t);
    assert_eq!(e.len(t), 0);
    assert_eq!(e.get(t, b"dst"), None);
    assert_eq!(e.stats().pages_used, 0);
    e.check_invariants();
}

/// Fills a 16-page engine far past its capacity with one tenant of this policy.
fn memory_full(policy: Policy) {
    let (mut e, _clock) = engine_with(small(16));
    let t = tenant(&mut e, "a", policy);
    let keep = tenant(&mut e, "other", Policy::NoEviction);
    e.set(keep, b"mine", b"safe", SetOptions::default())
        .unwrap();
    let far = e.now_ms() + 1_000_000;
    let mut stored_plain = Vec::new();
    let mut oom = 0;
    for i in 0..3000u64 {
        // Half the keys have a TTL so volatile policies have candidates.
        let ttl = i % 2 == 0;
        let o = if ttl {
            opts(Expire::AtMs(far))
        } else {
            SetOptions::default()
        };
        match e.set(t, &key(i), &val(i, 100), o) {
            Ok(true) => {
                if !ttl {
                    stored_plain.push(i);
                }
            }
            Ok(false) => unreachable!(),
            Err(EngineError::OutOfMemory) => oom += 1,
            Err(other) => panic!("unexpected {other}"),
        }
        assert!(e.stats().pages_used <= 16);
    }
    e.check_invariants();
    let st = e.tenant_stats(t);
    assert_eq!(
        e.get(keep, b"mine"),
        Some(&b"safe"[..]),
        "other tenant untouched"
    );
    match policy {
        Policy::NoEviction => {
            assert!(oom > 0);
            assert_eq!(st.evictions, 0);
        }
        p if p.is_volatile() => {
            assert!(st.evictions > 0);
            // Keys without TTL are never evicted; once TTL keys run out, writes fail.
            for &i in &stored_plain {
                assert!(e.exists(t, &key(i)), "{p}: key without TTL {i} was evicted");
            }
            assert!(oom > 0, "{p}: no OOM once only keys without TTL are left");
        }
        _ => {
            assert_eq!(oom, 0, "{policy}: allkeys policies always find a victim");
            assert!(st.evictions > 0);
            assert!(e.len(t) < 3000);
        }
    }
    // A volatile policy with no TTL keys at all: OOM, nothing evicted.
    if policy.is_volatile() {
        let (mut e, _c) = engine_with(small(4));
        let t = tenant(&mut e, "v", policy);
        let mut saw_oom = false;
        for i in 0..2000 {
            match e.set(t, &key(i), &val(i, 100), SetOptions::default()) {
                Err(EngineError::OutOfMemory) => {
                    saw_oom = true;
                    break;
                }
                r => assert!(r.unwrap()),
            }
        }
        assert!(saw_oom);
        assert_eq!(e.tenant_stats(t).evictions, 0);
    }
}

/// Item caps: a tenant cap and the global cap.
fn item_caps(policy: Policy) {
    let (mut e, _clock) = engine_with(small(256));
    let t = e
        .add_tenant(locus_engine::TenantConfig {
            policy,
            max_items: Some(50),
            ..locus_engine::TenantConfig::new("capped")
        })
        .unwrap();
    let far = e.now_ms() + 1_000_000;
    let mut oom = 0;
    for i in 0..200 {
        match e.set(t, &key(i), b"v", opts(Expire::AtMs(far))) {
            Ok(_) => {}
            Err(EngineError::OutOfMemory) => oom += 1,
            Err(x) => panic!("{x}"),
        }
        assert!(e.len(t) <= 50);
    }
    if policy == Policy::NoEviction {
        assert_eq!(oom, 150);
        assert_eq!(e.len(t), 50);
    } else {
        assert_eq!(oom, 0);
        assert_eq!(e.len(t), 50);
        assert_eq!(
            e.tenant_stats(t)
                .evictions_by_reason
                .get(locus_engine::EvictionReason::ItemLimit),
            150
        );
    }
    e.check_invariants();
}

macro_rules! conformance {
    ($($name:ident => $policy:expr),* $(,)?) => {
        const COVERED: &[Policy] = &[$($policy),*];
        $(
            mod $name {
                use super::*;
                #[test]
                fn data_path_works() {
                    data_path($policy);
                }
                #[test]
                fn memory_full_behaves_as_redis() {
                    memory_full($policy);
                }
                #[test]
                fn item_caps_hold() {
                    item_caps($policy);
                }
            }
        )*
    };
}

conformance! {
    noeviction => Policy::NoEviction,
    allkeys_lru => Policy::AllkeysLru,
    allkeys_lfu => Policy::AllkeysLfu,
    allkeys_random => Policy::AllkeysRandom,
    volatile_lru => Policy::VolatileLru,
    volatile_lfu => Policy::VolatileLfu,
    volatile_random => Policy::VolatileRandom,
    volatile_ttl => Policy::VolatileTtl,
    allkeys_exact_lru => Policy::AllkeysExactLru,
    allkeys_hyperbolic => Policy::AllkeysHyperbolic,
}

#[test]
fn the_suite_covers_every_policy() {
    for p in Policy::ALL {
        assert!(COVERED.contains(&p), "{p} not in the conformance suite");
    }
}
