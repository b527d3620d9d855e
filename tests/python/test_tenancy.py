"""Tenancy (Locus only, configuration as in config/locus.toml): tenants by listener port, by ACL
user, by database number and by key prefix; isolation between them (read, overwrite, count, list,
flush, evict); the INFO `tenants` section and LOCUS.TENANT per-tenant settings."""

import re

import pytest
import redis

from conftest import no_retry
from harness import HOST, Raw, free_ports, wait_until

pytestmark = pytest.mark.locus_only

VALUE = "x" * 1000
# The [admin] user of the multi-tenant configurations: only the admin sees every tenant's INFO
# and settings (test_privileges.py checks that tenants do not).
ADMIN_TOML = """
[admin]
user = "root"
password = "root-pw"
"""


def admin(port, protocol=2):
    return client(port, protocol, username="root", password="root-pw")


def client(port, protocol=2, **kw):
    return redis.Redis(host=HOST, port=port, protocol=protocol, decode_responses=True, socket_timeout=10,
                       retry=no_retry(), **kw)


def tenants_info(c) -> dict:
    """Parse INFO tenants (`tenant_<name>:k=v,k=v`) from the raw text, not through redis-py's parser."""
    text = c.execute_command("INFO", "tenants")
    if isinstance(text, dict):  # redis-py parsed it already
        return {k[len("tenant_"):]: v for k, v in text.items() if k.startswith("tenant_")}
    out = {}
    for line in text.splitlines():
        m = re.match(r"^tenant_([^:]+):(.*)$", line.strip())
        if m:
            out[m.group(1)] = dict(kv.split("=", 1) for kv in m.group(2).split(","))
    return out


def fill(c, prefix, n, batch=1000):
    for start in range(0, n, batch):
        with c.pipeline(transaction=False) as p:
            for i in range(start, min(start + batch, n)):
                p.set(f"{prefix}{i}", VALUE)
            p.execute()


def scan_all(c, **kw):
    return set(c.scan_iter(count=100, **kw))


def assert_isolated(ca, cb, key_a="k", key_b="k"):
    """Two clients of different tenants: same logical key, separate values, counts, listings, flushes."""
    assert ca.set(key_a, "from-a")
    assert cb.get(key_b) is None, "tenant b reads tenant a's key"
    assert cb.exists(key_b) == 0
    assert cb.set(key_b, "from-b")
    assert ca.get(key_a) == "from-a", "tenant b overwrote tenant a's key"
    assert cb.get(key_b) == "from-b"
    ca.mset({f"{key_a}:only-a:{i}": "v" for i in range(20)})
    assert key_b + ":only-a:0" not in scan_all(cb)
    assert not [k for k in cb.keys("*") if "only-a" in k], "tenant b lists tenant a's keys"
    assert ca.dbsize() == 21 and cb.dbsize() == 1, "DBSIZE counts another tenant's keys"
    assert cb.delete(key_b + ":only-a:0") == 0
    assert cb.flushall()
    assert cb.dbsize() == 0
    assert ca.dbsize() == 21, "FLUSHALL of tenant b flushed tenant a"
    assert ca.get(key_a) == "from-a"
    assert cb.flushdb() and ca.dbsize() == 21


# ------------------------------------------------------------------------------------------ port


@pytest.fixture
def port_mode(start_locus_toml):
    main, pa, pb = free_ports(3)
    toml = f"""
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "32MiB"
page_size = "64KiB"
partition = "static"

[tenancy]
mode = "port"
{ADMIN_TOML}
[[tenant]]
name = "a"
port = {pa}
max = "4MiB"

[[tenant]]
name = "b"
port = {pb}
min = "8MiB"
"""
    srv = start_locus_toml(toml, pa)
    return srv, pa, pb


@pytest.mark.parametrize("protocol", [2, 3])
def test_port_tenants_isolated(port_mode, protocol):
    srv, pa, pb = port_mode
    ca, cb = client(pa, protocol), client(pb, protocol)
    assert_isolated(ca, cb)
    assert set(tenants_info(ca)) == {"a"}, "a tenant's INFO shows only itself"
    assert set(tenants_info(admin(pa, protocol))) >= {"a", "b"}


