#!/usr/bin/env python3
"""pRedis's setting live (issue 14, acceptance 1a): YCSB A-F, each mix's keys split by hash over a
fast and a slow PostgreSQL query, replayed look-aside with `locus replay` against redis-server 7
and Locus with `shared`, `predis`, `kredis` and `mpart`, all calibrated to hold the same number of
keys (a share of the run's distinct keys); then `locus simulate` on the same trace with the
measured backend means as penalties: the model beside each live figure.

Per-key penalty classes inside one tenant do not exist in Locus yet (issue 14 acceptance 3): the
two cost classes are two Locus tenants routed by key prefix (`f:` fast, `s:` slow; prefix
tenancy), which is pRedis's *manual* class assignment (the application names a key's class). On
redis-server both prefixes live in the one database. The trace's tenant column is the class, so
the replay reports each class as a tenant (t0 fast, t1 slow) against both servers.

Look-aside semantics of the replay (crates/locus-replay): a read is GET, and on a miss the
class's query, then SET of the row into the cache; an update (A, B) and an insert (D, E) is a SET
of the new value into the cache, without a backend write (their latency is not in the GET
figures); a read-modify-write (F) is a read as above followed by a SET; a short scan (E) is one
GET per record of the range, each a separate look-aside read on its own.

Usage: bench/live/ycsb.py [--mixes a,b,c,d,e,f] [--repeats 3] [--records 20000]
       [--requests 60000] [--warmup 20000] [--share 0.5] [--json FILE]
       bench/live/ycsb.py --report FILE     (the tables of saved raw results)
       bench/live/ycsb.py --report FILE --model-seeds 3   (the same, the model re-run under 3 seeds)
(LOCUS_BIN selects the binary; default target/release/locus.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib as L  # noqa: E402


NAMES = ["fast", "slow"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mixes", default="a,b,c,d,e,f")
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--share", type=float, default=0.5, help="memory: this share of the run's distinct keys")
    ap.add_argument("--slow", type=float, default=0.5, help="share of the keys on the slow query")
    L.common_args(ap, 4, "per class")
    a, saved = L.remodel_args(ap, ap.parse_args())
    if a.report:
        return L.reprint(a.report, NAMES, NAMES)
    locus, targets, wd, stamp = L.begin("ycsb", a)
    cases, exps, calib_cache = {}, {}, {}
    try:
        for mix in a.mixes.split(","):
            trace = wd / f"ycsb-{mix}.csv"
            ws = L.make_trace(locus, trace, [f"pattern=ycsb-{mix},records={a.records}"], a.requests,
                              seed=1, split_slow=a.slow)
            keys = round(a.share * ws["total"])
            exps[mix] = L.Setting(f"ycsb-{mix}", trace, NAMES, "prefix", ["f:", "s:"],
                                  [a.fast_query, a.slow_query], 1000, a.interval,
                                  L.controller_settings(a.rate), a.connections, a.warmup, a.requests)
            L.log(f"ycsb-{mix}: {ws['total']} distinct keys {ws['per_tenant']}; memory for {keys}")
            if saved:  # --report with --model-seeds: the saved live figures, a new model
                cases[mix] = saved["cases"][mix]
                continue
            cases[mix] = L.run_case(locus, exps[mix], ws, keys, f"YCSB-{mix.upper()}", targets,
                                    a.repeats, calib_cache)
        L.finish(locus, a, "ycsb", stamp, cases, exps, NAMES, NAMES)
    finally:
        shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
