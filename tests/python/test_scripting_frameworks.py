"""Real frameworks whose Redis support is built on Lua scripts, against the real server (and,
with `--peer redis`, against redis-server 7.0 so that every assertion is Redis's behaviour):
redis-py's `Lock` (sync and asyncio: acquire, extend, reacquire, release, and the errors when
the lock is not owned), the `limits` rate limiter's fixed, moving and sliding windows with
Redis storage, a Celery worker (Redis broker and result backend) running a task, a group and a
chord, django-redis's lock and atomic incr, and the script helpers of ioredis
(`defineCommand`), node-redis (`defineScript`) and go-redis (`Script.Run`), whose programs are
in tests/clients (npm ci / go build there; a missing node or go skips with the reason)."""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

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


CLIENTS = Path(__file__).resolve().parents[1] / "clients"


def test_celery_task_group_chord(server, tmp_path):
    pytest.importorskip("celery")
    url = f"redis://{HOST}:{server.port}/0"
    redis.Redis(host=HOST, port=server.port).flushall()
    env = dict(os.environ, LOCUS_CELERY_URL=url, PYTHONPATH=str(CLIENTS))
    log = open(tmp_path / "worker.log", "wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "--pool=solo",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning",
         "-n", f"locus-test-{os.getpid()}@%h"],
        cwd=CLIENTS, env=env, stdout=log, stderr=subprocess.STDOUT)
    os.environ["LOCUS_CELERY_URL"] = url
    sys.path.insert(0, str(CLIENTS))
    try:
        from celery import chord, group
        import celery_tasks

        def check(result, want):
            try:
                assert result.get(timeout=30) == want
            except Exception:
                pytest.fail(f"celery: no result ({'worker exited' if worker.poll() is not None else 'worker up'}):\n"
                            + (tmp_path / "worker.log").read_text(errors="replace")[-4000:])

        check(celery_tasks.add.delay(2, 3), 5)
        check(group(celery_tasks.add.s(i, i) for i in range(4))(), [0, 2, 4, 6])
        check(chord((celery_tasks.add.s(i, i) for i in range(4)), celery_tasks.total.s())(), 12)
        assert worker.poll() is None, "the worker exited"
    finally:
        sys.path.remove(str(CLIENTS))
        worker.send_signal(signal.SIGQUIT)  # Celery's cold shutdown: no task is running
        try:
            worker.wait(15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        log.close()


def test_django_redis_lock_and_incr(server):
    pytest.importorskip("django")
    pytest.importorskip("django_redis")
    from django.conf import settings
    if not settings.configured:
        settings.configure(CACHES={"default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"redis://{HOST}:{server.port}/0",
        }})
    import django
    django.setup()
    from django.core.cache import cache

    rc = redis.Redis(host=HOST, port=server.port)
    rc.flushall()
    lock = cache.lock("dj-lock", timeout=10, blocking=False)
    assert lock.acquire()
    other = cache.lock("dj-lock", timeout=10, blocking=False)
    assert not other.acquire()
    assert lock.extend(5)
    lock.release()
    assert other.acquire()
    other.release()
    with cache.lock("dj-ctx", timeout=5):
        assert rc.exists(cache.make_key("dj-ctx")) == 1
    assert rc.exists(cache.make_key("dj-ctx")) == 0
    # incr is one EVAL (EXISTS then INCRBY), keeping the TTL; a missing key is an error.
    cache.set("dj-n", 10, timeout=100)
    before = rc.info("commandstats").get("cmdstat_eval", {}).get("calls", 0)
    assert cache.incr("dj-n", 5) == 15
    assert rc.info("commandstats")["cmdstat_eval"]["calls"] == before + 1
    assert cache.get("dj-n") == 15
    assert 90 <= cache.ttl("dj-n") <= 100
    with pytest.raises(ValueError):
        cache.incr("dj-missing")


def _skip_loudly(tool, what):
    """Skips for a missing toolchain, on stderr and in scripts/test.sh's list of skipped tests."""
    msg = f"{tool} not found: {what} NOT run"
    print(f"\n*** SKIPPED: {msg}", file=sys.stderr)
    if os.environ.get("LOCUS_SKIP_LOG"):
        with open(os.environ["LOCUS_SKIP_LOG"], "a") as f:
            f.write(f"test_scripting_frameworks: {msg}\n")
    pytest.skip(msg)


def _run_client(cmd, cwd, what):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout}\n{proc.stderr}"
    return [line for line in proc.stdout.splitlines() if line.startswith("ok ")]


def test_node_clients_script_helpers(server):
    if shutil.which("node") is None or shutil.which("npm") is None:
        _skip_loudly("node/npm", "ioredis defineCommand and node-redis defineScript")
    if not (CLIENTS / "node_modules" / "ioredis").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=CLIENTS,
                       check=True, timeout=300)
    oks = _run_client(["node", "scripts.mjs", str(server.port)], CLIENTS, "node scripts.mjs")
    assert len(oks) == 6, oks


def test_go_redis_script_run(server, tmp_path):
    if shutil.which("go") is None:
        _skip_loudly("go", "go-redis Script.Run")
    binary = tmp_path / "goscripts"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=CLIENTS / "go", check=True, timeout=600)
    oks = _run_client([str(binary), str(server.port)], tmp_path, "go-redis client")
    assert len(oks) == 3, oks