def test_port_tenant_cannot_evict_another(port_mode):
    srv, pa, pb = port_mode
    ca, cb = client(pa), client(pb)
    keep = {f"b:{i}": VALUE for i in range(1000)}
    cb.mset(keep)
    fill(ca, "flood:", 20_000)  # ~20 MB into a tenant capped at 4 MiB
    info = tenants_info(admin(pa))
    assert int(info["a"]["evictions"]) > 0
    assert int(info["a"]["used_bytes"]) <= 4 * 1024 * 1024
    assert int(info["b"]["evictions"]) == 0
    assert all(v is not None for v in cb.mget(list(keep))), "tenant a's flood evicted tenant b's keys"
    assert cb.dbsize() == 1000
    assert 0 < ca.dbsize() < 20_000


def test_info_tenants_section(port_mode):
    srv, pa, pb = port_mode
    ca, cb = client(pa), client(pb)
    ca.mset({f"k{i}": "v" for i in range(7)})
    ca.get("k1")
    ca.get("nope")
    raw_text = admin(pa).execute_command("INFO", "tenants")
    info = tenants_info(admin(pa))
    for name in ("a", "b"):
        for field in ("min", "max", "used_bytes", "pages", "items", "hits", "misses", "evictions",
                      "samples", "policy"):
            assert field in info[name], (name, field, raw_text)
    assert int(info["a"]["items"]) == 7 and int(info["b"]["items"]) == 0
    assert int(info["a"]["hits"]) >= 1 and int(info["a"]["misses"]) >= 1
    assert int(info["b"]["hits"]) == 0
    everything = admin(pa).execute_command("INFO", "everything")  # redis-py parses it into a dict
    assert "tenant_a" in everything and "tenant_b" in everything
    assert "tenant_b" not in ca.execute_command("INFO", "everything")


def test_locus_tenant_get_set(port_mode):
    srv, pa, pb = port_mode
    c = admin(pa)
    names = c.execute_command("LOCUS.TENANT", "LIST")
    assert set(names) >= {"a", "b"}

    def get_all(name):
        got = c.execute_command("LOCUS.TENANT", name, "GET", "*")
        return got if isinstance(got, dict) else dict(zip(got[0::2], got[1::2]))

    opts = get_all("a")
    opts_b = get_all("b")
    assert {"maxmemory", "minmemory", "maxmemory-policy", "maxmemory-samples"} <= set(opts)
    assert c.execute_command("LOCUS.TENANT", "a", "SET", "maxmemory-policy", "allkeys-lfu") == "OK"
    assert get_all("a")["maxmemory-policy"] == "allkeys-lfu"
    assert c.execute_command("LOCUS.TENANT", "a", "SET", "maxmemory-samples", "10") == "OK"
    assert get_all("a")["maxmemory-samples"] == "10"
    assert get_all("b")["maxmemory-samples"] == opts_b["maxmemory-samples"], "SET on a reached b"
    assert c.execute_command("LOCUS.TENANT", "a", "SET", "maxmemory", "2097152") == "OK"
    assert get_all("a")["maxmemory"] == "2097152"
    with pytest.raises(redis.ResponseError):
        c.execute_command("LOCUS.TENANT", "a", "SET", "maxmemory-policy", "lru")
    with pytest.raises(redis.ResponseError):
        c.execute_command("LOCUS.TENANT", "no-such-tenant", "GET", "*")
    with pytest.raises(redis.ResponseError):
        c.execute_command("LOCUS.TENANT", "a", "SET", "no-such-option", "1")
    # the new cap is enforced
    fill(c, "cap:", 6000)
    info = tenants_info(c)
    assert int(info["a"]["used_bytes"]) <= 2 * 1024 * 1024
    assert int(info["a"]["evictions"]) > 0
    assert info["a"]["policy"] == "allkeys-lfu"


# ------------------------------------------------------------------------------------------ user


@pytest.fixture
def user_mode(start_locus_toml):
    (main,) = free_ports(1)
    toml = f"""
[server]
bind = "127.0.0.1"
port = {main}

[tenancy]
mode = "user"

[[tenant]]
name = "a"
user = "alice"
password = "alice-pw"

[[tenant]]
name = "b"
user = "bob"
password = "bob-pw"
"""
    return start_locus_toml(toml, main)


