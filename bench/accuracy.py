#!/usr/bin/env python3
"""Format bench/accuracy.sh's output directory as markdown tables (stdout).

LRU table: parsed from the `--mae` lines `locus mrc` printed (lru_<trace>_R<r>.log).
K-LRU tables: MAE computed here from CSVs (klru_<trace>_*.csv) against the full-trace engine
simulation (klru_<trace>_truth_ev<E>.csv), with the truth interpolated linearly at each point.
"""
import csv
import glob
import os
import re
import sys

RATES = ["0.01", "0.001"]
LRU_MODELS = ["shards", "aet", "eaet", "footprint"]
MAE_LINE = re.compile(
    r"MAE (\S+?)\(.*?vs exact LRU: ([0-9.]+) \(worst ([0-9.]+) at (\d+)\)"
)


def order(names):
    gen = sorted(n for n in names if n.startswith("gen_"))
    return sorted(n for n in names if not n.startswith("gen_")) + gen


def lru_table(out):
    cells = {}
    for path in glob.glob(os.path.join(out, "lru_*_R*.log")):
        m = re.match(r"lru_(.+)_R([0-9.]+)\.log$", os.path.basename(path))
        name, rate = m.group(1), m.group(2)
        with open(path) as f:
            for line in f:
                mm = MAE_LINE.search(line)
                if mm:
                    cells[(name, mm.group(1), rate)] = (float(mm.group(2)), float(mm.group(3)))
    names = order({k[0] for k in cells})
    print("MAE against exact LRU (100 capacities up to the working set; in brackets the worst point's")
    print("absolute error). **Bold**: misses the goal MAE <= 0.01 at R = 0.01.\n")
    head = ["trace"] + [f"{m} R={r}" for m in LRU_MODELS for r in RATES]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in names:
        row = [n]
        for m in LRU_MODELS:
            for r in RATES:
                c = cells.get((n, m, r))
                if c is None:
                    row.append("n/a")
                    continue
                s = f"{c[0]:.4f} ({c[1]:.3f})"
                if r == "0.01" and c[0] > 0.01:
                    s = f"**{s}**"
                row.append(s)
        print("| " + " | ".join(row) + " |")
    print()


def read_curve(path):
    pts = []
    with open(path) as f:
        for row in csv.DictReader(f):
            pts.append((float(row["capacity"]), float(row["miss_ratio"])))
    pts.sort()
    return pts


def interp(curve, x):
    if x <= curve[0][0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y1
    return curve[-1][1]


def mae(truth, est):
    if not truth or not est:
        return None
    return sum(abs(y - interp(truth, x)) for x, y in est) / len(est)


def klru_tables(out):
    names = order({
        re.match(r"klru_(.+)_truth_ev0\.csv$", os.path.basename(p)).group(1)
        for p in glob.glob(os.path.join(out, "klru_*_truth_ev0.csv"))
    })
    if not names:
        return
    exps = sorted({
        re.search(r"_krr_x([0-9.]+)\.csv$", p).group(1)
        for p in glob.glob(os.path.join(out, "klru_*_krr_x*.csv"))
    }, key=float)
    for ev, label in (("0", "textbook K-LRU (evpool 0)"), ("16", "Redis eviction pool (evpool 16)")):
        print(f"K = 5, ground truth: the engine's {label} simulated on the full trace at 20 sizes.")
        print("KRR: MAE at each exponent, best in the last column; mini: miniature simulation.\n")
        head = ["trace", "R"] + [f"krr x={x}" for x in exps] + ["krr best", "mini"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for n in names:
            truth = read_curve(os.path.join(out, f"klru_{n}_truth_ev{ev}.csv"))
            for r in RATES:
                row = [n, r]
                best = None
                for x in exps:
                    p = os.path.join(out, f"klru_{n}_R{r}_krr_x{x}.csv")
                    e = mae(truth, read_curve(p)) if os.path.exists(p) else None
                    row.append("n/a" if e is None else f"{e:.4f}")
                    if e is not None and (best is None or e < best[0]):
                        best = (e, x)
                row.append("n/a" if best is None else f"{best[0]:.4f} (x={best[1]})")
                p = os.path.join(out, f"klru_{n}_R{r}_mini_ev{ev}.csv")
                e = mae(truth, read_curve(p)) if os.path.exists(p) else None
                row.append("n/a" if e is None else f"{e:.4f}")
                if r == "0.01" and best is not None and best[0] > 0.01:
                    row[-2] = f"**{row[-2]}**"
                print("| " + " | ".join(row) + " |")
        print()
        exponent_summary(out, names, exps, ev)


def exponent_summary(out, names, exps, ev):
    """One exponent for all traces (the goal's "exponent setting" per K-LRU variant): mean MAE
    over the traces at R = 0.01 and how many traces meet MAE <= 0.01 with it."""
    r = "0.01"
    rows = []
    for x in exps + ["mini"]:
        errs = []
        for n in names:
            truth = read_curve(os.path.join(out, f"klru_{n}_truth_ev{ev}.csv"))
            name = f"mini_ev{ev}" if x == "mini" else f"krr_x{x}"
            p = os.path.join(out, f"klru_{n}_R{r}_{name}.csv")
            if os.path.exists(p):
                errs.append(mae(truth, read_curve(p)))
        if errs:
            label = "mini" if x == "mini" else f"krr x={x}"
            rows.append((label, sum(errs) / len(errs), sum(e <= 0.01 for e in errs), len(errs)))
    if not rows:
        return
    print(f"One setting for every trace (evpool {ev}, R = {r}): mean MAE over the traces, and the")
    print("traces meeting MAE <= 0.01.\n")
    print("| model | mean MAE | traces <= 0.01 |")
    print("|---|---|---|")
    for label, m, ok, n in rows:
        print(f"| {label} | {m:.4f} | {ok} of {n} |")
    print()


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: accuracy.py OUT_DIR (bench/out/accuracy)")
    lru_table(sys.argv[1])
    klru_tables(sys.argv[1])


if __name__ == "__main__":
    main()
