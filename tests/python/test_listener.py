"""The listener takes connection bursts as Redis does: `tcp-backlog` (default 511) queues them, so
2,000 back-to-back connects never overflow the accept queue (no SYN retries, which stall a client
for a second or more each).

The burst starts while the server is stopped (SIGSTOP): its first STOPPED_CONNECTS connects wait
in the accept queue, which only a backlog of at least that many holds. That part is
deterministic: a backlog of 128 (the old fixed value) fails it every time, whatever the machine's
load. The rest of the burst runs with the server going."""

import os
import resource
import signal
import socket
import time

import pytest

from harness import HOST, free_ports

pytestmark = pytest.mark.locus_only

CONNECTS = 2000
STOPPED_CONNECTS = 400


def listen_overflows() -> int:
    """The kernel's TcpExt ListenOverflows counter (accept queue full: the SYN was dropped)."""
    with open("/proc/net/netstat") as f:
        lines = f.read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split()[1:], values.split()[1:]))["ListenOverflows"])
    raise AssertionError("no TcpExt ListenOverflows in /proc/net/netstat")


@pytest.fixture
def many_fds():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = CONNECTS + 200
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"the hard file limit {hard} is below the {need} descriptors this test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def burst(srv) -> tuple[int, float]:
    """CONNECTS back-to-back connects (all kept open), the first STOPPED_CONNECTS of them while
    the server is stopped: (SYNs dropped on a full accept queue, slowest connect in seconds; a
    dropped SYN is retried after a second)."""
    before = listen_overflows()
    socks = []
    slowest = 0.0
    os.kill(srv.proc.pid, signal.SIGSTOP)
    try:
        for i in range(CONNECTS):
            if i == STOPPED_CONNECTS:
                os.kill(srv.proc.pid, signal.SIGCONT)
            t0 = time.monotonic()
            try:
                s = socket.create_connection((HOST, srv.port), timeout=0.5 if i < STOPPED_CONNECTS else 10)
            except TimeoutError:
                # A dropped SYN while the server is stopped: retried only after a second.
                os.kill(srv.proc.pid, signal.SIGCONT)
                return listen_overflows() - before, time.monotonic() - t0
            slowest = max(slowest, time.monotonic() - t0)
            socks.append(s)
        overflows = listen_overflows() - before
        # Every connection is served, the first and the last ones too.
        for s in socks[:: CONNECTS // 20] + socks[-5:]:
            s.sendall(b"PING\r\n")
            assert s.recv(64) == b"+PONG\r\n"
    finally:
        os.kill(srv.proc.pid, signal.SIGCONT)
        for s in socks:
            s.close()
    return overflows, slowest


def test_two_thousand_sequential_connects_never_overflow_the_backlog(many_fds, start_locus_toml):
    """Up to six bursts: one clean burst passes. With the server running, the client connects
    about 50,000 times a second (measured: 200 connects in 4 ms) while the accept loop shares the
    2 cores with it and with the new connections' tasks, so the queue now and then fills for a
    moment and drops one or two SYNs in a burst (seen in half the bursts, with this tree and with
    the one before it). The stopped start of every burst is not subject to that race, so a short
    backlog still fails all six."""
    (port,) = free_ports(1)
    srv = start_locus_toml(f"[server]\nport = {port}\nmaxclients = 10000\n", port)
    runs = []
    for _ in range(6):
        runs.append(burst(srv))
        if runs[-1][0] == 0:
            break
        time.sleep(1.5)  # let the closed connections drain
    assert runs[-1][0] == 0, f"SYNs dropped on a full accept queue in every burst: {runs}"
