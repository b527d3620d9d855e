//! GET and SET through the engine's public API, per eviction policy: the cost of one operation
//! (criterion reports time per operation and operations per second).
//!
//! ```text
//! cargo bench -p locus-engine --bench engine                  # all groups, all policies
//! cargo bench -p locus-engine --bench engine -- get_hit/      # one group
//! cargo bench -p locus-engine --bench engine -- --quick       # a short run
//! ```
//!
//! Groups (100-byte values, 12-byte keys `key:NNNNNNNN`, a virtual clock as in the simulator):
//! * `get_hit`: a random key among 200,000 stored ones (27 MB of items, more than the CPU
//!   caches hold);
//! * `get_hit_1k`: a random key among 1,000 (index and items cache resident);
//! * `get_miss`: a key never stored;
//! * `set_overwrite`: a random stored key among 200,000, same size;
//! * `set_overwrite_1k`: a random stored key among 1,000, same size;
//! * `set_insert`: a new key into a cache with room to spare (no eviction): engines filled from
//!   empty to at most 2^20 keys, the index growing as they fill;
//! * `set_insert_evict`: a new key into a full 16 MiB cache, so every SET evicts by the policy
//!   (`noeviction` is left out: it refuses the SET instead);
//! * `get_hit_system_clock`: `get_hit` for `allkeys-lru` with the wall clock the server uses
//!   (the LRU stamp reads it on every hit).
//!
//! The volatile policies evict only keys with a TTL, so for them every SET carries one, an hour
//! past the (never advancing) virtual clock.

#![expect(
    missing_docs,
    reason = "criterion_group! defines an undocumented pub fn"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use locus_common::{Rng, SharedClock, SystemClock, VirtualClock};
use locus_engine::{Engine, EngineConfig, Expire, Policy, SetOptions, TenantConfig, TenantId};

/// Keys stored for the hit and overwrite groups.
const KEYS: u64 = 200_000;
/// Random indices drawn per group (the cursor wraps around).
const DRAWS: usize = 1 << 20;
/// Value length in bytes.
const VALUE_LEN: usize = 100;
/// New keys per engine of the insert group (an engine with 1 Mi keys takes ~150 MB); a sample
/// that needs more fills more engines.
const INSERT_CHUNK: usize = 1 << 20;
/// `maxmemory` of the insert group: more than `INSERT_CHUNK` items take, so nothing is evicted.
const INSERT_MAXMEMORY: u64 = 1 << 30;
/// `maxmemory` of the eviction group: about 120,000 items of this size.
const EVICT_MAXMEMORY: u64 = 16 << 20;
/// Keys inserted into the eviction group's cache before measuring (about 3 times what it holds).
const FILL_KEYS: usize = 330_000;
/// New keys ready for the eviction group; more than any run inserts before they wrap around, by
/// which time the first ones have long been evicted.
const FRESH_KEYS: u64 = 1 << 22;
/// Start of the virtual clock, in ms.
const START_MS: u64 = 1_000_000;

/// Fixed-width keys in one buffer, so a benchmark iteration takes a slice and formats nothing.
struct Keys {
    bytes: Vec<u8>,
}

const KEY_LEN: usize = 12;

impl Keys {
    fn new(range: std::ops::Range<u64>) -> Self {
        let mut bytes = Vec::with_capacity((range.end - range.start) as usize * KEY_LEN);
        for i in range {
            bytes.extend_from_slice(format!("key:{i:08}").as_bytes());
        }
        Self { bytes }
    }

    fn get(&self, i: usize) -> &[u8] {
        &self.bytes[i * KEY_LEN..(i + 1) * KEY_LEN]
    }

    fn len(&self) -> usize {
        self.bytes.len() / KEY_LEN
    }
}

/// The SET options of a policy's workload: a TTL for the volatile policies, none otherwise.
fn set_options(policy: Policy) -> SetOptions {
    SetOptions {
        expire: if policy.is_volatile() {
            Expire::AtMs(START_MS + 3_600_000)
        } else {
            Expire::Persist
        },
        ..SetOptions::default()
    }
}

