//! The meta commands: `mg` (get), `ms` (set), `md` (delete), `ma` (arithmetic), `me` (debug)
//! and `mn` (no-op), with their flags and base64 keys.
//!
//! A meta line is `<cm> <key> [<datalen>] <flag>*`; a flag is one letter, optionally followed by
//! its argument in the same token (`v`, `T30`, `Oabc`). The parser validates the flags as
//! memcached's `_meta_flag_preparse` does and keeps them in request order ([`MetaFlags`]), so
//! the server decides what each one means for each command and answers with the return flags
//! in the same order:
//!
//! * every keyed command accepts every flag memcached knows (`b c f h k l q s t u v x I O P L M
//!   N R T C E F J D`); `P` and `L` are proxy hints memcached ignores. Any other letter is
//!   `CLIENT_ERROR invalid flag`, a letter given twice `CLIENT_ERROR duplicate flag`;
//! * `N`, `T`, `R` take a signed 32-bit argument, `C`, `E`, `J`, `D` an unsigned 64-bit one, `F`
//!   an unsigned 32-bit one; a missing or malformed argument is an error (see [`ErrorKind`]);
//!   when several arguments are bad the last one decides the message, as in memcached;
//! * `M` takes a mode letter, checked for `ms` (`E` add, `A` append, `P` prepend, `R` replace,
//!   `S` set) and `ma` (`I` or `+` increment, `D` or `-` decrement);
//! * an `O` token is at most 32 bytes (the `O` included);
//! * a line holds at most 20 tokens (`CLIENT_ERROR options flags are too long`);
//! * `b`: the key is base64 and is decoded here ([`MetaKey::bytes`]); its encoded form is at
//!   most 250 characters, as memcached checks the key before decoding it;
//! * every error of `ma`'s key and flags is `CLIENT_ERROR invalid or duplicate flag` (memcached
//!   replaces the message);
//! * `ms` needs its `<datalen>`: without a valid one the line is
//!   `CLIENT_ERROR bad command line format` and nothing is swallowed; with one, every later
//!   error swallows the data block, and `SERVER_ERROR object too large for cache` is given for a
//!   block above the item size limit.
//!
//! Meta errors are always sent, `q` or not. `me` is validated like the others (memcached reads
//! only its `b` flag and ignores the rest; a bad `b` key there is `bad command line format`).

use std::borrow::Cow;

use super::text::data_block;
use super::token::{
    KEY_MAX_LENGTH, Line, Split, Tokens, is_valid_key, parse_i32, parse_u32, parse_u64,
};
use super::{ErrorKind, MemcacheError, MemcacheLimits, Recovery, Request};

/// Which meta command (`mn` is [`Request::MetaNoop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaCommand {
    /// `mg <key> <flags>*`.
    Get,
    /// `ms <key> <datalen> <flags>*` and its data block.
    Set,
    /// `md <key> <flags>*`.
    Delete,
    /// `ma <key> <flags>*`.
    Arithmetic,
    /// `me <key> [b]`: a human-readable dump of the item's metadata.
    Debug,
}

impl MetaCommand {
    /// The two-letter command code.
    pub fn code(self) -> &'static str {
        match self {
            MetaCommand::Get => "mg",
            MetaCommand::Set => "ms",
            MetaCommand::Delete => "md",
            MetaCommand::Arithmetic => "ma",
            MetaCommand::Debug => "me",
        }
    }
}

/// The storage mode of `ms` (its `M` flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetMode {
    /// `MS` or no `M` flag: store unconditionally (a `C` flag makes it a compare-and-swap).
    Set,
    /// `ME`: store only if the key holds nothing.
    Add,
    /// `MA`: append to the existing data (with `N`, create the item on a miss).
    Append,
    /// `MP`: prepend to the existing data (with `N`, create the item on a miss).
    Prepend,
    /// `MR`: store only if the key holds an item.
    Replace,
}

impl SetMode {
    fn from_arg(arg: &[u8]) -> Option<Self> {
        Some(match arg.first()? {
            b'S' => SetMode::Set,
            b'E' => SetMode::Add,
            b'A' => SetMode::Append,
            b'P' => SetMode::Prepend,
            b'R' => SetMode::Replace,
            _ => return None,
        })
    }
}

