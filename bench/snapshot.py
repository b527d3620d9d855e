#!/usr/bin/env python3
"""Snapshots side by side: Locus's SAVE / BGSAVE / start-up load against Redis 7's RDB.

For each repeat, Locus then Redis (interleaved): start with a snapshot directory, load N keys
(SET k:<i> with a random 64-byte value, pipelined), then measure
  * SAVE: wall time of the command;
  * BGSAVE: the fork's stall (INFO latest_fork_usec: how long the server held its data still)
    and the wall time until rdb_bgsave_in_progress is 0 again (polled every 5 ms);
  * the file's size;
  * start-up: SHUTDOWN NOSAVE, start the server on the same directory, time until it answers
    PING (the load happens before it listens, in both), then DBSIZE must be N.
Prints one table of min / median / max over the repeats.

    LOCUS_BIN=target/release/locus python3 bench/snapshot.py --keys 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import harness  # noqa: E402
from harness import Raw, encode  # noqa: E402


def start(kind: str, d: Path) -> harness.ServerProcess:
    if kind == "redis":
        return harness.start_redis(["--dir", str(d), "--maxmemory", "2gb"])
    port = harness.free_port()
    cfg = (f'[server]\nbind = "127.0.0.1"\nport = {port}\n[memory]\nmaxmemory = "2gb"\n'
           f'[snapshot]\ndir = "{d}"\n')
    return harness.start_locus(cfg, port)


def info(c: Raw, section: str = "persistence") -> dict[str, str]:
    text = c.call("INFO", section)
    text = text.decode() if isinstance(text, bytes) else text
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def one(kind: str, n: int) -> dict[str, float]:
    d = Path(tempfile.mkdtemp(prefix=f"snapbench-{kind}-"))
    srv = start(kind, d)
    out: dict[str, float] = {}
    try:
        with Raw(srv.port, timeout=120) as c:
            # Random values (seeded: both peers get the same): Redis compresses values with LZF,
            # which repetitive bytes would flatter.
            rnd = random.Random(1)
            for i in range(0, n, 20000):
                part = range(i, min(i + 20000, n))
                c.send(b"".join(encode("SET", b"k:%d" % k, rnd.randbytes(64)) for k in part))
                for _ in part:
                    c.read()
            t = time.monotonic()
            assert c.call("SAVE") == "OK"
            out["save_s"] = time.monotonic() - t
            t = time.monotonic()
            assert c.call("BGSAVE") == "Background saving started"
            while info(c)["rdb_bgsave_in_progress"] != "0":
                time.sleep(0.005)
            out["bgsave_s"] = time.monotonic() - t
            p = info(c, "all")  # latest_fork_usec: Redis shows it under stats, Locus persistence
            assert p["rdb_last_bgsave_status"] == "ok"
            out["fork_ms"] = int(p["latest_fork_usec"]) / 1000
            files = [f for f in d.iterdir() if f.is_file()]
            out["file_mib"] = sum(f.stat().st_size for f in files) / (1 << 20)
            c.send(encode("SHUTDOWN", "NOSAVE"))
            c.expect_closed(timeout=30)
        srv.proc.wait(timeout=30)
        t = time.monotonic()
        srv = start(kind, d)
        out["start_load_s"] = time.monotonic() - t
        with Raw(srv.port, timeout=60) as c:
            assert c.call("DBSIZE") == n, "every key loaded"
    finally:
        srv.stop()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"locus": [], "redis": []}
    for r in range(a.repeats):
        for kind in ("locus", "redis"):
            res = one(kind, a.keys)
            runs[kind].append(res)
            print(f"repeat {r} {kind}: " + ", ".join(f"{k} {v:.3f}" for k, v in res.items()),
                  flush=True)
    print(f"\n| measure ({a.keys} keys, 64-byte values) | Locus min / median / max | "
          f"Redis min / median / max |")
    print("|---|---|---|")
    for m in runs["locus"][0]:
        cells = []
        for kind in ("locus", "redis"):
            xs = sorted(x[m] for x in runs[kind])
            cells.append(f"{xs[0]:.3f} / {statistics.median(xs):.3f} / {xs[-1]:.3f}")
        print(f"| {m} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
