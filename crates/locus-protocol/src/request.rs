//! Request parsing: multibulk and inline commands, with Redis's limits and error wording.
//!
//! Contract: [`parse`] looks at a byte slice that starts at a command boundary and returns
//! * `Ok(Some((command, consumed)))`: one complete command, `0 < consumed <= buf.len()`; an empty
//!   command (an empty inline line, `*0\r\n`, `*-1\r\n`) has no arguments and the caller skips it;
//! * `Ok(None)`: the command is incomplete; read more bytes and call again with the same start;
//! * `Err(e)`: the input violates the protocol or a limit. [`ProtocolError::framing_lost`] says
//!   whether the connection must be closed after the error reply (Redis closes on every protocol
//!   error; Locus keeps the connection only where the command's end is known).
//!
//! Limits are checked before allocating or waiting: a declared `$9999999999` fails at once instead of
//! waiting for (or reserving) 9 GB.

use std::borrow::Cow;

/// Protocol limits (the server fills them from its configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string (Redis's `proto-max-bulk-len`, default 512 MB).
    pub max_bulk_len: usize,
    /// Most elements in a multibulk request (Redis: 1024*1024 before authentication).
    pub max_array_len: usize,
    /// Longest inline command line, and longest `*N`/`$N` header line (Redis: 64 KiB).
    pub max_inline_len: usize,
    /// The client has not authenticated where authentication is required: at most
    /// [`UNAUTHENTICATED_MAX_ARRAY_LEN`] elements of at most [`UNAUTHENTICATED_MAX_BULK_LEN`]
    /// bytes each, as Redis limits them (so a client that cannot log in cannot make the server
    /// hold megabytes).
    pub unauthenticated: bool,
}

/// Redis's limit on the elements of an unauthenticated client's request.
pub const UNAUTHENTICATED_MAX_ARRAY_LEN: i64 = 10;
/// Redis's limit on each bulk of an unauthenticated client's request.
pub const UNAUTHENTICATED_MAX_BULK_LEN: i64 = 16384;

/// Redis's `proto-max-bulk-len` default: 512 MB.
pub const DEFAULT_MAX_BULK_LEN: usize = 512 * 1024 * 1024;
/// Default most elements in one request.
pub const DEFAULT_MAX_ARRAY_LEN: usize = 1024 * 1024;
/// Redis's `PROTO_INLINE_MAX_SIZE`: 64 KiB.
pub const DEFAULT_MAX_INLINE_LEN: usize = 64 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bulk_len: DEFAULT_MAX_BULK_LEN,
            max_array_len: DEFAULT_MAX_ARRAY_LEN,
            max_inline_len: DEFAULT_MAX_INLINE_LEN,
            unauthenticated: false,
        }
    }
}

/// A parsed command: its arguments, borrowed from the input buffer when possible (multibulk
/// arguments always are; inline arguments with quotes or escapes are owned).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Command<'a> {
    /// The arguments, command name first. Empty for an empty request.
    pub args: Vec<Cow<'a, [u8]>>,
}

impl Command<'_> {
    /// True for an empty request (nothing to execute, nothing to reply).
    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }
}

/// A protocol violation. `Display` gives Redis's error reply text (without the leading `-`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// `*N` with N not an integer or larger than the array limit.
    #[error("ERR Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// `$N` with N not an integer, negative or larger than the bulk limit.
    #[error("ERR Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// `*N` over Redis's limit for a client that has not authenticated.
    #[error("ERR Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    /// `$N` over Redis's limit for a client that has not authenticated.
    #[error("ERR Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
    /// An element of a multibulk request that is not a bulk string.
    #[error("ERR Protocol error: expected '$', got '{}'", *.0 as char)]
    ExpectedDollar(u8),
    /// A `*N` header line longer than the inline limit without its line end.
    #[error("ERR Protocol error: too big mbulk count string")]
    TooBigMultibulkCount,
    /// A `$N` header line longer than the inline limit without its line end.
    #[error("ERR Protocol error: too big bulk count string")]
    TooBigBulkCount,
    /// An inline line longer than the inline limit.
    #[error("ERR Protocol error: too big inline request")]
    TooBigInline,
    /// An inline line with an unterminated quote (the line end is known: framing kept).
    #[error("ERR Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes {
        /// Bytes of the offending line including its terminator, to skip.
        consumed: usize,
    },
    /// A bulk string not followed by `\r\n`.
    #[error("ERR Protocol error: expected CRLF after bulk string")]
    MissingCrlf,
}

