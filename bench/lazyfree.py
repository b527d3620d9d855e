#!/usr/bin/env python3
"""DEL vs UNLINK of a big set, Locus vs redis-server side by side (issue #26, lazy freeing): the
time the deleting call takes as the client sees it (the command's own time on the request path:
for Locus, most of it under the engine lock that every tenant's commands wait for). UNLINK hands
the set's members to a background thread, DEL frees them in the call.

Both servers start fresh (loopback, free ports, maxmemory 1 GiB); each repeat builds a set of
N members (SADD in batches of 10,000, not timed) and deletes it with DEL, builds it again and
deletes it with UNLINK, Locus then Redis, interleaved. Figures: ms, min / median / max over the
repeats.

Usage: python3 bench/lazyfree.py [members] [repeats]   (LOCUS_BIN, REDIS_SERVER as in
bench/benchlib.py; defaults 300000 and 5)
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Conn, Server, encode, mmm  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
REPEATS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
BATCH = 10_000


def build(c):
    cmds = b"".join(
        encode("SADD", "big", *[str(i) for i in range(j, min(j + BATCH, N))])
        for j in range(0, N, BATCH)
    )
    c.pipeline(cmds, (N + BATCH - 1) // BATCH)
    assert c.call("SCARD", "big") == N


def wait_lazy_done(c):
    for _ in range(500):
        info = c.call("INFO", "memory").decode()
        if "lazyfree_pending_objects:0" in info:
            return
        time.sleep(0.01)


times = {(lab, cmd): [] for lab in ("locus", "redis") for cmd in ("DEL", "UNLINK")}
with Server("locus", 1 << 30) as L, Server("redis", 1 << 30) as R:
    conns = {s.label: Conn(s.port, timeout=300) for s in (L, R)}
    for _ in range(REPEATS):
        for lab in ("locus", "redis"):
            c = conns[lab]
            for cmd in ("DEL", "UNLINK"):
                build(c)
                wait_lazy_done(c)
                t0 = time.perf_counter()
                assert c.call(cmd, "big") == 1
                times[(lab, cmd)].append((time.perf_counter() - t0) * 1000)
                wait_lazy_done(c)

print(f"set of {N} members, {REPEATS} repeats, ms (min / median / max)")
print("| call | Locus | Redis |")
print("|---|---|---|")
for cmd in ("DEL", "UNLINK"):
    print(f"| {cmd} | {mmm(times[('locus', cmd)], '{:.2f}')} | {mmm(times[('redis', cmd)], '{:.2f}')} |")
