//! Property-based fuzzing of the request parser (runs everywhere, unlike cargo-fuzz): the same
//! invariants as `fuzz/fuzz_targets/resp_request.rs`, on random bytes and on mutated valid requests,
//! plus the parser's buffering contract, checked tightly:
//!
//! * **bounded waiting**: `Ok(None)` (read more) only while the pending bytes can still become a
//!   command the limits allow, so a client can make the server hold at most [`max_pending`] bytes
//!   for one command. The bound is exact: [`longest_waits_are_incomplete`] builds inputs of exactly
//!   that many bytes that the parser waits on, and one more byte gets a verdict. An inline request
//!   waits only while it has no `\n` and fits `max_inline_len`.
//! * **final verdicts**: a verdict on a prefix never changes when more bytes arrive. Every proper
//!   prefix of a complete command is incomplete (never an error, never a shorter command); a
//!   complete command or an error stays the same whatever follows.
//!
//! Both are checked under two sets of limits: [`LIMITS`], and [`SMALL`], so small that inputs of
//! a few hundred bytes go far past every limit (under [`LIMITS`] the longest wait, 776 bytes, is
//! beyond the random inputs; under [`SMALL`] it is 126 bytes, the longest command less one).
//!
//! Mutations of `src/request.rs` tried by hand (each undone), with the tests that fail; the former
//! version of this file bounded the pending bytes at 1,715, which inputs of 300 bytes never reach:
//!
//! * `find_crlf` without its "longer than `max` and no line end" check (the parser waits for a
//!   header line forever): `max_pending` fails in `near_limits`, `random_bytes`, `resp_alphabet`,
//!   `mutated_requests` and `longest_waits_are_incomplete`; the former version passed.
//! * a header line of exactly `max_inline_len` refused (`pos - start >= max`): the final-verdict
//!   check fails in `near_limits` and `longest_waits_are_incomplete` (the answer flips from an
//!   error to a command once the byte after `\r` arrives); the former version passed.
//! * `parse_inline` without its length check, and the bulk completeness test `buf.len() < end + 2`
//!   weakened to `<=`: five and four tests fail (the former version: one each).

use locus_protocol::{Limits, ProtocolError, parse};
use proptest::prelude::*;

/// Limits of the round-trip tests: valid requests of up to 8 arguments of 64 bytes.
const LIMITS: Limits = Limits {
    max_bulk_len: 64,
    max_array_len: 8,
    max_inline_len: 128,
    unauthenticated: false,
};

/// Limits small enough that random inputs of at most 300 bytes exceed each of them many times over.
const SMALL: Limits = Limits {
    max_bulk_len: 16,
    max_array_len: 4,
    max_inline_len: 8,
    unauthenticated: false,
};

/// Characters of the longest `*N`/`$N` line `string2ll` accepts (a sign and 19 digits, or leading
/// zeros): a longer complete header line is an error, but the parser waits for its line end up to
/// `max_inline_len` bytes, as Redis does.
const HEADER_NUMBER_LEN: usize = 20;

/// The most bytes the parser may hold while answering `Ok(None)` for one command, exactly:
///
/// * inline: a line of `max_inline_len` bytes without its `\n`;
/// * multibulk: the array header, every element but the last complete (the longest header number
///   `string2ll` takes, a full bulk), and the last one either one byte short of complete or
///   waiting for the `\n` of its header line (the line itself up to `max_inline_len` bytes);
///   or the array header itself waiting for its line end.
fn max_pending(l: &Limits) -> usize {
    let number = l.max_inline_len.min(HEADER_NUMBER_LEN);
    let header_wait = 1 + l.max_inline_len + 1; // '*' or '$', the line, its '\r'
    let element = 1 + number + 2 + l.max_bulk_len + 2;
    let multibulk = if l.max_array_len == 0 {
        header_wait
    } else {
        let last = (element - 1).max(header_wait);
        (1 + number + 2 + (l.max_array_len - 1) * element + last).max(header_wait)
    };
    multibulk.max(l.max_inline_len)
}