impl ProtocolError {
    /// Whether the stream position of the next command is unknown after this error, so the
    /// connection must be closed after the error reply. `None` means framing is lost; `Some(n)`
    /// means skip `n` bytes and carry on.
    pub fn framing_lost(&self) -> Option<usize> {
        match self {
            ProtocolError::UnbalancedQuotes { consumed } => Some(*consumed),
            _ => None,
        }
    }
}

/// Parses one command from the start of `buf`. See the module docs for the contract.
///
/// Allocates the argument vector; a server loop that parses many commands uses [`parse_into`],
/// which appends to a vector it reuses.
///
/// # Errors
/// A [`ProtocolError`] when the input is not valid RESP or exceeds a limit.
pub fn parse<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<Option<(Command<'a>, usize)>, ProtocolError> {
    let mut args = Vec::new();
    Ok(parse_into(buf, limits, &mut args)?.map(|n| (Command { args }, n)))
}

/// Like [`parse`], but appends the command's arguments to `args` instead of returning a
/// [`Command`]: `Ok(Some(consumed))` after appending them (none for an empty request),
/// `Ok(None)` and `Err(_)` with `args` as it was. A caller that keeps one vector for a whole
/// pipeline batch allocates nothing per command.
///
/// # Errors
/// A [`ProtocolError`] when the input is not valid RESP or exceeds a limit.
pub fn parse_into<'a>(
    buf: &'a [u8],
    limits: &Limits,
    args: &mut Vec<Cow<'a, [u8]>>,
) -> Result<Option<usize>, ProtocolError> {
    let mark = args.len();
    let r = match buf.first() {
        None => Ok(None),
        Some(b'*') => parse_multibulk(buf, limits, args),
        Some(_) => parse_inline(buf, limits, args),
    };
    if !matches!(r, Ok(Some(_))) {
        args.truncate(mark);
    }
    r
}

/// Finds the `\r\n` ending the header line that starts at `start`; `Err` when it is not there
/// within `max` bytes. Returns the index of `\r`.
fn find_crlf(
    buf: &[u8],
    start: usize,
    max: usize,
    too_big: ProtocolError,
) -> Result<Option<usize>, ProtocolError> {
    let window_end = buf.len().min(start.saturating_add(max).saturating_add(2));
    match memchr::memchr(b'\r', &buf[start..window_end]) {
        Some(i) => {
            let pos = start + i;
            if pos - start > max {
                return Err(too_big);
            }
            Ok(Some(pos))
        }
        None => {
            if buf.len() - start > max {
                Err(too_big)
            } else {
                Ok(None)
            }
        }
    }
}

