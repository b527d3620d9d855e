"""Client-side caching: CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO (issue 26).

The protocol tests run against Locus and, with `--peer redis`, against redis-server 7.0, so every
assertion about messages, their framing and the errors is Redis's behaviour. The tenancy tests
(Locus only) run in user, port, db and prefix tenancy with two tenants and an admin: a write by
bob never invalidates alice's cache, bob cannot redirect to alice's client, bob's BCAST never
matches alice's keys, and each tenant's table and its bound are its own.
"""

import re
import time

import pytest
import redis

from conftest import no_retry
from harness import HOST, Raw, encode, free_ports, wait_until

QUIET = 0.3  # seconds a negative check waits for a message that must not come


def push(c: Raw):
    """Reads one message, decoded to str where it is bytes."""
    return _dec(c.read())


def _dec(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [_dec(x) for x in v]
    if isinstance(v, dict):
        return {_dec(k): _dec(x) for k, x in v.items()}
    return v


def resp3(port: int) -> Raw:
    c = Raw(port)
    c.call("HELLO", "3")
    return c


def redirect_target(port: int):
    """A RESP2 connection subscribed to __redis__:invalidate, and its id."""
    c = Raw(port)
    cid = c.call("CLIENT", "ID")
    assert _dec(c.call("SUBSCRIBE", "__redis__:invalidate")) == ["subscribe", "__redis__:invalidate", 1]
    return c, cid


@pytest.fixture
def port(server):
    with Raw(server.port) as c:
        c.call("FLUSHALL")
        c.call("CONFIG", "SET", "tracking-table-max-keys", "1000000")
    return server.port


# ------------------------------------------------------------------------------------ protocol


def test_resp3_push_on_write_by_another_client(port):
    with resp3(port) as me, Raw(port) as other:
        assert me.call("CLIENT", "TRACKING", "ON") == "OK"
        assert other.call("SET", "k", "1") == "OK"
        assert me.call("GET", "k") == b"1"
        assert me.call("GET", "untouched") is None
        assert other.call("SET", "k", "2") == "OK"
        assert push(me) == ["invalidate", ["k"]]
        # A key is invalidated once: the next write sends nothing until it is read again.
        assert other.call("SET", "k", "3") == "OK"
        assert other.call("SET", "untouched", "x") == "OK"
        assert push(me) == ["invalidate", ["untouched"]]
        assert me.nothing_within(QUIET)


def test_own_write_invalidation_follows_the_reply(port):
    with resp3(port) as me:
        me.call("CLIENT", "TRACKING", "ON")
        me.call("HSET", "h", "f", "1")
        me.call("HGET", "h", "f")
        assert me.call("HDEL", "h", "f") == 1
        assert push(me) == ["invalidate", ["h"]]
        # Inside MULTI: the EXEC reply first, then the invalidation.
        me.call("MSET", "a", "1", "b", "2")
        me.call("GET", "a")
        me.call("MULTI")
        me.call("INCR", "a")
        me.call("GET", "b")
        assert me.call("EXEC") == [2, b"2"]
        assert push(me) == ["invalidate", ["a"]]


def test_resp2_redirect_to_a_subscribed_client(port):
    sub, sid = redirect_target(port)
    with sub, Raw(port) as me, Raw(port) as other:
        assert me.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(sid)) == "OK"
        assert me.call("CLIENT", "GETREDIR") == sid
        other.call("SET", "k", "1")
        me.call("GET", "k")
        other.call("INCR", "k")
        assert push(sub) == ["message", "__redis__:invalidate", ["k"]]
        assert sub.nothing_within(QUIET)
        # A RESP2 client without a redirect gets no message on its own connection.
        assert me.call("PING") == "PONG"


