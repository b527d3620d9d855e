"""twemproxy (Debian's `nutcracker`) in front of Locus: the scale-out path memcached and Redis users
already have. One Locus process serves two tenants, each with a memcached listener and a RESP
listener of its own; nutcracker shards one memcached pool over the two memcached listeners and one
Redis pool over the two RESP listeners. Keys set through the proxy come back through it, and each
backend's own `stats` / `DBSIZE` shows its share.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
import redis
from pymemcache.client.base import Client

import harness

pytestmark = [
    pytest.mark.locus_only,
    pytest.mark.skipif(shutil.which("nutcracker") is None,
                       reason="nutcracker not installed (scripts/install-deps.sh)"),
]

N = 200


def wait_listening(port: int, proc: subprocess.Popen, log) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nutcracker exited: {log.read_text()}")
        try:
            socket.create_connection((harness.HOST, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nutcracker did not listen")


@pytest.fixture
def proxied(start_locus_toml):
    resp, a_resp, b_resp, a_mc, b_mc, px_mc, px_rd, px_stats = harness.free_ports(8)
    toml = (
        f'[server]\nbind = "127.0.0.1"\nport = {resp}\n\n[tenancy]\nmode = "port"\n'
        f'default_tenant = "a"\n\n'
        f'[[tenant]]\nname = "a"\nport = {a_resp}\nmemcached_port = {a_mc}\n\n'
        f'[[tenant]]\nname = "b"\nport = {b_resp}\nmemcached_port = {b_mc}\n'
    )
    start_locus_toml(toml, resp)
    wd = harness.new_workdir()
    pool = "  hash: fnv1a_64\n  distribution: ketama\n  timeout: 2000\n  auto_eject_hosts: false\n"
    conf = wd / "nutcracker.yml"
    conf.write_text(
        f"mc:\n  listen: 127.0.0.1:{px_mc}\n{pool}  servers:\n"
        f"   - 127.0.0.1:{a_mc}:1 a\n   - 127.0.0.1:{b_mc}:1 b\n"
        f"rd:\n  listen: 127.0.0.1:{px_rd}\n  redis: true\n{pool}  servers:\n"
        f"   - 127.0.0.1:{a_resp}:1 a\n   - 127.0.0.1:{b_resp}:1 b\n"
    )
    log = wd / "nutcracker.log"
    proc = subprocess.Popen(["nutcracker", "-c", str(conf), "-s", str(px_stats), "-a", "127.0.0.1",
                             "-o", str(log)], stdin=subprocess.DEVNULL)
    try:
        wait_listening(px_mc, proc, log)
        wait_listening(px_rd, proc, log)
        yield {"proxy_mc": px_mc, "proxy_rd": px_rd, "mc": (a_mc, b_mc), "resp": (a_resp, b_resp)}
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_memcached_pool_spreads_over_both_listeners(proxied):
    px = Client((harness.HOST, proxied["proxy_mc"]), connect_timeout=5, timeout=5)
    for i in range(N):
        assert px.set(f"k{i}", f"v{i}".encode(), noreply=False)
    got = px.get_many([f"k{i}" for i in range(N)])
    assert got == {f"k{i}": f"v{i}".encode() for i in range(N)}
    shares = []
    for port in proxied["mc"]:
        c = Client((harness.HOST, port), connect_timeout=5, timeout=5)
        shares.append(int(c.stats()[b"curr_items"]))
        c.close()
    assert sum(shares) == N and min(shares) > N // 10, shares
    assert px.delete("k0", noreply=False) and px.get("k0") is None
    px.close()


def test_redis_pool_spreads_over_both_listeners(proxied):
    # No CLIENT SETINFO nor HELLO on connect: twemproxy does not forward connection commands.
    px = redis.Redis(host=harness.HOST, port=proxied["proxy_rd"], socket_timeout=5,
                     lib_name=None, lib_version=None, protocol=2)
    for i in range(N):
        assert px.set(f"k{i}", f"v{i}")
    assert px.mget([f"k{i}" for i in range(N)]) == [f"v{i}".encode() for i in range(N)]
    assert px.incr("counter", 5) == 5
    shares = []
    for port in proxied["resp"]:
        r = redis.Redis(host=harness.HOST, port=port, socket_timeout=5)
        shares.append(r.dbsize())
        r.close()
    assert sum(shares) == N + 1 and min(shares) > N // 10, shares
    px.close()
