//! Sequences of typed commands against the in-process server (issue 12, acceptance 5), checked
//! against a naive model of every type: while the budget is not reached, every reply equals the
//! model's (arrays whose order Redis leaves open compared as multisets); under a small budget, the
//! budget is never exceeded, nothing answers but the model's reply, a miss (evicted) or OOM, and
//! the server never panics. Two tenants with their own caps: whatever one does, the other's keys
//! stay exactly as the model says (isolation). The cargo-fuzz target `typed_commands` in
//! `crates/locus-server/fuzz` drives the same model from fuzzer bytes.

#[path = "server/common.rs"]
#[expect(
    dead_code,
    reason = "the shared harness; this test binary uses part of it"
)]
mod common;
#[path = "model/mod.rs"]
mod model;

use common::{Client, config, start};
use model::{Model, Reply, parse_reply};
use proptest::prelude::*;

/// Two tenants by port, each capped: `a` is driven, `b` is the bystander.
fn toml(maxmemory: &str, cap: &str) -> String {
    format!(
        r#"
[memory]
maxmemory = "{maxmemory}"
page_size = "4KiB"
[tenancy]
mode = "port"
[[tenant]]
name = "a"
port = 0
max = "{cap}"
[[tenant]]
name = "b"
port = 0
max = "{cap}"
"#
    )
}

fn words(c: &mut Client, w: &[Vec<u8>]) -> Reply {
    let mut out = format!("*{}\r\n", w.len()).into_bytes();
    for x in w {
        out.extend_from_slice(format!("${}\r\n", x.len()).as_bytes());
        out.extend_from_slice(x);
        out.extend_from_slice(b"\r\n");
    }
    c.send(&out);
    let raw = common::read_reply(c);
    parse_reply(&raw)
        .unwrap_or_else(|| panic!("unparseable reply {:?}", String::from_utf8_lossy(&raw)))
}

fn info_field(c: &mut Client, field: &str) -> u64 {
    let Reply::Bulk(Some(text)) = words(c, &[b"INFO".to_vec(), b"memory".to_vec()]) else {
        panic!("INFO memory");
    };
    let text = String::from_utf8(text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO"))
}

/// Writes the bystander's keys and returns its model.
fn fill_bystander(b: &mut Client) -> Model {
    let mut m = Model::default();
    for op in model::bystander_ops() {
        let want = m.apply(&op);
        let got = words(b, &op.words());
        assert!(want.matches(&got), "bystander {op:?}: {got:?} vs {want:?}");
    }
    m
}

fn check_bystander(b: &mut Client, m: &Model) {
    for (key, want) in m.dump_ops() {
        let got = words(b, &want.words());
        let exp = m.clone().apply(&want);
        assert!(
            exp.matches(&got),
            "bystander key {key:?} changed: {got:?} vs {exp:?}"
        );
    }
}

/// Fuzzer bytes decode to commands of every implemented type (the cargo-fuzz target's path).
#[test]
fn fuzzer_bytes_decode_to_commands() {
    let data: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let mut b = &data[..];
    let mut n = 0;
    while model::op_from_bytes(&mut b).is_some() {
        n += 1;
    }
    assert!(n > 500, "{n}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Room for everything: every reply is the model's.
    #[test]
    fn every_reply_matches_the_model(ops in prop::collection::vec(model::op(), 1..120)) {
        let srv = start(config(&toml("64MiB", "32MiB")));
        let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
        let mut b = Client::connect(srv.handle.addr_of(Some("b")).unwrap());
        let mb = fill_bystander(&mut b);
        let mut m = Model::default();
        for op in &ops {
            let want = m.apply(op);
            let got = words(&mut a, &op.words());
            prop_assert!(want.matches(&got), "{:?}: got {:?}, model {:?}", op, got, want);
        }
        check_bystander(&mut b, &mb);
        let _ = srv.handle.shutdown();
    }

    /// A tenant capped at a few pages: its budget holds after every command, replies are the
    /// model's or what eviction explains, and the other tenant is untouched.
    #[test]
    fn a_small_budget_holds_and_the_other_tenant_is_untouched(
        ops in prop::collection::vec(model::big_op(), 1..80)
    ) {
        let srv = start(config(&toml("4MiB", "256KiB")));
        let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
        let mut b = Client::connect(srv.handle.addr_of(Some("b")).unwrap());
        let mb = fill_bystander(&mut b);
        let max = info_field(&mut a, "maxmemory");
        for op in &ops {
            let got = words(&mut a, &op.words());
            if let Reply::Error(e) = &got {
                // What eviction explains, and what the values themselves cause.
                let known = [
                    "OOM",
                    "WRONGTYPE",
                    "ERR hash value is not an integer",
                    "ERR increment",
                    // XADD <ms>-* below the stream's last ID (the model's ms are random).
                    "ERR The ID specified in XADD is equal or smaller",
                ];
                prop_assert!(known.iter().any(|w| e.starts_with(w)), "{:?}: {}", op, e);
            }
            prop_assert!(info_field(&mut a, "used_memory") <= max);
        }
        check_bystander(&mut b, &mb);
        let _ = srv.handle.shutdown();
    }
}
