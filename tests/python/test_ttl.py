"""TTLs: EXPIRE family with NX/XX/GT/LT, TTL/PTTL/EXPIRETIME/PEXPIRETIME/PERSIST, and real expiry
(lazy on access and active, observed by polling with a deadline)."""

import re
import time

import pytest
from redis.exceptions import ResponseError

from harness import wait_until


def raises(msg):
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def test_ttl_states(r):
    assert r.ttl("missing") == -2
    assert r.pttl("missing") == -2
    assert r.expiretime("missing") == -2
    assert r.pexpiretime("missing") == -2
    r.set("k", "v")
    assert r.ttl("k") == -1
    assert r.pttl("k") == -1
    assert r.expiretime("k") == -1
    assert r.pexpiretime("k") == -1


def test_expire_pexpire(r):
    assert r.expire("missing", 10) is False
    r.set("k", "v")
    assert r.expire("k", 100) is True
    assert 98 <= r.ttl("k") <= 100
    assert r.pexpire("k", 50_000) is True
    assert 48_000 <= r.pttl("k") <= 50_000
    now = time.time()
    assert abs(r.expiretime("k") - (now + 50)) <= 2


def test_expireat_pexpireat(r):
    r.set("k", "v")
    at = int(time.time()) + 1000
    assert r.expireat("k", at) is True
    assert r.expiretime("k") == at
    assert r.pexpireat("k", at * 1000 + 500) is True
    assert r.pexpiretime("k") == at * 1000 + 500
    assert r.expiretime("k") == at + 1  # rounded to the nearest second, as Redis
    assert r.expireat("missing", at) is False


@pytest.mark.parametrize("cmd", ["EXPIRE", "PEXPIRE"])
def test_expire_non_positive_deletes(r, cmd):
    r.set("k", "v")
    assert r.execute_command(cmd, "k", "0") == 1
    assert r.exists("k") == 0
    r.set("k", "v")
    assert r.execute_command(cmd, "k", "-10") == 1
    assert r.get("k") is None


def test_expireat_in_the_past_deletes(r):
    r.set("k", "v")
    assert r.expireat("k", 1) is True
    assert r.exists("k") == 0
    r.set("k", "v")
    assert r.pexpireat("k", 1000) is True
    assert r.exists("k") == 0


def test_expire_nx_xx(r):
    r.set("k", "v")
    assert r.expire("k", 100, xx=True) is False  # XX: only when a TTL exists
    assert r.ttl("k") == -1
    assert r.expire("k", 100, nx=True) is True  # NX: only when no TTL exists
    assert r.expire("k", 200, nx=True) is False
    assert r.ttl("k") <= 100
    assert r.expire("k", 200, xx=True) is True
    assert r.ttl("k") > 100


def test_expire_gt_lt(r):
    r.set("k", "v")
    # a key without TTL has an infinite TTL: GT never applies, LT always does
    assert r.expire("k", 100, gt=True) is False
    assert r.ttl("k") == -1
    assert r.expire("k", 100, lt=True) is True
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 200, gt=True) is True
    assert r.ttl("k") > 100
    assert r.expire("k", 300, lt=True) is False
    assert r.expire("k", 10, lt=True) is True
    assert r.ttl("k") <= 10
    assert r.pexpire("k", 5_000, gt=True) is False
    assert r.pexpire("k", 500_000, gt=True) is True
    at = int(time.time()) + 10
    assert r.expireat("k", at, lt=True) is True
    assert r.expiretime("k") == at
    assert r.pexpireat("k", at * 1000 + 60_000, gt=True) is True
    assert r.execute_command("EXPIRE", "k", "100", "XX", "GT") == 1


@pytest.mark.parametrize("opts,msg", [
    (["NX", "XX"], "NX and XX, GT or LT options at the same time are not compatible"),
    (["NX", "GT"], "NX and XX, GT or LT options at the same time are not compatible"),
    (["GT", "LT"], "GT and LT options at the same time are not compatible"),
    (["FOO"], "Unsupported option FOO"),
])
def test_expire_option_errors(r, opts, msg):
    r.set("k", "v")
    with raises(msg):
        r.execute_command("EXPIRE", "k", "100", *opts)
    assert r.ttl("k") == -1


