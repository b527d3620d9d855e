"""Tenants are a security boundary, for admin and introspection commands too (issue #11).

Each test runs in the four multi-tenant modes (user, port, db, prefix) with two tenants, alice and
bob, and an `[admin]` user. Bob tries every way the issue found to reach alice: change her
memory, the server's memory, passwords or client limit, stop the server, kill or list her
connections, read her usage. Each attempt must be refused or narrowed to bob's own tenant, and
alice's keys must be exactly as she wrote them afterwards. The admin can do all of it.
"""

import re

import pytest
import redis

import harness
from conftest import no_retry
from harness import HOST, Raw, free_ports, wait_until

pytestmark = pytest.mark.locus_only

MODES = ["user", "port", "db", "prefix"]
ADMIN = ("root", "root-pw")
NOPERM = "NOPERM this user has no permissions to run the '{}' command"
KEYS = 300


def config(mode: str, main: int, pa: int, pb: int) -> str:
    extra = {
        "user": ("", ""),
        "port": (f"port = {pa}", f"port = {pb}"),
        "db": ("db = 0", "db = 1"),
        "prefix": ('prefix = "a:"', 'prefix = "b:"'),
    }[mode]
    return f"""
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "32MiB"
page_size = "64KiB"

[tenancy]
mode = "{mode}"

[admin]
user = "{ADMIN[0]}"
password = "{ADMIN[1]}"

[[tenant]]
name = "alice"
user = "alice"
password = "alice-pw"
{extra[0]}

[[tenant]]
name = "bob"
user = "bob"
password = "bob-pw"
{extra[1]}
"""


class Setup:
    def __init__(self, mode, srv, main, pa, pb):
        self.mode, self.srv, self.main, self.pa, self.pb = mode, srv, main, pa, pb

    def port_of(self, who):
        if self.mode == "port":
            return {"alice": self.pa, "bob": self.pb, "admin": self.pa}[who]
        return self.main

    def key(self, who, i):
        return f"{'a' if who == 'alice' else 'b'}:{i}"

    def raw(self, who) -> Raw:
        """A raw connection logged in as `who` (alice, bob or admin), named after it."""
        c = Raw(self.port_of(who))
        c.__enter__()
        user, pw = ADMIN if who == "admin" else (who, f"{who}-pw")
        assert c.call("AUTH", user, pw) == "OK"
        assert c.call("CLIENT", "SETNAME", f"conn-{who}") == "OK"
        return c

    def client(self, who) -> redis.Redis:
        user, pw = ADMIN if who == "admin" else (who, f"{who}-pw")
        return redis.Redis(host=HOST, port=self.port_of(who), username=user, password=pw,
                           decode_responses=True, socket_timeout=10, retry=no_retry(),
                           client_name=f"py-{who}")


@pytest.fixture(params=MODES)
def tenants(request, start_locus_toml):
    """A server of tenants alice and bob (and the admin) in each tenancy mode, empty (other test
    files import it)."""
    mode = request.param
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(config(mode, main, pa, pb), pa if mode == "port" else main)
    return Setup(mode, srv, main, pa, pb)


@pytest.fixture
def setup(tenants):
    s = tenants
    alice = s.client("alice")
    alice.mset({s.key("alice", i): f"alice-{i}" for i in range(KEYS)})
    return s


def alice_intact(s: Setup):
    alice = s.client("alice")
    assert alice.dbsize() == KEYS, "alice lost keys"
    got = alice.mget([s.key("alice", i) for i in range(KEYS)])
    assert got == [f"alice-{i}" for i in range(KEYS)], "alice's values changed"


def client_ids(c: Raw) -> dict[str, int]:
    text = c.call("CLIENT", "LIST")
    text = text.decode() if isinstance(text, bytes) else text
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"id=(\d+) .*?name=(\S*)", text)}


