"""Real frameworks whose Redis support is built on Lua scripts, against the real server (and,
with `--peer redis`, against redis-server 7.0 so that every assertion is Redis's behaviour):
redis-py's `Lock` (sync and asyncio: acquire, extend, reacquire, release, and the errors when
the lock is not owned) and the `limits` rate limiter's fixed, moving and sliding windows with
Redis storage."""

import asyncio
import time

import pytest
import redis
import redis.asyncio
from redis.exceptions import LockError, LockNotOwnedError

from conftest import no_retry
from harness import HOST


@pytest.fixture
def rc(server):
    c = redis.Redis(host=HOST, port=server.port, decode_responses=False, socket_timeout=10, retry=no_retry())
    c.flushall()
    yield c
    c.close()


def test_redis_py_lock(rc):
    lock = rc.lock("res", timeout=10, blocking=False)
    assert lock.acquire()
    assert rc.get("res") == lock.local.token
    other = rc.lock("res", timeout=10, blocking=False)
    assert not other.acquire(), "a second holder acquired a held lock"
    # extend (LUA_EXTEND_SCRIPT): adds to the TTL; replace_ttl sets it.
    assert lock.extend(20)
    assert 20_000 < rc.pttl("res") <= 30_000
    assert lock.extend(5, replace_ttl=True)
    assert rc.pttl("res") <= 5_000
    # reacquire (LUA_REACQUIRE_SCRIPT): back to the lock's own timeout.
    assert lock.reacquire()
    assert 5_000 < rc.pttl("res") <= 10_000
    assert lock.owned() and not other.owned()
    # Another client's token cannot release or extend it (LUA_RELEASE_SCRIPT refuses).
    other.local.token = b"not-the-token"
    with pytest.raises(LockNotOwnedError):
        other.release()
    other.local.token = b"not-the-token"  # (release forgets the token it tried)
    with pytest.raises(LockNotOwnedError):
        other.extend(10)
    other.local.token = None
    assert rc.exists("res") == 1
    lock.release()
    assert rc.exists("res") == 0
    with pytest.raises(LockError):
        lock.release()  # no longer held
    # After release, the other one gets it.
    assert other.acquire()
    other.release()


def test_redis_py_lock_expires_and_blocks(rc):
    lock = rc.lock("short", timeout=0.2)
    assert lock.acquire()
    waiter = rc.lock("short", timeout=1, blocking_timeout=2, sleep=0.05)
    started = time.monotonic()
    assert waiter.acquire(), "the lock did not expire"
    assert time.monotonic() - started < 2
    with pytest.raises(LockNotOwnedError):
        lock.release()  # expired and taken over: the first owner's release is refused
    waiter.release()


def test_redis_py_lock_asyncio(server):
    async def main():
        c = redis.asyncio.Redis(host=HOST, port=server.port, socket_timeout=10)
        try:
            await c.flushall()
            lock = c.lock("alock", timeout=10, blocking=False)
            assert await lock.acquire()
            other = c.lock("alock", timeout=10, blocking=False)
            assert not await other.acquire()
            assert await lock.extend(10)
            assert 10_000 < await c.pttl("alock") <= 20_000
            assert await lock.reacquire()
            assert await lock.owned()
            other.local.token = b"nope"
            with pytest.raises(LockNotOwnedError):
                await other.release()
            await lock.release()
            assert await c.exists("alock") == 0
            async with c.lock("ctx", timeout=5) as held:
                assert await held.owned()
            assert await c.exists("ctx") == 0
        finally:
            await c.aclose()

    asyncio.run(main())


limits = pytest.importorskip("limits")


@pytest.mark.parametrize("strategy", ["fixed", "moving", "sliding"])
def test_limits_strategies(server, strategy):
    from limits import parse
    from limits.storage import RedisStorage
    from limits.strategies import (FixedWindowRateLimiter, MovingWindowRateLimiter,
                                   SlidingWindowCounterRateLimiter)

    storage = RedisStorage(f"redis://{HOST}:{server.port}")
    storage.reset()
    cls = {"fixed": FixedWindowRateLimiter, "moving": MovingWindowRateLimiter,
           "sliding": SlidingWindowCounterRateLimiter}[strategy]
    limiter = cls(storage)
    rate = parse("5/minute")
    # The sliding window's reset time is derived from millisecond TTLs and may
    # land a few microseconds before "now": compare against the first hit.
    started = time.time()
    got = [limiter.hit(rate, "user", "a") for _ in range(7)]
    assert got == [True] * 5 + [False, False], got
    assert limiter.test(rate, "user", "b")
    stats = limiter.get_window_stats(rate, "user", "a")
    assert stats.remaining == 0
    assert stats.reset_time >= started
    # Another identity has its own window.
    assert limiter.hit(rate, "user", "b")
    assert limiter.get_window_stats(rate, "user", "b").remaining == 4
    # A cost larger than the limit is refused.
    assert not limiter.hit(rate, "user", "c", cost=6)
    assert limiter.hit(rate, "user", "d", cost=5)
    assert limiter.get_window_stats(rate, "user", "d").remaining == 0
    limiter.clear(rate, "user", "a")
    assert limiter.hit(rate, "user", "a")
