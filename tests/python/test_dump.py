"""DUMP and RESTORE (Redis's RDB value serialization, version 10): every type, in its small and
large encodings, with and without a TTL, moved from a redis-server 7.0 into the server under test
and back; RESTORE's options and errors; hostile payloads refused with Redis's texts; RESTORE's
notification, WATCH and memory accounting; and tenancy (RESTORE writes the caller's tenant only,
DUMP reads nothing of another's).

Under `--peer redis` the server under test is itself a redis-server: every assertion here is then
Redis's behaviour (with `sanitize-dump-payload yes`, the deep checks Locus always makes)."""

import struct
import time

import pytest
import redis

from conftest import no_retry
from harness import HOST, free_ports, start_redis

def bclient(port):
    return redis.Redis(host=HOST, port=port, socket_timeout=30, retry=no_retry())


# ---- payload building (the format, written out here so hostile payloads can be made) ----

_POLY = 0x95AC9329AC4BC9B5  # the Jones polynomial, reflected
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc64(data: bytes) -> int:
    crc = 0
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def payload(body: bytes, version: int = 10) -> bytes:
    """A value body with Redis's footer: the RDB version and the CRC-64 of everything before it."""
    p = body + struct.pack("<H", version)
    return p + struct.pack("<Q", crc64(p))


def rdb_len(n: int) -> bytes:
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    if n < 2**32:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n)


def rdb_str(s: bytes) -> bytes:
    return rdb_len(len(s)) + s


def listpack(items, count=None, total_delta=0) -> bytes:
    """A listpack of short strings (6-bit lengths), optionally with a wrong count or length."""
    body = b""
    for s in items:
        entry = bytes([0x80 | len(s)]) + s
        body += entry + bytes([len(entry)])
    n = len(items) if count is None else count
    total = 6 + len(body) + 1
    return struct.pack("<IH", total + total_delta, n) + body + b"\xff"


def ziplist(items, count=None, total=None) -> bytes:
    body = b""
    prev = 0
    tail = 10
    for s in items:
        tail = 10 + len(body)
        entry = bytes([prev, len(s)]) + s
        body += entry
        prev = len(entry)
    n = len(items) if count is None else count
    size = 10 + len(body) + 1
    return struct.pack("<IIH", size if total is None else total, tail, n) + body + b"\xff"


CHECKSUM_ERR = "DUMP payload version or checksum are wrong"
BAD_FORMAT = "Bad data format"

# ---- values of every type, read back in a form two servers can be compared by ----


def make_values(c):
    """Creates one key per type and encoding on `c`; returns their names."""
    c.set("str:raw", "hello world")
    c.set("str:int", "123456")
    c.set("str:bigint", "-9223372036854775808")
    c.set("str:lzf", "abc" * 200 + "xyz" * 100)
    c.set("str:bin", bytes(range(256)) * 3)
    c.rpush("list:small", "a", "1", "-70000", "x" * 100, "")
    c.rpush("list:large", *[f"element-{i}" * (1 + i % 5) for i in range(5000)])
    c.rpush("list:bigelem", "y" * 100_000, "z")
    c.sadd("set:int", 1, -2, 300, 70000, 5_000_000_000)
    c.sadd("set:str", "a", "b", "c")
    c.sadd("set:large", *[f"m{i}" for i in range(1000)])
    c.sadd("set:largeint", *range(1000))
    c.hset("hash:small", mapping={"f1": "v1", "f2": "2", "f3": "x" * 40})
    c.hset("hash:large", mapping={f"field{i}": f"value{i}" for i in range(500)})
    c.hset("hash:longval", mapping={"f": "v" * 1000})
    c.zadd("zset:small", {"a": 1, "b": 2.5, "c": -3, "d": 1e300, "e": float("inf"), "f": 0.1})
    c.zadd("zset:large", {f"m{i}": i / 7 for i in range(500)})
    c.zadd("zset:longmember", {"m" * 200: 1})
    c.xadd("stream:plain", {"a": "1", "b": "2"}, id="1-1")
    c.xadd("stream:plain", {"a": "3", "b": "4"}, id="1-2")
    c.xadd("stream:plain", {"c": "5"}, id="2-0")
    for i in range(300):
        c.xadd("stream:groups", {"n": str(i), "k": "v" * (i % 7)}, id=f"{1000 + i}-{i % 3}")
    c.xdel("stream:groups", "1005-2")
    c.xgroup_create("stream:groups", "g1", id="0")
    c.xgroup_create("stream:groups", "g2", id="$")
    c.xreadgroup("g1", "alice", {"stream:groups": ">"}, count=10)
    c.xreadgroup("g1", "bob", {"stream:groups": ">"}, count=5)
    c.xack("stream:groups", "g1", "1001-1")
    c.xgroup_createconsumer("stream:groups", "g2", "idle")
    c.xadd("stream:empty", {"a": "1"}, id="5-5")
    c.xdel("stream:empty", "5-5")
    return [k.decode() for k in sorted(c.keys())]


