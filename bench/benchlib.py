"""Shared pieces of the Python benchmarks (bench/memory.py, bench/fidelity.py).

* `Server` starts `redis-server` or `locus serve` on a free loopback port with a given maxmemory,
  policy and sample count, waits until it answers PING (bounded), reads its RSS from /proc, and
  stops it by the PID it started (SIGTERM, then SIGKILL). It never signals anything else.
* `Conn` is a small RESP2 client over one socket: `call` for one command, `pipeline` for a batch
  (all commands written, then exactly as many replies read, in order). Replies: bytes for bulk and
  simple strings, int, None for nil, `RespError` for error replies, list for arrays.
* `mmm` formats min / median / max; `cpu_seconds` reads a process's utime + stime.

Only the standard library is used, so the benchmarks run wherever python3 does.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_TRACES = os.path.join(os.path.dirname(REPO_ROOT), "shared", "traces")
HOST = "127.0.0.1"
READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")
LOCUS_BIN = os.environ.get(
    "LOCUS_BIN", os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO_ROOT, "target")), "release", "locus"
    )
)
# Extra arguments for `locus serve`, e.g. LOCUS_ARGS="--config bench/locus-fine.toml".
LOCUS_ARGS = shlex.split(os.environ.get("LOCUS_ARGS", ""))


class RespError(str):
    """An error reply, with its full text (e.g. "OOM command not allowed ...")."""


class BenchError(Exception):
    """A benchmark could not run (server did not start, protocol error, bad option)."""


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process so far, in seconds (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()  # rest[0] is field 3 (the state)
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def mmm(xs, fmt="{:.4f}") -> str:
    """'min / median / max' of xs formatted with fmt ('—' when empty)."""
    xs = sorted(xs)
    if not xs:
        return "—"
    return " / ".join(fmt.format(v) for v in (xs[0], statistics.median(xs), xs[-1]))


def encode(*args) -> bytes:
    """One RESP2 command as an array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    """One RESP2 connection with a read buffer."""

    def __init__(self, port: int, timeout: float = 60.0):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    def close(self):
        self.sock.close()

    def _fill(self):
        if self.pos > 65536:
            del self.buf[: self.pos]
            self.pos = 0
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise BenchError("server closed the connection")
        self.buf += chunk

    def _line(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos : i])
                self.pos = i + 2
                return line
            self._fill()

    def read_reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest
        if t == b"-":
            return RespError(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) - self.pos < n + 2:
                self._fill()
            data = bytes(self.buf[self.pos : self.pos + n])
            self.pos += n + 2
            return data
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read_reply() for _ in range(n)]
        raise BenchError(f"unexpected reply line {line[:80]!r}")

    def call(self, *args):
        self.sock.sendall(encode(*args))
        return self.read_reply()

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def pipeline(self, payload: bytes, count: int) -> list:
        """Sends pre-encoded commands and reads `count` replies."""
        self.sock.sendall(payload)
        return [self.read_reply() for _ in range(count)]

    def info(self, section: str = "memory") -> dict[str, str]:
        raw = self.call("INFO", section)
        if isinstance(raw, RespError):
            raise BenchError(f"INFO {section}: {raw}")
        out = {}
        for line in raw.decode().splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v
        return out


class Server:
    """A redis-server or locus process started and owned by this benchmark."""

    def __init__(self, kind: str, maxmemory: int, policy: str = "allkeys-lru", samples: int = 5,
                 extra: list[str] | None = None, label: str | None = None):
        if kind not in ("redis", "locus"):
            raise BenchError(f"unknown server kind {kind!r} (redis|locus)")
        self.kind = kind
        self.label = label or kind
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"locus-bench-{kind}-")
        self.log = Path(self.dir) / "server.log"
        if kind == "redis":
            argv = [REDIS_SERVER, "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no",
                    "--daemonize", "no", "--protected-mode", "no", "--maxmemory", str(maxmemory),
                    "--maxmemory-policy", policy, "--maxmemory-samples", str(samples), "--dir", self.dir,
                    "--logfile", str(self.log)]
        else:
            if not os.access(LOCUS_BIN, os.X_OK):
                raise BenchError(f"no Locus binary at {LOCUS_BIN} (build it: cargo build --release --bin locus)")
            argv = [LOCUS_BIN, "serve", *LOCUS_ARGS, "--bind", HOST, "--port", str(self.port),
                    "--maxmemory", str(maxmemory), "--maxmemory-policy", policy,
                    "--maxmemory-samples", str(samples)]
        argv += extra or []
        self.argv = argv
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen(argv, stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"{kind} exited with {self.proc.returncode} at startup: {self.log_tail()}")
            try:
                c = Conn(self.port, timeout=1.0)
                try:
                    if c.call("PING") == b"PONG":
                        break
                finally:
                    c.close()
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise BenchError(f"{kind} did not answer PING within {READY_TIMEOUT_S}s")
            time.sleep(0.05)

    def log_tail(self) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return "(no log)"

    def conn(self) -> Conn:
        return Conn(self.port)

    def status(self, field: str) -> int:
        """A /proc/PID/status field in KiB (VmRSS, VmHWM)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise BenchError(f"no {field} in /proc/{self.pid}/status")

    def rss_bytes(self) -> int:
        return self.status("VmRSS") * 1024

    def hwm_bytes(self) -> int:
        return self.status("VmHWM") * 1024

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
