#!/usr/bin/env python3
"""pRedis(auto)'s per-key penalty classes, live (issue 14, acceptance 3): ONE tenant whose keys
have two miss costs (half 0.2 ms, half 4 ms by the key's parity; one Zipf(0.99) popularity over
6 000 keys of 1 000-byte values, independent of the cost), replayed look-aside with
`locus replay --backend 0=delay:trace` (each request's penalty column, slept without blocking),
16 connections, closed loop, against, with the same `maxmemory` (about 40% of the working set):

  * Debian's redis-server 7 (allkeys-lru),
  * Locus `shared` (free competition, Redis's sampled LRU),
  * Locus `predis` without classes (one pool: the tenant's mean penalty only),
  * Locus `predis` with `penalty_classes = 4` (the server splits the keys by measured penalty).

Interleaved, `--repeats` times, min / median / max. For the classed runs the server's own INFO
class lines (keys, hit ratio, measured penalty per class pool) are read at the end of each run.
Then `locus simulate` on the simulator's stand-in (it maps classes to tenants): two tenants of
3 000 keys each, Zipf(0.99), equal rates, penalties 0.2 and 4 ms plus the measured hit time.

Usage: bench/live/classes.py [--repeats 3] [--requests 60000] [--memory 3MiB]
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
import two_cost_trace  # noqa: E402

KEYS = 6000
VALUE = 1000
CHEAP_US, DEAR_US = 200, 4000

SIM = """name = "live_classes"
description = "the simulator's stand-in for one tenant with two miss costs: a tenant per cost"
seed = 1
memory = "{memory}"
page_size = "64KiB"
interval = "{interval}"
steady = {steady}
requests = {requests}
[[controller]]
name = "shared"

[[controller]]
name = "predis"
[controller.settings]
rate = 0.1

[[tenant]]
name = "cheap"
rate = 1000
generator = {{ pattern = "zipf", alpha = 0.99, keys = {half}, value-size = {value} }}
penalty = {{ mean = {p0} }}
hit_time = {hit}