def read_value(c, key):
    t = c.type(key).decode()
    if t == "string":
        v = c.get(key)
    elif t == "list":
        v = c.lrange(key, 0, -1)
    elif t == "set":
        v = sorted(c.smembers(key))
    elif t == "hash":
        v = sorted(c.hgetall(key).items())
    elif t == "zset":
        v = c.zrange(key, 0, -1, withscores=True)
    elif t == "stream":
        groups = []
        for g in c.xinfo_groups(key):
            name = g["name"]
            consumers = sorted((x["name"], x["pending"]) for x in c.xinfo_consumers(key, name))
            pending = [(p["message_id"], p["consumer"], p["times_delivered"])
                       for p in c.xpending_range(key, name, "-", "+", 1000)]
            groups.append((name, g["last-delivered-id"], g["entries-read"], g["lag"], g["pending"],
                           consumers, pending))
        info = c.xinfo_stream(key)
        v = (c.xrange(key), info["last-generated-id"], info["max-deleted-entry-id"],
             info["entries-added"], groups)
    else:
        raise AssertionError(f"unexpected type {t}")
    return t, v


@pytest.fixture
def rb(server):
    """A RESP2 client with bytes replies (the values compared here are binary)."""
    c = bclient(server.port)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def sanitize(rb, peer):
    """Redis checks payloads deeply only with sanitize-dump-payload yes (Locus always does)."""
    if peer == "redis":
        rb.config_set("sanitize-dump-payload", "yes")
    yield rb
    if peer == "redis":
        rb.config_set("sanitize-dump-payload", "no")


# ---- between a redis-server 7.0 and the server under test ----


# Debian's redis-server compiles in hash-max-listpack-entries 512 where Redis's default (and
# Locus's) is 128: both servers get Redis's default so their encodings can be compared.
LIMITS = {"hash-max-listpack-entries": "128"}


@pytest.fixture(scope="module")
def source_redis():
    srv = start_redis()
    c = bclient(srv.port)
    for k, v in LIMITS.items():
        c.config_set(k, v)
    c.close()
    yield srv
    srv.stop()


@pytest.fixture
def limits(rb):
    before = {k: list(rb.config_get(k).values())[0] for k in LIMITS}
    for k, v in LIMITS.items():
        rb.config_set(k, v)
    yield rb
    for k, v in before.items():
        rb.config_set(k, v)


def test_every_type_moves_from_redis_and_back(rb, limits, source_redis):
    src = bclient(source_redis.port)
    src.flushall()
    keys = make_values(src)
    assert len(keys) == 21
    src.expire("str:raw", 1000)
    src.pexpire("hash:large", 500_000)
    for k in keys:
        p = src.dump(k)
        assert p is not None, k
        ttl = src.pttl(k)
        assert rb.restore(k, max(ttl, 0), p) == b"OK"
        assert read_value(rb, k) == read_value(src, k), k
        assert rb.object("encoding", k) == src.object("encoding", k), k
        if ttl > 0:
            assert ttl - 5000 < rb.pttl(k) <= ttl
        else:
            assert rb.pttl(k) == -1
        # And back: DUMP from the server under test, RESTORE into the redis-server.
        back = rb.dump(k)
        assert src.restore(k + ":back", 0, back) == b"OK"
        assert read_value(src, k + ":back") == read_value(src, k), k
    src.close()


