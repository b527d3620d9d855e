#!/usr/bin/env python3
"""Memory benchmarks for issue #2, Locus vs redis-server side by side in one run.

(a) overhead: load N keys (default 1,000,000) of fixed-size values (default 100 bytes) into a fresh
    server with pipelined SETs; read RSS from /proc/PID/status (VmRSS, not INFO) before and after;
    report payload bytes (keys + values), (RSS - payload)/key, and the same with the empty
    process's RSS subtracted. Goal: Locus <= 0.7x Redis per-key overhead.
(b) bound: with maxmemory 256 MiB, SET values of uniformly random size 50..5000 bytes (seeded) on
    keys drawn uniformly from a key space larger than fits, until 10x maxmemory of value bytes were
    written (or --max-seconds pass); sample INFO used_memory and RSS every --sample-every SETs.
    Report max sampled used_memory vs maxmemory, final and peak (VmHWM) RSS vs the issue's bound
    1.15 x maxmemory + 64 MiB.
(m) mixed types (issue 12): as (b), but each write replaces a key (DEL, then one command) with a
    hash of 1..1000 fields, a list of 1..1000 elements, a sorted set of 1..1000 members (elements
    of 5..60 bytes) or a string of 50 B..4 MB (log-uniform), until 10x maxmemory was written.
(e) per-element memory (issue 12): 10,000 keys each of a 100-field hash, a 100-member sorted set,
    a 100-element list, a 100-member set (elements `element:NNN`, 11 bytes; hash values and scores
    too), a 100-member set of integers 0..99 (an intset) and a stream of 100 entries of 3 small
    fields (`XADD key <n>-1 a n b n c n`: an element is an entry), one type per fresh server;
    (RSS after - RSS before) / elements, and INFO used_memory likewise. --e-types picks the types;
    --e-keys and --e-per-key change the shape (e.g. 1,000 x 1,000: the large encodings).

Usage:
  bench/memory.py [--servers locus,redis] [--repeats 3] [--part a|b|ab|m|e|...] [--keys 1000000]
                  [--e-types hash,zset,list,set,intset,stream]
                  [--value-size 100] [--bound-maxmemory 268435456] [--bound-factor 10]
                  [--keyspace 500000] [--seed 1] [--max-seconds 180] [--json FILE]

`--servers redis,redis` tests the script without Locus. Servers run one after the other, in the
order given, alternating per repeat (A, B, A, B, ...), each started fresh and stopped by PID.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import BenchError, RespError, Server, mmm  # noqa: E402

MiB = 1 << 20
BATCH = 5000


def set_cmd(key: bytes, value: bytes) -> bytes:
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(value), value)


def check_ok(replies, what):
    bad = [r for r in replies if r != b"OK"]
    if bad:
        raise BenchError(f"{what}: {len(bad)} SETs failed, first reply {bad[0]!r}")


def part_a(kind, label, keys, value_size):
    """Loads `keys` keys; returns a dict of measurements."""
    with Server(kind, maxmemory=4 << 30, label=label) as srv:
        c = srv.conn()
        time.sleep(0.2)
        empty_rss = srv.rss_bytes()
        value = (b"0123456789abcdef" * ((value_size + 15) // 16))[:value_size]
        payload = 0
        t0 = time.monotonic()
        for start in range(0, keys, BATCH):
            end = min(keys, start + BATCH)
            cmds = []
            for i in range(start, end):
                k = b"key:%08d" % i
                payload += len(k) + len(value)
                cmds.append(set_cmd(k, value))
            check_ok(c.pipeline(b"".join(cmds), end - start), f"{label} load")
        load_s = time.monotonic() - t0
        dbsize = c.call("DBSIZE")
        if dbsize != keys:
            raise BenchError(f"{label}: DBSIZE {dbsize} after loading {keys} keys (eviction or lost writes?)")
        time.sleep(0.5)
        rss = srv.rss_bytes()
        info = c.info("memory")
        c.close()
        return {
            "server": label, "keys": keys, "value_size": value_size, "payload_bytes": payload,
            "empty_rss": empty_rss, "rss": rss, "used_memory": int(info.get("used_memory", -1)),
            "overhead_per_key": (rss - payload) / keys,
            "overhead_per_key_minus_empty": (rss - empty_rss - payload) / keys, "load_s": load_s,
        }


def part_b(kind, label, maxmemory, factor, keyspace, seed, max_seconds, sample_every):
    rng = random.Random(seed)
    blob = bytes(rng.getrandbits(8) for _ in range(5000))
    target = factor * maxmemory
    with Server(kind, maxmemory=maxmemory, label=label) as srv:
        c = srv.conn()
        written = sets = 0
        samples = []
        errors = 0
        first_error = None
        t0 = time.monotonic()
        timed_out = False

        def sample():
            info = c.info("memory")
            samples.append({"sets": sets, "written": written, "used_memory": int(info.get("used_memory", -1)),
                            "maxmemory": int(info.get("maxmemory", -1)), "rss": srv.rss_bytes(),
                            "t": time.monotonic() - t0})

        sample()
        next_sample = sample_every
        while written < target:
            if time.monotonic() - t0 > max_seconds:
                timed_out = True
                break
            cmds = []
            n = min(BATCH, next_sample - sets)
            for _ in range(n):
                size = rng.randint(50, 5000)
                k = b"key:%08d" % rng.randrange(keyspace)
                written += size
                cmds.append(set_cmd(k, blob[:size]))
            for r in c.pipeline(b"".join(cmds), n):
                if r != b"OK":
                    errors += 1
                    first_error = first_error or r
            sets += n
            if sets >= next_sample:
                sample()
                next_sample += sample_every
        sample()
        time.sleep(0.5)
        final_rss = srv.rss_bytes()
        hwm = srv.hwm_bytes()
        info = c.info("memory")
        dbsize = c.call("DBSIZE")
        c.close()
    limit = 1.15 * maxmemory + 64 * MiB
    max_used = max(s["used_memory"] for s in samples)
    return {
        "server": label, "maxmemory": maxmemory, "sets": sets, "written": written, "timed_out": timed_out,
        "errors": errors, "first_error": str(first_error) if first_error else None, "dbsize": dbsize,
        "max_used_memory": max_used, "final_used_memory": int(info.get("used_memory", -1)),
        "final_rss": final_rss, "peak_rss": hwm, "rss_limit": limit,
        "rss_ok": final_rss <= limit, "peak_ok": hwm <= limit, "samples": samples,
        "seconds": samples[-1]["t"],
    }


def cmd(*args) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def mixed_write(rng, blob, keyspace):
    """One replacing write of a random type: (commands, bytes of payload)."""
    kind = rng.choice("hlzs")
    k = b"%c:%07d" % (ord(kind), rng.randrange(keyspace))
    if kind == "s":
        size = int(50 * (4 * MiB / 50) ** rng.random())
        return [cmd(b"SET", k, blob[:size])], size
    n = rng.randint(1, 1000)
    elems = [blob[i * 7 % 4000:i * 7 % 4000 + rng.randint(5, 60)] + b"%d" % i for i in range(n)]
    size = sum(len(e) for e in elems)
    if kind == "h":
        args = [b"HSET", k]
        for e in elems:
            args += [e, e[:8]]
            size += 8
    elif kind == "l":
        args = [b"RPUSH", k] + elems
    else:
        args = [b"ZADD", k]
        for i, e in enumerate(elems):
            args += [b"%d" % i, e]
    return [cmd(b"DEL", k), cmd(*args)], size


def part_m(kind, label, maxmemory, factor, keyspace, seed, max_seconds):
    rng = random.Random(seed)
    blob = bytes(rng.getrandbits(8) for _ in range(4 * MiB))
    target = factor * maxmemory
    with Server(kind, maxmemory=maxmemory, label=label) as srv:
        c = srv.conn()
        written = writes = errors = 0
        first_error = None
        samples = []
        t0 = time.monotonic()
        timed_out = False

        def sample():
            info = c.info("memory")
            samples.append({"writes": writes, "written": written, "used_memory": int(info.get("used_memory", -1)),
                            "rss": srv.rss_bytes(), "t": time.monotonic() - t0})

        sample()
        while written < target:
            if time.monotonic() - t0 > max_seconds:
                timed_out = True
                break
            cmds, n = [], 0
            batch_bytes = 0
            while batch_bytes < 8 * MiB and n < 200:
                cs, size = mixed_write(rng, blob, keyspace)
                cmds += cs
                n += len(cs)
                batch_bytes += size
                written += size
                writes += 1
            for r in c.pipeline(b"".join(cmds), n):
                if isinstance(r, RespError) or (isinstance(r, bytes) and r.startswith(b"-")):
                    errors += 1
                    first_error = first_error or r
            sample()
        sample()
        time.sleep(0.5)
        final_rss = srv.rss_bytes()
        hwm = srv.hwm_bytes()
        info = c.info("memory")
        dbsize = c.call("DBSIZE")
        c.close()
    limit = 1.15 * maxmemory + 64 * MiB
    return {
        "server": label, "maxmemory": maxmemory, "sets": writes, "written": written, "timed_out": timed_out,
        "errors": errors, "first_error": str(first_error) if first_error else None, "dbsize": dbsize,
        "max_used_memory": max(s["used_memory"] for s in samples), "final_used_memory": int(info.get("used_memory", -1)),
        "final_rss": final_rss, "peak_rss": hwm, "rss_limit": limit,
        "rss_ok": final_rss <= limit, "peak_ok": hwm <= limit, "samples": samples, "seconds": samples[-1]["t"],
    }


TYPES_E = ("hash", "zset", "list", "set", "intset", "stream")


def part_e(kind, label, types=TYPES_E, keys=10_000, per_key=100):
    out = {"server": label}
    for ty in types:
        with Server(kind, maxmemory=1024 * MiB, label=label) as srv:
            c = srv.conn()
            c.call("SET", "warm", "x")
            time.sleep(0.2)
            rss0, used0 = srv.rss_bytes(), int(c.info("memory")["used_memory"])
            if ty == "stream":
                # One entry per XADD: 3 small fields (a, b, c with the entry's number), explicit
                # IDs; pipelined 10,000 commands at a time.
                cmds = []
                for k in range(keys):
                    key = b"stream:%06d" % k
                    for i in range(per_key):
                        v = b"%d" % i
                        cmds.append(cmd(b"XADD", key, b"%d-1" % (i + 1), b"a", v, b"b", v, b"c", v))
                        if len(cmds) == 10_000:
                            for r in c.pipeline(b"".join(cmds), len(cmds)):
                                if isinstance(r, RespError):
                                    raise BenchError(f"{label} {ty}: {r}")
                            cmds = []
                if cmds:
                    for r in c.pipeline(b"".join(cmds), len(cmds)):
                        if isinstance(r, RespError):
                            raise BenchError(f"{label} {ty}: {r}")
            for base in range(0, keys if ty != "stream" else 0, 100):
                cmds = []
                for k in range(base, min(keys, base + 100)):
                    key = b"%s:%06d" % (ty.encode(), k)
                    args = [{"hash": b"HSET", "zset": b"ZADD", "list": b"RPUSH", "set": b"SADD",
                             "intset": b"SADD"}[ty], key]
                    for i in range(per_key):
                        e = b"element:%03d" % i
                        args += {"hash": [e, e], "zset": [b"%d" % i, e], "list": [e], "set": [e],
                                 "intset": [b"%d" % i]}[ty]
                    cmds.append(cmd(*args))
                for r in c.pipeline(b"".join(cmds), len(cmds)):
                    if isinstance(r, RespError):
                        raise BenchError(f"{label} {ty}: {r}")
            time.sleep(0.2)
            n = keys * per_key
            out[ty] = {"rss_per_elem": (srv.rss_bytes() - rss0) / n,
                       "used_per_elem": (int(c.info("memory")["used_memory"]) - used0) / n,
                       "encoding": str(c.call("OBJECT", "ENCODING", f"{ty}:000000"), "utf-8", "replace")}
            c.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default="locus,redis")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--part", default="ab", help="any of a, b, m, e (e.g. ab, me)")
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--bound-maxmemory", type=int, default=256 * MiB)
    ap.add_argument("--bound-factor", type=int, default=10)
    ap.add_argument("--keyspace", type=int, default=500_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=180.0, help="time bound per part-b run")
    ap.add_argument("--sample-every", type=int, default=10_000)
    ap.add_argument("--e-types", default=",".join(TYPES_E[:5]),
                    help="part e's types (default all but stream)")
    ap.add_argument("--e-keys", type=int, default=10_000, help="part e: keys per type")
    ap.add_argument("--e-per-key", type=int, default=100,
                    help="part e: elements per key (above 128: the large encodings)")
    ap.add_argument("--json", default=None, help="write raw results here (default bench/out/memory-<ts>.json)")
    a = ap.parse_args()
    e_types = tuple(t for t in a.e_types.split(",") if t)
    if not set(e_types) <= set(TYPES_E):
        ap.error(f"--e-types: one of {','.join(TYPES_E)} each")
    kinds = a.servers.split(",")
    if len(kinds) != 2:
        ap.error("--servers needs two kinds, e.g. locus,redis")
    for name in ("repeats", "keys", "value_size", "bound_maxmemory", "bound_factor", "keyspace", "sample_every",
                 "e_keys", "e_per_key"):
        if getattr(a, name) <= 0:
            ap.error(f"--{name.replace('_', '-')} must be positive")
    labels = kinds if kinds[0] != kinds[1] else [f"{kinds[0]}#1", f"{kinds[1]}#2"]
    stamp = datetime.datetime.now(datetime.timezone.utc)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    print(f"# memory.py {' '.join(sys.argv[1:])}  ({stamp:%Y-%m-%d %H:%M} UTC, {rev})", flush=True)
    if not a.part or set(a.part) - set("abme"):
        ap.error("--part takes letters of a, b, m, e")
    res_a, res_b, res_m, res_e = [], [], [], []
    for rep in range(a.repeats):
        for kind, label in zip(kinds, labels):
            if "a" in a.part:
                r = part_a(kind, label, a.keys, a.value_size)
                r["repeat"] = rep
                res_a.append(r)
                print(f"  (a) repeat {rep + 1} {label}: rss {r['rss'] / MiB:.1f} MiB, "
                      f"overhead {r['overhead_per_key']:.1f} B/key, load {r['load_s']:.1f}s", file=sys.stderr, flush=True)
            if "b" in a.part:
                r = part_b(kind, label, a.bound_maxmemory, a.bound_factor, a.keyspace, a.seed + rep,
                           a.max_seconds, a.sample_every)
                r["repeat"] = rep
                res_b.append(r)
                print(f"  (b) repeat {rep + 1} {label}: {r['sets']} SETs in {r['seconds']:.1f}s, "
                      f"max used {r['max_used_memory'] / MiB:.1f} MiB, final rss {r['final_rss'] / MiB:.1f} MiB",
                      file=sys.stderr, flush=True)
            if "m" in a.part:
                r = part_m(kind, label, a.bound_maxmemory, a.bound_factor, a.keyspace // 10, a.seed + rep,
                           a.max_seconds)
                r["repeat"] = rep
                res_m.append(r)
                print(f"  (m) repeat {rep + 1} {label}: {r['sets']} writes in {r['seconds']:.1f}s, errors {r['errors']} "
                      f"({r['first_error']}), max used {r['max_used_memory'] / MiB:.1f} MiB, "
                      f"final rss {r['final_rss'] / MiB:.1f} MiB", file=sys.stderr, flush=True)
            if "e" in a.part:
                r = part_e(kind, label, e_types, a.e_keys, a.e_per_key)
                r["repeat"] = rep
                res_e.append(r)
                print(f"  (e) repeat {rep + 1} {label}: " + ", ".join(
                    f"{ty} {r[ty]['rss_per_elem']:.1f} B/elem ({r[ty]['encoding']})" for ty in e_types),
                    file=sys.stderr, flush=True)

    if res_a:
        print(f"\n(a) {a.keys:,} keys `key:%08d` (12 B) with {a.value_size}-byte values; payload = keys + values "
              f"= {res_a[0]['payload_bytes']:,} B; RSS = VmRSS after loading; min / median / max over "
              f"{a.repeats} repeats\n")
        print("| server | empty RSS MiB | loaded RSS MiB | INFO used_memory MiB | (RSS − payload)/key B | "
              "(RSS − empty RSS − payload)/key B |")
        print("|---|---|---|---|---|---|")
        for lab in labels:
            rs = [r for r in res_a if r["server"] == lab]
            print(f"| {lab} | {mmm([r['empty_rss'] / MiB for r in rs], '{:.1f}')} | "
                  f"{mmm([r['rss'] / MiB for r in rs], '{:.1f}')} | {mmm([r['used_memory'] / MiB for r in rs], '{:.1f}')} | "
                  f"{mmm([r['overhead_per_key'] for r in rs], '{:.1f}')} | "
                  f"{mmm([r['overhead_per_key_minus_empty'] for r in rs], '{:.1f}')} |")
        ra = [r for r in res_a if r["server"] == labels[0]]
        rb = [r for r in res_a if r["server"] == labels[1]]
        ratios = [x["overhead_per_key"] / y["overhead_per_key"] for x, y in zip(ra, rb)]
        ratios2 = [x["overhead_per_key_minus_empty"] / y["overhead_per_key_minus_empty"] for x, y in zip(ra, rb)]
        print(f"\nper-key overhead ratio {labels[0]}/{labels[1]} (paired by repeat): "
              f"{mmm(ratios, '{:.2f}x')} (empty RSS not subtracted), {mmm(ratios2, '{:.2f}x')} (subtracted); goal <= 0.70x")
    if res_b:
        mm = a.bound_maxmemory
        print(f"\n(b) maxmemory {mm / MiB:.0f} MiB, allkeys-lru, SET values uniform 50..5000 B (seed {a.seed}+repeat) "
              f"on keys uniform over {a.keyspace:,}, until {a.bound_factor}x maxmemory of values were written; "
              f"RSS bound = 1.15 x maxmemory + 64 MiB = {(1.15 * mm + 64 * MiB) / MiB:.1f} MiB\n")
        print("| server | repeat | SETs | written MiB | s | errors | max used_memory / maxmemory | "
              "final used_memory MiB | final RSS MiB | peak RSS (VmHWM) MiB | final RSS within bound | DBSIZE |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in res_b:
            flag = "yes" if r["rss_ok"] else "**no**"
            if r["timed_out"]:
                flag += " (timed out)"
            print(f"| {r['server']} | {r['repeat'] + 1} | {r['sets']:,} | {r['written'] / MiB:,.0f} | {r['seconds']:.1f} | "
                  f"{r['errors']} | {r['max_used_memory'] / mm:.4f} | {r['final_used_memory'] / MiB:.1f} | "
                  f"{r['final_rss'] / MiB:.1f} | {r['peak_rss'] / MiB:.1f} | {flag} | {r['dbsize']:,} |")
    if res_m:
        mm = a.bound_maxmemory
        print(f"\n(m) maxmemory {mm / MiB:.0f} MiB, allkeys-lru, replacing writes of hashes / lists / sorted sets of "
              f"1..1000 elements and strings of 50 B..4 MB (seed {a.seed}+repeat), until {a.bound_factor}x maxmemory "
              f"was written; RSS bound = {(1.15 * mm + 64 * MiB) / MiB:.1f} MiB\n")
        print("| server | repeat | writes | written MiB | s | errors | max used_memory / maxmemory | "
              "final RSS MiB | peak RSS MiB | final RSS within bound | DBSIZE |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in res_m:
            flag = "yes" if r["rss_ok"] else "**no**"
            if r["timed_out"]:
                flag += " (timed out)"
            print(f"| {r['server']} | {r['repeat'] + 1} | {r['sets']:,} | {r['written'] / MiB:,.0f} | {r['seconds']:.1f} | "
                  f"{r['errors']} | {r['max_used_memory'] / mm:.4f} | {r['final_rss'] / MiB:.1f} | "
                  f"{r['peak_rss'] / MiB:.1f} | {flag} | {r['dbsize']:,} |")
    if res_e:
        print(f"\n(e) bytes per element, {a.e_keys:,} keys x {a.e_per_key} elements of 11 bytes; RSS growth / elements "
              "(min / median / max over repeats)\n")
        print("| server | type | encoding | RSS B/element | used_memory B/element |")
        print("|---|---|---|---|---|")
        for ty in e_types:
            for lab in labels:
                rs = [r for r in res_e if r["server"] == lab]
                print(f"| {lab} | {ty} | {rs[0][ty]['encoding']} | {mmm([r[ty]['rss_per_elem'] for r in rs], '{:.1f}')} | "
                      f"{mmm([r[ty]['used_per_elem'] for r in rs], '{:.1f}')} |")
            ra = [r[ty]["rss_per_elem"] for r in res_e if r["server"] == labels[0]]
            rb = [r[ty]["rss_per_elem"] for r in res_e if r["server"] == labels[1]]
            print(f"| ratio {labels[0]}/{labels[1]} | {ty} | | {mmm([x / y for x, y in zip(ra, rb)], '{:.2f}x')} | |")
    out = a.json or os.path.join(os.path.dirname(os.path.abspath(__file__)), "out",
                                 f"memory-{stamp:%Y%m%dT%H%M%SZ}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"argv": sys.argv, "date": stamp.isoformat(), "rev": rev, "a": res_a, "b": res_b, "m": res_m, "e": res_e}, f, indent=1)
    print(f"\nraw results: {out}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"memory.py: {e}", file=sys.stderr)
        sys.exit(1)
