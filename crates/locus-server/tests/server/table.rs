//! One table of (request, expected reply) pairs, run against several configurations.
//!
//! Each configuration has a setup preamble (HELLO 3, AUTH, SELECT, ...) after which the table must
//! behave exactly like a fresh Redis keyspace. Expected replies are the bytes Redis 7.2 sends.

use crate::common::{Client, config, enc, start};

/// (request words, RESP2 reply, RESP3 reply if different)
type Case = (&'static [&'static str], &'static str, Option<&'static str>);

const CASES: &[Case] = &[
    (&["PING"], "+PONG\r\n", None),
    (&["PING", "hi"], "$2\r\nhi\r\n", None),
    (&["ECHO", "x y"], "$3\r\nx y\r\n", None),
    (&["DBSIZE"], ":0\r\n", None),
    (&["GET", "k"], "$-1\r\n", Some("_\r\n")),
    (&["SET", "k", "v"], "+OK\r\n", None),
    (&["GET", "k"], "$1\r\nv\r\n", None),
    (&["get", "k"], "$1\r\nv\r\n", None),
    (&["SET", "k", "w", "NX"], "$-1\r\n", Some("_\r\n")),
    (&["SET", "k", "w", "XX", "GET"], "$1\r\nv\r\n", None),
    (&["SET", "nokey", "w", "XX"], "$-1\r\n", Some("_\r\n")),
    (
        &["SET", "k", "v", "NX", "XX"],
        "-ERR syntax error\r\n",
        None,
    ),
    (
        &["SET", "k", "v", "EX", "10", "PX", "100"],
        "-ERR syntax error\r\n",
        None,
    ),
    (
        &["SET", "k", "v", "EX", "0"],
        "-ERR invalid expire time in 'set' command\r\n",
        None,
    ),
    (
        &["SET", "k", "v", "EX", "-5"],
        "-ERR invalid expire time in 'set' command\r\n",
        None,
    ),
    (
        &["SET", "k", "v", "EX", "abc"],
        "-ERR value is not an integer or out of range\r\n",
        None,
    ),
    (
        &["SET", "k", "v", "KEEPTTL", "EX", "5"],
        "-ERR syntax error\r\n",
        None,
    ),
    (
        &["SET", "k", "v", "EX", "9223372036854775807"],
        "-ERR invalid expire time in 'set' command\r\n",
        None,
    ),
    (
        &["SET", "k"],
        "-ERR wrong number of arguments for 'set' command\r\n",
        None,
    ),
    (
        &["GET"],
        "-ERR wrong number of arguments for 'get' command\r\n",
        None,
    ),
    (
        &["GET", "a", "b"],
        "-ERR wrong number of arguments for 'get' command\r\n",
        None,
    ),
    (
        &["NOSUCHCMD", "a", "b"],
        "-ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' 'b' \r\n",
        None,
    ),
    (&["SETNX", "k", "x"], ":0\r\n", None),
    (&["SETNX", "n1", "x"], ":1\r\n", None),
    (&["GETSET", "n1", "y"], "$1\r\nx\r\n", None),
    (&["GETDEL", "n1"], "$1\r\ny\r\n", None),
    (&["GETDEL", "n1"], "$-1\r\n", Some("_\r\n")),
    (&["MSET", "a", "1", "b", "2"], "+OK\r\n", None),
    (
        &["MSET", "a", "1", "b"],
        "-ERR wrong number of arguments for 'mset' command\r\n",
        None,
    ),
    (
        &["MGET", "a", "nope", "b"],
        "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n",
        Some("*3\r\n$1\r\n1\r\n_\r\n$1\r\n2\r\n"),
    ),
    (&["MSETNX", "a", "9", "c", "3"], ":0\r\n", None),
    (&["MSETNX", "c", "3", "d", "4"], ":1\r\n", None),
    (&["APPEND", "c", "45"], ":3\r\n", None),
    (&["APPEND", "newc", "ab"], ":2\r\n", None),
    (&["STRLEN", "c"], ":3\r\n", None),
    (&["STRLEN", "missing"], ":0\r\n", None),
    (&["SET", "s", "Hello World"], "+OK\r\n", None),
    (&["GETRANGE", "s", "0", "4"], "$5\r\nHello\r\n", None),
    (&["GETRANGE", "s", "-5", "-1"], "$5\r\nWorld\r\n", None),
    (&["GETRANGE", "s", "5", "2"], "$0\r\n\r\n", None),
    (
        &["GETRANGE", "s", "0", "100"],
        "$11\r\nHello World\r\n",
        None,
    ),
    (&["GETRANGE", "s", "-1", "-5"], "$0\r\n\r\n", None),
    (&["GETRANGE", "missing", "0", "1"], "$0\r\n\r\n", None),
    (&["SETRANGE", "s", "6", "Redis"], ":11\r\n", None),
    (&["GET", "s"], "$11\r\nHello Redis\r\n", None),
    (&["SETRANGE", "pad", "3", "x"], ":4\r\n", None),
    (&["GET", "pad"], "$4\r\n\0\0\0x\r\n", None),
    (
        &["SETRANGE", "s", "-1", "x"],
        "-ERR offset is out of range\r\n",
        None,
    ),
    (
        &["SETRANGE", "s", "536870911", "xx"],
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n",
        None,
    ),
    (&["INCR", "cnt"], ":1\r\n", None),
    (&["INCRBY", "cnt", "10"], ":11\r\n", None),
    (&["DECR", "cnt"], ":10\r\n", None),
    (&["DECRBY", "cnt", "20"], ":-10\r\n", None),
    (
        &["INCR", "s"],
        "-ERR value is not an integer or out of range\r\n",
        None,
    ),
    (
        &["INCRBY", "cnt", "1.5"],
        "-ERR value is not an integer or out of range\r\n",
        None,
    ),
    (&["SET", "big", "9223372036854775807"], "+OK\r\n", None),
    (
        &["INCR", "big"],
        "-ERR increment or decrement would overflow\r\n",
        None,
    ),
    (&["SET", "sp", " 1"], "+OK\r\n", None),
    (
        &["INCR", "sp"],
        "-ERR value is not an integer or out of range\r\n",
        None,
    ),
    (&["INCRBYFLOAT", "f", "10.5"], "$4\r\n10.5\r\n", None),
    (&["INCRBYFLOAT", "f", "0.1"], "$4\r\n10.6\r\n", None),
    (&["INCRBYFLOAT", "f", "-10.6"], "$1\r\n0\r\n", None),
    (
        &["INCRBYFLOAT", "f", "x"],
        "-ERR value is not a valid float\r\n",
        None,
    ),
    (
        &["INCRBYFLOAT", "f", "inf"],
        "-ERR increment would produce NaN or Infinity\r\n",
        None,
    ),
    (&["SET", "ff", "0.2"], "+OK\r\n", None),
    (&["INCRBYFLOAT", "ff", "0.1"], "$3\r\n0.3\r\n", None),
    (
        &["INCRBYFLOAT", "ff", "1e20"],
        "$21\r\n100000000000000000000\r\n",
        None,
    ),
    (
        &["INCRBYFLOAT", "s", "1"],
        "-ERR value is not a valid float\r\n",
        None,
    ),
    (&["EXISTS", "a", "a", "nope"], ":2\r\n", None),
    (&["TYPE", "a"], "+string\r\n", None),
    (&["TYPE", "nope"], "+none\r\n", None),
    (&["DEL", "a", "b", "nope"], ":2\r\n", None),
    (&["UNLINK", "c"], ":1\r\n", None),
    (&["RENAME", "nope", "x"], "-ERR no such key\r\n", None),
    (&["RENAME", "d", "d2"], "+OK\r\n", None),
    (&["GET", "d2"], "$1\r\n4\r\n", None),
    (&["RENAMENX", "d2", "k"], ":0\r\n", None),
    (&["RENAMENX", "d2", "d3"], ":1\r\n", None),
    (&["FLUSHDB"], "+OK\r\n", None),
    (&["DBSIZE"], ":0\r\n", None),
    (&["RANDOMKEY"], "$-1\r\n", Some("_\r\n")),
    (&["KEYS", "*"], "*0\r\n", None),
    (&["SET", "h1", "x"], "+OK\r\n", None),
    (&["KEYS", "h?"], "*1\r\n$2\r\nh1\r\n", None),
    (&["KEYS", "h[^1]"], "*0\r\n", None),
    (&["KEYS", "h\\1"], "*1\r\n$2\r\nh1\r\n", None),
    (&["RANDOMKEY"], "$2\r\nh1\r\n", None),
    (
        &["SCAN", "0", "COUNT", "100"],
        "*2\r\n$1\r\n0\r\n*1\r\n$2\r\nh1\r\n",
        None,
    ),
    (
        &["SCAN", "0", "MATCH", "z*"],
        "*2\r\n$1\r\n0\r\n*0\r\n",
        None,
    ),
    (
        &["SCAN", "0", "TYPE", "list"],
        "*2\r\n$1\r\n0\r\n*0\r\n",
        None,
    ),
    (&["SCAN", "0", "COUNT", "0"], "-ERR syntax error\r\n", None),
    (&["SCAN", "x"], "-ERR invalid cursor\r\n", None),
    (&["TTL", "h1"], ":-1\r\n", None),
    (&["TTL", "nope"], ":-2\r\n", None),
    (&["PTTL", "nope"], ":-2\r\n", None),
    (&["EXPIRETIME", "h1"], ":-1\r\n", None),
    (&["EXPIRE", "nope", "10"], ":0\r\n", None),
    (&["EXPIRE", "h1", "100", "XX"], ":0\r\n", None),
    (&["EXPIRE", "h1", "100", "NX"], ":1\r\n", None),
    (&["TTL", "h1"], ":100\r\n", None),
    (&["PTTL", "h1"], ":100000\r\n", None),
    (&["EXPIRETIME", "h1"], ":1893456100\r\n", None),
    (&["PEXPIRETIME", "h1"], ":1893456100000\r\n", None),
    (&["EXPIRE", "h1", "50", "NX"], ":0\r\n", None),
    (&["EXPIRE", "h1", "50", "GT"], ":0\r\n", None),
    (&["EXPIRE", "h1", "200", "GT"], ":1\r\n", None),
    (&["EXPIRE", "h1", "300", "LT"], ":0\r\n", None),
    (&["PEXPIRE", "h1", "5000", "LT"], ":1\r\n", None),
    (&["TTL", "h1"], ":5\r\n", None),
    (
        &["EXPIRE", "h1", "10", "NX", "XX"],
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n",
        None,
    ),
    (
        &["EXPIRE", "h1", "10", "GT", "LT"],
        "-ERR GT and LT options at the same time are not compatible\r\n",
        None,
    ),
    (
        &["EXPIRE", "h1", "10", "FOO"],
        "-ERR Unsupported option FOO\r\n",
        None,
    ),
    (
        &["EXPIRE", "h1", "9223372036854775807"],
        "-ERR invalid expire time in 'expire' command\r\n",
        None,
    ),
    (&["EXPIREAT", "h1", "1893457000"], ":1\r\n", None),
    (&["TTL", "h1"], ":1000\r\n", None),
    (&["PERSIST", "h1"], ":1\r\n", None),
    (&["PERSIST", "h1"], ":0\r\n", None),
    (&["SET", "e", "v", "PX", "1500"], "+OK\r\n", None),
    (&["PTTL", "e"], ":1500\r\n", None),
    (&["SET", "e", "v2", "KEEPTTL"], "+OK\r\n", None),
    (&["PTTL", "e"], ":1500\r\n", None),
    (&["SET", "e", "v3"], "+OK\r\n", None),
    (&["PTTL", "e"], ":-1\r\n", None),
    (&["SETEX", "e", "20", "v"], "+OK\r\n", None),
    (&["TTL", "e"], ":20\r\n", None),
    (
        &["SETEX", "e", "0", "v"],
        "-ERR invalid expire time in 'setex' command\r\n",
        None,
    ),
    (&["PSETEX", "e", "2500", "v"], "+OK\r\n", None),
    (&["PTTL", "e"], ":2500\r\n", None),
    (&["GETEX", "e", "PERSIST"], "$1\r\nv\r\n", None),
    (&["TTL", "e"], ":-1\r\n", None),
    (&["GETEX", "e", "EX", "30"], "$1\r\nv\r\n", None),
    (&["TTL", "e"], ":30\r\n", None),
    (
        &["GETEX", "e", "EX", "30", "PX", "5"],
        "-ERR syntax error\r\n",
        None,
    ),
    (&["EXPIRE", "e", "-1"], ":1\r\n", None),
    (&["EXISTS", "e"], ":0\r\n", None),
    (&["SET", "e", "v", "EXAT", "1893456010"], "+OK\r\n", None),
    (&["TTL", "e"], ":10\r\n", None),
    (&["SET", "e", "v", "PXAT", "1893456000500"], "+OK\r\n", None),
    (&["PTTL", "e"], ":500\r\n", None),
    (
        &["SELECT", "abc"],
        "-ERR value is not an integer or out of range\r\n",
        None,
    ),
    (&["SELECT", "99"], "-ERR DB index is out of range\r\n", None),
    (&["OBJECT", "ENCODING", "h1"], "$6\r\nembstr\r\n", None),
    (&["SET", "num", "-12345"], "+OK\r\n", None),
    (&["OBJECT", "ENCODING", "num"], "$3\r\nint\r\n", None),
    (
        &[
            "SET",
            "long",
            "0123456789012345678901234567890123456789012345",
        ],
        "+OK\r\n",
        None,
    ),
    (&["OBJECT", "ENCODING", "long"], "$3\r\nraw\r\n", None),
    (&["OBJECT", "ENCODING", "nope"], "$-1\r\n", Some("_\r\n")),
    (
        &["OBJECT", "FREQ", "h1"],
        "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n",
        None,
    ),
    (&["OBJECT", "IDLETIME", "h1"], ":0\r\n", None),
    (
        &["OBJECT", "FOO", "h1"],
        "-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n",
        None,
    ),
    (&["MEMORY", "USAGE", "nope"], "$-1\r\n", Some("_\r\n")),
    (
        &["CLIENT", "SETNAME", "my conn"],
        "-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
        None,
    ),
    (&["CLIENT", "SETNAME", "tester"], "+OK\r\n", None),
    (&["CLIENT", "GETNAME"], "$6\r\ntester\r\n", None),
    (
        &["CLIENT", "SETINFO", "LIB-NAME", "redis-py"],
        "+OK\r\n",
        None,
    ),
    (
        &["CLIENT", "BOGUS"],
        "-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP.\r\n",
        None,
    ),
    (
        &["CONFIG", "GET", "maxmemory-samples"],
        "*2\r\n$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n",
        Some("%1\r\n$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n"),
    ),
    (
        &["CONFIG", "SET", "nosuch", "1"],
        "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n",
        None,
    ),
    (
        &["CONFIG", "SET", "maxmemory-policy", "bogus"],
        "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction, allkeys-exact-lru, allkeys-hyperbolic\r\n",
        None,
    ),
    (
        &["COMMAND", "INFO", "get"],
        "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*0\r\n*0\r\n",
        Some(
            "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*0\r\n*0\r\n",
        ),
    ),
    (
        &["COMMAND", "INFO", "nosuch"],
        "*1\r\n*-1\r\n",
        Some("*1\r\n_\r\n"),
    ),
    (
        &["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"],
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n",
        None,
    ),
    (&["APPEND", "ap", "12"], ":2\r\n", None),
    (&["OBJECT", "ENCODING", "ap"], "$3\r\nint\r\n", None),
    (&["APPEND", "ap", "3"], ":3\r\n", None),
    (&["OBJECT", "ENCODING", "ap"], "$3\r\nraw\r\n", None),
    (&["SETNX", "ap", "1"], ":0\r\n", None),
    (&["OBJECT", "ENCODING", "ap"], "$3\r\nraw\r\n", None),
    (&["RENAME", "ap", "ap2"], "+OK\r\n", None),
    (&["OBJECT", "ENCODING", "ap2"], "$3\r\nraw\r\n", None),
    (&["SET", "ap2", "7"], "+OK\r\n", None),
    (&["OBJECT", "ENCODING", "ap2"], "$3\r\nint\r\n", None),
    (&["INCRBYFLOAT", "ap2", "3"], "$2\r\n10\r\n", None),
    (&["OBJECT", "ENCODING", "ap2"], "$6\r\nembstr\r\n", None),
    (&["MULTI"], "+OK\r\n", None),
    (&["SET", "tx", "1"], "+QUEUED\r\n", None),
    (&["INCR", "tx"], "+QUEUED\r\n", None),
    (&["GET", "nope"], "+QUEUED\r\n", None),
    (
        &["EXEC"],
        "*3\r\n+OK\r\n:2\r\n$-1\r\n",
        Some("*3\r\n+OK\r\n:2\r\n_\r\n"),
    ),
    (&["MULTI"], "+OK\r\n", None),
    (&["MULTI"], "-ERR MULTI calls can not be nested\r\n", None),
    (&["INCR", "tx"], "+QUEUED\r\n", None),
    (
        &["GET"],
        "-ERR wrong number of arguments for 'get' command\r\n",
        None,
    ),
    (
        &["EXEC"],
        "-EXECABORT Transaction discarded because of previous errors.\r\n",
        None,
    ),
    (&["GET", "tx"], "$1\r\n2\r\n", None),
    (&["MULTI"], "+OK\r\n", None),
    (&["INCR", "tx"], "+QUEUED\r\n", None),
    (&["DISCARD"], "+OK\r\n", None),
    (&["EXEC"], "-ERR EXEC without MULTI\r\n", None),
    (&["DISCARD"], "-ERR DISCARD without MULTI\r\n", None),
    (&["MULTI"], "+OK\r\n", None),
    (&["INCR", "h1"], "+QUEUED\r\n", None),
    (&["INCR", "tx"], "+QUEUED\r\n", None),
    (
        &["EXEC"],
        "*2\r\n-ERR value is not an integer or out of range\r\n:3\r\n",
        None,
    ),
    (&["TOUCH", "tx", "nope", "tx"], ":2\r\n", None),
    (&["GETEX", "nope", "PX", "0"], "$-1\r\n", Some("_\r\n")),
    (
        &["GETEX", "tx", "PX", "0"],
        "-ERR invalid expire time in 'getex' command\r\n",
        None,
    ),
    (&["FLUSHALL"], "+OK\r\n", None),
    (&["FLUSHALL", "ASYNC"], "+OK\r\n", None),
    (&["FLUSHALL", "x"], "-ERR syntax error\r\n", None),
    (&["DBSIZE"], ":0\r\n", None),
    (&["PING"], "+PONG\r\n", None),
];

/// Runs the whole table on one connection.
fn run_table(c: &mut Client, resp3: bool) {
    for (words, r2, r3) in CASES {
        let expected = if resp3 { r3.unwrap_or(r2) } else { r2 };
        c.check(&enc(words), expected.as_bytes());
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
