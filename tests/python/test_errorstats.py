"""INFO errorstats and total_error_replies, and commandstats of blocking commands (issues #24, #26).

The tests not marked locus_only state Redis 7.0's behaviour and pass against redis-server too
(--peer redis): every error reply is counted once under its code (the first word), wherever it is
written (a refused command, a failed one, one inside EXEC, one a script's redis.call or
redis.pcall ran); a script passing a command's error on counts nothing more, an error it makes
itself (redis.error_reply) is counted; CONFIG RESETSTAT clears them; a blocking command is one
call whether it was served, timed out or failed when woken. The locus_only tests: a tenant's
INFO errorstats is empty (the figures are the server's, as commandstats), and a client choosing
error codes adds at most 128 of them.
"""

import re

import pytest

from harness import Raw, RespError, encode, wait_until
from test_pause_monitor import info_field
from test_privileges import tenants  # noqa: F401  (the fixture)


@pytest.fixture
def clean(server):
    yield
    with Raw(server.port) as c:
        c.call("FLUSHALL")
        c.call("CONFIG", "RESETSTAT")


def errorstats(c: Raw) -> dict[str, int]:
    text = c.call("INFO", "errorstats")
    text = text.decode() if isinstance(text, bytes) else str(text)
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^errorstat_([^:]+):count=(\d+)", text, re.M)}


def cmdstat(c: Raw, name: str) -> dict[str, str]:
    text = c.call("INFO", "commandstats")
    text = text.decode() if isinstance(text, bytes) else str(text)
    m = re.search(rf"^cmdstat_{re.escape(name)}:(.*)$", text, re.M)
    return dict(kv.split("=", 1) for kv in m.group(1).strip().split(",")) if m else {}


def is_error(reply) -> bool:
    return isinstance(reply, RespError)


def test_errors_are_counted_by_code(server, clean):
    with Raw(server.port) as c:
        assert c.call("CONFIG", "RESETSTAT") == "OK"
        assert errorstats(c) == {} and info_field(c, "stats", "total_error_replies") == 0
        assert "unknown command" in str(c.call("NOSUCHCOMMAND"))
        assert c.call("SET", "es:k", "v") == "OK"
        assert "WRONGTYPE" in str(c.call("LPUSH", "es:k", "x"))
        assert "NOSCRIPT" in str(c.call("EVALSHA", "f" * 40, "0"))
        assert "wrong number" in str(c.call("GET"))
        assert errorstats(c) == {"ERR": 2, "WRONGTYPE": 1, "NOSCRIPT": 1}
        assert info_field(c, "stats", "total_error_replies") == 4
        assert cmdstat(c, "lpush")["failed_calls"] == "1"
        assert cmdstat(c, "get")["rejected_calls"] == "1"
        # Inside EXEC each failing command counts; the transaction itself does not.
        assert c.call("MULTI") == "OK"
        assert c.call("INCR", "es:k") == "QUEUED"
        assert c.call("SET", "es:k2", "1") == "QUEUED"
        res = c.call("EXEC")
        assert "not an integer" in str(res[0]) and res[1] == "OK"
        assert errorstats(c)["ERR"] == 3
        assert c.call("CONFIG", "RESETSTAT") == "OK"
        assert errorstats(c) == {} and info_field(c, "stats", "total_error_replies") == 0


def test_a_scripts_errors_are_counted_once(server, clean):
    with Raw(server.port) as c:
        assert c.call("SET", "es:s", "abc") == "OK"
        cases = [
            # A command's error caught by pcall: counted though the script answers 1.
            ("local t = redis.pcall('incr', KEYS[1]) if t['err'] then return 1 end return 0",
             1, {"ERR": 1}),
            # ... passed on by the script: counted once, not again as the script's reply.
            ("return redis.pcall('incr', KEYS[1])", "error", {"ERR": 1}),
            # ... raised by redis.call: once.
            ("return redis.call('lpush', KEYS[1], 'x')", "error", {"WRONGTYPE": 1}),
            # An error the script makes: counted when replied, under its code.
            ("return redis.error_reply('MY_CODE custom message')", "error", {"MY_CODE": 1}),
            # A Lua error: ERR.
            ("error('boom')", "error", {"ERR": 1}),
        ]
        for body, want, stats in cases:
            assert c.call("CONFIG", "RESETSTAT") == "OK"
            got = c.call("EVAL", body, "1", "es:s")
            if want == "error":
                assert is_error(got), (body, got)
            else:
                assert got == want, (body, got)
            assert errorstats(c) == stats, body
            assert info_field(c, "stats", "total_error_replies") == 1, body


def test_a_blocking_command_is_one_call(server, clean):
    with Raw(server.port) as c, Raw(server.port) as waiter:
        assert c.call("CONFIG", "RESETSTAT") == "OK"
        # Timed out.
        assert waiter.call("BLPOP", "es:none", "0.05") is None
        # Served when woken.
        waiter.send(encode("BLPOP", "es:list", "0"))
        wait_until(lambda: info_field(c, "clients", "blocked_clients") == 1, what="blocked")
        assert c.call("RPUSH", "es:list", "a") == 1
        assert waiter.read() == [b"es:list", b"a"]
        assert cmdstat(c, "blpop")["calls"] == "2"
        assert cmdstat(c, "blpop")["failed_calls"] == "0"
        # Failed when woken: its group destroyed.
        assert c.call("XGROUP", "CREATE", "es:st", "g", "$", "MKSTREAM") == "OK"
        waiter.send(encode("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS",
                           "es:st", ">"))
        wait_until(lambda: info_field(c, "clients", "blocked_clients") == 1, what="blocked")
        assert c.call("XGROUP", "DESTROY", "es:st", "g") == 1
        assert "NOGROUP" in str(waiter.read())
        st = cmdstat(c, "xreadgroup")
        assert (st["calls"], st["failed_calls"], st["rejected_calls"]) == ("1", "1", "0"), st
        assert errorstats(c) == {"NOGROUP": 1}


# ---------------------------------------------------------------------------------- tenants


@pytest.mark.locus_only
def test_a_tenant_sees_no_errorstats(tenants):
    s = tenants
    alice, bob, root = s.raw("alice"), s.raw("bob"), s.raw("admin")
    try:
        assert root.call("CONFIG", "RESETSTAT") == "OK"
        assert is_error(bob.call("EVAL", "return redis.error_reply('BOBS_SECRET x')", "0"))
        assert errorstats(alice) == {}
        assert "total_error_replies" not in str(alice.call("INFO", "stats"))
        assert errorstats(root).get("BOBS_SECRET") == 1
    finally:
        for c in (alice, bob, root):
            c.close()


@pytest.mark.locus_only
def test_error_codes_are_bounded(server, clean):
    with Raw(server.port) as c:
        assert c.call("CONFIG", "RESETSTAT") == "OK"
        for i in range(200):
            assert is_error(c.call("EVAL", f"return redis.error_reply('CODE{i} x')", "0"))
        stats = errorstats(c)
        assert len(stats) == 128 and all(n == 1 for n in stats.values())
        assert info_field(c, "stats", "total_error_replies") == 200
