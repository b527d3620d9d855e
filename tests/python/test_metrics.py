"""The `[metrics]` HTTP listener of `locus serve` (issue 17, Locus only): Prometheus `/metrics`, the
JSON API of the live page, and how the listener treats bad requests.

* `/metrics` after traffic in two tenants (evictions, expirations, hits, misses): the text parses
  with the Prometheus project's own OpenMetrics parser (prometheus_client), every family has one
  HELP and one TYPE, family names are unique, label sets are unique within a family, every sample
  belongs to its family, and the figures equal what INFO reports at the same moment (per tenant:
  hits, misses, keys, evictions, expirations, pages, bytes, K, target, miss penalty; server:
  clients, commands by name, controller decisions).
* bad requests get 400/403/404/405/431 and a silent client is dropped after the read timeout;
  the listener keeps serving, the server keeps running.
* a non-loopback `metrics.bind` is refused without `metrics.allow_remote`.

Every request goes to 127.0.0.1 only; every load loop is bounded.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import time

import pytest
import redis

from conftest import no_retry
from harness import HOST, free_ports, locus_bin, wait_until

pytestmark = pytest.mark.locus_only

VALUE = "v" * 1000
NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
# OpenMetrics: the sample names a family of each type may have.
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "info": ("_info",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "unknown": ("",),
}


def config(ports, controller=None, extra=""):
    main, pa, pb, pm = ports
    lines = [
        "[server]", 'bind = "127.0.0.1"', f"port = {main}",
        "[memory]", 'maxmemory = "2MiB"', 'page_size = "64KiB"',
        "[tenancy]", 'mode = "port"',
        "[admin]", 'user = "root"', 'password = "root-pw"',
        "[metrics]", f'bind = "127.0.0.1:{pm}"', 'sample_interval = "100ms"',
    ]
    if controller:
        lines += ["[controller]", f'name = "{controller}"', "interval = 1000"]
    lines += ["[[tenant]]", 'name = "a"', f"port = {pa}",
              "[[tenant]]", 'name = "b"', f"port = {pb}", "penalty_us = 750"]
    return "\n".join(lines) + "\n" + extra


def client(port, admin=True):
    kw = {"username": "root", "password": "root-pw"} if admin else {}
    return redis.Redis(host=HOST, port=port, decode_responses=True, socket_timeout=10,
                       retry=no_retry(), **kw)


def http_get(port, path, method="GET", headers=None):
    c = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def raw_http(port, data: bytes, timeout=15.0) -> bytes:
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
    return out


def status_of(resp: bytes) -> int:
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", resp)
    assert m, resp[:200]
    return int(m.group(1))


# ------------------------------------------------------------------------- the text format


_LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def parse_labels(text: str) -> tuple:
    out = []
    pos = 0
    while pos < len(text):
        m = _LABEL_RE.match(text, pos)
        assert m, f"bad label set {{{text}}} at {pos}"
        value = re.sub(r"\\(.)", lambda x: {"n": "\n"}.get(x.group(1), x.group(1)), m.group(2))
        out.append((m.group(1), value))
        pos = m.end()
    names = [k for k, _ in out]
    assert len(names) == len(set(names)), f"a label repeats in {{{text}}}"
    return tuple(sorted(out))


def parse_exposition(text: str) -> dict:
    """Strict reading of the exposition: {family: {"type", "help", "unit", "samples": {(sample
    name, labels): value}}}; asserts the rules the module docstring lists."""
    lines = text.split("\n")
    assert lines[-2:] == ["# EOF", ""], "the exposition must end with '# EOF\\n'"
    fams: dict = {}
    cur = None
    for line in lines[:-2]:
        assert line, "no blank lines in OpenMetrics"
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert name not in fams, f"family {name} described twice"
            assert NAME_RE.match(name) and name.startswith("locus_"), name
            assert help_text.strip(), f"empty HELP for {name}"
            fams[name] = {"help": help_text, "type": None, "unit": None, "samples": {}}
            cur = name
        elif line.startswith("# TYPE "):
            name, _, ty = line[7:].partition(" ")
            assert name == cur and fams[cur]["type"] is None, f"TYPE {name} not right after its HELP"
            assert ty in SUFFIXES, ty
            fams[cur]["type"] = ty
        elif line.startswith("# UNIT "):
            name, _, unit = line[7:].partition(" ")
            assert name == cur and name.endswith("_" + unit), line
            fams[cur]["unit"] = unit
        else:
            assert not line.startswith("#"), f"unexpected comment {line!r}"
            assert cur is not None and fams[cur]["type"], f"sample before HELP/TYPE: {line!r}"
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
            assert m, f"bad sample line {line!r}"
            sname, labels, value = m.group(1), parse_labels(m.group(2) or ""), float(m.group(3))
            suffix = sname[len(cur):] if sname.startswith(cur) else None
            assert suffix in SUFFIXES[fams[cur]["type"]], f"{sname} is not a sample of {cur}"
            key = (sname, labels)
            assert key not in fams[cur]["samples"], f"{sname}{{{labels}}} twice in {cur}"
            fams[cur]["samples"][key] = value
    for name, f in fams.items():
        assert f["type"], f"{name} has no TYPE"
    return fams


def value(fams, family, sample=None, **labels):
    f = fams[family]
    sname = sample or family + {"counter": "_total", "info": "_info"}.get(f["type"], "")
    key = (sname, tuple(sorted(labels.items())))
    assert key in f["samples"], f"no {sname}{labels} in {sorted(f['samples'])[:8]}"
    return f["samples"][key]


def tenant_sum(fams, family, tenant):
    """The sum of a family's samples of one tenant (over causes, classes, ...)."""
    return sum(v for (_, labels), v in fams[family]["samples"].items()
               if dict(labels)["tenant"] == tenant)


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture
def metrics_server(start_locus_toml):
    ports = free_ports(4)
    # Port mode without a default tenant: server.port is not bound; tenant a's port answers.
    srv = start_locus_toml(config(ports), ports[1])
    return {"srv": srv, "main": ports[0], "a": ports[1], "b": ports[2], "metrics": ports[3]}


