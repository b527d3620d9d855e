//! One table of (request, expected reply) pairs, run against several configurations of Locus and
//! against a real Redis.
//!
//! Each configuration has a setup preamble (HELLO 3, AUTH, SELECT, ...) after which the table must
//! behave exactly like a fresh Redis keyspace. The expected replies are the bytes Locus must send,
//! which are the bytes Redis sends unless a case says otherwise; `table_matches_redis_resp2` and
//! `_resp3` check that claim against the `redis-server` on `PATH` (skipped, loudly, without one).
//! What a case says about Redis:
//!
//! * `c(request, resp2)`, `c3(request, resp2, resp3)`: Redis sends the same bytes.
//! * `.clock(tolerance)`: the same on Redis's wall clock. Locus runs the table on a virtual clock
//!   that starts at [`T0_MS`]; for Redis, absolute times in the request and in an integer reply
//!   are moved by the difference between Redis's `TIME` and `T0_MS`, and an integer reply may be
//!   off by `tolerance` (TTL rounding, milliseconds passing while the table runs).
//! * `.locus(why)`: Locus's own behaviour (its extra policies, ...): sent to Redis too, to keep
//!   both keyspaces in step, but not compared.
//! * `.since(version, why, resp2, resp3)`: Redis sends the case's bytes from `version` on; an older
//!   peer sends `resp2`/`resp3` instead (Locus answers as Redis 7.2).
//! * `.differs(why, resp2, resp3)`: Locus should answer as Redis and does not yet (`why` names the
//!   server change needed); Redis's bytes are recorded and checked against Redis, so the record
//!   stays true, and the Locus runs keep checking what Locus sends today.

use crate::common::{Client, T0_MS, config, enc, read_reply, start};
use crate::redis_peer::RedisPeer;

/// What Redis answers to a case, compared with what Locus answers (see the module docs).
#[derive(Clone, Copy, Debug)]
enum Peer {
    /// The same bytes.
    Same,
    /// The same on Redis's clock, integers within `tolerance`.
    Clock { tolerance: i64 },
    /// Locus only: not compared.
    Locus(&'static str),
    /// The same from Redis `version` (major, minor) on; before it, `resp2`/`resp3`.
    Since {
        version: (u32, u32),
        why: &'static str,
        resp2: &'static str,
        resp3: Option<&'static str>,
    },
    /// Locus differs and should not: Redis sends `resp2`/`resp3`.
    Differs {
        why: &'static str,
        resp2: &'static str,
        resp3: Option<&'static str>,
    },
}

/// One request, Locus's reply in RESP2 and (if different) RESP3, and what Redis answers.
#[derive(Clone, Copy, Debug)]
struct Case {
    req: &'static [&'static str],
    r2: &'static str,
    r3: Option<&'static str>,
    peer: Peer,
}

/// A case with the same reply in RESP2 and RESP3, the same in Redis.
const fn c(req: &'static [&'static str], r2: &'static str) -> Case {
    Case {
        req,
        r2,
        r3: None,
        peer: Peer::Same,
    }
}

/// A case whose RESP3 reply differs from its RESP2 reply, the same in Redis.
const fn c3(req: &'static [&'static str], r2: &'static str, r3: &'static str) -> Case {
    Case {
        req,
        r2,
        r3: Some(r3),
        peer: Peer::Same,
    }
}

impl Case {
    const fn clock(self, tolerance: i64) -> Case {
        Case {
            peer: Peer::Clock { tolerance },
            ..self
        }
    }

    const fn locus(self, why: &'static str) -> Case {
        Case {
            peer: Peer::Locus(why),
            ..self
        }
    }

    const fn since(
        self,
        version: (u32, u32),
        why: &'static str,
        resp2: &'static str,
        resp3: Option<&'static str>,
    ) -> Case {
        Case {
            peer: Peer::Since {
                version,
                why,
                resp2,
                resp3,
            },
            ..self
        }
    }

    const fn differs(
        self,
        why: &'static str,
        resp2: &'static str,
        resp3: Option<&'static str>,
    ) -> Case {
        Case {
            peer: Peer::Differs { why, resp2, resp3 },
            ..self
        }
    }

