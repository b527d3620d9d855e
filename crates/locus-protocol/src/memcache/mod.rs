//! Pure parse/compose for the memcached protocol (text and meta commands, memcached 1.6): no
//! sockets, no I/O.
//!
//! ```text
//!   socket bytes ──► [ read buffer ] ──parse()──► Request { key/data slices into the buffer }
//!                                                     │
//!                                       server executes, calls ReplyWriter methods
//!                                                     ▼
//!   socket  ◄──────── [ Vec<u8> out ] ◄── ReplyWriter (VALUE/STORED/... and HD/VA/EN/...)
//! ```
//!
//! Components:
//! * [`token`]: line framing and the tokenizer both protocols share (tokens split on spaces only,
//!   as memcached does), memcached's number rules and key rule.
//! * [`text`]: the classic text commands (`get`, `set`, `incr`, `flush_all`, `stats`, ...).
//! * [`meta`]: the meta commands (`mg`, `ms`, `md`, `ma`, `me`, `mn`), their flags and base64 keys.
//! * [`reply`]: [`ReplyWriter`], byte-exact replies of both protocols.
//! * [`auth`]: the ASCII authentication exchange (memcached's `-Y`) a connection goes through
//!   before its first command, when the server asks for it.
//!
//! # Contract
//!
//! [`parse`] looks at a byte slice that starts at a command boundary and returns
//! * `Ok(Some((request, consumed)))`: one complete request (its command line and, for storage
//!   commands, its data block), `0 < consumed <= buf.len()`;
//! * `Ok(None)`: the request is incomplete; read more bytes and call again with the same start.
//!   Every proper prefix of a valid request is incomplete, and the wait is bounded by the limits;
//! * `Err(e)`: memcached would answer with an error. [`MemcacheError::recovery`] says what
//!   memcached does next: carry on after skipping bytes ([`Recovery::Continue`], which may include
//!   *swallowing* the data block of a refused storage command, bytes that may not have arrived
//!   yet), or close the connection ([`Recovery::Close`]). [`MemcacheError::reply`] is the line to
//!   send, `None` when memcached sends nothing (the client asked for `noreply`, or memcached closes
//!   silently).
//!
//! A verdict never changes when more bytes arrive: a request, or an error, given for a prefix is
//! the answer for every longer buffer too.
//!
//! # Which errors close the connection
//!
//! Only two, both silent (memcached closes without a reply):
//! * [`ErrorKind::LineTooLong`]: a command line longer than [`MemcacheLimits::max_line`] bytes
//!   (or, for `get`/`gets`, [`MemcacheLimits::max_multiget_line`]);
//! * [`ErrorKind::HttpRequest`]: an unknown command whose last token starts with `HTTP/` (an
//!   HTTP client talking to the cache port).
//!
//! Every other error keeps the connection: `ERROR`, `CLIENT_ERROR ...` and
//! `SERVER_ERROR object too large for cache` (after which the data block is swallowed, as
//! memcached's `conn_swallow` state does).
//!
//! # Where this follows memcached and where it does not
//!
//! The behaviour is that of memcached 1.6's current parser (`proto_parser.c`, `proto_text.c`):
//! * tokens are separated by spaces only; a line ends at `\n`, with an optional `\r` before it;
//!   a line shorter than 4 bytes with its terminator (`\r\n`, `mn\n`) is
//!   `CLIENT_ERROR bad command line format`;
//! * extra tokens after a command's arguments are ignored; a last token `noreply` sets noreply
//!   for the storage commands, `incr`, `decr`, `touch`, `delete` and the admin commands, and it
//!   also silences their *error* replies (memcached's `noreply` suppresses every reply). So
//!   `delete <key> 0` (the legacy hold time) and `delete <key> 0 noreply` are accepted;
//! * numbers follow memcached's token converters: digits only (a leading `-` for the signed
//!   ones), at most 11 characters for 32-bit values and 22 for 64-bit ones;
//! * a storage command whose `<bytes>` is invalid gets `CLIENT_ERROR bad command line format`
//!   and only its line is consumed (memcached does not know how much data follows); once
//!   `<bytes>` is known, any later error (bad key, flags, exptime, cas, too large) swallows
//!   `<bytes> + 2` bytes after the line.
//!
//! Deliberate differences:
//! * line length: memcached closes a connection whose buffer holds more than 2048 bytes without a
//!   `\n`, unless it starts with `get ` or `gets ` (those multi-gets are unbounded), so whether a
//!   long line is read depends on how its bytes arrived. Here a line is refused when it is longer
//!   than [`MemcacheLimits::max_line`] whether or not its `\n` has arrived, and a `get`/`gets`
//!   line is bounded by [`MemcacheLimits::max_multiget_line`]: the same answer on every split;
//! * keys: memcached documents that keys hold no control characters but does not check; here a
//!   key with a byte below `0x21` or equal to `0x7f` is `CLIENT_ERROR bad command line format`,
//!   as a key longer than 250 bytes is. Base64 (`b`) meta keys are checked on their encoded
//!   form for length (as memcached: at most 250 characters, so at most 186 decoded bytes) and
//!   may hold any byte once decoded;
//! * the item size limit is checked on the declared `<bytes>` ([`MemcacheLimits::max_item_size`]),
//!   not on memcached's item header + key + data total;
//! * a multi-key `get` with an invalid key is refused as a whole before anything is looked up;
//! * base64 keys are decoded strictly (memcached skips characters outside the alphabet), and `me`
//!   checks its flags as the other meta commands do (memcached reads only its `b`).
//!
//! Left to the server: when memcached refuses a `set` (or `ms`) as too large it also unlinks the
//! key's current item, so a stale value does not survive the failed update.
//!
//! Commands memcached has that are not parsed here (they answer `ERROR`, as an unknown command):
//! `watch`, `lru`, `extstore`, `refresh_certs` and the debug-build commands. The ASCII
//! authentication exchange is read by [`parse_auth`] instead of [`parse`] until the connection
//! has authenticated; SASL (a binary-protocol exchange) is not parsed.

