"""Locus's memcached listener against memcached 1.6 (`-t 2`), side by side in one run (issue #13).

Run through bench/memcached.sh (see there for the options). For every repeat, each server in turn
(Locus, memcached, Locus, ...) is started fresh on free loopback ports with the same memory limit,
then:

* throughput: bench/mcload.c (built by memcached.sh; MCLOAD names the binary) loads 100,000 keys
  of 100-byte values, then drives the server for SECONDS with 2 threads and 50 connections, one
  request in flight per connection (unpipelined): 90% `get` / 10% `set` of uniform random keys,
  and separately `get` of 16 random keys. Every reply is checked (all gets must hit). Reported:
  requests/s (and keys/s for the multi-get), and the CPU seconds the server and the client used
  per 100k requests (from /proc and getrusage), which say where the time goes on a shared
  machine. (Debian's memaslap was the first choice; its keys start with 0x10 bytes, which Locus
  refuses as memcached's protocol.txt says keys hold no control characters.)
* memory: 1,000,000 items of 100-byte values under 8-byte keys are stored with pipelined
  `set ... noreply` over one connection, then the server's RSS (/proc/PID/status VmRSS) less its
  RSS before loading, per item stored (`curr_items` is checked).
* `--workloads` (issue 28) names the throughput runs instead of the two above: `mix` (90% get /
  10% set), `get`, `set` (one request in flight per connection), `mgetK` (get of K keys),
  `pipegetD` / `pipesetD` (D gets / sets sent at once per connection, all replies read before
  the next D); e.g. `--workloads "get set mget16 pipeget16 pipeset16"`.
* `--mixed-sets N` (issue 28): each server fresh at `--mixed-mb` (64) MiB takes N sets of distinct
  keys with values of uniformly random size 50..5000 bytes (Python's `random.Random(seed)`,
  seed `--seed` + repeat, the same sequence for both servers of a repeat), pipelined `noreply`,
  far more than fit; then its whole RSS (VmRSS) and `curr_items`: what a memcached user sizing a
  box sees.

Prints markdown tables of min / median / max over the repeats and the Locus / memcached ratio of
the medians (for `--mixed-sets`, also the ratios repeat by repeat, min / median / max). Only the standard library; servers are stopped by the PIDs this script started.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import HOST, LOCUS_BIN, BenchError, free_port, mmm  # noqa: E402

MCLOAD = os.environ.get("MCLOAD", "")


class Server:
    """One server process started by this script, with its memcached port."""

    def __init__(self, kind: str, maxmemory_mb: int, workdir: str,
                 variants: dict[str, tuple[str, bool | None]] | None = None):
        self.kind = kind
        binary, offload = (variants or {}).get(kind, (LOCUS_BIN, None))
        self.port = free_port()
        if kind == "memcached":
            argv = ["memcached", "-p", str(self.port), "-U", "0", "-l", HOST, "-t", "2",
                    "-m", str(maxmemory_mb), "-c", "4096"]
            if os.geteuid() == 0:
                argv += ["-u", "root"]
        else:
            resp = free_port()
            cfg = os.path.join(workdir, f"locus-{self.port}.toml")
            with open(cfg, "w") as f:
                f.write(f'[server]\nbind = "{HOST}"\nport = {resp}\nthreads = 2\n\n'
                        f"[memory]\nmaxmemory = {maxmemory_mb * 1024 * 1024}\n\n"
                        f"[memcached]\nport = {self.port}\n"
                        + ("" if offload is None else f"offload = {str(offload).lower()}\n"))
            argv = [binary, "serve", "--config", cfg]
        self.log = open(os.path.join(workdir, f"{kind}-{self.port}.log"), "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BenchError(f"{kind} did not start: {argv}")
            time.sleep(0.05)

    def _answers(self) -> bool:
        try:
            with socket.create_connection((HOST, self.port), timeout=1) as s:
                s.sendall(b"version\r\n")
                return s.recv(64).startswith(b"VERSION")
        except OSError:
            return False

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise BenchError("no VmRSS")

    def rss_parts(self) -> tuple[int, int]:
        """(RssAnon, RssFile) in bytes: the process's own memory, and the mapped files (its
        executable and libraries) resident in it."""
        parts = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:")):
                    parts[line.split(":")[0]] = int(line.split()[1]) * 1024
        return parts.get("RssAnon", 0), parts.get("RssFile", 0)

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stats(self) -> dict[str, str]:
        with socket.create_connection((HOST, self.port), timeout=10) as s:
            s.sendall(b"stats\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        return {p[1]: p[2] for p in (ln.split(" ", 2) for ln in buf.decode().splitlines())
                if len(p) == 3 and p[0] == "STAT"}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def workload(name: str) -> tuple[int, str, int]:
    """A workload name (module documentation) as mcload's (MULTIGET, MODE, DEPTH); the old
    numeric names: 1 = mix, K = get of K keys."""
    if name.isdigit():
        k = int(name)
        return (1, "mix", 1) if k == 1 else (k, "get", 1)
    m = re.fullmatch(r"(mix|get|set)|mget(\d+)|pipe(get|set)(\d+)", name)
    if not m:
        raise BenchError(f"unknown workload {name!r}: mix, get, set, mgetK, pipegetD, pipesetD")
    if m.group(1):
        return 1, m.group(1), 1
    if m.group(2):
        return int(m.group(2)), "get", 1
    return 1, m.group(3), int(m.group(4))


def describe(name: str) -> str:
    multiget, mode, depth = workload(name)
    if mode == "mix":
        return "90% get / 10% set"
    what = f"get of {multiget} keys" if multiget > 1 else mode
    return what if depth == 1 else f"{what}, {depth}-deep pipeline"


def mcload(srv: Server, seconds: int, multiget: int | str, load_keys: bool = True
           ) -> dict[str, float]:
    """One mcload run: requests/s, keys/s, and CPU seconds per 100k requests of server and client
    (plus the raw counts, for summing slices). `load_keys` False: the keys are already stored.
    `multiget`: a workload (a name, or the old number)."""
    k, mode, depth = workload(str(multiget))
    argv = [MCLOAD, HOST, str(srv.port), "50", "2", str(seconds), "100000", "100", str(k),
            "1" if load_keys else "0", mode, str(depth)]
    cpu0 = srv.cpu_seconds()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu1 = srv.cpu_seconds()
    m = re.search(r"requests=(\d+) keys=(\d+) seconds=([\d.]+) rps=(\d+) kps=(\d+) misses=(\d+)",
                  run.stdout)
    if run.returncode != 0 or not m:
        raise BenchError(f"mcload failed on {srv.kind}: {run.stdout}{run.stderr}")
    if int(m.group(6)) != 0:
        raise BenchError(f"{srv.kind} missed {m.group(6)} keys it was given")
    per = 100_000 / max(int(m.group(1)), 1)
    client = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return {"tps": float(m.group(4)), "kps": float(m.group(5)),
            "server_cpu": (cpu1 - cpu0) * per, "client_cpu": client * per,
            "requests": float(m.group(1)), "keys": float(m.group(2)), "seconds": float(m.group(3)),
            "server_s": cpu1 - cpu0, "client_s": client}


def sliced(servers: dict[str, Server], seconds: int, multiget: str, slices: int
           ) -> dict[str, dict[str, float]]:
    """Every server (all running) driven in turn for `slices` short runs of seconds/slices each,
    the order reversed every other slice, so that load from elsewhere on the machine falls on all
    of them alike; per server, the slices summed as one run."""
    for srv in servers.values():
        mcload(srv, 1, multiget)  # stores the keys (and warms the server up for a second)
    total: dict[str, list[dict[str, float]]] = {k: [] for k in servers}
    order = list(servers)
    for i in range(slices):
        for kind in (order if i % 2 == 0 else order[::-1]):
            total[kind].append(mcload(servers[kind], max(1, seconds // slices), multiget, False))
    out = {}
    for kind, runs in total.items():
        req, keys, secs = (sum(x[f] for x in runs) for f in ("requests", "keys", "seconds"))
        per = 100_000 / max(req, 1)
        out[kind] = {"tps": req / secs, "kps": keys / secs,
                     "server_cpu": sum(x["server_s"] for x in runs) * per,
                     "client_cpu": sum(x["client_s"] for x in runs) * per}
    return out


def load(srv: Server, items: int, value_bytes: int) -> float:
    """Stores `items` items with pipelined noreply sets; returns RSS growth per stored item."""
    before = srv.rss_bytes()
    value = b"v" * value_bytes
    with socket.create_connection((HOST, srv.port), timeout=60) as s:
        batch = 2000
        for start in range(0, items, batch):
            s.sendall(b"".join(b"set k%07d 0 0 %d noreply\r\n%s\r\n" % (i, value_bytes, value)
                               for i in range(start, min(items, start + batch))))
        s.sendall(b"version\r\n")
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                raise BenchError(f"{srv.kind} closed the loading connection")
            buf += chunk
        if not buf.startswith(b"VERSION"):
            raise BenchError(f"{srv.kind} answered {buf[:80]!r} while loading")
    time.sleep(0.5)  # let the allocator settle before reading RSS
    stored = int(srv.stats()["curr_items"])
    if stored != items:
        raise BenchError(f"{srv.kind} holds {stored} of {items} items (raise --maxmemory-mb)")
    return (srv.rss_bytes() - before) / stored


def load_mixed(srv: Server, sets: int, seed: int) -> tuple[int, int, int, int]:
    """Stores `sets` items of random size 50..5000 B (seeded); returns (RSS bytes, curr_items,
    RssAnon bytes, RssFile bytes)."""
    rng = random.Random(seed)
    blob = bytes(97 + rng.randrange(26) for _ in range(5000))
    with socket.create_connection((HOST, srv.port), timeout=120) as s:
        for start in range(0, sets, 500):
            parts = []
            for i in range(start, min(sets, start + 500)):
                n = rng.randint(50, 5000)
                parts.append(b"set m%07d 0 0 %d noreply\r\n%s\r\n" % (i, n, blob[:n]))
            s.sendall(b"".join(parts))
        s.sendall(b"version\r\n")
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                raise BenchError(f"{srv.kind} closed the loading connection")
            buf += chunk
        if not buf.startswith(b"VERSION"):
            raise BenchError(f"{srv.kind} answered {buf[:80]!r} while loading")
    time.sleep(1.0)  # let background work (slab movers, profilers) settle before reading RSS
    return (srv.rss_bytes(), int(srv.stats()["curr_items"])) + srv.rss_parts()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--maxmemory-mb", type=int, default=1024)
    ap.add_argument("--servers", default="locus memcached")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--workloads", default="1 16",
                    help="throughput workloads (module documentation), default the mix and the "
                         "16-key get")
    ap.add_argument("--mixed-sets", type=int, default=0,
                    help="the 50..5000-byte memory part: this many sets per server (0: not run)")
    ap.add_argument("--mixed-mb", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slices", type=int, default=1,
                    help="throughput: start every server at once and drive them in turn in this "
                         "many short slices of SECONDS/SLICES each (summed per server), instead "
                         "of one SECONDS run per server; for a machine whose load changes from "
                         "one minute to the next")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=BINARY[,offload|,inline]",
                    help="another Locus to measure in the same run under LABEL (name it in "
                         "--servers): its binary; ',offload' / ',inline' write [memcached] offload = true / "
                         "false, nothing keeps the binary's default")
    a = ap.parse_args()
    variants: dict[str, tuple[str, bool | None]] = {}
    for v in a.variant:
        label, _, rest = v.partition("=")
        binary, _, flag = rest.partition(",")
        modes = {"": None, "offload": True, "inline": False}
        if not label or not binary or flag not in modes:
            raise BenchError(f"--variant {v!r}: want LABEL=BINARY[,offload|,inline]")
        variants[label] = (binary, modes[flag])
    if not MCLOAD and not a.skip_throughput:
        raise BenchError("MCLOAD is not set (run bench/memcached.sh, which builds bench/mcload.c)")
    servers = a.servers.split()
    work = tempfile.mkdtemp(prefix="locus-mcbench-")
    tput: dict[tuple[str, str], list[dict[str, float]]] = {}
    mem: dict[str, list[float]] = {}
    mixed: dict[str, list[tuple[int, int, int, int]]] = {}
    workloads = a.workloads.split()
    for r in range(a.repeats):
        if a.slices > 1 and not a.skip_throughput:
            for division in workloads:
                running: dict[str, Server] = {}
                try:
                    for kind in servers:
                        running[kind] = Server(kind, a.maxmemory_mb, work, variants)
                    results = sliced(running, a.seconds, division, a.slices)
                finally:
                    for srv in running.values():
                        srv.stop()
                for kind, res in results.items():
                    tput.setdefault((kind, division), []).append(res)
                    print(f"repeat {r + 1} {kind} {describe(division)}: {res['tps']:.0f} req/s "
                          f"(server {res['server_cpu']:.3f} / client {res['client_cpu']:.2f} "
                          f"CPU s per 100k ops, {a.slices} slices)", file=sys.stderr)
        for kind in servers:
            if not a.skip_throughput and a.slices <= 1:
                for division in workloads:
                    srv = Server(kind, a.maxmemory_mb, work, variants)
                    try:
                        res = mcload(srv, a.seconds, division)
                    finally:
                        srv.stop()
                    tput.setdefault((kind, division), []).append(res)
                    print(f"repeat {r + 1} {kind} {describe(division)}: {res['tps']:.0f} req/s "
                          f"(server {res['server_cpu']:.3f} / client {res['client_cpu']:.2f} "
                          f"CPU s per 100k ops)", file=sys.stderr)
            if not a.skip_memory:
                srv = Server(kind, a.maxmemory_mb, work, variants)
                try:
                    per_item = load(srv, a.items, a.value_bytes)
                finally:
                    srv.stop()
                mem.setdefault(kind, []).append(per_item)
                print(f"repeat {r + 1} {kind}: {per_item:.1f} B/item", file=sys.stderr)
            if a.mixed_sets:
                srv = Server(kind, a.mixed_mb, work, variants)
                try:
                    got = load_mixed(srv, a.mixed_sets, a.seed + r)
                finally:
                    srv.stop()
                mixed.setdefault(kind, []).append(got)
                print(f"repeat {r + 1} {kind}: {got[0] / 2**20:.1f} MiB RSS, {got[1]} items "
                      f"({a.mixed_sets} sets of 50..5000 B under {a.mixed_mb} MiB)", file=sys.stderr)
    if tput:
        print("| server | workload | requests/s (min / median / max) | keys/s (median) | "
              "server CPU s per 100k req | client CPU s per 100k req |")
        print("|---|---|---|---|---|---|")
        for (kind, division), runs in sorted(tput.items(),
                                             key=lambda kv: (workloads.index(kv[0][1]), kv[0][0])):
            print(f"| {kind} | {describe(division)} | "
                  f"{mmm([x['tps'] for x in runs], '{:.0f}')} | "
                  f"{statistics.median(x['kps'] for x in runs):.0f} | "
                  f"{mmm([x['server_cpu'] for x in runs], '{:.3f}')} | "
                  f"{mmm([x['client_cpu'] for x in runs], '{:.2f}')} |")
        if "memcached" in servers:
            for kind in (k for k in servers if k != "memcached"):
                for division in workloads:
                    lo = statistics.median(x["tps"] for x in tput[(kind, division)])
                    mc = statistics.median(x["tps"] for x in tput[("memcached", division)])
                    print(f"\n{kind} / memcached median requests/s, {describe(division)}: "
                          f"{lo / mc:.2f}x")
                    lo_cpu = statistics.median(x["server_cpu"] for x in tput[(kind, division)])
                    mc_cpu = statistics.median(x["server_cpu"] for x in tput[("memcached", division)])
                    print(f"{kind} / memcached server CPU per request (median), "
                          f"{describe(division)}: {lo_cpu / mc_cpu:.3f}x")
    if mem:
        print(f"\n| server | RSS per item, {a.items:,} x {a.value_bytes} B (min / median / max) |")
        print("|---|---|")
        for kind, xs in mem.items():
            print(f"| {kind} | {mmm(xs, '{:.1f}')} B |")
        if "locus" in mem and "memcached" in mem:
            ratio = statistics.median(mem["locus"]) / statistics.median(mem["memcached"])
            print(f"\nLocus / memcached median bytes per item: {ratio:.2f}x")
    if mixed:
        print(f"\n| server | RSS MiB, {a.mixed_sets:,} sets of 50..5000 B under {a.mixed_mb} MiB "
              f"(min / median / max) | of which anonymous | of which mapped files | "
              f"items held (min / median / max) |")
        print("|---|---|---|---|---|")
        for kind, xs in mixed.items():
            print(f"| {kind} | {mmm([x[0] / 2**20 for x in xs], '{:.1f}')} | "
                  f"{mmm([x[2] / 2**20 for x in xs], '{:.1f}')} | "
                  f"{mmm([x[3] / 2**20 for x in xs], '{:.1f}')} | "
                  f"{mmm([float(x[1]) for x in xs], '{:.0f}')} |")
        if "memcached" in mixed:
            mc_rss = statistics.median(x[0] for x in mixed["memcached"])
            mc_items = statistics.median(x[1] for x in mixed["memcached"])
            for kind in (k for k in mixed if k != "memcached"):
                rss = statistics.median(x[0] for x in mixed[kind])
                items = statistics.median(x[1] for x in mixed[kind])
                anon = statistics.median(x[2] for x in mixed[kind])
                mc_anon = statistics.median(x[2] for x in mixed["memcached"])
                print(f"\n{kind} / memcached median RSS: {rss / mc_rss:.3f}x (anonymous "
                      f"{anon / mc_anon:.3f}x); items held: {items / mc_items:.3f}x")
                # The same ratios repeat by repeat (both servers of a repeat saw the same seed):
                # their spread, which the ratio of the medians hides.
                pairs = list(zip(mixed[kind], mixed["memcached"]))
                print(f"{kind} / memcached per repeat (min / median / max): RSS "
                      f"{mmm([x[0] / m[0] for x, m in pairs], '{:.3f}')}x, items held "
                      f"{mmm([x[1] / m[1] for x, m in pairs], '{:.3f}')}x")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
