//! RESP request parsing and reply encoding: the per-command protocol cost of the server's
//! request path.
//!
//! ```text
//! cargo bench -p locus-protocol --bench resp
//! cargo bench -p locus-protocol --bench resp -- pipeline/     # one group
//! cargo bench -p locus-protocol --bench resp -- --quick       # a short run
//! ```
//!
//! Groups:
//! * `parse`: one complete request with [`parse_into`] and a reused argument vector, as the
//!   server parses (throughput in request bytes); `get-alloc` is the same GET through [`parse`],
//!   which allocates its [`locus_protocol::Command`]; `set-100b-incomplete` is a SET whose last
//!   bytes have not arrived (the answer is "read more");
//! * `pipeline`: a batch of 16 requests in one buffer, parsed to the end with one argument
//!   vector cleared per batch (throughput in requests);
//! * `reply`: encoding one reply into a reused output vector.
//!
//! Keys are 16 bytes (`key:000000000042`), values 100 bytes unless the name says otherwise (the
//! sizes `redis-benchmark -d 100` uses in BENCHMARKS.md's throughput runs).

#![expect(
    missing_docs,
    reason = "criterion_group! defines an undocumented pub fn"
)]

use std::borrow::Cow;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use locus_protocol::{Limits, ProtocolVersion, ReplyWriter, parse, parse_into};

const KEY: &[u8] = b"key:000000000042";

/// A multibulk request of `args`.
fn multibulk(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn value(len: usize) -> Vec<u8> {
    vec![b'v'; len]
}

/// The typical requests, by bench name.
fn requests() -> Vec<(&'static str, Vec<u8>)> {
    let v100 = value(100);
    let v4k = value(4096);
    let mget: Vec<Vec<u8>> = (0..10)
        .map(|i| format!("key:{i:012}").into_bytes())
        .collect();
    let mut mget_args: Vec<&[u8]> = vec![b"MGET"];
    mget_args.extend(mget.iter().map(Vec::as_slice));
    vec![
        ("get", multibulk(&[b"GET", KEY])),
        ("set-100b", multibulk(&[b"SET", KEY, &v100])),
        ("set-4kib", multibulk(&[b"SET", KEY, &v4k])),
        (
            "set-100b-ex",
            multibulk(&[b"SET", KEY, &v100, b"EX", b"3600"]),
        ),
        ("mget-10", multibulk(&mget_args)),
        ("ping-inline", b"PING\r\n".to_vec()),
        ("get-inline", b"GET key:000000000042\r\n".to_vec()),
        (
            "set-inline-quoted",
            b"SET \"key 42\" \"v\\x41lue\\n\"\r\n".to_vec(),
        ),
    ]
}

fn parse_one(c: &mut Criterion) {
    let limits = Limits::default();
    let mut g = c.benchmark_group("parse");
    for (name, req) in requests() {
        g.throughput(Throughput::Bytes(req.len() as u64));
        let mut args: Vec<Cow<'_, [u8]>> = Vec::with_capacity(16);
        g.bench_function(name, |b| {
            b.iter(|| {
                args.clear();
                let n = parse_into(black_box(&req), &limits, &mut args)
                    .expect("valid request")
                    .expect("complete request");
                black_box((n, args.len()))
            })
        });
    }
    let get = multibulk(&[b"GET", KEY]);
    g.throughput(Throughput::Bytes(get.len() as u64));
    g.bench_function("get-alloc", |b| {
        b.iter(|| {
            let (cmd, n) = parse(black_box(&get), &limits)
                .expect("valid request")
                .expect("complete request");
            black_box((cmd.args.len(), n))
        })
    });
    let set = multibulk(&[b"SET", KEY, &value(100)]);
    let partial = &set[..set.len() - 10];
    g.throughput(Throughput::Bytes(partial.len() as u64));
    let mut args: Vec<Cow<'_, [u8]>> = Vec::with_capacity(16);
    g.bench_function("set-100b-incomplete", |b| {
        b.iter(|| {
            let r = parse_into(black_box(partial), &limits, &mut args).expect("valid so far");
            assert!(r.is_none(), "incomplete");
        })
    });
    g.finish();
}

fn pipeline(c: &mut Criterion) {
    const DEPTH: usize = 16;
    let limits = Limits::default();
    let v100 = value(100);
    let keys: Vec<Vec<u8>> = (0..DEPTH)
        .map(|i| format!("key:{i:012}").into_bytes())
        .collect();
    let gets: Vec<u8> = keys.iter().flat_map(|k| multibulk(&[b"GET", k])).collect();
    let sets: Vec<u8> = keys
        .iter()
        .flat_map(|k| multibulk(&[b"SET", k, &v100]))
        .collect();
    let mixed: Vec<u8> = keys
        .iter()
        .enumerate()
        .flat_map(|(i, k)| match i % 4 {
            0 => multibulk(&[b"SET", k, &v100]),
            _ => multibulk(&[b"GET", k]),
        })
        .collect();
    let mut g = c.benchmark_group("pipeline");
    g.throughput(Throughput::Elements(DEPTH as u64));
    for (name, buf) in [
        ("get-16", gets),
        ("set-100b-16", sets),
        ("get3-set1-16", mixed),
    ] {
        let mut args: Vec<Cow<'_, [u8]>> = Vec::with_capacity(64);
        g.bench_function(name, |b| {
            b.iter(|| {
                args.clear();
                let buf = black_box(&buf[..]);
                let (mut at, mut commands) = (0, 0);
                while let Some(n) = parse_into(&buf[at..], &limits, &mut args).expect("valid") {
                    at += n;
                    commands += 1;
                }
                assert_eq!(commands, DEPTH);
                black_box(args.len())
            })
        });
    }
    g.finish();
}

fn reply(c: &mut Criterion) {
    let v100 = value(100);
    let mut out = Vec::with_capacity(4096);
    let mut g = c.benchmark_group("reply");
    g.throughput(Throughput::Elements(1));
    let mut bench = |name: &str, proto: ProtocolVersion, f: &dyn Fn(&mut ReplyWriter<'_>)| {
        g.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                let mut w = ReplyWriter::new(&mut out, proto);
                f(&mut w);
                black_box(out.len())
            })
        });
    };
    let resp2 = ProtocolVersion::Resp2;
    bench("ok", resp2, &|w| w.ok());
    bench("bulk-100b", resp2, &|w| w.bulk(black_box(&v100)));
    bench("null", resp2, &|w| w.null());
    bench("integer", resp2, &|w| w.integer(black_box(1_234_567)));
    bench("array-10-bulk-100b", resp2, &|w| {
        w.array(10);
        for _ in 0..10 {
            w.bulk(black_box(&v100));
        }
    });
    bench("double-resp3", ProtocolVersion::Resp3, &|w| {
        w.double(black_box(0.125))
    });
    g.finish();
}

criterion_group!(benches, parse_one, pipeline, reply);
criterion_main!(benches);
