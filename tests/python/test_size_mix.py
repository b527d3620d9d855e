"""Variable value sizes under one budget, side by side with redis-server (issue #11): 3,000 values
log-uniform from 1 B to 900 KB (about 200 MB written) into maxmemory 64mb, allkeys-lru, through the
same redis-py client, for three seeds. Both caches keep roughly the most recent keys that fit, so
the key count they hold measures how much of the budget holds data, and whether small keys are
sacrificed for big ones.

Before large items left the pages (1 MiB pages, every value in a chunk), Locus kept 111-118 keys
(37 MB of values) where redis-server 7.0.15 kept 841-881 (59-60 MB): a value of more than half a
page took a whole page, and a class short of pages emptied the sparsest page, always one of small
keys. Now (16 KiB pages for this budget, values above 2 KiB in their own allocation, free chunks
compacted into pages), five runs of the three seeds: Locus 911-1,003, 988-1,080, 975-999 keys
(66 MB) against Redis's 815-887, 869-930, 846-916 (59-60 MB); Locus's RSS 82-100 MiB. Ten more
runs of seed 3 spread both wider (Locus 853-1,018, Redis 868-988): both evict by sampling,
so which keys go varies from run to run, and a key-count margin inside that spread is a tie.

So the test asserts what holds in every run: Locus holds more bytes of values than Redis (65.5-66.2
MB against 58.9-60.1), and at least 85% of Redis's key count (a tie or better; the old layout's
111-118 keys fail it by far)."""

import math
import random
import shutil

import pytest
import redis

from harness import free_ports, rss

pytestmark = pytest.mark.locus_only

MAX_VALUE = 900 * 1024
WRITES = 3000


def fill(port: int, seed: int) -> tuple[int, int]:
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
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_log_uniform_sizes_hold_more_data_than_redis_and_as_many_keys(start_locus_toml, seed):
    import harness

    red = harness.start_redis(["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"])
    try:
        redis_keys, redis_bytes = fill(red.port, seed)
    finally:
        red.stop()
    (port,) = free_ports(1)
    srv = start_locus_toml(f'[server]\nport = {port}\n[memory]\nmaxmemory = "64mb"\n'
                           f'[eviction]\npolicy = "allkeys-lru"\n', port)
    locus_keys, locus_bytes = fill(port, seed)
    peak = rss(srv.proc.pid)
    print(f"seed {seed}: log-uniform 1 B..900 KB under 64 MB: redis-server {redis_keys} keys "
          f"({redis_bytes / 1e6:.1f} MB), Locus {locus_keys} keys ({locus_bytes / 1e6:.1f} MB), "
          f"Locus RSS {peak / 2**20:.1f} MiB")
    assert redis_keys > 0
    assert locus_bytes > redis_bytes, f"Locus held {locus_bytes} bytes, redis-server {redis_bytes}"
    assert locus_keys >= 0.85 * redis_keys, f"Locus kept {locus_keys} keys, redis-server {redis_keys}"
    assert locus_bytes <= 64 * 2**20
    assert peak <= 1.15 * 64 * 2**20 + 64 * 2**20, f"RSS {peak / 2**20:.1f} MiB"
