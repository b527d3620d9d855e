#!/usr/bin/env python3
"""sdTMM live (issue 15, acceptance 3): `locus serve` with memory tiers (fast tier 20% and 50% of
maxmemory, the slow tier on BACKEND) beside all-fast Locus and Debian's redis-server 7, under one
Zipf load from one load generator (`locus replay`, closed loop), interleaved, 3 repeats:
min/median/max of throughput and GET p99, and the fast tier's share of the hits for the tiered
runs.

redis-server and all-fast Locus are calibrated (bench/live/livelib.py's `calibrate`, as
bench/fidelity.py does) to the maxmemory at which each holds the run's distinct keys, so both hold
about the same number of keys: the whole working set fits in the total memory. The tiered servers
get all-fast Locus's maxmemory (the same total memory, 20% or 50% of it fast: the dissertation's
section 5.2 setting); a tiered server keeps its key index outside maxmemory, so it holds at least
as many keys (each run reports DBSIZE at its end). Calibrating them with the same fill instead
would measure the fill's burst: SETs pipelined faster than the demotion worker evict from the
fast tier reactively, by design, and the count held varies run to run.

The workload: `locus trace generate -t pattern=zipf,alpha=A,keys=K,value-size=300,get=95,set=5`,
replayed look-aside with `--backend none` (a miss costs nothing: the figures are the cache's).

Usage: bench/tiers.py [--backend emulated|emulated:<ns>|file:<path>|numa:<node>] [--repeats 3]
       [--keys 50000] [--requests 300000] [--warmup 100000] [--alpha 0.99] [--connections 4]
       [--json FILE]
(LOCUS_BIN selects the binary; default target/release/locus.)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "live"))
import livelib as L  # noqa: E402

harness = L.harness
VALUE = 300


class Exp:
    """What livelib's calibration needs: one tenant, keys shaped like the replay's."""

    names = ["t0"]
    tenancy = "none"
    routes = [None]
    value_size = VALUE
    name = "zipf"

    @staticmethod
    def fill_key(tenant: int, i: int) -> bytes:
        return f"t0:k{10**19 + i}".encode()


class Target:
    def __init__(self, label: str, kind: str, fast_share: float | None = None, backend: str = ""):
        self.label, self.kind, self.fast_share, self.backend = label, kind, fast_share, backend

    def start(self, maxmemory: int, _exp=None):
        if self.kind == "redis":
            return harness.start_redis(["--maxmemory", str(maxmemory), "--maxmemory-policy", "allkeys-lru"])
        port = harness.free_port()
        conf = f'[server]\nport = {port}\n\n[memory]\nmaxmemory = "{maxmemory}"\n'
        if self.fast_share is not None:
            conf += f'\n[tier]\nslow_backend = "{self.backend}"\nfast_share = {self.fast_share}\n'
        return harness.start_locus(conf, port)


def info(port: int, section: str) -> dict:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(L._cmd(b"INFO", section.encode()))
    buf = b""
    while b"\r\n" not in buf:
        buf += s.recv(1 << 16)
    n = int(buf[1:buf.index(b"\r\n")])
    while len(buf) < buf.index(b"\r\n") + 2 + n:
        buf += s.recv(1 << 16)
    s.close()
    out = {}
    for line in buf.decode().splitlines()[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = dict(x.split("=", 1) for x in v.split(",")) if "=" in v else v
    return out


def run(locus: str, target: Target, maxmemory: int, trace, a) -> dict:
    srv = target.start(maxmemory)
    try:
        cmd = [locus, "replay", str(trace), "--target", f"redis://127.0.0.1:{srv.port}",
               "--connections", str(a.connections), "--warmup", str(a.warmup), "--backend", "none",
               "--json", "-q"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if p.returncode != 0:
            raise SystemExit(f"{target.label}: {p.stderr}")
        r = json.loads(p.stdout)
        o = r["overall"]
        row = {"throughput": o["throughput"], "p99_us": o["latency"]["p99_us"],
               "p50_us": o["latency"]["p50_us"], "hit_ratio": o["hit_ratio"],
               "keys_at_end": int(info(srv.port, "keyspace").get("db0", {}).get("keys", 0))}
        if target.fast_share is not None:
            t = info(srv.port, "tiers")
            fh, sh = int(t["tier_fast"]["hits"]), int(t["tier_slow"]["hits"])
            row.update(fast_hit_share=fh / max(1, fh + sh), promotions=int(t["tier_promotions"]),
                       demotions=int(t["tier_demotions"]), delay_ns=t["tier_emulated_delay_ns"],
                       backend=t["tier_slow_backend"])
        return row
    finally:
        L.stop(srv)


def resolve_backend() -> str:
    """Starts a tiered server with plain `emulated` and reads the delay it measured."""
    srv = Target("probe", "locus", 0.2, "emulated").start(64 << 20)
    try:
        return info(srv.port, "tiers")["tier_slow_backend"]
    finally:
        L.stop(srv)


def mmm(v, fmt):
    return f"{fmt.format(min(v))} / {fmt.format(statistics.median(v))} / {fmt.format(max(v))}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="emulated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keys", type=int, default=50_000)
    ap.add_argument("--alpha", type=float, default=0.99)
    ap.add_argument("--requests", type=int, default=300_000)
    ap.add_argument("--warmup", type=int, default=100_000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--json", help="write the raw results here")
    a = ap.parse_args()
    locus = harness.locus_bin()
    wd = L.new_workdir()
    t0 = time.time()
    trace = wd / "zipf.csv"
    ws = L.make_trace(locus, trace, [f"pattern=zipf,alpha={a.alpha},keys={a.keys},value-size={VALUE},"
                                     f"get=95,set=5"], a.requests, seed=1)
    keys = ws["total"]
    if a.backend.strip() == "emulated":
        # Plain `emulated` measures its delay at each start; measured once here and fixed, every
        # tiered run has the same delay (a busy machine moves the measurement run to run).
        a.backend = resolve_backend()
        L.log(f"plain emulated measured once: {a.backend}")
    L.log(f"trace: {a.requests} requests, {keys} distinct keys")
    targets = [Target("redis-server 7", "redis"), Target("Locus all-fast", "locus"),
               Target("Locus tiered, fast 50%", "locus", 0.5, a.backend),
               Target("Locus tiered, fast 20%", "locus", 0.2, a.backend)]
    mem = {}
    for t in targets:
        if t.fast_share is not None:
            mem[t.label] = mem["Locus all-fast"]
            continue
        mem[t.label] = L.calibrate(t, Exp, keys)
        L.log(f"{t.label}: maxmemory {mem[t.label][0]} holds {mem[t.label][1]} keys")
    rows = {t.label: [] for t in targets}
    for rep in range(a.repeats):
        for t in targets:
            r = run(locus, t, mem[t.label][0], trace, a)
            rows[t.label].append(r)
            L.log(f"  repeat {rep + 1} {t.label}: {r}")
    trace.unlink(missing_ok=True)
    print(f"Zipf alpha {a.alpha}, {a.keys} keys ({keys} distinct in the trace), {VALUE}-byte values, "
          f"{a.requests} requests ({a.warmup} warm-up), {a.connections} connections, backend {a.backend}; "
          f"{a.repeats} repeats interleaved, min / median / max; {time.time() - t0:.0f} s in all\n")
    print("| server | maxmemory | keys held (calibration) | keys at end | throughput (req/s) | GET p99 (µs) | hit ratio | fast-tier share of hits |")
    print("|---|---|---|---|---|---|---|---|")
    for t in targets:
        v = rows[t.label]
        fast = mmm([x["fast_hit_share"] for x in v], "{:.3f}") if "fast_hit_share" in v[0] else "(all fast)"
        held = "(Locus all-fast's)" if t.fast_share is not None else mem[t.label][1]
        print(f"| {t.label} | {mem[t.label][0]} | {held} | {mmm([x['keys_at_end'] for x in v], '{}')} | "
              f"{mmm([x['throughput'] for x in v], '{:.0f}')} | {mmm([x['p99_us'] for x in v], '{:.0f}')} | "
              f"{mmm([x['hit_ratio'] for x in v], '{:.4f}')} | {fast} |")
    tiered = [r for t in targets if t.fast_share is not None for r in rows[t.label]]
    if tiered:
        print(f"\nslow backend as run: {tiered[0]['backend']} (emulated delay {tiered[0]['delay_ns']} ns per slow-tier hit)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "memory": mem, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
