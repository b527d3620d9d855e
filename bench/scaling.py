#!/usr/bin/env python3
"""How Locus's throughput and CPU per request scale with worker threads and tenants, and what the
one engine lock costs: measured on this machine, then modelled for more cores.

For each `server.threads` in --threads and each tenant count in --tenants, Locus serves that many
tenants (port tenancy, one port each) and one `redis-benchmark` per tenant runs GET and SET against
its own port, all at once. Measured per run: requests per second (all tenants), the server's CPU
per request (utime + stime from /proc over the run, divided by the requests), and the engine lock's
acquisitions, hold and wait times (INFO locus, as the admin). redis-server (one instance, the same
client load on one port) runs beside it as the reference.

The model (printed after the table, and said to be one): with one engine lock, throughput on P
cores is at most min(P / c, 1 / h), where c is the server CPU per request and h the lock hold per
request, both measured at the highest thread count; with one lock per tenant shard and T equally
busy tenants it is at most min(P, T) / c. It ignores the cache misses, the kernel's share and the
load generator, which on a real machine of P cores would run elsewhere.

    cargo build --release --bin locus
    python3 bench/scaling.py                            # threads 1,2 x tenants 1,2,8; ~3 minutes
    python3 bench/scaling.py --requests 100000 --repeats 1

Needs `redis-benchmark` (Debian's redis-tools) and `redis-server`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import BenchError, Conn, Server, cpu_seconds, free_port  # noqa: E402

def lock_stats(port: int) -> dict[str, int]:
    c = Conn(port)
    try:
        c.call("AUTH", "root", "root-pw")
        info = c.info("locus")
    finally:
        c.close()
    return {k: int(v) for k, v in info.items() if k.startswith("engine_lock_")}


def bench(ports: list[int], requests: int, clients: int, pipeline: int) -> float:
    """Runs one redis-benchmark per port at once; returns the requests they completed."""
    per = max(1, requests // len(ports))
    procs = [
        subprocess.Popen(
            ["redis-benchmark", "-h", "127.0.0.1", "-p", str(p), "-t", "get,set", "-n", str(per),
             "-c", str(max(1, clients // len(ports))), "-P", str(pipeline), "-r", "100000",
             "-d", "100", "-q", "--csv"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for p in ports
    ]
    done = 0
    for pr in procs:
        out, _ = pr.communicate(timeout=600)
        if pr.returncode != 0:
            raise BenchError(f"redis-benchmark failed: {out[-300:]}")
        done += 2 * per  # GET and SET
    return done


def locus_config(threads: int, tenants: int) -> tuple[str, list[int]]:
    ports = [free_port() for _ in range(tenants)]
    # server.port (the one the harness waits on) serves t0 as the default tenant; each tenant's
    # load goes to its own port.
    lines = ["[server]", f"threads = {threads}", "[tenancy]", 'mode = "port"', 'default_tenant = "t0"',
             "[admin]", 'user = "root"', 'password = "root-pw"']
    for i, p in enumerate(ports):
        lines += ["[[tenant]]", f'name = "t{i}"', f"port = {p}"]
    f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    f.write("\n".join(lines) + "\n")
    f.close()
    return f.name, ports


def run_once(kind: str, threads: int, tenants: int, args) -> dict:
    if kind == "locus":
        cfg, ports = locus_config(threads, tenants)
        server = Server("locus", 1 << 30, extra=["--config", cfg])
    else:
        server = Server("redis", 1 << 30)
        ports = [server.port] * tenants
    try:
        before_lock = lock_stats(ports[0]) if kind == "locus" else {}
        c0 = cpu_seconds(server.pid)
        t0 = time.monotonic()
        n = bench(ports, args.requests, args.clients, args.pipeline)
        wall = time.monotonic() - t0
        cpu = cpu_seconds(server.pid) - c0
        after_lock = lock_stats(ports[0]) if kind == "locus" else {}
    finally:
        server.stop()
    row = {"ops": n / wall, "cpu_us": cpu / n * 1e6, "wall": wall}
    if kind == "locus":
        d = {k: after_lock[k] - before_lock.get(k, 0) for k in after_lock if not k.startswith("engine_lock_max")}
        row["hold_us"] = d["engine_lock_hold_us"] / n
        row["wait_us"] = d["engine_lock_wait_us"] / n
        row["held_share"] = d["engine_lock_hold_us"] / 1e6 / wall
        row["contended"] = d["engine_lock_contended"] / max(1, d["engine_lock_acquisitions"])
        row["max_hold_us"] = after_lock["engine_lock_max_hold_us"]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--tenants", default="1,2,8")
    ap.add_argument("--requests", type=int, default=200_000, help="per run, GET + SET each")
    ap.add_argument("--clients", type=int, default=48, help="connections, split over tenants")
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if not shutil.which("redis-benchmark"):
        raise SystemExit("redis-benchmark not found (Debian's redis-tools)")
    threads = [int(x) for x in args.threads.split(",")]
    tenants = [int(x) for x in args.tenants.split(",")]

    configs = [("redis", 1, t) for t in tenants] + [("locus", th, t) for th in threads for t in tenants]
    results: dict[tuple, list[dict]] = {c: [] for c in configs}
    for _ in range(args.repeats):  # interleaved: every configuration once per round
        for c in configs:
            results[c].append(run_once(*c, args))

    def mmm(xs, f="{:.0f}"):
        xs = sorted(xs)
        return " / ".join(f.format(v) for v in (xs[0], statistics.median(xs), xs[-1]))

    print(f"\n{args.requests:,} requests per run (GET and SET, -P {args.pipeline}, {args.clients} "
          f"connections split over the tenants); min / median / max of {args.repeats} runs\n")
    print("| server | threads | tenants | requests/s | server CPU µs/request | lock held µs/request "
          "| lock held share of wall | contended acquisitions | lock wait µs/request |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (kind, th, t), rows in results.items():
        def col(k, f="{:.2f}"):
            return mmm([r[k] for r in rows], f) if kind == "locus" else "—"
        print(f"| {kind} | {th if kind == 'locus' else '1 (main thread)'} | {t} | "
              f"{mmm([r['ops'] for r in rows])} | {mmm([r['cpu_us'] for r in rows], '{:.2f}')} | "
              f"{col('hold_us')} | {col('held_share')} | {col('contended', '{:.4f}')} | {col('wait_us')} |")

    # The model, from the highest thread count's medians at each tenant count.
    top = max(threads)
    print("\nModel (not measured): requests/s at P cores, from the medians at "
          f"{top} threads: one lock min(P/c, 1/h); one lock per tenant min(P, T)/c.\n")
    print("| tenants | c (µs) | h (µs) | P=2 one lock | P=4 one lock | P=8 one lock | P=16 one lock "
          "| P=16 per-tenant locks |")
    print("|---|---|---|---|---|---|---|---|")
    for t in tenants:
        rows = results[("locus", top, t)]
        c = statistics.median(r["cpu_us"] for r in rows) * 1e-6
        h = statistics.median(r["hold_us"] for r in rows) * 1e-6
        one = [min(p / c, 1 / h) for p in (2, 4, 8, 16)]
        shard = min(16, t) / c
        print(f"| {t} | {c * 1e6:.2f} | {h * 1e6:.2f} | " + " | ".join(f"{x:,.0f}" for x in one)
              + f" | {shard:,.0f} |")


if __name__ == "__main__":
    main()