[[tenant]]
name = "dear"
rate = 1000
generator = {{ pattern = "zipf", alpha = 0.99, keys = {half}, value-size = {value} }}
penalty = {{ mean = {p1} }}
hit_time = {hit}
"""


def write_trace(path: Path, n: int) -> None:
    two_cost_trace.write_trace(path, n, KEYS, VALUE, CHEAP_US, DEAR_US)


def conf(port: int, memory: str, controller: str, classes: bool) -> str:
    settings = "[controller.settings]\nrate = 0.1\n" if controller == "predis" else ""
    extra = "penalty_classes = 4\n" if classes else ""
    return (f'[server]\nport = {port}\n[memory]\nmaxmemory = "{memory}"\npage_size = "64KiB"\n'
            f'[controller]\nname = "{controller}"\ninterval = "500ms"\n{settings}\n'
            f'[[tenant]]\nname = "app"\n{extra}')


def class_lines(port: int) -> list[dict[str, str]]:
    with harness.Raw(port) as c:
        text = c.call("INFO", "locus")
    text = text.decode() if isinstance(text, bytes) else str(text)
    out = []
    for line in text.splitlines():
        if line.startswith("class_"):
            out.append(dict(x.split("=", 1) for x in line.split(":", 1)[1].split(",")))
    return out


def mmm(v, f="{:.3f}"):
    v = sorted(v)
    return " / ".join(f.format(x) for x in (v[0], statistics.median(v), v[-1]))


def mem_bytes(m: str) -> int:
    for suf, mul in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if m.endswith(suf):
            return int(float(m[: -len(suf)]) * mul)
    return int(m)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--requests", type=int, default=60_000)
    ap.add_argument("--memory", default="3MiB")
    ap.add_argument("--connections", type=int, default=16)
    a = ap.parse_args()
    locus = harness.locus_bin()
    wd = Path(tempfile.mkdtemp(prefix="locus-classes-"))
    trace = wd / "two_cost.csv"
    write_trace(trace, a.requests)
    warm = a.requests // 2
    common = ["--backend", "0=delay:trace", "--connections", str(a.connections),
              "--warmup", str(warm), "--json", "-q"]
    names = ["redis-server", "locus shared", "locus predis", "locus predis+classes"]
    runs: dict[str, list[dict]] = {n: [] for n in names}
    held: dict[str, list[float]] = {"cheap": [], "dear": []}
    chr_: dict[str, list[float]] = {"cheap": [], "dear": []}
    for rep in range(a.repeats):
        for name in names:
            if name == "redis-server":
                srv = harness.start_redis(["--maxmemory", str(mem_bytes(a.memory)),
                                           "--maxmemory-policy", "allkeys-lru"])
            else:
                port = harness.free_port()
                ctl = name.split()[1].split("+")[0]
                srv = harness.start_locus(conf(port, a.memory, ctl, name.endswith("classes")),
                                          port)
            try:
                cmd = [locus, "replay", str(trace), "--target", f"redis://127.0.0.1:{srv.port}",
                       *common]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    sys.exit(f"{name}: {p.stderr}")
                r = json.loads(p.stdout)
                runs[name].append(r)
                if name.endswith("classes"):
                    cl = [c for c in class_lines(srv.port) if c["range_us"] != "default"]
                    for grp, sel in (("cheap", lambda c: float(c["penalty_us"]) < 1500),
                                     ("dear", lambda c: float(c["penalty_us"]) >= 1500)):
                        cs = [c for c in cl if sel(c) and int(c["keys"]) > 0]
                        held[grp].append(sum(int(c["keys"]) for c in cs) / (KEYS / 2))
                        h = sum(int(c["hits"]) for c in cs)
                        m = sum(int(c["misses"]) for c in cs)
                        chr_[grp].append(h / max(1, h + m))
                o = r["overall"]
                print(f"repeat {rep + 1} {name}: mean {o['latency']['mean_us'] / 1000:.3f} ms, "
                      f"hit {o['hit_ratio']:.3f}", file=sys.stderr)
            finally:
                srv.stop()
    print(f"command: bench/live/classes.py --repeats {a.repeats} --requests {a.requests} "
          f"--memory {a.memory} --connections {a.connections}")
    print(f"replay: locus replay two_cost.csv --target redis://... {' '.join(common[:-2])}")
    print("live, min / median / max over repeats (ms; hit ratio of the measured GETs):")
    print("| target | mean | p99 | hit ratio |")
    print("|---|---|---|---|")
    hit_p50 = []
    for name, rs in runs.items():
        print(f"| {name} | {mmm([r['overall']['latency']['mean_us'] / 1000 for r in rs])} | "
              f"{mmm([r['overall']['latency']['p99_us'] / 1000 for r in rs], '{:.2f}')} | "
              f"{mmm([r['overall']['hit_ratio'] for r in rs])} |")
        hit_p50 += [r["overall"]["latency"]["p50_us"] for r in rs]
    print("predis+classes, from the server's INFO class lines (whole run, warm-up included):")
    for g in ("cheap", "dear"):
        print(f"  {g}: share of its keys held {mmm(held[g])}, hit ratio {mmm(chr_[g])}")
    hit = statistics.median(hit_p50)
    sim = wd / "sim.toml"
    sim.write_text(SIM.format(memory=a.memory, interval=f"{a.requests // 10}",
                              steady=0.5, requests=a.requests, half=KEYS // 2, value=VALUE,
                              p0=CHEAP_US, p1=DEAR_US, hit=round(hit)))
    p = subprocess.run([locus, "simulate", str(sim), "--json", "-q"], capture_output=True,
                       text=True, check=True)
    out = json.loads(p.stdout)
    print(f"simulator (classes as tenants, penalties 0.2 / 4 ms, hit time {hit / 1000:.3f} ms = "
          "the median live GET p50; after the same warm-up):")
    for r in out["runs"]:
        st = next(x for x in r["steady"] if x["name"] == "run")
        o = st["overall"]
        print(f"  {r['label']:<8} mean {o['mean_latency_us'] / 1000:.3f} ms  " + "  ".join(
            f"{t['name']}: hit {t['hit_ratio']:.3f}" for t in st["tenants"]))
    trace.unlink()


if __name__ == "__main__":
    main()
