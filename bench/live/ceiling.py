#!/usr/bin/env python3
"""The harness's own ceiling: `locus replay` against its in-process null server, interleaved with
the same replay against Debian's redis-server and against Locus, 3 repeats, min/median/max.

Usage: bench/live/ceiling.py [--requests 200000] [--connections 8] [--repeats 3]
(LOCUS_BIN selects the binary; default target/release/locus.) A null-server figure well above
the real servers' shows the client is not what limits them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
import harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    locus = harness.locus_bin()
    wd = Path(tempfile.mkdtemp(prefix="locus-ceiling-"))
    trace = wd / "zipf.csv"
    subprocess.run([locus, "trace", "generate", "-t", "pattern=zipf,alpha=0.99,keys=100000,value-size=100",
                    "-n", str(a.requests), "-o", str(trace)], check=True, capture_output=True)
    redis_srv = harness.start_redis()
    lport = harness.free_port()
    locus_srv = harness.start_locus(f'[server]\nport = {lport}\n[memory]\nmaxmemory = "256MiB"\n', lport)
    targets = {"null": "null", "redis-server": f"redis://127.0.0.1:{redis_srv.port}",
               "locus": f"redis://127.0.0.1:{lport}"}
    res: dict[str, list[tuple[float, int, int]]] = {k: [] for k in targets}
    try:
        for _ in range(a.repeats):
            for name, t in targets.items():
                if name != "null":
                    harness.Raw(redis_srv.port if name == "redis-server" else lport).call("FLUSHALL")
                out = subprocess.run([locus, "replay", str(trace), "--target", t, "--connections",
                                      str(a.connections), "--json", "-q", "--no-info"],
                                     check=True, capture_output=True, text=True).stdout
                o = json.loads(out)["overall"]
                res[name].append((o["throughput"], o["latency"]["p50_us"], o["latency"]["p99_us"]))
    finally:
        redis_srv.stop()
        locus_srv.stop()
    print(f"{a.requests} requests (Zipf 0.99, 100k keys, 100 B), {a.connections} connections, "
          f"closed loop, {a.repeats} repeats: min / median / max")
    print(f"{'target':<14} {'req/s':>26} {'p50 us':>20} {'p99 us':>22}")
    for name, rows in res.items():
        def mmm(i):
            v = sorted(r[i] for r in rows)
            return f"{v[0]:.0f} / {statistics.median(v):.0f} / {v[-1]:.0f}"
        print(f"{name:<14} {mmm(0):>26} {mmm(1):>20} {mmm(2):>22}")


if __name__ == "__main__":
    main()
