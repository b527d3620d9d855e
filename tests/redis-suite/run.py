#!/usr/bin/env python3
"""Runs Redis's own test suite (tag 7.0.15, from ../shared/redis-tests) against Locus in external
mode, unit by unit, and fails on any [err] or [exception].

    python3 tests/redis-suite/run.py [--bin target/release/locus] [--unit unit/quit ...]

Tests excluded by tag are features Locus does not have (replication, persistence, DEBUG, ...).
Every other test that is skipped is listed in skip.txt with its reason, one a line:
`<test name> | <reason>`. A skip may only name a test that needs something Locus does not
implement yet (another data type, DEBUG); never a behaviour of a command Locus implements.

A unit with failures runs once more on the same server; if it then passes it is reported as
flaky (`*** FLAKY: ...`, and a line in $LOCUS_FLAKY_LOG, which scripts/test.sh prints at the end);
two failures fail the run.

Prints ok/err/skipped per unit (docs/redis.md's compatibility section quotes it, the README its total). Without
../shared/redis-tests (a fresh clone) it says so loudly, records the skip in $LOCUS_SKIP_LOG and
exits 0, or fails when LOCUS_REQUIRE_SHARED=1.
"""

import argparse
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SUITE = ROOT.parent / "shared" / "redis-tests"

