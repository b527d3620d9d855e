"""SORT and SORT_RO: numeric and ALPHA order, ASC/DESC, LIMIT, BY key and hash-field weights, GET
patterns (`#`, keys, hash fields, missing values), STORE (a list replacing the destination and its
TTL; an empty result deletes it), BY without `*` (no sorting: a list or sorted set keeps its order,
a stored set is sorted ALPHA), SORT_RO's refusal of STORE, error words and their order, RESP2 and
RESP3, keyspace events, WATCH, a client blocked on the STORE key. Every test not marked locus_only
holds against redis-server 7.0 too (--peer redis).

The locus_only tests: BY and GET patterns and the STORE key stay inside the caller's tenant (user,
port, db and prefix tenancy); a SORT of 1M elements with two GET patterns completes with the
server's peak RSS measured; a SORT whose output would pass the bound is refused, not built."""

import re
import threading

import pytest
import redis
from redis.exceptions import ResponseError, WatchError

from conftest import no_retry
from harness import HOST, Raw, encode, free_ports, wait_until

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
BAD_DOUBLE = "One or more scores can't be converted into double"


def raises(msg):
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def test_numeric_and_alpha_order(r):
    r.rpush("l", 3, 10, 1, 2, "1.5", "-7")
    assert r.sort("l") == ["-7", "1", "1.5", "2", "3", "10"]
    assert r.sort("l", desc=True) == ["10", "3", "2", "1.5", "1", "-7"]
    assert r.sort("l", alpha=True) == ["-7", "1", "1.5", "10", "2", "3"]
    assert r.sort("l", alpha=True, desc=True) == ["3", "2", "10", "1.5", "1", "-7"]
    # Sets (intset and hash table) and sorted sets sort the same way.
    r.sadd("s", 5, 3, 9)
    assert r.sort("s") == ["3", "5", "9"]
    r.sadd("s2", "b", "a", "c")
    assert r.sort("s2", alpha=True) == ["a", "b", "c"]
    r.zadd("z", {"a": 3, "b": 1, "c": 2})
    assert r.sort("z", alpha=True, desc=True) == ["c", "b", "a"]
    # Equal scores: sorted by the element's bytes (descending under DESC).
    r.rpush("eq", "1.0", "1", "01")
    assert r.sort("eq") == ["01", "1", "1.0"]
    assert r.sort("eq", desc=True) == ["1.0", "1", "01"]
    # Weights as strtod reads them: spaces before, hex, inf.
    r.rpush("w", " 2", "0x10", "-inf", "inf", "1e2")
    assert r.sort("w") == ["-inf", " 2", "0x10", "1e2", "inf"]
    # A missing key sorts as an empty list.
    assert r.sort("nokey") == []
    assert r.sort_ro("nokey") == []


def test_limit(r):
    r.rpush("l", *range(10))
    assert r.sort("l", start=2, num=3) == ["2", "3", "4"]
    assert r.sort("l", start=8, num=10) == ["8", "9"]
    assert r.sort("l", start=10, num=10) == []
    assert r.sort("l", start=-5, num=2) == ["0", "1"]
    assert r.sort("l", start=0, num=0) == []
    assert r.sort("l", start=3, num=-1) == [str(i) for i in range(3, 10)]
    assert r.execute_command("SORT", "l", "LIMIT", "7", "9223372036854775807") == ["7", "8", "9"]
    with raises("value is not an integer or out of range"):
        r.execute_command("SORT", "l", "LIMIT", "x", "1")
    with raises("value is not an integer or out of range"):
        r.execute_command("SORT", "l", "LIMIT", "0", "1.5")
    # LIMIT with too few arguments is a syntax error.
    with raises("syntax error"):
        r.execute_command("SORT", "l", "LIMIT", "0")


