//! The tokenizer both protocols share: line framing under the line limits, splitting a line into
//! space-separated tokens, memcached's number converters and its key rule.
//!
//! memcached splits on the space byte only: a tab or a `\r` inside a line is part of a token
//! (and, in a key, refused by [`is_valid_key`]). A line ends at the first `\n`; one `\r` before
//! it is dropped.

use super::{ErrorKind, MemcacheError, MemcacheLimits};

/// Longest key memcached accepts (`KEY_MAX_LENGTH`).
pub const KEY_MAX_LENGTH: usize = 250;

/// Tokens of a line kept by position (memcached's tokenizer keeps 24 offsets); later tokens are
/// still counted, and reached through [`Split::rest`].
pub(crate) const MAX_TOKENS: usize = 24;

/// Bytes a plain scan looks at before [`find`] hands the rest to `memchr`.
const SHORT_SCAN: usize = 64;

/// The position of the first `byte` in `s`. Command lines and their tokens are short (a request
/// line is typically under 64 bytes, a key at most 250), and for a few dozen bytes a plain scan
/// costs a fraction of `memchr`'s dispatch and setup (callgrind on 1-key gets: six `memchr`
/// calls a request, about 70 instructions each); longer spans (multi-get lines) still go to
/// `memchr` past the first [`SHORT_SCAN`] bytes.
#[inline]
pub(crate) fn find(byte: u8, s: &[u8]) -> Option<usize> {
    let head = &s[..s.len().min(SHORT_SCAN)];
    if let Some(i) = head.iter().position(|&b| b == byte) {
        return Some(i);
    }
    if s.len() <= SHORT_SCAN {
        return None;
    }
    memchr::memchr(byte, &s[SHORT_SCAN..]).map(|i| i + SHORT_SCAN)
}

/// Whether `key` is a key memcached's protocol allows: 1 to [`KEY_MAX_LENGTH`] bytes, no space
/// and no control character (bytes `0x00..=0x20` and `0x7f`). Bytes above `0x7f` (UTF-8) are
/// allowed.
pub fn is_valid_key(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= KEY_MAX_LENGTH && key.iter().all(|&b| b > b' ' && b != 0x7f)
}

/// The space-separated tokens of a line, borrowed from it. Runs of spaces count as one
/// separator; leading and trailing spaces are ignored. Two `Tokens` are equal when they yield
/// the same tokens.
#[derive(Clone, Copy, Default)]
pub struct Tokens<'a> {
    rest: &'a [u8],
}

impl<'a> Tokens<'a> {
    /// The tokens of `line` (a line without its `\r\n`).
    pub fn new(line: &'a [u8]) -> Self {
        Self { rest: line }
    }

    /// The text not yet iterated over, as it was sent (spaces included).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.rest
    }

    /// True when no token is left.
    pub fn is_empty(&self) -> bool {
        self.rest.iter().all(|&b| b == b' ')
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let Some(start) = self.rest.iter().position(|&b| b != b' ') else {
            self.rest = &[];
            return None;
        };
        let tail = &self.rest[start..];
        let end = find(b' ', tail).unwrap_or(tail.len());
        self.rest = &tail[end..];
        Some(&tail[..end])
    }
}

impl PartialEq for Tokens<'_> {
    fn eq(&self, other: &Self) -> bool {
        Iterator::eq(*self, *other)
    }
}

impl Eq for Tokens<'_> {}

impl std::fmt::Debug for Tokens<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.map(String::from_utf8_lossy))
            .finish()
    }
}

/// A command line: its text without the terminator, and the bytes it takes in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    /// The line without its `\n` and the `\r` before it.
    pub text: &'a [u8],
    /// Bytes from the start of the buffer through the `\n`.
    pub consumed: usize,
}

/// Whether `buf` starts a line allowed the multi-get length.
fn is_multiget(buf: &[u8]) -> bool {
    buf.starts_with(b"get ") || buf.starts_with(b"gets ")
}

/// Whether `buf` is too short to tell, and may still become a multi-get line.
fn may_become_multiget(buf: &[u8]) -> bool {
    buf.len() < 5 && (b"get ".starts_with(buf) || b"gets ".starts_with(buf))
}

