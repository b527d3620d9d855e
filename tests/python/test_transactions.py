"""MULTI/EXEC/DISCARD/WATCH: redis-py's default `pipeline()` is a transaction (transaction=True), so a
drop-in replacement for Redis behind redis-py needs them."""

import pytest
from redis.exceptions import ResponseError, WatchError

from harness import Raw


def test_default_redis_py_pipeline_is_a_transaction(r):
    with r.pipeline() as p:  # transaction=True by default
        p.set("a", "1")
        p.incr("a")
        p.get("a")
        assert p.execute() == [True, 2, "2"]


def test_multi_exec_discard_raw(raw):
    assert raw.call("MULTI") == "OK"
    assert raw.call("SET", "k", "v") == "QUEUED"
    assert raw.call("INCR", "n") == "QUEUED"
    assert raw.call("EXEC") == ["OK", 1]
    assert raw.call("MULTI") == "OK"
    assert raw.call("SET", "k", "other") == "QUEUED"
    assert raw.call("DISCARD") == "OK"
    assert raw.call("GET", "k") == b"v"
    assert raw.call("EXEC") == "ERR EXEC without MULTI"
    assert raw.call("DISCARD") == "ERR DISCARD without MULTI"
    assert raw.call("MULTI") == "OK"
    assert raw.call("MULTI") == "ERR MULTI calls can not be nested"
    assert raw.call("DISCARD") == "OK"


def test_exec_runtime_error_does_not_abort_the_rest(raw):
    raw.call("SET", "s", "abc")
    raw.call("MULTI")
    raw.call("INCR", "s")
    raw.call("SET", "after", "1")
    res = raw.call("EXEC")
    assert res[0] == "ERR value is not an integer or out of range"
    assert res[1] == "OK"


def test_queueing_error_aborts_exec(raw):
    raw.call("MULTI")
    assert raw.call("SET", "x") == "ERR wrong number of arguments for 'set' command"
    raw.call("SET", "y", "1")
    assert raw.call("EXEC") == "EXECABORT Transaction discarded because of previous errors."
    assert raw.call("EXISTS", "y") == 0


@pytest.mark.parametrize("cmd", ["SHUTDOWN", "SAVE"])
def test_no_multi_commands_are_refused_inside_multi_and_abort_exec(raw, cmd):
    # Redis flags SHUTDOWN and SAVE no-multi: refused while queuing, EXEC aborts, the server stays up.
    raw.call("DEL", "foo")
    raw.call("MULTI")
    assert raw.call("SET", "foo", "bar") == "QUEUED"
    assert raw.call(cmd) == "ERR Command not allowed inside a transaction"
    assert raw.call("EXEC") == "EXECABORT Transaction discarded because of previous errors."
    assert raw.call("GET", "foo") is None
    assert raw.call("PING") == "PONG"


def test_watch(r, server):
    r.set("w", "1")
    with r.pipeline() as p:
        p.watch("w")
        with Raw(server.port) as other:
            other.call("SET", "w", "2")
        p.multi()
        p.set("w", "3")
        with pytest.raises(WatchError):
            p.execute()
    assert r.get("w") == "2"


def test_flushall_touches_only_watched_keys_that_existed(raw):
    # Redis 7: a watched key that did not exist is not affected by FLUSHALL / FLUSHDB.
    for flush in ("FLUSHALL", "FLUSHDB"):
        raw.call("DEL", "x")
        assert raw.call("WATCH", "x") == "OK"
        assert raw.call(flush) == "OK"
        raw.call("MULTI")
        raw.call("PING")
        assert raw.call("EXEC") == ["PONG"]
        raw.call("SET", "x", "1")
        assert raw.call("WATCH", "x") == "OK"
        assert raw.call(flush) == "OK"
        raw.call("MULTI")
        raw.call("PING")
        assert raw.call("EXEC") is None
