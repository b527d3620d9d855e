//! Redis 7.0's key specs of every command Locus implements: where a command's key arguments are
//! and how it uses each one (`COMMAND INFO`'s key specifications, `COMMAND GETKEYS` and
//! `COMMAND GETKEYSANDFLAGS`). The facts are Redis's documented command interface (its commands
//! JSON, as `COMMAND INFO` of redis-server 7.0 answers them); tests/python/test_keyspecs.py
//! compares every command's specs and keys with redis-server's.
//!
//! A spec is a begin search (the first key at an index, or after a keyword searched from an
//! index, backwards if the index is negative) and a find-keys rule (a range from there, or a
//! count of keys read from an argument), with Redis's flags. The search is Redis's
//! `getKeysUsingKeySpecs`; where a spec cannot say (unknown, incomplete, variable flags or a bad
//! key count) the command's own key finder answers, as Redis's `getkeys_proc`s do.

use crate::exec::{Args, geo, is, parse_i64, sort};

/// The key is read, not changed.
pub const RO: u16 = 1;
/// The key is read and changed.
pub const RW: u16 = 1 << 1;
/// The key is overwritten without being read.
pub const OW: u16 = 1 << 2;
/// The key is removed.
pub const RM: u16 = 1 << 3;
/// The value is returned, copied or used for the reply.
pub const ACCESS: u16 = 1 << 4;
/// The value is updated or replaced.
pub const UPDATE: u16 = 1 << 5;
/// New content is added only.
pub const INSERT: u16 = 1 << 6;
/// Content is removed only.
pub const DELETE: u16 = 1 << 7;
/// Not a key (a name in the key's place, for ACL).
pub const NOT_KEY: u16 = 1 << 8;
/// The spec may miss keys.
pub const INCOMPLETE: u16 = 1 << 9;
/// The flags depend on the other arguments.
pub const VARIABLE_FLAGS: u16 = 1 << 10;

/// The flags' names as Redis writes them, in its order.
pub const FLAG_NAMES: [(u16, &str); 11] = [
    (RO, "RO"),
    (RW, "RW"),
    (OW, "OW"),
    (RM, "RM"),
    (ACCESS, "access"),
    (UPDATE, "update"),
    (INSERT, "insert"),
    (DELETE, "delete"),
    (NOT_KEY, "not_key"),
    (INCOMPLETE, "incomplete"),
    (VARIABLE_FLAGS, "variable_flags"),
];

/// Where the search for a spec's first key starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// At this argument.
    Index(i32),
    /// After this keyword, searched from the argument given (from the end if negative).
    Keyword(&'static str, i32),
    /// Cannot be told from the arguments.
    Unknown,
}

/// How the keys are found from the first one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Find {
    /// Up to `last` (relative to the first; negative: from the end, or with `limit` a
    /// 1/limit share of what remains), every `step`.
    Range {
        /// The last key, relative to the first (negative: counted from the end).
        last: i32,
        /// The distance between keys.
        step: i32,
        /// With `last` -1: the keys are the first 1/limit of what remains (0: all).
        limit: i32,
    },
    /// The argument `at` (relative to the begin) holds the count; keys start `first` after the
    /// begin, every `step`.
    Keynum {
        /// The count's argument, relative to the begin.
        at: i32,
        /// The first key, relative to the begin.
        first: i32,
        /// The distance between keys.
        step: i32,
    },
    /// Cannot be told from the arguments.
    Unknown,
}

/// One key spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// [`RO`], [`RW`], ... ORed.
    pub flags: u16,
    /// Where the first key is.
    pub begin: Begin,
    /// Where the others are.
    pub find: Find,
    /// Redis's note on the spec, if it has one.
    pub notes: Option<&'static str>,
}

impl KeySpec {
    const fn note(self, notes: &'static str) -> Self {
        Self {
            notes: Some(notes),
            ..self
        }
    }
}

const fn spec(flags: u16, begin: Begin, find: Find) -> KeySpec {
    KeySpec {
        flags,
        begin,
        find,
        notes: None,
    }
}

/// One key at argument `i`.
const fn at(i: i32, flags: u16) -> KeySpec {
    span(i, 0, 1, 0, flags)
}

/// Every argument from `i` to the last.
const fn rest(i: i32, flags: u16) -> KeySpec {
    span(i, -1, 1, 0, flags)
}

/// From argument `i`, a range.
const fn span(i: i32, last: i32, step: i32, limit: i32, flags: u16) -> KeySpec {
    spec(flags, Begin::Index(i), Find::Range { last, step, limit })
}

