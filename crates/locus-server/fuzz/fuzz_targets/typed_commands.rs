//! cargo-fuzz target: sequences of typed commands (strings and the collection types) against an
//! in-process server, checked against the naive model of `tests/model`: the same reply as the
//! model while under budget, the budget never exceeded, no panic, and the other tenant's keys
//! unchanged. One server for the process; each input starts from FLUSHALL.
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
use model::{Model, Reply, parse_reply};

struct Fixture {
    _srv: common::TestServer,
    a: Client,
    b: Client,
    bystander: Model,
}

fn words(c: &mut Client, w: &[Vec<u8>]) -> Reply {
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
        let mut bystander = Model::default();
        for op in model::bystander_ops() {
            let want = bystander.apply(&op);
            assert!(want.matches(&words(&mut b, &op.words())));
        }
        Mutex::new(Fixture { _srv: srv, a, b, bystander })
    })
}

fuzz_target!(|data: &[u8]| {
    let mut f = fixture().lock().unwrap();
    let f = &mut *f;
    assert_eq!(words(&mut f.a, &[b"FLUSHDB".to_vec()]), Reply::Simple("OK".into()));
    let mut m = Model::default();
    let mut bytes = data;
    while let Some(op) = model::op_from_bytes(&mut bytes) {
        let want = m.apply(&op);
        let got = words(&mut f.a, &op.words());
        assert!(want.matches(&got), "{op:?}: got {got:?}, model {want:?}");
    }
    for (_, op) in f.bystander.dump_ops() {
        let want = f.bystander.clone().apply(&op);
        assert!(want.matches(&words(&mut f.b, &op.words())), "bystander changed");
    }
});
