//! Reply encoding for RESP2 and RESP3.
//!
//! [`ReplyWriter`] appends replies to a `Vec<u8>`; the server writes the whole vector to the socket
//! once per batch of pipelined commands. RESP3 types degrade to RESP2 as Redis degrades them:
//!
//! | RESP3            | RESP2                          |
//! |------------------|--------------------------------|
//! | `_` null         | `$-1` (or `*-1` for null array)  |
//! | `%` map of n     | `*2n` flat array               |
//! | `~` set          | `*` array                      |
//! | `,` double       | `$` bulk string                |
//! | `#` boolean      | `:1` / `:0`                    |
//! | `=` verbatim     | `$` bulk string without format |
//! | `(` big number   | `$` bulk string                |
//! | `>` push         | `*` array                      |

/// What [`ReplyWriter::error`] tells of each error reply it writes (the server's errorstats).
static ERROR_HOOK: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

/// Installs the function every [`ReplyWriter::error`] calls with the error's text (without the
/// `-`), once per process; later calls change nothing. Error replies are rare, so the hook may
/// take a lock.
pub fn set_error_hook(hook: fn(&str)) {
    let _ = ERROR_HOOK.set(hook);
}

/// Which protocol the client speaks (`HELLO 2|3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolVersion {
    /// RESP2 (the default for a new connection).
    #[default]
    Resp2,
    /// RESP3.
    Resp3,
}

impl ProtocolVersion {
    /// 2 or 3.
    pub fn number(self) -> u8 {
        match self {
            ProtocolVersion::Resp2 => 2,
            ProtocolVersion::Resp3 => 3,
        }
    }
}

/// Appends RESP replies to a byte vector.
#[derive(Debug)]
pub struct ReplyWriter<'a> {
    out: &'a mut Vec<u8>,
    proto: ProtocolVersion,
}

impl<'a> ReplyWriter<'a> {
    /// A writer appending to `out` in protocol `proto`.
    pub fn new(out: &'a mut Vec<u8>, proto: ProtocolVersion) -> Self {
        Self { out, proto }
    }

    /// The protocol this writer encodes.
    pub fn proto(&self) -> ProtocolVersion {
        self.proto
    }

    /// Switches the protocol for the replies that follow (after `HELLO`).
    pub fn set_proto(&mut self, proto: ProtocolVersion) {
        self.proto = proto;
    }