def drive(ca, cb):
    """Traffic into both tenants: a overflows its share (evictions), both hit and miss, some keys
    expire (read after their TTL: lazily expired), some are deleted."""
    for start in range(0, 3000, 500):
        with ca.pipeline(transaction=False) as p:
            for i in range(start, start + 500):
                p.set(f"a:{i}", VALUE)
            p.execute()
    with cb.pipeline(transaction=False) as p:
        for i in range(200):
            p.set(f"b:{i}", VALUE)
        for i in range(20):
            p.set(f"b:ttl{i}", VALUE, px=1)
        p.execute()
    time.sleep(0.05)
    with ca.pipeline(transaction=False) as p:
        for i in range(0, 3000, 3):
            p.get(f"a:{i}")
        p.execute()
    with cb.pipeline(transaction=False) as p:
        for i in range(250):
            p.get(f"b:{i}")
        for i in range(20):
            p.get(f"b:ttl{i}")
        p.delete("b:0", "b:1")
        p.execute()


# ------------------------------------------------------------------------------------ tests


def test_metrics_are_well_formed_and_equal_info(metrics_server):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    s = metrics_server
    # The admin on tenant a's port: INFO shows every tenant to it.
    ca, cb, adm = client(s["a"], admin=False), client(s["b"], admin=False), client(s["a"])
    drive(ca, cb)

    # INFO first, then the scrape: nothing runs in between (no controller, no TTL left).
    info = adm.info("everything")
    st, headers, body = http_get(s["metrics"], "/metrics")
    assert st == 200
    assert headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    text = body.decode()

    # The Prometheus project's own parser accepts it (it raises on any format error) ...
    official = {f.name: f for f in text_string_to_metric_families(text)}
    assert "locus_tenant_hits" in official and official["locus_tenant_hits"].type == "counter"
    # ... and the strict reading here checks HELP/TYPE, unique names and label sets.
    fams = parse_exposition(text)
    assert set(official) == set(fams)
    assert len(fams) >= 40, sorted(fams)

    tenants = {k[len("tenant_"):]: v for k, v in info.items() if k.startswith("tenant_")}
    pools = {k[len("pool_"):]: v for k, v in info.items() if k.startswith("pool_")}
    assert set(tenants) == {"a", "b"}
    for t, ti in tenants.items():
        assert value(fams, "locus_tenant_hits", tenant=t) == ti["hits"]
        assert value(fams, "locus_tenant_misses", tenant=t) == ti["misses"]
        assert value(fams, "locus_tenant_items", tenant=t) == ti["items"]
        assert value(fams, "locus_tenant_pages", tenant=t) == ti["pages"]
        assert value(fams, "locus_tenant_used_bytes", tenant=t) == ti["used_bytes"]
        assert value(fams, "locus_tenant_expirations", tenant=t) == ti["expired"]
        assert value(fams, "locus_tenant_eviction_samples", tenant=t) == ti["samples"]
        assert value(fams, "locus_tenant_min_bytes", tenant=t) == ti["min"]
        assert value(fams, "locus_tenant_policy", tenant=t, policy=ti["policy"]) == 1
        assert tenant_sum(fams, "locus_tenant_evictions", t) == ti["evictions"]
        # INFO locus: pool figures and the miss penalty (INFO rounds it to 0.1 µs).
        pi = pools[t]
        assert value(fams, "locus_tenant_pages", tenant=t) == pi["pages"]
        assert pi["target"] == "none"
        assert not [k for k in fams.get("locus_tenant_target_pages", {"samples": {}})["samples"]
                    if dict(k[1])["tenant"] == t]
        pen = value(fams, "locus_tenant_miss_penalty_seconds", tenant=t) * 1e6
        assert abs(pen - float(pi["penalty_us"])) <= 0.05 + 1e-9, (pen, pi)
        assert value(fams, "locus_tenant_miss_penalty_samples", tenant=t) == pi["penalty_samples"]
        # The size classes add up to the tenant (1000-byte values: no large items).
        assert tenant_sum(fams, "locus_class_items", t) == ti["items"]
        assert tenant_sum(fams, "locus_class_hits", t) == ti["hits"]
    # The traffic did what it says: evictions in a, expirations and the hint in b.
    assert tenants["a"]["evictions"] > 0
    assert value(fams, "locus_tenant_evictions", tenant="a", cause="memory") > 0
    assert tenants["b"]["expired"] == 20
    assert value(fams, "locus_tenant_miss_penalty_seconds", tenant="b") == pytest.approx(750e-6)
    assert value(fams, "locus_tenant_deletes", tenant="b") == 2

    # Server-wide figures.
    assert value(fams, "locus_connected_clients") == info["connected_clients"]
    assert value(fams, "locus_tenant_clients", tenant="a") == 1
    assert value(fams, "locus_memory_max_bytes") == info["maxmemory"]
    assert value(fams, "locus_memory_pages_used") == info["pages_used"]
    assert value(fams, "locus_memory_pages_capacity") == info["pages_total"]
    # INFO counted itself once it returned.
    assert info["total_commands_processed"] <= value(fams, "locus_commands_processed") \
        <= info["total_commands_processed"] + 1
    assert value(fams, "locus_controller", name="none") == 1
    for cmd in ("get", "set", "del"):
        calls = info[f"cmdstat_{cmd}"]["calls"]
        assert value(fams, "locus_command_calls", command=cmd) == calls
        assert value(fams, "locus_command_duration_seconds", "locus_command_duration_seconds_count",
                     command=cmd) == calls
        assert value(fams, "locus_command_duration_seconds", "locus_command_duration_seconds_bucket",
                     command=cmd, le="+Inf") == calls
        usec = info[f"cmdstat_{cmd}"]["usec"]
        total = value(fams, "locus_command_duration_seconds", "locus_command_duration_seconds_sum",
                      command=cmd)
        assert abs(total * 1e6 - usec) <= 1.0, (total, usec)
    # Histogram buckets are cumulative.
    buckets = sorted(((float(dict(l)["le"]), v) for (n, l), v in
                      fams["locus_command_duration_seconds"]["samples"].items()
                      if n.endswith("_bucket") and dict(l)["command"] == "get"))
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)

    # The engine lock every tenant shares: taken at least once per batch the traffic above sent,
    # every acquisition in each histogram, and the scrape (which takes it too) counts at least as
    # many as INFO saw a moment before.
    acq = value(fams, "locus_engine_lock_acquisitions")
    assert acq >= info["engine_lock_acquisitions"] >= 10
    assert value(fams, "locus_engine_lock_contended") <= acq
    for h in ("locus_engine_lock_hold_seconds", "locus_engine_lock_wait_seconds"):
        assert value(fams, h, f"{h}_count") == acq
        assert value(fams, h, f"{h}_bucket", le="+Inf") == acq
    assert info["engine_lock_max_hold_us"] * 1e-6 <= value(
        fams, "locus_engine_lock_hold_seconds", "locus_engine_lock_hold_seconds_sum") + 1e-6
    # A tenant does not see them: they move with other tenants' load.
    assert not [k for k in ca.info("everything") if k.startswith("engine_lock")]


