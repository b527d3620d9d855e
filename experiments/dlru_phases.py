#!/usr/bin/env python3
"""Per-phase results of a phased experiment (used for experiments/dlru.md).

`locus simulate` reports totals over the whole run. A run is a pure function of the experiment
file, so the totals of the first p phases are those of the same file cut after phase p (same
seed, same generators, same engine): this script runs the file cut after each phase and prints
the difference of consecutive cumulative totals, per controller, as a Markdown table.

usage: experiments/dlru_phases.py LOCUS_BINARY EXPERIMENT.toml [--golden]
"""

import json
import os
import re
import subprocess
import sys
import tempfile


def run(locus, path, golden):
    cmd = [locus, "simulate", path, "--json", "-q"]
    if golden:
        cmd.append("--golden")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def totals(report):
    """label -> (gets, hits, miss_cost_us, hit_time_us) over all tenants."""
    out = {}
    for r in report["runs"]:
        o = r["overall"]
        hit_us = o["mean_latency_us"] - o["miss_cost_us"] / o["gets"] if o["gets"] else 0.0
        out[r["label"]] = (o["gets"], o["hits"], o["miss_cost_us"], hit_us)
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    locus, path = sys.argv[1], sys.argv[2]
    golden = "--golden" in sys.argv[3:]
    text = open(path).read()
    # Split at each [[phase]] table; everything after the last one is the [golden] table etc.
    parts = re.split(r"(?m)^\[\[phase\]\]\s*$", text)
    head, phases = parts[0], parts[1:]
    tail = ""
    if phases:
        m = re.search(r"(?m)^\[golden\]", phases[-1])
        if m:
            tail = phases[-1][m.start():]
            phases[-1] = phases[-1][: m.start()]
    names = []
    for p in phases:
        m = re.search(r'(?m)^name\s*=\s*"([^"]*)"', p)
        names.append(m.group(1) if m else f"phase {len(names)}")
    cumulative = []
    directory = os.path.dirname(os.path.abspath(path))
    for upto in range(1, len(phases) + 1):
        cut = head + "".join("[[phase]]\n" + p for p in phases[:upto]) + tail
        with tempfile.NamedTemporaryFile("w", suffix=".toml", dir=directory, delete=False) as f:
            f.write(cut)
            tmp = f.name
        try:
            cumulative.append(totals(run(locus, tmp, golden)))
        finally:
            os.unlink(tmp)
    labels = list(cumulative[-1].keys())
    print("| controller | " + " | ".join(f"{n}: hit % / mean µs" for n in names) + " | whole run: hit % / mean µs |")
    print("|---|" + "---|" * (len(names) + 1))
    rows = {}
    for label in labels:
        cells = []
        prev = (0, 0, 0.0)
        for i, cum in enumerate(cumulative):
            g, h, c, hit_us = cum[label]
            dg, dh, dc = g - prev[0], h - prev[1], c - prev[2]
            prev = (g, h, c)
            hr = dh / dg if dg else 0.0
            lat = hit_us + dc / dg if dg else 0.0
            cells.append((hr, lat))
        g, h, c, hit_us = cumulative[-1][label]
        cells.append((h / g if g else 0.0, hit_us + c / g if g else 0.0))
        rows[label] = cells
        print(f"| {label} | " + " | ".join(f"{100 * hr:.2f} / {lat:.2f}" for hr, lat in cells) + " |")
    for label in labels:
        if not label.startswith("dlru"):
            continue
        for i, n in enumerate(names):
            lat = rows[label][i][1]
            fixed = {l: rows[l][i][1] for l in labels if not l.startswith("dlru")}
            b = min(fixed, key=fixed.get)
            print(f"\n{label}, {n}: {lat:.2f} µs vs best fixed {b} {fixed[b]:.2f} µs "
                  f"({100 * (lat - fixed[b]) / fixed[b]:+.2f}%)", end="")
        print()


if __name__ == "__main__":
    main()