    /// Locus's reply in the given protocol.
    fn expected(&self, resp3: bool) -> &'static str {
        if resp3 {
            self.r3.unwrap_or(self.r2)
        } else {
            self.r2
        }
    }
}

// Long replies of the table, named so that the cases stay one per line.

/// `CONFIG SET maxmemory-policy bogus` in Locus: Redis's list plus Locus's own policies.
const BAD_POLICY: &str = "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction, allkeys-exact-lru, allkeys-hyperbolic\r\n";

/// `COMMAND INFO get` in Redis 7.0.15, RESP2: GET's key spec (RO access; index 1; range lastkey 0, keystep 1, limit 0).
const REDIS_COMMAND_INFO_GET: &str = "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";

/// `COMMAND INFO get` in Redis 7.0.15, RESP3: tips, key specs and subcommands are sets, each key spec a map.
const REDIS_COMMAND_INFO_GET_RESP3: &str = "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@read\r\n+@string\r\n+@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n";

const CASES: &[Case] = &[
    c(&["PING"], "+PONG\r\n"),
    c(&["PING", "hi"], "$2\r\nhi\r\n"),
    c(&["ECHO", "x y"], "$3\r\nx y\r\n"),
    c(&["DBSIZE"], ":0\r\n"),
    c3(&["GET", "k"], "$-1\r\n", "_\r\n"),
    c(&["SET", "k", "v"], "+OK\r\n"),
    c(&["GET", "k"], "$1\r\nv\r\n"),
    c(&["get", "k"], "$1\r\nv\r\n"),
    c3(&["SET", "k", "w", "NX"], "$-1\r\n", "_\r\n"),
    c(&["SET", "k", "w", "XX", "GET"], "$1\r\nv\r\n"),
    c3(&["SET", "nokey", "w", "XX"], "$-1\r\n", "_\r\n"),
    c(&["SET", "k", "v", "NX", "XX"], "-ERR syntax error\r\n"),
    c(
        &["SET", "k", "v", "EX", "10", "PX", "100"],
        "-ERR syntax error\r\n",
    ),
    c(
        &["SET", "k", "v", "EX", "0"],
        "-ERR invalid expire time in 'set' command\r\n",
    ),
    c(
        &["SET", "k", "v", "EX", "-5"],
        "-ERR invalid expire time in 'set' command\r\n",
    ),
    c(
        &["SET", "k", "v", "EX", "abc"],
        "-ERR value is not an integer or out of range\r\n",
    ),
    c(
        &["SET", "k", "v", "KEEPTTL", "EX", "5"],
        "-ERR syntax error\r\n",
    ),
    c(
        &["SET", "k", "v", "EX", "9223372036854775807"],
        "-ERR invalid expire time in 'set' command\r\n",
    ),
    c(
        &["SET", "k"],
        "-ERR wrong number of arguments for 'set' command\r\n",
    ),
    c(
        &["GET"],
        "-ERR wrong number of arguments for 'get' command\r\n",
    ),
    c(
        &["GET", "a", "b"],
        "-ERR wrong number of arguments for 'get' command\r\n",
    ),
    c(
        &["NOSUCHCMD", "a", "b"],
        "-ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' 'b' \r\n",
    ),
    c(&["SETNX", "k", "x"], ":0\r\n"),
    c(&["SETNX", "n1", "x"], ":1\r\n"),
    c(&["GETSET", "n1", "y"], "$1\r\nx\r\n"),
    c(&["GETDEL", "n1"], "$1\r\ny\r\n"),
    c3(&["GETDEL", "n1"], "$-1\r\n", "_\r\n"),
    c(&["MSET", "a", "1", "b", "2"], "+OK\r\n"),
    c(
        &["MSET", "a", "1", "b"],
        "-ERR wrong number of arguments for 'mset' command\r\n",
    ),
    c3(
        &["MGET", "a", "nope", "b"],
        "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n",
        "*3\r\n$1\r\n1\r\n_\r\n$1\r\n2\r\n",
    ),
    c(&["MSETNX", "a", "9", "c", "3"], ":0\r\n"),
    c(&["MSETNX", "c", "3", "d", "4"], ":1\r\n"),
    c(&["APPEND", "c", "45"], ":3\r\n"),
    c(&["APPEND", "newc", "ab"], ":2\r\n"),
    c(&["STRLEN", "c"], ":3\r\n"),
    c(&["STRLEN", "missing"], ":0\r\n"),
    c(&["SET", "s", "Hello World"], "+OK\r\n"),
    c(&["GETRANGE", "s", "0", "4"], "$5\r\nHello\r\n"),
    c(&["GETRANGE", "s", "-5", "-1"], "$5\r\nWorld\r\n"),
    c(&["GETRANGE", "s", "5", "2"], "$0\r\n\r\n"),
    c(&["GETRANGE", "s", "0", "100"], "$11\r\nHello World\r\n"),
    c(&["GETRANGE", "s", "-1", "-5"], "$0\r\n\r\n"),
    c(&["GETRANGE", "missing", "0", "1"], "$0\r\n\r\n"),
    c(&["SETRANGE", "s", "6", "Redis"], ":11\r\n"),
    c(&["GET", "s"], "$11\r\nHello Redis\r\n"),
    c(&["SETRANGE", "pad", "3", "x"], ":4\r\n"),
    c(&["GET", "pad"], "$4\r\n\0\0\0x\r\n"),
    c(
        &["SETRANGE", "s", "-1", "x"],
        "-ERR offset is out of range\r\n",
    ),
    c(
        &["SETRANGE", "s", "536870911", "xx"],
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n",
    ),
    c(&["INCR", "cnt"], ":1\r\n"),
    c(&["INCRBY", "cnt", "10"], ":11\r\n"),
    c(&["DECR", "cnt"], ":10\r\n"),
    c(&["DECRBY", "cnt", "20"], ":-10\r\n"),
    c(
        &["INCR", "s"],
        "-ERR value is not an integer or out of range\r\n",
    ),
    c(
        &["INCRBY", "cnt", "1.5"],
        "-ERR value is not an integer or out of range\r\n",
    ),
    c(&["SET", "big", "9223372036854775807"], "+OK\r\n"),
    c(
        &["INCR", "big"],
        "-ERR increment or decrement would overflow\r\n",
    ),
    c(&["SET", "sp", " 1"], "+OK\r\n"),
    c(
        &["INCR", "sp"],
        "-ERR value is not an integer or out of range\r\n",
    ),
    c(&["INCRBYFLOAT", "f", "10.5"], "$4\r\n10.5\r\n"),
    c(&["INCRBYFLOAT", "f", "0.1"], "$4\r\n10.6\r\n"),
    c(&["INCRBYFLOAT", "f", "-10.6"], "$1\r\n0\r\n"),
    c(
        &["INCRBYFLOAT", "f", "x"],
        "-ERR value is not a valid float\r\n",
    ),
    c(
        &["INCRBYFLOAT", "f", "inf"],
        "-ERR increment would produce NaN or Infinity\r\n",
    ),
    c(&["SET", "ff", "0.2"], "+OK\r\n"),
    c(&["INCRBYFLOAT", "ff", "0.1"], "$3\r\n0.3\r\n"),
    c(
        &["INCRBYFLOAT", "ff", "1e20"],
        "$21\r\n100000000000000000000\r\n",
    ),
    c(
        &["INCRBYFLOAT", "s", "1"],
        "-ERR value is not a valid float\r\n",
    ),
    c(&["EXISTS", "a", "a", "nope"], ":2\r\n"),
    c(&["TYPE", "a"], "+string\r\n"),
    c(&["TYPE", "nope"], "+none\r\n"),
    c(&["DEL", "a", "b", "nope"], ":2\r\n"),
    c(&["UNLINK", "c"], ":1\r\n"),
    c(&["RENAME", "nope", "x"], "-ERR no such key\r\n"),
    c(&["RENAME", "d", "d2"], "+OK\r\n"),
    c(&["GET", "d2"], "$1\r\n4\r\n"),
    c(&["RENAMENX", "d2", "k"], ":0\r\n"),
    c(&["RENAMENX", "d2", "d3"], ":1\r\n"),
    c(&["FLUSHDB"], "+OK\r\n"),
    c(&["DBSIZE"], ":0\r\n"),
    c3(&["RANDOMKEY"], "$-1\r\n", "_\r\n"),
    c(&["KEYS", "*"], "*0\r\n"),
    c(&["SET", "h1", "x"], "+OK\r\n"),
    c(&["KEYS", "h?"], "*1\r\n$2\r\nh1\r\n"),
    c(&["KEYS", "h[^1]"], "*0\r\n"),
    c(&["KEYS", "h\\1"], "*1\r\n$2\r\nh1\r\n"),
    c(&["RANDOMKEY"], "$2\r\nh1\r\n"),
    c(
        &["SCAN", "0", "COUNT", "100"],
        "*2\r\n$1\r\n0\r\n*1\r\n$2\r\nh1\r\n",
    ),
    c(&["SCAN", "0", "MATCH", "z*"], "*2\r\n$1\r\n0\r\n*0\r\n"),
    c(&["SCAN", "0", "TYPE", "list"], "*2\r\n$1\r\n0\r\n*0\r\n"),
    c(&["SCAN", "0", "COUNT", "0"], "-ERR syntax error\r\n"),
    c(&["SCAN", "x"], "-ERR invalid cursor\r\n"),
    c(&["TTL", "h1"], ":-1\r\n"),
    c(&["TTL", "nope"], ":-2\r\n"),
    c(&["PTTL", "nope"], ":-2\r\n"),
    c(&["EXPIRETIME", "h1"], ":-1\r\n"),
    c(&["EXPIRE", "nope", "10"], ":0\r\n"),
    c(&["EXPIRE", "h1", "100", "XX"], ":0\r\n"),
    c(&["EXPIRE", "h1", "100", "NX"], ":1\r\n"),
    c(&["TTL", "h1"], ":100\r\n").clock(1),
    c(&["PTTL", "h1"], ":100000\r\n").clock(100),
    c(&["EXPIRETIME", "h1"], ":1893456100\r\n").clock(1),
    c(&["PEXPIRETIME", "h1"], ":1893456100000\r\n").clock(100),
    c(&["EXPIRE", "h1", "50", "NX"], ":0\r\n"),
    c(&["EXPIRE", "h1", "50", "GT"], ":0\r\n"),
    c(&["EXPIRE", "h1", "200", "GT"], ":1\r\n"),
    c(&["EXPIRE", "h1", "300", "LT"], ":0\r\n"),
    c(&["PEXPIRE", "h1", "5000", "LT"], ":1\r\n"),
    c(&["TTL", "h1"], ":5\r\n").clock(1),
    c(
        &["EXPIRE", "h1", "10", "NX", "XX"],
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n",
    ),
    c(
        &["EXPIRE", "h1", "10", "GT", "LT"],
        "-ERR GT and LT options at the same time are not compatible\r\n",
    ),
    c(
        &["EXPIRE", "h1", "10", "FOO"],
        "-ERR Unsupported option FOO\r\n",
    ),
    c(
        &["EXPIRE", "h1", "9223372036854775807"],
        "-ERR invalid expire time in 'expire' command\r\n",
    ),
    c(&["EXPIREAT", "h1", "1893457000"], ":1\r\n").clock(0),
    c(&["TTL", "h1"], ":1000\r\n").clock(1),
    c(&["PERSIST", "h1"], ":1\r\n"),
    c(&["PERSIST", "h1"], ":0\r\n"),
    c(&["SET", "e", "v", "PX", "1500"], "+OK\r\n"),
    c(&["PTTL", "e"], ":1500\r\n").clock(100),
    c(&["SET", "e", "v2", "KEEPTTL"], "+OK\r\n"),
    c(&["PTTL", "e"], ":1500\r\n").clock(100),
    c(&["SET", "e", "v3"], "+OK\r\n"),
    c(&["PTTL", "e"], ":-1\r\n"),
    c(&["SETEX", "e", "20", "v"], "+OK\r\n"),
    c(&["TTL", "e"], ":20\r\n").clock(1),
    c(
        &["SETEX", "e", "0", "v"],
        "-ERR invalid expire time in 'setex' command\r\n",
    ),
    c(&["PSETEX", "e", "2500", "v"], "+OK\r\n"),
    c(&["PTTL", "e"], ":2500\r\n").clock(100),
    c(&["GETEX", "e", "PERSIST"], "$1\r\nv\r\n"),
    c(&["TTL", "e"], ":-1\r\n"),
    c(&["GETEX", "e", "EX", "30"], "$1\r\nv\r\n"),
    c(&["TTL", "e"], ":30\r\n").clock(1),
    c(
        &["GETEX", "e", "EX", "30", "PX", "5"],
        "-ERR syntax error\r\n",
    ),
    c(&["EXPIRE", "e", "-1"], ":1\r\n"),
    c(&["EXISTS", "e"], ":0\r\n"),
    c(&["SET", "e", "v", "EXAT", "1893456010"], "+OK\r\n").clock(0),
    c(&["TTL", "e"], ":10\r\n").clock(1),
    c(&["SET", "e", "v", "PXAT", "1893456000500"], "+OK\r\n").clock(0),
    c(&["PTTL", "e"], ":500\r\n").clock(100),
    c(
        &["SELECT", "abc"],
        "-ERR value is not an integer or out of range\r\n",
    ),
    c(&["SELECT", "99"], "-ERR DB index is out of range\r\n"),
    c(&["OBJECT", "ENCODING", "h1"], "$6\r\nembstr\r\n"),
    c(&["SET", "num", "-12345"], "+OK\r\n"),
    c(&["OBJECT", "ENCODING", "num"], "$3\r\nint\r\n"),
    c(
        &[
            "SET",
            "long",
            "0123456789012345678901234567890123456789012345",
        ],
        "+OK\r\n",
    ),
    c(&["OBJECT", "ENCODING", "long"], "$3\r\nraw\r\n"),
    c3(&["OBJECT", "ENCODING", "nope"], "$-1\r\n", "_\r\n"),
    c(
        &["OBJECT", "FREQ", "h1"],
        "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n",
    ),
    c(&["OBJECT", "IDLETIME", "h1"], ":0\r\n").clock(1),
    c(
        &["OBJECT", "FOO", "h1"],
        "-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n",
    ),
    c3(&["MEMORY", "USAGE", "nope"], "$-1\r\n", "_\r\n"),
    c(
        &["CLIENT", "SETNAME", "my conn"],
        "-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
    ),
    c(&["CLIENT", "SETNAME", "tester"], "+OK\r\n"),
    c(&["CLIENT", "GETNAME"], "$6\r\ntester\r\n"),
    c(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"], "+OK\r\n").since(
        (7, 2),
        "CLIENT SETINFO is new in Redis 7.2",
        "-ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.\r\n",
        None,
    ),
    c(
        &["CLIENT", "BOGUS"],
        "-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP.\r\n",
    ),
    c3(
        &["CONFIG", "GET", "maxmemory-samples"],
        "*2\r\n$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n",
        "%1\r\n$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n",
    ),
    c(
        &["CONFIG", "SET", "nosuch", "1"],
        "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n",
    ),
    c(&["CONFIG", "SET", "maxmemory-policy", "bogus"], BAD_POLICY)
        .locus("the list also names allkeys-exact-lru and allkeys-hyperbolic"),
    c3(
        &["COMMAND", "INFO", "get"],
        REDIS_COMMAND_INFO_GET,
        REDIS_COMMAND_INFO_GET_RESP3,
    ),
    c3(
        &["COMMAND", "INFO", "nosuch"],
        "*1\r\n*-1\r\n",
        "*1\r\n_\r\n",
    )
    .differs(
        "an unknown command is a null bulk in RESP2, not a null array (admin.rs)",
        "*1\r\n$-1\r\n",
        Some("*1\r\n_\r\n"),
    ),
    c(
        &["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"],
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n",
    ),
    c(&["APPEND", "ap", "12"], ":2\r\n"),
    c(&["OBJECT", "ENCODING", "ap"], "$3\r\nint\r\n"),
    c(&["APPEND", "ap", "3"], ":3\r\n"),
    c(&["OBJECT", "ENCODING", "ap"], "$3\r\nraw\r\n"),
    c(&["SETNX", "ap", "1"], ":0\r\n"),
    c(&["OBJECT", "ENCODING", "ap"], "$3\r\nraw\r\n"),
    c(&["RENAME", "ap", "ap2"], "+OK\r\n"),
    c(&["OBJECT", "ENCODING", "ap2"], "$3\r\nraw\r\n"),
    c(&["SET", "ap2", "7"], "+OK\r\n"),
    c(&["OBJECT", "ENCODING", "ap2"], "$3\r\nint\r\n"),
    c(&["INCRBYFLOAT", "ap2", "3"], "$2\r\n10\r\n"),
    c(&["OBJECT", "ENCODING", "ap2"], "$6\r\nembstr\r\n"),
    c(&["MULTI"], "+OK\r\n"),
    c(&["SET", "tx", "1"], "+QUEUED\r\n"),
    c(&["INCR", "tx"], "+QUEUED\r\n"),
    c(&["GET", "nope"], "+QUEUED\r\n"),
    c3(
        &["EXEC"],
        "*3\r\n+OK\r\n:2\r\n$-1\r\n",
        "*3\r\n+OK\r\n:2\r\n_\r\n",
    ),
    c(&["MULTI"], "+OK\r\n"),
    c(&["MULTI"], "-ERR MULTI calls can not be nested\r\n"),
    c(&["INCR", "tx"], "+QUEUED\r\n"),
    c(
        &["GET"],
        "-ERR wrong number of arguments for 'get' command\r\n",
    ),
    c(
        &["EXEC"],
        "-EXECABORT Transaction discarded because of previous errors.\r\n",
    ),
    c(&["GET", "tx"], "$1\r\n2\r\n"),
    c(&["MULTI"], "+OK\r\n"),
    c(&["INCR", "tx"], "+QUEUED\r\n"),
    c(&["DISCARD"], "+OK\r\n"),
    c(&["EXEC"], "-ERR EXEC without MULTI\r\n"),
    c(&["DISCARD"], "-ERR DISCARD without MULTI\r\n"),
    c(&["MULTI"], "+OK\r\n"),
    c(&["INCR", "h1"], "+QUEUED\r\n"),
    c(&["INCR", "tx"], "+QUEUED\r\n"),
    c(
        &["EXEC"],
        "*2\r\n-ERR value is not an integer or out of range\r\n:3\r\n",
    ),
    c(&["TOUCH", "tx", "nope", "tx"], ":2\r\n"),
    c3(&["GETEX", "nope", "PX", "0"], "$-1\r\n", "_\r\n"),
    c(
        &["GETEX", "tx", "PX", "0"],
        "-ERR invalid expire time in 'getex' command\r\n",
    ),
    c(&["FLUSHALL"], "+OK\r\n"),
    c(&["FLUSHALL", "ASYNC"], "+OK\r\n"),
    c(&["FLUSHALL", "x"], "-ERR syntax error\r\n"),
    c(&["DBSIZE"], ":0\r\n"),
    c(&["PING"], "+PONG\r\n"),
];