def test_redirect_errors(port):
    with Raw(port) as me:
        assert me.call("CLIENT", "TRACKING", "ON", "REDIRECT", "999999") == \
            "ERR The client ID you want redirect to does not exist"
        assert me.call("CLIENT", "TRACKING", "ON", "REDIRECT", "x") == \
            "ERR value is not an integer or out of range"
        assert me.call("CLIENT", "TRACKING", "ON", "PREFIX", "a") == \
            "ERR PREFIX option requires BCAST mode to be enabled"
        assert me.call("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT") == \
            "ERR You can't specify both OPTIN mode and OPTOUT mode"
        assert me.call("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN") == \
            "ERR OPTIN and OPTOUT are not compatible with BCAST"
        assert me.call("CLIENT", "TRACKING", "MAYBE") == "ERR syntax error"
        assert me.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a").startswith(
            "ERR Prefix 'ab' overlaps with another provided prefix 'a'")
        assert me.call("CLIENT", "CACHING", "YES").startswith("ERR CLIENT CACHING can be called only")
        assert me.call("CLIENT", "TRACKING", "ON", "OPTIN") == "OK"
        assert me.call("CLIENT", "CACHING", "NO") == \
            "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
        assert me.call("CLIENT", "TRACKING", "ON", "BCAST") .startswith(
            "ERR You can't switch BCAST mode on/off")
        assert me.call("CLIENT", "GETREDIR") == 0
        assert me.call("CLIENT", "TRACKING", "OFF") == "OK"
        assert me.call("CLIENT", "GETREDIR") == -1


def test_redirect_broken_when_the_target_goes(port):
    target = Raw(port)
    tid = target.call("CLIENT", "ID")
    with resp3(port) as me, Raw(port) as other:
        me.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(tid))
        me.call("GET", "k")
        assert target.call("QUIT") == "OK"
        target.close()
        other.call("SET", "k", "1")
        assert push(me) == ["tracking-redir-broken", tid]
        info = _dec(me.call("CLIENT", "TRACKINGINFO"))
        assert info["flags"] == ["on", "broken_redirect"]
        assert info["redirect"] == tid


def test_bcast_prefixes_and_noloop(port):
    with resp3(port) as me, Raw(port) as other:
        assert me.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "cfg:",
                       "NOLOOP") == "OK"
        other.call("MSET", "user:1", "a", "user:2", "b", "misc", "c")
        assert sorted(push(me)[1]) == ["user:1", "user:2"]
        me.call("SET", "user:3", "mine")  # NOLOOP: my own write is not sent back
        other.call("SET", "cfg:x", "1")
        assert push(me) == ["invalidate", ["cfg:x"]]
        assert me.nothing_within(QUIET)
        info = _dec(me.call("CLIENT", "TRACKINGINFO"))
        assert info["flags"] == ["on", "bcast", "noloop"]
        assert sorted(info["prefixes"]) == ["cfg:", "user:"]


def test_switching_to_bcast_forgets_the_keys_tracked_before(port):
    """Redis's 'After switching from normal tracking to BCAST mode, no invalidation message is
    produced for pre-BCAST keys', with the other client's write acknowledged before the tracking
    client reads (the suite's version sends the write and the PING on two connections back to
    back, an order only arrival on one thread makes sure of): one BCAST invalidation, and
    none for the key read under the normal tracking before the switch."""
    with resp3(port) as me, Raw(port) as other:
        assert me.call("CLIENT", "TRACKING", "ON") == "OK"
        assert other.call("SET", "key1", "1") == "OK"
        assert me.call("GET", "key1") == b"1"
        assert me.call("CLIENT", "TRACKING", "OFF") == "OK"
        assert me.call("CLIENT", "TRACKING", "ON", "BCAST") == "OK"
        assert other.call("INCR", "key1") == 2
        assert push(me) == ["invalidate", ["key1"]]
        assert me.call("PING") == "PONG"
        assert me.nothing_within(QUIET)


@pytest.mark.locus_only
def test_many_bcast_prefixes(port):
    """A long PREFIX list (hostile or not) is checked and matched without holding the server.

    Locus only: redis-server 7.0.15 answers this overlapping list with its error *and* +OK and
    registers the prefixes (two replies to one command; with two prefixes it answers the error
    alone), so the peer cannot judge it."""
    n = 20000
    prefixes = [f"p{i:05}:" for i in range(n)]
    with resp3(port) as me, Raw(port) as other:
        args = [x for p in prefixes for x in ("PREFIX", p)]
        bad = me.call("CLIENT", "TRACKING", "ON", "BCAST", *args, "PREFIX", "p12345:x")
        assert bad.startswith("ERR Prefix 'p12345:' overlaps with another provided prefix 'p12345:x'")
        base = _info(other, "tracking_total_prefixes")
        assert me.call("CLIENT", "TRACKING", "ON", "BCAST", *args) == "OK"
        assert _info(other, "tracking_total_prefixes") == base + n
        other.call("MSET", "p00007:a", "1", "p19999:b", "2", "q:c", "3")
        got = sorted(push(me)[1] + push(me)[1])
        assert got == ["p00007:a", "p19999:b"]
        assert me.nothing_within(QUIET)


