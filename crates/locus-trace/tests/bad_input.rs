//! Bad input is never silently wrong: each case gives an error naming the file and the byte
//! offset or line, and saying what was expected.

use std::io::Cursor;

use locus_trace::{
    CsvOptions, Format, KeyStream, Location, ReadOptions, Request, TraceError, open, open_stream,
};

/// Reads everything; returns the request count or the error.
fn drain(name: &str, bytes: Vec<u8>, opts: &ReadOptions) -> Result<u64, TraceError> {
    let mut r = open_stream(name, Box::new(Cursor::new(bytes)), opts)?;
    let mut req = Request::default();
    let mut n = 0;
    while r.read_into(&mut req)? {
        n += 1;
    }
    Ok(n)
}

fn fmt(f: Format) -> ReadOptions {
    ReadOptions::with_format(f)
}

fn compress(kind: &str, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    match kind {
        "zst" => {
            // With the content checksum, as the zstd CLI writes by default; a frame without one
            // cannot reveal a corrupted payload.
            let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
            e.include_checksum(true).unwrap();
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "gz" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), Default::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "xz" => {
            let mut e = xz2::write::XzEncoder::new(Vec::new(), 6);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "bz2" => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), Default::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        _ => unreachable!(),
    }
}

fn oracle_records(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n as u64 {
        v.extend_from_slice(&(i as u32).to_le_bytes());
        v.extend_from_slice(&(i % 7).to_le_bytes());
        v.extend_from_slice(&100u32.to_le_bytes());
        v.extend_from_slice(&(-1i64).to_le_bytes());
    }
    v
}

