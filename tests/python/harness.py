"""Process and wire helpers shared by the end-to-end suites.

* `ServerProcess` starts a real server binary (Locus or Debian's `redis-server`) on loopback ports,
  polls until it answers PING (no fixed sleeps) and stops it by PID (SIGTERM, then SIGKILL).
* `Raw` is a minimal RESP2/RESP3 client over a plain socket: it sends exact bytes and parses the
  exact reply, so tests can assert Redis's error wording and framing behaviour byte for byte.
* `wait_until` is the one bounded polling loop every suite uses instead of sleeping.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0


def _port_window() -> range:
    """Ports the kernel never hands out on its own: below (or above) the ephemeral range that
    outgoing connections and `bind(0)` draw from. A port freed by `bind(0)` could be taken by
    any client's connect before the server binds it; one outside that range can only be taken
    by a process binding it by number."""
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        lo, hi = 32768, 60999
    return range(10000, lo) if lo - 10000 >= 2000 else range(hi + 1, 65536)


_WINDOW = _port_window()
# Each process starts at its own offset, so two suites run side by side rarely meet.
_next_port = [os.getpid() * 7919 % len(_WINDOW)]


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_ports(n: int) -> list[int]:
    """`n` distinct ports, free on 127.0.0.1 now and outside the kernel's ephemeral range (see
    `_port_window`), handed out in turn so a process never gets one twice before wrapping."""
    out: list[int] = []
    for _ in range(len(_WINDOW)):
        if len(out) == n:
            break
        port = _WINDOW[_next_port[0] % len(_WINDOW)]
        _next_port[0] += 1
        if _port_is_free(port):
            out.append(port)
    if len(out) < n:
        raise RuntimeError(f"no {n} free ports in {_WINDOW}")
    return out


def free_port() -> int:
    """One port as `free_ports` gives them."""
    return free_ports(1)[0]


def rss(pid: int) -> int:
    """A process's resident set size in bytes (VmRSS of /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def wait_until(pred, timeout: float = 5.0, interval: float = 0.01, what: str = "condition"):
    """Poll `pred()` until it returns a truthy value (returned) or `timeout` seconds pass (AssertionError)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last value: {last!r})")
        time.sleep(interval)
        interval = min(interval * 1.5, 0.1)


# --------------------------------------------------------------------------------------------
# Raw RESP client
# --------------------------------------------------------------------------------------------


class RespError(str):
    """An error reply (`-ERR ...` / `!...`), kept as its full text including the code."""

    def __repr__(self) -> str:
        return f"RespError({str.__repr__(self)})"


class Simple(str):
    """A simple-string reply (`+OK`), distinct from a bulk string."""


class Closed(Exception):
    """The server closed the connection."""


def encode(*args) -> bytes:
    """Encode a command as a RESP multibulk request."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Raw:
    """A plain-socket RESP client that returns replies as Python values without interpretation."""

    def __init__(self, port: int, timeout: float = 5.0):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data: bytes):
        self.sock.sendall(data)

    def call(self, *args):
        self.send(encode(*args))
        return self.read()

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise Closed()
        self.buf += chunk

    def _line(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2 :]
                return line
            self._fill()

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def read(self):
        """Read one complete reply."""
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Simple(rest.decode(errors="replace"))
        if t == b"-" or t == b"!":
            if t == b"!":
                return RespError(self._exact(int(rest)).decode(errors="replace"))
            return RespError(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$" or t == b"=":
            n = int(rest)
            if n < 0:
                return None
            return self._exact(n)
        if t == b"*" or t == b"~" or t == b">":
            n = int(rest)
            if n < 0:
                return None
            return [self.read() for _ in range(n)]
        if t == b"%" or t == b"|":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self.read()
                d[k if not isinstance(k, list) else tuple(k)] = self.read()
            if t == b"|":
                return self.read()  # attribute: skip it, return the real reply that follows
            return d
        if t == b"_":
            return None
        if t == b"#":
            return rest == b"t"
        if t == b",":
            return float(rest)
        if t == b"(":
            return int(rest)
        raise AssertionError(f"unparseable reply line {line!r}")

    def read_line(self) -> bytes:
        """Read one raw line (without CRLF)."""
        return self._line()

    def expect_closed(self, timeout: float = 3.0):
        """Assert the server closes the connection (after any pending bytes) within `timeout`."""
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                return
            except socket.timeout:
                break
            if not chunk:
                return
            self.buf += chunk
        raise AssertionError(f"connection still open after {timeout}s; unread bytes {self.buf[:200]!r}")

    def nothing_within(self, seconds: float) -> bool:
        """True if no byte arrives within `seconds` (a bounded negative check)."""
        if self.buf:
            return False
        self.sock.settimeout(seconds)
        try:
            chunk = self.sock.recv(1)
        except socket.timeout:
            return True
        finally:
            self.sock.settimeout(5.0)
        if chunk:
            self.buf += chunk
        return False


def ping_ok(port: int, timeout: float = 1.0) -> bool:
    """True once something on `port` answers a RESP PING (PONG, or NOAUTH when auth is required)."""
    try:
        with Raw(port, timeout=timeout) as c:
            c.send(b"*1\r\n$4\r\nPING\r\n")
            line = c.read_line()
            return line == b"+PONG" or line.startswith(b"-NOAUTH")
    except (OSError, Closed):
        return False


# --------------------------------------------------------------------------------------------
# Server processes
# --------------------------------------------------------------------------------------------


@dataclass
class ServerProcess:
    """A server binary running on loopback, started and stopped by this test run."""

    kind: str  # "locus" | "redis"
    argv: list[str]
    port: int  # the main RESP port
    workdir: Path
    extra_ports: dict[str, int] = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    log_path: Path | None = None
    # Readiness check on `port` (default: a RESP PING); memcached is probed with `version`.
    probe: object = None

    def start(self) -> "ServerProcess":
        self.log_path = self.workdir / f"{self.kind}-{self.port}.log"
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir
        )
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        interval = 0.01
        while not (self.probe or ping_ok)(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.kind} exited with {self.proc.returncode} before answering PING\n"
                    f"argv: {self.argv}\n--- log ---\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"{self.kind} did not answer PING on port {self.port} within {READY_TIMEOUT_S}s\n"
                    f"argv: {self.argv}\n--- log ---\n{self.log_tail()}"
                )
            time.sleep(interval)
            interval = min(interval * 1.5, 0.2)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size if self.log_path else 0
        except OSError:
            return 0

    def log_tail(self, since: int = 0, limit: int = 8000) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        data = self.log_path.read_bytes()[since:]
        if len(data) > limit:
            data = b"...\n" + data[-limit:]
        return data.decode(errors="replace")


