#!/usr/bin/env python3
"""A first live experiment (issue 14): two tenants with the same Zipf(0.99) locality, one whose
misses run a PostgreSQL primary-key lookup (cheap) and one whose misses run a join + aggregate
over 5 000 rows (milliseconds), replayed look-aside with `locus replay` against

  * Debian's redis-server (one database per tenant, allkeys-lru, maxmemory M),
  * Locus (db tenancy, maxmemory M) with the `shared` controller,
  * Locus with the `predis` controller (miss penalties measured by the server),

interleaved, `--repeats` times, min/median/max; then `locus simulate` on the same generators
with each tenant's measured backend time as its penalty: the model's prediction beside the live
figures (seeds 1..N, `--model-seeds`). Usage: bench/live/two_cost.py [--repeats 3] [--requests 80000]
[--memory 10MiB] [--model-seeds 3] [--json FILE]
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

EXP = """name = "live_two_cost"
description = "two tenants, same Zipf locality, a cheap and a costly backend"
seed = 1
memory = "{memory}"
# The live server decides every second, ~3 000 requests at these rates: the model decides as often.
interval = "3k"
# Report the requests after the replay's warm-up (its last 5/8) on their own, as the replay does.
steady = 0.625
requests = {requests}
{controllers}
[[tenant]]
name = "cheap"
rate = 1000
generator = {{ pattern = "zipf", alpha = 0.99, keys = "20k", value-size = 1000 }}
penalty = {{ mean = {p0} }}
hit_time = {hit}

[[tenant]]
name = "costly"
rate = 1000
generator = {{ pattern = "zipf", alpha = 0.99, keys = "20k", value-size = 1000 }}
penalty = {{ mean = {p1} }}
hit_time = {hit}
"""


def locus_conf(port: int, memory: str, controller: str) -> str:
    return f"""[server]