pub mod auth;
pub mod meta;
pub mod reply;
pub mod text;
pub mod token;

pub use auth::{AuthStep, parse_auth, secrets_equal};
pub use meta::{
    ArithmeticMode, MetaCommand, MetaFlag, MetaFlags, MetaKey, MetaRequest, SetMode, base64_decode,
    base64_encode,
};
pub use reply::{MetaDebugLine, MetaLine, MetaStatus, MetadumpItem, ReplyWriter};
pub use text::{AutomoveSetting, Keys, LruCrawler, Store, StoreMode};
pub use token::{KEY_MAX_LENGTH, Tokens, is_valid_key};

/// Protocol limits (the server fills them from its configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemcacheLimits {
    /// Largest data block a storage command may declare (memcached's `-I`, default 1 MiB). A
    /// larger `<bytes>` is `SERVER_ERROR object too large for cache` and the block is swallowed.
    pub max_item_size: usize,
    /// Longest command line, in bytes before its `\n` (memcached: 2048). A longer line closes
    /// the connection.
    pub max_line: usize,
    /// Longest `get`/`gets` line (memcached: unbounded). Taken as at least `max_line`.
    pub max_multiget_line: usize,
}

/// memcached's default item size limit (`-I 1m`).
pub const DEFAULT_MAX_ITEM_SIZE: usize = 1024 * 1024;
/// memcached's longest command line without a `\n` before it gives up on the connection.
pub const DEFAULT_MAX_LINE: usize = 2048;
/// Default longest multi-get line: 1 MiB, about 4,000 keys of 250 bytes.
pub const DEFAULT_MAX_MULTIGET_LINE: usize = 1024 * 1024;

impl Default for MemcacheLimits {
    fn default() -> Self {
        Self {
            max_item_size: DEFAULT_MAX_ITEM_SIZE,
            max_line: DEFAULT_MAX_LINE,
            max_multiget_line: DEFAULT_MAX_MULTIGET_LINE,
        }
    }
}