def locus_bin() -> str:
    """The Locus binary under test: $LOCUS_BIN, else target/release/locus of this checkout."""
    b = os.environ.get("LOCUS_BIN")
    if b:
        return b
    root = Path(__file__).resolve().parents[2]
    return str(root / "target" / "release" / "locus")


def redis_bin() -> str:
    b = shutil.which("redis-server")
    if not b:
        raise RuntimeError("redis-server not installed (run scripts/install-deps.sh)")
    return b


def new_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="locus-e2e-"))


def start_redis(redis_args: list[str] | None = None) -> ServerProcess:
    """Debian's redis-server on a free port, no persistence, logging to the captured stdout."""
    port = free_port()
    wd = new_workdir()
    argv = [
        redis_bin(),
        "--port", str(port),
        "--bind", HOST,
        "--save", "",
        "--appendonly", "no",
        "--daemonize", "no",
        "--protected-mode", "no",
        "--dir", str(wd),
        "--logfile", "",
    ] + list(redis_args or [])
    return ServerProcess("redis", argv, port, wd).start()


def _memcached_version_reply(port: int, timeout: float) -> bytes:
    """What something on `port` first answers to memcached's `version` (b"" if nothing)."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.sendall(b"version\r\n")
            return s.recv(64)
    except OSError:
        return b""


def memcached_ok(port: int, timeout: float = 1.0) -> bool:
    """True once something on `port` answers memcached's `version`."""
    return _memcached_version_reply(port, timeout).startswith(b"VERSION ")


def memcached_answers(port: int, timeout: float = 1.0) -> bool:
    """True once something on `port` answers a memcached line at all (an authenticating server
    refuses `version` with `CLIENT_ERROR unauthenticated`)."""
    return _memcached_version_reply(port, timeout).endswith(b"\r\n")


def start_memcached(extra_args: list[str] | None = None, probe=memcached_ok) -> ServerProcess:
    """Debian's memcached on a free port (TCP only), for the memcached protocol suite's peer run."""
    b = shutil.which("memcached")
    if not b:
        raise RuntimeError("memcached not installed (run scripts/install-deps.sh)")
    port = free_port()
    argv = [b, "-p", str(port), "-U", "0", "-l", HOST] + list(extra_args or [])
    if os.geteuid() == 0:
        argv += ["-u", "root"]
    return ServerProcess("memcached", argv, port, new_workdir(), probe=probe).start()


def start_locus(config_toml: str, port: int, extra_ports: dict[str, int] | None = None,
                extra_args: list[str] | None = None) -> ServerProcess:
    """The Locus binary with `config_toml` written to a temporary file (`locus serve --config FILE`)."""
    wd = new_workdir()
    cfg = wd / "locus.toml"
    cfg.write_text(config_toml)
    argv = [locus_bin(), "serve", "--config", str(cfg)] + list(extra_args or [])
    return ServerProcess("locus", argv, port, wd, dict(extra_ports or {})).start()
