//! The memory controller in the live server (issue #4): `[controller]` configuration, the
//! controller deciding in the background tick (never inside a request), `INFO locus` and
//! `LOCUS.CONTROLLER`, with exact reply bytes in RESP2 and RESP3. In-process, virtual clock.

#[path = "server/common.rs"]
#[expect(
    dead_code,
    reason = "the shared harness; this test binary uses part of it"
)]
mod common;

use std::time::{Duration, Instant};

use common::{Client, T0_MS, config, enc, read_reply, start};
use locus_server::{ConfigError, Server, ServerError};

/// Two tenants by port, 16 pages of 64 KiB, a static controller with shares 1:3 deciding every
/// 4 requests.
const TWO_TENANTS: &str = r#"
[memory]
maxmemory = "1MiB"
page_size = "64KiB"
[tenancy]
mode = "port"
[admin]
user = "admin"
password = "admin-pw"
[controller]
name = "static"
interval = 4
max_moves = 8
[controller.settings]
shares = [1, 3]
[[tenant]]
name = "a"
port = 0
[[tenant]]
name = "b"
port = 0
penalty_us = 250
"#;

fn reply_text(c: &mut Client, words: &[&str]) -> String {
    c.send(&enc(words));
    String::from_utf8(read_reply(c)).expect("utf-8 reply")
}

#[test]
fn static_targets_appear_after_one_interval_of_requests() {
    let srv = start(config(TWO_TENANTS));
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    a.cmd(&["AUTH", "admin", "admin-pw"], "+OK\r\n");
    a.cmd(
        &["LOCUS.CONTROLLER", "TARGETS"],
        "*4\r\n$1\r\na\r\n$-1\r\n$1\r\nb\r\n$-1\r\n",
    );
    a.cmd(&["LOCUS.CONTROLLER", "RECORDS"], "*0\r\n");
    // Four data-path requests make a decision due; the tick task carries it out (no request
    // runs a controller: the fifth would have, before issue 23).
    for i in 0..4 {
        a.cmd(&["SET", &format!("k{i}"), "v"], "+OK\r\n");
    }
    assert_eq!(srv.handle.with_engine(|e| e.control_decisions()), 0);
    a.cmd(&["SET", "k4", "v"], "+OK\r\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    while srv.handle.with_engine(|e| e.control_decisions()) == 0 {
        assert!(Instant::now() < deadline, "the tick never decided");
        std::thread::sleep(Duration::from_millis(20));
    }
    a.cmd(
        &["LOCUS.CONTROLLER", "TARGETS"],
        "*4\r\n$1\r\na\r\n:4\r\n$1\r\nb\r\n:12\r\n",
    );
    let info = reply_text(&mut a, &["INFO", "locus"]);
    for line in [
        "# Locus\r\n",
        "controller:static\r\n",
        "controller_interval:4req\r\n",
        "controller_max_moves:8\r\n",
        "controller_decisions:1\r\n",
        "controller_requests:5\r\n",
        "controller_last_decision_at_request:5\r\n",
        "pages_total:16\r\n",
        "pages_used:1\r\n",
        "pool_a:pages=1,target=4,samples=5,penalty_us=0.0,penalty_samples=0\r\n",
        "pool_b:pages=0,target=12,samples=5,penalty_us=250.0,penalty_samples=0\r\n",
    ] {
        assert!(info.contains(line), "missing {line:?} in {info:?}");
    }
    // The section is part of the default INFO and of `INFO controller`.
    assert!(reply_text(&mut a, &["INFO"]).contains("controller:static\r\n"));
    assert!(reply_text(&mut a, &["INFO", "controller"]).contains("pool_b:pages=0"));
}

