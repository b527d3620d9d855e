"""Sets (SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE SINTER SINTERCARD
SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE SSCAN), RESP2 and RESP3: replies and their shapes
(sets in RESP3), both encodings (intset and hashtable) and the one-way conversion, error words and
the order of checks, WRONGTYPE, the key disappearing with its last member, keyspace events and
WATCH (touched only by a change), and the keyspace commands on sets. Every assertion holds against
redis-server 7.0 as well (`--peer redis`); the test marked locus_only checks that a tenant writing
sets never gets used_memory over its maxmemory."""

import time

import pytest
import redis
from redis.exceptions import WatchError

from harness import Raw, RespError, encode, free_ports, wait_until
from test_lists import TENANTS  # a 2 MiB tenant beside another

NOT_INT = "value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def shape(raw: Raw, *cmd):
    """The reply's type byte and its decoded items (for an aggregate) or value."""
    raw.send(encode(*cmd))
    line = raw.read_line()
    t = line[:1]
    if t in (b"*", b"~") and int(line[1:]) >= 0:
        return t, [raw.read() for _ in range(int(line[1:]))]
    raw.buf = line + b"\r\n" + raw.buf
    return t, raw.read()


def err(raw: Raw, *cmd) -> str:
    got = raw.call(*cmd)
    assert isinstance(got, RespError), f"{cmd}: {got!r}"
    return str(got)


def test_sadd_srem_scard_and_membership(r):
    assert r.sadd("s", "a", "b", "a") == 2
    assert r.sadd("s", "b", "c") == 1
    assert r.scard("s") == 3 and r.scard("nokey") == 0
    assert r.sismember("s", "a") and not r.sismember("s", "zz")
    assert not r.sismember("nokey", "a")
    assert r.smismember("s", ["a", "zz", "c"]) == [1, 0, 1]
    assert r.smismember("nokey", ["a", "b"]) == [0, 0]
    assert r.smembers("s") == {"a", "b", "c"}
    assert r.smembers("nokey") == set()
    assert r.type("s") == "set"
    assert r.srem("s", "a", "zz") == 1
    assert r.srem("nokey", "a") == 0
    assert r.srem("s", "b", "c") == 2
    assert r.exists("s") == 0


def test_intset_and_hashtable_encodings(r):
    assert r.config_get("set-max-intset-entries") == {"set-max-intset-entries": "512"}
    r.sadd("ints", *range(512))
    assert r.object("encoding", "ints") == "intset"
    r.sadd("ints", 512)
    assert r.object("encoding", "ints") == "hashtable"
    # One way: removing members does not convert back.
    r.srem("ints", *range(10, 513))
    assert r.scard("ints") == 10 and r.object("encoding", "ints") == "hashtable"
    r.sadd("neg", -5, 9223372036854775807, -9223372036854775808, 0)
    assert r.object("encoding", "neg") == "intset"
    assert r.smembers("neg") == {"-5", "9223372036854775807", "-9223372036854775808", "0"}
    # Not canonical integers are strings: the set becomes a table and keeps both forms.
    for odd in ("01", "-0", "+1", " 1", "1 ", "9223372036854775808", "1.0"):
        r.delete("x")
        r.sadd("x", 1)
        assert r.sadd("x", odd) == 1
        assert r.object("encoding", "x") == "hashtable", odd
        assert r.smembers("x") == {"1", odd}
    r.sadd("str", "a")
    assert r.object("encoding", "str") == "hashtable"
    # The threshold is a CONFIG setting.
    try:
        assert r.config_set("set-max-intset-entries", 4)
        r.sadd("small", 1, 2, 3, 4)
        assert r.object("encoding", "small") == "intset"
        r.sadd("small", 5)
        assert r.object("encoding", "small") == "hashtable"
        with pytest.raises(redis.ResponseError):
            r.config_set("set-max-intset-entries", "x")
    finally:
        r.config_set("set-max-intset-entries", 512)