def test_every_type_round_trips_in_place(rb, limits):
    keys = make_values(rb)
    before = {k: (read_value(rb, k), rb.object("encoding", k)) for k in keys}
    dumps = {k: rb.dump(k) for k in keys}
    rb.flushall()
    for k in keys:
        assert rb.restore(k, 0, dumps[k]) == b"OK"
        assert (read_value(rb, k), rb.object("encoding", k)) == before[k], k


def test_encodings_follow_the_thresholds_at_restore(rb, limits, source_redis):
    """A listpack hash from a server with large thresholds becomes a table here when it passes
    this server's hash-max-listpack-entries (the value is the same either way)."""
    src = bclient(source_redis.port)
    src.flushall()
    src.config_set("hash-max-listpack-entries", 1000)
    src.hset("h", mapping={f"f{i}": i for i in range(300)})
    assert src.object("encoding", "h") == b"listpack"
    p = src.dump("h")
    src.config_set("hash-max-listpack-entries", 128)
    assert rb.restore("h", 0, p) == b"OK"
    assert rb.object("encoding", "h") == b"hashtable"
    assert rb.hgetall("h") == src.hgetall("h")
    src.close()


# ---- options and errors ----


def test_restore_options(rb):
    rb.set("k", "v")
    p = rb.dump("k")
    assert rb.dump("missing") is None
    with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists."):
        rb.restore("k", 0, p)
    assert rb.restore("k", 0, p, replace=True) == b"OK"
    rb.delete("k")
    assert rb.restore("k", 5000, p) == b"OK"
    assert 3000 < rb.pttl("k") <= 5000
    # A TTL past 32 bits, and an absolute one.
    assert rb.restore("k", 2569591501, p, replace=True) == b"OK"
    assert rb.pttl("k") > 2569591501 - 5000
    at = int(time.time() * 1000) + 10_000
    assert rb.restore("k", at, p, replace=True, absttl=True) == b"OK"
    assert 5000 < rb.pttl("k") <= 10_000
    # An absolute TTL already passed: REPLACE deletes the key, and nothing is created.
    assert rb.restore("k", int(time.time() * 1000) - 3000, p, replace=True, absttl=True) == b"OK"
    assert rb.exists("k") == 0
    assert rb.restore("k", 1, p, absttl=True) == b"OK"
    assert rb.exists("k") == 0
    with pytest.raises(redis.ResponseError, match="syntax error"):
        rb.execute_command("RESTORE", "k", 0, p, "BOGUS")
    with pytest.raises(redis.ResponseError, match="^Invalid TTL value, must be >= 0"):
        rb.restore("k", -1, p)
    with pytest.raises(redis.ResponseError, match="not an integer"):
        rb.execute_command("RESTORE", "k", "soon", p)
    with pytest.raises(redis.ResponseError, match="^Invalid IDLETIME value, must be >= 0"):
        rb.execute_command("RESTORE", "k", 0, p, "IDLETIME", -1)
    with pytest.raises(redis.ResponseError, match="^Invalid FREQ value, must be >= 0 and <= 255"):
        rb.execute_command("RESTORE", "k", 0, p, "FREQ", 256)
    # IDLETIME and FREQ together: the second is a syntax errorb.
    with pytest.raises(redis.ResponseError, match="syntax error"):
        rb.execute_command("RESTORE", "k", 0, p, "IDLETIME", 5, "FREQ", 5)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        rb.execute_command("RESTORE", "k", 0)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        rb.execute_command("DUMP")


def test_idletime_and_freq(rb, start_server, peer):
    rb.set("k", "v")
    p = rb.dump("k")
    assert rb.restore("lru", 0, p, idletime=1000) == b"OK"
    assert 1000 <= rb.object("idletime", "lru") <= 1010
    srv = start_server(maxmemory=8 * 1024 * 1024, policy="allkeys-lfu")
    c = bclient(srv.port)
    assert c.restore("lfu", 0, p, frequency=100) == b"OK"
    assert c.object("freq", "lfu") == 100
    c.close()


# ---- hostile payloads ----