def test_optin_and_optout(port):
    with resp3(port) as me, Raw(port) as other:
        me.call("CLIENT", "TRACKING", "ON", "OPTIN")
        me.call("GET", "not-cached")
        assert me.call("CLIENT", "CACHING", "YES") == "OK"
        assert _dec(me.call("CLIENT", "TRACKINGINFO"))["flags"] == ["on", "optin", "caching-yes"]
        me.call("GET", "cached")
        me.call("GET", "after")  # CACHING YES applied to one command only
        other.call("MSET", "not-cached", "1", "cached", "1", "after", "1")
        assert push(me) == ["invalidate", ["cached"]]
        assert me.nothing_within(QUIET)
        me.call("CLIENT", "TRACKING", "OFF")
        me.call("CLIENT", "TRACKING", "ON", "OPTOUT")
        me.call("CLIENT", "CACHING", "NO")
        me.call("GET", "skipped")
        me.call("GET", "tracked")
        other.call("MSET", "skipped", "1", "tracked", "1")
        assert push(me) == ["invalidate", ["tracked"]]
        assert me.nothing_within(QUIET)


def test_flush_sends_a_null_invalidation(port):
    with resp3(port) as me, Raw(port) as other:
        me.call("CLIENT", "TRACKING", "ON")
        me.call("GET", "k")
        other.call("FLUSHALL")
        assert push(me) == ["invalidate", None]
        me.call("GET", "k")
        other.call("FLUSHDB")
        assert push(me) == ["invalidate", None]


def test_expired_key_is_invalidated(port):
    with resp3(port) as me, Raw(port) as other:
        other.call("SET", "k", "v", "PX", "100")
        me.call("CLIENT", "TRACKING", "ON")
        assert me.call("GET", "k") == b"v"
        # Active expiry (no command touches the key) sends it.
        assert push(me) == ["invalidate", ["k"]]


def test_reading_an_expired_key_tracks_it(port):
    with resp3(port) as me, Raw(port) as other:
        other.call("SET", "gone", "v", "PX", "1")
        time.sleep(0.01)
        me.call("CLIENT", "TRACKING", "ON")
        assert me.call("GET", "gone") is None  # expired (lazily or by the sweep): no message
        assert me.nothing_within(QUIET)
        other.call("SET", "gone", "again")
        assert push(me) == ["invalidate", ["gone"]]


def test_scripts_track_their_declared_keys(port):
    with resp3(port) as me, Raw(port) as other:
        me.call("CLIENT", "TRACKING", "ON")
        me.call("EVAL", "return redis.call('get', 'inner')", "1", "declared")
        other.call("MSET", "inner", "1", "declared", "1")
        assert push(me) == ["invalidate", ["declared"]]
        assert me.nothing_within(QUIET)


def test_tracking_table_bound(port):
    sub, sid = redirect_target(port)
    with sub, Raw(port) as me:
        me.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(sid))
        me.call("MGET", *[f"k{i}" for i in range(50)])
        assert _info(me, "tracking_total_keys") == 50
        assert me.call("CONFIG", "SET", "tracking-table-max-keys", "10") == "OK"
        assert me.call("CONFIG", "GET", "tracking-table-max-keys") == [b"tracking-table-max-keys", b"10"]
        dropped = set()
        for _ in range(40):
            msg = push(sub)
            assert msg[:2] == ["message", "__redis__:invalidate"]
            dropped.update(msg[2])
        assert len(dropped) == 40
        wait_until(lambda: _info(me, "tracking_total_keys") == 10, what="table at its bound")
        assert sub.nothing_within(QUIET)
        assert me.call("CONFIG", "SET", "tracking-table-max-keys", "-1").startswith("ERR CONFIG SET failed")
        me.call("CONFIG", "SET", "tracking-table-max-keys", "1000000")


