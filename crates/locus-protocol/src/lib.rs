//! Pure parse/compose for the Redis protocol (RESP2 and RESP3) and memcached's text and meta
//! protocols: no sockets, no I/O, no threads.
//!
//! The server reads bytes into a buffer and asks [`parse`] for the next complete command; this crate
//! never touches a socket (STYLE.md habit 7), so the same code is unit-tested with exact bytes and
//! fuzzed (`fuzz/`).
//!
//! ```text
//!   socket bytes ──► [ read buffer ] ──parse()──► Command { args: [&[u8] slices into the buffer] }
//!                                                     │
//!                                       server executes, calls ReplyWriter methods
//!                                                     ▼
//!   socket  ◄──────── [ Vec<u8> out ] ◄── ReplyWriter (RESP2 or RESP3 encoding)
//! ```
//!
//! Components:
//! * [`request`]: the request parser. Multibulk (`*N\r\n$len\r\n...`) and inline (`GET k\r\n`, with
//!   `sdssplitargs` quoting) forms. Every limit ([`Limits`]) is checked before anything is allocated
//!   or waited for; errors carry Redis's wording ([`ProtocolError`]) and say whether framing is lost.
//! * [`reply`]: [`ReplyWriter`], the reply encoder. One method per RESP type; RESP3-only types
//!   (map, set, double, null, boolean, verbatim, big number, push) degrade to their RESP2 forms
//!   exactly as Redis does when the client speaks RESP2.
//! * [`memcache`]: memcached 1.6's text and meta requests (one tokenizer for both), their limits
//!   and errors (which keep the connection, which close it, what data to swallow), and the reply
//!   writer. `locus-server`'s `memcache` module serves it beside RESP.
//!
//! Non-goals: RESP3 *requests* beyond arrays of bulk strings (clients never send them).

pub mod memcache;
pub mod reply;
pub mod request;

pub use memcache::{MemcacheError, MemcacheLimits};
pub use reply::{ProtocolVersion, ReplyWriter};
pub use request::{Command, Limits, ProtocolError, parse, parse_into};
