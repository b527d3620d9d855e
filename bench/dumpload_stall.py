#!/usr/bin/env python3
"""How long pRedis's dump and load hold the engine lock in `locus serve` (INFO dumpload's
last_dump_usec / last_load_usec), for N keys of 100-byte values, 3 repeats each.

    LOCUS_BIN=target/release/locus python3 bench/dumpload_stall.py 100000 1000000

Each repeat starts a server whose tenant `a` has the schedule "every 12s idle 3s-9s lead 1500ms",
fills it at the start of a cycle, and reads the two figures after the load. There is no Redis
side: Redis has no dump/load.
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

import harness  # noqa: E402
from harness import Raw, encode  # noqa: E402

SCHEDULE = "every 12s idle 3s-9s lead 1500ms"


def info_line(c: Raw) -> dict:
    text = c.call("INFO", "dumpload").decode()
    line = [ln for ln in text.split("\r\n") if ln.startswith("dumpload_a:")][0]
    return dict(kv.split("=", 1) for kv in line.split(":", 1)[1].split(","))


def wait_phase(lo: float, hi: float) -> None:
    while not (lo <= time.time() % 12 < hi):
        time.sleep(0.02)


def run(n: int) -> tuple[int, int]:
    snap = Path(tempfile.mkdtemp(prefix="locus-dlbench-"))
    port = harness.free_port()
    cfg = (f'[server]\nbind = "127.0.0.1"\nport = {port}\n[memory]\nmaxmemory = "2gb"\n'
           f'[snapshot]\ndir = "{snap}"\non_shutdown = false\n'
           f'[[tenant]]\nname = "a"\ndump_load = "{SCHEDULE}"\n')
    srv = harness.start_locus(cfg, port)
    try:
        with Raw(port, timeout=60) as c:
            wait_phase(9.5, 10.5)
            val = b"x" * 100
            for i in range(0, n, 10000):
                c.send(b"".join(encode("SET", f"k{j}", val) for j in range(i, min(n, i + 10000))))
                for _ in range(i, min(n, i + 10000)):
                    c.read()
            d0 = int(info_line(c)["loads"])
            while int(info_line(c)["loads"]) == d0:
                time.sleep(0.2)
            s = info_line(c)
            assert int(s["items_loaded"]) == n, s
            return int(s["last_dump_usec"]), int(s["last_load_usec"])
    finally:
        srv.stop()


def main() -> None:
    for n in map(int, sys.argv[1:] or ["100000"]):
        runs = [run(n) for _ in range(3)]
        for name, k in (("dump", 0), ("load", 1)):
            v = sorted(r[k] / 1000 for r in runs)
            print(f"{n} keys: {name} holds the lock min {v[0]:.1f} ms, median "
                  f"{statistics.median(v):.1f} ms, max {v[-1]:.1f} ms")


if __name__ == "__main__":
    main()
