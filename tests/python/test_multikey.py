"""Multi-key set and sorted-set commands under hostile arguments (issue #27, point 1): repeated
keys, many keys, cardinality limits, mixed encodings and the scores Redis folds, each checked
against what Redis 7.0 answers (every assertion holds under `--peer redis`), and a bound on
time that the copying paths of round two broke (a key list of 1,000 names over two 20,000-member
inputs took seconds per command; Redis answers in well under one)."""

import time

import pytest

from harness import RespError

# A bound far above Redis's time (a few hundred ms on a loaded 2-core machine) and far below
# what the copying paths took (seconds to tens of seconds at these sizes).
TIME_BOUND_S = 3.0


def load_pair(r, prefix, n):
    """Two sets and two sorted sets of `n` members, half shared (scores: the member's number)."""
    p = r.pipeline(transaction=False)
    for name, lo in (("a", 0), ("b", n // 2)):
        members = [f"m:{i}" for i in range(lo, lo + n)]
        for i in range(0, n, 5000):
            p.sadd(f"{prefix}s:{name}", *members[i:i + 5000])
            p.zadd(f"{prefix}z:{name}", {m: lo + i + j for j, m in enumerate(members[i:i + 5000])})
    p.execute()


def redis_double(v: float) -> bytes:
    """A score as Redis 7.0 prints it (`%.17g`, `inf`)."""
    if v == float("inf"):
        return b"inf"
    if v == float("-inf"):
        return b"-inf"
    return (b"%.17g" % v)


def test_repeated_keys_fold_as_redis_folds(raw):
    raw.call("ZADD", "z1", "1.5", "a", 2, "b", 3, "c", "inf", "inf", -7, "neg")
    raw.call("ZADD", "z2", 10, "a", "0.1", "b", "-inf", "inf", 2**52, "neg")
    raw.call("SADD", "s1", "a", "b", "inf", "neg", "x")
    for agg in ("SUM", "MIN", "MAX"):
        for keys, weights in (
            (["z1", "z1", "z1"], None),
            (["z1", "z2", "z1", "z2", "z1"], None),
            (["z1", "z1", "z2"], [2, 2, 0.5]),
            (["z1", "z1", "z1", "z2"], [1, 0, -1, 3]),
            (["z1", "s1", "z1", "s1"], [0, 1, 1e308, 1e308]),
            (["z1"] * 50 + ["z2"] * 50, None),
        ):
            extra = ["AGGREGATE", agg]
            if weights:
                extra = ["WEIGHTS", *(repr(w) for w in weights)] + extra
            for cmd in ("ZINTER", "ZUNION"):
                got = raw.call(cmd, len(keys), *keys, *extra, "WITHSCORES")
                assert not isinstance(got, RespError), got
                n = raw.call(cmd + "STORE", "dst", len(keys), *keys, *extra)
                assert n == len(got) // 2
                assert raw.call("ZRANGE", "dst", 0, -1, "WITHSCORES") == got, (cmd, keys, weights, agg)
    # One key named 400 times: the scores are 400 one-by-one folds, rounding at every step where
    # the sum is not exact (0.1), or past 2^53 (2^52 + 1).
    raw.call("ZADD", "big", 2**52 + 1, "m", "0.1", "f", "-2.5", "z", 3, "three")
    want = []
    for member, score in ((b"z", -2.5), (b"f", 0.1), (b"three", 3.0), (b"m", float(2**52 + 1))):
        acc = score
        for _ in range(399):
            acc += score
        want.append((acc, member))
    want.sort(key=lambda p: (p[0], p[1]))
    flat = [x for acc, m in want for x in (m, redis_double(acc))]
    assert raw.call("ZINTER", 400, *(["big"] * 400), "WITHSCORES") == flat
    assert raw.call("ZUNION", 400, *(["big"] * 400), "WITHSCORES") == flat
    assert raw.call("ZINTER", 400, *(["big"] * 400), "AGGREGATE", "MIN", "WITHSCORES") == raw.call(
        "ZRANGE", "big", 0, -1, "WITHSCORES")


def test_repeated_keys_sets(r):
    r.sadd("a", *range(100), "x", "y")
    r.sadd("b", *range(50, 150))
    r.sadd("ints", 1, 2, 3)
    assert r.sinter("a", "a", "a") == r.smembers("a")
    assert r.sinter("a", "b", "a", "b") == {str(i) for i in range(50, 100)}
    assert r.sintercard(4, ["a", "b", "a", "b"]) == 50
    assert r.sintercard(4, ["a", "b", "a", "b"], limit=7) == 7
    assert r.sintercard(2, ["a", "nokey"]) == 0
    assert r.sunion("a", "a", "b", "b") == r.smembers("a") | r.smembers("b")
    # A later key naming the first removes everything (Redis's `sameset`).
    assert r.sdiff("a", "b", "a") == set()
    assert r.sdiffstore("d", ["a", "b", "a"]) == 0 and r.exists("d") == 0
    assert r.sdiff("a", "b", "b", "nokey") == {str(i) for i in range(50)} | {"x", "y"}
    assert r.sdiff("ints", "a", "a") == set()
    assert r.sinterstore("d", ["ints", "a", "ints"]) == 3
    assert r.object("encoding", "d") == "intset"
    assert r.sunionstore("d", ["ints", "ints"]) == 3 and r.object("encoding", "d") == "intset"
    # Many small inputs against one large first set (the copy-and-remove algorithm).
    r.sadd("big", *range(10000))
    smalls = []
    for i in range(50):
        r.sadd(f"small{i}", i * 3, i * 3 + 1, "nope")
        smalls.append(f"small{i}")
    want = {str(i) for i in range(10000)} - {str(v) for i in range(50) for v in (i * 3, i * 3 + 1)}
    assert r.sdiff("big", *smalls) == want
    assert r.sdiffstore("d", ["big", *smalls]) == len(want)
    # Intset against hash table, both ways.
    r.sadd("mixed", "1", "2", "two", "99")
    assert r.sinter("ints", "mixed") == {"1", "2"}
    assert r.sinter("mixed", "ints") == {"1", "2"}
    assert r.sdiff("mixed", "ints") == {"two", "99"}
    assert r.sdiff("ints", "mixed") == {"3"}


def test_zdiff_and_intercard_with_repeats(r):
    r.zadd("z1", {f"m{i}": i for i in range(300)})
    r.zadd("z2", {f"m{i}": -i for i in range(100, 400)})
    r.sadd("s", *(f"m{i}" for i in range(0, 300, 2)))
    assert r.zdiff(["z1", "z2", "z1"]) == []
    assert r.zdiff(["z1", "z2", "z2", "nokey"]) == [f"m{i}" for i in range(100)]
    assert r.zdiffstore("d", ["z1", "z2", "z2"]) == 100
    assert r.zscore("d", "m99") == 99.0
    assert r.zdiff(["s", "z1"]) == []
    assert len(r.zdiff(["s", "z2"])) == 50
    assert r.zintercard(4, ["z1", "z2", "z1", "z2"]) == 200
    assert r.zintercard(4, ["z1", "z2", "z1", "z2"], limit=33) == 33
    assert r.zintercard(3, ["z1", "s", "z2"]) == 100
    assert r.zintercard(2, ["z1", "nokey"]) == 0
    r.set("str", "v")
    with pytest.raises(Exception, match="WRONGTYPE"):
        r.zintercard(3, ["z1", "z1", "str"])
    with pytest.raises(Exception, match="WRONGTYPE"):
        r.sinter("s", "s", "str")


@pytest.mark.parametrize("cmd", ["ZINTERCARD", "ZINTERSTORE", "ZINTER", "SINTERCARD", "SINTERSTORE",
                                 "SUNIONSTORE", "ZUNIONSTORE", "SDIFFSTORE", "ZDIFFSTORE"])
def test_a_thousand_keys_stay_fast(r, peer, cmd):
    # Redis adds a union's repeated keys one by one (1,000 x 20,000 adds: past the client's
    # 10 s timeout), so the time bound of the unions is Locus's own; their results are checked
    # against Redis all the same, over 100 names.
    timed = not (peer == "redis" and "UNION" in cmd)
    n = 20_000
    load_pair(r, "t", n)
    z = cmd.startswith("Z")
    for shape in ("alt", "one"):
        names = ["a", "b"] if shape == "alt" else ["a"]
        keys = [f"t{'z' if z else 's'}:{names[i % len(names)]}" for i in range(1000 if timed else 100)]
        args = [cmd]
        if cmd.endswith("STORE"):
            args.append("dst")
        if z or cmd == "SINTERCARD":
            args.append(len(keys))
        args += keys
        t0 = time.monotonic()
        got = r.execute_command(*args)
        took = time.monotonic() - t0
        assert not isinstance(got, RespError)
        assert took < TIME_BOUND_S or not timed, f"{cmd} over 1000 keys ({shape}) took {took:.2f} s"
        if cmd in ("ZINTERCARD", "SINTERCARD", "ZINTERSTORE", "SINTERSTORE"):
            assert got == (n // 2 if shape == "alt" else n)
        if cmd in ("SUNIONSTORE", "ZUNIONSTORE"):
            assert got == (n + n // 2 if shape == "alt" else n)


def test_hyperloglog_unions_with_repeated_keys(r):
    r.pfadd("h1", *(f"a{i}" for i in range(3000)))
    r.pfadd("h2", *(f"b{i}" for i in range(50)))
    r.pfadd("h3", *(f"a{i}" for i in range(1000)))
    once = r.pfcount("h1", "h2", "h3")
    assert r.pfcount(*(["h1", "h2", "h3", "nokey"] * 300)) == once
    assert r.pfmerge("dst", *(["h2", "h1", "h3"] * 300)) is True
    assert r.pfcount("dst") == once
    r.set("str", "not an hll")
    with pytest.raises(Exception, match="WRONGTYPE"):
        r.pfcount("h1", "h1", "str", "h1")