/// The mode of `ma` (its `M` flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithmeticMode {
    /// `MI`, `M+` or no `M` flag.
    Incr,
    /// `MD` or `M-`: stops at 0.
    Decr,
}

impl ArithmeticMode {
    fn from_arg(arg: &[u8]) -> Option<Self> {
        Some(match arg.first()? {
            b'I' | b'+' => ArithmeticMode::Incr,
            b'D' | b'-' => ArithmeticMode::Decr,
            _ => return None,
        })
    }
}

/// The key of a meta command: as sent, and as the item's key (base64-decoded with `b`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaKey<'a> {
    raw: &'a [u8],
    bytes: Cow<'a, [u8]>,
    binary: bool,
}

impl<'a> MetaKey<'a> {
    /// The item's key: the decoded bytes of a `b` key, else the token as sent.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The key token as sent (base64 text for a `b` key).
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Whether the key was sent in base64 (`b` flag); a returned key (`k`) is then encoded too.
    pub fn is_binary(&self) -> bool {
        self.binary
    }
}

/// One flag: its letter and the rest of its token (empty for flags without an argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaFlag<'a> {
    /// The flag letter.
    pub letter: u8,
    /// The argument, as sent.
    pub arg: &'a [u8],
}

/// The validated flags of a meta command, in request order, borrowed from the line.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct MetaFlags<'a> {
    raw: &'a [u8],
    /// Bit `letter - b'A'` for each flag present (every known letter is in `A..=z`).
    present: u64,
}

impl<'a> MetaFlags<'a> {
    /// The flags in request order.
    pub fn iter(&self) -> impl Iterator<Item = MetaFlag<'a>> + use<'a> {
        Tokens::new(self.raw).filter_map(|t| {
            let (&letter, arg) = t.split_first()?;
            Some(MetaFlag { letter, arg })
        })
    }

    /// How many flags.
    pub fn len(&self) -> usize {
        self.present.count_ones() as usize
    }

    /// True when there is no flag.
    pub fn is_empty(&self) -> bool {
        self.present == 0
    }

    /// The flags as sent, separated by spaces.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// Whether flag `letter` is present.
    pub fn has(&self, letter: u8) -> bool {
        letter_bit(letter).is_some_and(|b| self.present & b != 0)
    }

    /// The argument of flag `letter` (empty for a flag without one), if present.
    pub fn arg(&self, letter: u8) -> Option<&'a [u8]> {
        if !self.has(letter) {
            return None;
        }
        self.iter().find(|f| f.letter == letter).map(|f| f.arg)
    }

    /// `q`: quiet mode (no `EN` for `mg`, no `HD` for `ms`/`md`/`ma`; errors are still sent).
    pub fn quiet(&self) -> bool {
        self.has(b'q')
    }

    /// `O<token>`: the opaque token to copy back (without its `O`).
    pub fn opaque(&self) -> Option<&'a [u8]> {
        self.arg(b'O')
    }

    /// `T<ttl>`: the new TTL.
    pub fn ttl(&self) -> Option<i32> {
        self.arg(b'T').and_then(parse_i32)
    }

    /// `N<ttl>`: vivify on miss with this TTL.
    pub fn vivify(&self) -> Option<i32> {
        self.arg(b'N').and_then(parse_i32)
    }

    /// `R<ttl>`: win the recache token if the remaining TTL is below this.
    pub fn recache(&self) -> Option<i32> {
        self.arg(b'R').and_then(parse_i32)
    }

    /// `C<cas>`: compare against the item's CAS value.
    pub fn compare_cas(&self) -> Option<u64> {
        self.arg(b'C').and_then(parse_u64)
    }

    /// `E<cas>`: the CAS value to give the item if it is modified.
    pub fn new_cas(&self) -> Option<u64> {
        self.arg(b'E').and_then(parse_u64)
    }

    /// `F<flags>`: the client flags to store (`ms`).
    pub fn client_flags(&self) -> Option<u32> {
        self.arg(b'F').and_then(parse_u32)
    }

    /// `D<delta>`: the amount to add or subtract (`ma`, default 1).
    pub fn delta(&self) -> Option<u64> {
        self.arg(b'D').and_then(parse_u64)
    }

    /// `J<initial>`: the value of an item `ma` creates on a miss (default 0).
    pub fn initial(&self) -> Option<u64> {
        self.arg(b'J').and_then(parse_u64)
    }

    /// `M<mode>`: the mode letter, if given.
    pub fn mode(&self) -> Option<u8> {
        self.arg(b'M').and_then(|a| a.first().copied())
    }
}

