//! The `[metrics]` HTTP listener in-process: `/metrics` (OpenMetrics text from the engine's own
//! counters), the live page, the JSON API, and the handling of bad requests (400/403/404/405/431,
//! never a panic, the listener keeps serving). The Python suite (tests/python/test_metrics.py)
//! checks the same against the real binary and compares every figure with INFO.

#[path = "server/common.rs"]
#[expect(
    dead_code,
    reason = "the shared harness; this test binary uses part of it"
)]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::{Client, config, start};
use locus_server::{ConfigError, Server, ServerError};

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
[controller.settings]
shares = [1, 3]
[metrics]
bind = "127.0.0.1:0"
[[tenant]]
name = "a"
port = 0
[[tenant]]
name = 'q"uo\te'
port = 0
penalty_us = 250
"#;

/// Sends raw bytes, reads until the server closes; returns (status, headers, body).
fn raw(addr: SocketAddr, req: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.write_all(req).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(out.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&out[..end]).to_string();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head, out[end..].to_vec())
}

fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let (st, head, body) = raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes(),
    );
    (st, head, String::from_utf8(body).expect("utf-8 body"))
}

/// Parses the exposition: family -> type, and every sample `name{labels}` -> value.
fn parse(text: &str) -> (BTreeMap<String, String>, BTreeMap<String, f64>) {
    let mut types = BTreeMap::new();
    let mut helps = BTreeSet::new();
    let mut samples = BTreeMap::new();
    assert!(text.ends_with("# EOF\n"), "no EOF line");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert!(helps.insert(name.clone()), "HELP twice for {name}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let name = it.next().unwrap().to_string();
            let ty = it.next().unwrap().to_string();
            assert!(helps.contains(&name), "TYPE without HELP for {name}");
            assert!(
                types.insert(name.clone(), ty).is_none(),
                "family {name} twice"
            );
        } else if line.starts_with('#') {
            continue;
        } else {
            let (key, value) = line.rsplit_once(' ').unwrap();
            let v: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line}"));
            assert!(
                samples.insert(key.to_string(), v).is_none(),
                "sample {key} twice"
            );
        }
    }
    (types, samples)
}

#[test]
fn metrics_match_the_engine_and_every_family_is_described() {
    let srv = start(config(TWO_TENANTS));
    let m = srv.handle.metrics_addr().expect("metrics listener");
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    for i in 0..20 {
        a.cmd(&["SET", &format!("k{i}"), "v"], "+OK\r\n");
    }
    for i in 0..30 {
        let expect = if i < 20 { "$1\r\nv\r\n" } else { "$-1\r\n" };
        a.cmd(&["GET", &format!("k{i}")], expect);
    }
    // The controller's decisions are made by the tick task once due (never inside a request).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while srv.handle.with_engine(|e| e.control_decisions()) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the tick never decided"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (st, head, body) = get(m, "/metrics");
    assert_eq!(st, 200, "{head}");
    assert!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    let (types, samples) = parse(&body);
    assert_eq!(samples["locus_tenant_hits_total{tenant=\"a\"}"], 20.0);
    assert_eq!(samples["locus_tenant_misses_total{tenant=\"a\"}"], 10.0);
    assert_eq!(samples["locus_tenant_items{tenant=\"a\"}"], 20.0);
    // A tenant name with a quote and a backslash is escaped.
    assert_eq!(samples["locus_tenant_items{tenant=\"q\\\"uo\\\\te\"}"], 0.0);
    assert_eq!(
        samples["locus_tenant_miss_penalty_seconds{tenant=\"q\\\"uo\\\\te\"}"],
        0.00025
    );
    assert_eq!(samples["locus_command_calls_total{command=\"get\"}"], 30.0);
    assert_eq!(
        samples["locus_command_duration_seconds_count{command=\"get\"}"],
        30.0
    );
    assert_eq!(
        samples["locus_command_duration_seconds_bucket{le=\"+Inf\",command=\"get\"}"],
        30.0
    );
    assert_eq!(types["locus_tenant_hits"], "counter");
    assert_eq!(types["locus_tenant_items"], "gauge");
    assert_eq!(types["locus_command_duration_seconds"], "histogram");
    assert_eq!(types["locus_build"], "info");
    assert_eq!(
        samples["locus_controller_info{name=\"static\",interval=\"4req\"}"],
        1.0
    );
    assert!(samples["locus_controller_decisions_total"] >= 1.0);
    // The same figures the engine holds.
    srv.handle.with_engine(|eng| {
        let t = eng.tenant_by_name("a").unwrap();
        let s = eng.tenant_stats(t);
        assert_eq!(samples["locus_tenant_pages{tenant=\"a\"}"], s.pages as f64);
        assert_eq!(
            samples["locus_tenant_used_bytes{tenant=\"a\"}"],
            (s.pages * eng.stats().page_size + s.large_bytes) as f64
        );
    });
    // Every sample belongs to a described family.
    for key in samples.keys() {
        let name = key.split('{').next().unwrap();
        let fam = types.keys().any(|f| {
            name == f
                || ["_total", "_bucket", "_sum", "_count", "_info"]
                    .iter()
                    .any(|suf| name.strip_suffix(suf) == Some(f.as_str()))
        });
        assert!(fam, "sample {key} has no family");
    }
}