def hostile_payloads():
    good = payload(b"\x00" + rdb_str(b"hello"))
    wrong_crc = bytearray(good)
    wrong_crc[-1] ^= 0xFF
    return {
        "wrong crc": (bytes(wrong_crc), CHECKSUM_ERR),
        "version 11": (payload(b"\x00" + rdb_str(b"hello"), version=11), CHECKSUM_ERR),
        "shorter than the footer": (b"\x00\x05hel", CHECKSUM_ERR),
        "truncated string": (payload(b"\x00" + rdb_len(40) + b"hel"), BAD_FORMAT),
        "string claiming 2^64 bytes": (payload(b"\x00" + rdb_len(2**64 - 1) + b"abc"), BAD_FORMAT),
        "list claiming 2^32 elements": (payload(b"\x01" + rdb_len(2**32) + rdb_str(b"a")), BAD_FORMAT),
        "quicklist claiming 2^32 nodes": (payload(b"\x12" + rdb_len(2**32) + b"\x02"
                                                  + rdb_str(listpack([b"a"]))), BAD_FORMAT),
        "ziplist claiming 2^32-1 bytes": (payload(b"\x0a" + rdb_str(ziplist([b"a", b"b"], total=2**32 - 1))),
                                          BAD_FORMAT),
        "ziplist with a wrong count": (payload(b"\x0a" + rdb_str(ziplist([b"a", b"b"], count=7))), BAD_FORMAT),
        "listpack with a wrong length": (payload(b"\x10" + rdb_str(listpack([b"f", b"v"], total_delta=5))),
                                         BAD_FORMAT),
        "listpack with a wrong count": (payload(b"\x10" + rdb_str(listpack([b"f", b"v"], count=65534))),
                                        BAD_FORMAT),
        "hash listpack with an odd count": (payload(b"\x10" + rdb_str(listpack([b"f", b"v", b"g"]))), BAD_FORMAT),
        "hash with a duplicate field": (payload(b"\x04\x02" + rdb_str(b"f") + rdb_str(b"1")
                                                + rdb_str(b"f") + rdb_str(b"2")), BAD_FORMAT),
        "intset with a bad length": (payload(b"\x0b" + rdb_str(struct.pack("<II", 2, 1000) + b"\x01\x00")),
                                     BAD_FORMAT),
        "intset out of order": (payload(b"\x0b" + rdb_str(struct.pack("<IIhh", 2, 2, 5, 3))), BAD_FORMAT),
        "lzf claiming 4 GiB": (payload(b"\x00\xc3" + rdb_len(2) + rdb_len(2**32 - 1) + b"\x00a"), BAD_FORMAT),
        "zset with a NaN score": (payload(b"\x05\x01" + rdb_str(b"m") + struct.pack("<d", float("nan"))),
                                  BAD_FORMAT),
        "empty hash": (payload(b"\x04\x00"), BAD_FORMAT),
        "unknown type": (payload(b"\x63\x00"), BAD_FORMAT),
    }


@pytest.mark.parametrize("name", list(hostile_payloads()))
def test_hostile_payloads_are_refused(sanitize, name):
    p, err = hostile_payloads()[name]
    rb = sanitize
    with pytest.raises(redis.ResponseError) as e:
        rb.restore("k", 0, p)
    assert str(e.value) == err, name
    assert rb.exists("k") == 0
    assert rb.ping()


@pytest.mark.locus_only
def test_a_value_running_into_the_footer_is_refused(rb):
    """Redis reads a value that ends inside the 10-byte footer (it takes "hel" plus the version
    bytes for a 5-byte string); Locus requires the value to end where the footer starts."""
    with pytest.raises(redis.ResponseError, match=f"^{BAD_FORMAT}$"):
        rb.restore("k", 0, payload(b"\x00\x05hel"))
    with pytest.raises(redis.ResponseError, match=f"^{BAD_FORMAT}$"):
        rb.restore("k", 0, payload(b"\x00\x02hey"))


