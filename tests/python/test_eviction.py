"""Eviction under a small maxmemory: memory stays within the limit, keys are evicted and counted,
the policy decides which, and noeviction refuses writes with Redis's OOM error."""

import pytest

from harness import Raw, rss, wait_until

MAXMEMORY = 8 * 1024 * 1024
VALUE = "x" * 1000
TOTAL_KEYS = 24_000  # ~24 MB of values: three times what fits


@pytest.fixture
def slack(peer):
    """Bytes by which INFO's used_memory may exceed maxmemory. Redis evicts before running a command,
    then the INFO command itself allocates a few dozen bytes before reporting; Locus accounts whole
    pages and its sum of pages never exceeds maxmemory, so no slack."""
    return 4096 if peer == "redis" else 0


def fill(c, prefix, n, batch=1000, ex=None, between=None):
    for start in range(0, n, batch):
        with c.pipeline(transaction=False) as p:
            for i in range(start, min(start + batch, n)):
                p.set(f"{prefix}:{i}", VALUE, ex=ex)
            p.execute()
        if between:
            between()


def memory(c):
    m = c.info("memory")
    return m["used_memory"], m["maxmemory"]


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random"])
def test_eviction_keeps_memory_within_maxmemory(start_server, client_for, policy, slack):
    srv = start_server(maxmemory=MAXMEMORY, policy=policy)
    c = client_for(srv)
    assert c.config_get("maxmemory-policy")["maxmemory-policy"] == policy
    peak = 0

    def check():
        nonlocal peak
        used, maxmem = memory(c)
        assert maxmem == MAXMEMORY
        peak = max(peak, used)

    rss_before = rss(srv.proc.pid)
    fill(c, "k", TOTAL_KEYS, between=check)
    used, _ = memory(c)
    assert used <= MAXMEMORY + slack, f"used_memory {used} > maxmemory {MAXMEMORY}"
    assert peak <= MAXMEMORY + slack, f"used_memory peaked at {peak} > maxmemory {MAXMEMORY}"
    evicted = c.info("stats")["evicted_keys"]
    kept = c.dbsize()
    # used_memory is what the process holds, not a number kept under the limit: it covers the
    # values kept, and the process grew by about that much (24 MB went through it).
    assert used >= kept * len(VALUE), f"used_memory {used} < the {kept} values kept"
    grown = rss(srv.proc.pid) - rss_before
    assert grown <= 1.5 * MAXMEMORY + 8 * 1024 * 1024, f"RSS grew {grown} bytes under maxmemory {MAXMEMORY}"
    assert evicted > 0
    assert kept < TOTAL_KEYS
    assert kept >= 2000, f"only {kept} keys of 1 KB kept in {MAXMEMORY} bytes"
    assert kept + evicted == TOTAL_KEYS  # every key is either present or counted as evicted
    # the cache still serves reads and writes
    assert c.set("after", "v") and c.get("after") == "v"


def test_lfu_keeps_hot_keys(start_server, client_for):
    srv = start_server(maxmemory=MAXMEMORY, policy="allkeys-lfu")
    c = client_for(srv)
    hot = [f"hot:{i}" for i in range(200)]
    c.mset({k: VALUE for k in hot})

    def touch():
        with c.pipeline(transaction=False) as p:
            for k in hot:
                p.get(k)
            p.execute()

    for _ in range(10):
        touch()
    fill(c, "cold", TOTAL_KEYS, between=touch)
    assert c.info("stats")["evicted_keys"] > 0
    survived = sum(1 for v in c.mget(hot) if v is not None)
    assert survived >= 0.9 * len(hot), f"only {survived}/{len(hot)} frequently read keys survived"


def test_volatile_ttl_evicts_only_keys_with_ttl(start_server, client_for, slack):
    srv = start_server(maxmemory=MAXMEMORY, policy="volatile-ttl")
    c = client_for(srv)
    permanent = [f"perm:{i}" for i in range(500)]
    c.mset({k: VALUE for k in permanent})
    fill(c, "vol", TOTAL_KEYS, ex=3600)
    assert c.info("stats")["evicted_keys"] > 0
    assert all(v is not None for v in c.mget(permanent))
    used, _ = memory(c)
    assert used <= MAXMEMORY + slack


def test_volatile_policy_without_volatile_keys_gives_oom(start_server):
    srv = start_server(maxmemory=MAXMEMORY, policy="volatile-lru")
    with Raw(srv.port) as c:
        reply = None
        for i in range(TOTAL_KEYS):
            reply = c.call("SET", f"k:{i}", VALUE)
            if reply != "OK":
                break
        assert reply == "OOM command not allowed when used memory > 'maxmemory'."


def test_noeviction_refuses_writes_with_oom(start_server, client_for, slack):
    srv = start_server(maxmemory=MAXMEMORY, policy="noeviction")
    with Raw(srv.port) as c:
        stored, reply = 0, None
        for i in range(TOTAL_KEYS):
            reply = c.call("SET", f"k:{i}", VALUE)
            if reply != "OK":
                break
            stored += 1
        assert reply == "OOM command not allowed when used memory > 'maxmemory'."
        assert stored >= 2000
        # reads, deletes and non-growing commands still work
        assert c.call("GET", "k:0") == VALUE.encode()
        assert c.call("DBSIZE") == stored
        assert c.call("INCR", "newcounter") == "OOM command not allowed when used memory > 'maxmemory'."
        assert c.call("DEL", *[f"k:{i}" for i in range(stored // 2)]) == stored // 2
        assert c.call("SET", "again", "v") == "OK"
        info = c.call("INFO", "stats").decode()
        assert "\r\nevicted_keys:0\r\n" in info
    cl = client_for(srv, protocol=3)
    used, _ = memory(cl)
    assert used <= MAXMEMORY + slack


def test_config_set_maxmemory_shrinks(start_server, client_for, slack):
    srv = start_server(maxmemory=4 * MAXMEMORY, policy="allkeys-lru")
    c = client_for(srv)
    fill(c, "k", 20_000)
    before = c.dbsize()
    assert c.config_set("maxmemory", MAXMEMORY)
    # Redis evicts in time-bounded steps (before commands and from a timer): poll until it is done
    wait_until(lambda: memory(c)[0] <= MAXMEMORY + slack, timeout=10, what="used_memory <= new maxmemory")
    assert memory(c)[1] == MAXMEMORY
    assert c.dbsize() < before


def test_flush_and_delete_give_memory_back(start_server, client_for):
    srv = start_server(maxmemory=MAXMEMORY, policy="allkeys-lru")
    c = client_for(srv)
    fill(c, "k", TOTAL_KEYS)
    full, _ = memory(c)
    assert c.flushall()
    emptied, _ = memory(c)
    assert emptied < full / 2, f"used_memory {full} -> {emptied} after FLUSHALL"
    # and the space is usable again without evictions
    before = c.info("stats")["evicted_keys"]
    fill(c, "again", 2000)
    assert c.info("stats")["evicted_keys"] == before
    assert c.dbsize() == 2000