impl std::fmt::Debug for MetaFlags<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(Tokens::new(self.raw).map(String::from_utf8_lossy))
            .finish()
    }
}

/// A meta command with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaRequest<'a> {
    /// Which command.
    pub command: MetaCommand,
    /// The key.
    pub key: MetaKey<'a>,
    /// The flags, validated, in request order.
    pub flags: MetaFlags<'a>,
    /// The data block of `ms`, without its `\r\n` (empty for the other commands).
    pub data: &'a [u8],
}

impl MetaRequest<'_> {
    /// The storage mode of an `ms` (`None` for the other commands).
    pub fn set_mode(&self) -> Option<SetMode> {
        if self.command != MetaCommand::Set {
            return None;
        }
        match self.flags.arg(b'M') {
            Some(m) => SetMode::from_arg(m),
            None => Some(SetMode::Set),
        }
    }

    /// The mode of an `ma` (`None` for the other commands).
    pub fn arithmetic_mode(&self) -> Option<ArithmeticMode> {
        if self.command != MetaCommand::Arithmetic {
            return None;
        }
        match self.flags.arg(b'M') {
            Some(m) => ArithmeticMode::from_arg(m),
            None => Some(ArithmeticMode::Incr),
        }
    }
}

/// The bit of a flag letter in [`MetaFlags::present`].
fn letter_bit(letter: u8) -> Option<u64> {
    (b'A'..=b'z')
        .contains(&letter)
        .then(|| 1u64 << (letter - b'A'))
}

/// Tokens memcached's tokenizer examines (`MCMC_PARSER_MAX_TOKENS - 1`).
const TOKENIZER_TOKENS: usize = 23;
/// Most tokens on a meta line (`MFLAG_MAX_OPT_LENGTH`).
const MAX_META_TOKENS: usize = 20;
/// Longest `O` token, its letter included (`MFLAG_MAX_OPAQUE_LENGTH`).
const MAX_OPAQUE_TOKEN: usize = 32;

/// Parses the meta command `m<letter>`; `None` when it is not one (an unknown command).
pub(crate) fn parse<'a>(
    letter: u8,
    buf: &'a [u8],
    line: Line<'a>,
    limits: &MemcacheLimits,
) -> Option<Result<Option<(Request<'a>, usize)>, MemcacheError>> {
    let command = match letter {
        b'g' => MetaCommand::Get,
        b's' => MetaCommand::Set,
        b'd' => MetaCommand::Delete,
        b'a' => MetaCommand::Arithmetic,
        b'e' => MetaCommand::Debug,
        // `mn` takes nothing; memcached ignores anything after it.
        b'n' => return Some(Ok(Some((Request::MetaNoop, line.consumed)))),
        _ => return None,
    };
    Some(keyed(command, buf, line, limits))
}