def test_corrupted_redis_payloads_never_crash(sanitize):
    """Every truncation of a real payload, and every byte of it flipped (CRC fixed up): refused
    with Redis's error or restored, the server always answering."""
    rb = sanitize
    rb.hset("h", mapping={"a": "1", "bb": "x" * 30})
    rb.rpush("l", "one", "2", "three")
    for key in ("h", "l"):
        body = rb.dump(key)[:-10]
        for cut in range(len(body)):
            with pytest.raises(redis.ResponseError, match=BAD_FORMAT):
                rb.restore("t", 0, payload(body[:cut]), replace=True)
        for i in range(len(body)):
            b = bytearray(body)
            b[i] ^= 0x5A
            try:
                rb.restore("t", 0, payload(bytes(b)), replace=True)
            except redis.ResponseError as e:
                assert str(e) == BAD_FORMAT
        assert rb.ping()


# ---- notifications, WATCH, memory ----


def test_restore_notifies_and_touches_watch(rb, client_for, server):
    rb.set("k", "v")
    p = rb.dump("k")
    rb.delete("k")
    rb.config_set("notify-keyspace-events", "KEg")
    sub = client_for(server).pubsub()
    sub.psubscribe("__key*__:*")
    sub.get_message(timeout=2)
    try:
        assert rb.restore("k", 0, p) == b"OK"
        got = set()
        deadline = time.time() + 3
        while len(got) < 2 and time.time() < deadline:
            m = sub.get_message(timeout=0.5)
            if m and m["type"] == "pmessage":
                got.add((m["channel"], m["data"]))
        assert got == {("__keyspace@0__:k", "restore"), ("__keyevent@0__:restore", "k")}
    finally:
        rb.config_set("notify-keyspace-events", "")
        sub.close()
    w = client_for(server)
    with w.pipeline() as pipe:
        pipe.watch("k")
        rb.restore("k", 0, p, replace=True)
        pipe.multi()
        pipe.get("k")
        with pytest.raises(redis.WatchError):
            pipe.execute()


def test_restore_wakes_a_blocked_pop(rb, client_for, server):
    rb.rpush("src", "x")
    p = rb.dump("src")
    import threading
    out = []
    c = client_for(server)
    t = threading.Thread(target=lambda: out.append(c.blpop("dst", timeout=5)))
    t.start()
    time.sleep(0.3)
    assert rb.restore("dst", 0, p) == b"OK"
    t.join(6)
    assert out == [("dst", "x")]


@pytest.mark.locus_only
def test_restore_is_charged_and_refused_when_full(start_server):
    """RESTORE is a write of the caller's tenant: under noeviction a value that does not fit gets
    OOM as SET would, and nothing changes."""
    srv = start_server(maxmemory=8 * 1024 * 1024, policy="noeviction")
    c = bclient(srv.port)
    c.rpush("big", *[b"v" * 1000 for _ in range(5000)])  # about 5 MB of an 8 MB budget
    p = c.dump("big")
    with pytest.raises(redis.ResponseError, match="^command not allowed when used memory"):
        c.restore("copy", 0, p)
    assert c.exists("copy") == 0 and c.llen("big") == 5000
    # With the room made, the same payload restores.
    c.delete("big")
    assert c.restore("copy", 0, p) == b"OK"
    assert c.llen("copy") == 5000
    # A value larger than the whole budget is refused before it is built.
    huge = payload(b"\x00" + rdb_str(b"x" * (9 * 1024 * 1024)))
    with pytest.raises(redis.ResponseError, match="^command not allowed when used memory"):
        c.restore("huge", 0, huge)
    assert c.exists("huge") == 0 and c.llen("copy") == 5000
    c.close()


# ---- tenancy (Locus only) ----

TENANTS = """
[[tenant]]
name = "a"
{a}

[[tenant]]
name = "b"
{b}
"""


def _start(start_locus_toml, mode, a, b):
    (main,) = free_ports(1)
    toml = f"""
[server]
bind = "127.0.0.1"
port = {main}

[tenancy]
mode = "{mode}"
""" + TENANTS.format(a=a, b=b)
    return start_locus_toml(toml, main)