#[test]
fn oracle_general_with_a_partial_record_names_the_offset() {
    let mut v = oracle_records(10);
    v.extend_from_slice(&[1, 2, 3, 4, 5]);
    match drain("x.oracleGeneral.bin", v, &ReadOptions::default()) {
        Err(TraceError::Truncated {
            offset,
            record_size,
            remainder,
            ..
        }) => assert_eq!((offset, record_size, remainder), (240, 24, 5)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn oracle_general_with_impossible_next_access_is_not_oracle_general() {
    let mut v = oracle_records(3);
    v[24 + 16..24 + 24].copy_from_slice(&1i64.to_le_bytes()); // record 2 points back to 1
    let e = drain("x", v, &fmt(Format::OracleGeneral)).unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::Invalid {
                at: Location::Byte(40),
                ..
            }
        ),
        "{e}"
    );
    // A text file read as oracleGeneral fails too.
    let text = b"hello this is certainly not a binary trace at all, no no no\n".repeat(3);
    assert!(drain("x", text, &fmt(Format::OracleGeneral)).is_err());
}

#[test]
fn truncated_compressed_streams_are_errors() {
    let data: Vec<u8> = (0..200_000u32)
        .flat_map(|i| (i * 7919).to_be_bytes())
        .collect();
    for kind in ["zst", "gz", "xz", "bz2"] {
        let c = compress(kind, &data);
        let opts = fmt(Format::KeyStream(KeyStream::U32Be));
        assert_eq!(
            drain(&format!("k.{kind}"), c.clone(), &opts).unwrap(),
            200_000
        );
        let cut = c[..c.len() * 2 / 3].to_vec();
        let e = drain(&format!("k.{kind}"), cut, &opts).unwrap_err();
        assert!(matches!(e, TraceError::Read { .. }), "{kind}: {e}");
        assert!(e.to_string().contains(&format!("k.{kind}")), "{e}");
        // Corrupt the middle (keep the length).
        let mut bad = c.clone();
        let mid = bad.len() / 2;
        for b in &mut bad[mid..mid + 64] {
            *b ^= 0x5a;
        }
        assert!(
            drain(&format!("k.{kind}"), bad, &opts).is_err(),
            "{kind} corrupt"
        );
        // Detection by magic bytes when the name says nothing.
        assert_eq!(drain("noext", c, &opts).unwrap(), 200_000);
    }
}

#[test]
fn csv_non_numeric_id_in_numeric_mode_names_the_line() {
    let mut o = fmt(Format::Csv);
    o.csv = "obj-id-col=2,obj-size-col=3,has-header=true"
        .parse::<CsvOptions>()
        .unwrap();
    let data = b"t,id,size\n1,10,100\n2,11,100\n3,abc,100\n".to_vec();
    let e = drain("g.csv", data.clone(), &o).unwrap_err();
    match &e {
        TraceError::Invalid { at, expected, .. } => {
            assert_eq!(*at, Location::Line(4));
            assert!(expected.contains("column 2"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // String ids are fine when asked for.
    o.csv.numeric_ids = false;
    assert_eq!(drain("g.csv", data, &o).unwrap(), 3);
}

#[test]
fn csv_columns_by_name_and_missing_columns() {
    let mut o = fmt(Format::Csv);
    o.csv = "obj-id-col=id,obj-size-col=size,has-header=true"
        .parse::<CsvOptions>()
        .unwrap();
    assert_eq!(drain("g.csv", b"id,size\n1,2\n".to_vec(), &o).unwrap(), 1);
    let e = drain("g.csv", b"key,bytes\n1,2\n".to_vec(), &o).unwrap_err();
    assert!(
        matches!(e, TraceError::Format { .. }) && e.to_string().contains("\"id\""),
        "{e}"
    );
    // A row with too few fields.
    o.csv = "obj-id-col=1,obj-size-col=3".parse::<CsvOptions>().unwrap();
    let e = drain("g.csv", b"1,2,3\n4,5\n".to_vec(), &o).unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::Invalid {
                at: Location::Line(2),
                ..
            }
        ),
        "{e}"
    );
    // No id column at all.
    let o = fmt(Format::Csv);
    assert!(matches!(
        drain("g.csv", b"1\n".to_vec(), &o),
        Err(TraceError::Options(_))
    ));
}

#[test]
fn kvcache_header_without_needed_columns() {
    let data = b"op_time,key,op,size\n1,k,GET,10\n".to_vec();
    let e = drain("kv.csv", data, &fmt(Format::CachelibKvcache)).unwrap_err();
    assert!(e.to_string().contains("key_size"), "{e}");
}

#[test]
fn bigcache_nonpositive_sizes_warn_or_fail_when_strict() {
    let data = b"timestamp,cacheKey,OpType,objectSize\n1,a,1,10\n2,b,1,-1\n3,c,1,0\n".to_vec();
    let mut r = open_stream(
        "b.csv",
        Box::new(Cursor::new(data.clone())),
        &fmt(Format::CachelibBigcache),
    )
    .unwrap();
    let mut req = Request::default();
    let mut sizes = Vec::new();
    while r.read_into(&mut req).unwrap() {
        sizes.push(req.value_size);
    }
    assert_eq!(sizes, vec![10, 0, 0]);
    let w = r.warnings();
    assert_eq!((w.len(), w[0].count, w[0].first), (1, 2, Location::Line(3)));
    let mut strict = fmt(Format::CachelibBigcache);
    strict.strict = true;
    let e = drain("b.csv", data, &strict).unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::Invalid {
                at: Location::Line(3),
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn text_formats_reject_garbage_with_line_numbers() {
    let e = drain(
        "l.trace",
        b"1\n2\n*\nthree\n".to_vec(),
        &fmt(Format::IdPerLine),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::Invalid {
                at: Location::Line(4),
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        drain("l.trace", b"1\n*\n2\n\n3".to_vec(), &fmt(Format::IdPerLine)).unwrap(),
        3
    );
    let e = drain(
        "a.lis",
        b"1 2 0 0\n5 0 0 1\n".to_vec(),
        &fmt(Format::ArcLis),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::Invalid {
                at: Location::Line(2),
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        drain(
            "a.lis",
            b"10 3 0 0\r\n20 1 0 1\r\n".to_vec(),
            &fmt(Format::ArcLis)
        )
        .unwrap(),
        4
    );
    let e = drain("t.csv", b"1,2,8,2,7\n".to_vec(), &fmt(Format::TencentBlock)).unwrap_err();
    assert!(e.to_string().contains("IOType"), "{e}");
    let e = drain("w", b"0,k,3,4,1,frob,0\n".to_vec(), &fmt(Format::Twitter)).unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::Invalid {
                at: Location::Line(1),
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn undetectable_or_wrong_formats_say_so() {
    let e = drain(
        "mystery",
        vec![0, 0, 0, 1, 0, 0, 0, 2],
        &ReadOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, TraceError::Format { .. }) && e.to_string().contains("--format"),
        "{e}"
    );
    let e = drain("empty", vec![], &ReadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    let e = drain("v.vscsi", vec![7; 200], &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, TraceError::Format { .. }), "{e}");
    let e = open("/nonexistent/trace.csv", &ReadOptions::default())
        .err()
        .unwrap();
    assert!(matches!(e, TraceError::Open { .. }));
}

#[test]
fn a_key_stream_of_odd_length_is_truncated() {
    let e = drain(
        "k",
        vec![0; 4 * 5 + 3],
        &fmt(Format::KeyStream(KeyStream::I32Be)),
    )
    .unwrap_err();
    assert!(matches!(e, TraceError::Truncated { offset: 20, .. }), "{e}");
}
