"""OBJECT IDLETIME / FREQ and TOUCH as Redis computes them under each policy, lazy freeing (UNLINK,
FLUSHALL/FLUSHDB ASYNC, the INFO counters, exact memory accounting) and the client query buffer
(CLIENT LIST qbuf / qbuf-free, client-query-buffer-limit).

The tests without the locus_only mark run against redis-server too (`--peer redis`): what they assert
is Redis 7.0's behaviour."""

import socket
import time

import pytest
import redis

from conftest import no_retry
from harness import HOST, free_ports, wait_until

LFU_ERR = "An LFU maxmemory policy is selected, idle time not tracked"
LRU_ERR = "An LFU maxmemory policy is not selected, access frequency not tracked"


def client(port, **kw):
    return redis.Redis(host=HOST, port=port, decode_responses=True, socket_timeout=10,
                       retry=no_retry(), **kw)


@pytest.fixture
def lru(start_server):
    c = client(start_server(policy="allkeys-lru").port)
    yield c
    c.close()


@pytest.fixture
def lfu(start_server):
    c = client(start_server(policy="allkeys-lfu").port)
    yield c
    c.close()


def mem(c, field):
    return int(c.info("memory")[field])


def lazy_done(c):
    wait_until(lambda: mem(c, "lazyfree_pending_objects") == 0, timeout=10)


# ------------------------------------------------------------------------------------ recency


def test_idletime_grows_touch_resets_it_and_leaves_other_keys(lru):
    lru.set("a", "1")
    lru.set("b", "2")
    assert lru.object("idletime", "a") == 0
    time.sleep(2.2)
    # Reads that do not access the value do not touch it (as unit/introspection-2 checks).
    lru.ttl("a")
    lru.type("a")
    lru.exists("a")
    assert lru.object("idletime", "a") >= 2
    assert lru.touch("a", "missing") == 1
    assert lru.object("idletime", "a") == 0
    assert lru.object("idletime", "b") >= 2, "TOUCH of one key changed another's idle time"
    lru.get("b")
    assert lru.object("idletime", "b") == 0
    assert lru.object("idletime", "missing") is None


def test_freq_counts_accesses_logarithmically(lfu):
    # lfu-log-factor 0: every access increments the counter (probability 1/((c-5)*0+1)).
    assert lfu.config_set("lfu-log-factor", "0")
    assert lfu.config_get("lfu-log-factor") == {"lfu-log-factor": "0"}
    lfu.set("k", "v")
    assert lfu.object("freq", "k") == 5  # Redis's LFU_INIT_VAL for a new key
    for _ in range(10):
        lfu.get("k")
    assert lfu.object("freq", "k") == 15
    assert lfu.touch("k") == 1
    assert lfu.object("freq", "k") == 16
    # OBJECT FREQ reads without touching.
    assert lfu.object("freq", "k") == 16
    # The default factor (10): the counter grows ever more slowly.
    assert lfu.config_set("lfu-log-factor", "10")
    lfu.set("s", "v")
    for _ in range(200):
        lfu.get("s")
    assert 6 <= lfu.object("freq", "s") < 40
    assert lfu.object("freq", "missing") is None


def test_each_policy_refuses_the_other_field(lru, lfu):
    lru.set("k", "v")
    with pytest.raises(redis.ResponseError, match=LRU_ERR):
        lru.object("freq", "k")
    # A missing key is a nil before the policy is looked at.
    assert lru.object("freq", "missing") is None
    lfu.set("k", "v")
    with pytest.raises(redis.ResponseError, match=LFU_ERR):
        lfu.object("idletime", "k")
    assert lfu.object("idletime", "missing") is None
    # Switching the policy at run time switches what OBJECT reads.
    assert lru.config_set("maxmemory-policy", "allkeys-lfu")
    with pytest.raises(redis.ResponseError, match=LFU_ERR):
        lru.object("idletime", "k")
    assert isinstance(lru.object("freq", "k"), int)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'object\\|freq'"):
        lru.execute_command("OBJECT", "FREQ")
    with pytest.raises(redis.ResponseError, match="argument must be 'yes' or 'no'"):
        lru.config_set("lazyfree-lazy-user-del", "maybe")


# ------------------------------------------------------------------------------------ lazyfree


