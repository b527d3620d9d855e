//! Property-based fuzzing of the request parser (runs everywhere, unlike cargo-fuzz): the same
//! invariants as `fuzz/fuzz_targets/resp_request.rs`, on random bytes and on mutated valid requests.

use locus_protocol::{Limits, parse};
use proptest::prelude::*;

const LIMITS: Limits = Limits {
    max_bulk_len: 64,
    max_array_len: 8,
    max_inline_len: 128,
};

/// Parses every command in `buf` and checks the parser's contract at each step.
fn check(buf: &[u8]) {
    let mut pos = 0;
    while pos < buf.len() {
        match parse(&buf[pos..], &LIMITS) {
            Ok(Some((cmd, n))) => {
                assert!(
                    n > 0 && n <= buf.len() - pos,
                    "consumed {n} of {}",
                    buf.len() - pos
                );
                assert!(cmd.args.len() <= LIMITS.max_array_len.max(LIMITS.max_inline_len));
                if buf[pos] == b'*' {
                    assert!(cmd.args.len() <= LIMITS.max_array_len);
                    assert!(cmd.args.iter().all(|a| a.len() <= LIMITS.max_bulk_len));
                } else {
                    assert!(n <= LIMITS.max_inline_len + 1);
                }
                pos += n;
            }
            Ok(None) => {
                // Incomplete: the pending bytes must stay within what the limits allow to wait for.
                let pending = buf.len() - pos;
                let bound = LIMITS.max_array_len
                    * (LIMITS.max_bulk_len + LIMITS.max_inline_len + 6)
                    + LIMITS.max_inline_len
                    + 3;
                assert!(pending <= bound);
                return;
            }
            Err(e) => match e.framing_lost() {
                Some(n) => {
                    assert!(n > 0 && n <= buf.len() - pos);
                    pos += n;
                }
                None => return,
            },
        }
    }
}

fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn random_bytes(buf in proptest::collection::vec(any::<u8>(), 0..300)) {
        check(&buf);
    }

    #[test]
    fn resp_alphabet(buf in proptest::collection::vec(
        prop::sample::select(b"*$\r\n0123456789-: \"'\\xab".to_vec()), 0..200)) {
        check(&buf);
    }

    #[test]
    fn valid_requests_round_trip(cmds in proptest::collection::vec(
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..8), 1..5)) {
        let mut buf = Vec::new();
        for c in &cmds { buf.extend(encode(c)); }
        let mut pos = 0;
        for c in &cmds {
            let (cmd, n) = parse(&buf[pos..], &LIMITS).unwrap().unwrap();
            let got: Vec<Vec<u8>> = cmd.args.iter().map(|a| a.to_vec()).collect();
            prop_assert_eq!(&got, c);
            pos += n;
        }
        prop_assert_eq!(pos, buf.len());
    }

    #[test]
    fn mutated_requests(args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6),
                        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let mut buf = encode(&args);
        for (i, b) in flips { let j = i.index(buf.len()); buf[j] = b; }
        check(&buf);
    }
}
