"""Server commands: DBSIZE FLUSHDB FLUSHALL INFO CONFIG COMMAND MEMORY OBJECT."""

import re

import pytest
from redis.exceptions import ResponseError

from harness import Raw, wait_until


def raises(msg):
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


@pytest.fixture
def restore_config(server):
    """Put maxmemory, maxmemory-policy and maxmemory-samples back as they were."""
    with Raw(server.port) as c:
        before = c.call("CONFIG", "GET", "maxmemory*")
    yield
    with Raw(server.port) as c:
        pairs = dict(zip(before[0::2], before[1::2])) if isinstance(before, list) else before
        for k in (b"maxmemory", b"maxmemory-policy", b"maxmemory-samples"):
            assert c.call("CONFIG", "SET", k, pairs[k]) == "OK"


def test_dbsize_flushdb_flushall(r):
    assert r.dbsize() == 0
    r.mset({f"k{i}": "v" for i in range(10)})
    assert r.dbsize() == 10
    assert r.flushdb() is True
    assert r.dbsize() == 0
    r.mset({"a": "1"})
    assert r.flushall() is True
    assert r.dbsize() == 0
    r.set("a", "1")
    assert r.execute_command("FLUSHALL", "ASYNC")
    assert r.dbsize() == 0
    r.set("a", "1")
    assert r.execute_command("FLUSHDB", "SYNC")
    assert r.dbsize() == 0
    with raises("syntax error"):
        r.execute_command("FLUSHALL", "BOGUS")


def test_info_sections(r, server):
    info = r.info()  # default sections
    for key in ("redis_version", "tcp_port", "process_id", "uptime_in_seconds", "connected_clients",
                "used_memory", "maxmemory", "maxmemory_policy", "total_commands_processed",
                "keyspace_hits", "keyspace_misses", "expired_keys", "evicted_keys"):
        assert key in info, key
    assert info["tcp_port"] == server.port
    assert info["process_id"] == server.proc.pid
    assert info["connected_clients"] >= 1


def test_info_raw_layout(raw):
    text = raw.call("INFO").decode()
    assert "\r\n" in text
    headers = re.findall(r"^# (\w+)\r$", text, flags=re.M)
    for sec in ("Server", "Clients", "Memory", "Stats", "Keyspace"):
        assert sec in headers, headers
    only_mem = raw.call("INFO", "memory").decode()
    assert re.findall(r"^# (\w+)\r$", only_mem, flags=re.M) == ["Memory"]
    assert re.search(r"^used_memory:\d+\r$", only_mem, flags=re.M)
    assert re.search(r"^maxmemory:\d+\r$", only_mem, flags=re.M)
    two = raw.call("INFO", "server", "keyspace").decode()
    assert re.findall(r"^# (\w+)\r$", two, flags=re.M) == ["Server", "Keyspace"]
    assert raw.call("INFO", "nosuchsection") == b""
    everything = raw.call("INFO", "everything").decode()
    assert "# Keyspace" in everything and "# Memory" in everything


def test_info_keyspace(r):
    assert r.info("keyspace") == {}
    r.mset({"a": "1", "b": "2"})
    r.set("c", "3", ex=100)
    ks = r.info("keyspace")
    assert ks["db0"]["keys"] == 3 and ks["db0"]["expires"] == 1
    assert ks["db0"]["avg_ttl"] >= 0


def test_info_stats_hits_misses_and_resetstat(r):
    assert r.config_resetstat() is True
    r.set("k", "v")
    r.get("k")
    r.get("k")
    r.get("missing")
    stats = r.info("stats")
    assert stats["keyspace_hits"] == 2
    assert stats["keyspace_misses"] == 1
    r.config_resetstat()
    stats = r.info("stats")
    assert stats["keyspace_hits"] == 0 and stats["keyspace_misses"] == 0


def test_config_get_set_maxmemory(r, restore_config):
    assert r.config_set("maxmemory", 100 * 1024 * 1024) is True
    assert r.config_get("maxmemory") == {"maxmemory": str(100 * 1024 * 1024)}
    assert r.config_set("maxmemory", "200mb")
    assert r.config_get("maxmemory") == {"maxmemory": str(200 * 1024 * 1024)}
    assert r.info("memory")["maxmemory"] == 200 * 1024 * 1024
    with raises("CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"):
        r.config_set("maxmemory", "lots")


