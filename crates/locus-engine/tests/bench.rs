//! Micro benchmarks and memory measurements, ignored by default. Run in release:
//!
//! ```text
//! cargo test --release -p locus-engine --test bench -- --ignored --nocapture --test-threads 1
//! ```

mod common;

use std::hint::black_box;
use std::time::Instant;

use common::*;
use locus_common::Rng;
use locus_engine::{EngineConfig, Policy, SetOptions};

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn bench_ns_per_get_and_set() {
    let (mut e, _c) = engine_with(EngineConfig {
        maxmemory: 256 << 20,
        ..EngineConfig::default()
    });
    let t = tenant(&mut e, "bench", Policy::AllkeysLru);
    let n = 200_000u64;
    let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    let value = vec![b'v'; 100];
    let start = Instant::now();
    for k in &keys {
        e.set(t, k, &value, SetOptions::default()).unwrap();
    }
    let set_new = start.elapsed().as_nanos() as f64 / n as f64;
    let mut rng = Rng::new(1);
    let order: Vec<usize> = (0..1_000_000).map(|_| rng.below(n) as usize).collect();
    let start = Instant::now();
    let mut sum = 0usize;
    for &i in &order {
        sum += e.get(t, &keys[i]).map_or(0, <[u8]>::len);
    }
    let get_hit = start.elapsed().as_nanos() as f64 / order.len() as f64;
    black_box(sum);
    let start = Instant::now();
    for &i in &order {
        e.set(t, &keys[i], &value, SetOptions::default()).unwrap();
    }
    let set_over = start.elapsed().as_nanos() as f64 / order.len() as f64;
    let start = Instant::now();
    for i in 0..1_000_000u64 {
        black_box(e.get(t, &key(n + i)));
    }
    let get_miss = start.elapsed().as_nanos() as f64 / 1e6;
    // Cache-resident: 1,000 keys.
    let start = Instant::now();
    for &i in &order {
        sum += e.get(t, &keys[i % 1000]).map_or(0, <[u8]>::len);
    }
    let get_small = start.elapsed().as_nanos() as f64 / order.len() as f64;
    black_box(sum);
    let start = Instant::now();
    for &i in &order {
        e.set(t, &keys[i % 1000], &value, SetOptions::default())
            .unwrap();
    }
    let set_small = start.elapsed().as_nanos() as f64 / order.len() as f64;
    // Steady-state eviction: 16 MiB budget, every SET of a new key evicts.
    let (mut e, _c) = engine_with(EngineConfig {
        maxmemory: 16 << 20,
        ..EngineConfig::default()
    });
    let t = tenant(&mut e, "bench", Policy::AllkeysLru);
    for i in 0..200_000 {
        e.set(t, &key(i), &value, SetOptions::default()).unwrap();
    }
    let start = Instant::now();
    for i in 200_000..700_000 {
        e.set(t, &key(i), &value, SetOptions::default()).unwrap();
    }
    let set_evict = start.elapsed().as_nanos() as f64 / 500_000.0;
    println!(
        "ns/op: set(new) {set_new:.0}, get(hit, 200K keys random) {get_hit:.0}, get(hit, 1K keys) {get_small:.0}, get(miss, incl. key formatting) {get_miss:.0}, set(overwrite, 200K keys random) {set_over:.0}, set(overwrite, 1K keys) {set_small:.0}, set(new, evicting, K=5 pool) {set_evict:.0}"
    );
}

#[test]
#[ignore = "memory measurement: run in release with --ignored --nocapture"]
fn bench_overhead_per_key_one_million_100b_values() {
    let before = rss_bytes();
    let (mut e, _c) = engine_with(EngineConfig {
        maxmemory: 2 << 30,
        ..EngineConfig::default()
    });
    let t = tenant(&mut e, "mem", Policy::AllkeysLru);
    let n = 1_000_000u64;
    let value = vec![b'v'; 100];
    let mut payload = 0u64;
    for i in 0..n {
        let k = format!("key:{i:010}");
        payload += (k.len() + value.len()) as u64;
        e.set(t, k.as_bytes(), &value, SetOptions::default())
            .unwrap();
    }
    let after = rss_bytes();
    let s = e.stats();
    println!(
        "1M keys (16 B key + 100 B value): RSS grew {} MiB; (RSS - payload)/key = {:.1} B; chunk {} B/item; pages {} MiB; metadata {:.1} B/key; charged-item {:.1} B/key",
        (after - before) >> 20,
        (after - before).saturating_sub(payload) as f64 / n as f64,
        s.charged_bytes / n,
        s.used_bytes >> 20,
        s.metadata_bytes as f64 / n as f64,
        (s.charged_bytes - s.item_bytes) as f64 / n as f64,
    );
}

#[test]
#[ignore = "memory measurement: run in release with --ignored --nocapture"]
fn bench_churn_rss_stays_near_maxmemory() {
    let before = rss_bytes();
    let maxmemory = 256u64 << 20;
    let (mut e, _c) = engine_with(EngineConfig {
        maxmemory,
        ..EngineConfig::default()
    });
    let t = tenant(&mut e, "churn", Policy::AllkeysLru);
    let mut rng = Rng::new(5);
    let buf = vec![b'x'; 5000];
    let mut written = 0u64;
    let mut i = 0u64;
    let mut peak = 0u64;
    let mut next_check = 50_000u32;
    let start = Instant::now();
    while written < 10 * maxmemory {
        let len = 50 + rng.below(4951) as usize;
        let k = key(rng.below(2_000_000));
        e.set(t, &k, &buf[..len], SetOptions::default()).unwrap();
        written += len as u64;
        i += 1;
        next_check -= 1;
        if next_check == 0 {
            next_check = 50_000;
            peak = peak.max(rss_bytes());
            assert!(e.stats().pages_used <= e.stats().pages_total);
        }
    }
    peak = peak.max(rss_bytes());
    let s = e.stats();
    println!(
        "churn: {i} sets in {:.1} s, pages {} / {}, RSS peak {} MiB (growth {} MiB; limit 1.15*256+64 = 358 MiB), items {}, evictions {} (page reclaim {}), fill {:.2}",
        start.elapsed().as_secs_f64(),
        s.pages_used,
        s.pages_total,
        peak >> 20,
        (peak - before) >> 20,
        s.items,
        s.evictions,
        e.tenant_stats(t)
            .evictions_by_reason
            .get(locus_engine::EvictionReason::PageReclaim),
        s.item_bytes as f64 / s.used_bytes as f64,
    );
    assert!(peak <= maxmemory * 115 / 100 + (64 << 20), "RSS {peak}");
}