/// Finds the command line at the start of `buf`: `Ok(None)` while its `\n` has not arrived and
/// it is within the limits, `Err` (closing the connection) once it is longer than them.
pub(crate) fn next_line<'a>(
    buf: &'a [u8],
    limits: &MemcacheLimits,
) -> Result<Option<Line<'a>>, MemcacheError> {
    let short = limits.max_line;
    let long = limits.max_multiget_line.max(short);
    let window = &buf[..buf.len().min(long.saturating_add(1))];
    match find(b'\n', window) {
        Some(nl) => {
            let limit = if is_multiget(buf) { long } else { short };
            if nl > limit {
                return Err(MemcacheError::close(ErrorKind::LineTooLong));
            }
            let mut text = &buf[..nl];
            if let [rest @ .., b'\r'] = text {
                text = rest;
            }
            Ok(Some(Line {
                text,
                consumed: nl + 1,
            }))
        }
        None => {
            let waiting_ok = buf.len() <= short
                || (buf.len() <= long && (is_multiget(buf) || may_become_multiget(buf)));
            if waiting_ok {
                Ok(None)
            } else {
                Err(MemcacheError::close(ErrorKind::LineTooLong))
            }
        }
    }
}

/// The command name: the line up to its first space (empty when the line starts with one, which
/// memcached treats as an unknown command).
pub(crate) fn command_name(line: &[u8]) -> &[u8] {
    &line[..find(b' ', line).unwrap_or(line.len())]
}

/// A line split into tokens kept by position, for commands whose arguments sit at fixed places.
#[derive(Debug, Clone)]
pub(crate) struct Split<'a> {
    line: &'a [u8],
    /// `(start, end)` of the first [`MAX_TOKENS`] tokens.
    spans: [(usize, usize); MAX_TOKENS],
    /// Every token of the line, including those past [`MAX_TOKENS`].
    count: usize,
    /// Span of the last token.
    last: (usize, usize),
}

impl<'a> Split<'a> {
    /// Splits `line` (without its terminator).
    pub fn new(line: &'a [u8]) -> Self {
        let mut spans = [(0, 0); MAX_TOKENS];
        let mut count = 0;
        let mut last = (0, 0);
        let mut i = 0;
        while i < line.len() {
            if line[i] == b' ' {
                i += 1;
                continue;
            }
            let end = find(b' ', &line[i..]).map_or(line.len(), |e| i + e);
            if count < MAX_TOKENS {
                spans[count] = (i, end);
            }
            last = (i, end);
            count += 1;
            i = end;
        }
        Self {
            line,
            spans,
            count,
            last,
        }
    }

    /// How many tokens the line holds, the command name included.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Token `i` (0 is the command name), if the line has it and it is among the first
    /// [`MAX_TOKENS`].
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        if i < self.count.min(MAX_TOKENS) {
            let (s, e) = self.spans[i];
            Some(&self.line[s..e])
        } else {
            None
        }
    }

    /// The line from token `i` on (empty when there is no token `i`).
    pub fn rest(&self, i: usize) -> &'a [u8] {
        if i < self.count.min(MAX_TOKENS) {
            &self.line[self.spans[i].0..]
        } else {
            &[]
        }
    }

    /// The last token, if any.
    pub fn last(&self) -> Option<&'a [u8]> {
        (self.count > 0).then(|| &self.line[self.last.0..self.last.1])
    }

    /// Whether the last token is `noreply` (memcached's test, for the commands that take it).
    pub fn noreply(&self) -> bool {
        self.count > 1 && self.last() == Some(b"noreply")
    }
}

/// Longest 32-bit number token memcached converts.
const MAX_DIGITS_32: usize = 11;
/// Longest 64-bit number token memcached converts.
const MAX_DIGITS_64: usize = 22;

