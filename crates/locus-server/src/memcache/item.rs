//! A memcached item as the engine stores it: a 13-byte header before the data, kept by the engine
//! as the value's metadata prefix (`Engine::set_with_meta`), so the RESP face reads the data
//! alone; and memcached's expiration-time rules.
//!
//! ```text
//!   stored = [ client flags: u32 LE | CAS unique: u64 LE | state: u8 ][ data ... ]
//!   state bits: FETCHED (h, me fetch=yes), STALE (md I / ms I: X), WIN_SENT (W given: Z)
//! ```
//!
//! One value, two protocols: a RESP `GET` of a memcached-set key returns its data, byte for
//! byte; a memcached `get` of a RESP-set key is a hit with flags 0 (the key is given a header
//! with a CAS unique of its own at that first read, its bytes and TTL unchanged: `exec::adopt`);
//! a RESP write of the key stores it without header again (its flags go back to 0, its CAS
//! unique changes).

/// Bytes of the header before the data.
pub const HEADER: usize = 13;

/// Seconds up to which an exptime is relative (memcached's `REALTIME_MAXDELTA`, 30 days).
pub const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;

/// The item has been fetched since it was stored.
pub const FETCHED: u8 = 1;
/// The item was invalidated (`md ... I`, `ms ... I` with an older CAS): served as stale.
pub const STALE: u8 = 2;
/// A client was given the recache token (`W`); later ones see `Z`.
pub const WIN_SENT: u8 = 4;

/// The header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Meta {
    /// The client's flags.
    pub flags: u32,
    /// The CAS unique.
    pub cas: u64,
    /// [`FETCHED`], [`STALE`], [`WIN_SENT`].
    pub state: u8,
}

/// Builds a stored value: header then `parts` concatenated.
pub fn encode(meta: Meta, parts: &[&[u8]]) -> Vec<u8> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut v = Vec::with_capacity(HEADER + len);
    encode_into(&mut v, meta, parts);
    v
}

/// Appends a stored value (header then `parts`) to `v`.
fn encode_into(v: &mut Vec<u8>, meta: Meta, parts: &[&[u8]]) {
    v.extend_from_slice(&meta.flags.to_le_bytes());
    v.extend_from_slice(&meta.cas.to_le_bytes());
    v.push(meta.state);
    for p in parts {
        v.extend_from_slice(p);
    }
}

/// Largest scratch buffer a thread keeps between stores; a larger item's buffer is freed after
/// its store.
const SCRATCH_KEEP: usize = 64 * 1024;

thread_local! {
    /// Each worker thread's buffer for laying out an item before the engine copies it.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Calls `f` with the stored value of `meta` and `parts`, laid out in this thread's scratch
/// buffer: the same bytes as [`encode`] without an allocation per store. `f` must not store
/// another item itself (the buffer is borrowed; a nested call falls back to [`encode`]).
pub fn with_encoded<R>(meta: Meta, parts: &[&[u8]], f: impl FnOnce(&[u8]) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut v) => {
            v.clear();
            encode_into(&mut v, meta, parts);
            let r = f(&v);
            if v.capacity() > SCRATCH_KEEP {
                *v = Vec::new();
            }
            r
        }
        Err(_) => f(&encode(meta, parts)),
    })
}

/// Reads an item as the engine gives it (`Engine::get_with_meta`): its header (the engine keeps
/// it as the value's metadata prefix) and data. A value stored without one (written through the
/// RESP face) reads as flags 0 and CAS 0: no CAS unique yet (see `exec::adopt`).
pub fn decode<'a>((prefix, data): (Option<&[u8]>, &'a [u8])) -> (Meta, &'a [u8]) {
    let meta = prefix.and_then(header).unwrap_or_default();
    (meta, data)
}

/// The fields of a header.
fn header(v: &[u8]) -> Option<Meta> {
    let flags = u32::from_le_bytes(v.get(0..4)?.try_into().ok()?);
    let cas = u64::from_le_bytes(v.get(4..12)?.try_into().ok()?);
    Some(Meta {
        flags,
        cas,
        state: *v.get(12)?,
    })
}

/// Splits a value in the form older builds stored (header then data, no mark telling it from a
/// value the RESP face wrote; snapshot files of format 1): `None` when it cannot be one (too
/// short, or a state byte or CAS unique no older build wrote: see `snapshot`'s loader).
pub fn decode_legacy(v: &[u8]) -> Option<(Meta, &[u8])> {
    let meta = header(v.get(..HEADER)?)?;
    let state_ok = meta.state & !(FETCHED | STALE | WIN_SENT) == 0;
    (state_ok && meta.cas != 0 && meta.cas >> 32 == 0).then_some((meta, &v[HEADER..]))
}

/// Sets bits of the state byte of a header in place (see `Engine::peek_meta_mut`).
pub fn set_state(v: &mut [u8], bits: u8) {
    if let Some(s) = v.get_mut(12) {
        *s |= bits;
    }
}

/// Clears bits of the state byte of a header in place.
pub fn clear_state(v: &mut [u8], bits: u8) {
    if let Some(s) = v.get_mut(12) {
        *s &= !bits;
    }
}

/// When an item expires, from memcached's exptime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// 0: never.
    Never,
    /// At this clock time (ms).
    AtMs(u64),
    /// Negative, or an absolute time already past: the item is gone at once.
    Past,
}

