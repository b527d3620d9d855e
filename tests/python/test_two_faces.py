"""One value, two protocols (issue #27, point 5): a key written over memcached and read over RESP
(or the other way) holds the same bytes both ways. memcached's flags and CAS unique are kept
beside the value, never in it: RESP `GET` of a memcached-set key returns exactly its data; a
memcached `get` of a RESP-set key is a hit with flags 0, and `gets` gives it a CAS unique that a
later RESP write invalidates. Checked in user, port, db and prefix tenancy, wherever the memcached
face reaches the tenant, with pymemcache and redis-py; and across a restart from a snapshot.

Locus's own: redis-server and memcached are separate servers."""

from __future__ import annotations

import pytest
import redis
from pymemcache.client.base import Client

import harness
from harness import HOST, free_ports

pytestmark = [pytest.mark.memcached, pytest.mark.locus_only]


class KeepFlags:
    """pymemcache serde that hands back (bytes, flags) and stores bytes with the flags given
    as a (bytes, flags) pair, so tests see memcached's flags exactly."""

    def serialize(self, key, value):
        if isinstance(value, tuple):
            return value
        return value, 0

    def deserialize(self, key, value, flags):
        return value, flags


def mc_client(port: int, login: tuple[str, str] | None = None) -> Client:
    c = Client((HOST, port), serde=KeepFlags(), default_noreply=False, connect_timeout=5,
               timeout=5)
    if login:
        # memcached's ASCII authentication: a set whose data is "user password".
        assert c.set("auth", f"{login[0]} {login[1]}".encode()) is True
    return c


def start(start_locus_toml, mode: str):
    """Locus in `mode` tenancy, tenant a reachable over memcached and RESP. Returns (memcached
    client, redis client, key prefix)."""
    main, pa, pb, mc = free_ports(4)
    head = f'[server]\nbind = "{HOST}"\nport = {main}\n\n[memory]\nmaxmemory = "64MiB"\n\n'
    if mode == "user":
        toml = (head + f'[tenancy]\nmode = "user"\ndefault_tenant = "a"\n\n[memcached]\nport = {mc}\nauth = true\n\n'
                '[[tenant]]\nname = "a"\nuser = "alice"\npassword = "apw"\n')
        srv = start_locus_toml(toml, main)
        return (mc_client(mc, ("alice", "apw")),
                redis.Redis(host=HOST, port=main, username="alice", password="apw"), "", srv)
    if mode == "port":
        toml = (head + '[tenancy]\nmode = "port"\n\n'
                f'[[tenant]]\nname = "a"\nport = {pa}\nmemcached_port = {mc}\n\n'
                f'[[tenant]]\nname = "b"\nport = {pb}\n')
        srv = start_locus_toml(toml, pa)
        return mc_client(mc), redis.Redis(host=HOST, port=pa), "", srv
    if mode == "db":
        toml = (head + '[tenancy]\nmode = "db"\n\n'
                f'[[tenant]]\nname = "a"\ndb = 3\nmemcached_port = {mc}\n\n'
                '[[tenant]]\nname = "b"\ndb = 0\n')
        srv = start_locus_toml(toml, main)
        return mc_client(mc), redis.Redis(host=HOST, port=main, db=3), "", srv
    assert mode == "prefix"
    toml = (head + f'[tenancy]\nmode = "prefix"\n\n[memcached]\nport = {mc}\n\n'
            '[[tenant]]\nname = "a"\nprefix = "a:"\n\n[[tenant]]\nname = "b"\nprefix = "b:"\n')
    srv = start_locus_toml(toml, main)
    return mc_client(mc), redis.Redis(host=HOST, port=main), "a:", srv


MODES = ["user", "port", "db", "prefix"]


