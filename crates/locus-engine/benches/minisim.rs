//! The cost of one access fed to the miniature simulation ([`MiniSim`], a `locus_mrc::Profiler`
//! running scaled-down engines), to set beside the other profilers of `locus-mrc`
//! (`crates/locus-mrc/benches/profilers.rs`, same stream and group names).
//!
//! ```text
//! cargo bench -p locus-engine --bench minisim
//! cargo bench -p locus-engine --bench minisim -- --quick
//! ```
//!
//! The stream: Zipf(0.9) over 1,000,000 keys, 90% GET and 10% SET, sizes 50..=4,000 bytes fixed
//! per key, 2^21 accesses fed once before measuring and then again in a ring. The simulation:
//! `allkeys-lru`, K = 5, Redis's eviction pool, logical clock, R = 0.01, 10 capacities evenly
//! spaced up to 1,000,000 objects (or the stream's total bytes of distinct keys for `-bytes`).

#![expect(
    missing_docs,
    reason = "criterion_group! defines an undocumented pub fn"
)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use locus_common::Rng;
use locus_engine::minisim::{MiniSim, MiniSimConfig};
use locus_mrc::{Op, Profiler, Unit, even_capacities};

/// Distinct keys in the stream.
const KEYS: u64 = 1_000_000;
/// Zipf exponent.
const ALPHA: f64 = 0.9;
/// Accesses in the stream (the ring).
const LEN: usize = 1 << 21;
/// Spatial sampling rate.
const RATE: f64 = 0.01;
/// Simulated capacities.
const SIZES: usize = 10;

/// One access.
#[derive(Clone, Copy)]
struct Access {
    key: u64,
    size: u32,
    op: Op,
}

/// A key's size: 50..=4,000 bytes.
fn size_of(key: u64) -> u32 {
    50 + (key % 3_951) as u32
}

/// Zipf(`ALPHA`) over `KEYS` keys by inverse CDF; 10% SETs (the same stream as locus-mrc's
/// profiler benches).
fn stream() -> Vec<Access> {
    let mut cdf = Vec::with_capacity(KEYS as usize);
    let mut s = 0.0;
    for i in 1..=KEYS {
        s += 1.0 / (i as f64).powf(ALPHA);
        cdf.push(s);
    }
    let mut rng = Rng::new(42);
    (0..LEN)
        .map(|_| {
            let u = rng.next_f64() * s;
            let rank = cdf.partition_point(|&c| c < u) as u64;
            let key = rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8;
            let op = if rng.below(10) == 0 { Op::Set } else { Op::Get };
            Access {
                key,
                size: size_of(key),
                op,
            }
        })
        .collect()
}

fn minisim(c: &mut Criterion) {
    let stream = stream();
    let mut distinct: Vec<u64> = stream.iter().map(|a| a.key).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let bytes: u64 = distinct.iter().map(|&k| u64::from(size_of(k))).sum();
    let mut g = c.benchmark_group("access");
    g.throughput(Throughput::Elements(1));
    for (name, unit, max) in [
        ("minisim-R0.01", Unit::Objects, KEYS as f64),
        ("minisim-bytes-R0.01", Unit::Bytes, bytes as f64),
    ] {
        let mut p = MiniSim::new(MiniSimConfig {
            unit,
            ..MiniSimConfig::new(RATE, even_capacities(max, SIZES))
        })
        .expect("valid miniature simulation");
        for a in &stream {
            p.access(a.key, a.size, a.op);
        }
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                let a = stream[i];
                i = (i + 1) % stream.len();
                p.access(black_box(a.key), black_box(a.size), black_box(a.op));
            })
        });
    }
    g.finish();
}

criterion_group!(benches, minisim);
criterion_main!(benches);
