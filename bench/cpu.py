#!/usr/bin/env python3
"""Server CPU per request, side by side: Locus builds and redis-server under the same
`redis-benchmark` load, interleaved, several repeats.

On a shared two-core machine throughput swings with the load generator and the kernel; the server
process's own CPU time (utime + stime from /proc/PID/stat) over a fixed number of requests is
steadier. For every repeat, every server in turn is started fresh, and for every pipeline depth and
every test one `redis-benchmark -t TEST -n N -c C -d D -r KEYSPACE -P p` runs against it; the CPU
the server spent during that run, divided by N, is the figure. Ratios are against the first
server named, pair by pair (same repeat, test and depth).

    cargo build --release --bin locus
    python3 bench/cpu.py                                         # locus and redis, GET and SET
    python3 bench/cpu.py --servers locus=target/release/locus,base=/tmp/old/locus --tests set,get
    python3 bench/cpu.py --tests ping_inline,set,get,incr,lpush,sadd,hset,zadd -n 300000
    python3 bench/cpu.py --tests default -n 100000               # issue 30's table

`--tests default` is redis-benchmark's default set, in its order. The LRANGE tests run as the
command itself (`LRANGE mylist 0 N-1`, after an unmeasured LPUSH fill when the list is missing),
because `-t lrange_N` would count redis-benchmark's own LPUSH fill of N requests with them.
Beside CPU the table gives redis-benchmark's requests per second (its --csv figure).

Server names: `redis` (redis-server), `locus` (LOCUS_BIN or target/release/locus), or
`NAME=PATH` for another Locus binary.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import BenchError, Server  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of `pid` so far, in seconds: the sum of the threads' run times
    in /proc/PID/task/*/schedstat (nanoseconds; the clock ticks of /proc/PID/stat are 10 ms, too
    coarse for short runs). A thread that ended between two readings would be lost: the servers
    measured keep theirs."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / 1e9

def start(name: str, path: str | None) -> Server:
    if name == "redis":
        return Server("redis", 1 << 30)
    old = benchlib.LOCUS_BIN
    try:
        if path:
            benchlib.LOCUS_BIN = path
        return Server("locus", 1 << 30, label=name)
    finally:
        benchlib.LOCUS_BIN = old


DEFAULT = ("ping_inline,ping_mbulk,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,"
           "lrange_100,lrange_300,lrange_500,lrange_600,mset")


def bench(server: Server, what: list[str], args, pipeline: int, n: int) -> float:
    """Runs redis-benchmark (`what`: `-t TEST` or a command) against `server`; requests/s."""
    r = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port), "-n", str(n),
         "-c", str(args.clients), "-d", str(args.d), "-r", str(args.keyspace), "-P", str(pipeline),
         "--csv", *what],
        capture_output=True, text=True, timeout=900)
    rows = [ln.split('","') for ln in r.stdout.splitlines() if ln.startswith('"') and not ln.startswith('"test"')]
    if r.returncode != 0 or not rows:
        raise BenchError(f"redis-benchmark {what}: {r.stdout[-200:]} {r.stderr[-200:]}")
    return float(rows[-1][1].strip('"'))


def one(server: Server, test: str, args, pipeline: int, n: int) -> tuple[float, float]:
    """CPU µs per request of `server` for one redis-benchmark run of `test`, and requests/s."""
    if test.startswith("lrange_"):
        c = server.conn()
        try:
            filled = c.call("LLEN", "mylist") >= 600
        finally:
            c.close()
        if not filled:
            bench(server, ["-t", "lpush"], args, pipeline, max(n, 600))
        what = ["LRANGE", "mylist", "0", str(int(test.split("_")[1]) - 1)]
    else:
        what = ["-t", test]
    c0 = cpu_seconds(server.pid)
    rps = bench(server, what, args, pipeline, n)
    return (cpu_seconds(server.pid) - c0) / n * 1e6, rps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", default="locus,redis")
    ap.add_argument("--tests", default="set,get")
    ap.add_argument("-P", default="1,16", help="pipeline depths")
    ap.add_argument("-n", type=int, default=300_000)
    ap.add_argument("--n-for", default="", help="requests for some tests: TEST=N,TEST=N (a "
                    "prefix ending in * matches: lrange_*=10000)")
    ap.add_argument("-c", "--clients", type=int, default=50)
    ap.add_argument("-d", type=int, default=100)
    ap.add_argument("--keyspace", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    servers = []
    for s in args.servers.split(","):
        name, _, path = s.partition("=")
        servers.append((name, path or None))
    tests = (DEFAULT if args.tests == "default" else args.tests).split(",")
    depths = [int(p) for p in args.P.split(",")]
    n_for = {}
    for kv in filter(None, args.n_for.split(",")):
        k, _, v = kv.partition("=")
        n_for[k] = int(v)

    def n_of(test: str) -> int:
        for k, v in n_for.items():
            if k == test or (k.endswith("*") and test.startswith(k[:-1])):
                return v
        return args.n

    cpu: dict[tuple[str, str, int], list[float]] = {}
    rps: dict[tuple[str, str, int], list[float]] = {}
    for _ in range(args.repeats):
        for name, path in servers:
            srv = start(name, path)
            try:
                for p in depths:
                    for t in tests:
                        c, r = one(srv, t, args, p, n_of(t))
                        cpu.setdefault((name, t, p), []).append(c)
                        rps.setdefault((name, t, p), []).append(r)
            finally:
                srv.stop()

    def mmm(xs, f="{:.2f}"):
        xs = sorted(xs)
        return " / ".join(f.format(v) for v in (xs[0], statistics.median(xs), xs[-1]))

    # Ratios against redis-server when it runs, else against the first server named.
    names = [n for n, _ in servers]
    base = "redis" if "redis" in names else names[0]
    others = [n for n in names if n != base]
    print(f"\nserver CPU µs per request (threads' run time / requests) and redis-benchmark's requests/s; "
          f"redis-benchmark -n {args.n} {args.n_for} -c {args.clients} -d {args.d} -r {args.keyspace}; "
          f"min / median / max of {args.repeats} interleaved repeats; ratios: NAME / {base}, pair by "
          f"pair (CPU: lower is better, requests/s: higher is better)\n")
    print("| test | -P | " + " | ".join(f"CPU {n}" for n in names) + " | "
          + " | ".join(f"CPU {n} / {base}" for n in others) + " | "
          + " | ".join(f"req/s {n} / {base}" for n in others) + " | "
          + " | ".join(f"req/s {n} (k)" for n in names) + " |")
    print("|---|---|" + "---|" * (2 * len(names) + 2 * len(others)))
    for p in depths:
        for t in tests:
            row = [mmm(cpu[(n, t, p)]) for n in names]
            ratios = [mmm([b / a if a else float("nan") for a, b in zip(cpu[(base, t, p)], cpu[(n, t, p)])]) for n in others]
            rr = [mmm([b / a for a, b in zip(rps[(base, t, p)], rps[(n, t, p)])]) for n in others]
            thr = [mmm([x / 1000 for x in rps[(n, t, p)]], "{:.0f}") for n in names]
            print(f"| {t} | {p} | " + " | ".join(row) + " | **" + "** | **".join(ratios) + "** | "
                  + " | ".join(rr) + " | " + " | ".join(thr) + " |")


if __name__ == "__main__":
    main()