@pytest.mark.locus_only
@pytest.mark.parametrize("mode", ["user", "db", "prefix"])
def test_restore_and_dump_stay_in_the_callers_tenant(start_locus_toml, mode):
    if mode == "user":
        srv = _start(start_locus_toml, mode, 'user = "alice"\npassword = "pa"', 'user = "bob"\npassword = "pb"')
        ca = redis.Redis(host=HOST, port=srv.port, username="alice", password="pa", retry=no_retry())
        cb = redis.Redis(host=HOST, port=srv.port, username="bob", password="pb", retry=no_retry())
        ka, kb = "k", "k"
    elif mode == "db":
        srv = _start(start_locus_toml, mode, "db = 0", "db = 3")
        ca = redis.Redis(host=HOST, port=srv.port, db=0, retry=no_retry())
        cb = redis.Redis(host=HOST, port=srv.port, db=3, retry=no_retry())
        ka, kb = "k", "k"
    else:
        srv = _start(start_locus_toml, mode, 'prefix = "a:"', 'prefix = "b:"')
        ca = cb = redis.Redis(host=HOST, port=srv.port, retry=no_retry())
        ka, kb = "a:k", "b:k"
    cb.hset(kb, mapping={"owner": "b"})
    ca.hset(ka, mapping={"owner": "a"})
    pa = ca.dump(ka)
    pb = cb.dump(kb)
    # A restores over its own key: B's is untouched.
    assert ca.restore(ka, 0, pb, replace=True) == b"OK"
    assert ca.hgetall(ka) == {b"owner": b"b"}
    assert cb.hgetall(kb) == {b"owner": b"b"}
    assert ca.restore(ka, 0, pa, replace=True) == b"OK"
    assert cb.hgetall(kb) == {b"owner": b"b"}
    # A new key restored by A exists in A only.
    new_a, new_b = ("a:new", "b:new") if mode == "prefix" else ("new", "new")
    assert ca.restore(new_a, 0, pa) == b"OK"
    assert cb.exists(new_b) == 0
    if mode != "prefix":
        # The same name in B: DUMP finds nothing of A's.
        cb.delete(kb)
        assert cb.dump(kb) is None
        assert cb.dump("new") is None
        assert ca.dump(ka) == pa
    ca.close()
    cb.close()


# ---- MIGRATE ----


@pytest.fixture
def target_redis():
    srv = start_redis()
    c = bclient(srv.port)
    yield srv, c
    c.close()
    srv.stop()


def test_migrate_moves_copies_and_replaces(rb, target_redis):
    srv, dst = target_redis
    rb.set("key", "Some Value")
    rb.expire("key", 10)
    rb.rpush("list", "a", "b", "c")
    assert rb.execute_command("MIGRATE", HOST, srv.port, "key", 9, 5000) == b"OK"
    assert rb.exists("key") == 0
    dst.select(9)
    assert dst.get("key") == b"Some Value"
    assert 7 <= dst.ttl("key") <= 10
    # COPY keeps the source; without REPLACE an existing target key is an error from the target.
    assert rb.execute_command("MIGRATE", HOST, srv.port, "list", 9, 5000, "COPY") == b"OK"
    assert rb.lrange("list", 0, -1) == dst.lrange("list", 0, -1) == [b"a", b"b", b"c"]
    rb.rpush("list", "d")
    with pytest.raises(redis.ResponseError, match="^Target instance replied with error: BUSYKEY"):
        rb.execute_command("MIGRATE", HOST, srv.port, "list", 9, 5000, "COPY")
    assert rb.execute_command("MIGRATE", HOST, srv.port, "list", 9, 5000, "COPY", "REPLACE") == b"OK"
    assert dst.lrange("list", 0, -1) == [b"a", b"b", b"c", b"d"]
    assert rb.exists("list") == 1
    # Nothing to move.
    assert rb.execute_command("MIGRATE", HOST, srv.port, "missing", 9, 5000) == b"NOKEY"


def test_migrate_keys(rb, target_redis):
    srv, dst = target_redis
    rb.mset({"k1": "v1", "k2": "v2", "k3": "v3"})
    with pytest.raises(redis.ResponseError, match="the key argument must be set to the empty string"):
        rb.execute_command("MIGRATE", HOST, srv.port, "k1", 0, 5000, "KEYS", "k1", "k2")
    assert rb.execute_command("MIGRATE", HOST, srv.port, "", 0, 5000, "KEYS", "nokey-1", "nokey-2") == b"NOKEY"
    dst.set("k2", "busy")
    with pytest.raises(redis.ResponseError, match="^Target instance replied with error: BUSYKEY"):
        rb.execute_command("MIGRATE", HOST, srv.port, "", 0, 5000, "KEYS", "k1", "nokey", "k2", "k3")
    # The keys the target took are gone here; the refused one stays.
    assert rb.exists("k1", "k2", "k3") == 1 and rb.get("k2") == b"v2"
    assert dst.mget("k1", "k2", "k3") == [b"v1", b"busy", b"v3"]