/// Parses every command in `buf` under `limits` and checks the parser's contract at each step.
fn check(buf: &[u8], limits: &Limits) {
    let mut pos = 0;
    while pos < buf.len() {
        let rest = &buf[pos..];
        match parse(rest, limits) {
            Ok(Some((cmd, n))) => {
                assert!(n > 0 && n <= rest.len(), "consumed {n} of {}", rest.len());
                assert!(cmd.args.len() <= limits.max_array_len.max(limits.max_inline_len));
                if rest[0] == b'*' {
                    assert!(cmd.args.len() <= limits.max_array_len);
                    assert!(cmd.args.iter().all(|a| a.len() <= limits.max_bulk_len));
                } else {
                    assert!(n <= limits.max_inline_len + 1);
                    assert_eq!(rest[n - 1], b'\n', "an inline command ends at its line end");
                }
                pos += n;
            }
            Ok(None) => {
                let pending = rest.len();
                assert!(
                    pending <= max_pending(limits),
                    "waits with {pending} bytes pending, more than the {} the limits {limits:?} \
                     allow: {:?}",
                    max_pending(limits),
                    String::from_utf8_lossy(rest)
                );
                if rest[0] != b'*' {
                    assert!(
                        pending <= limits.max_inline_len,
                        "inline wait of {pending} bytes"
                    );
                    assert!(
                        !rest.contains(&b'\n'),
                        "waits on an inline line that has ended"
                    );
                }
                return;
            }
            Err(e) => match e.framing_lost() {
                Some(n) => {
                    assert!(n > 0 && n <= rest.len());
                    pos += n;
                }
                None => return,
            },
        }
    }
}

/// The parser's answer as plain data, to compare answers on different buffers.
type Verdict = Result<Option<(Vec<Vec<u8>>, usize)>, ProtocolError>;

fn verdict(buf: &[u8], limits: &Limits) -> Verdict {
    parse(buf, limits).map(|o| o.map(|(c, n)| (c.args.iter().map(|a| a.to_vec()).collect(), n)))
}

/// Longer prefixes compared with the first verdict, byte by byte (then the whole buffer).
const VERDICT_HORIZON: usize = 64;

/// Feeds `buf` one byte at a time (as a slow client would) and checks that once the parser
/// answers anything but "incomplete", the answer stays the same for the next
/// [`VERDICT_HORIZON`] bytes and for the whole of `buf`.
fn check_final_verdicts(buf: &[u8], limits: &Limits) {
    let mut first: Option<(usize, Verdict)> = None;
    for k in 0..=buf.len() {
        if let Some((at, _)) = &first
            && k > at + VERDICT_HORIZON
            && k < buf.len()
        {
            continue;
        }
        let v = verdict(&buf[..k], limits);
        match &first {
            None => {
                if v != Ok(None) {
                    if let Ok(Some((_, n))) = &v {
                        assert_eq!(
                            *n, k,
                            "a command completed by byte {n} was missed until {k}"
                        );
                    }
                    first = Some((k, v));
                }
            }
            Some((at, seen)) => assert_eq!(
                &v,
                seen,
                "answer after {at} bytes changed at {k} bytes: {:?}",
                String::from_utf8_lossy(&buf[..k])
            ),
        }
    }
}

