#!/usr/bin/env python3
"""Server CPU per DUMP and per RESTORE of large values (issue #26), Locus beside redis-server in
one run.

For each repeat, each server in turn (fresh, stopped by PID): a list, a hash and a sorted set of
N elements are built (`hash-max-listpack-entries 128` on both: Debian's redis-server compiles in
512), then each is DUMPed `--ops` times and its payload RESTOREd (REPLACE) `--ops` times under
another key. The server's CPU (utime + stime from /proc/PID/stat) over each phase, divided by the
operations: milliseconds of server CPU per DUMP or RESTORE. Prints min / median / max over the
repeats, and each payload's size.

Usage: bench/dump_restore_cpu.py [--servers locus,redis] [--repeats 3] [--n 100000] [--ops 20]
"""

from __future__ import annotations

import argparse
import sys

from benchlib import BenchError, Server, cpu_seconds, encode, mmm

MiB = 1024 * 1024
KINDS = ("list", "hash", "zset")


def build(c, kind: str, n: int):
    for base in range(0, n, 1000):
        r = range(base, min(n, base + 1000))
        if kind == "list":
            cmd = encode("RPUSH", "list", *[f"element-{i}" for i in r])
        elif kind == "hash":
            cmd = encode("HSET", "hash", *[x for i in r for x in (f"field{i}", f"value{i}")])
        else:
            cmd = encode("ZADD", "zset", *[x for i in r for x in (i, f"m{i}")])
        (reply,) = c.pipeline(cmd, 1)
        if not isinstance(reply, int):
            raise BenchError(f"building {kind}: {reply!r}")


def run(server: str, n: int, ops: int) -> dict:
    out = {}
    with Server(server, maxmemory=1024 * MiB) as srv:
        c = srv.conn()
        c.call("CONFIG", "SET", "hash-max-listpack-entries", "128")
        for kind in KINDS:
            build(c, kind, n)
            t0 = cpu_seconds(srv.pid)
            for _ in range(ops):
                payload = c.call("DUMP", kind)
            t1 = cpu_seconds(srv.pid)
            if not isinstance(payload, bytes):
                raise BenchError(f"{server}: DUMP {kind} answered {payload!r}")
            for _ in range(ops):
                r = c.call("RESTORE", kind + ":copy", 0, payload, "REPLACE")
                if r != b"OK":
                    raise BenchError(f"{server}: RESTORE {kind} answered {r!r}")
            t2 = cpu_seconds(srv.pid)
            out[kind] = ((t1 - t0) / ops * 1e3, (t2 - t1) / ops * 1e3, len(payload))
        c.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default="locus,redis")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--ops", type=int, default=20)
    a = ap.parse_args()
    servers = a.servers.split(",")
    res = {s: [] for s in servers}
    print(f"# dump_restore_cpu.py {' '.join(sys.argv[1:])}", flush=True)
    for rep in range(a.repeats):
        for s in servers:
            r = run(s, a.n, a.ops)
            res[s].append(r)
            print(f"  repeat {rep + 1} {s}: " + ", ".join(
                f"{k} DUMP {r[k][0]:.1f} ms RESTORE {r[k][1]:.1f} ms" for k in KINDS), file=sys.stderr, flush=True)
    print(f"\nserver CPU (utime+stime) per operation, ms, values of {a.n:,} elements, {a.ops} operations "
          f"per phase, min / median / max over {a.repeats} repeats\n")
    print("| server | value | payload bytes | DUMP | RESTORE |")
    print("|---|---|---|---|---|")
    for s in servers:
        for k in KINDS:
            print(f"| {s} | {k} | {res[s][0][k][2]:,} | {mmm([r[k][0] for r in res[s]], '{:.1f}')} | "
                  f"{mmm([r[k][1] for r in res[s]], '{:.1f}')} |")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"dump_restore_cpu.py: {e}", file=sys.stderr)
        sys.exit(1)
