//! The classic text commands: retrieval (`get`, `gets`, `gat`, `gats`), storage (`set`, `add`,
//! `replace`, `append`, `prepend`, `cas`), `incr`/`decr`, `delete`, `touch` and the admin
//! commands (`flush_all`, `version`, `verbosity`, `quit`, `stats`, `slabs`, `lru_crawler`,
//! `cache_memlimit`, `shutdown`).
//!
//! Each command checks its arguments in memcached's order, so the first problem memcached would
//! report is the one reported here; see the module docs of [`super`] for the rules shared by all
//! commands (ignored extra tokens, `noreply`, numbers, keys).

use super::token::{
    KEY_MAX_LENGTH, Line, Split, Tokens, is_valid_key, parse_i32, parse_u32, parse_u64,
};
use super::{ErrorKind, MemcacheError, MemcacheLimits, Recovery, Request};

/// Which storage command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreMode {
    /// `set`: store unconditionally.
    Set,
    /// `add`: store only if the key holds nothing.
    Add,
    /// `replace`: store only if the key holds an item.
    Replace,
    /// `append`: add the data after the existing item's (flags and exptime are ignored).
    Append,
    /// `prepend`: add the data before the existing item's (flags and exptime are ignored).
    Prepend,
    /// `cas`: store only if the item's CAS value is still [`Store::cas`].
    Cas,
}

impl StoreMode {
    /// The command name.
    pub fn name(self) -> &'static str {
        match self {
            StoreMode::Set => "set",
            StoreMode::Add => "add",
            StoreMode::Replace => "replace",
            StoreMode::Append => "append",
            StoreMode::Prepend => "prepend",
            StoreMode::Cas => "cas",
        }
    }
}

/// A storage command with its data block:
/// `<mode> <key> <flags> <exptime> <bytes> [<cas unique>] [noreply]\r\n<data>\r\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Store<'a> {
    /// Which command.
    pub mode: StoreMode,
    /// The key (checked by [`is_valid_key`]).
    pub key: &'a [u8],
    /// The client's opaque flags, stored with the item and sent back with it.
    pub flags: u32,
    /// Expiration: 0 never, up to 30 days relative seconds, above that a Unix time, negative
    /// already expired.
    pub exptime: i32,
    /// The data block, without its `\r\n`.
    pub data: &'a [u8],
    /// The `<cas unique>` of a `cas` command (`Some` exactly for [`StoreMode::Cas`]).
    pub cas: Option<u64>,
    /// Send no reply.
    pub noreply: bool,
}

/// The keys of a multi-key retrieval, in request order, borrowed from the command line; every
/// one passed [`is_valid_key`]. Two `Keys` are equal when they hold the same keys.
#[derive(Clone, Copy)]
pub struct Keys<'a> {
    raw: &'a [u8],
    count: usize,
}

impl<'a> Keys<'a> {
    /// The keys, in request order.
    pub fn iter(&self) -> Tokens<'a> {
        Tokens::new(self.raw)
    }

    /// How many keys (duplicates counted), at least 1.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Always false: a retrieval has at least one key.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The keys as sent, separated by spaces.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }
}

impl<'a> IntoIterator for Keys<'a> {
    type Item = &'a [u8];
    type IntoIter = Tokens<'a>;

    fn into_iter(self) -> Tokens<'a> {
        self.iter()
    }
}

impl PartialEq for Keys<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.iter() == other.iter()
    }
}

impl Eq for Keys<'_> {}

impl std::fmt::Debug for Keys<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.iter(), f)
    }
}

/// The forms of `slabs automove`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AutomoveSetting {
    /// `slabs automove <0|1|2>`: standby, return free pages to the global pool, or move pages
    /// on every eviction.
    Level(u8),
    /// `slabs automove ratio <float>`.
    Ratio(f64),
    /// `slabs automove freeratio <float>`.
    FreeRatio(f64),
    /// `slabs automove window <3..=1800>`.
    Window(u32),
}

/// `lru_crawler` subcommands. The class lists (`1,3,10`, `all`, `hash`) are the server's to
/// check (memcached answers `BADCLASS invalid class id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LruCrawler<'a> {
    /// `lru_crawler enable`.
    Enable,
    /// `lru_crawler disable`.
    Disable,
    /// `lru_crawler crawl <classes>`: reclaim expired items of those classes.
    Crawl {
        /// The class list as sent.
        classes: &'a [u8],
    },
    /// `lru_crawler metadump <classes|all|hash>`: one `key=... exp=...` line per item.
    Metadump {
        /// The class list as sent.
        classes: &'a [u8],
    },
    /// `lru_crawler mgdump <classes|all|hash>`: one `mg <key>` line per item.
    Mgdump {
        /// The class list as sent.
        classes: &'a [u8],
    },
    /// `lru_crawler tocrawl <n>`: most items to inspect per class and run.
    Tocrawl(u32),
    /// `lru_crawler sleep <microseconds>` (at most one second).
    Sleep(u32),
}

