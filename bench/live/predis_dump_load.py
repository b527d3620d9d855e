#!/usr/bin/env python3
"""pRedis's automatic dump/load live (issue 17, acceptance 2): experiments/predis_dump_load.toml's
two tenants on opposite daily cycles, replayed look-aside with `locus replay` against `locus serve`
with `dump_load` = never / auto / schedule, interleaved, `--repeats` times; per phase, the busy
tenant's and the quiet tenant's hit ratio and the mean GET latency (min / median / max over the
repeats). Beside it, `locus simulate` on the same experiment at the same scale (3 seeds).

Time is compressed: the experiment's 1.92 M requests are scaled to `--requests` (the phases keep
their shares) and replayed open-loop at `--rate` requests a second, so a phase of 240k/1.92M
requests lasts requests/8/rate seconds of wall time; the server's detector knobs (bucket, lead,
the schedule) are scaled by the same factor against the simulator's virtual time, so both see
the same number of buckets per phase.

    bench/live/predis_dump_load.py [--repeats 3] [--requests 960000] [--rate 8000]
        [--memory 21MiB] [--modes never,auto,schedule] [--keys 100k] [--objects 70k]
        [--page-size 1MiB]

`--keys` and `--objects` shrink the key space and the simulator's cache with the requests, so
each phase still reads its key space as often as in the full experiment (memory stays contended).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import harness  # noqa: E402

EXP = ROOT / "experiments" / "predis_dump_load.toml"
VIRTUAL_RATE = 2000.0  # requests per virtual second in every phase of the experiment
TOTAL = 1_920_000  # the experiment's requests


def fmt_dur(s: float) -> str:
    return f"{round(s * 1000)}ms"


def scaled_experiment(requests: int, wd: Path, keys: str = "100k",
                      objects: str = "70k") -> tuple[Path, float]:
    """The experiment with its phases scaled to `requests` and its detector's knobs and
    schedules scaled to match (the simulator's virtual day shrinks with its requests); returns
    the file and the virtual length of a half-day (s)."""
    f = requests / TOTAL
    half = 240_000 * f / VIRTUAL_RATE
    text = EXP.read_text()
    text = text.replace('keys = "100k"', f'keys = "{keys}"')
    text = text.replace('objects = "70k"', f'objects = "{objects}"')
    text = re.sub(r'requests = "240k"', f'requests = {round(240_000 * f)}', text)
    text = text.replace('bucket = "2s"', f'bucket = "{fmt_dur(2 * f)}"')
    text = text.replace('lead = "6s"', f'lead = "{fmt_dur(6 * f)}"')
    text = text.replace("every 240s idle 120s-240s lead 6s",
                        f"every {fmt_dur(2 * half)} idle {fmt_dur(half)}-{fmt_dur(2 * half)} "
                        f"lead {fmt_dur(6 * f)}")
    text = text.replace("every 240s idle 0s-120s lead 6s",
                        f"every {fmt_dur(2 * half)} idle 0ms-{fmt_dur(half)} lead {fmt_dur(6 * f)}")
    p = wd / "scaled.toml"
    p.write_text(text)
    return p, half


def locus_conf(port: int, snap: Path, memory: str, mode: str, wall_half: float,
               page: str = "1MiB") -> str:
    """`mode` for both tenants; the knobs at wall-clock scale (a half-day of `wall_half` s)."""
    k = wall_half / 120.0  # against the full experiment's 120 s half-day
    if mode == "schedule":
        p, lead = fmt_dur(2 * wall_half), fmt_dur(6 * k)
        shop = f"every {p} idle {fmt_dur(wall_half)}-{p} lead {lead}"
        night = f"every {p} idle 0ms-{fmt_dur(wall_half)} lead {lead}"
    else:
        shop = night = mode
    return f"""[server]
bind = "127.0.0.1"
port = {port}
hz = 20
[memory]
maxmemory = "{memory}"
page_size = "{page}"
[snapshot]
dir = "{snap}"
on_shutdown = false
[tenancy]
mode = "db"
[dump_load]
bucket = "{fmt_dur(2 * k)}"
window = 10
valley_buckets = 2
valley_tolerance = 0.1
swing = 0.5
load_misses = 100
lead = "{fmt_dur(6 * k)}"
[[tenant]]
name = "shop"
db = 0
dump_load = "{shop}"
[[tenant]]
name = "night"
db = 1
dump_load = "{night}"
"""


PHASES = [f"d{d}-{h}" for d in range(1, 5) for h in ("day", "night")]


def per_phase(series: Path, wall_half: float) -> list[dict]:
    """Per phase: hit ratio of the busy and the quiet tenant, mean GET latency (µs) over both,
    from the per-second series (a second belongs to the phase holding its middle)."""
    acc = [{"shop": [0, 0], "night": [0, 0], "lat": [0.0, 0]} for _ in PHASES]
    with series.open() as fh:
        for row in csv.DictReader(fh):
            mid = float(row["second"]) - 0.5
            i = int(mid // wall_half)
            if i >= len(PHASES) or row["tenant"] not in ("shop", "night"):
                continue
            gets, hits = int(row["gets"]), int(row["hits"])
            a = acc[i]
            a[row["tenant"]][0] += hits
            a[row["tenant"]][1] += gets
            a["lat"][0] += float(row["mean_us"]) * gets
            a["lat"][1] += gets
    out = []
    for i, a in enumerate(acc):
        busy, quiet = ("shop", "night") if i % 2 == 0 else ("night", "shop")
        hr = lambda t: a[t][0] / a[t][1] if a[t][1] else float("nan")  # noqa: E731
        out.append({"busy": hr(busy), "quiet": hr(quiet),
                    "lat": a["lat"][0] / a["lat"][1] if a["lat"][1] else float("nan")})
    return out


def phase_table(runs: dict[str, list[list[dict]]]) -> None:
    """A markdown table: one row per phase, one column per run name, each cell the busy
    tenant's hit ratio, the quiet one's and the mean GET latency over the repeats."""
    print("| phase | " + " | ".join(runs) + " |")
    print("|---|" + "---|" * len(runs))
    for i, ph in enumerate(PHASES):
        cells = [f"{mmm([r[i]['busy'] for r in rs])}, {mmm([r[i]['quiet'] for r in rs])}, "
                 f"{mmm([r[i]['lat'] for r in rs], '{:.0f}')}" for rs in runs.values()]
        print(f"| {ph} | " + " | ".join(cells) + " |")


def mmm(v, f="{:.3f}"):
    v = sorted(v)
    return "/".join(f.format(x) for x in (v[0], statistics.median(v), v[-1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--requests", type=int, default=960_000)
    ap.add_argument("--rate", type=float, default=8000)
    ap.add_argument("--memory", default="22MiB")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--modes", default="never,auto,schedule")
    ap.add_argument("--keys", default="100k", help="each tenant's Zipf key space")
    ap.add_argument("--objects", default="70k", help="the simulator's cache size")
    ap.add_argument("--page-size", default="1MiB")
    a = ap.parse_args()
    modes = a.modes.split(",")
    locus = harness.locus_bin()
    wd = Path(tempfile.mkdtemp(prefix="locus-live-dl-"))
    exp, vhalf = scaled_experiment(a.requests, wd, a.keys, a.objects)
    wall_half = a.requests / 8 / a.rate
    common = ["--tenants", "db", "--backend", "delay:model", "--connections", str(a.connections),
              "--rate", str(a.rate), "--requests", str(a.requests), "--json", "-q"]
    runs: dict[str, list] = {m: [] for m in modes}
    for rep in range(a.repeats):
        for mode in modes:
            port = harness.free_port()
            snap = wd / f"snap-{mode}-{rep}"
            snap.mkdir()
            srv = harness.start_locus(locus_conf(port, snap, a.memory, mode, wall_half, a.page_size), port)
            out = wd / f"out-{mode}-{rep}"
            try:
                if mode == "schedule":  # the schedule counts from Unix time 0: start on a day
                    day = 2 * wall_half
                    time.sleep(day - time.time() % day)
                cmd = [locus, "replay", str(exp), "--target", f"redis://127.0.0.1:{port}",
                       *common, "--out", str(out)]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
                if p.returncode != 0:
                    sys.exit(f"{mode}: {p.stderr}")
                rep_json = json.loads(p.stdout)
                info = harness.Raw(port).call("INFO", "dumpload")
                phases = per_phase(out / "series.csv", wall_half)
                runs[mode].append({"overall": rep_json["overall"], "phases": phases,
                                   "info": info.decode() if isinstance(info, bytes) else info})
                o = rep_json["overall"]
                print(f"repeat {rep + 1} {mode}: hit {o['hit_ratio']:.4f}, mean "
                      f"{o['latency']['mean_us']:.0f} us, p99 {o['latency']['p99_us']} us",
                      file=sys.stderr)
            finally:
                srv.stop()
    print(f"command: bench/live/predis_dump_load.py --repeats {a.repeats} --requests {a.requests} "
          f"--rate {a.rate:g} --memory {a.memory} --connections {a.connections} --modes {a.modes} "
          f"--keys {a.keys} --objects {a.objects} --page-size {a.page_size}")
    print(f"replay: locus replay scaled.toml --target redis://... {' '.join(common[:-2])}")
    print(f"a phase: {a.requests // 8} requests, {wall_half:.1f} s of wall time "
          f"({vhalf:.0f} s virtual in the simulator)")
    print("\nlive, whole run, min/median/max over repeats:")
    for m, rs in runs.items():
        print(f"  {m:<9} hit {mmm([r['overall']['hit_ratio'] for r in rs], '{:.4f}')}  mean us "
              f"{mmm([r['overall']['latency']['mean_us'] for r in rs], '{:.0f}')}  p99 us "
              f"{mmm([r['overall']['latency']['p99_us'] for r in rs], '{:.0f}')}")
    print("\nlive per phase: busy tenant's hit ratio, quiet tenant's hit ratio, mean GET us "
          "(min/median/max)")
    phase_table({m: [r["phases"] for r in rs] for m, rs in runs.items()})
    for m, rs in runs.items():
        line = [ln for ln in rs[-1]["info"].split("\r\n") if ln.startswith("dumpload_")]
        print(f"\nINFO dumpload after the last {m} run: {line}")
    # The model at the same scale, 3 seeds.
    print("\nsimulator, same scaled experiment, seeds 1-3 (min/median/max):")
    sims = []
    for s in (1, 2, 3):
        f = wd / f"sim{s}.toml"
        f.write_text(re.sub(r"^seed = 1$", f"seed = {s}", exp.read_text(), flags=re.M))
        p = subprocess.run([locus, "simulate", "-q", "--threads", "1", "--json", str(f)],
                           capture_output=True, text=True, check=True)
        sims.append(json.loads(p.stdout))
    labels = [r["label"] for r in sims[0]["runs"]]
    for lab in labels:
        rs = [next(r for r in s["runs"] if r["label"] == lab) for s in sims]
        print(f"  {lab:<9} hit {mmm([r['overall']['hit_ratio'] for r in rs], '{:.4f}')}  "
              f"mean us {mmm([r['overall']['mean_latency_us'] for r in rs], '{:.1f}')}")
    print("\nsimulator per phase: busy tenant's hit ratio, quiet tenant's hit ratio, mean GET us "
          "(min/median/max over seeds)")

    def sim_phases(sim: dict, lab: str) -> list[dict]:
        out = []
        run = next(r for r in sim["runs"] if r["label"] == lab)
        for i, p in enumerate(run["phases"][:len(PHASES)]):
            busy, quiet = ("shop", "night") if i % 2 == 0 else ("night", "shop")
            hr = {t["name"]: t["hit_ratio"] for t in p["tenants"]}
            out.append({"busy": hr[busy], "quiet": hr[quiet],
                        "lat": p["overall"]["mean_latency_us"]})
        return out

    phase_table({lab: [sim_phases(s, lab) for s in sims] for lab in labels})
    (wd / "sim.json").write_text(json.dumps(sims))
    print(f"\n(raw outputs in {wd})")


if __name__ == "__main__":
    main()