/// Everything checked for one input, under both sets of limits.
fn check_all(buf: &[u8]) {
    for l in [&LIMITS, &SMALL] {
        check(buf, l);
        check_final_verdicts(buf, l);
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

/// `*N`/`$N` header with `zeros` leading zeros (legal, as in Redis: `$0003` is 3).
fn header(kind: u8, n: usize, zeros: usize) -> Vec<u8> {
    let mut v = vec![kind];
    v.extend(std::iter::repeat_n(b'0', zeros));
    v.extend_from_slice(n.to_string().as_bytes());
    v.extend_from_slice(b"\r\n");
    v
}

/// A multibulk request with padded headers; `declared` overrides the element count.
fn padded(args: &[Vec<u8>], zeros: &[usize], declared: Option<usize>) -> Vec<u8> {
    let z = |i: usize| zeros.get(i % zeros.len().max(1)).copied().unwrap_or(0);
    let mut v = header(b'*', declared.unwrap_or(args.len()), z(0));
    for (i, a) in args.iter().enumerate() {
        v.extend(header(b'$', a.len(), z(i + 1)));
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

#[test]
fn max_pending_values() {
    // SMALL: header numbers fit max_inline_len, so the longest wait is the longest legal command
    // (`*00000004` and four `$00000016` elements of 16 bytes) less its last byte.
    assert_eq!(
        max_pending(&SMALL),
        1 + 8 + 2 + 4 * (1 + 8 + 2 + 16 + 2) - 1
    );
    // LIMITS: the last element may wait for the end of a 128-byte header line.
    assert_eq!(
        max_pending(&LIMITS),
        1 + 20 + 2 + 7 * (1 + 20 + 2 + 64 + 2) + 130
    );
}

/// The bound is attained: inputs of exactly `max_pending` bytes are incomplete, and the next
/// byte turns them into a complete command or an error, never a longer wait.
#[test]
fn longest_waits_are_incomplete() {
    for l in [&LIMITS, &SMALL] {
        let number = l.max_inline_len.min(HEADER_NUMBER_LEN);
        let pad = |n: usize| number - n.to_string().len();
        let arg = vec![b'x'; l.max_bulk_len];
        let full: Vec<Vec<u8>> = vec![arg.clone(); l.max_array_len];
        let mut zeros = vec![pad(l.max_array_len)];
        zeros.extend(std::iter::repeat_n(pad(l.max_bulk_len), l.max_array_len));
        let longest = padded(&full, &zeros, None);
        let mut waits = vec![longest[..longest.len() - 1].to_vec()];
        // The last element waiting for the end of a header line as long as the limit allows.
        let mut long_line = padded(&full[..l.max_array_len - 1], &zeros, Some(l.max_array_len));
        long_line.push(b'$');
        long_line.extend(std::iter::repeat_n(b'0', l.max_inline_len));
        long_line.push(b'\r');
        waits.push(long_line);
        let longest_wait = waits.iter().map(Vec::len).max().unwrap_or(0);
        assert_eq!(longest_wait, max_pending(l), "{l:?}");
        for w in &waits {
            assert_eq!(
                verdict(w, l),
                Ok(None),
                "{l:?}: {:?}",
                String::from_utf8_lossy(w)
            );
            check(w, l);
            if w.len() == longest_wait {
                let mut next = w.clone();
                next.push(b'\n');
                assert_ne!(verdict(&next, l), Ok(None), "{l:?}");
            }
        }
        assert_eq!(
            verdict(&longest, l),
            Ok(Some((full.clone(), longest.len())))
        );
        // One byte more than a limit allows anywhere is refused, not waited for.
        let too_long_bulk = padded(&[vec![b'x'; l.max_bulk_len + 1]], &[0], None);
        assert_eq!(
            verdict(&too_long_bulk, l),
            Err(ProtocolError::InvalidBulkLength)
        );
        let too_many = header(b'*', l.max_array_len + 1, 0);
        assert_eq!(
            verdict(&too_many, l),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        let mut long_header = vec![b'*'];
        long_header.extend(std::iter::repeat_n(b'0', l.max_inline_len + 1));
        assert_eq!(
            verdict(&long_header, l),
            Err(ProtocolError::TooBigMultibulkCount)
        );
        let long_inline = vec![b'a'; l.max_inline_len + 1];
        assert_eq!(verdict(&long_inline, l), Err(ProtocolError::TooBigInline));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn random_bytes(buf in proptest::collection::vec(any::<u8>(), 0..300)) {
        check_all(&buf);
    }

    #[test]
    fn resp_alphabet(buf in proptest::collection::vec(
        prop::sample::select(b"*$\r\n0123456789-: \"'\\xab".to_vec()), 0..200)) {
        check_all(&buf);
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
        check_final_verdicts(&buf, &LIMITS);
    }

    #[test]
    fn mutated_requests(args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6),
                        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let mut buf = encode(&args);
        for (i, b) in flips { let j = i.index(buf.len()); buf[j] = b; }
        check_all(&buf);
    }

    /// Requests around SMALL's limits: header lines padded with leading zeros up to and past
    /// `max_inline_len`, bulks up to and past `max_bulk_len`, counts up to and past
    /// `max_array_len`, declared counts that disagree with the elements sent, cut anywhere.
    #[test]
    fn near_limits(args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..=18), 0..=5),
                   zeros in proptest::collection::vec(0usize..=10, 1..=6),
                   declared in proptest::option::of(0usize..=6),
                   cut in any::<prop::sample::Index>(),
                   tail in proptest::collection::vec(any::<u8>(), 0..8)) {
        let mut buf = padded(&args, &zeros, declared);
        buf.extend(tail);
        let cut = cut.index(buf.len() + 1);
        check_all(&buf[..cut]);
        check_all(&buf);
    }
}
