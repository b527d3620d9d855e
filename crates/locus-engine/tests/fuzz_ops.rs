//! Property test: arbitrary operation sequences keep every invariant (budget, accounting, index
//! consistency, item caps) and never return a value other than the last one written by the same
//! tenant.

mod common;

use std::collections::HashMap;

use common::*;
use locus_engine::{
    ClassId, EngineConfig, EngineError, Expire, PartitionMode, Policy, SetCond, SetOptions,
    TenantConfig,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Set {
        t: usize,
        k: u8,
        len: u16,
        ttl: Option<u16>,
        cond: u8,
    },
    Get {
        t: usize,
        k: u8,
    },
    Del {
        t: usize,
        k: u8,
    },
    Expire {
        t: usize,
        k: u8,
        ms: Option<u16>,
    },
    Advance(u16),
    Sweep,
    MaxMemory(u8),
    Move {
        from: usize,
        fc: u8,
        to: usize,
        tc: u8,
    },
    Policy {
        t: usize,
        p: u8,
    },
    Samples {
        t: usize,
        k: u8,
    },
    Rename {
        t: usize,
        a: u8,
        b: u8,
    },
    Flush(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let t = 0usize..3;
    prop_oneof![
        8 => (t.clone(), any::<u8>(), 0u16..3000, proptest::option::of(1u16..5000), 0u8..4)
            .prop_map(|(t, k, len, ttl, cond)| Op::Set { t, k, len, ttl, cond }),
        4 => (t.clone(), any::<u8>()).prop_map(|(t, k)| Op::Get { t, k }),
        2 => (t.clone(), any::<u8>()).prop_map(|(t, k)| Op::Del { t, k }),
        1 => (t.clone(), any::<u8>(), proptest::option::of(0u16..3000))
            .prop_map(|(t, k, ms)| Op::Expire { t, k, ms }),
        1 => any::<u16>().prop_map(Op::Advance),
        1 => Just(Op::Sweep),
        1 => (4u8..40).prop_map(Op::MaxMemory),
        1 => (t.clone(), 0u8..30, t.clone(), 0u8..30)
            .prop_map(|(from, fc, to, tc)| Op::Move { from, fc, to, tc }),
        1 => (t.clone(), 0u8..Policy::ALL.len() as u8).prop_map(|(t, p)| Op::Policy { t, p }),
        1 => (t.clone(), 1u8..65).prop_map(|(t, k)| Op::Samples { t, k }),
        1 => (t.clone(), any::<u8>(), any::<u8>()).prop_map(|(t, a, b)| Op::Rename { t, a, b }),
        1 => t.prop_map(Op::Flush),
    ]
}

fn run(ops: Vec<Op>, partition: PartitionMode, seed: u64) {
    let (mut e, clock) = engine_with(EngineConfig {
        partition,
        seed,
        max_items: Some(300),
        ..small(16)
    });
    let ts: Vec<_> = (0..3)
        .map(|i| {
            e.add_tenant(TenantConfig {
                policy: Policy::ALL[(seed as usize + i) % Policy::ALL.len()],
                max_bytes: Some(8 * 4096),
                max_items: Some(120),
                evpool_size: if i == 1 { 0 } else { 16 },
                ..TenantConfig::new(format!("t{i}"))
            })
            .unwrap()
        })
        .collect();
    // Last value written per (tenant, key); values carry the tenant and a sequence number.
    let mut last: HashMap<(usize, Vec<u8>), Vec<u8>> = HashMap::new();
    let mut pages = 16u64;
    for (n, op) in ops.into_iter().enumerate() {
        match op {
            Op::Set {
                t,
                k,
                len,
                ttl,
                cond,
            } => {
                let key = key(u64::from(k));
                let mut v = format!("{t}:{n}:").into_bytes();
                v.resize(usize::from(len).max(v.len()), b'z');
                let opts = SetOptions {
                    expire: ttl.map_or(Expire::Persist, |ms| {
                        Expire::AtMs(e.now_ms() + u64::from(ms))
                    }),
                    cond: [
                        SetCond::Always,
                        SetCond::Always,
                        SetCond::IfAbsent,
                        SetCond::IfPresent,
                    ][usize::from(cond)],
                };
                match e.set(ts[t], &key, &v, opts) {
                    Ok(true) => {
                        last.insert((t, key), v);
                    }
                    Ok(false) | Err(EngineError::OutOfMemory) => {}
                    Err(x) => panic!("{x}"),
                }
            }
            Op::Get { t, k } => {
                let key = key(u64::from(k));
                if let Some(v) = e.get(ts[t], &key) {
                    assert_eq!(Some(&v.to_vec()), last.get(&(t, key)), "stale or foreign");
                }
            }
            Op::Del { t, k } => {
                e.delete(ts[t], &key(u64::from(k)));
            }
            Op::Expire { t, k, ms } => {
                let at = ms.map(|m| e.now_ms() + u64::from(m));
                e.set_expire(ts[t], &key(u64::from(k)), at);
            }
            Op::Advance(ms) => clock.advance_ms(u64::from(ms)),
            Op::Sweep => {
                e.run_active_expire(40);
            }
            Op::MaxMemory(p) => {
                pages = u64::from(p);
                e.set_maxmemory(pages * 4096).unwrap();
            }
            Op::Move { from, fc, to, tc } => {
                match e.move_page(
                    (e.pool_of(ts[from]), ClassId(u16::from(fc))),
                    (e.pool_of(ts[to]), ClassId(u16::from(tc))),
                ) {
                    Ok(_) | Err(EngineError::NoPageToMove { .. }) => {}
                    Err(x) => panic!("{x}"),
                }
            }
            Op::Policy { t, p } => e.set_policy(ts[t], Policy::ALL[usize::from(p)]),
            Op::Samples { t, k } => e.set_samples(ts[t], u32::from(k)).unwrap(),
            Op::Rename { t, a, b } => {
                let (ka, kb) = (key(u64::from(a)), key(u64::from(b)));
                match e.rename(ts[t], &ka, &kb, false) {
                    Ok(true) => {
                        if let Some(v) = last.get(&(t, ka.clone())).cloned() {
                            last.insert((t, kb), v);
                        }
                    }
                    Ok(false) | Err(EngineError::NoSuchKey | EngineError::OutOfMemory) => {}
                    Err(x) => panic!("{x}"),
                }
            }
            Op::Flush(t) => e.flush(ts[t]),
        }
        let s = e.stats();
        assert!(s.pages_used <= pages && s.pages_total == pages);
        assert!(s.items <= 300);
    }
    e.check_invariants();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn shared_op_sequences_keep_invariants(ops in proptest::collection::vec(op(), 1..400), seed in 0u64..1000) {
        run(ops, PartitionMode::Shared, seed);
    }

    #[test]
    fn static_op_sequences_keep_invariants(ops in proptest::collection::vec(op(), 1..400), seed in 0u64..1000) {
        run(ops, PartitionMode::Static, seed);
    }
}