port = {port}
[memory]
maxmemory = "{memory}"
[tenancy]
mode = "db"
[controller]
name = "{controller}"
[[tenant]]
name = "cheap"
db = 0
[[tenant]]
name = "costly"
db = 1
"""


def mmm(v):
    v = sorted(v)
    return f"{v[0]:.3f} / {statistics.median(v):.3f} / {v[-1]:.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--requests", type=int, default=80_000)
    ap.add_argument("--memory", default="10MiB")
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--model-seeds", type=int, default=3,
                    help="seeds of the simulator's prediction (1..N), min / median / max")
    ap.add_argument("--json", help="write the live runs and the measured model inputs here")
    a = ap.parse_args()
    locus = harness.locus_bin()
    wd = Path(tempfile.mkdtemp(prefix="locus-live-"))
    exp = wd / "live.toml"
    ctl = '[[controller]]\nname = "shared"\n\n[[controller]]\nname = "predis"\n'
    # (`locus replay` reads only the tenants; the penalties are filled in for the simulator below.)
    exp.write_text(EXP.format(memory=a.memory, requests=a.requests, controllers=ctl, p0=0, p1=0, hit=0))
    warm = a.requests * 3 // 8  # the experiment's `steady = 0.625` is the rest
    mem_bytes = int(float(a.memory.removesuffix("MiB")) * (1 << 20))
    common = ["--tenants", "db", "--backend", "0=pg:pk", "--backend", "1=pg:agg:5000",
              "--pg-rows", "20000", "--connections", str(a.connections), "--warmup", str(warm),
              "--json", "-q"]
    runs: dict[str, list[dict]] = {"redis-server": [], "locus shared": [], "locus predis": []}
    for rep in range(a.repeats):
        for name in runs:
            if name == "redis-server":
                srv = harness.start_redis(["--maxmemory", str(mem_bytes), "--maxmemory-policy",
                                           "allkeys-lru"])
                port = srv.port
            else:
                port = harness.free_port()
                srv = harness.start_locus(locus_conf(port, a.memory, name.split()[1]), port)
            try:
                cmd = [locus, "replay", str(exp), "--target", f"redis://127.0.0.1:{port}", *common]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
                if p.returncode != 0:
                    sys.exit(f"{name}: {p.stderr}")
                runs[name].append(json.loads(p.stdout))
                o = runs[name][-1]["overall"]
                print(f"repeat {rep + 1} {name}: mean {o['latency']['mean_us'] / 1000:.3f} ms, "
                      f"hit {o['hit_ratio']:.3f}", file=sys.stderr)
            finally:
                srv.stop()
    print(f"command: bench/live/two_cost.py --repeats {a.repeats} --requests {a.requests} "
          f"--memory {a.memory} --connections {a.connections}")
    print(f"replay: locus replay live.toml --target redis://... {' '.join(common[:-2])}")
    print("live, min / median / max over repeats (ms; hit ratio):")
    print(f"{'target':<14} {'mean all':>24} {'p99 all':>24} {'mean cheap':>24} {'mean costly':>24} "
          f"{'hit cheap':>20} {'hit costly':>20}")
    be = {0: [], 1: []}
    hit_lat = []
    for name, rs in runs.items():
        def col(f):
            return mmm([f(r) for r in rs])
        t = lambda r, i: r["tenants"][[x["name"] for x in r["tenants"]].index(["cheap", "costly"][i])]
        print(f"{name:<14} {col(lambda r: r['overall']['latency']['mean_us'] / 1000):>24} "
              f"{col(lambda r: r['overall']['latency']['p99_us'] / 1000):>24} "
              f"{col(lambda r: t(r, 0)['latency']['mean_us'] / 1000):>24} "
              f"{col(lambda r: t(r, 1)['latency']['mean_us'] / 1000):>24} "
              f"{col(lambda r: t(r, 0)['hit_ratio']):>20} {col(lambda r: t(r, 1)['hit_ratio']):>20}")
        for r in rs:
            for i in (0, 1):
                be[i].append(t(r, i)["backend"]["mean_us"])
            hit_lat.append(t(r, 0)["latency"]["p50_us"])
    p0, p1 = statistics.median(be[0]), statistics.median(be[1])
    hit = statistics.median(hit_lat)
    print(f"measured backend mean: cheap {p0 / 1000:.3f} ms, costly {p1 / 1000:.3f} ms; "
          f"median GET p50 (a hit) {hit / 1000:.3f} ms")
    if a.json:
        Path(a.json).write_text(json.dumps({"runs": runs, "backend_mean_us": [p0, p1],
                                            "hit_p50_us": hit}))
    model: dict[str, list[dict]] = {}
    for seed in range(1, a.model_seeds + 1):
        exp.write_text(EXP.format(memory=a.memory, requests=a.requests, controllers=ctl,
                                  p0=round(p0), p1=round(p1), hit=round(hit))
                       .replace("seed = 1\n", f"seed = {seed}\n", 1))
        p = subprocess.run([locus, "simulate", str(exp), "--json", "-q"], capture_output=True,
                           text=True, check=True)
        for r in json.loads(p.stdout)["runs"]:
            model.setdefault(r["label"], []).append(
                next(x for x in r["steady"] if x["name"] == "run"))
    print(f"simulator, seeds 1-{a.model_seeds}, after the same warm-up (same generators, penalties ="
          " measured backend means, hit time = measured hit p50; ms; hit ratio; min / median / max):")
    for label, sts in model.items():
        def tcol(name, key, scale=1.0):
            return mmm([next(t for t in st["tenants"] if t["name"] == name)[key] / scale
                        for st in sts])
        print(f"  {label:<8} mean all {mmm([st['overall']['mean_latency_us'] / 1000 for st in sts])}"
              + "".join(f"  {n}: mean {tcol(n, 'mean_latency_us', 1000)} hit {tcol(n, 'hit_ratio')}"
                        for n in ("cheap", "costly")))


if __name__ == "__main__":
    main()
