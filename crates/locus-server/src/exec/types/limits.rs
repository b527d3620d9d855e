//! The collections' encoding thresholds (Redis's `hash-max-listpack-entries` and friends, with
//! their older `ziplist` names), process-wide and changed by CONFIG SET as in Redis.

use std::sync::atomic::{AtomicI64, Ordering};

/// One threshold: its names, its value and its range.
#[derive(Debug)]
pub struct Limit {
    /// The current name, then its alias.
    pub names: [&'static str; 2],
    value: AtomicI64,
    min: i64,
    max: i64,
}

impl Limit {
    const fn new(name: &'static str, alias: &'static str, v: i64, min: i64, max: i64) -> Self {
        Self {
            names: [name, alias],
            value: AtomicI64::new(v),
            min,
            max,
        }
    }

    /// The current value.
    #[inline]
    pub fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }

    /// The current value as a count or length (negative reads as 0).
    #[inline]
    pub fn usize(&self) -> usize {
        usize::try_from(self.get()).unwrap_or(0)
    }
}

/// `hash-max-listpack-entries`.
pub static HASH_ENTRIES: Limit = Limit::new(
    "hash-max-listpack-entries",
    "hash-max-ziplist-entries",
    128,
    0,
    i64::MAX,
);
/// `hash-max-listpack-value`.
pub static HASH_VALUE: Limit = Limit::new(
    "hash-max-listpack-value",
    "hash-max-ziplist-value",
    64,
    0,
    i64::MAX,
);
/// `set-max-intset-entries`.
pub static SET_INTSET: Limit = Limit::new(
    "set-max-intset-entries",
    "set-max-intset-entries",
    512,
    0,
    i64::MAX,
);
/// `set-max-listpack-entries`.
pub static SET_ENTRIES: Limit = Limit::new(
    "set-max-listpack-entries",
    "set-max-listpack-entries",
    128,
    0,
    i64::MAX,
);
/// `set-max-listpack-value`.
pub static SET_VALUE: Limit = Limit::new(
    "set-max-listpack-value",
    "set-max-listpack-value",
    64,
    0,
    i64::MAX,
);
/// `zset-max-listpack-entries`.
pub static ZSET_ENTRIES: Limit = Limit::new(
    "zset-max-listpack-entries",
    "zset-max-ziplist-entries",
    128,
    0,
    i64::MAX,
);
/// `zset-max-listpack-value`.
pub static ZSET_VALUE: Limit = Limit::new(
    "zset-max-listpack-value",
    "zset-max-ziplist-value",
    64,
    0,
    i64::MAX,
);
/// `list-max-listpack-size` (negative: a node's bytes, -1 = 4 KiB .. -5 = 64 KiB; positive:
/// entries per node).
pub static LIST_SIZE: Limit = Limit::new(
    "list-max-listpack-size",
    "list-max-ziplist-size",
    -2,
    i32::MIN as i64,
    i32::MAX as i64,
);
/// `list-compress-depth` (accepted; Locus does not compress list nodes).
pub static LIST_COMPRESS: Limit = Limit::new(
    "list-compress-depth",
    "list-compress-depth",
    0,
    0,
    i32::MAX as i64,
);

/// `stream-node-max-entries` (0: no limit).
pub static STREAM_NODE_ENTRIES: Limit = Limit::new(
    "stream-node-max-entries",
    "stream-node-max-entries",
    100,
    0,
    i64::MAX,
);
/// `stream-node-max-bytes` (0: no limit).
pub static STREAM_NODE_BYTES: Limit = Limit::new(
    "stream-node-max-bytes",
    "stream-node-max-bytes",
    4096,
    0,
    i64::MAX,
);
/// `busy-reply-threshold` (alias `lua-time-limit`): ms a script runs before other clients get
/// `BUSY` (exec/scripting/busy.rs); 0 = never.
pub static BUSY_REPLY_THRESHOLD: Limit =
    Limit::new("busy-reply-threshold", "lua-time-limit", 5000, 0, i64::MAX);

/// Every threshold.
pub static ALL: [&Limit; 12] = [
    &HASH_ENTRIES,
    &HASH_VALUE,
    &SET_INTSET,
    &SET_ENTRIES,
    &SET_VALUE,
    &ZSET_ENTRIES,
    &ZSET_VALUE,
    &LIST_SIZE,
    &LIST_COMPRESS,
    &STREAM_NODE_ENTRIES,
    &STREAM_NODE_BYTES,
    &BUSY_REPLY_THRESHOLD,
];

/// The threshold called `name` (either name).
pub fn by_name(name: &str) -> Option<&'static Limit> {
    ALL.iter().copied().find(|l| l.names.contains(&name))
}

/// Checks a CONFIG SET value for `l`: an integer in its range.
///
/// # Errors
/// Redis's wording for a value out of range or not an integer.
pub fn parse(l: &Limit, v: &[u8]) -> Result<i64, String> {
    crate::exec::parse_i64(v)
        .filter(|n| (l.min..=l.max).contains(n))
        .ok_or_else(|| format!("argument must be between {} and {} inclusive", l.min, l.max))
}

/// Sets `l` (a value [`parse`] accepted).
pub fn set(l: &Limit, v: i64) {
    l.value.store(v, Ordering::Relaxed);
}