/// Longest `lru_crawler sleep`, in microseconds.
const MAX_CRAWLER_SLEEP: u32 = 1_000_000;

/// Parses the text command `name` whose line is `line`; `buf` holds the line and what follows
/// (a storage command's data block).
pub(crate) fn parse<'a>(
    name: &[u8],
    buf: &'a [u8],
    line: Line<'a>,
    limits: &MemcacheLimits,
) -> Result<Option<(Request<'a>, usize)>, MemcacheError> {
    let n = line.consumed;
    if name == b"get" || name == b"gets" {
        // The most frequent request: its keys are checked in one pass over the line, with no
        // token table (`Split` records the first 24 tokens' spans, for the other commands).
        let after = &line.text[name.len()..];
        let Some(first) = after.iter().position(|&b| b != b' ') else {
            // No key: memcached 1.6.18 has no handler for a 1-token `get`.
            return Err(MemcacheError::keep(ErrorKind::UnknownCommand, n, false));
        };
        let req = Request::Get {
            keys: keys(&after[first..], n)?,
            cas: name == b"gets",
        };
        return Ok(Some((req, n)));
    }
    let s = Split::new(line.text);
    let mode = match name {
        b"set" => StoreMode::Set,
        b"add" => StoreMode::Add,
        b"replace" => StoreMode::Replace,
        b"append" => StoreMode::Append,
        b"prepend" => StoreMode::Prepend,
        b"cas" => StoreMode::Cas,
        _ => return line_command(name, &s, n).map(|r| Some((r, n))),
    };
    storage(mode, &s, buf, n, limits)
}

/// A storage command: checks the line in memcached's order, then waits for the data block.
fn storage<'a>(
    mode: StoreMode,
    s: &Split<'a>,
    buf: &'a [u8],
    n: usize,
    limits: &MemcacheLimits,
) -> Result<Option<(Request<'a>, usize)>, MemcacheError> {
    // Until <bytes> is known memcached cannot swallow the block: the line alone is consumed,
    // and `noreply` is not looked at yet.
    let bad_line = MemcacheError::keep(ErrorKind::BadFormat, n, false);
    // memcached 1.6.18 dispatches on the token count: any other count is an unknown command
    // (`ERROR`), and the data line that follows is read as a command of its own.
    let tokens = if mode == StoreMode::Cas { 6..=7 } else { 5..=6 };
    if !tokens.contains(&s.count()) {
        return Err(MemcacheError::keep(ErrorKind::UnknownCommand, n, false));
    }
    let vlen = match s.get(4).and_then(parse_i32) {
        Some(v) if (0..=i32::MAX - 2).contains(&v) => v as usize,
        _ => return Err(bad_line),
    };
    let noreply = s.noreply();
    let swallow = vlen + 2;
    let refuse = |kind| MemcacheError {
        kind,
        noreply,
        recovery: Recovery::Continue {
            consumed: n,
            swallow,
        },
    };
    let key = s
        .get(1)
        .filter(|k| is_valid_key(k))
        .ok_or_else(|| refuse(ErrorKind::BadFormat))?;
    let flags = s
        .get(2)
        .and_then(parse_u32)
        .ok_or_else(|| refuse(ErrorKind::BadFormat))?;
    let exptime = s
        .get(3)
        .and_then(parse_i32)
        .ok_or_else(|| refuse(ErrorKind::BadFormat))?;
    let cas = if mode == StoreMode::Cas {
        Some(
            s.get(5)
                .and_then(parse_u64)
                .ok_or_else(|| refuse(ErrorKind::BadFormat))?,
        )
    } else {
        None
    };
    if vlen > limits.max_item_size {
        return Err(refuse(ErrorKind::TooLarge));
    }
    let Some(block) = data_block(buf, n, vlen) else {
        return Ok(None);
    };
    let total = n + swallow;
    let data = block.map_err(|()| MemcacheError::keep(ErrorKind::BadDataChunk, total, noreply))?;
    Ok(Some((
        Request::Store(Store {
            mode,
            key,
            flags,
            exptime,
            data,
            cas,
            noreply,
        }),
        total,
    )))
}

/// The data block of `vlen` bytes after a line of `n` bytes: `None` while incomplete,
/// `Some(Err(()))` when it is not followed by `\r\n` (memcached reads `vlen + 2` bytes and checks
/// the last two).
pub(crate) fn data_block(buf: &[u8], n: usize, vlen: usize) -> Option<Result<&[u8], ()>> {
    let end = n + vlen;
    let tail = buf.get(end..end + 2)?;
    Some(if tail == b"\r\n" {
        Ok(&buf[n..end])
    } else {
        Err(())
    })
}

