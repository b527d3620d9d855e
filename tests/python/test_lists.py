"""Lists (LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM LTRIM LPOS LMOVE
RPOPLPUSH LMPOP) and the blocking BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP, RESP2 and RESP3: replies,
null shapes, error words, WRONGTYPE, long lists, keyspace events and WATCH; blocked clients woken by
pushes (also pushes of LMOVE, of a MULTI/EXEC and RENAME), timeouts, first come first served, no
blocking inside MULTI, CLIENT UNBLOCK. Every assertion holds against redis-server 7 as well; the
tests marked locus_only check that tenants neither see nor wake each other's blocked clients, and
that a tenant pushing lists never gets used_memory over its maxmemory."""

import re
import time

import pytest
import redis
from redis.exceptions import ResponseError, WatchError

from harness import Raw, RespError, free_ports, wait_until

NOT_INT = "value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def raises(msg):
    """pytest.raises for a ResponseError whose text (code stripped by redis-py) is exactly `msg`."""
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def blocked(c) -> int:
    return int(c.info("clients")["blocked_clients"])


def raw_blocked(c: Raw) -> int:
    text = c.call("INFO", "clients").decode()
    return int(text.split("blocked_clients:")[1].split("\r\n")[0])


def wait_blocked(c, n: int):
    wait_until(lambda: blocked(c) == n, timeout=5, what=f"{n} blocked clients")


# Pushes, pops, reads


def test_push_pop_and_read(r):
    assert r.lpush("l", "a", "b") == 2
    assert r.rpush("l", "c", "d") == 4
    assert r.lrange("l", 0, -1) == ["b", "a", "c", "d"]
    assert r.llen("l") == 4
    assert r.llen("missing") == 0
    assert r.lindex("l", 0) == "b"
    assert r.lindex("l", -1) == "d"
    assert r.lindex("l", 4) is None
    assert r.lindex("l", -5) is None
    assert r.lindex("missing", 0) is None
    assert r.lpop("l") == "b"
    assert r.rpop("l") == "d"
    assert r.lpop("l", 5) == ["a", "c"]
    assert r.exists("l") == 0, "an emptied list is deleted"
    assert r.lpop("l") is None
    assert r.lpop("l", 2) is None
    assert r.rpop("l", 0) is None


def test_pop_with_count(r):
    r.rpush("l", *"abcdefg")
    assert r.lpop("l", 0) == []
    assert r.lpop("l", 2) == ["a", "b"]
    assert r.rpop("l", 2) == ["g", "f"]
    assert r.rpop("l", 1) == ["e"]
    assert r.rpop("l", 100) == ["d", "c"]
    assert r.exists("l") == 0
    with raises("value is out of range, must be positive"):
        r.lpop("l", -1)
    with raises("value is out of range, must be positive"):
        r.execute_command("RPOP", "l", "x")
    with raises("wrong number of arguments for 'lpop' command"):
        r.execute_command("LPOP", "l", 1, 1)


def test_pushx(r):
    assert r.lpushx("l", "a") == 0
    assert r.rpushx("l", "a") == 0
    assert r.exists("l") == 0
    r.rpush("l", "m")
    assert r.lpushx("l", "b", "a") == 3
    assert r.rpushx("l", "y", "z") == 5
    assert r.lrange("l", 0, -1) == ["a", "b", "m", "y", "z"]


def test_lrange_arithmetic(r):
    r.rpush("l", *[str(i) for i in range(10)])
    assert r.lrange("l", 1, -2) == [str(i) for i in range(1, 9)]
    assert r.lrange("l", -3, -1) == ["7", "8", "9"]
    assert r.lrange("l", 6, 2) == []
    assert r.lrange("l", -100, 100) == [str(i) for i in range(10)]
    assert r.lrange("l", 0, -11) == []
    assert r.lrange("l", 0, -10) == ["0"]
    assert r.lrange("l", 10, 20) == []
    assert r.lrange("missing", 0, -1) == []
    with raises(NOT_INT):
        r.lrange("missing", "a", 1)