@pytest.mark.parametrize("mode", MODES)
def test_a_memcached_value_reads_the_same_over_resp(start_locus_toml, mode):
    m, r, p, _ = start(start_locus_toml, mode)
    k = p + "greeting"
    assert m.set(k, (b"hello world", 42), expire=100) is True
    # Exactly the data: no header in front.
    assert r.get(k) == b"hello world"
    assert r.strlen(k) == 11
    assert r.getrange(k, 0, 4) == b"hello"
    assert 90 <= r.ttl(k) <= 100
    assert r.type(k) == b"string"
    # The flags are still memcached's.
    assert m.get(k) == (b"hello world", 42)
    # Values of every length, the empty one and binary bytes included.
    for i, v in enumerate([b"", b"x", b"\x00" * 13, bytes(range(256)) * 40]):
        assert m.set(f"{p}v{i}", (v, 7)) is True
        assert r.get(f"{p}v{i}") == v
        assert m.get(f"{p}v{i}") == (v, 7)
    # incr/append over memcached, read over RESP.
    assert m.set(p + "n", b"41") is True
    assert m.incr(p + "n", 1) == 42
    assert r.get(p + "n") == b"42"
    assert m.append(p + "greeting", b"!") is True
    assert r.get(k) == b"hello world!"
    # RENAME keeps the flags; DEL over RESP removes a memcached item.
    assert r.rename(k, p + "renamed")
    assert m.get(p + "renamed") == (b"hello world!", 42)
    assert r.delete(p + "renamed") == 1
    assert m.get(p + "renamed") is None


@pytest.mark.parametrize("mode", MODES)
def test_a_resp_value_is_a_memcached_hit_with_flags_0(start_locus_toml, mode):
    m, r, p, _ = start(start_locus_toml, mode)
    k = p + "r"
    assert r.set(k, b"from resp", ex=200)
    assert m.get(k) == (b"from resp", 0)
    value, cas = m.gets(k)
    assert value == (b"from resp", 0) and int(cas) > 0
    # Reading it over memcached changed nothing RESP sees.
    assert r.get(k) == b"from resp" and 190 <= r.ttl(k) <= 200
    # Its CAS unique works...
    assert m.cas(k, (b"swapped", 5), cas) is True
    assert r.get(k) == b"swapped"
    assert m.get(k) == (b"swapped", 5)
    # ...and a RESP write invalidates it: the flags go back to 0, the old unique is refused.
    _, cas = m.gets(k)
    assert r.set(k, b"resp again")
    assert m.cas(k, (b"lost", 9), cas) is False
    assert m.get(k) == (b"resp again", 0)
    # A RESP APPEND or SETRANGE on a memcached item: the bytes are what RESP made, flags 0.
    assert m.set(p + "a", (b"abc", 3)) is True
    assert r.append(p + "a", b"def") == 6
    assert m.get(p + "a") == (b"abcdef", 0)
    assert r.get(p + "a") == b"abcdef"
    # delete and touch over memcached act on a RESP key.
    assert r.set(p + "d", b"x")
    assert m.touch(p + "d", 50) is True
    assert 40 <= r.ttl(p + "d") <= 50
    assert m.delete(p + "d") is True
    assert r.exists(p + "d") == 0


def test_the_other_prefix_tenant_sees_nothing(start_locus_toml):
    m, r, p, _ = start(start_locus_toml, "prefix")
    assert m.set("a:mine", (b"secret", 1)) is True
    assert r.get("b:mine") is None
    assert m.set("b:mine", (b"other", 2)) is True
    assert r.get("b:mine") == b"other" and r.get("a:mine") == b"secret"
    assert m.get("a:mine") == (b"secret", 1) and m.get("b:mine") == (b"other", 2)


def test_memcached_items_survive_a_restart(tmp_path):
    """SAVE writes a memcached item with its flags and CAS unique; a restart loads both."""
    main, mc = free_ports(2)
    toml = (f'[server]\nbind = "{HOST}"\nport = {main}\n\n[memory]\nmaxmemory = "64MiB"\n\n'
            f'[memcached]\nport = {mc}\n\n[snapshot]\ndir = "{tmp_path}"\nsave = []\n')
    srv = harness.start_locus(toml, main, {"memcached": mc})
    try:
        m, r = mc_client(mc), redis.Redis(host=HOST, port=main)
        assert m.set("k", (b"kept", 77)) is True
        assert r.set("plain", b"resp")
        _, cas = m.gets("k")
        assert r.save()
    finally:
        srv.stop()
    srv = harness.start_locus(toml, main, {"memcached": mc})
    try:
        m, r = mc_client(mc), redis.Redis(host=HOST, port=main)
        assert r.get("k") == b"kept" and r.get("plain") == b"resp"
        assert m.get("k") == (b"kept", 77)
        assert m.gets("k")[1] == cas
        assert m.get("plain") == (b"resp", 0)
    finally:
        srv.stop()
