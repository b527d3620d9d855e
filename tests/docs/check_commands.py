#!/usr/bin/env python3
"""Runs every shell command of the README and the book (docs/*.md) against the release binary,
and checks their links. The conventions are in docs/README.md ("Conventions"):

  ```sh                               runs; a page's blocks run in order in one bash session
  <!-- file: NAME -->  + ```toml      written to NAME in the scratch directory at that point
  <!-- check: help (reason) -->       not run: each `locus SUB` in it answers --help, and every
                                      --flag it uses appears in that help
  <!-- check: skip (reason) -->       not run at all
  any other block (text, toml, ...)   shown, not run

The ports a page's servers listen on (`--port N`, `port = N`, `--memcached-port N`,
`memcached_port = N`, `127.0.0.1:N`) are the book's, fixed so the reader can copy them; the run
replaces each one, everywhere in the page's script, with a free port (tests/python/harness.py's
`free_ports`), so that two runs at once, or a run beside the test suites, do not collide.

Each page runs in a fresh scratch directory holding links to the repository's top-level entries
(and ../shared beside it when the checkout has one), with the binary's directory first on PATH.
Whatever a page starts (servers run with `&`) is killed when it ends. It also checks the table of
metrics in docs/monitoring.md against the names crates/locus-server/src/metrics/prom.rs registers.

Usage: tests/docs/check_commands.py [--bin target/release/locus] [--page README.md ...] [--list]
Exit status 0 when every page passes, 1 otherwise (each failure printed with its page and line).
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from harness import free_ports  # noqa: E402  (the suites' port picker)

FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)(.*)$")
MARKER = re.compile(r"^<!--\s*(check|file):\s*(.*?)\s*-->\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Where a page names a port its server listens on.
PORT_DEF = re.compile(r"(?:--port\s+|--memcached-port\s+|\bport\s*=\s*|memcached_port\s*=\s*|127\.0\.0\.1:)(\d{4,5})\b")
NUMBER = re.compile(r"(?<![\w.])(\d{4,5})(?!\w)")
PAGE_TIMEOUT_S = 120


class Block:
    def __init__(self, page, line, lang, text, marker):
        self.page, self.line, self.lang, self.text, self.marker = page, line, lang, text, marker

    def where(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


# Pages whose links are checked but whose commands are not run: the results files, whose
# commands are the measurements themselves (minutes to hours each).
LINK_ONLY = ["EXPERIMENTS.md", "BENCHMARKS.md"]


def parse(page):
    """The fenced blocks of a page, each with the marker comment right before it (if any), and
    the lines outside blocks (for the link check)."""
    blocks, prose = [], []
    lines = page.read_text(encoding="utf-8").split("\n")
    marker, i = None, 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            mm = MARKER.match(lines[i].strip())
            if mm:
                marker = (mm.group(1), mm.group(2))
            elif lines[i].strip():
                marker = None
                prose.append((i + 1, lines[i]))
            i += 1
            continue
        indent, ticks, lang = m.group(1), m.group(2), m.group(3)
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line)
            i += 1
        blocks.append(Block(page, start, lang, "\n".join(body) + "\n", marker))
        marker = None
        i += 1
    return blocks, prose


def logical_commands(text):
    """Lines joined over backslash continuations, without blank lines and comment-only lines."""
    out, cur = [], ""
    for line in text.split("\n"):
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.strip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


def check_help(block, env, failures):
    for cmd in logical_commands(block.text):
        try:
            words = shlex.split(cmd, comments=True)
        except ValueError as e:
            failures.append(f"{block.where()}: cannot split {cmd!r}: {e}")
            continue
        if "locus" not in words:
            continue
        words = words[words.index("locus"):]
        sub = ["locus"]
        for w in words[1:]:
            if w.startswith("-"):
                break
            sub.append(w)
        r = subprocess.run(sub + ["--help"], env=env, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            failures.append(f"{block.where()}: `{' '.join(sub)} --help` exited {r.returncode}: {r.stderr.strip()}")
            continue
        for w in words:
            if w.startswith("--"):
                flag = w.split("=", 1)[0]
                if not re.search(re.escape(flag) + r"\b", r.stdout):
                    failures.append(f"{block.where()}: {flag} is not in `{' '.join(sub)} --help`")


def page_script(blocks, failures):
    """The bash script of a page's runnable blocks and files, in order."""
    parts = ["set -e"]
    for b in blocks:
        kind, arg = b.marker or (None, None)
        if kind == "check":
            if not re.match(r"^(help|skip)\s+\(.+\)$", arg):
                failures.append(f"{b.where()}: a check marker is `help (reason)` or `skip (reason)`, not {arg!r}")
            continue
        if kind == "file":
            name = arg
            if not re.match(r"^[\w.-]+$", name):
                failures.append(f"{b.where()}: file name {name!r}: letters, digits, '.', '-', '_' only")
                continue
            parts.append(f"# --- {b.where()}: file {name}")
            parts.append(f"cat > {name} <<'LOCUS_DOC_EOF'\n{b.text}LOCUS_DOC_EOF")
            continue
        if b.lang == "sh":
            parts.append(f"# --- {b.where()}")
            parts.append(f"echo '### {b.where()}'")
            parts.append(b.text)
    return "\n".join(parts) + "\n"


def free_page_ports(script):
    """The script with each port its servers listen on replaced by a free one, everywhere it
    appears (redis-cli -p, URLs, port lists); and the replacements, book's port to run's."""
    ports = sorted(set(PORT_DEF.findall(script)), key=int)
    mapping = dict(zip(ports, (str(p) for p in free_ports(len(ports)))))
    return NUMBER.sub(lambda m: mapping.get(m.group(1), m.group(1)), script), mapping