def test_migrate_auth_and_errors(rb, target_redis):
    srv, dst = target_redis
    dst.config_set("requirepass", "foobar")
    dst.auth("foobar")
    rb.rpush("list", "a", "b")
    assert rb.execute_command("MIGRATE", HOST, srv.port, "list", 0, 5000, "AUTH", "foobar") == b"OK"
    assert dst.lrange("list", 0, -1) == [b"a", b"b"]
    rb.rpush("list", "c")
    with pytest.raises(redis.ResponseError, match="WRONGPASS"):
        rb.execute_command("MIGRATE", HOST, srv.port, "list", 0, 5000, "AUTH", "nope")
    assert rb.exists("list") == 1
    assert rb.execute_command("MIGRATE", HOST, srv.port, "list", 0, 5000, "AUTH2", "default", "foobar",
                              "REPLACE") == b"OK"
    assert dst.lrange("list", 0, -1) == [b"c"]
    with pytest.raises(redis.ResponseError, match="syntax error"):
        rb.execute_command("MIGRATE", HOST, srv.port, "list", 0, 5000, "AUTH")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        rb.execute_command("MIGRATE", HOST, srv.port, "list", 0, 5000, "BOGUS")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        rb.execute_command("MIGRATE", HOST, srv.port, "list", "x", 5000)


def test_command_info_and_getkeys(rb, server):
    from harness import Raw
    with Raw(server.port) as c:
        info = c.call("COMMAND", "INFO", "dump", "restore", "migrate")
        one = c.call("COMMAND", "GETKEYS", "MIGRATE", "h", 1, "k", 0, 10)
        many = c.call("COMMAND", "GETKEYS", "MIGRATE", "h", 1, "", 0, 10, "COPY", "KEYS", "a", "b")
    assert [(x[0], x[1], sorted(str(f) for f in x[2]), x[3], x[4], x[5]) for x in info] == [
        (b"dump", 2, ["readonly"], 1, 1, 1),
        (b"restore", -4, ["denyoom", "write"], 1, 1, 1),
        (b"migrate", -6, ["movablekeys", "write"], 3, 3, 1),
    ]
    assert one == [b"k"]
    assert many == [b"a", b"b"]


def test_migrate_io_errors_and_timeout(rb):
    import socket
    rb.set("k", "v")
    (closed,) = free_ports(1)
    # (redis-server's connect does not see the refusal and reports the write that follows.)
    with pytest.raises(redis.ResponseError, match="^IOERR error or timeout (connecting|writing)"):
        rb.execute_command("MIGRATE", HOST, closed, "k", 0, 500)
    # A target that accepts and never answers: the read times out, the key stays.
    mute = socket.socket()
    mute.bind((HOST, 0))
    mute.listen(1)
    try:
        t0 = time.time()
        with pytest.raises(redis.ResponseError, match="^IOERR error or timeout reading to target instance"):
            rb.execute_command("MIGRATE", HOST, mute.getsockname()[1], "k", 0, 300)
        assert time.time() - t0 < 5
    finally:
        mute.close()
    assert rb.get("k") == b"v"


@pytest.mark.locus_only
def test_migrate_waits_without_stalling_other_clients(rb, server):
    """The round trip runs with the engine unlocked: while one client's MIGRATE waits for a mute
    target, another client is served at once."""
    import socket
    import threading
    rb.set("k", "v")
    mute = socket.socket()
    mute.bind((HOST, 0))
    mute.listen(1)
    other = bclient(server.port)
    err = []
    t = threading.Thread(target=lambda: err.append(
        pytest.raises(redis.ResponseError, rb.execute_command, "MIGRATE", HOST, mute.getsockname()[1], "k", 0, 2000)))
    t.start()
    time.sleep(0.3)
    t0 = time.time()
    assert other.set("x", "y") and other.get("x") == b"y"
    assert time.time() - t0 < 1.0
    t.join(5)
    mute.close()
    other.close()
    assert len(err) == 1


