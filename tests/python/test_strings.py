"""String commands through redis-py, RESP2 and RESP3: every SET option, the counters and ranges."""

import random
import re
import time

import pytest
from redis.exceptions import ResponseError

from harness import wait_until


def raises(msg):
    """pytest.raises for a ResponseError whose text (code stripped by redis-py) is exactly `msg`."""
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def test_set_get_basic(r):
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.get("missing") is None
    assert r.set("k", "") is True
    assert r.get("k") == ""


def test_binary_safe_values(rb):
    value = bytes(range(256)) * 4 + b"\r\n\x00*3\r\n$"
    key = b"\x00bin\r\nkey\xff"
    assert rb.set(key, value)
    assert rb.get(key) == value
    assert rb.strlen(key) == len(value)


def test_large_value(rb):
    value = b"x" * (512 * 1024)
    assert rb.set("big", value)
    assert rb.get("big") == value


def test_set_ex_px(r):
    assert r.set("k", "v", ex=100)
    assert 98 <= r.ttl("k") <= 100
    assert r.set("k", "v", px=100_000)
    assert 98_000 <= r.pttl("k") <= 100_000


def test_set_exat_pxat(r):
    at = int(time.time()) + 100
    assert r.set("k", "v", exat=at)
    assert r.expiretime("k") == at
    assert r.set("k2", "v", pxat=at * 1000 + 123)
    assert r.pexpiretime("k2") == at * 1000 + 123


def test_set_exat_in_the_past_deletes(r):
    r.set("k", "old")
    assert r.set("k", "v", exat=1)
    assert r.get("k") is None
    assert r.exists("k") == 0


@pytest.mark.parametrize("opt", ["EX", "PX", "EXAT", "PXAT"])
@pytest.mark.parametrize("bad", ["0", "-5"])
def test_set_invalid_expire(r, opt, bad):
    with raises("invalid expire time in 'set' command"):
        r.execute_command("SET", "k", "v", opt, bad)
    assert r.get("k") is None


def test_set_expire_not_integer(r):
    with raises("value is not an integer or out of range"):
        r.execute_command("SET", "k", "v", "EX", "abc")


@pytest.mark.parametrize("args", [
    ["NX", "XX"], ["EX", "10", "PX", "100"], ["EX", "10", "KEEPTTL"], ["EX"], ["FOO"],
    ["PX", "10", "EXAT", "10"],
])
def test_set_syntax_errors(r, args):
    with raises("syntax error"):
        r.execute_command("SET", "k", "v", *args)


def test_set_nx_xx(r):
    assert r.set("k", "a", xx=True) is None
    assert r.get("k") is None
    assert r.set("k", "a", nx=True) is True
    assert r.set("k", "b", nx=True) is None
    assert r.get("k") == "a"
    assert r.set("k", "c", xx=True) is True
    assert r.get("k") == "c"


def test_set_get_option(r):
    assert r.set("k", "a", get=True) is None
    assert r.set("k", "b", get=True) == "a"
    assert r.get("k") == "b"
    # NX together with GET: returns the old value and does not overwrite
    assert r.set("k", "c", nx=True, get=True) == "b"
    assert r.get("k") == "b"
    assert r.set("k", "d", xx=True, get=True) == "b"
    assert r.get("k") == "d"


def test_set_keepttl(r):
    r.set("k", "a", ex=100)
    assert r.set("k", "b", keepttl=True)
    assert 98 <= r.ttl("k") <= 100
    assert r.set("k", "c")  # plain SET drops the TTL
    assert r.ttl("k") == -1


def test_setnx_setex_psetex(r):
    assert r.setnx("k", "a") is True
    assert r.setnx("k", "b") is False
    assert r.get("k") == "a"
    assert r.setex("k", 50, "s")
    assert r.get("k") == "s" and 48 <= r.ttl("k") <= 50
    assert r.psetex("p", 50_000, "s")
    assert 48_000 <= r.pttl("p") <= 50_000
    with raises("invalid expire time in 'setex' command"):
        r.setex("k", 0, "v")
    with raises("invalid expire time in 'psetex' command"):
        r.psetex("k", -1, "v")


def test_getset_getdel(r):
    assert r.getset("k", "a") is None
    r.expire("k", 100)
    assert r.getset("k", "b") == "a"
    assert r.ttl("k") == -1  # GETSET drops the TTL
    assert r.getdel("k") == "b"
    assert r.exists("k") == 0
    assert r.getdel("k") is None


