"""Hashes (issue 12), checked against redis-server with `--peer redis` first: every command, both
encodings (small hashes are packed, large ones a table), RESP2 and RESP3 shapes, WRONGTYPE, and the
key disappearing when its last field goes."""

import pytest
import redis


def test_hset_hget_hmget_and_counts(r):
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hset("h", "a", "10") == 0
    assert r.hget("h", "a") == "10"
    assert r.hget("h", "zz") is None
    assert r.hget("nokey", "a") is None
    assert r.hmget("h", ["a", "zz", "b"]) == ["10", None, "2"]
    assert r.hmget("nokey", ["a", "b"]) == [None, None]
    assert r.hlen("h") == 2 and r.hlen("nokey") == 0
    assert r.hexists("h", "a") and not r.hexists("h", "zz")
    assert r.hstrlen("h", "a") == 2 and r.hstrlen("h", "zz") == 0
    assert r.execute_command("HMSET", "h", "c", "3") in ("OK", True)
    assert r.hsetnx("h", "c", "x") == 0 and r.hsetnx("h", "d", "4") == 1
    assert r.hget("h", "c") == "3"
    assert r.type("h") == "hash"


def test_hgetall_keys_vals_in_both_encodings(r):
    small = {f"f{i}": f"v{i}" for i in range(10)}
    r.hset("small", mapping=small)
    big = {f"f{i}": f"v{i}" for i in range(500)}
    p = r.pipeline(transaction=False)
    for f, v in big.items():
        p.hset("big", f, v)
    p.execute()
    r.hset("long", "x", "y" * 100)
    for key, want in (("small", small), ("big", big), ("long", {"x": "y" * 100})):
        assert r.hgetall(key) == want
        assert sorted(r.hkeys(key)) == sorted(want)
        assert sorted(r.hvals(key)) == sorted(want.values())
    assert r.hgetall("nokey") == {}
    assert r.object("encoding", "small") == "listpack"
    # (The entry threshold differs: Debian's redis-server ships hash-max-listpack-entries 512.)
    assert r.object("encoding", "long") == "hashtable"


def test_hgetall_shape_is_a_map_in_resp3(raw):
    raw.call("HSET", "h", "a", "1")
    assert raw.call("HGETALL", "h") == [b"a", b"1"]
    raw.call("HELLO", "3")
    assert raw.call("HGETALL", "h") == {b"a": b"1"}
    pairs = raw.call("HRANDFIELD", "h", "1", "WITHVALUES")
    assert pairs == [[b"a", b"1"]]


def test_hdel_removes_fields_and_the_empty_key(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert r.hdel("h", "a", "zz") == 1
    assert r.hdel("h", "b", "c") == 2
    assert r.exists("h") == 0
    assert r.hdel("nokey", "a") == 0
    big = {f"f{i}": "v" for i in range(300)}
    r.hset("big", mapping=big)
    assert r.hdel("big", *big) == 300
    assert r.exists("big") == 0


def test_hincrby_and_hincrbyfloat(r):
    assert r.hincrby("h", "n", 5) == 5
    assert r.hincrby("h", "n", -7) == -2
    r.hset("h", "s", "abc")
    with pytest.raises(redis.ResponseError, match="hash value is not an integer"):
        r.hincrby("h", "s", 1)
    r.hset("h", "max", str(2**63 - 1))
    with pytest.raises(redis.ResponseError, match="overflow"):
        r.hincrby("h", "max", 1)
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("HINCRBY", "h", "n", "x")
    assert float(r.hincrbyfloat("h", "f", 1.5)) == 1.5
    assert r.hincrbyfloat("h", "f", "0.25") == 1.75
    assert r.hget("h", "f") == "1.75"
    with pytest.raises(redis.ResponseError, match="hash value is not a float"):
        r.hincrbyfloat("h", "s", 1)
    with pytest.raises(redis.ResponseError, match="NaN or Infinity"):
        r.execute_command("HINCRBYFLOAT", "h", "f", "inf")


def test_hrandfield_counts(r):
    assert r.hrandfield("nokey") is None
    assert r.hrandfield("nokey", 3) == []
    fields = {f"f{i}": str(i) for i in range(20)}
    r.hset("h", mapping=fields)
    assert r.hrandfield("h") in fields
    got = r.hrandfield("h", 5)
    assert len(got) == 5 and len(set(got)) == 5 and set(got) <= set(fields)
    assert sorted(r.hrandfield("h", 100)) == sorted(fields)
    rep = r.hrandfield("h", -50)
    assert len(rep) == 50 and set(rep) <= set(fields)
    with_values = r.execute_command("HRANDFIELD", "h", 3, "WITHVALUES")
    flat = [x for pair in with_values for x in pair] if isinstance(with_values[0], list) else with_values
    assert len(flat) == 6
    for f, v in zip(flat[::2], flat[1::2]):
        assert fields[f] == v
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("HRANDFIELD", "h", 3, "WITHSCORES")


def test_hscan_returns_every_field(r):
    fields = {f"f{i}": str(i) for i in range(1000)}
    r.hset("h", mapping=fields)
    seen = {}
    cursor = 0
    while True:
        cursor, part = r.hscan("h", cursor, count=50)
        seen.update(part)
        if cursor == 0:
            break
    assert seen == fields
    _, part = r.hscan("h", 0, match="f99*", count=10000)
    assert set(part) == {"f99"} | {f"f99{i}" for i in range(10)}


def test_wrongtype_both_ways(r):
    r.set("s", "v")
    r.hset("h", "a", "1")
    for call in (lambda: r.hset("s", "a", "1"), lambda: r.hget("s", "a"), lambda: r.hgetall("s"),
                 lambda: r.hlen("s"), lambda: r.hincrby("s", "a", 1), lambda: r.hdel("s", "a")):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            call()
    for call in (lambda: r.get("h"), lambda: r.append("h", "x"), lambda: r.incr("h"),
                 lambda: r.strlen("h"), lambda: r.getrange("h", 0, 1), lambda: r.setbit("h", 1, 1),
                 lambda: r.pfadd("h", "x")):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            call()
    assert r.mget("h", "s") == [None, "v"]
    assert r.set("h", "now a string")
    assert r.get("h") == "now a string"


def test_keyspace_commands_cover_hashes(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert r.rename("h", "h2")
    assert r.hgetall("h2") == {"a": "1", "b": "2"}
    assert r.copy("h2", "h3")
    r.hset("h3", "c", "3")
    assert r.hlen("h2") == 2 and r.hlen("h3") == 3
    assert r.expire("h3", 100) and 0 < r.ttl("h3") <= 100
    assert r.scan(0, _type="hash", count=1000)[1] and set(r.scan(0, _type="hash", count=1000)[1]) == {"h2", "h3"}
    r.set("s", "v")
    assert r.scan(0, _type="string", count=1000)[1] == ["s"]
    assert sorted(r.keys("*")) == ["h2", "h3", "s"]
    assert r.memory_usage("h3") > 0
    assert r.delete("h2", "h3") == 2
    r.hset("x", "a", "1")
    r.flushall()
    assert r.exists("x") == 0


def test_arity_and_odd_pairs(r):
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("HSET", "h", "a")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("HSET", "h", "a", "1", "b")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("HMSET", "h", "a", "1", "b")
    assert r.exists("h") == 0