# The units issue 12 names (and unit/bitfield); a unit that cannot run yet goes in UNITS_LATER
# with the reason (none today).
UNITS = [
    "unit/type/string", "unit/type/incr", "unit/type/hash", "unit/type/list", "unit/type/set",
    "unit/type/zset", "unit/type/stream", "unit/type/stream-cgroups", "unit/keyspace",
    "unit/expire", "unit/scan", "unit/bitops", "unit/bitfield", "unit/hyperloglog", "unit/pubsub", "unit/multi",
    "unit/protocol", "unit/info-command", "unit/quit", "unit/other",
    "unit/sort", "unit/geo", "unit/slowlog",
    "unit/functions",
    "unit/scripting",
    "unit/tracking",
    "unit/pause", "unit/introspection", "unit/latency-monitor",
    "unit/dump",
    "unit/lazyfree", "unit/querybuf", "unit/introspection-2",
]
UNITS_LATER: dict[str, str] = {
}
TAGS = "-needs:repl -needs:debug -needs:save -needs:pfdebug -needs:config-maxmemory -needs:reset"
LINE = re.compile(r"^\[(ok|err|exception|skip|ignore|TIMEOUT)\]:?\s*(.*)$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_skips() -> dict[str, str]:
    skips = {}
    for n, line in enumerate((HERE / "skip.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, reason = line.partition(" | ")
        if not sep or not reason.strip():
            sys.exit(f"skip.txt:{n}: '<test name> | <reason>' expected, got {line!r}")
        skips[name.strip()] = reason.strip()
    return skips


def start_locus(binary: str, port: int, workdir: Path) -> subprocess.Popen:
    log = open(workdir / "locus.log", "wb")
    proc = subprocess.Popen([binary, "serve", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"locus exited with {proc.returncode}; log in {workdir / 'locus.log'}")
            time.sleep(0.05)
    proc.kill()
    sys.exit("locus did not start listening within 10 s")


def resp_call(port: int, *args: str) -> bytes:
    """One command on a fresh connection; the raw reply (the first line is enough here)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args))
        return s.recv(65536)


# Settings a unit changes and leaves changed in external mode (unit/type/list raises
# proto-max-bulk-len to 10 GB for its large-memory tests, which then makes unit/protocol's
# "invalid bulk length" test wait for 2 GB): restored to their start values after every unit.
RESTORED = ["proto-max-bulk-len", "client-query-buffer-limit", "slowlog-log-slower-than", "slowlog-max-len"]


def config_values(port: int) -> dict[str, str]:
    values = {}
    for name in RESTORED:
        lines = resp_call(port, "CONFIG", "GET", name).split(b"\r\n")
        # *2 $len name $len value
        values[name] = lines[4].decode()
    return values


def restore(locus: subprocess.Popen, port: int, initial: dict[str, str]) -> None:
    """Puts back the RESTORED settings a unit may have changed (if the server still runs)."""
    if locus.poll() is None:
        for name, value in initial.items():
            resp_call(port, "CONFIG", "SET", name, value)


def run_unit(suite: Path, port: int, unit: str, skipfile: Path, workdir: Path, tag: str = "") -> dict:
    out_path = workdir / (unit.replace("/", "_") + tag + ".out")
    # The suite's own test server listens below --baseport: a random base keeps two runs on one
    # machine (CI and a developer's) from colliding.
    base = 20_000 + 64 * random.randrange(150)
    cmd = ["./runtest", "--host", "127.0.0.1", "--port", str(port), "--baseport", str(base),
           "--single", unit, "--singledb",
           "--ignore-encoding", "--ignore-digest", "--tags", TAGS, "--skipfile", str(skipfile),
           "--timeout", "120"]
    with open(out_path, "wb") as out:
        rc = subprocess.run(cmd, cwd=suite, stdout=out, stderr=subprocess.STDOUT, timeout=900).returncode
    counts = {"ok": 0, "err": 0, "exception": 0, "skip": 0, "ignore": 0, "TIMEOUT": 0}
    failures = []
    for raw in out_path.read_text(errors="replace").splitlines():
        m = LINE.match(ANSI.sub("", raw))
        if m:
            counts[m.group(1)] += 1
            if m.group(1) in ("err", "exception", "TIMEOUT"):
                failures.append(f"[{m.group(1)}] {m.group(2)}")
    if counts["TIMEOUT"]:
        # The test in progress when the suite gave up is on the next lines.
        text = ANSI.sub("", out_path.read_text(errors="replace"))
        failures += [ln.strip() for ln in text.splitlines() if "(IN PROGRESS)" in ln]
    return {"unit": unit, "rc": rc, "counts": counts, "failures": failures, "out": out_path}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("LOCUS_BIN", str(ROOT / "target/release/locus")))
    ap.add_argument("--unit", action="append", help="run only this unit (repeatable)")
    args = ap.parse_args()

    if not (SUITE / "runtest").exists():
        msg = f"redis-tests: {SUITE} not found: Redis's own test suite was NOT run"
        print(f"\n*** SKIPPED: {msg}\n", flush=True)
        if os.environ.get("LOCUS_REQUIRE_SHARED") == "1":
            return 1
        if os.environ.get("LOCUS_SKIP_LOG"):
            with open(os.environ["LOCUS_SKIP_LOG"], "a") as f:
                f.write(f"redis_test_suite: {SUITE}\n")
        return 0
    if shutil.which("tclsh") is None:
        print("redis-tests: tclsh not found (Debian package tcl; scripts/install-deps.sh installs it)")
        return 1

    skips = read_skips()
    work = Path(tempfile.mkdtemp(prefix="locus-redis-tests-"))
    suite = work / "redis-tests"
    shutil.copytree(SUITE, suite)  # the suite writes into its own tree
    skipfile = work / "skip-names.txt"
    skipfile.write_text("".join(f"{name}\n" for name in skips))
    port = free_port()
    locus = start_locus(args.bin, port, work)
    results = []
    try:
        initial = config_values(port)
        for unit in args.unit or UNITS:
            started = time.time()
            r = run_unit(suite, port, unit, skipfile, work)
            restore(locus, port, initial)
            if r["failures"] and locus.poll() is None:
                # One retry, said out loud: a unit that fails twice fails the run; one that
                # passes the second time is reported as flaky (here and in $LOCUS_FLAKY_LOG,
                # which the CI summary prints) with what failed the first time.
                first = r
                print(f"{unit}: failed, retrying once: " + "; ".join(first["failures"][:3]), flush=True)
                r = run_unit(suite, port, unit, skipfile, work, ".retry")
                restore(locus, port, initial)
                if not r["failures"]:
                    line = f"{unit} (Redis's suite): " + "; ".join(first["failures"][:3])
                    print(f"*** FLAKY: {line} (output: {first['out']}); passed on retry", flush=True)
                    if os.environ.get("LOCUS_FLAKY_LOG"):
                        with open(os.environ["LOCUS_FLAKY_LOG"], "a") as f:
                            f.write(line + "\n")
            r["secs"] = time.time() - started
            results.append(r)
            c = r["counts"]
            print(f"{unit:22} ok {c['ok']:3}  err {c['err'] + c['exception'] + c['TIMEOUT']:2}  skipped (skip.txt) "
                  f"{c['skip']:2}  excluded by tag {c['ignore']:2}  ({r['secs']:.0f} s)", flush=True)
            if locus.poll() is not None:
                print(f"locus exited ({locus.returncode}) during {unit}; log in {work / 'locus.log'}")
                break
    finally:
        if locus.poll() is None:
            locus.terminate()
            try:
                locus.wait(10)
            except subprocess.TimeoutExpired:
                # A script a failed test left running holds the server (SIGTERM waits for a
                # busy script, as Redis's does): stop it hard so the failures still print.
                print("locus did not stop within 10 s of SIGTERM (a busy script?); killed")
                locus.kill()
                locus.wait(10)
    for unit, why in UNITS_LATER.items():
        if not args.unit:
            print(f"{unit:22} not run: {why}")
    bad = [r for r in results if r["failures"] or r["counts"]["ok"] == 0]
    for r in bad:
        print(f"\nFAILED {r['unit']} (output: {r['out']}):")
        for f in r["failures"][:20] or ["no test ran (exit code %d)" % r["rc"]]:
            print(f"  {f}")
    if locus.returncode not in (0, -15, None):
        print(f"locus exit code {locus.returncode}")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