def test_ltrim(r):
    def trim(a, b):
        r.delete("l")
        r.rpush("l", 1, 2, 3, 4, 5)
        assert r.ltrim("l", a, b)
        return r.lrange("l", 0, -1)

    assert trim(0, 0) == ["1"]
    assert trim(1, -2) == ["2", "3", "4"]
    assert trim(-2, -1) == ["4", "5"]
    assert trim(-10, 10) == ["1", "2", "3", "4", "5"]
    assert trim(0, -6) == []
    assert r.exists("l") == 0
    assert trim(3, 1) == []
    assert r.ltrim("missing", 0, 1)
    with raises(NOT_INT):
        r.ltrim("missing", 0, "x")


def test_lset(r):
    r.rpush("l", "a", "b", "c")
    assert r.lset("l", 1, "B")
    assert r.lset("l", -1, "C" * 100)
    assert r.lrange("l", 0, -1) == ["a", "B", "C" * 100]
    with raises("index out of range"):
        r.lset("l", 3, "x")
    with raises("index out of range"):
        r.lset("l", -4, "x")
    with raises("no such key"):
        r.lset("missing", 0, "x")
    with raises(NOT_INT):
        r.lset("l", "x", "x")


def test_linsert(r):
    r.rpush("l", "a", "c", "d")
    assert r.linsert("l", "before", "c", "b") == 4
    assert r.linsert("l", "AFTER", "d", "e") == 5
    assert r.linsert("l", "after", "nope", "x") == -1
    assert r.linsert("missing", "after", "a", "x") == 0
    assert r.lrange("l", 0, -1) == ["a", "b", "c", "d", "e"]
    with raises("syntax error"):
        r.execute_command("LINSERT", "l", "middle", "a", "x")
    # An integer-looking pivot and element.
    r.rpush("n", 1, 2, 3)
    assert r.linsert("n", "before", 2, 42) == 4
    assert r.lrange("n", 0, -1) == ["1", "42", "2", "3"]


def test_lrem(r):
    r.rpush("l", *"abcabcab")
    assert r.lrem("l", 0, "a") == 3
    assert r.lrange("l", 0, -1) == list("bcbcb")
    assert r.lrem("l", 1, "b") == 1
    assert r.lrange("l", 0, -1) == list("cbcb")
    assert r.lrem("l", -1, "c") == 1
    assert r.lrange("l", 0, -1) == list("cbb")
    assert r.lrem("l", 1, "zz") == 0
    assert r.lrem("l", 0, "b") == 2
    assert r.lrem("l", 0, "c") == 1
    assert r.exists("l") == 0
    assert r.lrem("missing", 0, "x") == 0


def test_lpos(r):
    r.rpush("l", "a", "b", "c", "1", "2", "3", "c", "c")
    assert r.lpos("l", "a") == 0
    assert r.lpos("l", "c") == 2
    assert r.lpos("l", "c", rank=2) == 6
    assert r.lpos("l", "c", rank=4) is None
    assert r.lpos("l", "c", rank=-1) == 7
    assert r.lpos("l", "c", rank=-2) == 6
    assert r.lpos("l", "c", count=0) == [2, 6, 7]
    assert r.lpos("l", "c", count=2, rank=-1) == [7, 6]
    assert r.lpos("l", "c", count=0, maxlen=3) == [2]
    assert r.lpos("l", "c", count=0, maxlen=7, rank=2) == [6]
    assert r.lpos("l", "x") is None
    assert r.lpos("l", "x", count=2) == []
    assert r.lpos("missing", "x") is None
    assert r.lpos("missing", "x", count=1) == []
    assert r.lpos("l", "2") == 4
    with pytest.raises(ResponseError, match="RANK can't be zero"):
        r.lpos("l", "c", rank=0)
    with raises("COUNT can't be negative"):
        r.lpos("l", "c", count=-1)
    with raises("MAXLEN can't be negative"):
        r.lpos("l", "c", maxlen=-1)
    with raises("syntax error"):
        r.execute_command("LPOS", "l", "c", "RANK")
    with raises("syntax error"):
        r.execute_command("LPOS", "missing", "c", "FOO", "1")


