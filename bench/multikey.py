#!/usr/bin/env python3
"""Multi-key set and sorted-set commands, Locus vs redis-server side by side (issue #27, point 1).

Both servers are started fresh (loopback, free ports, `maxmemory 1gb`) and loaded with the same
inputs: two sets `s:a`, `s:b` and two sorted sets `z:a`, `z:b` of 100,000 members each, half of
them shared (`m:0`..`m:99999` and `m:50000`..`m:149999`; scores are the member's number), plus an
intset-free set `s:one` of 100,000 members for the one-key shape. For every command and every key
count N (2, 10, 200, 400) two shapes are run:

* `alt`: the key list `a b a b ...` (N keys, two distinct), the shape of the issue's
  `ZINTERCARD 400 z z2 z z2 ...`;
* `one`: one key named N times (`s:a s:a ...`), where Redis shortcuts repeated keys;
* `first` (`--shapes first`, meant for the differences, where `alt` and `one` name the first
  key again and both servers answer at once): `a` then `b` named N - 1 times.

Each (command, N, shape) runs on both servers, interleaved (Locus, Redis, Locus, Redis, ...),
`--repeats` times (default 3), or fewer when one case has already taken `--case-budget` seconds
(default 30: Redis's unions of 200 and 400 keys take a minute each here). The figure is the server's own time for the command (INFO
commandstats' `usec` before and after the call, so the client's reply parsing is left out), and
the wall time of the call as the client saw it; both as min / median / max in milliseconds, and
the ratio of the medians (Locus / Redis). A reply that differs between the two servers (as a
sorted list for the unordered replies) stops the run.

With `--calls K` a measurement is K calls pipelined on one connection and the figures are per
call, in microseconds: for the cases both servers answer in microseconds (a difference whose
first key is named again), where one call is below commandstats' 1 µs resolution.

Usage:
  bench/multikey.py [--repeats 3] [--counts 2,10,200,400] [--commands SINTER,ZUNION,...]
                    [--shapes alt,one] [--calls 1] [--json FILE]

Needs redis-server on PATH (or REDIS_SERVER) and target/release/locus (or LOCUS_BIN).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import BenchError, Conn, RespError, Server, encode, mmm  # noqa: E402

MEMBERS = 100_000
GiB = 1 << 30
# name -> (arguments before the keys, arguments after them, whether numkeys is given, reply kind)
COMMANDS = {
    "SINTER": ([], [], False, "set"),
    "SINTERCARD": ([], [], True, "int"),
    "SINTERSTORE": (["dst"], [], False, "int"),
    "SUNION": ([], [], False, "set"),
    "SUNIONSTORE": (["dst"], [], False, "int"),
    "SDIFF": ([], [], False, "set"),
    "SDIFFSTORE": (["dst"], [], False, "int"),
    "ZINTER": ([], ["WITHSCORES"], True, "list"),
    "ZINTERCARD": ([], [], True, "int"),
    "ZINTERSTORE": (["dst"], [], True, "int"),
    "ZUNION": ([], ["WITHSCORES"], True, "list"),
    "ZUNIONSTORE": (["dst"], [], True, "int"),
    "ZDIFF": ([], ["WITHSCORES"], True, "list"),
    "ZDIFFSTORE": (["dst"], [], True, "int"),
}


def load(srv: Server):
    c = srv.conn()
    try:
        c.call("CONFIG", "SET", "save", "")
        for prefix, cmd in (("s", "SADD"), ("z", "ZADD")):
            for name, lo in (("a", 0), ("b", MEMBERS // 2)):
                key = f"{prefix}:{name}"
                batch = []
                for i in range(lo, lo + MEMBERS):
                    if cmd == "SADD":
                        batch.append(encode("SADD", key, f"m:{i}"))
                    else:
                        batch.append(encode("ZADD", key, i, f"m:{i}"))
                    if len(batch) == 5000:
                        rs = c.pipeline(b"".join(batch), len(batch))
                        if any(isinstance(r, RespError) for r in rs):
                            raise BenchError(f"{srv.label}: load failed: {rs[0]!r}")
                        batch = []
                if batch:
                    c.pipeline(b"".join(batch), len(batch))
                n = c.call("SCARD" if prefix == "s" else "ZCARD", key)
                if n != MEMBERS:
                    raise BenchError(f"{srv.label}: {key} holds {n} members, not {MEMBERS}")
    finally:
        c.close()


def argv(cmd: str, n: int, shape: str) -> list:
    pre, post, numkeys, _ = COMMANDS[cmd]
    prefix = "z" if cmd.startswith("Z") else "s"
    if shape == "first":
        keys = [f"{prefix}:a"] + [f"{prefix}:b"] * (n - 1)
    else:
        names = ["a", "b"] if shape == "alt" else ["a"]
        keys = [f"{prefix}:{names[i % len(names)]}" for i in range(n)]
    return [cmd, *pre, *([n] if numkeys else []), *keys, *post]


def usec(c, cmd: str) -> int:
    raw = c.call("INFO", "commandstats")
    key = f"cmdstat_{cmd.lower()}:"
    for line in raw.decode().splitlines():
        if line.startswith(key):
            for part in line[len(key):].split(","):
                k, v = part.split("=")
                if k == "usec":
                    return int(v)
    return 0


def one_run(srv: Server, args: list, calls: int = 1):
    """(server ms, wall ms, reply) of one call, or per call of `calls` pipelined ones."""
    # Redis's unions over hundreds of keys take minutes on a loaded machine.
    c = Conn(srv.port, timeout=900)
    try:
        before = usec(c, args[0])
        t0 = time.perf_counter()
        if calls == 1:
            replies = [c.call(*args)]
        else:
            replies = c.pipeline(encode(*args) * calls, calls)
        wall = time.perf_counter() - t0
        after = usec(c, args[0])
    finally:
        c.close()
    for reply in replies:
        if isinstance(reply, RespError):
            raise BenchError(f"{srv.label}: {args[0]} answered {reply}")
    return (after - before) / 1000.0 / calls, wall * 1000.0 / calls, replies[0]


def normal(kind: str, reply):
    if kind == "set":
        return sorted(reply)
    return reply


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--counts", default="2,10,200,400")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--shapes", default="alt,one")
    ap.add_argument("--case-budget", type=float, default=30.0)
    ap.add_argument("--calls", type=int, default=1)
    ap.add_argument("--json", default=None)
    opts = ap.parse_args()
    counts = [int(x) for x in opts.counts.split(",")]
    cmds = [x.strip().upper() for x in opts.commands.split(",")]
    for cmd in cmds:
        if cmd not in COMMANDS:
            raise SystemExit(f"unknown command {cmd}")
    shapes = opts.shapes.split(",")
    started = time.monotonic()
    rows = []
    with Server("locus", GiB, label="locus") as locus, Server("redis", GiB, label="redis") as redis:
        for srv in (locus, redis):
            load(srv)
        unit, scale, fmt = ("µs", 1000.0, "{:.2f}") if opts.calls > 1 else ("ms", 1.0, "{:.1f}")
        print(f"| command | N | keys | runs | Locus {unit} (server) | Redis {unit} (server) | ratio | Locus {unit} (wall) | Redis {unit} (wall) |")
        print("|---|---:|---|---:|---|---|---:|---|---|")
        for cmd in cmds:
            for n in counts:
                for shape in shapes:
                    args = argv(cmd, n, shape)
                    res = {"locus": ([], []), "redis": ([], [])}
                    replies = {}
                    spent = 0.0
                    for _ in range(opts.repeats):
                        for srv in (locus, redis):
                            srv_ms, wall_ms, reply = one_run(srv, args, opts.calls)
                            res[srv.label][0].append(srv_ms)
                            res[srv.label][1].append(wall_ms)
                            replies[srv.label] = normal(COMMANDS[cmd][3], reply)
                            spent += wall_ms / 1000.0
                        if spent > opts.case_budget:
                            break
                    if replies["locus"] != replies["redis"]:
                        raise BenchError(f"{cmd} N={n} {shape}: replies differ")
                    ml = statistics.median(res["locus"][0])
                    mr = statistics.median(res["redis"][0])
                    ratio = ml / mr if mr > 0 else float("inf")
                    rows.append({"command": cmd, "n": n, "shape": shape,
                                 "locus_server_ms": res["locus"][0], "redis_server_ms": res["redis"][0],
                                 "locus_wall_ms": res["locus"][1], "redis_wall_ms": res["redis"][1],
                                 "ratio": ratio})
                    sc = {k: ([x * scale for x in v[0]], [x * scale for x in v[1]]) for k, v in res.items()}
                    print(f"| {cmd} | {n} | {shape} | {len(res['locus'][0])} | {mmm(sc['locus'][0], fmt)} | "
                          f"{mmm(sc['redis'][0], fmt)} | {ratio:.2f} | "
                          f"{mmm(sc['locus'][1], fmt)} | {mmm(sc['redis'][1], fmt)} |", flush=True)
    worst = max(rows, key=lambda r: r["ratio"])
    print(f"\nworst ratio {worst['ratio']:.2f} ({worst['command']} N={worst['n']} {worst['shape']}); "
          f"{time.monotonic() - started:.0f} s in all")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        raise SystemExit(f"multikey.py: {e}")
