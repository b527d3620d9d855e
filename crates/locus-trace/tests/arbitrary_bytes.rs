//! The fuzz target's invariants (`fuzz/fuzz_targets/readers.rs`) as property tests in the normal
//! suite: every reader on random bytes and on truncated valid files never panics, terminates, and
//! reports errors with a location inside the input. Truncated compressed files are always errors.

use std::io::{Cursor, Write};

use locus_trace::{
    Compression, Format, Location, ReadOptions, Request, TraceError, create,
    generate::{Generator, GeneratorConfig},
    open_stream,
};
use proptest::prelude::*;

/// Reads to the end; checks the invariants; returns the request count or the error.
fn read_checked(body: &[u8], opts: &ReadOptions) -> Result<u64, TraceError> {
    let lines = body.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    // Locations count decompressed bytes and lines: bounded by `body` only when it is plain.
    let plain = opts.compression == Some(Compression::None);
    let check = |e: TraceError| {
        match e.location() {
            Some(Location::Byte(o)) => assert!(!plain || o <= body.len() as u64, "{e}"),
            Some(Location::Line(l)) => assert!(l >= 1 && (!plain || l <= lines), "{e}"),
            None => assert!(
                matches!(e, TraceError::Format { .. } | TraceError::Options(_)),
                "{e}"
            ),
        }
        assert!(
            e.to_string().starts_with("p") || matches!(e, TraceError::Options(_)),
            "{e}"
        );
        e
    };
    let mut r = open_stream("p", Box::new(Cursor::new(body.to_vec())), opts).map_err(check)?;
    let mut req = Request::default();
    let mut n = 0;
    for _ in 0..1_000_000 {
        match r.read_into(&mut req) {
            Ok(true) => n += 1,
            Ok(false) => {
                assert!(!r.read_into(&mut req).unwrap());
                return Ok(n);
            }
            Err(e) => return Err(check(e)),
        }
    }
    Ok(n)
}

fn opts_for(sel: usize) -> ReadOptions {
    let mut o = ReadOptions {
        compression: Some(Compression::None),
        ..ReadOptions::default()
    };
    if sel < Format::ALL.len() {
        o.format = Some(Format::ALL[sel]);
    }
    if o.format == Some(Format::Csv) {
        o.csv = "obj-id-col=1,obj-size-col=2,time-col=3,op-col=4"
            .parse()
            .unwrap();
    }
    o
}

fn generated(format: Format, n: u64) -> Vec<u8> {
    let path = std::env::temp_dir().join(format!("locus-arb-{}-{}", std::process::id(), format));
    let mut g = Generator::new(GeneratorConfig {
        requests: n,
        seed: 1,
        tenants: vec![
            "keys=50,value-size=uniform:1:5000,get=0.8,set=0.2"
                .parse()
                .unwrap(),
        ],
    })
    .unwrap();
    let mut w = create(&path, format).unwrap();
    let mut req = Request::default();
    use locus_trace::RequestReader;
    while g.read_into(&mut req).unwrap() {
        w.write(&req).unwrap();
    }
    w.finish().unwrap();
    let b = std::fs::read(&path).unwrap();
    std::fs::remove_file(path).unwrap();
    b
}

fn compress(kind: Compression, data: &[u8]) -> Vec<u8> {
    match kind {
        Compression::Zstd => {
            let mut e = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
            e.include_checksum(true).unwrap();
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), Default::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Compression::Xz => {
            let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Compression::Bzip2 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), Default::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Compression::None => data.to_vec(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_bytes_never_panic(sel in 0usize..Format::ALL.len() + 1,
                                body in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = read_checked(&body, &opts_for(sel));
    }

    #[test]
    fn text_like_bytes_never_panic(sel in 0usize..Format::ALL.len() + 1,
                                   body in "[0-9a-z,*. \\-\r\n\"]{0,400}") {
        let _ = read_checked(body.as_bytes(), &opts_for(sel));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn truncated_binary_files_are_errors_at_the_record_boundary(cut in 1usize..24 * 300) {
        let full = generated(Format::OracleGeneral, 300);
        let cut = cut.min(full.len() - 1);
        let r = read_checked(&full[..cut], &ReadOptions::with_format(Format::OracleGeneral));
        if cut % 24 == 0 {
            prop_assert_eq!(r.unwrap(), (cut / 24) as u64);
        } else {
            match r {
                Err(TraceError::Truncated { offset, .. }) => prop_assert_eq!(offset, (cut / 24 * 24) as u64),
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }

    #[test]
    fn truncated_compressed_files_are_errors(kind in prop::sample::select(vec![
            Compression::Zstd, Compression::Gzip, Compression::Xz, Compression::Bzip2]),
            frac in 0.0f64..1.0) {
        let plain = generated(Format::LocusCsv, 2000);
        let full = compress(kind, &plain);
        let mut o = ReadOptions::with_format(Format::LocusCsv);
        o.compression = Some(kind);
        prop_assert_eq!(read_checked(&full, &o).unwrap(), 2000);
        let cut = ((full.len() as f64 * frac) as usize).min(full.len() - 1);
        prop_assert!(read_checked(&full[..cut], &o).is_err(), "{:?} cut at {} of {}", kind, cut, full.len());
    }
}
