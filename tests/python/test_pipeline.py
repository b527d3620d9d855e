"""Pipelines: many commands in one write, replies in order, errors in place without breaking the rest."""

import pytest
from redis.exceptions import ResponseError

from harness import Raw


def test_pipeline_hundreds_of_commands(r):
    n = 500
    with r.pipeline(transaction=False) as p:
        for i in range(n):
            p.set(f"k{i}", f"v{i}")
        for i in range(n):
            p.get(f"k{i}")
        p.dbsize()
        res = p.execute()
    assert res[:n] == [True] * n
    assert res[n : 2 * n] == [f"v{i}" for i in range(n)]
    assert res[-1] == n


def test_pipeline_preserves_order_of_dependent_commands(r):
    with r.pipeline(transaction=False) as p:
        for _ in range(300):
            p.incr("counter")
        res = p.execute()
    assert res == list(range(1, 301))
    assert r.get("counter") == "300"


def test_pipeline_mixed_errors(r):
    r.set("str", "abc")
    with r.pipeline(transaction=False) as p:
        p.set("a", "1")
        p.incr("str")  # error: not an integer
        p.incr("a")
        p.execute_command("SET", "b")  # error: arity
        p.execute_command("NOSUCHCOMMAND", "x")  # error: unknown command
        p.get("a")
        p.execute_command("EXPIRE", "a", "10", "NX", "XX")  # error: options
        p.ttl("a")
        res = p.execute(raise_on_error=False)
    assert res[0] is True
    assert isinstance(res[1], ResponseError) and "not an integer" in str(res[1])
    assert res[2] == 2
    assert isinstance(res[3], ResponseError) and "wrong number of arguments for 'set'" in str(res[3])
    assert isinstance(res[4], ResponseError) and "unknown command" in str(res[4])
    assert res[5] == "2"
    assert isinstance(res[6], ResponseError)
    assert res[7] == -1
    assert r.get("b") is None


def test_pipeline_raise_on_error_reports_first_error(r):
    with r.pipeline(transaction=False) as p:
        p.set("x", "1")
        p.execute_command("INCRBY", "x", "notanumber")
        p.set("y", "2")
        with pytest.raises(ResponseError):
            p.execute()
    # the commands around the error were still executed
    assert r.mget("x", "y") == ["1", "2"]


def test_pipeline_with_ttls(r):
    with r.pipeline(transaction=False) as p:
        for i in range(200):
            p.set(f"t{i}", "v", ex=100 + i)
        for i in range(200):
            p.ttl(f"t{i}")
        res = p.execute()
    ttls = res[200:]
    assert all(98 + i <= t <= 100 + i for i, t in enumerate(ttls))


def test_raw_pipeline_in_one_write(server):
    """1000 commands in a single send(); 1000 replies in order."""
    with Raw(server.port) as c:
        n = 1000
        payload = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\np%d\r\n$1\r\nv\r\n" % (len(b"p%d" % i), i) for i in range(n))
        payload += b"*1\r\n$4\r\nPING\r\n" * n
        c.send(payload)
        for _ in range(n):
            assert c.read() == "OK"
        for _ in range(n):
            assert c.read() == "PONG"
        assert c.call("DEL", *[f"p{i}" for i in range(n)]) == n


def test_raw_inline_pipeline(server):
    with Raw(server.port) as c:
        c.send(b"SET inl 5\r\nINCR inl\r\nGET inl\r\nDEL inl\r\n")
        assert c.read() == "OK"
        assert c.read() == 6
        assert c.read() == b"6"
        assert c.read() == 1


def test_pipeline_split_across_writes(server):
    """A request split at every byte boundary still parses."""
    with Raw(server.port) as c:
        req = b"*3\r\n$3\r\nSET\r\n$5\r\nsplit\r\n$10\r\n0123456789\r\n*2\r\n$3\r\nGET\r\n$5\r\nsplit\r\n"
        for i in range(len(req)):
            c.send(req[i : i + 1])
        assert c.read() == "OK"
        assert c.read() == b"0123456789"
        c.call("DEL", "split")


def test_pipeline_of_large_distinct_values(rb):
    values = {f"big:{i}".encode(): bytes([i % 251]) * (100_000 + i) for i in range(100)}
    with rb.pipeline(transaction=False) as p:
        for k, v in values.items():
            p.set(k, v)
        for k in values:
            p.get(k)
        res = p.execute()
    assert res[:100] == [True] * 100
    for got, want in zip(res[100:], values.values()):
        assert got == want
