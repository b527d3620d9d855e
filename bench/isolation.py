#!/usr/bin/env python3
"""Latency isolation between two tenants: one paced, one running heavy legal commands.

Tenant A sends GET/SET at a fixed rate (2,000 per second by default) on one connection, and each
request's latency is taken from its *intended* send time, so a stall also counts against every
request that should have been sent while the server was not answering (no coordinated omission).
Tenant B meanwhile runs, one after another, the commands of issue #23's acceptance 1: `KEYS *` over
N keys, `HGETALL` of an N-field hash, `SMEMBERS` of N, `ZUNIONSTORE` of two N/2 sets,
`SUNIONSTORE` of N, `FLUSHDB` of N keys, a `MULTI` of N/10 SETs, a pipelined bulk load, and
`ZINTERCARD` of 200 keys. B's data for each phase is loaded before the phase starts; A's latency
while loading is not reported except in the bulk-load phase, which is that load.

The same script runs against Locus (two tenants in `db` tenancy: A is db 0, B is db 1) and
redis-server (two databases of one server), one after the other in the same run. It prints, for
each target and phase, how long B's command took and A's p50 / p99 / max latency in that window.

    cargo build --release --bin locus
    python3 bench/isolation.py                      # N = 1,000,000 (about 2 minutes per target)
    python3 bench/isolation.py --keys 100000 --targets locus --threads 2

Only the standard library; `Server`/`Conn` come from bench/benchlib.py.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import BenchError, Conn, RespError, Server, encode  # noqa: E402

LOAD_BATCH = 1000  # commands per pipelined send while loading B's data
ZINTER_SET = 100_000  # members of each of ZINTERCARD's two sorted sets (issue #23's probe)


def load(c: Conn, cmds):
    """Sends an iterable of argument tuples in pipelined batches; fails on any error reply."""
    batch = []
    for args in cmds:
        batch.append(encode(*args))
        if len(batch) == LOAD_BATCH:
            _flush(c, batch)
            batch = []
    if batch:
        _flush(c, batch)


def _flush(c: Conn, batch):
    for r in c.pipeline(b"".join(batch), len(batch)):
        if isinstance(r, RespError):
            raise BenchError(f"load failed: {r}")


def chunks(prefix: str, n: int, per: int):
    """`per`-sized runs of (member, value) for variadic HSET/SADD/ZADD."""
    for start in range(0, n, per):
        yield range(start, min(n, start + per))


def phases(n: int):
    """(name, setup(conn), run(conn)) for each of B's phases; `run` is what is timed."""

    def strings(c):
        load(c, (("SET", f"k:{i}", "v") for i in range(n)))

    def hash_(c):
        load(c, (("HSET", "h", *[x for i in r for x in (f"f{i}", "v")]) for r in chunks("f", n, 100)))

    def set_(c, key, lo, hi):
        load(c, (("SADD", key, *[f"m{i}" for i in r if lo <= i < hi]) for r in chunks("m", hi, 100) if r.stop > lo))

    def zset(c, key, lo, hi):
        load(c, (("ZADD", key, *[x for i in r if lo <= i < hi for x in (i, f"m{i}")])
                 for r in chunks("m", hi, 100) if r.stop > lo))

    def run(*args):
        return lambda c: c.call(*args)

    def multi(c):
        c.send_raw(encode("MULTI") + b"".join(encode("SET", f"t:{i}", "v") for i in range(n // 10)) + encode("EXEC"))
        for _ in range(n // 10 + 1):
            c.read_reply()
        return c.read_reply()

    def bulk(c):
        load(c, (("SET", f"bulk:{i}", "v" * 32) for i in range(n)))

    return [
        ("KEYS * over N keys", strings, run("KEYS", "*")),
        ("HGETALL of an N-field hash", hash_, run("HGETALL", "h")),
        ("SMEMBERS of N", lambda c: set_(c, "s", 0, n), run("SMEMBERS", "s")),
        ("ZUNIONSTORE of two N/2 sets",
         lambda c: (zset(c, "z1", 0, n // 2), zset(c, "z2", n // 4, n // 4 + n // 2)),
         run("ZUNIONSTORE", "zu", 2, "z1", "z2")),
        ("SUNIONSTORE of N", lambda c: set_(c, "s2", n // 2, n + n // 2), run("SUNIONSTORE", "su", "s", "s2")),
        ("FLUSHDB of N keys", lambda c: None, run("FLUSHDB")),
        ("MULTI of N/10 SETs", lambda c: None, multi),
        ("pipelined bulk load of N SETs", lambda c: None, bulk),
        ("ZINTERCARD of 200 keys",
         lambda c: (zset(c, "zi1", 0, ZINTER_SET), zset(c, "zi2", ZINTER_SET // 2, ZINTER_SET // 2 + ZINTER_SET)),
         run("ZINTERCARD", 200, *(["zi1", "zi2"] * 100))),
    ]


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def measure_all(server, db_a, db_b, n, rate, idle_s, gap_s):
    """Runs A's idle window and every phase of B; returns [(phase, B's seconds, A's latencies)]."""
    b = Conn(server.port, timeout=600.0)
    if db_b:
        b.call("SELECT", db_b)
    b.call("FLUSHDB")
    plan = phases(n)
    # A runs for the whole measurement; its end is set once B is done (through a shared value).
    out: mp.Queue = mp.Queue()
    stop = mp.Value("d", time.monotonic() + 3600.0)
    a = mp.Process(target=_pacer_until, args=(server.port, db_a, rate, stop, out), daemon=True)
    a.start()
    time.sleep(0.5)
    windows = []
    t = time.monotonic()
    time.sleep(idle_s)
    windows.append(("idle (A alone)", t, time.monotonic(), 0.0))
    for name, setup, run in plan:
        setup(b)
        time.sleep(gap_s)
        t = time.monotonic()
        r = run(b)
        t_end = time.monotonic()
        if isinstance(r, RespError):
            raise BenchError(f"{name}: {r}")
        windows.append((name, t, t_end, t_end - t))
        time.sleep(gap_s)
    stop.value = time.monotonic()
    samples = out.get(timeout=60)
    a.join(10)
    b.call("FLUSHDB")
    b.close()
    rows = []
    for name, t0, t1, secs in windows:
        # A's requests intended while B's command ran (and up to gap_s after: the stall's tail).
        lat = [lat for (at, lat) in samples if t0 <= at <= t1 + (0 if secs == 0 else gap_s / 2)]
        rows.append((name, secs, lat))
    return rows


def _pacer_until(port, db, rate, stop, out):
    c = Conn(port, timeout=600.0)
    if db:
        c.call("SELECT", db)
    c.call("SET", "a:key", "x" * 64)
    period = 1.0 / rate
    t0 = time.monotonic() + 0.05
    samples = []
    i = 0
    while True:
        intended = t0 + i * period
        if intended >= stop.value:
            break
        now = time.monotonic()
        if now < intended:
            time.sleep(intended - now)
        c.send_raw(encode("GET", "a:key") if i % 2 == 0 else encode("SET", "a:key", "y" * 64))
        r = c.read_reply()
        if isinstance(r, RespError):
            out.put([])
            raise BenchError(f"tenant A got an error: {r}")
        samples.append((intended, time.monotonic() - intended))
        i += 1
    c.close()
    out.put(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000, help="N (default 1,000,000)")
    ap.add_argument("--rate", type=float, default=2000.0, help="tenant A's requests per second")
    ap.add_argument("--threads", type=int, default=2, help="Locus's server.threads")
    ap.add_argument("--targets", default="locus,redis", help="comma-separated: locus, redis")
    ap.add_argument("--idle", type=float, default=3.0, help="seconds of A alone (its idle p99)")
    ap.add_argument("--gap", type=float, default=0.5, help="seconds between phases")
    args = ap.parse_args()

    results = {}
    for target in args.targets.split(","):
        if target == "locus":
            cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
            cfg.write('[tenancy]\nmode = "db"\n[[tenant]]\nname = "a"\ndb = 0\n[[tenant]]\nname = "b"\ndb = 1\n')
            cfg.close()
            server = Server("locus", 2 << 30, extra=["--config", cfg.name, "--threads", str(args.threads)])
        elif target == "redis":
            server = Server("redis", 2 << 30)
        else:
            raise SystemExit(f"unknown target {target!r}")
        try:
            results[target] = measure_all(server, 0, 1, args.keys, args.rate, args.idle, args.gap)
        finally:
            server.stop()

    print(f"\nN = {args.keys:,}; tenant A paced at {args.rate:.0f} GET/SET per second; "
          f"latency from each request's intended send time (ms)\n")
    print("| target | B's phase | B's command (s) | A's requests | A p50 | A p99 | A max |")
    print("|---|---|---|---|---|---|---|")
    verdicts = []
    for target, rows in results.items():
        idle_p99 = pct(rows[0][2], 0.99)
        for name, secs, lat in rows:
            ms = [x * 1000 for x in lat]
            p99 = pct(ms, 0.99)
            print(f"| {target} | {name} | {secs:.3f} | {len(ms)} | {pct(ms, 0.5):.2f} | {p99:.2f} | "
                  f"{max(ms) if ms else float('nan'):.2f} |")
            if secs:
                ok = p99 <= max(2 * idle_p99 * 1000, 0) and p99 < 5.0
                verdicts.append((target, name, ok))
    print()
    for target in results:
        bad = [name for t, name, ok in verdicts if t == target and not ok]
        print(f"{target}: A's p99 within 2x idle and under 5 ms in "
              f"{sum(1 for t, _, ok in verdicts if t == target and ok)} of "
              f"{sum(1 for t, _, _ in verdicts if t == target)} phases"
              + (f" (not: {', '.join(bad)})" if bad else ""))


if __name__ == "__main__":
    main()