/// One parsed request. Keys, data blocks and raw arguments borrow from the input buffer (a
/// base64 meta key is decoded into an owned buffer).
#[derive(Debug, Clone, PartialEq)]
pub enum Request<'a> {
    /// `get <key>*` (`cas: false`) or `gets <key>*` (`cas: true`: reply with CAS values).
    Get {
        /// The keys, in request order (duplicates kept).
        keys: Keys<'a>,
        /// `gets`: each `VALUE` line carries the item's CAS value.
        cas: bool,
    },
    /// `gat <exptime> <key>*` or `gats <exptime> <key>*`: get and touch.
    Gat {
        /// The new expiration time (seconds, or a Unix time above 30 days; negative expires).
        exptime: i32,
        /// The keys, in request order.
        keys: Keys<'a>,
        /// `gats`: each `VALUE` line carries the item's CAS value.
        cas: bool,
    },
    /// `set`/`add`/`replace`/`append`/`prepend`/`cas` with its data block.
    Store(Store<'a>),
    /// `incr <key> <value> [noreply]`.
    Incr {
        /// The key.
        key: &'a [u8],
        /// The amount to add (the stored value wraps at 2^64).
        delta: u64,
        /// Send no reply.
        noreply: bool,
    },
    /// `decr <key> <value> [noreply]`.
    Decr {
        /// The key.
        key: &'a [u8],
        /// The amount to subtract (the stored value stops at 0).
        delta: u64,
        /// Send no reply.
        noreply: bool,
    },
    /// `delete <key> [0] [noreply]`.
    Delete {
        /// The key.
        key: &'a [u8],
        /// Send no reply.
        noreply: bool,
    },
    /// `touch <key> <exptime> [noreply]`.
    Touch {
        /// The key.
        key: &'a [u8],
        /// The new expiration time.
        exptime: i32,
        /// Send no reply.
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]`. A delay of 0 or below flushes now (as memcached).
    FlushAll {
        /// The delay in seconds (or a Unix time), when given.
        delay: Option<i32>,
        /// Send no reply.
        noreply: bool,
    },
    /// `version`.
    Version,
    /// `verbosity <n> [noreply]`.
    Verbosity {
        /// The level (memcached caps it at 2).
        level: u32,
        /// Send no reply.
        noreply: bool,
    },
    /// `quit`: close the connection without a reply.
    Quit,
    /// `stats [args...]`; the arguments are the server's to interpret (`items`, `slabs`,
    /// `settings`, `reset`, `detail on`, ...). memcached answers `ERROR` to one it does not know.
    Stats {
        /// The arguments after `stats` (none for plain `stats`).
        args: Tokens<'a>,
    },
    /// `slabs reassign <src> <dst>` (`-1` as source: any class).
    SlabsReassign {
        /// Source class id.
        src: i32,
        /// Destination class id.
        dst: i32,
    },
    /// `slabs automove <0|1|2>` and its tuning forms.
    SlabsAutomove {
        /// What to set.
        setting: AutomoveSetting,
        /// Send no reply.
        noreply: bool,
    },
    /// `lru_crawler <subcommand> [arg]`.
    LruCrawler(LruCrawler<'a>),
    /// `cache_memlimit <megabytes> [noreply]`.
    CacheMemlimit {
        /// The new memory limit in megabytes (memcached refuses below 8).
        megabytes: u32,
        /// Send no reply.
        noreply: bool,
    },
    /// `shutdown [graceful]` (memcached refuses it unless started with `-A`).
    Shutdown {
        /// `shutdown graceful`.
        graceful: bool,
    },
    /// A meta command with a key: `mg`, `ms`, `md`, `ma`, `me`.
    Meta(MetaRequest<'a>),
    /// `mn`: the meta no-op, answered `MN` (flushes pipelined quiet-mode replies).
    MetaNoop,
}

impl Request<'_> {
    /// Whether the client asked for no reply (`noreply` on a text command; meta commands use
    /// their `q` flag, whose meaning depends on the outcome: see [`MetaFlags::quiet`]).
    pub fn noreply(&self) -> bool {
        match self {
            Request::Store(s) => s.noreply,
            Request::Incr { noreply, .. }
            | Request::Decr { noreply, .. }
            | Request::Delete { noreply, .. }
            | Request::Touch { noreply, .. }
            | Request::FlushAll { noreply, .. }
            | Request::Verbosity { noreply, .. }
            | Request::SlabsAutomove { noreply, .. }
            | Request::CacheMemlimit { noreply, .. } => *noreply,
            _ => false,
        }
    }
}

/// What memcached answers and does after a protocol error. `Display` gives the reply line
/// (without `\r\n`) for the kinds that have one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `ERROR`: a nonexistent command, or a known admin command with the wrong number of
    /// arguments or a value memcached's handler refuses the same way.
    UnknownCommand,
    /// `CLIENT_ERROR bad command line format`: missing or malformed arguments, a key longer than
    /// 250 bytes or holding a control character, an empty line.
    BadFormat,
    /// `CLIENT_ERROR invalid exptime argument` (`touch`, `gat`, `flush_all`).
    InvalidExptime,
    /// `CLIENT_ERROR invalid numeric delta argument` (`incr`, `decr`).
    InvalidDelta,
    /// `CLIENT_ERROR bad data chunk`: a data block not followed by `\r\n`.
    BadDataChunk,
    /// `SERVER_ERROR object too large for cache`: a declared size above
    /// [`MemcacheLimits::max_item_size`].
    TooLarge,
    /// `CLIENT_ERROR duplicate flag` (meta): a flag given twice, or a flag byte above 126.
    DuplicateFlag,
    /// `CLIENT_ERROR invalid flag` (meta): a flag letter memcached does not know.
    InvalidFlag,
    /// `CLIENT_ERROR options flags are too long` (meta): more than 20 tokens on the line.
    TooManyFlags,
    /// `CLIENT_ERROR bad token in command line format` (meta): a bad `N`, `T`, `R`, `C` or `E`
    /// argument.
    BadToken,
    /// `CLIENT_ERROR error decoding key` (meta): a `b` key that is not base64.
    KeyDecode,
    /// `CLIENT_ERROR opaque token too long` (meta): an `O` token longer than 32 bytes.
    OpaqueTooLong,
    /// `CLIENT_ERROR invalid mode for ms M token`.
    InvalidSetMode,
    /// `CLIENT_ERROR invalid mode for ma M token`.
    InvalidArithmeticMode,
    /// `CLIENT_ERROR invalid numeric initial value` (meta `J`).
    InvalidInitial,
    /// `CLIENT_ERROR invalid numeric delta value` (meta `D`).
    InvalidMetaDelta,
    /// `CLIENT_ERROR invalid or duplicate flag`: any flag or key error of `ma` (memcached
    /// reports them all with this one line).
    InvalidOrDuplicateFlag,
    /// `CLIENT_ERROR sleep must be one second or less` (`lru_crawler sleep`).
    SleepTooLong,
    /// `CLIENT_ERROR automove window too low or too high` (`slabs automove window`).
    AutomoveWindow,
    /// `CLIENT_ERROR invalid shutdown mode`.
    InvalidShutdownMode,
    /// A command line longer than the limit: memcached closes the connection without a reply.
    LineTooLong,
    /// An HTTP request line: memcached closes the connection without a reply.
    HttpRequest,
    /// `delete <key>` with a hold time other than 0, or extra tokens.
    DeleteUsage,
}

impl ErrorKind {
    /// The reply line memcached sends (without `\r\n`), `None` for the silent closes.
    pub fn reply_line(self) -> Option<&'static str> {
        Some(match self {
            ErrorKind::UnknownCommand => "ERROR",
            ErrorKind::BadFormat => "CLIENT_ERROR bad command line format",
            ErrorKind::InvalidExptime => "CLIENT_ERROR invalid exptime argument",
            ErrorKind::InvalidDelta => "CLIENT_ERROR invalid numeric delta argument",
            ErrorKind::BadDataChunk => "CLIENT_ERROR bad data chunk",
            ErrorKind::TooLarge => "SERVER_ERROR object too large for cache",
            ErrorKind::DuplicateFlag => "CLIENT_ERROR duplicate flag",
            ErrorKind::InvalidFlag => "CLIENT_ERROR invalid flag",
            ErrorKind::TooManyFlags => "CLIENT_ERROR options flags are too long",
            ErrorKind::BadToken => "CLIENT_ERROR bad token in command line format",
            ErrorKind::KeyDecode => "CLIENT_ERROR error decoding key",
            ErrorKind::OpaqueTooLong => "CLIENT_ERROR opaque token too long",
            ErrorKind::InvalidSetMode => "CLIENT_ERROR invalid mode for ms M token",
            ErrorKind::InvalidArithmeticMode => "CLIENT_ERROR invalid mode for ma M token",
            ErrorKind::InvalidInitial => "CLIENT_ERROR invalid numeric initial value",
            ErrorKind::InvalidMetaDelta => "CLIENT_ERROR invalid numeric delta value",
            ErrorKind::InvalidOrDuplicateFlag => "CLIENT_ERROR invalid or duplicate flag",
            ErrorKind::SleepTooLong => "CLIENT_ERROR sleep must be one second or less",
            ErrorKind::AutomoveWindow => "CLIENT_ERROR automove window too low or too high",
            ErrorKind::InvalidShutdownMode => "CLIENT_ERROR invalid shutdown mode",
            ErrorKind::DeleteUsage => {
                "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]"
            }
            ErrorKind::LineTooLong | ErrorKind::HttpRequest => return None,
        })
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.reply_line(), self) {
            (Some(line), _) => f.write_str(line),
            (None, ErrorKind::HttpRequest) => f.write_str("HTTP request (connection closed)"),
            (None, _) => f.write_str("command line too long (connection closed)"),
        }
    }
}

/// What memcached does after an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The connection carries on: drop `consumed` bytes (all of them are in the buffer), then
    /// discard the next `swallow` bytes as they come (the data block of a refused storage
    /// command: some may follow in the buffer, the rest arrive later), then parse the next
    /// request.
    Continue {
        /// Bytes of the buffer to drop: the command line, and the data block when the error is
        /// about the block itself (`bad data chunk`).
        consumed: usize,
        /// Bytes to discard after those, counted from the end of `consumed`; 0 for most errors.
        swallow: usize,
    },
    /// Close the connection (after sending the reply, if any). Where the next request starts
    /// is unknown.
    Close,
}

/// A request memcached answers with an error. `Display` gives the reply line without `\r\n`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct MemcacheError {
    /// Which error, hence the reply line.
    pub kind: ErrorKind,
    /// The request ended with `noreply`, which memcached honours for errors too: no reply is
    /// sent. Never set for meta commands, whose errors are always sent.
    pub noreply: bool,
    /// Whether the connection carries on, and the bytes to skip.
    pub recovery: Recovery,
}

impl MemcacheError {
    /// An error after which the connection carries on, skipping `consumed` bytes.
    pub(crate) fn keep(kind: ErrorKind, consumed: usize, noreply: bool) -> Self {
        Self {
            kind,
            noreply,
            recovery: Recovery::Continue {
                consumed,
                swallow: 0,
            },
        }
    }

    /// An error that closes the connection.
    pub(crate) fn close(kind: ErrorKind) -> Self {
        Self {
            kind,
            noreply: false,
            recovery: Recovery::Close,
        }
    }

    /// The reply line to send (without `\r\n`): `None` when the client asked for `noreply` or
    /// memcached closes silently.
    pub fn reply(&self) -> Option<&'static str> {
        if self.noreply {
            None
        } else {
            self.kind.reply_line()
        }
    }

    /// Whether the connection must be closed after the reply.
    pub fn closes(&self) -> bool {
        self.recovery == Recovery::Close
    }

    /// Splits the bytes to skip for a buffer holding `available` bytes from the start of the
    /// failed request: `(drop now, still to discard later)`. `None` when the connection closes.
    pub fn skip(&self, available: usize) -> Option<(usize, usize)> {
        match self.recovery {
            Recovery::Continue { consumed, swallow } => {
                let now = swallow.min(available.saturating_sub(consumed));
                Some((consumed + now, swallow - now))
            }
            Recovery::Close => None,
        }
    }
}

/// Parses one request from the start of `buf`. See the module docs for the contract.
///
/// # Errors
/// A [`MemcacheError`] when memcached would answer the request with an error; it says whether
/// the connection carries on and how many bytes to skip.
pub fn parse<'a>(
    buf: &'a [u8],
    limits: &MemcacheLimits,
) -> Result<Option<(Request<'a>, usize)>, MemcacheError> {
    let Some(line) = token::next_line(buf, limits)? else {
        return Ok(None);
    };
    // An empty or blank line has no command name: memcached 1.6.18 answers `ERROR` (as any
    // unknown command) and keeps the connection.
    let name = token::command_name(line.text);
    if let [b'm', letter] = *name
        && let Some(r) = meta::parse(letter, buf, line, limits)
    {
        return r;
    }
    text::parse(name, buf, line, limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(buf: &[u8]) -> Result<Option<(Request<'_>, usize)>, MemcacheError> {
        parse(buf, &MemcacheLimits::default())
    }

    #[test]
    fn blank_and_short_lines_are_unknown_commands() {
        // memcached 1.6.18: `ERROR`, the connection kept.
        for (buf, n) in [
            (&b"\r\n"[..], 2),
            (b" \n", 2),
            (b"\n", 1),
            (b"a\r\n", 3),
            (b" \t \r\n", 5),
        ] {
            assert_eq!(
                p(buf),
                Err(MemcacheError::keep(ErrorKind::UnknownCommand, n, false)),
                "{buf:?}"
            );
        }
        assert_eq!(p(b"mn\n"), Ok(Some((Request::MetaNoop, 3))));
        assert_eq!(p(b"mn\r\n"), Ok(Some((Request::MetaNoop, 4))));
        assert_eq!(p(b""), Ok(None));
        assert_eq!(p(b"mn\r"), Ok(None));
    }

    #[test]
    fn error_replies_and_skips() {
        let e = MemcacheError {
            kind: ErrorKind::TooLarge,
            noreply: false,
            recovery: Recovery::Continue {
                consumed: 10,
                swallow: 100,
            },
        };
        assert_eq!(e.to_string(), "SERVER_ERROR object too large for cache");
        assert_eq!(e.reply(), Some("SERVER_ERROR object too large for cache"));
        assert_eq!(e.skip(10), Some((10, 100)));
        assert_eq!(e.skip(50), Some((50, 60)));
        assert_eq!(e.skip(500), Some((110, 0)));
        assert!(!e.closes());
        let quiet = MemcacheError { noreply: true, ..e };
        assert_eq!(quiet.reply(), None);
        let closed = MemcacheError::close(ErrorKind::LineTooLong);
        assert_eq!(closed.reply(), None);
        assert!(closed.closes());
        assert_eq!(closed.skip(5), None);
        assert_eq!(
            ErrorKind::HttpRequest.to_string(),
            "HTTP request (connection closed)"
        );
    }

    #[test]
    fn meta_letters_that_are_not_commands_are_unknown() {
        assert_eq!(
            p(b"mx foo\r\n"),
            Err(MemcacheError::keep(ErrorKind::UnknownCommand, 8, false))
        );
        assert_eq!(
            p(b"MG foo\r\n"),
            Err(MemcacheError::keep(ErrorKind::UnknownCommand, 8, false))
        );
    }
}
