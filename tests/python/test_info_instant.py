"""INFO's instantaneous_ops_per_sec, instantaneous_input_kbps and instantaneous_output_kbps, as
Redis 7.0 computes them (16 samples, 100 ms apart). The first test holds against redis-server 7.0
too (--peer redis); the locus_only test: a tenant's INFO shows its own rates, not another
tenant's, and the admin's shows the server's."""

import time

import pytest
import redis

from conftest import no_retry
from harness import HOST, free_ports


def two_port_tenants(main: int, pa: int, pb: int) -> str:
    """Port tenancy: tenants a (port `pa`) and b (port `pb`), the admin root/root-pw."""
    return f"""
[server]
bind = "127.0.0.1"
port = {main}

[tenancy]
mode = "port"

[admin]
user = "root"
password = "root-pw"

[[tenant]]
name = "a"
port = {pa}

[[tenant]]
name = "b"
port = {pb}
"""


def load(port: int, seconds: float, **kw) -> int:
    """PINGs in pipelines of 200 for `seconds`; how many were sent."""
    c = redis.Redis(host=HOST, port=port, socket_timeout=10, retry=no_retry(), **kw)
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with c.pipeline(transaction=False) as p:
            for _ in range(200):
                p.ping()
            p.execute()
        sent += 200
    c.close()
    return sent


def inst(c) -> tuple[int, float, float]:
    s = c.info("stats")
    return (int(s["instantaneous_ops_per_sec"]), float(s["instantaneous_input_kbps"]),
            float(s["instantaneous_output_kbps"]))


def test_instantaneous_metrics_follow_the_load(server, client_for):
    c = client_for(server)
    sent = load(server.port, 2.0)
    ops, kin, kout = inst(c)
    # The last 1.6 s of a 2 s load at `sent / 2` per second (give or take the sampling edges).
    assert ops > 0.3 * sent / 2, (ops, sent)
    assert kin > 0 and kout > 0
    # 14 bytes a PING in, 7 out: the rates are in proportion.
    assert 1.2 < kin / kout < 3.0
    time.sleep(2.0)  # 16 samples of (almost) nothing
    ops, kin, kout = inst(c)
    assert ops < 20 and kin < 1.0 and kout < 5.0


@pytest.mark.locus_only
def test_instantaneous_metrics_per_tenant(start_locus_toml):
    main, pa, pb = free_ports(3)
    start_locus_toml(two_port_tenants(main, pa, pb), pa)
    a = redis.Redis(host=HOST, port=pa, socket_timeout=10, retry=no_retry())
    b = redis.Redis(host=HOST, port=pb, socket_timeout=10, retry=no_retry())
    # The admin authenticates on a tenant's listener (port tenancy has no other).
    root = redis.Redis(host=HOST, port=pb, username="root", password="root-pw", socket_timeout=10,
                       retry=no_retry())
    sent = load(pa, 2.0)
    ops_a, kin_a, _ = inst(a)
    ops_b, kin_b, _ = inst(b)
    ops_root, _, _ = inst(root)
    assert ops_a > 0.3 * sent / 2, (ops_a, sent)
    # b sees its own traffic only (its INFO commands): not a's load.
    assert ops_b < 20 and kin_b < 1.0, (ops_b, kin_b)
    # The admin sees the server's.
    assert ops_root >= 0.8 * ops_a
