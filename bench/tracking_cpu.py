#!/usr/bin/env python3
"""Client-side caching: server CPU per SET with no tracking client, with one client tracking the
keyspace, and with one BCAST client, Locus and redis-server side by side (issue 26).

For every repeat, every server in turn is started fresh; for every mode the tracking client (if
any) connects in RESP3, turns CLIENT TRACKING on (`keys`: then reads every key of the keyspace
once, so the first SET of each key invalidates it; `bcast`: BCAST with the empty prefix, so every
SET command sends it a message) and drains its socket on a thread while one
`redis-benchmark -t set -n N -c C -d D -r KEYSPACE -P p` runs. The figure is the server's CPU
(utime + stime from /proc/PID/stat) during that run divided by N; ratios are Locus over Redis,
pair by pair (same repeat and mode).

    cargo build --release --bin locus
    python3 bench/tracking_cpu.py                    # -n 200000 -P 16, 3 repeats
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import BenchError, Conn, Server, cpu_seconds, encode  # noqa: E402

MODES = ["off", "keys", "bcast"]


class Tracker:
    """A RESP3 connection with tracking on, its pushes drained (and counted) on a thread."""

    def __init__(self, port: int, mode: str, keyspace: int):
        self.conn = Conn(port)
        if mode == "bcast":
            assert self.conn.call("CLIENT", "TRACKING", "ON", "BCAST") == b"OK"
        else:
            assert self.conn.call("CLIENT", "TRACKING", "ON") == b"OK"
            # redis-benchmark's keys: key:000000000000 ... (-r keyspace)
            for i in range(0, keyspace, 1000):
                keys = [f"key:{j:012d}" for j in range(i, min(i + 1000, keyspace))]
                self.conn.call("MGET", *keys)
        # RESP3 from here (the drain thread reads HELLO's reply): pushes need it.
        self.conn.send_raw(encode("HELLO", "3"))
        self.bytes = 0
        self.stop = False
        self.conn.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self):
        while not self.stop:
            try:
                chunk = self.conn.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except OSError:
                return
            if not chunk:
                return
            self.bytes += len(chunk)

    def close(self):
        self.stop = True
        self.thread.join()
        self.conn.close()


def one(server: Server, mode: str, args) -> tuple[float, int]:
    """CPU µs per SET, and bytes of invalidations the tracking client received."""
    tracker = None if mode == "off" else Tracker(server.port, mode, args.keyspace)
    try:
        c0 = cpu_seconds(server.pid)
        r = subprocess.run(
            ["redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port), "-t", "set",
             "-n", str(args.n), "-c", str(args.clients), "-d", str(args.d), "-r", str(args.keyspace),
             "-P", str(args.P), "-q"],
            capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise BenchError(f"redis-benchmark: {r.stdout[-200:]} {r.stderr[-200:]}")
        cpu = (cpu_seconds(server.pid) - c0) / args.n * 1e6
    finally:
        if tracker:
            tracker.close()
    return cpu, tracker.bytes if tracker else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=200_000)
    ap.add_argument("-c", "--clients", type=int, default=50)
    ap.add_argument("-d", type=int, default=100)
    ap.add_argument("-P", type=int, default=16)
    ap.add_argument("--keyspace", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    servers = ["locus", "redis"]
    cpu: dict[tuple[str, str], list[float]] = {}
    pushed: dict[tuple[str, str], list[int]] = {}
    for _ in range(args.repeats):
        for name in servers:
            srv = Server(name, 1 << 30)
            try:
                for mode in MODES:
                    c, b = one(srv, mode, args)
                    cpu.setdefault((name, mode), []).append(c)
                    pushed.setdefault((name, mode), []).append(b)
            finally:
                srv.stop()

    def mmm(xs, f="{:.2f}"):
        xs = sorted(xs)
        return " / ".join(f.format(v) for v in (xs[0], statistics.median(xs), xs[-1]))

    print(f"\nserver CPU µs per SET (utime+stime / requests); redis-benchmark -t set -n {args.n} "
          f"-c {args.clients} -d {args.d} -r {args.keyspace} -P {args.P}; min / median / max of "
          f"{args.repeats} interleaved repeats; invalidation bytes: median received by the tracking "
          f"client\n")
    print("| tracking client | locus | redis | locus / redis | invalidation bytes locus / redis |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        ratios = [a / b for a, b in zip(cpu[("locus", mode)], cpu[("redis", mode)])]
        print(f"| {mode} | {mmm(cpu[('locus', mode)])} | {mmm(cpu[('redis', mode)])} | "
              f"{mmm(ratios)} | {statistics.median(pushed[('locus', mode)]):.0f} / "
              f"{statistics.median(pushed[('redis', mode)]):.0f} |")


if __name__ == "__main__":
    main()
