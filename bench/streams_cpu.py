#!/usr/bin/env python3
"""Server CPU per XADD and per XREAD (issue #25), Locus beside redis-server in one run.

For each repeat, each server in turn (fresh, stopped by PID): N XADDs (`XADD s * a <i> b <i> c <i>`,
pipelined 1,000 at a time), then N XREADs (`XREAD COUNT 10 STREAMS s <id>` from IDs spread over
the stream: 10 entries each), on one connection. The server's CPU (utime + stime from
/proc/PID/stat) over each phase, divided by N: microseconds of server CPU per request. Prints
min / median / max over the repeats.

Usage: bench/streams_cpu.py [--servers locus,redis] [--repeats 3] [--n 200000]
"""

from __future__ import annotations

import argparse
import sys

from benchlib import BenchError, Server, cpu_seconds, encode, mmm

MiB = 1024 * 1024


def run(kind: str, n: int) -> dict:
    with Server(kind, maxmemory=1024 * MiB) as srv:
        c = srv.conn()
        ids = []
        t0 = cpu_seconds(srv.pid)
        for base in range(0, n, 1000):
            batch = [encode("XADD", "s", "*", "a", i, "b", i, "c", i) for i in range(base, min(n, base + 1000))]
            for r in c.pipeline(b"".join(batch), len(batch)):
                if not isinstance(r, bytes):
                    raise BenchError(f"{kind}: XADD answered {r!r}")
                ids.append(r)
        t1 = cpu_seconds(srv.pid)
        step = max(1, len(ids) // 1000)
        starts = ids[::step]
        for base in range(0, n, 1000):
            batch = [encode("XREAD", "COUNT", 10, "STREAMS", "s", starts[(base + j) % len(starts)])
                     for j in range(min(1000, n - base))]
            for r in c.pipeline(b"".join(batch), len(batch)):
                if not isinstance(r, list):
                    raise BenchError(f"{kind}: XREAD answered {r!r}")
        t2 = cpu_seconds(srv.pid)
        c.close()
    return {"xadd_us": (t1 - t0) / n * 1e6, "xread_us": (t2 - t1) / n * 1e6}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default="locus,redis")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=200_000)
    a = ap.parse_args()
    kinds = a.servers.split(",")
    res = {k: [] for k in kinds}
    print(f"# streams_cpu.py {' '.join(sys.argv[1:])}", flush=True)
    for rep in range(a.repeats):
        for k in kinds:
            r = run(k, a.n)
            res[k].append(r)
            print(f"  repeat {rep + 1} {k}: XADD {r['xadd_us']:.2f} us, XREAD {r['xread_us']:.2f} us",
                  file=sys.stderr, flush=True)
    print(f"\nserver CPU (utime+stime) per request, µs, {a.n:,} requests per phase, min / median / max over "
          f"{a.repeats} repeats\n")
    print("| server | XADD (3 fields) | XREAD COUNT 10 |")
    print("|---|---|---|")
    for k in kinds:
        print(f"| {k} | {mmm([r['xadd_us'] for r in res[k]], '{:.2f}')} | "
              f"{mmm([r['xread_us'] for r in res[k]], '{:.2f}')} |")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"streams_cpu.py: {e}", file=sys.stderr)
        sys.exit(1)
