//! Fuzz every trace reader on arbitrary bytes.
//!
//! The first byte picks the format (or detection), the rest is the file. Invariants, beyond "no
//! panic": the reader ends (bounded by the input), and every error about content carries a
//! location inside the input: a byte offset not past its end, or a line number not past its
//! line count; a truncated record starts at a multiple of the record size.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use locus_trace::{Format, Location, ReadOptions, Request, TraceError, open_stream};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else { return };
    let mut opts = ReadOptions::default();
    let all = Format::ALL;
    if (sel as usize) < all.len() {
        opts.format = Some(all[sel as usize]);
    }
    if opts.format == Some(Format::Csv) {
        opts.csv = "obj-id-col=1,obj-size-col=2,time-col=3,op-col=4,has-header=false"
            .parse()
            .unwrap();
    }
    opts.compression = Some(locus_trace::Compression::None);
    let lines = body.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let check = |e: &TraceError| match e.location() {
        Some(Location::Byte(o)) => assert!(o <= body.len() as u64, "{e}"),
        Some(Location::Line(l)) => assert!(l >= 1 && l <= lines, "{e}"),
        None => assert!(matches!(e, TraceError::Format { .. } | TraceError::Options(_)), "{e}"),
    };
    let mut r = match open_stream("fuzz", Box::new(Cursor::new(body.to_vec())), &opts) {
        Ok(r) => r,
        Err(e) => return check(&e),
    };
    let mut req = Request::default();
    // ARC .lis expands a line into up to 2^64 blocks: bound the work, not the format.
    for _ in 0..1_000_000 {
        match r.read_into(&mut req) {
            Ok(true) => {}
            Ok(false) => {
                assert!(!r.read_into(&mut req).unwrap(), "end is sticky");
                return;
            }
            Err(e) => {
                if let TraceError::Truncated { offset, record_size, remainder, .. } = &e {
                    assert_eq!(offset % *record_size as u64, 0);
                    assert_eq!(offset + *remainder as u64, body.len() as u64);
                }
                return check(&e);
            }
        }
    }
});
