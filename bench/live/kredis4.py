#!/usr/bin/env python3
"""kRedis's setting live (issue 14, acceptance 1b): four tenants, two web-like (Zipf 0.9 whose hot
set moves) and two src2-like (a loop over a key range mixed half and half with Zipf 0.9 over
another range), one of each on a fast PostgreSQL query (primary-key lookup) and one on a slow one
(the key's row joined with an aggregate), at 25 %, 50 % and 75 % of the run's distinct keys;
replayed look-aside with `locus replay` against redis-server 7 (one database per tenant) and Locus
(db tenancy) with `shared`, `predis`, `kredis` and `mpart`, every server calibrated to hold the same
number of keys; then `locus simulate` on the same trace with the measured backend means as
penalties: the model beside each live figure.

The generated analogues follow experiments/kredis_four_tenants.toml (loops that LRU cannot keep
when they do not fit, Zipf with a moving hot set), scaled down to finish in minutes.

Usage: bench/live/kredis4.py [--shares 0.25,0.5,0.75] [--repeats 3] [--requests 60000]
       [--warmup 20000] [--json FILE]
       bench/live/kredis4.py --report FILE     (the tables of saved raw results)
       bench/live/kredis4.py --report FILE --model-seeds 3   (the same, the model re-run under 3 seeds)
(LOCUS_BIN selects the binary; default target/release/locus.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib as L  # noqa: E402

NAMES = ["web-fast", "web-slow", "src2-fast", "src2-slow"]
SHORT = ["web-f", "web-s", "src2-f", "src2-s"]


def tenants(web_keys: int, web_phase: int, loop_keys: int, zipf_keys: int) -> list[str]:
    v = "value-size=1000"
    out = []
    for t in (0, 1):
        out.append(f"pattern=zipf,alpha=0.9,keys={web_keys},phase={web_phase},rate=1000,{v},tenant={t}")
    for t in (2, 3):
        out.append(f"pattern=loop,keys={loop_keys},rate=500,{v},tenant={t}")
        out.append(f"pattern=zipf,alpha=0.9,keys={zipf_keys},key-offset=1000000,rate=500,{v},tenant={t}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shares", default="0.25,0.5,0.75", help="memory: shares of the run's distinct keys")
    ap.add_argument("--web-keys", type=int, default=6000)
    ap.add_argument("--web-phase", type=int, default=8000, help="a web tenant's hot set moves every N of its requests")
    ap.add_argument("--loop-keys", type=int, default=2000)
    ap.add_argument("--zipf-keys", type=int, default=2000)
    L.common_args(ap, 2, "per tenant")
    a, saved = L.remodel_args(ap, ap.parse_args())
    if a.report:
        return L.reprint(a.report, NAMES, SHORT)
    locus, targets, wd, stamp = L.begin("kredis4", a)
    gens = tenants(a.web_keys, a.web_phase, a.loop_keys, a.zipf_keys)
    print("trace: locus trace generate -n {} --seed 1 {}".format(a.requests, " ".join(f"-t {t}" for t in gens)))
    cases, exps, calib_cache = {}, {}, {}
    try:
        trace = wd / "kredis4.csv"
        ws = L.make_trace(locus, trace, gens, a.requests, seed=1)
        q = [a.fast_query, a.slow_query, a.fast_query, a.slow_query]
        L.log(f"kredis4: {ws['total']} distinct keys {ws['per_tenant']}")
        for share in [float(x) for x in a.shares.split(",")]:
            label = f"{share:.0%}"
            keys = round(share * ws["total"])
            # One setting per share (the model's file is named after it); the calibration cache
            # is keyed by the key count, so the shares never share a maxmemory.
            exps[label] = L.Setting(f"kredis4-{label.rstrip('%')}", trace, NAMES, "db", [0, 1, 2, 3], q,
                                    1000, a.interval, L.controller_settings(a.rate), a.connections,
                                    a.warmup, a.requests)
            L.log(f"share {label}: memory for {keys} keys")
            if saved:  # --report with --model-seeds: the saved live figures, a new model
                cases[label] = saved["cases"][label]
                continue
            cases[label] = L.run_case(locus, exps[label], ws, keys, f"{label} of the working set",
                                      targets, a.repeats, calib_cache)
        L.finish(locus, a, "kredis4", stamp, cases, exps, NAMES, SHORT)
    finally:
        shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
