#!/usr/bin/env python3
"""Several seeds of an experiment, with every figure of its report kept (used for experiments/*.md).

`locus simulate --seeds N` summarises the overall and per-tenant figures; the write-ups also
need per-phase and steady-state figures, targets and notes. This script runs the experiment
once per seed (`seed`, `seed + 1`, ... of the file, or --first), each with `--json`, keeps every
report in DIR/seed<S>.json (a report already there is reused), and prints per controller the
min / median / max over the seeds of the overall hit ratio and mean latency, per tenant, per
phase and per steady-state window.

A seed is set by a copy of the file with its `seed` line replaced, written beside the original
(so relative trace paths still resolve) and removed afterwards.

usage: experiments/seeds.py LOCUS EXPERIMENT.toml DIR [--seeds 3] [--first S] [-- simulate args]
"""

import json
import os
import re
import statistics
import subprocess
import sys


def seeded_copy(path, seed):
    text = open(path).read()
    line = f"seed = {seed}"
    if re.search(r"^seed\s*=.*$", text, flags=re.M):
        text = re.sub(r"^seed\s*=.*$", line, text, count=1, flags=re.M)
    else:
        text = line + "\n" + text
    d, base = os.path.split(os.path.abspath(path))
    out = os.path.join(d, f".seed{seed}-{os.getpid()}-{base}")
    with open(out, "w") as f:
        f.write(text)
    return out


def file_seed(path):
    m = re.search(r"^seed\s*=\s*(\d+)", open(path).read(), flags=re.M)
    return int(m.group(1)) if m else 0


def run(locus, path, seed, out, extra):
    if os.path.exists(out):
        return json.load(open(out))
    copy = seeded_copy(path, seed)
    try:
        cmd = [locus, "simulate", copy, "--json", "-q", "--seeds", "1"] + extra
        res = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    finally:
        os.remove(copy)
    with open(out + ".tmp", "w") as f:
        f.write(res)
    os.rename(out + ".tmp", out)
    return json.loads(res)


def mmm(values, scale=1.0, digits=2):
    v = sorted(x * scale for x in values)
    return " / ".join(f"{x:.{digits}f}" for x in (v[0], statistics.median(v), v[-1]))


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    n, first = 3, None
    if "--seeds" in argv:
        i = argv.index("--seeds")
        n = int(argv[i + 1])
        del argv[i : i + 2]
    if "--first" in argv:
        i = argv.index("--first")
        first = int(argv[i + 1])
        del argv[i : i + 2]
    if len(argv) != 3:
        sys.exit(__doc__)
    locus, path, outdir = argv
    os.makedirs(outdir, exist_ok=True)
    s0 = file_seed(path) if first is None else first
    seeds = list(range(s0, s0 + n))
    reports = [run(locus, path, s, os.path.join(outdir, f"seed{s}.json"), extra) for s in seeds]
    print(f"{reports[0]['name']}: seeds {seeds}; min / median / max")
    labels = [r["label"] for r in reports[0]["runs"]]

    def rows(get):
        for label in labels:
            vals = []
            for rep in reports:
                run_ = next(r for r in rep["runs"] if r["label"] == label)
                vals.append(get(run_))
            yield label, vals

    tenants = [t["name"] for t in reports[0]["runs"][0]["tenants"]]
    print("\n| controller | " + " | ".join(tenants) + " | overall hit % | overall mean µs |")
    print("|---" * (len(tenants) + 3) + "|")
    for label in labels:
        runs = [next(r for r in rep["runs"] if r["label"] == label) for rep in reports]
        cells = [mmm([next(t for t in r["tenants"] if t["name"] == tn)["hit_ratio"] for r in runs], 100) for tn in tenants]
        cells.append(mmm([r["overall"]["hit_ratio"] for r in runs], 100))
        cells.append(mmm([r["overall"]["mean_latency_us"] for r in runs], 1, 1))
        print(f"| {label} | " + " | ".join(cells) + " |")
    for key in ("phases", "steady"):
        names = [p["name"] for p in reports[0]["runs"][0].get(key) or []]
        if not names:
            continue
        print(f"\n{key}: overall hit % (mean µs)")
        print("| controller | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for label in labels:
            runs = [next(r for r in rep["runs"] if r["label"] == label) for rep in reports]
            cells = []
            for nm in names:
                ps = [next(p for p in r[key] if p["name"] == nm)["overall"] for r in runs]
                cells.append(f"{mmm([p['hit_ratio'] for p in ps], 100)} ({mmm([p['mean_latency_us'] for p in ps], 1, 1)})")
            print(f"| {label} | " + " | ".join(cells) + " |")
    gains = [dict(rep.get("oracle_gain") or []) for rep in reports]
    if all(gains):
        print("\nshare of the oracle's gain (whole run), %")
        for label in labels:
            vals = [g.get(label) for g in gains]
            if all(v is not None for v in vals):
                print(f"  {label}: {mmm(vals, 100, 1)}")
    windows = [{w: dict(v) for w, v in rep.get("steady_gain") or []} for rep in reports]
    if all(windows):
        print("\nshare of the oracle's gain per steady window, %")
        for label in labels:
            out = []
            for w in windows[0]:
                vals = [x.get(w, {}).get(label) for x in windows]
                if all(v is not None for v in vals):
                    out.append(f"{w} {mmm(vals, 100, 1)}")
            if out:
                print(f"  {label}: " + "; ".join(out))

if __name__ == "__main__":
    main()