/// The keys of `raw` (a line from its first key on), all valid, or `bad format` for the whole
/// request of `n` bytes.
///
/// One pass over the bytes (this runs for every `get`): spaces separate the keys, and each key
/// must pass [`is_valid_key`] (no control byte or DEL, at most [`KEY_MAX_LENGTH`] bytes).
fn keys(raw: &[u8], n: usize) -> Result<Keys<'_>, MemcacheError> {
    let mut count = 0;
    let mut len = 0;
    for &b in raw {
        if b == b' ' {
            count += usize::from(len > 0);
            len = 0;
        } else if b < b' ' || b == 0x7f || len == KEY_MAX_LENGTH {
            return Err(MemcacheError::keep(ErrorKind::BadFormat, n, false));
        } else {
            len += 1;
        }
    }
    count += usize::from(len > 0);
    debug_assert!(Tokens::new(raw).all(is_valid_key));
    Ok(Keys { raw, count })
}

/// Every text command but the storage ones: the line is the whole request.
fn line_command<'a>(name: &[u8], s: &Split<'a>, n: usize) -> Result<Request<'a>, MemcacheError> {
    let noreply = s.noreply();
    let fail = |kind| MemcacheError::keep(kind, n, noreply);
    // memcached 1.6.18 dispatches on the token count: `get`, `gets`, `gat`, `gats`, `incr`,
    // `decr`, `touch` and `delete` with a count it has no handler for are unknown commands.
    let too_few = MemcacheError::keep(ErrorKind::UnknownCommand, n, false);
    let key = |i: usize| {
        s.get(i)
            .filter(|k| is_valid_key(k))
            .ok_or_else(|| fail(ErrorKind::BadFormat))
    };
    Ok(match name {
        b"gat" | b"gats" => {
            // `gat <exptime>` with no key: memcached answers `END`.
            if s.count() < 2 {
                return Err(too_few);
            }
            let exptime = s.get(1).and_then(parse_i32).ok_or(MemcacheError::keep(
                ErrorKind::InvalidExptime,
                n,
                false,
            ))?;
            Request::Gat {
                exptime,
                keys: keys(s.rest(2), n)?,
                cas: name == b"gats",
            }
        }
        b"incr" | b"decr" => {
            if !(3..=4).contains(&s.count()) {
                return Err(too_few);
            }
            let key = key(1)?;
            let delta = s
                .get(2)
                .and_then(parse_u64)
                .ok_or_else(|| fail(ErrorKind::InvalidDelta))?;
            if name == b"incr" {
                Request::Incr {
                    key,
                    delta,
                    noreply,
                }
            } else {
                Request::Decr {
                    key,
                    delta,
                    noreply,
                }
            }
        }
        b"touch" => {
            if !(3..=4).contains(&s.count()) {
                return Err(too_few);
            }
            let key = key(1)?;
            let exptime = s
                .get(2)
                .and_then(parse_i32)
                .ok_or_else(|| fail(ErrorKind::InvalidExptime))?;
            Request::Touch {
                key,
                exptime,
                noreply,
            }
        }
        b"delete" => {
            if !(2..=4).contains(&s.count()) {
                return Err(too_few);
            }
            // The legacy hold time is accepted only as 0: `delete <key> [0] [noreply]`.
            let legal = matches!(
                (s.get(2), s.get(3)),
                (None, _) | (Some(b"0" | b"noreply"), None) | (Some(b"0"), Some(b"noreply"))
            );
            if !legal {
                return Err(fail(ErrorKind::DeleteUsage));
            }
            Request::Delete {
                key: key(1)?,
                noreply,
            }
        }
        b"quit" => Request::Quit,
        b"version" => Request::Version,
        b"stats" => Request::Stats {
            args: Tokens::new(s.rest(1)),
        },
        b"flush_all" => {
            if s.count() > 3 {
                return Err(too_few);
            }
            let bare = if noreply { 2 } else { 1 };
            let delay = if s.count() == bare {
                None
            } else {
                Some(
                    s.get(1)
                        .and_then(parse_i32)
                        .ok_or_else(|| fail(ErrorKind::InvalidExptime))?,
                )
            };
            Request::FlushAll { delay, noreply }
        }
        b"verbosity" if !(2..=3).contains(&s.count()) => return Err(too_few),
        b"verbosity" => Request::Verbosity {
            level: s
                .get(1)
                .and_then(parse_u32)
                .ok_or_else(|| fail(ErrorKind::BadFormat))?,
            noreply,
        },
        b"slabs" => slabs(s, noreply).map_err(fail)?,
        b"lru_crawler" => Request::LruCrawler(lru_crawler(s).map_err(fail)?),
        b"cache_memlimit" => Request::CacheMemlimit {
            megabytes: s
                .get(1)
                .and_then(parse_u32)
                .ok_or_else(|| fail(ErrorKind::UnknownCommand))?,
            noreply,
        },
        b"shutdown" => match (s.count(), s.get(1)) {
            (1, _) => Request::Shutdown { graceful: false },
            (2, Some(b"graceful")) => Request::Shutdown { graceful: true },
            _ => return Err(fail(ErrorKind::InvalidShutdownMode)),
        },
        _ => {
            if s.count() > 1 && s.last().is_some_and(|t| t.starts_with(b"HTTP/")) {
                return Err(MemcacheError::close(ErrorKind::HttpRequest));
            }
            return Err(fail(ErrorKind::UnknownCommand));
        }
    })
}

