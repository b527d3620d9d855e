//! The cost of one access fed to each profiler, and of computing a 100-point curve.
//!
//! ```text
//! cargo bench -p locus-mrc --bench profilers                  # every model
//! cargo bench -p locus-mrc --bench profilers -- access/krr    # one model
//! cargo bench -p locus-mrc --bench profilers -- --quick       # a short run
//! ```
//!
//! The stream: Zipf(0.9) over 1,000,000 keys (ranks scattered over the id space), 90% GET and 10%
//! SET, sizes 50..=4,000 bytes fixed per key; 2^21 accesses, fed once before measuring so the
//! model state (stack, tables, histograms) is at its steady size, then again and again in a ring.
//! The sampled models run at R = 0.01 (the rate of the accuracy goal, BENCHMARKS.md) and at
//! R = 1 (every key). The miniature simulation lives in `locus-engine` and is benched there
//! (`benches/minisim.rs`, same stream).
//!
//! Groups:
//! * `access`: one `Profiler::access` (criterion's time per iteration = ns per access);
//! * `mrc_100`: `Profiler::mrc` at 100 evenly spaced capacities after the stream.

#![expect(
    missing_docs,
    reason = "criterion_group! defines an undocumented pub fn"
)]

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use locus_common::Rng;
use locus_mrc::{
    Aet, Eaet, ExactLru, Footprint, Krr, KrrConfig, Metric, Op, Profiler, Shards, ShardsConfig,
    ShardsMode, Unit, even_capacities,
};

/// Distinct keys in the stream.
const KEYS: u64 = 1_000_000;
/// Zipf exponent.
const ALPHA: f64 = 0.9;
/// Accesses in the stream (the ring).
const LEN: usize = 1 << 21;
/// Sampling rate of the sampled variants.
const RATE: f64 = 0.01;

/// One access.
#[derive(Clone, Copy)]
struct Access {
    key: u64,
    size: u32,
    op: Op,
}

/// Zipf(`ALPHA`) over `KEYS` keys by inverse CDF; 10% SETs; sizes from the key.
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
                size: 50 + (key % 3_951) as u32,
                op,
            }
        })
        .collect()
}

/// Something done with every model: its bench name and a fresh profiler (static dispatch, so the
/// access path is measured as a caller holding the concrete type sees it).
trait Visit {
    fn visit<P: Profiler>(&mut self, name: &str, p: P);
}

/// Every model and variant, in the order of the crate documentation.
fn for_each_model(v: &mut impl Visit) {
    let objects = Unit::Objects;
    v.visit("exact", ExactLru::new(objects, Metric::Requests));
    v.visit("exact-bytes", ExactLru::new(Unit::Bytes, Metric::Requests));
    v.visit("shards-R0.01", shards(ShardsMode::FixedRate(RATE)));
    v.visit("shards-fixed8k", shards(ShardsMode::FixedSize(8_192)));
    v.visit("aet-R0.01", aet(RATE));
    v.visit("aet-R1", aet(1.0));
    v.visit("eaet-R0.01", eaet(RATE, objects));
    v.visit("eaet-R1", eaet(1.0, objects));
    v.visit("eaet-bytes-R0.01", eaet(RATE, Unit::Bytes));
    v.visit("footprint-R0.01", footprint(RATE));
    v.visit("footprint-R1", footprint(1.0));
    v.visit("krr-K5-R0.01", krr(RATE, objects));
    v.visit("krr-K5-R1", krr(1.0, objects));
    v.visit("krr-K5-bytes-R0.01", krr(RATE, Unit::Bytes));
}

fn shards(mode: ShardsMode) -> Shards {
    Shards::new(ShardsConfig {
        mode,
        unit: Unit::Objects,
        metric: Metric::Requests,
        seed: 0,
        adjust: true,
    })
    .expect("valid SHARDS config")
}

fn aet(rate: f64) -> Aet {
    Aet::new(rate, Metric::Requests, 0).expect("valid AET rate")
}

fn eaet(rate: f64, unit: Unit) -> Eaet {
    Eaet::new(rate, unit, Metric::Requests, 0).expect("valid EAET rate")
}

fn footprint(rate: f64) -> Footprint {
    Footprint::new(rate, 0).expect("valid footprint rate")
}

fn krr(rate: f64, unit: Unit) -> Krr {
    Krr::new(KrrConfig {
        rate,
        unit,
        ..KrrConfig::new(5)
    })
    .expect("valid KRR config")
}

/// Feeds the whole stream once.
fn feed(p: &mut impl Profiler, stream: &[Access]) {
    for a in stream {
        p.access(a.key, a.size, a.op);
    }
}

/// `access/<name>`: one access per iteration, after one pass over the stream.
struct AccessBench<'a, 'c> {
    group: BenchmarkGroup<'c, WallTime>,
    stream: &'a [Access],
}

impl Visit for AccessBench<'_, '_> {
    fn visit<P: Profiler>(&mut self, name: &str, mut p: P) {
        let stream = self.stream;
        feed(&mut p, stream);
        let mut i = 0;
        self.group.bench_function(name, |b| {
            b.iter(|| {
                let a = stream[i];
                i = (i + 1) % stream.len();
                p.access(black_box(a.key), black_box(a.size), black_box(a.op));
            })
        });
    }
}

/// `mrc_100/<name>`: the curve at 100 capacities up to the working set, after one pass. (The
/// access benches feed far more than one pass, and footprint's curve costs O(accesses), so the
/// curves get profilers of their own.)
struct CurveBench<'a, 'c> {
    group: BenchmarkGroup<'c, WallTime>,
    stream: &'a [Access],
}

impl Visit for CurveBench<'_, '_> {
    fn visit<P: Profiler>(&mut self, name: &str, mut p: P) {
        feed(&mut p, self.stream);
        let capacities = even_capacities(p.working_set(), 100);
        self.group.bench_function(name, |b| {
            b.iter(|| black_box(p.mrc(black_box(&capacities)).expect("valid capacities")))
        });
    }
}

fn access(c: &mut Criterion, stream: &[Access]) {
    let mut group = c.benchmark_group("access");
    group.throughput(Throughput::Elements(1));
    let mut access = AccessBench { group, stream };
    for_each_model(&mut access);
    access.group.finish();
}

fn curves(c: &mut Criterion, stream: &[Access]) {
    let mut group = c.benchmark_group("mrc_100");
    // A curve takes microseconds to tens of milliseconds: fewer samples keep the run short.
    group.sample_size(20);
    let mut curve = CurveBench { group, stream };
    for_each_model(&mut curve);
    curve.group.finish();
}

fn profilers(c: &mut Criterion) {
    let stream = stream();
    access(c, &stream);
    curves(c, &stream);
}

criterion_group!(benches, profilers);
criterion_main!(benches);