fn keyed<'a>(
    command: MetaCommand,
    buf: &'a [u8],
    line: Line<'a>,
    limits: &MemcacheLimits,
) -> Result<Option<(Request<'a>, usize)>, MemcacheError> {
    let s = Split::new(line.text);
    let n = line.consumed;
    let set = command == MetaCommand::Set;
    let first_flag = if set { 3 } else { 2 };
    let bad_line = MemcacheError::keep(ErrorKind::BadFormat, n, false);
    // memcached's tokenizer gives up on a flag token that starts with neither a letter
    // (`A..=z`) nor a digit, and the request is then malformed as a whole.
    for i in first_flag..s.count().min(TOKENIZER_TOKENS) {
        let c = s.get(i).and_then(|t| t.first().copied()).unwrap_or(b'A');
        if !(c.is_ascii_digit() || (b'A'..=b'z').contains(&c)) {
            return Err(bad_line);
        }
    }
    if s.count() < first_flag {
        return Err(bad_line);
    }
    let vlen = if set {
        match s.get(2).and_then(parse_i32) {
            Some(v) if (0..=i32::MAX - 2).contains(&v) => v as usize,
            _ => return Err(bad_line),
        }
    } else {
        0
    };
    let swallow = if set { vlen + 2 } else { 0 };
    let refuse = |kind| MemcacheError {
        kind,
        noreply: false,
        recovery: Recovery::Continue {
            consumed: n,
            swallow,
        },
    };
    let raw_key = s.get(1).unwrap_or_default();
    let (key, flags) = check_flags(raw_key, s.rest(first_flag), s.count()).map_err(|kind| {
        refuse(match (command, kind) {
            (MetaCommand::Arithmetic, _) => ErrorKind::InvalidOrDuplicateFlag,
            (MetaCommand::Debug, ErrorKind::KeyDecode) => ErrorKind::BadFormat,
            (_, kind) => kind,
        })
    })?;
    if let Some(m) = flags.arg(b'M') {
        match command {
            MetaCommand::Set if SetMode::from_arg(m).is_none() => {
                return Err(refuse(ErrorKind::InvalidSetMode));
            }
            MetaCommand::Arithmetic if ArithmeticMode::from_arg(m).is_none() => {
                return Err(refuse(ErrorKind::InvalidArithmeticMode));
            }
            _ => {}
        }
    }
    if set && vlen > limits.max_item_size {
        return Err(refuse(ErrorKind::TooLarge));
    }
    if flags
        .iter()
        .any(|f| f.letter == b'O' && 1 + f.arg.len() > MAX_OPAQUE_TOKEN)
    {
        return Err(refuse(ErrorKind::OpaqueTooLong));
    }
    let (data, total) = if set {
        let total = n + swallow;
        match data_block(buf, n, vlen) {
            None => return Ok(None),
            Some(Err(())) => {
                return Err(MemcacheError::keep(ErrorKind::BadDataChunk, total, false));
            }
            Some(Ok(d)) => (d, total),
        }
    } else {
        (&[][..], n)
    };
    Ok(Some((
        Request::Meta(MetaRequest {
            command,
            key,
            flags,
            data,
        }),
        total,
    )))
}

/// memcached's `_meta_flag_preparse`: the key length, the token count, then each flag in order.
/// Unknown and repeated flags stop at once; bad arguments are remembered (the last one wins) and
/// reported after the loop.
fn check_flags<'a>(
    raw_key: &'a [u8],
    flags_raw: &'a [u8],
    tokens: usize,
) -> Result<(MetaKey<'a>, MetaFlags<'a>), ErrorKind> {
    if raw_key.len() > KEY_MAX_LENGTH {
        return Err(ErrorKind::BadFormat);
    }
    if tokens > MAX_META_TOKENS {
        return Err(ErrorKind::TooManyFlags);
    }
    let mut seen: u128 = 0;
    let mut present: u64 = 0;
    let mut soft: Option<ErrorKind> = None;
    let mut decoded: Option<Vec<u8>> = None;
    for t in Tokens::new(flags_raw) {
        let Some((&letter, arg)) = t.split_first() else {
            continue;
        };
        if letter >= 127 || seen & (1u128 << letter) != 0 {
            return Err(ErrorKind::DuplicateFlag);
        }
        seen |= 1u128 << letter;
        let arg = (!arg.is_empty()).then_some(arg);
        match letter {
            b'b' => match base64_decode(raw_key) {
                Some(k) => decoded = Some(k),
                None => soft = Some(ErrorKind::KeyDecode),
            },
            b'N' | b'T' | b'R' => {
                if arg.and_then(parse_i32).is_none() {
                    soft = Some(ErrorKind::BadToken);
                }
            }
            b'C' | b'E' => {
                if arg.and_then(parse_u64).is_none() {
                    soft = Some(ErrorKind::BadToken);
                }
            }
            // memcached flags the error without setting a message: the message is the last one
            // set before, or the default.
            b'F' => {
                if arg.and_then(parse_u32).is_none() {
                    soft.get_or_insert(ErrorKind::BadFormat);
                }
            }
            b'J' => {
                if arg.and_then(parse_u64).is_none() {
                    soft = Some(ErrorKind::InvalidInitial);
                }
            }
            b'D' => {
                if arg.and_then(parse_u64).is_none() {
                    soft = Some(ErrorKind::InvalidMetaDelta);
                }
            }
            b'c' | b'f' | b'h' | b'k' | b'l' | b'q' | b's' | b't' | b'u' | b'v' | b'x' | b'I'
            | b'L' | b'M' | b'O' | b'P' => {}
            _ => return Err(ErrorKind::InvalidFlag),
        }
        present |= letter_bit(letter).unwrap_or(0);
    }
    if let Some(kind) = soft {
        return Err(kind);
    }
    let key = match decoded {
        Some(bytes) => MetaKey {
            raw: raw_key,
            bytes: Cow::Owned(bytes),
            binary: true,
        },
        None if is_valid_key(raw_key) => MetaKey {
            raw: raw_key,
            bytes: Cow::Borrowed(raw_key),
            binary: false,
        },
        None => return Err(ErrorKind::BadFormat),
    };
    Ok((
        key,
        MetaFlags {
            raw: flags_raw,
            present,
        },
    ))
}

