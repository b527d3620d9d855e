#!/usr/bin/env python3
"""Redis fidelity (issue #2): does Locus's allkeys-lru with maxmemory-samples K miss like Redis 7's?

Replays a trace of ids (default ../shared/traces/cloudPhysicsIO.txt beside the repository: 113,872 requests, 48,974
keys) against a fresh redis-server and a fresh Locus, each with allkeys-lru, maxmemory-samples K,
and a maxmemory calibrated so that the same number of keys fits in both. Each request is a
GET of the key and, on a miss (nil), a SET of a fixed-size value: two sequential round trips on
one connection, no pipelining and no Lua, so every GET sees exactly the effect of all earlier
requests (batching GETs would turn a repeat of a key inside one batch into a second miss).

Redis's LRU clock ticks once per second, so how many requests share one tick depends on the replay
speed; both servers are replayed at the same paced rate (--rate requests/s).

Calibration, per server and capacity: on a fresh server with maxmemory M, write distinct fill keys
(same key length and value size as the replay) one GET + SET at a time until 3x the target count
was written, read DBSIZE, and bisect M until DBSIZE is within --tolerance keys of the target. The
replay servers are then started fresh with that M (values default to 4,000 bytes because client
query/reply buffers move Redis's used_memory by tens of KB, which is a few 4 KB keys but hundreds
of 100-byte keys); the table shows the calibrated DBSIZE and the
DBSIZE at the end of each replay.

Usage:
  bench/fidelity.py [--servers locus,redis] [--trace PATH] [--capacities 0.10,0.01] [--ks 1,5,10]
                    [--repeats 2] [--rate 5000] [--value-size 4000] [--tolerance 3] [--limit N]
                    [--json FILE]
Locus runs with `--locus-args` (default `--page-size 16KiB`).
`--servers redis,redis` measures Redis against itself (the noise floor of this comparison).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import SHARED_TRACES, BenchError, RespError, Server, mmm  # noqa: E402

DEFAULT_TRACE = os.path.join(SHARED_TRACES, "cloudPhysicsIO.txt")
LOCUS_EXTRA: list[str] = []


def load_trace(path, limit):
    ids = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s or s == "*":
                continue
            if not s.isdigit():
                raise BenchError(f"{path}:{lineno}: not a decimal id: {s[:40]!r}")
            ids.append(int(s))
            if limit and len(ids) >= limit:
                break
    if not ids:
        raise BenchError(f"{path}: no requests")
    return ids


def set_cmd(key: bytes, value: bytes) -> bytes:
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(value), value)


def extra_args(kind):
    return LOCUS_EXTRA if kind == "locus" else []


def fill_dbsize(kind, maxmemory, target, width, value):
    """Fresh server with `maxmemory`; writes 3*target distinct fill keys one by one; returns DBSIZE
    (0 when the server refuses a maxmemory that small, e.g. below one Locus page)."""
    try:
        srv = Server(kind, maxmemory=maxmemory, extra=extra_args(kind))
    except BenchError as e:
        if "smaller than" in str(e):
            return 0
        raise
    with srv:
        c = srv.conn()
        for i in range(3 * target + 100):
            key = b"f%0*d" % (width, i)
            # GET first, as the replay does, so client buffers look the same as in the replay.
            c.call("GET", key)
            c.send_raw(set_cmd(key, value))
            r = c.read_reply()
            if isinstance(r, RespError) and not r.startswith("OOM"):
                raise BenchError(f"{kind} fill SET: {r}")
        n = c.call("DBSIZE")
        c.close()
        return n


def calibrate(kind, target, width, value, tol, log):
    """Bisects maxmemory (bytes) so that DBSIZE after filling is within tol of target."""
    # The data alone needs more than target * value bytes; the bracket's top adds room for
    # per-key overhead and the empty server (grown by doubling if that is not enough).
    lo, hi = target * len(value), target * (len(value) + 400) + (4 << 20)
    seen = {}

    def probe(m):
        if m not in seen:
            seen[m] = fill_dbsize(kind, m, target, width, value)
            log(f"    calibrate {kind} target {target}: maxmemory {m} -> DBSIZE {seen[m]}")
        return seen[m]

    while probe(hi) < target:
        lo, hi = hi, hi * 2
        if hi > 1 << 34:
            raise BenchError(f"{kind}: DBSIZE never reaches {target}")
    best = hi
    for _ in range(40):
        if hi - lo <= 64:
            break
        mid = (lo + hi) // 2
        n = probe(mid)
        if abs(n - target) < abs(seen[best] - target):
            best = mid
        if abs(n - target) <= tol:
            best = mid
            break
        if n < target:
            lo = mid
        else:
            hi = mid
    return best, seen[best]


def replay(kind, maxmemory, samples, ids, width, value, rate):
    with Server(kind, maxmemory=maxmemory, samples=samples, extra=extra_args(kind)) as srv:
        c = srv.conn()
        get_prefix = b"*2\r\n$3\r\nGET\r\n$%d\r\n" % (width + 1)
        misses = 0
        t0 = time.monotonic()
        for i, x in enumerate(ids):
            if rate and i % 50 == 0:
                ahead = i / rate - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
            key = b"t%0*d" % (width, x)
            c.send_raw(get_prefix + key + b"\r\n")
            r = c.read_reply()
            if r is None:
                misses += 1
                c.send_raw(set_cmd(key, value))
                s = c.read_reply()
                if s != b"OK":
                    raise BenchError(f"{kind} SET {key!r}: {s!r}")
            elif isinstance(r, RespError):
                raise BenchError(f"{kind} GET {key!r}: {r}")
        secs = time.monotonic() - t0
        dbsize = c.call("DBSIZE")
        c.close()
    return {"misses": misses, "requests": len(ids), "miss_ratio": misses / len(ids), "seconds": secs,
            "dbsize_end": dbsize}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default="locus,redis")
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--capacities", default="0.10,0.01", help="fractions of the unique keys")
    ap.add_argument("--ks", default="1,5,10", help="maxmemory-samples values")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--rate", type=float, default=5000.0, help="paced requests/s (0 = as fast as possible)")
    ap.add_argument("--value-size", type=int, default=4000)
    ap.add_argument("--tolerance", type=int, default=3, help="calibration: |DBSIZE - target| allowed")
    ap.add_argument("--limit", type=int, default=0, help="replay only the first N requests (development)")
    ap.add_argument("--locus-args", default="--page-size 16KiB",
                    help="extra `locus serve` arguments (default: pages small enough that the "
                         "capacity can be set to a few keys; with 1 MiB pages it moves in steps of ~250 4 KB keys)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    LOCUS_EXTRA[:] = shlex.split(a.locus_args)
    kinds = a.servers.split(",")
    if len(kinds) != 2:
        ap.error("--servers needs two kinds, e.g. locus,redis")
    labels = kinds if kinds[0] != kinds[1] else [f"{kinds[0]}#1", f"{kinds[1]}#2"]
    try:
        caps = [float(x) for x in a.capacities.split(",")]
        ks = [int(x) for x in a.ks.split(",")]
    except ValueError as e:
        ap.error(f"bad --capacities/--ks: {e}")
    if any(not 0 < c <= 1 for c in caps) or any(not 1 <= k <= 64 for k in ks):
        ap.error("capacities must be in (0, 1], K in 1..64")
    if a.repeats <= 0 or a.value_size <= 0 or a.rate < 0:
        ap.error("--repeats and --value-size must be positive, --rate >= 0")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    stamp = datetime.datetime.now(datetime.timezone.utc)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    print(f"# fidelity.py {' '.join(sys.argv[1:])}  ({stamp:%Y-%m-%d %H:%M} UTC, {rev})", flush=True)
    ids = load_trace(a.trace, a.limit)
    uniq = len(set(ids))
    width = max(len(str(x)) for x in ids)
    value = (b"v" * a.value_size)
    log(f"trace {a.trace}: {len(ids)} requests, {uniq} unique keys; keys 't' + {width} digits, "
        f"values {a.value_size} B, rate {a.rate or 'unpaced'} req/s")

    calib = {}
    for cap in caps:
        target = max(1, int(cap * uniq))
        for kind, label in zip(kinds, labels):
            if (kind, target) not in calib:
                calib[(kind, target)] = calibrate(kind, target, width, value, a.tolerance, log)
            log(f"  {label} capacity {cap:.0%} ({target} keys): maxmemory {calib[(kind, target)][0]} "
                f"-> DBSIZE {calib[(kind, target)][1]}")

    runs = []
    for cap in caps:
        target = max(1, int(cap * uniq))
        for k in ks:
            for rep in range(a.repeats):
                for kind, label in (zip(kinds, labels) if rep % 2 == 0 else reversed(list(zip(kinds, labels)))):
                    m, n_cal = calib[(kind, target)]
                    r = replay(kind, m, k, ids, width, value, a.rate)
                    r.update({"server": label, "capacity": cap, "target": target, "k": k, "repeat": rep,
                              "maxmemory": m, "dbsize_calibrated": n_cal})
                    runs.append(r)
                    log(f"  {label} cap {cap:.0%} K={k} rep {rep + 1}: miss ratio {r['miss_ratio']:.4f} "
                        f"({r['seconds']:.1f}s, end DBSIZE {r['dbsize_end']})")

    A, B = labels
    print(f"\nTrace `{os.path.basename(a.trace)}` ({len(ids):,} requests, {uniq:,} keys), GET then SET-on-miss, "
          f"{a.value_size}-byte values, paced at {a.rate:g} req/s, {a.repeats} repeats; "
          f"miss ratio min / median / max; |diff| = |median {A} − median {B}| (goal <= 0.01)\n")
    print(f"| capacity (keys) | K | {A} maxmemory → calibrated / end DBSIZE | {B} maxmemory → calibrated / end DBSIZE "
          f"| {A} miss ratio | {B} miss ratio | \\|diff\\| |")
    print("|---|---:|---|---|---|---|---:|")
    import statistics
    for cap in caps:
        target = max(1, int(cap * uniq))
        for k in ks:
            ra = [r for r in runs if r["server"] == A and r["capacity"] == cap and r["k"] == k]
            rb = [r for r in runs if r["server"] == B and r["capacity"] == cap and r["k"] == k]
            ma = statistics.median(r["miss_ratio"] for r in ra)
            mb = statistics.median(r["miss_ratio"] for r in rb)
            ends_a = "/".join(str(r["dbsize_end"]) for r in ra)
            ends_b = "/".join(str(r["dbsize_end"]) for r in rb)
            print(f"| {cap:.0%} ({target}) | {k} | {ra[0]['maxmemory']:,} → {ra[0]['dbsize_calibrated']} / {ends_a} | "
                  f"{rb[0]['maxmemory']:,} → {rb[0]['dbsize_calibrated']} / {ends_b} | {mmm([r['miss_ratio'] for r in ra])} | "
                  f"{mmm([r['miss_ratio'] for r in rb])} | {abs(ma - mb):.4f} |")
    out = a.json or os.path.join(os.path.dirname(os.path.abspath(__file__)), "out",
                                 f"fidelity-{stamp:%Y%m%dT%H%M%SZ}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"argv": sys.argv, "date": stamp.isoformat(), "rev": rev, "runs": runs}, f, indent=1)
    print(f"\nraw results: {out}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"fidelity.py: {e}", file=sys.stderr)
        sys.exit(1)
