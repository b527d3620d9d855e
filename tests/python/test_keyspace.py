"""Keyspace commands: DEL UNLINK EXISTS TYPE KEYS SCAN RANDOMKEY RENAME RENAMENX."""

import re

import pytest
from redis.exceptions import ResponseError


def raises(msg):
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def test_del_unlink_exists(r):
    r.mset({"a": "1", "b": "2", "c": "3"})
    assert r.exists("a", "a", "missing", "b") == 3  # duplicates count twice
    assert r.delete("a", "missing") == 1
    assert r.unlink("b", "c", "b") == 2
    assert r.exists("a", "b", "c") == 0
    assert r.delete("nothing") == 0


def test_type(r):
    r.set("s", "v")
    assert r.type("s") == "string"
    assert r.type("missing") == "none"


@pytest.mark.parametrize("pattern,expected", [
    ("*", {"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "foo:1", "foo:22"}),
    ("h?llo", {"hello", "hallo", "hxllo", "h*llo"}),
    ("h*llo", {"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo"}),
    ("h[ae]llo", {"hello", "hallo"}),
    ("h[^e]llo", {"hallo", "hxllo", "h*llo"}),
    ("h[a-b]llo", {"hallo"}),
    ("h\\*llo", {"h*llo"}),
    ("foo:?", {"foo:1"}),
    ("foo:*", {"foo:1", "foo:22"}),
    ("nomatch*", set()),
])
def test_keys_patterns(r, pattern, expected):
    for k in ["hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "foo:1", "foo:22"]:
        r.set(k, "v")
    assert set(r.keys(pattern)) == expected
    assert len(r.keys(pattern)) == len(expected)


def _scan_all(r, **kw):
    seen, cursor, rounds = [], 0, 0
    while True:
        cursor, keys = r.scan(cursor=cursor, **kw)
        seen.extend(keys)
        rounds += 1
        assert rounds < 10_000, "SCAN never returned cursor 0"
        if int(cursor) == 0:
            return seen, rounds


def test_scan_full_iteration(r):
    keys = {f"key:{i}" for i in range(1000)}
    r.mset({k: "v" for k in keys})
    seen, rounds = _scan_all(r, count=10)
    assert set(seen) == keys  # every key present for the whole scan is returned
    assert rounds > 5  # COUNT bounds the work per call: many rounds for 1000 keys


def test_scan_match_and_count(r):
    r.mset({f"user:{i}": "v" for i in range(300)})
    r.mset({f"item:{i}": "v" for i in range(300)})
    seen, _ = _scan_all(r, match="user:1*", count=50)
    assert set(seen) == {f"user:{i}" for i in range(300) if str(i).startswith("1")}
    seen, _ = _scan_all(r, match="nothing*", count=1000)
    assert seen == []


def test_scan_type_filter(r):
    r.mset({f"s{i}": "v" for i in range(50)})
    seen, _ = _scan_all(r, _type="string", count=100)
    assert set(seen) == {f"s{i}" for i in range(50)}
    seen, _ = _scan_all(r, _type="hash", count=100)
    assert seen == []


def test_scan_iter_empty_and_errors(r):
    assert r.scan(0) == (0, [])
    with raises("invalid cursor"):
        r.execute_command("SCAN", "abc")
    with raises("syntax error"):
        r.execute_command("SCAN", "0", "COUNT", "0")
    with raises("syntax error"):
        r.execute_command("SCAN", "0", "BOGUS", "1")


def test_randomkey(r):
    assert r.randomkey() is None
    r.mset({"a": "1", "b": "2", "c": "3"})
    got = {r.randomkey() for _ in range(50)}
    assert got <= {"a", "b", "c"} and got


def test_rename(r):
    r.set("a", "1", ex=100)
    assert r.rename("a", "b")
    assert r.get("a") is None and r.get("b") == "1"
    assert r.ttl("b") > 0  # the TTL moves with the key
    r.set("c", "3")
    assert r.rename("b", "c")  # overwrites
    assert r.get("c") == "1"
    assert r.rename("c", "c")  # same name: OK, value kept
    assert r.get("c") == "1"
    with raises("no such key"):
        r.rename("missing", "x")


def test_renamenx(r):
    r.mset({"a": "1", "b": "2"})
    assert r.renamenx("a", "b") is False
    assert r.get("a") == "1" and r.get("b") == "2"
    assert r.renamenx("a", "c") is True
    assert r.get("c") == "1" and r.exists("a") == 0
    with raises("no such key"):
        r.renamenx("missing", "x")


def test_scan_returns_every_stable_key_while_the_keyspace_grows(r):
    """SCAN's guarantee: a key present from start to end of the iteration is returned, even if the
    table grows (rehashes) in between."""
    stable = {f"stable:{i}" for i in range(1000)}
    r.mset({k: "v" for k in stable})
    seen, cursor, rounds, added = set(), 0, 0, 0
    while True:
        cursor, keys = r.scan(cursor=cursor, count=20)
        seen.update(keys)
        rounds += 1
        if added < 20_000:
            r.mset({f"new:{added + i}": "v" for i in range(500)})
            added += 500
        if added >= 1000 and rounds % 3 == 0:
            r.delete(*[f"new:{i}" for i in range(added - 1000, added - 500)])
        assert rounds < 100_000
        if int(cursor) == 0:
            break
    missing = stable - seen
    assert not missing, f"{len(missing)} stable keys never returned, e.g. {sorted(missing)[:5]}"


def test_touch(r):
    r.mset({"a": "1", "b": "2"})
    assert r.touch("a", "b", "missing", "a") == 3
    assert r.touch("missing") == 0


def test_copy(r):
    r.set("src", "v", ex=100)
    assert r.copy("src", "dst") is True
    assert r.get("dst") == "v" and 0 < r.ttl("dst") <= 100
    assert r.copy("src", "dst") is False  # exists, no REPLACE
    r.set("src", "w")
    assert r.copy("src", "dst", replace=True) is True
    assert r.get("dst") == "w" and r.ttl("dst") == -1  # no TTL copied from a key without one
    r.set("dst", "changed")
    assert r.get("src") == "w"  # the copy is independent
    assert r.copy("missing", "dst", replace=True) is False
    assert r.get("dst") == "changed"
    with pytest.raises(ResponseError, match="source and destination objects are the same"):
        r.copy("src", "src")
    with pytest.raises(ResponseError, match="not an integer or out of range"):
        r.execute_command("COPY", "src", "x", "DB", "notanumber")
    with pytest.raises(ResponseError, match="syntax error"):
        r.execute_command("COPY", "src", "x", "REPLACE", "EXTRA")
    with pytest.raises(ResponseError, match="DB index is out of range"):
        r.execute_command("COPY", "src", "x", "DB", "-1")