/// The standard base64 alphabet (RFC 4648), as memcached uses.
const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends the base64 form of `src` to `out`, padded with `=`.
pub fn base64_encode(src: &[u8], out: &mut Vec<u8>) {
    out.reserve(src.len().div_ceil(3) * 4);
    for chunk in src.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        let sym = |shift: u32| BASE64[((n >> shift) & 63) as usize];
        out.push(sym(18));
        out.push(sym(12));
        out.push(if chunk.len() > 1 { sym(6) } else { b'=' });
        out.push(if chunk.len() > 2 { sym(0) } else { b'=' });
    }
}

fn sextet(c: u8) -> Option<u32> {
    Some(u32::from(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    }))
}

/// Decodes padded base64 (RFC 4648 alphabet): `None` for an empty input, a length that is not a
/// multiple of 4, a character outside the alphabet, or `=` anywhere but the last one or two
/// places. Unused low bits of the last group are ignored. (memcached's decoder skips invalid
/// characters instead; this one refuses them.)
pub fn base64_decode(src: &[u8]) -> Option<Vec<u8>> {
    if src.is_empty() || !src.len().is_multiple_of(4) {
        return None;
    }
    let groups = src.len() / 4;
    let mut out = Vec::with_capacity(groups * 3);
    for (i, q) in src.chunks_exact(4).enumerate() {
        let pad = if i + 1 == groups {
            q.iter().rev().take_while(|&&c| c == b'=').count()
        } else {
            0
        };
        if pad > 2 {
            return None;
        }
        let mut n: u32 = 0;
        for &c in &q[..4 - pad] {
            n = (n << 6) | sextet(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::{MemcacheLimits, parse as parse_request};
    use super::*;

    type Parsed<'a> = Result<Option<(Request<'a>, usize)>, MemcacheError>;

    fn p(buf: &[u8]) -> Parsed<'_> {
        parse_request(buf, &MemcacheLimits::default())
    }

    fn ok(buf: &[u8]) -> MetaRequest<'_> {
        match p(buf) {
            Ok(Some((Request::Meta(m), n))) => {
                assert_eq!(n, buf.len(), "{:?}", String::from_utf8_lossy(buf));
                m
            }
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
        }
    }

    fn err(buf: &[u8]) -> MemcacheError {
        match p(buf) {
            Err(e) => e,
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
        }
    }

    fn kind(buf: &[u8]) -> ErrorKind {
        err(buf).kind
    }

    fn letters(f: &MetaFlags<'_>) -> Vec<(char, String)> {
        f.iter()
            .map(|f| {
                (
                    f.letter as char,
                    String::from_utf8_lossy(f.arg).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn meta_get_flags_in_order() {
        let m = ok(b"mg foo v k T30 Oabc q\r\n");
        assert_eq!(m.command, MetaCommand::Get);
        assert_eq!(m.key.bytes(), b"foo");
        assert!(!m.key.is_binary());
        assert_eq!(
            letters(&m.flags),
            [
                ('v', String::new()),
                ('k', String::new()),
                ('T', "30".into()),
                ('O', "abc".into()),
                ('q', String::new())
            ]
        );
        assert_eq!(m.flags.len(), 5);
        assert_eq!(m.flags.ttl(), Some(30));
        assert_eq!(m.flags.opaque(), Some(&b"abc"[..]));
        assert!(m.flags.quiet());
        assert!(m.flags.has(b'v'));
        assert!(!m.flags.has(b'c'));
        assert!(!m.flags.has(b'!'));
        assert_eq!(m.flags.arg(b'k'), Some(&b""[..]));
        assert_eq!(m.flags.arg(b'c'), None);
        assert_eq!(m.data, b"");
        assert_eq!(m.set_mode(), None);
        assert_eq!(
            format!("{:?}", m.flags),
            "[\"v\", \"k\", \"T30\", \"Oabc\", \"q\"]"
        );
        let bare = ok(b"mg foo\r\n");
        assert!(bare.flags.is_empty());
        assert_eq!(bare.flags.as_bytes(), b"");
    }

    #[test]
    fn typed_flag_arguments() {
        let m = ok(b"mg k N-1 R30 C1 E18446744073709551615 F4294967295 D5 J7 MD\r\n");
        assert_eq!(m.flags.vivify(), Some(-1));
        assert_eq!(m.flags.recache(), Some(30));
        assert_eq!(m.flags.compare_cas(), Some(1));
        assert_eq!(m.flags.new_cas(), Some(u64::MAX));
        assert_eq!(m.flags.client_flags(), Some(u32::MAX));
        assert_eq!(m.flags.delta(), Some(5));
        assert_eq!(m.flags.initial(), Some(7));
        assert_eq!(m.flags.mode(), Some(b'D'));
        assert_eq!(m.flags.ttl(), None);
    }

    #[test]
    fn meta_set_and_modes() {
        let m = ok(b"ms foo 3 T30 F5 MA c\r\nabc\r\n");
        assert_eq!(m.command, MetaCommand::Set);
        assert_eq!(m.data, b"abc");
        assert_eq!(m.set_mode(), Some(SetMode::Append));
        assert_eq!(m.flags.client_flags(), Some(5));
        for (mode, want) in [
            ("S", SetMode::Set),
            ("E", SetMode::Add),
            ("A", SetMode::Append),
            ("P", SetMode::Prepend),
            ("R", SetMode::Replace),
        ] {
            let buf = format!("ms k 1 M{mode}\r\nx\r\n");
            assert_eq!(ok(buf.as_bytes()).set_mode(), Some(want));
        }
        assert_eq!(ok(b"ms k 0\r\n\r\n").set_mode(), Some(SetMode::Set));
        assert_eq!(
            err(b"ms k 2 MZ\r\ntt\r\n"),
            MemcacheError {
                kind: ErrorKind::InvalidSetMode,
                noreply: false,
                recovery: Recovery::Continue {
                    consumed: 11,
                    swallow: 4
                }
            }
        );
        assert_eq!(kind(b"ms k 2 M\r\ntt\r\n"), ErrorKind::InvalidSetMode);
        for (mode, want) in [
            ("I", ArithmeticMode::Incr),
            ("+", ArithmeticMode::Incr),
            ("D", ArithmeticMode::Decr),
            ("-", ArithmeticMode::Decr),
        ] {
            let buf = format!("ma k M{mode}\r\n");
            assert_eq!(ok(buf.as_bytes()).arithmetic_mode(), Some(want));
        }
        assert_eq!(
            ok(b"ma k\r\n").arithmetic_mode(),
            Some(ArithmeticMode::Incr)
        );
        assert_eq!(ok(b"ma k\r\n").set_mode(), None);
        assert_eq!(ok(b"mg k\r\n").arithmetic_mode(), None);
        assert_eq!(kind(b"ma k Mx\r\n"), ErrorKind::InvalidArithmeticMode);
        // mg and md accept an M flag and leave it to the server.
        assert_eq!(ok(b"mg k Mx\r\n").flags.mode(), Some(b'x'));
    }

    #[test]
    fn meta_set_framing() {
        let full = b"ms k 2 T1\r\nhi\r\n";
        for cut in 0..full.len() {
            assert_eq!(p(&full[..cut]), Ok(None), "{cut}");
        }
        let bad_line = |n| MemcacheError::keep(ErrorKind::BadFormat, n, false);
        assert_eq!(err(b"ms k\r\n"), bad_line(6));
        assert_eq!(err(b"ms k x\r\n"), bad_line(8));
        assert_eq!(err(b"ms k -1\r\n"), bad_line(9));
        assert_eq!(err(b"ms k 2147483647\r\n"), bad_line(17));
        assert_eq!(err(b"ms k 2 !\r\n"), bad_line(10));
        assert_eq!(
            err(b"ms k 2\r\nhiX\r\n"),
            MemcacheError::keep(ErrorKind::BadDataChunk, 12, false)
        );
        let big = format!("ms k {}\r\n", 1024 * 1024 + 1);
        assert_eq!(
            err(big.as_bytes()),
            MemcacheError {
                kind: ErrorKind::TooLarge,
                noreply: false,
                recovery: Recovery::Continue {
                    consumed: big.len(),
                    swallow: 1024 * 1024 + 3
                }
            }
        );
        // Errors of `ms` are sent even with `q`.
        assert!(!err(b"ms k 1 q Q\r\nx\r\n").noreply);
    }

    #[test]
    fn flag_errors_as_memcached_reports_them() {
        assert_eq!(kind(b"mg foo m o o\r\n"), ErrorKind::InvalidFlag);
        assert_eq!(kind(b"mg foo v v\r\n"), ErrorKind::DuplicateFlag);
        assert_eq!(kind(b"mg foo T1 T2\r\n"), ErrorKind::DuplicateFlag);
        assert_eq!(kind(b"mg foo 1\r\n"), ErrorKind::InvalidFlag);
        assert_eq!(kind(b"mg foo [\r\n"), ErrorKind::InvalidFlag);
        assert_eq!(kind(b"mg foo \xc3\r\n"), ErrorKind::BadFormat);
        assert_eq!(kind(b"mg foo v !\r\n"), ErrorKind::BadFormat);
        assert_eq!(kind(b"mg\r\n"), ErrorKind::BadFormat);
        assert_eq!(kind(b"mg foo T\r\n"), ErrorKind::BadToken);
        assert_eq!(kind(b"mg foo Tx\r\n"), ErrorKind::BadToken);
        assert_eq!(kind(b"mg foo C-1\r\n"), ErrorKind::BadToken);
        assert_eq!(kind(b"mg foo Fx\r\n"), ErrorKind::BadFormat);
        assert_eq!(kind(b"mg foo Jx\r\n"), ErrorKind::InvalidInitial);
        assert_eq!(kind(b"mg foo Dx\r\n"), ErrorKind::InvalidMetaDelta);
        // The last bad argument decides; F keeps the message set before it.
        assert_eq!(kind(b"mg foo Tx Jx\r\n"), ErrorKind::InvalidInitial);
        assert_eq!(kind(b"mg foo Tx Fx\r\n"), ErrorKind::BadToken);
        assert_eq!(kind(b"mg foo Fx Tx\r\n"), ErrorKind::BadToken);
        // An unknown flag after a bad argument stops at once.
        assert_eq!(kind(b"mg foo Tx z\r\n"), ErrorKind::InvalidFlag);
        // ma reports all of these with one message; its mode error is its own.
        assert_eq!(kind(b"ma foo v v\r\n"), ErrorKind::InvalidOrDuplicateFlag);
        assert_eq!(kind(b"ma foo Dx\r\n"), ErrorKind::InvalidOrDuplicateFlag);
        assert_eq!(kind(b"ma foo MX\r\n"), ErrorKind::InvalidArithmeticMode);
        // Opaque tokens: 32 bytes with the O.
        let o31 = format!("mg k O{}\r\n", "x".repeat(31));
        assert_eq!(ok(o31.as_bytes()).flags.opaque().map(<[u8]>::len), Some(31));
        let o32 = format!("mg k O{}\r\n", "x".repeat(32));
        assert_eq!(kind(o32.as_bytes()), ErrorKind::OpaqueTooLong);
        // 20 tokens at most: the command, the key and 18 flags.
        let ok18 = "mg k c f h k l q s t u v x I L O P N1 T1 R1\r\n";
        assert_eq!(
            kind(ok18.replace("R1", "R1 C1").as_bytes()),
            ErrorKind::TooManyFlags
        );
        // Checked before the flags themselves.
        assert_eq!(
            kind(ok18.replace("R1", "R1 z").as_bytes()),
            ErrorKind::TooManyFlags
        );
        assert_eq!(ok(ok18.as_bytes()).flags.len(), 18);
    }

    #[test]
    fn keys() {
        let k250 = format!("mg {} v\r\n", "k".repeat(250));
        assert_eq!(ok(k250.as_bytes()).key.bytes().len(), 250);
        let k251 = format!("mg {} v\r\n", "k".repeat(251));
        assert_eq!(kind(k251.as_bytes()), ErrorKind::BadFormat);
        assert_eq!(
            kind(k251.replace("mg", "ma").as_bytes()),
            ErrorKind::InvalidOrDuplicateFlag
        );
        assert_eq!(kind(b"mg a\x01b v\r\n"), ErrorKind::BadFormat);
        // Base64 keys are decoded and may hold any byte.
        let m = ok(b"mg AAEC/w== b k\r\n");
        assert_eq!(m.key.bytes(), [0, 1, 2, 255]);
        assert_eq!(m.key.raw(), b"AAEC/w==");
        assert!(m.key.is_binary());
        assert_eq!(kind(b"mg AAEC/w= b\r\n"), ErrorKind::KeyDecode);
        assert_eq!(kind(b"mg a!== b\r\n"), ErrorKind::KeyDecode);
        assert_eq!(kind(b"me a!== b\r\n"), ErrorKind::BadFormat);
        assert_eq!(kind(b"ma a!== b\r\n"), ErrorKind::InvalidOrDuplicateFlag);
        // The encoded key is what is limited to 250 characters.
        let enc248 = format!("mg {} b\r\n", "A".repeat(248));
        assert_eq!(ok(enc248.as_bytes()).key.bytes().len(), 186);
        let enc252 = format!("mg {} b\r\n", "A".repeat(252));
        assert_eq!(kind(enc252.as_bytes()), ErrorKind::BadFormat);
    }

    #[test]
    fn other_commands() {
        assert_eq!(ok(b"md k q I T30\r\n").command, MetaCommand::Delete);
        assert_eq!(ok(b"ma k N0 J10 D2 v\r\n").command, MetaCommand::Arithmetic);
        assert_eq!(ok(b"me k\r\n").command, MetaCommand::Debug);
        assert_eq!(p(b"mn\r\n"), Ok(Some((Request::MetaNoop, 4))));
        assert_eq!(p(b"mn extra\r\n"), Ok(Some((Request::MetaNoop, 10))));
        assert_eq!(MetaCommand::Arithmetic.code(), "ma");
    }

    #[test]
    fn base64() {
        let cases: [(&[u8], &[u8]); 7] = [
            (b"", b""),
            (b"f", b"Zg=="),
            (b"fo", b"Zm8="),
            (b"foo", b"Zm9v"),
            (b"foob", b"Zm9vYg=="),
            (b"fooba", b"Zm9vYmE="),
            (b"foobar", b"Zm9vYmFy"),
        ];
        for (plain, enc) in cases {
            let mut out = Vec::new();
            base64_encode(plain, &mut out);
            assert_eq!(out, enc);
            if !plain.is_empty() {
                assert_eq!(base64_decode(enc).as_deref(), Some(plain));
            }
        }
        assert_eq!(base64_decode(b""), None);
        assert_eq!(base64_decode(b"Zg="), None);
        assert_eq!(base64_decode(b"Z==="), None);
        assert_eq!(base64_decode(b"Zg==Zg=="), None);
        assert_eq!(base64_decode(b"Z=g="), None);
        assert_eq!(base64_decode(b"Zm9v\n"), None);
        assert_eq!(
            base64_decode(b"Zh=="),
            Some(b"f".to_vec()),
            "unused bits ignored"
        );
        assert_eq!(base64_decode(b"+/+/"), Some(vec![0xfb, 0xff, 0xbf]));
    }
}
