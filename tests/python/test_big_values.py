"""Big values and composite keys (issue 12, acceptance 4): a 100 MB value round-trips; a value
larger than the budget gets Redis's OOM error and nothing else is lost; MEMORY USAGE of big and
composite keys is within 10% of what the engine charges for them (the growth of INFO's
used_memory when the key is written)."""

import hashlib

import pytest
import redis

from conftest import no_retry
from harness import HOST, Raw

pytestmark = pytest.mark.locus_only

MIB = 1 << 20


def used_memory(c: redis.Redis) -> int:
    return int(c.info("memory")["used_memory"])


def test_a_100_mb_value_round_trips(start_server):
    srv = start_server(maxmemory=512 * MIB, policy="allkeys-lru")
    c = redis.Redis(host=HOST, port=srv.port, retry=no_retry(), socket_timeout=60)
    value = hashlib.sha256(b"locus").digest() * (100 * 1000 * 1000 // 32)
    assert len(value) == 100_000_000
    assert c.set("big", value)
    got = c.get("big")
    assert len(got) == len(value) and got == value
    assert c.strlen("big") == 100_000_000
    assert c.getrange("big", 99_999_990, -1) == value[-10:]
    assert c.append("big", b"tail") == 100_000_004
    assert c.get("big")[-4:] == b"tail"


def test_a_value_larger_than_the_budget_is_refused_and_nothing_is_lost(start_server):
    srv = start_server(maxmemory=64 * MIB, policy="allkeys-lru")
    c = redis.Redis(host=HOST, port=srv.port, retry=no_retry(), socket_timeout=60)
    keep = {f"k{i}": f"v{i}" * 10 for i in range(1000)}
    c.mset(keep)
    c.hset("h", mapping={f"f{i}": "x" for i in range(300)})
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        c.set("huge", b"x" * (100 * MIB))
    assert c.exists("huge") == 0
    assert c.dbsize() == 1001
    assert c.mget(list(keep)) == [v.encode() for v in keep.values()]
    assert c.hlen("h") == 300
    assert c.set("after", "ok")


@pytest.mark.parametrize("kind", ["string", "hash"])
def test_memory_usage_is_what_the_engine_charges(start_server, kind):
    srv = start_server(maxmemory=512 * MIB, policy="allkeys-lru")
    c = redis.Redis(host=HOST, port=srv.port, retry=no_retry(), socket_timeout=60)
    c.set("warm", "x")  # the first pages of the table and the index
    before = used_memory(c)
    if kind == "string":
        c.set("k", b"y" * (20 * MIB))
    else:
        p = c.pipeline(transaction=False)
        for i in range(100_000):
            p.hset("k", f"field:{i}", f"value:{i}")
        p.execute()
    grew = used_memory(c) - before
    usage = c.memory_usage("k")
    print(f"{kind}: MEMORY USAGE {usage} bytes, used_memory grew {grew} bytes")
    assert abs(usage - grew) <= 0.10 * grew, (usage, grew)


def test_memory_usage_of_a_missing_key_and_of_a_small_hash(start_server):
    srv = start_server(maxmemory=64 * MIB, policy="allkeys-lru")
    with Raw(srv.port) as c:
        assert c.call("MEMORY", "USAGE", "nokey") is None
        c.call("HSET", "h", "a", "1")
        small = c.call("MEMORY", "USAGE", "h")
        c.call("HSET", "h", "b", "x" * 1000)
        assert c.call("MEMORY", "USAGE", "h") > small + 1000