def test_resp_shapes(raw):
    raw.call("SADD", "s", "3", "1", "2")
    raw.call("SADD", "h", "a", "b")
    assert shape(raw, "SMEMBERS", "s") == (b"*", [b"1", b"2", b"3"])  # an intset is in order
    assert shape(raw, "SPOP", "nokey", "2") == (b"*", [])
    assert shape(raw, "SPOP", "nokey") == (b"$", None)
    raw.call("HELLO", "3")
    assert shape(raw, "SMEMBERS", "s") == (b"~", [b"1", b"2", b"3"])
    assert shape(raw, "SMEMBERS", "nokey") == (b"~", [])
    for cmd in (("SINTER", "s", "s"), ("SUNION", "s", "nokey"), ("SDIFF", "s", "nokey")):
        t, items = shape(raw, *cmd)
        assert t == b"~" and sorted(items) == [b"1", b"2", b"3"], cmd
    assert shape(raw, "SINTER", "nokey", "s") == (b"~", [])
    assert shape(raw, "SDIFF", "nokey", "s") == (b"~", [])
    assert shape(raw, "SPOP", "nokey", "2") == (b"~", [])
    assert shape(raw, "SPOP", "nokey") == (b"_", None)
    assert shape(raw, "SRANDMEMBER", "nokey") == (b"_", None)
    assert shape(raw, "SRANDMEMBER", "nokey", "2") == (b"*", [])
    assert shape(raw, "SPOP", "h", "0") == (b"~", [])
    t, items = shape(raw, "SRANDMEMBER", "h", "5")
    assert t == b"*" and sorted(items) == [b"a", b"b"]
    t, items = shape(raw, "SRANDMEMBER", "h", "-3")
    assert t == b"*" and len(items) == 3
    assert shape(raw, "SRANDMEMBER", "h", "0") == (b"*", [])
    assert shape(raw, "SMISMEMBER", "h", "a", "z") == (b"*", [1, 0])
    t, items = shape(raw, "SPOP", "h", "1")
    assert t == b"~" and len(items) == 1
    assert shape(raw, "SSCAN", "s", "0")[0] == b"*"