def test_api_and_controller_metrics(start_locus_toml):
    ports = free_ports(4)
    start_locus_toml(config(ports, controller="static",
                            extra="[controller.settings]\nshares = [1, 3]\n"), ports[1])
    ca, adm = client(ports[1], admin=False), client(ports[1])
    for start in range(0, 3000, 500):
        with ca.pipeline(transaction=False) as p:
            for i in range(start, start + 500):
                p.set(f"a:{i}", VALUE)
            p.execute()

    def ctl_info():
        ctl = adm.execute_command("LOCUS.CONTROLLER", "INFO")
        return dict(zip(ctl[0::2], ctl[1::2])) if isinstance(ctl, list) else ctl

    # Decisions are made by the tick task once due (never inside a request): wait until the
    # load's last due decision is made, so that INFO and the scrape count the same ones.
    wait_until(lambda: (c := ctl_info())["decisions"] >= 1 and c["due"] == 0, what="decisions")
    ctl = ctl_info()
    st, _, body = http_get(ports[3], "/metrics")
    fams = parse_exposition(body.decode())
    assert value(fams, "locus_controller", name="static", interval="1000req") == 1
    assert value(fams, "locus_controller_decisions") == ctl["decisions"] >= 1
    assert value(fams, "locus_tenant_target_pages", tenant="a") == 8
    assert value(fams, "locus_tenant_target_pages", tenant="b") == 24
    assert value(fams, "locus_controller_page_moves") >= 0

    wait_until(lambda: len(json.loads(http_get(ports[3], "/api/tenants")[2])["tenants"][0]
                           ["history"]["t_ms"]) >= 3, timeout=10, what="three samples")
    st, headers, body = http_get(ports[3], "/api/tenants")
    assert st == 200 and headers["Content-Type"] == "application/json"
    data = json.loads(body)
    assert data["controller"]["name"] == "static"
    a = next(t for t in data["tenants"] if t["name"] == "a")
    assert a["target"] == 8 and a["items"] > 0
    assert len(a["history"]["pages"]) == len(a["history"]["t_ms"]) >= 3
    assert data["decisions"] and data["decisions"][0]["targets"] == {"a": 8, "b": 24}
    st, _, body = http_get(ports[3], "/api/curves?tenant=b")
    assert st == 200
    curves = json.loads(body)
    assert [t["name"] for t in curves["tenants"]] == ["b"]