/// memcached's `realtime()`: 0 never; negative already expired; up to 30 days seconds from now;
/// above that a Unix time (in the past: expired).
pub fn expiry(exptime: i64, now_ms: u64) -> Expiry {
    if exptime == 0 {
        Expiry::Never
    } else if exptime < 0 {
        Expiry::Past
    } else if exptime > REALTIME_MAXDELTA {
        let at = (exptime as u64).saturating_mul(1000);
        if at <= now_ms {
            Expiry::Past
        } else {
            Expiry::AtMs(at)
        }
    } else {
        Expiry::AtMs(now_ms + exptime as u64 * 1000)
    }
}

/// memcached's `safe_strtoull` on an item's data: optional leading spaces, an optional `+`,
/// digits, then a space or the end (the item's `\r\n` in memcached). An empty value is 0, as in
/// memcached. `None`: not a number, or above 2^64-1.
pub fn parse_counter(data: &[u8]) -> Option<u64> {
    let mut i = 0;
    while i < data.len() && data[i].is_ascii_whitespace() {
        i += 1;
    }
    if i == data.len() {
        return Some(0);
    }
    let neg = data[i] == b'-';
    if data[i] == b'+' || neg {
        i += 1;
    }
    let start = i;
    let mut n: u64 = 0;
    while i < data.len() && data[i].is_ascii_digit() {
        n = n.checked_mul(10)?.checked_add(u64::from(data[i] - b'0'))?;
        i += 1;
    }
    if i == start || (i < data.len() && !data[i].is_ascii_whitespace()) {
        return None;
    }
    // strtoull negates a `-` number; memcached refuses the result when it is "negative".
    if neg && n != 0 {
        return None;
    }
    Some(n)
}

/// The data of a counter after incr/decr: memcached rewrites it in place, padded with spaces,
/// when the new number is not longer than the old data, else stores it as is.
pub fn counter_data(n: u64, old_len: usize) -> Vec<u8> {
    let mut v = itoa::Buffer::new().format(n).as_bytes().to_vec();
    if v.len() < old_len {
        v.resize(old_len, b' ');
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let m = Meta {
            flags: 0xdead_beef,
            cas: u64::MAX - 1,
            state: STALE,
        };
        let v = encode(m, &[b"ab", b"cd"]);
        assert_eq!(v.len(), HEADER + 4);
        let (h, d) = v.split_at(HEADER);
        assert_eq!(decode((Some(h), d)), (m, &b"abcd"[..]));
        // A value without header (the RESP face's): flags 0, no CAS unique yet.
        assert_eq!(decode((None, b"abcd")), (Meta::default(), &b"abcd"[..]));
        let mut v = v;
        set_state(&mut v, FETCHED);
        clear_state(&mut v, STALE);
        assert_eq!(decode((Some(&v[..HEADER]), b"")).0.state, FETCHED);
    }

    #[test]
    fn legacy_values_are_told_by_their_header() {
        let m = Meta {
            flags: 2,
            cas: 41,
            state: FETCHED,
        };
        let v = encode(m, &[b"hello"]);
        assert_eq!(decode_legacy(&v), Some((m, &b"hello"[..])));
        // Too short, CAS 0 or past 2^32, unknown state bits: not an item of an older build.
        assert_eq!(decode_legacy(b"short"), None);
        assert_eq!(decode_legacy(b"a value written over RESP"), None);
        for bad in [
            Meta { cas: 0, ..m },
            Meta { cas: 1 << 32, ..m },
            Meta { state: 8, ..m },
        ] {
            assert_eq!(decode_legacy(&encode(bad, &[b"x"])), None, "{bad:?}");
        }
    }

    #[test]
    fn scratch_layout_is_encode() {
        let m = Meta {
            flags: 7,
            cas: 99,
            state: 0,
        };
        let big = vec![b'x'; SCRATCH_KEEP + 1];
        for parts in [&[&b"ab"[..], b"cd"][..], &[], &[&big[..]], &[b"z"]] {
            let want = encode(m, parts);
            assert_eq!(with_encoded(m, parts, <[u8]>::to_vec), want);
            // A store inside a store (not done today) gets its own buffer, not a clobbered one.
            let nested = with_encoded(m, parts, |outer| {
                let inner = with_encoded(m, &[b"q"], <[u8]>::to_vec);
                (outer.to_vec(), inner)
            });
            assert_eq!(nested, (want, encode(m, &[b"q"])));
        }
    }

    #[test]
    fn exptime_rules() {
        let now = 2_000_000_000_000;
        assert_eq!(expiry(0, now), Expiry::Never);
        assert_eq!(expiry(-1, now), Expiry::Past);
        assert_eq!(expiry(10, now), Expiry::AtMs(now + 10_000));
        assert_eq!(
            expiry(REALTIME_MAXDELTA, now),
            Expiry::AtMs(now + REALTIME_MAXDELTA as u64 * 1000)
        );
        assert_eq!(expiry(REALTIME_MAXDELTA + 1, now), Expiry::Past);
        assert_eq!(expiry(2_000_000_100, now), Expiry::AtMs(2_000_000_100_000));
    }

    #[test]
    fn counters_parse_as_memcached() {
        assert_eq!(parse_counter(b"42"), Some(42));
        assert_eq!(parse_counter(b"9 "), Some(9));
        assert_eq!(parse_counter(b""), Some(0));
        assert_eq!(parse_counter(b" +7"), Some(7));
        assert_eq!(parse_counter(b"-0"), Some(0));
        assert_eq!(parse_counter(b"-1"), None);
        assert_eq!(parse_counter(b"12a"), None);
        assert_eq!(parse_counter(b"abc"), None);
        assert_eq!(parse_counter(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_counter(b"18446744073709551616"), None);
        assert_eq!(counter_data(9, 2), b"9 ");
        assert_eq!(counter_data(100, 2), b"100");
    }
}
