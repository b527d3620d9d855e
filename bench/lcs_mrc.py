#!/usr/bin/env python3
"""libCacheSim side of bench/mrc_speed.sh (run with bench/.venv/bin/python, libcachesim 0.3.5).

  lcs_mrc.py convert IN.lis.zst OUT.oracleGeneral.bin
      Expands an ARC `.lis` trace (`start nblocks ignore reqno`, one request per 512-byte block,
      as the ARC paper and traces/README.md count them) into libCacheSim's oracleGeneral binary
      format (<uint32 time, uint64 id, uint32 size=512, int64 next=-1>), its fastest reader, so
      the peer is timed on its best input. Prints requests and unique ids.
  lcs_mrc.py run TRACE.oracleGeneral.bin --unique N --fractions F,F,... [--sample R]
      Plain LRU at each capacity (fraction x N objects, every object size 1), one
      `c_process_trace` per capacity on a fresh reader; with --sample R the reader has
      libCacheSim's spatial sampler at rate R and the capacities are scaled by R (hashpower sized
      to the sampled key count). Prints one JSON line: seconds (wall, all capacities) and the
      miss ratio per capacity.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import time


def convert(src, dst):
    rec = struct.Struct("<IQIq")
    n = 0
    seen = set()
    proc = subprocess.Popen(["zstd", "-dc", src], stdout=subprocess.PIPE)
    with open(dst, "wb") as out:
        buf = bytearray()
        for lineno, line in enumerate(proc.stdout, 1):
            parts = line.split()
            if len(parts) < 2:
                raise SystemExit(f"{src}:{lineno}: expected 'start nblocks ...', got {line[:60]!r}")
            start, count = int(parts[0]), int(parts[1])
            t = int(parts[3]) if len(parts) > 3 else lineno
            for b in range(start, start + count):
                buf += rec.pack(t & 0xFFFFFFFF, b, 512, -1)
                seen.add(b)
            n += count
            if len(buf) > 1 << 24:
                out.write(buf)
                buf.clear()
        out.write(buf)
    if proc.wait() != 0:
        raise SystemExit(f"zstd -dc {src} failed")
    print(json.dumps({"requests": n, "unique": len(seen)}))


def run(path, unique, fractions, sample):
    import libcachesim as lcs

    results = []
    # libcachesim 0.3.5 frees a reader's sampler itself, so closing the reader or letting Python
    # collect the Sampler crashes (double free): keep every object alive and leave via os._exit.
    keep = []
    t0 = time.perf_counter()
    for f in fractions:
        cap = max(1, round(f * unique * (sample or 1.0)))
        sampler = lcs.libcachesim_python.Sampler(sample, lcs.SamplerType.SPATIAL_SAMPLER) if sample else None
        params = lcs.ReaderInitParam(ignore_obj_size=True, sampler=sampler)
        reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, params)
        keys = unique * (sample or 1.0)
        hashpower = max(10, math.ceil(math.log2(max(2.0, keys))) + 1)
        cache = lcs.LRU(cap, hashpower=hashpower)
        miss, _byte_miss = cache.process_trace(reader)
        results.append({"fraction": f, "capacity": cap, "miss_ratio": miss})
        keep.append((sampler, params, reader, cache))
    secs = time.perf_counter() - t0
    print(json.dumps({"seconds": secs, "sample": sample, "points": results}), flush=True)
    sys.stderr.flush()
    os._exit(0)


def main(argv):
    if len(argv) >= 3 and argv[0] == "convert":
        convert(argv[1], argv[2])
        return
    if len(argv) >= 2 and argv[0] == "run":
        import argparse

        ap = argparse.ArgumentParser(prog="lcs_mrc.py run")
        ap.add_argument("trace")
        ap.add_argument("--unique", type=int, required=True)
        ap.add_argument("--fractions", required=True)
        ap.add_argument("--sample", type=float, default=0.0)
        a = ap.parse_args(argv[1:])
        fr = [float(x) for x in a.fractions.split(",")]
        if a.unique <= 0 or any(not 0 < x <= 1 for x in fr) or not 0 <= a.sample <= 1:
            ap.error("--unique > 0, fractions in (0, 1], --sample in [0, 1]")
        run(a.trace, a.unique, fr, a.sample)
        return
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