def _info(c: Raw, field: str) -> int:
    text = c.call("INFO")
    text = text.decode() if isinstance(text, bytes) else text
    m = re.search(rf"^{field}:(\d+)", text, re.M)
    assert m, f"INFO has no {field}"
    return int(m.group(1))


def test_info_fields(port):
    with Raw(port) as me, Raw(port) as other:
        base = _info(me, "tracking_clients")
        me.call("CLIENT", "TRACKING", "ON")
        me.call("MGET", "x", "y")
        other.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:")
        other.call("GET", "x")  # BCAST clients remember no keys
        assert _info(me, "tracking_clients") == base + 2
        assert _info(me, "tracking_total_keys") == 2
        assert _info(me, "tracking_total_items") == 2
        assert _info(me, "tracking_total_prefixes") == 1
        other.call("RESET")  # RESET turns tracking off
        assert _info(me, "tracking_clients") == base + 1
        assert _info(me, "tracking_total_prefixes") == 0


def test_redis_py_pushes_with_execute_command(server):
    """redis-py as an application uses it: RESP3, one connection, pushes read off it."""
    me = redis.Redis(host=HOST, port=server.port, protocol=3, single_connection_client=True,
                     decode_responses=True, socket_timeout=10, retry=no_retry())
    other = redis.Redis(host=HOST, port=server.port, protocol=2, decode_responses=True,
                        retry=no_retry())
    try:
        other.set("py:k", "1")
        assert me.execute_command("CLIENT", "TRACKING", "ON") == "OK"
        assert me.get("py:k") == "1"
        got = []
        me.connection._parser.set_invalidation_push_handler(got.append)
        other.set("py:k", "2")
        me.connection.read_response(push_request=True)
        assert got == [["invalidate", ["py:k"]]]
    finally:
        me.close()
        other.close()


def test_redis_py_resp2_redirect(server):
    """redis-py's PubSub on __redis__:invalidate as the RESP2 redirect target."""
    me = redis.Redis(host=HOST, port=server.port, protocol=2, single_connection_client=True,
                     decode_responses=True, retry=no_retry())
    subscriber = redis.Redis(host=HOST, port=server.port, protocol=2, decode_responses=True,
                             retry=no_retry(), client_name="invalidations")
    ps = subscriber.pubsub()
    try:
        ps.subscribe("__redis__:invalidate")
        assert ps.get_message(timeout=5)["type"] == "subscribe"
        (tid,) = [c["id"] for c in me.client_list() if c["name"] == "invalidations"]
        assert me.execute_command("CLIENT", "TRACKING", "ON", "REDIRECT", tid) == "OK"
        me.get("py2:k")
        me.set("py2:k", "v")  # its own write: invalidated too (no NOLOOP)
        msg = None
        deadline = time.time() + 5
        while time.time() < deadline and msg is None:
            m = ps.get_message(timeout=1)
            if m and m["type"] == "message":
                msg = m
        assert msg is not None and msg["channel"] == "__redis__:invalidate"
        assert msg["data"] == ["py2:k"]
    finally:
        ps.close()
        me.close()
        subscriber.close()


# ------------------------------------------------------------------------------------ eviction


def test_evicted_tracked_keys_are_invalidated(start_server):
    srv = start_server(maxmemory=4 * 1024 * 1024, policy="allkeys-lru")
    with resp3(srv.port) as me, Raw(srv.port) as other:
        me.call("CLIENT", "TRACKING", "ON")
        tracked = [f"t{i}" for i in range(100)]
        other.call("MSET", *[x for k in tracked for x in (k, "v" * 100)])
        me.call("MGET", *tracked)
        value = "x" * 10000
        for i in range(0, 1200, 50):  # about 12 MB through a 4 MB budget
            other.call("MSET", *[x for j in range(i, i + 50) for x in (f"fill{j}", value)])
        gone = [k for k, v in zip(tracked, other.call("MGET", *tracked)) if v is None]
        assert gone, "the fill evicted no tracked key"
        got = set()
        while not set(gone) <= got:
            msg = push(me)
            assert msg[0] == "invalidate"
            got.update(msg[1])