def test_unlink_frees_big_objects_in_the_background(lru):
    lru.config_resetstat()
    lru.sadd("big", *range(1000))  # a hash table: one allocation per member
    lru.sadd("small", *range(10))  # an intset: one allocation, freed at once
    lru.rpush("list", *range(10))
    assert lru.unlink("big", "small", "list", "missing") == 3
    assert lru.exists("big", "small", "list") == 0
    lazy_done(lru)
    assert mem(lru, "lazyfreed_objects") == 1
    # DEL frees at once, unless lazyfree-lazy-user-del.
    lru.sadd("big", *range(1000))
    assert lru.delete("big") == 1
    assert mem(lru, "lazyfreed_objects") == 1
    assert lru.config_get("lazyfree-lazy-user-del") == {"lazyfree-lazy-user-del": "no"}
    assert lru.config_set("lazyfree-lazy-user-del", "yes")
    lru.sadd("big", *range(1000))
    assert lru.delete("big") == 1
    lazy_done(lru)
    assert mem(lru, "lazyfreed_objects") == 2
    assert lru.config_set("lazyfree-lazy-user-del", "no")
    lru.config_resetstat()
    assert mem(lru, "lazyfreed_objects") == 0


def test_flush_async_frees_every_object_in_the_background(lru):
    lru.config_resetstat()
    for i in range(3):
        lru.hset(f"h{i}", mapping={str(j): "x" for j in range(200)})
    assert lru.flushall(asynchronous=True)
    assert lru.dbsize() == 0
    lazy_done(lru)
    assert mem(lru, "lazyfreed_objects") == 3
    for i in range(2):
        lru.zadd(f"z{i}", {str(j): j for j in range(200)})
    assert lru.execute_command("FLUSHDB", "ASYNC")
    lazy_done(lru)
    assert mem(lru, "lazyfreed_objects") == 5
    # lazyfree-lazy-user-flush: a plain FLUSHALL is ASYNC.
    assert lru.config_set("lazyfree-lazy-user-flush", "yes")
    lru.sadd("s", *range(1000))
    assert lru.flushall()
    lazy_done(lru)
    assert mem(lru, "lazyfreed_objects") == 6
    assert lru.config_set("lazyfree-lazy-user-flush", "no")
    lru.sadd("s", *range(1000))
    assert lru.execute_command("FLUSHALL", "SYNC")
    assert mem(lru, "lazyfreed_objects") == 6


@pytest.mark.locus_only
def test_lazy_free_accounting_is_exact(lru):
    """The budget counts an unlinked object until it is really freed, then exactly nothing of it."""
    for i in range(200):
        lru.set(f"k{i}", "v" * 100)
    base = mem(lru, "used_memory")
    lru.sadd("big", *range(100_000))
    peak = mem(lru, "used_memory")
    assert peak > base + 1_000_000
    assert lru.unlink("big") == 1
    lazy_done(lru)
    wait_until(lambda: mem(lru, "used_memory") == base, timeout=5)
    # FLUSHALL ASYNC: every page and object back (at most one page of the engine's metadata stays).
    lru.sadd("big", *range(100_000))
    assert lru.flushall(asynchronous=True)
    lazy_done(lru)
    wait_until(lambda: mem(lru, "used_memory") <= mem(lru, "page_size"), timeout=5)
    with pytest.raises(redis.ResponseError, match="synchronously"):
        lru.config_set("lazyfree-lazy-eviction", "yes")
    assert lru.config_get("lazyfree-lazy-eviction") == {"lazyfree-lazy-eviction": "no"}


# ---------------------------------------------------------------------------------- query buffer


def own_line(c):
    name = c.client_getname()
    return next(l for l in c.client_list() if l["name"] == name)


def test_client_list_shows_the_query_buffer(server):
    c = client(server.port)
    c.client_setname("qb")
    line = own_line(c)
    total = int(line["qbuf"]) + int(line["qbuf-free"])
    assert 16384 <= total < 32768, line  # one read buffer (Redis's PROTO_IOBUF_LEN)
    assert int(line["tot-mem"]) >= total
    # A big argument grows the buffer past the resize threshold.
    c.set("x", "A" * 400_000)
    line = own_line(c)
    assert int(line["qbuf"]) + int(line["qbuf-free"]) > 32768
    c.delete("x")
    c.close()


def test_a_blocked_client_gives_its_buffer_back_when_idle(server):
    """The resize visits blocked clients too (as Redis's clientsCron); in Locus the visit must
    not keep a blocked client's wait busy."""
    import threading

    c = client(server.port)
    blocked = client(server.port)
    blocked.client_setname("blocked-qb")
    t = threading.Thread(target=lambda: blocked.blpop("nothing-here", timeout=6))
    t.start()
    try:
        def gave_back():
            line = next(l for l in c.client_list() if l["name"] == "blocked-qb")
            return int(line["idle"]) >= 3 and int(line["qbuf"]) + int(line["qbuf-free"]) == 0
        wait_until(gave_back, timeout=5.5, interval=0.1)
    finally:
        c.lpush("nothing-here", "x")
        t.join()
        c.delete("nothing-here")
        blocked.close()
        c.close()


