//! Writers and readers agree: what is written is read back unchanged (every compression), and
//! oracleGeneral's next-access positions follow their definition.

use locus_trace::{Format, Op, ReadOptions, Request, create, open, requests};
use proptest::prelude::*;

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("locus-trace-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn write_all(path: &std::path::Path, format: Format, reqs: &[Request]) {
    let mut w = create(path, format).unwrap();
    for r in reqs {
        w.write(r).unwrap();
    }
    assert_eq!(w.finish().unwrap(), reqs.len() as u64);
}

fn read_all(path: &std::path::Path) -> Vec<Request> {
    let mut r = open(path, &ReadOptions::default()).unwrap();
    requests(&mut *r).map(Result::unwrap).collect()
}

fn any_request() -> impl Strategy<Value = Request> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        any::<u64>(),
        0..3u8,
        proptest::option::of(any::<u32>()),
    )
        .prop_map(
            |(time_us, tenant, key, key_size, value_size, op, penalty_us)| Request {
                time_us,
                tenant,
                key,
                key_size,
                value_size,
                op: Op::ALL[op as usize],
                penalty_us,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn locus_csv_round_trips_every_field(reqs in proptest::collection::vec(any_request(), 0..300),
                                         ext in prop::sample::select(vec!["csv", "csv.zst", "csv.gz", "csv.xz", "csv.bz2"])) {
        let path = tmp(&format!("rt.{ext}"));
        write_all(&path, Format::LocusCsv, &reqs);
        prop_assert_eq!(read_all(&path), reqs);
    }

    #[test]
    fn oracle_general_round_trips_what_it_can_hold(
        raw in proptest::collection::vec((0u32..1_000_000, 0u64..50, any::<u32>()), 0..400),
        ext in prop::sample::select(vec!["bin", "bin.zst"])) {
        let reqs: Vec<Request> = raw
            .iter()
            .map(|&(t, k, s)| Request { time_us: t as u64 * 1_000_000, key: k, value_size: s as u64, ..Request::default() })
            .collect();
        let path = tmp(&format!("rt.oracleGeneral.{ext}"));
        write_all(&path, Format::OracleGeneral, &reqs);
        prop_assert_eq!(read_all(&path), reqs.clone());
        if ext == "bin" {
            // next_access_vtime: 1-based position of the next request to the same key, or -1.
            let bytes = std::fs::read(&path).unwrap();
            for (i, rec) in bytes.chunks(24).enumerate() {
                let next = i64::from_le_bytes(rec[16..24].try_into().unwrap());
                let want = reqs[i + 1..]
                    .iter()
                    .position(|r| r.key == reqs[i].key)
                    .map_or(-1, |p| (i + 1 + p + 1) as i64);
                prop_assert_eq!(next, want, "record {}", i);
            }
        }
    }
}

#[test]
fn oracle_general_rejects_what_it_cannot_hold() {
    let path = tmp("big.oracleGeneral.bin");
    let mut w = create(&path, Format::OracleGeneral).unwrap();
    let big = Request {
        value_size: 1 << 33,
        ..Request::default()
    };
    assert!(w.write(&big).unwrap_err().to_string().contains("size"));
    assert!(create(tmp("x.vscsi"), Format::Vscsi).is_err());
}