/// `slabs reassign <src> <dst>` and `slabs automove ...`, with memcached's replies to the
/// malformed ones.
fn slabs<'a>(s: &Split<'a>, noreply: bool) -> Result<Request<'a>, ErrorKind> {
    match (s.count(), s.get(1)) {
        (4, Some(b"reassign")) => {
            let src = s.get(2).and_then(parse_i32).ok_or(ErrorKind::BadFormat)?;
            let dst = s.get(3).and_then(parse_i32).ok_or(ErrorKind::BadFormat)?;
            Ok(Request::SlabsReassign { src, dst })
        }
        (3.., Some(b"automove")) => {
            let value = s.get(3);
            let float = || {
                value
                    .and_then(|v| std::str::from_utf8(v).ok())
                    .and_then(|v| v.parse::<f64>().ok())
                    .ok_or(ErrorKind::UnknownCommand)
            };
            let setting = match s.get(2) {
                Some(b"ratio") => AutomoveSetting::Ratio(float()?),
                Some(b"freeratio") => AutomoveSetting::FreeRatio(float()?),
                Some(b"window") => {
                    let w = value.and_then(parse_u32).ok_or(ErrorKind::BadFormat)?;
                    if !(3..=1800).contains(&w) {
                        return Err(ErrorKind::AutomoveWindow);
                    }
                    AutomoveSetting::Window(w)
                }
                level => match level.and_then(parse_u32).ok_or(ErrorKind::BadFormat)? {
                    l @ 0..=2 => AutomoveSetting::Level(l as u8),
                    _ => return Err(ErrorKind::UnknownCommand),
                },
            };
            Ok(Request::SlabsAutomove { setting, noreply })
        }
        _ => Err(ErrorKind::UnknownCommand),
    }
}

