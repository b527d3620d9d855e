#!/usr/bin/env python3
"""How long pRedis's dump and load stall `locus serve`, seen by another tenant: tenant `a` on a
schedule holds N keys of 100-byte values; tenant `b` sends GETs back to back on its own connection
through `a`'s dump and load, and the longest wait of one of them is the stall. INFO dumpload's
figures (the longest step under the engine lock, the steps taken) are printed beside it.
3 repeats each, a fresh server each.

    LOCUS_BIN=target/release/locus python3 bench/dumpload_stall.py [--control] 100000 300000

`--hz=N` sets the server's hz (default 10, Redis's): a dump ranks, writes and deletes, and a
load restores, at most 5,000 items per tick, so a 300,000-key dump needs hz 50 to fit the
schedule's 4.5 s before its load. `--control` adds 3 runs per size where `a` never dumps, with the same fill and an 8.5 s probe:
the longest GET the machine gives tenant b without any dump (scheduling noise).

The schedule is "every 12s idle 3s-9s lead 1500ms"; each repeat fills `a` at the end of a cycle
and reads the figures after its load. There is no Redis side: Redis has no dump/load.
"""

import statistics
import sys
import tempfile
import threading
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


class Probe(threading.Thread):
    """Tenant b's GETs, one at a time; keeps the longest wait."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port, self.stop, self.worst, self.n = port, threading.Event(), 0.0, 0

    def run(self) -> None:
        with Raw(self.port, timeout=60) as c:
            assert c.call("AUTH", "bob", "bpw") == "OK"
            c.call("SET", "probe", "1")
            while not self.stop.is_set():
                t0 = time.perf_counter()
                c.call("GET", "probe")
                self.worst = max(self.worst, time.perf_counter() - t0)
                self.n += 1


HZ = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--hz=")), 10)


def run(n: int, mode: str = SCHEDULE) -> dict:
    snap = Path(tempfile.mkdtemp(prefix="locus-dlbench-"))
    port = harness.free_port()
    cfg = (f'[server]\nbind = "127.0.0.1"\nport = {port}\nhz = {HZ}\n[memory]\nmaxmemory = "2gb"\n'
           f'[snapshot]\ndir = "{snap}"\non_shutdown = false\n'
           '[tenancy]\nmode = "user"\n'
           f'[[tenant]]\nname = "a"\nuser = "alice"\npassword = "apw"\ndump_load = "{mode}"\n'
           '[[tenant]]\nname = "b"\nuser = "bob"\npassword = "bpw"\n')
    srv = harness.start_locus(cfg, port)
    try:
        with Raw(port, timeout=60) as c:
            assert c.call("AUTH", "alice", "apw") == "OK"
            wait_phase(9.5, 10.5)
            val = b"x" * 100
            for i in range(0, n, 10000):
                c.send(b"".join(encode("SET", f"k{j}", val) for j in range(i, min(n, i + 10000))))
                for _ in range(i, min(n, i + 10000)):
                    c.read()
            d0 = int(info_line(c)["loads"]) if mode != "never" else 0
            probe = Probe(port)
            wait_phase(0.0, 2.5)  # the fill's own load on the server is over
            probe.start()
            if mode == "never":  # the control: as long, with no dump and no load
                time.sleep(8.5)
                s = {}
            else:
                while int(info_line(c)["loads"]) == d0:
                    time.sleep(0.2)
                time.sleep(1.0)
                s = info_line(c)
                assert int(s["items_loaded"]) == n, s
            probe.stop.set()
            probe.join()
            s["probe_worst_ms"] = probe.worst * 1000
            s["probe_gets"] = probe.n
            return s
    finally:
        srv.stop()


def mmm(v: list[float]) -> str:
    v = sorted(v)
    return f"{v[0]:.1f} / {statistics.median(v):.1f} / {v[-1]:.1f}"


def main() -> None:
    sizes = [a for a in sys.argv[1:] if not a.startswith("--")]
    for n in map(int, sizes or ["100000"]):
        runs = [run(n) for _ in range(3)]
        print(f"{n} keys (min / median / max of 3):")
        print(f"  tenant b's longest GET during a's dump and load, ms: "
              f"{mmm([r['probe_worst_ms'] for r in runs])}")
        print(f"  dump's longest step under the lock, ms: "
              f"{mmm([int(r['last_dump_usec']) / 1000 for r in runs])}")
        print(f"  load's longest step under the lock, ms: "
              f"{mmm([int(r['last_load_usec']) / 1000 for r in runs])}")
        if "dump_steps" in runs[0]:
            print(f"  dump steps: {[int(r['dump_steps']) for r in runs]}, most items in one: "
                  f"{[int(r['dump_step_items_max']) for r in runs]}")
        print(f"  tenant b's GETs in the run: {[r['probe_gets'] for r in runs]}")
        if "--control" in sys.argv:
            ctl = [run(n, "never") for _ in range(3)]
            print(f"  control, dump_load never, tenant b's longest GET over 8.5 s, ms: "
                  f"{mmm([r['probe_worst_ms'] for r in ctl])}")


if __name__ == "__main__":
    main()