def test_by_and_get_patterns(r):
    r.rpush("ids", 1, 2, 3, 4)
    r.mset({"w_1": 40, "w_2": 10, "w_3": 30, "name_1": "one", "name_3": "three"})
    r.hset("h_1", mapping={"w": 3, "n": "h-one"})
    r.hset("h_2", mapping={"w": 1})
    r.hset("h_3", mapping={"w": 2, "n": "h-three"})
    # w_4 is missing: weight 0, sorts first.
    assert r.sort("ids", by="w_*") == ["4", "2", "3", "1"]
    assert r.sort("ids", by="w_*", desc=True) == ["1", "3", "2", "4"]
    assert r.sort("ids", by="h_*->w") == ["4", "2", "3", "1"]
    assert r.sort("ids", by="w_*", get=["#", "name_*", "h_*->n", "nope", "h_*->missing"]) == [
        "4", None, None, None, None,
        "2", None, None, None, None,
        "3", "three", "h-three", None, None,
        "1", "one", "h-one", None, None,
    ]
    # A GET of a key of another type, or a hash field of a string: missing.
    assert r.sort("ids", by="w_*", get="h_*", start=3, num=1) == [None]
    assert r.sort("ids", by="w_*", get="w_*->x", start=3, num=1) == [None]
    # ALPHA by weights: a missing weight sorts first; ties keep no particular order, so the
    # weights here are distinct.
    r.mset({"a_1": "b", "a_2": "c", "a_3": "a"})
    assert r.sort("ids", by="a_*", alpha=True) == ["4", "3", "1", "2"]
    # Numeric sort with a weight that is not a double fails, whichever key holds it.
    r.set("w_4", "nan")
    with raises(BAD_DOUBLE):
        r.sort("ids", by="w_*")
    r.set("w_4", "12abc")
    with raises(BAD_DOUBLE):
        r.sort("ids", by="w_*")
    r.rpush("bad", 1, "x")
    with raises(BAD_DOUBLE):
        r.sort("bad")
    # The pattern "key->" (nothing after the arrow) names a key, not a field.
    r.rpush("one", "a")
    r.set("x:a->", 100)
    assert r.execute_command("SORT", "one", "BY", "num", "GET", "x:*->") == ["100"]


def test_by_without_star_keeps_native_order(r):
    r.lpush("l", 2, 1, 4, 3, 5)
    assert r.sort("l", by="nosort") == ["5", "3", "4", "1", "2"]
    assert r.sort("l", by="nosort", desc=True) == ["2", "1", "4", "3", "5"]
    assert r.sort("l", by="nosort", start=1, num=2) == ["3", "4"]
    assert r.sort("l", by="nosort", desc=True, start=1, num=2) == ["1", "4"]
    r.zadd("z", {"a": 1, "b": 5, "c": 2, "d": 10, "e": 3})
    assert r.sort("z", by="nosort") == ["a", "c", "e", "b", "d"]
    assert r.sort("z", by="nosort", desc=True) == ["d", "b", "e", "c", "a"]
    assert r.sort("z", by="nosort", desc=True, start=1, num=2) == ["b", "e"]
    assert r.sort("z", by="nosort", start=5, num=10) == []
    # `#` has no `*` either: no sorting.
    assert r.sort("z", by="#") == ["a", "c", "e", "b", "d"]
    # A set stored with BY nosort is sorted ALPHA (the result must not depend on the layout).
    r.sadd("s", "c", "aa", "b", "a")
    assert r.sort("s", by="nosort", store="dst") == 4
    assert r.lrange("dst", 0, -1) == ["a", "aa", "b", "c"]


def test_store(r):
    r.rpush("src", 3, 1, 2)
    r.set("dst", "old", ex=100)
    assert r.sort("src", store="dst") == 3
    assert r.type("dst") == "list"
    assert r.lrange("dst", 0, -1) == ["1", "2", "3"]
    assert r.ttl("dst") == -1  # the old TTL went with the old value
    assert r.object("encoding", "dst") == "quicklist"
    # GET with STORE: a missing value is stored as an empty string.
    r.set("v_1", "one")
    assert r.sort("src", get=["#", "v_*"], store="dst") == 6
    assert r.lrange("dst", 0, -1) == ["1", "one", "2", "", "3", ""]
    # An empty result deletes the destination, and answers 0.
    assert r.sort("src", start=10, num=10, store="dst") == 0
    assert r.exists("dst") == 0
    assert r.sort("nokey", store="dst2") == 0
    assert r.exists("dst2") == 0
    # The source itself as destination.
    assert r.sort("src", desc=True, store="src") == 3
    assert r.lrange("src", 0, -1) == ["3", "2", "1"]
    # The last STORE wins; COMMAND GETKEYS finds it as Redis does.
    assert r.execute_command("SORT", "src", "STORE", "x", "STORE", "y") == 3
    assert r.exists("x") == 0 and r.llen("y") == 3
    assert r.command_getkeys("SORT", "abc", "STORE", "invalid", "STORE", "def") == ["abc", "def"]
    assert r.command_getkeys("SORT_RO", "abc") == ["abc"]