/// Runs the whole table on one connection.
fn run_table(c: &mut Client, resp3: bool) {
    for case in CASES {
        c.check(&enc(case.req), case.expected(resp3).as_bytes());
    }
}

fn hello3_reply_prefix() -> &'static str {
    "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.0\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:"
}

#[test]
fn table_resp2_single_tenant() {
    let srv = start(config(""));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    run_table(&mut c, false);
}

/// Switches `c` to RESP3 and checks the HELLO map byte for byte (the id varies).
fn hello3(c: &mut Client) {
    c.send(&enc(&["HELLO", "3"]));
    let prefix = hello3_reply_prefix();
    let got = c.read_n(prefix.len());
    assert_eq!(String::from_utf8_lossy(&got), prefix);
    let rest = "\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
    let mut id = Vec::new();
    loop {
        let b = c.read_n(1);
        assert!(!b.is_empty(), "HELLO reply ended early");
        if b == b"\r" {
            break;
        }
        id.extend(b);
    }
    assert!(std::str::from_utf8(&id).unwrap().parse::<u64>().is_ok());
    let got = c.read_n(rest.len() - 1);
    assert_eq!(String::from_utf8_lossy(&got), &rest[1..]);
}

#[test]
fn table_resp3_single_tenant() {
    let srv = start(config(""));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    hello3(&mut c);
    run_table(&mut c, true);
}

