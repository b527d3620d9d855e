#!/usr/bin/env python3
"""LAMA's MRC prediction accuracy (Hu et al., section 5.3: 99.0% on average).

At each repartition LAMA notes `pool0.cost_now`: the misses its per-class curves predict, at the
allocation in force, over the window its profilers covered (`window_intervals` decision
intervals of `interval` engine accesses). The misses that happened in the same window follow
from the intervals' hit ratios: with GETs and fill SETs only, an interval of A accesses at miss
ratio m holds A / (1 + m) GETs and A·m / (1 + m) misses. Accuracy of a window is
1 − |predicted − actual| / actual; the script prints it per window after the first (cold
start) and the mean per run, for every `lama` run of the reports given (but OPT_ART runs, whose
label says `art`: their cost is a response time) (`locus simulate --json`,
e.g. experiments/seeds.py's seed<S>.json).

usage: experiments/lama_accuracy.py INTERVAL_ACCESSES REPORT.json...
"""

import json
import statistics
import sys


def windows(run, interval):
    out = []
    ivs = run["intervals"]
    for j, iv in enumerate(ivs):
        notes = dict((k, v) for k, v in iv["notes"])
        pred = notes.get("pool0.cost_now")
        if pred is None:
            continue
        w = int(notes.get("window_intervals", 1))
        span = ivs[j - w + 1 : j + 1]
        if len(span) < w or any(x["hit_ratio"][0] is None for x in span):
            continue
        actual = sum(interval * m / (1 + m) for m in (1 - x["hit_ratio"][0] for x in span))
        if actual > 0:
            out.append((iv["at_request"], pred, actual))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    interval = float(sys.argv[1])
    print("| experiment | run | seed | windows | mean accuracy | min accuracy |")
    print("|---|---|---|---|---|---|")
    means = []
    for path in sys.argv[2:]:
        rep = json.load(open(path))
        for run in rep["runs"]:
            # OPT_ART's cost_now is a response time, not misses: only the miss objective counts.
            if run["controller"] != "lama" or "art" in run["label"]:
                continue
            w = windows(run, interval)[1:]
            if not w:
                continue
            acc = [1 - abs(p - a) / a for _, p, a in w]
            means.append(statistics.mean(acc))
            print(
                f"| {rep['name']} | {run['label']} | {path.split('seed')[-1].split('.')[0]} | "
                f"{len(w)} | {100 * statistics.mean(acc):.1f}% | {100 * min(acc):.1f}% |"
            )
    if means:
        print(f"\nmean over runs: {100 * statistics.mean(means):.1f}%")


if __name__ == "__main__":
    main()