def scratch_dir(base):
    work = Path(base) / "work"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name.startswith(".") or entry.name == "target":
            continue
        (work / entry.name).symlink_to(entry)
    shared = ROOT.parent / "shared"
    if shared.exists():
        (Path(base) / "shared").symlink_to(shared)
    return work


def run_page(page, blocks, env, failures):
    script = page_script(blocks, failures)
    if "echo '###" not in script:
        return 0.0
    script, ports = free_page_ports(script)
    with tempfile.TemporaryDirectory(prefix="locus-docs-") as base:
        work = scratch_dir(base)
        t0 = time.monotonic()
        log = Path(base) / "output.txt"
        with open(log, "w") as out_file:
            p = subprocess.Popen(["bash", "-c", script], cwd=work, env=env, stdout=out_file,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            try:
                status = p.wait(timeout=PAGE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                status = f"timeout after {PAGE_TIMEOUT_S} s"
            # whatever the page started in the background (servers) goes with it
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(p.pid, sig)
                    time.sleep(0.3)
                except ProcessLookupError:
                    break
            p.wait()
        out = log.read_text(errors="replace")
        elapsed = time.monotonic() - t0
        if status != 0:
            last = [l for l in out.split("\n") if l.startswith("### ")]
            at = last[-1][4:] if last else str(page.relative_to(ROOT))
            tail = "\n    ".join(out.rstrip().split("\n")[-25:])
            moved = ", ".join(f"{a} -> {b}" for a, b in ports.items())
            failures.append(f"{at}: the block failed ({status}; ports {moved or 'none'}); last output:\n    {tail}")
        return elapsed


def check_metrics(failures):
    """docs/monitoring.md's table of metrics against the names prom.rs registers, both ways."""
    code = set(re.findall(r'"(locus_[a-z_]+)"', (ROOT / "crates/locus-server/src/metrics/prom.rs").read_text()))
    page = ROOT / "docs/monitoring.md"
    doc = {}
    for name in re.findall(r"^\| `(locus_[a-z_]+)` \|", page.read_text(), re.M):
        base = re.sub(r"_(total|info)$", "", name)
        doc[re.sub(r"_(bytes|seconds)$", "", base)] = name
    for missing in sorted(code - set(doc)):
        failures.append(f"docs/monitoring.md: metric {missing} (registered in metrics/prom.rs) is not in the table")
    for extra in sorted(set(doc) - code):
        failures.append(f"docs/monitoring.md: metric {doc[extra]} is in the table but prom.rs registers no {extra}")


def slug(heading):
    """GitHub's anchor for a heading."""
    h = re.sub(r"`", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(page):
    seen, out = {}, set()
    blocks, prose = parse(page)
    for _, line in prose:
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def check_links(page, prose, failures):
    for n, line in prose:
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                failures.append(f"{page.relative_to(ROOT)}:{n}: link to {target}: no such file")
                continue
            if frag and dest.suffix == ".md" and frag not in anchors(dest):
                failures.append(f"{page.relative_to(ROOT)}:{n}: link to {target}: no heading #{frag} in {dest.relative_to(ROOT)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    ap.add_argument("--bin", default=str(Path(target) / "release" / "locus"))
    ap.add_argument("--page", action="append", help="only this page (repeatable), e.g. docs/tiers.md")
    ap.add_argument("--list", action="store_true", help="print each block and what is done with it")
    args = ap.parse_args()

    binary = Path(args.bin).resolve()
    if not binary.is_file():
        sys.exit(f"check_commands: no binary at {binary} (cargo build --release --bin locus)")
    bindir = Path(tempfile.mkdtemp(prefix="locus-docs-bin-"))
    (bindir / "locus").symlink_to(binary)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")

    selected = pages()
    if args.page:
        selected = [ROOT / p for p in args.page]
    failures, t_all = [], time.monotonic()
    for page in selected:
        blocks, prose = parse(page)
        if args.list:
            for b in blocks:
                what = b.marker[0] + " " + b.marker[1] if b.marker else ("run" if b.lang == "sh" else "shown")
                print(f"{b.where():28} {b.lang or '-':6} {what}")
            continue
        n_fail = len(failures)
        check_links(page, prose, failures)
        for b in blocks:
            if b.marker and b.marker[0] == "check" and b.marker[1].startswith("help"):
                check_help(b, env, failures)
        elapsed = run_page(page, blocks, env, failures)
        runnable = sum(1 for b in blocks if b.lang == "sh" and not b.marker)
        state = "ok" if len(failures) == n_fail else "FAILED"
        print(f"{state:6} {str(page.relative_to(ROOT)):24} {runnable:2} block(s) run, {elapsed:5.1f} s")
    if not args.page and not args.list:
        n_fail = len(failures)
        check_metrics(failures)
        print(f"{'ok' if len(failures) == n_fail else 'FAILED':6} {'metrics table':24} docs/monitoring.md against prom.rs")
        for name in LINK_ONLY:
            n_fail = len(failures)
            check_links(ROOT / name, parse(ROOT / name)[1], failures)
            print(f"{'ok' if len(failures) == n_fail else 'FAILED':6} {name:24} links only")
    shutil.rmtree(bindir, ignore_errors=True)
    if args.list:
        return 0
    for f in failures:
        print(f"check_commands: {f}", file=sys.stderr)
    print(f"{'FAILED' if failures else 'passed'}: {len(selected)} page(s) in {time.monotonic() - t_all:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