/// `lru_crawler` with memcached's exact token counts (anything else is `ERROR`).
fn lru_crawler<'a>(s: &Split<'a>) -> Result<LruCrawler<'a>, ErrorKind> {
    let arg = s.get(2).unwrap_or_default();
    let number = || parse_u32(arg).ok_or(ErrorKind::BadFormat);
    Ok(match (s.count(), s.get(1).unwrap_or_default()) {
        (3, b"crawl") => LruCrawler::Crawl { classes: arg },
        (3, b"metadump") => LruCrawler::Metadump { classes: arg },
        (3, b"mgdump") => LruCrawler::Mgdump { classes: arg },
        (3, b"tocrawl") => LruCrawler::Tocrawl(number()?),
        (3, b"sleep") => {
            let us = number()?;
            if us > MAX_CRAWLER_SLEEP {
                return Err(ErrorKind::SleepTooLong);
            }
            LruCrawler::Sleep(us)
        }
        (2, b"enable") => LruCrawler::Enable,
        (2, b"disable") => LruCrawler::Disable,
        _ => return Err(ErrorKind::UnknownCommand),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{MemcacheLimits, parse};
    use super::*;

    type Parsed<'a> = Result<Option<(Request<'a>, usize)>, MemcacheError>;

    fn p(buf: &[u8]) -> Parsed<'_> {
        parse(buf, &MemcacheLimits::default())
    }

    fn ok(buf: &[u8]) -> Request<'_> {
        match p(buf) {
            Ok(Some((r, n))) => {
                assert_eq!(n, buf.len(), "{:?}", String::from_utf8_lossy(buf));
                r
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

    fn keep(kind: ErrorKind, consumed: usize, noreply: bool) -> MemcacheError {
        MemcacheError::keep(kind, consumed, noreply)
    }

    fn swallowed(kind: ErrorKind, consumed: usize, swallow: usize, noreply: bool) -> MemcacheError {
        MemcacheError {
            kind,
            noreply,
            recovery: Recovery::Continue { consumed, swallow },
        }
    }

    fn key_list(r: &Request<'_>) -> Vec<Vec<u8>> {
        match r {
            Request::Get { keys, .. } | Request::Gat { keys, .. } => {
                keys.iter().map(<[u8]>::to_vec).collect()
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retrieval() {
        let r = ok(b"get a bb  a\r\n");
        assert_eq!(key_list(&r), [b"a".to_vec(), b"bb".to_vec(), b"a".to_vec()]);
        assert!(matches!(r, Request::Get { cas: false, keys } if keys.len() == 3));
        assert!(matches!(ok(b"gets a\r\n"), Request::Get { cas: true, .. }));
        let r = ok(b"gat -1 a b\n");
        assert!(matches!(
            r,
            Request::Gat {
                exptime: -1,
                cas: false,
                ..
            }
        ));
        assert_eq!(key_list(&r), [b"a".to_vec(), b"b".to_vec()]);
        assert!(matches!(
            ok(b"gats 10 k\r\n"),
            Request::Gat {
                exptime: 10,
                cas: true,
                ..
            }
        ));
        // `noreply` is just a key for retrievals.
        assert_eq!(key_list(&ok(b"get noreply\r\n")), [b"noreply".to_vec()]);
        // Token counts 1.6.18 has no handler for: unknown commands.
        assert_eq!(err(b"get\r\n"), keep(ErrorKind::UnknownCommand, 5, false));
        assert_eq!(err(b"get \r\n"), keep(ErrorKind::UnknownCommand, 6, false));
        assert_eq!(err(b"gat\r\n"), keep(ErrorKind::UnknownCommand, 5, false));
        // `gat <exptime>` alone: no key, an empty retrieval.
        assert!(
            matches!(ok(b"gat 1\r\n"), Request::Gat { exptime: 1, keys, .. } if keys.is_empty())
        );
        assert_eq!(
            err(b"gat x k\r\n"),
            keep(ErrorKind::InvalidExptime, 9, false)
        );
        let mut long = b"get a ".to_vec();
        long.extend([b'k'; 251]);
        long.extend(b"\r\n");
        assert_eq!(err(&long), keep(ErrorKind::BadFormat, long.len(), false));
        assert_eq!(err(b"get a\tb\r\n"), keep(ErrorKind::BadFormat, 9, false));
    }

    #[test]
    fn storage_commands() {
        let r = ok(b"set k 5 -1 3 noreply\r\nabc\r\n");
        assert_eq!(
            r,
            Request::Store(Store {
                mode: StoreMode::Set,
                key: b"k",
                flags: 5,
                exptime: -1,
                data: b"abc",
                cas: None,
                noreply: true,
            })
        );
        for (name, mode) in [
            ("add", StoreMode::Add),
            ("replace", StoreMode::Replace),
            ("append", StoreMode::Append),
            ("prepend", StoreMode::Prepend),
        ] {
            let buf = format!("{name} k 0 0 1\r\nx\r\n");
            match ok(buf.as_bytes()) {
                Request::Store(s) => {
                    assert_eq!(s.mode, mode);
                    assert_eq!(s.mode.name(), name);
                    assert!(!s.noreply);
                }
                other => panic!("{other:?}"),
            }
        }
        match ok(b"cas k 0 0 2 99 noreply\r\n\r\n\r\n") {
            Request::Store(s) => {
                assert_eq!(s.cas, Some(99));
                assert_eq!(s.data, b"\r\n");
                assert!(s.noreply);
            }
            other => panic!("{other:?}"),
        }
        // The data may hold anything; the block is found by its length.
        match ok(b"set k 0 0 0\r\n\r\n") {
            Request::Store(s) => assert_eq!(s.data, b""),
            other => panic!("{other:?}"),
        }
        // Extra tokens are ignored; only the last one can be `noreply`.
        match ok(b"set k 0 0 1 extra\r\nx\r\n") {
            Request::Store(s) => assert!(!s.noreply),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn storage_waits_for_its_block() {
        let full = b"set k 0 0 3\r\nabc\r\n";
        for cut in 0..full.len() {
            assert_eq!(p(&full[..cut]), Ok(None), "{cut}");
        }
        let mut two = full.to_vec();
        two.extend(b"get k\r\n");
        assert_eq!(p(&two).unwrap().unwrap().1, full.len());
    }

    #[test]
    fn storage_errors_in_memcached_order() {
        // <bytes> unknown: only the line goes, and noreply is not honoured.
        // A token count 1.6.18 has no handler for: unknown command, the line alone goes.
        assert_eq!(
            err(b"set k 0 0\r\n"),
            keep(ErrorKind::UnknownCommand, 11, false)
        );
        assert_eq!(
            err(b"set k 0 0 1 noreply x\r\n"),
            keep(ErrorKind::UnknownCommand, 23, false)
        );
        assert_eq!(
            err(b"cas k 0 0 1 \r\n"),
            keep(ErrorKind::UnknownCommand, 14, false)
        );
        assert_eq!(
            err(b"set k 0 0 -1 noreply\r\n"),
            keep(ErrorKind::BadFormat, 22, false)
        );
        assert_eq!(
            err(b"set k 0 0 2147483647\r\n"),
            keep(ErrorKind::BadFormat, 22, false)
        );
        assert_eq!(
            err(b"set k 0 0 4294967295\r\n"),
            keep(ErrorKind::BadFormat, 22, false)
        );
        // <bytes> known: the block is swallowed.
        assert_eq!(
            err(b"set k x 0 4\r\n"),
            swallowed(ErrorKind::BadFormat, 13, 6, false)
        );
        assert_eq!(
            err(b"set k 0 x 4 noreply\r\n"),
            swallowed(ErrorKind::BadFormat, 21, 6, true)
        );
        assert_eq!(
            err(b"set k -1 0 4\r\n"),
            swallowed(ErrorKind::BadFormat, 14, 6, false)
        );
        // An empty CAS field: five tokens, an unknown command; the data line stays to be read
        // as a command.
        assert_eq!(
            err(b"cas k 0 0 6 \r\nbarva2\r\n"),
            keep(ErrorKind::UnknownCommand, 14, false)
        );
        assert_eq!(
            err(b"cas k 0 0 1 noreply\r\n"),
            swallowed(ErrorKind::BadFormat, 21, 3, true)
        );
        let mut long = b"set ".to_vec();
        long.extend([b'k'; 251]);
        long.extend(b" 0 0 1\r\n");
        assert_eq!(
            err(&long),
            swallowed(ErrorKind::BadFormat, long.len(), 3, false)
        );
        // The key is checked before the size.
        let mut long = b"set ".to_vec();
        long.extend([b'k'; 251]);
        long.extend(b" 0 0 99999999\r\n");
        assert_eq!(err(&long).kind, ErrorKind::BadFormat);
        assert_eq!(
            err(b"set k 0 0 1048577\r\n"),
            swallowed(ErrorKind::TooLarge, 19, 1048579, false)
        );
        assert_eq!(
            err(b"set k 0 0 3\r\nabcd\r\n"),
            keep(ErrorKind::BadDataChunk, 18, false)
        );
        assert_eq!(
            err(b"set k 0 0 3 noreply\r\nabcd\r\n"),
            keep(ErrorKind::BadDataChunk, 26, true)
        );
    }

    #[test]
    fn keyed_commands() {
        assert_eq!(
            ok(b"incr k 18446744073709551615\r\n"),
            Request::Incr {
                key: b"k",
                delta: u64::MAX,
                noreply: false
            }
        );
        assert_eq!(
            ok(b"decr k 2 noreply\r\n"),
            Request::Decr {
                key: b"k",
                delta: 2,
                noreply: true
            }
        );
        assert_eq!(
            err(b"incr k -1\r\n"),
            keep(ErrorKind::InvalidDelta, 11, false)
        );
        assert_eq!(
            err(b"incr k x noreply\r\n"),
            keep(ErrorKind::InvalidDelta, 18, true)
        );
        assert_eq!(
            err(b"incr k\r\n"),
            keep(ErrorKind::UnknownCommand, 8, false)
        );
        assert_eq!(
            err(b"incr k 1 noreply x\r\n"),
            keep(ErrorKind::UnknownCommand, 20, false)
        );
        assert_eq!(
            ok(b"touch k 10\r\n"),
            Request::Touch {
                key: b"k",
                exptime: 10,
                noreply: false
            }
        );
        assert_eq!(
            err(b"touch k abc\r\n"),
            keep(ErrorKind::InvalidExptime, 13, false)
        );
        for (buf, noreply) in [
            (&b"delete k\r\n"[..], false),
            (b"delete k noreply\r\n", true),
            (b"delete k 0\r\n", false),
            (b"delete k 0 noreply\r\n", true),
        ] {
            assert_eq!(ok(buf), Request::Delete { key: b"k", noreply });
        }
        assert_eq!(
            err(b"delete\r\n"),
            keep(ErrorKind::UnknownCommand, 8, false)
        );
        assert_eq!(
            err(b"delete k 0 noreply x\r\n"),
            keep(ErrorKind::UnknownCommand, 22, false)
        );
        // A hold time other than 0.
        assert_eq!(
            err(b"delete k 10\r\n"),
            keep(ErrorKind::DeleteUsage, 13, false)
        );
        assert_eq!(
            err(b"delete k x\r\n"),
            keep(ErrorKind::DeleteUsage, 12, false)
        );
        assert_eq!(
            err(b"delete k 10 noreply\r\n"),
            keep(ErrorKind::DeleteUsage, 21, true)
        );
        let mut long = b"delete ".to_vec();
        long.extend([b'k'; 251]);
        long.extend(b" noreply\r\n");
        assert_eq!(err(&long), keep(ErrorKind::BadFormat, long.len(), true));
    }

    #[test]
    fn admin_commands() {
        assert_eq!(ok(b"version\r\n"), Request::Version);
        assert_eq!(ok(b"quit\r\n"), Request::Quit);
        match ok(b"stats\r\n") {
            Request::Stats { args } => assert!(args.is_empty()),
            other => panic!("{other:?}"),
        }
        match ok(b"stats detail on\r\n") {
            Request::Stats { args } => assert_eq!(args, Tokens::new(b"detail on")),
            other => panic!("{other:?}"),
        }
        for (buf, delay, noreply) in [
            (&b"flush_all\r\n"[..], None, false),
            (b"flush_all noreply\r\n", None, true),
            (b"flush_all 10\r\n", Some(10), false),
            (b"flush_all -1 noreply\r\n", Some(-1), true),
        ] {
            assert_eq!(ok(buf), Request::FlushAll { delay, noreply });
        }
        assert_eq!(
            err(b"flush_all x\r\n"),
            keep(ErrorKind::InvalidExptime, 13, false)
        );
        assert_eq!(
            ok(b"verbosity 1 noreply\r\n"),
            Request::Verbosity {
                level: 1,
                noreply: true
            }
        );
        assert_eq!(
            err(b"verbosity invalid\r\n"),
            keep(ErrorKind::BadFormat, 19, false)
        );
        assert_eq!(
            err(b"verbosity\r\n"),
            keep(ErrorKind::UnknownCommand, 11, false)
        );
        assert_eq!(
            ok(b"cache_memlimit 64\r\n"),
            Request::CacheMemlimit {
                megabytes: 64,
                noreply: false
            }
        );
        assert_eq!(
            err(b"cache_memlimit x\r\n"),
            keep(ErrorKind::UnknownCommand, 18, false)
        );
        assert_eq!(ok(b"shutdown\r\n"), Request::Shutdown { graceful: false });
        assert_eq!(
            ok(b"shutdown graceful\r\n"),
            Request::Shutdown { graceful: true }
        );
        assert_eq!(
            err(b"shutdown now\r\n"),
            keep(ErrorKind::InvalidShutdownMode, 14, false)
        );
    }

    #[test]
    fn slabs_commands() {
        assert_eq!(
            ok(b"slabs reassign -1 5\r\n"),
            Request::SlabsReassign { src: -1, dst: 5 }
        );
        assert_eq!(
            err(b"slabs reassign a 5\r\n"),
            keep(ErrorKind::BadFormat, 20, false)
        );
        assert_eq!(
            err(b"slabs reassign 1 2 noreply\r\n"),
            keep(ErrorKind::UnknownCommand, 28, true)
        );
        let auto = |setting, noreply| Request::SlabsAutomove { setting, noreply };
        assert_eq!(
            ok(b"slabs automove 2\r\n"),
            auto(AutomoveSetting::Level(2), false)
        );
        assert_eq!(
            ok(b"slabs automove 0 noreply\r\n"),
            auto(AutomoveSetting::Level(0), true)
        );
        assert_eq!(
            ok(b"slabs automove ratio 0.8\r\n"),
            auto(AutomoveSetting::Ratio(0.8), false)
        );
        assert_eq!(
            ok(b"slabs automove freeratio 0.01\r\n"),
            auto(AutomoveSetting::FreeRatio(0.01), false)
        );
        assert_eq!(
            ok(b"slabs automove window 30\r\n"),
            auto(AutomoveSetting::Window(30), false)
        );
        assert_eq!(
            err(b"slabs automove 3\r\n"),
            keep(ErrorKind::UnknownCommand, 18, false)
        );
        assert_eq!(
            err(b"slabs automove invalid\r\n"),
            keep(ErrorKind::BadFormat, 24, false)
        );
        assert_eq!(
            err(b"slabs automove ratio x\r\n"),
            keep(ErrorKind::UnknownCommand, 24, false)
        );
        assert_eq!(
            err(b"slabs automove window 2\r\n"),
            keep(ErrorKind::AutomoveWindow, 25, false)
        );
        assert_eq!(
            err(b"slabs automove\r\n"),
            keep(ErrorKind::UnknownCommand, 16, false)
        );
        assert_eq!(err(b"slabs\r\n"), keep(ErrorKind::UnknownCommand, 7, false));
    }

    #[test]
    fn lru_crawler_commands() {
        let c = |buf| match ok(buf) {
            Request::LruCrawler(c) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(c(b"lru_crawler enable\r\n"), LruCrawler::Enable);
        assert_eq!(c(b"lru_crawler disable\r\n"), LruCrawler::Disable);
        assert_eq!(
            c(b"lru_crawler crawl 1,3,10\r\n"),
            LruCrawler::Crawl { classes: b"1,3,10" }
        );
        assert_eq!(
            c(b"lru_crawler metadump all\r\n"),
            LruCrawler::Metadump { classes: b"all" }
        );
        assert_eq!(
            c(b"lru_crawler mgdump hash\r\n"),
            LruCrawler::Mgdump { classes: b"hash" }
        );
        assert_eq!(c(b"lru_crawler tocrawl 100\r\n"), LruCrawler::Tocrawl(100));
        assert_eq!(
            c(b"lru_crawler sleep 1000000\r\n"),
            LruCrawler::Sleep(1_000_000)
        );
        assert_eq!(
            err(b"lru_crawler sleep 1000001\r\n"),
            keep(ErrorKind::SleepTooLong, 27, false)
        );
        assert_eq!(
            err(b"lru_crawler sleep x\r\n"),
            keep(ErrorKind::BadFormat, 21, false)
        );
        assert_eq!(
            err(b"lru_crawler enable noreply\r\n"),
            keep(ErrorKind::UnknownCommand, 28, true)
        );
        assert_eq!(
            err(b"lru_crawler crawl\r\n"),
            keep(ErrorKind::UnknownCommand, 19, false)
        );
    }

    #[test]
    fn unknown_commands() {
        assert_eq!(err(b"foo\r\n"), keep(ErrorKind::UnknownCommand, 5, false));
        assert_eq!(
            err(b"foo bar noreply\r\n"),
            keep(ErrorKind::UnknownCommand, 17, true)
        );
        assert_eq!(err(b"GET k\r\n"), keep(ErrorKind::UnknownCommand, 7, false));
        assert_eq!(
            err(b" get k\r\n"),
            keep(ErrorKind::UnknownCommand, 8, false)
        );
        assert_eq!(err(b"    \r\n"), keep(ErrorKind::UnknownCommand, 6, false));
        assert_eq!(
            err(b"get\tk\r\n"),
            keep(ErrorKind::UnknownCommand, 7, false)
        );
        assert_eq!(
            err(b"GET / HTTP/1.1\r\n"),
            MemcacheError::close(ErrorKind::HttpRequest)
        );
        assert_eq!(
            err(b"HTTP/1.1\r\n"),
            keep(ErrorKind::UnknownCommand, 10, false)
        );
    }

    #[test]
    fn get_keys_are_checked_as_tokens() {
        let get = |line: &[u8]| -> Result<usize, ErrorKind> {
            let mut buf = line.to_vec();
            buf.extend(b"\r\n");
            match crate::memcache::parse(&buf, &MemcacheLimits::default()) {
                Ok(Some((Request::Get { keys, .. }, _))) => {
                    assert_eq!(keys.len(), keys.iter().count());
                    assert!(keys.iter().all(is_valid_key));
                    Ok(keys.len())
                }
                Ok(other) => panic!("{other:?}"),
                Err(e) => Err(e.kind),
            }
        };
        assert_eq!(get(b"get a"), Ok(1));
        assert_eq!(get(b"get a  b   c "), Ok(3));
        assert_eq!(get(b"get a a"), Ok(2));
        let mut k250 = b"get x ".to_vec();
        k250.extend([b'k'; 250]);
        assert_eq!(get(&k250), Ok(2));
        k250.push(b'k');
        assert_eq!(get(&k250), Err(ErrorKind::BadFormat));
        assert_eq!(get(b"get a b\x7f"), Err(ErrorKind::BadFormat));
        assert_eq!(get(b"get a\tb"), Err(ErrorKind::BadFormat));
        assert_eq!(get(b"get a \x01"), Err(ErrorKind::BadFormat));
        assert_eq!(get("get caf\u{e9}".as_bytes()), Ok(1));
    }

    #[test]
    fn keys_type() {
        let r = ok(b"get a b\r\n");
        let Request::Get { keys, .. } = r else {
            panic!("{r:?}")
        };
        assert_eq!(keys.len(), 2);
        assert!(!keys.is_empty());
        assert_eq!(keys.as_bytes(), b"a b");
        assert_eq!(format!("{keys:?}"), "[\"a\", \"b\"]");
        let collected: Vec<&[u8]> = keys.into_iter().collect();
        assert_eq!(collected, [&b"a"[..], b"b"]);
    }
}