def test_expire_errors(r):
    r.set("k", "v")
    with raises("value is not an integer or out of range"):
        r.execute_command("EXPIRE", "k", "abc")
    with raises("invalid expire time in 'expire' command"):
        r.execute_command("EXPIRE", "k", str(2**63 - 1))
    with raises("invalid expire time in 'pexpire' command"):
        r.execute_command("PEXPIRE", "k", str(2**63 - 1))
    assert r.get("k") == "v"


def test_persist(r):
    assert r.persist("missing") is False
    r.set("k", "v")
    assert r.persist("k") is False
    r.expire("k", 100)
    assert r.persist("k") is True
    assert r.ttl("k") == -1


def test_overwrite_clears_ttl_but_modify_keeps_it(r):
    r.set("k", "1", ex=100)
    r.incr("k")
    r.append("k", "0")
    r.setrange("k", 0, "3")
    assert r.ttl("k") > 0
    r.set("k", "x")
    assert r.ttl("k") == -1
    r.set("k", "1", ex=100)
    r.getset("k", "2")
    assert r.ttl("k") == -1
    r.set("k", "1", ex=100)
    r.mset({"k": "2"})
    assert r.ttl("k") == -1


def test_lazy_expiry_on_access(r):
    t0 = time.monotonic()
    r.set("k", "v", px=50)
    r.set("forever", "v")
    # GET, EXISTS, TTL all see the key disappear once its 50 ms are over
    wait_until(lambda: r.get("k") is None, timeout=3, what="GET to miss")
    assert time.monotonic() - t0 >= 0.045
    assert r.exists("k") == 0
    assert r.ttl("k") == -2
    assert r.get("forever") == "v"


def test_pexpire_expiry_visible_to_all_commands(r):
    r.mset({"a": "1", "b": "2"})
    r.pexpire("a", 50)
    wait_until(lambda: r.exists("a") == 0, timeout=3, what="EXISTS to return 0")
    assert r.mget("a", "b") == [None, "2"]
    assert r.keys("*") == ["b"]
    assert r.incr("a") == 1  # an expired key is a missing key: a fresh counter


def test_active_expiry_without_access(r):
    """Keys nobody touches again are still reclaimed (active sweep): DBSIZE drops to 0."""
    r.set("keep", "v")
    with r.pipeline(transaction=False) as p:
        for i in range(200):
            p.set(f"short:{i}", "v", px=50)
        p.execute()
    # DBSIZE counts keys not yet reclaimed; it must reach 1 without touching the expired keys
    wait_until(lambda: r.dbsize() == 1, timeout=10, what="active expiry to reclaim 200 keys")
    info = r.info("stats")
    assert info["expired_keys"] >= 200


def test_a_one_ms_ttl_is_stored_and_then_expires(r):
    """SET ... PX 1 stores the key, which then expires (one more expired_keys each), even when the
    clock's millisecond turns while the SET runs: the command reads the time once (Redis freezes
    it for a command), so the TTL it computes never counts as already past."""
    before = r.info("stats")["expired_keys"]
    n = 20_000
    with r.pipeline(transaction=False) as p:
        for i in range(n):
            p.set(f"ms:{i}", "v", px=1)
        p.execute()
    time.sleep(0.01)
    # Each key read after its TTL expires then (lazily, or the active sweep got there first).
    with r.pipeline(transaction=False) as p:
        for i in range(n):
            p.exists(f"ms:{i}")
        assert sum(p.execute()) == 0
    assert r.dbsize() == 0
    assert r.info("stats")["expired_keys"] - before == n


def test_info_keyspace_counts_expires(r):
    r.mset({"a": "1", "b": "2", "c": "3"})
    r.expire("a", 1000)
    ks = r.info("keyspace")
    assert ks["db0"]["keys"] == 3
    assert ks["db0"]["expires"] == 1
