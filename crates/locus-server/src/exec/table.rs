//! The command table: what `COMMAND INFO` / `COMMAND DOCS` return and what the dispatcher checks.

use std::sync::LazyLock;

use super::{
    Args, CmdResult, Ctx, admin, bitops, connection, dump, expire, geo, hll, keyspace, latency,
    monitor, pubsub, scripting, slowlog, sort, strings, transaction, types::hash, types::list,
    types::set, types::stream, types::zset, wait,
};

/// A command handler.
pub type Handler = for<'a, 'b, 'c, 'd> fn(&'a mut Ctx<'b>, Args<'c, 'd>) -> CmdResult;

/// How the dispatcher picks the tenant a command acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// No tenant needed (connection and server commands).
    None,
    /// The connection's tenant (keyless keyspace commands: DBSIZE, FLUSHDB, RANDOMKEY).
    Conn,
    /// Keyed: by key (prefix mode) or the connection's tenant.
    Keys,
    /// KEYS / SCAN: in prefix mode, by the pattern's literal prefix; else the connection's tenant.
    Pattern,
}

/// One command.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lowercase name.
    pub name: &'static str,
    /// Redis arity: N exact, -N at least N (name included).
    pub arity: i32,
    /// Redis command flags (`write`, `readonly`, `fast`, `no_auth`, ...).
    pub flags: &'static [&'static str],
    /// First key position (0 = none).
    pub first_key: i32,
    /// Last key position (-1 = last argument).
    pub last_key: i32,
    /// Step between keys.
    pub step: i32,
    /// ACL categories (`@string`, `@keyspace`, ...).
    pub acl: &'static [&'static str],
    /// COMMAND DOCS group.
    pub group: &'static str,
    /// Redis version that introduced it.
    pub since: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// Subcommand names (`client|id`, ...), for COMMAND INFO.
    pub subcommands: &'static [&'static str],
    /// Tenant routing.
    pub route: Route,
    /// The handler.
    pub handler: Handler,
    /// `flags` holds `write` (computed from `flags` when the table is built).
    pub is_write: bool,
    /// `flags` holds `no_auth` (computed from `flags` when the table is built).
    pub no_auth: bool,
}

/// Whether `flags` holds `flag` (usable in the static table's initialiser).
pub const fn has_flag(flags: &[&str], flag: &str) -> bool {
    let mut i = 0;
    while i < flags.len() {
        let (a, b) = (flags[i].as_bytes(), flag.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return true;
            }
        }
        i += 1;
    }
    false
}

macro_rules! cmd {
    ($name:literal, $arity:expr, [$($f:literal),*], $fk:expr, $lk:expr, $st:expr, [$($acl:literal),*],
     $group:literal, $since:literal, $summary:literal, $route:ident, $h:path) => {
        cmd!($name, $arity, [$($f),*], $fk, $lk, $st, [$($acl),*], $group, $since, $summary, $route, $h, [])
    };
    ($name:literal, $arity:expr, [$($f:literal),*], $fk:expr, $lk:expr, $st:expr, [$($acl:literal),*],
     $group:literal, $since:literal, $summary:literal, $route:ident, $h:path, [$($sub:literal),*]) => {
        CommandSpec {
            name: $name, arity: $arity, flags: &[$($f),*], first_key: $fk, last_key: $lk, step: $st,
            acl: &[$($acl),*], group: $group, since: $since, summary: $summary,
            subcommands: &[$($sub),*], route: Route::$route, handler: $h,
            is_write: has_flag(&[$($f),*], "write"), no_auth: has_flag(&[$($f),*], "no_auth"),
        }
    };
}

