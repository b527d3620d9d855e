//! cargo-fuzz target: hostile input to scripts. Each input is split into a choice and its
//! bytes, which become a library call's input (`cjson.decode`, `cmsgpack.unpack`,
//! `cmsgpack.unpack_limit`, `bit` operations, `struct` formats and data, `redis.pcall` with the
//! bytes as arguments), or the bytes as a whole script body when it holds no loop-making word
//! (`while`, `until`, `for`, `function`, `load`, so it cannot run forever). Checks: every request
//! gets a well-formed reply, the server keeps answering, and the other tenant's key is unchanged.
#![no_main]

#[path = "../../tests/server/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "../../tests/model/mod.rs"]
#[allow(dead_code)]
mod model;

use std::sync::{Mutex, OnceLock};

use common::{Client, config, start};
use libfuzzer_sys::fuzz_target;
use model::{Reply, parse_reply};

struct Fixture {
    _srv: common::TestServer,
    a: Client,
    b: Client,
}

fn words(c: &mut Client, w: &[&[u8]]) -> Reply {
    let mut out = format!("*{}\r\n", w.len()).into_bytes();
    for x in w {
        out.extend_from_slice(format!("${}\r\n", x.len()).as_bytes());
        out.extend_from_slice(x);
        out.extend_from_slice(b"\r\n");
    }
    c.send(&out);
    parse_reply(&common::read_reply(c)).expect("a well-formed reply")
}

fn fixture() -> &'static Mutex<Fixture> {
    static F: OnceLock<Mutex<Fixture>> = OnceLock::new();
    F.get_or_init(|| {
        let srv = start(config(
            "[memory]\nmaxmemory = \"64MiB\"\npage_size = \"4KiB\"\n[tenancy]\nmode = \"port\"\n\
             [[tenant]]\nname = \"a\"\nport = 0\nmax = \"32MiB\"\n\
             [[tenant]]\nname = \"b\"\nport = 0\nmax = \"32MiB\"\n",
        ));
        let a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
        let mut b = Client::connect(srv.handle.addr_of(Some("b")).unwrap());
        assert_eq!(words(&mut b, &[b"SET", b"bystander", b"intact"]), Reply::Simple("OK".into()));
        Mutex::new(Fixture { _srv: srv, a, b })
    })
}

const SCRIPTS: [&[u8]; 8] = [
    b"return cjson.encode(cjson.decode(ARGV[1]))",
    b"return {cmsgpack.unpack(ARGV[1])}",
    b"return {cmsgpack.unpack_limit(ARGV[1], 3, 0)}",
    b"return bit.tohex(bit.bxor(#ARGV[1], 0x5a5a5a5a), -8)",
    b"return redis.pcall(unpack(ARGV))",
    b"return cmsgpack.pack(cjson.decode(ARGV[1]))",
    b"return {struct.size(ARGV[1]), struct.unpack(ARGV[1], ARGV[1] .. ARGV[1], 1 + #ARGV[1] % 3)}",
    b"return struct.pack(ARGV[1], 1, -2, 3.5, 'abc', 2^40, 'z', 7)",
];

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let mut f = fixture().lock().unwrap();
    let f = &mut *f;
    let choice = usize::from(choice);
    // Three quarters of the choices are a library script, the rest a whole script body.
    let reply = if choice < 192 {
        let script = SCRIPTS[choice % SCRIPTS.len()];
        let mut cmd: Vec<&[u8]> = vec![b"EVAL", script, b"0"];
        if choice % SCRIPTS.len() == 4 {
            cmd.extend(rest.split(|&b| b == 0).take(64));
        } else {
            cmd.push(rest);
        }
        words(&mut f.a, &cmd)
    } else {
        // The bytes as a script: compiled and run once, unless it loops (no loop keyword).
        if rest.windows(5).any(|w| w == b"while" || w == b"until")
            || rest.windows(3).any(|w| w == b"for")
            || rest.windows(4).any(|w| w == b"load")
            || rest.windows(8).any(|w| w == b"function")
        {
            return;
        }
        words(&mut f.a, &[b"EVAL", rest, b"0"])
    };
    drop(reply);
    assert_eq!(words(&mut f.a, &[b"PING"]), Reply::Simple("PONG".into()));
    assert_eq!(
        words(&mut f.b, &[b"GET", b"bystander"]),
        Reply::Bulk(Some(b"intact".to_vec())),
        "a script changed another tenant's key"
    );
});
