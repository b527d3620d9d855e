"""Live slab rebalancing through the network: Locus with `lama`, Locus with `automove` and
memcached 1.6 with `-o slab_reassign,slab_automove=1`, on the same size-shifting replay
(experiments/memcached_live.md; issue #13).

    python3 bench/memcached_live.py [--repeats 3] [--memory-mb 16] [--phase1 8] [--phase2 30]

For every repeat, each configuration in turn is started fresh with the same memory (1 MiB slab
pages) and driven by one pymemcache client doing look-aside caching (get; on a miss, set):

* fill: SMALL_KEYS keys of 100-byte values are set (about 1.5x what the memory holds);
* phase 1 (PHASE1 s): uniform random gets over the small keys;
* shift, phase 2 (PHASE2 s): uniform random gets over LARGE_KEYS keys of 10 KB values, whose
  working set (~10 MB) fits only if pages move from the 100-byte class to the 10 KB class.

Reported per run: the hit ratio over the last half of phase 1 (before the shift), over the first
third of phase 2 (while the pages move), over its last third (after the shift), and pages moved (Locus: the sum of `stats slabs`
`pages_moved_in`; memcached: `stats` `slabs_moved`). Prints min / median / max over the repeats.
Servers are stopped by the PIDs this script started.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import HOST, LOCUS_BIN, BenchError, free_port, mmm  # noqa: E402
from pymemcache.client.base import Client  # noqa: E402

SMALL, LARGE = b"s" * 100, b"L" * 10_000
LARGE_KEYS = 1000
CONFIGS = ["locus-lama", "locus-automove", "memcached-automove"]


def start(config: str, memory_mb: int, work: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    if config.startswith("memcached"):
        argv = ["memcached", "-p", str(port), "-U", "0", "-l", HOST, "-t", "2", "-m", str(memory_mb),
                "-o", "slab_reassign,slab_automove=1"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
    else:
        ctl = config.split("-", 1)[1]
        cfg = os.path.join(work, f"{config}-{port}.toml")
        with open(cfg, "w") as f:
            f.write(f'[server]\nbind = "{HOST}"\nport = {free_port()}\n\n'
                    f"[memory]\nmaxmemory = {memory_mb << 20}\n\n"
                    f'[memcached]\nport = {port}\ncontroller = "{ctl}"\ninterval = "1s"\n')
        argv = [LOCUS_BIN, "serve", "--config", cfg]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection((HOST, port), timeout=1) as s:
                s.sendall(b"version\r\n")
                if s.recv(64).startswith(b"VERSION"):
                    return proc, port
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise BenchError(f"{config} did not start")
        time.sleep(0.05)


def stop(proc: subprocess.Popen):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pages_moved(c: Client, config: str) -> int:
    if config.startswith("memcached"):
        return int(c.stats()[b"slabs_moved"])
    return sum(int(v) for k, v in c.stats("slabs").items() if k.endswith(b":pages_moved_in"))


def drive(c: Client, keys: list[str], value: bytes, seconds: float, windows: list[tuple[float, float]],
          rng: random.Random) -> list[float]:
    """Look-aside gets over `keys` for `seconds`; the hit ratio in each (from, to) window (s)."""
    start = time.monotonic()
    hits = [0] * len(windows)
    gets = [0] * len(windows)
    while (t := time.monotonic() - start) < seconds:
        k = rng.choice(keys)
        v = c.get(k)
        for i, (lo, hi) in enumerate(windows):
            if lo <= t < hi:
                gets[i] += 1
                hits[i] += v is not None
        if v is None:
            c.set(k, value, noreply=True)
    return [h / max(g, 1) for h, g in zip(hits, gets)]


def run(config: str, a, work: str, seed: int) -> tuple[float, float, float, int]:
    proc, port = start(config, a.memory_mb, work)
    try:
        c = Client((HOST, port), timeout=10, no_delay=True)
        rng = random.Random(seed)
        small_keys = [f"s{i}" for i in range(a.small_keys)]
        for k in small_keys:
            c.set(k, SMALL, noreply=True)
        [before] = drive(c, small_keys, SMALL, a.phase1, [(a.phase1 / 2, a.phase1)], rng)
        large_keys = [f"L{i}" for i in range(LARGE_KEYS)]
        third = a.phase2 / 3
        early, after = drive(c, large_keys, LARGE, a.phase2, [(0, third), (2 * third, a.phase2)], rng)
        moved = pages_moved(c, config)
        c.close()
        return before, early, after, moved
    finally:
        stop(proc)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--memory-mb", type=int, default=16)
    ap.add_argument("--small-keys", type=int, default=150_000)
    ap.add_argument("--phase1", type=float, default=8.0)
    ap.add_argument("--phase2", type=float, default=30.0)
    ap.add_argument("--configs", default=" ".join(CONFIGS))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="locus-mclive-")
    res: dict[str, list[tuple[float, float, float, int]]] = {}
    for r in range(a.repeats):
        for config in a.configs.split():
            out = run(config, a, work, seed=r)
            res.setdefault(config, []).append(out)
            print(f"repeat {r + 1} {config}: hit ratio before {out[0]:.3f}, first third after "
                  f"{out[1]:.3f}, last third after {out[2]:.3f}, pages moved {out[3]}", file=sys.stderr)
    third = f"{a.phase2 / 3:.0f}"
    print(f"| configuration | hit ratio before the shift | 0-{third} s after | last {third} s | pages moved |")
    print("|---|---|---|---|---|")
    for config, runs in res.items():
        print(f"| {config} | " + " | ".join(mmm([x[i] for x in runs], "{:.3f}") for i in range(3))
              + f" | {mmm([x[3] for x in runs], '{:.0f}')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
