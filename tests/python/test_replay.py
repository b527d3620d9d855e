"""`locus replay`, the live harness (issue 14): its own tests, over real sockets.

* Against the in-process fake server it counts hits and misses exactly (the counts an exact
  model of the trace gives, and the fake server's own counts).
* Against Debian's redis-server (and Locus, and Debian's memcached) its hit and miss counts are
  the server's own `keyspace_hits` / `keyspace_misses` (`get_hits` / `get_misses`).
* A bad target, an unreachable backend and a malformed trace are clear errors: exit status 1,
  a message naming the problem, no panic.
* The PostgreSQL it starts is stopped whatever happens: after a run, after an error in the
  middle of the run, after Ctrl-C.

These tests start their own servers (they do not use the `server` fixture), so they run the same
whatever `--peer` says.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

import harness

HAVE_PG = any(
    shutil.which(b) or list(Path("/usr/lib/postgresql").glob(f"*/bin/{b}"))
    for b in ["initdb"]
)


def write_trace(path: Path, n: int = 3000, keys: int = 400, tenants: int = 2, seed: int = 7,
                ops: bool = True) -> list[tuple[int, int, str]]:
    """A Locus CSV trace; returns (tenant, key, op) rows."""
    rng = random.Random(seed)
    rows = []
    with open(path, "w") as f:
        f.write("time_us,tenant,key,key_size,value_size,op,penalty_us\n")
        for i in range(n):
            t = rng.randrange(tenants)
            # Half the requests on 50 hot keys, half spread over all of them.
            k = rng.randrange(50) if rng.random() < 0.5 else rng.randrange(keys)
            r = rng.random()
            op = "get" if not ops or r < 0.85 else ("set" if r < 0.95 else "delete")
            rows.append((t, k, op))
            f.write(f"{i},{t},{k},8,{rng.randrange(10, 200)},{op},\n")
    return rows


def exact_counts(rows) -> tuple[int, int]:
    """Hits and misses of a look-aside client on an unbounded cache."""
    present, hits, misses = set(), 0, 0
    for t, k, op in rows:
        if op == "get":
            if (t, k) in present:
                hits += 1
            else:
                misses += 1
                present.add((t, k))
        elif op == "set":
            present.add((t, k))
        else:
            present.discard((t, k))
    return hits, misses


def replay(*args, check=True, timeout=120) -> tuple[subprocess.CompletedProcess, dict | None]:
    p = subprocess.run([harness.locus_bin(), "replay", *map(str, args), "--json", "--quiet"],
                       capture_output=True, text=True, timeout=timeout)
    if check:
        assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout) if p.returncode == 0 else None
    return p, rep


def assert_clear_error(p: subprocess.CompletedProcess, *words: str):
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("locus: "), p.stderr
    assert "panicked" not in p.stderr and "RUST_BACKTRACE" not in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, (w, p.stderr)


@pytest.fixture
def tmp():
    d = Path(tempfile.mkdtemp(prefix="locus-replay-test-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_fake_server_counts_hits_and_misses_exactly(tmp):
    rows = write_trace(tmp / "t.csv")
    hits, misses = exact_counts(rows)
    _, rep = replay(tmp / "t.csv", "--target", "fake", "--connections", "3")
    c = rep["overall"]["counters"]
    assert (c["hits"], c["misses"]) == (hits, misses)
    assert c["gets"] == sum(1 for r in rows if r[2] == "get")
    assert c["writes"] == len(rows) - c["gets"]
    assert rep["fake_counts"] == [hits, misses]
    # Per tenant too.
    for i, t in enumerate(sorted(rep["tenants"], key=lambda t: t["name"])):
        th, tm = exact_counts([r for r in rows if r[0] == i])
        assert (t["counters"]["hits"], t["counters"]["misses"]) == (th, tm)


def test_warmup_is_sent_but_not_measured(tmp):
    rows = write_trace(tmp / "t.csv", ops=False)
    _, rep = replay(tmp / "t.csv", "--target", "fake", "--warmup", "1000")
    o = rep["overall"]
    assert o["all"]["gets"] == len(rows)
    assert o["counters"]["gets"] == len(rows) - 1000
    assert o["all"]["hits"] + o["all"]["misses"] == len(rows)
    assert sum(rep["fake_counts"]) == len(rows)


def test_delay_backend_charges_each_miss(tmp):
    rows = write_trace(tmp / "t.csv", n=600, ops=False)
    _, rep = replay(tmp / "t.csv", "--target", "fake", "--backend", "delay:2ms",
                    "--backend", "1=none", "--connections", "4")
    by = {t["name"]: t for t in rep["tenants"]}
    t0, t1 = by["t0"], by["t1"]
    assert t0["counters"]["backend_calls"] == t0["counters"]["misses"] > 0
    assert t1["counters"]["backend_calls"] == 0
    # A miss slept at least its 2 ms; a hit did not.
    assert t0["backend"]["p50_us"] >= 2000
    assert t0["latency"]["max_us"] >= 2000
    assert t1["latency"]["p50_us"] < 2000


def test_hit_ratio_is_redis_servers_own(tmp):
    rows = write_trace(tmp / "t.csv", n=8000, keys=6000)
    srv = harness.start_redis(["--maxmemory-policy", "allkeys-lru"])
    try:
        # Room for a fraction of the keys above what an empty server uses.
        base = redis.Redis(port=srv.port).info("memory")["used_memory"]
        redis.Redis(port=srv.port).config_set("maxmemory", base + 300_000)
        _, rep = replay(tmp / "t.csv", "--target", f"redis://127.0.0.1:{srv.port}",
                        "--tenants", "db", "--connections", "2", "--out", tmp / "out")
        info = redis.Redis(port=srv.port).info("stats")
        o = rep["overall"]["all"]
        assert (o["hits"], o["misses"]) == (info["keyspace_hits"], info["keyspace_misses"])
        assert info["evicted_keys"] > 0, "the memory limit should have been reached"
        # (Redis may also answer a SET with -OOM when client buffers count against maxmemory:
        # the harness counts those as errors, and the GET before it as the miss Redis counted.)
        ratio = info["keyspace_hits"] / (info["keyspace_hits"] + info["keyspace_misses"])
        assert rep["server_hit_ratio"] == pytest.approx(ratio, abs=1e-12)
        assert rep["overall"]["hit_ratio"] == pytest.approx(ratio, abs=1e-12)
        # Tenants went to databases 0 and 1: the second tenant's connections SELECTed 1 (its keys
        # may all have been evicted by the end, so INFO keyspace need not list db1).
        cmds = redis.Redis(port=srv.port).info("commandstats")
        assert cmds.get("cmdstat_select", {}).get("calls", 0) >= 1, cmds
        by = {t["name"]: t for t in rep["tenants"]}
        assert len(by) == 2 and all(t["counters"]["gets"] > 0 for t in by.values()), by
        for f in ["summary.csv", "series.csv", "server.csv", "report.json", "latency.png",
                  "hit_ratio.png"]:
            assert (tmp / "out" / f).stat().st_size > 0, f
    finally:
        srv.stop()


def test_hit_ratio_is_locus_servers_own(tmp):
    rows = write_trace(tmp / "t.csv", n=3000)
    port = harness.free_port()
    srv = harness.start_locus(f'[server]\nport = {port}\n[memory]\nmaxmemory = "64MiB"\n', port)
    try:
        _, rep = replay(tmp / "t.csv", "--target", f"redis://127.0.0.1:{port}")
        info = redis.Redis(port=port).info("stats")
        o = rep["overall"]["all"]
        assert (o["hits"], o["misses"]) == (info["keyspace_hits"], info["keyspace_misses"])
        assert (o["hits"], o["misses"]) == exact_counts(rows)
        # Locus's per-tenant view, sampled with the rest (the last sample is after the last reply).
        last = dict(rep["server"][-1]["fields"])
        assert (int(last["tenant_default.hits"]), int(last["tenant_default.misses"])) == \
            (o["hits"], o["misses"])
    finally:
        srv.stop()


def test_memcached_target_counts_match_memcached(tmp):
    rows = write_trace(tmp / "t.csv", n=2000)
    srv = harness.start_memcached()
    try:
        _, rep = replay(tmp / "t.csv", "--target", f"memcached://127.0.0.1:{srv.port}",
                        "--connections", "2")
        o = rep["overall"]["all"]
        assert (o["hits"], o["misses"]) == exact_counts(rows)
        s = dict(rep["server"][-1]["fields"])
        assert (int(s["get_hits"]), int(s["get_misses"])) == (o["hits"], o["misses"])
    finally:
        srv.stop()


def test_open_loop_paces_requests(tmp):
    write_trace(tmp / "t.csv", n=400, ops=False)
    t0 = time.monotonic()
    _, rep = replay(tmp / "t.csv", "--target", "fake", "--rate", "400")
    took = time.monotonic() - t0
    assert rep["overall"]["all"]["gets"] == 400
    assert took >= 0.95, took  # 400 requests at 400/s end no sooner than ~1 s


def test_bad_target_is_a_clear_error(tmp):
    write_trace(tmp / "t.csv", n=10)
    p, _ = replay(tmp / "t.csv", "--target", "http://x", check=False)
    assert_clear_error(p, "--target", "unknown scheme")
    p, _ = replay(tmp / "t.csv", "--target", "redis://127.0.0.1", check=False)
    assert_clear_error(p, "--target", "no port")
    port = harness.free_port()
    p, _ = replay(tmp / "t.csv", "--target", f"redis://127.0.0.1:{port}", check=False)
    assert_clear_error(p, f"target 127.0.0.1:{port}", "refused")
    p, _ = replay(tmp / "t.csv", "--target", "fake", "--backend", "pg:nope", check=False)
    assert_clear_error(p, "--backend", "pg:nope")


def test_malformed_trace_is_a_clear_error(tmp):
    bad = tmp / "bad.csv"
    bad.write_text("time_us,tenant,key,key_size,value_size,op,penalty_us\n"
                   "0,0,1,8,10,get,\n1,0,x,8,10,get,\n")
    p, _ = replay(bad, "--target", "fake", check=False)
    assert_clear_error(p, "bad.csv", "line 3")
    p, _ = replay(tmp / "missing.csv", "--target", "fake", check=False)
    assert_clear_error(p, "missing.csv")


def test_unmapped_tenant_is_a_clear_error(tmp):
    write_trace(tmp / "t.csv", n=50, tenants=3)
    srv = harness.start_redis()
    try:
        p, _ = replay(tmp / "t.csv", "--target", f"redis://127.0.0.1:{srv.port}",
                      "--tenants", "db:0,1", check=False)
        assert_clear_error(p, "tenant 2", "--tenants")
    finally:
        srv.stop()


def test_unreachable_backend_is_a_clear_error(tmp):
    write_trace(tmp / "t.csv", n=10)
    port = harness.free_port()
    p, _ = replay(tmp / "t.csv", "--target", "fake", "--backend", "pg:pk",
                  "--pg-url", f"host=127.0.0.1 port={port} user=nobody", check=False)
    assert_clear_error(p, "backend postgres", str(port), "refused")
    p, _ = replay(tmp / "t.csv", "--target", "fake", "--backend", "pg:pk",
                  "--pg-bin", tmp / "no-such-dir", check=False)
    assert_clear_error(p, "backend postgres", "initdb", "not found")


def postgres_processes(marker: Path) -> list[int]:
    """PIDs of processes whose command line mentions `marker` (the run's data directory parent)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if str(marker).encode() in cmd and b"postgres" in cmd:
                out.append(int(d.name))
    return out


def pg_tmp(tmp: Path) -> Path:
    d = tmp / "pg"
    d.mkdir()
    os.chmod(d, 0o777)  # the server may run as the `postgres` user when tests run as root
    os.chmod(tmp, 0o755)
    return d


@pytest.mark.skipif(not HAVE_PG, reason="PostgreSQL not installed (scripts/install-deps.sh)")
def test_postgres_backend_runs_and_is_always_stopped(tmp):
    rows = write_trace(tmp / "t.csv", n=1500, ops=False)
    pgdir = pg_tmp(tmp)
    # Tenant 0: primary-key lookups; tenant 1: half of its keys aggregate 20 000 rows.
    _, rep = replay(tmp / "t.csv", "--target", "fake", "--backend", "0=pg:pk",
                    "--backend", "1=pg:two:0.5:20000", "--pg-rows", "1000", "--pg-tmp", pgdir,
                    "--connections", "2")
    by = {t["name"]: t for t in rep["tenants"]}
    assert (rep["overall"]["all"]["hits"], rep["overall"]["all"]["misses"]) == exact_counts(rows)
    assert by["t0"]["counters"]["backend_calls"] == by["t0"]["counters"]["misses"]
    assert by["t0"]["counters"]["backend_slow"] == 0
    slow = by["t1"]["counters"]["backend_slow"]
    assert 0 < slow < by["t1"]["counters"]["backend_calls"]
    # The aggregate costs more than the key lookup.
    assert by["t1"]["backend"]["p99_us"] > by["t0"]["backend"]["p50_us"]
    assert postgres_processes(pgdir) == []
    assert list(pgdir.iterdir()) == []

    # An error in the middle of the run (a malformed line after the server started).
    bad = tmp / "bad.csv"
    bad.write_text((tmp / "t.csv").read_text() + "9999,0,x,8,10,get,\n")
    p, _ = replay(bad, "--target", "fake", "--backend", "pg:pk", "--pg-rows", "100",
                  "--pg-tmp", pgdir, check=False)
    assert_clear_error(p, "bad.csv", "line 1502")
    assert postgres_processes(pgdir) == []
    assert list(pgdir.iterdir()) == []


@pytest.mark.skipif(not HAVE_PG, reason="PostgreSQL not installed (scripts/install-deps.sh)")
def test_postgres_is_stopped_on_ctrl_c(tmp):
    write_trace(tmp / "t.csv", n=200, ops=False)
    pgdir = pg_tmp(tmp)
    p = subprocess.Popen([harness.locus_bin(), "replay", tmp / "t.csv", "--target", "fake",
                          "--backend", "pg:agg:1000", "--pg-rows", "100", "--pg-tmp", pgdir,
                          "--rate", "5", "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        harness.wait_until(lambda: postgres_processes(pgdir), timeout=30, what="postgres started")
        harness.wait_until(lambda: any(pgdir.rglob("PG_VERSION")), timeout=30, what="initdb")
        time.sleep(1.5)  # let it load and run a few requests
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, err
    assert "interrupted" in err
    assert postgres_processes(pgdir) == []
    assert list(pgdir.iterdir()) == []


@pytest.mark.skipif(not HAVE_PG, reason="PostgreSQL not installed (scripts/install-deps.sh)")
def test_postgres_orphaned_by_sigkill_is_reaped_by_the_next_run(tmp):
    """SIGKILL leaves the harness no chance to stop its PostgreSQL; the next run in the same
    directory stops it and removes its files."""
    write_trace(tmp / "t.csv", n=200, ops=False)
    pgdir = pg_tmp(tmp)
    p = subprocess.Popen([harness.locus_bin(), "replay", tmp / "t.csv", "--target", "fake",
                          "--backend", "pg:pk", "--pg-rows", "100", "--pg-tmp", pgdir,
                          "--rate", "5", "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        harness.wait_until(lambda: postgres_processes(pgdir), timeout=30, what="postgres started")
        time.sleep(1.0)
    finally:
        p.kill()
        p.wait()
    assert postgres_processes(pgdir), "postgres should have outlived the SIGKILLed harness"
    _, rep = replay(tmp / "t.csv", "--target", "fake", "--backend", "pg:pk", "--pg-rows", "100",
                    "--pg-tmp", pgdir, "--requests", "20")
    assert rep["overall"]["all"]["gets"] == 20
    harness.wait_until(lambda: not postgres_processes(pgdir), timeout=10, what="orphan stopped")
    assert list(pgdir.iterdir()) == []
