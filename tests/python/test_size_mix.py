"""Variable value sizes under one budget, side by side with redis-server (issue #11): 3,000 values
log-uniform from 1 B to 900 KB (about 200 MB written, seeded) into maxmemory 64mb, allkeys-lru,
through the same redis-py client. Both caches keep roughly the most recent keys that fit, so the
key count they hold measures how much of the budget holds data, and whether small keys are
sacrificed for big ones.

Locus does not meet this yet and the test says so (strict xfail: the day it passes, the marker
must go). Measured 2026-11-25: redis-server 7.0.15 kept 881 keys (60.0 MB of values), Locus 111
keys (37.3 MB). Two causes: an item of more than half a page takes a whole 1 MiB page (a 600 KB
value leaves 424 KB unused), and when a class needs a page, the sparsest page goes with all its
items, which are small ones (a page with one big item is always full), so big values crowd out
small keys. The fix is in the engine: large values outside the slab pages, charged at their size."""

import math
import random
import shutil

import pytest
import redis

from harness import free_ports

pytestmark = pytest.mark.locus_only

MAX_VALUE = 900 * 1024
WRITES = 3000


def fill(port: int, seed: int = 1) -> tuple[int, int]:
    """Writes the seeded log-uniform stream; returns (keys held, bytes of values held)."""
    r = redis.Redis(port=port)
    rng = random.Random(seed)
    big = memoryview(b"x" * MAX_VALUE)
    for i in range(WRITES):
        size = int(math.exp(rng.uniform(0, math.log(MAX_VALUE))))
        assert r.set(f"k{i}", big[:size])
    keys = r.dbsize()
    held = sum(r.strlen(k) for k in r.scan_iter(count=1000))
    r.close()
    return keys, held


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (run scripts/install-deps.sh)")
@pytest.mark.xfail(strict=True, reason="issue #11: pages of 1 MiB waste big values and evict small keys first")
def test_log_uniform_sizes_keep_at_least_as_many_keys_as_redis(start_locus_toml):
    import harness

    red = harness.start_redis(["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"])
    try:
        redis_keys, redis_bytes = fill(red.port)
    finally:
        red.stop()
    (port,) = free_ports(1)
    start_locus_toml(f'[server]\nport = {port}\n[memory]\nmaxmemory = "64mb"\n'
                     f'[eviction]\npolicy = "allkeys-lru"\n', port)
    locus_keys, locus_bytes = fill(port)
    print(f"log-uniform 1 B..900 KB under 64 MB: redis-server {redis_keys} keys ({redis_bytes / 1e6:.1f} MB), "
          f"Locus {locus_keys} keys ({locus_bytes / 1e6:.1f} MB)")
    assert redis_keys > 0
    assert locus_keys >= redis_keys, f"Locus kept {locus_keys} keys, redis-server {redis_keys}"