def test_bad_requests_and_timeouts(metrics_server):
    port = metrics_server["metrics"]
    # A client that connects and says nothing holds its connection until the read timeout.
    silent = socket.create_connection((HOST, port), timeout=20)
    t0 = time.monotonic()
    cases = [
        (b"GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404),
        (b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\nhi", 405),
        (b"PUT / HTTP/1.1\r\n\r\n", 405),
        (b"GET / HTTP/1.1\r\nHost: attacker.example\r\n\r\n", 403),
        (b"garbage\r\n\r\n", 400),
        (b"GET /metrics\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nno-colon\r\n\r\n", 400),
        (b"\xff\xfe\x00\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nX: " + b"y" * 20000 + b"\r\n\r\n", 431),
        (b"GET " + b"/" * 9000 + b" HTTP/1.1\r\n\r\n", 431),
    ]
    for req, want in cases:
        got = raw_http(port, req)
        assert status_of(got) == want, (req[:60], got[:200])
    resp = raw_http(port, b"HEAD /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert status_of(resp) == 200 and resp.endswith(b"\r\n\r\n")
    st, headers, _ = http_get(port, "/metrics", method="DELETE")
    assert st == 405 and headers["Allow"] == "GET, HEAD"
    # The silent client gets 408 after the 10 s read timeout, then the connection closes.
    silent.settimeout(20)
    got = b""
    while True:
        chunk = silent.recv(4096)
        if not chunk:
            break
        got += chunk
    silent.close()
    waited = time.monotonic() - t0
    assert status_of(got) == 408, got
    assert 8 <= waited <= 16, waited
    st, _, body = http_get(port, "/metrics")
    assert st == 200 and body.endswith(b"# EOF\n")
    assert metrics_server["srv"].alive()


def test_remote_bind_needs_allow_remote(tmp_path):
    cfg = tmp_path / "locus.toml"
    cfg.write_text("")
    out = subprocess.run([locus_bin(), "serve", "--config", str(cfg), "--metrics-bind", "0.0.0.0:9121",
                          "--print-config"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1, out
    assert "metrics.bind: 0.0.0.0:9121 is not a loopback address" in out.stderr
    assert "metrics.allow_remote" in out.stderr
    cfg.write_text("[metrics]\nallow_remote = true\n")
    out = subprocess.run([locus_bin(), "serve", "--config", str(cfg), "--metrics-bind", "0.0.0.0:9121",
                          "--print-config"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert '[metrics]\nbind = "0.0.0.0:9121"\nallow_remote = true' in out.stdout
    out = subprocess.run([locus_bin(), "serve", "--config", str(cfg), "--metrics-bind", "localhost:1",
                          "--print-config"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and "metrics.bind" in out.stderr