/// From argument `i`, a count at `i + at` of keys starting at `i + first`.
const fn counted(i: i32, at: i32, first: i32, step: i32, flags: u16) -> KeySpec {
    spec(flags, Begin::Index(i), Find::Keynum { at, first, step })
}

/// After `word` (searched from `from`), a range.
const fn after(
    word: &'static str,
    from: i32,
    last: i32,
    step: i32,
    limit: i32,
    flags: u16,
) -> KeySpec {
    spec(
        flags,
        Begin::Keyword(word, from),
        Find::Range { last, step, limit },
    )
}

/// Keys the arguments cannot locate.
const fn unknown(flags: u16) -> KeySpec {
    spec(flags, Begin::Unknown, Find::Unknown)
}

/// Every command (and `container|subcommand`) with keys: its name, its arity for a subcommand
/// (0 for a command, whose arity is the command table's) and its specs, in Redis's order.
#[rustfmt::skip]
static KEY_SPECS: &[(&str, i32, &[KeySpec])] = &[
    ("hset", 0, &[at(1, RW | UPDATE)]),
    ("hmset", 0, &[at(1, RW | UPDATE)]),
    ("hsetnx", 0, &[at(1, RW | INSERT)]),
    ("hget", 0, &[at(1, RO | ACCESS)]),
    ("hmget", 0, &[at(1, RO | ACCESS)]),
    ("hgetall", 0, &[at(1, RO | ACCESS)]),
    ("hkeys", 0, &[at(1, RO | ACCESS)]),
    ("hvals", 0, &[at(1, RO | ACCESS)]),
    ("hlen", 0, &[at(1, RO)]),
    ("hexists", 0, &[at(1, RO)]),
    ("hstrlen", 0, &[at(1, RO)]),
    ("hdel", 0, &[at(1, RW | DELETE)]),
    ("hincrby", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("hincrbyfloat", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("hrandfield", 0, &[at(1, RO | ACCESS)]),
    ("hscan", 0, &[at(1, RO | ACCESS)]),
    ("xadd", 0, &[at(1, RW | UPDATE).note("UPDATE instead of INSERT because of the optional trimming feature")]),
    ("xrange", 0, &[at(1, RO | ACCESS)]),
    ("xrevrange", 0, &[at(1, RO | ACCESS)]),
    ("xlen", 0, &[at(1, RO)]),
    ("xdel", 0, &[at(1, RW | DELETE)]),
    ("xtrim", 0, &[at(1, RW | DELETE)]),
    ("xsetid", 0, &[at(1, RW | UPDATE)]),
    ("xread", 0, &[after("STREAMS", 1, -1, 1, 2, RO | ACCESS)]),
    ("xreadgroup", 0, &[after("STREAMS", 4, -1, 1, 2, RO | ACCESS)]),
    ("xgroup|create", -5, &[at(2, RW | INSERT)]),
    ("xgroup|createconsumer", 5, &[at(2, RW | INSERT)]),
    ("xgroup|delconsumer", 5, &[at(2, RW | DELETE)]),
    ("xgroup|destroy", 4, &[at(2, RW | DELETE)]),
    ("xgroup|setid", -5, &[at(2, RW | UPDATE)]),
    ("xack", 0, &[at(1, RW | UPDATE)]),
    ("xpending", 0, &[at(1, RO | ACCESS)]),
    ("xclaim", 0, &[at(1, RW | UPDATE)]),
    ("xautoclaim", 0, &[at(1, RW | DELETE)]),
    ("xinfo|consumers", 4, &[at(2, RO | ACCESS)]),
    ("xinfo|groups", 3, &[at(2, RO | ACCESS)]),
    ("xinfo|stream", -3, &[at(2, RO | ACCESS)]),
    ("lpush", 0, &[at(1, RW | INSERT)]),
    ("rpush", 0, &[at(1, RW | INSERT)]),
    ("lpushx", 0, &[at(1, RW | INSERT)]),
    ("rpushx", 0, &[at(1, RW | INSERT)]),
    ("lpop", 0, &[at(1, RW | ACCESS | DELETE)]),
    ("rpop", 0, &[at(1, RW | ACCESS | DELETE)]),
    ("llen", 0, &[at(1, RO)]),
    ("lindex", 0, &[at(1, RO | ACCESS)]),
    ("lset", 0, &[at(1, RW | UPDATE)]),
    ("lrange", 0, &[at(1, RO | ACCESS)]),
    ("ltrim", 0, &[at(1, RW | DELETE)]),
    ("lrem", 0, &[at(1, RW | DELETE)]),
    ("linsert", 0, &[at(1, RW | INSERT)]),
    ("lpos", 0, &[at(1, RO | ACCESS)]),
    ("lmove", 0, &[at(1, RW | ACCESS | DELETE), at(2, RW | INSERT)]),
    ("rpoplpush", 0, &[at(1, RW | ACCESS | DELETE), at(2, RW | INSERT)]),
    ("lmpop", 0, &[counted(1, 0, 1, 1, RW | ACCESS | DELETE)]),
    ("blpop", 0, &[span(1, -2, 1, 0, RW | ACCESS | DELETE)]),
    ("brpop", 0, &[span(1, -2, 1, 0, RW | ACCESS | DELETE)]),
    ("blmove", 0, &[at(1, RW | ACCESS | DELETE), at(2, RW | INSERT)]),
    ("brpoplpush", 0, &[at(1, RW | ACCESS | DELETE), at(2, RW | INSERT)]),
    ("blmpop", 0, &[counted(2, 0, 1, 1, RW | ACCESS | DELETE)]),
    ("sadd", 0, &[at(1, RW | INSERT)]),
    ("srem", 0, &[at(1, RW | DELETE)]),
    ("smembers", 0, &[at(1, RO | ACCESS)]),
    ("sismember", 0, &[at(1, RO)]),
    ("smismember", 0, &[at(1, RO | ACCESS)]),
    ("scard", 0, &[at(1, RO)]),
    ("spop", 0, &[at(1, RW | ACCESS | DELETE)]),
    ("srandmember", 0, &[at(1, RO | ACCESS)]),
    ("smove", 0, &[at(1, RW | ACCESS | DELETE), at(2, RW | INSERT)]),
    ("sinter", 0, &[rest(1, RO | ACCESS)]),
    ("sintercard", 0, &[counted(1, 0, 1, 1, RO | ACCESS)]),
    ("sunion", 0, &[rest(1, RO | ACCESS)]),
    ("sdiff", 0, &[rest(1, RO | ACCESS)]),
    ("sinterstore", 0, &[at(1, RW | UPDATE), rest(2, RO | ACCESS)]),
    ("sunionstore", 0, &[at(1, OW | UPDATE), rest(2, RO | ACCESS)]),
    ("sdiffstore", 0, &[at(1, OW | UPDATE), rest(2, RO | ACCESS)]),
    ("sscan", 0, &[at(1, RO | ACCESS)]),
    ("zadd", 0, &[at(1, RW | UPDATE)]),
    ("zincrby", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("zscore", 0, &[at(1, RO | ACCESS)]),
    ("zmscore", 0, &[at(1, RO | ACCESS)]),
    ("zrank", 0, &[at(1, RO | ACCESS)]),
    ("zrevrank", 0, &[at(1, RO | ACCESS)]),
    ("zcard", 0, &[at(1, RO)]),
    ("zcount", 0, &[at(1, RO | ACCESS)]),
    ("zlexcount", 0, &[at(1, RO | ACCESS)]),
    ("zrange", 0, &[at(1, RO | ACCESS)]),
    ("zrangebyscore", 0, &[at(1, RO | ACCESS)]),
    ("zrevrangebyscore", 0, &[at(1, RO | ACCESS)]),
    ("zrangebylex", 0, &[at(1, RO | ACCESS)]),
    ("zrevrangebylex", 0, &[at(1, RO | ACCESS)]),
    ("zrevrange", 0, &[at(1, RO | ACCESS)]),
    ("zrangestore", 0, &[at(1, OW | UPDATE), at(2, RO | ACCESS)]),
    ("zrem", 0, &[at(1, RW | DELETE)]),
    ("zremrangebyscore", 0, &[at(1, RW | DELETE)]),
    ("zremrangebyrank", 0, &[at(1, RW | DELETE)]),
    ("zremrangebylex", 0, &[at(1, RW | DELETE)]),
    ("zpopmin", 0, &[at(1, RW | ACCESS | DELETE)]),
    ("zpopmax", 0, &[at(1, RW | ACCESS | DELETE)]),
    ("zmpop", 0, &[counted(1, 0, 1, 1, RW | ACCESS | DELETE)]),
    ("bzpopmin", 0, &[span(1, -2, 1, 0, RW | ACCESS | DELETE)]),
    ("bzpopmax", 0, &[span(1, -2, 1, 0, RW | ACCESS | DELETE)]),
    ("bzmpop", 0, &[counted(2, 0, 1, 1, RW | ACCESS | DELETE)]),
    ("zunion", 0, &[counted(1, 0, 1, 1, RO | ACCESS)]),
    ("zinter", 0, &[counted(1, 0, 1, 1, RO | ACCESS)]),
    ("zdiff", 0, &[counted(1, 0, 1, 1, RO | ACCESS)]),
    ("zunionstore", 0, &[at(1, OW | UPDATE), counted(2, 0, 1, 1, RO | ACCESS)]),
    ("zinterstore", 0, &[at(1, OW | UPDATE), counted(2, 0, 1, 1, RO | ACCESS)]),
    ("zdiffstore", 0, &[at(1, OW | UPDATE), counted(2, 0, 1, 1, RO | ACCESS)]),
    ("zintercard", 0, &[counted(1, 0, 1, 1, RO | ACCESS)]),
    ("zrandmember", 0, &[at(1, RO | ACCESS)]),
    ("zscan", 0, &[at(1, RO | ACCESS)]),
    ("geoadd", 0, &[at(1, RW | UPDATE)]),
    ("geodist", 0, &[at(1, RO | ACCESS)]),
    ("geohash", 0, &[at(1, RO | ACCESS)]),
    ("geopos", 0, &[at(1, RO | ACCESS)]),
    ("georadius", 0, &[at(1, RO | ACCESS), after("STORE", 6, 0, 1, 0, OW | UPDATE), after("STOREDIST", 6, 0, 1, 0, OW | UPDATE)]),
    ("georadius_ro", 0, &[at(1, RO | ACCESS)]),
    ("georadiusbymember", 0, &[at(1, RO | ACCESS), after("STORE", 5, 0, 1, 0, OW | UPDATE), after("STOREDIST", 5, 0, 1, 0, OW | UPDATE)]),
    ("georadiusbymember_ro", 0, &[at(1, RO | ACCESS)]),
    ("geosearch", 0, &[at(1, RO | ACCESS)]),
    ("geosearchstore", 0, &[at(1, OW | UPDATE), at(2, RO | ACCESS)]),
    ("sort", 0, &[at(1, RO | ACCESS), unknown(RO | ACCESS).note("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"), unknown(OW | UPDATE).note("For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array")]),
    ("sort_ro", 0, &[at(1, RO | ACCESS), unknown(RO | ACCESS).note("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort")]),
    ("get", 0, &[at(1, RO | ACCESS)]),
    ("set", 0, &[at(1, RW | ACCESS | UPDATE | VARIABLE_FLAGS).note("RW and ACCESS due to the optional `GET` argument")]),
    ("setnx", 0, &[at(1, OW | INSERT)]),
    ("setex", 0, &[at(1, OW | UPDATE)]),
    ("psetex", 0, &[at(1, OW | UPDATE)]),
    ("getset", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("getdel", 0, &[at(1, RW | ACCESS | DELETE)]),
    ("getex", 0, &[at(1, RW | ACCESS | UPDATE).note("RW and UPDATE because it changes the TTL")]),
    ("mget", 0, &[rest(1, RO | ACCESS)]),
    ("mset", 0, &[span(1, -1, 2, 0, OW | UPDATE)]),
    ("msetnx", 0, &[span(1, -1, 2, 0, OW | INSERT)]),
    ("append", 0, &[at(1, RW | INSERT)]),
    ("strlen", 0, &[at(1, RO)]),
    ("getrange", 0, &[at(1, RO | ACCESS)]),
    ("substr", 0, &[at(1, RO | ACCESS)]),
    ("lcs", 0, &[span(1, 1, 1, 0, RO | ACCESS)]),
    ("setrange", 0, &[at(1, RW | UPDATE)]),
    ("incr", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("decr", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("incrby", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("decrby", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("incrbyfloat", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("setbit", 0, &[at(1, RW | ACCESS | UPDATE)]),
    ("getbit", 0, &[at(1, RO | ACCESS)]),
    ("bitcount", 0, &[at(1, RO | ACCESS)]),
    ("bitpos", 0, &[at(1, RO | ACCESS)]),
    ("bitop", 0, &[at(2, OW | UPDATE), rest(3, RO | ACCESS)]),
    ("bitfield", 0, &[at(1, RW | ACCESS | UPDATE | VARIABLE_FLAGS).note("This command allows both access and modification of the key")]),
    ("bitfield_ro", 0, &[at(1, RO | ACCESS)]),
    ("del", 0, &[rest(1, RM | DELETE)]),
    ("unlink", 0, &[rest(1, RM | DELETE)]),
    ("exists", 0, &[rest(1, RO)]),
    ("touch", 0, &[rest(1, RO)]),
    ("watch", 0, &[rest(1, RO)]),
    ("type", 0, &[at(1, RO)]),
    ("copy", 0, &[at(1, RO | ACCESS), at(2, OW | UPDATE)]),
    ("dump", 0, &[at(1, RO | ACCESS)]),
    ("restore", 0, &[at(1, OW | UPDATE)]),
    ("migrate", 0, &[at(3, RW | ACCESS | DELETE), after("KEYS", -2, -1, 1, 0, RW | ACCESS | DELETE | INCOMPLETE)]),
    ("rename", 0, &[at(1, RW | ACCESS | DELETE), at(2, OW | UPDATE)]),
    ("renamenx", 0, &[at(1, RW | ACCESS | DELETE), at(2, OW | INSERT)]),
    ("expire", 0, &[at(1, RW | UPDATE)]),
    ("pexpire", 0, &[at(1, RW | UPDATE)]),
    ("expireat", 0, &[at(1, RW | UPDATE)]),
    ("pexpireat", 0, &[at(1, RW | UPDATE)]),
    ("expiretime", 0, &[at(1, RO | ACCESS)]),
    ("pexpiretime", 0, &[at(1, RO | ACCESS)]),
    ("ttl", 0, &[at(1, RO | ACCESS)]),
    ("pttl", 0, &[at(1, RO | ACCESS)]),
    ("persist", 0, &[at(1, RW | UPDATE)]),
    ("pfadd", 0, &[at(1, RW | INSERT)]),
    ("pfcount", 0, &[rest(1, RW | ACCESS).note("RW because it may change the internal representation of the key, and propagate to replicas")]),
    ("pfmerge", 0, &[at(1, RW | ACCESS | INSERT), rest(2, RO | ACCESS)]),
    ("eval", 0, &[counted(2, 0, 1, 1, RW | ACCESS | UPDATE).note("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")]),
    ("evalsha", 0, &[counted(2, 0, 1, 1, RW | ACCESS | UPDATE)]),
    ("eval_ro", 0, &[counted(2, 0, 1, 1, RO | ACCESS).note("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")]),
    ("evalsha_ro", 0, &[counted(2, 0, 1, 1, RO | ACCESS)]),
    ("fcall", 0, &[counted(2, 0, 1, 1, RW | ACCESS | UPDATE).note("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")]),
    ("fcall_ro", 0, &[counted(2, 0, 1, 1, RO | ACCESS).note("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")]),
    ("memory|usage", -3, &[at(2, RO)]),
    ("object|encoding", 3, &[at(2, RO)]),
    ("object|idletime", 3, &[at(2, RO)]),
    ("object|freq", 3, &[at(2, RO)]),
    ("object|refcount", 3, &[at(2, RO)]),
];

/// The key specs of `name` (a command, or `container|subcommand`); empty if it has no keys.
pub fn specs_of(name: &str) -> &'static [KeySpec] {
    KEY_SPECS.iter().find(|e| e.0 == name).map_or(&[], |e| e.2)
}

/// The arity of a subcommand with keys (`object|encoding`: 3), as Redis declares it.
pub fn subcommand_arity(name: &str) -> Option<i32> {
    KEY_SPECS
        .iter()
        .find(|e| e.0 == name && e.1 != 0)
        .map(|e| e.1)
}

/// Commands whose keys a spec may not tell: they find them themselves (Redis's `getkeys_proc`).
fn has_key_finder(name: &str) -> bool {
    KEY_FINDERS.contains(&name)
}

const KEY_FINDERS: &[&str] = &[
    "set",
    "bitfield",
    "sort",
    "sort_ro",
    "migrate",
    "georadius",
    "georadiusbymember",
    "xread",
    "xreadgroup",
    "sintercard",
    "zunion",
    "zinter",
    "zdiff",
    "zintercard",
    "zunionstore",
    "zinterstore",
    "zdiffstore",
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "lmpop",
    "blmpop",
    "zmpop",
    "bzmpop",
];

/// Whether `name` has keys at all (a spec naming keys, or its own key finder).
pub fn has_keys(name: &str) -> bool {
    has_key_finder(name) || specs_of(name).iter().any(|s| s.flags & NOT_KEY == 0)
}

/// The keys of a call of `name` (`args[0]` is the command name, or for a subcommand the
/// container's: `args[1]` the subcommand): their positions in `args` and their flags, as Redis
/// 7.0's `getKeysFromCommandWithSpecs` finds them. The specs answer when they can tell every key
/// with fixed flags; otherwise the command's own finder does; a command with neither has none.
pub fn find_keys(name: &str, args: Args<'_, '_>) -> Vec<(usize, u16)> {
    let specs = specs_of(name);
    let real = specs.iter().any(|s| s.flags & NOT_KEY == 0);
    let variable = specs.iter().any(|s| s.flags & VARIABLE_FLAGS != 0);
    if real
        && !variable
        && let Some(keys) = by_specs(specs, args)
    {
        return keys;
    }
    by_finder(name, args)
}

/// Redis's `getKeysUsingKeySpecs` with its default search: `None` when a spec cannot tell
/// (unknown, incomplete, a bad key count or keys out of the arguments).
fn by_specs(specs: &[KeySpec], args: Args<'_, '_>) -> Option<Vec<(usize, u16)>> {
    let argc = args.len() as i64;
    let mut keys = Vec::new();
    for s in specs {
        if s.flags & NOT_KEY != 0 {
            continue;
        }
        let mut first = match s.begin {
            Begin::Index(i) => i64::from(i),
            Begin::Keyword(word, from) => match keyword_search(args, word, from) {
                Some(p) => p as i64 + 1,
                // No keyword: this spec names no key in this call.
                None => continue,
            },
            Begin::Unknown => return None,
        };
        let (last, step) = match s.find {
            Find::Range { last, step, limit } => {
                let (last, limit) = (i64::from(last), i64::from(limit));
                let l = if last >= 0 {
                    first + last
                } else if limit == 0 {
                    argc + last
                } else {
                    first + ((argc - first) / limit + last)
                };
                (l, i64::from(step))
            }
            Find::Keynum { at, first: f, step } => {
                let at = first + i64::from(at);
                let n = usize::try_from(at)
                    .ok()
                    .and_then(|p| args.get(p))
                    .and_then(|n| parse_i64(n))
                    .filter(|&n| n >= 0)?;
                first += i64::from(f);
                (first.saturating_add(n) - 1, i64::from(step))
            }
            Find::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc || step < 1 {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push((i as usize, s.flags));
            i += step;
        }
        if s.flags & INCOMPLETE != 0 {
            return None;
        }
    }
    Some(keys)
}

/// The position of `word` (case-insensitively) searched from `from` towards the end (or from
/// `argc + from` towards the start when `from` is negative), as Redis searches it: the last
/// argument is never a keyword going forwards, nor the first argument after the name going
/// backwards.
fn keyword_search(args: Args<'_, '_>, word: &str, from: i32) -> Option<usize> {
    let argc = args.len() as i64;
    let from = i64::from(from);
    let (start, end) = if from > 0 {
        (from, argc - 1)
    } else {
        (argc + from, 1)
    };
    let mut i = start;
    while i != end {
        if i >= argc || i < 1 {
            break;
        }
        if is(&args[i as usize], word) {
            return Some(i as usize);
        }
        i += if start <= end { 1 } else { -1 };
    }
    None
}

/// The command's own key finder (Redis's `getkeys_proc`s): exact flags for the commands whose
/// specs are incomplete or variable (SET, BITFIELD, SORT, SORT_RO, MIGRATE), none (0) for the
/// others, whose specs already describe them.
fn by_finder(name: &str, args: Args<'_, '_>) -> Vec<(usize, u16)> {
    let argc = args.len();
    match name {
        "set" => {
            let get = args.iter().skip(3).any(|a| is(a, "get"));
            vec![(
                1,
                if get {
                    RW | ACCESS | UPDATE
                } else {
                    OW | UPDATE
                },
            )]
        }
        "bitfield" => vec![(
            1,
            if bitfield_reads_only(args) {
                RO | ACCESS
            } else {
                RW | ACCESS | UPDATE
            },
        )],
        "sort" => {
            let mut keys = vec![(1, RO | ACCESS)];
            keys.extend(sort::store_key_pos(args).map(|p| (p, OW | UPDATE)));
            keys
        }
        "sort_ro" => vec![(1, RO | ACCESS)],
        "migrate" => {
            // The one-key form, unless KEYS follows the options: then the keys after it, if the
            // key argument is empty (else a syntax error, no key).
            let keys = match migrate_keys_keyword(args) {
                None => 3..4,
                Some(k) if args[3].is_empty() => k + 1..argc,
                Some(_) => 0..0,
            };
            keys.map(|p| (p, RW | ACCESS | DELETE)).collect()
        }
        "georadius" | "georadiusbymember" => std::iter::once(1)
            .chain(geo::store_key_pos(args))
            .map(|p| (p, 0))
            .collect(),
        "xread" | "xreadgroup" => xread_keys(args).map(|p| (p, 0)).collect(),
        "sintercard" | "zunion" | "zinter" | "zdiff" | "zintercard" | "lmpop" | "zmpop" => {
            counted_keys(args, None, 1)
        }
        "zunionstore" | "zinterstore" | "zdiffstore" => counted_keys(args, Some(1), 2),
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" | "blmpop"
        | "bzmpop" => counted_keys(args, None, 2),
        _ => Vec::new(),
    }
}

/// The position of MIGRATE's KEYS keyword among the options after its fixed arguments (AUTH
/// takes one argument, AUTH2 two).
fn migrate_keys_keyword(args: Args<'_, '_>) -> Option<usize> {
    let mut j = 6;
    while j < args.len() {
        if is(&args[j], "keys") {
            return Some(j);
        }
        j += if is(&args[j], "auth") {
            2
        } else if is(&args[j], "auth2") {
            3
        } else {
            1
        };
    }
    None
}

/// BITFIELD reads only when every operation is a GET (OVERFLOW aside) and all parse.
fn bitfield_reads_only(args: Args<'_, '_>) -> bool {
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        if is(&args[i], "get") && left >= 2 {
            i += 3;
        } else if is(&args[i], "overflow") && left >= 1 {
            i += 2;
        } else {
            // SET, INCRBY or a syntax error: assume a write.
            return false;
        }
    }
    true
}

/// XREAD's and XREADGROUP's keys as its options lead to STREAMS: half of what follows it, none
/// if that is odd or empty or an unknown option comes first.
fn xread_keys(args: Args<'_, '_>) -> std::ops::Range<usize> {
    let mut i = 1;
    while i < args.len() {
        if is(&args[i], "block") || is(&args[i], "count") {
            i += 2;
        } else if is(&args[i], "group") {
            i += 3;
        } else if is(&args[i], "noack") {
            i += 1;
        } else if is(&args[i], "streams") {
            let n = args.len() - i - 1;
            if n == 0 || !n.is_multiple_of(2) {
                return 0..0;
            }
            return i + 1..i + 1 + n / 2;
        } else {
            break;
        }
    }
    0..0
}

/// Keys after a count at `count_at` (read as C's `atoi` reads it: leading digits), with an
/// optional destination key first-found last; none unless the count is between 1 and what the
/// arguments hold.
fn counted_keys(args: Args<'_, '_>, dest: Option<usize>, count_at: usize) -> Vec<(usize, u16)> {
    let n = args.get(count_at).map_or(0, |a| atoi(a));
    let first = count_at + 1;
    let room = args.len().saturating_sub(first) as i64;
    if n < 1 || n > room {
        return Vec::new();
    }
    (first..first + n as usize)
        .chain(dest)
        .map(|p| (p, 0))
        .collect()
}

/// C's `atoi`: optional blanks and sign, then the leading digits (0 if none).
fn atoi(b: &[u8]) -> i64 {
    let s = b
        .iter()
        .skip_while(|c| c.is_ascii_whitespace())
        .copied()
        .collect::<Vec<u8>>();
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, &s[..]),
    };
    let mut n: i64 = 0;
    for d in digits.iter().take_while(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(i64::from(d - b'0'));
    }
    if neg { -n } else { n }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::exec::table::{COMMANDS, has_flag};

    fn args(words: &[&str]) -> Vec<Cow<'static, [u8]>> {
        words
            .iter()
            .map(|w| Cow::Owned(w.as_bytes().to_vec()))
            .collect()
    }

    fn keys(name: &str, words: &[&str]) -> Vec<(usize, u16)> {
        find_keys(name, &args(words))
    }

    #[test]
    fn every_entry_names_a_command_once_and_every_keyed_command_has_one() {
        for (i, (name, arity, specs)) in KEY_SPECS.iter().enumerate() {
            assert!(!specs.is_empty(), "{name}");
            assert!(KEY_SPECS[..i].iter().all(|e| e.0 != *name), "{name} twice");
            let (parent, sub) = name
                .split_once('|')
                .map_or((*name, None), |(p, _)| (p, Some(name)));
            let c = COMMANDS.iter().find(|c| c.name == parent).expect(name);
            if let Some(sub) = sub {
                assert!(c.subcommands.contains(sub) && *arity != 0, "{name}");
            } else {
                assert_eq!(*arity, 0, "{name}");
            }
        }
        let containers = ["memory", "object", "xgroup", "xinfo"];
        for c in COMMANDS {
            let keyed = c.first_key != 0 || has_flag(c.flags, "movablekeys");
            if keyed && !containers.contains(&c.name) {
                assert!(
                    !specs_of(c.name).is_empty(),
                    "{} has keys but no spec",
                    c.name
                );
            }
        }
    }

    #[test]
    fn keys_by_spec_and_by_the_commands_finders() {
        assert_eq!(keys("get", &["get", "k"]), [(1, RO | ACCESS)]);
        assert_eq!(
            keys("mset", &["mset", "a", "1", "b", "2"]),
            [(1, OW | UPDATE), (3, OW | UPDATE)]
        );
        assert_eq!(
            keys(
                "zunionstore",
                &["zunionstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"]
            ),
            [(1, OW | UPDATE), (3, RO | ACCESS), (4, RO | ACCESS)]
        );
        // A count of 0: the spec cannot tell, the finder finds none.
        assert_eq!(keys("zunionstore", &["zunionstore", "d", "0", "a"]), []);
        // C's atoi reads "2x" as 2 where the spec refuses it: the finder's keys, without flags.
        assert_eq!(
            keys("zunionstore", &["zunionstore", "d", "2x", "a", "b"]),
            [(3, 0), (4, 0), (1, 0)]
        );
        assert_eq!(keys("set", &["set", "k", "v"]), [(1, OW | UPDATE)]);
        assert_eq!(
            keys("set", &["set", "k", "v", "Get"]),
            [(1, RW | ACCESS | UPDATE)]
        );
        assert_eq!(
            keys("bitfield", &["bitfield", "k", "GET", "u8", "0"]),
            [(1, RO | ACCESS)]
        );
        assert_eq!(
            keys("bitfield", &["bitfield", "k", "INCRBY", "u8", "0", "1"]),
            [(1, RW | ACCESS | UPDATE)]
        );
        assert_eq!(
            keys(
                "sort",
                &["sort", "k", "STORE", "a", "LIMIT", "0", "1", "store", "b"]
            ),
            [(1, RO | ACCESS), (8, OW | UPDATE)]
        );
        let m = RW | ACCESS | DELETE;
        assert_eq!(
            keys("migrate", &["migrate", "h", "1", "k", "0", "10"]),
            [(3, m)]
        );
        assert_eq!(
            keys(
                "migrate",
                &[
                    "migrate", "h", "1", "", "0", "10", "AUTH", "keys", "KEYS", "a"
                ]
            ),
            [(9, m)]
        );
        assert_eq!(
            keys(
                "migrate",
                &["migrate", "h", "1", "k", "0", "10", "KEYS", "a"]
            ),
            []
        );
        // XREAD: the second half after STREAMS are IDs; one argument alone names no key.
        assert_eq!(
            keys("xread", &["xread", "STREAMS", "a", "b", "0", "0"]),
            [(2, RO | ACCESS), (3, RO | ACCESS)]
        );
        assert_eq!(keys("xread", &["xread", "STREAMS", "a"]), []);
        // Keywords: GEORADIUS's STORE and STOREDIST both, searched from the sixth argument.
        assert_eq!(
            keys(
                "georadius",
                &[
                    "georadius",
                    "k",
                    "0",
                    "0",
                    "1",
                    "km",
                    "STOREDIST",
                    "d2",
                    "STORE",
                    "d1"
                ]
            ),
            [(1, RO | ACCESS), (9, OW | UPDATE), (7, OW | UPDATE)]
        );
        assert_eq!(
            keys("object|encoding", &["object", "encoding", "k"]),
            [(2, RO)]
        );
        assert!(
            has_keys("eval")
                && has_keys("object|freq")
                && !has_keys("ping")
                && !has_keys("object|help")
        );
        assert_eq!(subcommand_arity("memory|usage"), Some(-3));
    }

    #[test]
    fn atoi_reads_leading_digits() {
        assert_eq!(atoi(b"12ab"), 12);
        assert_eq!(atoi(b"  -3"), -3);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"99999999999999999999999"), i64::MAX);
    }
}