#[test]
fn table_resp3_prefix_and_db_tenancy() {
    let srv = start(config(
        "[tenancy]\nmode = \"prefix\"\ndefault_tenant = \"rest\"\n[[tenant]]\nname = \"u\"\nprefix = \"user:\"\n[[tenant]]\nname = \"rest\"\nprefix = \"r:\"\n",
    ));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    hello3(&mut c);
    run_table(&mut c, true);
    let srv = start(config(
        "[tenancy]\nmode = \"db\"\n[[tenant]]\nname = \"a\"\ndb = 0\n[[tenant]]\nname = \"b\"\ndb = 5\n",
    ));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    hello3(&mut c);
    c.cmd(&["SELECT", "5"], "+OK\r\n");
    run_table(&mut c, true);
}

const TENANTS_PORT: &str = r#"
[tenancy]
mode = "port"
[[tenant]]
name = "a"
port = 0
[[tenant]]
name = "b"
port = 0
"#;

#[test]
fn table_port_tenancy() {
    let srv = start(config(TENANTS_PORT));
    let addr = srv.handle.addr_of(Some("b")).expect("tenant b listener");
    let mut c = Client::connect(addr);
    run_table(&mut c, false);
}

#[test]
fn table_user_tenancy() {
    let srv = start(config(
        r#"
        [tenancy]
        mode = "user"
        [[tenant]]
        name = "a"
        user = "alice"
        password = "pa"
        [[tenant]]
        name = "b"
        user = "bob"
        password = "pb"
        "#,
    ));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    c.cmd(&["GET", "k"], "-NOAUTH Authentication required.\r\n");
    c.cmd(
        &["AUTH", "bob", "wrong"],
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    c.cmd(&["AUTH", "bob", "pb"], "+OK\r\n");
    run_table(&mut c, false);
}

#[test]
fn table_db_tenancy() {
    let srv = start(config(
        r#"
        [tenancy]
        mode = "db"
        [[tenant]]
        name = "zero"
        db = 0
        [[tenant]]
        name = "one"
        db = 1
        "#,
    ));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    c.cmd(&["SELECT", "1"], "+OK\r\n");
    run_table(&mut c, false);
}

#[test]
fn table_prefix_tenancy_default_tenant() {
    let srv = start(config(
        r#"
        [tenancy]
        mode = "prefix"
        default_tenant = "rest"
        [[tenant]]
        name = "users"
        prefix = "user:"
        [[tenant]]
        name = "rest"
        prefix = "rest:"
        "#,
    ));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    run_table(&mut c, false);
}

// ------------------------------------------------------------------------------ against Redis

/// Integer reply `:N\r\n` (RESP2 and RESP3 alike), if `reply` is one.
fn integer_reply(reply: &str) -> Option<i64> {
    reply.strip_prefix(':')?.strip_suffix("\r\n")?.parse().ok()
}

/// Moves an absolute time on the virtual clock (seconds or milliseconds from [`T0_MS`] on, as the
/// table writes them) by `shift_ms`; any other word is returned as it is.
fn shift_time(word: &str, shift_ms: i64) -> String {
    const T0: i64 = T0_MS as i64;
    const SPAN_S: i64 = 100_000_000;
    match word.parse::<i64>() {
        Ok(v) if (T0 / 1000..T0 / 1000 + SPAN_S).contains(&v) => {
            (v + shift_ms.div_euclid(1000)).to_string()
        }
        Ok(v) if (T0..T0 + SPAN_S * 1000).contains(&v) => (v + shift_ms).to_string(),
        _ => word.to_string(),
    }
}

/// The peer's `(major, minor)` version, from `INFO server`.
fn peer_version(c: &mut Client) -> (u32, u32) {
    c.send(&enc(&["INFO", "server"]));
    let info = String::from_utf8_lossy(&read_reply(c)).into_owned();
    let v = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or_else(|| panic!("no redis_version in INFO server: {info}"));
    let mut parts = v.trim().split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The peer's clock in unix milliseconds, from `TIME`.
fn peer_time_ms(c: &mut Client) -> i64 {
    c.send(&enc(&["TIME"]));
    let reply = String::from_utf8_lossy(&read_reply(c)).into_owned();
    let nums: Vec<i64> = reply
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with(['*', '$']))
        .map(|l| l.parse().unwrap_or_else(|_| panic!("TIME reply {reply:?}")))
        .collect();
    assert_eq!(nums.len(), 2, "TIME reply {reply:?}");
    nums[0] * 1000 + nums[1] / 1000
}

/// What Redis should answer to `case` (None: not compared), and whether integers may be off.
fn redis_expects(
    case: &Case,
    resp3: bool,
    version: (u32, u32),
    shift_ms: i64,
) -> Option<(String, i64)> {
    let pick =
        |r2: &'static str, r3: Option<&'static str>| if resp3 { r3.unwrap_or(r2) } else { r2 };
    match case.peer {
        Peer::Same => Some((case.expected(resp3).to_string(), 0)),
        Peer::Clock { tolerance } => {
            let locus = case.expected(resp3);
            let shifted = match integer_reply(locus) {
                Some(n) => format!(":{}\r\n", shift_time(&n.to_string(), shift_ms)),
                None => locus.to_string(),
            };
            Some((shifted, tolerance))
        }
        Peer::Locus(_) => None,
        Peer::Since {
            version: since,
            resp2,
            resp3: r3,
            ..
        } => Some((
            if version >= since {
                case.expected(resp3)
            } else {
                pick(resp2, r3)
            }
            .to_string(),
            0,
        )),
        Peer::Differs {
            resp2, resp3: r3, ..
        } => Some((pick(resp2, r3).to_string(), 0)),
    }
}

/// Runs the table against a fresh `redis-server` and compares every reply with what the case
/// says Redis sends; prints every case that is not compared or known to differ, and fails on
/// any other difference.
fn table_matches_redis(resp3: bool) {
    let what = format!("table.rs against Redis (RESP{})", if resp3 { 3 } else { 2 });
    let Some(redis) = RedisPeer::start(&what) else {
        return;
    };
    let mut c = Client::connect(redis.addr);
    let version = peer_version(&mut c);
    if resp3 {
        c.send(&enc(&["HELLO", "3"]));
        let _ = read_reply(&mut c);
    }
    c.cmd(&["FLUSHALL"], "+OK\r\n");
    let mut shift_ms = peer_time_ms(&mut c) - T0_MS as i64;
    let mut notes = Vec::new();
    let mut failures = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        if let Peer::Clock { .. } = case.peer {
            // Read Redis's clock right before, so only the milliseconds since the case that
            // set the TTL separate its reply from the virtual clock's.
            shift_ms = peer_time_ms(&mut c) - T0_MS as i64;
        }
        let words: Vec<String> = case.req.iter().map(|w| shift_time(w, shift_ms)).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        c.send(&enc(&words));
        let got = String::from_utf8_lossy(&read_reply(&mut c)).into_owned();
        let line = |label: &str| {
            format!(
                "  #{i} {label} {:?}\n      locus {:?}\n      redis {got:?}",
                case.req,
                case.expected(resp3)
            )
        };
        match case.peer {
            Peer::Locus(why) => notes.push(line(&format!("not compared (Locus only: {why})"))),
            Peer::Differs { why, .. } => notes.push(line(&format!("KNOWN DIFFERENCE ({why})"))),
            Peer::Since {
                version: since,
                why,
                ..
            } if version < since => notes.push(line(&format!("older Redis ({why})"))),
            _ => {}
        }
        let Some((want, tolerance)) = redis_expects(case, resp3, version, shift_ms) else {
            continue;
        };
        let same = match (integer_reply(&want), integer_reply(&got)) {
            (Some(w), Some(g)) if tolerance > 0 => (w - g).abs() <= tolerance,
            _ => want == got,
        };
        if !same {
            failures.push(format!(
                "  #{i} {:?} ({:?})\n      expected {want:?}\n      redis    {got:?}",
                case.req, case.peer
            ));
        }
    }
    eprintln!(
        "{what}: Redis {}.{}, {} cases, {} answered as Locus does; the others:\n{}",
        version.0,
        version.1,
        CASES.len(),
        CASES.len() - notes.len(),
        notes.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{what}: {} of {} cases differ from what the table says Redis sends:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn table_matches_redis_resp2() {
    table_matches_redis(false);
}

#[test]
fn table_matches_redis_resp3() {
    table_matches_redis(true);
}
