#!/usr/bin/env python3
"""EVALSHA of a 3-command script: server CPU per call, Locus beside redis-server.

    python3 bench/evalsha_cpu.py [--bin target/release/locus] [--requests 100000] [--clients 8]
                                 [--repeats 3] [--threads N]

--threads N passes `--threads N` to `locus serve` (its worker threads; default: its own default),
so the script path can be measured without cross-thread wake-ups (`--threads 1`).

Both servers run on loopback (free ports, no persistence); every repeat runs redis-benchmark
against each server in turn (interleaved: locus, redis, locus, redis, ...), the same number of
EVALSHA calls each, and reads the server process's utime+stime from /proc/PID/stat before and
after: CPU per call = CPU ticks spent / calls. Prints min/median/max per server and the
throughput redis-benchmark reports.

The script (a typical counter with a TTL):
    redis.call('INCR', KEYS[1]); redis.call('EXPIRE', KEYS[1], 60); return redis.call('GET', KEYS[1])
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "redis.call('INCR', KEYS[1]); redis.call('EXPIRE', KEYS[1], 60); return redis.call('GET', KEYS[1])"
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen):
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"server exited with {proc.returncode}")
            time.sleep(0.05)
    sys.exit(f"server on {port} did not start")


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line (1-based): 12 and 13 after ")".
    return (int(fields[11]) + int(fields[12])) / TICK


def cli(port: int, *args: str) -> str:
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


def run_once(port: int, pid: int, sha: str, requests: int, clients: int) -> tuple[float, float]:
    before = cpu_secs(pid)
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-n", str(requests), "-c", str(clients), "-r", "10000",
         "-q", "evalsha", sha, "1", "key:__rand_int__"],
        capture_output=True, text=True, check=True, timeout=600).stdout
    after = cpu_secs(pid)
    m = re.findall(r"([\d.]+) requests per second", out)
    rps = float(m[-1]) if m else float("nan")
    return (after - before) / requests * 1e6, rps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "target/release/locus"))
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, help="worker threads for locus serve")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="locus-evalsha-"))
    lp, rp = free_port(), free_port()
    threads = ["--threads", str(args.threads)] if args.threads else []
    locus = subprocess.Popen([args.bin, "serve", "--port", str(lp), *threads], stdout=open(work / "locus.log", "wb"),
                             stderr=subprocess.STDOUT)
    redis = subprocess.Popen(["redis-server", "--port", str(rp), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", str(work)],
                             stdout=open(work / "redis.log", "wb"), stderr=subprocess.STDOUT)
    servers = {"locus": (lp, locus), "redis-server": (rp, redis)}
    try:
        for port, proc in servers.values():
            wait_port(port, proc)
        shas = {name: cli(port, "SCRIPT", "LOAD", SCRIPT) for name, (port, _) in servers.items()}
        assert len(set(shas.values())) == 1, shas
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
        for rep in range(args.repeats):
            for name, (port, proc) in servers.items():
                r = run_once(port, proc.pid, shas[name], args.requests, args.clients)
                results[name].append(r)
                print(f"repeat {rep + 1} {name:13} {r[0]:.2f} µs CPU/call  {r[1]:.0f} calls/s", flush=True)
        print()
        print("| server | server CPU per EVALSHA (µs): min / median / max | calls/s: min / median / max |")
        print("|---|---|---|")
        for name, rs in results.items():
            cpu = sorted(x[0] for x in rs)
            rps = sorted(x[1] for x in rs)
            print(f"| {name} | {cpu[0]:.2f} / {statistics.median(cpu):.2f} / {cpu[-1]:.2f} "
                  f"| {rps[0]:.0f} / {statistics.median(rps):.0f} / {rps[-1]:.0f} |")
    finally:
        for _, proc in servers.values():
            proc.terminate()
        for _, proc in servers.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