def test_getex(r):
    r.set("k", "v")
    assert r.getex("k") == "v"
    assert r.ttl("k") == -1
    assert r.getex("k", ex=100) == "v"
    assert 98 <= r.ttl("k") <= 100
    assert r.getex("k", px=200_000) == "v"
    assert 198_000 <= r.pttl("k") <= 200_000
    at = int(time.time()) + 300
    assert r.getex("k", exat=at) == "v"
    assert r.expiretime("k") == at
    assert r.getex("k", pxat=at * 1000 + 7) == "v"
    assert r.pexpiretime("k") == at * 1000 + 7
    assert r.getex("k", persist=True) == "v"
    assert r.ttl("k") == -1
    assert r.getex("missing", ex=10) is None
    with raises("syntax error"):
        r.execute_command("GETEX", "k", "PERSIST", "EX", "1")
    with raises("invalid expire time in 'getex' command"):
        r.execute_command("GETEX", "k", "EX", "0")
    # Redis looks the key up before validating the expire time: a missing key is just nil
    assert r.execute_command("GETEX", "missing", "PX", "0") is None


def test_mget_mset_msetnx(r):
    assert r.mset({"a": "1", "b": "2", "c": "3"})
    assert r.mget("a", "b", "missing", "c") == ["1", "2", None, "3"]
    assert r.msetnx({"c": "x", "d": "4"}) is False  # all-or-nothing
    assert r.get("d") is None and r.get("c") == "3"
    assert r.msetnx({"d": "4", "e": "5"}) is True
    assert r.mget("d", "e") == ["4", "5"]
    with raises("wrong number of arguments for 'mset' command"):
        r.execute_command("MSET", "a", "1", "b")
    with raises("wrong number of arguments for 'msetnx' command"):
        r.execute_command("MSETNX", "a")
    # later duplicates win
    r.mset({"z": "1"})
    r.execute_command("MSET", "z", "1", "z", "2")
    assert r.get("z") == "2"


def test_append_strlen(r):
    assert r.strlen("k") == 0
    assert r.append("k", "Hello") == 5
    assert r.append("k", " World") == 11
    assert r.get("k") == "Hello World"
    assert r.strlen("k") == 11
    r.expire("k", 100)
    r.append("k", "!")
    assert r.ttl("k") > 0  # APPEND keeps the TTL


def test_getrange(r):
    r.set("k", "This is a string")
    assert r.getrange("k", 0, 3) == "This"
    assert r.getrange("k", -3, -1) == "ing"
    assert r.getrange("k", 0, -1) == "This is a string"
    assert r.getrange("k", 10, 100) == "string"
    assert r.getrange("k", 5, 3) == ""
    assert r.getrange("k", -100, 3) == "This"
    assert r.getrange("missing", 0, 10) == ""
    with raises("value is not an integer or out of range"):
        r.execute_command("GETRANGE", "k", "a", "1")


def test_setrange(r):
    r.set("k", "Hello World")
    assert r.setrange("k", 6, "Redis") == 11
    assert r.get("k") == "Hello Redis"
    assert r.setrange("pad", 5, "x") == 6
    assert r.get("pad") == "\x00" * 5 + "x"
    assert r.setrange("empty", 3, "") == 0  # empty value on a missing key creates nothing
    assert r.exists("empty") == 0
    with raises("offset is out of range"):
        r.setrange("k", -1, "x")
    with raises("string exceeds maximum allowed size (proto-max-bulk-len)"):
        r.setrange("k", 512 * 1024 * 1024, "x")


def test_incr_decr(r):
    assert r.incr("n") == 1
    assert r.incr("n") == 2
    assert r.decr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decrby("n", 20) == -9
    assert r.get("n") == "-9"
    assert r.decr("neg") == -1
    r.set("t", "5", ex=100)
    assert r.incr("t") == 6
    assert r.ttl("t") > 0  # counters keep the TTL


@pytest.mark.parametrize("value", ["abc", "1.5", " 1", "1 ", "", "0x10", "99999999999999999999", "+-1"])
def test_incr_not_integer(r, value):
    r.set("k", value)
    with raises("value is not an integer or out of range"):
        r.incr("k")
    assert r.get("k") == value


def test_incrby_bad_increment(r):
    with raises("value is not an integer or out of range"):
        r.incrby("k", "1.5")
    with raises("value is not an integer or out of range"):
        r.execute_command("INCRBY", "k", "abc")
    assert r.exists("k") == 0


def test_incr_overflow(r):
    r.set("max", str(2**63 - 1))
    with raises("increment or decrement would overflow"):
        r.incr("max")
    r.set("min", str(-(2**63)))
    with raises("increment or decrement would overflow"):
        r.decr("min")
    with raises("increment or decrement would overflow"):
        r.incrby("max", 1)
    with raises("decrement would overflow"):
        r.execute_command("DECRBY", "x", str(-(2**63)))
    assert r.get("max") == str(2**63 - 1)
    assert r.incrby("min", 2**63 - 1) == -1