#[test]
fn the_page_and_the_api_are_served() {
    let srv = start(config(TWO_TENANTS));
    let m = srv.handle.metrics_addr().unwrap();
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    for i in 0..8 {
        a.cmd(&["SET", &format!("k{i}"), "v"], "+OK\r\n");
    }
    let (st, head, page) = get(m, "/");
    assert_eq!(st, 200);
    assert!(head.contains("text/html"), "{head}");
    assert!(
        head.contains("Content-Security-Policy: default-src 'none'"),
        "{head}"
    );
    assert!(page.contains("api/tenants") && page.contains("api/curves"));
    assert!(
        !page.contains("<script src") && !page.contains("<link"),
        "no external asset"
    );
    let (st, _, tenants) = get(m, "/api/tenants");
    assert_eq!(st, 200);
    assert!(tenants.contains("\"name\":\"a\""), "{tenants}");
    assert!(tenants.contains("\"name\":\"q\\\"uo\\\\te\""), "{tenants}");
    assert!(tenants.contains("\"controller\":{"), "{tenants}");
    assert!(tenants.contains("\"history\":{"), "{tenants}");
    let (st, _, curves) = get(m, "/api/curves?tenant=a");
    assert_eq!(st, 200);
    assert!(curves.contains("\"name\":\"a\""), "{curves}");
    assert!(!curves.contains("uo"), "filtered to tenant a: {curves}");
    let (st, _, _) = get(m, "/api/curves?tenant=%zz");
    assert_eq!(st, 400);
}

#[test]
fn bad_requests_get_4xx_and_the_listener_keeps_serving() {
    let srv = start(config(TWO_TENANTS));
    let m = srv.handle.metrics_addr().unwrap();
    let huge = format!("GET / HTTP/1.1\r\nX-Pad: {}\r\n\r\n", "x".repeat(20 * 1024));
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (
            b"GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
            404,
        ),
        (
            b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc".to_vec(),
            405,
        ),
        (b"DELETE / HTTP/1.1\r\n\r\n".to_vec(), 405),
        (
            b"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n".to_vec(),
            403,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: evil.example:80\r\n\r\n".to_vec(),
            403,
        ),
        (b"hello\r\n\r\n".to_vec(), 400),
        (b"GET /metrics\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nbroken header\r\n\r\n".to_vec(), 400),
        (b"\x00\x01\x02\xff\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/3\r\n\r\n".to_vec(), 505),
        (huge.into_bytes(), 431),
    ];
    for (req, want) in cases {
        let (st, head, _) = raw(m, &req);
        assert_eq!(
            st,
            want,
            "{:?} -> {head}",
            String::from_utf8_lossy(&req[..req.len().min(60)])
        );
        if want == 405 {
            assert!(head.contains("Allow: GET, HEAD"), "{head}");
        }
    }
    // HEAD: the headers of the GET, no body.
    let (st, head, body) = raw(m, b"HEAD /metrics HTTP/1.1\r\nHost: [::1]:1\r\n\r\n");
    assert_eq!(st, 200);
    assert!(body.is_empty(), "HEAD has no body");
    assert!(!head.contains("Content-Length: 0\r\n"), "{head}");
    // Half a request, then close: nothing to answer, nothing breaks.
    {
        let mut s = TcpStream::connect(m).unwrap();
        s.write_all(b"GET /metr").unwrap();
    }
    // A head that never ends is cut at the bound.
    let (st, _, _) = raw(m, &vec![b'a'; 64 * 1024]);
    assert_eq!(st, 431);
    let (st, _, body) = get(m, "/metrics");
    assert_eq!(st, 200);
    assert!(body.ends_with("# EOF\n"));
}

#[test]
fn a_remote_bind_is_refused_without_allow_remote() {
    let mut cfg = config(TWO_TENANTS);
    cfg.metrics.bind = "0.0.0.0:0".into();
    let err = Server::bind(
        cfg.clone(),
        std::sync::Arc::new(locus_common::SystemClock),
        None,
    )
    .unwrap_err();
    match err {
        ServerError::Config(ConfigError::Invalid { problems }) => {
            assert!(
                problems.iter().any(|p| p.contains("metrics.allow_remote")),
                "{problems:?}"
            );
        }
        e => panic!("unexpected {e}"),
    }
    // Accepted with allow_remote (validated only: the test binds nothing beyond loopback).
    cfg.metrics.allow_remote = true;
    cfg.validate().unwrap();
}

#[test]
fn off_by_default() {
    let mut cfg = config(TWO_TENANTS);
    cfg.metrics = Default::default();
    let s = Server::bind(cfg, std::sync::Arc::new(locus_common::SystemClock), None).unwrap();
    assert!(s.metrics_addr().is_none());
}
