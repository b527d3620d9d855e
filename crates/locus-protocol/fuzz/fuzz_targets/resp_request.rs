//! cargo-fuzz target: the RESP request parser never panics and keeps its contract on any input
//! (consumed within the input, progress on success, limits respected).
#![no_main]

use libfuzzer_sys::fuzz_target;
use locus_protocol::{Limits, parse};

const LIMITS: Limits = Limits {
    max_bulk_len: 1024,
    max_array_len: 64,
    max_inline_len: 512,
    unauthenticated: false,
};

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    while pos < data.len() {
        match parse(&data[pos..], &LIMITS) {
            Ok(Some((cmd, n))) => {
                assert!(n > 0 && n <= data.len() - pos);
                if data[pos] == b'*' {
                    assert!(cmd.args.len() <= LIMITS.max_array_len);
                    assert!(cmd.args.iter().all(|a| a.len() <= LIMITS.max_bulk_len));
                } else {
                    assert!(n <= LIMITS.max_inline_len + 1);
                }
                pos += n;
            }
            Ok(None) => break,
            Err(e) => match e.framing_lost() {
                Some(n) => {
                    assert!(n > 0 && n <= data.len() - pos);
                    pos += n;
                }
                None => break,
            },
        }
    }
});
