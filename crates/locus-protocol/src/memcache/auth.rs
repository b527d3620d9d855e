//! memcached's ASCII authentication exchange (its `-Y <authfile>`): until a connection has
//! authenticated, every request is read as `set <key> <flags> <exptime> <bytes>` whose data
//! block is `<user> <password>`; the key, flags and exptime are ignored.
//!
//! [`parse_auth`] follows memcached 1.6's `try_read_command_asciiauth` (`proto_text.c`):
//! * a line shorter than 6 bytes before its `\n` closes the connection silently;
//! * a line that is not `set` with at least five tokens and a numeric `<bytes>` (token 4) is
//!   answered `CLIENT_ERROR unauthenticated`, and only the line is consumed;
//! * `<bytes>` above [`MAX_AUTH_TOKEN`] is `CLIENT_ERROR auth token too long`, line consumed;
//! * otherwise the line and `<bytes> + 2` bytes are consumed: a block not ending in `\r\n` is
//!   `CLIENT_ERROR bad command line termination`, one without a space is
//!   `CLIENT_ERROR bad authentication token format`; else the user is the block up to its first
//!   space and the password the rest (spaces included). The server answers `STORED` or
//!   `CLIENT_ERROR authentication failure`, whatever `noreply` says.
//!
//! Lines are framed by the same [`token`](super::token) code as every other command, and bounded
//! by [`MemcacheLimits::max_line`] whether or not the `\n` has arrived (memcached reads a longer
//! line when its `\n` is already in the buffer).

use super::MemcacheLimits;
use super::token::{self, Split};

/// Largest credentials block memcached reads (`MAX_AUTH_REQ_LEN`).
pub const MAX_AUTH_TOKEN: u32 = 16384;
/// Shortest auth line memcached accepts, in bytes before the `\n` (`MIN_AUTH_REQ_LEN`).
const MIN_AUTH_LINE: usize = 6;

/// What an unauthenticated connection's next request amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStep<'a> {
    /// Credentials to check: answer `STORED` if they hold, else
    /// [`AuthStep::FAILURE`].
    Credentials {
        /// The data block up to its first space.
        user: &'a [u8],
        /// The rest of the block, without its `\r\n`.
        password: &'a [u8],
    },
    /// Send this line (without `\r\n`) and stay unauthenticated.
    Refused(&'static str),
    /// Close the connection without a reply.
    Close,
}

impl AuthStep<'_> {
    /// memcached's reply to credentials that do not hold.
    pub const FAILURE: &'static str = "CLIENT_ERROR authentication failure";
    /// memcached's reply to any other command before authentication.
    pub const UNAUTHENTICATED: &'static str = "CLIENT_ERROR unauthenticated";
}

/// Reads one request of an unauthenticated connection from the start of `buf`: `None` while it
/// is incomplete, else the step and the bytes it takes (`0 < consumed <= buf.len()`; the whole
/// buffer for [`AuthStep::Close`]). The wait is bounded by `limits.max_line` plus
/// [`MAX_AUTH_TOKEN`] + 2 bytes.
pub fn parse_auth<'a>(buf: &'a [u8], limits: &MemcacheLimits) -> Option<(AuthStep<'a>, usize)> {
    // Only the short line limit applies: an auth line is never a multi-get.
    let limits = MemcacheLimits {
        max_multiget_line: limits.max_line,
        ..*limits
    };
    let line = match token::next_line(buf, &limits) {
        Ok(Some(line)) => line,
        Ok(None) => return None,
        Err(_) => return Some((AuthStep::Close, buf.len())),
    };
    if line.consumed - 1 < MIN_AUTH_LINE {
        return Some((AuthStep::Close, buf.len()));
    }
    let s = Split::new(line.text);
    let size = match (s.count(), s.get(0), s.get(4).and_then(token::parse_u32)) {
        (5.., Some(cmd), Some(size)) if cmd.starts_with(b"set") => size,
        _ => {
            return Some((AuthStep::Refused(AuthStep::UNAUTHENTICATED), line.consumed));
        }
    };
    if size > MAX_AUTH_TOKEN {
        return Some((
            AuthStep::Refused("CLIENT_ERROR auth token too long"),
            line.consumed,
        ));
    }
    let end = line.consumed + size as usize + 2;
    let block = buf.get(line.consumed..end)?;
    let Some(data) = block.strip_suffix(b"\r\n") else {
        return Some((
            AuthStep::Refused("CLIENT_ERROR bad command line termination"),
            end,
        ));
    };
    let step = match memchr::memchr(b' ', data) {
        Some(mid) => AuthStep::Credentials {
            user: &data[..mid],
            password: &data[mid + 1..],
        },
        None => AuthStep::Refused("CLIENT_ERROR bad authentication token format"),
    };
    Some((step, end))
}

/// Compares two secrets in time that depends on their lengths only (memcached's
/// `safe_memcmp`).
pub fn secrets_equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(buf: &[u8]) -> Option<(AuthStep<'_>, usize)> {
        parse_auth(buf, &MemcacheLimits::default())
    }

    #[test]
    fn credentials_and_their_framing() {
        let req = b"set any 0 0 11\r\nalice s3 cr\r\nget x\r\n";
        assert_eq!(
            p(req),
            Some((
                AuthStep::Credentials {
                    user: b"alice",
                    password: b"s3 cr"
                },
                29
            ))
        );
        // Every proper prefix of the exchange waits.
        for n in 0..29 {
            assert_eq!(p(&req[..n]), None, "{n}");
        }
        assert_eq!(
            p(b"set k 0 0 5 noreply\r\na b c\r\n"),
            Some((
                AuthStep::Credentials {
                    user: b"a",
                    password: b"b c"
                },
                28
            ))
        );
    }

    #[test]
    fn refusals_as_memcached() {
        let refused = |buf: &[u8]| match p(buf) {
            Some((AuthStep::Refused(r), n)) => (r, n),
            other => panic!("{other:?}"),
        };
        assert_eq!(refused(b"get foo\r\n"), (AuthStep::UNAUTHENTICATED, 9));
        assert_eq!(refused(b"set foo 0 0\r\n"), (AuthStep::UNAUTHENTICATED, 13));
        assert_eq!(
            refused(b"set foo 0 0 x1\r\n"),
            (AuthStep::UNAUTHENTICATED, 16)
        );
        assert_eq!(
            refused(b"set foo 0 0 16385\r\n"),
            ("CLIENT_ERROR auth token too long", 19)
        );
        assert_eq!(
            refused(b"set foo 0 0 3\r\nabcde"),
            ("CLIENT_ERROR bad command line termination", 20)
        );
        assert_eq!(
            refused(b"set foo 0 0 3\r\nabc\r\n"),
            ("CLIENT_ERROR bad authentication token format", 20)
        );
    }

    #[test]
    fn closes_on_short_and_long_lines() {
        assert_eq!(p(b"set\r\n"), Some((AuthStep::Close, 5)));
        assert_eq!(p(b"x\n"), Some((AuthStep::Close, 2)));
        let long = vec![b'a'; 3000];
        assert_eq!(p(&long), Some((AuthStep::Close, 3000)));
        let mut get = b"get ".to_vec();
        get.extend(vec![b'k'; 3000]);
        assert_eq!(p(&get), Some((AuthStep::Close, get.len())));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(secrets_equal(b"pw", b"pw"));
        assert!(!secrets_equal(b"pw", b"pW"));
        assert!(!secrets_equal(b"pw", b"pw1"));
        assert!(secrets_equal(b"", b""));
    }
}
