"""Streams (XADD XRANGE XREVRANGE XLEN XDEL XTRIM XSETID XREAD, consumer groups XGROUP XREADGROUP
XACK XPENDING XCLAIM XAUTOCLAIM XINFO), RESP2 and RESP3: replies, error words, IDs at the edges,
blocking reads woken by XADD, the generic commands (TYPE, OBJECT ENCODING, COPY, RENAME, SCAN TYPE,
MULTI), and bad input (an XADD of a million fields, XREADGROUP over 10,000 streams). Every
assertion holds against redis-server 7 as well; the tests marked locus_only check that a tenant's
XADD wakes only its own readers, that a tenant adding to streams stays within its maxmemory, and
that snapshots keep streams with their groups and pending entries."""

import re
import time

import pytest
from redis.exceptions import ResponseError

from harness import Raw, RespError, encode, free_ports, wait_until

MAX = "18446744073709551615-18446744073709551615"


def raises(msg):
    """pytest.raises for a ResponseError whose text (code stripped by redis-py) matches `msg`."""
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def raw_blocked(c: Raw) -> int:
    text = c.call("INFO", "clients").decode()
    return int(text.split("blocked_clients:")[1].split("\r\n")[0])


def test_add_range_len_del_trim(r):
    assert r.xadd("s", {"a": "1"}, id="1-1") == "1-1"
    assert r.xadd("s", {"a": "2", "b": "x"}, id="1-*") == "1-2"
    assert r.xadd("s", {"a": "3"}, id="5") == "5-0"
    assert r.xlen("s") == 3
    assert r.xlen("missing") == 0
    assert r.xrange("s") == [("1-1", {"a": "1"}), ("1-2", {"a": "2", "b": "x"}), ("5-0", {"a": "3"})]
    assert r.xrevrange("s", count=1) == [("5-0", {"a": "3"})]
    assert r.xrange("s", "(1-1", "(5-0") == [("1-2", {"a": "2", "b": "x"})]
    assert r.xrange("s", "(1-1", "(5") == [("1-2", {"a": "2", "b": "x"}), ("5-0", {"a": "3"})]
    assert r.execute_command("XRANGE", "s", "-", "+", "COUNT", 0) is None
    assert r.xrange("missing") == []
    assert r.xdel("s", "1-2", "9-9") == 1
    assert r.xdel("missing", "1-1") == 0
    assert r.xlen("s") == 2
    assert r.xtrim("s", maxlen=1, approximate=False) == 1
    assert r.xrange("s") == [("5-0", {"a": "3"})]
    r.xdel("s", "5-0")
    assert r.exists("s") == 1, "an emptied stream stays"
    assert r.xlen("s") == 0
    assert r.xinfo_stream("s")["last-generated-id"] == "5-0"