def test_a_tenant_cannot_change_memory_passwords_limits_or_stop_the_server(setup):
    s = setup
    with s.raw("bob") as bob:
        assert bob.call("CONFIG", "SET", "maxmemory", "2mb") == NOPERM.format("config|set")
        assert bob.call("CONFIG", "SET", "requirepass", "owned") == NOPERM.format("config|set")
        assert bob.call("CONFIG", "SET", "maxclients", "1") == NOPERM.format("config|set")
        assert bob.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu", "hz", "100") == \
            NOPERM.format("config|set")
        assert bob.call("CONFIG", "RESETSTAT") == NOPERM.format("config|resetstat")
        assert bob.call("LOCUS.TENANT", "alice", "SET", "maxmemory", "1mb") == \
            NOPERM.format("locus.tenant")
        assert bob.call("LOCUS.TENANT", "bob", "SET", "maxmemory", "30mb") == \
            NOPERM.format("locus.tenant|set")
        assert bob.call("LOCUS.CONTROLLER", "SET", "shared") == NOPERM.format("locus.controller")
        assert bob.call("SHUTDOWN") == NOPERM.format("shutdown")
        assert bob.call("SHUTDOWN", "NOSAVE") == NOPERM.format("shutdown")
        # A tenant's own eviction settings are its own to change, and only its own.
        assert bob.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu") == "OK"
        assert bob.call("CONFIG", "GET", "maxmemory-policy") == [b"maxmemory-policy", b"allkeys-lfu"]
        assert bob.call("CONFIG", "GET", "requirepass") == [b"requirepass", b""]
    assert s.srv.alive()
    with s.raw("admin") as admin:
        pol = admin.call("LOCUS.TENANT", "alice", "GET", "maxmemory-policy")
        assert pol == [b"maxmemory-policy", b"allkeys-lru"], "bob's CONFIG SET reached alice"
        assert admin.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"10000"]
        assert admin.call("CONFIG", "GET", "maxmemory") == [b"maxmemory", b"33554432"]
    alice_intact(s)


def test_a_tenant_cannot_read_other_tenants_settings_usage_or_clients(setup):
    s = setup
    with s.raw("alice") as alice_conn, s.raw("bob") as bob:
        assert bob.call("LOCUS.TENANT", "alice", "GET", "*") == NOPERM.format("locus.tenant")
        # An unknown name gets the same answer: tenant names do not leak.
        assert bob.call("LOCUS.TENANT", "nobody", "GET", "*") == NOPERM.format("locus.tenant")
        assert bob.call("LOCUS.TENANT", "LIST") == [b"bob"]
        assert bob.call("LOCUS.CONTROLLER", "TARGETS") == NOPERM.format("locus.controller")
        assert bob.call("MEMORY", "STATS") == NOPERM.format("memory|stats")
        info = bob.call("INFO", "everything")
        info = info.decode() if isinstance(info, bytes) else str(info)
        assert "tenant_bob:" in info and "tenant_alice" not in info and "pool_alice" not in info
        assert "total_commands_processed" not in info, "server-wide traffic shown to a tenant"
        keyspace = bob.call("INFO", "keyspace")
        assert f"keys={KEYS}" not in str(keyspace), "bob's INFO shows alice's keys"
        names = client_ids(bob)
        assert "conn-bob" in names
        assert "conn-alice" not in names and "py-alice" not in names, "bob lists alice's clients"
        assert alice_conn.call("PING") == "PONG"
    alice_intact(s)


def test_a_tenant_cannot_kill_another_tenants_or_the_admins_connections(setup):
    s = setup
    with s.raw("alice") as alice_conn, s.raw("admin") as admin, s.raw("bob") as bob:
        ids = client_ids(admin)
        assert {"conn-alice", "conn-bob", "conn-admin"} <= set(ids)
        assert bob.call("CLIENT", "KILL", "ID", str(ids["conn-alice"])) == 0
        assert bob.call("CLIENT", "KILL", "ID", str(ids["conn-admin"])) == 0
        addr = re.search(r"id=%d addr=(\S+)" % ids["conn-alice"],
                         admin.call("CLIENT", "LIST").decode()).group(1)
        assert bob.call("CLIENT", "KILL", addr) == "ERR No such client"
        assert alice_conn.call("PING") == "PONG", "bob killed alice's connection"
        assert admin.call("PING") == "PONG", "bob killed the admin's connection"
        # The admin can.
        assert admin.call("CLIENT", "KILL", "ID", str(ids["conn-alice"])) == 1
        wait_until(lambda: "conn-alice" not in client_ids(admin), what="alice's connection closed")
    alice_intact(s)