#[test]
fn run_returns_the_decision_in_resp2_and_resp3() {
    let srv = start(config(TWO_TENANTS));
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    a.cmd(&["AUTH", "admin", "admin-pw"], "+OK\r\n");
    let at_us = T0_MS * 1000;
    let resp2 = format!(
        "*26\r\n\
         $8\r\ninterval\r\n:0\r\n\
         $5\r\nat_us\r\n:{at_us}\r\n\
         $10\r\nat_request\r\n:0\r\n\
         $5\r\nmoves\r\n:0\r\n\
         $16\r\nevicted_by_moves\r\n:0\r\n\
         $5\r\npages\r\n*4\r\n$1\r\na\r\n:0\r\n$1\r\nb\r\n:0\r\n\
         $7\r\ntargets\r\n*4\r\n$1\r\na\r\n:4\r\n$1\r\nb\r\n:12\r\n\
         $7\r\nsamples\r\n*4\r\n$1\r\na\r\n:5\r\n$1\r\nb\r\n:5\r\n\
         $10\r\npenalty_us\r\n*4\r\n$1\r\na\r\n$1\r\n0\r\n$1\r\nb\r\n$3\r\n250\r\n\
         $4\r\nhits\r\n*4\r\n$1\r\na\r\n:0\r\n$1\r\nb\r\n:0\r\n\
         $6\r\nmisses\r\n*4\r\n$1\r\na\r\n:0\r\n$1\r\nb\r\n:0\r\n\
         $5\r\nnotes\r\n*0\r\n\
         $6\r\ncurves\r\n*0\r\n"
    );
    a.cmd(&["LOCUS.CONTROLLER", "RUN"], &resp2);
    a.cmd(&["HELLO", "3"], "");
    let _ = read_reply(&mut a);
    let resp3 = format!(
        "%13\r\n\
         $8\r\ninterval\r\n:1\r\n\
         $5\r\nat_us\r\n:{at_us}\r\n\
         $10\r\nat_request\r\n:0\r\n\
         $5\r\nmoves\r\n:0\r\n\
         $16\r\nevicted_by_moves\r\n:0\r\n\
         $5\r\npages\r\n%2\r\n$1\r\na\r\n:0\r\n$1\r\nb\r\n:0\r\n\
         $7\r\ntargets\r\n%2\r\n$1\r\na\r\n:4\r\n$1\r\nb\r\n:12\r\n\
         $7\r\nsamples\r\n%2\r\n$1\r\na\r\n:5\r\n$1\r\nb\r\n:5\r\n\
         $10\r\npenalty_us\r\n%2\r\n$1\r\na\r\n,0\r\n$1\r\nb\r\n,250\r\n\
         $4\r\nhits\r\n%2\r\n$1\r\na\r\n:0\r\n$1\r\nb\r\n:0\r\n\
         $6\r\nmisses\r\n%2\r\n$1\r\na\r\n:0\r\n$1\r\nb\r\n:0\r\n\
         $5\r\nnotes\r\n%0\r\n\
         $6\r\ncurves\r\n*0\r\n"
    );
    a.cmd(&["LOCUS.CONTROLLER", "RUN"], &resp3);
    a.cmd(
        &["LOCUS.CONTROLLER", "TARGETS"],
        "%2\r\n$1\r\na\r\n:4\r\n$1\r\nb\r\n:12\r\n",
    );
    // RECORDS keeps both decisions, oldest first; a count takes the newest.
    let two = reply_text(&mut a, &["LOCUS.CONTROLLER", "RECORDS"]);
    assert!(
        two.starts_with("*2\r\n%13\r\n$8\r\ninterval\r\n:0\r\n"),
        "{two:?}"
    );
    let one = reply_text(&mut a, &["LOCUS.CONTROLLER", "RECORDS", "1"]);
    assert_eq!(one, format!("*1\r\n{resp3}"));
}