def test_errors_and_their_order(r):
    r.set("str", "x")
    r.hset("hash", "f", "v")
    with raises(WRONGTYPE):
        r.sort("str")
    with raises(WRONGTYPE):
        r.sort("hash")
    # Options are parsed before the key is looked up.
    with raises("syntax error"):
        r.execute_command("SORT", "str", "BOGUS")
    with raises("syntax error"):
        r.execute_command("SORT", "str", "BY")
    with raises("syntax error"):
        r.execute_command("SORT_RO", "str", "STORE", "dst")
    with raises("syntax error"):
        r.execute_command("SORT_RO", "nokey", "STORE", "dst")
    with raises("wrong number of arguments for 'sort' command"):
        r.execute_command("SORT")
    with raises("wrong number of arguments for 'sort_ro' command"):
        r.execute_command("SORT_RO")


def test_sort_ro(r):
    r.lpush("l", "a")
    r.set("x:a", 100)
    assert r.execute_command("SORT_RO", "l", "BY", "nosort", "GET", "x:*") == ["100"]
    r.rpush("n", 3, 1, 2)
    assert r.sort_ro("n", desc=True) == ["3", "2", "1"]


def raw_reply(c: Raw, cmd: tuple, n: int) -> bytes:
    """The first `n` bytes the server answers to `cmd`, as sent."""
    c.send(encode(*cmd))
    while len(c.buf) < n:
        c._fill()
    data, c.buf = c.buf[:n], c.buf[n:]
    return data


def test_resp_shapes(server):
    cmd = ("SORT", "l", "GET", "#", "GET", "missing_*")
    with Raw(server.port) as c:
        c.call("FLUSHALL")
        c.call("RPUSH", "l", "2", "1")
        want2 = b"*4\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n$-1\r\n"
        assert raw_reply(c, cmd, len(want2)) == want2
        assert c.call("HELLO", "3")[b"proto"] == 3
        want3 = b"*4\r\n$1\r\n1\r\n_\r\n$1\r\n2\r\n_\r\n"
        assert raw_reply(c, cmd, len(want3)) == want3
        assert c.call("SORT", "l", "STORE", "d") == 2
        c.call("FLUSHALL")


def test_store_events_and_watch(r):
    r.config_set("notify-keyspace-events", "KEA")
    try:
        p = r.pubsub()
        p.psubscribe("__keyspace@0__:*")
        wait_until(lambda: p.get_message(timeout=0.1) is not None, what="psubscribe confirmation")
        r.rpush("src", "b", "a")
        r.sort("src", alpha=True, store="dst")
        r.sort("nokey", store="dst")
        events = []
        wait_until(lambda: events.append(p.get_message(timeout=0.1)) or
                   [e for e in events if e and e["data"] == "del" and e["channel"].endswith(":dst")],
                   what="del event")
        got = [(e["channel"].split(":", 1)[1], e["data"]) for e in events if e]
        assert ("dst", "sortstore") in got
        assert got.index(("src", "rpush")) < got.index(("dst", "sortstore")) < got.index(("dst", "del"))
        p.close()
    finally:
        r.config_set("notify-keyspace-events", "")
    # WATCH sees SORT ... STORE even when the result is empty (it deletes the key).
    r.rpush("foo", "bar")
    with r.pipeline() as pipe:
        pipe.watch("foo")
        r.sort("emptylist", store="foo")
        pipe.multi()
        pipe.ping()
        with pytest.raises(WatchError):
            pipe.execute()
    # ...and a plain SORT of the watched key is no write.
    r.rpush("foo", "bar")
    with r.pipeline() as pipe:
        pipe.watch("foo")
        r.sort("foo", alpha=True)
        pipe.multi()
        pipe.ping()
        assert pipe.execute() == [True]