def test_lmove_and_rpoplpush(r):
    r.rpush("src", "a", "b", "c")
    assert r.rpoplpush("src", "dst") == "c"
    assert r.lmove("src", "dst", "LEFT", "RIGHT") == "a"
    assert r.lrange("dst", 0, -1) == ["c", "a"]
    assert r.lmove("src", "dst", "RIGHT", "LEFT") == "b"
    assert r.exists("src") == 0
    assert r.lrange("dst", 0, -1) == ["b", "c", "a"]
    # The same list: a rotation.
    assert r.lmove("dst", "dst", "LEFT", "RIGHT") == "b"
    assert r.lrange("dst", 0, -1) == ["c", "a", "b"]
    assert r.rpoplpush("dst", "dst") == "b"
    assert r.lrange("dst", 0, -1) == ["b", "c", "a"]
    assert r.rpoplpush("missing", "dst") is None
    assert r.lmove("missing", "other", "LEFT", "LEFT") is None
    assert r.exists("other") == 0
    with raises("syntax error"):
        r.execute_command("LMOVE", "dst", "x", "UP", "LEFT")
    # A destination of another type: WRONGTYPE, the source intact.
    r.set("str", "v")
    with raises(WRONGTYPE):
        r.rpoplpush("dst", "str")
    assert r.lrange("dst", 0, -1) == ["b", "c", "a"]
    with raises(WRONGTYPE):
        r.rpoplpush("str", "dst")


def test_lmpop(r):
    r.rpush("a", 1, 2, 3)
    r.rpush("b", 4, 5)
    assert r.lmpop(2, "missing", "a", direction="LEFT") == ["a", ["1"]]
    assert r.lmpop(2, "a", "b", direction="RIGHT", count=10) == ["a", ["3", "2"]]
    assert r.lmpop(2, "a", "b", direction="LEFT", count=1) == ["b", ["4"]]
    assert r.lmpop(1, "b", direction="LEFT", count=5) == ["b", ["5"]]
    assert r.lmpop(2, "a", "b", direction="LEFT") is None
    r.set("s", "x")
    with raises(WRONGTYPE):
        r.lmpop(2, "s", "a", direction="LEFT")
    r.rpush("a", "x")
    # A key of another type after the first list is not looked at.
    assert r.lmpop(2, "a", "s", direction="LEFT") == ["a", ["x"]]
    for args, msg in [
        (["0", "a", "LEFT"], "numkeys should be greater than 0"),
        (["x", "a", "LEFT"], "numkeys should be greater than 0"),
        (["1", "a", "UP"], "syntax error"),
        (["1", "a", "LEFT", "COUNT", "0"], "count should be greater than 0"),
        (["1", "a", "LEFT", "COUNT", "x"], "count should be greater than 0"),
        (["1", "a", "LEFT", "COUNT", "1", "COUNT", "2"], "syntax error"),
        (["1", "a", "COUNT"], "syntax error"),
        (["5", "a", "LEFT"], "syntax error"),
    ]:
        with raises(msg):
            r.execute_command("LMPOP", *args)


def test_integers_and_odd_strings_round_trip(r):
    values = ["0", "127", "128", "-1", "-4096", "4095", "4096", "-32768", "32768", "8388607",
              "8388608", "2147483647", "2147483648", "9223372036854775807", "-9223372036854775808",
              "9223372036854775808", "007", "-0", "+1", "1.5", "", " 1", "x" * 63, "x" * 64,
              "y" * 4095, "y" * 4096, "z" * 70000]
    r.rpush("l", *values)
    assert r.lrange("l", 0, -1) == values
    assert [r.lindex("l", i) for i in range(len(values))] == values
    assert r.lpos("l", "-1") == 3
    assert r.lpos("l", "007") == 16
    assert r.lrem("l", 0, "-0") == 1
    assert r.lrem("l", 0, "0") == 1