def test_incrbyfloat(r):
    r.set("f", "10.50")
    assert float(r.incrbyfloat("f", 0.1)) == pytest.approx(10.6)
    assert r.get("f") == "10.6"
    r.set("g", "5.0e3")
    r.incrbyfloat("g", "2.0e2")
    assert r.get("g") == "5200"
    assert r.incrbyfloat("h", 3) == 3.0
    assert r.get("h") == "3"
    r.set("i", "3")
    r.incrbyfloat("i", -1.5)
    assert r.get("i") == "1.5"


def test_incrbyfloat_formatting_as_redis(r):
    """Redis computes in long double and prints with 17 decimals, trailing zeros trimmed, never with
    an exponent: 0.2 + 0.1 is "0.3", 1e20 is written out, and a result that is integral stays usable
    by INCR."""
    r.set("f", "0.2")
    assert r.incrbyfloat("f", "0.1") == 0.3
    assert r.get("f") == "0.3"
    for key, incr, want in [("big", "1e20", "100000000000000000000"), ("e17", "1e17", "100000000000000000"),
                            ("tiny", "1e-20", "0"), ("third", "0.333333333333333333", "0.33333333333333333")]:
        r.incrbyfloat(key, incr)
        assert r.get(key) == want, (key, incr)
    assert r.incr("e17") == 100000000000000001


def test_incrbyfloat_errors(r):
    r.set("s", "abc")
    with raises("value is not a valid float"):
        r.incrbyfloat("s", 1)
    with raises("value is not a valid float"):
        r.execute_command("INCRBYFLOAT", "n", "abc")
    with raises("increment would produce NaN or Infinity"):
        r.execute_command("INCRBYFLOAT", "n", "inf")
    assert r.exists("n") == 0


def test_wrong_arity(r):
    with raises("wrong number of arguments for 'get' command"):
        r.execute_command("GET")
    with raises("wrong number of arguments for 'set' command"):
        r.execute_command("SET", "k")
    with raises("wrong number of arguments for 'incr' command"):
        r.execute_command("INCR", "a", "b")


def test_set_px_expires(r):
    t0 = time.monotonic()
    r.set("short", "v", px=50)
    wait_until(lambda: r.get("short") is None, timeout=3, what="PX 50 key to expire")
    assert time.monotonic() - t0 >= 0.045


def test_lcs(raw):
    # The example of Redis's LCS documentation.
    raw.call("MSET", "key1", "ohmytext", "key2", "mynewtext")
    assert raw.call("LCS", "key1", "key2") == b"mytext"
    assert raw.call("LCS", "key1", "key2", "LEN") == 6
    assert raw.call("LCS", "key1", "key2", "IDX") == \
        [b"matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], b"len", 6]
    assert raw.call("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN") == \
        [b"matches", [[[4, 7], [5, 8], 4]], b"len", 6]
    assert raw.call("LCS", "key1", "missing") == b""
    assert raw.call("LCS", "key1", "missing", "IDX") == [b"matches", [], b"len", 0]
    assert raw.call("LCS", "key1", "key2", "LEN", "IDX") == \
        "ERR If you want both the length and indexes, please just use IDX."
    assert raw.call("LCS", "key1", "key2", "FOO") == "ERR syntax error"
    assert raw.call("LCS", "key1") == "ERR wrong number of arguments for 'lcs' command"


def test_lcs_is_a_longest_common_subsequence(r):
    rng = random.Random(7)
    for _ in range(40):
        a = "".join(rng.choice("ACGT") for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice("ACGT") for _ in range(rng.randint(0, 40)))
        r.mset({"a": a, "b": b})
        got = r.execute_command("LCS", "a", "b")
        got = got.decode() if isinstance(got, bytes) else got
        # A subsequence of both, as long as the dynamic programme's answer.
        for s in (a, b):
            it = iter(s)
            assert all(ch in it for ch in got), (a, b, got)
        n = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                n[i][j] = n[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(n[i - 1][j], n[i][j - 1])
        assert len(got) == n[len(a)][len(b)] == r.execute_command("LCS", "a", "b", "LEN")


@pytest.mark.locus_only
def test_lcs_transient_table_is_bounded(raw):
    # Two 5 KB strings need a 100 MB table: over Locus's 64 MiB bound (Redis bounds it only by
    # proto-max-bulk-len), refused before anything is allocated.
    raw.call("MSET", "big1", "a" * 5000, "big2", "b" * 5000)
    assert raw.call("LCS", "big1", "big2").startswith(
        "ERR Insufficient memory, transient memory for LCS exceeds Locus's limit of 64 MiB")
    raw.call("MSET", "big1", "a" * 3000, "big2", "a" * 3000)
    assert raw.call("LCS", "big1", "big2", "LEN") == 3000
    raw.call("DEL", "big1", "big2")