def test_blocked_client_woken_by_store(r, server, client_for):
    other = client_for(server)
    result = {}

    def waiter():
        result["v"] = other.blpop(["dst"], timeout=5)

    th = threading.Thread(target=waiter)
    th.start()
    wait_until(lambda: int(r.info("clients")["blocked_clients"]) == 1, what="client blocked")
    r.rpush("src", "hello", "hola", "aguacate")
    r.sort("src", alpha=True, store="dst")
    th.join(10)
    assert result["v"] in (["dst", "aguacate"], ("dst", "aguacate"))


# ------------------------------------------------------------------------------------- tenancy

def sort_isolation(ca, cb):
    """`ca` and `cb` are clients of two tenants (the same key names). `cb`'s weights, values and
    keys never reach `ca`'s SORT, and `ca`'s STORE never lands in `cb`."""
    cb.mset({"w_1": 3, "w_2": 1, "w_3": 2, "v_1": "secret1", "v_2": "secret2", "v_3": "secret3"})
    cb.hset("h_1", mapping={"f": "hsecret"})
    ca.rpush("ids", 1, 2, 3)
    # No weights in a's tenant: all 0, ties by element.
    assert ca.sort("ids", by="w_*") == ["1", "2", "3"]
    assert ca.sort("ids", get=["#", "v_*", "h_*->f"]) == [
        "1", None, None, "2", None, None, "3", None, None]
    assert ca.sort("ids", by="v_*", alpha=True, get="v_*", store="out") == 3
    assert ca.lrange("out", 0, -1) == ["", "", ""]
    assert cb.exists("out") == 0
    # a's own keys are used.
    ca.mset({"w_1": 9, "v_1": "mine"})
    assert ca.sort("ids", by="w_*", get="v_*") == [None, None, "mine"]
    # b's SORT sees b's keys only.
    cb.rpush("ids", 1, 2, 3)
    assert cb.sort("ids", by="w_*", get="v_*") == ["secret2", "secret3", "secret1"]
    assert cb.sort("ids", get="h_*->f", start=0, num=1) == ["hsecret"]


def client(port, protocol=2, **kw):
    return redis.Redis(host=HOST, port=port, protocol=protocol, decode_responses=True, socket_timeout=10,
                       retry=no_retry(), **kw)


@pytest.mark.locus_only
@pytest.mark.parametrize("mode", ["user", "port", "db"])
def test_patterns_stay_in_tenant(start_locus_toml, mode):
    main, pa, pb = free_ports(3)
    head = f'[server]\nbind = "127.0.0.1"\nport = {main}\n\n[tenancy]\nmode = "{mode}"\n'
    if mode == "user":
        tenants = ('[[tenant]]\nname = "a"\nuser = "alice"\npassword = "pa"\n\n'
                   '[[tenant]]\nname = "b"\nuser = "bob"\npassword = "pb"\n')
        srv = start_locus_toml(head + tenants, main)
        ca = client(main, username="alice", password="pa")
        cb = client(main, username="bob", password="pb")
    elif mode == "port":
        tenants = f'[[tenant]]\nname = "a"\nport = {pa}\n\n[[tenant]]\nname = "b"\nport = {pb}\n'
        srv = start_locus_toml(head + tenants, pa)
        ca, cb = client(pa), client(pb)
    else:
        tenants = '[[tenant]]\nname = "a"\ndb = 0\n\n[[tenant]]\nname = "b"\ndb = 3\n'
        srv = start_locus_toml(head + tenants, main)
        ca, cb = client(main, db=0), client(main, db=3)
    sort_isolation(ca, cb)
    assert srv.alive()


def prefix_tenants_toml(main: int) -> str:
    """Prefix tenancy: tenant a ("a:", alice/pa), tenant b ("b:", bob/pb), the admin root/root-pw."""
    return f"""
[server]
bind = "127.0.0.1"
port = {main}

[tenancy]
mode = "prefix"

[admin]
user = "root"
password = "root-pw"

[[tenant]]
name = "a"
prefix = "a:"
user = "alice"
password = "pa"

[[tenant]]
name = "b"
prefix = "b:"
user = "bob"
password = "pb"
"""


