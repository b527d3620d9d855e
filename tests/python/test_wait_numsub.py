"""WAIT on a server with no replicas, and PUBSUB NUMSUB's RESP3 shape, as Redis 7.0 standalone
answers them (every test not marked locus_only holds against redis-server 7.0 too: --peer redis;
the locus_only one: WAIT on a connection bound to no tenant)."""

import time

import pytest

from harness import Raw, encode, free_ports, wait_until
from test_sort import prefix_tenants_toml, raw_reply


def test_numsub_is_a_flat_array_in_resp3(server):
    with Raw(server.port) as sub, Raw(server.port) as c:
        assert sub.call("SUBSCRIBE", "a") == [b"subscribe", b"a", 1]
        want = b"*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:0\r\n"
        assert raw_reply(c, ("PUBSUB", "NUMSUB", "a", "b"), len(want)) == want
        assert c.call("HELLO", "3")[b"proto"] == 3
        assert raw_reply(c, ("PUBSUB", "NUMSUB", "a", "b"), len(want)) == want
        want = b"*0\r\n"
        assert raw_reply(c, ("PUBSUB", "NUMSUB"), len(want)) == want


def test_wait_without_replicas(server):
    with Raw(server.port) as c:
        assert c.call("WAIT", "0", "0") == 0
        assert c.call("WAIT", "-1", "0") == 0
        started = time.monotonic()
        assert c.call("WAIT", "1", "200") == 0  # no replica acknowledges: the whole timeout
        assert time.monotonic() - started >= 0.19
        assert c.call("WAIT", "x", "0") == "ERR value is not an integer or out of range"
        assert c.call("WAIT", "x", "y") == "ERR value is not an integer or out of range"
        assert c.call("WAIT", "0", "y") == "ERR timeout is not an integer or out of range"
        assert c.call("WAIT", "0", "-1") == "ERR timeout is negative"
        assert c.call("WAIT", "0") == "ERR wrong number of arguments for 'wait' command"
        # Inside MULTI it never blocks.
        assert c.call("MULTI") == "OK"
        assert c.call("WAIT", "1", "0") == "QUEUED"
        assert c.call("EXEC") == [0]


def test_wait_forever_ends_with_client_unblock(server):
    with Raw(server.port) as w, Raw(server.port) as c:
        wid = w.call("CLIENT", "ID")
        w.send(encode("WAIT", "1", "0"))
        wait_until(lambda: b"blocked_clients:1" in c.call("INFO", "clients"), what="WAIT blocked")
        assert w.nothing_within(0.2)
        assert c.call("CLIENT", "UNBLOCK", str(wid)) == 1
        assert w.read() == 0
        w.send(encode("WAIT", "2", "0"))
        wait_until(lambda: b"blocked_clients:1" in c.call("INFO", "clients"), what="WAIT blocked")
        assert c.call("CLIENT", "UNBLOCK", str(wid), "ERROR") == 1
        assert w.read() == "UNBLOCKED client unblocked via CLIENT UNBLOCK"
        assert w.call("PING") == "PONG"


@pytest.mark.locus_only
def test_wait_on_a_connection_of_no_tenant(start_locus_toml):
    """Prefix tenancy without a default tenant: the admin's connection is bound to no tenant, and
    WAIT still waits and answers 0."""
    (main,) = free_ports(1)
    start_locus_toml(prefix_tenants_toml(main), main)
    with Raw(main) as c:
        assert c.call("AUTH", "root", "root-pw") == "OK"
        assert c.call("WAIT", "0", "0") == 0
        started = time.monotonic()
        assert c.call("WAIT", "1", "100") == 0
        assert time.monotonic() - started >= 0.09
