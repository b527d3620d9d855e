#!/usr/bin/env python3
"""Runs memcached's own test suite (tag 1.6.18, from ../shared/memcached-tests) against Locus's
memcached port in external mode (T_MEMD_USE_DAEMON), one fresh server per test file, and fails
on any `not ok` (or a file that dies, times out or runs fewer tests than it plans) outside the
reasoned skip list in skip.txt.

    python3 tests/memcached-suite/run.py [--bin target/release/locus] [--peer memcached]
                                         [--file getset.t ...] [--timeout 300]

For each t/*.t: the flags of the file's first `new_memcached(...)` are mapped to Locus settings
(`-m` maxmemory, `-I` max_item_size, `-M` no eviction, `-f`/`-n` the class ladder,
`-o idle_timeout` server.timeout; the others are memcached tuning knobs with no Locus
equivalent, listed in FLAG_NOTES), one `locus serve`
starts on free loopback ports with those settings, and `prove -v t/<file>` runs with
T_MEMD_USE_DAEMON=127.0.0.1:<port> and a time bound. The suite's supports_*() probes run
`./memcached-debug -h` in the suite's directory: a stand-in prints the options the server under
test has (for Locus: none of TLS, SASL, extstore, the proxy or unix sockets).

`--peer memcached` runs the same files against Debian's memcached started with the file's own
flags (the stand-in is then the real `memcached`): the baseline the skip list is judged by.

skip.txt, one a line: `<file>.t | <reason>` skips a whole file; `<file>.t <n> | <reason>` excuses
test number n of that file; `<file>.t plan | <reason>` excuses a file that stops short of its
plan (it kills or restarts its own server, which external mode cannot do). Each reason says why a Locus user would not miss it.

Without ../shared/memcached-tests (a fresh clone) it says so loudly, records the skip in
$LOCUS_SKIP_LOG and exits 0, or fails when LOCUS_REQUIRE_SHARED=1.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# ../shared beside the checkout; LOCUS_SHARED_DIR names it elsewhere (a git worktree).
SUITE = Path(os.environ.get("LOCUS_SHARED_DIR", ROOT.parent / "shared")) / "memcached-tests"

TAP = re.compile(r"^(not ok|ok) (\d+)\b(.*)$")
PLAN = re.compile(r"^1\.\.(\d+)(.*)$")
NEW_MEMCACHED = re.compile(r"""new_memcached\(\s*(?:(["'])(.*?)\1)?""")

# memcached flags with no Locus equivalent, and why ignoring them does not change what a file
# checks (a file whose checks depend on one is in skip.txt instead).
FLAG_NOTES = {
    "-o": "memcached's tuning options other than idle_timeout (slab_chunk_max, lru_maintainer, "
          "slab_automove_window, ...): Locus's classes, eviction and page mover are its own",
    "-R": "requests per event before yielding: Locus's worker loop has its own fairness",
    "-t": "worker threads: Locus runs its configured threads",
    "-U": "UDP port: Locus serves no UDP",
    "-l": "listen address: Locus listens on loopback here",
    "-B": "protocol choice: Locus speaks the text and meta protocols only",
}

# What the memcached-debug stand-in prints for Locus: memcached's options Locus has equivalents
# for, and none of the words the suite's supports_*() probes look for (sasl, ext_path,
# proxy_config, enable-ssl, unix-socket, no_drop_privileges).
LOCUS_HELP = """\
locus (memcached protocol 1.6.18, text and meta) -- stand-in for memcached-debug -h
-p, --port=<num>          TCP port to listen on ([memcached] port)
-m, --memory-limit=<num>  item memory in megabytes (memory.maxmemory)
-M, --disable-evictions   return error on memory exhausted instead of evicting
-I, --max-item-size=<num> adjusts max item size ([memcached] max_item_size)
-f, --slab-growth-factor  chunk size growth factor ([memcached] growth_factor)
-n, --slab-min-size       min space used for key+value+flags ([memcached] chunk_size)
"""


# The words the suite's supports_*() probes look for in `memcached-debug -h`.
PROBED = ["sasl", "ext_path", "proxy_config", "enable-ssl", "unix-socket", "no_drop_privileges"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_skips() -> tuple[dict[str, str], dict[tuple[str, int], str]]:
    files, tests = {}, {}
    for n, line in enumerate((HERE / "skip.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        what, sep, reason = line.partition(" | ")
        if not sep or not reason.strip():
            sys.exit(f"skip.txt:{n}: '<file>.t [n] | <reason>' expected, got {line!r}")
        parts = what.split()
        if len(parts) == 1:
            files[parts[0]] = reason.strip()
        elif len(parts) == 2 and (parts[1].isdigit() or parts[1] == "plan"):
            n = int(parts[1]) if parts[1].isdigit() else "plan"
            tests[(parts[0], n)] = reason.strip()
        else:
            sys.exit(f"skip.txt:{n}: '<file>.t [n] | <reason>' expected, got {line!r}")
    return files, tests


def first_flags(test: Path) -> str:
    """The arguments of the file's first new_memcached(...) call ('' when none or computed)."""
    m = NEW_MEMCACHED.search(test.read_text(errors="replace"))
    return (m.group(2) or "") if m else ""


def locus_config(flags: str, mc_port: int, resp_port: int) -> str:
    """The TOML for `locus serve` equivalent to memcached started with `flags`."""
    args = shlex.split(flags.replace("$", ""))
    server = [f"port = {resp_port}", 'bind = "127.0.0.1"']
    memory = ['maxmemory = "64MiB"']  # memcached's default -m
    mc = [f"port = {mc_port}"]
    eviction = []
    i = 0
    while i < len(args):
        a = args[i]
        val = args[i + 1] if i + 1 < len(args) else ""
        if a == "-m":
            memory = [f'maxmemory = "{int(val)}MiB"']
            i += 1
        elif a == "-I":
            mc.append(f'max_item_size = "{val}"')
            i += 1
        elif a == "-f":
            mc.append(f"growth_factor = {float(val)}")
            i += 1
        elif a == "-n":
            mc.append(f"chunk_size = {int(val)}")
            i += 1
        elif a == "-M":
            eviction = ['policy = "noeviction"']
        elif a == "-o":
            for opt in val.split(","):
                name, _, v = opt.partition("=")
                if name == "idle_timeout":
                    server.append(f'timeout = "{int(v)}s"')
            i += 1
        elif a in ("-R", "-t", "-U", "-l", "-B", "-e", "-P", "-s", "-Y"):
            i += 1
        i += 1
    text = "[server]\n" + "\n".join(server) + "\n\n[memory]\n" + "\n".join(memory) + "\n\n"
    if eviction:
        text += "[eviction]\n" + "\n".join(eviction) + "\n\n"
    text += "[memcached]\n" + "\n".join(mc) + "\n"
    return text


def wait_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}; log in {log}")
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on {port} within 15 s; log in {log}")


def start_server(args, flags: str, workdir: Path, name: str) -> tuple[subprocess.Popen, int, Path]:
    mc_port = free_port()
    log = workdir / f"{name}.server.log"
    if args.peer == "memcached":
        # The file's own flags, as memcached's harness would start it (without its UDP port and
        # unix socket, which external mode does not use).
        cmd = ["memcached", "-p", str(mc_port), "-l", "127.0.0.1", "-U", "0"]
        cmd += [a for a in shlex.split(flags.replace("$", "")) if a]
        cmd = strip_unusable(cmd)
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # memcached refuses to run as root otherwise
    else:
        conf = workdir / f"{name}.toml"
        conf.write_text(locus_config(flags, mc_port, free_port()))
        cmd = [args.bin, "serve", "--config", str(conf)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    wait_listening(proc, mc_port, log)
    return proc, mc_port, log


def strip_unusable(cmd: list[str]) -> list[str]:
    """Flags of the peer's command line that cannot apply in external mode: a file path of the
    test's own (-e, -P, -s, -Y, ext_path) or a second listener (-l fooble)."""
    out, skip_next = [], False
    for i, a in enumerate(cmd):
        if skip_next:
            skip_next = False
            continue
        if i > 6 and a in ("-e", "-P", "-s", "-Y", "-l", "-p", "-U", "-d"):
            skip_next = a != "-d"
            continue
        if i > 6 and a == "-o" and i + 1 < len(cmd) and ("ext_" in cmd[i + 1] or "proxy" in cmd[i + 1]):
            skip_next = True
            continue
        out.append(a)
    return out


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def parse_tap(text: str) -> dict:
    planned, skip_all, seen, failed = None, False, set(), []
    for line in text.splitlines():
        m = PLAN.match(line)
        if m and planned is None:
            planned = int(m.group(1))
            skip_all = planned == 0 and "skip" in m.group(2).lower()
            continue
        m = TAP.match(line)
        if m:
            n = int(m.group(2))
            seen.add(n)
            if m.group(1) == "not ok" and "# TODO" not in m.group(3):
                failed.append((n, m.group(3).strip(" -")[:100]))
    # prove -v prints a file's skip_all as "t/x.t .. skipped: <reason>".
    skip_all = skip_all or re.search(r"^t/\S+ \.+ skipped:", text, re.M) is not None
    return {"planned": planned, "skip_all": skip_all, "seen": seen, "failed": failed}


def run_file(args, suite: Path, workdir: Path, test: str, test_skips: dict) -> dict:
    flags = first_flags(suite / "t" / test)
    out_path = workdir / f"{test}.out"
    started = time.time()
    try:
        proc, port, log = start_server(args, flags, workdir, test)
    except RuntimeError as e:
        return {"file": test, "status": "FAIL", "why": [str(e)], "secs": 0.0, "out": out_path}
    timed_out = False
    try:
        env = dict(os.environ, T_MEMD_USE_DAEMON=f"127.0.0.1:{port}")
        with open(out_path, "wb") as out:
            p = subprocess.Popen(["prove", "-v", f"t/{test}"], cwd=suite, env=env, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            try:
                p.wait(args.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
    finally:
        alive = proc.poll() is None
        stop(proc)
    text = out_path.read_text(errors="replace")
    tap = parse_tap(text)
    why = []
    if timed_out:
        why.append(f"timed out after {args.timeout} s")
    if not alive:
        why.append(f"the server exited ({proc.returncode}) during the file; log in {log}")
    excused = []
    for n, desc in tap["failed"]:
        if (test, n) in test_skips:
            excused.append(n)
        else:
            why.append(f"not ok {n} - {desc}")
    # `<file>.t plan` in skip.txt excuses a file that stops short of its plan for a reason of
    # external mode (it kills or restarts its own server); the tests it ran still count.
    short_ok = (test, "plan") in test_skips and tap["seen"]
    if tap["planned"] is None and not tap["skip_all"] and not short_ok:
        why.append("no plan printed (the file died before its first test)")
    elif (not tap["skip_all"] and tap["planned"] is not None and not short_ok
          and len(tap["seen"]) != tap["planned"]):
        why.append(f"ran {len(tap['seen'])} of {tap['planned']} planned tests (died: see {out_path})")
    if tap["skip_all"]:
        status = "skip_all"
    else:
        status = "FAIL" if why else "ok"
    ok = len(tap["seen"]) - len(tap["failed"])
    return {"file": test, "status": status, "why": why, "ok": ok, "notok": len(tap["failed"]),
            "excused": excused, "planned": tap["planned"], "secs": time.time() - started,
            "out": out_path}


def stand_in(suite: Path, peer: str) -> None:
    exe = suite / "memcached-debug"
    if peer == "memcached":
        # memcached's own help, less the features this run does not start it with (extstore,
        # TLS, SASL, the proxy, a unix socket, privilege dropping): both peers face the same
        # probes, and a file that needs one of them skips itself on both.
        exe.write_text("#!/bin/sh\nmemcached -u root -h | grep -v -i -E '"
                       + "|".join(PROBED) + "'\n")
    else:
        exe.write_text("#!/bin/sh\ncat <<'EOF'\n" + LOCUS_HELP + "EOF\n")
    exe.chmod(0o755)
    # The harness's timedrun wrapper is only used when it starts a server itself (not here).


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("LOCUS_BIN", str(ROOT / "target/release/locus")))
    ap.add_argument("--peer", choices=["locus", "memcached"], default="locus")
    ap.add_argument("--file", action="append", help="run only this t/ file (repeatable)")
    ap.add_argument("--timeout", type=float, default=180, help="seconds per file")
    ap.add_argument("--no-skips", action="store_true", help="run the skipped files too, for a tally")
    args = ap.parse_args()

    if not (SUITE / "t" / "lib" / "MemcachedTest.pm").exists():
        msg = f"memcached-tests: {SUITE} not found: memcached's own test suite was NOT run"
        print(f"\n*** SKIPPED: {msg}\n", flush=True)
        if os.environ.get("LOCUS_REQUIRE_SHARED") == "1":
            return 1
        if os.environ.get("LOCUS_SKIP_LOG"):
            with open(os.environ["LOCUS_SKIP_LOG"], "a") as f:
                f.write(f"memcached_test_suite: {SUITE}\n")
        return 0
    if shutil.which("prove") is None:
        print("memcached-tests: prove not found (Debian package perl; scripts/install-deps.sh installs it)")
        return 1
    if args.peer == "memcached" and shutil.which("memcached") is None:
        print("memcached-tests: memcached not found (Debian package memcached)")
        return 1

    file_skips, test_skips = read_skips()
    work = Path(tempfile.mkdtemp(prefix="locus-memcached-tests-"))
    suite = work / "memcached-tests"
    shutil.copytree(SUITE, suite)  # files write into the tree (authfile, sockets)
    stand_in(suite, args.peer)
    files = args.file or sorted(p.name for p in (suite / "t").glob("*.t"))
    results = []
    for test in files:
        if test in file_skips and not args.no_skips and not args.file:
            results.append({"file": test, "status": "skipped", "why": [file_skips[test]]})
            print(f"{test:28} skipped: {file_skips[test]}", flush=True)
            continue
        r = run_file(args, suite, work, test, test_skips)
        results.append(r)
        extra = f", {len(r.get('excused', []))} excused by skip.txt" if r.get("excused") else ""
        print(f"{test:28} {r['status']:8} ok {r.get('ok', 0):5}  not ok {r.get('notok', 0):4}{extra}"
              f"  ({r['secs']:.0f} s)", flush=True)
    tally = {s: sum(1 for r in results if r["status"] == s) for s in ("ok", "FAIL", "skip_all", "skipped")}
    print(f"\n{args.peer}: {tally['ok']} files pass, {tally['FAIL']} fail, {tally['skip_all']} skip "
          f"themselves (skip_all), {tally['skipped']} skipped by skip.txt; output in {work}")
    bad = [r for r in results if r["status"] == "FAIL"]
    for r in bad:
        print(f"\nFAILED {r['file']} (output: {r['out']}):")
        for w in r["why"][:15]:
            print(f"  {w}")
        if len(r["why"]) > 15:
            print(f"  ... and {len(r['why']) - 15} more")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
