"""SSCAN, HSCAN and ZSCAN over large collections (the hashtable / skiplist encodings): a call
looks at about COUNT entries and hands back a cursor, rather than the whole collection in one reply
(which would be built under the engine lock, a stall one tenant could impose on the others), and a
walk returns every element present from its first call to its last, while elements are removed
and added in between (Redis's SCAN guarantee). Every assertion holds against redis-server 7.0 as
well (`--peer redis`)."""

import random

import pytest

N = 5000


def fill(r, kind, key, names):
    if kind == "set":
        r.sadd(key, *names)
    elif kind == "hash":
        r.hset(key, mapping={n: "v" + n for n in names})
    else:
        r.zadd(key, {n: i for i, n in enumerate(names)})


def scan(r, kind, key, cursor, **kw):
    if kind == "set":
        return r.sscan(key, cursor, **kw)
    if kind == "hash":
        c, part = r.hscan(key, cursor, **kw)
        return c, list(part)
    c, part = r.zscan(key, cursor, **kw)
    return c, [m for m, _ in part]


def remove(r, kind, key, names):
    if kind == "set":
        r.srem(key, *names)
    elif kind == "hash":
        r.hdel(key, *names)
    else:
        r.zrem(key, *names)


@pytest.mark.parametrize("kind", ["set", "hash", "zset"])
def test_a_large_collection_is_scanned_a_count_at_a_time(r, kind):
    names = [f"e{i}" for i in range(N)]
    fill(r, kind, "k", names)
    cursor, part = scan(r, kind, "k", 0, count=10)
    assert cursor != 0
    assert 0 < len(part) < 100
    seen, calls = set(part), 1
    while cursor != 0:
        cursor, part = scan(r, kind, "k", cursor, count=100)
        seen.update(part)
        calls += 1
        assert calls < 10 * N
    assert seen == set(names)
    assert calls > 10


@pytest.mark.parametrize("kind", ["set", "hash", "zset"])
def test_a_walk_returns_every_element_present_throughout_under_writes(r, kind):
    rng = random.Random(7)
    names = [f"e{i}" for i in range(N)]
    fill(r, kind, "k", names)
    removed, added = set(), 0
    cursor, seen = 0, set()
    while True:
        cursor, part = scan(r, kind, "k", cursor, count=rng.randint(5, 60))
        seen.update(part)
        if cursor == 0:
            break
        gone = rng.sample(names, 20)
        remove(r, kind, "k", gone)
        removed.update(gone)
        fill(r, kind, "k", [f"n{added + i}" for i in range(10)])
        added += 10
    stayed = set(names) - removed
    assert stayed <= seen
    assert len(removed) > N // 10


@pytest.mark.parametrize("kind", ["set", "hash", "zset"])
def test_match_filters_each_step(r, kind):
    names = [f"e{i}" for i in range(N)]
    fill(r, kind, "k", names)
    cursor, seen = 0, set()
    while True:
        cursor, part = scan(r, kind, "k", cursor, count=200, match="e1*")
        assert all(p.startswith("e1") for p in part)
        seen.update(part)
        if cursor == 0:
            break
    assert seen == {n for n in names if n.startswith("e1")}