/// Digits only, at most `max` of them, no overflow of `u64` (memcached's `mcmc_toktou64`).
fn parse_digits(t: &[u8], max: usize) -> Option<u64> {
    if t.is_empty() || t.len() > max {
        return None;
    }
    let mut v: u64 = 0;
    for &b in t {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// An unsigned 32-bit number as memcached's `mcmc_toktou32` reads it: digits only, at most 11.
pub(crate) fn parse_u32(t: &[u8]) -> Option<u32> {
    u32::try_from(parse_digits(t, MAX_DIGITS_32)?).ok()
}

/// An unsigned 64-bit number as memcached's `mcmc_toktou64` reads it: digits only, at most 22.
pub(crate) fn parse_u64(t: &[u8]) -> Option<u64> {
    parse_digits(t, MAX_DIGITS_64)
}

/// A signed 32-bit number as memcached's `mcmc_tokto32` reads it: an optional `-`, digits, at
/// most 11 characters in all.
pub(crate) fn parse_i32(t: &[u8]) -> Option<i32> {
    if t.len() > MAX_DIGITS_32 {
        return None;
    }
    match t {
        [b'-', digits @ ..] => {
            let v = parse_digits(digits, MAX_DIGITS_32)?;
            i32::try_from(-i64::try_from(v).ok()?).ok()
        }
        _ => i32::try_from(parse_digits(t, MAX_DIGITS_32)?).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(line: &[u8]) -> Vec<&[u8]> {
        Tokens::new(line).collect()
    }

    #[test]
    fn find_agrees_with_memchr_on_both_sides_of_the_short_scan() {
        for len in [0, 1, 2, 63, 64, 65, 127, 128, 300] {
            for at in [
                None,
                Some(0),
                Some(1),
                Some(62),
                Some(63),
                Some(64),
                Some(65),
                Some(299),
            ] {
                let mut s = vec![b'x'; len];
                if let Some(i) = at.filter(|&i| i < len) {
                    s[i] = b' ';
                    // A later match must not win over the first.
                    s.extend_from_slice(b" y");
                }
                assert_eq!(
                    find(b' ', &s),
                    memchr::memchr(b' ', &s),
                    "len {len} at {at:?}"
                );
            }
        }
    }

    #[test]
    fn tokens_split_on_spaces_only() {
        assert_eq!(toks(b"get a b"), [&b"get"[..], b"a", b"b"]);
        assert_eq!(toks(b"  get   a  "), [&b"get"[..], b"a"]);
        assert_eq!(toks(b"a\tb c\rd"), [&b"a\tb"[..], b"c\rd"]);
        assert!(toks(b"").is_empty());
        assert!(toks(b"   ").is_empty());
        assert!(Tokens::new(b"  ").is_empty());
        assert!(!Tokens::new(b" x ").is_empty());
        assert_eq!(Tokens::new(b"a  b"), Tokens::new(b" a b "));
        assert_ne!(Tokens::new(b"a b"), Tokens::new(b"a b c"));
        assert_eq!(format!("{:?}", Tokens::new(b"a b")), "[\"a\", \"b\"]");
        let mut t = Tokens::new(b"a bc");
        t.next();
        assert_eq!(t.as_bytes(), b" bc");
    }

    #[test]
    fn split_by_position() {
        let s = Split::new(b"set  k 0 0 5 noreply ");
        assert_eq!(s.count(), 6);
        assert_eq!(s.get(0), Some(&b"set"[..]));
        assert_eq!(s.get(1), Some(&b"k"[..]));
        assert_eq!(s.get(6), None);
        assert_eq!(s.rest(4), b"5 noreply ");
        assert_eq!(s.rest(6), b"");
        assert_eq!(s.last(), Some(&b"noreply"[..]));
        assert!(s.noreply());
        assert!(!Split::new(b"noreply").noreply());
        assert!(!Split::new(b"").noreply());
        assert_eq!(Split::new(b"").last(), None);
        // Tokens past MAX_TOKENS are counted and the last one is known.
        let mut line = b"get".to_vec();
        for i in 0..30 {
            line.extend_from_slice(format!(" k{i}").as_bytes());
        }
        let s = Split::new(&line);
        assert_eq!(s.count(), 31);
        assert_eq!(s.get(23), Some(&b"k22"[..]));
        assert_eq!(s.get(24), None);
        assert_eq!(s.last(), Some(&b"k29"[..]));
    }

    #[test]
    fn numbers_as_memcached_converts_them() {
        assert_eq!(parse_u32(b"0"), Some(0));
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32(b"4294967296"), None);
        assert_eq!(parse_u32(b"00000000001"), Some(1));
        assert_eq!(parse_u32(b"000000000001"), None, "12 characters");
        assert_eq!(parse_u32(b"-1"), None);
        assert_eq!(parse_u32(b"+1"), None);
        assert_eq!(parse_u32(b"1x"), None);
        assert_eq!(parse_u32(b""), None);
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"0000000000000000000001"), Some(1));
        assert_eq!(parse_u64(b"00000000000000000000001"), None);
        assert_eq!(parse_i32(b"-2147483648"), Some(i32::MIN));
        assert_eq!(parse_i32(b"2147483647"), Some(i32::MAX));
        assert_eq!(parse_i32(b"2147483648"), None);
        assert_eq!(parse_i32(b"-2147483649"), None);
        assert_eq!(parse_i32(b"-0"), Some(0));
        assert_eq!(parse_i32(b"-"), None);
        assert_eq!(parse_i32(b"--1"), None);
        assert_eq!(parse_i32(b"1-"), None);
    }

    #[test]
    fn keys() {
        assert!(is_valid_key(b"a"));
        assert!(is_valid_key(&[b'k'; 250]));
        assert!(!is_valid_key(&[b'k'; 251]));
        assert!(!is_valid_key(b""));
        assert!(!is_valid_key(b"a b"));
        assert!(!is_valid_key(b"a\tb"));
        assert!(!is_valid_key(b"a\rb"));
        assert!(!is_valid_key(b"a\x7f"));
        assert!(!is_valid_key(b"\0"));
        assert!(is_valid_key("clé".as_bytes()));
    }

    fn lim(max_line: usize, max_multiget_line: usize) -> MemcacheLimits {
        MemcacheLimits {
            max_item_size: 1024,
            max_line,
            max_multiget_line,
        }
    }

    #[test]
    fn line_framing() {
        let l = lim(16, 32);
        assert_eq!(
            next_line(b"version\r\nmore", &l),
            Ok(Some(Line {
                text: b"version",
                consumed: 9
            }))
        );
        assert_eq!(
            next_line(b"version\n", &l),
            Ok(Some(Line {
                text: b"version",
                consumed: 8
            }))
        );
        assert_eq!(
            next_line(b"a\r\r\n", &l),
            Ok(Some(Line {
                text: b"a\r",
                consumed: 4
            }))
        );
        assert_eq!(next_line(b"version\r", &l), Ok(None));
        // 16 bytes before the '\n' are allowed; 17 are not, with or without the '\n'.
        assert!(next_line(&[b'x'; 16], &l).unwrap().is_none());
        let mut ok = vec![b'x'; 16];
        ok.push(b'\n');
        assert!(next_line(&ok, &l).unwrap().is_some());
        let close = Err(MemcacheError::close(ErrorKind::LineTooLong));
        assert_eq!(next_line(&[b'x'; 17], &l), close);
        let mut long = vec![b'x'; 17];
        long.push(b'\n');
        assert_eq!(next_line(&long, &l), close);
        // get/gets lines have the multi-get limit.
        let mut get = b"get ".to_vec();
        get.extend([b'k'; 28]);
        assert_eq!(next_line(&get, &l), Ok(None));
        get.push(b'k');
        assert_eq!(next_line(&get, &l), close);
        get.pop();
        get.push(b'\n');
        assert!(next_line(&get, &l).unwrap().is_some());
        let mut gat = b"gat 1 ".to_vec();
        gat.extend([b'k'; 11]);
        assert_eq!(next_line(&gat, &l), close);
        // A limit shorter than "gets " waits until the command name is known.
        let tiny = lim(2, 32);
        assert_eq!(next_line(b"get", &tiny), Ok(None));
        assert_eq!(next_line(b"gets", &tiny), Ok(None));
        assert_eq!(next_line(b"gets k", &tiny), Ok(None));
        assert_eq!(next_line(b"gex", &tiny), close);
    }

    #[test]
    fn command_names() {
        assert_eq!(command_name(b"get a b"), b"get");
        assert_eq!(command_name(b"version"), b"version");
        assert_eq!(command_name(b" get"), b"");
    }
}
