//! Memory measurements of the engine (not timings, so not criterion): the process's resident set
//! (VmRSS) against the bytes stored.
//!
//! ```text
//! cargo bench -p locus-engine --bench memory
//! ```
//!
//! 1. `per_key`: 1,000,000 keys of 14 bytes (`key:NNNNNNNNNN`) with 100-byte values, `allkeys-lru`,
//!    2 GiB `maxmemory` (nothing evicted): RSS growth beyond the payload per key, and the engine's
//!    own accounting (chunk per item, pages, metadata outside pages).
//! 2. `churn`: `maxmemory` 256 MiB, SETs of 50..=5,000-byte values to 2,000,000 random keys until
//!    10 × 256 MiB were written. Checks that the pages in use never exceed `maxmemory` and that
//!    the peak RSS (sampled every 50,000 SETs) stays within 1.15 × maxmemory + 64 MiB; exits
//!    with status 1 otherwise.
//!
//! Both run in one process, in this order; RSS is read from `/proc/self/status` (Linux). Outside
//! `cargo bench` (e.g. `cargo test --benches`, which runs bench targets without `--bench`) they
//! run small (10,000 keys; 16 MiB and 125,000 keys), as a quick check that they work.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use locus_common::{Rng, VirtualClock};
use locus_engine::{
    Engine, EngineConfig, EvictionReason, Policy, SetOptions, TenantConfig, TenantId,
};

/// The process's resident set in bytes (0 where `/proc` is not there).
fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// An engine with one `allkeys-lru` tenant and a virtual clock.
fn engine(maxmemory: u64, name: &str) -> (Engine, TenantId) {
    let cfg = EngineConfig {
        maxmemory,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(cfg, Arc::new(VirtualClock::new(1_000_000))).expect("valid config");
    let t = e
        .add_tenant(TenantConfig {
            policy: Policy::AllkeysLru,
            ..TenantConfig::new(name)
        })
        .expect("valid tenant");
    (e, t)
}

/// Measurement 1: bytes per key beyond the payload.
fn per_key(n: u64) {
    let before = rss_bytes();
    let (mut e, t) = engine(2 << 30, "mem");
    let value = vec![b'v'; 100];
    let mut payload = 0u64;
    for i in 0..n {
        let k = format!("key:{i:010}");
        payload += (k.len() + value.len()) as u64;
        e.set(t, k.as_bytes(), &value, SetOptions::default())
            .expect("2 GiB hold every key");
    }
    let after = rss_bytes();
    let s = e.stats();
    println!(
        "per_key: {n} keys (14 B key + 100 B value): RSS grew {} MiB; (RSS - payload)/key = {:.1} B; chunk {} B/item; pages {} MiB; metadata {:.1} B/key; charged-item {:.1} B/key",
        (after - before) >> 20,
        (after - before).saturating_sub(payload) as f64 / n as f64,
        s.charged_bytes / n,
        s.used_bytes >> 20,
        s.metadata_bytes as f64 / n as f64,
        (s.charged_bytes - s.item_bytes) as f64 / n as f64,
    );
}

/// Measurement 2: RSS under 10× overwrite of `maxmemory`. Returns whether the bounds held.
fn churn(maxmemory: u64, keys: u64) -> bool {
    let before = rss_bytes();
    let (mut e, t) = engine(maxmemory, "churn");
    let mut rng = Rng::new(5);
    let buf = vec![b'x'; 5000];
    let mut written = 0u64;
    let mut sets = 0u64;
    let mut peak = 0u64;
    let mut pages_ok = true;
    let mut next_check = 50_000u32;
    let start = Instant::now();
    while written < 10 * maxmemory {
        let len = 50 + rng.below(4951) as usize;
        let k = format!("key:{:08}", rng.below(keys));
        e.set(t, k.as_bytes(), &buf[..len], SetOptions::default())
            .expect("allkeys-lru evicts");
        written += len as u64;
        sets += 1;
        next_check -= 1;
        if next_check == 0 {
            next_check = 50_000;
            peak = peak.max(rss_bytes());
            let s = e.stats();
            pages_ok &= s.pages_used <= s.pages_total;
        }
    }
    peak = peak.max(rss_bytes());
    let limit = maxmemory * 115 / 100 + (64 << 20);
    let s = e.stats();
    println!(
        "churn: {sets} sets in {:.1} s, pages {} / {}, RSS peak {} MiB (growth {} MiB; limit 1.15*{}+64 = {} MiB), items {}, evictions {} (page reclaim {}), fill {:.2}",
        start.elapsed().as_secs_f64(),
        s.pages_used,
        s.pages_total,
        peak >> 20,
        peak.saturating_sub(before) >> 20,
        maxmemory >> 20,
        limit >> 20,
        s.items,
        s.evictions,
        e.tenant_stats(t)
            .evictions_by_reason
            .get(EvictionReason::PageReclaim),
        s.item_bytes as f64 / s.used_bytes as f64,
    );
    if !pages_ok {
        eprintln!("churn: pages in use exceeded maxmemory");
    }
    if peak > limit {
        eprintln!("churn: RSS peak {peak} B over the limit {limit} B");
    }
    pages_ok && peak <= limit
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; without it (a test run) everything is smaller.
    let bench = std::env::args().any(|a| a == "--bench");
    let (keys, maxmemory, churn_keys) = if bench {
        (1_000_000, 256 << 20, 2_000_000)
    } else {
        (10_000, 16 << 20, 125_000)
    };
    per_key(keys);
    if churn(maxmemory, churn_keys) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