def test_spop(r):
    assert r.spop("nokey") is None
    assert list(r.spop("nokey", 3)) == []
    members = {str(i) for i in range(100)} | {f"m{i}" for i in range(100)}
    r.sadd("s", *members)
    one = r.spop("s")
    assert one in members and not r.sismember("s", one)
    got = r.spop("s", 50)
    assert len(got) == 50 and len(set(got)) == 50 and set(got) <= members
    assert not any(r.smismember("s", list(got)))
    assert r.scard("s") == 149
    assert list(r.spop("s", 0)) == []
    rest = r.spop("s", 1000)
    assert len(rest) == 149 and r.exists("s") == 0
    assert {one} | set(got) | set(rest) == members
    # An intset, popped partly and then whole.
    r.sadd("i", *range(20))
    got = r.spop("i", 7)
    assert len(set(got)) == 7 and r.scard("i") == 13
    assert r.object("encoding", "i") == "intset"
    r.spop("i", 13)
    assert r.exists("i") == 0
    r.sadd("s", "a")
    with pytest.raises(redis.ResponseError, match="value is out of range, must be positive"):
        r.spop("s", -1)
    with pytest.raises(redis.ResponseError, match="value is out of range, must be positive"):
        r.execute_command("SPOP", "s", "x")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SPOP", "s", 1, 2)
    r.set("str", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.spop("str")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.spop("str", 0)
    # The count is read before the key.
    with pytest.raises(redis.ResponseError, match="must be positive"):
        r.spop("str", -1)


def test_srandmember(r):
    assert r.srandmember("nokey") is None
    assert r.srandmember("nokey", 5) == []
    for key, members in (("i", [str(i) for i in range(30)]), ("h", [f"m{i}" for i in range(30)])):
        r.sadd(key, *members)
        assert r.srandmember(key) in members
        got = r.srandmember(key, 10)
        assert len(got) == 10 and len(set(got)) == 10 and set(got) <= set(members)
        got = r.srandmember(key, 25)  # most of the set: still distinct
        assert len(set(got)) == 25 and set(got) <= set(members)
        assert sorted(r.srandmember(key, 30)) == sorted(members)
        assert sorted(r.srandmember(key, 1000)) == sorted(members)
        rep = r.srandmember(key, -100)
        assert len(rep) == 100 and set(rep) <= set(members) and len(set(rep)) < 100
        assert r.srandmember(key, 0) == []
        assert r.scard(key) == 30
    with pytest.raises(redis.ResponseError, match="value is out of range"):
        r.srandmember("i", -9223372036854775808)
    with pytest.raises(redis.ResponseError, match=NOT_INT):
        r.execute_command("SRANDMEMBER", "i", "1.5")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SRANDMEMBER", "i", 1, 2)
    r.set("str", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.srandmember("str", 3)


def test_smove(r):
    r.sadd("src", "a", "b", 1)
    assert r.smove("src", "dst", "a") == 1
    assert r.smembers("src") == {"b", "1"} and r.smembers("dst") == {"a"}
    assert r.smove("src", "dst", "zz") == 0
    assert r.smove("nokey", "dst", "a") == 0
    assert r.smove("src", "src", "b") == 1 and r.smove("src", "src", "zz") == 0
    assert r.smembers("src") == {"b", "1"}
    r.sadd("dst", "b")
    assert r.smove("src", "dst", "b") == 1  # already there: only leaves the source
    assert r.smove("src", "ints", 1) == 1
    assert r.exists("src") == 0
    assert r.object("encoding", "ints") == "intset"
    r.set("str", "v")
    # An absent source answers 0 before the destination's type is looked at.
    assert r.smove("nokey", "str", "a") == 0
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.smove("str", "dst", "a")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.smove("dst", "str", "a")
    assert r.smembers("dst") == {"a", "b"}
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("SMOVE", "dst", "x")


def test_algebra_and_stores(r):
    r.sadd("a", 1, 2, 3, 4, "x")
    r.sadd("b", 3, 4, 5, "x", "y")
    r.sadd("c", 4, "x", "z")
    assert r.sinter("a", "b") == {"3", "4", "x"}
    assert r.sinter("a", "b", "c") == {"4", "x"}
    assert r.sinter("a", "nokey") == set()
    assert r.sunion("a", "b", "nokey") == {"1", "2", "3", "4", "5", "x", "y"}
    assert r.sdiff("a", "b") == {"1", "2"}
    assert r.sdiff("a", "b", "c") == {"1", "2"}
    assert r.sdiff("nokey", "a") == set()
    assert r.sdiff("a", "nokey") == {"1", "2", "3", "4", "x"}
    assert r.sinterstore("d", "a", "b") == 3 and r.smembers("d") == {"3", "4", "x"}
    assert r.object("encoding", "d") == "hashtable"
    assert r.sunionstore("d", "a", "c") == 6 and r.smembers("d") == {"1", "2", "3", "4", "x", "z"}
    assert r.sdiffstore("d", "a", "b") == 2 and r.smembers("d") == {"1", "2"}
    assert r.object("encoding", "d") == "intset"
    # The destination may be a source; its TTL goes with its old value.
    r.expire("d", 100)
    assert r.sunionstore("d", "d", "c") == 5 and r.ttl("d") == -1
    # An empty result deletes the destination, whatever it held.
    r.set("str", "v")
    assert r.sinterstore("str", "a", "nokey") == 0 and r.exists("str") == 0
    assert r.sdiffstore("d", "a", "a") == 0 and r.exists("d") == 0
    assert r.sunionstore("d", "nokey") == 0 and r.exists("d") == 0
    # Every key is checked for its type, even after an absent one.
    r.set("str", "v")
    for cmd in (("SINTER", "nokey", "str"), ("SINTER", "a", "str"), ("SUNION", "nokey", "str"),
                ("SDIFF", "nokey", "str"), ("SDIFF", "str", "a"), ("SINTERSTORE", "d", "nokey", "str"),
                ("SUNIONSTORE", "d", "a", "str"), ("SDIFFSTORE", "d", "nokey", "str")):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            r.execute_command(*cmd)
    assert r.exists("d") == 0
    # A STORE over a string destination just replaces it.
    assert r.sunionstore("str", "a") == 5 and r.type("str") == "set"


def test_large_sets_algebra(r):
    big = [f"m{i}" for i in range(3000)]
    p = r.pipeline(transaction=False)
    for i in range(0, 3000, 500):
        p.sadd("big", *big[i:i + 500])
    p.sadd("odd", *big[1::2], *range(100))
    p.execute()
    assert r.scard("big") == 3000
    assert r.sinter("big", "odd") == set(big[1::2])
    assert r.sintercard(2, ["big", "odd"]) == 1500
    assert r.sintercard(2, ["big", "odd"], limit=10) == 10
    assert r.sdiffstore("even", "big", "odd") == 1500
    assert r.sunionstore("all", "even", "odd") == 3100


def test_sintercard_arguments(raw):
    raw.call("SADD", "a", "1", "2", "3")
    raw.call("SADD", "b", "2", "3", "4")
    assert raw.call("SINTERCARD", "2", "a", "b") == 2
    assert raw.call("SINTERCARD", "2", "a", "b", "LIMIT", "1") == 1
    assert raw.call("SINTERCARD", "2", "a", "b", "LIMIT", "0") == 2
    assert raw.call("SINTERCARD", "1", "nokey") == 0
    assert raw.call("SINTERCARD", "2", "a", "nokey") == 0
    assert err(raw, "SINTERCARD", "0", "a") == "ERR numkeys should be greater than 0"
    assert err(raw, "SINTERCARD", "x", "a") == "ERR numkeys should be greater than 0"
    assert err(raw, "SINTERCARD", "3", "a", "b") == "ERR Number of keys can't be greater than number of args"
    assert err(raw, "SINTERCARD", "1", "a", "b") == "ERR syntax error"
    assert err(raw, "SINTERCARD", "1", "a", "LIMIT") == "ERR syntax error"
    assert err(raw, "SINTERCARD", "1", "a", "LIMIT", "-1") == "ERR LIMIT can't be negative"
    assert err(raw, "SINTERCARD", "1", "a", "LIMIT", "x") == "ERR LIMIT can't be negative"
    assert err(raw, "SINTERCARD", "1") == "ERR wrong number of arguments for 'sintercard' command"
    raw.call("SET", "str", "v")
    assert err(raw, "SINTERCARD", "2", "nokey", "str") == WRONGTYPE


def test_sscan(r, raw):
    members = {str(i) for i in range(300)} | {f"m{i}" for i in range(1000)}
    r.sadd("s", *members)
    seen = set()
    cursor = 0
    while True:
        cursor, part = r.sscan("s", cursor, count=50)
        seen.update(part)
        if cursor == 0:
            break
    assert seen == members
    _, part = r.sscan("s", 0, match="m99*", count=10000)
    assert set(part) == {"m99"} | {f"m99{i}" for i in range(10)}
    r.sadd("i", *range(20))
    assert r.sscan("i", 0, match="1*") == (0, [str(i) for i in (1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)])
    assert raw.call("SSCAN", "nokey", "0") == [b"0", []]
    assert err(raw, "SSCAN", "s", "x") == "ERR invalid cursor"
    assert err(raw, "SSCAN", "s", "0", "COUNT", "0") == "ERR syntax error"
    assert err(raw, "SSCAN", "s", "0", "MATCH") == "ERR syntax error"
    # As Redis: the options are read only once the key is known to hold a set.
    assert raw.call("SSCAN", "nokey", "0", "COUNT", "0") == [b"0", []]
    raw.call("SET", "str", "v")
    assert err(raw, "SSCAN", "str", "0", "COUNT", "0") == WRONGTYPE
    assert err(raw, "SSCAN", "str", "x") == "ERR invalid cursor"


def test_wrongtype_and_arity(raw):
    raw.call("SET", "str", "v")
    raw.call("SADD", "s", "a")
    for cmd in (("SADD", "str", "a"), ("SREM", "str", "a"), ("SMEMBERS", "str"), ("SCARD", "str"),
                ("SISMEMBER", "str", "a"), ("SMISMEMBER", "str", "a"), ("SPOP", "str"),
                ("SRANDMEMBER", "str"), ("SINTERCARD", "1", "str"), ("SSCAN", "str", "0"),
                ("GET", "s"), ("LPUSH", "s", "x"), ("HSET", "s", "f", "v"), ("APPEND", "s", "x")):
        assert err(raw, *cmd) == WRONGTYPE, cmd
    for cmd in (("SADD", "s"), ("SREM", "s"), ("SMISMEMBER", "s"), ("SCARD",), ("SISMEMBER", "s"),
                ("SMOVE", "a", "b"), ("SINTER",), ("SINTERSTORE", "d"), ("SSCAN", "s"), ("SPOP",)):
        assert err(raw, *cmd) == f"ERR wrong number of arguments for '{cmd[0].lower()}' command", cmd
    assert raw.call("MGET", "s", "str") == [None, b"v"]


def test_keyspace_commands_cover_sets(r):
    r.sadd("s", "a", "b")
    r.sadd("i", 1, 2)
    assert r.rename("s", "s2")
    assert r.smembers("s2") == {"a", "b"}
    assert r.copy("s2", "s3") and r.copy("i", "i2")
    r.sadd("s3", "c")
    assert r.scard("s2") == 2 and r.scard("s3") == 3
    assert r.object("encoding", "i2") == "intset" and r.smembers("i2") == {"1", "2"}
    assert r.expire("s3", 100) and 0 < r.ttl("s3") <= 100
    assert set(r.scan(0, _type="set", count=1000)[1]) == {"s2", "s3", "i", "i2"}
    assert r.memory_usage("s3") > 0
    assert r.delete("s2", "i") == 2 and r.unlink("s3") == 1
    r.flushall()
    assert r.exists("i2") == 0


def test_keyspace_events(server, client_for):
    c = client_for(server)
    c.flushall()
    c.config_set("notify-keyspace-events", "KEA")
    try:
        sub = client_for(server).pubsub()
        sub.psubscribe("__keyevent@0__:*")
        wait_until(lambda: sub.get_message(timeout=0.1) is not None, what="psubscribe reply")
        c.sadd("s", "a", "b", "c")
        c.sadd("s", "a")  # nothing added: no event
        c.srem("s", "zz")  # nothing removed: no event
        c.srem("s", "a")
        c.smove("s", "t", "b")
        c.smove("s", "t", "zz")  # not a member: no event
        c.spop("s")
        c.sadd("u", "x")
        c.sinterstore("d", "t", "t")
        c.sunionstore("d", "t", "u")
        c.sdiffstore("d", "u", "t")
        c.sinterstore("d", "t", "nokey")
        c.sinterstore("d", "t", "nokey")  # nothing to delete: no event
        c.spop("t", 5)
        seen = []
        deadline = time.monotonic() + 5
        while len(seen) < 13 and time.monotonic() < deadline:
            m = sub.get_message(timeout=0.1)
            if m is not None:
                seen.append((m["channel"].split(":")[-1], m["data"]))
        assert seen == [("sadd", "s"), ("srem", "s"), ("srem", "s"), ("sadd", "t"), ("spop", "s"),
                        ("del", "s"), ("sadd", "u"), ("sinterstore", "d"), ("sunionstore", "d"),
                        ("sdiffstore", "d"), ("del", "d"), ("spop", "t"), ("del", "t")]
        assert sub.get_message(timeout=0.3) is None
        sub.close()
    finally:
        c.config_set("notify-keyspace-events", "")


def test_watch(server, client_for):
    c, other = client_for(server), client_for(server)
    c.flushall()
    c.sadd("s", "a")
    c.sadd("t", "c")
    for change, dirty in [(lambda: other.sadd("s", "a"), False),
                          (lambda: other.srem("s", "zz"), False),
                          (lambda: other.srem("nos", "zz"), False),
                          (lambda: other.spop("nos"), False),
                          (lambda: other.spop("s", 0), False),
                          (lambda: other.smove("s", "nos", "zz"), False),
                          (lambda: other.smove("s", "s", "a"), False),
                          (lambda: other.sinterstore("nos", "s", "nokey"), False),
                          (lambda: other.sadd("s", "b"), True),
                          (lambda: other.srem("s", "b"), True),
                          (lambda: other.smove("t", "s", "c"), True),
                          (lambda: other.sunionstore("s", "s"), True)]:
        with c.pipeline() as p:
            p.watch("s", "nos")
            change()
            p.multi()
            p.scard("s")
            if dirty:
                with pytest.raises(WatchError):
                    p.execute()
            else:
                assert p.execute() == [c.scard("s")]


def test_smove_watch_sees_the_destination_only_when_it_gained(server, client_for):
    c, other = client_for(server), client_for(server)
    c.flushall()
    c.sadd("src", "a", "b")
    c.sadd("dst", "a")
    with c.pipeline() as p:
        p.watch("dst")
        assert other.smove("src", "dst", "a") == 1
        p.multi()
        p.scard("dst")
        assert p.execute() == [1]
    with c.pipeline() as p:
        p.watch("dst")
        assert other.smove("src", "dst", "b") == 1
        p.multi()
        p.scard("dst")
        with pytest.raises(WatchError):
            p.execute()


# Tenants and memory (Locus only)

def info_field(c: Raw, section: str, name: str) -> int:
    text = c.call("INFO", section).decode()
    return int(text.split(f"\r\n{name}:")[1].split("\r\n")[0])


@pytest.mark.locus_only
@pytest.mark.parametrize("policy", ["allkeys-lru", "noeviction"])
def test_a_tenant_writing_sets_stays_within_its_maxmemory(start_locus_toml, policy):
    main, pa, pb = free_ports(3)
    start_locus_toml(TENANTS.format(main=main, pa=pa, pb=pb, amax="2MiB", apolicy=policy), pa)
    ooms = 0
    with Raw(pa) as a, Raw(pb) as b:
        b.call("SADD", "theirs", "kept")
        for i in range(300):
            key = f"set:{i % 40}"
            size = [5, 40, 300, 3000][i % 4]
            cmds = [("SADD", key, *[f"{i}:{j}:" + "v" * size for j in range(20)]),
                    ("SADD", f"ints:{i % 40}", *[str(i * 1000 + j) for j in range(40)]),
                    ("SMOVE", key, f"set:{(i + 1) % 40}", f"{i}:0:" + "v" * size),
                    ("SUNIONSTORE", f"u:{i % 10}", key, f"ints:{i % 40}"),
                    ("SPOP", key, 2)]
            for cmd in cmds:
                got = a.call(*cmd)
                if isinstance(got, RespError):
                    assert got.startswith("OOM"), got
                    ooms += 1
            used = info_field(a, "memory", "used_memory")
            assert info_field(a, "memory", "maxmemory") == 2 * 1024 * 1024
            assert used <= 2 * 1024 * 1024, f"used_memory {used} over the budget at round {i}"
        if policy == "noeviction":
            assert ooms > 0, "a noeviction tenant over its budget must refuse writes"
        else:
            assert ooms == 0
            assert info_field(a, "stats", "evicted_keys") > 0, "the budget was never reached"
        assert b.call("SMEMBERS", "theirs") == [b"kept"]


def test_per_element_memory_of_a_100_member_set(server, client_for):
    """Prints what 100-member sets cost (MEMORY USAGE) on this peer, for comparison."""
    c = client_for(server)
    c.flushall()
    c.sadd("strs", *[f"member:{i:03}" for i in range(100)])
    c.sadd("ints", *range(100))
    for key in ("strs", "ints"):
        usage = c.memory_usage(key)
        print(f"{key}: 100 members, MEMORY USAGE {usage} bytes ({usage / 100:.1f} per member)")
    assert c.memory_usage("strs") < 100 * 80