def test_query_buffer_limit_closes_the_client(server):
    c = client(server.port)
    old = c.config_get("client-query-buffer-limit")["client-query-buffer-limit"]
    with pytest.raises(redis.ResponseError, match="between 1048576 and"):
        c.config_set("client-query-buffer-limit", "1000")
    assert c.config_set("client-query-buffer-limit", "1mb")
    try:
        with socket.create_connection((HOST, server.port), timeout=5) as s:
            s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$3000000\r\n" + b"a" * 1_500_000)
            s.settimeout(5)
            got = b""
            try:
                while chunk := s.recv(4096):
                    got += chunk
            except ConnectionResetError:  # closed with our input unread
                pass
            assert got == b"", "Redis closes such a client without a reply"
        assert c.exists("x") == 0
        assert c.ping()
    finally:
        c.config_set("client-query-buffer-limit", old)
        c.close()


# ------------------------------------------------------------------------------------- tenancy


@pytest.fixture
def tenants(start_locus_toml):
    main, pa, pb = free_ports(3)
    toml = f"""
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "64MiB"
page_size = "64KiB"

[tenancy]
mode = "port"

[[tenant]]
name = "a"
port = {pa}

[[tenant]]
name = "b"
port = {pb}
"""
    start_locus_toml(toml, pa)
    ca, cb = client(pa), client(pb)
    yield ca, cb
    ca.close()
    cb.close()


@pytest.mark.locus_only
def test_object_and_lazy_free_stay_inside_the_tenant(tenants):
    ca, cb = tenants
    cb.set("only-b", "v")
    cb.sadd("bset", *range(1000))
    assert ca.object("idletime", "only-b") is None, "OBJECT reads another tenant's key"
    assert ca.object("encoding", "bset") is None
    assert ca.touch("only-b", "bset") == 0
    assert ca.unlink("only-b", "bset") == 0
    b_used = mem(cb, "used_memory")
    ca.sadd("aset", *range(1000))
    ca.hset("ahash", mapping={str(j): "x" for j in range(500)})
    assert ca.flushall(asynchronous=True)
    lazy_done(ca)
    assert mem(ca, "lazyfreed_objects") == 2
    assert cb.dbsize() == 2 and cb.scard("bset") == 1000, "tenant a's FLUSHALL ASYNC freed b's keys"
    assert mem(cb, "lazyfreed_objects") == 0, "tenant b sees tenant a's lazy frees"
    assert mem(cb, "used_memory") == b_used
    assert cb.unlink("bset") == 1
    lazy_done(cb)
    assert mem(cb, "lazyfreed_objects") == 1 and mem(ca, "lazyfreed_objects") == 2


# ------------------------------------------------------------------------- COMMAND (introspection-2)


def test_command_list_filterby(server):
    c = client(server.port)
    c.response_callbacks.pop("COMMAND", None)  # the plain replies, not redis-py's COMMAND parsing
    every = c.execute_command("COMMAND", "LIST")
    assert "set" in every and "client|list" in every and "config|get" in every
    assert c.execute_command("COMMAND", "LIST", "FILTERBY", "PATTERN", "set") == ["set"]
    conf = c.execute_command("COMMAND", "LIST", "FILTERBY", "PATTERN", "config*")
    assert "config" in conf and "config|get" in conf
    sub = c.execute_command("COMMAND", "LIST", "FILTERBY", "PATTERN", "config|*re*")
    assert "config|resetstat" in sub and "config|rewrite" in sub and "config|get" not in sub
    assert "client|help" in c.execute_command("COMMAND", "LIST", "FILTERBY", "PATTERN", "cl*help")
    assert c.execute_command("COMMAND", "LIST", "FILTERBY", "PATTERN", "non_exists*") == []
    scripting = c.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT", "scripting")
    assert "eval" in scripting and "script|kill" in scripting and "set" not in scripting
    assert c.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT", "no_such_category") == []
    assert c.execute_command("COMMAND", "LIST", "FILTERBY", "MODULE", "no_such_module") == []
    for bad in (["bad_arg"], ["filterby", "bad_arg"], ["filterby", "bad_arg", "bad_arg2"]):
        with pytest.raises(redis.ResponseError, match="syntax error"):
            c.execute_command("COMMAND", "LIST", *bad)
    assert c.execute_command("COMMAND", "GETKEYS", "EVAL", "return 1", "0") == []
    assert c.execute_command("COMMAND", "GETKEYS", "EVAL", "return 1", "1", "k") == ["k"]
    c.close()
