#!/usr/bin/env python3
"""DLRU's miniature-cache prediction error (dissertation section 3.2.2: mean absolute error 0.031).

For every `dlru` run of the reports given (JSON of `locus simulate --json`, e.g. the seed<S>.json
files experiments/seeds.py keeps), each decision's note `pool0.mr.k<K>` is the miss ratio the
miniature cache of K predicted over the interval that just ended, and the interval's hit ratio
is what the engine actually got under the K in force during it. The error of an interval is
|predicted miss ratio at that K − actual miss ratio|; a run's MAE is the mean over its
intervals after the first two (cold start, and the fallback decision before any curve). Runs
restricted to one K (the fixed-K rows) compare each K's miniature cache with the engine at that
K, as the paper's Figure 3.4 does.

usage: experiments/dlru_mae.py REPORT.json...
"""

import json
import statistics
import sys


def run_mae(run):
    errs = []
    ivs = run["intervals"]
    for prev, iv in zip(ivs, ivs[1:]):
        if iv["interval"] < 2 or iv["hit_ratio"][0] is None:
            continue
        k = prev["samples"][0]
        notes = dict((n, v) for n, v in iv["notes"])
        if notes.get("pool0.fallback") == 1.0 and f"pool0.mr.k{k}" not in notes:
            continue
        pred = notes.get(f"pool0.mr.k{k}")
        if pred is None:
            continue
        errs.append(abs(pred - (1.0 - iv["hit_ratio"][0])))
    return errs


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    by_label = {}
    for path in sys.argv[1:]:
        rep = json.load(open(path))
        for run in rep["runs"]:
            if run["controller"] != "dlru":
                continue
            errs = run_mae(run)
            if errs:
                by_label.setdefault((rep["name"], run["label"]), []).append(
                    (statistics.mean(errs), len(errs))
                )
    allm = []
    print("| experiment | run | MAE per seed | intervals |")
    print("|---|---|---|---|")
    for (name, label), v in by_label.items():
        allm.extend(m for m, _ in v)
        print(f"| {name} | {label} | {' / '.join(f'{m:.3f}' for m, _ in v)} | {v[0][1]} |")
    print(f"\nmean of the runs' MAE: {statistics.mean(allm):.3f} over {len(allm)} runs")


if __name__ == "__main__":
    main()