/// Parses a non-negative decimal length as Redis's `string2ll` does (optional '-', digits only).
fn parse_len(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    let (neg, digits) = match bytes[0] {
        b'-' => (true, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
    }
    Some(if neg { -v } else { v })
}

/// Most digits the fast header path reads (10^18 - 1 fits an `i64` without overflow checks).
const FAST_DIGITS: usize = 18;

/// Reads the `*N` / `$N` header number that starts at `start` (just after the type byte).
///
/// `Ok(Some((n, cr)))` with `cr` the index of the `\r` ending the line, `Ok(None)` when the line
/// (or the byte after its `\r`) is not complete yet, `Err(too_big)` for a line longer than `max`,
/// `Err(invalid)` for a number `string2ll` refuses.
///
/// Requests are mostly made of 1 to 3 digit headers (`*2`, `$3`, `$100`), so those are matched
/// in place; longer lines go through [`header_number_slow`]. Every path gives the answer of the
/// general one (`find_crlf` + `parse_len`), as the test `header_fast_path_agrees_with_general_path`
/// checks on random input.
#[inline(always)]
fn header_number(
    buf: &[u8],
    start: usize,
    max: usize,
    too_big: ProtocolError,
    invalid: ProtocolError,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let digit = |b: u8| {
        let d = b.wrapping_sub(b'0');
        (d <= 9).then_some(i64::from(d))
    };
    // Each pattern needs one byte after the `\r` (Redis skips two bytes without checking '\n').
    if let Some(rest) = buf.get(start..) {
        match *rest {
            [a, b'\r', _, ..] if max >= 1 => {
                if let Some(a) = digit(a) {
                    return Ok(Some((a, start + 1)));
                }
            }
            [a, b, b'\r', _, ..] if max >= 2 => {
                if let (Some(a), Some(b)) = (digit(a), digit(b)) {
                    return Ok(Some((a * 10 + b, start + 2)));
                }
            }
            [a, b, c, b'\r', _, ..] if max >= 3 => {
                if let (Some(a), Some(b), Some(c)) = (digit(a), digit(b), digit(c)) {
                    return Ok(Some((a * 100 + b * 10 + c, start + 3)));
                }
            }
            _ => {}
        }
    }
    header_number_slow(buf, start, max, too_big, invalid)
}

/// [`header_number`] for lines that are not 1 to 3 digits: up to [`FAST_DIGITS`] digits in one
/// pass without overflow checks, anything else (a sign, other bytes, a missing or far `\r`) by
/// the general path.
#[inline(never)]
fn header_number_slow(
    buf: &[u8],
    start: usize,
    max: usize,
    too_big: ProtocolError,
    invalid: ProtocolError,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let mut i = start;
    let mut v: i64 = 0;
    let limit = buf.len().min(start + FAST_DIGITS);
    while i < limit {
        let d = buf[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v * 10 + i64::from(d);
        i += 1;
    }
    if i > start && i - start <= max && i + 1 < buf.len() && buf[i] == b'\r' {
        return Ok(Some((v, i)));
    }
    header_number_general(buf, start, max, too_big, invalid)
}

/// The general path of [`header_number`].
fn header_number_general(
    buf: &[u8],
    start: usize,
    max: usize,
    too_big: ProtocolError,
    invalid: ProtocolError,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let Some(cr) = find_crlf(buf, start, max, too_big)? else {
        return Ok(None);
    };
    // Redis accepts the line up to '\r' and skips 2 bytes; it does not verify the '\n'.
    if cr + 1 >= buf.len() {
        return Ok(None);
    }
    let n = parse_len(&buf[start..cr]).ok_or(invalid)?;
    Ok(Some((n, cr)))
}

/// How far an incomplete multibulk request was checked: the next call resumes there instead of
/// walking (and collecting) its elements again, so a request that arrives in many reads costs
/// time in proportion to its bytes, not to their square (see [`resume_multibulk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pending {
    /// Elements the request declares (0: its header is not read yet).
    declared: usize,
    /// Elements complete so far.
    done: usize,
    /// Bytes from the request's start to the end of the last complete element (0: none read).
    offset: usize,
}

/// The end of a multibulk walk.
enum Walk {
    /// The request ends after this many bytes.
    Complete(usize),
    /// More bytes are needed; the walk got this far.
    Incomplete(Pending),
}

/// Walks the multibulk request at the start of `buf` from `from` (the header first when
/// `from.offset` is 0), calling `push` with each complete element, and checking every limit
/// on the way.
#[inline]
fn walk_multibulk<'a>(
    buf: &'a [u8],
    limits: &Limits,
    from: Pending,
    mut push: impl FnMut(&'a [u8]),
) -> Result<Walk, ProtocolError> {
    let (n, mut pos, done) = if from.offset == 0 {
        let Some((n, cr)) = header_number(
            buf,
            1,
            limits.max_inline_len,
            ProtocolError::TooBigMultibulkCount,
            ProtocolError::InvalidMultibulkLength,
        )?
        else {
            return Ok(Walk::Incomplete(Pending::default()));
        };
        let pos = cr + 2;
        if n <= 0 {
            return Ok(Walk::Complete(pos));
        }
        if n as u64 > limits.max_array_len as u64 {
            return Err(ProtocolError::InvalidMultibulkLength);
        }
        if limits.unauthenticated && n > UNAUTHENTICATED_MAX_ARRAY_LEN {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        (n as usize, pos, 0)
    } else {
        (from.declared, from.offset, from.done)
    };
    let incomplete = |done, offset| {
        Ok(Walk::Incomplete(Pending {
            declared: n,
            done,
            offset,
        }))
    };
    for i in done..n {
        let Some(&first) = buf.get(pos) else {
            return incomplete(i, pos);
        };
        if first != b'$' {
            return Err(ProtocolError::ExpectedDollar(first));
        }
        let Some((len, cr)) = header_number(
            buf,
            pos + 1,
            limits.max_inline_len,
            ProtocolError::TooBigBulkCount,
            ProtocolError::InvalidBulkLength,
        )?
        else {
            return incomplete(i, pos);
        };
        if len < 0 || len as u64 > limits.max_bulk_len as u64 {
            return Err(ProtocolError::InvalidBulkLength);
        }
        if limits.unauthenticated && len > UNAUTHENTICATED_MAX_BULK_LEN {
            return Err(ProtocolError::UnauthenticatedBulkLength);
        }
        let len = len as usize;
        let start = cr + 2;
        let end = start + len;
        if buf.len() < end + 2 {
            return incomplete(i, pos);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(ProtocolError::MissingCrlf);
        }
        push(&buf[start..end]);
        pos = end + 2;
    }
    Ok(Walk::Complete(pos))
}

#[inline]
fn parse_multibulk<'a>(
    buf: &'a [u8],
    limits: &Limits,
    args: &mut Vec<Cow<'a, [u8]>>,
) -> Result<Option<usize>, ProtocolError> {
    match walk_multibulk(buf, limits, Pending::default(), |a| {
        args.push(Cow::Borrowed(a));
    })? {
        Walk::Complete(n) => Ok(Some(n)),
        Walk::Incomplete(_) => Ok(None),
    }
}

/// Checks, without collecting anything, whether the multibulk request at the start of `buf` is
/// complete, resuming from `pending` (start from `Pending::default()`) and advancing it. `true`
/// when the request is complete or fails a limit: [`parse_into`] then parses it (or reports its
/// error); `false` when more bytes are needed. Only the bytes after `pending` are looked at, so
/// `buf` must start with the same request each time (more bytes after it are fine). An error
/// is left for [`parse_into`], which finds the same one.
pub fn resume_multibulk(buf: &[u8], limits: &Limits, pending: &mut Pending) -> bool {
    if buf.first() != Some(&b'*') || (pending.offset > 0 && pending.offset > buf.len()) {
        return true;
    }
    match walk_multibulk(buf, limits, *pending, |_| {}) {
        Ok(Walk::Incomplete(p)) => {
            *pending = p;
            false
        }
        Ok(Walk::Complete(_)) | Err(_) => true,
    }
}

fn parse_inline<'a>(
    buf: &'a [u8],
    limits: &Limits,
    args: &mut Vec<Cow<'a, [u8]>>,
) -> Result<Option<usize>, ProtocolError> {
    let window = &buf[..buf.len().min(limits.max_inline_len.saturating_add(1))];
    let Some(nl) = memchr::memchr(b'\n', window) else {
        if buf.len() > limits.max_inline_len {
            return Err(ProtocolError::TooBigInline);
        }
        return Ok(None);
    };
    let consumed = nl + 1;
    let mut line = &buf[..nl];
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    if split_args(line, args) {
        Ok(Some(consumed))
    } else {
        Err(ProtocolError::UnbalancedQuotes { consumed })
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c)
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline line into arguments with the quoting rules of Redis's `sdssplitargs`:
/// `"..."` with `\n \r \t \b \a \\ \" \xHH` escapes, `'...'` with `\'`; a closing quote must be
/// followed by a space or the end. Appends the arguments to `args`; `false` on unbalanced quotes
/// (the caller drops what was appended).
fn split_args<'a>(line: &'a [u8], args: &mut Vec<Cow<'a, [u8]>>) -> bool {
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return true;
        }
        let start = i;
        let mut owned: Option<Vec<u8>> = None;
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            if in_dq {
                if i >= n {
                    return false;
                }
                let c = line[i];
                let buf = owned.get_or_insert_with(Vec::new);
                if c == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && hex_val(line[i + 2]).is_some()
                    && hex_val(line[i + 3]).is_some()
                {
                    let hi = hex_val(line[i + 2]).unwrap_or(0);
                    let lo = hex_val(line[i + 3]).unwrap_or(0);
                    buf.push(hi * 16 + lo);
                    i += 4;
                    continue;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    buf.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return false;
                    }
                    i += 1;
                    break;
                } else {
                    buf.push(c);
                }
                i += 1;
            } else if in_sq {
                if i >= n {
                    return false;
                }
                let c = line[i];
                let buf = owned.get_or_insert_with(Vec::new);
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    buf.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return false;
                    }
                    i += 1;
                    break;
                } else {
                    buf.push(c);
                }
                i += 1;
            } else {
                if i >= n || is_space(line[i]) {
                    break;
                }
                match line[i] {
                    b'"' => {
                        let buf = owned.get_or_insert_with(Vec::new);
                        buf.extend_from_slice(&line[start..i]);
                        in_dq = true;
                    }
                    b'\'' => {
                        let buf = owned.get_or_insert_with(Vec::new);
                        buf.extend_from_slice(&line[start..i]);
                        in_sq = true;
                    }
                    c => {
                        if let Some(b) = owned.as_mut() {
                            b.push(c);
                        }
                    }
                }
                i += 1;
            }
        }
        args.push(match owned {
            Some(v) => Cow::Owned(v),
            None => Cow::Borrowed(&line[start..i]),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Parsed = Result<Option<(Vec<Vec<u8>>, usize)>, ProtocolError>;

    fn p(buf: &[u8]) -> Parsed {
        parse(buf, &Limits::default())
            .map(|o| o.map(|(c, n)| (c.args.iter().map(|a| a.to_vec()).collect(), n)))
    }

    fn args(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_complete_and_incomplete() {
        let full = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
        assert_eq!(p(full).unwrap(), Some((args(&["GET", "key"]), full.len())));
        for cut in 0..full.len() {
            assert_eq!(p(&full[..cut]).unwrap(), None, "prefix of {cut} bytes");
        }
        let mut two = full.to_vec();
        two.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(p(&two).unwrap().unwrap().1, full.len());
    }

    #[test]
    fn binary_safe_bulk() {
        let buf = b"*1\r\n$4\r\na\r\n\0\r\n";
        assert_eq!(
            p(buf).unwrap(),
            Some((vec![b"a\r\n\0".to_vec()], buf.len()))
        );
    }

    #[test]
    fn empty_multibulk_is_skipped() {
        assert_eq!(p(b"*0\r\n").unwrap(), Some((vec![], 4)));
        assert_eq!(p(b"*-1\r\n").unwrap(), Some((vec![], 5)));
    }

    #[test]
    fn huge_declared_sizes_fail_before_waiting() {
        assert_eq!(
            p(b"*99999999999\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            p(b"*1\r\n$9999999999\r\n"),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(p(b"*1\r\n$-5\r\n"), Err(ProtocolError::InvalidBulkLength));
        assert_eq!(p(b"*abc\r\n"), Err(ProtocolError::InvalidMultibulkLength));
        assert_eq!(p(b"*1\r\n$1x\r\n"), Err(ProtocolError::InvalidBulkLength));
        assert_eq!(p(b"*1\r\nx\r\n"), Err(ProtocolError::ExpectedDollar(b'x')));
        assert_eq!(
            ProtocolError::ExpectedDollar(b'x').to_string(),
            "ERR Protocol error: expected '$', got 'x'"
        );
        assert_eq!(p(b"*1\r\n$1\r\nab\r\n"), Err(ProtocolError::MissingCrlf));
    }

    #[test]
    fn long_header_lines_are_refused() {
        let mut buf = b"*".to_vec();
        buf.extend(std::iter::repeat_n(b'1', 70_000));
        assert_eq!(p(&buf), Err(ProtocolError::TooBigMultibulkCount));
        let mut buf = b"*1\r\n$".to_vec();
        buf.extend(std::iter::repeat_n(b'1', 70_000));
        assert_eq!(p(&buf), Err(ProtocolError::TooBigBulkCount));
    }

    #[test]
    fn inline_commands() {
        assert_eq!(p(b"PING\r\n").unwrap(), Some((args(&["PING"]), 6)));
        assert_eq!(
            p(b"set a  b\n").unwrap(),
            Some((args(&["set", "a", "b"]), 9))
        );
        assert_eq!(p(b"\r\n").unwrap(), Some((vec![], 2)));
        assert_eq!(p(b"PING").unwrap(), None);
        assert_eq!(
            p(b"set \"a b\" 'c\\'d' \"\\x41\\n\"\r\n")
                .unwrap()
                .unwrap()
                .0,
            vec![
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c'd".to_vec(),
                b"A\n".to_vec()
            ]
        );
        assert_eq!(
            p(b"set \"a\r\nPING\r\n"),
            Err(ProtocolError::UnbalancedQuotes { consumed: 8 })
        );
        assert_eq!(
            p(b"get \"a\"b\n"),
            Err(ProtocolError::UnbalancedQuotes { consumed: 9 })
        );
        let big = vec![b'a'; 70_000];
        assert_eq!(p(&big), Err(ProtocolError::TooBigInline));
    }

    #[test]
    fn parse_into_appends_and_restores() {
        let l = Limits::default();
        let mut args = vec![Cow::Borrowed(&b"keep"[..])];
        let buf = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n";
        let n = parse_into(buf, &l, &mut args).unwrap().unwrap();
        assert_eq!(n, 20);
        assert_eq!(parse_into(&buf[n..], &l, &mut args).unwrap(), Some(14));
        let got: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        assert_eq!(got, [&b"keep"[..], b"GET", b"k", b"PING"]);
        // Incomplete and invalid requests leave the vector as it was, even after a partial parse.
        for bad in [
            &b"*2\r\n$3\r\nGET\r\n$1\r\n"[..],
            b"*2\r\n$3\r\nGET\r\nx",
            b"a \"b",
        ] {
            let _ = parse_into(bad, &l, &mut args);
            assert_eq!(args.len(), 4, "{:?}", String::from_utf8_lossy(bad));
        }
        // Inline requests append too.
        assert_eq!(parse_into(b"set a b\r\n", &l, &mut args).unwrap(), Some(9));
        assert_eq!(args.len(), 7);
    }

    #[test]
    fn header_numbers() {
        let h = |b: &[u8], max: usize| {
            header_number(
                b,
                1,
                max,
                ProtocolError::TooBigBulkCount,
                ProtocolError::InvalidBulkLength,
            )
        };
        assert_eq!(h(b"$3\r\n", 64), Ok(Some((3, 2))));
        assert_eq!(h(b"$3\r", 64), Ok(None));
        assert_eq!(h(b"$3", 64), Ok(None));
        assert_eq!(h(b"$007\rx", 64), Ok(Some((7, 4))));
        assert_eq!(h(b"$-1\r\n", 64), Ok(Some((-1, 3))));
        assert_eq!(h(b"$\r\n", 64), Err(ProtocolError::InvalidBulkLength));
        assert_eq!(h(b"$1 \r\n", 64), Err(ProtocolError::InvalidBulkLength));
        assert_eq!(h(b"$123\r\n", 2), Err(ProtocolError::TooBigBulkCount));
        assert_eq!(
            h(b"$999999999999999999\r\n", 64),
            Ok(Some((999_999_999_999_999_999, 19)))
        );
        assert_eq!(h(b"$9223372036854775807\r\n", 64), Ok(Some((i64::MAX, 20))));
        assert_eq!(
            h(b"$9223372036854775808\r\n", 64),
            Err(ProtocolError::InvalidBulkLength)
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]

        /// The one-pass header reader answers exactly as the general (memchr + string2ll) path.
        #[test]
        fn header_fast_path_agrees_with_general_path(
            body in proptest::collection::vec(
                proptest::sample::select(b"0123456789-\r\nx ".to_vec()), 0..30),
            max in 0usize..24,
        ) {
            let mut buf = b"$".to_vec();
            buf.extend_from_slice(&body);
            let too_big = ProtocolError::TooBigBulkCount;
            let invalid = ProtocolError::InvalidBulkLength;
            let general = header_number_general(&buf, 1, max, too_big.clone(), invalid.clone());
            proptest::prop_assert_eq!(
                &header_number(&buf, 1, max, too_big.clone(), invalid.clone()),
                &general
            );
            proptest::prop_assert_eq!(&header_number_slow(&buf, 1, max, too_big, invalid), &general);
        }
    }

    #[test]
    fn custom_limits() {
        let l = Limits {
            max_bulk_len: 3,
            max_array_len: 2,
            max_inline_len: 16,
            unauthenticated: false,
        };
        assert!(parse(b"*3\r\n", &l).is_err());
        assert!(parse(b"*1\r\n$4\r\n", &l).is_err());
        assert!(parse(b"*1\r\n$3\r\nabc\r\n", &l).unwrap().is_some());
        assert_eq!(parse(&[b'x'; 17], &l), Err(ProtocolError::TooBigInline));
    }

    #[test]
    fn unauthenticated_requests_are_small() {
        let l = Limits {
            unauthenticated: true,
            ..Limits::default()
        };
        let eleven = [&b"*11\r\n"[..], &b"$1\r\na\r\n".repeat(11)].concat();
        assert_eq!(
            parse(&eleven, &l),
            Err(ProtocolError::UnauthenticatedMultibulkLength)
        );
        assert!(parse(&eleven, &Limits::default()).unwrap().is_some());
        assert_eq!(
            parse(b"*1\r\n$16385\r\n", &l),
            Err(ProtocolError::UnauthenticatedBulkLength)
        );
        assert_eq!(parse(b"*1\r\n$16384\r\n", &l), Ok(None));
    }

    #[test]
    fn an_incomplete_request_resumes_where_it_stopped() {
        let l = Limits::default();
        let whole = [&b"*4\r\n$3\r\nDEL\r\n"[..], &b"$2\r\nk1\r\n".repeat(3)].concat();
        // Fed a byte at a time: incomplete until the last byte, then parse_into takes it.
        let mut p = Pending::default();
        for end in 1..whole.len() {
            assert!(!resume_multibulk(&whole[..end], &l, &mut p), "{end}");
        }
        assert!(resume_multibulk(&whole, &l, &mut p));
        let (cmd, n) = parse(&whole, &l).unwrap().unwrap();
        assert_eq!((cmd.args.len(), n), (4, whole.len()));
        // An error found on the way is left for parse_into: resume says "go ahead".
        let mut p = Pending::default();
        assert!(!resume_multibulk(b"*2\r\n$1\r\na\r\n", &l, &mut p));
        assert!(resume_multibulk(b"*2\r\n$1\r\na\r\nX", &l, &mut p));
        assert_eq!(
            parse(b"*2\r\n$1\r\na\r\nX", &l),
            Err(ProtocolError::ExpectedDollar(b'X'))
        );
        // Not a multibulk request: nothing to resume.
        assert!(resume_multibulk(b"PING", &l, &mut Pending::default()));
    }
}