@pytest.mark.parametrize("policy", ["noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
                                    "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"])
def test_config_set_policy(r, restore_config, policy):
    assert r.config_set("maxmemory-policy", policy)
    assert r.config_get("maxmemory-policy") == {"maxmemory-policy": policy}
    assert r.info("memory")["maxmemory_policy"] == policy


def test_config_set_bad_policy_and_samples(r, restore_config):
    redis_text = ("CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one "
                  "of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, "
                  "allkeys-lfu, allkeys-random, noeviction")
    # Redis's text exactly; Locus may append its extra policy to the list
    with pytest.raises(ResponseError, match="^" + re.escape(redis_text) + "(, allkeys-exact-lru, allkeys-hyperbolic)?$"):
        r.config_set("maxmemory-policy", "lru")
    assert r.config_set("maxmemory-samples", 10)
    assert r.config_get("maxmemory-samples") == {"maxmemory-samples": "10"}
    # Redis accepts 1..INT_MAX, Locus 1..64: both reject 0 with this prefix
    with pytest.raises(ResponseError, match=r"^CONFIG SET failed \(possibly related to argument 'maxmemory-samples'\)"):
        r.config_set("maxmemory-samples", 0)
    with pytest.raises(ResponseError, match=r"^CONFIG SET failed \(possibly related to argument 'maxmemory-samples'\)"):
        r.config_set("maxmemory-samples", "abc")
    assert r.config_get("maxmemory-samples") == {"maxmemory-samples": "10"}


def test_config_get_patterns(r):
    got = r.config_get("maxmemory*")
    assert {"maxmemory", "maxmemory-policy", "maxmemory-samples"} <= set(got)
    assert r.config_get("no-such-parameter") == {}
    two = r.config_get("maxmemory", "maxmemory-policy")
    assert set(two) == {"maxmemory", "maxmemory-policy"}


def test_config_set_unknown(r):
    with raises("Unknown option or number of arguments for CONFIG SET - 'no-such-parameter'"):
        r.config_set("no-such-parameter", "1")


def test_command_count_info_docs(server, protocol):
    with Raw(server.port) as c:
        c.call("HELLO", str(protocol))
        n = c.call("COMMAND", "COUNT")
        assert isinstance(n, int) and n >= 30
        info = c.call("COMMAND", "INFO", "get", "SET", "mget", "del", "no-such-command")
        assert len(info) == 5
        get, set_, mget, del_, none = info
        assert none is None
        assert get[0] == b"get" and get[1] == 2 and get[3:6] == [1, 1, 1]
        assert set_[0] == b"set" and set_[1] == -3 and set_[3:6] == [1, 1, 1]
        assert mget[0] == b"mget" and mget[1] == -2 and mget[3:6] == [1, -1, 1]
        assert del_[0] == b"del" and del_[1] == -2 and del_[3:6] == [1, -1, 1]
        assert "readonly" in get[2] and "write" in set_[2]
        docs = c.call("COMMAND", "DOCS", "get")
        if isinstance(docs, list):  # RESP2: flat name/doc pairs
            docs = {docs[0]: docs[1]}
        doc = docs[b"get"]
        if isinstance(doc, list):
            doc = dict(zip(doc[0::2], doc[1::2]))
        assert doc[b"summary"]
        assert doc[b"group"] == b"string"


def test_memory_usage(r):
    assert r.memory_usage("missing") is None
    r.set("small", "x" * 10)
    r.set("large", "x" * 10_000)
    small, large = r.memory_usage("small"), r.memory_usage("large")
    assert len("small") + 10 <= small <= 512
    assert 10_000 <= large <= 2 * 10_000 + 512
    assert large > small