def test_long_list_random_access(r):
    n = 5000
    r.rpush("l", *[str(i) for i in range(n)])
    for i in (0, 1, 777, n // 2, n - 2, n - 1):
        assert r.lindex("l", i) == str(i)
        assert r.lindex("l", -1 - i) == str(n - 1 - i)
    assert r.lset("l", n // 2, "mid")
    assert r.lindex("l", n // 2) == "mid"
    assert r.linsert("l", "before", "mid", "x" * 10000) == n + 1
    assert r.lindex("l", n // 2) == "x" * 10000
    assert r.lrange("l", n // 2 - 1, n // 2 + 1) == [str(n // 2 - 1), "x" * 10000, "mid"]
    assert r.ltrim("l", 100, -101)
    assert r.llen("l") == n + 1 - 200
    assert r.lindex("l", 0) == "100"


def test_type_and_encoding(r):
    r.rpush("l", "a")
    assert r.type("l") == "list"
    assert r.object("encoding", "l") == "quicklist"
    assert r.copy("l", "l2")
    r.rpush("l2", "b")
    assert r.lrange("l", 0, -1) == ["a"]
    assert r.lrange("l2", 0, -1) == ["a", "b"]
    assert r.scan(0, _type="list")[1] and sorted(r.scan(0, _type="list")[1]) == ["l", "l2"]


def test_wrongtype(r):
    r.set("s", "v")
    r.hset("h", "f", "v")
    for cmd in [("LPUSH", "s", "a"), ("RPUSH", "s", "a"), ("LPUSHX", "s", "a"), ("RPUSHX", "s", "a"),
                ("LPOP", "s"), ("RPOP", "s", 2), ("LLEN", "s"), ("LRANGE", "s", 0, -1),
                ("LINDEX", "s", 0), ("LSET", "s", 0, "a"), ("LINSERT", "s", "before", "a", "b"),
                ("LREM", "s", 0, "a"), ("LTRIM", "s", 0, 1), ("LPOS", "s", "a"),
                ("LMOVE", "s", "d", "LEFT", "LEFT"), ("RPOPLPUSH", "h", "d"),
                ("LMPOP", 1, "h", "LEFT"), ("BLPOP", "s", 0), ("BRPOP", "h", 0),
                ("BLMOVE", "s", "d", "LEFT", "LEFT", 0), ("BRPOPLPUSH", "s", "d", 0),
                ("BLMPOP", 0, 1, "s", "LEFT")]:
        with raises(WRONGTYPE):
            r.execute_command(*cmd)
    r.rpush("l", "a")
    for cmd in [("GET", "l"), ("INCR", "l"), ("APPEND", "l", "x"), ("HSET", "l", "f", "v"),
                ("SETBIT", "l", 0, 1)]:
        with raises(WRONGTYPE):
            r.execute_command(*cmd)
    assert r.lrange("l", 0, -1) == ["a"]
    # SET replaces a list.
    r.set("l", "now a string")
    assert r.type("l") == "string"


def test_null_shapes_resp2_and_resp3(server):
    with Raw(server.port) as c:
        c.call("DEL", "nol")
        for proto, nulls in [(2, (b"$-1", b"*-1")), (3, (b"_", b"_"))]:
            c.call("HELLO", proto)
            null, null_array = nulls
            for cmd, want in [(("LPOP", "nol"), null), (("RPOP", "nol", 1), null_array),
                              (("LPOP", "nol", 0), null_array), (("LINDEX", "nol", 0), null),
                              (("LPOS", "nol", "x"), null), (("RPOPLPUSH", "nol", "d"), null),
                              (("LMPOP", 1, "nol", "LEFT"), null_array),
                              (("BLPOP", "nol", "0.01"), null_array),
                              (("BLMPOP", "0.01", 1, "nol", "LEFT"), null_array),
                              # Redis 7.0 answers a timed-out BLMOVE with the null array too.
                              (("BLMOVE", "nol", "d", "LEFT", "LEFT", "0.01"), null_array),
                              (("BRPOPLPUSH", "nol", "d", "0.01"), null_array)]:
                c.send(b"".join(_enc(cmd)))
                assert c.read_line() == want, (proto, cmd)
            c.call("RPUSH", "one", "x")
            c.send(b"*3\r\n$4\r\nLPOP\r\n$3\r\none\r\n$1\r\n0\r\n")
            assert c.read_line() == b"*0"
            c.call("DEL", "one")


def test_keyspace_events(server, client_for):
    c = client_for(server)
    c.flushall()
    c.config_set("notify-keyspace-events", "KEl")
    try:
        sub = client_for(server).pubsub()
        sub.psubscribe("__keyevent@0__:*")
        wait_until(lambda: sub.get_message(timeout=0.1) is not None, what="psubscribe reply")
        c.rpush("l", "a", "b")
        c.lpush("l", "z")
        c.lpop("l")
        c.lset("l", 0, "A")
        c.linsert("l", "after", "A", "x")
        c.lrem("l", 1, "x")
        c.ltrim("l", 0, 0)
        c.rpush("m", "q")
        c.lmove("m", "l", "LEFT", "RIGHT")
        c.config_set("notify-keyspace-events", "KEA")
        c.rpop("l", 5)
        seen = []
        deadline = time.monotonic() + 5
        while len(seen) < 12 and time.monotonic() < deadline:
            m = sub.get_message(timeout=0.1)
            if m is not None:
                seen.append((m["channel"].split(":")[-1], m["data"]))
        assert seen == [("rpush", "l"), ("lpush", "l"), ("lpop", "l"), ("lset", "l"),
                        ("linsert", "l"), ("lrem", "l"), ("ltrim", "l"), ("rpush", "m"),
                        ("rpush", "l"), ("lpop", "m"), ("rpop", "l"), ("del", "l")]
        sub.close()
    finally:
        c.config_set("notify-keyspace-events", "")


def test_watch(server, client_for):
    c, other = client_for(server), client_for(server)
    c.flushall()
    c.rpush("l", "a")
    for change, dirty in [(lambda: other.lpushx("nol", "x"), False),
                          (lambda: other.linsert("l", "before", "zz", "x"), False),
                          (lambda: other.lrem("l", 0, "zz"), False),
                          (lambda: other.lpop("nol"), False),
                          (lambda: other.lpop("l", 0), False),
                          (lambda: other.rpush("l", "b"), True),
                          (lambda: other.ltrim("l", 0, -1), True),
                          (lambda: other.lset("l", 0, "a"), True),
                          (lambda: other.rpoplpush("l", "l"), True)]:
        with c.pipeline() as p:
            p.watch("l", "nol")
            change()
            p.multi()
            p.llen("l")
            if dirty:
                with pytest.raises(WatchError):
                    p.execute()
            else:
                assert p.execute() == [c.llen("l")]


# Blocking


def test_blocking_pops_are_woken_by_a_push(server, client_for):
    c = client_for(server)
    c.flushall()
    for cmd, push, want in [
        (("BLPOP", "k", 0), ("RPUSH", "k", "a", "b"), [b"k", b"a"]),
        (("BRPOP", "x", "k", 0), ("RPUSH", "k", "a", "b"), [b"k", b"b"]),
        (("BLMPOP", 0, 2, "x", "k", "RIGHT", "COUNT", 5), ("RPUSH", "k", "a", "b"),
         [b"k", [b"b", b"a"]]),
        (("BLMOVE", "k", "d", "RIGHT", "LEFT", 0), ("LPUSH", "k", "a"), b"a"),
        (("BRPOPLPUSH", "k", "d", 0), ("LPUSH", "k", "a"), b"a"),
    ]:
        c.delete("k", "x")
        with Raw(server.port) as b:
            b.send(b"".join(_enc(cmd)))
            wait_blocked(c, 1)
            assert b.nothing_within(0.05)
            c.execute_command(*push)
            assert b.read() == want, cmd
            wait_blocked(c, 0)
    assert c.lrange("d", 0, -1) == ["a", "a"]
    assert c.exists("k") == 0


def _enc(cmd):
    out = [b"*%d\r\n" % len(cmd)]
    for a in cmd:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return out


def test_blocked_clients_are_served_first_come_first_served(server, client_for):
    c = client_for(server)
    c.flushall()
    clients = [Raw(server.port) for _ in range(4)]
    try:
        for i, b in enumerate(clients):
            b.send(b"".join(_enc(("BLPOP", "q", 0))))
            wait_blocked(c, i + 1)
        c.rpush("q", "1", "2", "3")
        assert [b.read() for b in clients[:3]] == [[b"q", b"1"], [b"q", b"2"], [b"q", b"3"]]
        assert clients[3].nothing_within(0.1)
        assert c.exists("q") == 0
        c.rpush("q", "4")
        assert clients[3].read() == [b"q", b"4"]
    finally:
        for b in clients:
            b.close()


def test_blocking_timeouts(server, client_for):
    c = client_for(server)
    c.flushall()
    with Raw(server.port) as b:
        for cmd in [("BLPOP", "k", "0.05"), ("BRPOP", "k", "x", "0.05"),
                    ("BLMPOP", "0.05", 1, "k", "LEFT"), ("BLMOVE", "k", "d", "LEFT", "LEFT", "0.05"),
                    ("BRPOPLPUSH", "k", "d", "0.05")]:
            t0 = time.monotonic()
            assert b.call(*cmd) is None, cmd
            assert 0.04 <= time.monotonic() - t0 < 2
        for bad in ["-1", "-0.5", "inf"]:
            assert b.call("BLPOP", "k", bad) == RespError("ERR timeout is negative")
        for bad in ["abc", "", "1x"]:
            assert b.call("BLPOP", "k", bad) == RespError("ERR timeout is not a float or out of range")
        # Zero blocks until a push.
        b.send(b"".join(_enc(("BLPOP", "k", 0))))
        assert b.nothing_within(0.3)
        c.lpush("k", "late")
        assert b.read() == [b"k", b"late"]
    assert blocked(c) == 0


def test_blocking_inside_multi_answers_at_once(r):
    r.rpush("l", "a")
    with r.pipeline() as p:
        p.blpop(["l"], 0)
        p.blpop(["l"], 0)
        p.brpop(["l"], 0)
        p.blmove("l", "d", 0, "LEFT", "LEFT")
        p.brpoplpush("l", "d", 0)
        p.execute_command("BLMPOP", 0, 1, "l", "LEFT")
        got = p.execute()
        assert [list(x) if isinstance(x, tuple) else x for x in got] == [
            ["l", "a"], None, None, None, None, None]


def test_pushes_by_lmove_multi_and_rename_wake(server, client_for):
    c = client_for(server)
    c.flushall()
    with Raw(server.port) as b1, Raw(server.port) as b2:
        # LMOVE's push, and a chain: b1 moves k1 -> k2, which b2 waits for.
        b1.send(b"".join(_enc(("BLMOVE", "k1", "k2", "LEFT", "RIGHT", 0))))
        wait_blocked(c, 1)
        b2.send(b"".join(_enc(("BLPOP", "k2", 0))))
        wait_blocked(c, 2)
        c.rpush("src", "v")
        c.lmove("src", "k1", "LEFT", "LEFT")
        assert b1.read() == b"v"
        assert b2.read() == [b"k2", b"v"]
        assert c.exists("k1", "k2", "src") == 0
        # A MULTI's pushes are seen whole: pushed then deleted wakes nobody.
        b1.send(b"".join(_enc(("BLPOP", "m", 0))))
        wait_blocked(c, 1)
        with c.pipeline() as p:
            p.rpush("m", "a", "b", "c")
            p.delete("m")
            p.execute()
        assert b1.nothing_within(0.1)
        with c.pipeline() as p:
            p.rpush("m", "a")
            p.rpush("m", "b")
            p.execute()
        assert b1.read() == [b"m", b"a"]
        assert c.lrange("m", 0, -1) == ["b"]
        # A key moved into place; a key of another type does not wake.
        b1.send(b"".join(_enc(("BLPOP", "n", 0))))
        wait_blocked(c, 1)
        c.set("n", "string")
        assert b1.nothing_within(0.1)
        c.delete("n")
        c.rpush("tmp", "x", "y")
        c.rename("tmp", "n")
        assert b1.read() == [b"n", b"x"]


def test_served_blmove_onto_a_wrong_type_gets_wrongtype(server, client_for):
    c = client_for(server)
    c.flushall()
    c.set("dst", "string")
    with Raw(server.port) as b1, Raw(server.port) as b2:
        b1.send(b"".join(_enc(("BRPOPLPUSH", "src", "dst", 0))))
        wait_blocked(c, 1)
        b2.send(b"".join(_enc(("BRPOPLPUSH", "src", "ok", 0))))
        wait_blocked(c, 2)
        c.rpush("src", "a")
        assert b1.read() == RespError(WRONGTYPE)
        assert b2.read() == b"a"
        assert c.lrange("ok", 0, -1) == ["a"]


def test_a_served_push_is_a_write_watch_sees(server, client_for):
    c, w = client_for(server), client_for(server)
    c.flushall()
    with Raw(server.port) as b:
        b.send(b"".join(_enc(("BRPOPLPUSH", "src", "dst", 0))))
        wait_blocked(c, 1)
        with w.pipeline() as p:
            p.watch("dst")
            c.rpush("src", "e")
            assert b.read() == b"e"
            p.multi()
            p.get("x")
            with pytest.raises(WatchError):
                p.execute()


def test_client_unblock(server, client_for):
    c = client_for(server)
    c.flushall()
    with Raw(server.port) as b:
        bid = b.call("CLIENT", "ID")
        b.send(b"".join(_enc(("BLPOP", "k", 0))))
        wait_blocked(c, 1)
        assert c.client_unblock(bid) == 1
        assert b.read() is None
        b.send(b"".join(_enc(("BLMOVE", "k", "d", "LEFT", "LEFT", 0))))
        wait_blocked(c, 1)
        assert c.execute_command("CLIENT", "UNBLOCK", bid, "ERROR") == 1
        assert b.read() == RespError("UNBLOCKED client unblocked via CLIENT UNBLOCK")
        assert c.execute_command("CLIENT", "UNBLOCK", bid) == 0
        with raises("CLIENT UNBLOCK reason should be TIMEOUT or ERROR"):
            c.execute_command("CLIENT", "UNBLOCK", bid, "MAYBE")
        with raises(NOT_INT):
            c.execute_command("CLIENT", "UNBLOCK", "abc")
        # Still usable, and pipelined commands after a blocked one wait for it.
        b.send(b"".join(_enc(("BLPOP", "k", 0)) + _enc(("PING",))))
        wait_blocked(c, 1)
        c.rpush("k", "x")
        assert b.read() == [b"k", b"x"]
        assert b.read() == "PONG"


def test_disconnect_while_blocked(server, client_for):
    c = client_for(server)
    c.flushall()
    b = Raw(server.port)
    b.send(b"".join(_enc(("BLPOP", "k", 0))))
    wait_blocked(c, 1)
    b.close()
    wait_blocked(c, 0)
    c.rpush("k", "kept")
    assert c.lrange("k", 0, -1) == ["kept"]


def test_redis_py_blocking_api(r):
    assert r.blpop(["k"], timeout=0.05) is None
    r.rpush("k", "a", "b")
    assert list(r.blpop(["k"], timeout=1)) == ["k", "a"]
    assert list(r.brpop(["k"], timeout=1)) == ["k", "b"]


# Tenants and memory (Locus only)

TENANTS = """
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "64MiB"

[tenancy]
mode = "port"

[[tenant]]
name = "a"
port = {pa}
max = "{amax}"
policy = "{apolicy}"

[[tenant]]
name = "b"
port = {pb}
"""


@pytest.mark.locus_only
def test_tenants_neither_see_nor_wake_each_others_blocked_clients(start_locus_toml):
    main, pa, pb = free_ports(3)
    start_locus_toml(TENANTS.format(main=main, pa=pa, pb=pb, amax="8MiB", apolicy="allkeys-lru"), pa)
    with Raw(pa) as wa, Raw(pa) as a, Raw(pb) as b:
        aid = wa.call("CLIENT", "ID")
        wa.send(b"".join(_enc(("BLPOP", "q", 0))))
        wait_until(lambda: raw_blocked(a) == 1, what="a's client blocked")
        assert raw_blocked(b) == 0, "b sees a's blocked client"
        assert b.call("CLIENT", "UNBLOCK", aid) == 0
        assert b"flags=b" not in b.call("CLIENT", "LIST")
        # b's key of the same name is another key.
        assert b.call("RPUSH", "q", "from-b") == 1
        assert wa.nothing_within(0.2)
        assert b.call("LRANGE", "q", 0, -1) == [b"from-b"]
        assert a.call("RPUSH", "q", "from-a") == 1
        assert wa.read() == [b"q", b"from-a"]
        assert raw_blocked(a) == 0
        # a's client may be unblocked by a, not by b.
        wa.send(b"".join(_enc(("BLPOP", "q2", 0))))
        wait_until(lambda: raw_blocked(a) == 1, what="a's client blocked again")
        assert b.call("CLIENT", "UNBLOCK", aid) == 0
        assert a.call("CLIENT", "UNBLOCK", aid) == 1
        assert wa.read() is None


def info_memory(c: Raw) -> tuple[int, int]:
    text = c.call("INFO", "memory").decode()
    field = lambda name: int(text.split(f"\r\n{name}:")[1].split("\r\n")[0])  # noqa: E731
    return field("used_memory"), field("maxmemory")


@pytest.mark.locus_only
@pytest.mark.parametrize("policy", ["allkeys-lru", "noeviction"])
def test_a_tenant_pushing_lists_stays_within_its_maxmemory(start_locus_toml, policy):
    main, pa, pb = free_ports(3)
    start_locus_toml(TENANTS.format(main=main, pa=pa, pb=pb, amax="2MiB", apolicy=policy), pa)
    ooms = 0
    with Raw(pa) as a:
        for i in range(400):
            key = f"list:{i % 60}"
            size = [5, 40, 300, 3000][i % 4]
            cmds = [("RPUSH", key, *[f"{i}:{j}:" + "v" * size for j in range(20)]),
                    ("LPUSH", key, *[str(i * 1000 + j) for j in range(20)]),
                    ("LINSERT", key, "BEFORE", str(i * 1000), "w" * size),
                    ("LSET", key, 3, "s" * (size * 2)),
                    ("LMOVE", key, f"list:{(i + 1) % 60}", "LEFT", "RIGHT")]
            for cmd in cmds:
                got = a.call(*cmd)
                if isinstance(got, RespError):
                    assert got.startswith("OOM") or got == "ERR no such key", got
                    ooms += got.startswith("OOM")
            used, maxmemory = info_memory(a)
            assert maxmemory == 2 * 1024 * 1024
            assert used <= maxmemory, f"used_memory {used} over {maxmemory} at round {i}"
        if policy == "noeviction":
            assert ooms > 0, "a noeviction tenant over its budget must refuse pushes"
        else:
            assert ooms == 0
            assert a.call("DBSIZE") > 0
            stats = a.call("INFO", "stats").decode()
            assert int(stats.split("evicted_keys:")[1].split("\r\n")[0]) > 0, "the budget was never reached"


def test_per_element_memory_of_a_100_element_list(server, client_for):
    """Prints what a 100-element list costs (MEMORY USAGE) on this peer; the goal is Locus at or
    below Redis's bytes (compare the two runs)."""
    c = client_for(server)
    c.flushall()
    c.rpush("l", *[f"element:{i:03}" for i in range(100)])
    usage = c.memory_usage("l")
    print(f"100 x 11-byte elements: MEMORY USAGE {usage} bytes ({usage / 100:.1f} per element)")
    assert usage < 100 * 40