def test_xadd_options_and_errors(r):
    assert r.xadd("s", {"f": "v"}, nomkstream=True) is None
    assert r.exists("s") == 0
    for i in range(10):
        r.xadd("s", {"f": i}, id=f"{i + 1}-0", maxlen=5, approximate=False)
    assert r.xlen("s") == 5
    r.xadd("s", {"f": "x"}, id="20-0", minid="8", approximate=False)
    assert [e[0] for e in r.xrange("s")] == ["8-0", "9-0", "10-0", "20-0"]
    with raises("The ID specified in XADD must be greater than 0-0"):
        r.xadd("n", {"f": "v"}, id="0-0")
    with raises("The ID specified in XADD is equal or smaller than the target stream top item"):
        r.xadd("s", {"f": "v"}, id="3-0")
    with raises("Invalid stream ID specified as stream command argument"):
        r.xadd("s", {"f": "v"}, id="abc")
    with raises("wrong number of arguments for 'xadd' command"):
        r.execute_command("XADD", "s", "*", "f")
    with raises("syntax error, MAXLEN and MINID options at the same time are not compatible"):
        r.execute_command("XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "f", "v")
    with raises("syntax error, LIMIT cannot be used without the special ~ option"):
        r.execute_command("XADD", "s", "MAXLEN", "1", "LIMIT", "10", "*", "f", "v")
    with raises("The MAXLEN argument must be >= 0."):
        r.execute_command("XTRIM", "s", "MAXLEN", "-1")
    with raises("syntax error, LIMIT cannot be used without specifying a trimming strategy"):
        r.execute_command("XTRIM", "s", "LIMIT", "10")
    r.set("str", "x")
    with raises("WRONGTYPE Operation against a key holding the wrong kind of value"):
        r.xadd("str", {"f": "v"})


def test_ids_at_the_edges(r):
    # The largest ID is accepted once; after it nothing more can be added.
    assert r.xadd("s", {"f": "v"}, id=MAX) == MAX
    with raises("The stream has exhausted the last possible ID, unable to add more items"):
        r.xadd("s", {"f": "v"})
    assert r.xrange("s", MAX, MAX) == [(MAX, {"f": "v"})]
    # A sequence that would overflow.
    r.xadd("o", {"f": "v"}, id="7-18446744073709551615")
    # (Redis's wording for this case, errno left over from elsewhere.)
    with raises("Elements are too large to be stored"):
        r.xadd("o", {"f": "v"}, id="7-*")
    assert r.xadd("o", {"f": "v"}, id="8-*") == "8-0"
    for bad in ["18446744073709551616", "1-18446744073709551616", "-1", "1-2-3", "x" * 200]:
        with raises("Invalid stream ID specified as stream command argument"):
            r.xrange("o", bad, "+")
    with raises("invalid start ID for the interval"):
        r.xrange("o", "(" + MAX, "+")
    with raises("invalid end ID for the interval"):
        r.xrange("o", "-", "(0-0")
    assert r.xrange("o", "0-0", "0-0") == []


def test_setid(r):
    r.xadd("s", {"f": "v"}, id="5-0")
    with raises("The ID specified in XSETID is smaller than the target stream top item"):
        r.execute_command("XSETID", "s", "4-0")
    assert r.execute_command("XSETID", "s", "9-0", "ENTRIESADDED", "7", "MAXDELETEDID", "3-0")
    info = r.xinfo_stream("s")
    assert info["last-generated-id"] == "9-0" and info["entries-added"] == 7
    assert info["max-deleted-entry-id"] == "3-0"
    with raises("The ID specified in XADD is equal or smaller than the target stream top item"):
        r.xadd("s", {"f": "v"}, id="8-0")
    with raises("no such key"):
        r.execute_command("XSETID", "missing", "1-0")


def test_generic_commands_on_streams(r):
    r.xadd("s", {"f": "v"}, id="1-0")
    r.xgroup_create("s", "g", id="0")
    assert r.type("s") == "stream"
    assert r.object("encoding", "s") == "stream"
    assert r.memory_usage("s") > 0
    assert r.copy("s", "s2")
    r.xadd("s", {"f": "w"}, id="2-0")
    assert r.xlen("s2") == 1, "COPY is a deep copy"
    assert [g["name"] for g in r.xinfo_groups("s2")] == ["g"]
    r.rename("s2", "s3")
    assert r.xlen("s3") == 1 and r.exists("s2") == 0
    r.set("str", "x")
    assert sorted(r.scan(0, _type="stream", count=100)[1]) == ["s", "s3"]
    p = r.pipeline(transaction=True)
    p.xadd("m", {"a": "1"}, id="1-0")
    p.xlen("m")
    p.xrange("m")
    assert p.execute() == ["1-0", 1, [("1-0", {"a": "1"})]]


def test_xread_and_resp_shapes(r, protocol):
    r.xadd("a", {"f": "1"}, id="1-0")
    r.xadd("b", {"f": "2"}, id="2-0")
    got = r.xread({"a": "0", "b": "0", "c": "0"})
    if protocol == 2:
        assert got == [["a", [("1-0", {"f": "1"})]], ["b", [("2-0", {"f": "2"})]]]
    else:
        assert got == {"a": [[("1-0", {"f": "1"})]], "b": [[("2-0", {"f": "2"})]]} or got == {
            "a": [("1-0", {"f": "1"})], "b": [("2-0", {"f": "2"})]}
    assert r.xread({"a": "1-0"}) in ([], {}, None)
    assert r.xread({"a": "$"}, block=10) in ([], {}, None)
    with raises("Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."):
        r.execute_command("XREAD", "STREAMS", "a", "b", "0")
    with raises("The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."):
        r.execute_command("XREAD", "STREAMS", "a", ">")


def test_blocking_xread_is_woken_by_xadd(server):
    with Raw(server.port) as w, Raw(server.port) as c:
        c.call("FLUSHALL")
        c.call("XADD", "s", "1-0", "f", "old")
        w.send(encode("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
        wait_until(lambda: raw_blocked(c) == 1, what="reader blocked")
        # A write that adds nothing keeps it waiting.
        c.call("XDEL", "s", "1-0")
        assert w.nothing_within(0.2)
        c.call("XADD", "s", "2-0", "f", "new")
        assert w.read() == [[b"s", [[b"2-0", [b"f", b"new"]]]]]
        # A timeout answers the null array.
        w.send(encode("XREAD", "BLOCK", "50", "STREAMS", "s", "$"))
        assert w.read() is None


def test_consumer_group_flow(r):
    r.xadd("s", {"f": "1"}, id="1-0")
    r.xadd("s", {"f": "2"}, id="2-0")
    r.xadd("s", {"f": "3"}, id="3-0")
    assert r.xgroup_create("s", "g", id="0")
    with raises("BUSYGROUP Consumer Group name already exists"):
        r.xgroup_create("s", "g", id="0")
    with raises("The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."):
        r.xgroup_create("nokey", "g", id="0")
    got = r.xreadgroup("g", "alice", {"s": ">"}, count=2)
    ids = [e[0] for e in (got[0][1] if isinstance(got, list) else got["s"][0])]
    assert ids == ["1-0", "2-0"]
    summary = r.xpending("s", "g")
    assert summary["pending"] == 2 and summary["min"] == "1-0" and summary["max"] == "2-0"
    assert summary["consumers"] == [{"name": "alice", "pending": 2}]
    ext = r.xpending_range("s", "g", "-", "+", 10)
    assert [(p["message_id"], p["consumer"], p["times_delivered"]) for p in ext] == [
        ("1-0", "alice", 1), ("2-0", "alice", 1)]
    assert r.xack("s", "g", "1-0", "9-0") == 1
    claimed = r.xclaim("s", "g", "bob", 0, ["2-0"])
    assert [c[0] for c in claimed] == ["2-0"]
    assert r.xpending_range("s", "g", "-", "+", 10)[0]["times_delivered"] == 2
    assert r.xautoclaim("s", "g", "carol", 0, "0-0", justid=True) == ["2-0"]
    assert r.execute_command("XAUTOCLAIM", "s", "g", "carol", 0, "0-0", "JUSTID")[0] == "0-0"
    groups = r.xinfo_groups("s")
    assert groups[0]["name"] == "g" and groups[0]["pending"] == 1 and groups[0]["last-delivered-id"] == "2-0"
    assert groups[0]["entries-read"] == 2 and groups[0]["lag"] == 1
    cons = {c["name"]: c["pending"] for c in r.xinfo_consumers("s", "g")}
    assert cons == {"alice": 0, "bob": 0, "carol": 1}
    assert r.xgroup_delconsumer("s", "g", "carol") == 1
    assert r.xpending("s", "g")["pending"] == 0
    full = r.xinfo_stream("s", full=True)
    assert full["length"] == 3 and len(full["entries"]) == 3
    assert r.xgroup_destroy("s", "g") == 1
    assert r.xgroup_destroy("s", "g") == 0
    with raises("NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option"):
        r.xreadgroup("g", "alice", {"s": ">"})


def test_blocking_xreadgroup_woken_and_told_when_its_group_goes(server):
    with Raw(server.port) as w, Raw(server.port) as c:
        c.call("FLUSHALL")
        c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        w.send(encode("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"))
        wait_until(lambda: raw_blocked(c) == 1, what="group reader blocked")
        c.call("XADD", "s", "5-0", "f", "v")
        assert w.read() == [[b"s", [[b"5-0", [b"f", b"v"]]]]]
        assert c.call("XPENDING", "s", "g")[0] == 1
        w.send(encode("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"))
        wait_until(lambda: raw_blocked(c) == 1, what="group reader blocked again")
        c.call("XGROUP", "DESTROY", "s", "g")
        got = w.read()
        assert isinstance(got, RespError) and got.startswith("NOGROUP")


def test_xadd_of_half_a_million_fields_and_xreadgroup_over_ten_thousand_streams(server, client_for):
    c = client_for(server)
    c.flushall()
    with Raw(server.port, timeout=60) as raw:
        # 1,000,003 arguments: under Locus's limits.max_array_len (1 Mi, Redis's own limit before
        # AUTH); a million fields is the next test.
        args = ["XADD", "big", "1-0"]
        for i in range(500_000):
            args += [f"f{i}", "v"]
        assert raw.call(*args) == b"1-0"
        assert raw.call("XLEN", "big") == 1
        entry = raw.call("XRANGE", "big", "-", "+")
        assert len(entry[0][1]) == 1_000_000 and entry[0][1][-2:] == [b"f499999", b"v"]
        assert raw.call("DEL", "big") == 1
    p = c.pipeline(transaction=False)
    for i in range(10_000):
        p.xgroup_create(f"st:{i}", "g", id="$", mkstream=True)
        p.xadd(f"st:{i}", {"n": i})
    p.execute()
    keys = [f"st:{i}" for i in range(10_000)]
    got = c.execute_command("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", *keys, *[">"] * 10_000)
    assert len(got) == 10_000
    assert c.xpending("st:9999", "g")["pending"] == 1


# Tenants, memory and snapshots (Locus only)


@pytest.mark.locus_only
def test_xadd_of_a_million_fields_gets_a_clear_error_under_the_default_limits(server):
    """2,000,003 arguments pass limits.max_array_len (1 Mi): refused as Redis refuses an
    oversized multibulk, the connection closed, the server and other clients unharmed."""
    with Raw(server.port, timeout=60) as raw, Raw(server.port) as other:
        raw.send(b"*2000003\r\n$4\r\nXADD\r\n$3\r\nbig\r\n$3\r\n1-0\r\n")
        assert raw.read() == "ERR Protocol error: invalid multibulk length"
        raw.expect_closed()
        assert other.call("EXISTS", "big") == 0
        assert other.call("PING") == "PONG"

TENANTS = """
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "64MiB"

[tenancy]
mode = "port"

[[tenant]]
name = "a"
port = {pa}
max = "{amax}"
policy = "{apolicy}"

[[tenant]]
name = "b"
port = {pb}
"""


@pytest.mark.locus_only
def test_xadd_wakes_only_readers_of_its_own_tenant(start_locus_toml):
    main, pa, pb = free_ports(3)
    start_locus_toml(TENANTS.format(main=main, pa=pa, pb=pb, amax="8MiB", apolicy="allkeys-lru"), pa)
    with Raw(pa) as wa, Raw(pa) as a, Raw(pb) as b:
        wa.send(encode("XREAD", "BLOCK", "0", "STREAMS", "q", "$"))
        wait_until(lambda: raw_blocked(a) == 1, what="a's reader blocked")
        assert raw_blocked(b) == 0
        # b's key of the same name is another key.
        assert b.call("XADD", "q", "1-0", "from", "b") == b"1-0"
        assert wa.nothing_within(0.3)
        assert a.call("XLEN", "q") == 0
        assert a.call("XADD", "q", "2-0", "from", "a") == b"2-0"
        assert wa.read() == [[b"q", [[b"2-0", [b"from", b"a"]]]]]


def info_memory(c: Raw) -> tuple[int, int]:
    text = c.call("INFO", "memory").decode()
    field = lambda name: int(text.split(f"\r\n{name}:")[1].split("\r\n")[0])  # noqa: E731
    return field("used_memory"), field("maxmemory")


@pytest.mark.locus_only
@pytest.mark.parametrize("policy", ["allkeys-lru", "noeviction"])
def test_a_tenant_adding_to_streams_stays_within_its_maxmemory(start_locus_toml, policy):
    main, pa, pb = free_ports(3)
    start_locus_toml(TENANTS.format(main=main, pa=pa, pb=pb, amax="2MiB", apolicy=policy), pa)
    ooms = 0
    with Raw(pa) as a:
        for i in range(300):
            key = f"s:{i % 20}"
            size = [5, 40, 300, 3000][i % 4]
            for j in range(10):
                got = a.call("XADD", key, "*", "k", f"{i}:{j}", "v", "x" * size)
                if isinstance(got, RespError):
                    assert got.startswith("OOM"), got
                    ooms += 1
            got = a.call("XGROUP", "CREATE", key, f"g{i}", "0", "MKSTREAM")
            assert not isinstance(got, RespError) or got.startswith(("OOM", "BUSYGROUP")), got
            got = a.call("XREADGROUP", "GROUP", f"g{i}", "c", "STREAMS", key, ">")
            assert not isinstance(got, RespError) or got.startswith(("OOM", "NOGROUP")), got
            used, maxmemory = info_memory(a)
            assert maxmemory == 2 * 1024 * 1024
            assert used <= maxmemory, f"used_memory {used} over {maxmemory} at round {i}"
        if policy == "noeviction":
            assert ooms > 0, "a noeviction tenant over its budget must refuse XADD"
        else:
            assert ooms == 0
            stats = a.call("INFO", "stats").decode()
            assert int(stats.split("evicted_keys:")[1].split("\r\n")[0]) > 0, "the budget was never reached"


SNAP = """
[server]
bind = "127.0.0.1"
port = {port}

[snapshot]
dir = "{dir}"
"""


@pytest.mark.locus_only
def test_snapshots_keep_streams_with_groups_and_pending_entries(start_locus_toml, tmp_path):
    port = free_ports(1)[0]
    start_locus_toml(SNAP.format(port=port, dir=tmp_path), port)
    with Raw(port) as c:
        for i in range(1, 301):
            c.call("XADD", "s", f"{i}-0", "f", str(i), "g", "x")
        c.call("XDEL", "s", "2-0")
        c.call("XGROUP", "CREATE", "s", "grp", "0")
        c.call("XREADGROUP", "GROUP", "grp", "alice", "COUNT", "3", "STREAMS", "s", ">")
        c.call("XGROUP", "CREATECONSUMER", "s", "grp", "idle")
        before = [c.call("XRANGE", "s", "-", "+"), c.call("XPENDING", "s", "grp"),
                  c.call("XINFO", "GROUPS", "s"), c.call("XINFO", "CONSUMERS", "s", "grp")[1][:4]]
        info = c.call("XINFO", "STREAM", "s")
        assert c.call("SAVE") == "OK"
    # A second server on the same directory loads the snapshot.
    port2 = free_ports(1)[0]
    start_locus_toml(SNAP.format(port=port2, dir=tmp_path), port2)
    with Raw(port2) as c:
        after = [c.call("XRANGE", "s", "-", "+"), c.call("XPENDING", "s", "grp"),
                 c.call("XINFO", "GROUPS", "s"), c.call("XINFO", "CONSUMERS", "s", "grp")[1][:4]]
        assert after == before
        again = c.call("XINFO", "STREAM", "s")
        for field in [b"length", b"last-generated-id", b"max-deleted-entry-id", b"entries-added",
                      b"recorded-first-entry-id"]:
            assert again[again.index(field) + 1] == info[info.index(field) + 1]
        assert c.call("XREADGROUP", "GROUP", "grp", "alice", "COUNT", "1", "STREAMS", "s", ">")[0][1][0][0] == b"5-0"