/// Every command Locus implements, one per line: name, arity, flags, first key, last key, key
/// step, ACL categories, DOCS group, since, summary, routing, handler[, subcommands].
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    // hashes
    cmd!("hset", -4, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@hash", "@fast"], "hash", "2.0.0", "Creates or modifies the value of a field in a hash.", Keys, hash::hset),
    cmd!("hmset", -4, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@hash", "@fast"], "hash", "2.0.0", "Sets the values of multiple fields.", Keys, hash::hmset),
    cmd!("hsetnx", 4, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@hash", "@fast"], "hash", "2.0.0", "Sets the value of a field in a hash only when the field doesn't exist.", Keys, hash::hsetnx),
    cmd!("hget", 3, ["readonly", "fast"], 1, 1, 1, ["@read", "@hash", "@fast"], "hash", "2.0.0", "Returns the value of a field in a hash.", Keys, hash::hget),
    cmd!("hmget", -3, ["readonly", "fast"], 1, 1, 1, ["@read", "@hash", "@fast"], "hash", "2.0.0", "Returns the values of all fields in a hash.", Keys, hash::hmget),
    cmd!("hgetall", 2, ["readonly"], 1, 1, 1, ["@read", "@hash", "@slow"], "hash", "2.0.0", "Returns all fields and values in a hash.", Keys, hash::hgetall),
    cmd!("hkeys", 2, ["readonly"], 1, 1, 1, ["@read", "@hash", "@slow"], "hash", "2.0.0", "Returns all fields in a hash.", Keys, hash::hkeys),
    cmd!("hvals", 2, ["readonly"], 1, 1, 1, ["@read", "@hash", "@slow"], "hash", "2.0.0", "Returns all values in a hash.", Keys, hash::hvals),
    cmd!("hlen", 2, ["readonly", "fast"], 1, 1, 1, ["@read", "@hash", "@fast"], "hash", "2.0.0", "Returns the number of fields in a hash.", Keys, hash::hlen),
    cmd!("hexists", 3, ["readonly", "fast"], 1, 1, 1, ["@read", "@hash", "@fast"], "hash", "2.0.0", "Determines whether a field exists in a hash.", Keys, hash::hexists),
    cmd!("hstrlen", 3, ["readonly", "fast"], 1, 1, 1, ["@read", "@hash", "@fast"], "hash", "3.2.0", "Returns the length of the value of a field.", Keys, hash::hstrlen),
    cmd!("hdel", -3, ["write", "fast"], 1, 1, 1, ["@write", "@hash", "@fast"], "hash", "2.0.0", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", Keys, hash::hdel),
    cmd!("hincrby", 4, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@hash", "@fast"], "hash", "2.0.0", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", Keys, hash::hincrby),
    cmd!("hincrbyfloat", 4, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@hash", "@fast"], "hash", "2.6.0", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", Keys, hash::hincrbyfloat),
    cmd!("hrandfield", -2, ["readonly"], 1, 1, 1, ["@read", "@hash", "@slow"], "hash", "6.2.0", "Returns one or more random fields from a hash.", Keys, hash::hrandfield),
    cmd!("hscan", -3, ["readonly"], 1, 1, 1, ["@read", "@hash", "@slow"], "hash", "2.8.0", "Iterates over fields and values of a hash.", Keys, hash::hscan),
    // streams
    cmd!("xadd", -5, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@stream", "@fast"], "stream", "5.0.0", "Appends a new entry to a stream", Keys, stream::cmds::xadd),
    cmd!("xrange", -4, ["readonly"], 1, 1, 1, ["@read", "@stream", "@slow"], "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval", Keys, stream::cmds::xrange),
    cmd!("xrevrange", -4, ["readonly"], 1, 1, 1, ["@read", "@stream", "@slow"], "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE", Keys, stream::cmds::xrevrange),
    cmd!("xlen", 2, ["readonly", "fast"], 1, 1, 1, ["@read", "@stream", "@fast"], "stream", "5.0.0", "Return the number of entries in a stream", Keys, stream::cmds::xlen),
    cmd!("xdel", -3, ["write", "fast"], 1, 1, 1, ["@write", "@stream", "@fast"], "stream", "5.0.0", "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.", Keys, stream::cmds::xdel),
    cmd!("xtrim", -4, ["write"], 1, 1, 1, ["@write", "@stream", "@slow"], "stream", "5.0.0", "Trims the stream to (approximately if '~' is passed) a certain size", Keys, stream::cmds::xtrim),
    cmd!("xsetid", -3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@stream", "@fast"], "stream", "5.0.0", "An internal command for replicating stream values", Keys, stream::cmds::xsetid),
    cmd!("xread", -4, ["readonly", "blocking", "movablekeys"], 0, 0, 0, ["@read", "@stream", "@slow", "@blocking"], "stream", "5.0.0", "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.", Keys, stream::cmds::xread),
    cmd!("xreadgroup", -7, ["write", "blocking", "movablekeys"], 0, 0, 0, ["@write", "@stream", "@slow", "@blocking"], "stream", "5.0.0", "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.", Keys, stream::cmds::xreadgroup),
    cmd!("xgroup", -2, [], 2, 2, 1, ["@slow"], "stream", "5.0.0", "A container for consumer groups commands", Keys, stream::group::xgroup, [ "xgroup|create", "xgroup|createconsumer", "xgroup|delconsumer", "xgroup|destroy", "xgroup|setid", "xgroup|help" ]),
    cmd!("xack", -4, ["write", "fast"], 1, 1, 1, ["@write", "@stream", "@fast"], "stream", "5.0.0", "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group.", Keys, stream::group::xack),
    cmd!("xpending", -3, ["readonly"], 1, 1, 1, ["@read", "@stream", "@slow"], "stream", "5.0.0", "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.", Keys, stream::group::xpending),
    cmd!("xclaim", -6, ["write", "fast"], 1, 1, 1, ["@write", "@stream", "@fast"], "stream", "5.0.0", "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.", Keys, stream::group::xclaim),
    cmd!("xautoclaim", -6, ["write", "fast"], 1, 1, 1, ["@write", "@stream", "@fast"], "stream", "6.2.0", "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.", Keys, stream::group::xautoclaim),
    cmd!("xinfo", -2, [], 2, 2, 1, ["@slow"], "stream", "5.0.0", "A container for stream introspection commands", Keys, stream::group::xinfo, [ "xinfo|consumers", "xinfo|groups", "xinfo|stream", "xinfo|help" ]),
    // lists
    cmd!("lpush", -3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@list", "@fast"], "list", "1.0.0", "Prepends one or more elements to a list. Creates the key if it doesn't exist.", Keys, list::lpush),
    cmd!("rpush", -3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@list", "@fast"], "list", "1.0.0", "Appends one or more elements to a list. Creates the key if it doesn't exist.", Keys, list::rpush),
    cmd!("lpushx", -3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@list", "@fast"], "list", "2.2.0", "Prepends one or more elements to a list only when the list exists.", Keys, list::lpushx),
    cmd!("rpushx", -3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@list", "@fast"], "list", "2.2.0", "Appends an element to a list only when the list exists.", Keys, list::rpushx),
    cmd!("lpop", -2, ["write", "fast"], 1, 1, 1, ["@write", "@list", "@fast"], "list", "1.0.0", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", Keys, list::lpop),
    cmd!("rpop", -2, ["write", "fast"], 1, 1, 1, ["@write", "@list", "@fast"], "list", "1.0.0", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", Keys, list::rpop),
    cmd!("llen", 2, ["readonly", "fast"], 1, 1, 1, ["@read", "@list", "@fast"], "list", "1.0.0", "Returns the length of a list.", Keys, list::llen),
    cmd!("lindex", 3, ["readonly"], 1, 1, 1, ["@read", "@list", "@slow"], "list", "1.0.0", "Returns an element from a list by its index.", Keys, list::lindex),
    cmd!("lset", 4, ["write", "denyoom"], 1, 1, 1, ["@write", "@list", "@slow"], "list", "1.0.0", "Sets the value of an element in a list by its index.", Keys, list::lset),
    cmd!("lrange", 4, ["readonly"], 1, 1, 1, ["@read", "@list", "@slow"], "list", "1.0.0", "Returns a range of elements from a list.", Keys, list::lrange),
    cmd!("ltrim", 4, ["write"], 1, 1, 1, ["@write", "@list", "@slow"], "list", "1.0.0", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", Keys, list::ltrim),
    cmd!("lrem", 4, ["write"], 1, 1, 1, ["@write", "@list", "@slow"], "list", "1.0.0", "Removes elements from a list. Deletes the list if the last element was removed.", Keys, list::lrem),
    cmd!("linsert", 5, ["write", "denyoom"], 1, 1, 1, ["@write", "@list", "@slow"], "list", "2.2.0", "Inserts an element before or after another element in a list.", Keys, list::linsert),
    cmd!("lpos", -3, ["readonly"], 1, 1, 1, ["@read", "@list", "@slow"], "list", "6.0.6", "Returns the index of matching elements in a list.", Keys, list::lpos),
    cmd!("lmove", 5, ["write", "denyoom"], 1, 2, 1, ["@write", "@list", "@slow"], "list", "6.2.0", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", Keys, list::lmove),
    cmd!("rpoplpush", 3, ["write", "denyoom"], 1, 2, 1, ["@write", "@list", "@slow"], "list", "1.2.0", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", Keys, list::rpoplpush),
    cmd!("lmpop", -4, ["write", "movablekeys"], 0, 0, 0, ["@write", "@list", "@slow"], "list", "7.0.0", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", Keys, list::lmpop),
    cmd!("blpop", -3, ["write", "noscript", "blocking"], 1, -2, 1, ["@write", "@list", "@slow", "@blocking"], "list", "2.0.0", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Keys, list::blpop),
    cmd!("brpop", -3, ["write", "noscript", "blocking"], 1, -2, 1, ["@write", "@list", "@slow", "@blocking"], "list", "2.0.0", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Keys, list::brpop),
    cmd!("blmove", 6, ["write", "denyoom", "noscript", "blocking"], 1, 2, 1, ["@write", "@list", "@slow", "@blocking"], "list", "6.2.0", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", Keys, list::blmove),
    cmd!("brpoplpush", 4, ["write", "denyoom", "noscript", "blocking"], 1, 2, 1, ["@write", "@list", "@slow", "@blocking"], "list", "2.2.0", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", Keys, list::brpoplpush),
    cmd!("blmpop", -5, ["write", "blocking", "movablekeys"], 0, 0, 0, ["@write", "@list", "@slow", "@blocking"], "list", "7.0.0", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Keys, list::blmpop),
    // sets
    cmd!("sadd", -3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@set", "@fast"], "set", "1.0.0", "Add one or more members to a set.", Keys, set::sadd),
    cmd!("srem", -3, ["write", "fast"], 1, 1, 1, ["@write", "@set", "@fast"], "set", "1.0.0", "Remove one or more members from a set.", Keys, set::srem),
    cmd!("smembers", 2, ["readonly"], 1, 1, 1, ["@read", "@set", "@slow"], "set", "1.0.0", "Get all the members in a set.", Keys, set::smembers),
    cmd!("sismember", 3, ["readonly", "fast"], 1, 1, 1, ["@read", "@set", "@fast"], "set", "1.0.0", "Determine if a given value is a member of a set.", Keys, set::sismember),
    cmd!("smismember", -3, ["readonly", "fast"], 1, 1, 1, ["@read", "@set", "@fast"], "set", "6.2.0", "Returns the membership associated with the given elements for a set.", Keys, set::smismember),
    cmd!("scard", 2, ["readonly", "fast"], 1, 1, 1, ["@read", "@set", "@fast"], "set", "1.0.0", "Get the number of members in a set.", Keys, set::scard),
    cmd!("spop", -2, ["write", "fast"], 1, 1, 1, ["@write", "@set", "@fast"], "set", "1.0.0", "Remove and return one or multiple random members from a set.", Keys, set::spop),
    cmd!("srandmember", -2, ["readonly"], 1, 1, 1, ["@read", "@set", "@slow"], "set", "1.0.0", "Get one or multiple random members from a set.", Keys, set::srandmember),
    cmd!("smove", 4, ["write", "fast"], 1, 2, 1, ["@write", "@set", "@fast"], "set", "1.0.0", "Move a member from one set to another.", Keys, set::smove),
    cmd!("sinter", -2, ["readonly"], 1, -1, 1, ["@read", "@set", "@slow"], "set", "1.0.0", "Intersect multiple sets.", Keys, set::sinter),
    cmd!("sintercard", -3, ["readonly", "movablekeys"], 0, 0, 0, ["@read", "@set", "@slow"], "set", "7.0.0", "Intersect multiple sets and return the cardinality of the result.", Keys, set::sintercard),
    cmd!("sunion", -2, ["readonly"], 1, -1, 1, ["@read", "@set", "@slow"], "set", "1.0.0", "Add multiple sets.", Keys, set::sunion),
    cmd!("sdiff", -2, ["readonly"], 1, -1, 1, ["@read", "@set", "@slow"], "set", "1.0.0", "Subtract multiple sets.", Keys, set::sdiff),
    cmd!("sinterstore", -3, ["write", "denyoom"], 1, -1, 1, ["@write", "@set", "@slow"], "set", "1.0.0", "Intersect multiple sets and store the resulting set in a key.", Keys, set::sinterstore),
    cmd!("sunionstore", -3, ["write", "denyoom"], 1, -1, 1, ["@write", "@set", "@slow"], "set", "1.0.0", "Add multiple sets and store the resulting set in a key.", Keys, set::sunionstore),
    cmd!("sdiffstore", -3, ["write", "denyoom"], 1, -1, 1, ["@write", "@set", "@slow"], "set", "1.0.0", "Subtract multiple sets and store the resulting set in a key.", Keys, set::sdiffstore),
    cmd!("sscan", -3, ["readonly"], 1, 1, 1, ["@read", "@set", "@slow"], "set", "2.8.0", "Incrementally iterate Set elements.", Keys, set::sscan),
    // Sorted sets (exec/types/zset.rs).
    cmd!("zadd", -4, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@sortedset", "@fast"], "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists", Keys, zset::zadd),
    cmd!("zincrby", 4, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@sortedset", "@fast"], "sorted-set", "1.2.0", "Increment the score of a member in a sorted set", Keys, zset::zincrby),
    cmd!("zscore", 3, ["readonly", "fast"], 1, 1, 1, ["@read", "@sortedset", "@fast"], "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set", Keys, zset::zscore),
    cmd!("zmscore", -3, ["readonly", "fast"], 1, 1, 1, ["@read", "@sortedset", "@fast"], "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set", Keys, zset::zmscore),
    cmd!("zrank", 3, ["readonly", "fast"], 1, 1, 1, ["@read", "@sortedset", "@fast"], "sorted-set", "2.0.0", "Determine the index of a member in a sorted set", Keys, zset::zrank),
    cmd!("zrevrank", 3, ["readonly", "fast"], 1, 1, 1, ["@read", "@sortedset", "@fast"], "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low", Keys, zset::zrevrank),
    cmd!("zcard", 2, ["readonly", "fast"], 1, 1, 1, ["@read", "@sortedset", "@fast"], "sorted-set", "1.2.0", "Get the number of members in a sorted set", Keys, zset::zcard),
    cmd!("zcount", 4, ["readonly", "fast"], 1, 1, 1, ["@read", "@sortedset", "@fast"], "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values", Keys, zset::zcount),
    cmd!("zlexcount", 4, ["readonly", "fast"], 1, 1, 1, ["@read", "@sortedset", "@fast"], "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range", Keys, zset::zlexcount),
    cmd!("zrange", -4, ["readonly"], 1, 1, 1, ["@read", "@sortedset", "@slow"], "sorted-set", "1.2.0", "Return a range of members in a sorted set", Keys, zset::zrange),
    cmd!("zrangebyscore", -4, ["readonly"], 1, 1, 1, ["@read", "@sortedset", "@slow"], "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score", Keys, zset::zrangebyscore),
    cmd!("zrevrangebyscore", -4, ["readonly"], 1, 1, 1, ["@read", "@sortedset", "@slow"], "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low", Keys, zset::zrevrangebyscore),
    cmd!("zrangebylex", -4, ["readonly"], 1, 1, 1, ["@read", "@sortedset", "@slow"], "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range", Keys, zset::zrangebylex),
    cmd!("zrevrangebylex", -4, ["readonly"], 1, 1, 1, ["@read", "@sortedset", "@slow"], "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", Keys, zset::zrevrangebylex),
    cmd!("zrevrange", -4, ["readonly"], 1, 1, 1, ["@read", "@sortedset", "@slow"], "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low", Keys, zset::zrevrange),
    cmd!("zrangestore", -5, ["write", "denyoom"], 1, 2, 1, ["@write", "@sortedset", "@slow"], "sorted-set", "6.2.0", "Store a range of members from sorted set into another key", Keys, zset::zrangestore),
    cmd!("zrem", -3, ["write", "fast"], 1, 1, 1, ["@write", "@sortedset", "@fast"], "sorted-set", "1.2.0", "Remove one or more members from a sorted set", Keys, zset::zrem),
    cmd!("zremrangebyscore", 4, ["write"], 1, 1, 1, ["@write", "@sortedset", "@slow"], "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores", Keys, zset::zremrangebyscore),
    cmd!("zremrangebyrank", 4, ["write"], 1, 1, 1, ["@write", "@sortedset", "@slow"], "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes", Keys, zset::zremrangebyrank),
    cmd!("zremrangebylex", 4, ["write"], 1, 1, 1, ["@write", "@sortedset", "@slow"], "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range", Keys, zset::zremrangebylex),
    cmd!("zpopmin", -2, ["write", "fast"], 1, 1, 1, ["@write", "@sortedset", "@fast"], "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set", Keys, zset::zpopmin),
    cmd!("zpopmax", -2, ["write", "fast"], 1, 1, 1, ["@write", "@sortedset", "@fast"], "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set", Keys, zset::zpopmax),
    cmd!("zmpop", -4, ["write", "movablekeys"], 0, 0, 0, ["@write", "@sortedset", "@slow"], "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set", Keys, zset::zmpop),
    cmd!("bzpopmin", -3, ["write", "noscript", "blocking", "fast"], 1, -2, 1, ["@write", "@sortedset", "@fast", "@blocking"], "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", Keys, zset::bzpopmin),
    cmd!("bzpopmax", -3, ["write", "noscript", "blocking", "fast"], 1, -2, 1, ["@write", "@sortedset", "@fast", "@blocking"], "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", Keys, zset::bzpopmax),
    cmd!("bzmpop", -5, ["write", "blocking", "movablekeys"], 0, 0, 0, ["@write", "@sortedset", "@slow", "@blocking"], "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available", Keys, zset::bzmpop),
    cmd!("zunion", -3, ["readonly", "movablekeys"], 0, 0, 0, ["@read", "@sortedset", "@slow"], "sorted-set", "6.2.0", "Add multiple sorted sets", Keys, zset::zunion),
    cmd!("zinter", -3, ["readonly", "movablekeys"], 0, 0, 0, ["@read", "@sortedset", "@slow"], "sorted-set", "6.2.0", "Intersect multiple sorted sets", Keys, zset::zinter),
    cmd!("zdiff", -3, ["readonly", "movablekeys"], 0, 0, 0, ["@read", "@sortedset", "@slow"], "sorted-set", "6.2.0", "Subtract multiple sorted sets", Keys, zset::zdiff),
    cmd!("zunionstore", -4, ["write", "denyoom", "movablekeys"], 1, 1, 1, ["@write", "@sortedset", "@slow"], "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key", Keys, zset::zunionstore),
    cmd!("zinterstore", -4, ["write", "denyoom", "movablekeys"], 1, 1, 1, ["@write", "@sortedset", "@slow"], "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key", Keys, zset::zinterstore),
    cmd!("zdiffstore", -4, ["write", "denyoom", "movablekeys"], 1, 1, 1, ["@write", "@sortedset", "@slow"], "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key", Keys, zset::zdiffstore),
    cmd!("zintercard", -3, ["readonly", "movablekeys"], 0, 0, 0, ["@read", "@sortedset", "@slow"], "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result", Keys, zset::zintercard),
    cmd!("zrandmember", -2, ["readonly"], 1, 1, 1, ["@read", "@sortedset", "@slow"], "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set", Keys, zset::zrandmember),
    cmd!("zscan", -3, ["readonly"], 1, 1, 1, ["@read", "@sortedset", "@slow"], "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores", Keys, zset::zscan),
    // geo (exec/geo)
    cmd!("geoadd", -5, ["write", "denyoom"], 1, 1, 1, ["@write", "@geo", "@slow"], "geo", "3.2.0", "Add one or more geospatial items in the geospatial index represented using a sorted set", Keys, geo::geoadd),
    cmd!("geodist", -4, ["readonly"], 1, 1, 1, ["@read", "@geo", "@slow"], "geo", "3.2.0", "Returns the distance between two members of a geospatial index", Keys, geo::geodist),
    cmd!("geohash", -2, ["readonly"], 1, 1, 1, ["@read", "@geo", "@slow"], "geo", "3.2.0", "Returns members of a geospatial index as standard geohash strings", Keys, geo::geohash),
    cmd!("geopos", -2, ["readonly"], 1, 1, 1, ["@read", "@geo", "@slow"], "geo", "3.2.0", "Returns longitude and latitude of members of a geospatial index", Keys, geo::geopos),
    cmd!("georadius", -6, ["write", "denyoom", "movablekeys"], 1, 1, 1, ["@write", "@geo", "@slow"], "geo", "3.2.0", "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point", Keys, geo::georadius),
    cmd!("georadius_ro", -6, ["readonly"], 1, 1, 1, ["@read", "@geo", "@slow"], "geo", "3.2.10", "A read-only variant for GEORADIUS", Keys, geo::georadius_ro),
    cmd!("georadiusbymember", -5, ["write", "denyoom", "movablekeys"], 1, 1, 1, ["@write", "@geo", "@slow"], "geo", "3.2.0", "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member", Keys, geo::georadiusbymember),
    cmd!("georadiusbymember_ro", -5, ["readonly"], 1, 1, 1, ["@read", "@geo", "@slow"], "geo", "3.2.10", "A read-only variant for GEORADIUSBYMEMBER", Keys, geo::georadiusbymember_ro),
    cmd!("geosearch", -7, ["readonly"], 1, 1, 1, ["@read", "@geo", "@slow"], "geo", "6.2.0", "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.", Keys, geo::geosearch),
    cmd!("geosearchstore", -8, ["write", "denyoom"], 1, 2, 1, ["@write", "@geo", "@slow"], "geo", "6.2.0", "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.", Keys, geo::geosearchstore),
    // SORT (exec/sort.rs)
    cmd!("sort", -2, ["write", "denyoom", "movablekeys"], 1, 1, 1, ["@write", "@set", "@sortedset", "@list", "@slow", "@dangerous"], "generic", "1.0.0", "Sort the elements in a list, set or sorted set", Keys, sort::sort),
    cmd!("sort_ro", -2, ["readonly", "movablekeys"], 1, 1, 1, ["@read", "@set", "@sortedset", "@list", "@slow", "@dangerous"], "generic", "7.0.0", "Sort the elements in a list, set or sorted set. Read-only variant of SORT.", Keys, sort::sort_ro),
    // strings
    cmd!("get", 2, ["readonly", "fast"], 1, 1, 1, ["@read", "@string", "@fast"], "string", "1.0.0", "Returns the string value of a key.", Keys, strings::get),
    cmd!("set", -3, ["write", "denyoom"], 1, 1, 1, ["@write", "@string", "@slow"], "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", Keys, strings::set),
    cmd!("setnx", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "1.0.0", "Set the string value of a key only when the key doesn't exist.", Keys, strings::setnx),
    cmd!("setex", 4, ["write", "denyoom"], 1, 1, 1, ["@write", "@string", "@slow"], "string", "2.0.0", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", Keys, strings::setex),
    cmd!("psetex", 4, ["write", "denyoom"], 1, 1, 1, ["@write", "@string", "@slow"], "string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", Keys, strings::psetex),
    cmd!("getset", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value.", Keys, strings::getset),
    cmd!("getdel", 2, ["write", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "6.2.0", "Returns the string value of a key after deleting the key.", Keys, strings::getdel),
    cmd!("getex", -2, ["write", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "6.2.0", "Returns the string value of a key after setting its expiration time.", Keys, strings::getex),
    cmd!("mget", -2, ["readonly", "fast"], 1, -1, 1, ["@read", "@string", "@fast"], "string", "1.0.0", "Atomically returns the string values of one or more keys.", Keys, strings::mget),
    cmd!("mset", -3, ["write", "denyoom"], 1, -1, 2, ["@write", "@string", "@slow"], "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys.", Keys, strings::mset),
    cmd!("msetnx", -3, ["write", "denyoom"], 1, -1, 2, ["@write", "@string", "@slow"], "string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist.", Keys, strings::msetnx),
    cmd!("append", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist.", Keys, strings::append),
    cmd!("strlen", 2, ["readonly", "fast"], 1, 1, 1, ["@read", "@string", "@fast"], "string", "2.2.0", "Returns the length of a string value.", Keys, strings::strlen),
    cmd!("getrange", 4, ["readonly"], 1, 1, 1, ["@read", "@string", "@slow"], "string", "2.4.0", "Returns a substring of the string stored at a key.", Keys, strings::getrange),
    cmd!("substr", 4, ["readonly"], 1, 1, 1, ["@read", "@string", "@slow"], "string", "1.0.0", "Returns a substring from a string value.", Keys, strings::getrange),
    cmd!("lcs", -3, ["readonly"], 1, 2, 1, ["@read", "@string", "@slow"], "string", "7.0.0", "Finds the longest common substring.", Keys, strings::lcs),
    cmd!("setrange", 4, ["write", "denyoom"], 1, 1, 1, ["@write", "@string", "@slow"], "string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", Keys, strings::setrange),
    cmd!("incr", 2, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "1.0.0", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Keys, strings::incr),
    cmd!("decr", 2, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "1.0.0", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Keys, strings::decr),
    cmd!("incrby", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "1.0.0", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Keys, strings::incrby),
    cmd!("decrby", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "1.0.0", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", Keys, strings::decrby),
    cmd!("incrbyfloat", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@string", "@fast"], "string", "2.6.0", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Keys, strings::incrbyfloat),
    // bitmaps
    cmd!("setbit", 4, ["write", "denyoom"], 1, 1, 1, ["@write", "@bitmap", "@slow"], "bitmap", "2.2.0", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", Keys, bitops::setbit),
    cmd!("getbit", 3, ["readonly", "fast"], 1, 1, 1, ["@read", "@bitmap", "@fast"], "bitmap", "2.2.0", "Returns a bit value by offset.", Keys, bitops::getbit),
    cmd!("bitcount", -2, ["readonly"], 1, 1, 1, ["@read", "@bitmap", "@slow"], "bitmap", "2.6.0", "Counts the number of set bits (population counting) in a string.", Keys, bitops::bitcount),
    cmd!("bitpos", -3, ["readonly"], 1, 1, 1, ["@read", "@bitmap", "@slow"], "bitmap", "2.8.7", "Finds the first set (1) or clear (0) bit in a string.", Keys, bitops::bitpos),
    cmd!("bitop", -4, ["write", "denyoom"], 2, -1, 1, ["@write", "@bitmap", "@slow"], "bitmap", "2.6.0", "Performs bitwise operations on multiple strings, and stores the result.", Keys, bitops::bitop),
    cmd!("bitfield", -2, ["write", "denyoom"], 1, 1, 1, ["@write", "@bitmap", "@slow"], "bitmap", "3.2.0", "Performs arbitrary bitfield integer operations on strings.", Keys, bitops::bitfield),
    cmd!("bitfield_ro", -2, ["readonly", "fast"], 1, 1, 1, ["@read", "@bitmap", "@fast"], "bitmap", "6.0.0", "Performs arbitrary read-only bitfield integer operations on strings.", Keys, bitops::bitfield_ro),
    // keyspace
    cmd!("del", -2, ["write"], 1, -1, 1, ["@keyspace", "@write", "@slow"], "generic", "1.0.0", "Deletes one or more keys.", Keys, keyspace::del),
    cmd!("unlink", -2, ["write", "fast"], 1, -1, 1, ["@keyspace", "@write", "@fast"], "generic", "4.0.0", "Asynchronously deletes one or more keys.", Keys, keyspace::del),
    cmd!("exists", -2, ["readonly", "fast"], 1, -1, 1, ["@keyspace", "@read", "@fast"], "generic", "1.0.0", "Determines whether one or more keys exist.", Keys, keyspace::exists),
    cmd!("touch", -2, ["readonly", "fast"], 1, -1, 1, ["@keyspace", "@read", "@fast"], "generic", "3.2.1", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", Keys, keyspace::touch),
    cmd!("multi", 1, ["noscript", "loading", "stale", "fast", "allow_busy"], 0, 0, 0, ["@fast", "@transaction"], "transactions", "1.2.0", "Starts a transaction.", None, transaction::multi),
    cmd!("exec", 1, ["noscript", "loading", "stale", "skip_slowlog"], 0, 0, 0, ["@slow", "@transaction"], "transactions", "1.2.0", "Executes all commands in a transaction.", None, transaction::exec),
    cmd!("discard", 1, ["noscript", "loading", "stale", "fast", "allow_busy"], 0, 0, 0, ["@fast", "@transaction"], "transactions", "2.0.0", "Discards a transaction.", None, transaction::discard),
    cmd!("watch", -2, ["noscript", "loading", "stale", "fast", "allow_busy"], 1, -1, 1, ["@fast", "@transaction"], "transactions", "2.2.0", "Monitors changes to keys to determine the execution of a transaction.", Keys, transaction::watch),
    cmd!("unwatch", 1, ["noscript", "loading", "stale", "fast", "allow_busy"], 0, 0, 0, ["@fast", "@transaction"], "transactions", "2.2.0", "Forgets about watched keys of a transaction.", None, transaction::unwatch),
    cmd!("type", 2, ["readonly", "fast"], 1, 1, 1, ["@keyspace", "@read", "@fast"], "generic", "1.0.0", "Determines the type of value stored at a key.", Keys, keyspace::type_),
    cmd!("keys", 2, ["readonly"], 0, 0, 0, ["@keyspace", "@read", "@slow", "@dangerous"], "generic", "1.0.0", "Returns all key names that match a pattern.", Pattern, keyspace::keys),
    cmd!("scan", -2, ["readonly"], 0, 0, 0, ["@keyspace", "@read", "@slow"], "generic", "2.8.0", "Iterates over the key names in the database.", Pattern, keyspace::scan),
    cmd!("randomkey", 1, ["readonly"], 0, 0, 0, ["@keyspace", "@read", "@slow"], "generic", "1.0.0", "Returns a random key name from the database.", Conn, keyspace::randomkey),
    cmd!("copy", -3, ["write", "denyoom"], 1, 2, 1, ["@keyspace", "@write", "@slow"], "generic", "6.2.0", "Copies the value of a key to a new key.", Keys, keyspace::copy),
    cmd!("dump", 2, ["readonly"], 1, 1, 1, ["@keyspace", "@read", "@slow"], "generic", "2.6.0", "Returns a serialized representation of the value stored at a key.", Keys, dump::dump),
    cmd!("restore", -4, ["write", "denyoom"], 1, 1, 1, ["@keyspace", "@write", "@slow", "@dangerous"], "generic", "2.6.0", "Creates a key from the serialized representation of a value.", Keys, dump::restore),
    cmd!("migrate", -6, ["write", "movablekeys"], 3, 3, 1, ["@keyspace", "@write", "@slow", "@dangerous"], "generic", "2.6.0", "Atomically transfers a key from one Redis instance to another.", Keys, dump::migrate::migrate),
    cmd!("rename", 3, ["write"], 1, 2, 1, ["@keyspace", "@write", "@slow"], "generic", "1.0.0", "Renames a key and overwrites the destination.", Keys, keyspace::rename),
    cmd!("renamenx", 3, ["write", "fast"], 1, 2, 1, ["@keyspace", "@write", "@fast"], "generic", "1.0.0", "Renames a key only when the target key name doesn't exist.", Keys, keyspace::renamenx),
    cmd!("dbsize", 1, ["readonly", "fast"], 0, 0, 0, ["@keyspace", "@read", "@fast"], "server", "1.0.0", "Returns the number of keys in the database.", Conn, keyspace::dbsize),
    cmd!("flushdb", -1, ["write"], 0, 0, 0, ["@keyspace", "@write", "@slow", "@dangerous"], "server", "1.0.0", "Remove all keys from the current database.", Conn, keyspace::flush),
    cmd!("flushall", -1, ["write"], 0, 0, 0, ["@keyspace", "@write", "@slow", "@dangerous"], "server", "1.0.0", "Removes all keys from all databases.", Conn, keyspace::flush),
    // expiry
    cmd!("expire", -3, ["write", "fast"], 1, 1, 1, ["@keyspace", "@write", "@fast"], "generic", "1.0.0", "Sets the expiration time of a key in seconds.", Keys, expire::expire),
    cmd!("pexpire", -3, ["write", "fast"], 1, 1, 1, ["@keyspace", "@write", "@fast"], "generic", "2.6.0", "Sets the expiration time of a key in milliseconds.", Keys, expire::pexpire),
    cmd!("expireat", -3, ["write", "fast"], 1, 1, 1, ["@keyspace", "@write", "@fast"], "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp.", Keys, expire::expireat),
    cmd!("pexpireat", -3, ["write", "fast"], 1, 1, 1, ["@keyspace", "@write", "@fast"], "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp.", Keys, expire::pexpireat),
    cmd!("expiretime", 2, ["readonly", "fast"], 1, 1, 1, ["@keyspace", "@read", "@fast"], "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp.", Keys, expire::expiretime),
    cmd!("pexpiretime", 2, ["readonly", "fast"], 1, 1, 1, ["@keyspace", "@read", "@fast"], "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp.", Keys, expire::pexpiretime),
    cmd!("ttl", 2, ["readonly", "fast"], 1, 1, 1, ["@keyspace", "@read", "@fast"], "generic", "1.0.0", "Returns the expiration time in seconds of a key.", Keys, expire::ttl),
    cmd!("pttl", 2, ["readonly", "fast"], 1, 1, 1, ["@keyspace", "@read", "@fast"], "generic", "2.6.0", "Returns the expiration time in milliseconds of a key.", Keys, expire::pttl),
    cmd!("persist", 2, ["write", "fast"], 1, 1, 1, ["@keyspace", "@write", "@fast"], "generic", "2.2.0", "Removes the expiration time of a key.", Keys, expire::persist),
    // hyperloglog
    cmd!("pfadd", -2, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@hyperloglog", "@fast"], "hyperloglog", "2.8.9", "Adds the specified elements to the specified HyperLogLog.", Keys, hll::pfadd),
    cmd!("pfcount", -2, ["readonly"], 1, -1, 1, ["@read", "@hyperloglog", "@slow"], "hyperloglog", "2.8.9", "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).", Keys, hll::pfcount),
    cmd!("pfmerge", -2, ["write", "denyoom"], 1, -1, 1, ["@write", "@hyperloglog", "@slow"], "hyperloglog", "2.8.9", "Merge N different HyperLogLogs into a single one.", Keys, hll::pfmerge),
    cmd!("pfselftest", 1, ["admin"], 0, 0, 0, ["@hyperloglog", "@admin", "@slow", "@dangerous"], "hyperloglog", "2.8.9", "An internal command for testing HyperLogLog values", None, hll::pfselftest),
    // connection
    cmd!("subscribe", -2, ["pubsub", "noscript", "loading", "stale"], 0, 0, 0, ["@pubsub", "@slow"], "pubsub", "2.0.0", "Listens for messages published to channels.", Conn, pubsub::subscribe),
    cmd!("unsubscribe", -1, ["pubsub", "noscript", "loading", "stale"], 0, 0, 0, ["@pubsub", "@slow"], "pubsub", "2.0.0", "Stops listening to messages posted to channels.", Conn, pubsub::unsubscribe),
    cmd!("psubscribe", -2, ["pubsub", "noscript", "loading", "stale"], 0, 0, 0, ["@pubsub", "@slow"], "pubsub", "2.0.0", "Listens for messages published to channels that match one or more patterns.", Conn, pubsub::psubscribe),
    cmd!("punsubscribe", -1, ["pubsub", "noscript", "loading", "stale"], 0, 0, 0, ["@pubsub", "@slow"], "pubsub", "2.0.0", "Stops listening to messages published to channels that match one or more patterns.", Conn, pubsub::punsubscribe),
    cmd!("publish", 3, ["pubsub", "loading", "stale", "fast", "may_replicate"], 0, 0, 0, ["@pubsub", "@fast"], "pubsub", "2.0.0", "Posts a message to a channel.", Conn, pubsub::publish),
    cmd!("pubsub", -2, [], 0, 0, 0, ["@slow"], "pubsub", "2.8.0", "A container for Pub/Sub commands.", Conn, pubsub::pubsub, ["pubsub|channels", "pubsub|numpat", "pubsub|numsub", "pubsub|help"]),
    cmd!("wait", 3, ["noscript"], 0, 0, 0, ["@slow", "@connection"], "generic", "3.0.0", "Wait for the synchronous replication of all the write commands sent in the context of the current connection", None, wait::wait),
    cmd!("ping", -1, ["fast"], 0, 0, 0, ["@fast", "@connection"], "connection", "1.0.0", "Returns the server's liveliness response.", None, connection::ping),
    cmd!("echo", 2, ["fast"], 0, 0, 0, ["@fast", "@connection"], "connection", "1.0.0", "Returns the given string.", None, connection::echo),
    cmd!("time", 1, ["random", "loading", "stale", "fast"], 0, 0, 0, ["@fast"], "server", "2.6.0", "Returns the server time.", None, connection::time),
    cmd!("quit", -1, ["allow_busy", "no_auth", "fast"], 0, 0, 0, ["@fast", "@connection"], "connection", "1.0.0", "Closes the connection.", None, connection::quit),
    cmd!("reset", 1, ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], 0, 0, 0, ["@fast", "@connection"], "connection", "6.2.0", "Resets the connection.", None, connection::reset),
    cmd!("auth", -2, ["no_auth", "fast"], 0, 0, 0, ["@fast", "@connection"], "connection", "1.0.0", "Authenticates the connection.", None, connection::auth),
    cmd!("hello", -1, ["no_auth", "fast"], 0, 0, 0, ["@fast", "@connection"], "connection", "6.0.0", "Handshakes with the Redis server.", None, connection::hello),
    cmd!("select", 2, ["loading", "stale", "fast"], 0, 0, 0, ["@keyspace", "@fast"], "connection", "1.0.0", "Changes the selected database.", None, connection::select),
    cmd!("client", -2, [], 0, 0, 0, ["@slow"], "connection", "2.4.0", "A container for client connection commands.", None, connection::client, [ "client|id", "client|setname", "client|getname", "client|list", "client|info", "client|kill", "client|setinfo", "client|reply", "client|unblock", "client|no-evict", "client|no-touch", "client|help", "client|tracking", "client|caching", "client|getredir", "client|trackinginfo", "client|pause", "client|unpause" ]),
    cmd!("acl", -2, [], 0, 0, 0, ["@slow"], "server", "6.0.0", "A container for Access List Control commands.", None, connection::acl, ["acl|whoami", "acl|help"]),
    cmd!("cluster", -2, [], 0, 0, 0, ["@slow"], "cluster", "3.0.0", "A container for cluster commands", None, super::cluster::cluster, ["cluster|addslots", "cluster|addslotsrange", "cluster|bumpepoch", "cluster|count-failure-reports", "cluster|countkeysinslot", "cluster|delslots", "cluster|delslotsrange", "cluster|failover", "cluster|flushslots", "cluster|forget", "cluster|getkeysinslot", "cluster|help", "cluster|info", "cluster|keyslot", "cluster|links", "cluster|meet", "cluster|myid", "cluster|nodes", "cluster|replicas", "cluster|replicate", "cluster|reset", "cluster|saveconfig", "cluster|set-config-epoch", "cluster|setslot", "cluster|shards", "cluster|slaves", "cluster|slots"]),
    // server / admin
    cmd!("command", -1, ["loading", "stale"], 0, 0, 0, ["@slow", "@connection"], "server", "2.8.13", "Returns detailed information about all commands.", None, admin::command, [ "command|count", "command|info", "command|docs", "command|list", "command|getkeys", "command|getkeysandflags", "command|help" ]),
    cmd!("config", -2, [], 0, 0, 0, ["@slow"], "server", "2.0.0", "A container for server configuration commands.", None, admin::config, [ "config|get", "config|set", "config|resetstat", "config|rewrite", "config|help" ]),
    cmd!("info", -1, ["loading", "stale"], 0, 0, 0, ["@slow", "@dangerous"], "server", "1.0.0", "Returns information and statistics about the server.", None, admin::info),
    // scripting (exec/scripting)
    cmd!("eval", -3, ["noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys", "movablekeys"], 0, 0, 0, ["@slow", "@scripting"], "scripting", "2.6.0", "Executes a server-side Lua script.", Keys, scripting::eval),
    cmd!("evalsha", -3, ["noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys", "movablekeys"], 0, 0, 0, ["@slow", "@scripting"], "scripting", "2.6.0", "Executes a server-side Lua script by SHA1 digest.", Keys, scripting::evalsha),
    cmd!("eval_ro", -3, ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], 0, 0, 0, ["@read", "@slow", "@scripting"], "scripting", "7.0.0", "Executes a read-only server-side Lua script.", Keys, scripting::eval_ro),
    cmd!("evalsha_ro", -3, ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], 0, 0, 0, ["@read", "@slow", "@scripting"], "scripting", "7.0.0", "Executes a read-only server-side Lua script by SHA1 digest.", Keys, scripting::evalsha_ro),
    cmd!("fcall", -3, ["noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys", "movablekeys"], 0, 0, 0, ["@slow", "@scripting"], "scripting", "7.0.0", "Invokes a function.", Keys, scripting::function::fcall),
    cmd!("fcall_ro", -3, ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], 0, 0, 0, ["@read", "@slow", "@scripting"], "scripting", "7.0.0", "Invokes a read-only function.", Keys, scripting::function::fcall_ro),
    cmd!("script", -2, ["noscript"], 0, 0, 0, ["@slow", "@scripting"], "scripting", "2.6.0", "A container for Lua scripts management commands.", Conn, scripting::script, ["script|debug", "script|exists", "script|flush", "script|help", "script|kill", "script|load"]),
    cmd!("function", -2, ["noscript"], 0, 0, 0, ["@slow", "@scripting"], "scripting", "7.0.0", "A container for function commands.", Conn, admin::function, ["function|delete", "function|dump", "function|flush", "function|help", "function|kill", "function|list", "function|load", "function|restore", "function|stats"]),
    cmd!("memory", -2, [], 2, 2, 1, ["@slow"], "server", "4.0.0", "A container for memory diagnostics commands.", Keys, admin::memory, ["memory|usage", "memory|help"]),
    cmd!("object", -2, [], 2, 2, 1, ["@slow"], "generic", "2.2.3", "A container for object introspection commands.", Keys, admin::object, [ "object|encoding", "object|idletime", "object|freq", "object|refcount", "object|help" ]),
    cmd!("save", 1, ["admin", "noscript", "no_async_loading", "no_multi"], 0, 0, 0, ["@admin", "@slow", "@dangerous"], "server", "1.0.0", "Synchronously saves the database(s) to disk.", None, admin::save),
    cmd!("bgsave", -1, ["admin", "noscript", "no_async_loading"], 0, 0, 0, ["@admin", "@slow", "@dangerous"], "server", "1.0.0", "Asynchronously saves the database(s) to disk.", None, admin::bgsave),
    cmd!("slowlog", -2, ["admin", "loading", "stale"], 0, 0, 0, ["@admin", "@slow", "@dangerous"], "server", "2.2.12", "A container for slow log commands.", None, slowlog::slowlog, ["slowlog|get", "slowlog|len", "slowlog|reset", "slowlog|help"]),
    cmd!("monitor", 1, ["admin", "noscript", "loading", "stale"], 0, 0, 0, ["@admin", "@slow", "@dangerous"], "server", "1.0.0", "Listens for all requests received by the server in real-time.", None, monitor::monitor),
    cmd!("latency", -2, ["admin", "noscript", "loading", "stale"], 0, 0, 0, ["@admin", "@slow", "@dangerous"], "server", "2.8.13", "A container for latency diagnostics commands.", None, latency::latency, ["latency|doctor", "latency|graph", "latency|help", "latency|histogram", "latency|history", "latency|latest", "latency|reset"]),
    cmd!("lastsave", 1, ["loading", "stale", "fast"], 0, 0, 0, ["@admin", "@fast", "@dangerous"], "server", "1.0.0", "Returns the Unix timestamp of the last successful save to disk.", None, admin::lastsave),
    cmd!("shutdown", -1, [ "admin", "noscript", "loading", "stale", "no_multi", "allow_busy" ], 0, 0, 0, ["@admin", "@slow", "@dangerous"], "server", "1.0.0", "Synchronously saves the database(s) to disk and shuts down the Redis server.", None, admin::shutdown),
    cmd!("locus.tenant", -2, ["admin"], 0, 0, 0, ["@admin", "@slow"], "server", "0.1.0", "Lists tenants and reads or changes a tenant's memory settings (Locus).", None, admin::tenant),
    cmd!("locus.mrc", -2, ["readonly"], 0, 0, 0, ["@admin", "@slow"], "server", "0.1.0", "Returns a tenant's miss ratio curve as its controller's profiler built it, or the memory that curve says the tenant needs for a hit ratio (Locus).", None, admin::mrc),
    cmd!("locus.controller", -2, ["admin"], 0, 0, 0, ["@admin", "@slow"], "server", "0.1.0", "Shows the memory controller's state, targets and decisions, or makes it decide now, or replaces it (Locus).", None, admin::controller, [ "locus.controller|info", "locus.controller|targets", "locus.controller|records", "locus.controller|run", "locus.controller|set", "locus.controller|help" ]),
];

/// Longest command name [`lookup`] can find (longer names are unknown commands).
pub const MAX_NAME_LEN: usize = 32;

/// Slots of the name index: a power of two, about 4x the number of commands, so that most
/// lookups probe one slot.
const INDEX_SLOTS: usize = 512;

/// A lowercase command name padded with zeros to [`MAX_NAME_LEN`] bytes, as four words: compared
/// and hashed without a call to `memcmp` or a general-purpose hasher.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Name {
    words: [u64; MAX_NAME_LEN / 8],
    len: usize,
}

impl Name {
    /// The lowercase, padded form of `name`; `None` if it is longer than [`MAX_NAME_LEN`].
    #[inline]
    fn new(name: &[u8]) -> Option<Self> {
        if name.len() > MAX_NAME_LEN {
            return None;
        }
        let mut buf = [0u8; MAX_NAME_LEN];
        for (d, s) in buf.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        let mut words = [0u64; MAX_NAME_LEN / 8];
        for (w, chunk) in words.iter_mut().zip(buf.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        Some(Self {
            words,
            len: name.len(),
        })
    }

    /// The first slot to probe (a multiplicative hash of the words and the length).
    #[inline]
    fn slot(&self) -> usize {
        let [w0, w1, w2, w3] = self.words;
        let mixed =
            w0 ^ w1.rotate_left(17) ^ w2.rotate_left(31) ^ w3.rotate_left(47) ^ self.len as u64;
        (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - INDEX_SLOTS.trailing_zeros())) as usize
    }
}

/// Open-addressing table from [`Name`] to the position in [`COMMANDS`] (linear probing).
struct Index {
    slots: Vec<Option<(Name, usize)>>,
}

static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let mut slots = vec![None; INDEX_SLOTS];
    assert!(COMMANDS.len() * 2 <= INDEX_SLOTS, "grow INDEX_SLOTS");
    for (i, c) in COMMANDS.iter().enumerate() {
        // Invariant of the static table: names are short, lowercase and unique.
        let name = Name::new(c.name.as_bytes()).expect("command names are at most MAX_NAME_LEN");
        let mut s = name.slot();
        while let Some((other, _)) = slots[s] {
            assert!(other != name, "duplicate command {}", c.name);
            s = (s + 1) % INDEX_SLOTS;
        }
        slots[s] = Some((name, i));
    }
    Index { slots }
});

/// Finds a command's position in [`COMMANDS`] by name, case-insensitively.
#[inline]
pub fn find(name: &[u8]) -> Option<usize> {
    let name = Name::new(name)?;
    let index = &*INDEX;
    let mut s = name.slot();
    loop {
        match &index.slots[s] {
            Some((n, i)) if *n == name => return Some(*i),
            Some(_) => s = (s + 1) % INDEX_SLOTS,
            None => return None,
        }
    }
}

/// Finds a command by name, case-insensitively.
#[inline]
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    find(name).map(|i| &COMMANDS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precomputed_flags_match_the_flag_lists() {
        for c in COMMANDS {
            assert_eq!(c.is_write, c.flags.contains(&"write"), "{}", c.name);
            assert_eq!(c.no_auth, c.flags.contains(&"no_auth"), "{}", c.name);
        }
        assert!(lookup(b"set").unwrap().is_write && !lookup(b"get").unwrap().is_write);
        assert!(lookup(b"auth").unwrap().no_auth && !lookup(b"get").unwrap().no_auth);
    }

    #[test]
    fn every_command_is_found_in_any_case() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert_eq!(
                c.name,
                c.name.to_ascii_lowercase(),
                "table names are lowercase"
            );
            assert_eq!(find(c.name.as_bytes()), Some(i), "{}", c.name);
            assert_eq!(find(c.name.to_ascii_uppercase().as_bytes()), Some(i));
            let mixed: String = c
                .name
                .chars()
                .enumerate()
                .map(|(k, ch)| {
                    if k % 2 == 0 {
                        ch.to_ascii_uppercase()
                    } else {
                        ch
                    }
                })
                .collect();
            assert!(std::ptr::eq(lookup(mixed.as_bytes()).unwrap(), c));
        }
    }

    #[test]
    fn unknown_names_are_not_found() {
        for bad in [
            &b""[..],
            b"ge",
            b"gett",
            b"get\0",
            b"\0get",
            b"g\xc3\xa9t",
            b"getx",
            b"locus.controllerx",
            &[b'a'; MAX_NAME_LEN + 1],
            &[0xff; 8],
        ] {
            assert_eq!(find(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        // Every proper prefix of a command name is unknown unless it is itself a command.
        for c in COMMANDS {
            for cut in 0..c.name.len() {
                let p = &c.name[..cut];
                let expected = COMMANDS.iter().position(|o| o.name == p);
                assert_eq!(find(p.as_bytes()), expected, "{p}");
            }
        }
    }
}
