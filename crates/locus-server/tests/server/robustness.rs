//! Random command sequences (proptest): every command gets exactly one well-formed reply, the
//! server never drops the connection on a valid frame, and tenants stay isolated.

use proptest::prelude::*;

use crate::common::{Client, config, enc, read_reply, start};

const NAMES: &[&str] = &[
    "GET",
    "SET",
    "SETNX",
    "SETEX",
    "PSETEX",
    "GETSET",
    "GETDEL",
    "GETEX",
    "MGET",
    "MSET",
    "MSETNX",
    "APPEND",
    "STRLEN",
    "GETRANGE",
    "SETRANGE",
    "INCR",
    "DECR",
    "INCRBY",
    "DECRBY",
    "INCRBYFLOAT",
    "DEL",
    "UNLINK",
    "EXISTS",
    "TYPE",
    "KEYS",
    "SCAN",
    "RANDOMKEY",
    "RENAME",
    "RENAMENX",
    "EXPIRE",
    "PEXPIRE",
    "EXPIREAT",
    "PEXPIREAT",
    "EXPIRETIME",
    "PEXPIRETIME",
    "TTL",
    "PTTL",
    "PERSIST",
    "DBSIZE",
    "FLUSHDB",
    "SELECT",
    "PING",
    "ECHO",
    "TIME",
    "CLIENT",
    "COMMAND",
    "CONFIG",
    "INFO",
    "MEMORY",
    "OBJECT",
    "TOUCH",
    "MULTI",
    "EXEC",
    "DISCARD",
    "WATCH",
    "UNWATCH",
    "LOCUS.TENANT",
    "ACL",
    "NOSUCH",
];

const ARGS: &[&str] = &[
    "k",
    "k2",
    "user:1",
    "0",
    "1",
    "-1",
    "10",
    "100",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "inf",
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "NX",
    "XX",
    "GT",
    "LT",
    "GET",
    "KEEPTTL",
    "PERSIST",
    "MATCH",
    "COUNT",
    "TYPE",
    "*",
    "k*",
    "[a-",
    "\\",
    "ID",
    "SETNAME",
    "LIST",
    "INFO",
    "GETNAME",
    "USAGE",
    "ENCODING",
    "FREQ",
    "IDLETIME",
    "maxmemory",
    "maxmemory-samples",
    "maxmemory-policy",
    "allkeys-lfu",
    "SET",
    "default",
    "DOCS",
    "COUNT",
    "",
    "\u{0}bin",
    "536870911",
];

fn command() -> impl Strategy<Value = Vec<String>> {
    (
        prop::sample::select(NAMES),
        prop::collection::vec(prop::sample::select(ARGS), 0..6),
    )
        .prop_map(|(n, a)| std::iter::once(n).chain(a).map(str::to_string).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_commands_always_get_one_reply(cmds in prop::collection::vec(command(), 1..60)) {
        let srv = start(config("[tenancy]\nmode = \"prefix\"\ndefault_tenant = \"rest\"\n[[tenant]]\nname = \"users\"\nprefix = \"user:\"\n[[tenant]]\nname = \"rest\"\nprefix = \"r:\"\n"));
        let mut c = Client::connect(srv.handle.addrs()[0].addr);
        // Pipelined: all commands in one write, then one reply each.
        let mut req = Vec::new();
        for cmd in &cmds {
            let words: Vec<&str> = cmd.iter().map(String::as_str).collect();
            req.extend(enc(&words));
        }
        req.extend(enc(&["ECHO", "end-of-batch"]));
        c.send(&req);
        for _ in &cmds {
            read_reply(&mut c);
        }
        // The EXEC of an unterminated MULTI would queue the ECHO: DISCARD first if needed.
        let last = read_reply(&mut c);
        if last == b"+QUEUED\r\n" {
            c.cmd(&["DISCARD"], "+OK\r\n");
        } else {
            prop_assert_eq!(String::from_utf8_lossy(&last), "$12\r\nend-of-batch\r\n");
        }
        // Isolation: "user:" keys only ever land in the users tenant.
        let leaked = srv.handle.with_engine(|e| {
            let rest = e.tenant_by_name("rest").unwrap();
            let mut keys = Vec::new();
            let mut cur = 0;
            loop {
                cur = e.scan(rest, cur, 1000, &mut keys);
                if cur == 0 { break; }
            }
            keys.into_iter().filter(|k| k.starts_with(b"user:")).count()
        });
        prop_assert_eq!(leaked, 0);
    }
}