    /// Bytes written so far (the whole vector).
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// True when nothing has been written to the vector.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    fn is3(&self) -> bool {
        self.proto == ProtocolVersion::Resp3
    }

    /// `<tag>n\r\n`: the line ahead of every bulk string, array and integer reply. Lines for
    /// 0..=999 (nearly every length and count) are built as one fixed-size array, appended
    /// without a call to `memcpy`; others go through [`ReplyWriter::header_long`].
    #[inline]
    fn header(&mut self, tag: u8, n: i64) {
        let d = |x: i64| b'0' + (x % 10) as u8;
        match n {
            0..=9 => self.out.extend_from_slice(&[tag, d(n), b'\r', b'\n']),
            10..=99 => self
                .out
                .extend_from_slice(&[tag, d(n / 10), d(n), b'\r', b'\n']),
            100..=999 => {
                self.out
                    .extend_from_slice(&[tag, d(n / 100), d(n / 10), d(n), b'\r', b'\n'])
            }
            _ => self.header_long(tag, n),
        }
    }

    /// [`ReplyWriter::header`] for any `n`.
    #[inline(never)]
    fn header_long(&mut self, tag: u8, n: i64) {
        self.out.push(tag);
        let mut b = itoa::Buffer::new();
        self.out.extend_from_slice(b.format(n).as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// `+s\r\n`. `s` MUST NOT contain `\r` or `\n` (callers pass constants).
    pub fn simple(&mut self, s: &str) {
        self.out.push(b'+');
        self.out.extend_from_slice(s.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// `+OK\r\n`.
    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    /// `-msg\r\n`; line breaks inside `msg` are replaced by spaces (as Redis does) so the reply
    /// cannot break framing. Counted by the [`set_error_hook`] hook (INFO errorstats).
    pub fn error(&mut self, msg: &str) {
        if let Some(hook) = ERROR_HOOK.get() {
            hook(msg);
        }
        self.error_uncounted(msg);
    }

    /// [`ReplyWriter::error`] without the count: for an error that was counted where it was
    /// first written (a script passing on the error reply of a command it called).
    pub fn error_uncounted(&mut self, msg: &str) {
        self.out.push(b'-');
        self.out.extend(
            msg.bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.out.extend_from_slice(b"\r\n");
    }

    /// `:n\r\n`.
    pub fn integer(&mut self, n: i64) {
        self.header(b':', n);
    }

    /// `$len\r\nbytes\r\n`.
    pub fn bulk(&mut self, b: &[u8]) {
        self.out.reserve(b.len() + 24);
        self.header(b'$', b.len() as i64);
        self.out.extend_from_slice(b);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A bulk string holding the decimal form of `n`.
    pub fn bulk_int(&mut self, n: i64) {
        let mut b = itoa::Buffer::new();
        let s = b.format(n);
        self.header(b'$', s.len() as i64);
        self.out.extend_from_slice(s.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// The null value: `_\r\n` in RESP3, the null bulk string `$-1\r\n` in RESP2.
    pub fn null(&mut self) {
        if self.is3() {
            self.out.extend_from_slice(b"_\r\n");
        } else {
            self.out.extend_from_slice(b"$-1\r\n");
        }
    }

    /// The null array: `_\r\n` in RESP3, `*-1\r\n` in RESP2.
    pub fn null_array(&mut self) {
        if self.is3() {
            self.out.extend_from_slice(b"_\r\n");
        } else {
            self.out.extend_from_slice(b"*-1\r\n");
        }
    }

    /// Array header of `n` elements; the caller writes them next.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// Map header of `n` key/value pairs (`%n` in RESP3, `*2n` in RESP2).
    pub fn map(&mut self, n: usize) {
        if self.is3() {
            self.header(b'%', n as i64);
        } else {
            self.header(b'*', 2 * n as i64);
        }
    }

    /// Set header of `n` elements (`~n` in RESP3, `*n` in RESP2).
    pub fn set(&mut self, n: usize) {
        self.header(if self.is3() { b'~' } else { b'*' }, n as i64);
    }

    /// Push header of `n` elements (`>n` in RESP3, `*n` in RESP2).
    pub fn push(&mut self, n: usize) {
        self.header(if self.is3() { b'>' } else { b'*' }, n as i64);
    }

    /// A boolean: `#t`/`#f` in RESP3, `:1`/`:0` in RESP2.
    pub fn boolean(&mut self, v: bool) {
        if self.is3() {
            self.out
                .extend_from_slice(if v { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.integer(i64::from(v));
        }
    }

    /// A double: `,x\r\n` in RESP3 (`inf`, `-inf`, `nan`), a bulk string in RESP2.
    pub fn double(&mut self, v: f64) {
        let s = format_double(v);
        if self.is3() {
            self.out.push(b',');
            self.out.extend_from_slice(s.as_bytes());
            self.out.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s.as_bytes());
        }
    }

    /// A big number given as its decimal digits: `(digits\r\n` in RESP3, a bulk string in RESP2.
    pub fn big_number(&mut self, digits: &str) {
        if self.is3() {
            self.out.push(b'(');
            self.out.extend_from_slice(digits.as_bytes());
            self.out.extend_from_slice(b"\r\n");
        } else {
            self.bulk(digits.as_bytes());
        }
    }

    /// Verbatim text with a 3-letter format (`txt`, `mkd`): `=len\r\nfmt:text\r\n` in RESP3, a
    /// plain bulk string in RESP2.
    pub fn verbatim(&mut self, format: &str, text: &[u8]) {
        if self.is3() {
            debug_assert_eq!(format.len(), 3);
            self.header(b'=', (text.len() + 4) as i64);
            self.out.extend_from_slice(format.as_bytes());
            self.out.push(b':');
            self.out.extend_from_slice(text);
            self.out.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// The bytes written since the vector had length `start` (a reply just encoded).
    pub fn written_since(&self, start: usize) -> &[u8] {
        self.out.get(start..).unwrap_or(&[])
    }

    /// Drops everything written after byte `len` (to discard a partial reply).
    pub fn truncate(&mut self, len: usize) {
        self.out.truncate(len);
    }

    /// Appends pre-encoded bytes (a reply the caller built itself).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// Inserts pre-encoded bytes at byte `at` (at most [`ReplyWriter::len`]), ahead of what was
    /// written from there: an out-of-band message that must precede a reply already encoded.
    pub fn insert_raw(&mut self, at: usize, bytes: &[u8]) {
        self.out.splice(at..at, bytes.iter().copied());
    }
}

/// Formats a double the way Redis's RESP3 double reply does for finite values it can print
/// exactly (shortest round-trip form), with `inf`, `-inf` and `nan` for the special values.
pub fn format_double(v: f64) -> String {
    if v.is_nan() {
        "nan".to_string()
    } else if v.is_infinite() {
        if v > 0.0 {
            "inf".to_string()
        } else {
            "-inf".to_string()
        }
    } else if v == v.trunc() && v.abs() < 1e17 {
        format!("{}", v as i64)
    } else {
        let mut b = ryu::Buffer::new();
        let s = b.format_finite(v);
        s.strip_suffix(".0").unwrap_or(s).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(proto: ProtocolVersion, f: impl FnOnce(&mut ReplyWriter<'_>)) -> Vec<u8> {
        let mut v = Vec::new();
        let mut w = ReplyWriter::new(&mut v, proto);
        f(&mut w);
        v
    }

    #[test]
    fn resp2_and_resp3_forms() {
        use ProtocolVersion::*;
        assert_eq!(enc(Resp2, |w| w.null()), b"$-1\r\n");
        assert_eq!(enc(Resp3, |w| w.null()), b"_\r\n");
        assert_eq!(enc(Resp2, |w| w.null_array()), b"*-1\r\n");
        assert_eq!(
            enc(Resp2, |w| {
                w.map(1);
                w.bulk(b"a");
                w.integer(1)
            }),
            b"*2\r\n$1\r\na\r\n:1\r\n"
        );
        assert_eq!(
            enc(Resp3, |w| {
                w.map(1);
                w.bulk(b"a");
                w.integer(-1)
            }),
            b"%1\r\n$1\r\na\r\n:-1\r\n"
        );
        assert_eq!(enc(Resp3, |w| w.set(0)), b"~0\r\n");
        assert_eq!(enc(Resp2, |w| w.double(1.5)), b"$3\r\n1.5\r\n");
        assert_eq!(enc(Resp3, |w| w.double(f64::INFINITY)), b",inf\r\n");
        assert_eq!(enc(Resp3, |w| w.double(3.0)), b",3\r\n");
        assert_eq!(enc(Resp3, |w| w.boolean(true)), b"#t\r\n");
        assert_eq!(enc(Resp2, |w| w.boolean(false)), b":0\r\n");
        assert_eq!(
            enc(Resp3, |w| w.verbatim("txt", b"hi")),
            b"=6\r\ntxt:hi\r\n"
        );
        assert_eq!(enc(Resp2, |w| w.verbatim("txt", b"hi")), b"$2\r\nhi\r\n");
        assert_eq!(enc(Resp3, |w| w.big_number("123")), b"(123\r\n");
        assert_eq!(enc(Resp3, |w| w.push(2)), b">2\r\n");
        assert_eq!(enc(Resp2, |w| w.error("ERR a\r\nb")), b"-ERR a  b\r\n");
        assert_eq!(enc(Resp2, |w| w.bulk_int(-42)), b"$3\r\n-42\r\n");
        assert_eq!(enc(Resp2, |w| w.bulk(b"")), b"$0\r\n\r\n");
        for n in [
            0,
            7,
            9,
            10,
            42,
            99,
            100,
            101,
            999,
            1000,
            12_345,
            i64::MAX,
            -1,
            -10,
            i64::MIN,
        ] {
            assert_eq!(
                enc(Resp2, |w| w.integer(n)),
                format!(":{n}\r\n").into_bytes()
            );
        }
    }

    #[test]
    fn doubles() {
        assert_eq!(format_double(10.6), "10.6");
        assert_eq!(format_double(-0.25), "-0.25");
        assert_eq!(format_double(17179869185.5), "17179869185.5");
        assert_eq!(format_double(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_double(5e-324), "5e-324");
    }
}