#[test]
fn info_subcommand_in_resp3() {
    let srv = start(config(TWO_TENANTS));
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    a.cmd(&["AUTH", "admin", "admin-pw"], "+OK\r\n");
    a.cmd(&["HELLO", "3"], "");
    let _ = read_reply(&mut a);
    a.cmd(&["LOCUS.CONTROLLER", "RUN"], "");
    let _ = read_reply(&mut a);
    a.cmd(
        &["LOCUS.CONTROLLER", "INFO"],
        "%9\r\n\
         $10\r\ncontroller\r\n$6\r\nstatic\r\n\
         $8\r\ninterval\r\n$4\r\n4req\r\n\
         $9\r\nmax_moves\r\n:8\r\n\
         $9\r\ndecisions\r\n:1\r\n\
         $8\r\nrequests\r\n:0\r\n\
         $3\r\ndue\r\n:0\r\n\
         $11\r\npages_total\r\n:16\r\n\
         $10\r\npages_used\r\n:0\r\n\
         $7\r\ntenants\r\n%2\r\n\
         $1\r\na\r\n%5\r\n$5\r\npages\r\n:0\r\n$6\r\ntarget\r\n:4\r\n$7\r\nsamples\r\n:5\r\n$10\r\npenalty_us\r\n,0\r\n$15\r\npenalty_samples\r\n:0\r\n\
         $1\r\nb\r\n%5\r\n$5\r\npages\r\n:0\r\n$6\r\ntarget\r\n:12\r\n$7\r\nsamples\r\n:5\r\n$10\r\npenalty_us\r\n,250\r\n$15\r\npenalty_samples\r\n:0\r\n",
    );
}

#[test]
fn errors_are_redis_style() {
    let srv = start(config(TWO_TENANTS));
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    a.cmd(&["AUTH", "admin", "admin-pw"], "+OK\r\n");
    a.cmd(
        &["LOCUS.CONTROLLER"],
        "-ERR wrong number of arguments for 'locus.controller' command\r\n",
    );
    a.cmd(
        &["LOCUS.CONTROLLER", "FROB"],
        "-ERR unknown subcommand 'FROB'. Try LOCUS.CONTROLLER HELP.\r\n",
    );
    a.cmd(
        &["LOCUS.CONTROLLER", "INFO", "x"],
        "-ERR wrong number of arguments for 'locus.controller|info' command\r\n",
    );
    a.cmd(
        &["LOCUS.CONTROLLER", "RECORDS", "0"],
        "-ERR value is out of range, must be positive\r\n",
    );
    a.cmd(
        &["LOCUS.CONTROLLER", "RECORDS", "ten"],
        "-ERR value is out of range, must be positive\r\n",
    );
    let help = reply_text(&mut a, &["locus.controller", "help"]);
    assert!(
        help.starts_with(
            "*15\r\n+LOCUS.CONTROLLER <subcommand> [<arg> ...]. Subcommands are:\r\n+INFO\r\n"
        ),
        "{help:?}"
    );
    assert!(
        help.ends_with("+HELP\r\n+    Print this help.\r\n"),
        "{help:?}"
    );
    // The server keeps serving.
    a.cmd(&["PING"], "+PONG\r\n");
}

#[test]
fn without_a_controller_the_commands_say_so() {
    let srv = start(config(""));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    c.cmd(
        &["LOCUS.CONTROLLER", "RUN"],
        "-ERR no memory controller is running (set [controller] name in the configuration)\r\n",
    );
    c.cmd(
        &["LOCUS.CONTROLLER", "TARGETS"],
        "*2\r\n$7\r\ndefault\r\n$-1\r\n",
    );
    c.cmd(&["LOCUS.CONTROLLER", "RECORDS", "5"], "*0\r\n");
    let info = reply_text(&mut c, &["INFO", "locus"]);
    assert!(
        info.contains("controller:none\r\ncontroller_interval:none\r\n"),
        "{info:?}"
    );
    assert!(
        info.contains("pool_default:pages=0,target=none,samples=5"),
        "{info:?}"
    );
}