def _reply_after_pushes(c: Raw):
    """Reads up to and including the next reply that is not a push: (the pushes before it, it)."""
    pushes = []
    while True:
        while not c.buf:
            c._fill()
        is_push = c.buf[:1] == b">"
        v = c.read()
        if not is_push:
            return pushes, v
        pushes.append(_dec(v))


def test_eviction_invalidation_precedes_the_reply(start_server):
    """The invalidation of a tracked key evicted for a command reaches the client before that
    command's reply (Redis's 'Tracking invalidation message of eviction keys should be before
    response'), while the command's own writes are told after it. Redis lets the write that
    passes maxmemory run and evicts before the next command; Locus evicts during the write that
    needs the room. So each step is a transaction that ends with INFO stats (no other connection
    runs a command meanwhile: in Redis any command may evict): the step whose INFO shows the
    eviction must have brought the invalidation before its EXEC reply, no other step any."""
    srv = start_server(maxmemory=64 * 1024 * 1024, policy="volatile-random")
    with resp3(srv.port) as me, Raw(srv.port) as other:
        def evicted(info: bytes) -> int:
            return int(re.search(rb"evicted_keys:(\d+)", info).group(1))

        def mem(field: str) -> int:
            m = re.search(rb"\r\n" + field.encode() + rb":(\d+)", other.call("INFO", "memory"))
            return int(m.group(1)) if m else 0

        assert me.call("CLIENT", "TRACKING", "ON") == "OK"
        # The only volatile key (400 KB, built by SETBIT: no big query buffer), read by `me`.
        assert me.call("SETBIT", "volatile-key", 400 * 1024 * 8 - 1, 1) == 0
        assert me.call("EXPIRE", "volatile-key", 10000) == 1
        assert len(me.call("GET", "volatile-key")) == 400 * 1024
        assert me.call("SET", "mine", "1") == "OK"
        assert me.call("GET", "mine") == b"1"
        before = evicted(other.call("INFO", "stats"))
        # 100 KB of room: a 300 KB key passes it, and only the volatile key may go for it.
        used = mem("used_memory") - mem("mem_not_counted_for_evict")
        assert other.call("CONFIG", "SET", "maxmemory", str(used + 100 * 1024)) == "OK"
        steps = [("SETBIT", "big-key", 300 * 1024 * 8 - 1, 0), ("PING",), ("GETBIT", "big-key", 0)]
        evicting = []
        for cmd in steps:
            me.send(encode("MULTI") + encode(*cmd) + encode("INFO", "stats") + encode("EXEC"))
            pushes = []
            for _ in range(4):  # +OK, +QUEUED, +QUEUED, the EXEC array
                got, reply = _reply_after_pushes(me)
                pushes += got
            assert isinstance(reply, list) and len(reply) == 2, (cmd[0], reply)
            assert not isinstance(reply[0], Exception), f"{cmd[0]}: {reply[0]}"
            now = evicted(reply[1])
            if now > before:
                evicting.append(cmd[0])
                assert pushes == [["invalidate", ["volatile-key"]]], (cmd[0], pushes)
            else:
                assert pushes == [], (cmd[0], pushes)
            before = now
        assert len(evicting) == 1, evicting
        assert other.call("EXISTS", "volatile-key") == 0
        # The command's own write is told after its reply, as before.
        assert me.call("SET", "mine", "2") == "OK"
        assert push(me) == ["invalidate", ["mine"]]
        assert me.nothing_within(QUIET)


# ------------------------------------------------------------------------------------ tenancy

ADMIN = ("root", "root-pw")


def tenancy_config(mode: str, main: int, pa: int = 0, pb: int = 0) -> str:
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