/// An engine with one tenant running `policy`.
fn engine(policy: Policy, maxmemory: u64, clock: SharedClock) -> (Engine, TenantId) {
    let cfg = EngineConfig {
        maxmemory,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(cfg, clock).expect("valid engine config");
    let t = e
        .add_tenant(TenantConfig {
            policy,
            ..TenantConfig::new("bench")
        })
        .expect("valid tenant");
    (e, t)
}

fn virtual_clock() -> SharedClock {
    Arc::new(VirtualClock::new(START_MS))
}

/// An engine holding the first `n` keys of `keys`, with room for all of them.
fn filled(policy: Policy, keys: &Keys, n: usize, clock: SharedClock) -> (Engine, TenantId) {
    let (mut e, t) = engine(policy, 256 << 20, clock);
    let value = [b'v'; VALUE_LEN];
    for i in 0..n {
        e.set(t, keys.get(i), &value, set_options(policy))
            .expect("room for every key");
    }
    assert_eq!(
        e.len(t),
        n as u64,
        "{policy}: nothing evicted while filling"
    );
    (e, t)
}

/// `DRAWS` random indices below `n`.
fn draws(n: u64, seed: u64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    (0..DRAWS).map(|_| rng.below(n) as usize).collect()
}

fn get_hit(c: &mut Criterion) {
    let keys = Keys::new(0..KEYS);
    for (group_name, n) in [("get_hit", KEYS), ("get_hit_1k", 1_000)] {
        let order = draws(n, 1);
        let mut g = c.benchmark_group(group_name);
        g.throughput(Throughput::Elements(1));
        for policy in Policy::ALL {
            let (mut e, t) = filled(policy, &keys, n as usize, virtual_clock());
            let mut i = 0;
            g.bench_function(BenchmarkId::from_parameter(policy), |b| {
                b.iter(|| {
                    let k = keys.get(order[i]);
                    i = (i + 1) % order.len();
                    black_box(e.get(t, black_box(k)).map(<[u8]>::len))
                })
            });
        }
        g.finish();
    }
}

fn get_hit_system_clock(c: &mut Criterion) {
    let keys = Keys::new(0..KEYS);
    let order = draws(KEYS, 1);
    let mut g = c.benchmark_group("get_hit_system_clock");
    g.throughput(Throughput::Elements(1));
    let policy = Policy::AllkeysLru;
    let (mut e, t) = filled(policy, &keys, KEYS as usize, Arc::new(SystemClock));
    let mut i = 0;
    g.bench_function(BenchmarkId::from_parameter(policy), |b| {
        b.iter(|| {
            let k = keys.get(order[i]);
            i = (i + 1) % order.len();
            black_box(e.get(t, black_box(k)).map(<[u8]>::len))
        })
    });
    g.finish();
}

fn get_miss(c: &mut Criterion) {
    let keys = Keys::new(0..KEYS);
    let absent = Keys::new(KEYS..2 * KEYS);
    let order = draws(KEYS, 2);
    let mut g = c.benchmark_group("get_miss");
    g.throughput(Throughput::Elements(1));
    for policy in Policy::ALL {
        let (mut e, t) = filled(policy, &keys, KEYS as usize, virtual_clock());
        let mut i = 0;
        g.bench_function(BenchmarkId::from_parameter(policy), |b| {
            b.iter(|| {
                let k = absent.get(order[i]);
                i = (i + 1) % order.len();
                black_box(e.get(t, black_box(k)).is_some())
            })
        });
    }
    g.finish();
}

fn set_overwrite(c: &mut Criterion) {
    let keys = Keys::new(0..KEYS);
    let value = [b'w'; VALUE_LEN];
    for (group_name, n) in [("set_overwrite", KEYS), ("set_overwrite_1k", 1_000)] {
        let order = draws(n, 3);
        let mut g = c.benchmark_group(group_name);
        g.throughput(Throughput::Elements(1));
        for policy in Policy::ALL {
            let (mut e, t) = filled(policy, &keys, n as usize, virtual_clock());
            let opts = set_options(policy);
            let mut i = 0;
            g.bench_function(BenchmarkId::from_parameter(policy), |b| {
                b.iter(|| {
                    let k = keys.get(order[i]);
                    i = (i + 1) % order.len();
                    e.set(t, black_box(k), black_box(&value), opts)
                        .expect("overwrite fits")
                })
            });
            assert_eq!(e.len(t), n, "{policy}: overwrites evicted nothing");
        }
        g.finish();
    }
}

fn set_insert(c: &mut Criterion) {
    let fresh = Keys::new(0..FRESH_KEYS);
    let value = [b'v'; VALUE_LEN];
    let mut g = c.benchmark_group("set_insert");
    g.throughput(Throughput::Elements(1));
    for policy in Policy::ALL {
        let opts = set_options(policy);
        g.bench_function(BenchmarkId::from_parameter(policy), |b| {
            // Each sample fills empty engines; building and dropping them is not timed.
            b.iter_custom(|iters| {
                let mut elapsed = Duration::ZERO;
                let mut left = iters as usize;
                while left > 0 {
                    let n = left.min(INSERT_CHUNK);
                    let (mut e, t) = engine(policy, INSERT_MAXMEMORY, virtual_clock());
                    let start = Instant::now();
                    for i in 0..n {
                        e.set(t, black_box(fresh.get(i)), black_box(&value), opts)
                            .expect("room for every key");
                    }
                    elapsed += start.elapsed();
                    assert_eq!(e.stats().evictions, 0, "{policy}: nothing evicted");
                    left -= n;
                }
                elapsed
            })
        });
    }
    g.finish();
}

fn set_insert_evict(c: &mut Criterion) {
    let fresh = Keys::new(0..FRESH_KEYS);
    let value = [b'v'; VALUE_LEN];
    let mut g = c.benchmark_group("set_insert_evict");
    g.throughput(Throughput::Elements(1));
    for policy in Policy::ALL {
        if policy == Policy::NoEviction {
            continue;
        }
        let (mut e, t) = engine(policy, EVICT_MAXMEMORY, virtual_clock());
        let opts = set_options(policy);
        // Fill to about three times the capacity: the steady state of a full cache.
        let mut next = 0;
        while next < FILL_KEYS {
            e.set(t, fresh.get(next), &value, opts).expect("evicts");
            next += 1;
        }
        assert!(e.stats().evictions > 0, "{policy}: the fill evicts");
        g.bench_function(BenchmarkId::from_parameter(policy), |b| {
            b.iter(|| {
                let k = fresh.get(next);
                next = (next + 1) % fresh.len();
                e.set(t, black_box(k), black_box(&value), opts)
                    .expect("evicts")
            })
        });
        assert!(
            e.stats().pages_used <= e.stats().pages_total,
            "{policy}: within maxmemory"
        );
    }
    g.finish();
}

criterion_group!(
    benches,
    get_hit,
    get_miss,
    set_overwrite,
    set_insert,
    set_insert_evict,
    get_hit_system_clock
);
criterion_main!(benches);
