//! cargo-fuzz target: the memcached parser (text and meta commands, and the ASCII auth
//! exchange) never panics and keeps its contract on any input:
//! * a request consumes `0 < n <= available` bytes, its keys are within 250 bytes (a base64
//!   key within 250 encoded characters), a data block within the item size limit, and the bytes
//!   it consumed parse alone into the same request (nothing past them was read);
//! * every proper prefix of a request's bytes is incomplete;
//! * "incomplete" is only answered while the buffer is within the limits' bounded wait;
//! * an error's skip stays within what it says (`now + later == consumed + swallow`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use locus_protocol::memcache::{
    self, AuthStep, KEY_MAX_LENGTH, MemcacheLimits, Recovery, Request,
};

/// Small limits so that short inputs reach every one of them.
const LIMITS: MemcacheLimits = MemcacheLimits {
    max_item_size: 64,
    max_line: 96,
    max_multiget_line: 160,
};

/// The longest buffer the parser may wait on: a multi-get line without its `\n`, or a
/// storage line and a block one byte short.
const MAX_PENDING: usize = {
    let line = LIMITS.max_line + 1 + LIMITS.max_item_size + 2 - 1;
    if line > LIMITS.max_multiget_line { line } else { LIMITS.max_multiget_line }
};

/// Keys of a request, as the parser produced them (`raw`: the token as sent).
fn check_keys(req: &Request<'_>) {
    let ok = |k: &[u8]| assert!(!k.is_empty() && k.len() <= KEY_MAX_LENGTH, "key {k:?}");
    match req {
        Request::Get { keys, .. } | Request::Gat { keys, .. } => keys.iter().for_each(ok),
        Request::Store(s) => {
            ok(s.key);
            assert!(s.data.len() <= LIMITS.max_item_size);
        }
        Request::Incr { key, .. }
        | Request::Decr { key, .. }
        | Request::Delete { key, .. }
        | Request::Touch { key, .. } => ok(key),
        Request::Meta(m) => {
            // A base64 key is at most 250 encoded characters: 187 decoded bytes.
            assert!(m.key.bytes().len() <= KEY_MAX_LENGTH);
            assert!(m.data.len() <= LIMITS.max_item_size);
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    while pos < data.len() {
        let buf = &data[pos..];
        match memcache::parse(buf, &LIMITS) {
            Ok(Some((req, n))) => {
                assert!(n > 0 && n <= buf.len());
                check_keys(&req);
                // Consumed bytes are exactly the request: alone they parse the same, and one
                // byte fewer is incomplete.
                assert_eq!(memcache::parse(&buf[..n], &LIMITS), Ok(Some((req.clone(), n))));
                assert_eq!(memcache::parse(&buf[..n - 1], &LIMITS), Ok(None));
                pos += n;
            }
            Ok(None) => {
                assert!(buf.len() <= MAX_PENDING, "waits on {} bytes", buf.len());
                break;
            }
            Err(e) => match e.recovery {
                Recovery::Close => break,
                Recovery::Continue { consumed, swallow } => {
                    assert!(consumed > 0 && consumed <= buf.len());
                    let (now, later) = e.skip(buf.len()).expect("a kept connection skips");
                    assert_eq!(now + later, consumed + swallow);
                    assert!(now <= buf.len());
                    pos += now;
                    if later > 0 {
                        break;
                    }
                }
            },
        }
    }
    // The same bytes as an unauthenticated connection's first requests.
    let mut pos = 0;
    while pos < data.len() {
        match memcache::parse_auth(&data[pos..], &LIMITS) {
            Some((step, n)) => {
                assert!(n > 0 && n <= data.len() - pos);
                if let AuthStep::Credentials { user, password } = step {
                    assert!(user.len() + password.len() < n);
                }
                if step == AuthStep::Close {
                    break;
                }
                pos += n;
            }
            None => {
                let wait = LIMITS.max_line + 1 + memcache::auth::MAX_AUTH_TOKEN as usize + 2;
                assert!(data.len() - pos < wait);
                break;
            }
        }
    }
});