#[test]
fn a_time_interval_decides_in_the_background_tick() {
    let toml = TWO_TENANTS.replace("interval = 4", "interval = \"2s\"");
    let srv = start(config(&toml));
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    a.cmd(&["AUTH", "admin", "admin-pw"], "+OK\r\n");
    a.cmd(
        &["LOCUS.CONTROLLER", "TARGETS"],
        "*4\r\n$1\r\na\r\n$-1\r\n$1\r\nb\r\n$-1\r\n",
    );
    // No request at all: only the tick (10 per second of real time) can decide, once the
    // virtual clock passes the interval.
    srv.clock.advance_ms(2000);
    let deadline = Instant::now() + Duration::from_secs(10);
    while srv.handle.with_engine(|e| e.control_decisions()) == 0 {
        assert!(Instant::now() < deadline, "the tick never decided");
        std::thread::sleep(Duration::from_millis(20));
    }
    a.cmd(
        &["LOCUS.CONTROLLER", "TARGETS"],
        "*4\r\n$1\r\na\r\n:4\r\n$1\r\nb\r\n:12\r\n",
    );
    assert!(reply_text(&mut a, &["INFO", "locus"]).contains("controller_interval:2s\r\n"));
}

#[test]
fn only_the_admin_runs_the_controller_commands() {
    let srv = start(config(TWO_TENANTS));
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    for sub in [
        &["TARGETS"][..],
        &["RUN"],
        &["SET", "shared"],
        &["RECORDS", "1"],
    ] {
        let mut words = vec!["LOCUS.CONTROLLER"];
        words.extend_from_slice(sub);
        a.cmd(
            &words,
            "-NOPERM this user has no permissions to run the 'locus.controller' command\r\n",
        );
    }
    assert!(!reply_text(&mut a, &["INFO", "locus"]).contains("pool_b"));
    a.cmd(&["AUTH", "admin", "admin-pw"], "+OK\r\n");
    assert!(reply_text(&mut a, &["INFO", "locus"]).contains("pool_b"));
}

#[test]
fn targets_are_enforced_on_the_data_path() {
    let srv = start(config(TWO_TENANTS));
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    let mut b = Client::connect(srv.handle.addr_of(Some("b")).unwrap());
    let value = "x".repeat(2000);
    // Tenant a floods the whole memory first (no targets yet for 4 requests, then 4 : 12). The
    // decision falls due after 4 requests and the tick task makes it: wait for it (on a loaded
    // machine the tick may come after many more requests), then flood.
    for i in 0..8 {
        a.cmd(&["SET", &format!("a{i}"), &value], "+OK\r\n");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while srv.handle.with_engine(|e| e.targets()[0].is_none()) {
        assert!(
            std::time::Instant::now() < deadline,
            "no decision within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for i in 8..2000 {
        a.cmd(&["SET", &format!("a{i}"), &value], "+OK\r\n");
    }
    for i in 0..2000 {
        b.cmd(&["SET", &format!("b{i}"), &value], "+OK\r\n");
    }
    let (pa, pb, ta, tb) = srv.handle.with_engine(|e| {
        let ids = e.tenant_ids();
        let t = e.targets();
        (
            e.tenant_stats(ids[0]).pages,
            e.tenant_stats(ids[1]).pages,
            t[0],
            t[1],
        )
    });
    assert_eq!((ta, tb), (Some(4), Some(12)));
    assert!(pa <= 4, "tenant a holds {pa} pages above its target 4");
    assert!(pb >= 11, "tenant b holds only {pb} pages of its target 12");
}

#[test]
fn an_invalid_controller_refuses_to_start() {
    let cfg = config(
        "[controller]\nname = \"static\"\ninterval = \"often\"\n[controller.settings]\nshare = 1\n",
    );
    let err = Server::bind(
        cfg,
        std::sync::Arc::new(locus_common::VirtualClock::new(T0_MS)),
        None,
    )
    .expect_err("bad controller config");
    let ServerError::Config(ConfigError::Invalid { problems }) = err else {
        panic!("not a config error: {err}");
    };
    let all = problems.join("\n");
    assert!(
        all.contains("controller.interval: interval 'often'"),
        "{all}"
    );
    assert!(
        all.contains("controller.settings.share: controller 'static' has no such setting"),
        "{all}"
    );
}
