#!/usr/bin/env python3
"""Where a server's threads spend their CPU and how often they sleep: one redis-benchmark run,
per thread of the server, CPU µs per request (/proc/PID/task/T/schedstat) and voluntary /
involuntary context switches per request (/proc/PID/task/T/status).

    python3 bench/ctx_switches.py --bin target/release/locus --threads 2 --test ping_mbulk
    python3 bench/ctx_switches.py --bin redis --test evalsha -c 8

A voluntary switch is a thread going to sleep (epoll_wait with nothing ready, a futex): each one
costs a wake-up later, paid by whoever wakes it (another server thread, or the kernel on behalf of
the client's send). `--test evalsha` runs EVALSHA of bench/evalsha_cpu.py's 3-command script.
The server is started on a free loopback port and stopped by its PID.
"""

import argparse
import os
import re
import socket
import subprocess
import time

SCRIPT = "redis.call('INCR', KEYS[1]); redis.call('EXPIRE', KEYS[1], 60); return redis.call('GET', KEYS[1])"


def threads_of(pid: int) -> dict:
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                st = f.read()
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                ns = int(f.read().split()[0])
        except OSError:
            continue
        name = re.search(r"Name:\s*(\S+)", st).group(1)
        vol = int(re.search(r"^voluntary_ctxt_switches:\s*(\d+)", st, re.M).group(1))
        invol = int(re.search(r"^nonvoluntary_ctxt_switches:\s*(\d+)", st, re.M).group(1))
        out[t] = (name, vol, invol, ns)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="target/release/locus", help="a Locus binary, or `redis`")
    ap.add_argument("--threads", type=int, default=2, help="Locus's --threads")
    ap.add_argument("--test", default="ping_mbulk", help="a redis-benchmark -t test, or evalsha")
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("-c", type=int, default=8)
    ap.add_argument("-P", type=int, default=1)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if args.bin == "redis":
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--logfile", "/dev/null"]
    else:
        argv = [args.bin, "serve", "--port", str(port), "--threads", str(args.threads),
                "--maxmemory", "1gb"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise SystemExit(f"{argv[0]} did not start")
                time.sleep(0.05)
        if args.test == "evalsha":
            sha = subprocess.run(["redis-cli", "-p", str(port), "SCRIPT", "LOAD", SCRIPT],
                                 capture_output=True, text=True, check=True).stdout.strip()
            what = ["evalsha", sha, "1", "key:__rand_int__"]
        else:
            what = ["-t", args.test]
        before = threads_of(proc.pid)
        out = subprocess.run(["redis-benchmark", "-p", str(port), "-n", str(args.n), "-c", str(args.c),
                              "-P", str(args.P), "-r", "10000", "-q", *what],
                             capture_output=True, text=True, timeout=600).stdout
        after = threads_of(proc.pid)
        total = 0
        for t, (name, vol, invol, ns) in sorted(after.items()):
            _, vol0, invol0, ns0 = before.get(t, (name, 0, 0, 0))
            if ns - ns0 <= 0:
                continue
            total += ns - ns0
            print(f"  {name:16} CPU {(ns - ns0) / args.n / 1000:6.2f} µs/req  voluntary "
                  f"{(vol - vol0) / args.n:6.3f}/req  involuntary {(invol - invol0) / args.n:6.3f}/req")
        rps = re.findall(r"([\d.]+) requests per second", out)
        print(f"{args.bin} threads={args.threads} {args.test} -c {args.c} -P {args.P}: "
              f"server CPU {total / args.n / 1000:.2f} µs/req, {rps[-1] if rps else '?'} requests/s")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
