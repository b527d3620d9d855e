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
from benchlib import BenchError, Server, cpu_seconds  # noqa: E402

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


def one(server: Server, test: str, args, pipeline: int) -> float:
    """CPU µs per request of `server` for one redis-benchmark run of `test`."""
    c0 = cpu_seconds(server.pid)
    r = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port), "-t", test, "-n", str(args.n),
         "-c", str(args.clients), "-d", str(args.d), "-r", str(args.keyspace), "-P", str(pipeline), "-q"],
        capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise BenchError(f"redis-benchmark {test}: {r.stdout[-200:]} {r.stderr[-200:]}")
    return (cpu_seconds(server.pid) - c0) / args.n * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", default="locus,redis")
    ap.add_argument("--tests", default="set,get")
    ap.add_argument("-P", default="1,16", help="pipeline depths")
    ap.add_argument("-n", type=int, default=300_000)
    ap.add_argument("-c", "--clients", type=int, default=50)
    ap.add_argument("-d", type=int, default=100)
    ap.add_argument("--keyspace", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    servers = []
    for s in args.servers.split(","):
        name, _, path = s.partition("=")
        servers.append((name, path or None))
    tests = args.tests.split(",")
    depths = [int(p) for p in args.P.split(",")]
    cpu: dict[tuple[str, str, int], list[float]] = {}
    for _ in range(args.repeats):
        for name, path in servers:
            srv = start(name, path)
            try:
                for p in depths:
                    for t in tests:
                        cpu.setdefault((name, t, p), []).append(one(srv, t, args, p))
            finally:
                srv.stop()

    def mmm(xs, f="{:.2f}"):
        xs = sorted(xs)
        return " / ".join(f.format(v) for v in (xs[0], statistics.median(xs), xs[-1]))

    first = servers[0][0]
    print(f"\nserver CPU µs per request (utime+stime / requests); redis-benchmark -n {args.n} "
          f"-c {args.clients} -d {args.d} -r {args.keyspace}; min / median / max of {args.repeats} "
          f"interleaved repeats; ratio: against {first}, pair by pair\n")
    others = [n for n, _ in servers[1:]]
    print("| test | -P | " + " | ".join(n for n, _ in servers) + " | "
          + " | ".join(f"{n} / {first}" for n in others) + " |")
    print("|---|---|" + "---|" * (len(servers) + len(others)))
    for p in depths:
        for t in tests:
            row = [mmm(cpu[(n, t, p)]) for n, _ in servers]
            ratios = [mmm([b / a for a, b in zip(cpu[(first, t, p)], cpu[(n, t, p)])]) for n in others]
            print(f"| {t} | {p} | " + " | ".join(row) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main()