def test_migrate_reply_follows_the_pipeline_and_client_reply(rb, server, target_redis):
    """MIGRATE's reply comes in its place among pipelined replies; CLIENT REPLY SKIP drops it."""
    from harness import Raw
    srv, dst = target_redis
    rb.mset({"a": "1", "b": "2"})

    def cmd(*args):
        out = b"*%d\r\n" % len(args)
        for x in args:
            x = str(x).encode()
            out += b"$%d\r\n%s\r\n" % (len(x), x)
        return out

    with Raw(server.port) as c:
        c.send(cmd("PING", "one") + cmd("MIGRATE", HOST, srv.port, "a", 0, 5000) + cmd("PING", "two")
               + cmd("CLIENT", "REPLY", "SKIP") + cmd("MIGRATE", HOST, srv.port, "b", 0, 5000)
               + cmd("PING", "three"))
        assert [c.read() for _ in range(4)] == [b"one", "OK", b"two", b"three"]
    assert dst.mget("a", "b") == [b"1", b"2"] and rb.exists("a", "b") == 0


def test_migrate_from_redis_into_the_server_under_test(rb, server, target_redis):
    """redis-server's own MIGRATE sends SELECT and RESTORE: it moves keys into the server under
    test."""
    srv, src = target_redis
    src.hset("h", mapping={"a": "1", "b": "2"})
    src.zadd("z", {"m": 1.5})
    assert src.execute_command("MIGRATE", HOST, server.port, "", 0, 5000, "KEYS", "h", "z") == b"OK"
    assert rb.hgetall("h") == {b"a": b"1", b"b": b"2"}
    assert rb.zrange("z", 0, -1, withscores=True) == [(b"m", 1.5)]
    assert src.exists("h", "z") == 0


def test_migrate_inside_multi(rb, target_redis, peer):
    srv, dst = target_redis
    rb.set("k", "v")
    p = rb.pipeline(transaction=True)
    p.execute_command("MIGRATE", HOST, srv.port, "k", 0, 5000)
    if peer == "redis":
        assert p.execute() == [b"OK"]
    else:
        # Locus refuses to wait for the network inside EXEC (the key stays).
        res = p.execute(raise_on_error=False)
        assert isinstance(res[0], redis.ResponseError) and "MULTI/EXEC" in str(res[0])
        assert rb.get("k") == b"v"


@pytest.mark.locus_only
def test_migrate_is_the_admins_on_a_server_with_tenants(start_locus_toml, target_redis):
    """MIGRATE opens a connection to any host and port its caller names: a tenant must not get a
    way out of its sandbox, so on a server with tenants only the admin may run it (a tenant gets
    NOPERM and nothing reaches the target, whatever keys it names)."""
    srv, dst = target_redis
    loc = _start(start_locus_toml, "db", "db = 0", "db = 3")
    ca = redis.Redis(host=HOST, port=loc.port, db=0, retry=no_retry())
    cb = redis.Redis(host=HOST, port=loc.port, db=3, retry=no_retry())
    cb.set("secret", "b's")
    ca.set("mine", "a's")
    for args in (("secret", 0, 5000), ("", 0, 5000, "KEYS", "secret", "mine")):
        with pytest.raises(redis.ResponseError, match="on a server with tenants it is the admin"):
            ca.execute_command("MIGRATE", HOST, srv.port, *args)
    assert dst.keys("*") == []
    assert cb.get("secret") == b"b's" and ca.get("mine") == b"a's"
    pre = _start(start_locus_toml, "prefix", 'prefix = "a:"', 'prefix = "b:"')
    c = redis.Redis(host=HOST, port=pre.port, retry=no_retry())
    c.set("a:1", "x")
    with pytest.raises(redis.ResponseError, match="on a server with tenants it is the admin"):
        c.execute_command("MIGRATE", HOST, srv.port, "a:1", 0, 5000)
    assert c.exists("a:1") == 1 and dst.keys("*") == []
    ca.close()
    cb.close()
    c.close()