def test_a_tenant_stays_in_its_own_keyspace(setup):
    s = setup
    with s.raw("bob") as bob:
        if s.mode == "db":
            assert bob.call("SELECT", "0") == "NOPERM this user has no permissions to access database 0"
            assert bob.call("SELECT", "1") == "OK"
        if s.mode == "prefix":
            assert bob.call("GET", s.key("alice", 1)) == "NOPERM No permissions to access a key"
            assert bob.call("DEL", s.key("alice", 1)) == "NOPERM No permissions to access a key"
            assert bob.call("KEYS", "a:*") == "NOPERM No permissions to access a key"
        if s.mode == "port":
            # A tenant's user logs in on its own port only.
            with Raw(s.pa) as c:
                assert c.call("AUTH", "bob", "bob-pw") == \
                    "WRONGPASS invalid username-password pair or user is disabled."
        # COPY cannot write into (or read from) another tenant's keyspace either.
        assert bob.call("SET", s.key("bob", "x"), "bob's") == "OK"
        if s.mode == "db":
            assert bob.call("COPY", s.key("bob", "x"), s.key("alice", 1), "DB", "0", "REPLACE") == \
                "NOPERM this user has no permissions to access database 0"
        elif s.mode == "prefix":
            assert bob.call("COPY", s.key("bob", "x"), s.key("alice", 1), "REPLACE") == \
                "NOPERM No permissions to access a key"
            assert bob.call("COPY", s.key("alice", 1), s.key("bob", "y")) == \
                "NOPERM No permissions to access a key"
        else:
            assert bob.call("COPY", s.key("bob", "x"), s.key("alice", 1), "DB", "1").startswith("ERR DB 1:")
        assert bob.call("FLUSHALL") == "OK"
        assert bob.call("DBSIZE") == 0
    alice_intact(s)


def test_the_admin_administers(setup):
    s = setup
    with s.raw("admin") as admin:
        assert admin.call("LOCUS.TENANT", "LIST") == [b"alice", b"bob"]
        assert admin.call("LOCUS.TENANT", "alice", "SET", "maxmemory-samples", "7") == "OK"
        assert admin.call("LOCUS.TENANT", "alice", "GET", "maxmemory-samples") == \
            [b"maxmemory-samples", b"7"]
        assert admin.call("CONFIG", "SET", "maxclients", "500") == "OK"
        assert admin.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"500"]
        info = admin.call("INFO", "tenants")
        info = info.decode() if isinstance(info, bytes) else str(info)
        assert "tenant_alice:" in info and "tenant_bob:" in info
        if s.mode == "db":
            # The admin may COPY between databases (tenants), as it may SELECT any of them.
            assert admin.call("SELECT", "0") == "OK"
            assert admin.call("COPY", s.key("alice", 1), "copied", "DB", "1") == 1
            assert admin.call("COPY", s.key("alice", 1), "copied", "DB", "1") == 0
            with s.raw("bob") as bob:
                assert bob.call("SELECT", "1") == "OK"
                assert bob.call("GET", "copied") == b"alice-1"


def test_auth_default_in_user_tenancy_is_refused_as_redis_refuses_a_disabled_user(start_locus_toml):
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(config("user", main, pa, pb), main)
    with Raw(srv.port) as c:
        assert c.call("AUTH", "default", "anything") == \
            "WRONGPASS invalid username-password pair or user is disabled."
        assert c.call("GET", "k") == "NOAUTH Authentication required."


def test_only_the_admin_shuts_the_server_down():
    main, pa, pb = free_ports(3)
    srv = harness.start_locus(config("port", main, pa, pb), pa)
    try:
        with Raw(pa) as c:
            # alice has a password: her port asks for it first (issue #27), then refuses her.
            assert c.call("SHUTDOWN") == "NOAUTH Authentication required."
            assert c.call("AUTH", "alice", "alice-pw") == "OK"
            assert c.call("SHUTDOWN") == NOPERM.format("shutdown")
            assert c.call("AUTH", *ADMIN) == "OK"
            try:
                c.call("SHUTDOWN", "NOSAVE")
            except (harness.Closed, OSError):
                pass
        wait_until(lambda: not srv.alive(), timeout=10, what="the server to exit after SHUTDOWN")
    finally:
        srv.stop()