@pytest.mark.locus_only
def test_patterns_stay_in_tenant_prefix(start_locus_toml):
    (main,) = free_ports(1)
    start_locus_toml(prefix_tenants_toml(main), main)
    ca = client(main, username="alice", password="pa")
    cb = client(main, username="bob", password="pb")
    root = client(main, username="root", password="root-pw")
    cb.mset({"b:w_1": 3, "b:w_2": 1, "b:v_1": "secret"})
    cb.hset("b:h_1", mapping={"f": "hsecret"})
    ca.rpush("a:ids", 1, 2)
    ca.mset({"a:w_1": 5, "a:w_2": 4, "a:v_2": "mine"})
    # Patterns naming b's keys read nothing, whoever asks (even the admin: the keys are looked up
    # in the tenant of the sorted key).
    for c in (ca, root):
        assert c.sort("a:ids", by="b:w_*") == ["1", "2"]
        assert c.sort("a:ids", get=["b:v_*", "b:h_*->f"]) == [None, None, None, None]
        assert c.sort("a:ids", by="a:w_*", get=["#", "a:v_*"]) == ["2", "mine", "1", None]
    # A STORE key of another tenant is refused before anything runs.
    with pytest.raises(ResponseError, match="No permissions to access a key"):
        ca.sort("a:ids", store="b:out")
    with pytest.raises(ResponseError, match="span tenants"):
        root.sort("a:ids", store="b:out")
    assert cb.exists("b:out") == 0 and root.exists("b:out") == 0
    assert ca.sort("a:ids", store="a:out") == 2
    assert ca.lrange("a:out", 0, -1) == ["1", "2"]
    # b cannot sort a's key either.
    with pytest.raises(ResponseError, match="No permissions to access a key"):
        cb.sort("a:ids")


# ------------------------------------------------------------------------------ bounded memory

def vm_hwm(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.locus_only
def test_sort_of_a_million_elements_with_get_patterns(start_server):
    srv = start_server(maxmemory=512 << 20)
    c = client(srv.port)
    n = 1_000_000
    batch = 20_000
    for s in range(0, n, batch):
        with c.pipeline(transaction=False) as p:
            p.rpush("ids", *range(s, s + batch))
            p.mset({f"w_{i}": n - i for i in range(s + (-s) % 7, s + batch, 7)})
            p.execute()
    before = vm_hwm(srv.proc.pid)
    raw = Raw(srv.port, timeout=120)
    raw.send(b"*9\r\n$4\r\nSORT\r\n$3\r\nids\r\n$2\r\nBY\r\n$3\r\nw_*\r\n$3\r\nGET\r\n$1\r\n#\r\n"
             b"$3\r\nGET\r\n$3\r\nw_*\r\n$4\r\nDESC\r\n")
    reply = raw.read()
    raw.close()
    assert len(reply) == 2 * n
    # DESC by weight: weighted ids (weight n - i) in ascending id order, then the unweighted
    # (weight 0) in descending byte order of the id (so "1" comes last).
    assert reply[0] == b"0" and reply[1] == str(n).encode()
    assert reply[2] == b"7" and reply[3] == str(n - 7).encode()
    assert reply[-2] == b"1" and reply[-1] is None
    assert reply[2 * (n // 7 + 1)] == b"999998"  # 999999 = 7 * 142857 is weighted
    after = vm_hwm(srv.proc.pid)
    growth = after - before
    print(f"SORT of {n} elements BY + 2 GET: peak RSS {before >> 20} -> {after >> 20} MiB "
          f"(+{growth >> 20} MiB)")
    # The arena, the sort vector and the ~15 MB reply: well under 64 bytes an element plus the
    # reply twice over.
    assert growth < 64 * n + 64 * (1 << 20)
    assert c.ping()


@pytest.mark.locus_only
def test_output_bound_refuses_instead_of_building(start_server):
    srv = start_server(maxmemory=64 << 20)
    c = client(srv.port)
    c.set("big_x", "v" * (1 << 20))
    c.rpush("ids", *(["x"] * 200))  # 200 x 1 MiB would be a 200 MiB reply
    before = vm_hwm(srv.proc.pid)
    with pytest.raises(ResponseError, match="^SORT output would exceed 67108864 bytes"):
        c.sort("ids", by="nosort", get="big_*")
    with pytest.raises(ResponseError, match="^SORT output would exceed"):
        c.sort("ids", by="nosort", get="big_*", store="dst")
    assert c.exists("dst") == 0
    assert vm_hwm(srv.proc.pid) - before < 96 << 20
    # Within the bound it works.
    assert len(c.sort("ids", by="nosort", get="big_*", num=10, start=0)) == 10