class Tenants:
    def __init__(self, mode, port, pa=0, pb=0):
        self.mode, self.port, self.pa, self.pb = mode, port, pa, pb

    def port_of(self, who):
        if self.mode == "port":
            return self.pb if who == "bob" else self.pa
        return self.port

    def key(self, who, name):
        """The key `name` as `who` writes it: with the tenant prefix in prefix tenancy."""
        if self.mode == "prefix":
            return f"{who[0]}:{name}"
        return name

    def conn(self, who, proto=3) -> Raw:
        c = Raw(self.port_of(who))
        user, pw = ADMIN if who == "admin" else (who, f"{who}-pw")
        if proto == 3:
            hello = c.call("HELLO", "3", "AUTH", user, pw)
            assert isinstance(hello, dict), hello
        else:
            assert c.call("AUTH", user, pw) == "OK"
        if self.mode == "db" and who == "bob":
            assert c.call("SELECT", "1") == "OK"
        return c


@pytest.fixture(params=["user", "port", "db", "prefix"])
def tenants(request, start_locus_toml):
    main, pa, pb = free_ports(3)
    mode = request.param
    start_locus_toml(tenancy_config(mode, main, pa, pb), pa if mode == "port" else main)
    return Tenants(mode, main, pa, pb)


@pytest.mark.locus_only
def test_a_write_by_another_tenant_never_invalidates(tenants):
    t = tenants
    with t.conn("alice") as alice, t.conn("alice") as alice2, t.conn("bob") as bob:
        assert alice.call("CLIENT", "TRACKING", "ON") == "OK"
        ka, kb = t.key("alice", "shared"), t.key("bob", "shared")
        assert alice.call("GET", ka) is None
        # Bob writes the same name (in prefix tenancy: his own prefix), deletes, flushes.
        assert bob.call("SET", kb, "1") == "OK"
        assert bob.call("DEL", kb) == 1
        assert bob.call("FLUSHALL") == "OK"
        assert bob.call("SET", kb, "2", "PX", "50") == "OK"
        time.sleep(0.2)  # bob's key expires
        assert alice.nothing_within(QUIET), "bob's writes reached alice's cache"
        # Alice's own tenant still invalidates her.
        assert alice2.call("SET", ka, "1") == "OK"
        assert push(alice) == ["invalidate", [ka]]
        alice.call("GET", ka)
        assert alice2.call("FLUSHALL") == "OK"
        assert push(alice) == ["invalidate", None]


@pytest.mark.locus_only
def test_redirect_to_another_tenants_client_is_refused(tenants):
    t = tenants
    with t.conn("alice", proto=2) as alice, t.conn("bob", proto=2) as bob, \
            t.conn("admin", proto=2) as admin:
        aid = alice.call("CLIENT", "ID")
        admin_id = admin.call("CLIENT", "ID")
        for target in (aid, admin_id):
            assert bob.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(target)) == \
                "ERR The client ID you want redirect to does not exist"
        assert bob.call("CLIENT", "GETREDIR") == -1
        # Bob's own client is a valid target.
        with t.conn("bob", proto=2) as bob2:
            bid = bob2.call("CLIENT", "ID")
            assert bob.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(bid)) == "OK"


@pytest.mark.locus_only
def test_bcast_matches_only_the_tenants_own_keys(tenants):
    t = tenants
    with t.conn("alice") as alice, t.conn("bob") as bob, t.conn("bob") as bob2:
        assert bob.call("CLIENT", "TRACKING", "ON", "BCAST") == "OK"
        if t.mode == "prefix":
            # Alice's key prefix is hers: bob cannot register under it.
            with t.conn("bob") as c:
                assert c.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:").startswith("NOPERM")
        assert alice.call("MSET", t.key("alice", "x"), "1", t.key("alice", "y"), "2") == "OK"
        assert alice.call("FLUSHALL") == "OK"
        assert bob.nothing_within(QUIET), "alice's writes reached bob's BCAST"
        assert bob2.call("SET", t.key("bob", "x"), "1") == "OK"
        assert push(bob) == ["invalidate", [t.key("bob", "x")]]