def test_object_encoding(r):
    r.set("int", "12345")
    r.set("short", "hello")
    r.set("long", "x" * 100)
    assert r.object("encoding", "int") == "int"
    assert r.object("encoding", "short") == "embstr"
    assert r.object("encoding", "long") == "raw"
    assert r.object("encoding", "missing") is None
    # a value modified in place (APPEND, SETRANGE) is "raw" in Redis, whatever its length or content
    r.set("appended", "12")
    r.append("appended", "3")
    assert r.object("encoding", "appended") == "raw"
    r.set("ranged", "ab")
    r.setrange("ranged", 0, "c")
    assert r.object("encoding", "ranged") == "raw"
    r.set("floated", "5")
    r.incrbyfloat("floated", 5)  # "10", written by INCRBYFLOAT: embstr, not int
    assert r.object("encoding", "floated") == "embstr"
    r.incr("floated")
    assert r.object("encoding", "floated") == "int"


def test_object_idletime(server, client_for):
    c = client_for(server)
    c.set("idle", "v")
    assert c.object("idletime", "idle") == 0
    wait_until(lambda: c.object("idletime", "idle") >= 1, timeout=4, what="OBJECT IDLETIME to reach 1 s")
    c.get("idle")  # an access resets it
    assert c.object("idletime", "idle") == 0
    assert c.object("idletime", "missing") is None


def test_object_freq_requires_lfu(r, restore_config):
    r.config_set("maxmemory-policy", "allkeys-lru")
    r.set("k", "v")
    with raises("An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when "
                "switching between policies at runtime LRU and LFU data will take some time to adjust."):
        r.object("freq", "k")
    r.config_set("maxmemory-policy", "allkeys-lfu")
    r.set("hot", "v")
    r.set("cold", "v")
    for _ in range(100):
        r.get("hot")
    assert r.object("freq", "hot") > r.object("freq", "cold")
    with raises("An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
                "switching between policies at runtime LRU and LFU data will take some time to adjust."):
        r.object("idletime", "hot")


def test_function_flush_and_list_answer_as_redis_with_no_library(raw):
    # Redis's test suite and some clients send FUNCTION FLUSH to start clean.
    assert raw.call("FUNCTION", "FLUSH") == "OK"
    assert raw.call("FUNCTION", "FLUSH", "SYNC") == "OK"
    assert raw.call("FUNCTION", "FLUSH", "BOGUS") == "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
    assert raw.call("FUNCTION", "LIST") == []
    assert raw.call("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "x*") == []
    assert raw.call("FUNCTION", "DELETE", "nolib") == "ERR Library not found"
    assert raw.call("FUNCTION", "KILL") == "NOTBUSY No scripts in execution right now."
    # (Redis lists its LUA engine with zero libraries; Locus has no engine.)
    assert raw.call("FUNCTION", "STATS")[:3] == [b"running_script", None, b"engines"]


def _cmdstat(raw, name):
    text = raw.call("INFO", "commandstats")
    text = text.decode() if isinstance(text, bytes) else str(text)
    for line in text.splitlines():
        if line.startswith(f"cmdstat_{name}:"):
            return dict(kv.split("=") for kv in line.split(":", 1)[1].split(","))
    return None


def test_info_cpu_and_commandstats(raw):
    info = raw.call("INFO")
    info = info.decode() if isinstance(info, bytes) else str(info)
    assert "used_cpu_user:" in info and "cmdstat_" not in info  # commandstats only when asked
    before = _cmdstat(raw, "incr") or {"calls": "0", "rejected_calls": "0", "failed_calls": "0"}
    raw.call("SET", "cs", "notanumber")
    assert raw.call("INCR", "cs").startswith("ERR value is not an integer")  # failed
    assert raw.call("INCR").startswith("ERR wrong number of arguments")  # rejected
    raw.call("SET", "cs", "1")
    assert raw.call("INCR", "cs") == 2
    after = _cmdstat(raw, "incr")
    assert int(after["calls"]) - int(before["calls"]) == 2
    assert int(after["failed_calls"]) - int(before["failed_calls"]) == 1
    assert int(after["rejected_calls"]) - int(before["rejected_calls"]) == 1
    cpu = raw.call("INFO", "cpu", "commandstats")
    cpu = cpu.decode() if isinstance(cpu, bytes) else str(cpu)
    assert "used_cpu_sys:" in cpu and "cmdstat_incr:" in cpu and "used_memory:" not in cpu
    raw.call("DEL", "cs")
