#!/usr/bin/env python3
"""Commands whose cost grows with their arguments, Locus vs redis-server side by side (issue #27,
point 1's "check other commands the same way"): each command below is sent with 200,000
arguments (PFCOUNT 50 names, PFMERGE 1,000, WATCH 20,000), repeated names where Redis reads a
repeated key again. Both servers start fresh (loopback, free ports, maxmemory 1 GiB) with the
same data; each case runs 3 times, interleaved Locus/Redis; the figure is the call's wall time as
the client saw it (ms, min / median / max; encoding 200,000 arguments in Python is part of it,
the same for both), and the ratio of the medians.

Usage: python3 bench/argcost.py   (LOCUS_BIN, REDIS_SERVER as in bench/benchlib.py)
"""
import os
import sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Server, Conn, encode
N = 200_000
cases = [
 ("MGET", ["MGET"] + [f"k{i%1000}" for i in range(N)]),
 ("EXISTS same", ["EXISTS"] + ["k1"] * N),
 ("DEL absent", ["DEL"] + [f"x{i}" for i in range(N)]),
 ("SMISMEMBER", ["SMISMEMBER", "s"] + [f"m{i}" for i in range(N)]),
 ("ZMSCORE", ["ZMSCORE", "z"] + [f"m{i}" for i in range(N)]),
 ("HMGET", ["HMGET", "h"] + [f"f{i}" for i in range(N)]),
 ("SREM absent", ["SREM", "s"] + [f"nope{i}" for i in range(N)]),
 ("ZREM absent", ["ZREM", "z"] + [f"nope{i}" for i in range(N)]),
 ("HDEL absent", ["HDEL", "h"] + [f"nope{i}" for i in range(N)]),
 ("PFCOUNT 50", ["PFCOUNT"] + [f"hll{i%2}" for i in range(50)]),
 ("PFMERGE 1000", ["PFMERGE", "hdst"] + [f"hll{i%2}" for i in range(1000)]),
 ("WATCH same", ["WATCH"] + ["k1"] * 20000),
 ("TOUCH same", ["TOUCH"] + ["k1"] * N),
 ("SADD dup", ["SADD", "s2"] + ["same"] * N),
 ("LPUSH", ["LPUSH", "l"] + ["v"] * N),
]
def setup(c):
    c.pipeline(b"".join(encode("SET", f"k{i}", "v") for i in range(1000)), 1000)
    c.call("SADD", "s", *[f"m{i}" for i in range(0, 100000, 2)])
    c.call("ZADD", "z", *sum([[i, f"m{i}"] for i in range(0, 100000, 2)], []))
    c.call("HSET", "h", *sum([[f"f{i}", "v"] for i in range(0, 100000, 2)], []))
    c.call("PFADD", "hll0", *[f"e{i}" for i in range(20000)])
    c.call("PFADD", "hll1", *[f"g{i}" for i in range(20000)])
res = {}
print("| command | arguments | Locus ms | Redis ms | ratio |")
print("|---|---:|---|---|---:|")
with Server("locus", 1 << 30) as L, Server("redis", 1 << 30) as R:
    conns = {s.label: Conn(s.port, timeout=300) for s in (L, R)}
    for c in conns.values(): setup(c)
    for name, args in cases:
        ts = {"locus": [], "redis": []}
        for _ in range(3):
            for lab in ("locus", "redis"):
                c = conns[lab]
                if name.startswith("WATCH"): c.call("UNWATCH")
                t0 = time.perf_counter(); r = c.call(*args); ts[lab].append((time.perf_counter()-t0)*1000)
                if isinstance(r, str) and r.startswith("ERR"): print(lab, name, r)
                if name == "LPUSH": c.call("DEL", "l")
        ml, mr = sorted(ts["locus"])[1], sorted(ts["redis"])[1]
        print(f"| {name} | {len(args)-1} | {min(ts['locus']):.1f} / {ml:.1f} / {max(ts['locus']):.1f} | {min(ts['redis']):.1f} / {mr:.1f} / {max(ts['redis']):.1f} | {ml/mr:.2f} |", flush=True)