@pytest.mark.locus_only
def test_each_tenant_has_its_own_table_and_bound(tenants):
    t = tenants
    with t.conn("alice") as alice, t.conn("bob") as bob, t.conn("bob") as bob2, \
            t.conn("admin", proto=2) as admin:
        alice.call("CLIENT", "TRACKING", "ON")
        bob.call("CLIENT", "TRACKING", "ON")
        bob.call("MGET", *[t.key("bob", f"b{i}") for i in range(3)])
        alice.call("MGET", *[t.key("alice", f"a{i}") for i in range(8)])
        assert _info(alice, "tracking_total_keys") == 8
        assert _info(bob, "tracking_total_keys") == 3
        assert _info(admin, "tracking_total_keys") == 11
        assert _info(bob, "tracking_clients") == 1
        # A tenant may not change the bound; the admin may. It holds per tenant.
        assert bob.call("CONFIG", "SET", "tracking-table-max-keys", "1").startswith("NOPERM")
        assert admin.call("CONFIG", "SET", "tracking-table-max-keys", "5") == "OK"
        dropped = set()
        while len(dropped) < 3:
            msg = push(alice)
            assert msg[0] == "invalidate"
            dropped.update(msg[1])
        wait_until(lambda: _info(alice, "tracking_total_keys") == 5, what="alice at the bound")
        assert bob.nothing_within(QUIET), "alice's table bound dropped bob's keys"
        assert _info(bob, "tracking_total_keys") == 3
        bob2.call("SET", t.key("bob", "b1"), "v")
        assert push(bob) == ["invalidate", [t.key("bob", "b1")]]


@pytest.mark.locus_only
def test_db_tenancy_without_users_keeps_databases_apart(start_locus_toml):
    (main,) = free_ports(1)
    start_locus_toml(f"""
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
""", main)
    with resp3(main) as a, Raw(main) as b:
        a.call("CLIENT", "TRACKING", "ON")
        a.call("GET", "k")
        b.call("SELECT", "3")
        b.call("SET", "k", "in-db-3")
        b.call("FLUSHDB")
        assert a.nothing_within(QUIET)
        b.call("SELECT", "0")
        b.call("SET", "k", "in-db-0")
        assert push(a) == ["invalidate", ["k"]]


@pytest.mark.locus_only
def test_the_table_is_charged_to_the_tenant_and_bounded_by_its_memory(start_server):
    srv = start_server(maxmemory=4 * 1024 * 1024)
    with resp3(srv.port) as target, Raw(srv.port) as me:
        tid = target.call("CLIENT", "ID")
        base = _used(me)
        assert me.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(tid)) == "OK"
        name = "k" * 90
        for i in range(0, 2000, 1000):
            me.call("MGET", *[f"{name}{j}" for j in range(i, i + 1000)])
        # Each tracked key costs its name plus the table's overhead, charged as used memory.
        assert _used(me) - base >= 2000 * 90
        # A table the tenant's 4 MiB cannot hold drops keys (with invalidations), never a read.
        total = 40000
        for i in range(2000, total, 1000):
            assert len(me.call("MGET", *[f"{name}{j}" for j in range(i, i + 1000)])) == 1000
        kept = _info(me, "tracking_total_keys")
        assert kept < total
        assert _used(me) <= 4 * 1024 * 1024
        dropped = set()
        while len(dropped) < total - kept:
            msg = push(target)
            assert msg[0] == "invalidate"
            dropped.update(msg[1])
        assert len(dropped) == total - kept
        # Tracking off (the last client): the table and its charge go.
        assert me.call("CLIENT", "TRACKING", "OFF") == "OK"
        wait_until(lambda: _used(me) <= base, what="the table's charge given back")


def _used(c: Raw) -> int:
    return _info(c, "used_memory")


@pytest.mark.locus_only
def test_a_connection_that_reauthenticates_hears_only_of_its_new_tenant(start_locus_toml):
    (main,) = free_ports(1)
    start_locus_toml(tenancy_config("user", main), main)
    t = Tenants("user", main)
    with t.conn("alice") as c, t.conn("alice") as alice, t.conn("bob") as bob:
        c.call("CLIENT", "TRACKING", "ON")
        c.call("GET", "k")  # alice's k
        assert c.call("AUTH", "bob", "bob-pw") == "OK"
        alice.call("SET", "k", "alice")
        assert c.nothing_within(QUIET), "alice's write reached a connection now bob's"
        c.call("GET", "k")  # bob's k
        bob.call("SET", "k", "bob")
        assert push(c) == ["invalidate", ["k"]]