def test_user_tenants_require_auth(user_mode):
    with Raw(user_mode.port) as c:
        assert c.call("PING") == "NOAUTH Authentication required."  # as Redis 7
        assert c.call("GET", "k") == "NOAUTH Authentication required."
        assert c.call("AUTH", "alice", "bob-pw") == "WRONGPASS invalid username-password pair or user is disabled."
        assert c.call("AUTH", "mallory", "x") == "WRONGPASS invalid username-password pair or user is disabled."
        assert c.call("GET", "k") == "NOAUTH Authentication required."
        assert c.call("AUTH", "alice", "alice-pw") == "OK"
        assert c.call("GET", "k") is None


@pytest.mark.parametrize("protocol", [2, 3])
def test_user_tenants_isolated(user_mode, protocol):
    ca = client(user_mode.port, protocol, username="alice", password="alice-pw")
    cb = client(user_mode.port, protocol, username="bob", password="bob-pw")
    assert_isolated(ca, cb)


def test_hello_auth_selects_tenant_and_reauth_switches(user_mode):
    with Raw(user_mode.port) as c:
        m = c.call("HELLO", "3", "AUTH", "alice", "alice-pw")
        assert m[b"proto"] == 3
        assert c.call("SET", "who", "alice") == "OK"
        assert c.call("AUTH", "bob", "bob-pw") == "OK"
        assert c.call("GET", "who") is None  # now in bob's keyspace
        assert c.call("SET", "who", "bob") == "OK"
        assert c.call("AUTH", "alice", "alice-pw") == "OK"
        assert c.call("GET", "who") == b"alice"
        assert c.call("HELLO", "3", "AUTH", "bob", "wrong") == (
            "WRONGPASS invalid username-password pair or user is disabled.")
        assert c.call("GET", "who") == b"alice"  # a failed AUTH keeps the current tenant


# ------------------------------------------------------------------------------------------ db


@pytest.fixture
def db_mode(start_locus_toml):
    (main,) = free_ports(1)
    toml = f"""
[server]
bind = "127.0.0.1"
port = {main}

[tenancy]
mode = "db"

[[tenant]]
name = "a"
db = 0

[[tenant]]
name = "b"
db = 3
"""
    return start_locus_toml(toml, main)


@pytest.mark.parametrize("protocol", [2, 3])
def test_db_tenants_isolated(db_mode, protocol):
    ca = client(db_mode.port, protocol, db=0)
    cb = client(db_mode.port, protocol, db=3)
    assert_isolated(ca, cb)


def test_db_select(db_mode):
    with Raw(db_mode.port) as c:
        assert c.call("SET", "k", "zero") == "OK"
        assert c.call("SELECT", "3") == "OK"
        assert c.call("GET", "k") is None
        assert c.call("SET", "k", "three") == "OK"
        assert c.call("SELECT", "1") == "ERR DB index is out of range"
        assert c.call("GET", "k") == b"three"  # a failed SELECT keeps the current db
        assert c.call("SELECT", "16") == "ERR DB index is out of range"
        assert c.call("SELECT", "0") == "OK"
        assert c.call("GET", "k") == b"zero"
        assert c.call("RESET") == "RESET"
        assert c.call("GET", "k") == b"zero"  # RESET goes back to db 0


# ------------------------------------------------------------------------------------------ prefix


def prefix_toml(main, default_tenant):
    return f"""
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "32MiB"
page_size = "64KiB"
partition = "static"

[tenancy]
mode = "prefix"
default_tenant = "{default_tenant}"
{ADMIN_TOML}
[[tenant]]
name = "a"
prefix = "a:"
max = "4MiB"

[[tenant]]
name = "ab"
prefix = "a:b:"

[[tenant]]
name = "b"
prefix = "b:"
min = "8MiB"

[[tenant]]
name = "shared"
prefix = "s:"
"""


@pytest.fixture
def prefix_mode(start_locus_toml):
    (main,) = free_ports(1)
    return start_locus_toml(prefix_toml(main, ""), main)


@pytest.mark.parametrize("protocol", [2, 3])
def test_prefix_tenants(prefix_mode, protocol):
    c = client(prefix_mode.port, protocol)
    assert c.set("a:x", "1") and c.set("b:x", "2") and c.set("a:b:x", "3")
    assert c.mget("a:x") == ["1"]
    assert c.keys("a:*") == ["a:x"]  # a:b:x belongs to tenant ab (longest prefix)
    assert sorted(c.keys("b:*")) == ["b:x"]
    assert set(c.scan_iter(match="b:*")) == {"b:x"}
    info = tenants_info(admin(prefix_mode.port, protocol))
    assert int(info["a"]["items"]) == 1 and int(info["ab"]["items"]) == 1 and int(info["b"]["items"]) == 1
    with pytest.raises(redis.ResponseError, match=r"^key matches no tenant prefix$"):
        c.set("zzz", "v")
    with pytest.raises(redis.ResponseError, match=r"^keys in request span tenants '(a' and 'b|b' and 'a)'$"):
        c.mset({"a:1": "v", "b:1": "v"})
    assert c.get("a:1") is None and c.get("b:1") is None  # nothing half-applied
    with pytest.raises(redis.ResponseError):
        c.rename("a:x", "b:y")
    assert c.get("a:x") == "1"
    with pytest.raises(redis.ResponseError):
        c.dbsize()  # keyless command without a default tenant


def test_prefix_default_tenant(start_locus_toml):
    (main,) = free_ports(1)
    srv = start_locus_toml(prefix_toml(main, "shared"), main)
    c = client(srv.port)
    c.set("unprefixed", "1")
    c.set("s:x", "2")
    c.set("a:x", "3")
    assert c.dbsize() == 2  # the default tenant: "unprefixed" and "s:x"
    assert int(tenants_info(c)["shared"]["items"]) == 2
    assert c.keys("a:*") == ["a:x"]
    assert c.flushdb()
    assert c.get("a:x") == "3"  # flushing the default tenant leaves tenant a alone
    assert c.get("unprefixed") is None


def test_prefix_tenant_cannot_evict_another(prefix_mode):
    c = client(prefix_mode.port)
    keep = {f"b:{i}": VALUE for i in range(1000)}
    c.mset(keep)
    fill(c, "a:", 20_000)
    info = tenants_info(admin(prefix_mode.port))
    assert int(info["a"]["evictions"]) > 0
    assert int(info["a"]["used_bytes"]) <= 4 * 1024 * 1024
    assert int(info["b"]["evictions"]) == 0
    assert all(v is not None for v in c.mget(list(keep)))


# ------------------------------------------------------------------------------------------ single


def test_single_mode_info_tenants(server, peer):
    c = client(server.port)
    c.flushall()
    c.mset({"x": "1", "y": "2"})
    info = tenants_info(c)
    assert list(info) == ["default"]
    assert int(info["default"]["items"]) == 2


def test_tenant_oom_does_not_spill_over(start_locus_toml):
    """Tenant a (noeviction, capped) runs out of memory; tenant b keeps writing."""
    main, pa, pb = free_ports(3)
    toml = f"""
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "32MiB"
page_size = "64KiB"
partition = "static"

[tenancy]
mode = "port"
{ADMIN_TOML}
[[tenant]]
name = "a"
port = {pa}
max = "2MiB"
policy = "noeviction"

[[tenant]]
name = "b"
port = {pb}
"""
    start_locus_toml(toml, pa)
    with Raw(pa) as a:
        reply = None
        for i in range(10_000):
            reply = a.call("SET", f"k{i}", VALUE)
            if reply != "OK":
                break
        assert isinstance(reply, str) and reply.startswith("OOM "), reply
        stored_a = a.call("DBSIZE")
        assert 0 < stored_a < 10_000
    cb = client(pb)
    fill(cb, "b:", 5000)
    assert cb.dbsize() == 5000
    info = tenants_info(admin(pb))
    assert int(info["a"]["evictions"]) == 0 and int(info["a"]["items"]) == stored_a


def test_active_expiry_in_every_tenant(db_mode):
    ca = client(db_mode.port, db=0)
    cb = client(db_mode.port, db=3)
    for c in (ca, cb):
        with c.pipeline(transaction=False) as p:
            for i in range(100):
                p.set(f"t{i}", "v", px=50)
            p.set("stay", "v")
            p.execute()
    wait_until(lambda: ca.dbsize() == 1 and cb.dbsize() == 1, timeout=10,
               what="both tenants' expired keys to be reclaimed without access")
    assert ca.get("stay") == "v" and cb.get("stay") == "v"
